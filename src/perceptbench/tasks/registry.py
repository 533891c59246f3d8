"""Task registry and the task-id scheme.

``task_id = base_id`` for the default variant, else ``base_id@key=value[,key=value]``
with only non-default settings, keys sorted: e.g. ``similarity.chart.mark_color@kernel=l5``.
Two variants therefore never share a ``trial_id`` in one records file.
"""

from __future__ import annotations

from .base import Task
from .gestalt import MarkColorTask, SeriesCountTask, SilhouetteTask
from .salbench import SALBENCH_TASKS
from .vsi import VSI_TASKS

TASKS: dict[str, type[Task]] = {t.base_id: t for t in (SilhouetteTask, MarkColorTask, SeriesCountTask,
                                                       *SALBENCH_TASKS, *VSI_TASKS)}

DEFAULT_BATTERY = ("closure.nat.silhouette", "similarity.chart.mark_color", "similarity.chart.series_count")
"""What ``perceptbench run`` runs with no ``--task``: the Gestalt battery's runnable tasks."""

NOT_RUNNABLE = {
    "similarity.nat.things_ooo": ("THINGS odd-one-out: the 500 test triplets, human choices and images "
                                  "are distributed through OSF only and are not in the data mirror; "
                                  "not runnable offline"),
}


def parse_task_id(task_id: str) -> tuple[str, dict[str, str]]:
    """Split ``base@k=v,k2=v2`` into (base, params).  Raises ValueError on bad syntax."""
    base, _, rest = task_id.partition("@")
    params = {}
    if rest:
        for part in rest.split(","):
            k, eq, v = part.partition("=")
            if not eq or not k or not v:
                raise ValueError(f"bad task setting {part!r} in {task_id!r}; expected key=value")
            params[k] = v
    return base, params


def get_task(task_id: str) -> Task:
    """A task instance for a task id.  Raises KeyError naming the known tasks."""
    base, params = parse_task_id(task_id)
    if base in NOT_RUNNABLE:
        raise KeyError(f"{base} is not runnable here: {NOT_RUNNABLE[base]}")
    if base not in TASKS:
        raise KeyError(f"unknown task {base!r}; known: {sorted(TASKS)}")
    return TASKS[base](**params)


def list_tasks() -> list[type[Task]]:
    return list(TASKS.values())
