"""The ``perceptbench`` command line.

Light commands (``tasks``, ``models``, ``score``, ``sources``, ``validate``) import no
torch; only ``run`` loads model back-ends, and only for models it needs."""

from __future__ import annotations

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
console = Console(width=None if sys.stdout.isatty() else 150)

HEADLINE = {"accuracy", "B", "kappa_aggregate", "kappa_pairwise", "position_floor", "capacity_k", "replicates",
            "capacity_in_band_prob", "null_rate", "n_ambiguous",
            "ceiling_kappa_pairwise_mean@test", "ceiling_kappa_loo_mean@test", "observer_accuracy_mean@test",
            "observer_B_mean@test", "ceiling_kappa_pairwise_mean@all", "ceiling_kappa_loo_mean@all",
            "observer_accuracy_mean@all", "n_differ_min", "n_differ_max", "exact_match", "mean_f1",
            "exact_match@nulls_as_empty", "retrieval_top1", "retrieval_top3", "retrieval_chance_top1",
            "retrieval_chance_top3", "skipped", "exact_match[difficulty=easy]", "exact_match[difficulty=medium]",
            "exact_match[difficulty=hard]"}


def _print_scores(rows, all_rows: bool = False) -> None:
    t = Table(title="scores (95% bootstrap CI)")
    cols = ("task", "model", "metric", "value", "CI", "n", "null") + (("note",) if all_rows else ())
    for c in cols:
        t.add_column(c, overflow="fold")
    shown = 0
    for r in rows:
        if not all_rows and r.metric not in HEADLINE:
            continue
        if not all_rows and r.model.startswith("human:") and r.model not in ("human:panel", "human:kernels"):
            continue
        shown += 1
        ci = "" if r.ci_low is None else f"[{r.ci_low:.3f}, {r.ci_high:.3f}]"
        val = f"{r.value:.0f}" if float(r.value).is_integer() and (r.metric.startswith("n_") or
                                                                    r.metric in ("capacity_k", "replicates")) \
            else f"{r.value:.3f}"
        cells = [r.task_id, r.model, r.metric, val, ci, str(r.n), str(r.n_null or 0)] + ([r.note] if all_rows else [])
        t.add_row(*(escape(c) for c in cells))
    console.print(t)
    if shown < len(rows):
        console.print(f"{len(rows) - shown} more rows in scores.csv (print them with --all-rows); "
                      "metric definitions: docs/metrics.md")


def _print_signal_table(rows) -> None:
    """The VSI signal table (seed 002 §4): per (benchmark x model) cell, the AUROC of each
    error signal, the winner and its paired-bootstrap margin over the runner-up."""
    from .metrics.vsi_analysis import SIGNALS, signal_table_from_rows

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
        au = [f"{r['auroc'][k]:.3f}" if k in r["auroc"] else "-" for k in SIGNALS]
        if r["runner_up"]:
            margin = f"+{r['margin']:.3f} over {r['runner_up']} [{r['low']:.3f}, {r['high']:.3f}]"
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
    batch_size: int = typer.Option(32, help="Images per forward pass / requests per batch."),
    progress: bool = typer.Option(True, help="Show a progress bar."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Print every score row, not only headline metrics."),
) -> None:
    """Run tasks x models, write records.jsonl, then score into scores.csv."""
    from .models.base import ModelLoadError
    from .records import RecordError
    from .runner import RunConfig, run as do_run
    from .scoring import score_file
    from .sources import SourceError
    from .tasks.registry import DEFAULT_BATTERY

    cfg = RunConfig(out=out, tasks=task or DEFAULT_BATTERY, models=model or ("efficientnet-lite0",),
                    seed=seed, batch_size=batch_size)
    try:
        summary = do_run(cfg, progress=progress, console=console)
        rows = score_file(out / "records.jsonl")
    except (ValueError, KeyError, ModelLoadError, SourceError, RecordError, RuntimeError, OSError,
            ImportError) as e:
        _fail(e)
    console.print(f"{summary.run_id}: wrote {summary.written} records ({summary.written - summary.human_written} "
                  f"model trials, {summary.human_written} human), skipped {summary.skipped} finished trials")
    if summary.cache_requests:
        console.print(f"response cache: {summary.cache_hits} of {summary.cache_requests} VLM answers came from the "
                      "cache (no model call)")
    _print_scores(rows, all_rows)
    _print_signal_table(rows)
    console.print(f"records: {out / 'records.jsonl'}\nscores:  {out / 'scores.csv'} (+ scores.json)")


@app.command()
def score(
    records: Path = typer.Argument(..., help="records.jsonl"),
    out: Optional[Path] = typer.Option(None, help="scores.csv path (default: beside the records)."),
    seed: Optional[int] = typer.Option(None, help="Bootstrap seed (default: the records' seed)."),
    parser: str = typer.Option("default", help="default: first option named counts; strict: ambiguous answers are null."),
    all_rows: bool = typer.Option(False, "--all-rows"),
    family: Optional[List[str]] = typer.Option(None, "--family",
                                               help="MODEL=FAMILY (repeatable): model families for the VSI "
                                                    "same- vs cross-family agreement means."),
) -> None:
    """Recompute scores.csv from trial records alone (imports no torch)."""
    from .records import RecordError, has_torn_tail
    from .scoring import score_file

    if records.exists() and has_torn_tail(records):
        console.print(f"[yellow]warning:[/yellow] {records}: the last line is a torn write (crash); it is "
                      "not a complete record and is left out. A rerun of `perceptbench run` removes it.")
    if out is None and parser != "default":
        out = records.with_name(f"scores.{parser}.csv")  # never overwrite the default table silently
    families = {}
    for f in family or ():
        m, sep, fam = f.partition("=")
        if not sep or not m or not fam:
            _fail(f"--family {f!r}: expected MODEL=FAMILY")
        families[m] = fam
    try:
        rows = score_file(records, out, seed, parser, families or None)
    except (RecordError, ValueError, KeyError) as e:
        _fail(e)
    _print_scores(rows, all_rows)
    _print_signal_table(rows)
    console.print(f"scores: {out or records.with_name('scores.csv')}")


@app.command()
def validate(records: Path = typer.Argument(..., help="records.jsonl")) -> None:
    """Validate a records file against the trial-record schema, field for field."""
    from .records import validate_file

    if not records.exists():
        _fail(f"{records}: no such records file")
    n_ok, errors = validate_file(records)
    for e in errors:
        console.print(f"[red]{e}[/red]", highlight=False)
    console.print(f"{records}: {n_ok} valid records, {len(errors)} problem(s)")
    if errors:
        raise typer.Exit(2)


@app.command()
def render(
    task: str = typer.Argument(..., help="Task id, e.g. salbench.visual_referring.syn@n=30"),
    out: Path = typer.Option(Path("stimuli"), help="Folder for the PNGs."),
    limit: int = typer.Option(12, help="How many test stimuli to render."),
    seed: int = typer.Option(0),
) -> None:
    """Write the human-facing images of a task's test stimuli as PNG (what a VLM is shown)."""
    import json

    from .seeding import image_sha256
    from .sources import SourceError
    from .tasks import get_task

    try:
        t = get_task(task)
        stimuli = [s for s in t.stimuli(seed) if s.split == "test"][:limit]
    except (KeyError, ValueError, SourceError) as e:
        _fail(e)
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
def tasks() -> None:
    """List the tasks, their settings and human references."""
    from .tasks.registry import DEFAULT_BATTERY, NOT_RUNNABLE, list_tasks

    t = Table(title="tasks")
    for c in ("task_id", "principle/track", "response", "encoder readout", "settings (default)", "human reference",
              "default run", "description"):
        t.add_column(c, overflow="fold")
    for cls in list_tasks():
        settings = ", ".join(f"{k}={v} ({'|'.join(cls.allowed.get(k, ['any']))})" for k, v in cls.defaults.items())
        t.add_row(cls.base_id, f"{cls.principle}/{cls.track}", cls.response_space, cls.encoder_readout,
                  settings or "-", cls().human_ref_id, "yes" if cls.base_id in DEFAULT_BATTERY else "",
                  cls.description)
    for tid, why in NOT_RUNNABLE.items():
        t.add_row(tid, "", "", "", "", "", "not runnable", why)
    console.print(t)
    console.print("Variants: BASE@key=value[,key=value], e.g. similarity.chart.mark_color@kernel=l5")


@app.command()
def models() -> None:
    """List the model adapters and how to name a model on the command line."""
    from .models.registry import MODEL_KINDS

    t = Table(title="models: --model [SHORT=]SPEC")
    for c in ("syntax", "kind", "what", "example"):
        t.add_column(c, overflow="fold")
    for k in MODEL_KINDS:
        t.add_row(k.syntax, k.kind, k.description, k.example)
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
        t.add_row(s.id, str(len(s.files)), f"{sum(f.size for f in s.files) / 1e6:.1f}", s.license, s.citation)
    console.print(t)


@sources_app.command("fetch")
def sources_fetch(source: Optional[List[str]] = typer.Argument(None)) -> None:
    """Download (or verify in the mirror) every file of the given sources (default: all)."""
    from .sources import SOURCES, SourceError, fetch_source, get_source

    import os

    from .sources.fetch import MIRROR_ENV, cache_dir

    where = f"in the mirror {os.environ[MIRROR_ENV]} (nothing copied)" if os.environ.get(MIRROR_ENV) \
        else f"in the cache {cache_dir()}"
    try:
        for sid in source or list(SOURCES):
            paths = fetch_source(get_source(sid))
            console.print(f"{sid}: {len(paths)} files present and verified {where}")
    except (SourceError, KeyError) as e:
        _fail(e)


@sources_app.command("verify")
def sources_verify(source: Optional[List[str]] = typer.Argument(None)) -> None:
    """Verify sha256 of every file already present (mirror or cache); downloads nothing."""
    from .sources import SOURCES, SourceError, get_source, resolve

    import os

    from .sources.fetch import MIRROR_ENV, ChecksumError, cache_dir

    where = f"mirror {os.environ[MIRROR_ENV]}" if os.environ.get(MIRROR_ENV) else f"cache {cache_dir()}"
    bad = 0
    for sid in source or list(SOURCES):
        files = get_source(sid).files
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
