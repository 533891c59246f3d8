"""Model vs model: paired-bootstrap differences on the headline metrics (issue 10, item 8).

Every model answering the same stimuli of a task is resampled with the *same* index
matrix (:func:`perceptbench.metrics.bootstrap.resample_indices`: seed, n and draws,
unstratified, exactly as the scorers' headline rows), so the per-draw difference
``stat_a(draw) - stat_b(draw)`` is the paired bootstrap of the difference (seed 000
D.5).  The interval is the 2.5th-97.5th percentile of the defined differences; a
difference "excludes 0" when both bounds lie on the same side of 0.

For the Gestalt tasks each model's own draws are exactly the scorer's (its interval in
scores.csv).  SalBench's headline counts every stimulus (a null answer is an empty
prediction, seed 001 §4), so all shared stimuli are resampled there too.  Records are
first re-parsed and split by prompt version exactly as for scoring
(:func:`perceptbench.scoring.prepare_records`).

Statistics (the same formulas as the scorers, recomputed from the records):
accuracy / B = masked mean of ``correct`` over non-null trials (seed 000 D.1); SalBench
exact match = mean over every stimulus, a null counting as the empty set (seed 001 §4);
silhouette B = match with the observers' modal response (tied modes
excluded); kappa_pairwise = mean over observers of Cohen-style error consistency (seed
000 Eq. 2, D.2)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..metrics.bootstrap import N_BOOT_B, N_BOOT_KAPPA, resample_indices
from ..records import TrialRecord


@dataclass(frozen=True)
class PairedDiff:
    """``a`` minus ``b`` on ``metric`` of ``task_id``: point difference, 95% percentile
    interval over ``n_draws`` paired draws, the number of shared stimuli ``n``."""

    task_id: str
    metric: str
    a: str
    b: str
    diff: float
    low: float
    high: float
    n: int
    n_draws: int

    @property
    def excludes_zero(self) -> bool:
        return bool(np.isfinite(self.low) and (self.low > 0 or self.high < 0))


def _mode(responses):
    from ..tasks.gestalt import _mode as gestalt_mode  # the scorer's own tie rule

    return gestalt_mode(responses)


def _model_groups(records: list[TrialRecord]):
    by_task: dict[str, dict[str, list[TrialRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        by_task[r.task_id][r.model].append(r)
    for models in by_task.values():
        for rs in models.values():
            rs.sort(key=lambda r: (r.stimulus_id, r.rep))
    return by_task


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each stimulus occurs in each draw: index matrix (d, n) -> counts (d, n) float64.
    Every statistic here is a function of these counts, so one matrix product per model
    evaluates it on all draws at once (the same values as indexing, in a fraction of the time)."""
    d = idx.shape[0]
    flat = (np.arange(d)[:, None] * n + idx).ravel()
    return np.bincount(flat, minlength=d * n).reshape(d, n).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _masked_mean_c(x: np.ndarray, valid: np.ndarray):
    xv = np.where(valid, x, 0.0)
    v = valid.astype(float)
    return lambda C: _ratio(C @ xv, C @ v)


def _kappa_pairwise_c(m: np.ndarray, obs: np.ndarray, valid: np.ndarray):
    """Mean over observers of kappa(model, observer) on counts C (seed 000 Eq. 2; the same
    definition as :func:`perceptbench.metrics.error_consistency.kappa_pairwise_mean`)."""
    v = valid.astype(float)
    agree = (m[None] * obs + (1 - m[None]) * (1 - obs)) * v[None]  # (J, n)

    obs_v = obs * v[None]

    def cols(C, rows):  # C @ rows.T as one matrix-vector product per observer (BLAS gemm threads
        return np.stack([C @ r for r in rows], axis=1)  # spin on a busy machine; gemv does not)

    def stat(C):
        den = C @ v
        p_m = _ratio(C @ (m * v), den)
        p_h = _ratio(cols(C, obs_v), den[:, None])
        c_obs = _ratio(cols(C, agree), den[:, None])
        c_exp = p_m[:, None] * p_h + (1 - p_m[:, None]) * (1 - p_h)
        with np.errstate(invalid="ignore", divide="ignore"):
            k = (c_obs - c_exp) / (1 - c_exp)
        k = np.where(np.isclose(c_exp, 1.0, rtol=0, atol=1e-12), np.nan, k)
        ok = np.isfinite(k)
        return _ratio(np.where(ok, k, 0).sum(1), ok.sum(1).astype(float))
    return stat


def _stats(base: str, rs: list[TrialRecord], humans: dict[str, list[TrialRecord]]):
    """metric -> (function of a counts matrix (d, n) -> (d,), number of draws)."""
    correct = np.array([bool(r.correct) for r in rs], float)
    valid = np.array([r.response is not None and r.ground_truth is not None for r in rs])
    acc = (_masked_mean_c(correct, valid), N_BOOT_B)
    if base == "closure.nat.silhouette":
        obs_models = sorted(m for m in humans if m.startswith("human:subject"))
        if not obs_models:
            return {"accuracy": acc}
        per = {m: {r.stimulus_id: r for r in humans[m]} for m in obs_models}
        sids = [r.stimulus_id for r in rs]
        if any(s not in per[m] for m in obs_models for s in sids):
            return {"accuracy": acc}
        obs = np.array([[float(bool(per[m][s].correct)) for s in sids] for m in obs_models])
        modal = [_mode([per[m][s].response for m in obs_models]) for s in sids]
        has = np.array([h is not None for h in modal])
        match = np.array([r.response is not None and r.response == h for r, h in zip(rs, modal)], float)
        return {"accuracy": acc,
                "B": (_masked_mean_c(match, valid & has), N_BOOT_B),
                "kappa_pairwise": (_kappa_pairwise_c(correct, obs, valid), N_BOOT_KAPPA)}
    if base == "similarity.chart.mark_color":
        return {"B": acc}
    if base == "similarity.chart.series_count":
        return {"accuracy": acc}
    if base.startswith("salbench."):
        if any((r.run_meta.model_extra or {}).get("skipped") for r in rs):
            return {}
        # seed 001 §4 headline: every stimulus counts, a null answer is an empty prediction
        em = np.array([bool(r.correct) if r.response is not None else len(r.ground_truth or ()) == 0
                       for r in rs], float)
        return {"exact_match": (_masked_mean_c(em, np.array([r.ground_truth is not None for r in rs])), N_BOOT_B)}
    return {}


def model_draws(records: list[TrialRecord]) -> dict[tuple[str, str, str], tuple[float, np.ndarray, tuple]]:
    """(task_id, model, metric) -> (point estimate, bootstrap draws (n_draws,), stimulus key)
    for every non-human model and headline metric; draws use the scorers' resamples."""
    from ..scoring import prepare_records

    records = prepare_records(records)  # re-parsed and split exactly as the scores were
    out = {}
    for tid, models in sorted(_model_groups(records).items()):
        base = tid.split("@", 1)[0]
        humans = {m: rs for m, rs in models.items() if m.startswith("human:")}
        names = sorted(m for m in models if not m.startswith("human:"))
        if not names:
            continue
        seed = min(r.run_meta.seed for m in names for r in models[m])
        counts: dict[tuple, np.ndarray] = {}
        for m in names:
            rs = models[m]
            key = tuple((r.stimulus_id, r.rep) for r in rs)
            n = len(rs)
            for metric, (fn, nd) in _stats(base, rs, humans).items():
                ck = (key, nd)
                if ck not in counts:
                    # as the scorers' rows: series counting resamples within each rendered k (the design
                    # fixes the count per k), every other headline unstratified
                    strata = (np.array([r.manipulated_value for r in rs]) if base == "similarity.chart.series_count"
                              else None)
                    counts[ck] = _counts(resample_indices(n, nd, seed, strata), n)
                out[(tid, m, metric)] = (float(fn(np.ones((1, n)))[0]), np.asarray(fn(counts[ck]), float), key)
    return out


def paired_differences(records: list[TrialRecord]) -> tuple[list[PairedDiff], list[str]]:
    """Paired differences for every pair of non-human models within each task and
    headline metric.  Returns (differences, notes); a note names each task whose models
    answered different stimulus sets (only models with the same stimuli are compared,
    never unpaired resamples)."""
    draws = model_draws(records)
    by_tm: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (tid, m, metric) in draws:
        by_tm[(tid, metric)].append(m)
    out: list[PairedDiff] = []
    notes: list[str] = []
    for (tid, metric), models in sorted(by_tm.items()):
        groups: dict[tuple, list[str]] = defaultdict(list)
        for m in sorted(models):
            groups[draws[(tid, m, metric)][2]].append(m)
        if len(groups) > 1:
            notes.append(f"{tid} {metric}: {len(groups)} different stimulus sets among the models; only models "
                         "with the same stimuli are compared")
        for key, members in groups.items():
            if len(members) < 2:
                continue
            pairs = list(itertools.combinations(range(len(members)), 2))
            D = np.stack([draws[(tid, m, metric)][1] for m in members])  # (models, draws)
            ia = np.array([a for a, _ in pairs])
            ib = np.array([b for _, b in pairs])
            d = D[ia] - D[ib]  # (pairs, draws): one index matrix, so paired
            if np.isfinite(d).all():
                lo, hi = np.percentile(d, [2.5, 97.5], axis=1)
            else:
                lo, hi = np.full(len(pairs), np.nan), np.full(len(pairs), np.nan)
                for j in range(len(pairs)):
                    ok = np.isfinite(d[j])
                    if ok.any():
                        lo[j], hi[j] = np.percentile(d[j][ok], [2.5, 97.5])
            for j, (a, b) in enumerate(pairs):
                pa, pb = draws[(tid, members[a], metric)][0], draws[(tid, members[b], metric)][0]
                out.append(PairedDiff(tid, metric, members[a], members[b], pa - pb, float(lo[j]), float(hi[j]),
                                      len(key), d.shape[1]))
    return out, notes
