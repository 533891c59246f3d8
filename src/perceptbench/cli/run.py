"""``perceptbench run``."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer
from rich.markup import escape

from ..core.progress import PROGRESS_EVERY_S
from .errors import Terminated, console, err_console, fail, os_error_line, signals_as_interrupts
from .options import FAMILY_HELP, PARSER_HELP, check_parser, families_option
from .out_checks import check_out
from .tables import ALL_MODELS_HELP, print_scores, print_signal_table


def run(
    out: Path = typer.Option(Path("runs/default"), help="Run directory (records.jsonl, scores.csv)."),
    task: Optional[List[str]] = typer.Option(None, "--task", help="Task id (repeatable). Default: the Gestalt battery."),
    battery: Optional[str] = typer.Option(None, "--battery", help="A named task set run before any --task: default "
                                          "(the Gestalt battery, what runs with no --task) or full (default + the "
                                          "mark shape/size/bivariate kernels, closure on edges and shape bias on "
                                          "cue conflict, whose images `perceptbench sources fetch "
                                          "geirhos2019-cue-conflict` downloads). `perceptbench tasks` lists each "
                                          "task's battery."),
    model: Optional[List[str]] = typer.Option(None, "--model", help="[SHORT[KEY=VALUE,...]=]SPEC (repeatable; the "
                                              "bracket declares family, objective, params, vision_tower, access, "
                                              "architecture). Default: efficientnet-lite0."),
    roster: Optional[str] = typer.Option(None, "--roster", help="A packaged roster (seed000, seed001, "
                                         "seed001-backbones, seed002; `perceptbench models` lists them) or a roster "
                                         "file (.toml): its models, with their declared metadata, run before any "
                                         "--model."),
    seed: int = typer.Option(0, help="Seed for splits, shuffles, stimuli and bootstraps."),
    batch_size: Optional[int] = typer.Option(None, help="Images per encoder forward pass (default 8) / "
                                                     "requests per VLM batch (default 32)."),
    progress: bool = typer.Option(True, help="Show a progress bar on standard error (plain lines when it is not a terminal)."),
    progress_every: float = typer.Option(PROGRESS_EVERY_S, "--progress-every", min=0.001, metavar="SECONDS",
                                         help="When the output is not a terminal (a log file, a batch job): "
                                              "seconds between two progress lines of a task."),
    all_rows: bool = typer.Option(False, "--all-rows", help="Print every score row, not only headline metrics."),
    all_models: bool = typer.Option(False, "--all-models", help=ALL_MODELS_HELP),
    parser: str = typer.Option("default", help=PARSER_HELP + " Scores under another mode go to scores.MODE.csv."),
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
    family: Optional[List[str]] = typer.Option(None, "--family", help=FAMILY_HELP),
    device: str = typer.Option("cpu", "--device", help="Torch device of local models: cpu, cuda, cuda:1, mps. "
                                                     "Recorded in every record."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Precision of local hf: VLMs: float32 (default), "
                                                            "bfloat16 or float16; image encoders always run in "
                                                            "float32. Recorded in every record."),
    judge: Optional[str] = typer.Option(None, "--judge", help="[SHORT=]SPEC of a judge model (e.g. openai:gpt-4o, "
                                        "openai-compatible:URL#MODEL, hf:DIR) that reads every HallusionBench answer "
                                        "as the benchmark's GPT-4 check does: judgments.jsonl, scored as the "
                                        "hallusionbench.*@judge rows beside the rule-based ones (docs/metrics.md)."),
    attn_implementation: Optional[str] = typer.Option(None, "--attn-implementation",
                                                      help="transformers attention of local hf: VLMs (eager, sdpa, "
                                                           "flash_attention_2, ...); default: the model's own."),
    repetitions: int = typer.Option(1, "--repetitions", help="Answers per stimulus of each local hf: VLM (needs "
                                                           "--temperature above 0), each a trial record; scored by "
                                                           "majority vote (seed 000 D.4). Default 1."),
    temperature: float = typer.Option(0.0, "--temperature", help="Sampling temperature of local hf: VLMs' answers; "
                                                               "0 (default): greedy. Recorded in every record."),
) -> None:
    """Run tasks x models; write records.jsonl and scores.csv."""
    from ..api import RayOptions, RunOptions, run as run_and_score
    from ..core.rundir import RunDir
    from ..models.base import ModelLoadError
    from ..records import RecordError
    from ..sources import SourceError

    check_parser(parser)
    if no_cache and refresh_cache:
        fail("--no-cache and --refresh-cache exclude each other")
    options = RunOptions(tasks=task or None, models=model or None, seed=seed, batch_size=batch_size,
                         stimuli=tuple(stimulus or ()), parser=parser,
                         cache="off" if no_cache else "refresh" if refresh_cache else "use",
                         executor=executor, ray=RayOptions(ray_address, gpus_per_model, ray_workers, chunk_size),
                         allow_mixed=allow_mixed, families=families_option(family),
                         conditions=tuple(condition) if condition else None, device=device, dtype=dtype,
                         attn_implementation=attn_implementation, roster=roster, battery=battery, judge=judge,
                         repetitions=repetitions, temperature=temperature)
    check_out(out, "run")
    rd = RunDir(out)
    before = rd.count_records()

    signals_as_interrupts()
    try:
        # progress, model loading and warnings go to standard error; the summary and tables to stdout
        res = run_and_score(out, options, progress=progress, console=err_console, progress_every=progress_every)
    except KeyboardInterrupt as e:
        after = rd.count_records()
        what = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
        where = f"{after} in {rd.records}" if rd.records.exists() else f"no {rd.records} yet"
        err_console.print(f"{what}: {after - before} records written in this run ({where}); "
                          "every written trial is kept. Rerun the same command to resume where it stopped.",
                          highlight=False, soft_wrap=True)
        raise typer.Exit(143 if isinstance(e, Terminated) else 130)
    except OSError as e:  # a full disk, a read-only folder: the file and what to do (errno set by the OS)
        fail(os_error_line(e, rd.records, resumes=True) if e.errno is not None else e)
    except (ValueError, KeyError, ModelLoadError, SourceError, RecordError, RuntimeError, ImportError) as e:
        fail(e)
    summary, rows = res.summary, res.rows
    n_model = summary.written - summary.human_written - summary.published_written
    published = f", {summary.published_written} published model trials" if summary.published_written else ""
    console.print(f"{summary.run_id}: wrote {summary.written} records ({n_model} model "
                  f"{'trial' if n_model == 1 else 'trials'}, {summary.human_written} human{published}), "
                  f"skipped {summary.skipped} "
                  "finished trials"
                  + (f" ({summary.human_skipped} human records already written)" if summary.human_skipped else ""))
    for d in summary.mixed:
        console.print(f"[yellow]mixed:[/yellow] {escape(d.what)} of {d.n} finished trial(s) of {escape(d.task_id)} "
                      f"({escape(d.model)}) differs; allowed by --allow-mixed and recorded in run.json",
                      highlight=False)
    if summary.cache_requests:
        # requests, not trials: identical questions are asked once, and a confidence follow-up or a
        # VSI distribution is a request of its own
        console.print(f"response cache: {summary.cache_hits} of {summary.cache_requests} distinct VLM requests "
                      "answered from the cache (no model call)")
    # the tasks in the order the run was given them (the report's order), not by id
    print_scores(rows, all_rows, res.scores_csv, all_models,
                 task_order=list(dict.fromkeys(t for t, _ in summary.per_task_model)))
    print_signal_table(rows, all_models)
    console.print(f"records: {rd.records}\nscores:  {res.scores_csv} (+ .json)")
    console.print(f"report:  perceptbench report {out} --out {rd.report_html}  (HTML page with the figures)")
