"""Seed 000's cross-model analyses (§3, Tables A2-A3, appendix D.1) as a suite analysis
(registered as ``crossmodel`` in :data:`perceptbench.analyses.SUITE_ANALYSES`).

It reads the per-task score rows of every model (no record), and writes nothing for a run of a
single model (the default run's ``scores.csv`` is unchanged).  With two or more models:

1. ``rank_rho[MA~MB]`` (task ``TA~TB``, model ``all-models``): Spearman's rho over the models
   that have a finite headline value on both tasks, with a seeded bootstrap interval over
   models (:func:`perceptbench.metrics.crossmodel.rank_correlation`).  A task's headline metric
   is ``B`` (human-likeness, seed 000 Table A2) where the task has one, else ``accuracy``; a task
   with neither (SalBench, VSI, benchmark-native rows) takes no part.
2. ``accuracy_kappa_discordance`` and ``accuracy_kappa_rho`` on the panel classification tasks
   (silhouettes; edges when run): the share of model pairs that accuracy and ``kappa_aggregate``
   (seed 000 Eq. 2) order in opposite directions, and Spearman's rho between the two (§3).
3. ``n_above_human_accuracy``, ``n_at_kappa_ceiling``, ``n_below_kappa_ceiling`` and
   ``median_fraction_of_kappa_ceiling`` on the same tasks
   (:func:`perceptbench.metrics.crossmodel.ceiling_counts`; §3).
4. ``{metric}_mean[family=F]`` and ``{metric}_mean[objective=O]``: the mean headline value per
   declared family and training objective (run.json ``models``), with a bootstrap over the
   group's models (Table A2 groups by family).
5. ``ci_halfwidth_bound`` on every task with a headline metric: 1.96 / (2 sqrt n) for the task's
   n trials (seed 000 D.1).
"""

from __future__ import annotations

import itertools
import math
import os
from collections import defaultdict

from ..core.rows import ScoreRow, is_aggregate_model
from ..metrics.crossmodel import ceiling_counts, ci_halfwidth_bound, group_mean, rank_correlation, rank_discordance
from ..records import TrialRecord
from ..tasks.gestalt import PANEL_CLASSIFICATION_TASKS
from .base import SUITE_ANALYSES, SuiteAnalysis

__all__ = ["ALL_MODELS", "CrossModelAnalysis", "crossmodel_rows"]

ALL_MODELS = "all-models"
"""The ``model`` of a row about every model of the run together (one of
:data:`perceptbench.core.rows.AGGREGATE_MODELS`)."""

HEADLINE_METRICS = ("B", "accuracy")
"""A task's headline metric for the cross-model analyses: the first of these it has (seed 000
Table A2 reports B; a task without B is read through its accuracy)."""


def _is_model(name: str) -> bool:
    return not name.startswith("human:") and not is_aggregate_model(name)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


class _Table:
    """The per-task rows of the run's models (not humans, not cross-model rows)."""

    def __init__(self, rows: list[ScoreRow]):
        self.by_key = {(r.task_id, r.model, r.metric): r for r in rows}
        self.models: dict[str, list[str]] = defaultdict(list)
        for r in rows:
            if _is_model(r.model) and r.model not in self.models[r.task_id]:
                self.models[r.task_id].append(r.model)
        seeds = sorted({r.seed for r in rows if r.seed is not None})
        self.seed = seeds[0] if seeds else 0

    def get(self, task: str, model: str, metric: str) -> ScoreRow | None:
        return self.by_key.get((task, model, metric))

    def value(self, task: str, model: str, metric: str) -> float:
        r = self.get(task, model, metric)
        return float(r.value) if r is not None and _finite(r.value) else math.nan

    def headline(self, task: str) -> str | None:
        for metric in HEADLINE_METRICS:
            if any(_finite(self.value(task, m, metric)) for m in self.models[task]):
                return metric
        return None


def crossmodel_rows(task_rows: list[ScoreRow], seed: int | None = None,
                    models: dict[str, dict] | None = None) -> list[ScoreRow]:
    """The cross-model rows (module docstring, items 1-5) over the per-task rows ``task_rows``;
    empty when fewer than two models have a headline value on any task.  ``seed``: the bootstrap
    seed over models (None: the smallest bootstrap seed among ``task_rows``, 0 if none);
    ``models``: declared metadata {model: {"family": ..., "objective": ...}} (None: no group rows)."""
    t = _Table(task_rows)
    s = t.seed if seed is None else seed
    heads = {task: h for task in sorted(t.models) if (h := t.headline(task)) is not None}
    scored = {task: [m for m in t.models[task] if _finite(t.value(task, m, h))] for task, h in heads.items()}
    if max((len(ms) for ms in scored.values()), default=0) < 2:
        return []
    rows: list[ScoreRow] = []
    for task, h in heads.items():
        rows += _bound_row(t, task)
    for (ta, ha), (tb, hb) in itertools.combinations(heads.items(), 2):
        common = [m for m in scored[ta] if m in scored[tb]]
        if len(common) < 2:
            continue
        rc = rank_correlation([t.value(ta, m, ha) for m in common], [t.value(tb, m, hb) for m in common], s)
        note = (f"Spearman rho of {ha} on {ta} vs {hb} on {tb} over {len(common)} models; interval: "
                "bootstrap over models (seed 000 §3)")
        if not math.isfinite(rc.rho):
            note = f"undefined: fewer than 3 models or a constant side; {note}"
        rows.append(ScoreRow(f"{ta}~{tb}", ALL_MODELS, f"rank_rho[{ha}~{hb}]", rc.rho, rc.low, rc.high, rc.n, None,
                             note, rc.n_draws, rc.n_dropped, s))
    for task in heads:
        if task.split("@", 1)[0] in PANEL_CLASSIFICATION_TASKS:
            rows += _accuracy_kappa_rows(t, task, s)
    if models:
        for task, h in heads.items():
            rows += _group_rows(t, task, h, scored[task], models, s)
    return rows


def _bound_row(t: _Table, task: str) -> list[ScoreRow]:
    ns = [r.n for m in t.models[task] if (r := t.get(task, m, "null_rate")) is not None and r.n]
    if not ns:
        return []
    n = max(ns)
    return [ScoreRow(task, ALL_MODELS, "ci_halfwidth_bound", ci_halfwidth_bound(n), None, None, n, None,
                     f"1.96/(2 sqrt n) for n={n} trials: the widest 95% interval half-width of a proportion "
                     "(seed 000 D.1)")]


def _accuracy_kappa_rows(t: _Table, task: str, seed: int) -> list[ScoreRow]:
    ms = [m for m in t.models[task] if _finite(t.value(task, m, "accuracy"))
          and _finite(t.value(task, m, "kappa_aggregate"))]
    if len(ms) < 2:
        return []
    acc = [t.value(task, m, "accuracy") for m in ms]
    kap = [t.value(task, m, "kappa_aggregate") for m in ms]
    share, pairs = rank_discordance(acc, kap)
    rc = rank_correlation(acc, kap, seed)
    rows = [ScoreRow(task, ALL_MODELS, "accuracy_kappa_discordance", share, None, None, len(ms), None,
                     f"share of the {pairs} model pairs that accuracy and kappa_aggregate order in opposite "
                     "directions (ties not discordant; seed 000 §3)"),
            ScoreRow(task, ALL_MODELS, "accuracy_kappa_rho", rc.rho, rc.low, rc.high, rc.n, None,
                     "Spearman rho of accuracy vs kappa_aggregate over models; interval: bootstrap over models "
                     "(seed 000 §3)" if math.isfinite(rc.rho) else
                     "undefined: fewer than 3 models or a constant side", rc.n_draws, rc.n_dropped, seed)]
    split = _split(t, task, ms)
    human = t.get(task, "human:panel", f"observer_accuracy_mean{split}")
    ceil = t.get(task, "human:panel", f"ceiling_kappa_pairwise_mean{split}")
    if human is None or ceil is None or not _finite(human.value) or not (_finite(ceil.value) and ceil.value > 0):
        return rows
    kh = [r.ci_high if (r := t.get(task, m, "kappa_aggregate")) and _finite(r.ci_high) else math.nan for m in ms]
    c = ceiling_counts(acc, kap, kh, human.value, ceil.value)
    ref = (f"human accuracy = observer_accuracy_mean{split} {human.value:.3f}, ceiling = "
           f"ceiling_kappa_pairwise_mean{split} {ceil.value:.3f} (seed 000 §3, D.2)")
    rows += [ScoreRow(task, ALL_MODELS, "n_above_human_accuracy", float(c.above_human), None, None, c.n, None,
                      f"models whose accuracy exceeds the observers' mean; {ref}"),
             ScoreRow(task, ALL_MODELS, "n_at_kappa_ceiling", float(c.at_ceiling), None, None, c.above_human, None,
                      f"of those, models whose kappa_aggregate interval reaches the ceiling (upper bound >= it); "
                      f"{ref}"),
             ScoreRow(task, ALL_MODELS, "n_below_kappa_ceiling", float(c.below_ceiling), None, None, c.above_human,
                      None, f"of those, models whose kappa_aggregate interval lies below the ceiling; {ref}"),
             ScoreRow(task, ALL_MODELS, "median_fraction_of_kappa_ceiling", c.median_fraction, None, None,
                      c.below_ceiling, None,
                      f"median kappa_aggregate / ceiling over the below-ceiling models above human accuracy; {ref}"
                      if c.below_ceiling else "undefined: no model above human accuracy stays below the ceiling")]
    return rows


def _split(t: _Table, task: str, ms: list[str]) -> str:
    """``@test`` when no model answered more trials than the declared test split has (the
    default run), else ``@all``: the human panel rows the models' trials correspond to."""
    test = t.get(task, "human:panel", "observer_accuracy_mean@test")
    if test is None:
        return "@all"
    ns = [r.n for m in ms if (r := t.get(task, m, "null_rate")) is not None and r.n is not None]
    return "@test" if all(n <= test.n for n in ns) else "@all"


def _group_rows(t: _Table, task: str, metric: str, ms: list[str], models: dict[str, dict],
                seed: int) -> list[ScoreRow]:
    rows = []
    for field in ("family", "objective"):
        groups: dict[str, list[str]] = defaultdict(list)
        for m in ms:
            g = (models.get(m) or {}).get(field)
            if g:
                groups[g].append(m)
        for g in sorted(groups):
            gm = group_mean([t.value(task, m, metric) for m in groups[g]], seed, f"{task}|{field}|{g}")
            rows.append(ScoreRow(task, ALL_MODELS, f"{metric}_mean[{field}={g}]", gm.mean,
                                 gm.low if gm.n > 1 else None, gm.high if gm.n > 1 else None, gm.n, None,
                                 f"mean {metric} of the {gm.n} model(s) declared {field} {g!r} ("
                                 + ", ".join(groups[g]) + "); interval: bootstrap over those models "
                                 "(seed 000 Table A2)", gm.n_draws or None, None, seed))
    return rows


@SUITE_ANALYSES.register("crossmodel")
class CrossModelAnalysis(SuiteAnalysis):
    """Seed 000's cross-model analyses: reads the per-task rows only, so no task's records are kept."""

    def takes_part(self, records: list[TrialRecord]) -> bool:
        return False

    def rows(self, records: list[TrialRecord], *, seed: int | None, features_dir: str | os.PathLike | None,
             families: dict[str, str] | None, task_rows: list[ScoreRow],
             models: dict[str, dict] | None, pairs: str = "auto") -> list[ScoreRow]:
        return crossmodel_rows(task_rows, seed, models)
