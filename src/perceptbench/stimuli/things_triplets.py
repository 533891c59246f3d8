"""THINGS odd-one-out triplets (Hebart et al. 2023) and one image per concept (Hebart et al. 2019).

Format of ``testset2.txt`` / ``testset2_repeat.txt`` (see :mod:`perceptbench.sources.things_release`):
one triplet per line, three whitespace-separated 0-based concept indices, the chosen
odd-one-out third; line i of both files holds the same triplet (as a set).

Human reference, computed here from the two files (never typed in):

* triplet type = the sorted concept triple; all responses of a type = every line of both
  files whose sorted triple is that type;
* modal choice = the concept chosen most often among them; a type whose top count is tied
  has no modal choice (not sampled; counted);
* test-retest consistency = over every line pair (line i of testset2, line i of the
  repeat) holding the same triple, the fraction whose two choices agree; line pairs whose
  triples differ are counted as misaligned and left out;
* modal test-retest consistency (a second reading of seed 000 D.3's "test-retest consistency
  of the human modal choice itself") = over the types found in both files, the fraction whose
  modal choice in testset2 equals their modal choice in the repeat file, each mode taken over
  that file's lines of the type alone; a type whose mode is tied in either file is left out
  (counted).

Sampled types are those of ``testset2.txt`` (:meth:`TripletRelease.first_line`): a type found
only in the repeat file (on a misaligned line) is never sampled, though its responses count
towards the modal choice of nothing sampled.

Image rule: for concept ``<uniqueID>`` the lexicographically first ``.jpg``/``.jpeg``/``.png``
file in ``<image root>/<uniqueID>/`` (in the THINGS release ``<uniqueID>_01b.jpg``); it is
centre-cropped to a square and resized to 224 x 224 px (Lanczos) for the montage.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import Image

from ..seeding import file_sha256
from ..sources.things_release import N_CONCEPTS

IMAGE_PX = 224
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")


@dataclass(frozen=True)
class TripletRelease:
    """Parsed test/retest files.

    ``test``/``retest``: tuples of (i, j, k) with k the chosen concept, in file order.
    ``responses``: type -> Counter of chosen concept over both files.
    ``pairs``: line index -> (test choice, retest choice) for aligned lines.
    ``sha256``: file name -> hex digest."""

    test: tuple[tuple[int, int, int], ...]
    retest: tuple[tuple[int, int, int], ...]
    responses: dict
    pairs: dict
    n_misaligned: int
    sha256: dict

    def modal(self, t: tuple[int, int, int]) -> int | None:
        """Modal chosen concept of a type, None when tied."""
        c = self.responses[t].most_common()
        return None if len(c) > 1 and c[0][1] == c[1][1] else c[0][0]

    def modal_consistency(self) -> tuple[int, int, int]:
        """(types whose testset2 mode equals their repeat mode, types with a mode in both files,
        types in both files whose mode is tied in at least one): the modal test-retest
        consistency is the first over the second (module docstring)."""
        def modes(rows):
            by: dict = defaultdict(Counter)
            for row in rows:
                by[tuple(sorted(row))][row[2]] += 1
            out = {}
            for t, c in by.items():
                top = c.most_common()
                out[t] = None if len(top) > 1 and top[0][1] == top[1][1] else top[0][0]
            return out

        a, b = modes(self.test), modes(self.retest)
        both = sorted(set(a) & set(b))
        defined = [t for t in both if a[t] is not None and b[t] is not None]
        return sum(a[t] == b[t] for t in defined), len(defined), len(both) - len(defined)

    def first_line(self) -> dict:
        """type -> first line index in the test file (its test/retest pair is that line)."""
        out: dict = {}
        for i, row in enumerate(self.test):
            out.setdefault(tuple(sorted(row)), i)
        return out


def read_triplet_file(path: Path) -> tuple[tuple[int, int, int], ...]:
    """Rows of a release triplet file.  Raises ValueError naming file and line for a row
    that is not three distinct integers in 0..1853."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            try:
                vals = tuple(int(float(p)) for p in parts)
                if any(float(p) != int(float(p)) for p in parts):
                    raise ValueError
            except ValueError:
                raise ValueError(f"{path}: line {n}: expected three integer concept indices, got {line.strip()!r}") \
                    from None
            if len(vals) != 3 or len(set(vals)) != 3 or not all(0 <= v < N_CONCEPTS for v in vals):
                raise ValueError(f"{path}: line {n}: expected three distinct concept indices 0..{N_CONCEPTS - 1}, "
                                 f"got {line.strip()!r}")
            out.append(vals)
    if not out:
        raise ValueError(f"{path}: no triplets")
    return tuple(out)


@lru_cache(maxsize=4)
def load_release(test_path: Path, retest_path: Path) -> TripletRelease:
    """Parse and cross-check the two files (see the module docstring)."""
    test, retest = read_triplet_file(test_path), read_triplet_file(retest_path)
    responses: dict = defaultdict(Counter)
    for row in test + retest:
        responses[tuple(sorted(row))][row[2]] += 1
    pairs, mis = {}, 0
    for i in range(min(len(test), len(retest))):
        if sorted(test[i]) == sorted(retest[i]):
            pairs[i] = (test[i][2], retest[i][2])
        else:
            mis += 1
    mis += abs(len(test) - len(retest))
    return TripletRelease(test, retest, dict(responses), pairs, mis,
                          {test_path.name: file_sha256(test_path), retest_path.name: file_sha256(retest_path)})


def concept_image_path(root: Path, unique_id: str) -> Path:
    """The declared image of a concept; FileNotFoundError (one line) if the folder has none."""
    d = root / unique_id
    files = sorted(p for p in d.glob("*") if p.suffix.lower() in IMAGE_SUFFIXES) if d.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no THINGS image for concept {unique_id!r}: expected {d}/*.jpg")
    return files[0]


def load_concept_image(path: Path) -> Image.Image:
    """Centre-cropped square, resized to 224 x 224 RGB.  ValueError naming the file if undecodable."""
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
    except Exception as e:  # PIL raises several types
        raise ValueError(f"cannot decode image {path}: {e}") from e
    s = min(im.size)
    left, top = (im.width - s) // 2, (im.height - s) // 2
    return im.crop((left, top, left + s, top + s)).resize((IMAGE_PX, IMAGE_PX), Image.LANCZOS)
