"""The one orchestration layer: run-then-score and score, for the command line and the Python API.

``perceptbench run ...`` (:mod:`perceptbench.cli.run`) and ``perceptbench.run(...)``
(:mod:`perceptbench.python_api`) both build a :class:`RunOptions` and call :func:`run`;
``perceptbench score`` and ``perceptbench.score`` both call :func:`score`.  So both take the
same options, check them with the same messages and write the same files:

=================  ====================================  ===========================================
option             command line                          Python
=================  ====================================  ===========================================
tasks, models      ``--task``, ``--model`` (repeatable)  ``tasks=[...]``, ``models=[...]``
battery            ``--battery default|full``            ``battery="full"``
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
roster             ``--roster NAME|FILE.toml``           ``roster="seed002"``
=================  ====================================  ===========================================

A roster (:mod:`perceptbench.models.roster`) adds its models, with their declared metadata, before
any ``--model``; ``SHORT[KEY=VALUE,...]=SPEC`` declares one model's metadata inline.  The
declared metadata goes into ``run.json`` (``models``) and ``models.csv``, and the VSI same- vs
cross-family means read the declared families (:func:`declared_families_of`); ``families``
overrides them model by model.

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
           "parse_families", "declared_models_of", "declared_families_of", "write_models_table"]

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
    repetitions: int = 1
    temperature: float = 0.0
    """Answers per stimulus of a sampling VLM and its sampling temperature (``--repetitions``,
    ``--temperature``; :class:`perceptbench.models.runtime.Runtime`; seed 000 D.4)."""
    roster: str | None = None
    """A packaged roster's name or a roster file (:func:`perceptbench.models.roster.load_roster`):
    its models run before ``models``."""
    battery: str | None = None
    """A named task set (:data:`perceptbench.tasks.registry.BATTERIES`: ``default``, ``full``) run
    before ``tasks``; ``None``: ``tasks``, or the default battery when no task is given."""

    judge: str | None = None
    """``[SHORT=]SPEC`` of a judge model for HallusionBench's judge reading (``--judge``,
    :mod:`perceptbench.vsi.judge`): after the trials, it reads every HallusionBench answer into
    ``judgments.jsonl``, scored as the ``hallusionbench.*@judge`` rows.  ``None``: no judge."""

    def task_ids(self) -> tuple[str, ...]:
        """The tasks this run runs: the battery's, then ``tasks`` not already in it; with neither,
        the default battery."""
        from .tasks.registry import DEFAULT_BATTERY, battery_tasks

        tasks = tuple(self.tasks) if self.tasks is not None else ()
        if self.battery is None:
            return tasks if self.tasks is not None else DEFAULT_BATTERY
        first = battery_tasks(self.battery)
        return first + tuple(t for t in tasks if t not in first)

    def check(self) -> None:
        """ValueError (one line naming the option and the value) for a bad parser mode,
        cache mode, executor or batch size (an integer >= 1: below 1, no batch would ever be
        asked and the run would write no model trial)."""
        check_parser(self.parser)
        b = self.batch_size
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1):
            raise ValueError(f"--batch-size {b!r}: must be an integer >= 1 (images per encoder forward pass, "
                             "requests per VLM batch)")
        if self.cache not in CACHE_MODES:
            raise ValueError(f"cache mode {self.cache!r}: must be one of {', '.join(CACHE_MODES)}")
        if self.executor not in EXECUTORS:
            raise ValueError(f"--executor {self.executor!r}: not 'local' or 'ray'")
        if self.battery is not None:
            from .tasks.registry import battery_tasks

            battery_tasks(self.battery)
        self.runtime().check_names()

    def runtime(self):
        """The :class:`perceptbench.models.runtime.Runtime` of these options."""
        from .models.runtime import Runtime

        return Runtime(self.device, self.dtype, self.attn_implementation, int(self.repetitions), float(self.temperature))


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

    With ``options.roster``, the roster's models come first and, in a new run directory, every
    entry that cannot load here (weights not cached while the hub is unreachable, an API key
    not set) fails at once in one line before anything is written
    (:func:`perceptbench.models.roster.check_available`).

    Raises ValueError (a bad option; a bad roster file, as
    :class:`~perceptbench.models.roster.RosterError`; ``out`` an existing directory perceptbench did not
    write; settings that differ from the run in ``out``), KeyError (unknown task),
    :class:`~perceptbench.models.base.ModelLoadError`, :class:`~perceptbench.sources.SourceError`,
    :class:`~perceptbench.records.RecordError`, RuntimeError (another process writes ``out``),
    ImportError (``executor="ray"`` without the ``ray`` extra), KeyboardInterrupt (every
    written trial is kept)."""
    from .runner import RunConfig, run as run_tasks
    from .scoring import score_file
    from .tasks.registry import check_battery

    from .models.roster import check_available, declared_models, load_roster

    options.check()
    if options.battery is not None:
        check_battery(options.battery, options.seed)
    rd = RunDir(out)
    why = rd.foreign_reason()
    if why:
        raise ValueError(why)
    roster = load_roster(options.roster) if options.roster else None
    models = tuple(options.models) if options.models is not None else (() if roster else ("efficientnet-lite0",))
    if roster is not None:
        models = tuple(roster.model_args()) + models
    meta = declared_models(models, roster)
    if roster is not None and not rd.has_records():  # a new run loads every model: all missing ones in one line
        check_available(roster)
    judged_tasks = _judged_tasks(options, rd)  # a bad --judge fails before anything is written
    cfg = RunConfig(out=rd.root, tasks=options.task_ids(),
                    models=models, seed=options.seed, batch_size=options.batch_size, stimuli=tuple(options.stimuli),
                    cache_mode=options.cache, allow_mixed=options.allow_mixed, model_meta=meta,
                    runtime=options.runtime(),
                    **({"conditions": tuple(options.conditions)} if options.conditions else {}))
    summary = run_tasks(cfg, progress=progress, console=console, executor=options.executor,
                        ray_options=options.ray.as_kwargs() if options.executor == "ray" else None,
                        **({} if progress_every is None else {"progress_every": progress_every}))
    if judged_tasks:
        _judge(rd, options, judged_tasks, console if progress else None)
    scores_csv = rd.scores_for(options.parser)
    declared = _declared_models(rd)
    if declared:
        write_models_table(declared, rd.models_csv)
    rows = score_file(rd.records, scores_csv, parser_mode=options.parser,
                      families=_families(declared_families_of([rd.records]), options.families),
                      models=declared or None)
    return RunResult(summary, rows, rd, scores_csv)


def _judged_tasks(options: RunOptions, rd: RunDir) -> list:
    """The HallusionBench tasks ``options.judge`` reads (none without a judge).  ValueError (one
    line) for a judge spec that names no model kind, a run without a HallusionBench task, or a
    run directory whose ``judgments.jsonl`` holds another judge's verdicts."""
    if not options.judge:
        return []
    from .models.registry import parse_model_arg
    from .tasks import get_task
    from .vsi.judge import BENCHMARK, check_same_judge, judgments_path, read_judgments

    name, _ = parse_model_arg(options.judge)
    tasks = [get_task(t) for t in options.task_ids()]
    hb = [t for t in tasks if t.task_id.split("@", 1)[0] == BENCHMARK]
    if not hb:
        raise ValueError(f"--judge {options.judge}: the judge reads HallusionBench answers, and this run has no "
                         f"{BENCHMARK} task (--task {BENCHMARK}@images=DIR)")
    path = judgments_path(rd.root)
    check_same_judge(read_judgments(path), name, None, path)
    return hb


def _judge(rd: RunDir, options: RunOptions, tasks: list, console) -> None:
    """Run the judge of ``options.judge`` over the run's HallusionBench answers
    (:func:`perceptbench.vsi.judge.judge_run`), printing what it does on ``console``."""
    import functools

    from .models.registry import load_model
    from .records import read_records
    from .vsi.judge import judge_run

    announce = None
    if console is not None:
        from rich.markup import escape

        announce = lambda line: console.print(escape(line), highlight=False)  # noqa: E731
    written, failed = judge_run(rd.root, options.judge, tasks, options.seed, read_records(rd.records),
                                functools.partial(load_model, runtime=options.runtime()),
                                batch_size=options.batch_size or 8, announce=announce)
    if announce is not None and written:
        announce(f"judge: {written} verdicts written to {rd.root / 'judgments.jsonl'}"
                 + (f" ({failed} without a reply: a rerun asks them again)" if failed else ""))


def _declared_models(rd: RunDir) -> dict:
    """``run.json``'s ``models`` object (:meth:`RunDir.declared_models`)."""
    return rd.declared_models()


def declared_models_of(records_files: Sequence[Path]) -> dict[str, dict]:
    """The declared metadata (``run.json``'s ``models``) of the runs beside ``records_files``,
    merged, later files winning for a model declared twice."""
    out: dict[str, dict] = {}
    for f in records_files:
        out.update(_declared_models(RunDir.beside(f)))
    return out


def declared_families_of(records_files: Sequence[Path]) -> dict[str, str]:
    """``{model: family}`` declared in the ``run.json`` beside each records file
    (:func:`declared_models_of`, :func:`perceptbench.models.metadata.declared_families`: the
    architecture line where declared, else the family)."""
    from .models.metadata import declared_families

    return declared_families(declared_models_of(records_files))


def _families(declared: Mapping[str, str], override: Mapping[str, str] | None) -> dict[str, str] | None:
    """The families the VSI means use: the declared ones, each overridden by ``--family``."""
    fam = {**declared, **(override or {})}
    return fam or None


def write_models_table(models: Mapping[str, Mapping], path: Path) -> Path:
    """Write ``models.csv`` (:data:`perceptbench.models.metadata.MODELS_TABLE_COLUMNS`, one row per
    declared model, :func:`perceptbench.models.metadata.models_table_rows`) atomically."""
    import csv

    from .core.rundir import atomic_write
    from .models.metadata import MODELS_TABLE_COLUMNS, models_table_rows

    with atomic_write(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(MODELS_TABLE_COLUMNS)
        w.writerows(models_table_rows(models))
    return path


def score(records_files: Sequence[Path], out: str | Path | None = None, *, seed: int | None = None,
          parser: str = "default", families: Mapping[str, str] | None = None,
          pairs: str = "auto") -> list["ScoreRow"]:
    """Score records files (see :func:`perceptbench.runs.records_path`) from the records alone.

    One file: scored with the VSI probe features (``features/``) and a judge model's verdicts
    (``judgments.jsonl``, :mod:`perceptbench.vsi.judge`) beside it; several: merged by trial id
    first (:func:`perceptbench.runs.load_runs`; no features, no judge reading).  ``out``: the
    scores CSV to write (``.json`` beside it); ``None`` writes nothing.  Raises
    :class:`~perceptbench.records.RecordError`, ValueError (bad parser mode, ``out`` a
    directory), KeyError (unknown task in the records).  The VSI same- vs cross-family means
    use the families declared in each run's ``run.json``, overridden by ``families``; the
    cross-model family and objective summaries use the declared metadata itself.  ``pairs``: which
    model pairs get per-pair rows (:data:`perceptbench.scorers.pairs.PAIR_MODES`: ``auto``,
    every pair up to 20 models, the ranking neighbours above; ``all``; ``neighbours``)."""
    from .runs import load_runs
    from .scorers.pairs import check_pairs
    from .scoring import score_file, score_records, write_scores

    check_parser(parser)
    check_pairs(pairs)
    fam = _families(declared_families_of(records_files), families)
    meta = declared_models_of(records_files) or None
    if len(records_files) == 1 and out is not None:
        return score_file(records_files[0], out, seed, parser, fam, meta, pairs)
    from .vsi.judge import judgments_path, read_judgments

    one = RunDir.beside(records_files[0]) if len(records_files) == 1 else None
    features = one.features if one is not None else None
    judgments = read_judgments(judgments_path(one.root)) if one is not None else None
    rows = score_records(load_runs(records_files), seed, parser, features, fam, meta, judgments, pairs)
    if out is not None:
        write_scores(rows, out)
    return rows
