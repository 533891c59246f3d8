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


def resample_indices(n: int, n_draws: int, seed: int, strata: np.ndarray | None = None) -> np.ndarray:
    """Index matrix ``(n_draws, n)``, int64, drawn with replacement.

    With ``strata`` (shape (n,), any labels) each stratum is resampled within itself, so
    every draw keeps the design's per-stratum counts (used for designed factors such as
    the rendered series count k).  Raises ValueError for n == 0.
    """
    if n <= 0:
        raise ValueError("cannot bootstrap an empty stimulus set")
    key = None if strata is None else (np.asarray(strata).dtype.str, np.asarray(strata).tobytes())
    return _cached_indices(n, n_draws, seed, key, None if strata is None else np.asarray(strata))


_CACHE: "OrderedDict[tuple, np.ndarray]" = OrderedDict()
_CACHE_MAX = 32


def _cached_indices(n: int, n_draws: int, seed: int, key, strata) -> np.ndarray:
    """The index matrix of :func:`resample_indices`, drawn once per (n, n_draws, seed,
    strata) and shared read-only by every model scored on the same stimulus set (the draws
    are a pure function of these, so sharing changes no value); least recently used
    matrices beyond 32 are dropped."""
    k = (n, n_draws, seed, key)
    hit = _CACHE.get(k)
    if hit is not None:
        _CACHE.move_to_end(k)
        return hit
    idx = _draw_indices(n, n_draws, seed, strata)
    idx.setflags(write=False)
    _CACHE[k] = idx
    if len(_CACHE) > _CACHE_MAX:
        _CACHE.popitem(last=False)
    return idx


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
    estimate = float(stat(np.arange(n)[None, :])[0])
    draws = np.asarray(stat(resample_indices(n, n_draws, seed, strata)), dtype=float)
    ok = np.isfinite(draws)
    dropped = int((~ok).sum())
    if ok.any():
        low, high = np.percentile(draws[ok], [100 * alpha / 2, 100 * (1 - alpha / 2)])
    else:
        low = high = float("nan")
    return BootstrapResult(estimate, float(low), float(high), n_draws, dropped, seed)


def ci_halfwidth_bound(n: int, z: float = 1.96) -> float:
    """Upper bound on a proportion's CI half-width, ``z / (2 sqrt(n))`` (seed 000 D.1)."""
    return z / (2.0 * np.sqrt(n))
