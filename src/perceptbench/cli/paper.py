"""``perceptbench paper``: a seed paper's published numbers beside a run's (imports no torch)."""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from .errors import console, fail

FORMATS = ("table", "csv", "json")


def paper(
    seed: str = typer.Argument(..., metavar="PAPER", help="The paper: seed000, seed001, seed002 (or 000/0, ...), geirhos2019, or the "
                                         "path of a published-number .csv of the same format."),
    run: Path = typer.Argument(..., metavar="RUN", help="A run directory (or its records.jsonl)."),
    fmt: str = typer.Option("table", "--format", help="table (terminal), csv or json (one object per published "
                                                      "number, for scripts; written to stdout)."),
    every: bool = typer.Option(False, "--all", help="table: list every number the run cannot cover, one line each, "
                                                    "instead of grouped by reason."),
) -> None:
    """A seed paper's published numbers beside the run's (no torch).

    Every number the paper publishes beside the run's value and the difference (run minus
    paper), and what the run cannot cover and why (task not run, model not in run, metric not
    computed, different setting or population).  The published numbers are data with their source
    (perceptbench/published/*.csv); no score uses them."""
    from ..records import RecordError
    from ..reports.paper import compare_run

    if fmt not in FORMATS:
        fail(f"--format {fmt!r}: one of {', '.join(FORMATS)}")
    if not run.exists():
        fail(f"{run}: no such run directory")
    try:
        result = compare_run(seed, run)
    except (ValueError, RecordError) as e:
        fail(e)
    comparisons = result.comparisons
    if fmt == "json":
        sys.stdout.write(json.dumps([_clean(c.as_dict()) for c in comparisons], indent=1) + "\n")
    elif fmt == "csv":
        buf = io.StringIO()
        rows = [c.as_dict() for c in comparisons]
        w = csv.DictWriter(buf, list(rows[0]) if rows else ["paper"], lineterminator="\n")
        w.writeheader()
        w.writerows({k: ("" if v is None else v) for k, v in r.items()} for r in rows)
        sys.stdout.write(buf.getvalue())
    else:
        _print_table(seed, run, result, every)


def _clean(d: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in d.items()}


def _num(x) -> str:
    if x is None or not math.isfinite(x):
        return ""
    if float(x).is_integer() and abs(x) >= 1:
        return f"{x:.0f}"
    return f"{x:.3f}"


def _print_table(seed: str, run: Path, result, every: bool) -> None:
    from collections import Counter

    from ..reports.paper import STATUSES, respondent_text, uncovered_groups
    from ..tasks.registry import task_label

    comparisons = result.comparisons
    paper_id = comparisons[0].published.seed if comparisons else seed
    counts = Counter(c.status for c in comparisons)
    console.print(f"{escape(paper_id)}: {len(comparisons)} published numbers vs run {escape(str(run))}: "
                  + ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s]), highlight=False)
    console.print(f"the run's tasks: {escape(', '.join(result.run_tasks) or 'none')}; its models: "
                  f"{escape(', '.join(result.run_models) or 'none')}", highlight=False)
    covered = [c for c in comparisons if c.covered]
    if covered:
        console.print("published numbers the run covers, one table per task (difference = run - paper; paper "
                      "values in perceptbench's unit)", highlight=False)
        by_task: dict[str, list] = {}
        for c in covered:
            by_task.setdefault(c.run_task, []).append(c)
        for task_id, cs in by_task.items():
            # the task id as the table's title, never folded inside a narrow column
            t = Table(title=escape(task_label(task_id)), title_justify="left")
            for col in ("section", "respondent (paper -> run)", "metric", "paper", "run [95% CI]", "difference",
                        "status", "note"):
                t.add_column(col, overflow="fold", no_wrap=col in ("paper", "difference"))
            for c in cs:
                p = c.published
                ci = f" [{_num(c.run_ci[0])}, {_num(c.run_ci[1])}]" if c.run_ci[0] is not None else ""
                t.add_row(*(escape(x) for x in (
                    p.section, respondent_text(c), p.metric, _num(p.scaled),
                    _num(c.run_value) + ci, _num(c.difference), c.status,
                    "; ".join(x for x in (c.reason, p.note) if x))))
            console.print(t)
    else:
        console.print("the run covers none of them", highlight=False)
    rest = [c for c in comparisons if not c.covered]
    if not rest:
        return
    t = Table(title="not covered by this run, and why")
    if every:
        for col in ("section", "task", "paper model", "metric", "paper", "status", "why"):
            t.add_column(col, overflow="fold")
        for c in rest:
            p = c.published
            t.add_row(*(escape(x) for x in (p.section, p.task_id, p.model, p.metric, _num(p.scaled), c.status,
                                           c.reason)))
    else:
        for col in ("status", "what", "numbers", "sections"):
            t.add_column(col, overflow="fold")
        for status, what, n, sections in uncovered_groups(rest):
            t.add_row(escape(status), escape(what), str(n), escape(sections))
    console.print(t)
    if not every:
        console.print("--all lists each of them; --format csv|json gives every number with its status",
                      highlight=False)
