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
"""What ``perceptbench run`` runs with no ``--task`` (and ``--battery default``): the Gestalt battery's
runnable tasks, the README's fast main job.  The other kernel odd-one-out tasks (mark shape, size and
the three bivariate sets), the edges and the cue-conflict shape-bias task are opt-in: with
``--task``, or all at once with ``--battery full``."""

FULL_BATTERY = DEFAULT_BATTERY + tuple(t.base_id for t in MARK_KERNEL_TASKS if t is not MarkColorTask) + (
    EdgeTask.base_id, CueConflictTask.base_id)
"""``--battery full``: the default battery, then every task whose human data the mirror (and, for the
cue-conflict images, ``perceptbench sources fetch geirhos2019-cue-conflict``) provides: the five other
kernel odd-one-out tasks (with their 20 subjects' raw judgments), closure on edges (with the paper's
CNN trials) and shape bias on cue conflict.  A run refuses it, before anything is written, while the
cue-conflict images are missing (:func:`check_battery`)."""

BATTERIES: dict[str, tuple[str, ...]] = {"default": DEFAULT_BATTERY, "full": FULL_BATTERY}
"""The named task sets of ``perceptbench run --battery NAME``."""


def battery_tasks(name: str) -> tuple[str, ...]:
    """The task ids of the battery ``name``; ValueError naming the known batteries."""
    if name not in BATTERIES:
        raise ValueError(f"--battery {name!r}: must be one of {', '.join(BATTERIES)}")
    return BATTERIES[name]


def battery_of(base_id: str) -> str:
    """The smallest battery holding the task ``base_id`` (``default`` is also in ``full``), or
    ``""`` for a task that runs only when named with ``--task``."""
    return next((name for name, ids in BATTERIES.items() if base_id in ids), "")


def check_battery(name: str, seed: int = 0) -> None:
    """Refuse a battery whose data are not all here, in one line naming what to download: the
    cue-conflict images of ``full`` (:class:`~perceptbench.sources.MissingSourceError`, or
    ChecksumError for an image changed after download)."""
    from ..sources.fetch import MissingSourceError

    for tid in battery_tasks(name):
        try:
            get_task(tid).check_images(seed)
        except MissingSourceError as e:
            raise MissingSourceError(f"--battery {name} includes {tid}, whose data are missing: {e}") from None

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


def task_title(task_id: str) -> str:
    """The short human-readable name of the task ``task_id`` (its base id's
    :attr:`~perceptbench.tasks.base.Task.title`, e.g. "Mark colour odd-one-out"); '' for an
    id that names no known task (a row about several tasks, a task of a later version)."""
    cls = TASKS.get(task_id.partition("@")[0].strip())
    return cls.title if cls is not None else ""


def task_label(task_id: str) -> str:
    """``task_id`` with its human-readable name, for a figure title or heading:
    "Mark colour odd-one-out (similarity.chart.mark_color)"; the id alone when it names no
    known task (:func:`task_title`)."""
    title = task_title(task_id)
    return f"{title} ({task_id})" if title else task_id
