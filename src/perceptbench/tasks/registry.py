"""Task registry and the task-id scheme.

``task_id = base_id`` for the default variant, else ``base_id@key=value[,key=value]``
with only non-default settings, keys sorted: e.g. ``similarity.chart.mark_color@kernel=l5``.
Two variants therefore never share a ``trial_id`` in one records file.
"""

from __future__ import annotations

from .base import Task
from .chart_category import CategoryMeanTask
from .gestalt import MARK_KERNEL_TASKS, CueConflictTask, EdgeTask, MarkColorTask, SeriesCountTask, SilhouetteTask
from .salbench import SALBENCH_TASKS
from .things_ooo import ThingsOddOneOutTask
from ..vsi.benchmarks import VSI_TASKS

TASKS: dict[str, type[Task]] = {t.base_id: t for t in (SilhouetteTask, EdgeTask, MarkColorTask, SeriesCountTask,
                                                       CueConflictTask,
                                                       *(t for t in MARK_KERNEL_TASKS if t is not MarkColorTask),
                                                       CategoryMeanTask, ThingsOddOneOutTask, *SALBENCH_TASKS,
                                                       *VSI_TASKS)}

DEFAULT_BATTERY = ("closure.nat.silhouette", "similarity.chart.mark_color", "similarity.chart.series_count")
"""What ``perceptbench run`` runs with no ``--task``: the Gestalt battery's runnable tasks.  The
other kernel odd-one-out tasks (mark shape, size and the three bivariate sets), the edges and the
cue-conflict shape-bias task are opt-in."""

NOT_RUNNABLE: dict[str, str] = {}
"""Tasks listed but not runnable here (none at present: similarity.nat.things_ooo runs once its
OSF release and images are supplied, and refuses with a one-line error otherwise)."""


def parse_task_id(task_id: str) -> tuple[str, dict[str, str]]:
    """Split ``base@k=v,k2=v2`` into (base, params).  Whitespace around the base id and each key is
    ignored (``"x@n=60, n_probe=60"`` is ``x@n=60,n_probe=60``); a value is kept verbatim (an
    answer prefix's spaces are tokens; number settings ignore spaces when they normalise).  Raises
    ValueError on bad syntax."""
    base, _, rest = task_id.partition("@")
    base = base.strip()
    params = {}
    if rest.strip():
        for part in rest.split(","):
            k, eq, v = part.partition("=")
            k = k.strip()
            if not eq or not k or not v:
                raise ValueError(f"bad task setting {part!r} in {task_id!r}; expected key=value")
            params[k] = v
    return base, params


def get_task(task_id: str, location: dict[str, str] | None = None) -> Task:
    """A task instance for a task id (or a :attr:`~perceptbench.tasks.base.Task.spec`).
    Raises KeyError naming the closest known task ids (difflib) and listing them all.

    ``location``: a record's ``run_meta.data_location`` (where the task's data lay: image
    folder, question file); its settings are added, so that the task can load its stimuli
    again.  Raises ValueError when the data found there no longer make the same task id (a
    question file changed since)."""
    base, params = parse_task_id(task_id)
    if location:
        rebuilt = get_task(task_id)
        params.update({k: str(v) for k, v in location.items()})
        task = get_task(base + "@" + ",".join(f"{k}={v}" for k, v in params.items()))
        if task.task_id != rebuilt.task_id:
            raise ValueError(f"{task_id}: the data recorded in run_meta.data_location ({location}) now make the "
                             f"task {task.task_id}: a file changed since the run")
        return task
    if base in NOT_RUNNABLE:
        raise KeyError(f"{base} is not runnable here: {NOT_RUNNABLE[base]}")
    if base not in TASKS:
        import difflib

        near = difflib.get_close_matches(base, list(TASKS) + list(NOT_RUNNABLE), n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(n) for n in near)}? " if near else ""
        raise KeyError(f"unknown task {base!r}; {hint}known: {sorted(TASKS)}")
    return TASKS[base](**params)


def list_tasks() -> list[type[Task]]:
    return list(TASKS.values())
