"""``perceptbench validate``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from ..core.rundir import RunDir
from .errors import console, fail


def _task_rules():
    """(task_problem, record_problem) for :func:`perceptbench.records.check_file` from the task
    registry: a task id that names no task (or settings it refuses) is the error ``score`` would
    stop at; a known task's :meth:`~perceptbench.tasks.base.Task.record_problem` checks each record."""
    from ..tasks import get_task

    tasks: dict = {}

    def task_problem(task_id: str) -> str | None:
        try:
            tasks[task_id] = get_task(task_id)
        except KeyError as e:  # the registry's list of every task is for `perceptbench tasks`, not for each line
            why = str(e.args[0]) if e.args else str(e)
            return why.split(" known: ")[0].rstrip(";").rstrip() + " (score cannot score it; perceptbench tasks lists the tasks)"
        except ValueError as e:  # settings the task refuses
            return f"{e} (score cannot score it)"
        return None

    def record_problem(rec) -> str | None:
        return tasks[rec.task_id].record_problem(rec)

    return task_problem, record_problem


def validate(records: Path = typer.Argument(..., metavar="RUN", help="A run directory or its records.jsonl")) -> None:
    """Check a records file: its schema and its tasks' rules.

    Field for field; an empty file, a task id that names no task, a model's answer the task cannot
    give, and a record its task cannot score (a benchmark answer without run_meta.external) are errors."""
    from ..records import check_file

    if not records.exists():
        fail(f"{records}: no such records file")
    if records.is_dir():
        records = RunDir(records).records
        if not records.exists():
            fail(f"{records.parent}: not a run directory (no records.jsonl in it)")
    task_problem, record_problem = _task_rules()
    n_ok, errors, n_problems = check_file(records, task_problem=task_problem, record_problem=record_problem)
    for e in errors:
        console.print(f"[red]{escape(e)}[/red]", highlight=False, soft_wrap=True)  # one line each
    more = f" ({n_problems - len(errors)} more not shown)" if n_problems > len(errors) else ""
    console.print(f"{records}: {n_ok} valid records, {n_problems} problem(s){more}", highlight=False)
    if n_problems:
        raise typer.Exit(2)
