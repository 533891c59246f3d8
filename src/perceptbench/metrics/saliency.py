"""SalBench scores: exact match, per-category F1, mean F1, breakdowns, bootstrap CIs (numpy).

Seed 001 §4 "Setting": "we devise the task as multi-label classification and report the
accuracy of exact matches and the average F1 score over all categories".  Tables 1, A.1
and A.2 report the overall F1 and the F1 of each category; Table 3 / A.3 break the
synthetic split down by difficulty level (§6.1) and Table 4 the natural split by number of
distractors (§6.2: "<7, 7-15, 15-25, >25").

Definitions (per stimulus i, category c; P = predicted set, T = truth set):

* exact match  EM = mean_i 1[P_i == T_i]  (a predicted label outside the category list,
  e.g. "Shape" on the synthetic split, makes P_i != T_i);
* per-category F1, pooled over stimuli: TP_c = sum_i 1[c in P_i and c in T_i],
  FP_c = sum_i 1[c in P_i, c not in T_i], FN_c = sum_i 1[c not in P_i, c in T_i],
  F1_c = 2 TP_c / (2 TP_c + FP_c + FN_c)  (= 2PR/(P+R); undefined, NaN, when the
  denominator is 0, i.e. the category is neither true nor predicted anywhere);
* mean F1 = mean over *all* categories of F1_c, an undefined F1_c counted as 0 (seed 001
  §4: "the average F1 score over all categories"; lmms-eval's epsilon formula gives the
  same): three stimuli, all truly and correctly Color, on the synthetic split score
  (1 + 0 + 0) / 3 = 0.333;
* mean F1 over defined categories (``mean_f1_defined``, a named variant, the project's
  headline before issue 7) = mean of the defined F1_c only (1.000 in that example);
* sample F1 (lmms-eval's ``sample_f1``, for comparison) = mean_i 2|P_i & T_i| / (|P_i| + |T_i|).

Null responses (unparseable answers, ``None``): ``null="empty"`` scores them as an empty
prediction, so every stimulus counts (seed 001 reports exact match and F1 over the whole
benchmark; lmms-eval's parser turns any answer into a set of strings, and a string that is
no category matches nothing): the SalBench headline.  ``null="exclude"`` drops them (the
``@nulls_excluded`` variant, the convention of seed 000 D.4 for the Gestalt battery).
:func:`score_both_conventions` reports both side by side.

Confidence intervals: percentile bootstrap over stimuli; all draws at once through the
project's index matrix ``metrics.bootstrap.resample_indices(n, n_boot, seed)`` of shape
``(n_boot, n)`` (so intervals are paired across models scored on the same stimuli),
processed in blocks of draws to bound memory, every statistic recomputed on each draw.
Draws where a statistic is undefined (an F1 with zero denominator) are dropped and
counted in ``BootstrapResult.n_dropped``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Hashable, Iterable, Sequence

import numpy as np

from .bootstrap import BootstrapResult, resample_indices

__all__ = [
    "DISTRACTOR_BINS",
    "MultiLabelScore",
    "distractor_bin",
    "encode_sets",
    "score_both_conventions",
    "score_by_group",
    "score_multilabel",
]

#: seed 001 §6.2 / Table 4 bins; edges: "<7" = n < 7, "7-15" = 7 <= n <= 15,
#: "15-25" = 15 < n <= 25, ">25" = n > 25
DISTRACTOR_BINS: tuple[str, ...] = ("<7", "7-15", "15-25", ">25")
NULL_CONVENTIONS = ("exclude", "empty")


def distractor_bin(n_distractors: int) -> str:
    """Seed 001 Table 4 bin of a distractor count (edges in :data:`DISTRACTOR_BINS`).

    Raises ValueError for a negative or non-integer count.
    """
    if n_distractors is None or int(n_distractors) != n_distractors or n_distractors < 0:
        raise ValueError(f"distractor count must be a non-negative integer, got {n_distractors!r}")
    n = int(n_distractors)
    if n < 7:
        return "<7"
    if n <= 15:
        return "7-15"
    if n <= 25:
        return "15-25"
    return ">25"


@dataclass(frozen=True)
class MultiLabelScore:
    """Scores of one set of trials under one null convention.

    Attributes
    ----------
    categories: the scored categories, in order.
    null_convention: ``"exclude"`` or ``"empty"``.
    n: stimuli scored (after excluding nulls under ``"exclude"``); n_null: nulls in the input.
    exact_match, mean_f1, sample_f1: point estimates in [0, 1] (NaN when n == 0); mean_f1
        averages all categories (undefined F1 = 0).
    mean_f1_defined: mean over the categories whose F1 is defined (NaN if none).
    category_f1: F1 per category (NaN when undefined, see module doc).
    category_counts: (TP, FP, FN) per category.
    ci: a :class:`~perceptbench.metrics.bootstrap.BootstrapResult` (estimate, low, high,
        n_draws, n_dropped, seed) per statistic, keys ``"exact_match"``, ``"mean_f1"``,
        ``"sample_f1"`` and ``"f1:<category>"``; low/high NaN when not computed (ready for
        ``ScoreRow.from_boot``).
    n_boot, ci_level, seed: bootstrap settings.
    notes: human-readable reasons for NaN values or missing intervals.
    """

    categories: tuple[str, ...]
    null_convention: str
    n: int
    n_null: int
    exact_match: float
    mean_f1: float
    sample_f1: float
    category_f1: dict[str, float]
    mean_f1_defined: float
    category_counts: dict[str, tuple[int, int, int]]
    ci: dict[str, BootstrapResult]
    n_boot: int
    ci_level: float
    seed: int
    notes: tuple[str, ...] = field(default=())


def _as_set(x, what: str, i: int) -> frozenset[str] | None:
    if x is None:
        return None
    if isinstance(x, str):
        raise ValueError(f"{what}[{i}] must be a collection of labels, not the string {x!r}")
    return frozenset(str(v) for v in x)


def encode_sets(
    preds: Sequence[Iterable[str] | None],
    truths: Sequence[Iterable[str]],
    categories: Sequence[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Encode label sets as arrays.

    Returns ``(P, T, extra, null)``: P, T bool arrays of shape (n, C) (column c = category c);
    ``extra`` int64 (n,) = number of predicted labels outside ``categories``; ``null`` bool
    (n,) = prediction is None.  Raises ValueError when lengths differ, a truth is None or
    empty or holds a label outside ``categories``, or ``categories`` has duplicates.
    """
    cats = tuple(categories)
    if len(set(cats)) != len(cats) or not cats:
        raise ValueError(f"categories must be non-empty and unique, got {cats!r}")
    if len(preds) != len(truths):
        raise ValueError(f"preds and truths differ in length: {len(preds)} != {len(truths)}")
    col = {c: j for j, c in enumerate(cats)}
    n = len(truths)
    P = np.zeros((n, len(cats)), dtype=bool)
    T = np.zeros((n, len(cats)), dtype=bool)
    extra = np.zeros(n, dtype=np.int64)
    null = np.zeros(n, dtype=bool)
    for i, (p, t) in enumerate(zip(preds, truths)):
        ts = _as_set(t, "truths", i)
        if not ts:
            raise ValueError(f"truths[{i}] must be a non-empty label set, got {t!r}")
        bad = ts - set(cats)
        if bad:
            raise ValueError(f"truths[{i}] holds labels {sorted(bad)} outside categories {cats}")
        for lab in ts:
            T[i, col[lab]] = True
        ps = _as_set(p, "preds", i)
        if ps is None:
            null[i] = True
            continue
        for lab in ps:
            if lab in col:
                P[i, col[lab]] = True
            else:
                extra[i] += 1
    return P, T, extra, null


def _per_stimulus(P: np.ndarray, T: np.ndarray, extra: np.ndarray):
    """Per-stimulus contributions: em (n,), tp/fp/fn (n, C) int8, sample F1 (n,)."""
    em = np.all(P == T, axis=1) & (extra == 0)
    tp = (P & T).astype(np.int8)
    fp = (P & ~T).astype(np.int8)
    fn = (~P & T).astype(np.int8)
    inter = tp.sum(axis=1, dtype=np.int64)
    denom = P.sum(axis=1) + extra + T.sum(axis=1)
    sf1 = np.where(denom > 0, 2.0 * inter / np.maximum(denom, 1), 0.0)
    return em.astype(np.float64), tp, fp, fn, sf1


def _f1_from_counts(tp, fp, fn, undefined_f1: str) -> np.ndarray:
    tp, fp, fn = (np.asarray(a, dtype=np.float64) for a in (tp, fp, fn))
    den = 2 * tp + fp + fn
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(den > 0, 2 * tp / np.where(den > 0, den, 1), np.nan)
    if undefined_f1 == "zero":
        f1 = np.nan_to_num(f1, nan=0.0)
    return f1


def _mean_f1_all(f1: np.ndarray) -> np.ndarray:
    """Mean over all categories (last axis), an undefined (NaN) F1 counted as 0 (seed 001 §4)."""
    return np.nan_to_num(np.asarray(f1, dtype=np.float64), nan=0.0).mean(axis=-1)


def _mean_f1(f1: np.ndarray) -> np.ndarray:
    """Mean over the defined categories only (NaN skipped; NaN when none is defined)."""
    with np.errstate(invalid="ignore"):
        ok = ~np.isnan(f1)
        s = np.where(ok, f1, 0.0).sum(axis=-1)
        k = ok.sum(axis=-1)
        return np.where(k > 0, s / np.maximum(k, 1), np.nan)


def score_multilabel(
    preds: Sequence[Iterable[str] | None],
    truths: Sequence[Iterable[str]],
    categories: Sequence[str],
    null: str = "exclude",
    n_boot: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    undefined_f1: str = "nan",
) -> MultiLabelScore:
    """Exact match, per-category pooled F1, mean F1 and sample F1 with bootstrap CIs.

    Parameters
    ----------
    preds: per stimulus, the predicted label set (any iterable of str) or None (null).
    truths: per stimulus, the non-empty truth set (labels from ``categories``).
    categories: the scored categories (seed 001: seven on the natural split,
        Orientation/Color/Size on the synthetic one).
    null: ``"exclude"`` (project rule) or ``"empty"`` (lmms-eval); see module doc.
    n_boot: bootstrap draws (0 = no intervals); seed: generator seed; ci_level in (0, 1).
    undefined_f1: how an undefined per-category F1 is *reported* in ``category_f1``:
        ``"nan"`` or ``"zero"``.  ``mean_f1`` counts it as 0 either way (seed 001 §4);
        ``mean_f1_defined`` skips it either way.

    Formulas: module docstring (seed 001 §4 "Setting", Tables 1, A.1, A.2).
    Raises ValueError for an unknown ``null`` / ``undefined_f1`` value, bad ``n_boot`` /
    ``ci_level``, or inconsistent inputs (see :func:`encode_sets`).
    """
    if null not in NULL_CONVENTIONS:
        raise ValueError(f"null must be one of {NULL_CONVENTIONS}, got {null!r}")
    if undefined_f1 not in ("nan", "zero"):
        raise ValueError(f"undefined_f1 must be 'nan' or 'zero', got {undefined_f1!r}")
    if int(n_boot) != n_boot or n_boot < 0:
        raise ValueError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not (0 < ci_level < 1):
        raise ValueError(f"ci_level must lie in (0, 1), got {ci_level!r}")
    cats = tuple(categories)
    P, T, extra, isnull = encode_sets(preds, truths, cats)
    n_null = int(isnull.sum())
    if null == "exclude":
        keep = ~isnull
        P, T, extra = P[keep], T[keep], extra[keep]
    # under "empty", null rows already have P all False and extra 0
    n = int(P.shape[0])
    notes: list[str] = []
    keys = ["exact_match", "mean_f1", "mean_f1_defined", "sample_f1"] + [f"f1:{c}" for c in cats]

    def _no_ci(estimates: dict[str, float]) -> dict[str, BootstrapResult]:
        nb = int(n_boot)
        return {k: BootstrapResult(float(estimates[k]), math.nan, math.nan, nb, nb, int(seed)) for k in keys}

    if n == 0:
        notes.append("no scorable trials (all responses null or no trials)")
        return MultiLabelScore(
            categories=cats, null_convention=null, n=0, n_null=n_null, exact_match=math.nan,
            mean_f1=math.nan, sample_f1=math.nan, category_f1={c: math.nan for c in cats},
            mean_f1_defined=math.nan,
            category_counts={c: (0, 0, 0) for c in cats}, ci=_no_ci(dict.fromkeys(keys, math.nan)),
            n_boot=int(n_boot), ci_level=float(ci_level), seed=int(seed), notes=tuple(notes),
        )
    em, tp, fp, fn, sf1 = _per_stimulus(P, T, extra)
    TP, FP, FN = tp.sum(0, dtype=np.int64), fp.sum(0, dtype=np.int64), fn.sum(0, dtype=np.int64)
    f1_nan = _f1_from_counts(TP, FP, FN, "nan")
    f1 = _f1_from_counts(TP, FP, FN, undefined_f1)
    for c, v in zip(cats, f1_nan):
        if math.isnan(v):
            notes.append(f"F1 of {c} undefined: category neither true nor predicted in these trials "
                         "(counted as 0 in mean_f1, skipped in mean_f1_defined)")
    mean_f1 = float(_mean_f1_all(f1_nan))
    mean_f1_defined = float(_mean_f1(f1_nan))
    estimates = {"exact_match": float(em.mean()), "mean_f1": mean_f1, "mean_f1_defined": mean_f1_defined,
                 "sample_f1": float(sf1.mean())}
    estimates.update({f"f1:{c}": float(v) for c, v in zip(cats, f1)})

    ci = _no_ci(estimates)
    if n_boot > 0 and n >= 2:
        idx = resample_indices(n, int(n_boot), int(seed))
        C = len(cats)
        counts = np.empty((3, int(n_boot), C), dtype=np.int64)
        block = max(1, int(2e7 // max(1, n * C)))
        for s in range(0, int(n_boot), block):
            sl = idx[s : s + block]
            for k, arr in enumerate((tp, fp, fn)):
                counts[k, s : s + block] = arr[sl].sum(axis=1, dtype=np.int64)
        f1_d_nan = _f1_from_counts(counts[0], counts[1], counts[2], "nan")
        f1_d = _f1_from_counts(counts[0], counts[1], counts[2], undefined_f1)
        draws = {
            "exact_match": em[idx].mean(axis=1),
            "sample_f1": sf1[idx].mean(axis=1),
            "mean_f1": _mean_f1_all(f1_d_nan),
            "mean_f1_defined": _mean_f1(f1_d_nan),
        }
        draws.update({f"f1:{c}": f1_d[:, j] for j, c in enumerate(cats)})
        a = 100 * (1 - ci_level) / 2
        for k in keys:
            x = draws[k]
            ok = ~np.isnan(x)
            dropped = int((~ok).sum())
            if ok.any():
                lo, hi = np.percentile(x[ok], (a, 100 - a))
            else:
                lo = hi = math.nan
            ci[k] = BootstrapResult(estimates[k], float(lo), float(hi), int(n_boot), dropped, int(seed))
            if dropped and not math.isnan(estimates[k]):
                notes.append(f"{k} undefined in {dropped} of {n_boot} bootstrap draws (dropped)")
    elif n_boot > 0:
        notes.append(f"no bootstrap interval: only n={n} scorable trial(s)")

    return MultiLabelScore(
        categories=cats,
        null_convention=null,
        n=n,
        n_null=n_null,
        exact_match=float(em.mean()),
        mean_f1=mean_f1,
        sample_f1=float(sf1.mean()),
        category_f1={c: float(v) for c, v in zip(cats, f1)},
        mean_f1_defined=mean_f1_defined,
        category_counts={c: (int(a), int(b), int(d)) for c, a, b, d in zip(cats, TP, FP, FN)},
        ci=ci,
        n_boot=int(n_boot),
        ci_level=float(ci_level),
        seed=int(seed),
        notes=tuple(notes),
    )


def score_both_conventions(
    preds: Sequence[Iterable[str] | None],
    truths: Sequence[Iterable[str]],
    categories: Sequence[str],
    **kwargs,
) -> dict[str, MultiLabelScore]:
    """Both null conventions side by side: ``{"nulls_excluded": ..., "nulls_as_empty": ...}``.

    ``kwargs`` go to :func:`score_multilabel` (n_boot, seed, ci_level, undefined_f1); both
    use the same seed, hence the same bootstrap index matrix when no response is null.
    """
    if "null" in kwargs:
        raise ValueError("score_both_conventions sets `null` itself; do not pass it")
    return {
        "nulls_excluded": score_multilabel(preds, truths, categories, null="exclude", **kwargs),
        "nulls_as_empty": score_multilabel(preds, truths, categories, null="empty", **kwargs),
    }


def score_by_group(
    preds: Sequence[Iterable[str] | None],
    truths: Sequence[Iterable[str]],
    groups: Sequence[Hashable],
    categories: Sequence[str],
    group_order: Sequence[Hashable] | None = None,
    **kwargs,
) -> dict[Hashable, MultiLabelScore]:
    """Scores per group: difficulty level (seed 001 §6.1, Table 3 / A.3) or distractor bin
    (§6.2, Table 4; map counts with :func:`distractor_bin`), or any other key.

    ``groups[i]`` is stimulus i's group; ``group_order`` fixes the output order (groups in
    it that have no stimulus are returned with n == 0 and NaN scores); otherwise groups
    appear in order of first occurrence.  ``kwargs`` go to :func:`score_multilabel`.
    Raises ValueError when ``groups`` and ``preds`` differ in length.
    """
    if len(groups) != len(preds):
        raise ValueError(f"groups and preds differ in length: {len(groups)} != {len(preds)}")
    order = list(dict.fromkeys(groups)) if group_order is None else list(group_order)
    out: dict[Hashable, MultiLabelScore] = {}
    g_arr = list(groups)
    for g in order:
        ix = [i for i, x in enumerate(g_arr) if x == g]
        out[g] = score_multilabel([preds[i] for i in ix], [truths[i] for i in ix], categories, **kwargs)
    return out
