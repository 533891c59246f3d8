"""The cross-task VSI analyses as a suite analysis (registered as ``vsi`` in
:data:`perceptbench.analyses.SUITE_ANALYSES`): every task with VSI samples of a blur condition
takes part, and :func:`vsi_analysis_rows` gives the rows of seed 002 §2.3-§4 over all of them
together.  Those analyses are defined over blur cells (a perturbation at a sigma); the
image-withheld cell is scored per task only (:mod:`perceptbench.vsi.scoring`)."""

from __future__ import annotations

import os

from ..analyses.base import SUITE_ANALYSES, SuiteAnalysis
from ..core.rows import ScoreRow
from ..records import TrialRecord
from .analysis import score_vsi_analyses
from .features import ProbeFeatures
from .samples import BLURS, VSISample, vsi_samples


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


def _analysis_rows(records, samples, seed, features_dir, families, pairs) -> list[ScoreRow]:
    if not samples:
        return []
    s = seed
    if s is None:
        tasks = {x.task_id for x in samples}
        seeds = {r.run_meta.seed for r in records if r.task_id in tasks}
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
    """The cross-task VSI analyses: a task takes part when its records hold blur samples.  The
    samples found while asking each task are kept (with the task's record list) and reused by
    :meth:`rows` when its records are those lists one after the other, record for record (as
    scoring passes them), so each record's distribution is read once per ``score``."""

    def __init__(self):
        self._seen: list[tuple[list[TrialRecord], list[VSISample]]] = []

    def takes_part(self, records: list[TrialRecord]) -> bool:
        samples = blur_samples(records)
        if samples:
            self._seen.append((records, samples))
        return bool(samples)

    def rows(self, records: list[TrialRecord], *, seed: int | None, features_dir: str | os.PathLike | None,
             families: dict[str, str] | None, task_rows: list[ScoreRow],
             models: dict[str, dict] | None, pairs: str = "auto") -> list[ScoreRow]:
        return _analysis_rows(records, self._samples_of(records), seed, features_dir, families, pairs)

    def _samples_of(self, records: list[TrialRecord]) -> list[VSISample]:
        """:func:`blur_samples` of ``records``: the kept samples when ``records`` is the kept
        record lists concatenated and no task spans two of them (records of distinct tasks
        never pair), else computed."""
        tasks = [{r.task_id for r in recs} for recs, _ in self._seen]
        if sum(map(len, tasks)) != len(set().union(*tasks)):
            return blur_samples(records)
        i = 0
        for recs, _ in self._seen:
            if len(recs) > len(records) - i or any(a is not b for a, b in zip(recs, records[i:i + len(recs)])):
                return blur_samples(records)
            i += len(recs)
        if i != len(records):
            return blur_samples(records)
        out = [s for _, samples in self._seen for s in samples]
        out.sort(key=lambda s: (s.task_id, s.model, s.sample_id, s.perturbation, s.sigma))
        return out
