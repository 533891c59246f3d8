"""``perceptbench validate``."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from ..core.rundir import RunDir
from .errors import console, fail


def validate(records: Path = typer.Argument(..., help="records.jsonl")) -> None:
    """Check a records file against the trial-record schema.

    Field for field; an empty file is an error."""
    from ..records import check_file

    if not records.exists():
        fail(f"{records}: no such records file")
    if records.is_dir():
        records = RunDir(records).records
        if not records.exists():
            fail(f"{records.parent}: not a run directory (no records.jsonl in it)")
    n_ok, errors, n_problems = check_file(records)
    for e in errors:
        console.print(f"[red]{escape(e)}[/red]", highlight=False, soft_wrap=True)  # one line each
    more = f" ({n_problems - len(errors)} more not shown)" if n_problems > len(errors) else ""
    console.print(f"{records}: {n_ok} valid records, {n_problems} problem(s){more}", highlight=False)
    if n_problems:
        raise typer.Exit(2)
