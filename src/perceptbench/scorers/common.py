"""Shared pieces of the scorers (seed 000 appendix D): the null rate and its bracket (D.4),
NaN-safe means and ratios, respondents grouped and batched for scoring on shared bootstrap
draws (issue 12), and the weights and intervals of those draws (D.5)."""

from __future__ import annotations

import numpy as np

from ..core.rows import ScoreRow
from ..metrics.agreement import null_bracket
from ..metrics.bootstrap import percentile_intervals, resample_counts, resample_indices
from ..metrics.error_consistency import UNDEFINED_REASON
from ..record_table import TaskColumns


def null_rows(task_id: str, model: str, n: int, n_null: int, b: float | None) -> list[ScoreRow]:
    """``null_rate`` of a respondent's n trials (n_null null responses) and, with a finite
    B, the null bracket of seed 000 D.4."""
    nu = n_null / n if n else float("nan")
    rows = [ScoreRow(task_id, model, "null_rate", nu, None, None, n, n_null)]
    if b is not None and np.isfinite(b):
        lo, hi = null_bracket(b, nu)
        rows += [ScoreRow(task_id, model, "B_full_low", lo, None, None, n, n_null,
                          "null bracket (1-nu)B <= B_full (seed 000 D.4)"),
                 ScoreRow(task_id, model, "B_full_high", hi, None, None, n, n_null,
                          "null bracket B_full <= (1-nu)B + nu (seed 000 D.4)")]
    return rows


def kappa_note(value: float) -> str:
    """A kappa row's note: empty for a defined kappa, else why it is undefined (c_exp = 1)."""
    return "" if np.isfinite(value) else UNDEFINED_REASON


def nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    """np.nanmean without the all-NaN RuntimeWarning (NaN stays NaN, reported by the row)."""
    x = np.asarray(x, float)
    ok = ~np.isnan(x)
    k = ok.sum(axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, np.where(ok, x, 0.0).sum(axis) / np.maximum(k, 1), np.nan)


def nan_extreme(x: np.ndarray, fn) -> float:
    """np.nanmin / np.nanmax, NaN (no warning) when every value is NaN."""
    x = np.asarray(x, float)
    return float(fn(x[~np.isnan(x)])) if (~np.isnan(x)).any() else float("nan")


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 or either side NaN; never clipped."""
    num, den = np.broadcast_arrays(np.asarray(num, float), np.asarray(den, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((den != 0) & np.isfinite(den), num / np.where(den != 0, den, 1.0), np.nan)


# --------------------------------------------------------------------------- columns (issue 12)

MODEL_BLOCK = 128
"""Respondents scored together on the shared draws: bounds the (draws, block) arrays
(about 100 MiB for the pairwise kappa of 10 observers at 2000 draws)."""


def respondent_positions(c: TaskColumns) -> list[tuple[int, np.ndarray]]:
    """(model code, positions of its records sorted by (stimulus_id, rep), ties in record
    order) per model, models in order of first appearance (the order of a dict filled
    record by record)."""
    if not c.n:
        return []
    stim_rank = np.empty(len(c.stimuli), np.int64)
    stim_rank[sorted(range(len(c.stimuli)), key=lambda i: (c.stimuli[i] is not None, c.stimuli[i] or ""))] = \
        np.arange(len(c.stimuli))
    uniq, first = np.unique(c.model, return_index=True)
    app = np.empty(len(c.models), np.int64)
    app[uniq[np.argsort(first)]] = np.arange(len(uniq))
    key = app[c.model]
    order = np.lexsort((c.rep, stim_rank[c.stimulus], key))
    bounds = np.searchsorted(key[order], np.arange(len(uniq) + 1))
    models = uniq[np.argsort(first)]
    return [(int(m), order[bounds[i]:bounds[i + 1]]) for i, m in enumerate(models)]


def block_answers(c: TaskColumns, batch: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The answers of a block of respondents that share their trials: ``batch`` holds
    ``(model, positions, key)`` tuples with positions of equal length n.  Returns
    ``(P, correct, valid)``: record positions, int (M, n); 1.0 where the answer is correct,
    float64 (M, n); True where the answer parsed (not null), bool (M, n)."""
    P = np.stack([pos for _, pos, _ in batch])
    return P, (c.correct[P] == 1).astype(float), c.response[P] != 0


def batches(items: list, key) -> list[list]:
    """Items grouped by ``key(item)`` (bytes), groups in order of first item, cut into
    :data:`MODEL_BLOCK`-sized blocks."""
    groups: dict = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    return [g[i:i + MODEL_BLOCK] for g in groups.values() for i in range(0, len(g), MODEL_BLOCK)]


def with_estimate(n: int, n_draws: int, seed: int, strata=None) -> np.ndarray:
    """Weights (1 + n_draws, n): a row of ones (the sample itself: the estimate) over the
    resample counts of :func:`resample_indices` (the draws every bootstrap here uses)."""
    return np.vstack([np.ones((1, n), np.float32), resample_counts(resample_indices(n, n_draws, seed, strata))])


def intervals(values: np.ndarray, n_draws: int, seed: int):
    """BootstrapResults per column of ``values`` (1 + n_draws, M): row 0 the estimate."""
    return percentile_intervals(values[0], values[1:], n_draws, seed)

