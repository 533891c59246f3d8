"""``perceptbench export``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ..core.rundir import RunDir
from .errors import TornTailsAsWarnings, console, fail
from .out_checks import check_out


def export(
    run: Path = typer.Argument(..., metavar="RUN", help="Run directory (records.jsonl [+ scores.json]) or a records .jsonl "
                                         "file (the folder it lies in is its run directory: scores.json beside it)."),
    format: str = typer.Option("parquet", "--format", help="Output format; only parquet."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for records.parquet and scores.parquet "
                                                           "(default: the run directory; for a records file, "
                                                           "the folder it lies in)."),
) -> None:
    """Write a run's records and scores as typed parquet tables.

    For pandas, polars and duckdb."""
    from ..records import RecordError
    from ..reports.export import export_parquet
    from ..runs import records_path

    if format != "parquet":
        fail(f"--format {format!r}: only 'parquet' is supported")
    try:
        records = records_path(run)
    except RecordError as e:
        fail(e)
    check_out(out if out is not None else RunDir.beside(records).root, "export", default=out is None)
    try:
        with TornTailsAsWarnings():
            rec, sc = export_parquet(records, out)
    except (RecordError, OSError) as e:
        fail(e)
    console.print(f"records: {rec}\nscores:  {sc or '(no scores.json: run perceptbench score first)'}",
                  highlight=False)
