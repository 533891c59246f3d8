"""The VSI cells: per-sample VSI grouped by (task, benchmark, model, perturbation, sigma), the
per-cell summary (median, quartiles, insensitive fractions, argmax-change rate, histogram), the
insensitive threshold and VSI quintiles.  Shared by the per-task scoring
(:mod:`perceptbench.vsi.scoring`), the cross-task analyses (:mod:`perceptbench.vsi.analysis`)
and the probe rows (:mod:`perceptbench.vsi.probe`)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..scorers.pairs import neighbours_note, select_pairs
from .samples import VSISample

LOW_VSI = 0.05
"""Insensitive threshold in nats (seed 002 §2.2, appendix A)."""

INSENSITIVE_THRESHOLDS = (0.05, 0.01)
"""VSI < 0.05 (seed 002 §2.2, the headline insensitive fraction) and < 0.01 (seed 002 §3)."""

HIST_EDGES = (0.0,) + tuple(float(10.0 ** e) for e in np.arange(-4.0, 1.0 + 1e-9, 0.5)) + (math.inf,)
"""Fixed histogram edges in nats: 0, 1e-4, 10^-3.5, ..., 10, inf (12 bins; half-decade wide between 1e-4 and 10)."""


@dataclass(frozen=True)
class CellSummary:
    """Summary of one (task x model x perturbation x sigma) cell; see :func:`cell_summary`."""

    n: int
    median: float
    q25: float
    q75: float
    insensitive: dict  # threshold -> BootstrapResult of the fraction VSI < threshold
    argmax_change_rate: Any  # BootstrapResult
    hist_counts: tuple[int, ...]


def cell_summary(vsi: np.ndarray, argmax_changed: np.ndarray, *, seed: int, n_draws: int | None = None) -> CellSummary:
    """Median and quartiles of VSI (numpy ``percentile``, linear interpolation), the insensitive
    fractions VSI < 0.05 and < 0.01 (seed 002 §2.2, §3) and the argmax-change rate (seed 002 §2.4),
    each with a seeded percentile bootstrap over samples (:func:`perceptbench.metrics.bootstrap.bootstrap`,
    1,000 draws), and histogram counts in :data:`HIST_EDGES` (bins ``[lo, hi)``).

    The three fractions share one draw matrix: each is a mean of 0/1 flags, so its draws are the
    resample counts times the flags (:func:`~perceptbench.metrics.bootstrap.resample_counts`:
    integer sums, exact in any order) over n, and the three intervals are one
    :func:`~perceptbench.metrics.bootstrap.percentile_intervals` call; each equals
    ``bootstrap(lambda i: flags[i].mean(1), n)`` bit for bit.

    ``vsi``: shape (n,) float (nats); ``argmax_changed``: shape (n,) bool (0/1).  Raises ValueError for n = 0.
    """
    from ..metrics.bootstrap import N_BOOT_B, percentile_intervals, resample_counts, resample_indices

    v = np.asarray(vsi, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no VSI samples in this cell")
    nd = N_BOOT_B if n_draws is None else n_draws
    a = np.asarray(argmax_changed, dtype=np.float64)
    flags = np.stack([(v < t).astype(np.float64) for t in INSENSITIVE_THRESHOLDS] + [a], 1)  # (n, 3)
    w = resample_counts(resample_indices(v.size, nd, seed))  # (nd, n): how often each draw picks a sample
    ins_and_arg = percentile_intervals(flags.sum(0) / v.size, (w @ flags) / v.size, nd, seed)
    ins = dict(zip(INSENSITIVE_THRESHOLDS, ins_and_arg))
    counts, _ = np.histogram(np.clip(v, 0.0, 1e300), bins=np.array(HIST_EDGES[:-1] + (1e300,)))
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return CellSummary(int(v.size), float(med), float(q25), float(q75), ins, ins_and_arg[-1],
                       tuple(int(c) for c in counts))


def normalised_vsi(vsi: np.ndarray) -> np.ndarray:
    """Confidence read from VSI for calibration (seed 002 B.2, "normalised-VSI"): ``1 - exp(-VSI)``,
    float (n,) in [0, 1), from VSI in nats (n,), negative values taken as 0."""
    return 1.0 - np.exp(-np.maximum(np.asarray(vsi, float), 0.0))


def quintiles(vsi: np.ndarray, sample_ids: Sequence[str] | None = None) -> np.ndarray:
    """Quintile (0 = lowest VSI ... 4) of each sample, int (n,).  Order by (VSI, sample_id);
    position i of n -> floor(5 i / n)."""
    vsi = np.asarray(vsi, float)
    n = vsi.size
    keys = (np.asarray(sample_ids if sample_ids is not None else np.arange(n)), vsi)
    order = np.lexsort(keys)
    q = np.empty(n, int)
    q[order] = (5 * np.arange(n)) // max(n, 1)
    return q


def _suffix(pert: str | None, sigma: float | None) -> str:
    parts = ([pert] if pert else []) + ([f"sigma={sigma:g}"] if sigma is not None else [])
    return "[" + ",".join(parts) + "]" if parts else ""


def _cells(samples: Sequence[VSISample]) -> dict[tuple, list[VSISample]]:
    cells: dict[tuple, list[VSISample]] = defaultdict(list)
    for s in samples:
        cells[(s.task_id, s.benchmark, s.model, s.perturbation, float(s.sigma))].append(s)
    for k in cells:
        cells[k].sort(key=lambda s: s.sample_id)
        ids = [s.sample_id for s in cells[k]]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"VSI samples: sample_id {dup!r} appears twice in cell {k}")
    return cells


PAIR_RANKING = "median VSI of the cell (its vsi_median row), highest first"
"""What orders the models of a (task, perturbation, sigma) for the ranking neighbours of the VSI
per-pair analyses (:func:`model_pairs`)."""


def model_pairs(by_model: dict[str, Sequence[VSISample]], mode: str) -> tuple[list[tuple[str, str]], bool]:
    """The model pairs a VSI per-pair analysis compares among the cells ``by_model`` ({model:
    cell} of one task, perturbation and sigma) under ``mode``
    (:data:`perceptbench.scorers.pairs.PAIR_MODES`, the report's rule): every pair up to
    :data:`~perceptbench.scorers.pairs.ALL_PAIRS_MAX` models under ``auto``, else the neighbours
    in the ranking by each model's median VSI of the cell (:data:`PAIR_RANKING`; the median of
    :func:`cell_summary`, numpy ``percentile``), in ranking order.  Each pair is (a, b) with a
    before b by name, as under ``all``, so a pair's rows are the same whichever mode chose it.
    Returns (pairs, whether they are the neighbours only); ValueError for an unknown mode."""
    medians: dict[str, float] = {}

    def median(m):  # every model's at the first call, only when the neighbours are asked for
        if not medians:
            medians.update(cell_medians(by_model))
        return medians[m]

    chosen, neighbours = select_pairs(sorted(by_model), mode, median)
    return [(a, b) if a < b else (b, a) for a, b in chosen], neighbours


def cell_medians(by_model: dict[str, Sequence[VSISample]]) -> dict[str, float]:
    """{model: median VSI of its cell} (numpy ``percentile`` 50, linear), one ``percentile`` call
    per cell size over the cells of that size stacked (each row partitioned and interpolated as a
    1-D array is: the medians equal one call per cell bit for bit)."""
    by_size: dict[int, list[str]] = defaultdict(list)
    for m, cell in by_model.items():
        by_size[len(cell)].append(m)
    out = {}
    for names in by_size.values():
        med = np.percentile(np.array([[s.vsi for s in by_model[m]] for m in names], float), 50, axis=1)
        out.update(zip(names, med.tolist()))
    return out


def neighbours_only_note(n_models: int) -> str:
    """The note of a VSI per-pair row computed for the ranking neighbours only."""
    return neighbours_note(n_models, PAIR_RANKING, "score --pairs all")
