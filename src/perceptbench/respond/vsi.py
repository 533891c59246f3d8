"""The VSI respondent: clean greedy answers with their first-answer-token distributions and
prefill-only distributions of the perturbed conditions (:mod:`perceptbench.vsi_runner`,
seed 002 §2), then the encoder-LLM probe features of the task (seed 002 §2.4,
:func:`perceptbench.vsi_features.cache_task_features`)."""

from __future__ import annotations

from ..core.rundir import RunDir
from ..models.base import default_batch_size
from .base import RESPONDENTS, Job, Respondent, Result
from .context import prompt_version
from .prompt import cached_model, identity_meta


def vsi_job_context(job: Job, cached, readout: str = "vlm_vsi_clean"):
    """The :class:`~perceptbench.respond.context.TrialContext` of ``job``'s VSI records."""
    return job.context(model_name=cached.name, model_family=cached.family, model_version=cached.model_version,
                       readout=readout, prompt_id=job.task.prompt_id,
                       meta={**identity_meta(cached), "prompt_template_hash": prompt_version(job.task)})


@RESPONDENTS.register("vlm_vsi")
class VSIRespondent(Respondent):
    """A VLM on a VSI task (:class:`perceptbench.tasks.vsi.VSITask`)."""

    @classmethod
    def serves(cls, task_kind: str, model_kind: str) -> bool:
        return task_kind == "vsi" and model_kind == "vlm"

    def first_step(self, job: Job) -> str:
        return super().first_step(job) if job.pending else "computing VSI probe features ..."

    def run(self, job: Job) -> Result:
        from ..vsi_features import cache_task_features
        from ..vsi_runner import run_vsi_task

        cached = cached_model(job)
        n, hits, reqs = run_vsi_task(vsi_job_context(job, cached), cached, job.sink, job.pending,
                                     default_batch_size(job.batch_size, "vlm"), job.advance)
        cache_task_features(job.task, cached, RunDir(job.out).features, job.seed, cache_mode=job.cache_mode)
        return Result(n, hits, reqs)
