"""The trial context and the one record factory.

Every model trial record, skipped ones included, is built by :meth:`TrialContext.record` or
:meth:`TrialContext.skipped` from one :class:`TrialContext`: the task, the respondent's
identity (record ``model`` name, family, ``model_version``), readout, prompt id, seed,
``run_id``, generation settings and the extra ``run_meta`` of the run (model identity,
``--allow-mixed`` notes, the condition).  Human records are built by the tasks with the
same primitive, :func:`perceptbench.tasks.base.make_record`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..records import TrialRecord, make_trial_id
from ..seeding import text_hash
from ..tasks.base import Stimulus, Task, make_record


def prompt_version(task: Task) -> str:
    """The prompt version of ``task``: 8-hex :func:`~perceptbench.seeding.text_hash` of its
    prompt template (``prompt_template``, few-shot format included, where the task has one)
    or else of ``prompt_text``.  The one rule behind ``run_meta.prompt_template_hash`` and the
    resume check's ``prompt`` comparison."""
    return text_hash(task.prompt_template or task.prompt_text)


@dataclass(frozen=True)
class TrialContext:
    """What every record of one (task, model, readout) run shares.

    ``model``: the record's ``model`` field
    (:func:`perceptbench.core.conditions.respondent_label`); ``settings``: the
    ``run_meta.settings`` of answered trials (None: no settings key); ``meta``: extra
    ``run_meta`` keys of every record (model identity, ``mixed_resume``, ``condition``)."""

    task: Task
    model: str
    model_family: str
    model_version: str
    seed: int
    run_id: str
    readout: str = ""
    prompt_id: str | None = None
    settings: dict | None = None
    meta: dict = field(default_factory=dict)

    def with_(self, **changes: Any) -> "TrialContext":
        """A copy with ``changes`` (dataclass fields)."""
        return replace(self, **changes)

    def trial_id(self, stimulus_id: str, rep: int = 0) -> str:
        """The ``trial_id`` this context gives stimulus ``stimulus_id`` (repetition ``rep``, default 0)."""
        return make_trial_id(self.task.task_id, stimulus_id, self.model, rep)

    def record(self, s: Stimulus, *, response, raw_output: str | None, prompt_hash: str | None,
               readout: str | None = None, settings: dict | None = None, **meta: Any) -> TrialRecord:
        """One answered trial of stimulus ``s``: ``run_meta`` gets ``split``, ``settings``
        (``settings`` or the context's), the context's ``meta`` and then ``meta``.  Raises
        what :class:`~perceptbench.records.TrialRecord` validation raises."""
        settings = self.settings if settings is None else settings
        return self._make(s, response, raw_output, prompt_hash, readout,
                          {"split": s.split, **({} if settings is None else {"settings": settings}), **self.meta,
                           **meta})

    def skipped(self, s: Stimulus, why: str, *, prompt_hash: str | None = None, readout: str | None = None,
                **meta: Any) -> TrialRecord:
        """A skipped trial of ``s``: null response and raw output, ``run_meta.skipped`` =
        ``why``; no ``settings`` unless given in ``meta`` (nothing was asked)."""
        return self._make(s, None, None, prompt_hash, readout,
                          {"split": s.split, **meta, "skipped": why, **self.meta})

    def _make(self, s: Stimulus, response, raw_output, prompt_hash, readout, meta: dict) -> TrialRecord:
        return make_record(
            self.task, stimulus_id=s.stimulus_id, model=self.model, model_family=self.model_family,
            readout=readout or self.readout, response=response, ground_truth=s.ground_truth,
            manipulated_value=s.manipulated_value, raw_output=raw_output, prompt_id=self.prompt_id,
            prompt_hash=prompt_hash, model_version=self.model_version, seed=self.seed, run_id=self.run_id, **meta)
