"""The capacity scorer (seed 000 §2.1, §2.3 "Behavioral Effect Replication"): a task without
per-trial human data, scored against the human categorical-colour capacity band through
a(k), the accuracy at each rendered level k.  One object owns the metric (a(k), the capacity
estimate) and its human reference (the band, :data:`perceptbench.metrics.capacity.HUMAN_BAND`,
and the probability that the capacity lies in it)."""

from __future__ import annotations

import numpy as np

from ..core.rows import ScoreRow
from ..metrics.agreement import masked_mean_counts
from ..metrics.bootstrap import N_BOOT_B
from ..metrics.capacity import HUMAN_BAND, capacity_k
from ..record_table import TaskColumns
from .common import batches, block_answers, intervals, null_rows, respondent_positions, with_estimate


REPLICATES_MIN_PROB = 0.95
"""``replicates`` says yes only when at least this share of the capacity_k bootstrap draws lies
in the human band: the claim "the model's capacity is in the band" must hold in 95% of the
resamples of the stimuli, the confidence level of every interval in scores.csv (seed 000 D.5).
With the old rule (point estimate in the band) a model whose k fell in the band in 40% of the
draws (n_test=40: 2-3 trials per k, every a(k) interval 0-1) was reported as replicating."""


def replicates(capacity: float, in_band_prob: float, band: tuple[int, int] = HUMAN_BAND) -> bool:
    """The series-count replication rule (seed 000 §2.3, stated in docs/metrics.md): True when the
    capacity_k point estimate ``capacity`` (k series; NaN = undefined) lies in ``band`` (inclusive)
    *and* ``in_band_prob``, the share of its bootstrap draws inside the band (undefined draws
    outside), is at least :data:`REPLICATES_MIN_PROB`; False otherwise (outside, or not shown by
    the evidence)."""
    return bool(np.isfinite(capacity) and band[0] <= capacity <= band[1] and in_band_prob >= REPLICATES_MIN_PROB)


class CapacityScorer:
    """Scores a counting task's records (:class:`TaskColumns`): ``manipulated_value`` is the
    rendered level k of each trial, ``response``/``ground_truth`` numbers.

    ``task_id``: the rows' task id; ``levels``: the rendered levels (int, ascending; a(k)
    rows for those present); ``band``: (low, high) human capacity band, inclusive (default
    :data:`~perceptbench.metrics.capacity.HUMAN_BAND`, 6-12: Healey 1996; Ware 2013)."""

    def __init__(self, task_id: str, levels: tuple[int, ...], band: tuple[int, int] = HUMAN_BAND):
        self.task_id = task_id
        self.levels = tuple(levels)
        self.band = band

    def score(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns: per model accuracy, mean absolute
        error, a(k) per rendered k, capacity_k and its in-band probability (seed 000 §2.3),
        every bootstrap stratified by k; models with the same trials (n and k per position)
        are scored together on the shared draws."""
        rows: list[ScoreRow] = []
        levels = np.array(self.levels)
        num = np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                        for v in c.values])
        models = []
        for m, pos in respondent_positions(c):
            k = np.array([int(c.values[x]) for x in c.manipulated_value[pos].tolist()])
            models.append((c.models[m], pos, k))
        out: dict[str, list[ScoreRow]] = {}
        for batch in batches(models, lambda x: x[2].tobytes()):
            out.update(self._model_block(c, batch, num, levels, seed))
        for m, _, _ in models:
            rows += out[m]
        return rows

    @staticmethod
    def accuracy_by_level(w: np.ndarray, correct: np.ndarray, valid: np.ndarray, k: np.ndarray,
                          levels: np.ndarray) -> np.ndarray:
        """a(k) of M respondents on count-weight draws (seed 000 §2.3): ``w`` float32 (d, n)
        resample counts stratified by ``k`` (row 0 may be ones: the estimate), ``correct``
        float (M, n) 0/1, ``valid`` bool (M, n), ``k`` int (n,) the level of each stimulus,
        ``levels`` (L,) -> float64 (d, M, L): per level the mean correctness over the valid
        trials at that level (stratified draws keep them in their stratum), NaN for a level
        without a valid trial.  Equal bit for bit to
        :func:`perceptbench.metrics.capacity.accuracy_by_k` on the gathered draws (integer sums)."""
        a_all = np.full((w.shape[0], correct.shape[0], len(levels)), np.nan)
        for j, lev in enumerate(levels):
            at = np.flatnonzero(k == lev)
            if at.size:
                a_all[:, :, j] = masked_mean_counts(np.ascontiguousarray(w[:, at]), correct[:, at], valid[:, at])
        return a_all

    def _model_block(self, c: TaskColumns, batch, num: np.ndarray, levels: np.ndarray,
                     seed: int) -> dict[str, list[ScoreRow]]:
        tid = self.task_id
        k = batch[0][2]
        n = len(k)
        P, correct, valid = block_answers(c, batch)  # (M, n) each
        err = np.where(valid, np.abs(num[c.response[P]] - num[c.ground_truth[P]]), 0.0)
        # the draws every row bootstraps on (stratified by k), row 0 the sample itself
        w = with_estimate(n, N_BOOT_B, seed, k)
        acc = intervals(masked_mean_counts(w, correct, valid), N_BOOT_B, seed)
        mae = intervals(masked_mean_counts(w, err, valid), N_BOOT_B, seed)
        # a(k) per model (1 + draws, M, L): the mean over the stimuli rendered with k only
        # (stratified draws keep them in their stratum), NaN for a level with none valid
        a_all = self.accuracy_by_level(w, correct, valid, k, levels)
        cap = capacity_k(a_all, levels)  # (1 + draws, M)
        cap_res = intervals(cap, N_BOOT_B, seed)
        a_res = {j: intervals(a_all[:, :, j], N_BOOT_B, seed) for j, lev in enumerate(levels) if (k == lev).any()}
        out = {}
        for i, (m, _, _) in enumerate(batch):
            v = valid[i]
            n_null = int((~v).sum())
            rows = [ScoreRow.from_boot(tid, m, "accuracy", acc[i], int(v.sum()), n_null, "bootstrap stratified by k"),
                    ScoreRow.from_boot(tid, m, "mean_abs_error", mae[i], int(v.sum()), n_null,
                                       "|response - k| over parseable answers; bootstrap stratified by k")]
            for j, res in a_res.items():
                lev = levels[j]
                rows.append(ScoreRow.from_boot(tid, m, f"a_k[{lev}]", res[i], int(((k == lev) & v).sum()),
                                               int((~v[k == lev]).sum())))
            cr = cap_res[i]
            note = ("" if np.isfinite(cr.estimate) else
                    f"a(k) never fell below half of mean a(k<=4) within k={levels[0]}..{levels[-1]}, or baseline is 0")
            rows.append(ScoreRow.from_boot(tid, m, "capacity_k", cr, n, n_null,
                                           note or "smallest k with a(k) < 0.5 mean a(k<=4); "
                                           "bootstrap stratified by k"))
            draws = cap[1:, i]  # the same draws as capacity_k's interval
            in_band = np.isfinite(draws) & (draws >= self.band[0]) & (draws <= self.band[1])
            rep = float(replicates(cr.estimate, float(in_band.mean()), self.band))
            rows.append(ScoreRow(tid, m, "replicates", rep, None, None, n, n_null,
                                 f"1 if the capacity_k point estimate lies in the human band "
                                 f"{self.band[0]}-{self.band[1]} and at least {REPLICATES_MIN_PROB:.0%} of its "
                                 f"bootstrap draws do (capacity_in_band_prob), else 0"))
            rows.append(ScoreRow(tid, m, "capacity_in_band_prob", float(in_band.mean()), None, None, n, n_null,
                                 "fraction of the capacity_k bootstrap draws (stratified by k) inside the human "
                                 "band; undefined draws count as outside", N_BOOT_B, 0, seed))
            rows += null_rows(tid, m, n, n_null, None)
            out[m] = rows
        return out
