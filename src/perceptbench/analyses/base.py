"""Suite analyses: analyses over the records of several tasks together, run by scoring after
every task has been scored on its own.

A suite analysis is a :class:`SuiteAnalysis` class registered in :data:`SUITE_ANALYSES`; scoring
(:func:`perceptbench.scoring.score_records`) asks each one, task by task, whether the task's
records take part (:meth:`SuiteAnalysis.takes_part`), keeps only those, and appends the rows of
:meth:`SuiteAnalysis.rows` (which also sees every per-task row) after the per-task rows, in registration order.  Scoring names no
analysis: a new one is a module that registers itself plus one import in
:mod:`perceptbench.analyses`."""

from __future__ import annotations

import abc
import os

from ..core.rows import ScoreRow
from ..records import TrialRecord
from ..core.registry import Registry


class SuiteAnalysis(abc.ABC):
    """One analysis over the records of several tasks (e.g. the cross-task VSI analyses,
    :class:`perceptbench.vsi.suite.VSISuiteAnalysis`)."""

    @abc.abstractmethod
    def takes_part(self, records: list[TrialRecord]) -> bool:
        """Whether one task's records (re-parsed and split by prompt version, as its scorer saw
        them) feed this analysis.  ``records`` is a list of records, or the task's columns when
        it was scored from them (a :class:`perceptbench.record_table.TaskColumns`; an analysis
        that does not read columns answers False)."""

    def keep(self, records) -> list:
        """What scoring keeps of a task that takes part, to pass to :meth:`rows` (the lists of
        every such task concatenated): by default its records; an analysis may keep less (e.g.
        the VSI samples alone) when its :meth:`rows` accepts that."""
        return records

    @abc.abstractmethod
    def rows(self, records: list[TrialRecord], *, seed: int | None, features_dir: str | os.PathLike | None,
             families: dict[str, str] | None, task_rows: list[ScoreRow],
             models: dict[str, dict] | None, pairs: str = "auto") -> list[ScoreRow]:
        """The analysis rows over ``records`` (what :meth:`keep` kept of every task that took part).  ``seed``: the
        bootstrap seed (None: the records' own); ``features_dir``: the run's ``features/``
        folder or None; ``families``: {model: family} tags or None; ``task_rows``: every
        per-task score row of the run (all tasks, whether they took part or not; read only);
        ``models``: the declared model metadata ({model: run.json ``models`` entry}) or None;
        ``pairs``: which model pairs an analysis with per-pair rows compares
        (:data:`perceptbench.scorers.pairs.PAIR_MODES`, ``score --pairs``)."""


SUITE_ANALYSES: Registry[type[SuiteAnalysis]] = Registry("suite analysis")
"""Every suite analysis class, by name, in the order scoring runs them."""
