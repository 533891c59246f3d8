"""Visual Sensitivity Index (seed 002 §2, appendix A and D.1): KL divergence between a VLM's
first-answer-token distributions on the clean and on the blurred image, recomputed from trial
records alone (numpy only; no torch, no model).

VSI record format
-----------------
A VSI task (:mod:`perceptbench.tasks.vsi`) writes, per (model, sample), one record per
condition: ``clean``, and ``region_blur`` and/or ``whole_blur`` at the task's sigma.

* ``stimulus_id`` = ``{sample_id}~{condition}`` with ``condition`` one of ``clean``,
  ``region_blur``, ``whole_blur`` (the sigma is in the task id when not the default, and in
  ``manipulated_value``), so ``trial_id = task_id|stimulus_id|model|rep0`` is unique per
  condition.
* ``manipulated_value`` = ``"clean"`` or ``"{condition}:sigma={sigma_px:g}"`` (e.g.
  ``"region_blur:sigma=20"``).
* ``readout`` = ``"vlm_vsi_clean"`` (greedy answer + first-token distribution) or
  ``"vlm_vsi_perturbed"`` (prefill only: first-token distribution, no generation; its
  ``response``/``raw_output`` are null).
* Clean record: ``raw_output`` the greedy answer, ``response`` its parse (``"yes"``/``"no"``,
  an option letter, or the base task's response; null when unparseable), ``ground_truth`` and
  ``correct`` as usual.
* ``run_meta["vsi"]`` (every condition) is a dict with the keys of :data:`VSI_META_KEYS`:

  ===================== =================================================================
  sample_id             base (image x question) id, shared across models and conditions
  image_id              groups every question/view of one image
  benchmark             e.g. ``salbench.syn``, ``battery.mark_color``, ``pope.adversarial``
  condition             ``clean`` | ``region_blur`` | ``whole_blur``
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

A record whose ``run_meta`` carries ``skipped`` (a provider without logprobs) holds no
distribution and yields no :class:`VSISample`.

Support of truncated distributions (documented in ``docs/metrics.md``)
----------------------------------------------------------------------
See :func:`kl_topk`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence

import numpy as np

__all__ = [
    "VSISample", "VSI_META_KEYS", "CONDITIONS", "PERTURBATIONS", "INSENSITIVE_THRESHOLDS", "HIST_EDGES",
    "kl_topk", "support_distributions", "dist_keys", "vsi_samples", "vsi_of_records", "cell_summary",
]

CONDITIONS = ("clean", "region_blur", "whole_blur")
PERTURBATIONS = {"region_blur": "region", "whole_blur": "whole", "image_withheld": "withheld"}
"""Condition name in records -> ``VSISample.perturbation``."""

INSENSITIVE_THRESHOLDS = (0.05, 0.01)
"""VSI < 0.05 (seed 002 §2.2, the headline insensitive fraction) and < 0.01 (seed 002 §3)."""

HIST_EDGES = (0.0,) + tuple(float(10.0 ** e) for e in np.arange(-4.0, 1.0 + 1e-9, 0.5)) + (math.inf,)
"""Fixed histogram edges in nats: 0, 1e-4, 10^-3.5, ..., 10, inf (12 bins; half-decade wide between 1e-4 and 10)."""

FLOOR = 1e-12
"""Smallest probability any support element gets before renormalising (keeps KL finite)."""

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


def support_distributions(p_keys: Sequence[Hashable], p_logprobs: Sequence[float],
                          q_keys: Sequence[Hashable], q_logprobs: Sequence[float], *,
                          p_complete: bool = False, q_complete: bool = False,
                          floor: float = FLOOR) -> tuple[np.ndarray, np.ndarray, list]:
    """Put two (possibly truncated) next-token distributions on one support.

    Support = union of both key sets (in order of first appearance: P's keys, then Q's new
    ones) plus one ``<rest>`` bucket.  Per side with known probabilities p_t (t in its list)
    and remaining mass r = max(0, 1 - sum p_t): a support token missing from that side's list
    gets ``min(p_min, r / (m + 1))`` where p_min is the side's smallest listed probability
    (a missing token cannot be more probable than the k-th) and m the number of its missing
    support tokens; the rest bucket gets what is left of r.  Every element is then floored at
    ``floor`` and the vector renormalised to sum 1.  A ``complete`` side (the whole vocabulary
    listed) assigns missing tokens the floor only.

    Returns (p, q, support) with p, q float64 arrays of shape (len(support),); the last
    support element is the string ``"<rest>"``.  Raises ValueError for mismatched lengths,
    duplicate keys, empty lists or positive / non-finite log-probabilities.
    """
    pk, pl = _check_side(p_keys, p_logprobs, "p")
    qk, ql = _check_side(q_keys, q_logprobs, "q")
    support: list = list(pk)
    seen = set(pk)
    for k in qk:
        if k not in seen:
            support.append(k)
            seen.add(k)
    p = _on_support(pk, pl, support, p_complete, floor)
    q = _on_support(qk, ql, support, q_complete, floor)
    return p, q, support + ["<rest>"]


def _check_side(keys, logprobs, name) -> tuple[list, np.ndarray]:
    keys = list(keys)
    lp = np.asarray(logprobs, dtype=np.float64)
    if lp.ndim != 1 or len(keys) != lp.shape[0]:
        raise ValueError(f"{name}: {len(keys)} keys but logprobs of shape {lp.shape}")
    if not keys:
        raise ValueError(f"{name}: empty distribution")
    if len(set(keys)) != len(keys):
        raise ValueError(f"{name}: duplicate token keys")
    if not np.all(np.isfinite(lp)) or np.any(lp > 1e-6):
        raise ValueError(f"{name}: log-probabilities must be finite and <= 0")
    return keys, lp


def _on_support(keys: list, lp: np.ndarray, support: list, complete: bool, floor: float) -> np.ndarray:
    probs = np.exp(np.minimum(lp, 0.0))
    known = dict(zip(keys, probs))
    rest = max(0.0, 1.0 - float(probs.sum()))
    missing = [k for k in support if k not in known]
    out = np.empty(len(support) + 1, dtype=np.float64)
    share = 0.0 if complete else min(float(probs.min()), rest / (len(missing) + 1))
    for i, k in enumerate(support):
        out[i] = known.get(k, share)
    out[-1] = max(0.0, rest - share * len(missing))
    out = np.maximum(out, floor)
    return out / out.sum()


def kl_topk(p_keys: Sequence[Hashable], p_logprobs: Sequence[float], q_keys: Sequence[Hashable],
            q_logprobs: Sequence[float], *, p_complete: bool = False, q_complete: bool = False,
            floor: float = FLOOR) -> float:
    """KL(P || Q) in nats between two top-k next-token distributions (seed 002 §2: VSI).

    ``*_keys``: token ids (local models) or token strings (API providers), length k;
    ``*_logprobs``: their natural-log probabilities (float, <= 0).  The two lists are put on
    one support by :func:`support_distributions` (union of both top-k sets + one remaining-mass
    bucket; a token missing on one side gets min(its k-th probability, remaining mass / (m+1)),
    floored at 1e-12), then KL = sum_t p_t (ln p_t - ln q_t).  Returns a float >= 0; exactly 0
    for identical inputs.  Raises ValueError as :func:`support_distributions`.
    """
    p, q, _ = support_distributions(p_keys, p_logprobs, q_keys, q_logprobs, p_complete=p_complete,
                                    q_complete=q_complete, floor=floor)
    return float(max(0.0, np.sum(p * (np.log(p) - np.log(q)))))


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
    """The per-sample VSI table from trial records (any iterable of :class:`TrialRecord`).

    Records without ``run_meta["vsi"]`` (non-VSI tasks, human records) and skipped records
    are ignored.  Each perturbed record is paired with the clean record of the same
    (task_id, model, sample_id); a perturbed record without its clean record is ignored
    (an interrupted run; a rerun completes it).  Sorted by (task_id, model, sample_id,
    perturbation).  Raises ValueError when a VSI record lacks a key of :data:`VSI_META_KEYS`.
    """
    clean: dict[tuple, Any] = {}
    pert: list[tuple[tuple, Any, dict]] = []
    for r in records:
        extra = _meta(r)
        m = extra.get("vsi")
        if not isinstance(m, dict) or extra.get("skipped"):
            continue
        missing = [k for k in VSI_META_KEYS if k not in m]
        if missing:
            raise ValueError(f"record {r.trial_id}: run_meta.vsi lacks {missing}")
        key = (r.task_id, r.model, m["sample_id"])
        if m["condition"] == "clean":
            clean[key] = (r, m)
        elif m["condition"] in PERTURBATIONS:
            pert.append((key, r, m))
        else:
            raise ValueError(f"record {r.trial_id}: unknown VSI condition {m['condition']!r}")
    out = []
    for key, r, m in pert:
        if key not in clean:
            continue
        cr, cm = clean[key]
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


@dataclass(frozen=True)
class CellSummary:
    """Summary of one (task x model x perturbation x sigma) cell; see :func:`cell_summary`."""

    n: int
    median: float
    q25: float
    q75: float
    insensitive: dict  # threshold -> BootstrapResult of the fraction VSI < threshold
    argmax_change_rate: Any  # BootstrapResult
    hist_counts: tuple[int, ...]


def cell_summary(vsi: np.ndarray, argmax_changed: np.ndarray, *, seed: int, n_draws: int | None = None) -> CellSummary:
    """Median and quartiles of VSI (numpy ``percentile``, linear interpolation), the insensitive
    fractions VSI < 0.05 and < 0.01 (seed 002 §2.2, §3) and the argmax-change rate (seed 002 §2.4),
    each with a seeded percentile bootstrap over samples (:func:`perceptbench.metrics.bootstrap.bootstrap`,
    1,000 draws), and histogram counts in :data:`HIST_EDGES` (bins ``[lo, hi)``).

    ``vsi``: shape (n,) float (nats); ``argmax_changed``: shape (n,) bool.  Raises ValueError for n = 0.
    """
    from .bootstrap import N_BOOT_B, bootstrap

    v = np.asarray(vsi, dtype=np.float64)
    a = np.asarray(argmax_changed, dtype=np.float64)
    if v.size == 0:
        raise ValueError("no VSI samples in this cell")
    nd = N_BOOT_B if n_draws is None else n_draws
    ins = {}
    for t in INSENSITIVE_THRESHOLDS:
        below = (v < t).astype(np.float64)
        ins[t] = bootstrap(lambda i, b=below: b[i].mean(1), v.size, n_draws=nd, seed=seed)
    arg = bootstrap(lambda i: a[i].mean(1), v.size, n_draws=nd, seed=seed)
    counts, _ = np.histogram(np.clip(v, 0.0, 1e300), bins=np.array(HIST_EDGES[:-1] + (1e300,)))
    q25, med, q75 = np.percentile(v, [25, 50, 75])
    return CellSummary(int(v.size), float(med), float(q25), float(q75), ins, arg, tuple(int(c) for c in counts))
