"""The VSI record format and the per-sample VSI table (seed 002 §2, appendix A and D.1): KL
divergence between a VLM's first-answer-token distributions on the clean and on the blurred
image, recomputed from trial records alone (numpy only; no torch, no model).

VSI record format
-----------------
A VSI task (:mod:`perceptbench.vsi.protocol`) writes, per (model, sample), one record per
condition: ``clean``, and ``region_blur`` and/or ``whole_blur`` at the task's sigma.  The
image-withheld condition (``perceptbench run --condition image_withheld``,
:mod:`perceptbench.respond.withheld`) adds, per sample, one record of the respondent
``{model}[image_withheld]`` (:func:`perceptbench.core.conditions.respondent_label`) with condition
``image_withheld``: the question asked with no image, recorded like a perturbed condition
(``sigma_px`` 0, ``image_sha256`` null).

* ``stimulus_id`` = ``{sample_id}~{condition}`` with ``condition`` one of ``clean``,
  ``region_blur``, ``whole_blur`` (the sigma is in the task id when not the default, and in
  ``manipulated_value``), so ``trial_id = task_id|stimulus_id|model|rep0`` is unique per
  condition.
* ``manipulated_value`` = ``"clean"`` or ``"{condition}:sigma={sigma_px:g}"`` (e.g.
  ``"region_blur:sigma=20"``).
* ``readout`` = ``"vlm_vsi_clean"`` (greedy answer + first-token distribution) or
  ``"vlm_vsi_perturbed"`` (blurs: prefill only, first-token distribution, no generation, its
  ``response``/``raw_output`` null; ``image_withheld``: a greedy answer without the image,
  parsed like a clean one, whose first step gives the distribution).
* Clean record: ``raw_output`` the greedy answer, ``response`` its parse (``"yes"``/``"no"``,
  an option letter, or the base task's response; null when unparseable), ``ground_truth`` and
  ``correct`` as usual.
* ``run_meta["vsi"]`` (every condition) is a dict with the keys of :data:`VSI_META_KEYS`:

  ===================== =================================================================
  sample_id             base (image x question) id, shared across models and conditions
  image_id              groups every question/view of one image
  benchmark             e.g. ``salbench.syn``, ``battery.mark_color``, ``pope.adversarial``
  condition             ``clean`` | ``region_blur`` | ``whole_blur`` | ``image_withheld``
  sigma_px              Gaussian sigma in pixels (0 for clean)
  dilate_px             mask dilation in pixels (4, seed 002 appendix A)
  region_source         ``exact`` | ``annotation`` | ``grounding`` | ``fallback_whole``; on
                        region_blur records the region actually blurred; on clean and
                        whole_blur records the sample's nominal source (grounding is run
                        only for region blur)
  region_bbox           [x0, y0, x1, y1] (exclusive ends) bounding the undilated region, or null
                        (whole image)
  fallback              True when region blur fell back to the whole image (grounding found no
                        box above 0.3, or no object phrase)
  region                (optional, grounded samples) the Region's JSON summary: detector score,
                        phrase, model names, mask pixel count
  answer_prefix         declared answer-prefix string appended after the assistant prefix
  top_k                 requested k (50, seed 002 D.1; API providers may cap it)
  token_ids             ids of the top tokens (local models), or null (API providers)
  tokens                the top tokens decoded one by one
  logprobs              their natural-log probabilities, descending (nats)
  complete              True when the list covers the whole vocabulary
  distribution_source   ``hf_logits`` | ``api_top_logprobs``
  image_sha256          pixel hash of the image the distribution was computed on
  max_prob              exp(logprobs[0]) (clean only; null on perturbed records)
  verbal_conf           verbalised confidence 0-100 (clean only; null when missing)
  verbal_raw            the confidence answer text (clean only)
  ===================== =================================================================

Optional keys: ``flags`` (a list, written only when not empty: ``non_answer_position``,
``uninformative``, ``answer_token_mismatch``; see "Guards" below).

A record whose ``run_meta`` carries ``skipped`` holds no distribution and yields no
:class:`VSISample`.  ``run_meta.skip_scope = "trial"`` marks a skip of that trial alone (its
distribution was not a distribution: :func:`perceptbench.metrics.topk_kl.distribution_problem`);
without it the skip is the model's (a provider without logprobs) and the task scores one
``skipped`` row for the model.

Guards (documented in ``docs/metrics.md``, "What is never scored as a VSI")
-------------------------------------------------------------------------
A (clean, perturbed) pair yields no :class:`VSISample` but a :class:`VSIFlagged` with the first
reason of :data:`FLAG_REASONS` that applies (:func:`vsi_flagged`; the task's score rows count them
per cell):

* ``skipped_trial``: either record is a trial-level skip;
* ``invalid_distribution``: either list is not a distribution (non-finite or positive entry,
  duplicate token, total probability above 1 + ``MASS_TOL``); records written before the check
  existed are caught here, so one bad record never stops the scoring of the others;
* ``non_answer_position``: either distribution's most probable token is not an answer token: it
  is empty or whitespace only after stripping, or it begins with a reasoning-open tag
  (:data:`perceptbench.readouts.extract.REASONING_STYLES`, e.g. ``<think>``): the distribution
  was measured before the answer;
* ``uninformative``: either distribution carries no ranking: a single listed token with
  probability >= 1 - ``MASS_TOL`` (a one-hot: a provider returning the chosen token only), or two
  or more listed tokens whose log-probabilities are all equal;
* ``identical_across_conditions``: the two lists are identical, token for token and bit for bit in
  every log-probability, with at least two tokens listed, while the records' ``image_sha256``
  differ (or one is null: the image withheld).  Distinct images give bit-identical lists of
  floats only when the distribution does not come from the image (a provider that
  post-processes or caches its logprobs, an image that never reaches the model); such a pair would
  otherwise be scored as a VSI of exactly 0.

Support of truncated distributions (documented in ``docs/metrics.md``)
----------------------------------------------------------------------
See :func:`perceptbench.metrics.topk_kl.kl_topk`, the one KL formula.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

from ..core.conditions import parse_respondent_label
from ..metrics.topk_kl import kl_topk

__all__ = ["VSISample", "VSIFlagged", "VSI_META_KEYS", "CONDITIONS", "PERTURBATIONS", "BLURS", "FLAG_REASONS",
           "dist_keys", "trial_skipped", "vsi_samples", "vsi_flagged", "vsi_of_records", "distribution_flags", "non_answer_token",
           "answer_token_agrees"]

CONDITIONS = ("clean", "region_blur", "whole_blur")

PERTURBATIONS = {"region_blur": "region", "whole_blur": "whole", "image_withheld": "withheld"}
"""Condition name in records -> ``VSISample.perturbation``."""

BLURS = ("region", "whole")
"""The ``VSISample.perturbation`` of the blur conditions (a Gaussian blur at a sigma); the
cross-task analyses (:mod:`perceptbench.vsi.analysis`, seed 002 §2.3-§4) are defined over these."""

VSI_META_KEYS = ("sample_id", "image_id", "benchmark", "condition", "sigma_px", "dilate_px", "region_source",
                 "region_bbox", "fallback", "answer_prefix", "top_k", "token_ids", "tokens", "logprobs",
                 "complete", "distribution_source", "image_sha256", "max_prob", "verbal_conf", "verbal_raw")


@dataclass(frozen=True)
class VSISample:
    """One (task, model, sample, perturbation, sigma) VSI value: the table the analyses consume.

    ``vsi`` is KL(p_clean || p_perturbed) in nats (:func:`kl_topk`); ``argmax_changed`` whether
    the most probable first answer token differs between clean and perturbed; ``correct`` the
    clean greedy answer's correctness (None when unparseable or without ground truth);
    ``region_source`` the perturbed record's (for ``perturbation="region"``: what was blurred);
    ``max_prob`` the clean first-token maximum probability (0..1); ``verbal_conf`` the clean
    verbalised confidence (0..100) or None (seed 002 appendix A)."""

    task_id: str
    benchmark: str
    model: str
    model_family: str
    sample_id: str
    image_id: str
    perturbation: str
    sigma: float
    vsi: float
    argmax_changed: bool
    correct: bool | None
    max_prob: float
    verbal_conf: float | None
    region_source: str


FLAG_REASONS = ("skipped_trial", "invalid_distribution", "non_answer_position", "uninformative",
                "identical_across_conditions")
"""Why a (clean, perturbed) pair is left out of VSI, in the order they are tested (module docstring)."""


@dataclass(frozen=True)
class VSIFlagged:
    """A (task, model, sample, perturbation, sigma) pair left out of VSI and why (one of
    :data:`FLAG_REASONS`)."""

    task_id: str
    model: str
    sample_id: str
    perturbation: str
    sigma: float
    reason: str


def non_answer_token(token: str) -> bool:
    """Whether a most-probable first token is not an answer token: empty or whitespace only
    after stripping, or beginning with a reasoning-open tag of
    :data:`perceptbench.readouts.extract.REASONING_STYLES` (case-insensitive)."""
    import re

    from ..readouts.extract import REASONING_STYLES

    t = str(token).strip()
    return not t or any(re.match(o, t, re.I) for o, _ in REASONING_STYLES.values())


def _uninformative(lps: list) -> bool:
    from ..metrics.topk_kl import MASS_TOL

    if len(lps) == 1:
        return math.exp(float(lps[0])) >= 1.0 - MASS_TOL
    return len(lps) >= 2 and all(float(x) == float(lps[0]) for x in lps)


def distribution_flags(meta: dict) -> list[str]:
    """The reasons of :data:`FLAG_REASONS` one record's distribution (``run_meta.vsi`` keys
    ``tokens``/``token_ids``/``logprobs``) shows on its own: ``invalid_distribution``,
    ``non_answer_position``, ``uninformative`` (in that order; an invalid list is not tested
    further).  Never raises on a malformed list (it is invalid)."""
    from ..metrics.topk_kl import distribution_problem

    try:
        keys, lps = dist_keys(meta), list(meta["logprobs"])
    except (KeyError, TypeError):
        return ["invalid_distribution"]
    if distribution_problem(keys, lps) is not None:
        return ["invalid_distribution"]
    out = []
    if non_answer_token(list(meta.get("tokens") or [""])[0]):
        out.append("non_answer_position")
    if _uninformative(lps):
        out.append("uninformative")
    return out


def answer_token_agrees(text: str | None, token: str) -> bool:
    """Whether a greedy answer ``text`` and a distribution's most probable first token describe the
    same answer token: after stripping leading whitespace from both, one starts with the other
    (a null or empty text, or a non-answer token, agrees: nothing to compare)."""
    if not text or non_answer_token(token):
        return True
    a, b = text.lstrip(), str(token).lstrip()
    return a.startswith(b) or b.startswith(a)


def _identical(cm: dict, pm: dict) -> bool:
    if cm.get("image_sha256") is not None and cm.get("image_sha256") == pm.get("image_sha256"):
        return False
    ck, pk = dist_keys(cm), dist_keys(pm)
    return len(ck) >= 2 and ck == pk and [float(x) for x in cm["logprobs"]] == [float(x) for x in pm["logprobs"]]


def _pair_flag(cr, cm: dict, pr, pm: dict) -> str | None:
    if trial_skipped(cr) or trial_skipped(pr):
        return "skipped_trial"
    found = set(distribution_flags(cm)) | set(distribution_flags(pm))
    for reason in FLAG_REASONS[1:4]:
        if reason in found:
            return reason
    return "identical_across_conditions" if _identical(cm, pm) else None


def trial_skipped(r) -> bool:
    """Whether record ``r`` is a trial-level skip (``run_meta.skip_scope == "trial"``)."""
    extra = _meta(r)
    return bool(extra.get("skipped")) and extra.get("skip_scope") == "trial"


def dist_keys(meta: dict) -> list:
    """The keys a record's distribution is compared by: token ids when present, else tokens."""
    ids = meta.get("token_ids")
    return list(ids) if ids is not None else list(meta["tokens"])


def vsi_of_records(clean_meta: dict, pert_meta: dict) -> tuple[float, bool]:
    """(VSI in nats, argmax changed) from two records' ``run_meta["vsi"]`` dicts."""
    ck, pk = dist_keys(clean_meta), dist_keys(pert_meta)
    v = kl_topk(ck, clean_meta["logprobs"], pk, pert_meta["logprobs"],
                p_complete=bool(clean_meta.get("complete")), q_complete=bool(pert_meta.get("complete")))
    return v, ck[0] != pk[0]


def _meta(r) -> dict:
    extra = getattr(r.run_meta, "model_extra", None) or {}
    return extra


def vsi_samples(records: Iterable[Any]) -> list[VSISample]:
    """The per-sample VSI table: the pairs of :func:`_pairs` that no guard flags (module
    docstring, "Guards"; the flagged ones are :func:`vsi_flagged`)."""
    return [s for s in _pairs(records) if isinstance(s, VSISample)]


def vsi_flagged(records: Iterable[Any]) -> list[VSIFlagged]:
    """The pairs left out of :func:`vsi_samples`, each with its reason, sorted as the samples."""
    return [s for s in _pairs(records) if isinstance(s, VSIFlagged)]


def _pairs(records: Iterable[Any]) -> list:
    """The per-sample VSI table from trial records (any iterable of :class:`TrialRecord`).

    Records without ``run_meta["vsi"]`` (non-VSI tasks, human records) and records skipped for
    the model are ignored; trial-level skips pair (and are flagged).  Each perturbed record is paired with the clean record of the same task_id
    and sample_id whose ``model`` is the perturbed record's model under the default condition
    (:func:`~perceptbench.core.conditions.parse_respondent_label`): a blur of ``M`` with the
    clean record of ``M``, and the withheld record of ``M[image_withheld]`` with the clean
    record of ``M`` too (the sample's ``model`` is the perturbed record's: ``M[image_withheld]``).
    A perturbed record without its clean record is ignored (an interrupted run; a rerun
    completes it).  Sorted by (task_id, model, sample_id,
    perturbation).  Raises ValueError when a VSI record lacks a key of :data:`VSI_META_KEYS`.
    """
    clean: dict[tuple, Any] = {}
    pert: list[tuple[tuple, Any, dict]] = []
    for r in records:
        extra = _meta(r)
        m = extra.get("vsi")
        if not isinstance(m, dict) or (extra.get("skipped") and not trial_skipped(r)):
            continue
        missing = [k for k in VSI_META_KEYS if k not in m]
        if missing:
            raise ValueError(f"record {r.trial_id}: run_meta.vsi lacks {missing}")
        key = (r.task_id, r.model, m["sample_id"])
        if m["condition"] == "clean":
            clean[key] = (r, m)
        elif m["condition"] in PERTURBATIONS:
            pert.append(((r.task_id, parse_respondent_label(r.model)[0], m["sample_id"]), r, m))
        else:
            raise ValueError(f"record {r.trial_id}: unknown VSI condition {m['condition']!r}")
    out = []
    for key, r, m in pert:
        if key not in clean:
            continue
        cr, cm = clean[key]
        flag = _pair_flag(cr, cm, r, m)
        if flag is not None:
            out.append(VSIFlagged(r.task_id, r.model, str(m["sample_id"]), PERTURBATIONS[m["condition"]],
                                  float(m["sigma_px"]), flag))
            continue
        v, changed = vsi_of_records(cm, m)
        vc = cm.get("verbal_conf")
        out.append(VSISample(
            task_id=r.task_id, benchmark=str(m["benchmark"]), model=r.model, model_family=r.model_family,
            sample_id=str(m["sample_id"]), image_id=str(m["image_id"]), perturbation=PERTURBATIONS[m["condition"]],
            sigma=float(m["sigma_px"]), vsi=v, argmax_changed=bool(changed), correct=cr.correct,
            max_prob=float(cm["max_prob"]), verbal_conf=None if vc is None else float(vc),
            region_source=str(m["region_source"])))
    out.sort(key=lambda s: (s.task_id, s.model, s.sample_id, s.perturbation, s.sigma))
    return out
