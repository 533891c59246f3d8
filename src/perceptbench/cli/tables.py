"""Terminal tables: the headline table, every score row, the VSI signal table, and how a
value and its interval are printed."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.markup import escape
from rich.table import Table

from .errors import console


def print_scores(rows, all_rows: bool = False, csv_path: Optional[Path] = None) -> None:
    if not all_rows:
        print_headline(rows, csv_path)
        return
    t = Table(title="scores (95% bootstrap CI)")
    for c in ("task", "model", "metric", "value", "CI", "n", "null", "note"):
        t.add_column(c, overflow="fold")
    for r in rows:
        ci = format_ci(r.ci_low, r.ci_high)
        val = format_value(r.metric, r.value)
        cells = [r.task_id, r.model, r.metric, val, ci, str(r.n), str(r.n_null or 0), r.note]
        t.add_row(*(escape(c) for c in cells))
    console.print(t)


def print_headline(rows, csv_path: Optional[Path] = None) -> None:
    """One table per task: each model's value beside its floor/chance and human ceiling,
    one line per metric (the same rows as the report's human-likeness card:
    perceptbench.reports.headline)."""
    from ..reports.headline import fmt, headline_rows, reference_notes, value_text

    by_task: dict[str, list] = {}
    for h in headline_rows(rows):
        by_task.setdefault(h.task_id, []).append(h)
    for task_id, heads in by_task.items():
        t = Table(title=f"{escape(task_id)}: value [95% bootstrap CI] beside its references", title_justify="left")
        for c in ("model", "metric", "value [CI]", "floor", "ceiling", "v/ceil", "n (null)", "flags"):
            t.add_column(c, overflow="fold", no_wrap=c in ("value [CI]", "metric", "v/ceil", "n (null)"))
        for h in heads:
            bad = any(f.startswith(("≤", "small n", "nulls", "undefined", "skipped")) for f in h.flags)
            ceil = "-" if h.ceiling is None else fmt(h.ceiling) + (
                f" [{fmt(h.ceiling_ci[0])}, {fmt(h.ceiling_ci[1])}]" if h.ceiling_ci else "")
            ratio = fmt(h.ratio, 2)
            flags = "; ".join(h.flags + ((h.extra,) if h.extra else ()))
            cells = [h.model, h.metric, value_text(h), fmt(h.floor), ceil, ratio,
                     f"{h.n if h.n is not None else '-'} ({h.n_null or 0})", flags]
            t.add_row(*(escape(c) for c in cells), style="yellow" if bad else None)
        console.print(t)
        for (_, metric), ref in reference_notes(heads).items():
            console.print(f"  {escape(metric)}: {escape(ref)}", highlight=False)
    console.print(f"{len(rows)} score rows in {csv_path or 'scores.csv'} (print them all with --all-rows); "
                  "metric definitions: docs/metrics.md")


def _finite(x) -> bool:
    import math

    return x is not None and math.isfinite(float(x))


def format_value(metric: str, value) -> str:
    """A score value as printed: counts as integers, every other metric with 3 decimals,
    an undefined (NaN) value as ``undefined`` (the reason is in the row's note)."""
    if not _finite(value):
        return "undefined"
    if float(value).is_integer() and (metric.startswith("n_") or metric in ("capacity_k", "replicates", "skipped")):
        return f"{value:.0f}"
    from ..reports.headline import fmt

    return fmt(float(value))


def format_ci(low, high) -> str:
    """``[low, high]`` with 3 decimals; empty when there is no interval or it is undefined
    (never ``[nan, nan]``)."""
    if not (_finite(low) and _finite(high)):
        return ""
    from ..reports.headline import fmt

    return f"[{fmt(float(low))}, {fmt(float(high))}]"


def print_signal_table(rows) -> None:
    """The VSI signal table (seed 002 §4): per (benchmark x model) cell, the AUROC of each
    error signal, the winner and its paired-bootstrap margin over the runner-up."""
    from ..vsi.analysis import SIGNALS, signal_table_from_rows
    from ..reports.headline import fmt

    table = signal_table_from_rows(rows)
    if not table:
        return
    t = Table(title="VSI: which error signal wins per cell (AUROC, error = positive class)",
              caption="max_prob = -softmax max-probability; vsi = -VSI (region blur where measured, else whole); "
                      "hybrid = mean rank of -VSI region and whole; margin = winner - runner-up, paired bootstrap "
                      "(docs/metrics.md)")
    for c in ("task", "model", "sigma", *SIGNALS, "winner", "margin [95% CI]"):
        t.add_column(c, overflow="fold")
    for r in table:
        au = [fmt(r["auroc"][k]) if k in r["auroc"] else "-" for k in SIGNALS]
        if r["runner_up"]:
            margin = f"{fmt(r['margin'], sign=True)} over {r['runner_up']} [{fmt(r['low'])}, {fmt(r['high'])}]"
        else:
            margin = r["note"] or "-"
        t.add_row(*(escape(str(c)) for c in (r["task_id"], r["model"], r["sigma"], *au, r["winner"] or "-", margin)))
    console.print(t)


def print_seed_summary(rows, by_seed) -> None:
    """The headline metrics over seeds (``score --across-seeds``): per task, model and headline
    metric (perceptbench.reports.headline, from the first seed's rows) the mean over the seeds,
    the SD, min-max and each seed's value; every row is in seeds_summary.csv."""
    from ..reports.headline import fmt, headline_rows

    seeds = list(by_seed)
    keys = []
    for rs in by_seed.values():
        for h in headline_rows(rs):
            if (h.task_id, h.model, h.metric) not in keys:
                keys.append((h.task_id, h.model, h.metric))
    by_key = {(r.task_id, r.model, r.metric): r for r in rows}
    t = Table(title=f"headline metrics over {len(seeds)} seeds (mean, SD, min-max, per seed)", title_justify="left")
    for c in ("task", "model", "metric", "mean", "SD", "min-max", *[f"seed {s}" for s in seeds]):
        t.add_column(c, overflow="fold", no_wrap=c not in ("task", "model"))
    for k in keys:
        r = by_key.get(k)
        if r is None:
            continue
        t.add_row(*(escape(x) for x in (r.task_id, r.model, r.metric, fmt(r.mean), fmt(r.sd),
                                        f"{fmt(r.low)}-{fmt(r.high)}",
                                        *[fmt(r.values.get(s)) for s in seeds])))
    console.print(t)
