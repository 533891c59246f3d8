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
See :func:`perceptbench.metrics.topk_kl.kl_topk`, the one KL formula (computed for many pairs
at once, bit for bit, by :func:`perceptbench.metrics.topk_kl.kl_topk_batch`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from ..core.conditions import parse_respondent_label
from ..metrics.topk_kl import MASS_TOL, distribution_problem, invalid_rows, kl_topk, kl_topk_batch

__all__ = ["VSISample", "VSIFlagged", "VSI_META_KEYS", "CONDITIONS", "PERTURBATIONS", "BLURS", "FLAG_REASONS",
           "dist_keys", "trial_skipped", "vsi_samples", "vsi_flagged", "vsi_pairs", "vsi_of_records", "distribution_flags", "non_answer_token",
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
    if len(lps) == 1:
        return math.exp(float(lps[0])) >= 1.0 - MASS_TOL
    return len(lps) >= 2 and all(float(x) == float(lps[0]) for x in lps)


def distribution_flags(meta: dict) -> list[str]:
    """The reasons of :data:`FLAG_REASONS` one record's distribution (``run_meta.vsi`` keys
    ``tokens``/``token_ids``/``logprobs``) shows on its own: ``invalid_distribution``,
    ``non_answer_position``, ``uninformative`` (in that order; an invalid list is not tested
    further).  Never raises on a malformed list (it is invalid)."""
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


def vsi_pairs(records: Iterable[Any]) -> tuple[list[VSISample], list[VSIFlagged]]:
    """(:func:`vsi_samples`, :func:`vsi_flagged`) of ``records`` from one pass over them."""
    out = _pairs(records)
    return [s for s in out if isinstance(s, VSISample)], [s for s in out if isinstance(s, VSIFlagged)]


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
    The guards and the KL of every pair are computed at once on arrays (:class:`_Distributions`,
    :func:`~perceptbench.metrics.topk_kl.kl_topk_batch`), each record's distribution read once,
    with the values of the pair-by-pair definition (:func:`distribution_flags`,
    :func:`vsi_of_records`), bit for bit.
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
    matched = [(clean[key], r, m) for key, r, m in pert if key in clean]
    if not matched:
        return []
    ids = {}  # id(meta) -> row of the distribution table, each record's distribution read once
    metas = []
    for (_, cm), _, m in matched:
        for d in (cm, m):
            if id(d) not in ids:
                ids[id(d)] = len(metas)
                metas.append(d)
    table = _Distributions(metas)
    ci = np.array([ids[id(cm)] for (_, cm), _, _ in matched])
    pi = np.array([ids[id(m)] for _, _, m in matched])
    skipped = np.array([trial_skipped(cr) or trial_skipped(r) for (cr, _), r, _ in matched], bool)
    sha_differs = np.array([cm.get("image_sha256") is None or cm.get("image_sha256") != m.get("image_sha256")
                            for (_, cm), _, m in matched], bool)
    flag = np.full(len(matched), -1)  # index into FLAG_REASONS, -1: not flagged
    flag[skipped] = 0
    either = table.flags[ci] | table.flags[pi]  # (pairs, 3): invalid, non-answer, uninformative
    for j in (2, 1, 0):  # the first reason that applies wins
        flag = np.where(~skipped & either[:, j], j + 1, flag)
    vsi, changed, identical = table.kl(ci, pi, flag < 0)
    flag = np.where((flag < 0) & identical & sha_differs, 4, flag)
    out = []
    for k, ((cr, cm), r, m) in enumerate(matched):
        if flag[k] >= 0:
            out.append(VSIFlagged(r.task_id, r.model, str(m["sample_id"]), PERTURBATIONS[m["condition"]],
                                  float(m["sigma_px"]), FLAG_REASONS[flag[k]]))
            continue
        vc = cm.get("verbal_conf")
        out.append(VSISample(
            task_id=r.task_id, benchmark=str(m["benchmark"]), model=r.model, model_family=r.model_family,
            sample_id=str(m["sample_id"]), image_id=str(m["image_id"]), perturbation=PERTURBATIONS[m["condition"]],
            sigma=float(m["sigma_px"]), vsi=float(vsi[k]), argmax_changed=bool(changed[k]), correct=cr.correct,
            max_prob=float(cm["max_prob"]), verbal_conf=None if vc is None else float(vc),
            region_source=str(m["region_source"])))
    out.sort(key=lambda s: (s.task_id, s.model, s.sample_id, s.perturbation, s.sigma))
    return out


class _Distributions:
    """The distributions of many VSI records (``run_meta.vsi`` dicts) as arrays: each record's
    keys (:func:`dist_keys`) as integer codes (the token ids themselves when every key is an
    integer, else one code per distinct key, equal exactly when the keys are equal) and its
    log-probabilities, one table per list length; ``flags`` bool (n, 3): the reasons
    :func:`distribution_flags` gives each record (invalid distribution, non-answer position,
    uninformative), the same verdicts computed on the arrays.  A record whose lists are not a
    regular distribution (missing, of unequal lengths, empty, unhashable or non-numeric
    entries) is judged by :func:`distribution_flags` itself and is always invalid."""

    def __init__(self, metas: list[dict]):
        n = len(metas)
        self.flags = np.zeros((n, 3), bool)
        self.complete = np.array([bool(m.get("complete")) for m in metas], bool)
        self.where = np.full((n, 2), -1)  # (length, row) of each regular record
        lists: dict[int, list[tuple[int, list, list]]] = {}
        for i, m in enumerate(metas):
            try:
                keys, lps = dist_keys(m), list(m["logprobs"])
                ok = 0 < len(keys) == len(lps) and len(set(keys)) == len(keys)
            except (KeyError, TypeError):
                ok = False
            if ok:
                lists.setdefault(len(keys), []).append((i, keys, lps))
            else:
                self._irregular(i, m)
        self.keys: dict[int, np.ndarray] = {}
        self.lp: dict[int, np.ndarray] = {}
        for k, members in lists.items():
            try:
                lp = np.array([v for _, _, v in members], dtype=np.float64)
                if lp.ndim != 2:
                    raise ValueError("not a list of numbers")
            except (TypeError, ValueError, OverflowError):  # a None or a non-number: judged one by one
                keep = []
                for i, keys, lps in members:
                    if distribution_problem(keys, lps) is not None:
                        self._irregular(i, metas[i])
                    else:
                        keep.append((i, keys, lps))
                lists[k] = members = keep
                if not members:
                    continue
                lp = np.array([v for _, _, v in members], dtype=np.float64)
            self.lp[k] = lp
            rows = np.array([i for i, _, _ in members])
            self.where[rows, 0], self.where[rows, 1] = k, np.arange(len(members))
        self._encode({k: [keys for _, keys, _ in members] for k, members in lists.items() if members})
        non_answer: dict[str, bool] = {}
        for k, lp in self.lp.items():
            rows = np.flatnonzero(self.where[:, 0] == k)
            bad = invalid_rows(self.keys[k], lp)
            if k == 1:
                flat = np.array([math.exp(float(x)) >= 1.0 - MASS_TOL for x in lp[:, 0]], bool)
            else:
                flat = (lp == lp[:, :1]).all(1)
            self.flags[rows, 0] = bad
            self.flags[rows, 2] = flat & ~bad
            for i in rows[~bad]:
                first = str(list(metas[i].get("tokens") or [""])[0])
                if first not in non_answer:
                    non_answer[first] = non_answer_token(first)
                self.flags[i, 1] = non_answer[first]

    def _irregular(self, i: int, meta: dict) -> None:
        for j, reason in enumerate(FLAG_REASONS[1:4]):
            self.flags[i, j] = reason in distribution_flags(meta)

    def _encode(self, keys: dict[int, list[list]]) -> None:
        try:
            arrays = {k: np.array(v) for k, v in keys.items()}
            if all(a.ndim == 2 and a.dtype.kind in "iub" for a in arrays.values()):
                self.keys = {k: a.astype(np.int64) for k, a in arrays.items()}
                return
        except (OverflowError, ValueError, TypeError):
            pass
        code: dict = {}  # any other keys (token strings, mixed): one code per distinct key
        self.keys = {k: np.array([[code.setdefault(t, len(code)) for t in row] for row in v], dtype=np.int64)
                     for k, v in keys.items()}

    def kl(self, ci: np.ndarray, pi: np.ndarray, want: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For pairs (clean row ``ci``, perturbed row ``pi``) with ``want`` True: KL(clean ||
        perturbed) in nats (:func:`~perceptbench.metrics.topk_kl.kl_topk_batch`, equal to
        :func:`vsi_of_records`), whether the first keys differ, and whether the two lists are
        identical (keys and log-probabilities, at least two tokens); NaN / False elsewhere."""
        m = len(ci)
        vsi, changed, identical = np.full(m, np.nan), np.zeros(m, bool), np.zeros(m, bool)
        wc, wp = self.where[ci], self.where[pi]
        for kc, kp in {(int(a), int(b)) for a, b in zip(wc[want, 0], wp[want, 0])}:
            sel = np.flatnonzero(want & (wc[:, 0] == kc) & (wp[:, 0] == kp))
            rc, rp = wc[sel, 1], wp[sel, 1]
            ck, clp, pk, plp = self.keys[kc][rc], self.lp[kc][rc], self.keys[kp][rp], self.lp[kp][rp]
            vsi[sel] = kl_topk_batch(ck, clp, pk, plp, p_complete=self.complete[ci[sel]],
                                     q_complete=self.complete[pi[sel]])
            changed[sel] = ck[:, 0] != pk[:, 0]
            if kc == kp >= 2:
                identical[sel] = (ck == pk).all(1) & (clp == plp).all(1)
        return vsi, changed, identical

