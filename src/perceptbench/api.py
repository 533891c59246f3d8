"""The one orchestration layer: run-then-score and score, for the command line and the Python API.

``perceptbench run ...`` (:mod:`perceptbench.cli.run`) and ``perceptbench.run(...)``
(:mod:`perceptbench.python_api`) both build a :class:`RunOptions` and call :func:`run`;
``perceptbench score`` and ``perceptbench.score`` both call :func:`score`.  So both take the
same options, check them with the same messages and write the same files:

=================  ====================================  ===========================================
option             command line                          Python
=================  ====================================  ===========================================
tasks, models      ``--task``, ``--model`` (repeatable)  ``tasks=[...]``, ``models=[...]``
seed               ``--seed``                            ``seed=``
batch size         ``--batch-size``                      ``batch_size=``
stimuli            ``--stimulus`` (repeatable)           ``stimuli=[...]``
parser mode        ``--parser``                          ``parser=``
cache mode         ``--no-cache`` / ``--refresh-cache``  ``cache="use" | "refresh" | "off"``
executor           ``--executor``, ``--ray-*``,          ``executor=``, ``ray_address=``,
                   ``--gpus-per-model``, ``--chunk-size``  ``gpus_per_model=``, ``ray_workers=``,
                                                         ``chunk_size=``
allow mixed        ``--allow-mixed``                     ``allow_mixed=``
conditions         ``--condition`` (repeatable)          ``conditions=[...]``
families           ``--family MODEL=FAMILY``             ``families={"MODEL": "FAMILY"}``
device, dtype,     ``--device``, ``--dtype``,            ``device=``, ``dtype=``,
attention          ``--attn-implementation``             ``attn_implementation=``
=================  ====================================  ===========================================

Imports no torch (the runner loads model back-ends only for the models a run needs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence

from .core.rundir import RunDir

if TYPE_CHECKING:  # pragma: no cover
    from .core.rows import ScoreRow
    from .runner import RunSummary

__all__ = ["CACHE_MODES", "EXECUTORS", "RayOptions", "RunOptions", "RunResult", "run", "score",
           "parse_families"]

CACHE_MODES = ("use", "refresh", "off")
"""VLM response cache modes: ``use`` (read and write), ``refresh`` (ask again, overwrite),
``off`` (neither read nor write)."""

EXECUTORS = ("local", "ray")
"""``local``: this process; ``ray``: shards on a Ray cluster (the ``ray`` extra)."""


@dataclass(frozen=True)
class RayOptions:
    """Options of the Ray executor (ignored by ``local``): cluster ``address`` (``None``: a
    local cluster), GPUs each worker asks for, workers per model (``None``: from the
    cluster), test stimuli per shard (0: one shard per task and model, records identical to
    ``local``)."""

    address: str | None = None
    gpus_per_model: float = 0
    workers: int | None = None
    chunk_size: int = 0

    def as_kwargs(self) -> dict:
        """The keyword arguments of :func:`perceptbench.executors.ray_executor.run_plan`."""
        return {"address": self.address, "gpus_per_model": self.gpus_per_model, "workers": self.workers,
                "chunk_size": self.chunk_size or None}


@dataclass(frozen=True)
class RunOptions:
    """What a run does (see the module table).  ``tasks``/``models`` ``None``: the Gestalt
    battery / ``efficientnet-lite0``."""

    tasks: Sequence[str] | None = None
    models: Sequence[str] | None = None
    seed: int = 0
    batch_size: int | None = None
    stimuli: Sequence[str] = ()
    parser: str = "default"
    cache: str = "use"
    executor: str = "local"
    ray: RayOptions = field(default_factory=RayOptions)
    allow_mixed: bool = False
    families: Mapping[str, str] | None = None
    conditions: Sequence[str] | None = None
    """How each model is asked (:func:`perceptbench.respond.conditions`); ``None``: the task as
    designed (``image``)."""
    device: str = "cpu"
    dtype: str | None = None
    attn_implementation: str | None = None
    """Where and in what precision local models run (:mod:`perceptbench.models.runtime`)."""

    def check(self) -> None:
        """ValueError (one line naming the option and the value) for a bad parser mode,
        cache mode or executor."""
        check_parser(self.parser)
        if self.cache not in CACHE_MODES:
            raise ValueError(f"cache mode {self.cache!r}: must be one of {', '.join(CACHE_MODES)}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"--executor {self.executor!r}: not 'local' or 'ray'")
        self.runtime().check_names()

    def runtime(self):
        """The :class:`perceptbench.models.runtime.Runtime` of these options."""
        from .models.runtime import Runtime

        return Runtime(self.device, self.dtype, self.attn_implementation)


@dataclass
class RunResult:
    """What :func:`run` did: the runner's summary, the score rows, the run directory and
    the scores table written (``scores.csv`` or ``scores.MODE.csv``, ``.json`` beside it)."""

    summary: "RunSummary"
    rows: list["ScoreRow"]
    run_dir: RunDir
    scores_csv: Path


def check_parser(mode: str) -> None:
    """ValueError unless ``mode`` is a parser mode (:data:`perceptbench.scoring.PARSER_MODES`)."""
    from .scoring import PARSER_MODES

    if mode not in PARSER_MODES:
        raise ValueError(f"--parser {mode!r}: must be one of {', '.join(PARSER_MODES)}")


def parse_families(specs: Sequence[str]) -> dict[str, str]:
    """``["MODEL=FAMILY", ...]`` -> ``{MODEL: FAMILY}``; ValueError naming a malformed one."""
    families = {}
    for f in specs:
        m, sep, fam = f.partition("=")
        if not sep or not m or not fam:
            raise ValueError(f"--family {f!r}: expected MODEL=FAMILY")
        families[m] = fam
    return families


def run(out: str | Path, options: RunOptions, *, progress: bool = False, console=None,
        progress_every: float | None = None) -> RunResult:
    """Run ``options`` into the run directory ``out``, then score it.

    Writes ``run.json``, ``records.jsonl``, ``features/`` (VSI) and the scores table of the
    parser mode (``scores.csv``, or ``scores.MODE.csv``; ``.json`` beside it).  A rerun with
    the same options resumes.  ``console``: a rich console for progress and warnings; when it is
    not a terminal, progress is a plain line at most every ``progress_every`` seconds (default
    :data:`perceptbench.core.progress.PROGRESS_EVERY_S`).

    Raises ValueError (a bad option; ``out`` an existing directory perceptbench did not
    write; settings that differ from the run in ``out``), KeyError (unknown task),
    :class:`~perceptbench.models.base.ModelLoadError`, :class:`~perceptbench.sources.SourceError`,
    :class:`~perceptbench.records.RecordError`, RuntimeError (another process writes ``out``),
    ImportError (``executor="ray"`` without the ``ray`` extra), KeyboardInterrupt (every
    written trial is kept)."""
    from .runner import RunConfig, run as run_tasks
    from .scoring import score_file
    from .tasks.registry import DEFAULT_BATTERY

    options.check()
    rd = RunDir(out)
    why = rd.foreign_reason()
    if why:
        raise ValueError(why)
    cfg = RunConfig(out=rd.root, tasks=tuple(options.tasks) if options.tasks is not None else DEFAULT_BATTERY,
                    models=tuple(options.models) if options.models is not None else ("efficientnet-lite0",),
                    seed=options.seed, batch_size=options.batch_size, stimuli=tuple(options.stimuli),
                    cache_mode=options.cache, allow_mixed=options.allow_mixed, runtime=options.runtime(),
                    **({"conditions": tuple(options.conditions)} if options.conditions else {}))
    summary = run_tasks(cfg, progress=progress, console=console, executor=options.executor,
                        ray_options=options.ray.as_kwargs() if options.executor == "ray" else None,
                        **({} if progress_every is None else {"progress_every": progress_every}))
    scores_csv = rd.scores_for(options.parser)
    rows = score_file(rd.records, scores_csv, parser_mode=options.parser,
                      families=dict(options.families) if options.families else None)
    return RunResult(summary, rows, rd, scores_csv)


def score(records_files: Sequence[Path], out: str | Path | None = None, *, seed: int | None = None,
          parser: str = "default", families: Mapping[str, str] | None = None) -> list["ScoreRow"]:
    """Score records files (see :func:`perceptbench.runs.records_path`) from the records alone.

    One file: scored with the VSI probe features beside it (``features/``); several: merged
    by trial id first (:func:`perceptbench.runs.load_runs`; no features).  ``out``: the
    scores CSV to write (``.json`` beside it); ``None`` writes nothing.  Raises
    :class:`~perceptbench.records.RecordError`, ValueError (bad parser mode, ``out`` a
    directory), KeyError (unknown task in the records)."""
    from .runs import load_runs
    from .scoring import score_file, score_records, write_scores

    check_parser(parser)
    fam = dict(families) if families else None
    if len(records_files) == 1 and out is not None:
        return score_file(records_files[0], out, seed, parser, fam)
    features = RunDir.beside(records_files[0]).features if len(records_files) == 1 else None
    rows = score_records(load_runs(records_files), seed, parser, features, fam)
    if out is not None:
        write_scores(rows, out)
    return rows
