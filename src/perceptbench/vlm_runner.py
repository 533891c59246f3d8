"""The prompt readout: a VLM answers the human-facing stimulus image with the task's
verbatim prompt; the text is parsed by rule to the task's response space (seed 000 §2.2,
appendix B).  Answers go through a content-addressed response cache, so a rerun or a
re-score never calls the model again for the same (model revision, prompt, stimulus,
generation settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .models.base import Identified, VLMRequest
from .models.response_cache import CACHE_ENV, response_cache_dir, with_response_cache  # noqa: F401 (re-exported)
from .records import RecordStore
from .seeding import image_sha256, text_hash
from .tasks.base import Stimulus, Task, make_record

def run_vlm_task(task: Task, vlm, store: RecordStore, pending: list[Stimulus], seed: int, run_id: str,
                 batch_size: int, out: Path, advance: Callable[[int], None], cache_mode: str = "use",
                 extra_meta: dict | None = None) -> tuple[int, int, int]:
    """Answer every pending stimulus, parse, and append records chunk by chunk.

    ``cache_mode``: ``use`` | ``refresh`` | ``off`` (see
    :data:`perceptbench.models.response_cache.CACHE_MODES`); ``extra_meta`` goes into
    every record's ``run_meta`` (e.g. what an ``--allow-mixed`` resume allowed).
    Returns (records written, answers served from the response cache, answers requested).
    Raises :class:`~perceptbench.models.response_cache.StaleCacheError` when a re-asked
    cached answer of a name-only model differs from its live answer."""
    cached = with_response_cache(vlm, cache_mode)
    extra_meta = dict(extra_meta or {})
    if isinstance(cached, Identified) and cached.identity:
        extra_meta["model_identity"] = cached.identity
    template_hash = text_hash(getattr(task, "prompt_template", None) or task.prompt_text)
    written = 0
    n_images = 1 + getattr(task, "shots", 0)
    if n_images > 1 and not cached.supports_multi_image:
        reason = f"{cached.name} does not accept several images; {task.task_id} needs {n_images} per trial"
        recs = [make_record(task, stimulus_id=s.stimulus_id, model=cached.name, model_family=cached.family,
                            readout="vlm_prompt", response=None, ground_truth=s.ground_truth,
                            manipulated_value=s.manipulated_value, raw_output=None, prompt_id=task.prompt_id,
                            prompt_hash=None, model_version=cached.model_version, seed=seed, run_id=run_id,
                            split=s.split, skipped=reason, prompt_template_hash=template_hash, **extra_meta)
                for s in pending]
        advance(len(pending))
        return store.append(recs), 0, 0
    hits0, calls0 = cached.hits, cached.calls
    for i in range(0, len(pending), batch_size):
        chunk = pending[i:i + batch_size]
        built = [task.vlm_request(s, seed) for s in chunk]
        hashes = [[image_sha256(im) for im in imgs] for imgs, _, _ in built]
        reqs = [VLMRequest(tuple(imgs), prompt) for imgs, prompt, _ in built]
        texts = cached.generate(reqs, batch_size=batch_size, image_sha256s=hashes)
        recs = []
        for s, (imgs, prompt, extra), hs, text in zip(chunk, built, hashes, texts):
            response, parse_meta = task.parse_answer(text)
            recs.append(make_record(
                task, stimulus_id=s.stimulus_id, model=cached.name, model_family=cached.family,
                readout="vlm_prompt", response=response, ground_truth=s.ground_truth,
                manipulated_value=s.manipulated_value, raw_output=text, prompt_id=task.prompt_id,
                prompt_hash=text_hash(prompt), model_version=cached.model_version, seed=seed, run_id=run_id,
                stimulus_sha256=hs[-1], image_sha256s=hs, split=s.split,
                settings={**cached.generation_settings, "request_max_new_tokens": reqs[0].max_new_tokens},
                parse=parse_meta, prompt_template_hash=template_hash, **extra_meta, **extra, **s.meta))
        written += store.append(recs)
        advance(len(chunk))
    return written, cached.hits - hits0, (cached.hits - hits0) + (cached.calls - calls0)
