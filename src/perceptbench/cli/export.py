"""``perceptbench export``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..core.rundir import RunDir
from .errors import TornTailsAsWarnings, console, fail
from .out_checks import check_out


def export(
    run_dir: Path = typer.Argument(..., help="Run directory (records.jsonl [+ scores.json])."),
    format: str = typer.Option("parquet", "--format", help="Output format; only parquet."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for records.parquet and scores.parquet "
                                                           "(default: the run directory)."),
) -> None:
    """Write a run's records and scores as typed parquet tables.

    For pandas, polars and duckdb."""
    from ..records import RecordError
    from ..reports.export import export_parquet

    if format != "parquet":
        fail(f"--format {format!r}: only 'parquet' is supported")
    if not RunDir(run_dir).records.exists():
        fail(f"{run_dir}: not a run directory (no records.jsonl in it)")
    check_out(out if out is not None else run_dir, "export")
    try:
        with TornTailsAsWarnings():
            rec, sc = export_parquet(run_dir, out)
    except (RecordError, OSError) as e:
        fail(e)
    console.print(f"records: {rec}\nscores:  {sc or '(no scores.json: run perceptbench score first)'}",
                  highlight=False)
