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
from typing import TYPE_CHECKING, Mapping, Sequence

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
        seed: int = 0, batch_size: int | None = None, progress: bool = False, stimuli: Sequence[str] = (),
        parser: str = "default", cache: str = "use", executor: str = "local", ray_address: str | None = None,
        gpus_per_model: float = 0, ray_workers: int | None = None, chunk_size: int = 0,
        allow_mixed: bool = False, families: Mapping[str, str] | None = None,
        conditions: Sequence[str] | None = None, device: str = "cpu", dtype: str | None = None,
        attn_implementation: str | None = None, roster: str | None = None,
        battery: str | None = None, judge: str | None = None, repetitions: int = 1,
        temperature: float = 0.0) -> "pd.DataFrame":
    """Run tasks x models into the run directory ``out``, score it, return the scores.

    The same orchestration as ``perceptbench run`` (:func:`perceptbench.api.run`), with the
    same options and files: ``tasks`` default to the Gestalt battery, ``models`` to
    ``["efficientnet-lite0"]`` (``[SHORT=]SPEC`` strings, see :func:`list_models`); every
    model is resolved before ``out`` is created; a rerun with the same arguments resumes,
    skipping finished trials.  Writes ``out/records.jsonl``, ``out/run.json`` and
    ``out/scores.csv`` + ``scores.json`` (``scores.PARSER.csv`` for another ``parser``).

    ``batch_size``: images per encoder forward pass / requests per VLM batch (``None``: 8 /
    32); ``stimuli``: test stimulus ids to run (``--stimulus``); ``parser``: ``default``,
    ``strict`` or ``seed`` (``--parser``); ``cache``: ``use``, ``refresh`` (``--refresh-cache``)
    or ``off`` (``--no-cache``); ``executor``: ``local`` or ``ray`` with ``ray_address``,
    ``gpus_per_model``, ``ray_workers``, ``chunk_size`` (``--ray-address`` ...);
    ``allow_mixed`` (``--allow-mixed``); ``families``: ``{model: family}`` for the VSI
    agreement means (``--family``); ``conditions``: how each model is asked (``--condition``:
    ``image``, the default, or e.g. ``image_withheld``); ``device``, ``dtype`` (``float32``,
    ``bfloat16``, ``float16``; local ``hf:`` VLMs, encoders run in float32),
    ``attn_implementation`` (``--device``, ``--dtype``, ``--attn-implementation``;
    :mod:`perceptbench.models.runtime`); ``roster``: a packaged roster's name
    or a roster file (``--roster``), whose models run before ``models``; ``battery``: ``"default"``
    or ``"full"`` (``--battery``), a named task set run before ``tasks``
    (:data:`perceptbench.tasks.registry.BATTERIES`; ``full`` refuses in one line while the
    cue-conflict images are not fetched); ``judge``: ``[SHORT=]SPEC``
    of a judge model that reads every HallusionBench answer (``--judge``,
    :mod:`perceptbench.vsi.judge`: ``judgments.jsonl`` and the ``hallusionbench.*@judge`` rows); ``repetitions``,
    ``temperature`` (``--repetitions``, ``--temperature``): sampled answers per stimulus of local
    ``hf:`` VLMs, scored by majority vote (seed 000 D.4).

    Returns the scores as a DataFrame (:func:`scores_frame`).  Raises KeyError (unknown
    task), ValueError (bad option or setting, a different seed than ``out`` holds, ``out`` an
    existing non-empty directory that is not a run directory),
    :class:`~perceptbench.models.base.ModelLoadError`,
    :class:`~perceptbench.sources.SourceError` (human data missing or corrupt),
    :class:`~perceptbench.records.RecordError`, RuntimeError (another process writes ``out``)."""
    from .api import RayOptions, RunOptions, run as run_and_score

    options = RunOptions(tasks=tasks, models=models, seed=seed, batch_size=batch_size, stimuli=tuple(stimuli),
                         parser=parser, cache=cache, executor=executor,
                         ray=RayOptions(ray_address, gpus_per_model, ray_workers, chunk_size),
                         allow_mixed=allow_mixed, families=families, conditions=conditions, device=device,
                         dtype=dtype, attn_implementation=attn_implementation, roster=roster, battery=battery, judge=judge,
                         repetitions=repetitions, temperature=temperature)
    return scores_frame(run_and_score(out, options, progress=progress).rows)


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
          out: str | Path | None = None, families: Mapping[str, str] | None = None,
          pairs: str = "auto") -> "pd.DataFrame":
    """Score one or more runs from their records alone (no model is loaded, no torch).

    The same scoring as ``perceptbench score`` (:func:`perceptbench.api.score`): one run is
    scored with the VSI probe features beside its records; several are merged by trial id
    first.  ``seed`` overrides the bootstrap seed (default: the records' seed);
    ``parser="strict"`` scores ambiguous VLM answers as null; ``families``: ``{model:
    family}`` (``--family``); ``pairs``: which model pairs get per-pair rows (``--pairs``:
    ``auto``, ``all``, ``neighbours``).  Nothing is written unless ``out`` (a CSV path;
    ``scores.json`` goes beside it) is given.  Returns the scores as a DataFrame
    (:func:`scores_frame`).  ``score(["runs/a", "runs/b"])`` is ``score("runs/a", "runs/b")``.
    Raises :class:`~perceptbench.records.RecordError` for missing, invalid, empty or
    conflicting records, ValueError for a bad ``parser`` or
    an ``out`` that is a directory."""
    from .api import score as score_runs
    from .records import RecordError
    from .runs import records_path

    paths = _flatten(runs)
    if not paths:
        raise RecordError("no run directory or records file given")
    return scores_frame(score_runs([records_path(p) for p in paths], out, seed=seed, parser=parser,
                                   families=families, pairs=pairs))


def list_tasks() -> "pd.DataFrame":
    """The tasks: one row per task with ``task_id``, ``principle``, ``track``,
    ``response_space``, ``encoder_readout``, ``settings`` (dict of defaults),
    ``human_data`` (in words: ``yes: ...`` or ``no: ...``), ``human_ref_id``, ``default_run`` (bool), ``battery`` (``default``, ``full`` or empty: the smallest
    ``--battery`` that runs it), ``runnable`` (bool) and ``description``."""
    import pandas as pd

    from .tasks.registry import DEFAULT_BATTERY, NOT_RUNNABLE, TASKS, battery_of

    rows = [dict(task_id=c.base_id, principle=c.principle, track=c.track, response_space=c.response_space,
                 encoder_readout=c.encoder_readout, settings=dict(c.defaults), human_data=c().human_data,
                 human_ref_id=c().human_ref_id,
                 default_run=c.base_id in DEFAULT_BATTERY, battery=battery_of(c.base_id), runnable=True,
                 description=c.description)
            for c in TASKS.values()]
    rows += [dict(task_id=t, principle=None, track=None, response_space=None, encoder_readout=None, settings={},
                  human_data=None, human_ref_id=None, default_run=False, battery="", runnable=False,
                  description=why)
             for t, why in NOT_RUNNABLE.items()]
    return pd.DataFrame(rows)


def list_models() -> "pd.DataFrame":
    """The model adapters: ``syntax`` (how to name one, ``[SHORT=]SPEC``), ``kind``
    (encoder / vlm / encoder-or-vlm / api), ``description``, ``example``."""
    import pandas as pd

    from .models.registry import MODEL_KINDS

    return pd.DataFrame([dict(syntax=k.syntax, kind=k.kind, description=k.description, example=k.example)
                         for k in MODEL_KINDS])
