"""The Python API a notebook uses: run, score, load records, list tasks and models.

Everything is re-exported by ``import perceptbench``::

    import perceptbench as pb
    scores = pb.run("runs/nb", tasks=["similarity.chart.mark_color"])   # pandas.DataFrame
    records = pb.load_records("runs/nb")                                 # list[TrialRecord]

Tables are **pandas** DataFrames (``pandas`` is a core dependency).  The functions do what
the command line does, with the same files and the same errors: :func:`run` writes
``records.jsonl`` and ``scores.csv``/``scores.json`` into the run directory and resumes
an interrupted run; :func:`score` reads records alone (no model, no torch).  Importing
this module imports neither torch nor pandas; pandas is imported on the first call that
returns a table.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .records import TrialRecord
    from .core.rows import ScoreRow

__all__ = ["run", "score", "load_records", "scores_frame", "list_tasks", "list_models", "SCORE_COLUMNS"]

SCORE_COLUMNS = ("task_id", "model", "metric", "value", "ci_low", "ci_high", "n", "n_null", "note", "n_draws",
                 "n_dropped", "seed")
"""Columns of the scores DataFrame: those of ``scores.csv`` plus the provenance of
``scores.json`` (note, bootstrap draws and dropped draws, bootstrap seed).  ``value``,
``ci_low`` and ``ci_high`` are float64 (NaN where undefined or where a metric has no
interval); ``n`` and ``n_null`` count trials (nullable Int64).  Metric definitions:
``docs/metrics.md``."""


def scores_frame(rows: Sequence["ScoreRow"]) -> "pd.DataFrame":
    """Score rows -> a pandas DataFrame with :data:`SCORE_COLUMNS`, one row per score row."""
    import pandas as pd

    df = pd.DataFrame([{c: getattr(r, c) for c in SCORE_COLUMNS} for r in rows], columns=list(SCORE_COLUMNS))
    for c in ("value", "ci_low", "ci_high"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for c in ("n", "n_null", "n_draws", "n_dropped", "seed"):
        df[c] = df[c].astype("Int64")
    return df


def run(out: str | Path, tasks: Sequence[str] | None = None, models: Sequence[str] | None = None, *,
        seed: int = 0, batch_size: int | None = None, progress: bool = False) -> "pd.DataFrame":
    """Run tasks x models into the run directory ``out``, score it, return the scores.

    Same as ``perceptbench run``: ``tasks`` default to the Gestalt battery, ``models`` to
    ``["efficientnet-lite0"]`` (``[SHORT=]SPEC`` strings, see :func:`list_models`); every
    model is resolved before ``out`` is created; a rerun with the same arguments resumes,
    skipping finished trials.  Writes ``out/records.jsonl``, ``out/run.json`` and
    ``out/scores.csv`` + ``scores.json``.  ``batch_size``: images per encoder forward pass
    / requests per VLM batch (``None``: 8 / 32, as the CLI).

    Returns the scores as a DataFrame (:func:`scores_frame`).  Raises KeyError (unknown
    task), ValueError (bad setting, a different seed than ``out`` holds, ``out`` an existing
    non-empty directory that is not a run directory),
    :class:`~perceptbench.models.base.ModelLoadError`,
    :class:`~perceptbench.sources.SourceError` (human data missing or corrupt),
    :class:`~perceptbench.records.RecordError`."""
    from .runner import RunConfig, run as run_tasks
    from .scoring import score_file
    from .tasks.registry import DEFAULT_BATTERY

    from .runs import foreign_out_dir

    out = Path(out)
    why = foreign_out_dir(out)
    if why:
        raise ValueError(why)
    cfg = RunConfig(out=out, tasks=tuple(tasks) if tasks is not None else DEFAULT_BATTERY,
                    models=tuple(models) if models is not None else ("efficientnet-lite0",),
                    seed=seed, batch_size=batch_size)
    run_tasks(cfg, progress=progress)
    return scores_frame(score_file(out / "records.jsonl"))


def load_records(*runs: str | Path) -> list["TrialRecord"]:
    """The validated trial records of one or more runs (run directories or records files).

    Several runs are merged by ``trial_id`` (see :func:`perceptbench.runs.load_runs`:
    identical duplicates once, conflicting ones and mixed seeds refused).  Each record is a
    frozen :class:`~perceptbench.records.TrialRecord`; ``r.model_dump()`` gives a dict,
    e.g. ``pandas.DataFrame([r.model_dump() for r in records])``.  Raises
    :class:`~perceptbench.records.RecordError` naming the file (and line).  A list or
    tuple of paths may be given in place of several arguments:
    ``load_records(["runs/a", "runs/b"])`` is ``load_records("runs/a", "runs/b")``."""
    from .runs import load_runs

    return load_runs(_flatten(runs))


def _flatten(runs) -> list:
    """``("a", "b")``, ``(["a", "b"],)`` and mixes -> ``["a", "b"]``."""
    out = []
    for r in runs:
        if isinstance(r, (list, tuple)):
            out.extend(r)
        else:
            out.append(r)
    return out


def score(*runs: str | Path, seed: int | None = None, parser: str = "default",
          out: str | Path | None = None) -> "pd.DataFrame":
    """Score one or more runs from their records alone (no model is loaded, no torch).

    ``seed`` overrides the bootstrap seed (default: the records' seed); ``parser="strict"``
    scores ambiguous VLM answers as null.  Nothing is written unless ``out`` (a CSV path;
    ``scores.json`` goes beside it) is given.  Returns the scores as a DataFrame
    (:func:`scores_frame`).  ``score(["runs/a", "runs/b"])`` is ``score("runs/a", "runs/b")``.
    Raises :class:`~perceptbench.records.RecordError` for missing, invalid, empty or
    conflicting records, ValueError for a bad ``parser`` or
    an ``out`` that is a directory."""
    from .scoring import score_records, write_scores

    rows = score_records(load_records(*runs), seed, parser)
    if out is not None:
        write_scores(rows, out)
    return scores_frame(rows)


def list_tasks() -> "pd.DataFrame":
    """The tasks: one row per task with ``task_id``, ``principle``, ``track``,
    ``response_space``, ``encoder_readout``, ``settings`` (dict of defaults),
    ``human_ref_id``, ``default_run`` (bool), ``runnable`` (bool) and ``description``."""
    import pandas as pd

    from .tasks.registry import DEFAULT_BATTERY, NOT_RUNNABLE, TASKS

    rows = [dict(task_id=c.base_id, principle=c.principle, track=c.track, response_space=c.response_space,
                 encoder_readout=c.encoder_readout, settings=dict(c.defaults), human_ref_id=c().human_ref_id,
                 default_run=c.base_id in DEFAULT_BATTERY, runnable=True, description=c.description)
            for c in TASKS.values()]
    rows += [dict(task_id=t, principle=None, track=None, response_space=None, encoder_readout=None, settings={},
                  human_ref_id=None, default_run=False, runnable=False, description=why)
             for t, why in NOT_RUNNABLE.items()]
    return pd.DataFrame(rows)


def list_models() -> "pd.DataFrame":
    """The model adapters: ``syntax`` (how to name one, ``[SHORT=]SPEC``), ``kind``
    (encoder / vlm / encoder-or-vlm / api), ``description``, ``example``."""
    import pandas as pd

    from .models.registry import MODEL_KINDS

    return pd.DataFrame([dict(syntax=k.syntax, kind=k.kind, description=k.description, example=k.example)
                         for k in MODEL_KINDS])
