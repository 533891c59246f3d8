"""VSI trials: clean greedy answers + first-answer-token distributions, perturbed prefill passes.

For each pending VSI stimulus (one per sample x condition, see :mod:`perceptbench.tasks.vsi`):

* ``clean``: one greedy generation (``task.max_new_tokens``: 8, HallusionBench 64, seed 002 D.1;
  honoured by the ``hf:`` adapter unless it was built with an explicit cap; the budget used is
  recorded as ``settings.max_new_tokens``) whose first step's raw logits give the clean
  distribution (local ``hf:`` VLMs: :meth:`HFVLM.generate_with_distribution`; API models: a
  generation plus one ``logprobs`` request), the parse and correctness, the maximum first-token
  probability, and (setting ``verbal_conf``) the answer to a follow-up user turn asking for a
  0-100 confidence (:data:`~perceptbench.tasks.vsi.CONFIDENCE_PROMPT`), parsed as the first integer
  (seed 002 appendix A).  A local model answers the follow-up from the clean pass's KV cache (only
  the answer and the new turn are prefilled: :meth:`HFVLM.generate_with_distribution_and_follow_up`);
  records carry ``confidence_prompt``, ``confidence_turn`` and ``confidence_kv_reuse``.
* ``region_blur`` / ``whole_blur``: prefill passes only (no generation), batched
  (:meth:`HFVLM.next_token_distributions`).

Everything a model returns goes through the content-addressed response cache
(:mod:`perceptbench.models.response_cache`): greedy texts keyed like ordinary prompt trials plus
the token budget used, confidence answers under the whole follow-up conversation, distributions
under keys whose settings add ``{"vsi_first_token": {"top_k", "answer_prefix"}}``, so a rerun or
resumed run calls no model for what it has (entries written without fsync: the records are the
durable output, a lost entry is a miss).  Cache modes as for prompt trials (``refresh``
recomputes and stores, ``off`` neither reads nor stores).
Records are appended per chunk; a killed run resumes at the missing records.

A model that cannot return a next-token distribution (``NotSupportedByProvider``, e.g. a
server that ignores ``logprobs``, or an API model with a declared answer prefix) gets records
with a null response and ``run_meta.skipped`` naming the reason; the task scores a ``skipped``
row for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numpy as np

from typing import TYPE_CHECKING

from .models.base import NotSupportedByProvider, TokenDistribution, VLMRequest
from .seeding import image_sha256, text_hash
from .tasks.base import Stimulus
from .tasks.vsi import CONF_MAX_NEW_TOKENS, CONFIDENCE_PROMPT, CONFIDENCE_TURN

if TYPE_CHECKING:
    from .respond.context import TrialContext

__all__ = ["run_vsi_task", "dist_to_meta", "vsi_model", "vsi_context", "vsi_record", "EMPTY_DIST"]


def dist_to_meta(d: TokenDistribution, source: str) -> dict:
    """A distribution as the JSON-able ``run_meta.vsi`` keys (ids, tokens, logprobs, complete)."""
    return {"token_ids": None if d.token_ids is None else [int(i) for i in d.token_ids],
            "tokens": [str(t) for t in d.tokens], "logprobs": [float(x) for x in np.asarray(d.logprobs)],
            "complete": bool(d.complete), "distribution_source": source}


def _dist_from_meta(m: dict) -> TokenDistribution:
    return TokenDistribution(tuple(m["tokens"]), np.asarray(m["logprobs"], dtype=np.float64), bool(m["complete"]),
                             None if m["token_ids"] is None else tuple(m["token_ids"]))


class _VSIModel:
    """The model calls VSI needs, behind the response cache."""

    def __init__(self, cached, task, top_k: int):
        self.cached, self.inner, self.task = cached, cached.inner, task
        self.prefix = task.answer_prefix
        self.is_hf = hasattr(self.inner, "generate_with_distribution")
        self.top_k = top_k if self.is_hf else min(top_k, int(getattr(self.inner, "max_top_logprobs", top_k)))
        self.source = "hf_logits" if self.is_hf else "api_top_logprobs"
        self.cache = cached.cache
        self.calls = 0

    def _dist_key(self, req: VLMRequest, shas: list[str]) -> str:
        settings = dict(self.inner.generation_settings,
                        vsi_first_token={"top_k": self.top_k, "answer_prefix": self.prefix})
        return self.cache.key_for(self.inner.model_version, req.prompt, shas, settings)

    def _text_key(self, req: VLMRequest, shas: list[str]) -> str:
        settings = dict(self.cached.request_settings(req), max_new_tokens=self.budget(req.max_new_tokens))
        if self.prefix:  # a prefixed answer is another request: key it apart
            settings["answer_prefix"] = self.prefix
        return self.cache.key_for(self.inner.model_version, req.prompt, shas, settings)

    def _get_dist(self, key: str) -> dict | None:
        t = self.cache.get(key)
        if t is None:
            return None
        try:
            m = json.loads(t)
            _dist_from_meta(m)
            return m
        except (ValueError, KeyError, TypeError):
            return None

    def _put_dist(self, key: str, m: dict) -> None:
        self.cache.put(key, json.dumps(m), meta={"model_version": self.inner.model_version, "kind": "vsi_first_token"},
                       fsync=False)

    def check_supported(self) -> str | None:
        """The reason this model cannot take part, or None."""
        if not self.is_hf and self.prefix:
            return (f"{self.inner.name}: an answer prefix ({self.prefix!r}) cannot be appended to an API model's "
                    "assistant turn")
        if not hasattr(self.inner, "next_token_distribution"):
            return f"{self.inner.name} exposes no next-token distribution"
        return None

    def _conf_key(self, req: VLMRequest, shas: list[str], answer: str) -> str:
        """Key of a confidence answer: the whole follow-up conversation and its budget."""
        conv = json.dumps({"turns": [req.prompt, self.prefix + answer.strip(), CONFIDENCE_PROMPT],
                           "confidence_turn": CONFIDENCE_TURN})
        settings = dict(self.inner.generation_settings, request_max_new_tokens=CONF_MAX_NEW_TOKENS,
                        max_new_tokens=self.budget(CONF_MAX_NEW_TOKENS), confidence_turn=CONFIDENCE_TURN)
        return self.cache.key_for(self.inner.model_version, conv, shas, settings)

    def budget(self, n: int) -> int:
        """New tokens a request asking for ``n`` actually gets from this model."""
        f = getattr(self.inner, "answer_budget", None)
        if f is not None:
            return int(f(n))
        cap = getattr(self.inner, "max_tokens", None)  # API adapters: a set max_tokens replaces the request's
        return int(cap) if cap is not None else int(n)

    def follow_up_supported(self) -> bool:
        return hasattr(self.inner, "generate_follow_up")

    def _cache_get(self, key: str) -> str | None:
        return self.cache.get(key) if self.cached.mode == "use" else None

    def clean(self, reqs: list[VLMRequest], shas: list[list[str]], batch_size: int, conf: bool
              ) -> list[tuple[str, dict, str | None, bool | None]]:
        """(greedy text, distribution meta, confidence answer or None, KV cache reused or None) per
        request.  With ``conf`` the confidence question is a follow-up turn
        (:data:`~perceptbench.tasks.vsi.CONFIDENCE_PROMPT`); a local model answers it reusing
        the clean pass's KV cache; ``cache_reused`` is None for answers served from the response
        cache and for API models."""
        tkeys = [self._text_key(r, s) for r, s in zip(reqs, shas)]
        dkeys = [self._dist_key(r, s) for r, s in zip(reqs, shas)]
        texts = [self._cache_get(k) for k in tkeys]
        dists = [self._get_dist(k) if self.cached.mode == "use" else None for k in dkeys]
        if getattr(self.inner, "verify_cache_hits", False) and not self.cached.verified and not self.prefix:
            hit = next((i for i, t in enumerate(texts) if t is not None), None)
            if hit is not None:  # a name-only model: re-ask one cached answer (StaleCacheError if it changed)
                self.cached._verify(reqs[hit], texts[hit])
        confs: list[str | None] = [None] * len(reqs)
        reused: list[bool | None] = [None] * len(reqs)
        if conf:
            confs = [None if t is None else self._cache_get(self._conf_key(r, s, t))
                     for r, s, t in zip(reqs, shas, texts)]
        todo = [i for i in range(len(reqs)) if texts[i] is None or dists[i] is None or (conf and confs[i] is None)]
        full = [i for i in todo if texts[i] is None or dists[i] is None]
        # requests counted as answers: the clean one and (conf) the confidence one per stimulus
        self.cached.hits += (len(reqs) - len(full)) + (sum(c is not None for c in confs) if conf else 0)
        self.cached.calls += len(full) + (sum(c is None for c in confs) if conf else 0)
        if full:
            if self.is_hf and conf and hasattr(self.inner, "generate_with_distribution_and_follow_up"):
                res = self.inner.generate_with_distribution_and_follow_up(
                    [reqs[i] for i in full], CONFIDENCE_PROMPT, CONF_MAX_NEW_TOKENS, top_k=self.top_k,
                    batch_size=batch_size, answer_prefix=self.prefix)
                for i, (t, d, f) in zip(full, res):
                    texts[i], dists[i], confs[i], reused[i] = t, dist_to_meta(d, self.source), f.text, f.cache_reused
            elif self.is_hf:
                res = self.inner.generate_with_distribution([reqs[i] for i in full], top_k=self.top_k,
                                                            batch_size=batch_size, answer_prefix=self.prefix)
                for i, (t, d) in zip(full, res):
                    texts[i], dists[i] = t, dist_to_meta(d, self.source)
            else:  # distributions first: a provider without logprobs fails before any paid generation
                for i in full:
                    if dists[i] is None:
                        r = reqs[i]
                        dists[i] = dist_to_meta(self.inner.next_token_distribution(r.images, r.prompt,
                                                                                   top_k=self.top_k), self.source)
                need_t = [i for i in full if texts[i] is None]
                for i, t in zip(need_t, self.inner.generate([reqs[i] for i in need_t], batch_size=batch_size)):
                    texts[i] = t
        if conf and self.follow_up_supported():
            need_c = [i for i in todo if confs[i] is None]
            if need_c:  # clean answer from the cache (or an API model): the whole conversation
                res = self.inner.generate_follow_up([reqs[i] for i in need_c], [texts[i] for i in need_c],
                                                    CONFIDENCE_PROMPT, CONF_MAX_NEW_TOKENS, batch_size=batch_size,
                                                    answer_prefix=self.prefix)
                for i, f in zip(need_c, res):
                    confs[i] = f if isinstance(f, str) else f.text
                    reused[i] = None if isinstance(f, str) else f.cache_reused
        if todo:
            if self.cached.mode != "off":
                for i in todo:
                    self.cache.put(tkeys[i], texts[i], meta={"model_version": self.inner.model_version}, fsync=False)
                    self._put_dist(dkeys[i], dists[i])
                    if conf and confs[i] is not None:
                        self.cache.put(self._conf_key(reqs[i], shas[i], texts[i]), confs[i],
                                       meta={"model_version": self.inner.model_version, "kind": "vsi_confidence"},
                                       fsync=False)
        return list(zip(texts, dists, confs, reused))  # type: ignore[arg-type]

    def prefill(self, reqs: list[VLMRequest], shas: list[list[str]], batch_size: int) -> list[dict]:
        """Distribution meta per request (perturbed conditions: no generation)."""
        keys = [self._dist_key(r, s) for r, s in zip(reqs, shas)]
        dists = [self._get_dist(k) for k in keys]
        todo = [i for i, d in enumerate(dists) if d is None]
        self.cached.hits += len(reqs) - len(todo)
        if todo:
            if self.is_hf:
                res = self.inner.next_token_distributions([reqs[i] for i in todo], top_k=self.top_k,
                                                          batch_size=batch_size, answer_prefix=self.prefix)
            else:
                res = [self.inner.next_token_distribution(reqs[i].images, reqs[i].prompt, top_k=self.top_k)
                       for i in todo]
            self.cached.calls += len(todo)
            for i, d in zip(todo, res):
                dists[i] = dist_to_meta(d, self.source)
                self._put_dist(keys[i], dists[i])
        return dists  # type: ignore[return-value]


def vsi_model(cached, task) -> _VSIModel:
    """The VSI model calls of ``task`` through ``cached`` (a
    :class:`~perceptbench.models.response_cache.CachedVLM`)."""
    return _VSIModel(cached, task, task.top_k)


def vsi_context(ctx: "TrialContext", m: _VSIModel) -> "TrialContext":
    """``ctx`` with the settings of every VSI record: the model's generation settings, the
    token budget asked (``request_max_new_tokens``) and the one it gets (``max_new_tokens``)."""
    task = ctx.task
    return ctx.with_(settings={**m.inner.generation_settings, "request_max_new_tokens": task.max_new_tokens,
                               "max_new_tokens": m.budget(task.max_new_tokens)})


def vsi_record(ctx: "TrialContext", m: _VSIModel, s: Stimulus, *, vsi_extra: dict, readout: str | None = None,
               response=None, raw=None, prompt: str | None = None, skipped: str | None = None, **meta):
    """One VSI record of stimulus ``s``: ``run_meta.vsi`` = the stimulus's VSI meta, ``top_k``
    and ``vsi_extra`` (distribution, image hash, confidence); ``skipped``: the reason a trial was
    not asked (null response)."""
    vsi = {**s.meta["vsi"], "top_k": m.top_k, **vsi_extra}
    extra = {k: v for k, v in s.meta.items() if k not in ("vsi", "vsi_prompt")}
    if skipped is not None:
        return ctx.skipped(s, skipped, readout=readout, settings=ctx.settings, vsi=vsi, **extra, **meta)
    return ctx.record(s, response=response, raw_output=raw, prompt_hash=None if prompt is None else text_hash(prompt),
                      readout=readout, vsi=vsi, **extra, **meta)


EMPTY_DIST = {"token_ids": None, "tokens": [], "logprobs": [], "complete": False, "image_sha256": None,
              "max_prob": None, "verbal_conf": None, "verbal_raw": None}
"""``vsi_extra`` of a skipped VSI record (plus ``distribution_source``)."""


def run_vsi_task(ctx: "TrialContext", cached, sink, pending: list[Stimulus], batch_size: int,
                 advance: Callable[[int], None]) -> tuple[int, int, int]:
    """Write the pending VSI records of one task x model; returns (written, cache hits, requests).

    ``ctx``: the records' :class:`~perceptbench.respond.context.TrialContext` (task, model
    identity, ``run_meta`` of the run); ``cached``: the model behind the response cache;
    ``sink``: where records are appended."""
    from .readouts.answers import parse_confidence

    task = ctx.task
    m = vsi_model(cached, task)
    ctx = vsi_context(ctx, m)
    hits0, calls0 = cached.hits, cached.calls

    def record(s: Stimulus, **kw):
        return vsi_record(ctx, m, s, **kw)

    reason = m.check_supported()
    written = 0
    step = batch_size * len(task.conditions)  # ~batch_size samples per chunk: full batches in every pass
    for i in range(0, len(pending), step):
        chunk = pending[i:i + step]
        if reason is None:
            try:
                written += _run_chunk(task, m, chunk, batch_size, record, parse_confidence, sink)
            except NotSupportedByProvider as e:
                reason = str(e)
        if reason is not None:
            empty = {**EMPTY_DIST, "distribution_source": m.source}
            written += sink.append([record(s, readout="vlm_vsi_" + ("clean" if s.meta["vsi"]["condition"] == "clean"
                                                                   else "perturbed"),
                                           vsi_extra=empty, skipped=reason) for s in chunk])
        advance(len(chunk))
    return written, cached.hits - hits0, (cached.hits - hits0) + (cached.calls - calls0)


def _run_chunk(task, m: _VSIModel, chunk: list[Stimulus], batch_size: int, record, parse_confidence,
               store) -> int:
    imgs = [s.render() for s in chunk]
    shas = [[image_sha256(im)] for im in imgs]
    prompts = [s.meta["vsi_prompt"] for s in chunk]
    clean_i = [k for k, s in enumerate(chunk) if s.meta["vsi"]["condition"] == "clean"]
    pert_i = [k for k, s in enumerate(chunk) if s.meta["vsi"]["condition"] != "clean"]
    recs: dict[int, object] = {}
    if clean_i:
        reqs = [VLMRequest((imgs[k],), prompts[k], task.max_new_tokens) for k in clean_i]
        conf = task.verbal_conf and m.follow_up_supported()
        res = m.clean(reqs, [shas[k] for k in clean_i], batch_size, conf)
        for k, (text, dist, ct, reused) in zip(clean_i, res):
            s = chunk[k]
            response, parse_meta = task.parse_for(s, text)
            vc = None if ct is None else parse_confidence(ct)
            conf_meta = {}
            if task.verbal_conf:
                conf_meta = {"confidence_prompt": CONFIDENCE_PROMPT, "confidence_turn": CONFIDENCE_TURN,
                             "confidence_max_new_tokens": m.budget(CONF_MAX_NEW_TOKENS),
                             "confidence_kv_reuse": reused}
                if not conf:
                    conf_meta["confidence_skipped"] = f"{m.inner.name} cannot answer a follow-up turn"
            recs[k] = record(s, response=response, raw=text, prompt=prompts[k], readout="vlm_vsi_clean",
                             vsi_extra={**dist, "image_sha256": shas[k][0],
                                        "max_prob": float(np.exp(dist["logprobs"][0])),
                                        "verbal_conf": vc, "verbal_raw": ct, **conf_meta},
                             parse=parse_meta, stimulus_sha256=shas[k][0],
                             **({"confidence_prompt_hash": task.confidence_prompt_hash} if task.verbal_conf
                                else {}))
    if pert_i:
        reqs = [VLMRequest((imgs[k],), prompts[k], 1) for k in pert_i]
        dists = m.prefill(reqs, [shas[k] for k in pert_i], batch_size)
        for k, dist in zip(pert_i, dists):
            recs[k] = record(chunk[k], prompt=prompts[k], readout="vlm_vsi_perturbed",
                             vsi_extra={**dist, "image_sha256": shas[k][0], "max_prob": None, "verbal_conf": None,
                                        "verbal_raw": None}, stimulus_sha256=shas[k][0])
    return store.append([recs[k] for k in sorted(recs)])

