"""Comparing score rows field by field, for tests that write down every row a scorer should emit."""

import dataclasses
import math

from perceptbench.core.rows import ScoreRow


SEED = 7  # not the functions' default seed 0, so a dropped ``seed=seed`` shows


def values_equal(a, b, tol: float = 0.0) -> bool:
    """One field of two score rows equal: NaN equals NaN, floats within ``tol``, types of str/None
    values checked."""
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return type(a) is type(b) and a == b if isinstance(a, str) or a is None or b is None else a == b


def assert_rows(got: list[ScoreRow], want: list[ScoreRow], tol: float = 0.0) -> None:
    """Row lists equal in order and in every field (NaN equals NaN; floats within ``tol``
    where a reference computes them by another path; value types checked for str/None)."""
    assert [(r.model, r.metric) for r in got] == [(r.model, r.metric) for r in want]
    for g, w in zip(got, want):
        for f in dataclasses.fields(ScoreRow):
            a, b = getattr(g, f.name), getattr(w, f.name)
            assert values_equal(a, b, tol), f"{g.model} {g.metric}: {f.name} = {a!r}, want {b!r}"


def boot_row(tid, model, metric, b, n, n_null, note=""):
    """The score row a scorer builds from bootstrap result ``b`` (:meth:`ScoreRow.from_boot`)."""
    return ScoreRow.from_boot(tid, model, metric, b, n, n_null, note)  # an undefined value says so
