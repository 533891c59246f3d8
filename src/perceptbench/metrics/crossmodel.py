"""Statistics across models (seed 000 §3, Tables A2-A3, appendix D.1): each model is one
observation, a value per model (its headline metric on a task).

- :func:`rank_correlation`: Spearman's rho between two tasks' values over the models both
  scored, with a seeded percentile bootstrap over *models* (models resampled with replacement;
  the stimuli stay fixed).
- :func:`rank_discordance`: the share of model pairs two measures order in opposite directions
  (seed 000 §3: accuracy and kappa "rank models discordantly in 37% of pairs (rho = 0.38)").
- :func:`ceiling_counts`: how many models answer more accurately than the human observers and,
  of those, how many reach the human-human kappa ceiling (seed 000 §3: "of the 34 models above
  human accuracy, 30 stay below the consistency ceiling, at a median 78% of it").
- :func:`group_mean`: the mean of a value over the models of one declared group (family, training
  objective; seed 000 Table A2 groups by family), with a seeded bootstrap over those models.
- :func:`ci_halfwidth_bound`: the widest 95% interval half-width a proportion can have on n
  trials, 1.96 / (2 sqrt n) (seed 000 D.1).

Pure numpy/scipy on float64 arrays; imports nothing above ``metrics``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..seeding import rng_for
from .ranks import rankdata  # scipy.stats.rankdata's values without importing scipy.stats (issue 25)

__all__ = ["N_BOOT_MODELS", "RankCorrelation", "rank_correlation", "rank_discordance", "CeilingCounts",
           "ceiling_counts", "GroupMean", "group_mean", "ci_halfwidth_bound"]

N_BOOT_MODELS = 1000
"""Bootstrap draws over models (the count seed 000 D.5 uses for non-kappa statistics)."""


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's ``rho`` over ``n`` models with the 2.5th/97.5th percentiles ``low``/``high`` of
    its bootstrap over models (NaN when undefined); ``n_dropped`` draws had a constant side
    (rho undefined) and were left out of ``n_draws``."""

    rho: float
    low: float
    high: float
    n: int
    n_draws: int
    n_dropped: int


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """scipy.stats.spearmanr(x, y).statistic (float (n,) each), computed as scipy does (np.corrcoef
    of the columns' average ranks; NaN where either side holds NaN) without importing scipy.stats
    (about 2 s at start-up; issue 25); NaN under 3 values or for a constant side."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0 or np.isnan(x).any() or np.isnan(y).any():
        return math.nan
    return float(np.corrcoef(np.column_stack((rankdata(x), rankdata(y))), rowvar=False)[1, 0])


def _spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's rho of each row pair of ``x`` and ``y`` (float (d, n)): Pearson's r of the
    average ranks (scipy.stats.rankdata), NaN for a row with a constant side; the row-wise form
    of :func:`_spearman` (equal to scipy.stats.spearmanr per row)."""
    rx, ry = rankdata(x, axis=1), rankdata(y, axis=1)
    rx -= rx.mean(1, keepdims=True)
    ry -= ry.mean(1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (rx * ry).sum(1) / np.sqrt((rx * rx).sum(1) * (ry * ry).sum(1))
    r[(np.ptp(x, 1) == 0) | (np.ptp(y, 1) == 0)] = np.nan
    return r


def rank_correlation(x, y, seed: int, n_draws: int = N_BOOT_MODELS) -> RankCorrelation:
    """Spearman's rho between ``x`` and ``y`` (float (n,), one entry per model, the same model at
    the same index; scipy.stats.spearmanr, average ranks for ties) and its percentile bootstrap
    over models: each draw resamples the n models with replacement (numpy Generator
    ``rng_for(seed, "crossmodel-rank")``) and recomputes rho; draws where either side is
    constant are dropped.  Undefined (NaN) for n < 3 or a constant side.  Raises ValueError
    when x and y differ in length."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError(f"x and y must be 1-D of one length, got {x.shape} and {y.shape}")
    n = len(x)
    rho = _spearman(x, y)
    if not math.isfinite(rho):
        return RankCorrelation(rho, math.nan, math.nan, n, 0, 0)
    idx = rng_for(seed, "crossmodel-rank").integers(0, n, size=(n_draws, n))
    draws = _spearman_rows(x[idx], y[idx])
    ok = draws[np.isfinite(draws)]
    lo, hi = (np.percentile(ok, [2.5, 97.5]) if len(ok) else (math.nan, math.nan))
    return RankCorrelation(rho, float(lo), float(hi), n, n_draws, int(n_draws - len(ok)))


def rank_discordance(a, b) -> tuple[float, int]:
    """The share of model pairs (i < j) that ``a`` and ``b`` (float (n,), one entry per model)
    order in opposite strict directions: (a_i - a_j)(b_i - b_j) < 0, over all n(n-1)/2 pairs (a
    pair tied on either measure is not discordant).  Returns (share, number of pairs); the
    share is NaN for n < 2.  Seed 000 §3 ("rank models discordantly in 37% of pairs").
    Raises ValueError when a and b differ in length."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"a and b must be 1-D of one length, got {a.shape} and {b.shape}")
    n = len(a)
    pairs = n * (n - 1) // 2
    if pairs == 0:
        return math.nan, 0
    i, j = np.triu_indices(n, 1)
    return float(np.mean((a[i] - a[j]) * (b[i] - b[j]) < 0)), pairs


@dataclass(frozen=True)
class CeilingCounts:
    """Of ``n`` models: ``above_human`` answer more accurately than the human observers' mean
    accuracy; of those, ``at_ceiling`` have a kappa interval reaching the human-human ceiling
    (upper bound >= ceiling) and ``below_ceiling`` do not; ``median_fraction`` is the median of
    kappa / ceiling over the below-ceiling ones (NaN when there is none)."""

    n: int
    above_human: int
    at_ceiling: int
    below_ceiling: int
    median_fraction: float


def ceiling_counts(accuracy, kappa, kappa_high, human_accuracy: float, ceiling: float) -> CeilingCounts:
    """Seed 000 §3's tally on one task.  ``accuracy``, ``kappa`` (error consistency against the
    panel), ``kappa_high`` (upper bound of kappa's 95% interval): float (n,), one entry per model;
    ``human_accuracy``: the observers' mean accuracy; ``ceiling``: the human-human kappa ceiling
    (mean pairwise observer kappa, seed 000 D.2; positive).  A model is above human accuracy
    when accuracy > human_accuracy (point estimates), at ceiling when kappa_high >= ceiling (its
    interval reaches or passes the ceiling), else below it, at kappa / ceiling of it.  Models
    with a NaN entry are left out of ``n``.  Raises ValueError for arrays of different lengths
    or a ceiling that is not a positive number."""
    acc, k, kh = (np.asarray(v, float) for v in (accuracy, kappa, kappa_high))
    if not (acc.shape == k.shape == kh.shape) or acc.ndim != 1:
        raise ValueError(f"accuracy, kappa, kappa_high must be 1-D of one length, got {acc.shape}, {k.shape}, "
                         f"{kh.shape}")
    if not (math.isfinite(ceiling) and ceiling > 0):
        raise ValueError(f"the kappa ceiling must be a positive number, got {ceiling!r}")
    ok = np.isfinite(acc) & np.isfinite(k) & np.isfinite(kh)
    acc, k, kh = acc[ok], k[ok], kh[ok]
    above = acc > human_accuracy
    at = above & (kh >= ceiling)
    below = above & ~at
    frac = float(np.median(k[below] / ceiling)) if below.any() else math.nan
    return CeilingCounts(int(ok.sum()), int(above.sum()), int(at.sum()), int(below.sum()), frac)


@dataclass(frozen=True)
class GroupMean:
    """Mean of ``n`` models' values with the percentile interval ``low``/``high`` of its
    bootstrap over those models (NaN for n < 2)."""

    mean: float
    low: float
    high: float
    n: int
    n_draws: int


def group_mean(values, seed: int, key: str = "", n_draws: int = N_BOOT_MODELS) -> GroupMean:
    """The mean of ``values`` (float (n,), one per model of a group; NaN entries left out) and
    its percentile bootstrap over the models (draws from ``rng_for(seed, "crossmodel-group",
    key)``, ``key`` naming the group so that two groups of one size draw independently).  No
    interval (NaN) for fewer than two models; NaN mean for none."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    n = len(v)
    if n == 0:
        return GroupMean(math.nan, math.nan, math.nan, 0, 0)
    if n < 2:
        return GroupMean(float(v[0]), math.nan, math.nan, 1, 0)
    idx = rng_for(seed, "crossmodel-group", key).integers(0, n, size=(n_draws, n))
    lo, hi = np.percentile(v[idx].mean(1), [2.5, 97.5])
    return GroupMean(float(v.mean()), float(lo), float(hi), n, n_draws)


def ci_halfwidth_bound(n: int) -> float:
    """1.96 / (2 sqrt n): the largest half-width of a normal-approximation 95% interval of a
    proportion on ``n`` trials (p(1-p) <= 1/4; seed 000 D.1).  NaN for n <= 0."""
    return 1.96 / (2 * math.sqrt(n)) if n > 0 else math.nan
