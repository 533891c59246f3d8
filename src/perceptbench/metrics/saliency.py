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
    "score_encoded",
    "score_groups_encoded",
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
    """Per-stimulus contributions of M respondents: ``P`` bool (M, n, C), ``T`` bool (n, C),
    ``extra`` int (M, n) -> em float64 (M, n), tp/fp/fn int8 (M, n, C), sample F1 float64 (M, n)."""
    em = np.all(P == T[None], axis=2) & (extra == 0)
    tp = (P & T[None]).astype(np.int8)
    fp = (P & ~T[None]).astype(np.int8)
    fn = (~P & T[None]).astype(np.int8)
    inter = tp.sum(axis=2, dtype=np.int64)
    denom = P.sum(axis=2) + extra + T.sum(axis=1)[None]
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


def _check_settings(null: str, undefined_f1: str, n_boot, ci_level) -> None:
    if null not in NULL_CONVENTIONS:
        raise ValueError(f"null must be one of {NULL_CONVENTIONS}, got {null!r}")
    if undefined_f1 not in ("nan", "zero"):
        raise ValueError(f"undefined_f1 must be 'nan' or 'zero', got {undefined_f1!r}")
    if int(n_boot) != n_boot or n_boot < 0:
        raise ValueError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    if not (0 < ci_level < 1):
        raise ValueError(f"ci_level must lie in (0, 1), got {ci_level!r}")


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

    Formulas: module docstring (seed 001 §4 "Setting", Tables 1, A.1, A.2); computed by
    :func:`score_encoded` (one respondent).
    Raises ValueError for an unknown ``null`` / ``undefined_f1`` value, bad ``n_boot`` /
    ``ci_level``, or inconsistent inputs (see :func:`encode_sets`).
    """
    _check_settings(null, undefined_f1, n_boot, ci_level)
    P, T, extra, isnull = encode_sets(preds, truths, categories)
    return score_encoded(P[None], T, extra[None], isnull[None], categories, null, n_boot, seed, ci_level,
                         undefined_f1)[0]


def score_encoded(
    P: np.ndarray,
    T: np.ndarray,
    extra: np.ndarray,
    isnull: np.ndarray,
    categories: Sequence[str],
    null: str = "exclude",
    n_boot: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
    undefined_f1: str = "nan",
) -> list[MultiLabelScore]:
    """:func:`score_multilabel` of M respondents who answered the same n stimuli, from label
    sets already encoded (:func:`encode_sets`): ``P`` bool (M, n, C) predicted labels,
    ``T`` bool (n, C) truth sets (shared), ``extra`` int (M, n) predicted labels outside
    ``categories``, ``isnull`` bool (M, n) null predictions (their ``P`` and ``extra`` are
    ignored).  Returns one :class:`MultiLabelScore` per respondent, each equal, to the last
    bit, to ``score_multilabel`` of that respondent alone (tests/unit/metrics/test_saliency.py).

    Vectorised over respondents and draws: every bootstrap statistic but sample F1 is a ratio
    of integer counts (TP, FP, FN, exact matches), so the resample sums are taken as one
    product of the resample count matrix (:func:`perceptbench.metrics.bootstrap.resample_counts`
    of the same index matrix) with the respondents' 0/1 contributions, exact in any order;
    sample F1 (non-integer per stimulus) is gathered and summed along each draw as the per-draw
    form does (numpy's pairwise sum of the same row), so its bits are unchanged.  Under
    ``null="exclude"`` respondents are scored in groups of equal null pattern (each group's
    kept stimuli: its own n and index matrix).  Raises ValueError as :func:`score_multilabel`
    for bad settings, and for arrays whose shapes disagree."""
    _check_settings(null, undefined_f1, n_boot, ci_level)
    cats = tuple(categories)
    P, T = np.asarray(P, bool), np.asarray(T, bool)
    extra, isnull = np.asarray(extra, np.int64), np.asarray(isnull, bool)
    if P.ndim != 3 or T.shape != P.shape[1:] or extra.shape != P.shape[:2] or isnull.shape != P.shape[:2] \
            or P.shape[2] != len(cats):
        raise ValueError(f"score_encoded: shapes disagree: P {P.shape}, T {T.shape}, extra {extra.shape}, "
                         f"isnull {isnull.shape}, {len(cats)} categories")
    P = P & ~isnull[:, :, None]  # a null prediction is an empty one (null="empty")
    extra = np.where(isnull, 0, extra)
    n_null = isnull.sum(1)
    settings = (cats, null, int(n_boot), int(seed), float(ci_level), undefined_f1)
    if null == "empty":
        return _score_block(P, T, extra, n_null, *settings)
    out: list[MultiLabelScore | None] = [None] * P.shape[0]
    keep_u, inv = np.unique(~isnull, axis=0, return_inverse=True)
    for g, keep in enumerate(keep_u):
        members = np.flatnonzero(inv.ravel() == g)
        for m, sc in zip(members.tolist(), _score_block(P[members][:, keep], T[keep], extra[members][:, keep],
                                                        n_null[members], *settings)):
            out[m] = sc
    return out  # type: ignore[return-value]


_BLOCK = 1_000_000
"""Bound on the elements of one block's (respondents x draws x stimuli) sample-F1 gather."""


def _score_block(P, T, extra, n_null, cats, null, n_boot, seed, ci_level, undefined_f1) -> list[MultiLabelScore]:
    """:func:`score_encoded` of respondents whose scored stimuli are the same n (after any
    exclusion): ``P`` (M, n, C), ``T`` (n, C), ``extra`` (M, n), ``n_null`` (M,)."""
    M, n, C = P.shape
    keys = ["exact_match", "mean_f1", "mean_f1_defined", "sample_f1"] + [f"f1:{c}" for c in cats]

    def result(m, estimates, ci, notes, **fields):
        return MultiLabelScore(categories=cats, null_convention=null, n=n, n_null=int(n_null[m]),
                               exact_match=estimates["exact_match"], mean_f1=estimates["mean_f1"],
                               sample_f1=estimates["sample_f1"], mean_f1_defined=estimates["mean_f1_defined"],
                               ci=ci, n_boot=n_boot, ci_level=ci_level, seed=seed, notes=tuple(notes), **fields)

    def no_ci(estimates: dict[str, float]) -> dict[str, BootstrapResult]:
        return {k: BootstrapResult(float(estimates[k]), math.nan, math.nan, n_boot, n_boot, seed) for k in keys}

    if n == 0:
        est = dict.fromkeys(keys, math.nan)
        return [result(m, est, no_ci(est), ["no scorable trials (all responses null or no trials)"],
                       category_f1={c: math.nan for c in cats}, category_counts={c: (0, 0, 0) for c in cats})
                for m in range(M)]
    em, tp, fp, fn, sf1 = _per_stimulus(P, T, extra)
    TP, FP, FN = tp.sum(1, dtype=np.int64), fp.sum(1, dtype=np.int64), fn.sum(1, dtype=np.int64)  # (M, C)
    f1_nan = _f1_from_counts(TP, FP, FN, "nan")
    f1 = _f1_from_counts(TP, FP, FN, undefined_f1)
    est = {"exact_match": em.mean(1), "mean_f1": _mean_f1_all(f1_nan), "mean_f1_defined": _mean_f1(f1_nan),
           "sample_f1": sf1.mean(1)}
    est.update({f"f1:{c}": f1[:, j] for j, c in enumerate(cats)})
    notes: list[list[str]] = [[f"F1 of {c} undefined: category neither true nor predicted in these trials "
                               "(counted as 0 in mean_f1, skipped in mean_f1_defined)"
                               for c, v in zip(cats, f1_nan[m]) if math.isnan(v)] for m in range(M)]
    cis: list[dict[str, BootstrapResult]] = [no_ci({k: est[k][m] for k in keys}) for m in range(M)]
    if n_boot > 0 and n >= 2:
        from .agreement import _wsum
        from .bootstrap import percentile_intervals, resample_counts

        idx = resample_indices(n, n_boot, seed)
        w = resample_counts(idx)
        # integer sums over each resample (TP, FP, FN per category, exact matches): one product, exact
        x = np.concatenate([np.stack([tp, fp, fn]).transpose(0, 1, 3, 2).reshape(3 * M * C, n), em])
        sums = _wsum(w, x)  # (draws, 3 M C + M)
        counts = sums[:, :3 * M * C].reshape(n_boot, 3, M, C)
        f1_d_nan = _f1_from_counts(counts[:, 0], counts[:, 1], counts[:, 2], "nan")  # (draws, M, C)
        f1_d = _f1_from_counts(counts[:, 0], counts[:, 1], counts[:, 2], undefined_f1)
        # sample F1 is not an integer per stimulus: gathered and summed along each draw (the per-draw
        # order: numpy's pairwise sum of each (draw, stimuli) row of a 2-D array; the same reduction of
        # a 3-D (respondents, draws, stimuli) array takes another order, hence the reshape)
        sf1_d = np.empty((n_boot, M))
        step = max(1, _BLOCK // (n_boot * n))
        for s in range(0, M, step):
            g = sf1[s:s + step][:, idx]
            sf1_d[:, s:s + step] = g.reshape(-1, n).mean(axis=-1).reshape(g.shape[0], n_boot).T
        draws = {"exact_match": sums[:, 3 * M * C:] / n, "sample_f1": sf1_d,
                 "mean_f1": _mean_f1_all(f1_d_nan), "mean_f1_defined": _mean_f1(f1_d_nan)}
        draws.update({f"f1:{c}": f1_d[:, :, j] for j, c in enumerate(cats)})
        a = 100 * (1 - ci_level) / 2
        for k in keys:
            for m, r in enumerate(percentile_intervals(est[k], draws[k], n_boot, seed, q=(a, 100 - a))):
                cis[m][k] = r
                if r.n_dropped and not math.isnan(r.estimate):
                    notes[m].append(f"{k} undefined in {r.n_dropped} of {n_boot} bootstrap draws (dropped)")
    elif n_boot > 0:
        for nt in notes:
            nt.append(f"no bootstrap interval: only n={n} scorable trial(s)")
    return [result(m, {k: float(est[k][m]) for k in keys}, cis[m], notes[m],
                   category_f1={c: float(v) for c, v in zip(cats, f1[m])},
                   category_counts={c: (int(a), int(b), int(d)) for c, a, b, d in zip(cats, TP[m], FP[m], FN[m])})
            for m in range(M)]


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
    appear in order of first occurrence.  ``kwargs`` go to :func:`score_multilabel`
    (each group equals ``score_multilabel`` of its stimuli; the label sets are encoded once).
    Raises ValueError when ``groups`` and ``preds`` differ in length, or as
    :func:`score_multilabel`.
    """
    if len(groups) != len(preds):
        raise ValueError(f"groups and preds differ in length: {len(groups)} != {len(preds)}")
    P, T, extra, isnull = encode_sets(preds, truths, categories)
    return {g: sc[0] for g, sc in score_groups_encoded(P[None], T, extra[None], isnull[None], groups, categories,
                                                       group_order, **kwargs).items()}


def score_groups_encoded(
    P: np.ndarray,
    T: np.ndarray,
    extra: np.ndarray,
    isnull: np.ndarray,
    groups: Sequence[Hashable],
    categories: Sequence[str],
    group_order: Sequence[Hashable] | None = None,
    **kwargs,
) -> dict[Hashable, list[MultiLabelScore]]:
    """:func:`score_by_group` of M respondents on the same n stimuli, encoded as for
    :func:`score_encoded` (``P`` (M, n, C), ``T`` (n, C), ``extra``, ``isnull`` (M, n)):
    per group (``groups`` (n,), order as in :func:`score_by_group`) one
    :class:`MultiLabelScore` per respondent, from :func:`score_encoded` of the group's
    stimuli (their own index matrix, shared by the respondents).  ``kwargs`` go to
    :func:`score_encoded`.  Raises ValueError when ``groups`` is not of length n."""
    if len(groups) != np.shape(P)[1]:
        raise ValueError(f"groups and preds differ in length: {len(groups)} != {np.shape(P)[1]}")
    order = list(dict.fromkeys(groups)) if group_order is None else list(group_order)
    g_arr = list(groups)
    out: dict[Hashable, list[MultiLabelScore]] = {}
    for g in order:
        ix = np.array([i for i, x in enumerate(g_arr) if x == g], np.int64)
        out[g] = score_encoded(P[:, ix], T[ix], extra[:, ix], isnull[:, ix], categories, **kwargs)
    return out
