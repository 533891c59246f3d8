"""Benchmark-native rows of the VSI tasks on external benchmarks: POPE, HallusionBench, MMVP and
MMStar scored as their authors score them, from the trial records alone (numpy only).

The benchmark tasks (:mod:`perceptbench.vsi.benchmarks`) add these rows to the VSI rows of
:func:`perceptbench.vsi.scoring.score_columns` (:meth:`~perceptbench.vsi.protocol.VSITask.native_rows`).
They read the task's records as :class:`~perceptbench.vsi.samples.VSIColumns`, built from a
record list or from the file's columns alike (no record object on the columnar path): the
greedy answers of :func:`answers`, one small :class:`Answer` each.  The ids each definition needs are
in every answer record's ``run_meta.external`` (the loader's ``meta``).  Formulas: :mod:`perceptbench.metrics.confusion`
(P/R/F1, yes-ratio) and :mod:`perceptbench.metrics.grouped` (all-correct groups, cluster ratios);
intervals: :func:`perceptbench.metrics.bootstrap.bootstrap_counts` (seeded percentile bootstrap,
B = 1000), resampling questions, or the clusters named below when groups of questions are scored
together.  Where perceptbench agrees with and where it differs from each benchmark's own code,
lmms-eval and VLMEvalKit: docs/metrics.md, "Benchmark-native rows".

Answers scored for a model ``M``: its clean greedy answers (readout ``vlm_vsi_clean``), plus, for
HallusionBench's questions asked without an image, the answers of ``M[image_withheld]`` to them
(``run_meta.no_image``).  A respondent ``M[image_withheld]`` gets the MMStar accuracy rows of its
own answers (S_wv of the MMStar paper).  Records of the image-withheld condition written before
it recorded greedy answers (``raw_output`` null) hold no answer and are left out.

* **POPE** (Li et al. 2023, AoiDragon/POPE ``evaluate.py``): ``pope.{accuracy, precision, recall,
  f1, yes_ratio}`` with "yes" = positive and yes-ratio = fraction of *predicted* yes, under two
  named conventions for unparseable answers: ``@nulls_excluded`` (left out) and
  ``@nulls_as_wrong`` (each counts as the wrong answer: a false negative on a "yes" question, a
  false positive on a "no" question).  One split x set per task (settings ``split``, ``dataset``).
* **HallusionBench** (Guan et al. 2024; tianyi-lab/HallusionBench ``utils.py``): correctness as
  ``assign_correctness`` sets it with the rule-based reading: an unparseable answer is
  "uncertain", which counts as right only on a VS question asked without an image, else wrong.
  ``hallusionbench.aAcc`` = right / questions; ``fAcc`` = figures (category, subcategory, set_id,
  figure_id) all of whose questions are right / figures, VS no-image questions left out
  (``get_eval_fig``); ``qAcc`` = question groups (category, subcategory, set_id, question_id)
  right across every figure, the no-image version included (``get_eval_pair_all``).  Overall,
  ``[VD]`` / ``[VS]`` and ``[VD/illusion]``-style per subcategory.  ``aAcc`` and ``qAcc`` need
  the no-image answers (``--condition image_withheld``); without them they are NaN with a note,
  and ``aAcc@image_questions`` / ``qAcc@image_questions`` give the values over the questions with
  an image (the population lmms-eval and VLMEvalKit score).  Bootstrap over question sets
  (category, subcategory, set_id), which hold whole figures and whole question groups.
* **MMVP** (Tong et al. 2024 §3, tsb0601/MMVP ``scripts/gpt_grader.py``): ``mmvp.pair_accuracy``
  = pairs (images 2k-1, 2k) with both questions right / complete pairs; ``question_accuracy`` =
  right / questions; per visual pattern (``[pattern]``) when the source labels patterns.  An
  unparseable answer is wrong.  Bootstrap over pairs.
* **MMStar** (Chen et al. 2024, MMStar-Benchmark/MMStar ``eval/vlmeval/evaluate/mmstar.py``):
  ``mmstar.accuracy`` = right / questions overall, ``[category]`` (6 core capabilities) and
  ``[category/l2_category]`` (18 axes), an unparseable answer wrong; multi-modal gain
  ``mmstar.multimodal_gain`` = S_v - S_wv and leakage ``mmstar.multimodal_leakage`` = max(0,
  S_wv - S_t) (Chen et al. 2024 §4, Eq. 1 and 2): S_v the accuracy with the image, S_wv of the
  same model without it (``M[image_withheld]``), S_t of the base LLM named by the task setting
  ``base_llm`` (its ``[image_withheld]`` answers), each on the questions all of them answered;
  seed 002's columns ``mmstar.auroc_vsi[category,whole,sigma=S]`` (AUROC of -VSI for the errors
  of one category, the parseable answers, as :func:`perceptbench.vsi.analysis.cell_diagnostics`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from ..core.conditions import DEFAULT_CONDITION, parse_respondent_label, respondent_label
from ..core.rows import ScoreRow
from ..metrics.bootstrap import BootstrapResult, bootstrap_counts
from ..metrics.confusion import RATES, binary_rates, confusion_counts
from ..metrics.grouped import all_correct_by_group, ratio_of_sums
from ..records import TrialRecord, make_trial_id
from .samples import WITHHELD, VSIColumns, VSISample

MMSTAR_CATEGORIES = {
    "coarse perception": ("image scene and topic", "image style & quality", "image emotion"),
    "fine-grained perception": ("object counting", "recognition", "localization"),
    "instance reasoning": ("single-instance reasoning", "cross-instance attribute reasoning",
                           "cross-instance relation reasoning"),
    "logical reasoning": ("code & sequence reasoning", "diagram reasoning", "common reasoning"),
    "science & technology": ("biology & chemistry & physics", "electronics & energy & mechanical eng.",
                             "geography & earth science & agriculture"),
    "math": ("geometry", "numeric commonsense and calculation", "statistical reasoning"),
}
"""MMStar's 6 core capabilities and their 18 axes (Chen et al. 2024 §3.2, Fig. 5; the table of
``eval/vlmeval/evaluate/mmstar.py``): the report's row order; a category found in the records but
not here is scored all the same."""


def ext(r: TrialRecord) -> dict:
    """The benchmark ids of a record (``run_meta.external``, the loader's meta); {} when absent."""
    return (r.run_meta.model_extra or {}).get("external") or {}


def _external_problem(v: Any) -> str | None:
    """The one rule for an answer's ``run_meta.external`` value ``v`` (None: the key is absent):
    an object, or the problem in one line."""
    if type(v) is dict:
        return None
    what = "missing or null" if v is None else f"a {type(v).__name__}, not an object"
    return (f"run_meta.external is {what}; the benchmark's own rows group its questions by the ids the run "
            "writes there (category, question set, pair)")


def external_problem(r: TrialRecord) -> str | None:
    """Why record ``r`` of a task on an external benchmark cannot be scored by the benchmark's own
    rows, or None: a greedy answer (:func:`perceptbench.vsi.samples.holds_answer`, the records
    :func:`answers` reads) whose ``run_meta.external`` is missing or not an object.  The rule
    :func:`answers` raises by, for ``validate`` (:meth:`perceptbench.tasks.base.Task.record_problem`)."""
    from .samples import holds_answer

    return _external_problem((r.run_meta.model_extra or {}).get("external")) if holds_answer(r) else None


@dataclass(frozen=True, slots=True)
class Answer:
    """One greedy answer the benchmark-native rows score (:func:`answers`): its record's
    ``trial_id``, ``model`` (the respondent label, ``M`` or ``M[image_withheld]``), ``stimulus_id``,
    ``response`` (as re-parsed; None: unparseable), ``ground_truth``, ``correct`` (None when the
    response is), ``external`` (``run_meta.external``, {} when absent) and ``no_image``
    (``run_meta.no_image``: a question the benchmark asks without an image)."""

    trial_id: str
    model: str
    stimulus_id: str
    response: Any
    ground_truth: Any
    correct: bool | None
    external: dict
    no_image: bool


def answers(cols: VSIColumns) -> list[Answer]:
    """The greedy answers among one task's records (``cols``; the records that hold one:
    :class:`~perceptbench.vsi.samples.VSIReader`'s ``answered``), in record order.

    Raises ValueError naming the trial when an answer's ``run_meta.external`` is missing or not an
    object: the benchmark's ids of the question (category, question set, pair ...) that every
    definition here groups by, written on every record of these tasks; without them the question
    would be scored in a made-up group ("None")."""
    sd = cols.side
    (ec, ev), (nc, nv) = sd.extras["external"], sd.extras["no_image"]
    rows = np.flatnonzero(sd.answered)
    if not rows.size:
        return []
    bad = np.array([_external_problem(v) is not None for v in ev], bool)[ec[rows]]
    if bad.any():
        i = int(rows[np.argmax(bad)])
        trial = make_trial_id(cols.task_id, cols.stimuli[cols.stimulus[i]], cols.models[cols.model[i]], int(cols.rep[i]))
        raise ValueError(f"record {trial}: {_external_problem(ev[ec[i]])}")
    blind_of = [bool(v) for v in nv]
    tid = cols.task_id
    return [Answer(make_trial_id(tid, cols.stimuli[s], cols.models[m], rep), cols.models[m], cols.stimuli[s],
                   cols.values[resp], cols.values[truth], None if c < 0 else bool(c), ev[e], blind_of[b])
            for m, s, resp, truth, c, rep, e, b in zip(
                *(a[rows].tolist() for a in (cols.model, cols.stimulus, cols.response, cols.ground_truth,
                                             cols.correct, cols.rep, ec, nc)))]


def answers_of_records(records: Sequence[TrialRecord]) -> list[Answer]:
    """:func:`answers` of trial records (one task)."""
    return answers(VSIColumns.from_records(list(records)))


def answers_by_respondent(answered: Sequence[Answer]) -> dict[str, list[Answer]]:
    """Answers per respondent label (``M`` and ``M[image_withheld]``), sorted by stimulus id."""
    out: dict[str, list[Answer]] = defaultdict(list)
    for a in answered:
        out[a.model].append(a)
    return {m: sorted(rs, key=lambda a: a.stimulus_id) for m, rs in sorted(out.items())}


def _rows(tid: str, m: str, names: Sequence[str], stat: Callable[[np.ndarray], np.ndarray], n: int, n_null: int,
          seed: int, note: str, empty: str) -> list[ScoreRow]:
    """One bootstrap row per column of ``stat`` (weights (d, n) -> (d, len(names))), or NaN rows
    saying ``empty`` when n == 0."""
    if n == 0:
        return [ScoreRow(tid, m, name, math.nan, None, None, 0, n_null, empty) for name in names]
    res: list[BootstrapResult] = bootstrap_counts(stat, n, seed=seed)
    return [ScoreRow.from_boot(tid, m, name, b, n, n_null, note) for name, b in zip(names, res)]


# ------------------------------------------------------------------ POPE
def pope_rows(tid: str, answered: Sequence[Answer], seed: int) -> list[ScoreRow]:
    """``pope.*`` rows of every image respondent of one POPE task (module docstring) from its
    answers (:func:`answers`)."""
    rows: list[ScoreRow] = []
    for m, rs in answers_by_respondent(answered).items():
        if parse_respondent_label(m)[1] != DEFAULT_CONDITION:
            continue
        truth = np.array([r.ground_truth == "yes" for r in rs])
        null = np.array([r.response is None for r in rs])
        pred = np.array([r.response == "yes" for r in rs])
        n_null = int(null.sum())
        ok = ~null
        for conv, p, t, keep, note in (
                ("nulls_excluded", pred[ok], truth[ok], int(ok.sum()),
                 "yes = positive; yes_ratio = fraction of predicted yes (POPE evaluate.py); unparseable answers "
                 "left out"),
                ("nulls_as_wrong", np.where(null, ~truth, pred), truth, len(rs),
                 "yes = positive; yes_ratio = fraction of predicted yes (POPE evaluate.py); each unparseable "
                 "answer counted as the wrong answer (FN on a yes question, FP on a no question)")):
            rows += _rows(tid, m, [f"pope.{k}@{conv}" for k in RATES],
                          lambda w, p=p, t=t: binary_rates(confusion_counts(w, p, t)), keep, n_null, seed, note,
                          "no parseable answers")
    return rows


# ------------------------------------------------------------------ HallusionBench
def hallusionbench_correct(r: Answer) -> bool:
    """HallusionBench's correctness of one answer (``utils.py`` ``assign_correctness``, rule-based
    reading): right when parsed and equal to the truth; an unparseable answer ("uncertain")
    counts as right only on a VS question without a figure (figure_id 0), else wrong."""
    if r.correct is not None:
        return bool(r.correct)
    return _vs_without_figure(r)


def _vs_without_figure(r: Answer) -> bool:
    e = r.external
    return e.get("category") == "VS" and str(e.get("figure_id")) == "0"


JUDGE_VERDICTS = ("correct", "incorrect", "unclear")
"""The verdicts of a judge model (HallusionBench ``utils.py`` ``evaluate_by_chatgpt``: "1", "0",
"2"); a judge that gave no reply (a timeout) has the verdict None."""


def hallusionbench_judged_correct(r: Answer, verdict: str | None) -> bool:
    """HallusionBench's correctness of one answer under a judge's ``verdict`` (``utils.py``
    ``assign_correctness`` on the judge's "0"/"1"/"2"): "correct" is right; "unclear" and no
    verdict (None: the judge gave no reply) are "uncertain", right only on a VS question without
    a figure (figure_id 0); "incorrect" is wrong.  Raises ValueError for another verdict."""
    if verdict not in JUDGE_VERDICTS + (None,):
        raise ValueError(f"judge verdict must be one of {JUDGE_VERDICTS} or null, got {verdict!r}")
    if verdict == "correct":
        return True
    return verdict != "incorrect" and _vs_without_figure(r)


def hallusionbench_cluster_counts(items: Sequence[dict]) -> tuple[list, np.ndarray]:
    """Per question set (category, subcategory, set_id): counts (k, 6) = questions, right,
    figures, figures all right, question groups, groups all right (the numerators and
    denominators of aAcc, fAcc, qAcc).  ``items``: dicts with ``category, subcategory, set_id,
    figure_id, question_id, correct`` (bool)."""
    sets: dict[tuple, list[dict]] = defaultdict(list)
    for it in items:
        sets[(it["category"], it["subcategory"], it["set_id"])].append(it)
    keys, out = sorted(sets), []
    for k in keys:
        its = sets[k]
        c = np.array([it["correct"] for it in its], bool)
        figs = [i for i, it in enumerate(its) if not (it["category"] == "VS" and it["figure_id"] == "0")]
        _, fig_ok = all_correct_by_group(c[figs], [its[i]["figure_id"] for i in figs])
        _, q_ok = all_correct_by_group(c, [it["question_id"] for it in its])
        out.append([len(its), c.sum(), fig_ok.size, fig_ok.sum(), q_ok.size, q_ok.sum()])
    return keys, np.array(out, float).reshape(-1, 6)


def _hb_stat(counts: np.ndarray, cols: Sequence[int]) -> Callable[[np.ndarray], np.ndarray]:
    pairs = {0: (1, 0), 1: (3, 2), 2: (5, 4)}  # aAcc, fAcc, qAcc: (numerator, denominator) columns
    return lambda w: np.stack([ratio_of_sums(w, counts[:, pairs[c][0]], counts[:, pairs[c][1]]) for c in cols], 1)


def _hb_items(rs: Sequence[Answer], correct: Callable[[Answer], bool]) -> list[dict]:
    return [{**{k: str(r.external.get(k)) for k in ("category", "subcategory", "set_id", "figure_id", "question_id")},
             "correct": correct(r)} for r in rs]


def _hb_groups(items: list[dict]) -> list[tuple[str, list[dict]]]:
    """Overall, per category ``[VD]``, per subcategory ``[VD/illusion]``."""
    out: list[tuple[str, list[dict]]] = [("", items)]
    for cat in sorted({it["category"] for it in items}):
        out.append((f"[{cat}]", [it for it in items if it["category"] == cat]))
    for cat, sub in sorted({(it["category"], it["subcategory"]) for it in items}):
        out.append((f"[{cat}/{sub}]", [it for it in items if (it["category"], it["subcategory"]) == (cat, sub)]))
    return out


def hallusionbench_answers(answered: Sequence[Answer], no_image: bool) -> dict[str, tuple[list, list]]:
    """The answers HallusionBench's rows score, per image respondent ``M``: (its clean answers to
    the questions with an image, the answers of ``M[image_withheld]`` to the questions asked
    without one (empty when ``no_image`` is False or they were not asked)).  Every answer a
    judge reads (:mod:`perceptbench.vsi.judge`) is in one of the two lists.  ``answered``: the
    task's answers (:func:`answers`)."""
    by = answers_by_respondent(answered)
    out = {}
    for m, rs in by.items():
        if parse_respondent_label(m)[1] != DEFAULT_CONDITION:
            continue
        blind = [r for r in by.get(respondent_label(m, WITHHELD), []) if r.no_image] if no_image else []
        out[m] = (rs, blind)
    return out


def hallusionbench_rows(tid: str, answered: Sequence[Answer], seed: int, no_image: bool, *,
                        correct: Callable[[Answer], bool] = hallusionbench_correct, suffix: str = "",
                        reading: str = "rule-based reading; unparseable = uncertain (right only on a VS no-image "
                                       "question)",
                        uncertain: Callable[[Answer], bool] = lambda r: r.response is None) -> list[ScoreRow]:
    """``hallusionbench.*`` rows of every image respondent (module docstring) from the task's
    answers (:func:`answers`); ``no_image``: the
    task includes the questions asked without an image (setting ``no_image``).  ``correct``,
    ``suffix``, ``reading`` and ``uncertain`` (the answers counted in ``n_null``) choose the
    reading: the defaults are the rule-based reading; :func:`hallusionbench_judge_rows` passes
    a judge's (metric names ending in ``@judge``)."""
    note = reading + "; bootstrap over question sets (category, subcategory, set_id)"
    rows: list[ScoreRow] = []
    for m, (rs, blind) in hallusionbench_answers(answered, no_image).items():
        n_null = sum(map(uncertain, rs))
        image_rows: list[ScoreRow] = []
        for where, its in _hb_groups(_hb_items(rs, correct)):  # the questions with an image: lmms-eval/VLMEvalKit
            _, counts = hallusionbench_cluster_counts(its)
            image_rows += _rows(tid, m, [f"hallusionbench.aAcc{where}@image_questions{suffix}",
                                         f"hallusionbench.fAcc{where}{suffix}",
                                         f"hallusionbench.qAcc{where}@image_questions{suffix}"],
                                _hb_stat(counts, (0, 1, 2)), len(counts), n_null, seed,
                                note + "; the questions with an image only", "no answers")
        if not no_image:
            rows += image_rows
            continue
        wl = respondent_label(m, WITHHELD)
        if not blind:
            rows += [ScoreRow(tid, m, f"hallusionbench.{x}{suffix}", math.nan, None, None, 0, None,
                              f"the questions HallusionBench asks without an image were not answered: run {m} with "
                              f"--condition image --condition image_withheld ({x}@image_questions leaves them out)")
                     for x in ("aAcc", "qAcc")] + image_rows
            continue
        pop = list(rs) + blind
        n_null = sum(map(uncertain, pop))
        for where, its in _hb_groups(_hb_items(pop, correct)):
            _, counts = hallusionbench_cluster_counts(its)
            rows += _rows(tid, m, [f"hallusionbench.aAcc{where}{suffix}", f"hallusionbench.qAcc{where}{suffix}"],
                          _hb_stat(counts, (0, 2)), len(counts), n_null, seed,
                          note + f"; the no-image questions answered by {wl}", "no answers")
        rows += image_rows  # after the population the benchmark defines
    return rows


def hallusionbench_judge_rows(tid: str, answered: Sequence[Answer], seed: int, no_image: bool,
                              judgments: dict[str, dict]) -> list[ScoreRow]:
    """The ``hallusionbench.*@judge`` rows: the rows of :func:`hallusionbench_rows` with each
    answer's correctness read from a judge model's verdict instead of the rule-based parser
    (:func:`hallusionbench_judged_correct`), beside the rule-based rows, never mixed with them.

    ``judgments``: ``{trial_id: judgment}`` (:func:`perceptbench.vsi.judge.read_judgments`: the
    latest line per trial; keys used: ``verdict``, ``judge``, ``judge_version``).  No judgment of
    any answer of the task -> no rows.  A respondent with answers the judge has not read -> one
    NaN row per ``aAcc``/``fAcc``/``qAcc@judge`` saying how many and how to complete them (a
    rerun with the same ``--judge``).  ``n_null`` counts the answers the judge called unclear
    or gave no reply on."""
    population = hallusionbench_answers(answered, no_image)
    mine = [judgments[r.trial_id] for rs, blind in population.values() for r in [*rs, *blind]
            if r.trial_id in judgments]
    if not mine:
        return []
    judges = sorted({f"{j.get('judge')} ({j.get('judge_version')})" for j in mine})
    who = ", ".join(judges)
    verdict = {tid_: j.get("verdict") for tid_, j in judgments.items()}
    rows: list[ScoreRow] = []
    complete = []
    for m, (rs, blind) in population.items():
        pop = [*rs, *blind]
        missing = sum(r.trial_id not in judgments for r in pop)
        if missing:
            rows += [ScoreRow(tid, m, f"hallusionbench.{x}@judge", math.nan, None, None, 0, None,
                              f"{missing} of {len(pop)} answers of {m} have no verdict of the judge {who}: rerun the "
                              "run with the same --judge to judge them (judged answers are not asked again)")
                     for x in ("aAcc", "fAcc", "qAcc")]
        else:
            complete.append(m)
    keep = {r.trial_id for m in complete for rs_ in population[m] for r in rs_}
    if complete:  # the answers of the fully judged respondents only: no answer is read by the rule here
        no_reply = sum(verdict[t] is None for t in keep)
        reading = (f"judge reading: {who}, HallusionBench's GPT-4 check (utils.py evaluate_by_chatgpt); unclear or "
                   f"no reply = uncertain (right only on a VS no-image question; {no_reply} without a reply)")
        rows += hallusionbench_rows(tid, [r for r in answered if r.trial_id in keep], seed, no_image,
                                    correct=lambda r: hallusionbench_judged_correct(r, verdict[r.trial_id]),
                                    suffix="@judge", reading=reading,
                                    uncertain=lambda r: verdict[r.trial_id] in (None, "unclear"))
    return rows


# ------------------------------------------------------------------ MMVP
def mmvp_pair_counts(items: Sequence[dict]) -> tuple[list, np.ndarray]:
    """Per pair: counts (k, 4) = questions, right, complete (both questions present), both right.
    ``items``: dicts with ``pair`` and ``correct`` (bool)."""
    pairs: dict = defaultdict(list)
    for it in items:
        pairs[it["pair"]].append(bool(it["correct"]))
    keys = sorted(pairs)
    out = [[len(pairs[k]), sum(pairs[k]), len(pairs[k]) == 2, len(pairs[k]) == 2 and all(pairs[k])] for k in keys]
    return keys, np.array(out, float).reshape(-1, 4)


def mmvp_rows(tid: str, answered: Sequence[Answer], seed: int) -> list[ScoreRow]:
    """``mmvp.*`` rows of every image respondent (module docstring) from the task's answers
    (:func:`answers`)."""
    rows: list[ScoreRow] = []
    for m, rs in answers_by_respondent(answered).items():
        if parse_respondent_label(m)[1] != DEFAULT_CONDITION:
            continue
        items = [{"pair": int(r.external.get("pair", 0)), "correct": bool(r.correct),
                  "pattern": r.external.get("pattern")} for r in rs]
        n_null = sum(r.response is None for r in rs)
        fixed = sum(bool(r.external.get("label_corrected")) for r in rs)
        note = (f"unparseable = wrong; bootstrap over pairs; {fixed} answer(s) scored against a corrected label "
                "(setting corrections)")
        groups = [("", items)]
        patterns = sorted({it["pattern"] for it in items if it["pattern"]})
        groups += [(f"[{p}]", [it for it in items if it["pattern"] == p]) for p in patterns]
        for where, its in groups:
            _, c = mmvp_pair_counts(its)
            rows += _rows(tid, m, [f"mmvp.pair_accuracy{where}", f"mmvp.question_accuracy{where}"],
                          lambda w, c=c: np.stack([ratio_of_sums(w, c[:, 3], c[:, 2]), ratio_of_sums(w, c[:, 1], c[:, 0])],
                                                  1), len(c), n_null, seed, note, "no answers")
        if not patterns:
            rows.append(ScoreRow(tid, m, "mmvp.pair_accuracy[pattern]", math.nan, None, None, 0, None,
                                 "the source labels no visual pattern: the released Questions.csv and the hub copies "
                                 "have no Type column and no public per-question map exists (docs/metrics.md, MMVP "
                                 "visual patterns); give patterns=FILE (a CSV map Index,Type) or source= a copy with "
                                 "a Type column to score the nine patterns"))
    return rows


# ------------------------------------------------------------------ MMStar
def _mmstar_accuracy(tid: str, m: str, rs: Sequence[Answer], seed: int) -> list[ScoreRow]:
    c = np.array([bool(r.correct) for r in rs], float)
    cats = [str(r.external.get("category")) for r in rs]
    l2 = [str(r.external.get("l2_category")) for r in rs]
    n_null = sum(r.response is None for r in rs)
    order = list(MMSTAR_CATEGORIES) + sorted(set(cats) - set(MMSTAR_CATEGORIES))
    groups = [("", np.ones(len(rs), bool))]
    for cat in order:
        if cat in cats:
            groups.append((f"[{cat}]", np.array([x == cat for x in cats])))
            subs = list(MMSTAR_CATEGORIES.get(cat, ())) + sorted({s for x, s in zip(cats, l2) if x == cat}
                                                                  - set(MMSTAR_CATEGORIES.get(cat, ())))
            for s in subs:
                sel = np.array([x == cat and y == s for x, y in zip(cats, l2)])
                if sel.any():
                    groups.append((f"[{cat}/{s}]", sel))
    rows = []
    for where, sel in groups:
        cs = c[sel]
        rows += _rows(tid, m, [f"mmstar.accuracy{where}"], lambda w, cs=cs: (w @ cs / w.sum(1))[:, None],
                      int(sel.sum()), n_null, seed, "unparseable = wrong (MMStar's eval: right / questions)",
                      "no answers")
    return rows


def mmstar_rows(tid: str, answered: Sequence[Answer], samples: Sequence[VSISample], seed: int, base_llm: str,
                sigma: float) -> list[ScoreRow]:
    """``mmstar.*`` rows (module docstring): accuracies of every respondent; for each image
    respondent the multi-modal gain and leakage and the per-category AUROC of -VSI.  ``answered``:
    the task's answers (:func:`answers`); ``samples``: its VSI samples (the unflagged pairs,
    :meth:`~perceptbench.vsi.samples.VSIColumns.pairs`)."""
    by = answers_by_respondent(answered)
    rows: list[ScoreRow] = []
    base = by.get(respondent_label(base_llm, WITHHELD), []) if base_llm else []
    for m, rs in by.items():
        rows += _mmstar_accuracy(tid, m, rs, seed)
        if parse_respondent_label(m)[1] != DEFAULT_CONDITION or m == base_llm:
            continue
        wv = {r.stimulus_id.split("~")[0]: r for r in by.get(respondent_label(m, WITHHELD), [])}
        v = {r.stimulus_id.split("~")[0]: r for r in rs}
        both = sorted(set(v) & set(wv))
        cv = np.array([bool(v[s].correct) for s in both], float)
        cwv = np.array([bool(wv[s].correct) for s in both], float)
        rows += _rows(tid, m, ["mmstar.multimodal_gain"], lambda w: ((w @ (cv - cwv)) / w.sum(1))[:, None],
                      len(both), None, seed, f"S_v - S_wv (MMStar Eq. 1): {m} with vs without the image "
                      f"({respondent_label(m, WITHHELD)}), same questions",
                      f"needs {m}'s answers without the image: run with --condition image --condition image_withheld")
        t = {r.stimulus_id.split("~")[0]: r for r in base}
        if not base_llm:
            why = ("multi-modal leakage needs the base LLM's answers (MMStar Eq. 2, S_t): run the LVLM's language "
                   "model as another --model of this run with --condition image_withheld and name it in the task "
                   "setting base_llm=NAME")
            rows.append(ScoreRow(tid, m, "mmstar.multimodal_leakage", math.nan, None, None, 0, None, why))
        else:
            three = sorted(set(both) & set(t))
            a = np.array([bool(wv[s].correct) for s in three], float)
            b = np.array([bool(t[s].correct) for s in three], float)
            rows += _rows(tid, m, ["mmstar.multimodal_leakage"],
                          lambda w: np.maximum(0.0, (w @ (a - b)) / w.sum(1))[:, None], len(three), None, seed,
                          f"max(0, S_wv - S_t) (MMStar Eq. 2): {respondent_label(m, WITHHELD)} vs base LLM "
                          f"{respondent_label(base_llm, WITHHELD)}, same questions",
                          f"no answers of the base LLM {respondent_label(base_llm, WITHHELD)} (base_llm={base_llm}) "
                          f"on the questions {m} answered with and without the image: run it in this run with "
                          "--condition image_withheld")
        rows += mmstar_auroc_rows(tid, m, samples, rs, seed, sigma)
    return rows


def mmstar_auroc_rows(tid: str, m: str, samples: Sequence[VSISample], clean: Sequence[Answer], seed: int,
                      sigma: float) -> list[ScoreRow]:
    """Seed 002's MMStar columns: AUROC of -VSI (whole-image blur) for the errors of each MMStar
    category, over its parseable answers (error = positive class; under 5 of a class: NaN).
    ``samples``: the task's VSI samples; ``clean``: ``m``'s clean answers."""
    from ..metrics.bootstrap import bootstrap
    from ..metrics.error_detection import auroc_draws, class_check

    cat = {r.stimulus_id.split("~")[0]: str(r.external.get("category")) for r in clean}
    cell = [s for s in samples if s.model == m and s.perturbation == "whole" and s.sigma == sigma]
    rows = []
    order = list(MMSTAR_CATEGORIES) + sorted(set(cat.values()) - set(MMSTAR_CATEGORIES))
    for c in order:
        sub = [s for s in cell if cat.get(s.sample_id) == c]
        if not sub:
            continue
        parse = [s for s in sub if s.correct is not None]
        err = np.array([not s.correct for s in parse], bool)
        sc = -np.array([s.vsi for s in parse], float)
        name = f"mmstar.auroc_vsi[{c},whole,sigma={sigma:g}]"
        why = class_check(err)
        if why:
            rows.append(ScoreRow(tid, m, name, math.nan, None, None, len(parse), len(sub) - len(parse), why))
            continue
        b = bootstrap(lambda idx: auroc_draws(err, sc, idx), len(parse), seed=seed)
        rows.append(ScoreRow.from_boot(tid, m, name, b, len(parse), len(sub) - len(parse),
                                       "error = positive class; score -VSI (seed 002 Table: MMStar columns)"))
    return rows
