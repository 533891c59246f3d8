"""``perceptbench merge``."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from .errors import Terminated, TornTailsAsWarnings, console, err_console, fail, signals_as_interrupts
from .out_checks import check_out


def merge(
    runs: List[Path] = typer.Argument(..., metavar="RUN", help="Run directories or records.jsonl files of one seed."),
    out: Path = typer.Option(..., help="New run directory for the merged records.jsonl and run.json."),
) -> None:
    """Merge runs of one seed into a new run directory.

    Identical trials are kept once; conflicting trials are refused. Two records with one trial
    id must agree in every field but run_meta.run_id (the run that wrote it) and
    run_meta.data_location (where the task's data lay on that machine); records of different
    seeds are refused.
    Score the result with `perceptbench score OUT`.  The runs' declared model metadata
    (run.json ``models``) is merged into OUT's run.json, and their probe features (``features/``,
    which the VSI probe rows read) into OUT's, each (model, task) from the first run that has it.  Atomic: the merged run is written into a
    hidden folder beside OUT and renamed onto it, so an interrupted merge leaves no OUT (and
    no partial records.jsonl) and its rerun starts afresh."""
    import os
    import shutil

    from ..api import declared_models_of
    from ..core.rundir import RunDir
    from ..records import RecordError, RecordStore
    from ..runs import load_runs, merge_features, records_path

    check_out(out, "dir")
    if out.is_dir() and any(out.iterdir()):
        fail(f"--out {out} is not empty; --out must be a new (or empty) directory for the merged run")
    try:
        sources = [records_path(p) for p in runs]
        with TornTailsAsWarnings():
            merged = load_runs(sources)
    except RecordError as e:
        fail(e)
    rd = RunDir(out)
    seed = merged[0].run_meta.seed
    declared = declared_models_of(sources)  # the models' declared metadata goes along
    building = RunDir(out.parent / f".{out.name}.merging-{os.getpid()}")
    signals_as_interrupts()
    try:
        with RecordStore(building.records) as store:
            store.append(merged)
            building.start(seed, merged_from=[str(p.resolve()) for p in sources],  # under the records lock
                           **({"models": declared} if declared else {}))
        n_features, differing = merge_features(sources, building.features)  # the probe rows need them
        os.replace(building.root, out)  # onto a new or empty --out: the whole run or nothing
    except KeyboardInterrupt as e:
        shutil.rmtree(building.root, ignore_errors=True)
        err_console.print(f"{'terminated (SIGTERM)' if isinstance(e, Terminated) else 'interrupted'}: nothing was "
                          f"merged into {out}; rerun the same command", highlight=False, soft_wrap=True)
        raise typer.Exit(143 if isinstance(e, Terminated) else 130)
    except OSError as e:
        shutil.rmtree(building.root, ignore_errors=True)
        fail(f"cannot write the merged run {out}: {e}")
    n_in = sum(p.read_bytes().count(b"\n") for p in sources)
    console.print(f"merged {len(sources)} runs (seed {seed}): {len(merged)} distinct trials from {n_in} records "
                  f"into {rd.records}"
                  + (f", {n_features} probe feature files into {rd.features}" if n_features else "")
                  + f"; score with: perceptbench score {out}", highlight=False)
    if differing:
        err_console.print(f"warning: {len(differing)} probe feature file(s) differ between the runs; each is taken "
                          f"from the first run that has it: {', '.join(differing)}", highlight=False, soft_wrap=True)
