"""The human respondent: a task's human records (the panel's trials, built by the task from
its human-data release with :func:`perceptbench.tasks.base.make_record`)."""

from __future__ import annotations

from ..tasks.base import Stimulus, Task


def human_records(task: Task, seed: int, run_id: str, stimuli: list[Stimulus], wanted: set[str] | frozenset = frozenset()
                  ) -> list:
    """The human records of ``task`` (only those of the stimulus ids in ``wanted`` when given)."""
    hr = task.human_records(seed, run_id, stimuli)
    return [r for r in hr if r.stimulus_id in wanted] if wanted else hr
