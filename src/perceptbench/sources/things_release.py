"""The THINGS odd-one-out release and the THINGS object images: where they come from and
where perceptbench looks for them.

Neither is in the project's data mirror, and neither can be fetched by a pinned raw URL:

* Triplets: Hebart et al. 2023, THINGS-data (eLife 12:e82580), behavioural part on OSF
  project ``f5rn6`` (https://osf.io/f5rn6/), folder ``data/triplet_dataset/``.  perceptbench
  reads ``testset2.txt`` and ``testset2_repeat.txt``: plain text, one triplet per line, three
  whitespace-separated 0-based THINGS concept indices with the chosen odd-one-out in the
  third column; the two files are row-aligned (line i of the repeat file is a second
  response to the triplet of line i).  Format as read by the authors' MATLAB noise-ceiling
  script (``testset2(ind,3) == testset2_repeated(ind,3)``) and by public loaders that
  ``np.loadtxt`` these files.
* Images: Hebart et al. 2019, the THINGS database (PLoS ONE 14(10):e0223792), OSF project
  ``jum2f`` (https://osf.io/jum2f/), ``object_images`` archive: password-protected zip files
  whose password is printed on that OSF page (and in the archive's README).  Unpack so
  that the directory holds one folder per concept ``<uniqueID>/`` with its ``.jpg`` files.

Both are located through environment variables (defaults under the per-user cache):
``PERCEPTBENCH_THINGS_TRIPLETS`` (a directory holding the two text files) and
``PERCEPTBENCH_THINGS_IMAGES`` (the unpacked image root).  The OSF files are not
content-addressed from here, so their sha256 cannot be pinned in advance: every record
carries the sha256 of the triplet files and of the images actually used, and a rerun on
files with other hashes is refused by the records' ``model_version`` check.

Concept names and order come from the mirrored THINGS metadata (``things/data/files/
item_names.tsv``: 1,854 concepts in the order of the release's ``unique_id.txt``, the
index the triplet files use) and ``things/MRI/data/Categories_final_20200131.tsv``
(category columns, matched by row position).
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .fetch import MissingSourceError, cache_dir, resolve
from .registry import source_file

TRIPLETS_ENV = "PERCEPTBENCH_THINGS_TRIPLETS"
IMAGES_ENV = "PERCEPTBENCH_THINGS_IMAGES"
TRIPLET_FILES = ("testset2.txt", "testset2_repeat.txt")
TRIPLETS_URL = "OSF https://osf.io/f5rn6/ (osfstorage)"
IMAGES_URL = "OSF https://osf.io/jum2f/ (object_images; the zip password is given on that page)"
N_CONCEPTS = 1854

TRIPLETS_CITATION = ("M. N. Hebart, O. Contier, L. Teichmann, A. H. Rockter, C. Y. Zheng, A. Kidder, A. Corriveau, "
                     "M. Vaziri-Pashkam, C. I. Baker. THINGS-data, a multimodal collection of large-scale datasets "
                     "for investigating object representations in human brain and behavior. eLife 12:e82580, 2023.")
IMAGES_CITATION = ("M. N. Hebart, A. H. Dickter, A. Kidder, W. Y. Kwok, A. Corriveau, C. Van Wicklin, C. I. Baker. "
                   "THINGS: A database of 1,854 object concepts and more than 26,000 naturalistic object images. "
                   "PLoS ONE 14(10):e0223792, 2019.")

NAMES_PATH = "things/data/files/item_names.tsv"
CATEGORIES_PATH = "things/MRI/data/Categories_final_20200131.tsv"


def triplets_dir() -> Path:
    return Path(os.environ.get(TRIPLETS_ENV) or cache_dir() / "things" / "triplet_dataset")


def images_dir() -> Path:
    return Path(os.environ.get(IMAGES_ENV) or cache_dir() / "things" / "images")


def locate_triplet_files() -> tuple[Path, Path]:
    """(testset2.txt, testset2_repeat.txt).  Raises MissingSourceError, one line naming
    the files, where to get them and where to put them."""
    d = triplets_dir()
    paths = tuple(d / f for f in TRIPLET_FILES)
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise MissingSourceError(
            f"THINGS odd-one-out release not found: {', '.join(missing)} missing in {d}; download "
            f"data/triplet_dataset/{{{','.join(TRIPLET_FILES)}}} from {TRIPLETS_URL} into that directory "
            f"or set {TRIPLETS_ENV}=DIR")
    return paths  # type: ignore[return-value]


def locate_images() -> Path:
    """The THINGS image root.  Raises MissingSourceError (one line) if it does not exist."""
    d = images_dir()
    if not d.is_dir():
        raise MissingSourceError(
            f"THINGS images not found at {d}; download and unpack the object_images archive from {IMAGES_URL} "
            f"so that {d}/<uniqueID>/*.jpg exist, or set {IMAGES_ENV}=DIR")
    return d


@dataclass(frozen=True)
class Concept:
    """One THINGS concept: ``index`` 0..1853 (the triplet files' index), ``unique_id`` (the
    image folder name), ``name``, ``categories`` (columns of the categories file marked 1)."""

    index: int
    unique_id: str
    name: str
    categories: tuple[str, ...]


@lru_cache(maxsize=1)
def concepts() -> tuple[Concept, ...]:
    """The 1,854 THINGS concepts in index order (names and bottom-up categories), read from
    the mirrored, sha256-pinned metadata.  Raises ValueError naming the file on a bad layout."""
    names_p = resolve(source_file(NAMES_PATH))
    with open(names_p, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if len(rows) != N_CONCEPTS or "uniqueID" not in rows[0]:
        raise ValueError(f"{names_p}: expected {N_CONCEPTS} rows with a uniqueID column, got {len(rows)}")
    cat_p = resolve(source_file(CATEGORIES_PATH))
    with open(cat_p, newline="", encoding="utf-8") as f:
        crow = [r for r in csv.DictReader(f, delimiter="\t") if (r.get("Word") or "").strip()]
    if len(crow) != N_CONCEPTS:
        raise ValueError(f"{cat_p}: expected {N_CONCEPTS} rows, got {len(crow)}")
    cat_cols = [c for c in crow[0] if c and c not in ("Word", "Definition (from WordNet, Google, or Wikipedia)")]
    out = []
    for i, (r, c) in enumerate(zip(rows, crow)):
        if c["Word"] not in (r["Word"], r["uniqueID"]):  # the categories file names some concepts by uniqueID
            raise ValueError(f"{cat_p}: row {i} is {c['Word']!r}, {names_p} has {r['Word']!r}/{r['uniqueID']!r}")
        out.append(Concept(i, r["uniqueID"], r["Word"],
                           tuple(k for k in cat_cols if (c.get(k) or "").strip() == "1")))
    return tuple(out)
