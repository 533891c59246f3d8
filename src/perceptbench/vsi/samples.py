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
from ..records import VSI_EXTRA_KEYS, VSI_META_KEYS, VSI_READOUTS

__all__ = ["VSISample", "VSIFlagged", "VSI_META_KEYS", "CONDITIONS", "PERTURBATIONS", "BLURS", "FLAG_REASONS",
           "dist_keys", "trial_skipped", "vsi_samples", "vsi_flagged", "vsi_pairs", "vsi_of_records", "distribution_flags", "non_answer_token",
           "answer_token_agrees", "holds_answer"]

CONDITIONS = ("clean", "region_blur", "whole_blur")

PERTURBATIONS = {"region_blur": "region", "whole_blur": "whole", "image_withheld": "withheld"}
"""Condition name in records -> ``VSISample.perturbation`` (with ``clean``, the record format's
:data:`perceptbench.records.VSI_CONDITIONS`, which the line rule checks; a test keeps them equal)."""

WITHHELD = "image_withheld"
"""The condition whose records hold the model's answer without the image (:mod:`perceptbench.respond.withheld`)."""

BLURS = ("region", "whole")
"""The ``VSISample.perturbation`` of the blur conditions (a Gaussian blur at a sigma); the
cross-task analyses (:mod:`perceptbench.vsi.analysis`, seed 002 §2.3-§4) are defined over these."""


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


def holds_answer(r) -> bool:
    """Whether VSI record ``r`` holds a greedy answer (the rule of :class:`VSIReader`'s ``answered``:
    not skipped, and a clean record or an image-withheld one with its ``raw_output``)."""
    extra = _meta(r)
    if extra.get("skipped"):
        return False
    m = extra.get("vsi")
    return r.readout == "vlm_vsi_clean" or (isinstance(m, dict) and m.get("condition") == WITHHELD
                                            and r.raw_output is not None)


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
    return _split(_pairs(records))


def _split(out: list) -> tuple[list[VSISample], list[VSIFlagged]]:
    return [s for s in out if isinstance(s, VSISample)], [s for s in out if isinstance(s, VSIFlagged)]


def _pairs(records: Iterable[Any]) -> list:
    """The per-sample VSI table from trial records (any iterable of :class:`TrialRecord`): the
    records of each task as :class:`VSIColumns` (:meth:`VSIColumns.from_records`), their
    :meth:`~VSIColumns.pairs` (records of two tasks never pair), sorted by (task_id, model,
    sample_id, perturbation, sigma).  Raises ValueError as :meth:`VSIColumns.pairs` does."""
    by_task: dict[str, list] = {}
    for r in records:
        by_task.setdefault(r.task_id, []).append(r)
    out = [p for t in sorted(by_task) for p in VSIColumns.from_records(by_task.pop(t)).pairs()]
    out.sort(key=_order)
    return out


def _order(s) -> tuple:
    return (s.task_id, s.model, s.sample_id, s.perturbation, s.sigma)


class _Vocab:
    """Values -> int32 codes in order of first appearance (``values[code]``), two values sharing a
    code only when of one type and equal (so ``str``/``float`` of a value are those of the record's
    own value); ``values[0]`` is None."""

    def __init__(self):
        self.codes: dict = {(type(None), None): 0}
        self.values: list = [None]

    def code(self, v) -> int:
        k = (type(v), v)
        c = self.codes.get(k)
        if c is None:
            c = self.codes[k] = len(self.values)
            self.values.append(v)
        return c


class _Deferred:
    """An exception the record path raised while reading one record's ``run_meta`` for a score row,
    kept to be raised when that row is computed (the record's model may be scored as skipped)."""

    def __init__(self, exc: Exception):
        self.exc = exc


def _row_meta(extra: dict, clean: bool):
    """(verbal confidence, answer-token mismatch, condition of a region-blur fallback or None): what
    :func:`perceptbench.vsi.scoring.score_task` reads of one record's ``run_meta`` besides its
    distribution, by the expressions it always used; an exception is kept (:class:`_Deferred`)."""
    try:
        vc = mismatch = None
        if clean:
            vc = extra.get("vsi", {}).get("verbal_conf")
            mismatch = "answer_token_mismatch" in (extra.get("vsi", {}).get("flags") or ())
        v = extra.get("vsi") or {}
        return vc, mismatch, (v["condition"] if v.get("fallback") else None)
    except Exception as e:  # noqa: BLE001 - kept and raised where the record path raised it
        d = _Deferred(e)
        return d, d, d


class VSIColumns:
    """The trial records of one VSI task as columns (issue 25): what the VSI scoring reads of each
    record, no record object kept; both the record path (:meth:`from_records`) and the columnar
    one (:meth:`from_task_columns`, records streamed off the file) build it with one
    :class:`VSIReader` per record, and :meth:`pairs`, :func:`perceptbench.vsi.scoring.score_columns`
    and the suite analysis read it.

    Per record (n,), in record order: ``model``, ``family``, ``readout``, ``stimulus`` int32
    codes into ``models``, ``families``, ``readouts``, ``stimuli``; ``response_null`` bool (the
    response, re-parsed, is null); ``correct`` int8 (1, 0, -1 for null); ``response`` and
    ``ground_truth`` int32 codes into ``values`` (equal answers share a code,
    :func:`perceptbench.record_table.canonical_answer`); ``rep`` int64; the VSI fields of
    :class:`VSIReader` (``side``)."""

    def __init__(self, task_id: str, model, models, family, families, readout, readouts, stimulus, stimuli,
                 response_null, correct, side: "VSIReader", response, ground_truth, values, rep):
        self.task_id = task_id
        self.model, self.models, self.family, self.families = model, models, family, families
        self.readout, self.readouts, self.stimulus, self.stimuli = readout, readouts, stimulus, stimuli
        self.response_null, self.correct, self.side = response_null, correct, side
        self.response, self.ground_truth, self.values, self.rep = response, ground_truth, list(values), rep
        self._pairs: list | None = None

    @property
    def n(self) -> int:
        return len(self.model)

    @classmethod
    def from_records(cls, records: list) -> "VSIColumns":
        """Columns of ``records`` (one task, in the order given)."""
        from ..record_table import canonical_answer

        side = VSIReader()
        vocab = {k: {} for k in ("model", "family", "readout", "stimulus")}
        codes = {k: [] for k in vocab}
        null, correct, rep = [], [], []
        answers: dict = {}
        values: list = []
        answer_codes: dict[str, list] = {"response": [], "ground_truth": []}
        for r in records:
            side.add(r)
            for k, v in (("model", r.model), ("family", r.model_family), ("readout", r.readout),
                         ("stimulus", r.stimulus_id)):
                codes[k].append(vocab[k].setdefault(v, len(vocab[k])))
            for k, v in (("response", r.response), ("ground_truth", r.ground_truth)):
                key = canonical_answer(v)
                if key not in answers:
                    answers[key] = len(values)
                    values.append(v)
                answer_codes[k].append(answers[key])
            null.append(r.response is None)
            correct.append(-1 if r.correct is None else int(r.correct))
            rep.append(r.rep)
        side.finish()
        arr = {k: np.array(v, np.int32) for k, v in (*codes.items(), *answer_codes.items())}
        return cls(records[0].task_id if records else "", arr["model"], list(vocab["model"]), arr["family"],
                   list(vocab["family"]), arr["readout"], list(vocab["readout"]), arr["stimulus"],
                   list(vocab["stimulus"]), np.array(null, bool), np.array(correct, np.int8), side,
                   arr["response"], arr["ground_truth"], values, np.array(rep, np.int64))

    @classmethod
    def from_task_columns(cls, c, side: "VSIReader") -> "VSIColumns":
        """Columns of a :class:`perceptbench.record_table.TaskColumns` (responses and
        correctness as re-parsed) and the :class:`VSIReader` that read the same records in the
        same order."""
        null = np.array([v is None for v in c.values], bool)[c.response]
        return cls(c.task_id, c.model, c.models, c.family, c.families, c.readout, c.readouts, c.stimulus,
                   c.stimuli, null, c.correct, side, c.response, c.ground_truth, c.values, c.rep)

    def pairs(self) -> list:
        """Every (clean, perturbed) pair of the task: a :class:`VSISample`, or a
        :class:`VSIFlagged` with the first reason of :data:`FLAG_REASONS` that applies, sorted by
        (model, sample_id, perturbation, sigma); computed once (kept).

        Records without ``run_meta["vsi"]`` (human records) and records skipped for the model are
        ignored; trial-level skips pair (and are flagged).  Each perturbed record is paired with
        the clean record of the same sample_id whose ``model`` is the perturbed record's model
        under the default condition (:func:`~perceptbench.core.conditions.parse_respondent_label`):
        a blur of ``M`` with the clean record of ``M``, and the withheld record of
        ``M[image_withheld]`` with the clean record of ``M`` too (the sample's ``model`` is the
        perturbed record's: ``M[image_withheld]``).  A perturbed record without its clean record
        is ignored (an interrupted run; a rerun completes it).  Raises ValueError when a VSI
        record lacks a key of :data:`VSI_META_KEYS` or names an unknown condition (raised while
        reading it).  The guards and the KL of every pair are computed at once on arrays
        (:func:`~perceptbench.metrics.topk_kl.kl_topk_batch`), each record's distribution read
        once, with the values of the pair-by-pair definition (:func:`distribution_flags`,
        :func:`vsi_of_records`), bit for bit."""
        if self._pairs is None:
            self._pairs = self._compute_pairs(np.ones(self.n, bool))
        return self._pairs

    def pairs_within(self, rows: np.ndarray) -> list:
        """:meth:`pairs` of the records where ``rows`` (bool (n,)) is True alone."""
        return self._compute_pairs(rows)

    def _compute_pairs(self, within: np.ndarray) -> list:
        sd = self.side
        clean_code = sd.conditions.get((str, "clean"))
        code_of = {m: i for i, m in enumerate(self.models)}
        base = {i: code_of.get(parse_respondent_label(self.models[i])[0], -1)
                for i in np.unique(self.model[within & sd.pairs_in]).tolist()}
        clean: dict[tuple, int] = {}
        pert: list[tuple[tuple, int]] = []
        rows = np.flatnonzero(within & sd.pairs_in)
        is_clean = (sd.condition[rows] == clean_code).tolist() if clean_code is not None else [False] * len(rows)
        eq = np.asarray(sd.sample_eq, np.int64)[sd.sample[rows]].tolist()
        for i, m, e, c in zip(rows.tolist(), self.model[rows].tolist(), eq, is_clean):  # Python ints: fast
            if c:
                clean[(m, e)] = i
            else:
                pert.append(((base[m], e), i))
        matched = [(clean[key], i) for key, i in pert if key in clean]
        if not matched:
            return []
        ci = np.array([c for c, _ in matched])
        pi = np.array([p for _, p in matched])
        table = sd.dist
        di_c, di_p = sd.dist_row[ci], sd.dist_row[pi]
        skipped = sd.trial_skip[ci] | sd.trial_skip[pi]
        sha = sd.sha
        sha_differs = (sha[ci] == 0) | (sha[ci] != sha[pi])
        flag = np.full(len(matched), -1)  # index into FLAG_REASONS, -1: not flagged
        flag[skipped] = 0
        either = table.flags[di_c] | table.flags[di_p]  # (pairs, 3): invalid, non-answer, uninformative
        for j in (2, 1, 0):  # the first reason that applies wins
            flag = np.where(~skipped & either[:, j], j + 1, flag)
        vsi, changed, identical = table.kl(di_c, di_p, flag < 0)
        flag = np.where((flag < 0) & identical & sha_differs, 4, flag)
        out = []
        v = sd.values
        cond_v, sample_v, bench_v, image_v, region_v = (v[k] for k in ("condition", "sample", "benchmark", "image",
                                                                      "region"))
        # per pair, as Python lists (read pair by pair in the order of the definition)
        pc, ps, pb, pim, pr, pm, pf = (a[pi].tolist() for a in (sd.condition, sd.sample, sd.benchmark, sd.image,
                                                                 sd.region, self.model, self.family))
        cc, fl, vl, ch = self.correct[ci].tolist(), flag.tolist(), vsi.tolist(), changed.tolist()
        sigma_of, max_prob_of, vc_of = sd.sigma, sd.max_prob, sd.verbal_conf_of_pair
        for k, (c, p) in enumerate(matched):
            pert_name = PERTURBATIONS[cond_v[pc[k]]]
            sid, sigma = str(sample_v[ps[k]]), float(sigma_of[p])
            model = self.models[pm[k]]
            if fl[k] >= 0:
                out.append(VSIFlagged(self.task_id, model, sid, pert_name, sigma, FLAG_REASONS[fl[k]]))
                continue
            vc = vc_of[c]
            corr = cc[k]
            out.append(VSISample(
                task_id=self.task_id, benchmark=str(bench_v[pb[k]]), model=model,
                model_family=self.families[pf[k]], sample_id=sid, image_id=str(image_v[pim[k]]),
                perturbation=pert_name, sigma=sigma, vsi=vl[k], argmax_changed=ch[k],
                correct=None if corr < 0 else bool(corr), max_prob=float(max_prob_of[c]),
                verbal_conf=None if vc is None else float(vc), region_source=str(region_v[pr[k]])))
        out.sort(key=_order)
        return out


class VSIReader:
    """The VSI fields of one task's records, read one record at a time (:meth:`add`, then
    :meth:`finish`), each record's distribution into :class:`_Distributions` and the record let
    go.  Per record (n,) after :meth:`finish`: ``pairs_in`` bool (a VSI record not skipped for
    the model: it pairs), ``trial_skip`` bool (:func:`trial_skipped`), ``skip`` int32 codes into
    ``skips`` (``run_meta.skipped``, None: not skipped), ``vote`` bool (``run_meta.vote`` set);
    ``sample``, ``image``, ``benchmark``, ``condition``, ``region``, ``sha`` int32 codes into
    ``values[...]`` (``image_sha256``; code 0: None) and ``sample_eq`` (code -> a code equal for
    equal sample ids, as the pairing compares them); ``sigma``, ``max_prob`` and
    ``verbal_conf_of_pair`` the recorded values (objects: ``float`` of them is taken where a
    sample needs it); ``verbal_conf``, ``mismatch``, ``fallback`` what the task's rows read
    (:func:`_row_meta`); ``dist_row`` int64 the record's row of ``dist`` (-1: none); ``answered``
    bool, the record holds a greedy answer (below; :func:`holds_answer`); ``extras``: for each key of
    :data:`~perceptbench.records.VSI_EXTRA_KEYS`, (codes int32 (n,), values): the record's
    ``run_meta`` value is ``values[codes[i]]`` (None: absent or null).

    A record holds a greedy answer (``answered``, the answers the benchmark-native rows score,
    :mod:`perceptbench.vsi.native`) when it is not skipped (``run_meta.skipped`` unset) and is
    either a clean VSI record (readout ``vlm_vsi_clean``) or an image-withheld one that recorded
    its answer (``run_meta.vsi.condition == "image_withheld"`` and ``raw_output`` not null:
    records written before the withheld condition recorded greedy answers hold none)."""

    def __init__(self):
        self.vocab = {k: _Vocab() for k in ("sample", "image", "benchmark", "condition", "region", "sha")}
        self.skip_vocab = _Vocab()
        self.cols: dict[str, list] = {k: [] for k in (
            "pairs_in", "trial_skip", "skip", "vote", "sample", "image", "benchmark", "condition", "region", "sha",
            "sigma", "max_prob", "verbal_conf_of_pair", "verbal_conf", "mismatch", "fallback", "dist_row",
            "answered")}
        self.extra_values: dict[str, list] = {k: [] for k in VSI_EXTRA_KEYS}
        self.dist = _Distributions()

    def add(self, r) -> None:
        """Read one record ``r`` (a :class:`~perceptbench.records.TrialRecord`).  Raises
        ValueError (naming the trial) for a VSI record not skipped for the model that lacks a key
        of :data:`VSI_META_KEYS` or names an unknown condition."""
        extra = _meta(r)
        m = extra.get("vsi")
        tskip = trial_skipped(r)
        skipped = extra.get("skipped")
        pairs_in = isinstance(m, dict) and not (skipped and not tskip)
        col = self.cols
        vals = {k: None for k in self.vocab}
        sigma = max_prob = vc_pair = None
        dist_row = -1
        if pairs_in:
            missing = [k for k in VSI_META_KEYS if k not in m]
            if missing:
                raise ValueError(f"record {r.trial_id}: run_meta.vsi lacks {missing}")
            if m["condition"] != "clean" and m["condition"] not in PERTURBATIONS:
                raise ValueError(f"record {r.trial_id}: unknown VSI condition {m['condition']!r}")
            vals = {"sample": m["sample_id"], "image": m["image_id"], "benchmark": m["benchmark"],
                    "condition": m["condition"], "region": m["region_source"], "sha": m.get("image_sha256")}
            sigma, max_prob, vc_pair = m["sigma_px"], m["max_prob"], m.get("verbal_conf")
            dist_row = self.dist.add(m)
        for k, v in vals.items():
            col[k].append(self.vocab[k].code(v))
        for k, v in self.extra_values.items():
            v.append(extra.get(k))
        col["answered"].append(holds_answer(r))
        vc, mismatch, fb = _row_meta(extra, r.readout == "vlm_vsi_clean" and not tskip)
        for k, v in (("pairs_in", pairs_in), ("trial_skip", tskip), ("skip", self.skip_vocab.code(skipped)),
                     ("vote", "vote" in extra), ("sigma", sigma), ("max_prob", max_prob),
                     ("verbal_conf_of_pair", vc_pair), ("verbal_conf", vc), ("mismatch", mismatch),
                     ("fallback", fb), ("dist_row", dist_row)):
            col[k].append(v)

    @classmethod
    def from_fields(cls, f: dict, clean_readout: np.ndarray) -> "VSIReader | None":
        """The reader of one task's records from their ``run_meta`` fields as
        :func:`perceptbench.record_table.read_columns` read them (``f``: ``TaskColumns.vsi_fields``;
        no line parsed again; ``clean_readout`` bool (n,): readout ``vlm_vsi_clean``), holding what
        :meth:`add` reads of the same records: the scalar fields are JSON texts decoded by
        ``json.loads`` once per distinct text (so each is the record path's very value), the lists
        ``token_ids``/``logprobs`` duckdb's int64/float64 arrays (bit for bit ``json.loads``' numbers:
        tests/unit/test_record_table.py).  None when a record is one the columns do not take as
        :meth:`add` does (a key missing, a field of a type :meth:`add` would refuse, take otherwise or
        fail on, a non-finite log-probability): the task then takes the record path, which reads,
        judges or refuses those records as it always did (a line the VSI line rule,
        :func:`perceptbench.records.vsi_meta_problem`, refuses is refused there)."""
        import json

        if not f["ok"].all() or not np.isfinite(f["lp"]).all():
            return None
        val = {k: [None if t is None else json.loads(t) for t in v] for k, v in f["values"].items()}
        self = cls()
        obj = f["obj"]
        try:
            skip = np.array([self.skip_vocab.code(v) for v in val["skipped"]], np.int32)[f["skipped"]]
            scope = np.array([v == "trial" for v in val["skip_scope"]], bool)[f["skip_scope"]]
            skipped = np.array([bool(v) for v in val["skipped"]], bool)[f["skipped"]]
            codes = {}
            for k, name in (("sample", "sample_id"), ("image", "image_id"), ("benchmark", "benchmark"),
                            ("condition", "condition"), ("region", "region_source"), ("sha", "image_sha256")):
                codes[k] = np.array([self.vocab[k].code(v) for v in val[name]], np.int32)
            cond = val["condition"]
            if not all(c is None or c == "clean" or c in PERTURBATIONS for c in cond):
                return None
            for k in ("sigma_px", "max_prob", "verbal_conf"):  # what float() of them gives, never fails
                if any(v is not None and (type(v) not in (int, float) or not math.isfinite(v)) for v in val[k]):
                    return None
            if any(v is not None and v < 0 for v in val["sigma_px"]):  # the VSI line rule refuses it
                return None
            # a null sigma, or a null max_prob on a clean record with a distribution: the VSI line rule
            # (perceptbench.records.vsi_meta_problem) refuses them on the record path
            null = {k: np.array([v is None for v in val[k]], bool)[f[k]] for k in ("sigma_px", "max_prob")}
            clean_cond = np.array([c == "clean" for c in cond], bool)[f["condition"]]
            if (obj & null["sigma_px"]).any() or (obj & null["max_prob"] & clean_cond & (f["lp_len"] > 0)).any():
                return None
            mismatch = np.array([v is not None and "answer_token_mismatch" in (v or ()) for v in val["flags"]],
                                bool)[f["flags"]]
            truth = {k: np.array([bool(v) for v in val[k]], bool)[f[k]] for k in ("complete", "fallback")}
            if any(type(v) is not str for v in val["first"][1:]):
                return None
        except (TypeError, ValueError, OverflowError):  # unhashable, not iterable, an int beyond floats: the record
            # path raises or judges it
            return None
        self.trial_skip = skipped & scope
        self.pairs_in = keep = obj & ~(skipped & ~self.trial_skip)
        self.skip, self.vote = skip, f["vote"]
        for k, c in codes.items():
            setattr(self, k, np.where(keep, c[f[{"sample": "sample_id", "image": "image_id", "region": "region_source",
                                                 "sha": "image_sha256"}.get(k, k)]], 0).astype(np.int32))

        def listed(name: str, where: np.ndarray) -> list:
            out = np.array(val[name], object)[f[name]]
            out[~where] = None
            return out.tolist()

        self.sigma = listed("sigma_px", keep)
        self.max_prob = listed("max_prob", keep)
        self.verbal_conf_of_pair = listed("verbal_conf", keep)
        clean = clean_readout & ~self.trial_skip
        self.verbal_conf = listed("verbal_conf", clean & obj)
        self.mismatch = np.where(clean, mismatch, None).tolist()
        self.fallback = listed("condition", obj & truth["fallback"])
        withheld = np.array([c == WITHHELD for c in cond], bool)[f["condition"]]
        self.answered = ~skipped & (clean_readout | (obj & withheld & f["raw"]))
        self.extras = {k: (f[k], val[k]) for k in VSI_EXTRA_KEYS}
        self.dist_row = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int64)
        self.values = {k: v.values for k, v in self.vocab.items()}
        self.conditions = self.vocab["condition"].codes
        self.skips = self.skip_vocab.values
        self.cols = {}
        eq: dict = {}
        self.sample_eq = [eq.setdefault(s, len(eq)) for s in self.values["sample"]]
        rows = np.flatnonzero(keep)
        first = np.array([non_answer_token(t or "") for t in val["first"]], bool)[f["first"][rows]]
        ids_at, lp_at = (np.cumsum(f[k]) - f[k] for k in ("ids_len", "lp_len"))  # where each list starts
        self.dist = _Distributions.from_arrays(ids_at[rows], lp_at[rows], f["ids_len"][rows], f["lp_len"][rows],
                                               f["ids"], f["lp"], first, truth["complete"][rows])
        return self

    def finish(self) -> None:
        """Turn the columns read into arrays (call once, after the last :meth:`add`)."""
        c = self.cols
        for k in ("pairs_in", "trial_skip", "vote", "answered"):
            setattr(self, k, np.array(c.pop(k), bool))
        self.extras = {k: (np.arange(len(v), dtype=np.int32), v) for k, v in self.extra_values.items()}
        self.extra_values = {}
        for k in ("sample", "image", "benchmark", "condition", "region", "sha", "skip"):
            setattr(self, k, np.array(c.pop(k), np.int32))
        self.dist_row = np.array(c.pop("dist_row"), np.int64)
        for k, v in c.items():  # recorded values, kept as they are
            setattr(self, k, v)
        self.cols = {}
        self.values = {k: v.values for k, v in self.vocab.items()}
        self.conditions = self.vocab["condition"].codes
        self.skips = self.skip_vocab.values
        eq: dict = {}  # sample ids compared as the pairing compares them (==)
        self.sample_eq = [eq.setdefault(s, len(eq)) for s in self.values["sample"]]
        self.dist.finish()


class _Distributions:
    """The distributions of many VSI records (``run_meta.vsi`` dicts) as arrays, read one record at
    a time (:meth:`add`; the lists are turned into arrays a block at a time) and completed by
    :meth:`finish`: each record's keys (:func:`dist_keys`) as integer codes (the token ids
    themselves when every key is an integer, else one code per distinct key, equal exactly when
    the keys are equal) and its log-probabilities, one table per list length; ``flags`` bool (n,
    3): the reasons :func:`distribution_flags` gives each record (invalid distribution,
    non-answer position, uninformative), the same verdicts computed on the arrays.  A record
    whose lists are not a regular distribution (missing, of unequal lengths, empty, unhashable or
    non-numeric entries) is judged by :func:`distribution_flags` itself and is always invalid."""

    BLOCK = 1024

    def __init__(self):
        self.n = 0
        self._flags: dict[int, tuple] = {}  # irregular record -> its three flags
        self._non_answer: list[bool] = []
        self._first: dict[str, bool] = {}
        self._pending: dict[int, list[tuple[int, list, list]]] = {}
        self._parts: dict[int, list[tuple[np.ndarray, object, np.ndarray]]] = {}
        self.complete_list: list[bool] = []

    def add(self, meta: dict) -> int:
        """Read one record's ``run_meta.vsi``; returns its row."""
        i = self.n
        self.n += 1
        self.complete_list.append(bool(meta.get("complete")))
        try:
            keys, lps = dist_keys(meta), list(meta["logprobs"])
            ok = 0 < len(keys) == len(lps) and len(set(keys)) == len(keys)
        except (KeyError, TypeError):
            ok = False
        if not ok:
            self._irregular(i, meta)
            self._non_answer.append(False)
            return i
        first = str(list(meta.get("tokens") or [""])[0])
        if first not in self._first:
            self._first[first] = non_answer_token(first)
        self._non_answer.append(self._first[first])
        pend = self._pending.setdefault(len(keys), [])
        pend.append((i, keys, lps))
        if len(pend) >= self.BLOCK:
            self._flush(len(keys))
        return i

    def _irregular(self, i: int, meta: dict) -> None:
        found = distribution_flags(meta)
        self._flags[i] = tuple(reason in found for reason in FLAG_REASONS[1:4])

    def _flush(self, k: int) -> None:
        members = self._pending.pop(k, [])
        try:
            lp = np.array([v for _, _, v in members], dtype=np.float64)
            if lp.ndim != 2:
                raise ValueError("not a list of numbers")
        except (TypeError, ValueError, OverflowError):  # a None or a non-number: judged one by one
            keep = []
            for i, keys, lps in members:
                if distribution_problem(keys, lps) is not None:
                    self._irregular(i, {"token_ids": keys, "logprobs": lps})
                else:
                    keep.append((i, keys, lps))
            members = keep
            if not members:
                return
            lp = np.array([v for _, _, v in members], dtype=np.float64)
        keys = [kk for _, kk, _ in members]
        try:
            a = np.array(keys)
            if a.ndim == 2 and a.dtype.kind in "iub":
                keys = a.astype(np.int64)
        except (OverflowError, ValueError, TypeError):
            pass
        self._parts.setdefault(k, []).append((np.array([i for i, _, _ in members], np.int64), keys, lp))

    def finish(self) -> None:
        for k in list(self._pending):
            self._flush(k)
        n = self.n
        self.flags = np.zeros((n, 3), bool)
        for i, f in self._flags.items():
            self.flags[i] = f
        self.complete = np.array(self.complete_list, bool)
        self.where = np.full((n, 2), -1)  # (length, row) of each regular record
        self.lp: dict[int, np.ndarray] = {}
        rows_of: dict[int, np.ndarray] = {}
        key_parts: dict[int, list] = {}
        for k in list(self._parts):
            parts = self._parts.pop(k)
            rows = np.concatenate([r for r, _, _ in parts])
            lp, pos = np.empty((len(rows), k)), 0
            for j, (r, _, block) in enumerate(parts):  # copied into place block by block, each let go
                lp[pos:pos + len(r)] = block
                pos += len(r)
                parts[j] = (r, parts[j][1], None)
            self.lp[k] = lp
            self.where[rows, 0], self.where[rows, 1] = k, np.arange(len(rows))
            rows_of[k] = rows
            key_parts[k] = [kk for _, kk, _ in parts]
        self._encode(key_parts)
        self._judge(rows_of, np.array(self._non_answer, bool))

    @classmethod
    def from_arrays(cls, ids_at: np.ndarray, lp_at: np.ndarray, ids_len: np.ndarray, lp_len: np.ndarray,
                    ids: np.ndarray, lp: np.ndarray, non_answer: np.ndarray, complete: np.ndarray) -> "_Distributions":
        """The distributions of ``m`` records given as arrays (no record read): record ``i``'s token
        ids are ``ids[ids_at[i]:ids_at[i] + ids_len[i]]`` (int64) and its log-probabilities
        ``lp[lp_at[i]:lp_at[i] + lp_len[i]]`` (float64); ``non_answer`` bool (m,) the
        :func:`non_answer_token` verdict of each record's first token; ``complete`` bool (m,).  A
        record whose lists are empty, of unequal lengths or hold a duplicate key is not a
        distribution (flagged invalid and left out of the tables, as :meth:`add` does).  The same tables and flags as :meth:`add` of the same records and
        :meth:`finish`."""
        self = cls()
        self.n = m = len(lp_len)
        self.flags = np.zeros((m, 3), bool)
        self.complete = np.asarray(complete, bool)
        self.where = np.full((m, 2), -1)
        self.lp, self.keys = {}, {}
        regular = (ids_len == lp_len) & (lp_len > 0)
        self.flags[~regular, 0] = True  # distribution_flags: invalid, nothing tested further
        rows_of: dict[int, np.ndarray] = {}
        for k in np.unique(lp_len[regular]).tolist():
            rows = np.flatnonzero(regular & (lp_len == k))
            if len(rows) == m and len(lp) == len(ids) == m * k and np.array_equal(lp_at, np.arange(m) * k) \
                    and np.array_equal(ids_at, lp_at):
                self.lp[k], self.keys[k] = lp.reshape(m, k), ids.reshape(m, k)  # one length, in order: no copy
            else:
                at = np.arange(k)
                self.lp[k] = lp[(lp_at[rows][:, None] + at).ravel()].reshape(len(rows), k)
                self.keys[k] = ids[(ids_at[rows][:, None] + at).ravel()].reshape(len(rows), k)
            dup = (np.diff(np.sort(self.keys[k], 1), axis=1) == 0).any(1) if k > 1 else np.zeros(len(rows), bool)
            if dup.any():  # a duplicate key: not a distribution either (left out of the tables, as by add)
                self.flags[rows[dup], 0] = True
                rows, self.lp[k], self.keys[k] = rows[~dup], self.lp[k][~dup], self.keys[k][~dup]
            self.where[rows, 0], self.where[rows, 1] = k, np.arange(len(rows))
            rows_of[k] = rows
        self._judge(rows_of, np.asarray(non_answer, bool))
        return self

    def _judge(self, rows_of: dict[int, np.ndarray], non_answer: np.ndarray) -> None:
        """``flags`` of the regular records (rows ``rows_of[k]`` of the length-``k`` tables)."""
        for k, lp in self.lp.items():
            rows = rows_of[k]
            bad = invalid_rows(self.keys[k], lp)
            if k == 1:
                flat = np.array([math.exp(float(x)) >= 1.0 - MASS_TOL for x in lp[:, 0]], bool)
            else:
                flat = (lp == lp[:, :1]).all(1)
            self.flags[rows, 0] = bad
            self.flags[rows, 2] = flat & ~bad
            self.flags[rows, 1] = non_answer[rows] & ~bad

    def _encode(self, parts: dict[int, list]) -> None:
        if all(isinstance(p, np.ndarray) for ps in parts.values() for p in ps):
            self.keys = {}
            for k in list(parts):
                ps = parts.pop(k)
                out, pos = np.empty((sum(map(len, ps)), k), np.int64), 0
                for j in range(len(ps)):  # copied into place block by block, each let go
                    out[pos:pos + len(ps[j])] = ps[j]
                    pos += len(ps[j])
                    ps[j] = None
                self.keys[k] = out
            return
        code: dict = {}  # any other keys (token strings, mixed): one code per distinct key
        self.keys = {k: np.array([[code.setdefault(t, len(code)) for t in row]
                                  for p in ps for row in (p.tolist() if isinstance(p, np.ndarray) else p)],
                                 dtype=np.int64) for k, ps in parts.items()}

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


def read_vsi_columns(columns, task_id: str):
    """One VSI task of a file read by :func:`perceptbench.record_table.read_columns` (``columns``)
    ready for :meth:`perceptbench.vsi.protocol.VSITask.score_columns`: its
    :class:`~perceptbench.record_table.TaskColumns` with ``skipped`` and ``vsi`` (a
    :class:`VSIReader` built from the VSI fields :func:`~perceptbench.record_table.read_columns`
    read in its pass, :meth:`VSIReader.from_fields`; or, when those fields are not all of the
    types the record path reads, fed its records streamed off the file one at a time, each
    validated by the validating reader's line parser and let go).  None when the task needs the record path:
    several prompt versions of one model (split into respondents), any readout but the VSI ones
    (prompt answers voted on) or a record carrying a repetition vote.  Raises
    :class:`~perceptbench.records.RecordError` for a bad line (file, line, field) and ValueError as
    :meth:`VSIReader.add` does."""
    import dataclasses

    from ..record_table import one_version_per_model

    c = columns[task_id]
    if not one_version_per_model(c) or not set(c.readouts[k] for k in np.unique(c.readout).tolist()) <= set(
            VSI_READOUTS) or np.any(np.diff(c.row) <= 0):
        return None
    side = None
    fields, c.vsi_fields = c.vsi_fields, None  # let go once read (the lists of 10^5 records: ~100 MiB)
    if fields is not None:  # the VSI fields read with the columns: no line parsed again
        clean = c.readout == (c.readouts.index("vlm_vsi_clean") if "vlm_vsi_clean" in c.readouts else -1)
        side = VSIReader.from_fields(fields, clean)
        del fields
    if side is None:
        side = VSIReader()
        for r in columns.iter_records(task_id):
            side.add(r)
        side.finish()
    if side.vote.any():
        return None
    skipped = np.array([bool(v) for v in side.skips], bool)[side.skip]
    return dataclasses.replace(c, skipped=skipped, vsi=side)


def vsi_columns(c) -> VSIColumns:
    """The :class:`VSIColumns` of a :class:`~perceptbench.record_table.TaskColumns` read by
    :func:`read_vsi_columns` (responses and correctness as they are now, e.g. re-parsed), built once
    for the same responses (kept on ``c.vsi``), so the task's scoring and the suite analysis share
    its pairs."""
    side = c.vsi
    kept = getattr(side, "_columns", None)
    if kept is not None and kept[0] is c.response and kept[1] is c.correct:
        return kept[2]
    out = VSIColumns.from_task_columns(c, side)
    side._columns = (c.response, c.correct, out)
    return out
