"""The ``perceptbench`` command line.

Light commands (``tasks``, ``models``, ``score``, ``sources``, ``validate``, ``report``) import no
torch; only ``run`` loads model back-ends, and only for models it needs."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Do vision models see the way people do? Run the battery, score trial records.")
sources_app = typer.Typer(no_args_is_help=True, help="Human-data sources: list, fetch, verify.")
app.add_typer(sources_app, name="sources")
console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 150)

def _print_scores(rows, all_rows: bool = False, csv_path: Optional[Path] = None) -> None:
    if not all_rows:
        _print_headline(rows, csv_path)
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


def _print_headline(rows, csv_path: Optional[Path] = None) -> None:
    """One table per task: each model's value beside its floor/chance and human ceiling,
    one line per metric (the same rows as the report's human-likeness card:
    perceptbench.reports.headline)."""
    from .reports.headline import fmt, headline_rows, value_text

    by_task: dict[str, list] = {}
    for h in headline_rows(rows):
        by_task.setdefault(h.task_id, []).append(h)
    for task_id, heads in by_task.items():
        t = Table(title=f"{escape(task_id)}: value [95% bootstrap CI] beside its references", title_justify="left")
        for c in ("model", "metric", "value [CI]", "floor", "ceiling", "v/ceil", "n (null)", "flags"):
            t.add_column(c, overflow="fold", no_wrap=c in ("value [CI]", "metric", "v/ceil", "n (null)"))
        refs: dict[str, str] = {}
        for h in heads:
            bad = any(f.startswith(("≤", "small n", "nulls", "undefined", "skipped")) for f in h.flags)
            ceil = "-" if h.ceiling is None else fmt(h.ceiling) + (
                f" [{fmt(h.ceiling_ci[0])}, {fmt(h.ceiling_ci[1])}]" if h.ceiling_ci else "")
            ratio = fmt(h.ratio, 2)
            flags = "; ".join(h.flags + ((h.extra,) if h.extra else ()))
            cells = [h.model, h.metric, value_text(h), fmt(h.floor), ceil, ratio,
                     f"{h.n if h.n is not None else '-'} ({h.n_null or 0})", flags]
            t.add_row(*(escape(c) for c in cells), style="yellow" if bad else None)
            ref = "; ".join(x for x in (f"floor = {h.floor_label}" if h.floor_label else "",
                                        f"ceiling = {h.ceiling_label}" if h.ceiling_label else "") if x)
            if ref:
                refs[h.metric] = ref
        console.print(t)
        for metric, ref in refs.items():
            console.print(f"  {escape(metric)}: {escape(ref)}", highlight=False)
    console.print(f"{len(rows)} score rows in {csv_path or 'scores.csv'} (print them all with --all-rows); "
                  "metric definitions: docs/metrics.md")


_PARSER_HELP = ("Answer parser mode: default (reasoning blocks stripped, the last answer marker stands, "
                "first option named counts); strict (as default, ambiguous answers are null); seed (the seed "
                "paper's literal rule over the raw output).")


def _check_parser(mode: str) -> None:
    from .scoring import PARSER_MODES

    if mode not in PARSER_MODES:
        _fail(f"--parser {mode!r}: must be one of {', '.join(PARSER_MODES)}")


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
    from .reports.headline import fmt

    return fmt(float(value))


def format_ci(low, high) -> str:
    """``[low, high]`` with 3 decimals; empty when there is no interval or it is undefined
    (never ``[nan, nan]``)."""
    if not (_finite(low) and _finite(high)):
        return ""
    from .reports.headline import fmt

    return f"[{fmt(float(low))}, {fmt(float(high))}]"


REPORT_MARKER = '<meta name="generator" content="perceptbench report">'
"""Written into the head of every HTML report (:mod:`perceptbench.reports`); ``report --out``
overwrites an existing file only when it carries this line."""


def _is_our_report(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return REPORT_MARKER.encode() in f.read(4096)
    except OSError:
        return False


def _is_our_scores(path: Path) -> bool:
    """True when ``path`` is a scores table `score` wrote: ``.csv`` whose first line is the
    ScoreRow header, or ``.json`` holding a list of rows with ``task_id`` (or an empty list)."""
    from .core.rows import ScoreRow

    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    if path.suffix.lower() == ".json":
        body = head.lstrip()
        return body.startswith("[") and (body[1:].lstrip().startswith("]") or '{"task_id"' in body)
    return head.splitlines()[:1] == [",".join(ScoreRow.CSV_COLUMNS)]


def _is_our_parquet(path: Path, columns: tuple[str, ...]) -> bool:
    """True when ``path`` is a parquet file whose schema holds ``columns`` (what `export` writes)."""
    try:
        import pyarrow.parquet as pq

        return set(columns) <= set(pq.read_schema(path).names)
    except Exception:  # not parquet, unreadable: not ours
        return False


def _refuse_foreign(path: Path, ours: bool, what: str) -> None:
    if path.exists() and (path.is_dir() or not ours):
        _fail(f"--out: {path} exists and is not a perceptbench {what}; refusing to overwrite it "
              "(give another --out)")


def _check_out(out: Path, must_be: str) -> None:
    """One-line error unless ``--out`` can be what the command writes: ``dir`` (any directory),
    ``run`` (a new directory, an empty one, or a run directory: one holding run.json or
    records.jsonl), ``file`` (the scores CSV file: new, or a scores table `score` wrote, and the
    same for the ``.json`` beside it), ``export`` (a directory whose records.parquet /
    scores.parquet, if present, are exports) or ``report`` (a new ``.html`` file, or an HTML
    report this tool wrote before)."""
    if must_be in ("dir", "run", "export") and out.exists() and not out.is_dir():
        _fail(f"--out {out} is a file; --out must be a directory (a new one, or one this command wrote before)")
    if must_be == "run":
        from .runs import foreign_out_dir

        try:
            why = foreign_out_dir(out)
        except OSError as e:
            why = f"{out}: cannot list the directory ({e})"
        if why:
            _fail(f"--out {why}")
    if must_be == "file":
        if out.is_dir():
            _fail(f"--out {out} is a directory; --out must be the path of the scores CSV file "
                  f"(e.g. {out / 'scores.csv'})")
        for p in (out, out.with_suffix(".json")):  # write_scores writes both
            _refuse_foreign(p, _is_our_scores(p), f"scores table ({p.suffix.lstrip('.')})")
    if must_be == "export" and out.is_dir():
        _refuse_foreign(out / "records.parquet", _is_our_parquet(out / "records.parquet", ("trial_id", "task_id")),
                        "records.parquet export")
        _refuse_foreign(out / "scores.parquet", _is_our_parquet(out / "scores.parquet", ("task_id", "metric", "value")),
                        "scores.parquet export")
    if must_be == "report":
        if out.is_dir():
            _fail(f"--out {out} is a directory; --out must be the path of the report's HTML file "
                  f"(e.g. {out / 'report.html'})")
        if out.suffix.lower() not in (".html", ".htm"):
            _fail(f"--out {out}: the report is an HTML page; --out must end in .html "
                  f"(e.g. {out.with_suffix('.html')})")
        if out.exists() and not _is_our_report(out):
            _fail(f"--out {out} exists and is not a perceptbench report; refusing to overwrite it "
                  "(give a new .html path, or the path of a report this command wrote before)")
        md = out.with_suffix(".md")
        if md.exists() and not md.read_text(encoding="utf-8", errors="replace").startswith("# perceptbench report"):
            _fail(f"--out {out}: the Markdown summary would overwrite {md}, which is not a perceptbench "
                  "report summary; give another --out")
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        _fail(f"--out {out}: {parent} is a file, so nothing can be written below it")


def _count_records(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _print_signal_table(rows) -> None:
    """The VSI signal table (seed 002 §4): per (benchmark x model) cell, the AUROC of each
    error signal, the winner and its paired-bootstrap margin over the runner-up."""
    from .metrics.vsi_analysis import SIGNALS, signal_table_from_rows
    from .reports.headline import fmt

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


def _fail(msg) -> None:
    if isinstance(msg, KeyError) and msg.args:
        msg = msg.args[0]
    console.print(f"[red]error:[/red] {escape(str(msg))}", highlight=False)
    raise typer.Exit(2)


@app.command()
def run(
    out: Path = typer.Option(Path("runs/default"), help="Run directory (records.jsonl, scores.csv)."),
    task: Optional[List[str]] = typer.Option(None, "--task", help="Task id (repeatable). Default: the Gestalt battery."),
    model: Optional[List[str]] = typer.Option(None, "--model", help="[SHORT=]SPEC (repeatable). Default: efficientnet-lite0."),
    seed: int = typer.Option(0, help="Seed for splits, shuffles, stimuli and bootstraps."),
    batch_size: Optional[int] = typer.Option(None, help="Images per encoder forward pass (default 8) / "
                                                         "requests per VLM batch (default 32)."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Print every score row, not only headline metrics."),
    parser: str = typer.Option("default", help=_PARSER_HELP + " Scores under another mode go to scores.MODE.csv."),
    stimulus: Optional[List[str]] = typer.Option(None, "--stimulus",
                                                 help="Run only this test stimulus id (repeatable): debug one trial."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the VLM response cache."),
    refresh_cache: bool = typer.Option(False, "--refresh-cache",
                                       help="Ask the model again for every answer and overwrite the cache."),
    allow_mixed: bool = typer.Option(False, "--allow-mixed",
                                     help="Resume although finished trials were written under another prompt, "
                                          "package version or setting; recorded in run.json and the records."),
    condition: Optional[List[str]] = typer.Option(None, "--condition", help="How each model is asked (repeatable; "
                                                  "each is its own respondent): image (default: the task as designed) "
                                                  "or a registered condition, e.g. image_withheld (no image)."),
    executor: str = typer.Option("local", "--executor", help="local (this process) or ray (shards on a Ray "
                                                             "cluster; pip install \"perceptbench\\[ray]\")."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Ray cluster address (ray://HOST:10001 "
                                                                          "or HOST:6379); default: a local cluster."),
    gpus_per_model: float = typer.Option(0, "--gpus-per-model", help="GPUs each Ray worker asks for (--executor ray)."),
    ray_workers: Optional[int] = typer.Option(None, "--ray-workers", help="Ray workers per model (default: the "
                                                                         "cluster's CPUs, or GPUs / --gpus-per-model)."),
    chunk_size: int = typer.Option(0, "--chunk-size", help="Test stimuli per Ray shard (--executor ray); 0: one "
                                                            "shard per task and model (records identical to local)."),
) -> None:
    """Run tasks x models; write records.jsonl and scores.csv."""
    from .models.base import ModelLoadError
    from .records import RecordError
    from .runner import RunConfig, run as do_run
    from .scoring import score_file
    from .sources import SourceError
    from .tasks.registry import DEFAULT_BATTERY

    _check_parser(parser)
    if no_cache and refresh_cache:
        _fail("--no-cache and --refresh-cache exclude each other")
    _check_out(out, "run")
    cfg = RunConfig(out=out, tasks=task or DEFAULT_BATTERY, models=model or ("efficientnet-lite0",),
                    seed=seed, batch_size=batch_size, stimuli=tuple(stimulus or ()),
                    cache_mode="off" if no_cache else "refresh" if refresh_cache else "use", allow_mixed=allow_mixed,
                    **({"conditions": tuple(condition)} if condition else {}))
    records_file = out / "records.jsonl"
    before = _count_records(records_file)
    import signal

    class _Terminated(KeyboardInterrupt):
        """SIGTERM (kill, a scheduler's stop): handled as Ctrl-C, exit 143."""

    def _on_term(signum, frame):
        raise _Terminated()

    try:
        signal.signal(signal.SIGTERM, _on_term)
    except ValueError:  # not the main thread (e.g. called from a test runner's worker)
        pass
    try:
        if executor not in ("local", "ray"):
            raise ValueError(f"--executor {executor!r}: not 'local' or 'ray'")
        ray_options = {"address": ray_address, "gpus_per_model": gpus_per_model, "workers": ray_workers,
                       "chunk_size": chunk_size or None} if executor == "ray" else None
        summary = do_run(cfg, progress=progress, console=console, executor=executor, ray_options=ray_options)
        rows = score_file(records_file,
                          None if parser == "default" else out / f"scores.{parser}.csv", parser_mode=parser)
    except KeyboardInterrupt as e:
        after = _count_records(records_file)
        what = "terminated (SIGTERM)" if isinstance(e, _Terminated) else "interrupted"
        console.print(f"{what}: {after - before} records written in this run ({after} in {records_file}); "
                      "every written trial is kept. Rerun the same command to resume where it stopped.",
                      highlight=False)
        raise typer.Exit(143 if isinstance(e, _Terminated) else 130)
    except (ValueError, KeyError, ModelLoadError, SourceError, RecordError, RuntimeError, OSError,
            ImportError) as e:
        _fail(e)
    console.print(f"{summary.run_id}: wrote {summary.written} records ({summary.written - summary.human_written} "
                  f"model trials, {summary.human_written} human), skipped {summary.skipped} finished trials"
                  + (f" ({summary.human_skipped} human records already written)" if summary.human_skipped else ""))
    for d in summary.mixed:
        console.print(f"[yellow]mixed:[/yellow] {escape(d.what)} of {d.n} finished trial(s) of {escape(d.task_id)} "
                      f"({escape(d.model)}) differs; allowed by --allow-mixed and recorded in run.json",
                      highlight=False)
    if summary.cache_requests:
        console.print(f"response cache: {summary.cache_hits} of {summary.cache_requests} VLM answers came from the "
                      "cache (no model call)")
    scores_csv = out / ("scores.csv" if parser == "default" else f"scores.{parser}.csv")
    _print_scores(rows, all_rows, scores_csv)
    _print_signal_table(rows)
    console.print(f"records: {out / 'records.jsonl'}\nscores:  {scores_csv} (+ .json)")
    console.print(f"report:  perceptbench report {out} --out {out / 'report.html'}  (HTML page with the figures)")


@app.command()
def score(
    records: List[Path] = typer.Argument(..., help="Run directories or records.jsonl files; several are merged by "
                                                   "trial id first (see `perceptbench merge`)."),
    out: Optional[Path] = typer.Option(None, help="scores.csv path (default: beside the records; required for "
                                                  "several runs)."),
    seed: Optional[int] = typer.Option(None, help="Bootstrap seed (default: the records' seed)."),
    parser: str = typer.Option("default", help=_PARSER_HELP + " Re-parses every raw output; non-default modes "
                               "write scores.MODE.csv."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Print every score row (per-observer, per-difficulty, "
                                                            "notes), not only the headline metrics."),
    family: Optional[List[str]] = typer.Option(None, "--family",
                                               help="MODEL=FAMILY (repeatable): model families for the VSI "
                                                    "same- vs cross-family agreement means."),
) -> None:
    """Recompute scores.csv from trial records alone (no torch)."""
    from .records import RecordError, has_torn_tail
    from .runs import load_runs, records_path
    from .scoring import score_file, score_records, write_scores

    _check_parser(parser)
    families = {}
    for f in family or ():
        m, sep, fam = f.partition("=")
        if not sep or not m or not fam:
            _fail(f"--family {f!r}: expected MODEL=FAMILY")
        families[m] = fam
    if out is not None:
        _check_out(out, "file")
    try:
        files = [records_path(p) for p in records]
    except RecordError as e:
        _fail(e)
    for f in files:
        if has_torn_tail(f):
            console.print(f"[yellow]warning:[/yellow] {f}: the last line is a torn write (crash); it is "
                          "not a complete record and is left out. A rerun of `perceptbench run` removes it.")
    if len(files) > 1 and out is None:
        _fail("--out is required when scoring several runs: the path of the merged scores CSV file")
    if out is None and parser != "default":
        out = files[0].with_name(f"scores.{parser}.csv")  # never overwrite the default table silently
    try:
        if len(files) == 1:
            rows = score_file(files[0], out, seed, parser, families or None)
        else:
            rows = score_records(load_runs(files), seed, parser, None, families or None)
            write_scores(rows, out)
    except (RecordError, ValueError, KeyError) as e:
        _fail(e)
    csv_path = out or files[0].with_name("scores.csv")
    _print_scores(rows, all_rows, csv_path)
    _print_signal_table(rows)
    console.print(f"scores: {csv_path}")


@app.command()
def merge(
    runs: List[Path] = typer.Argument(..., help="Run directories or records.jsonl files of one seed."),
    out: Path = typer.Option(..., help="New run directory for the merged records.jsonl and run.json."),
) -> None:
    """Merge runs of one seed into a new run directory.

    Identical trials are kept once; conflicting trials are refused. Two records with one trial
    id must agree in every field but run_meta.run_id; records of different seeds are refused.
    Score the result with `perceptbench score OUT`."""
    import json
    import time

    from .core.version import __version__
    from .records import RecordError, RecordStore
    from .runs import load_runs, records_path

    _check_out(out, "dir")
    if out.is_dir() and any(out.iterdir()):
        _fail(f"--out {out} is not empty; --out must be a new (or empty) directory for the merged run")
    try:
        sources = [records_path(p) for p in runs]
        merged = load_runs(sources)
    except RecordError as e:
        _fail(e)
    out.mkdir(parents=True, exist_ok=True)
    seed = merged[0].run_meta.seed
    with RecordStore(out / "records.jsonl") as store:
        store.append(merged)
    tmp = out / "run.json.tmp"
    tmp.write_text(json.dumps({"seed": seed, "package_version": __version__,
                               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                               "merged_from": [str(p.resolve()) for p in sources]}, indent=1))
    tmp.replace(out / "run.json")
    n_in = sum(_count_records(p) for p in sources)
    console.print(f"merged {len(sources)} runs (seed {seed}): {len(merged)} distinct trials from {n_in} records "
                  f"into {out / 'records.jsonl'}; score with: perceptbench score {out}", highlight=False)


@app.command()
def report(
    run_dirs: List[Path] = typer.Argument(..., help="Run directories (records.jsonl [+ scores.json]); several are "
                                                     "merged by trial id."),
    out: Optional[Path] = typer.Option(None, "--out", help="HTML file (default: report.html in the first run "
                                                           "directory); a Markdown summary is written beside it."),
) -> None:
    """Write an HTML report (figures inline) and a Markdown summary.

    One self-contained page from trial records and scores alone (imports no torch, runs no
    model)."""
    from .records import RecordError
    from .reports.html import write_report

    out = out or (run_dirs[0] if run_dirs[0].is_dir() else run_dirs[0].parent) / "report.html"
    _check_out(out, "report")
    try:
        res = write_report(run_dirs, out)
    except (RecordError, ValueError, KeyError, OSError) as e:
        _fail(e)
    console.print(f"report: {res.html_path} ({res.n_models} model(s), {res.n_tasks} task(s), {res.n_figures} "
                  f"figures)\nsummary: {res.md_path}")


@app.command()
def export(
    run_dir: Path = typer.Argument(..., help="Run directory (records.jsonl [+ scores.json])."),
    format: str = typer.Option("parquet", "--format", help="Output format; only parquet."),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder for records.parquet and scores.parquet "
                                                           "(default: the run directory)."),
) -> None:
    """Write a run's records and scores as typed parquet tables.

    For pandas, polars and duckdb."""
    from .records import RecordError
    from .reports.export import export_parquet

    if format != "parquet":
        _fail(f"--format {format!r}: only 'parquet' is supported")
    if not (run_dir / "records.jsonl").exists():
        _fail(f"{run_dir}: not a run directory (no records.jsonl in it)")
    _check_out(out if out is not None else run_dir, "export")
    try:
        rec, sc = export_parquet(run_dir, out)
    except (RecordError, OSError) as e:
        _fail(e)
    console.print(f"records: {rec}\nscores:  {sc or '(no scores.json: run perceptbench score first)'}",
                  highlight=False)


@app.command()
def validate(records: Path = typer.Argument(..., help="records.jsonl")) -> None:
    """Check a records file against the trial-record schema.

    Field for field; an empty file is an error."""
    from .records import check_file

    if not records.exists():
        _fail(f"{records}: no such records file")
    if records.is_dir():
        records = records / "records.jsonl"
        if not records.exists():
            _fail(f"{records.parent}: not a run directory (no records.jsonl in it)")
    n_ok, errors, n_problems = check_file(records)
    for e in errors:
        console.print(f"[red]{escape(e)}[/red]", highlight=False)
    more = f" ({n_problems - len(errors)} more not shown)" if n_problems > len(errors) else ""
    console.print(f"{records}: {n_ok} valid records, {n_problems} problem(s){more}", highlight=False)
    if n_problems:
        raise typer.Exit(2)


@app.command()
def render(
    task: str = typer.Argument(..., help="Task id, e.g. salbench.visual_referring.syn@n=30"),
    out: Optional[Path] = typer.Option(None, help="Folder for the PNGs and index.json (default: a folder per task "
                                                  "and seed under the perceptbench cache, printed at the end)."),
    limit: int = typer.Option(12, help="How many test stimuli to render."),
    seed: int = typer.Option(0, help="The run seed: stimuli, splits and position shuffles are those a `run` with "
                                     "this --seed shows."),
) -> None:
    """Write a task's test stimuli as PNGs (what a VLM is shown)."""
    import json

    from .seeding import image_sha256
    from .sources import SourceError
    from .tasks import get_task

    if out is not None:
        _check_out(out, "dir")
    try:
        t = get_task(task)
        stimuli = [s for s in t.stimuli(seed) if s.split == "test"][:limit]
    except (KeyError, ValueError, SourceError) as e:
        _fail(e)
    if out is None:
        import re

        from .sources.fetch import cache_dir

        out = cache_dir() / "stimuli" / f"{re.sub(r'[^A-Za-z0-9._=@,-]+', '_', t.task_id)}-seed{seed}"
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for s in stimuli:
        img = s.render()
        img.save(out / f"{s.stimulus_id}.png")
        index.append({"stimulus_id": s.stimulus_id, "ground_truth": s.ground_truth,
                      "manipulated_value": s.manipulated_value, "stimulus_sha256": image_sha256(img),
                      **{k: v for k, v in s.meta.items() if isinstance(v, (str, int, float, list))}})
    (out / "index.json").write_text(json.dumps(index, indent=1))
    console.print(f"wrote {len(index)} PNGs and index.json to {out}")


@app.command()
def show(
    run_dir: Path = typer.Argument(..., help="Run directory (holds records.jsonl)."),
    trial_id: Optional[str] = typer.Argument(None, help="trial_id, e.g. 'closure.nat.silhouette|silh_bear1|mymodel|rep0'. "
                                                        "Omit it to list the run's model trial ids."),
) -> None:
    """Print one trial, or list a run's model trial ids.

    With TRIAL_ID: its prompt text, raw output, parse metadata, and the path of its rendered
    stimulus image (written to RUN_DIR/stimuli/ if needed).  Without TRIAL_ID: the model
    trial ids, one per line.  Imports no torch."""
    import json

    from .records import RecordError, read_records
    from .seeding import image_sha256, text_hash
    from .sources import SourceError
    from .tasks import get_task

    path = run_dir / "records.jsonl"
    try:
        recs = read_records(path)
    except RecordError as e:
        _fail(e)
    if trial_id is None:
        ids = [r.trial_id for r in recs if r.model_family != "human"]
        for t in ids:
            console.print(escape(t), soft_wrap=True, highlight=False)
        console.print(f"{len(ids)} model trials in {path} (human records left out); show one with: "
                      f"perceptbench show {run_dir} 'TRIAL_ID'", highlight=False, soft_wrap=True)
        return
    rec = next((r for r in recs if r.trial_id == trial_id), None)
    if rec is None:
        # suggest model trials first (what the listing shows), human records only if nothing else matches
        model_ids = [r.trial_id for r in recs if r.model_family != "human"]
        near = ([t for t in model_ids if trial_id in t] or [r.trial_id for r in recs if trial_id in r.trial_id]
                or model_ids or [r.trial_id for r in recs])
        _fail(f"{path}: no trial {trial_id!r}; e.g. {', '.join(repr(t) for t in near[:4])} ({len(model_ids)} model "
              f"trials; list them with: perceptbench show {run_dir})")
    meta = dict(rec.run_meta.model_extra or {})
    console.print(f"[bold]{escape(rec.trial_id)}[/bold]", highlight=False)
    for k in ("task_id", "stimulus_id", "model", "model_family", "readout", "response", "ground_truth", "correct",
              "prompt_id", "prompt_hash"):
        console.print(f"{k}: {escape(json.dumps(getattr(rec, k), ensure_ascii=False))}", highlight=False)
    console.print(f"model_version: {escape(rec.run_meta.model_version)}  seed: {rec.run_meta.seed}  "
                  f"run_id: {escape(rec.run_meta.run_id)}", highlight=False)
    prompt, images, note = None, [], ""
    try:
        task = get_task(rec.task_id)
        stim = next((s for s in task.stimuli(rec.run_meta.seed) if s.stimulus_id == rec.stimulus_id), None)
        if stim is None:
            note = f"stimulus {rec.stimulus_id} is not in {rec.task_id} at seed {rec.run_meta.seed} any more"
        elif rec.readout == "vlm_prompt":
            imgs, prompt, _ = task.vlm_request(stim, rec.run_meta.seed)
            images = list(imgs)
        else:
            images = [stim.render()]
            if rec.model_family != "human":
                from .readouts.encoder import READOUT_SPECS

                prompt = READOUT_SPECS.get(rec.readout)
    except (KeyError, ValueError, SourceError, OSError) as e:
        note = f"cannot rebuild the stimulus: {e}"
    if prompt is not None:
        same = rec.prompt_hash is None or text_hash(prompt) == rec.prompt_hash
        console.print("prompt" + ("" if same else " [red](re-built now; its hash differs from the record's "
                                                   "prompt_hash: the prompt changed since this trial ran)[/red]")
                      + ":", highlight=False)
        console.print(escape(prompt), highlight=False, soft_wrap=True)
    console.print("raw_output:", highlight=False)
    console.print(escape(str(rec.raw_output)), highlight=False, soft_wrap=True)
    console.print(f"parse: {escape(json.dumps(meta.get('parse'), ensure_ascii=False))}", highlight=False)
    for k in ("skipped", "fewshot_stimulus_ids", "mixed_resume", "stimulus_sha256"):
        if k in meta:
            console.print(f"{k}: {escape(json.dumps(meta[k], ensure_ascii=False))}", highlight=False)
    if images:
        safe = lambda x: "".join(c if c.isalnum() or c in "._-=" else "_" for c in x)  # noqa: E731
        folder = run_dir / "stimuli" / safe(rec.task_id)
        folder.mkdir(parents=True, exist_ok=True)
        for i, img in enumerate(images):
            last = i == len(images) - 1
            p = folder / (f"{safe(rec.stimulus_id)}.png" if last else f"{safe(rec.stimulus_id)}.example{i + 1}.png")
            if not p.exists():
                tmp = p.with_suffix(".tmp.png")
                img.save(tmp)
                tmp.replace(p)
            label = "stimulus image" if last else f"few-shot example {i + 1} image"
            check = ""
            if last and meta.get("stimulus_sha256"):
                check = (" (pixels match the record's stimulus_sha256)" if image_sha256(img) == meta["stimulus_sha256"]
                         else " [red](pixels differ from the record's stimulus_sha256)[/red]")
            console.print(f"{label}: {escape(str(p))}{check}", highlight=False)
    if note:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)


@app.command()
def tasks() -> None:
    """List the tasks, their settings and human references.

    Task ids are never broken across lines, whatever the terminal width: a wide terminal
    gets a table whose id column does not wrap, a narrow one a list with each id on a line
    of its own."""
    from .tasks.registry import DEFAULT_BATTERY, NOT_RUNNABLE, list_tasks

    rows = []
    for cls in list_tasks():
        specs = {k: cls.setting_spec(cls, k) for k in cls.defaults}  # class-level specs, no instance needed
        settings = ", ".join(f"{k}={v} ({specs[k].describe() if specs[k] else 'any'})" for k, v in cls.defaults.items())
        rows.append((cls.base_id, f"{cls.principle}/{cls.track}", cls.response_space, cls.encoder_readout,
                     settings or "-", cls().human_ref_id, "yes" if cls.base_id in DEFAULT_BATTERY else "",
                     cls.description))
    for tid, why in NOT_RUNNABLE.items():
        rows.append((tid, "", "", "", "", "", "not runnable", why))
    cols = ("task_id", "principle/track", "response", "encoder readout", "settings (default)", "human reference",
            "default run", "description")
    id_width = max(len(r[0]) for r in rows)
    if console.width >= id_width + 150:
        t = Table(title="tasks")
        t.add_column(cols[0], no_wrap=True, min_width=id_width)
        for c in cols[1:]:
            t.add_column(c, no_wrap=c == "human reference")  # the others wrap at word boundaries
        for r in rows:
            t.add_row(*(escape(x) for x in r))
        console.print(t)
    else:
        for r in rows:
            console.print(f"[bold]{escape(r[0])}[/bold]", soft_wrap=True)  # never wrapped: copy-pasteable
            for name, value in zip(cols[1:], r[1:]):
                if value:
                    console.print(f"    {name}: {escape(value)}", highlight=False)
    console.print("Variants: BASE@key=value[,key=value], e.g.", highlight=False)
    console.print("similarity.chart.mark_color@kernel=l5", soft_wrap=True, highlight=False)


@app.command()
def models() -> None:
    """List the model adapters and how to name a model."""
    from .models.registry import MODEL_KINDS

    t = Table(title="models: --model [SHORT=]SPEC")
    for c in ("syntax", "kind", "what", "example"):
        t.add_column(c, overflow="fold")
    for k in MODEL_KINDS:
        t.add_row(*(escape(x) for x in (k.syntax, k.kind, k.description, k.example)))  # '[@FILE]' is not markup
    console.print(t)
    console.print("SHORT is the stable name written to records (default: derived from SPEC); "
                  "the exact weights/revision go to run_meta.model_version.")


@sources_app.command("list")
def sources_list() -> None:
    """List the registered human-data releases."""
    from .sources import SOURCES

    t = Table(title="sources")
    for c in ("id", "files", "MB", "license", "citation"):
        t.add_column(c, overflow="fold")
    for s in SOURCES.values():
        files = str(len(s.files)) if s.files or not s.hub_dataset else f"hub:{s.hub_dataset}"
        t.add_row(s.id, files, f"{sum(f.size for f in s.files) / 1e6:.1f}", s.license, s.citation)
    console.print(t)


@sources_app.command("fetch")
def sources_fetch(source: Optional[List[str]] = typer.Argument(None)) -> None:
    """Download (or verify in the mirror) the given sources' files.

    Every file of the named sources; default: all sources."""
    from .sources import SOURCES, SourceError, fetch_source, get_source

    import os

    from .sources.fetch import MIRROR_ENV, cache_dir

    where = f"in the mirror {os.environ[MIRROR_ENV]} (nothing copied)" if os.environ.get(MIRROR_ENV) \
        else f"in the cache {cache_dir()}"
    try:
        for sid in source or list(SOURCES):
            src = get_source(sid)
            if src.hub_dataset and not src.files:
                console.print(f"{sid}: hub dataset {src.hub_dataset}"
                              f"{'@' + src.hub_revision[:7] if src.hub_revision else ''}, read by the `datasets` "
                              "library on first use (pip install 'perceptbench[external]'); nothing to fetch here",
                              markup=False)
                continue
            paths = fetch_source(src)
            console.print(f"{sid}: {len(paths)} files present and verified {where}")
    except (SourceError, KeyError) as e:
        _fail(e)


@sources_app.command("verify")
def sources_verify(source: Optional[List[str]] = typer.Argument(None)) -> None:
    """Check the sha256 of every file present; downloads nothing.

    Files in the mirror (PERCEPTBENCH_MIRROR) or else in the cache."""
    from .sources import SOURCES, SourceError, get_source, resolve

    import os

    from .sources.fetch import MIRROR_ENV, ChecksumError, cache_dir

    mirror = os.environ.get(MIRROR_ENV)
    if mirror and not Path(mirror).is_dir():
        _fail(f"{MIRROR_ENV}={mirror}: the mirror directory does not exist. Point {MIRROR_ENV} at the data "
              f"mirror, or unset it to use the download cache {cache_dir()}.")
    where = f"mirror {mirror}" if mirror else f"cache {cache_dir()}"
    bad = 0
    for sid in source or list(SOURCES):
        files = get_source(sid).files
        if not files and get_source(sid).hub_dataset:
            console.print(f"{sid}: hub dataset {get_source(sid).hub_dataset}, no pinned files to verify")
            continue
        ok = missing = 0
        for sf in files:
            try:
                resolve(sf, download=False)
                ok += 1
            except ChecksumError as e:
                bad += 1
                console.print(f"[red]{e}[/red]", highlight=False)
            except SourceError:
                missing += 1
        bad += missing
        console.print(f"{sid}: {ok}/{len(files)} present and verified in the {where}"
                      + (f"; {missing} missing (run `perceptbench sources fetch {sid}`)" if missing else ""))
    if bad:
        raise typer.Exit(1)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
