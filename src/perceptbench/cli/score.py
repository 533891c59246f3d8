"""``perceptbench score``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from .errors import TornTailsAsWarnings, console, fail, os_error_line
from .options import FAMILY_HELP, PARSER_HELP, check_parser, families_option
from .out_checks import check_out
from .tables import ALL_MODELS_HELP, print_scores, print_signal_table

PAIRS_HELP = ("Model pairs of the per-pair rows (VSI cross-model rho and joint error structure): auto (every "
              "pair up to 20 models of a task and condition, the ranking neighbours above; docs/metrics.md), all, "
              "neighbours.")


def score(
    records: List[Path] = typer.Argument(..., metavar="RUN", help="Run directories or records.jsonl files; several are merged by "
                                                   "trial id first (see `perceptbench merge`)."),
    out: Optional[Path] = typer.Option(None, help="scores.csv path (default: beside the records; required for "
                                                  "several runs)."),
    seed: Optional[int] = typer.Option(None, help="Bootstrap seed (default: the records' seed)."),
    parser: str = typer.Option("default", help=PARSER_HELP + " Re-parses every raw output; non-default modes "
                               "write scores.MODE.csv."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Print every score row (per-observer, per-difficulty, "
                                                            "notes), not only the headline metrics."),
    all_models: bool = typer.Option(False, "--all-models", help=ALL_MODELS_HELP),
    family: Optional[List[str]] = typer.Option(None, "--family", help=FAMILY_HELP),
    pairs: str = typer.Option("auto", "--pairs", help=PAIRS_HELP),
    across_seeds: bool = typer.Option(
        False, "--across-seeds",
        help="The runs differ only in their seed: score each on its own (records never merged) and write, per "
             "task, respondent and metric, the mean over the seeds, the SD, min and max and each seed's value to "
             "--out (default seeds_summary.csv in the first run directory). Runs that differ in tasks, settings or "
             "models are refused."),
) -> None:
    """Recompute scores.csv from trial records alone (no torch).

    --across-seeds: a summary over runs of different seeds instead (seeds_summary.csv)."""
    if across_seeds:
        _across_seeds(records, out)
        return
    from ..api import score as score_runs
    from ..core.rundir import RunDir
    from ..records import RecordError
    from ..runs import records_path
    from ..scorers.pairs import PAIR_MODES

    check_parser(parser)
    if pairs not in PAIR_MODES:
        fail(ValueError(f"--pairs {pairs!r}: expected one of {', '.join(PAIR_MODES)}"))
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
            rows = score_runs(files, csv_path, seed=seed, parser=parser, families=families, pairs=pairs)
    except (RecordError, ValueError, KeyError) as e:
        fail(e)
    except OSError as e:  # a read-only run directory, a full disk
        fail(os_error_line(e, csv_path) if e.errno is not None else e)
    print_scores(rows, all_rows, csv_path, all_models)
    print_signal_table(rows, all_models)
    console.print(f"scores: {csv_path}")


def _across_seeds(records: List[Path], out: Optional[Path]) -> None:
    """``score --across-seeds``: :func:`perceptbench.seeds.score_seed_runs`, the summary CSV and
    the headline metrics over seeds in the terminal."""
    from ..core.rundir import RunDir
    from ..records import RecordError
    from ..runs import records_path
    from ..seeds import SEEDS_SUMMARY_CSV, score_seed_runs, seed_summary, write_seeds_summary
    from .tables import print_seed_summary

    if out is not None:
        check_out(out, "file")
    try:
        first = records_path(records[0])
        with TornTailsAsWarnings():
            by_seed = score_seed_runs(records)
        rows = seed_summary(by_seed)
        path = out or RunDir.beside(first).root / SEEDS_SUMMARY_CSV
        write_seeds_summary(rows, list(by_seed), path)
    except (RecordError, ValueError, KeyError) as e:
        fail(e)
    except OSError as e:
        fail(os_error_line(e, out) if e.errno is not None and out is not None else e)
    print_seed_summary(rows, by_seed)
    console.print(f"seeds summary ({len(by_seed)} seeds: {', '.join(map(str, by_seed))}): {path}", highlight=False)
