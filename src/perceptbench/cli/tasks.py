"""``perceptbench tasks``."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from .errors import console


def tasks() -> None:
    """List the tasks, their settings and the human data behind each.

    For each task: the human data in words and as the reference id records carry (the id model
    trials carry, and, where it differs, the id of the human records it is derived from: the
    Geirhos tasks' ``.modal`` answer of the observers' ``.raw`` trials), and the battery that runs it (``default``: the run with no ``--task``, also in ``full``; ``full``:
    ``--battery full`` only; empty: only when named with ``--task``).
    Task ids are never broken across lines, whatever the terminal width: a wide terminal
    gets a table whose id column does not wrap, a narrow one a list with each id on a line
    of its own.  Piped (stdout not a terminal), the list's fields are not wrapped either: one
    field, one line, whole, for grep and scripts."""
    from ..tasks.registry import BATTERIES, NOT_RUNNABLE, battery_of, list_tasks

    rows = []
    for cls in list_tasks():
        specs = {k: cls.setting_spec(cls, k) for k in cls.defaults}  # class-level specs, no instance needed
        settings = ", ".join(f"{k}={v} ({specs[k].describe() if specs[k] else 'any'})" for k, v in cls.defaults.items())
        rows.append((cls.base_id, f"{cls.principle}/{cls.track}", cls.response_space, cls.encoder_readout,
                     settings or "-", cls().human_data, cls().human_ref_id, _records_ref_id(cls()),
                     {"default": "default (and full)", "full": "full"}.get(battery_of(cls.base_id), ""),
                     cls.description))
    for tid, why in NOT_RUNNABLE.items():
        rows.append((tid, "", "", "", "", "", "", "", "not runnable", why))
    cols = ("task_id", "principle/track", "response", "encoder readout", "settings (default)", "human data",
            "human reference id", "human records' id", "battery", "description")
    id_width = max(len(r[0]) for r in rows)
    if console.width >= id_width + 150:
        t = Table(title="tasks")
        t.add_column(cols[0], no_wrap=True, min_width=id_width)
        for c in cols[1:]:
            # the ids are never broken: the reference id column does not wrap, the records' id column
            # is as wide as its longest id (its note wraps at word boundaries)
            t.add_column(c, no_wrap=c == "human reference id",
                         min_width=max(len(r[7].split(" ")[0]) for r in rows) if c == "human records' id" else None)  # the others wrap at word boundaries
        for r in rows:
            t.add_row(*(escape(x) for x in r))
        console.print(t)
    else:
        piped = not console.is_terminal
        for r in rows:
            console.print(f"[bold]{escape(r[0])}[/bold]", soft_wrap=True)  # never wrapped: copy-pasteable
            for name, value in zip(cols[1:], r[1:]):
                if value:
                    console.print(f"    {name}: {escape(value)}", highlight=False, soft_wrap=piped)
    console.print(f"Batteries (perceptbench run --battery NAME): default = no --task, {len(BATTERIES['default'])} "
                  f"tasks; full = {len(BATTERIES['full'])} tasks, the default ones and those marked full.",
                  highlight=False)
    console.print("Variants: BASE@key=value[,key=value], e.g.", highlight=False)
    console.print("similarity.chart.mark_color@kernel=l5", soft_wrap=True, highlight=False)


def _records_ref_id(task) -> str:
    """The ``human_ref_id`` the task's own human records carry where it differs from the one its
    model trials carry (``human_raw_ref_id`` of the Geirhos tasks: the observers' raw trials, whose
    modal answer is the models' reference), else empty."""
    raw = getattr(task, "human_raw_ref_id", "")
    return f"{raw} (the observers' trials; the human reference id is their modal answer)" if raw and \
        raw != task.human_ref_id else ""
