"""The cross-task VSI analyses as a suite analysis (registered as ``vsi`` in
:data:`perceptbench.analyses.SUITE_ANALYSES`): every task with VSI samples of a blur condition
takes part, and :func:`vsi_analysis_rows` gives the rows of seed 002 §2.3-§4 over all of them
together.  Those analyses are defined over blur cells (a perturbation at a sigma); the
image-withheld cell is scored per task only (:mod:`perceptbench.vsi.scoring`)."""

from __future__ import annotations

import os

import numpy as np

from ..analyses.base import SUITE_ANALYSES, SuiteAnalysis
from ..core.rows import ScoreRow
from ..records import TrialRecord
from .analysis import score_vsi_analyses
from .features import ProbeFeatures
from .samples import BLURS, VSISample, vsi_columns, vsi_samples


def vsi_analysis_rows(records: list[TrialRecord], seed: int | None = None,
                      features_dir: str | os.PathLike | None = None,
                      families: dict[str, str] | None = None, pairs: str = "auto") -> list[ScoreRow]:
    """Seed 002 §2.3-§4 analyses over every VSI record of a blur condition (all tasks and models
    together): empty when there is none.  Seed: ``seed``, else the VSI records' unique seed
    (ValueError if several).  Probe rows need ``features_dir`` (read with numpy; no torch); when
    it is given but does not exist (a records file copied without its run directory), the probe
    rows are undefined and name the feature files they need.  ``pairs``: which model pairs get
    per-pair rows (:data:`perceptbench.scorers.pairs.PAIR_MODES`; :func:`~.analysis.score_vsi_analyses`)."""
    return _analysis_rows(records, blur_samples(records), seed, features_dir, families, pairs)


def _analysis_rows(records, samples, seed, features_dir, families, pairs, seeds=None) -> list[ScoreRow]:
    if not samples:
        return []
    s = seed
    if s is None:
        tasks = {x.task_id for x in samples}
        if seeds is None:
            seeds = {r.run_meta.seed for r in records if r.task_id in tasks}
        else:
            seeds = set().union(*(seeds[t] for t in tasks))
        if len(seeds) != 1:
            raise ValueError(f"VSI records carry several seeds {sorted(seeds)}; pass --seed")
        s = seeds.pop()
    probe = ProbeFeatures(features_dir) if features_dir is not None else None
    return score_vsi_analyses(samples, seed=s, probe=probe, families=families, pairs=pairs)


def blur_samples(records: list[TrialRecord]) -> list[VSISample]:
    """The VSI samples of ``records`` under a blur condition (:data:`~.samples.BLURS`)."""
    return [s for s in vsi_samples(records) if s.perturbation in BLURS]


@SUITE_ANALYSES.register("vsi")
class VSISuiteAnalysis(SuiteAnalysis):
    """The cross-task VSI analyses: a task takes part when its records (a record list, or VSI
    columns: :func:`~.samples.read_vsi_columns`) hold blur samples.  Scoring keeps the task's blur
    samples alone (:meth:`keep`, found once per task: from columns, the pairs the task's scoring
    computed) and this analysis the task's seeds; :meth:`rows` takes those samples, or records
    (then their samples are computed)."""

    def __init__(self):
        self._found: tuple[object, list[VSISample]] | None = None
        self._seeds: dict[str, set] = {}

    def takes_part(self, records) -> bool:
        if isinstance(records, list):
            samples = blur_samples(records)
            seeds: dict[str, set] = {}
            for r in records:
                seeds.setdefault(r.task_id, set()).add(r.run_meta.seed)
        elif getattr(records, "vsi", None) is not None:
            samples = [s for s in vsi_columns(records).pairs() if isinstance(s, VSISample) and s.perturbation in BLURS]
            seeds = {records.task_id: set(np.unique(records.seed).tolist())}
        else:  # columns of a task with no VSI fields
            return False
        self._found = (records, samples) if samples else None
        if samples:
            for t, v in seeds.items():
                self._seeds.setdefault(t, set()).update(v)
        return bool(samples)

    def keep(self, records) -> list[VSISample]:
        """The blur samples of a task that takes part (those :meth:`takes_part` found)."""
        if self._found is not None and self._found[0] is records:
            return self._found[1]
        return blur_samples(records) if isinstance(records, list) else []

    def rows(self, records: list, *, seed: int | None, features_dir: str | os.PathLike | None,
             families: dict[str, str] | None, task_rows: list[ScoreRow],
             models: dict[str, dict] | None, pairs: str = "auto") -> list[ScoreRow]:
        """The rows over ``records``: the kept samples (:meth:`keep`, seeds from :meth:`takes_part`), or records."""
        if all(isinstance(x, VSISample) for x in records):
            samples = sorted(records, key=lambda s: (s.task_id, s.model, s.sample_id, s.perturbation, s.sigma))
            return _analysis_rows([], samples, seed, features_dir, families, pairs, self._seeds)
        return _analysis_rows(records, blur_samples(records), seed, features_dir, families, pairs)
