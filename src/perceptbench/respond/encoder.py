"""The encoder respondent: an image encoder answers through a readout (seed 000 §2.2
"Readouts").  Readouts are a registry (:data:`READOUTS`) of (spec, fit, predict): the spec
text is :data:`perceptbench.readouts.encoder.READOUT_SPECS` (its hash is the record's
``prompt_hash``), ``fit`` builds the readout from probe-train embeddings (or the task's
option texts), ``predict`` answers one chunk of test stimuli."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..models.base import RuntimeDeclared, default_batch_size
from ..readouts.encoder import (
    READOUT_SPECS, ClassProbeReadout, LinearProbeReadout, PrototypeReadout, RetrievalReadout, RidgeCountReadout,
    odd_one_out, readout_prompt_id)
from ..seeding import image_sha256, text_hash
from ..tasks.base import Stimulus
from .base import RESPONDENTS, Job, Respondent, Result
from .context import TrialContext
from ..core.registry import Registry


def _chunks(xs: list, n: int):
    for i in range(0, len(xs), n):
        yield xs[i:i + n]


@dataclass
class _Encoding:
    """The encoder, batch size and context a readout works with."""

    job: Job
    bs: int
    ctx: TrialContext

    def embed(self, images: list) -> np.ndarray:
        """(n, d) float32 embeddings of PIL images, ``bs`` per forward pass."""
        return self.job.model.embed(images, batch_size=self.bs)

    def embed_stimuli(self, stimuli: list[Stimulus]) -> np.ndarray:
        """(n, d) embeddings of rendered stimuli, one batch rendered at a time (bounded memory)."""
        return np.concatenate([self.embed([s.render() for s in chunk]) for chunk in _chunks(stimuli, self.bs)])


@dataclass(frozen=True)
class Readout:
    """One encoder readout: ``fit(enc) -> state`` (before any test trial) and
    ``predict(enc, chunk, state) -> records``; ``needs_probe``: fit needs probe-train stimuli."""

    fit: Callable[[_Encoding], Any]
    predict: Callable[[_Encoding, list[Stimulus], Any], list]
    needs_probe: bool = False


READOUTS: Registry[Readout] = Registry("encoder readout")


def _probe(enc: _Encoding) -> tuple[np.ndarray, list]:
    job = enc.job
    if not job.probe:
        hint = " (natural SalBench split: set probe_fraction, e.g. @probe_fraction=0.5)" \
            if job.task.task_id.startswith("salbench.") and ".nat" in job.task.task_id else ""
        raise ValueError(f"{job.task.task_id}: the {enc.ctx.readout} readout of {job.model.name} needs "
                         f"probe-train stimuli{hint}")
    return enc.embed_stimuli(job.probe), [s.ground_truth for s in job.probe]


def _predict_images(enc: _Encoding, chunk: list[Stimulus], ro) -> list:
    """Embed each rendered test stimulus and answer with the fitted readout ``ro``."""
    imgs = [s.render() for s in chunk]
    resp, raw = ro.predict(enc.embed(imgs))
    return [enc.ctx.record(s, response=r, raw_output=w, prompt_hash=text_hash(READOUT_SPECS[enc.ctx.readout]),
                           stimulus_sha256=image_sha256(im), **s.meta, n_probe_train=len(enc.job.probe))
            for s, r, w, im in zip(chunk, resp, raw, imgs)]


def _fit_with(make: Callable[[_Encoding, list], Any]) -> Callable[[_Encoding], Any]:
    """A fit that embeds the probe-train stimuli and fits ``make(enc, truths)`` on them."""
    def fit(enc: _Encoding):
        emb, truths = _probe(enc)
        return make(enc, truths).fit(emb, truths)
    return fit


READOUTS.add("prototype_cosine", Readout(_fit_with(lambda enc, t: PrototypeReadout(tuple(enc.job.task.options()))),
                                         _predict_images, True))
READOUTS.add("ridge_round", Readout(_fit_with(lambda enc, t: RidgeCountReadout(min(t), max(t))), _predict_images,
                                    True))
READOUTS.add("linear_probe", Readout(_fit_with(lambda enc, t: LinearProbeReadout()), _predict_images, True))
READOUTS.add("class_probe", Readout(_fit_with(lambda enc, t: ClassProbeReadout()), _predict_images, True))


def _fit_retrieval(enc: _Encoding):
    from ..metrics.retrieval import retrieval_sentences

    cats = tuple(enc.job.task.options())
    return RetrievalReadout(enc.job.model.embed_text(retrieval_sentences(cats)), cats)


READOUTS.add("zero_shot_retrieval", Readout(_fit_retrieval, _predict_images))


def _predict_odd_one_out(enc: _Encoding, chunk: list[Stimulus], cache: dict) -> list:
    """Embed each component once per run (cached by content hash); odd one out by cosine."""
    comps = [s.components() for s in chunk]
    hashes = [[image_sha256(c) for c in cs] for cs in comps]
    new = {}
    for cs, hs in zip(comps, hashes):
        for c, h in zip(cs, hs):
            if h not in cache:
                new[h] = c
    if new:
        cache.update(zip(new.keys(), enc.embed(list(new.values()))))
    recs = []
    for s, hs in zip(chunk, hashes):
        pos, raw = odd_one_out(np.stack([cache[h] for h in hs]))
        recs.append(enc.ctx.record(s, response=pos, raw_output=raw,
                                   prompt_hash=text_hash(READOUT_SPECS[enc.ctx.readout]),
                                   stimulus_sha256=image_sha256(s.render()), **s.meta, component_sha256=hs))
    return recs


READOUTS.add("odd_one_out_cosine", Readout(lambda enc: {}, _predict_odd_one_out))


@RESPONDENTS.register("encoder_readout")
class EncoderRespondent(Respondent):
    """An image encoder on a battery task, through the readout the task chooses for it
    (:meth:`~perceptbench.tasks.base.Task.encoder_readout_for`); trials of a setting the
    readout does not apply to (:meth:`~perceptbench.tasks.base.Task.encoder_not_applicable`)
    are recorded as skipped, nothing rendered or embedded."""

    @classmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        return task_kind == "battery" and model_kind == "encoder"

    def _encoding(self, job: Job) -> _Encoding:
        readout = job.task.encoder_readout_for(job.model)
        bs = default_batch_size(job.batch_size, "encoder")
        ctx = job.context(model_name=job.model.name, model_family="encoder", model_version=job.model.model_version,
                          readout=readout, prompt_id=readout_prompt_id(readout),
                          settings={"batch_size": bs, **(job.model.runtime_settings
                                                         if isinstance(job.model, RuntimeDeclared) else {})})
        return _Encoding(job, bs, ctx)

    def first_step(self, job: Job) -> str:
        readout = job.task.encoder_readout_for(job.model)
        if job.task.encoder_not_applicable(readout):
            return "recording skipped trials"
        if readout in READOUTS and READOUTS.get(readout).needs_probe:
            return f"computing probe features ({len(job.probe)} probe-train stimuli) ..."
        return "embedding the first batch ..."

    def run(self, job: Job) -> Result:
        enc = self._encoding(job)
        readout = enc.ctx.readout
        why = job.task.encoder_not_applicable(readout)
        if why:
            n = job.sink.append([enc.ctx.skipped(s, why, prompt_hash=text_hash(READOUT_SPECS[readout]))
                                 for s in job.pending])
            job.advance(len(job.pending))
            return Result(n)
        if readout not in READOUTS:
            raise ValueError(f"unknown encoder readout {readout!r}")
        spec = READOUTS.get(readout)
        state = spec.fit(enc)
        written = 0
        for chunk in _chunks(job.pending, enc.bs):
            written += job.sink.append(spec.predict(enc, chunk, state))
            job.advance(len(chunk))
        return Result(written)
