"""Model vs model: paired-bootstrap differences on the headline metrics (issue 10, item 8).

Every model answering the same stimuli of a task is resampled with the *same* index
matrix (:func:`perceptbench.metrics.bootstrap.resample_indices`: seed, n, draws and, for
series counting, the strata k), exactly as the scorers do, so the per-draw difference
``stat_a(draw) - stat_b(draw)`` is the paired bootstrap of the difference (seed 000
D.5).  The interval is the 2.5th-97.5th percentile of the defined differences; a
difference "excludes 0" when both bounds lie on the same side of 0.

Statistics (the same formulas as the scorers, recomputed from the records):
accuracy / B / exact match = masked mean of ``correct`` over non-null trials (seed 000
D.1; seed 001 §4); silhouette B = match with the observers' modal response (tied modes
excluded); kappa_pairwise = mean over observers of Cohen-style error consistency (seed
000 Eq. 2, D.2)."""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from ..metrics.agreement import masked_mean
from ..metrics.bootstrap import N_BOOT_B, N_BOOT_KAPPA, resample_indices
from ..metrics.error_consistency import kappa_pairwise_mean
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


def _stats(base: str, rs: list[TrialRecord], humans: dict[str, list[TrialRecord]]):
    """metric -> (function of an index matrix (d, n) -> (d,), number of draws)."""
    correct = np.array([bool(r.correct) for r in rs], float)
    valid = np.array([r.response is not None and r.ground_truth is not None for r in rs])
    acc = (lambda i: masked_mean(correct[i], valid[i]), N_BOOT_B)
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
        v_b = valid & has
        return {"accuracy": acc,
                "B": (lambda i: masked_mean(match[i], v_b[i]), N_BOOT_B),
                "kappa_pairwise": (lambda i: kappa_pairwise_mean(correct[i], obs[:, i], valid[i]), N_BOOT_KAPPA)}
    if base == "similarity.chart.mark_color":
        return {"B": acc}
    if base == "similarity.chart.series_count":
        return {"accuracy": acc}
    if base.startswith("salbench."):
        if any((r.run_meta.model_extra or {}).get("skipped") for r in rs):
            return {}
        return {"exact_match": acc}
    return {}


def paired_differences(records: list[TrialRecord]) -> tuple[list[PairedDiff], list[str]]:
    """Paired differences for every pair of non-human models within each task and
    headline metric.  Returns (differences, notes); a note names each pair that could not
    be paired (different stimulus sets) instead of comparing unpaired resamples."""
    out: list[PairedDiff] = []
    notes: list[str] = []
    for tid, models in sorted(_model_groups(records).items()):
        base = tid.split("@", 1)[0]
        humans = {m: rs for m, rs in models.items() if m.startswith("human:")}
        names = sorted(m for m in models if not m.startswith("human:"))
        if len(names) < 2:
            continue
        seeds = {r.run_meta.seed for m in names for r in models[m]}
        seed = min(seeds)
        key = {m: tuple((r.stimulus_id, r.rep) for r in models[m]) for m in names}
        groups: dict[tuple, list[str]] = defaultdict(list)
        for m in names:
            groups[key[m]].append(m)
        if len(groups) > 1:
            notes.append(f"{tid}: {len(groups)} different stimulus sets among the models; only models with the "
                         "same stimuli are compared")
        for stim_key, members in groups.items():
            if len(members) < 2:
                continue
            n = len(stim_key)
            strata = (np.array([int(r.manipulated_value) for r in models[members[0]]])
                      if base == "similarity.chart.series_count" else None)
            draws: dict[tuple[str, str], np.ndarray] = {}
            points: dict[tuple[str, str], float] = {}
            idx_cache: dict[int, np.ndarray] = {}
            for m in members:
                for metric, (fn, nd) in _stats(base, models[m], humans).items():
                    if nd not in idx_cache:
                        idx_cache[nd] = resample_indices(n, nd, seed, strata)
                    draws[(m, metric)] = np.asarray(fn(idx_cache[nd]), float)
                    points[(m, metric)] = float(fn(np.arange(n)[None])[0])
            metrics = sorted({k[1] for k in draws})
            for metric in metrics:
                for a, b in itertools.combinations(members, 2):
                    if (a, metric) not in draws or (b, metric) not in draws:
                        continue
                    d = draws[(a, metric)] - draws[(b, metric)]
                    ok = np.isfinite(d)
                    lo, hi = (np.percentile(d[ok], [2.5, 97.5]) if ok.any() else (np.nan, np.nan))
                    out.append(PairedDiff(tid, metric, a, b, points[(a, metric)] - points[(b, metric)],
                                          float(lo), float(hi), n, len(d)))
    return out, notes
