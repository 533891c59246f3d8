"""Seeded percentile bootstrap over stimuli (seed 000 appendix D.5).

Stimuli are the only sampled quantity: each draw resamples stimulus indices with
replacement and recomputes the *whole* statistic (for kappa both c_obs and c_exp).  The
statistic is written as a vectorised function of an index matrix of shape
``(n_draws, n)`` so no Python loop runs over stimuli or draws.  Because the index matrix
depends only on (seed, n, n_draws, strata), every model scored on the same stimulus set
sees the same resamples: intervals are paired across models.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..seeding import rng_for

N_BOOT_B = 1000
"""Draws for B and other non-kappa statistics (seed 000 D.5)."""
N_BOOT_KAPPA = 2000
"""Draws for kappa intervals (seed 000 D.5)."""


@dataclass(frozen=True)
class BootstrapResult:
    """Percentile interval.  ``n_draws`` requested; ``n_dropped`` draws where the
    statistic was undefined (NaN) and was left out; ``low``/``high`` are NaN when every
    draw was dropped."""

    estimate: float
    low: float
    high: float
    n_draws: int
    n_dropped: int
    seed: int


class Resampler:
    """Owner of the bootstrap index matrices and their count matrices (seed 000 D.5).

    An index matrix is a pure function of (n, n_draws, seed, strata), so one drawn matrix
    is shared read-only by every model and statistic scored on the same stimulus set
    (sharing changes no value); the ``maxsize`` most recently used are kept, each with its
    count matrix.  :func:`resample_indices` and :func:`resample_counts` use the process's
    one instance, :data:`DRAWS`; a test wanting an empty one makes its own."""

    def __init__(self, maxsize: int = 32):
        self.maxsize = maxsize
        self.indices: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
        self._counts: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def resample_indices(self, n: int, n_draws: int, seed: int, strata: np.ndarray | None = None) -> np.ndarray:
        """Index matrix ``(n_draws, n)``, int64, read-only, drawn with replacement.

        With ``strata`` (shape (n,), any labels) each stratum is resampled within itself,
        so every draw keeps the design's per-stratum counts (used for designed factors such
        as the rendered series count k).  Raises ValueError for n == 0."""
        if n <= 0:
            raise ValueError("cannot bootstrap an empty stimulus set")
        key = None if strata is None else (np.asarray(strata).dtype.str, np.asarray(strata).tobytes())
        k = (n, n_draws, seed, key)
        hit = self.indices.get(k)
        if hit is not None:
            self.indices.move_to_end(k)
            return hit
        idx = _draw_indices(n, n_draws, seed, None if strata is None else np.asarray(strata))
        idx.setflags(write=False)
        self.indices[k] = idx
        if len(self.indices) > self.maxsize:
            _, old = self.indices.popitem(last=False)
            self._counts.pop(id(old), None)
        return idx

    def resample_counts(self, idx: np.ndarray) -> np.ndarray:
        """Resample count matrix of an index matrix: ``counts[d, i]`` = how often draw ``d``
        picked stimulus ``i``; ``idx`` int (d, n) -> float32 (d, n), read-only, each row
        summing to n.  A sum over a resample, ``x[idx].sum(-1)``, is ``counts @ x``; for
        integer-valued ``x`` (0/1 correctness, counts) every such sum is an integer, exact in
        float64 whatever the order of summation, so statistics built from count products
        equal the gathering form bit for bit.  Kept beside a matrix this resampler drew (and
        shared by every model and statistic on those draws); any other matrix is counted
        afresh.  float32 (exact for n < 2**24): the count products of
        :mod:`perceptbench.metrics.agreement` then run in float32 where that is exact."""
        hit = self._counts.get(id(idx))
        if hit is not None and hit[0] is idx:
            return hit[1]
        idx = np.asarray(idx)
        d, n = idx.shape
        counts = np.empty((d, n), np.float32)  # integers <= n: exact; float32 marks them as counts for _wsum
        step = max(1, 2 ** 18 // max(n, 1))  # rows counted at a time: no int64 temporaries of the whole matrix
        for s in range(0, d, step):
            block = idx[s:s + step]
            b = block.shape[0]
            counts[s:s + b] = np.bincount((block + n * np.arange(b)[:, None]).ravel(), minlength=b * n).reshape(b, n)
        counts.setflags(write=False)
        if any(v is idx for v in self.indices.values()):
            self._counts[id(idx)] = (idx, counts)
        return counts


DRAWS = Resampler()
"""The process's resampler, behind :func:`resample_indices` and :func:`resample_counts`."""


def resample_indices(n: int, n_draws: int, seed: int, strata: np.ndarray | None = None) -> np.ndarray:
    """:meth:`Resampler.resample_indices` of :data:`DRAWS`."""
    return DRAWS.resample_indices(n, n_draws, seed, strata)


def resample_counts(idx: np.ndarray) -> np.ndarray:
    """:meth:`Resampler.resample_counts` of :data:`DRAWS`."""
    return DRAWS.resample_counts(idx)


def percentile_intervals(estimate: np.ndarray, draws: np.ndarray, n_draws: int, seed: int,
                         alpha: float = 0.05, q: tuple[float, float] | None = None) -> list[BootstrapResult]:
    """:class:`BootstrapResult` per column of ``draws`` (shape (n_draws, M), one column per
    model on shared draws; ``estimate`` (M,)), each equal to what :func:`bootstrap` gives
    for that column alone: the ``alpha/2``, ``1-alpha/2`` percentiles (numpy's linear
    method) of the column's finite draws; the others are counted as dropped.  ``q``: the two
    percentiles (in [0, 100]) to take instead, as a caller writes them (their last bit
    depends on how they are computed: :func:`perceptbench.metrics.saliency.score_multilabel`
    uses ``(a, 100 - a)``, ``a = 100 (1 - level) / 2``)."""
    draws = np.asarray(draws, float)
    ok = np.isfinite(draws)
    dropped = (~ok).sum(0)
    q = [100 * alpha / 2, 100 * (1 - alpha / 2)] if q is None else list(q)
    low = np.full(draws.shape[1], np.nan)
    high = np.full(draws.shape[1], np.nan)
    full = dropped == 0
    if full.any():
        low[full], high[full] = np.percentile(draws[:, full], q, axis=0)
    for m in np.flatnonzero(~full & ok.any(0)):
        low[m], high[m] = np.percentile(draws[ok[:, m], m], q)
    return [BootstrapResult(float(e), float(lo), float(hi), n_draws, int(k), seed)
            for e, lo, hi, k in zip(np.asarray(estimate, float), low, high, dropped)]


def bootstrap_counts(stat: Callable[[np.ndarray], np.ndarray], n: int, *, n_draws: int = N_BOOT_B,
                     seed: int = 0, alpha: float = 0.05,
                     strata: np.ndarray | None = None) -> list[BootstrapResult]:
    """:func:`bootstrap` of a statistic of several respondents at once, written on count
    matrices: ``stat(w)`` takes float32 integer weights ``w`` (k, n) (row d: how often each stimulus
    is in the resample; a row of ones is the original sample) and returns (k, M), one column
    per respondent.  The draws are those of :func:`resample_indices` (``counts`` of the same
    matrix), so column m equals ``bootstrap`` of respondent m's statistic on the same seed
    (seed 000 D.5: every draw recomputes the whole statistic)."""
    counts = resample_counts(resample_indices(n, n_draws, seed, strata))
    estimate = np.asarray(stat(np.ones((1, n), np.float32)), float)[0]
    draws = np.asarray(stat(counts), float)
    return percentile_intervals(estimate, draws, n_draws, seed, alpha)


def _draw_indices(n: int, n_draws: int, seed: int, strata) -> np.ndarray:
    rng = rng_for(seed, "bootstrap", n, n_draws)
    if strata is None:
        return rng.integers(0, n, size=(n_draws, n))
    strata = np.asarray(strata)
    idx = np.empty((n_draws, n), dtype=np.int64)
    for s in np.unique(strata):  # loop over strata (few), vectorised over draws
        members = np.flatnonzero(strata == s)
        pick = rng.integers(0, members.size, size=(n_draws, members.size))
        idx[:, members] = members[pick]
    return idx


def bootstrap(
    stat: Callable[[np.ndarray], np.ndarray],
    n: int,
    *,
    n_draws: int = N_BOOT_B,
    seed: int = 0,
    alpha: float = 0.05,
    strata: np.ndarray | None = None,
) -> BootstrapResult:
    """Percentile bootstrap of a vectorised statistic.

    ``stat(idx)`` takes an int index matrix of shape ``(d, n)`` and returns a float array
    of shape ``(d,)`` (NaN where undefined).  The estimate is ``stat(arange(n)[None])[0]``.
    Bounds are the ``alpha/2`` and ``1-alpha/2`` percentiles of the defined draws.
    """
    estimate, draws = bootstrap_draws(stat, n, n_draws=n_draws, seed=seed, strata=strata)
    ok = np.isfinite(draws)
    dropped = int((~ok).sum())
    if ok.any():
        low, high = np.percentile(draws[ok], [100 * alpha / 2, 100 * (1 - alpha / 2)])
    else:
        low = high = float("nan")
    return BootstrapResult(estimate, float(low), float(high), n_draws, dropped, seed)


def bootstrap_draws(stat: Callable[[np.ndarray], np.ndarray], n: int, *, n_draws: int = N_BOOT_B, seed: int = 0,
                    strata: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """What :func:`bootstrap` takes its percentiles of: the estimate ``stat(arange(n)[None])[0]``
    (float) and the draws ``stat(idx)``, float64 (n_draws,), on :func:`resample_indices`'s matrix."""
    estimate = float(stat(np.arange(n)[None, :])[0])
    return estimate, np.asarray(stat(resample_indices(n, n_draws, seed, strata)), dtype=float)


class IntervalBatch:
    """Many :func:`bootstrap` calls whose percentile intervals are taken together: one
    :func:`percentile_intervals` call (one ``np.percentile`` over a draws matrix, column by
    column) per ``size`` bootstraps of the same draw count and seed, instead of one
    ``np.percentile`` per statistic.  Each :class:`BootstrapResult` equals what
    :func:`bootstrap` gives for that statistic alone (numpy's percentile partitions and
    interpolates each column as it does a 1-D array; tests/unit/metrics/test_bootstrap.py
    checks it bit for bit).  At most ``size`` draw vectors (float64, ``n_draws`` each) wait at once."""

    def __init__(self, alpha: float = 0.05, size: int = 1024):
        self.alpha, self.size = alpha, size
        self._pending: list[tuple[float, np.ndarray, int, int, Callable[[BootstrapResult], None]]] = []

    def add(self, stat: Callable[[np.ndarray], np.ndarray], n: int, done: Callable[[BootstrapResult], None], *,
            n_draws: int = N_BOOT_B, seed: int = 0, strata: np.ndarray | None = None) -> float:
        """Draw :func:`bootstrap`'s resamples of ``stat`` now and return its estimate; ``done``
        gets the :class:`BootstrapResult` at a later :meth:`add` (when ``size`` wait) or at
        :meth:`flush`, never inside this call."""
        if len(self._pending) >= self.size:
            self.flush()
        estimate, draws = bootstrap_draws(stat, n, n_draws=n_draws, seed=seed, strata=strata)
        self._pending.append((estimate, draws, n_draws, seed, done))
        return estimate

    def flush(self) -> None:
        """Take the waiting intervals and hand each to its ``done``."""
        pending, self._pending = self._pending, []
        groups: dict[tuple[int, int], list] = {}
        for item in pending:
            groups.setdefault(item[2:4], []).append(item)
        for (n_draws, seed), items in groups.items():
            results = percentile_intervals(np.array([e for e, *_ in items]), np.stack([d for _, d, *_ in items], 1),
                                           n_draws, seed, self.alpha)
            for (*_, done), b in zip(items, results):
                done(b)


def ci_halfwidth_bound(n: int, z: float = 1.96) -> float:
    """Upper bound on a proportion's CI half-width, ``z / (2 sqrt(n))`` (seed 000 D.1)."""
    return z / (2.0 * np.sqrt(n))
