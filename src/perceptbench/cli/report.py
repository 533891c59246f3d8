"""``perceptbench report``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..core.rundir import RunDir
from .errors import TornTailsAsWarnings, console, fail
from .out_checks import check_out


def report(
    run_dirs: List[Path] = typer.Argument(..., help="Run directories (records.jsonl [+ scores.json]); several are "
                                                     "merged by trial id."),
    out: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: report.html in the first run "
                                                           "directory); a Markdown summary is written beside it."),
) -> None:
    """Write an HTML report (figures inline) and a Markdown summary.

    One self-contained page from trial records and scores alone (imports no torch, runs no
    model)."""
    from ..records import RecordError
    from ..reports.html import write_report

    out = out or (RunDir(run_dirs[0]) if run_dirs[0].is_dir() else RunDir.beside(run_dirs[0])).report_html
    check_out(out, "report")
    try:
        with TornTailsAsWarnings():
            res = write_report(run_dirs, out)
    except (RecordError, ValueError, KeyError, OSError) as e:
        fail(e)
    console.print(f"report: {res.html_path} ({res.n_models} model(s), {res.n_tasks} task(s), {res.n_figures} "
                  f"figures)\nsummary: {res.md_path}")
