"""Terminal tables: the headline table, every score row, the VSI signal table, and how a
value and its interval are printed."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.markup import escape
from rich.table import Table

from .errors import console


HEADLINE_FULL_MODELS = 20
"""A task with at most this many models prints its full headline table (every model, every
headline metric); a task with more prints :func:`print_headline`'s summary instead (``score
--all-models``: the full table whatever the count).  20 is where the VSI per-pair rows also stop
comparing every pair (``--pairs auto``)."""

SUMMARY_EXTREMES = 3
"""Models shown at each end (highest and lowest value) of each headline metric in a summary."""

SUMMARY_CEILING_MAX = 10
"""At most this many further models at or above the human ceiling shown per metric in a summary
(their count is always printed)."""

SUMMARY_NAMED = 3
"""A flag carried by at most this many models of a summarised metric names them."""

ALL_MODELS_HELP = (f"Print the full headline table of every task. By default a task with more than "
                   f"{HEADLINE_FULL_MODELS} models prints a summary: per metric the {SUMMARY_EXTREMES} highest and "
                   f"{SUMMARY_EXTREMES} lowest values, the models at or above the human ceiling, and how many models "
                   "carry each flag (docs/report.md); every row is in scores.csv.")


def print_scores(rows, all_rows: bool = False, csv_path: Optional[Path] = None, all_models: bool = False,
                 task_order: Optional[list[str]] = None) -> None:
    """The table printed after ``run``/``score``: the headline tables (:func:`print_headline`;
    ``all_models``: never summarised; tasks in ``task_order``, the order a run was given them,
    others after by id) or, with ``all_rows``, every score row."""
    if not all_rows:
        print_headline(rows, csv_path, max_models=None if all_models else HEADLINE_FULL_MODELS,
                       task_order=task_order)
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


HEADLINE_COLUMNS = ("model", "metric", "value [CI]", "floor", "ceiling", "v/ceil", "n (null)", "flags")


def _headline_table(title: str, first: tuple[str, ...] = ()) -> Table:
    t = Table(title=title, title_justify="left")
    for c in first + HEADLINE_COLUMNS:
        t.add_column(c, overflow="fold", no_wrap=c in ("value [CI]", "metric", "v/ceil", "n (null)"))
    return t


def _add_headline_row(t: Table, h, first: tuple[str, ...] = ()) -> None:
    from ..reports.headline import fmt, value_text

    bad = any(f.startswith(("≤", "small n", "nulls", "undefined", "skipped")) for f in h.flags)
    ceil = "-" if h.ceiling is None else fmt(h.ceiling) + (
        f" [{fmt(h.ceiling_ci[0])}, {fmt(h.ceiling_ci[1])}]" if h.ceiling_ci else "")
    ratio = fmt(h.ratio, 2)
    flags = "; ".join(h.flags + ((h.extra,) if h.extra else ()))
    cells = [*first, h.model, h.metric, value_text(h), fmt(h.floor), ceil, ratio,
             f"{h.n if h.n is not None else '-'} ({h.n_null or 0})", flags]
    t.add_row(*(escape(c) for c in cells), style="yellow" if bad else None)


def print_headline(rows, csv_path: Optional[Path] = None, max_models: Optional[int] = HEADLINE_FULL_MODELS,
                   task_order: Optional[list[str]] = None) -> None:
    """One table per task: each model's value beside its floor/chance and human ceiling,
    one line per metric (the same rows as the report's human-likeness card:
    perceptbench.reports.headline).  A task with more than ``max_models`` models (None: no
    limit) prints a summary instead (:func:`_print_summary`: per metric the
    :data:`SUMMARY_EXTREMES` highest and lowest values, the models at or above the human
    ceiling, and every model counted by flag), so that printing costs the same at 400 models as
    at 20; every row stays in scores.csv.  Tasks come in ``task_order`` (the order ``run`` was
    given them, as in the report: :func:`~perceptbench.reports.headline.given_order_key`), tasks
    not in it after, by id."""
    from ..reports.headline import given_order_key, headline_rows, reference_notes

    by_task: dict[str, list] = {}
    for h in headline_rows(rows):
        by_task.setdefault(h.task_id, []).append(h)
    if task_order:
        rank = given_order_key(task_order)
        by_task = dict(sorted(by_task.items(), key=lambda kv: rank(kv[0])))
    summarised = 0
    for task_id, heads in by_task.items():
        n_models = len({h.model for h in heads})
        if max_models is not None and n_models > max_models:
            _print_summary(task_id, heads, n_models)
            summarised += 1
        else:
            t = _headline_table(f"{escape(task_id)}: value [95% bootstrap CI] beside its references")
            for h in heads:
                _add_headline_row(t, h)
            console.print(t)
        for (_, metric), ref in reference_notes(heads).items():
            console.print(f"  {escape(metric)}: {escape(ref)}", highlight=False)
    if summarised:
        console.print(f"{summarised} of {len(by_task)} tasks have more than {max_models} models: each shows a "
                      "summary (every model's headline rows: --all-models)", highlight=False)
    console.print(f"{len(rows)} score rows in {csv_path or 'scores.csv'} (print them all with --all-rows); "
                  "metric definitions: docs/metrics.md")


#: the flags that put a model beside the human ceiling (perceptbench.reports.headline)
CEILING_FLAGS = ("above ceiling", "at ceiling (CI includes it)")


def flag_kind(flag: str) -> str:
    """A headline flag without its numbers or details, for counting models by flag: the text
    before ``:``, ``=``, ``[`` or ``(``, numbers as N: 'small n=12' -> 'small n', 'nulls 14%:
    all-trials value in [...]' -> 'nulls N%', 'k in the band in only 29% of draws; ...' -> 'k in
    the band in only N% of draws', 'CI reaches chance' unchanged."""
    import re

    head = re.split(r"[:=\[(;]", flag, maxsplit=1)[0].strip() or flag
    return re.sub(r"\d+(\.\d+)?", "N", head)


def _print_summary(task_id: str, heads: list, n_models: int) -> None:
    """The headline of a task with many models: per metric (in the rows' order) the
    :data:`SUMMARY_EXTREMES` models of highest and of lowest value, then up to
    :data:`SUMMARY_CEILING_MAX` more at or above the human ceiling (:data:`CEILING_FLAGS`), each
    a full headline row with a ``shown`` column saying why; under the table one line per metric:
    the models' count, median and range of the values, how many are undefined or at/above the
    ceiling, and every flag with the number of models carrying it (naming them when at most
    :data:`SUMMARY_NAMED` do)."""
    import math
    import statistics

    from ..reports.headline import fmt

    by_metric: dict[str, list] = {}
    for h in heads:
        by_metric.setdefault(h.metric, []).append(h)
    t = _headline_table(f"{escape(task_id)}: {n_models} models, summary: the {SUMMARY_EXTREMES} highest and lowest "
                        "values of each metric and the models at or above the human ceiling "
                        "(value [95% bootstrap CI] beside its references)", ("shown",))
    lines = []
    for metric, hs in by_metric.items():
        ranked = [h for h in hs if metric != "skipped" and isinstance(h.value, (int, float))
                  and math.isfinite(h.value)]
        ranked.sort(key=lambda h: -h.value)  # stable: ties keep the models' order
        k = min(SUMMARY_EXTREMES, len(ranked) // 2)
        shown = [(f"highest #{i + 1}", h) for i, h in enumerate(ranked[:k])]
        shown += [(f"lowest #{k - i}", h)
                  for i, h in enumerate(ranked[len(ranked) - k:])] if k else []
        seen = {id(h) for _, h in shown}
        at_ceiling = [h for h in ranked if any(f in CEILING_FLAGS for f in h.flags)]
        shown += [("at/above ceiling", h) for h in at_ceiling if id(h) not in seen][:SUMMARY_CEILING_MAX]
        for why, h in shown:
            _add_headline_row(t, h, (why,))
        flagged: dict[str, list[str]] = {}  # flag kind -> the models carrying it
        for h in hs:
            for f in dict.fromkeys(flag_kind(f) for f in h.flags):
                flagged.setdefault(f, []).append(h.model)
        vals = [h.value for h in ranked]
        d = 0 if metric == "capacity_k" and all(float(v).is_integer() for v in vals) else 3
        text = f"{len(hs)} models"
        if vals:
            text += f", median {fmt(statistics.median(vals), d)}, range {fmt(min(vals), d)} to {fmt(max(vals), d)}"
        if len(hs) > len(vals) and metric != "skipped":
            text += f"; {len(hs) - len(vals)} undefined"
        if any(h.ceiling is not None for h in hs):
            text += f"; {len(at_ceiling)} at or above the human ceiling"
        if flagged:  # a flag few models carry names them
            text += "; flags: " + ", ".join(f"{f} {len(ms)}" + (f" ({', '.join(ms)})" if len(ms) <= SUMMARY_NAMED else "")
                                            for f, ms in flagged.items())
        lines.append(f"  {escape(metric)}: {escape(text)}")
    console.print(t)
    for line in lines:
        console.print(line, highlight=False)
    console.print(f"  {len(heads)} headline rows of {n_models} models: scores.csv, or all printed with --all-models",
                  highlight=False)


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


def print_signal_table(rows, all_models: bool = False) -> None:
    """The VSI signal table (seed 002 §4): per (benchmark x model) cell, the AUROC of each
    error signal, the winner and its paired-bootstrap margin over the runner-up.  A task with
    more than :data:`HEADLINE_FULL_MODELS` models (unless ``all_models``) is summarised instead:
    one row per (task, sigma) counting the cells each signal wins and those without a winner,
    by reason (:func:`_signal_summary`)."""
    from ..vsi.analysis import SIGNALS, signal_table_from_rows
    from ..reports.headline import fmt

    table = signal_table_from_rows(rows)
    if not table:
        return
    models: dict[str, set] = {}
    for r in table:
        models.setdefault(r["task_id"], set()).add(r["model"])
    many = set() if all_models else {t for t, ms in models.items() if len(ms) > HEADLINE_FULL_MODELS}
    full = [r for r in table if r["task_id"] not in many]
    if full:
        t = Table(title="VSI: which error signal wins per cell (AUROC, error = positive class)",
                  caption="max_prob = -softmax max-probability; vsi = -VSI (region blur where measured, else whole); "
                          "hybrid = mean rank of -VSI region and whole; margin = winner - runner-up, paired bootstrap "
                          "(docs/metrics.md)")
        for c in ("task", "model", "sigma", *SIGNALS, "winner", "margin [95% CI]"):
            t.add_column(c, overflow="fold")
        for r in full:
            au = [fmt(r["auroc"][k]) if k in r["auroc"] else "-" for k in SIGNALS]
            if r["runner_up"]:
                margin = f"{fmt(r['margin'], sign=True)} over {r['runner_up']} [{fmt(r['low'])}, {fmt(r['high'])}]"
            else:
                margin = r["note"] or "-"
            t.add_row(*(escape(str(c)) for c in (r["task_id"], r["model"], r["sigma"], *au, r["winner"] or "-",
                                                 margin)))
        console.print(t)
    if many:
        _signal_summary([r for r in table if r["task_id"] in many], SIGNALS)


def _signal_summary(table: list[dict], signals: tuple[str, ...]) -> None:
    """The signal table of tasks with many models: per (task, sigma) the number of cells
    (models), how many each signal wins (with a margin CI that excludes 0: ``clear``), and the
    cells without a winner counted by reason (the cells' notes, their counts made generic:
    '3 errors < 5' and '1 error < 5' -> 'fewer than 5 errors')."""
    import re

    groups: dict[tuple[str, str], list[dict]] = {}
    for r in table:
        groups.setdefault((r["task_id"], r["sigma"]), []).append(r)
    t = Table(title="VSI: which error signal wins per cell, summary over the models of each task (AUROC, "
                    "error = positive class)",
              caption="wins (clear): cells the signal wins (those whose paired-bootstrap margin CI excludes 0); "
                      "every cell: scores.csv (signal_auroc[...], signal_margin[...]) or --all-models "
                      "(docs/metrics.md)")
    for c in ("task", "sigma", "models", *(f"{s} wins (clear)" for s in signals), "no winner: why"):
        t.add_column(c, overflow="fold")
    for (task_id, sigma), rs in groups.items():
        wins = []
        for s in signals:
            won = [r for r in rs if r["winner"] == s]
            clear = sum(1 for r in won if r["low"] is not None and r["low"] > 0)
            wins.append(f"{len(won)} ({clear})")
        why: dict[str, int] = {}
        for r in rs:
            if not r["winner"]:
                note = re.sub(r"^\d+ (error|correct answer)s? < (\d+)", r"fewer than \2 \1s", r["note"] or "-")
                why[note] = why.get(note, 0) + 1
        t.add_row(*(escape(str(c)) for c in (task_id, sigma, len(rs), *wins,
                                             "; ".join(f"{n}: {w}" for w, n in why.items()) or "-")))
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
