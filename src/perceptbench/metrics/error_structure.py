"""Where errors concentrate along a ranking score, pooled over groups (numpy only).

Each function is one formula over arrays and knows nothing of what the score is; the VSI
assembly (:mod:`perceptbench.vsi.pooled`, seed 002 §3, §4, B.2, C.2) passes VSI, errors and
confidences.  Pinned definitions (docs/metrics.md, "VSI pooled and threshold analyses"):

* :func:`joint_grid`: the joint error structure of two rankings of the same samples (seed 002
  B.2, "joint VSI quintiles"): per cell (i, j) of two group labels (quintiles), the number of
  samples and the number on which *both* are wrong; the joint error rate of a cell is
  ``both_wrong / count``.
* :func:`pooled_ratio`: a rate ratio pooled over groups, ``(sum a_events / sum a_n) /
  (sum b_events / sum b_n)`` (seed 002 §3, "pooled across both benchmarks, the error-rate
  ratio is 2.33"): every group's samples count once, so a large group weighs more than in the
  mean of per-group ratios.
* :func:`size_matched_top`: the reference population of a threshold subset (seed 002 §3, "a
  matched top-VSI population"): the ``k = min(#below, #rest)`` samples with the highest score
  outside the subset, ties broken by id.
* :func:`enrichment`: ``mean(flag[group]) / mean(flag[ref])``, NaN when the reference rate is 0.
* :func:`reliability_bins`: the reliability diagram of a confidence (seed 002 B.2: empirical
  accuracy against predicted confidence in 10 equal-width bins), the bins of
  :func:`perceptbench.metrics.error_detection.ece_rows`.
* :func:`swing`: the range ``max - min`` of a value over settings and where it is reached
  (seed 002 C.2, "AUROC_VSI varies by at most 0.048 across sigma in {10, 20, 40}").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Mapping, Sequence

import numpy as np

from ..seeding import rng_for
from .error_detection import N_BINS, bin_index

__all__ = ["joint_grid", "pooled_ratio", "pooled_ratio_interval", "size_matched_top", "enrichment",
           "ratio_interval", "Reliability", "reliability_bins", "swing"]


def joint_grid(label_a: np.ndarray, label_b: np.ndarray, wrong_a: np.ndarray, wrong_b: np.ndarray,
               n_groups: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """(count, both_wrong): int arrays (n_groups, n_groups); ``count[i, j]`` samples with
    ``label_a == i`` and ``label_b == j``, ``both_wrong[i, j]`` of them wrong under both.

    ``label_a``, ``label_b``: int (n,) in [0, n_groups) (e.g. VSI quintiles of two models on the
    same samples, 0 = lowest); ``wrong_a``, ``wrong_b``: bool (n,).  Seed 002 B.2 (joint error
    structure over joint VSI quintiles).  Raises ValueError for arrays of different lengths or
    labels outside [0, n_groups)."""
    la, lb = np.asarray(label_a, int), np.asarray(label_b, int)
    wa, wb = np.asarray(wrong_a, bool), np.asarray(wrong_b, bool)
    if not (la.shape == lb.shape == wa.shape == wb.shape) or la.ndim != 1:
        raise ValueError(f"labels and errors must be 1-D of one length, got {la.shape}, {lb.shape}, {wa.shape}, "
                         f"{wb.shape}")
    if la.size and (min(la.min(), lb.min()) < 0 or max(la.max(), lb.max()) >= n_groups):
        raise ValueError(f"labels must lie in [0, {n_groups})")
    count = np.zeros((n_groups, n_groups), int)
    both = np.zeros((n_groups, n_groups), int)
    np.add.at(count, (la, lb), 1)
    np.add.at(both, (la, lb), (wa & wb).astype(int))
    return count, both


def pooled_ratio(a_events: Sequence[float], a_n: Sequence[float], b_events: Sequence[float],
                 b_n: Sequence[float]) -> float:
    """``(sum a_events / sum a_n) / (sum b_events / sum b_n)``: the rate of group a over the rate
    of group b, each pooled over the entries (one entry per cell, e.g. per model; seed 002 §3).
    NaN when a denominator sum is 0 or the b rate is 0."""
    sa, na, sb, nb = (float(np.sum(x)) for x in (a_events, a_n, b_events, b_n))
    if na == 0 or nb == 0 or sb == 0:
        return math.nan
    return (sa / na) / (sb / nb)


def pooled_ratio_interval(a_groups: Sequence[np.ndarray], b_groups: Sequence[np.ndarray], seed: int, key: str,
                          n_draws: int = 1000) -> tuple[float, float, int]:
    """Percentile 95% interval of :func:`pooled_ratio` over 0/1 flags, each group resampled within
    itself (a stratified bootstrap: group g of ``a_groups`` and of ``b_groups`` is, e.g., the
    bottom and the top VSI quintile of cell g; memberships and sizes fixed).  ``a_groups``,
    ``b_groups``: sequences of float/bool arrays (n_g,); draws from ``rng_for(seed,
    "pooled-ratio", key, sizes...)``.  Returns (low, high, draws dropped), a draw with a zero b
    rate dropped; (NaN, NaN, n_draws) when every draw is (seed 002 §3, pooled ratios)."""
    sizes = [len(x) for x in a_groups] + [len(x) for x in b_groups]
    rng = rng_for(seed, "pooled-ratio", key, *sizes)

    def sums(groups):
        tot = np.zeros(n_draws)
        for x in groups:
            x = np.asarray(x, float)
            if x.size:
                tot += x[rng.integers(0, x.size, (n_draws, x.size))].sum(1)
        return tot

    sa, sb = sums(a_groups), sums(b_groups)
    na, nb = sum(len(x) for x in a_groups), sum(len(x) for x in b_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = (sa / na) / (sb / nb)
    ok = np.isfinite(draws)
    lo, hi = np.percentile(draws[ok], [2.5, 97.5]) if ok.any() else (math.nan, math.nan)
    return float(lo), float(hi), int((~ok).sum())


def size_matched_top(score: np.ndarray, below: np.ndarray, ids: Sequence[str]) -> np.ndarray:
    """Bool mask (n,): the ``k = min(below.sum(), (~below).sum())`` samples outside ``below``
    with the highest ``score`` (float (n,)), ties broken by ascending ``ids``: the size-matched
    top population a threshold subset is compared with (seed 002 §3)."""
    s = np.asarray(score, float)
    below = np.asarray(below, bool)
    ids = np.asarray(list(ids))
    cand = np.flatnonzero(~below)
    k = min(int(below.sum()), cand.size)
    order = cand[np.lexsort((ids[cand], -s[cand]))]  # highest score first, then id
    out = np.zeros(s.size, bool)
    out[order[:k]] = True
    return out


def enrichment(flag: np.ndarray, group: np.ndarray, ref: np.ndarray) -> float:
    """``mean(flag[group]) / mean(flag[ref])`` (bool (n,) arrays): how much denser ``flag`` is
    in ``group`` than in ``ref`` (seed 002 §3, "2.1x denser").  NaN when either set is empty or
    the reference rate is 0."""
    f = np.asarray(flag, bool)
    g, r = np.asarray(group, bool), np.asarray(ref, bool)
    if not g.any() or not r.any() or not f[r].any():
        return math.nan
    return float(f[g].mean() / f[r].mean())


def ratio_interval(a: np.ndarray, b: np.ndarray, idx_a: np.ndarray, idx_b: np.ndarray) -> tuple[float, float, int]:
    """Percentile 95% interval of the ratio of group means ``mean(a) / mean(b)`` with the two
    groups resampled separately (their memberships fixed): draw d is ``mean(a[idx_a[d]]) /
    mean(b[idx_b[d]])``.  ``a`` float/bool (n_a,), ``b`` (n_b,); ``idx_a`` int (D, n_a), ``idx_b``
    int (D, n_b) resample indices.  Returns (low, high, draws dropped): a draw whose ratio is not
    finite (a zero reference mean) is dropped; (NaN, NaN, D) when every draw is.  Used for the
    bottom/top-quintile ratios and the threshold enrichment (seed 002 §3)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = a[idx_a].mean(1) / b[idx_b].mean(1)
    ok = np.isfinite(draws)
    lo, hi = np.percentile(draws[ok], [2.5, 97.5]) if ok.any() else (math.nan, math.nan)
    return float(lo), float(hi), int((~ok).sum())


@dataclass(frozen=True)
class Reliability:
    """A reliability diagram: per bin b of ``edges`` ([lo, hi), last closed) the sample count,
    mean confidence and empirical accuracy (NaN for an empty bin)."""

    edges: tuple[float, ...]
    count: tuple[int, ...]
    mean_conf: tuple[float, ...]
    accuracy: tuple[float, ...]


def reliability_bins(conf: np.ndarray, correct: np.ndarray, n_bins: int = N_BINS) -> Reliability:
    """Reliability diagram of ``conf`` (float (n,) in [0, 1]) against ``correct`` (bool (n,)):
    ``n_bins`` equal-width bins, bin b = [b/n_bins, (b+1)/n_bins) with conf = 1 in the last,
    as :func:`~perceptbench.metrics.error_detection.ece_rows` bins them (seed 002 B.2: 10 bins).
    ECE = sum_b count_b / n |accuracy_b - mean_conf_b| over non-empty bins.  Raises ValueError
    for confidences outside [0, 1] or arrays of different lengths."""
    c = np.asarray(conf, float)
    ok = np.asarray(correct, float)
    if c.shape != ok.shape or c.ndim != 1:
        raise ValueError(f"conf and correct must be 1-D of one length, got {c.shape} and {ok.shape}")
    b = bin_index(c, n_bins)
    cnt = np.bincount(b, minlength=n_bins)
    s_conf = np.bincount(b, weights=c, minlength=n_bins)
    s_ok = np.bincount(b, weights=ok, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.where(cnt > 0, s_conf / np.maximum(cnt, 1), np.nan)
        acc = np.where(cnt > 0, s_ok / np.maximum(cnt, 1), np.nan)
    edges = tuple(float(x) for x in np.linspace(0.0, 1.0, n_bins + 1))
    return Reliability(edges, tuple(int(x) for x in cnt), tuple(float(x) for x in mean_conf),
                       tuple(float(x) for x in acc))


def swing(values: Mapping[Hashable, float]) -> tuple[float, Hashable, Hashable]:
    """(max - min, key of the min, key of the max) of the finite ``values`` (e.g. AUROC per
    sigma; seed 002 C.2); (NaN, None, None) with fewer than two finite values.  Ties: the first
    key in sorted order."""
    fin = sorted((k, float(v)) for k, v in values.items() if v is not None and math.isfinite(v))
    if len(fin) < 2:
        return math.nan, None, None
    lo = min(fin, key=lambda kv: kv[1])
    hi = max(fin, key=lambda kv: kv[1])
    return hi[1] - lo[1], lo[0], hi[0]
