"""``perceptbench report``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ..core.rundir import RunDir
from .errors import TornTailsAsWarnings, console, fail
from .out_checks import check_out


def report(
    run_dirs: List[Path] = typer.Argument(..., metavar="RUN", help="Run directories (records.jsonl [+ scores.json]); several are "
                                                     "merged by trial id."),
    out: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: report.html in the first run "
                                                           "directory); a Markdown summary is written beside it."),
    figures: Optional[Path] = typer.Option(
        None, "--figures", metavar="DIR",
        help="Also write every figure of the report as vector PDF and SVG, a 300-dpi PNG and its data as a tidy "
             "CSV (one row per plotted point, bar or cell with its 95% CI, n and labels), and every table as CSV "
             "and LaTeX, into DIR (created if missing, parents too). Figures are sized for a "
             "two-column paper (7.16 in or 3.5 in wide, 7-8 pt type); file names say what each shows, e.g. "
             "accuracy_vs_error_consistency_silhouettes.pdf. Same figures as the HTML page; byte-identical on a re-run."),
    pairs: str = typer.Option(
        "auto", "--pairs", metavar="auto|all|neighbours",
        help="Which model pairs the paired differences compare, per task and metric: all (every pair), neighbours "
             "(each model against the next in the ranking by its own score) or auto (all up to 20 models, "
             "neighbours above; the report says where). Holm and BH adjust over the differences computed."),
) -> None:
    """Write an HTML report (figures inline) and a Markdown summary.

    One self-contained page from trial records and scores alone (imports no torch, runs no
    model).

    --figures DIR: its figures (PDF, SVG, PNG, CSV) and tables (CSV, LaTeX) as files too."""
    from ..records import RecordError
    from ..reports.html import write_report
    from ..reports.paired import PAIR_MODES

    if pairs not in PAIR_MODES:
        fail(ValueError(f"--pairs {pairs!r}: expected one of {', '.join(PAIR_MODES)}"))

    default = out is None
    out = out or (RunDir(run_dirs[0]) if run_dirs[0].is_dir() else RunDir.beside(run_dirs[0])).report_html
    check_out(out, "report", default=default)
    try:
        with TornTailsAsWarnings():
            res = write_report(run_dirs, out, figures, pairs)
    except (RecordError, ValueError, KeyError, OSError) as e:
        fail(e)
    console.print(f"report: {res.html_path} ({res.n_models} model(s), {res.n_tasks} task(s), {res.n_figures} "
                  f"figures)\nsummary: {res.md_path}")
    if figures is not None:
        console.print(f"figures and tables: {figures} ({len(res.figure_files)} files: PDF, SVG, 300-dpi PNG and CSV "
                      "per figure; CSV and LaTeX per table)")
