"""The kernel study's per-subject raw triplet-discrimination judgments (Demiralp, Bernstein &
Heer 2014; uwdata/perceptual-kernels@eda46ab ``data/raw/<palette>-td.txt``): for each of 20
subjects, which mark of every triplet looked the most different, i.e. an odd-one-out answer.

File format (the release's experiment pages ``exp/<palette>/td/<palette>-td.html`` and
``shared/matlab/getTestTriplets.m``; transcribed in ``../shared/data_notes/palettes_used.json``):
one line per subject, comma-separated integers, consecutive groups of three.  Group ``j`` is
the answer to triplet ``j`` of the study's list, training triplets first (C(4,3) + 4 = 8 for
the 10-mark palettes, C(6,3) + 4 = 24 for the 16-mark ones), then the C(n,3) test triplets in
the order of ``comb`` (lexicographic, as :func:`itertools.combinations`), then 10 catch
triplets with a repeated mark (``d1`` of the page).  A group is written
``[x, y, odd]``: the chosen (most different) mark last (``updateRating``).  Test indices are
offset by the number of training marks (4, resp. 6).  The triplet-matching files
(``*-tm.txt``, ``[reference, closer, farther]``) are not read: a matching judgment says only
which item is *not* the odd one out."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..sources import resolve, source_file

__all__ = ["RAW_DIR", "N_SUBJECTS", "N_CATCH", "CATCH_TRIPLETS", "TripletJudgment", "CatchJudgment", "raw_td_path",
           "read_td_judgments", "read_catch_judgments"]

RAW_DIR = "perceptual-kernels/data/raw"
N_SUBJECTS = 20
"""Subjects (lines) per raw file (Demiralp et al. 2014 §4: 20 Mechanical Turk workers per condition)."""
N_CATCH = 10
"""Catch triplets after the test triplets (``d1`` of the experiment page)."""
CATCH_TRIPLETS: tuple[tuple[int, int], ...] = ((0, 3), (1, 5), (2, 7), (3, 2), (4, 1), (5, 8), (6, 8), (7, 5),
                                               (8, 9), (9, 4))
"""The catch triplets as (repeated mark, other mark), in the file's order: ``d1`` of the experiment
pages (``exp/<palette>/td/<palette>-td.html``, e.g. ``[5, 8, 5]`` is mark 5 twice and mark 8),
the same list on every palette's page, "fixed across users" and generated so that "well-behaving
turkers assign identical symbols to be more similar" (the page's comment): the correct odd one
out is the other mark.  Palette indices (the training offset removed)."""


def _layout(n: int) -> tuple[int, int]:
    """(training marks, training triplets) of a palette of ``n`` marks (``rawTripletToKernel.m``:
    4 and 8 for 10 marks, 6 and 24 for 16)."""
    if n == 10:
        return 4, 8
    if n == 16:
        return 6, 24
    raise ValueError(f"the kernel study has palettes of 10 or 16 marks, not {n}")


@dataclass(frozen=True)
class TripletJudgment:
    """One subject's answer to one test triplet: ``subject`` 1..20 (line of the file),
    ``triplet`` the three palette indices sorted, ``odd`` the palette index chosen as the most
    different, ``trial`` the triplet's 0-based place in the test list (its ``comb`` order; the
    order a subject saw them in is not released)."""

    subject: int
    triplet: tuple[int, int, int]
    odd: int
    trial: int


@dataclass(frozen=True)
class CatchJudgment:
    """One subject's answer to one catch triplet: ``subject`` 1..20, ``catch`` its place 0..9 in
    :data:`CATCH_TRIPLETS`, ``repeated``/``other`` the palette indices, ``chosen`` the palette index
    the subject chose as the most different; :attr:`correct` when it is the other mark."""

    subject: int
    catch: int
    repeated: int
    other: int
    chosen: int

    @property
    def correct(self) -> bool:
        return self.chosen == self.other


def raw_td_path(palette: str) -> str:
    """The mirror-relative path of ``palette``'s raw triplet-discrimination file."""
    return f"{RAW_DIR}/{palette}-td.txt"


def read_td_judgments(palette: str, n: int) -> list[TripletJudgment]:
    """Every subject's answer to every test triplet of ``palette`` (``n`` marks), subject by
    subject in test-list order: 20 x C(n,3) judgments.  Raises KeyError for a palette the
    source does not pin; ValueError naming the file, line and value for a line of the wrong
    length, a non-integer, or a group that is not the expected test triplet."""
    return _read(palette, n)[0]


def read_catch_judgments(palette: str, n: int) -> list[CatchJudgment]:
    """Every subject's answer to the 10 catch triplets of ``palette``, subject by subject in
    :data:`CATCH_TRIPLETS` order: 20 x 10 judgments (the groups after the test triplets).  Raises
    as :func:`read_td_judgments`, and ValueError naming file, line and catch triplet for a group
    that is not the expected repeated-mark triplet."""
    return _read(palette, n)[1]


def _read(palette: str, n: int) -> tuple[list[TripletJudgment], list[CatchJudgment]]:
    path = resolve(source_file(raw_td_path(palette)))
    n_train_marks, n_train = _layout(n)
    trips = list(itertools.combinations(range(n), 3))
    want = 3 * (n_train + len(trips) + N_CATCH)
    out = []
    catch = []
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    if len(lines) != N_SUBJECTS:
        raise ValueError(f"{path}: expected {N_SUBJECTS} subject lines, got {len(lines)}")
    for s, line in enumerate(lines, 1):
        try:
            v = [int(x) for x in line.split(",")]
        except ValueError:
            raise ValueError(f"{path}: line {s}: not comma-separated integers") from None
        if len(v) != want:
            raise ValueError(f"{path}: line {s}: expected {want} integers (3 x ({n_train} training + {len(trips)} "
                             f"test + {N_CATCH} catch triplets)), got {len(v)}")
        for t, trip in enumerate(trips):
            g = [x - n_train_marks for x in v[3 * (n_train + t):3 * (n_train + t) + 3]]
            if tuple(sorted(g)) != trip:
                raise ValueError(f"{path}: line {s}, test triplet {t}: got marks {g}, expected {list(trip)}")
            out.append(TripletJudgment(s, trip, g[2], t))
        for k, (rep, other) in enumerate(CATCH_TRIPLETS):
            at = 3 * (n_train + len(trips) + k)
            g = [x - n_train_marks for x in v[at:at + 3]]
            if sorted(g) != sorted([rep, rep, other]):
                raise ValueError(f"{path}: line {s}, catch triplet {k}: got marks {g}, expected {rep} twice and {other}")
            catch.append(CatchJudgment(s, k, rep, other, g[2]))
    return out, catch
