"""Respondents and how one is chosen.

A respondent produces the trial records of one task for one model under one condition
(:data:`~perceptbench.core.conditions.DEFAULT_CONDITION` ``image``, or e.g.
``image_withheld``).  Each respondent class declares in :meth:`Respondent.serves` which
task kind, model kind and condition it serves; :func:`respondent_for` picks the one that
does, so no runner or executor dispatches on flags.  The local runner and the Ray
executor both call :func:`run_trials`, the one entry point."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ClassVar

from ..models.base import default_batch_size
from ..tasks.base import Stimulus, Task
from ..core.conditions import DEFAULT_CONDITION, respondent_label
from .context import TrialContext
from ..core.registry import Registry


class HumanPanel:
    """The human observers of a task's release, as a respondent's model (:data:`HUMAN_PANEL`).
    Its records name each observer (``model = "human:<id>"``, ``model_family = "human"``)."""

    name = "human"
    family = "human"

    def __repr__(self) -> str:
        return "HumanPanel()"


HUMAN_PANEL = HumanPanel()
"""The one human panel: :func:`perceptbench.respond.model_kind` reads ``"human"`` for it."""


def model_kind(model) -> str:
    """What a model declares it can do: ``"human"`` for the human panel of a task's release
    (:data:`HUMAN_PANEL`), ``"vlm"`` when it answers in text (the
    :class:`~perceptbench.models.base.VLM` protocol: local or API, behind the response cache or
    not), else ``"encoder"`` (image embeddings, :class:`~perceptbench.models.base.Encoder`).
    The one place that reads a model's capability for choosing a respondent."""
    from ..models.base import VLM

    if isinstance(model, HumanPanel):
        return "human"
    return "vlm" if isinstance(model, VLM) else "encoder"


def task_kind(task: Task) -> str:
    """What a task declares it measures: ``"vsi"`` (next-token distributions under clean and
    perturbed conditions, :class:`perceptbench.vsi.protocol.VSITask`) or ``"battery"``."""
    return "vsi" if task.is_vsi else "battery"


@dataclass
class Job:
    """One (task, model, condition) to answer: the pending test stimuli, the task's
    probe-train stimuli, where records go (``sink``: a
    :class:`~perceptbench.records.RecordStore` or anything with ``append(records) -> int``),
    ``batch_size`` (None: the model kind's default), the run directory ``out``, the response
    cache mode, extra ``run_meta`` for every record and a progress callback.
    ``stimulus_ids``: when not empty, only the trials of these stimuli (``run --stimulus``; the
    human respondent gets every stimulus in ``pending`` and keeps the records of these)."""

    task: Task
    model: Any
    name: str
    pending: list[Stimulus]
    probe: list[Stimulus]
    sink: Any
    seed: int
    run_id: str
    out: Path
    batch_size: int | None = None
    cache_mode: str = "use"
    extra_meta: dict = field(default_factory=dict)
    advance: Callable[[int], None] = lambda k: None
    condition: str = DEFAULT_CONDITION
    stimulus_ids: frozenset = frozenset()
    repetitions: int = 1
    """Answers per stimulus of a sampling VLM answering prompts (``--repetitions``; the prompt
    respondent's :func:`~perceptbench.respond.prompt.repetitions_of`); other respondents ignore it."""

    def context(self, *, model_name: str, model_family: str, model_version: str, readout: str,
                prompt_id: str | None, settings: dict | None = None, meta: dict | None = None) -> TrialContext:
        """The :class:`TrialContext` of this job's records (the condition is recorded as
        ``run_meta.condition`` when it is not the default)."""
        extra = dict(self.extra_meta)
        if self.condition != DEFAULT_CONDITION:
            extra["condition"] = self.condition
        extra.update(meta or {})
        return TrialContext(self.task, respondent_label(model_name, self.condition), model_family, model_version,
                            self.seed, self.run_id, readout, prompt_id, settings, extra)


@dataclass
class Result:
    """Records written, answers served from the response cache, answers requested, records
    that were in the store already (not written again: a resume), and of those written, how many
    are a release's published model trials (``model_family "published"``)."""

    written: int = 0
    cache_hits: int = 0
    cache_requests: int = 0
    already: int = 0
    published: int = 0


class Respondent(abc.ABC):
    """One way of answering a task's trials.  Subclasses set ``condition`` and implement
    :meth:`serves` and :meth:`run`."""

    condition: ClassVar[str] = DEFAULT_CONDITION

    @classmethod
    @abc.abstractmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        """Whether this respondent answers tasks of ``task_kind`` for models of ``model_kind``."""

    @abc.abstractmethod
    def run(self, job: Job) -> Result:
        """Answer every pending stimulus of ``job``, appending records to ``job.sink``."""

    @classmethod
    def trial_stimuli(cls, task: Task, stimuli: list[Stimulus]) -> list[Stimulus]:
        """The stimuli this respondent records, from the task's stimuli: its test stimuli, less
        those a benchmark asks without an image (``meta["no_image"]``: only a condition that
        asks without images records them, :mod:`perceptbench.respond.withheld`)."""
        return [s for s in stimuli if s.split == "test" and not s.meta.get("no_image")]

    def first_step(self, job: Job) -> str:
        """What happens before the first record is written (the progress line)."""
        return f"waiting for the first batch of {min(default_batch_size(job.batch_size, 'vlm'), len(job.pending))} " \
               "answers ..."


RESPONDENTS: Registry[type[Respondent]] = Registry("respondent")
"""Every respondent class, by name (see :func:`respondent_for`)."""


def conditions() -> tuple[str, ...]:
    """The condition names some respondent serves (``--condition`` values)."""
    return tuple(dict.fromkeys(cls.condition for _, cls in RESPONDENTS))


def check_condition(condition: str) -> None:
    """ValueError (one line) when no respondent serves ``condition``."""
    if condition not in conditions():
        raise ValueError(f"--condition {condition!r}: not one of {', '.join(conditions())}")


def trial_stimuli(task: Task, stimuli: list[Stimulus], condition: str = DEFAULT_CONDITION) -> list[Stimulus]:
    """The stimuli recorded under ``condition`` (the same for every respondent of a condition):
    the test stimuli, or what the condition derives from them (ValueError for an unknown
    condition)."""
    check_condition(condition)
    return next(cls for _, cls in RESPONDENTS if cls.condition == condition).trial_stimuli(task, stimuli)


def respondent_for(task: Task, model, condition: str = DEFAULT_CONDITION, name: str | None = None) -> Respondent:
    """The respondent for ``task`` x ``model`` under ``condition``: the first registered class
    whose ``condition`` matches and whose :meth:`Respondent.serves` accepts (task kind, model
    kind).  Raises ValueError naming the task, the model (``name``) and the condition when
    none does (e.g. a VSI task and an image encoder)."""
    check_condition(condition)
    tk, mk = task_kind(task), model_kind(model)
    for _, cls in RESPONDENTS:
        if cls.condition == condition and cls.serves(tk, mk):
            return cls()
    who = name or getattr(model, "name", "the model")
    if tk == "vsi" and mk == "encoder":
        raise ValueError(f"{task.task_id} measures a VLM's next-token distribution; {who} is an "
                         "image encoder (give a VLM: hf:<VLM> or an API model)")
    words = {"vlm": "a VLM", "encoder": "an image encoder"}
    served = [w for k, w in words.items() if any(cls.condition == condition and cls.serves(tk, k) for _, cls in RESPONDENTS)]
    raise ValueError(f"{task.task_id} under condition {condition!r}: no respondent for {who} "
                     f"({words.get(mk, mk)}); this condition needs {' or '.join(served) or 'another kind of model'}")


def run_trials(job: Job) -> Result:
    """The one entry point of every executor: answer ``job`` with its respondent."""
    return respondent_for(job.task, job.model, job.condition, job.name).run(job)
