"""The human respondent: a task's human records (the panel's trials, built by the task from
its human-data release with :func:`perceptbench.tasks.base.make_record`), and with them the
trials of the models that the same release published (:meth:`~perceptbench.tasks.base.Task.published_records`,
``model_family = "published"``): both are read from the release, never run.

Humans are a respondent like any model: the runner asks :func:`~perceptbench.respond.respondent_for`
for the respondent of (task, :data:`~perceptbench.respond.base.HUMAN_PANEL`) and runs it through
:func:`~perceptbench.respond.run_trials`, the entry point every model trial goes through.  The
"model" is the task's human-data release itself (:class:`~perceptbench.respond.base.HumanPanel`): it answers nothing live,
so it needs no loading, no cache and no executor."""

from __future__ import annotations

from ..tasks.base import Stimulus, Task
from .base import RESPONDENTS, Job, Respondent, Result


def human_records(task: Task, seed: int, run_id: str, stimuli: list[Stimulus], wanted: set[str] | frozenset = frozenset()
                  ) -> list:
    """The human records of ``task`` over ``stimuli`` (every stimulus of the task, in order: the
    records carry each stimulus's split), then its release's published model records, only those
    of the stimulus ids in ``wanted`` when given."""
    hr = task.human_records(seed, run_id, stimuli) + task.published_records(seed, run_id, stimuli)
    return [r for r in hr if r.stimulus_id in wanted] if wanted else hr


@RESPONDENTS.register("human")
class HumanRespondent(Respondent):
    """The human panel of a battery task: its release's trials, written as records (with the
    release's published model trials, where it has them)."""

    @classmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        return model_kind == "human"

    def first_step(self, job: Job) -> str:
        return "reading the human data ..."

    def run(self, job: Job) -> Result:
        """Append the human records of every stimulus in ``job.pending`` (all of the task's
        stimuli; ``job.stimulus_ids`` restricts the records when not empty), then the release's
        published model records.  ``Result.already`` counts the records that were in the store
        already (a resume), ``Result.published`` the published model records written."""
        hr = human_records(job.task, job.seed, job.run_id, job.pending, job.stimulus_ids)
        published = [r for r in hr if r.model_family == "published"]
        written = job.sink.append([r for r in hr if r.model_family != "published"])
        n_published = job.sink.append(published) if published else 0
        job.advance(written + n_published)
        return Result(written + n_published, already=len(hr) - written - n_published, published=n_published)
