"""The VSI respondent (registered as ``vlm_vsi`` in :data:`perceptbench.respond.RESPONDENTS`) and
its trials: clean greedy answers + first-answer-token distributions, perturbed prefill passes,
then the encoder-LLM probe features of the task (seed 002 §2.4,
:func:`perceptbench.vsi.features.cache_task_features`).

For each pending VSI stimulus (one per sample x condition, see :mod:`perceptbench.vsi.protocol`):

* ``clean``: one greedy generation (``task.max_new_tokens``: 8, HallusionBench 64, seed 002 D.1;
  honoured by the ``hf:`` adapter unless it was built with an explicit cap; the budget used is
  recorded as ``settings.max_new_tokens``) whose first step's raw logits give the clean
  distribution (local ``hf:`` VLMs: :meth:`HFVLM.generate_with_distribution`; API models: a
  generation plus one ``logprobs`` request), the parse and correctness, the maximum first-token
  probability, and (setting ``verbal_conf``) the answer to a follow-up user turn asking for a
  0-100 confidence (:data:`~perceptbench.vsi.protocol.CONFIDENCE_PROMPT`), parsed as the first integer
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

A model that cannot return a next-token distribution (an API model without the capability or
with a declared answer prefix; a server that refuses ``logprobs``; one that returns none
*consistently*: :data:`NO_LOGPROBS_UNSUPPORTED_AFTER` requests in a row and never one with
logprobs) gets records with a null response and ``run_meta.skipped`` naming the reason; the
task scores a ``skipped`` row for it.  A request whose response lacks logprobs otherwise (a
glitch the adapter's retries did not cure) writes no record: its trial stays pending and the
next run asks it again (a warning says how many).

Every distribution is checked when it arrives (:func:`perceptbench.metrics.topk_kl.distribution_problem`:
finite, <= 0, total probability <= 1 + ``MASS_TOL``): a bad one makes that trial a recorded skip
(``run_meta.skipped`` = the problem, ``skip_scope`` = ``"trial"``), never a stop.  Flags a
distribution shows on its own (``non_answer_position``, ``uninformative``:
:func:`perceptbench.vsi.samples.distribution_flags`) and, on a clean record of an API model, a
greedy answer that does not begin with the distribution's most probable token
(``answer_token_mismatch``: the answer and the distribution come from two requests) are written
to ``run_meta.vsi.flags``; scoring leaves flagged samples out of VSI and counts them per cell.
When a model call fails for good, the records of the chunk that are complete are written before
the error stops the run.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..core.rundir import RunDir
from ..metrics.topk_kl import distribution_problem
from ..models.base import (BatchedDistributions, DistributionAndFollowUp, FirstTokenDistribution, FollowUpTurn,
                           NoLogprobs, NotSupportedByProvider, PartialAnswers, TopLogprobsLimit, VLMRequest,
                           answer_budget, default_batch_size)
from ..models.response_cache import CachedVLM, dist_to_meta
from ..respond.base import RESPONDENTS, Job, Respondent, Result
from ..respond.context import prompt_version
from ..respond.prompt import cached_model, identity_meta
from ..seeding import image_sha256, text_hash
from ..tasks.base import Stimulus
from .features import cache_task_features
from .protocol import CONF_MAX_NEW_TOKENS, CONFIDENCE_PROMPT, CONFIDENCE_TURN
from .samples import answer_token_agrees, dist_keys, distribution_flags

if TYPE_CHECKING:
    from ..respond.context import TrialContext

__all__ = ["VSIRespondent", "run_vsi_task", "dist_to_meta", "vsi_model", "vsi_context", "vsi_job_context",
           "vsi_record", "EMPTY_DIST", "NO_LOGPROBS_UNSUPPORTED_AFTER", "skip_trial_record", "flag_meta"]

log = logging.getLogger(__name__)

NO_LOGPROBS_UNSUPPORTED_AFTER = 3
"""Distribution requests in a row whose responses carried no logprobs (each after the adapter's
retries, where it retries) before a model that has not returned logprobs once in this run is
declared unsupported; a task that asks fewer, every one without logprobs, declares it too at its
end.  Any other response without logprobs (fewer in a row, or after one with logprobs) is a
glitch: its trial stays pending for the next run."""


def vsi_job_context(job: Job, cached, readout: str = "vlm_vsi_clean"):
    """The :class:`~perceptbench.respond.context.TrialContext` of ``job``'s VSI records."""
    return job.context(model_name=cached.name, model_family=cached.family, model_version=cached.model_version,
                       readout=readout, prompt_id=job.task.prompt_id,
                       meta={**identity_meta(cached), "prompt_template_hash": prompt_version(job.task)})


@RESPONDENTS.register("vlm_vsi")
class VSIRespondent(Respondent):
    """A VLM on a VSI task (:class:`perceptbench.vsi.protocol.VSITask`)."""

    @classmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        return task_kind == "vsi" and model_kind == "vlm"

    def first_step(self, job: Job) -> str:
        return super().first_step(job) if job.pending else "computing VSI probe features ..."

    def run(self, job: Job) -> Result:
        cached = cached_model(job)
        n, hits, reqs = run_vsi_task(vsi_job_context(job, cached), cached, job.sink, job.pending,
                                     default_batch_size(job.batch_size, "vlm"), job.advance)
        cache_task_features(job.task, cached, RunDir(job.out).features, job.seed, cache_mode=job.cache_mode)
        return Result(n, hits, reqs)


class _VSIModel:
    """The model calls VSI needs, through the cached wrapper's protocol methods (the wrapper owns the
    cache keys and the cache policy); here only which protocol serves which VSI call."""

    def __init__(self, cached: CachedVLM, task, top_k: int):
        self.cached, self.task = cached, task
        self.prefix = task.answer_prefix
        self.is_hf = isinstance(cached, BatchedDistributions)
        self.top_k = top_k if self.is_hf or not isinstance(cached, TopLogprobsLimit) else min(
            top_k, int(cached.max_top_logprobs))
        self.source = cached.distribution_source
        self.unsupported: str | None = None  # declared while running (consistently no logprobs)
        self.ever_ok = False  # a distribution arrived (or came from the cache) in this run
        self.no_logprobs_run = 0  # consecutive responses without logprobs
        self.no_logprobs_message = ""  # the last such response's NoLogprobs message
        self.unanswered = 0  # requests left pending (no logprobs, a glitch)
        self.failure: BaseException | None = None  # a model call that failed for good in this chunk

    def _api_dists(self, reqs: list[VLMRequest], shas: list[list[str]]) -> list[dict | None]:
        """One API distribution request per request, in order: its meta, or None when it did not
        arrive (no logprobs; the model declared unsupported; a failure, kept in ``failure``, after
        which nothing more is sent)."""
        out: list[dict | None] = []
        for r, sh in zip(reqs, shas):
            if self.unsupported is not None or self.failure is not None:
                out.append(None)
                continue
            try:
                d = self.cached.next_token_distribution(r.images, r.prompt, top_k=self.top_k, image_sha256s=sh)
            except NoLogprobs as e:
                self.no_logprobs_run += 1
                self.no_logprobs_message = str(e)
                if not self.ever_ok and self.no_logprobs_run >= NO_LOGPROBS_UNSUPPORTED_AFTER:
                    self.unsupported = (f"{e} (consistently: {self.no_logprobs_run} requests in a row, none with "
                                        "logprobs)")
                else:
                    self.unanswered += 1
                out.append(None)
                continue
            except NotSupportedByProvider as e:  # an explicit refusal (HTTP 400/422 naming logprobs)
                self.unsupported = str(e)
                out.append(None)
                continue
            except Exception as e:  # noqa: BLE001 - kept, raised after the chunk's finished records
                self.failure = e
                out.append(None)
                continue
            self.ever_ok, self.no_logprobs_run = True, 0
            out.append(dist_to_meta(d, self.source))
        return out

    def _some(self, call: Callable[[list[int]], list], todo: list[int], n: int) -> list:
        """``call(todo)`` spread over ``n`` slots (None elsewhere); answers that arrived before a
        :class:`PartialAnswers` are kept, the failure in ``failure``."""
        out: list = [None] * n
        if not todo or self.failure is not None:
            return out
        try:
            got = call(todo)
        except PartialAnswers as e:
            got, self.failure = e.answers, e
        for i, x in zip(todo, got):
            out[i] = x
        return out

    def check_supported(self) -> str | None:
        """The reason this model cannot take part, or None."""
        if not self.is_hf and self.prefix:
            return (f"{self.cached.name}: an answer prefix ({self.prefix!r}) cannot be appended to an API model's "
                    "assistant turn")
        if not self.is_hf and not isinstance(self.cached, FirstTokenDistribution):
            return f"{self.cached.name} exposes no next-token distribution"
        return None

    def budget(self, n: int) -> int:
        """New tokens a request asking for ``n`` actually gets from this model."""
        return answer_budget(self.cached, n)

    def follow_up_supported(self) -> bool:
        return isinstance(self.cached, FollowUpTurn)

    def clean(self, reqs: list[VLMRequest], shas: list[list[str]], batch_size: int, conf: bool
              ) -> list[tuple[str, dict, str | None, bool | None] | None]:
        """(greedy text, distribution meta, confidence answer or None, KV cache reused or None) per
        request, or None for a request left unanswered (API models: no distribution, or a call
        that failed, see :meth:`_api_dists`).  With ``conf`` the confidence question is a
        follow-up turn (:data:`~perceptbench.vsi.protocol.CONFIDENCE_PROMPT`); a local model
        answers it reusing the clean pass's KV cache; ``cache_reused`` is None for answers served
        from the response cache and for API models."""
        c, kw = self.cached, dict(batch_size=batch_size, answer_prefix=self.prefix, image_sha256s=shas)
        confs: list = [None] * len(reqs)
        if self.is_hf and conf and isinstance(c, DistributionAndFollowUp):
            res = c.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, CONF_MAX_NEW_TOKENS,
                                                             top_k=self.top_k, **kw)
            texts, dists, confs = [t for t, _, _ in res], [d for _, d, _ in res], [f for _, _, f in res]
            dists = [dist_to_meta(d, self.source) for d in dists]
        elif self.is_hf:
            res = c.generate_with_distribution(reqs, top_k=self.top_k, **kw)
            texts, dists = [t for t, _ in res], [dist_to_meta(d, self.source) for _, d in res]
        else:  # distributions first: a provider without logprobs fails before any paid generation
            dists = self._api_dists(reqs, shas)
            texts = self._some(lambda ii: c.generate([reqs[i] for i in ii], batch_size=batch_size,
                                                     image_sha256s=[shas[i] for i in ii], budget_in_key=True),
                               [i for i, d in enumerate(dists) if d is not None], len(reqs))
        if conf and self.follow_up_supported() and not (self.is_hf and isinstance(c, DistributionAndFollowUp)):
            confs = self._some(lambda ii: c.generate_follow_up(
                [reqs[i] for i in ii], [texts[i] for i in ii], CONFIDENCE_PROMPT, CONF_MAX_NEW_TOKENS,
                batch_size=batch_size, answer_prefix=self.prefix, image_sha256s=[shas[i] for i in ii]),
                [i for i, t in enumerate(texts) if t is not None], len(reqs))
            if self.failure is not None:  # an answer whose follow-up did not arrive stays pending
                confs = [f if t is None or f is not None else _MISSING for t, f in zip(texts, confs)]
        return [None if t is None or d is None or f is _MISSING else
                (t, d, None if f is None else (f if isinstance(f, str) else f.text),
                 None if f is None or isinstance(f, str) else f.cache_reused)
                for t, d, f in zip(texts, dists, confs)]

    def prefill(self, reqs: list[VLMRequest], shas: list[list[str]], batch_size: int) -> list[dict | None]:
        """Distribution meta per request (perturbed conditions: no generation); None for a request
        left unanswered (API models, :meth:`_api_dists`)."""
        c = self.cached
        if self.is_hf:
            res = c.next_token_distributions(reqs, top_k=self.top_k, batch_size=batch_size, answer_prefix=self.prefix,
                                             image_sha256s=shas)
            return [dist_to_meta(d, self.source) for d in res]
        return self._api_dists(reqs, shas)

    def checked(self, dist: dict, text: str | None = None) -> tuple[str | None, list[str]]:
        """(why the trial is skipped, or None; the flags to record) of one arrived distribution
        meta; ``text``: the greedy answer of a clean record (compared with the top token when the
        two come from separate API requests)."""
        problem = distribution_problem(dist_keys(dist), dist["logprobs"])
        if problem is not None:
            return f"invalid next-token distribution: {problem}", []
        flags = distribution_flags(dist)
        if text is not None and not self.is_hf and not answer_token_agrees(text, dist["tokens"][0]):
            flags.append("answer_token_mismatch")
        return None, flags


_MISSING = object()
"""A follow-up answer that did not arrive (its request failed): the clean trial stays pending."""


def vsi_model(cached, task) -> _VSIModel:
    """The VSI model calls of ``task`` through ``cached`` (a
    :class:`~perceptbench.models.response_cache.CachedVLM`)."""
    return _VSIModel(cached, task, task.top_k)


def vsi_context(ctx: "TrialContext", m: _VSIModel) -> "TrialContext":
    """``ctx`` with the settings of every VSI record: the model's generation settings, the
    token budget asked (``request_max_new_tokens``) and the one it gets (``max_new_tokens``)."""
    task = ctx.task
    return ctx.with_(settings={**m.cached.generation_settings, "request_max_new_tokens": task.max_new_tokens,
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
    from ..readouts.answers import parse_confidence

    task = ctx.task
    m = vsi_model(cached, task)
    ctx = vsi_context(ctx, m)
    hits0, calls0 = cached.hits, cached.calls

    def record(s: Stimulus, **kw):
        return vsi_record(ctx, m, s, **kw)

    def skip_all(stimuli: list[Stimulus], why: str) -> int:
        empty = {**EMPTY_DIST, "distribution_source": m.source}
        return sink.append([record(s, readout="vlm_vsi_" + ("clean" if s.meta["vsi"]["condition"] == "clean"
                                                           else "perturbed"), vsi_extra=empty, skipped=why)
                            for s in stimuli])

    reason = m.check_supported()
    written = 0
    left: list[Stimulus] = []  # trials asked in this run whose model calls did not all arrive
    step = batch_size * len(task.conditions)  # ~batch_size samples per chunk: full batches in every pass
    for i in range(0, len(pending), step):
        chunk = pending[i:i + step]
        done: set[str] = set()
        if reason is None:
            try:
                n, done = _run_chunk(task, m, chunk, batch_size, record, parse_confidence, sink)
                written += n
            except NotSupportedByProvider as e:
                reason = str(e)
            reason = reason or m.unsupported
        if reason is not None:
            written += skip_all([s for s in chunk if s.stimulus_id not in done], reason)
        else:
            left += [s for s in chunk if s.stimulus_id not in done]
        advance(len(chunk))
        if m.failure is not None:  # the chunk's finished records are written: now stop
            raise m.failure
    if reason is None and left and not m.ever_ok and m.unanswered == m.no_logprobs_run:
        # fewer requests than NO_LOGPROBS_UNSUPPORTED_AFTER in the whole task, every one without logprobs
        reason = f"{m.no_logprobs_message} (consistently: all {m.unanswered} requests, none with logprobs)"
        written += skip_all(left, reason)
    if m.unanswered and reason is None:
        log.warning("%s: %d VSI trial(s) of %s not answered (responses without logprobs after retries); a rerun "
                    "asks them again", cached.name, m.unanswered, task.task_id)
    return written, cached.hits - hits0, (cached.hits - hits0) + (cached.calls - calls0)


def skip_trial_record(record, s: Stimulus, m: _VSIModel, why: str, sha: str | None, prompt: str):
    """A trial-level skip of ``s`` (its distribution was not a distribution)."""
    clean = s.meta["vsi"]["condition"] == "clean"
    return record(s, readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed", skipped=why, skip_scope="trial",
                  prompt_hash=text_hash(prompt), stimulus_sha256=sha,
                  vsi_extra={**EMPTY_DIST, "distribution_source": m.source, "image_sha256": sha})


def flag_meta(flags: list[str]) -> dict:
    """``run_meta.vsi`` entries of a record's flags: ``{"flags": [...]}``, nothing when there is none."""
    return {"flags": flags} if flags else {}


def _run_chunk(task, m: _VSIModel, chunk: list[Stimulus], batch_size: int, record, parse_confidence,
               store) -> tuple[int, set[str]]:
    """Write the records of ``chunk`` whose model calls arrived; returns (written, their stimulus ids)."""
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
        for k, got in zip(clean_i, res):
            if got is None:
                continue
            text, dist, ct, reused = got
            s = chunk[k]
            why, flags = m.checked(dist, text)
            if why is not None:
                recs[k] = skip_trial_record(record, s, m, why, shas[k][0], prompts[k])
                continue
            response, parse_meta = task.parse_for(s, text)
            vc = None if ct is None else parse_confidence(ct)
            conf_meta = {}
            if task.verbal_conf:
                conf_meta = {"confidence_prompt": CONFIDENCE_PROMPT, "confidence_turn": CONFIDENCE_TURN,
                             "confidence_max_new_tokens": m.budget(CONF_MAX_NEW_TOKENS),
                             "confidence_kv_reuse": reused}
                if not conf:
                    conf_meta["confidence_skipped"] = f"{m.cached.name} cannot answer a follow-up turn"
            recs[k] = record(s, response=response, raw=text, prompt=prompts[k], readout="vlm_vsi_clean",
                             vsi_extra={**dist, "image_sha256": shas[k][0],
                                        "max_prob": float(np.exp(dist["logprobs"][0])),
                                        "verbal_conf": vc, "verbal_raw": ct, **conf_meta, **flag_meta(flags)},
                             parse=parse_meta, stimulus_sha256=shas[k][0],
                             **({"confidence_prompt_hash": task.confidence_prompt_hash} if task.verbal_conf
                                else {}))
    if pert_i:
        reqs = [VLMRequest((imgs[k],), prompts[k], 1) for k in pert_i]
        dists = m.prefill(reqs, [shas[k] for k in pert_i], batch_size)
        for k, dist in zip(pert_i, dists):
            if dist is None:
                continue
            why, flags = m.checked(dist)
            if why is not None:
                recs[k] = skip_trial_record(record, chunk[k], m, why, shas[k][0], prompts[k])
                continue
            recs[k] = record(chunk[k], prompt=prompts[k], readout="vlm_vsi_perturbed",
                             vsi_extra={**dist, "image_sha256": shas[k][0], "max_prob": None, "verbal_conf": None,
                                        "verbal_raw": None, **flag_meta(flags)}, stimulus_sha256=shas[k][0])
    return store.append([recs[k] for k in sorted(recs)]), {chunk[k].stimulus_id for k in recs}
