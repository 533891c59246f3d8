"""Respondents: who answers a task's trials and how (humans, encoder readouts, VLM prompts,
VSI distributions, the image-withheld condition), chosen by :func:`respondent_for` from the
:data:`RESPONDENTS` registry; :func:`run_trials` is the one entry point of every executor;
:mod:`perceptbench.respond.context` holds the one record factory."""

from .base import HUMAN_PANEL, RESPONDENTS, Job, Respondent, Result, conditions, model_kind, respondent_for, run_trials, task_kind
from ..core.conditions import DEFAULT_CONDITION, respondent_label
from .context import TrialContext, prompt_version

# the registered respondents, in the order respondent_for tries them
from . import human, encoder, prompt  # noqa: E402,F401  (isort: skip)
from ..vsi import respondent as _vsi_respondent  # noqa: E402,F401  (isort: skip)
from . import withheld  # noqa: E402,F401  (isort: skip)

__all__ = ["HUMAN_PANEL", "RESPONDENTS", "Job", "Respondent", "Result", "TrialContext", "DEFAULT_CONDITION", "conditions",
           "model_kind", "respondent_for", "run_trials", "task_kind", "prompt_version", "respondent_label"]
