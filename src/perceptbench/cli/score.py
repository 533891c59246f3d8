"""``perceptbench score``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .errors import TornTailsAsWarnings, console, fail, os_error_line
from .options import FAMILY_HELP, PARSER_HELP, check_parser, families_option
from .out_checks import check_out
from .tables import print_scores, print_signal_table


def score(
    records: List[Path] = typer.Argument(..., help="Run directories or records.jsonl files; several are merged by "
                                                   "trial id first (see `perceptbench merge`)."),
    out: Optional[Path] = typer.Option(None, help="scores.csv path (default: beside the records; required for "
                                                  "several runs)."),
    seed: Optional[int] = typer.Option(None, help="Bootstrap seed (default: the records' seed)."),
    parser: str = typer.Option("default", help=PARSER_HELP + " Re-parses every raw output; non-default modes "
                               "write scores.MODE.csv."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Print every score row (per-observer, per-difficulty, "
                                                            "notes), not only the headline metrics."),
    family: Optional[List[str]] = typer.Option(None, "--family", help=FAMILY_HELP),
) -> None:
    """Recompute scores.csv from trial records alone (no torch)."""
    from ..api import score as score_runs
    from ..core.rundir import RunDir
    from ..records import RecordError
    from ..runs import records_path

    check_parser(parser)
    families = families_option(family)
    if out is not None:
        check_out(out, "file")
    try:
        files = [records_path(p) for p in records]
    except RecordError as e:
        fail(e)
    if len(files) > 1 and out is None:
        fail("--out is required when scoring several runs: the path of the merged scores CSV file")
    csv_path = out or RunDir.beside(files[0]).scores_for(parser)  # never overwrite the default table silently
    try:
        with TornTailsAsWarnings():
            rows = score_runs(files, csv_path, seed=seed, parser=parser, families=families)
    except (RecordError, ValueError, KeyError) as e:
        fail(e)
    except OSError as e:  # a read-only run directory, a full disk
        fail(os_error_line(e, csv_path) if e.errno is not None else e)
    print_scores(rows, all_rows, csv_path)
    print_signal_table(rows)
    console.print(f"scores: {csv_path}")
