"""Tasks x models -> trial records: batching, resume, progress.

A run directory holds ``run.json`` (the settings a rerun must match), ``records.jsonl``
(append-only, see :class:`perceptbench.records.RecordStore`) and the scores.  A rerun
skips every trial already in ``records.jsonl``; a crashed run resumes where it stopped.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence


from .core.progress import PROGRESS_EVERY_S, progress_for
from .core.rundir import RunDir
from .core.version import __version__
from .models.base import Identified, RuntimeDeclared
from .models.runtime import Runtime, check_runtime
from .readouts.encoder import READOUT_SPECS
from .records import RecordStore, make_trial_id
from .respond import (DEFAULT_CONDITION, HUMAN_PANEL, Job, conditions, model_kind, prompt_version, respondent_for,
                      run_trials, task_kind)
from .respond.base import check_condition, trial_stimuli
from .core.conditions import respondent_label
from .seeding import text_hash
from .tasks import get_task
from .tasks.base import Stimulus, Task, require_test_stimuli
from .tasks.registry import DEFAULT_BATTERY


@dataclass
class RunConfig:
    """What to run.  ``stimuli``: test stimulus ids to run (empty: all); ``cache_mode``:
    ``use`` | ``refresh`` | ``off`` for the VLM response cache; ``allow_mixed``: resume even
    when finished trials were written under another prompt, package version, task setting
    or generation setting (recorded in run.json and in the new records).  ``batch_size``:
    images per encoder forward pass and requests per VLM batch; ``None`` takes the model
    family's default (:func:`perceptbench.models.base.default_batch_size`: 8 images, 32
    requests).  Responses do not depend on it; records carry the value used.  ``conditions``:
    how each model is asked (:func:`perceptbench.respond.conditions`: ``image``, the task as
    designed; ``image_withheld``, the question without the image), each its own respondent.
    ``runtime``: device, dtype and attention implementation of the local models
    (:class:`perceptbench.models.runtime.Runtime`; default CPU, float32), recorded in every
    model record's ``run_meta.settings``."""

    out: Path
    tasks: Sequence[str] = DEFAULT_BATTERY
    models: Sequence[str] = ("efficientnet-lite0",)
    seed: int = 0
    batch_size: int | None = None
    stimuli: Sequence[str] = ()
    cache_mode: str = "use"
    allow_mixed: bool = False
    conditions: Sequence[str] = (DEFAULT_CONDITION,)
    runtime: Runtime = field(default_factory=Runtime)
    model_meta: dict = field(default_factory=dict)
    """``{short name: declared metadata}`` (:func:`perceptbench.models.roster.declared_models`),
    written into ``run.json`` under ``models`` once the run starts (an entry of the same name
    from an earlier run is replaced)."""


@dataclass
class RunSummary:
    run_id: str
    written: int = 0
    human_written: int = 0
    published_written: int = 0  # a release's published model trials (model_family "published")
    skipped: int = 0
    human_skipped: int = 0  # human records already in the file (a resume), not written again
    cache_hits: int = 0
    cache_requests: int = 0
    per_task_model: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)
    mixed: list = field(default_factory=list)


def _check_run_json(out: Path, cfg: RunConfig) -> None:
    """Begin or resume the run in ``out`` (ValueError for another seed); run.json is written
    under the records lock (:meth:`perceptbench.core.rundir.RunDir.start`), which the caller's
    open record store holds from before run.json is read until the run ends."""
    RunDir(out).start(cfg.seed)


def _check_seed_of_records(path: Path, seed: int) -> None:
    """Before a run directory is resumed with ``seed`` (before run.json or any record is
    written): ValueError (one line) naming the file and line of the first record of another
    seed.  When every record is of one other seed, the remedy is ``--seed`` that seed; when the
    file mixes seeds, no ``--seed`` resumes it.  Problem lines are left to the record store."""
    from .records import scan_records

    seeds: dict[int, tuple[int, int]] = {}  # seed -> (first line, count)
    for lineno, rec, _ in scan_records(path):
        if rec is not None:
            first, n = seeds.get(rec.run_meta.seed, (lineno, 0))
            seeds[rec.run_meta.seed] = (first, n + 1)
    other = {s: v for s, v in seeds.items() if s != seed}
    if not other:
        return
    s, (line, n) = min(other.items(), key=lambda kv: kv[1][0])
    if len(seeds) == 1:
        how = f"rerun with --seed {s} to resume it, or give a new --out for seed {seed}"
    else:
        how = (f"it mixes seeds {sorted(seeds)}, so no --seed resumes it: move the records of the other seed(s) to "
               "their own file (`perceptbench validate` names them) or give a new --out")
    raise ValueError(f"{path}:{line}: a record of seed {s} ({n} of {sum(c for _, c in seeds.values())} records), "
                     f"resumed with --seed {seed}; {how}; nothing was written")


def _record_mixed(out: Path, run_id: str, diffs: list) -> None:
    """Append what an ``--allow-mixed`` resume allowed to run.json (atomically, under the
    records lock)."""
    RunDir(out).update_run_json(
        lambda data: data.setdefault("mixed", []).extend({**d.as_json(), "run_id": run_id} for d in diffs))


def _static_differences(task: Task, stimuli: list[Stimulus], finished: list, seed: int) -> list:
    """What differs between a task's finished trials and what this run would write, before any
    model is loaded: package version, task settings, prompt (template hash on every record, and
    the full prompt of up to 3 finished stimuli re-built now), VSI confidence prompt (hash of its
    turn and text), encoder readout spec."""
    from .provenance import Difference, compare

    by_model: dict[str, list] = {}
    for r in finished:
        by_model.setdefault(r.model if r.model_family != "human" else "human data", []).append(r)
    by_id = {s.stimulus_id: s for s in stimuli}
    prompts: dict[str, str] = {}
    diffs = []
    for model, recs in by_model.items():
        diffs += compare(recs, {"package version": __version__, "task settings": dict(task.identity_params)},
                         lambda r: {"package version": r.run_meta.model_extra.get("package_version"),
                                    "task settings": r.run_meta.model_extra.get("task_params")},
                         task.task_id, model)
        vlm = [r for r in recs if r.readout == "vlm_prompt"]
        d = compare(vlm, {"prompt": prompt_version(task)},
                    lambda r: {"prompt": r.run_meta.model_extra.get("prompt_template_hash")}, task.task_id, model)
        if not d:  # the filled prompt of a few finished stimuli, re-built now
            sample = [r for r in vlm if r.prompt_hash and r.stimulus_id in by_id][:3]
            for r in sample:
                if r.stimulus_id not in prompts:
                    prompts[r.stimulus_id] = text_hash(task.vlm_request(by_id[r.stimulus_id], seed)[1])
            bad = [r for r in sample if r.prompt_hash != prompts[r.stimulus_id]]
            if bad:
                d = [Difference("prompt", task.task_id, model, bad[0].prompt_hash, prompts[bad[0].stimulus_id],
                                len(bad))]
        diffs += d
        clean_vsi = [r for r in recs if r.readout == "vlm_vsi_clean"]
        if clean_vsi and task.is_vsi and task.verbal_conf:  # the confidence question (its turn and text)
            diffs += compare(clean_vsi, {"confidence prompt": task.confidence_prompt_hash},
                             lambda r: {"confidence prompt": r.run_meta.model_extra.get("confidence_prompt_hash")},
                             task.task_id, model)
        for readout in {r.readout for r in recs} & set(READOUT_SPECS):
            diffs += compare([r for r in recs if r.readout == readout],
                             {"readout spec": text_hash(READOUT_SPECS[readout])},
                             lambda r: {"readout spec": r.prompt_hash}, task.task_id, model)
    return diffs


RUNTIME_KEYS = ("dtype", "device_type", "attn_implementation")
"""The generation settings a resume compares on every readout of a VLM (where and in what precision it
ran: :mod:`perceptbench.models.runtime`); answers (``vlm_prompt``) compare every setting."""


def _model_differences(name: str, model, finished: list, kind: str | None = None) -> list:
    """What differs between a model's finished trials and the loaded model: model_version (never
    allowed: other weights under one short name are another model), a VLM's generation settings
    (dtype, device type and attention implementation among them) and an encoder's runtime
    settings (device type).  ``kind``: the model's :func:`~perceptbench.respond.model_kind` when
    ``model`` is a description of a model loaded elsewhere (a Ray worker's ``model_info``)."""
    from .provenance import compare

    kind = kind or model_kind(model)
    gs = dict(getattr(model, "generation_settings", None) or {})
    cur = {"model_version": model.model_version}
    what = "generation settings"
    if kind == "encoder":  # where it runs (device type, float32): RuntimeDeclared
        gs, what = (dict(model.runtime_settings) if isinstance(model, RuntimeDeclared) else {}), "runtime settings"
    if gs:
        cur[what] = gs

    def get(r):
        vals = {"model_version": r.run_meta.model_version}
        old = r.run_meta.model_extra.get("settings")
        if what in cur and isinstance(old, dict):
            # answers and embeddings: every setting; other readouts (VSI distributions, whose budget is
            # the task's) share the precision and device settings only
            keys = gs if r.readout == "vlm_prompt" or what == "runtime settings" else RUNTIME_KEYS
            vals[what] = {**gs, **{k: old[k] for k in keys if k in old and k in gs}}
        return vals

    tasks = sorted({r.task_id for r in finished})
    return compare(finished, cur, get, ", ".join(tasks[:3]) + (" ..." if len(tasks) > 3 else ""), name,
                   not_allowable=frozenset({"model_version"}))


def _finished_of(finished: list, name: str) -> list:
    """The finished records of model ``name`` under every condition."""
    labels = {respondent_label(name, c) for c in conditions()}
    return [r for r in finished if r.model in labels]


def _select_stimuli(task_stimuli: list, wanted: Sequence[str]) -> None:
    """Check that every id in ``wanted`` is a test stimulus of some task (ValueError naming the
    id and a few valid ones otherwise)."""
    test_ids = [s.stimulus_id for _, stimuli in task_stimuli for s in stimuli if s.split == "test"]
    known = set(test_ids)
    probe = {s.stimulus_id for _, stimuli in task_stimuli for s in stimuli if s.split != "test"}
    for sid in wanted:
        if sid in known:
            continue
        tids = ", ".join(t.task_id for t, _ in task_stimuli)
        if sid in probe:
            raise ValueError(f"--stimulus {sid}: a probe-train stimulus of {tids}, not a test trial")
        some = ", ".join(test_ids[:5]) + (f", ... ({len(test_ids)} in all)" if len(test_ids) > 5 else "")
        raise ValueError(f"--stimulus {sid}: no such test stimulus in {tids}; valid ids: {some or 'none'}")


def check_trial_identity(task_stimuli: list, labels: Sequence[str], conditions_: Sequence[str],
                         wanted: frozenset[str] | set[str] = frozenset()) -> int:
    """Check before a run starts that every trial it would write has its own id: the number of
    distinct trial ids equals test stimuli x respondents x repetitions, per task.

    ``task_stimuli``: (task, stimuli) pairs; ``labels``: the model short names; ``wanted``:
    the ``--stimulus`` selection (empty: all).  Returns the number of model trials.  Raises
    ValueError (one line) naming the task and a stimulus id that occurs twice (e.g. a dataset
    that holds two questions under one id), or the part that holds the separator ``|``
    (:func:`perceptbench.records.make_trial_id`)."""
    total = 0
    for task, stimuli in task_stimuli:
        chosen = [s for s in stimuli if s.split == "test" and (not wanted or s.stimulus_id in wanted)]
        for condition in conditions_:
            test = trial_stimuli(task, chosen, condition)
            ids = {make_trial_id(task.task_id, s.stimulus_id, respondent_label(name, condition), rep)
                   for s in test for name in labels for rep in range(task.n_reps)}
            expected = len(test) * len(labels) * task.n_reps
            if len(ids) != expected:
                from collections import Counter

                dup = next((sid for sid, n in Counter(s.stimulus_id for s in test).items() if n > 1), "?")
                raise ValueError(f"{task.task_id}: {expected} trials ({len(test)} stimuli x {len(labels)} models x "
                                 f"{task.n_reps} reps) but only {len(ids)} distinct trial ids: stimulus id {dup!r} "
                                 "occurs more than once; nothing was run")
            total += expected
    return total


def resolve_models(cfg: RunConfig, load_model: Callable,
                   announce: Callable[[str], None] | None = None) -> dict[str, object]:
    """Resolve every model spec of a run before its directory is created.

    A new run directory (no ``records.jsonl`` with records yet) will need every model, so
    each one is loaded here, before anything is written: a missing model directory or
    weights package, an unknown timm name, a bad open_clip tag, or an install without the
    ``models`` extra then fail with nothing on disk, and a rerun with another seed is not
    refused over a directory the failed run left behind.  When resuming an existing run,
    models load lazily (only those with missing trials), as before.

    Returns ``{model argument: loaded model}``; raises what ``load_model`` raises
    (:class:`~perceptbench.models.base.ModelLoadError` naming the model).  ``announce`` is
    called with each model argument before it loads (the command line prints a status line)."""
    if RunDir(cfg.out).has_records():
        return {}
    out = {}
    for arg in dict.fromkeys(cfg.models):
        if announce is not None:
            announce(arg)
        out[arg] = load_model(arg)
    return out


def check_compatible(task, model, name: str, condition: str = DEFAULT_CONDITION) -> None:
    """Raise ValueError (one line naming the task and the model) when no respondent serves
    ``task`` x ``model`` under ``condition`` (:func:`perceptbench.respond.respondent_for`),
    e.g. a VSI task (seed 002 §2.1: KL divergence between next-token distributions) and an
    image encoder, which has no next-token distribution.  Providers that are VLMs but may
    return no logprobs are not refused here: their trials are recorded as skipped
    (:mod:`perceptbench.vsi.respondent`)."""
    respondent_for(task, model, condition, name)


def _vsi_features_cached(out: Path, name: str, task_id: str) -> bool:
    from .vsi.features import features_cached

    return features_cached(RunDir(out).features, name, task_id)


def run(cfg: RunConfig, *, progress: bool = True, load_model: Callable | None = None,
        console=None, executor: str = "local", ray_options: dict | None = None,
        progress_every: float = PROGRESS_EVERY_S) -> RunSummary:
    """Run tasks x models into ``cfg.out``; returns what was written and skipped.

    Progress: rich bars when ``console`` is a terminal; plain lines (task, model, done/total,
    rate, ETA) at most every ``progress_every`` seconds when it is not (a log file, a batch job;
    :class:`perceptbench.core.progress.PlainProgress`).

    ``executor``: ``local`` (this process) or ``ray`` (shards on a Ray cluster, records
    appended here; :func:`perceptbench.executors.ray_executor.run_plan`, whose keyword
    arguments ``ray_options`` holds: address, gpus_per_model, workers, chunk_size).

    Human records are written first (they need no model).  A model is loaded only if one
    of its trials is missing.  Raises ValueError for settings that do not match an
    existing run directory (seed; and, unless ``cfg.allow_mixed``, the finished trials'
    prompt, readout spec, package version, task settings or generation settings; a
    different model_version always), naming what changed in one line before anything of
    it is written; ValueError for an unknown ``cfg.stimuli`` id; KeyError for an unknown
    task; ModelLoadError for a model; StaleCacheError (a RuntimeError) when a name-only
    model's re-asked cached answer changed."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from .models.registry import load_model as _load, parse_model_arg

    check_runtime(cfg.runtime)  # a device that is not there, a dtype it cannot run: before anything is written
    if executor == "ray" and cfg.runtime.repetitions > 1:
        raise ValueError(f"--repetitions {cfg.runtime.repetitions} runs on the local executor only; drop --executor ray")
    load_model = load_model or functools.partial(_load, runtime=cfg.runtime)
    out = Path(cfg.out)
    run_id = f"run-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}"
    summary = RunSummary(run_id)
    # everything that can fail on bad arguments or missing sources fails before anything is written
    tasks = [get_task(t) for t in cfg.tasks]
    names = [parse_model_arg(m)[0] for m in cfg.models]
    if len(set(names)) != len(names):
        raise ValueError(f"two models share a short name: {names}; name them with SHORT=SPEC")
    for condition in cfg.conditions:
        check_condition(condition)
    task_stimuli = [(task, task.stimuli(cfg.seed)) for task in tasks]
    for task, stimuli in task_stimuli:
        require_test_stimuli(task, stimuli)  # before run.json or any record is written
    for task, _ in task_stimuli:  # images from outside the project: a bad file fails before anything is written
        task.check_images(cfg.seed)
    wanted = set(cfg.stimuli)
    if wanted:
        _select_stimuli(task_stimuli, list(cfg.stimuli))
    check_trial_identity(task_stimuli, names, cfg.conditions, wanted)  # one id per trial, before anything is written
    from .models.registry import quiet_loading

    for task, _ in task_stimuli:  # models a task needs itself (VSI grounding) load before the VLMs
        with quiet_loading():
            task.prepare_models(cfg.seed)
    announce = None
    if progress and console is not None:
        def announce(arg: str) -> None:
            from rich.markup import escape

            from .core.urls import redact_urls_in

            console.print(f"loading model {escape(redact_urls_in(arg))} ...", highlight=False)
    preloaded = resolve_models(cfg, load_model, announce)
    for arg, name in zip(cfg.models, names):  # model x task compatibility, before anything is written
        if arg in preloaded:
            for task, _ in task_stimuli:
                for condition in cfg.conditions:
                    check_compatible(task, preloaded[arg], name, condition)
    if executor not in ("local", "ray"):
        raise ValueError(f"--executor {executor!r}: not 'local' or 'ray'")
    if executor == "ray":  # the cluster starts (or fails in one line) before anything is written
        from .executors.ray_executor import start_cluster

        start_cluster((ray_options or {}).get("address"))
    if RunDir(out).has_records():
        _check_seed_of_records(RunDir(out).records, cfg.seed)
    out.mkdir(parents=True, exist_ok=True)
    with RecordStore(RunDir(out).records) as store:
        if store.truncated_bytes:  # said, as score and report say a torn line they leave out
            cut = (f"{store.path}: cut its incomplete final line ({store.truncated_bytes} bytes, a write a crash "
                   "left unfinished); that trial runs again")
            summary.warnings.append(cut)
            if console is not None:
                from rich.markup import escape

                console.print(f"[yellow]warning:[/yellow] {escape(cut)}", highlight=False, soft_wrap=True)
        # run.json under the lock the store holds for the whole run: a second run started into the
        # same new --out is refused by the lock before it can write its own run.json (issue 20 item 6)
        _check_run_json(out, cfg)
        if cfg.model_meta:
            RunDir(out).update_run_json(lambda data: data.setdefault("models", {}).update(cfg.model_meta))
        finished: list = []
        if store.done:
            from .records import read_records

            finished = read_records(store.path)
        # a resume must not mix versions silently: compare finished trials with what this run writes
        mixed: list = []

        def gate(diffs: list) -> None:
            for d in diffs:
                if not (cfg.allow_mixed and d.allowable):
                    raise ValueError(d.message(str(out)))
            if diffs:
                mixed.extend(diffs)
                _record_mixed(out, run_id, diffs)
                summary.mixed.extend(diffs)

        for task, stimuli in task_stimuli:
            gate(_static_differences(task, stimuli, [r for r in finished if r.task_id == task.task_id], cfg.seed))
        extra_meta = lambda: ({"mixed_resume": sorted({f"{d.what} ({d.task_id}, {d.model})" for d in mixed})}
                              if mixed else {})
        plan = []
        reps = cfg.runtime.repetitions  # a stimulus is pending while one of its repetitions is
        for task, stimuli in task_stimuli:
            res = run_trials(Job(task, HUMAN_PANEL, HUMAN_PANEL.name, list(stimuli), [], store, cfg.seed, run_id, out,
                                 stimulus_ids=frozenset(wanted)))
            summary.written += res.written
            summary.human_written += res.written - res.published
            summary.published_written += res.published
            summary.human_skipped += res.already
            chosen = [s for s in stimuli if s.split == "test" and (not wanted or s.stimulus_id in wanted)]
            for condition in cfg.conditions:
                test = trial_stimuli(task, chosen, condition)
                for arg, name in zip(cfg.models, names):
                    label = respondent_label(name, condition)
                    pending = [s for s in test if any(make_trial_id(task.task_id, s.stimulus_id, label, rep)
                                                      not in store.done for rep in range(reps))]
                    summary.skipped += len(test) - len(pending)
                    features = (task_kind(task) == "vsi" and condition == DEFAULT_CONDITION
                                and not _vsi_features_cached(out, name, task.task_id))
                    if pending or features:
                        plan.append((task, stimuli, arg, name, pending, condition))
        if executor == "ray":
            _run_plan_on_ray(plan, cfg, store, run_id, out, extra_meta, gate, finished, summary,
                             console, ray_options or {})
            return summary
        with progress_for(console, progress, progress_every, (TextColumn("{task.description}"), BarColumn(),
                                                              MofNCompleteColumn(), TimeElapsedColumn())) as bar:
            bars = [bar.add_task(f"{task.task_id} | {respondent_label(name, c)}", total=len(pending))
                    for task, _, _, name, pending, c in plan]
            models: dict[str, object] = dict(preloaded)
            checked: set[str] = set()
            for (task, stimuli, arg, name, pending, condition), ptask in zip(plan, bars):
                if arg not in models:
                    bar.update(ptask, description=f"loading {name} ...", refresh=True)
                    models[arg] = load_model(arg)
                if arg not in checked:  # once per model, whether preloaded or loaded now
                    checked.add(arg)
                    gate(_model_differences(name, models[arg], _finished_of(finished, name)))
                    warning = models[arg].identity_warning if isinstance(models[arg], Identified) else None
                    if warning:
                        summary.warnings.append(warning)
                        if console is not None:
                            from rich.markup import escape

                            console.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
                model = models[arg]
                label = respondent_label(name, condition)
                base = f"{task.task_id} | {label}"
                job = Job(task, model, name, pending, [s for s in stimuli if s.split == "probe_train"], store,
                          cfg.seed, run_id, out, cfg.batch_size, cfg.cache_mode, extra_meta(), condition=condition,
                          repetitions=reps)
                respondent = respondent_for(task, model, condition, name)  # a resumed run loads models lazily
                if reps > 1 and not getattr(respondent, "repeats", False):  # one record per stimulus: rep 0
                    job.pending = [s for s in pending
                                   if make_trial_id(task.task_id, s.stimulus_id, label, 0) not in store.done]
                # until the first trials are written, say what the model is doing (not a frozen 0/N)
                bar.update(ptask, description=f"{base}: {respondent.first_step(job)}", refresh=True)

                def advance(k, t=ptask, base=base, first=[True]):
                    if first[0]:
                        first[0] = False
                        bar.update(t, description=base)
                    bar.advance(t, k)
                job.advance = advance
                res = run_trials(job)
                summary.cache_hits += res.cache_hits
                summary.cache_requests += res.cache_requests
                summary.written += res.written
                summary.per_task_model[(task.task_id, label)] = res.written
    return summary


def _run_plan_on_ray(plan, cfg, store, run_id, out, extra_meta, gate, finished, summary, console,
                     ray_options: dict) -> None:
    """The plan of :func:`run` on Ray (the ``ray`` extra, imported only here)."""
    from .executors.ray_executor import run_plan

    def model_gate(name: str, info) -> None:
        gate(_model_differences(name, info, _finished_of(finished, name), kind=info.kind))
        if info.identity_warning:
            summary.warnings.append(info.identity_warning)
            if console is not None:
                from rich.markup import escape

                console.print(f"[yellow]warning:[/yellow] {escape(info.identity_warning)}", highlight=False)

    res = run_plan(plan, store=store, seed=cfg.seed, run_id=run_id, batch_size=cfg.batch_size, out=out,
                   cache_mode=cfg.cache_mode, extra_meta=extra_meta, gate=model_gate, runtime=cfg.runtime,
                   **ray_options)
    for key, (n, hits, reqs) in res.items():
        summary.written += n
        summary.cache_hits += hits
        summary.cache_requests += reqs
        summary.per_task_model[key] = n
