"""The prompt respondent: a VLM answers the human-facing stimulus image with the task's
verbatim prompt; the text is parsed by rule to the task's response space (seed 000 §2.2,
appendix B).  Answers go through the content-addressed response cache
(:mod:`perceptbench.models.response_cache`), so a rerun or a re-score never calls the model
again for the same (model revision, prompt, stimulus, generation settings)."""

from __future__ import annotations

from ..models.base import PartialAnswers, VLMRequest, default_batch_size
from ..seeding import image_sha256, text_hash
from ..tasks.base import Stimulus, Task
from .base import RESPONDENTS, Job, Respondent, Result
from .context import prompt_version


def cached_model(job: Job):
    """``job.model`` behind the response cache (:class:`~perceptbench.models.response_cache.CachedVLM`
    in ``job.cache_mode``; a model already wrapped is used as it is)."""
    from ..models.response_cache import with_response_cache

    return with_response_cache(job.model, job.cache_mode)


def repetitions_of(job: Job, model) -> int:
    """Answers per stimulus: the run's ``--repetitions`` (``job.repetitions``) when ``model``
    samples (its ``generation_settings`` say ``do_sample``: ``--temperature`` above 0), else 1 (a
    greedy answer repeats exactly, seed 000 D.4)."""
    return int(job.repetitions) if (model.generation_settings or {}).get("do_sample") else 1


def sample_seed(seed: int, task_id: str, stimulus_id: str, rep: int) -> int:
    """The sampling seed of one repetition of one trial: the first 8 bytes of the sha256 of
    ``seed|task_id|stimulus_id|rep``, as an int below 2**63 (deterministic, independent of
    batching and of which trials a resumed run still had to ask)."""
    import hashlib

    h = hashlib.sha256(f"{seed}|{task_id}|{stimulus_id}|{rep}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def identity_meta(model) -> dict:
    """``run_meta.model_identity`` of a model that declares one
    (:class:`~perceptbench.models.base.Identified`; else nothing)."""
    from ..models.base import Identified

    identity = model.identity if isinstance(model, Identified) else None
    return {"model_identity": identity} if identity else {}


@RESPONDENTS.register("vlm_prompt")
class PromptRespondent(Respondent):
    """A VLM on a battery task: :meth:`~perceptbench.tasks.base.Task.vlm_request` (images,
    prompt, extra run_meta) per stimulus, answered in batches and parsed with
    :meth:`~perceptbench.tasks.base.Task.parse_answer`.  A model without multi-image support
    gets a few-shot task's trials recorded as skipped.  Subclasses change what is asked by
    overriding :meth:`request`.  ``repeats``: it writes ``--repetitions`` records per stimulus when
    the model samples (:func:`repetitions_of`)."""

    repeats = True

    @classmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        return task_kind == "battery" and model_kind == "vlm"

    def request(self, task: Task, s: Stimulus, seed: int) -> tuple[tuple, str, dict]:
        """(images, prompt, extra run_meta) of one trial: the task's own request."""
        return task.vlm_request(s, seed)

    def n_images(self, task: Task) -> int:
        """Images per trial: the stimulus and the few-shot examples."""
        return 1 + task.shots

    def run(self, job: Job) -> Result:
        """Returns (records written, answers from the cache, answers requested).  Raises
        :class:`~perceptbench.models.response_cache.StaleCacheError` when a re-asked cached
        answer of a name-only model differs from its live answer, and a model's error (e.g.
        :class:`~perceptbench.models.api.APIError`) after the answers of its batch that arrived
        (:class:`~perceptbench.models.base.PartialAnswers`) are recorded."""
        task, seed = job.task, job.seed
        cached = cached_model(job)
        bs = default_batch_size(job.batch_size, "vlm")
        ctx = job.context(model_name=cached.name, model_family=cached.family, model_version=cached.model_version,
                          readout="vlm_prompt", prompt_id=task.prompt_id,
                          meta={**identity_meta(cached), "prompt_template_hash": prompt_version(task)})
        n_images = self.n_images(task)
        if n_images > 1 and not cached.supports_multi_image:
            reason = f"{cached.name} does not accept several images; {task.task_id} needs {n_images} per trial"
            n = job.sink.append([ctx.skipped(s, reason) for s in job.pending])
            job.advance(len(job.pending))
            return Result(n)
        hits0, calls0 = cached.hits, cached.calls
        written = 0
        n_reps = repetitions_of(job, cached)
        for i in range(0, len(job.pending), bs):
            chunk = job.pending[i:i + bs]
            built = [self.request(task, s, seed) for s in chunk]
            hashes = [[image_sha256(im) for im in imgs] for imgs, _, _ in built]
            # one request per (stimulus, repetition) not yet written; without repetitions, one per stimulus
            trials = [(k, rep) for k, s in enumerate(chunk) for rep in range(n_reps)
                      if n_reps == 1 or ctx.trial_id(s.stimulus_id, rep) not in getattr(job.sink, "done", ())]
            reqs = [VLMRequest(tuple(built[k][0]), built[k][1],
                               sample_seed=None if n_reps == 1 else sample_seed(seed, task.task_id,
                                                                                chunk[k].stimulus_id, rep))
                    for k, rep in trials]
            failed = None
            try:
                texts = cached.generate(reqs, batch_size=bs, image_sha256s=[hashes[k] for k, _ in trials])
            except PartialAnswers as e:  # record the answers that arrived, then stop with the error
                texts, failed = e.answers, e
            settings = {**cached.generation_settings, "request_max_new_tokens": reqs[0].max_new_tokens} if reqs else {}
            recs = []
            for (k, rep), text in zip(trials, texts):
                if text is None:
                    continue
                s, (imgs, prompt, extra), hs = chunk[k], built[k], hashes[k]
                response, parse_meta = task.parse_answer(text)
                reps = {} if n_reps == 1 else {"rep": rep, "n_reps": n_reps}
                recs.append(ctx.record(s, response=response, raw_output=text, prompt_hash=text_hash(prompt),
                                       settings=settings, stimulus_sha256=hs[-1] if hs else None, image_sha256s=hs,
                                       parse=parse_meta, **reps, **extra, **s.meta))
            written += job.sink.append(recs)
            job.advance(len(recs) if n_reps == 1 else len({k for (k, _), t in zip(trials, texts) if t is not None}))
            if failed is not None:
                raise failed
        hits = cached.hits - hits0
        return Result(written, hits, hits + (cached.calls - calls0))
