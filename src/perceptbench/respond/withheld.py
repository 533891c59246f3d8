"""The image-withheld condition: the task's question asked with no image.

Selected with ``perceptbench run --condition image_withheld`` (``RunConfig.conditions``).
Its records carry ``model = "{model}[image_withheld]"`` (scored as its own respondent, never
pooled with the image trials) and ``run_meta.condition = "image_withheld"``.

* Battery tasks: the prompt of :meth:`~perceptbench.tasks.base.Task.vlm_request` without its
  images (few-shot examples included: they are images too), answered and parsed like an
  image trial (readout ``vlm_prompt``, ``stimulus_sha256`` and ``image_sha256s`` empty).
* VSI tasks: per sample, the clean question with no image: one greedy answer (the task's token
  budget, parsed like the clean answer: ``raw_output``, ``response``, ``correct``) whose first
  step gives the first-answer-token distribution, recorded like a perturbed condition's
  (readout ``vlm_vsi_perturbed``, ``run_meta.vsi.condition = "image_withheld"``, ``sigma_px``
  0, ``image_sha256`` null).  The answer is what the benchmark-native rows without the image
  read (MMStar's multi-modal gain and leakage, HallusionBench's no-image questions:
  :mod:`perceptbench.vsi.native`).

Scoring pairs the VSI records with the clean records of ``{model}`` (same task, same sample):
the ``[image_withheld]`` VSI cell of :mod:`perceptbench.vsi.scoring`, KL(p_clean || p without
the image).  The VSI half stays in this module, built from the VSI respondent's parts
(:mod:`perceptbench.vsi.respondent`: ``vsi_model``, ``vsi_context``, ``vsi_record``), so that the
condition remains one module plus one registry entry for every task kind; the VSI package owns
how such records are read and scored.

Uses: HallusionBench's no-image questions, MMStar's multi-modal gain (accuracy with the
image minus accuracy without it, Chen et al. 2024 §4)."""

from __future__ import annotations

from ..models.base import NotSupportedByProvider, VLMRequest, default_batch_size
from ..tasks.base import Stimulus, Task
from .base import RESPONDENTS, Job, Result
from .prompt import PromptRespondent, cached_model

CONDITION = "image_withheld"


@RESPONDENTS.register(CONDITION)
class ImageWithheld(PromptRespondent):
    """A VLM answering a battery or VSI task's question without the image."""

    condition = CONDITION

    @classmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        return model_kind == "vlm"

    @classmethod
    def trial_stimuli(cls, task: Task, stimuli: list[Stimulus]) -> list[Stimulus]:
        """Battery tasks: the test stimuli; VSI tasks: one ``{sample}~image_withheld`` stimulus
        per sample, made from its clean stimulus.  Stimuli a benchmark asks without an image
        (``meta["no_image"]``) are included: this condition is where they are asked."""
        from .base import task_kind

        test = [s for s in stimuli if s.split == "test"]  # with the questions asked without an image
        if task_kind(task) != "vsi":
            return test
        return [_as_withheld(s) for s in test if s.meta["vsi"]["condition"] == "clean"]

    def request(self, task: Task, s: Stimulus, seed: int) -> tuple[tuple, str, dict]:
        _, prompt, extra = task.vlm_request(s, seed)
        return (), prompt, extra

    def n_images(self, task: Task) -> int:
        return 0

    def run(self, job: Job) -> Result:
        from .base import task_kind

        return self._run_vsi(job) if task_kind(job.task) == "vsi" else super().run(job)

    def _run_vsi(self, job: Job) -> Result:
        from ..vsi.respondent import (EMPTY_DIST, flag_meta, skip_trial_record, vsi_context, vsi_job_context,
                                      vsi_model, vsi_record)

        cached = cached_model(job)
        m = vsi_model(cached, job.task)
        ctx = vsi_context(vsi_job_context(job, cached, "vlm_vsi_perturbed"), m)
        bs = default_batch_size(job.batch_size, "vlm")
        hits0, calls0 = cached.hits, cached.calls
        reason, written = m.check_supported(), 0
        record = lambda s, **kw: vsi_record(ctx, m, s, **kw)  # noqa: E731
        for i in range(0, len(job.pending), bs):
            chunk = job.pending[i:i + bs]
            recs: dict = {}
            if reason is None:
                reqs = [VLMRequest((), s.meta["vsi_prompt"], job.task.max_new_tokens) for s in chunk]
                try:
                    answered = m.clean(reqs, [[] for _ in chunk], bs, False)
                except NotSupportedByProvider as e:
                    reason, answered = str(e), []
                for s, r, a in zip(chunk, reqs, answered):
                    if a is None:  # not answered: pending for the next run (or skipped below)
                        continue
                    text, d = a[0], a[1]
                    why, flags = m.checked(d, text)
                    if why:
                        recs[s.stimulus_id] = skip_trial_record(record, s, m, why, None, r.prompt)
                        continue
                    response, parse_meta = job.task.parse_for(s, text)
                    recs[s.stimulus_id] = record(s, response=response, raw=text, prompt=r.prompt, parse=parse_meta,
                                                 vsi_extra={**d, "image_sha256": None, "max_prob": None,
                                                            "verbal_conf": None, "verbal_raw": None,
                                                            **flag_meta(flags)})
                reason = reason or m.unsupported
            if reason is not None:
                recs.update({s.stimulus_id: record(s, vsi_extra={**EMPTY_DIST, "distribution_source": m.source},
                                                   skipped=reason) for s in chunk if s.stimulus_id not in recs})
            written += job.sink.append(list(recs.values()))
            job.advance(len(chunk))
            if m.failure is not None:  # the chunk's finished records are written: now stop
                raise m.failure
        hits = cached.hits - hits0
        return Result(written, hits, hits + (cached.calls - calls0))


def _as_withheld(s: Stimulus) -> Stimulus:
    """The clean stimulus ``s`` as the withheld condition's: id ``{sample}~image_withheld``."""
    from dataclasses import replace

    sample = s.meta["vsi"]["sample_id"]
    return replace(s, stimulus_id=f"{sample}~{CONDITION}", manipulated_value=CONDITION,
                   meta={**s.meta, "vsi": {**s.meta["vsi"], "condition": CONDITION, "sigma_px": 0.0,
                                            "fallback": False}})
