"""Tasks x models -> trial records: batching, resume, progress.

A run directory holds ``run.json`` (the settings a rerun must match), ``records.jsonl``
(append-only, see :class:`perceptbench.records.RecordStore`) and the scores.  A rerun
skips every trial already in ``records.jsonl``; a crashed run resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from . import __version__
from .readouts.encoder import (
    READOUT_SPECS, LinearProbeReadout, PrototypeReadout, RetrievalReadout, RidgeCountReadout, odd_one_out,
    readout_prompt_id)
from .records import RecordStore, make_trial_id
from .seeding import image_sha256, text_hash
from .tasks import get_task
from .tasks.base import Stimulus, Task, make_record
from .tasks.registry import DEFAULT_BATTERY


@dataclass
class RunConfig:
    out: Path
    tasks: Sequence[str] = DEFAULT_BATTERY
    models: Sequence[str] = ("efficientnet-lite0",)
    seed: int = 0
    batch_size: int = 32


@dataclass
class RunSummary:
    run_id: str
    written: int = 0
    human_written: int = 0
    skipped: int = 0
    cache_hits: int = 0
    cache_requests: int = 0
    per_task_model: dict = field(default_factory=dict)


def _check_run_json(out: Path, cfg: RunConfig) -> None:
    path = out / "run.json"
    records = out / "records.jsonl"
    has_records = records.exists() and records.stat().st_size > 0
    if path.exists() and has_records:
        prev = json.loads(path.read_text())
        if prev.get("seed") != cfg.seed:
            raise ValueError(f"{out} holds a run with seed {prev.get('seed')}; rerun with --seed "
                             f"{prev.get('seed')} to resume it, or choose a new --out for seed {cfg.seed}")
        return
    out.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"seed": cfg.seed, "package_version": __version__,
                               "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1))
    os.replace(tmp, path)


def _chunks(xs: list, n: int):
    for i in range(0, len(xs), n):
        yield xs[i:i + n]


class _EncoderRunner:
    """Runs one encoder on one task's pending test trials, appending records per chunk."""

    def __init__(self, task: Task, model, store: RecordStore, seed: int, run_id: str, batch_size: int,
                 advance: Callable[[int], None]):
        self.task, self.model, self.store, self.seed = task, model, store, seed
        self.run_id, self.bs, self.advance = run_id, batch_size, advance
        self.readout = task.encoder_readout_for(model)
        self.spec = READOUT_SPECS[self.readout]

    def _record(self, s: Stimulus, response, raw: str, img_sha: str, **meta):
        return make_record(
            self.task, stimulus_id=s.stimulus_id, model=self.model.name, model_family="encoder",
            readout=self.readout, response=response, ground_truth=s.ground_truth,
            manipulated_value=s.manipulated_value, raw_output=raw,
            prompt_id=readout_prompt_id(self.readout), prompt_hash=text_hash(self.spec),
            model_version=self.model.model_version, seed=self.seed, run_id=self.run_id,
            stimulus_sha256=img_sha, split=s.split, settings={"batch_size": self.bs}, **s.meta, **meta)

    def _embed_stimuli(self, stimuli: list[Stimulus]):
        out = []
        for chunk in _chunks(stimuli, self.bs):  # bounded memory: render one batch at a time
            out.append(self.model.embed([s.render() for s in chunk], batch_size=self.bs))
        return np.concatenate(out) if out else None

    def run(self, pending: list[Stimulus], probe: list[Stimulus]) -> int:
        written = 0
        if self.readout in ("prototype_cosine", "ridge_round", "linear_probe", "zero_shot_retrieval"):
            if self.readout == "zero_shot_retrieval":
                from .metrics.retrieval import retrieval_sentences

                cats = tuple(self.task.options())
                ro = RetrievalReadout(self.model.embed_text(retrieval_sentences(cats)), cats)
            else:
                if not probe:
                    hint = " (natural SalBench split: set probe_fraction, e.g. @probe_fraction=0.5)" \
                        if self.task.task_id.startswith("salbench.") and ".nat" in self.task.task_id else ""
                    raise ValueError(f"{self.task.task_id}: the {self.readout} readout of {self.model.name} needs "
                                     f"probe-train stimuli{hint}")
                emb = self._embed_stimuli(probe)
                truths = [s.ground_truth for s in probe]
                if self.readout == "prototype_cosine":
                    ro = PrototypeReadout(tuple(self.task.options())).fit(emb, truths)
                elif self.readout == "linear_probe":
                    ro = LinearProbeReadout().fit(emb, truths)
                else:
                    ro = RidgeCountReadout(min(truths), max(truths)).fit(emb, truths)
            for chunk in _chunks(pending, self.bs):
                imgs = [s.render() for s in chunk]
                resp, raw = ro.predict(self.model.embed(imgs, batch_size=self.bs))
                recs = [self._record(s, r, w, image_sha256(im), n_probe_train=len(probe))
                        for s, r, w, im in zip(chunk, resp, raw, imgs)]
                written += self.store.append(recs)
                self.advance(len(chunk))
        elif self.readout == "odd_one_out_cosine":
            cache: dict[str, object] = {}
            for chunk in _chunks(pending, self.bs):
                comps = [s.components() for s in chunk]
                hashes = [[image_sha256(c) for c in cs] for cs in comps]
                new = {}
                for cs, hs in zip(comps, hashes):
                    for c, h in zip(cs, hs):
                        if h not in cache:
                            new[h] = c
                if new:
                    emb = self.model.embed(list(new.values()), batch_size=self.bs)
                    cache.update(zip(new.keys(), emb))
                recs = []
                for s, hs in zip(chunk, hashes):
                    pos, raw = odd_one_out(np.stack([cache[h] for h in hs]))
                    recs.append(self._record(s, pos, raw, image_sha256(s.render()), component_sha256=hs))
                written += self.store.append(recs)
                self.advance(len(chunk))
        else:
            raise ValueError(f"unknown encoder readout {self.readout!r}")
        return written


def _vsi_features_cached(out: Path, name: str, task_id: str) -> bool:
    from .vsi_features import features_cached

    return features_cached(out / "features", name, task_id)


def run(cfg: RunConfig, *, progress: bool = True, load_model: Callable | None = None,
        console=None) -> RunSummary:
    """Run tasks x models into ``cfg.out``; returns what was written and skipped.

    Human records are written first (they need no model).  A model is loaded only if one
    of its trials is missing.  Raises ValueError for settings that do not match an
    existing run directory, KeyError for an unknown task, ModelLoadError for a model."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from .models.registry import load_model as _load, parse_model_arg

    load_model = load_model or _load
    out = Path(cfg.out)
    run_id = f"run-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}"
    summary = RunSummary(run_id)
    # everything that can fail on bad arguments or missing sources fails before anything is written
    tasks = [get_task(t) for t in cfg.tasks]
    names = [parse_model_arg(m)[0] for m in cfg.models]
    if len(set(names)) != len(names):
        raise ValueError(f"two models share a short name: {names}; name them with SHORT=SPEC")
    task_stimuli = [(task, task.stimuli(cfg.seed)) for task in tasks]
    _check_run_json(out, cfg)
    with RecordStore(out / "records.jsonl") as store:
        versions: dict[str, set[str]] = {}
        if store.done:
            from .records import read_records

            for r in read_records(store.path):
                if r.model_family != "human":
                    versions.setdefault(r.model, set()).add(r.run_meta.model_version)
        plan = []
        for task, stimuli in task_stimuli:
            hr = task.human_records(cfg.seed, run_id, stimuli)
            n_h = store.append(hr)
            summary.written += n_h
            summary.human_written += n_h
            test = [s for s in stimuli if s.split == "test"]
            for arg, name in zip(cfg.models, names):
                pending = [s for s in test
                           if make_trial_id(task.task_id, s.stimulus_id, name, 0) not in store.done]
                summary.skipped += len(test) - len(pending)
                if pending or (getattr(task, "is_vsi", False) and not _vsi_features_cached(out, name, task.task_id)):
                    plan.append((task, stimuli, arg, name, pending))
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), disable=not progress, console=console) as bar:
            bars = [bar.add_task(f"{task.task_id} | {name}", total=len(pending))
                    for task, _, _, name, pending in plan]
            models: dict[str, object] = {}
            for (task, stimuli, arg, name, pending), ptask in zip(plan, bars):
                if arg not in models:
                    bar.update(ptask, description=f"loading {name} ...")
                    models[arg] = load_model(arg)
                    old = versions.get(name, set()) - {models[arg].model_version}
                    if old:
                        raise ValueError(
                            f"{out} already holds trials of {name} from model_version {sorted(old)[0]}, but "
                            f"{arg} is {models[arg].model_version}; resume with the same weights, or give this "
                            "model another short name (SHORT=SPEC) or another --out")
                model = models[arg]
                bar.update(ptask, description=f"{task.task_id} | {name}")
                probe = [s for s in stimuli if s.split == "probe_train"]
                advance = (lambda k, t=ptask: bar.advance(t, k))
                if getattr(model, "family", "encoder") == "encoder" and getattr(task, "is_vsi", False):
                    raise ValueError(f"{task.task_id} measures a VLM's next-token distribution; {name} is an "
                                     "image encoder (give a VLM: hf:<VLM> or an API model)")
                if getattr(model, "family", "encoder") == "encoder":
                    n = _EncoderRunner(task, model, store, cfg.seed, run_id, cfg.batch_size, advance).run(pending, probe)
                else:
                    if getattr(task, "is_vsi", False):
                        from .vsi_runner import run_vsi_task as run_vlm_task
                    else:
                        from .vlm_runner import run_vlm_task
                    n, hits, reqs = run_vlm_task(task, model, store, pending, cfg.seed, run_id, cfg.batch_size,
                                                 out, advance)
                    if getattr(task, "is_vsi", False):  # encoder-LLM probe features (seed 002 §2.4)
                        from .vsi_features import cache_task_features

                        cache_task_features(task, getattr(model, "inner", model), out / "features", cfg.seed)
                    summary.cache_hits += hits
                    summary.cache_requests += reqs
                summary.written += n
                summary.per_task_model[(task.task_id, name)] = n
    return summary
