"""Known answers of the benchmark-native rows (issue 21) on the fixtures in each release's own
format: the ids come from the fixture through the benchmark's loader or its question-file reader,
the answers are planted, and every value is derived by hand in the comment above its assertion."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from helpers.paths import FIXTURES
from helpers.records import plant_record
from perceptbench.tasks import get_task
from perceptbench.vsi.native import answers_of_records, hallusionbench_rows, mmstar_rows, mmvp_rows, pope_rows
from perceptbench.vsi.samples import vsi_samples


def _answer(task, sid: str, ext: dict, truth: str, response, *, model: str = "m", withheld: bool = False,
            no_image: bool = False):
    """A clean VSI answer record of ``model`` (or, ``withheld``, of ``model[image_withheld]``)."""
    cond = "image_withheld" if withheld else "clean"
    vsi = {"sample_id": sid, "image_id": sid, "benchmark": task.benchmark, "condition": cond, "sigma_px": 0.0,
           "dilate_px": 4, "region_source": "exact", "region_bbox": None, "fallback": False, "answer_prefix": "",
           "top_k": 50, "token_ids": [1], "tokens": ["1"], "logprobs": [0.0], "complete": False,
           "distribution_source": "hf_logits", "image_sha256": None, "max_prob": 1.0, "verbal_conf": None,
           "verbal_raw": None}
    return plant_record(task, stimulus_id=f"{sid}~{cond}", model=f"{model}[image_withheld]" if withheld else model,
                        readout="vlm_vsi_perturbed" if withheld else "vlm_vsi_clean", response=response,
                        ground_truth=truth, raw_output="..." if response is None else str(response),
                        prompt_id=task.prompt_id, external=ext, vsi=vsi, **({"no_image": True} if no_image else {}))


def _values(rows, model: str = "m") -> dict:
    return {r.metric: r for r in rows if r.model == model}


# ------------------------------------------------------------------ POPE
def test_pope_precision_recall_f1_and_predicted_yes_ratio_under_both_null_conventions():
    from perceptbench.external.pope import read_questions

    task = get_task("vsi.pope")
    qs = read_questions(FIXTURES / "pope" / "coco_pope_adversarial.json")
    # labels y n y n y n n (question ids 1..6, 10); answers:
    answers = {1: "yes", 2: "yes", 3: "no", 4: "yes", 5: None, 6: "no", 10: None}
    recs = [_answer(task, f"pope-{q['question_id']}", {"split": "adversarial"}, q["label"], answers[q["question_id"]])
            for q in qs]
    v = _values(pope_rows(task.task_id, answers_of_records(recs), seed=0))
    # nulls excluded (5 answers): q1 TP, q2 FP, q3 FN, q4 FP, q6 TN -> TP 1, FP 2, TN 1, FN 1
    # accuracy 2/5; precision 1/3; recall 1/2; F1 = 2TP/(2TP+FP+FN) = 2/5; yes-ratio = predicted yes 3/5
    ex = {k: v[f"pope.{k}@nulls_excluded"].value for k in ("accuracy", "precision", "recall", "f1", "yes_ratio")}
    assert ex == pytest.approx({"accuracy": 2 / 5, "precision": 1 / 3, "recall": 1 / 2, "f1": 2 / 5, "yes_ratio": 3 / 5})
    assert v["pope.f1@nulls_excluded"].n == 5 and v["pope.f1@nulls_excluded"].n_null == 2
    # nulls as wrong (7): q5 (label yes) -> FN, q10 (label no) -> FP: TP 1, FP 3, TN 1, FN 2
    # accuracy 2/7; precision 1/4; recall 1/3; F1 = 2/(2+3+2) = 2/7; yes-ratio 4/7
    # (the ground-truth yes fraction, lmms-eval's "yes ratio", would read 3/7)
    aw = {k: v[f"pope.{k}@nulls_as_wrong"].value for k in ("accuracy", "precision", "recall", "f1", "yes_ratio")}
    assert aw == pytest.approx({"accuracy": 2 / 7, "precision": 1 / 4, "recall": 1 / 3, "f1": 2 / 7, "yes_ratio": 4 / 7})
    assert v["pope.f1@nulls_as_wrong"].n == 7
    r = v["pope.f1@nulls_as_wrong"]
    assert r.ci_low <= r.value <= r.ci_high and r.n_draws == 1000


# ------------------------------------------------------------------ HallusionBench
HB_ANSWERS = {  # (category, set, figure, question) -> answer; truth from the fixture file
    ("VS", "0", "0", "0"): "no",   # no image, truth no: right
    ("VS", "0", "0", "1"): None,   # no image, unparseable = uncertain: counts right (VS, figure 0)
    ("VS", "0", "0", "2"): "yes",  # no image, truth no: wrong
    ("VS", "0", "0", "3"): "no",   # no image, truth no: right
    ("VS", "0", "1", "0"): "no",   # image, truth no: right
    ("VD", "0", "0", "0"): "yes",  # truth yes: right
    ("VD", "0", "0", "1"): "no",   # truth no: right
    ("VD", "0", "0", "2"): None,   # unparseable on VD: wrong
    ("VD", "0", "1", "0"): "no",   # truth no: right
}


def _hb_records(with_blind: bool = True):
    task = get_task("vsi.hallusionbench")
    recs = []
    for r in json.loads((FIXTURES / "hallusionbench" / "HallusionBench.json").read_text()):
        key = (r["category"], r["set_id"], r["figure_id"], r["question_id"])
        ext = {k: r[k] for k in ("category", "subcategory", "set_id", "figure_id", "question_id", "visual_input")}
        truth = "yes" if r["gt_answer"] == "1" else "no"
        sid = "hb-" + "-".join(key)
        if r["visual_input"] == "0":
            if with_blind:
                recs.append(_answer(task, sid, ext, truth, HB_ANSWERS[key], withheld=True, no_image=True))
        else:
            recs.append(_answer(task, sid, ext, truth, HB_ANSWERS[key]))
            # the same image question without its image: never part of m's population
            recs.append(_answer(task, sid, ext, truth, "yes" if truth == "no" else "no", withheld=True))
    return task, recs


def test_hallusionbench_aacc_facc_qacc_with_the_no_image_questions():
    task, recs = _hb_records()
    v = _values(hallusionbench_rows(task.task_id, answers_of_records(recs), seed=0, no_image=True))
    # aAcc, 9 questions: VS 4 right of 5 (no-image q0, q1 (uncertain), q3; figure 1 q0), VD 3 of 4 -> 7/9
    assert v["hallusionbench.aAcc"].value == pytest.approx(7 / 9)
    # fAcc: figures VS/1 {q0 right} ok, VD/0 {right, right, wrong} not, VD/1 {right} ok; VS figure 0
    # (no image) is no figure -> 2/3
    assert v["hallusionbench.fAcc"].value == pytest.approx(2 / 3)
    # qAcc: groups VS q0 {fig0 right, fig1 right} ok, VS q1 ok, VS q2 not, VS q3 ok, VD q0 {fig0, fig1 right} ok,
    # VD q1 ok, VD q2 not -> 5/7
    assert v["hallusionbench.qAcc"].value == pytest.approx(5 / 7)
    # per category: VS aAcc 4/5, qAcc 3/4 (q0, q1, q3); VD aAcc 3/4, qAcc 2/3, fAcc 1/2; VS fAcc 1/1
    assert v["hallusionbench.aAcc[VS]"].value == pytest.approx(4 / 5)
    assert v["hallusionbench.qAcc[VS/chart]"].value == pytest.approx(3 / 4)
    assert v["hallusionbench.aAcc[VD/illusion]"].value == pytest.approx(3 / 4)
    assert v["hallusionbench.qAcc[VD]"].value == pytest.approx(2 / 3)
    assert v["hallusionbench.fAcc[VD]"].value == pytest.approx(1 / 2)
    assert v["hallusionbench.fAcc[VS/chart]"].value == pytest.approx(1.0)
    # the questions with an image only (what lmms-eval / VLMEvalKit score): aAcc 4/5 (VS fig1 q0; VD 3 of 4),
    # qAcc: VS q0 {right}, VD q0, VD q1 ok, VD q2 not -> 3/4
    assert v["hallusionbench.aAcc@image_questions"].value == pytest.approx(4 / 5)
    assert v["hallusionbench.qAcc@image_questions"].value == pytest.approx(3 / 4)
    # bootstrap units: question sets (VS chart 0, VD illusion 0)
    assert v["hallusionbench.aAcc"].n == 2 and v["hallusionbench.aAcc"].n_null == 2


def test_hallusionbench_without_the_no_image_answers_says_how_to_get_them():
    task, recs = _hb_records(with_blind=False)
    v = _values(hallusionbench_rows(task.task_id, answers_of_records(recs), seed=0, no_image=True))
    assert math.isnan(v["hallusionbench.aAcc"].value) and "--condition image_withheld" in v["hallusionbench.aAcc"].note
    assert v["hallusionbench.aAcc@image_questions"].value == pytest.approx(4 / 5)


# ------------------------------------------------------------------ MMVP
MMVP_ANSWERS = {97: "A", 98: "B", 99: "B", 100: "A", 279: "B", 280: None}


@pytest.mark.parametrize("corrections", [True, False])
def test_mmvp_pairs_patterns_and_the_four_label_corrections(corrections):
    pytest.importorskip("datasets")
    from perceptbench.external.mmvp import load_mmvp

    task = get_task("vsi.mmvp")
    stim = load_mmvp(FIXTURES / "mmvp" / "labels", corrections=corrections)
    # released answers 97 A, 98 B, 99 A, 100 B, 279 A, 280 B; corrected 99 B, 100 A, 279 B, 280 A
    truth = {s.meta["index"]: s.answer for s in stim}
    assert truth == ({97: "A", 98: "B", 99: "B", 100: "A", 279: "B", 280: "A"} if corrections else
                     {97: "A", 98: "B", 99: "A", 100: "B", 279: "A", 280: "B"})
    recs = [_answer(task, s.stimulus_id, s.meta, s.answer, MMVP_ANSWERS[s.meta["index"]]) for s in stim]
    v = _values(mmvp_rows(task.task_id, answers_of_records(recs), seed=0))
    if corrections:
        # right: 97, 98, 99, 100, 279 (280 unparseable = wrong) -> 5/6; pairs 49 {97, 98} and 50 {99, 100}
        # both right, pair 140 {279, 280} not -> 2/3; Orientation (pairs 49, 50): 2/2, questions 4/4;
        # State and Condition (pair 140): 0/1, questions 1/2
        expect = {"mmvp.question_accuracy": 5 / 6, "mmvp.pair_accuracy": 2 / 3,
                  "mmvp.pair_accuracy[Orientation and Direction]": 1.0,
                  "mmvp.question_accuracy[Orientation and Direction]": 1.0,
                  "mmvp.pair_accuracy[State and Condition]": 0.0, "mmvp.question_accuracy[State and Condition]": 0.5}
    else:
        # against the released labels 99, 100 and 279 are wrong: right 97, 98 -> 2/6; pairs: only 49 -> 1/3
        expect = {"mmvp.question_accuracy": 2 / 6, "mmvp.pair_accuracy": 1 / 3,
                  "mmvp.pair_accuracy[Orientation and Direction]": 1 / 2,
                  "mmvp.pair_accuracy[State and Condition]": 0.0}
    assert {k: v[k].value for k in expect} == pytest.approx(expect)
    assert v["mmvp.pair_accuracy"].n == 3  # bootstrap over pairs


def test_mmvp_without_pattern_labels_says_so():
    pytest.importorskip("datasets")
    from perceptbench.external.mmvp import load_mmvp

    task = get_task("vsi.mmvp")
    stim = load_mmvp(FIXTURES / "mmvp" / "release")
    # release rows: 1 A, 2 B, 3 B, 4 A; answers A, B, B, B -> pair 1 right, pair 2 not: 1/2; questions 3/4
    recs = [_answer(task, s.stimulus_id, s.meta, s.answer, a) for s, a in zip(stim, "ABBB")]
    v = _values(mmvp_rows(task.task_id, answers_of_records(recs), seed=0))
    assert v["mmvp.pair_accuracy"].value == pytest.approx(1 / 2)
    assert v["mmvp.question_accuracy"].value == pytest.approx(3 / 4)
    assert math.isnan(v["mmvp.pair_accuracy[pattern]"].value) and "Type" in v["mmvp.pair_accuracy[pattern]"].note


# ------------------------------------------------------------------ MMStar
def _mmstar(base_answers, base_llm="base"):
    pytest.importorskip("datasets")
    from perceptbench.external.mmstar import load_mmstar

    task = get_task("vsi.mmstar")
    stim = load_mmstar(FIXTURES / "mmstar" / "mmstar.parquet")
    # truths: index 0 (coarse perception / image scene and topic) A, 1 (fine-grained / recognition) C,
    # 2 (math / numeric commonsense and calculation) B
    assert [s.answer for s in stim] == ["A", "C", "B"]
    recs = []
    for s, with_image, without, base in zip(stim, ["A", "C", None], ["A", "B", "A"], base_answers):
        recs.append(_answer(task, s.stimulus_id, s.meta, s.answer, with_image))
        recs.append(_answer(task, s.stimulus_id, s.meta, s.answer, without, withheld=True))
        recs.append(_answer(task, s.stimulus_id, s.meta, s.answer, base, model="base", withheld=True))
    return task, mmstar_rows(task.task_id, answers_of_records(recs), vsi_samples(recs), seed=0, base_llm=base_llm, sigma=20.0)


def test_mmstar_accuracy_gain_and_leakage():
    task, rows = _mmstar(["D", "B", "A"])
    v = _values(rows)
    # S_v: A right, C right, null wrong -> 2/3; per capability: coarse 1, fine-grained 1, math 0
    assert v["mmstar.accuracy"].value == pytest.approx(2 / 3) and v["mmstar.accuracy"].n_null == 1
    assert v["mmstar.accuracy[math]"].value == 0.0
    assert v["mmstar.accuracy[fine-grained perception/recognition]"].value == 1.0
    # S_wv (m[image_withheld]): A right, B wrong, A wrong -> 1/3; MG = S_v - S_wv = 2/3 - 1/3 = 1/3
    assert _values(rows, "m[image_withheld]")["mmstar.accuracy"].value == pytest.approx(1 / 3)
    assert v["mmstar.multimodal_gain"].value == pytest.approx(1 / 3)
    # S_t (base[image_withheld]): D, B, A all wrong -> 0; ML = max(0, S_wv - S_t) = 1/3
    assert v["mmstar.multimodal_leakage"].value == pytest.approx(1 / 3)


def test_mmstar_leakage_is_clipped_at_zero_and_refused_without_the_base_llm():
    _, rows = _mmstar(["A", "C", "B"])
    # S_t = 1 > S_wv = 1/3: max(0, 1/3 - 1) = 0 (the draws are clipped too)
    r = _values(rows)["mmstar.multimodal_leakage"]
    assert r.value == 0.0 and r.ci_low == 0.0
    _, rows = _mmstar(["A", "C", "B"], base_llm="")
    r = _values(rows)["mmstar.multimodal_leakage"]
    assert math.isnan(r.value) and "base_llm=NAME" in r.note and "--condition image_withheld" in r.note


def test_mmstar_auroc_of_minus_vsi_per_category():
    """Seed 002's MMStar columns on planted distributions: 10 math samples, the 5 errors with the
    lowest VSI -> AUROC of -VSI for errors = 1; a category with under 5 errors -> NaN with the reason."""
    task = get_task("vsi.mmstar")
    recs = []
    for i in range(10):
        err = i < 5
        cat = "math" if i < 10 else ""
        ext = {"category": cat, "l2_category": "geometry"}
        sid = f"mmstar-{i:04d}"
        # clean: token 1 with p = 0.9; whole blur: p(1) falls with i, so VSI rises with i (errors lowest)
        p = 0.9 - 0.07 * i if i >= 5 else 0.9 - 0.001 * i  # never 0.5: two equal logprobs are "uninformative"
        for cond, lps in (("clean", [math.log(0.9), math.log(0.1)]), ("whole_blur", [math.log(p), math.log(1 - p)])):
            vsi = {"sample_id": sid, "image_id": sid, "benchmark": "mmstar", "condition": cond,
                   "sigma_px": 0.0 if cond == "clean" else 20.0, "dilate_px": 4, "region_source": "exact",
                   "region_bbox": None, "fallback": False, "answer_prefix": "", "top_k": 50, "token_ids": [1, 2],
                   "tokens": ["1", "2"], "logprobs": lps, "complete": False, "distribution_source": "hf_logits",
                   "image_sha256": "x", "max_prob": 0.9 if cond == "clean" else None, "verbal_conf": None,
                   "verbal_raw": None}
            clean = cond == "clean"
            recs.append(plant_record(task, stimulus_id=f"{sid}~{cond}", model="m",
                                     readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed",
                                     response=("B" if err else "A") if clean else None, ground_truth="A",
                                     raw_output="B" if clean and err else "A" if clean else None,
                                     prompt_id=task.prompt_id, external=ext, vsi=vsi))
    v = _values(mmstar_rows(task.task_id, answers_of_records(recs), vsi_samples(recs), seed=0, base_llm="", sigma=20.0))
    r = v["mmstar.auroc_vsi[math,whole,sigma=20]"]
    # every error (i < 5) has a lower VSI, so a higher -VSI, than every right answer: AUROC = 1
    assert r.value == pytest.approx(1.0) and r.n == 10
    assert np.isfinite(r.ci_low)


# ------------------------------------------------------------------ HallusionBench, judge reading
HB_VERDICTS = {  # (category, set, figure, question) -> the judge's verdict on m's answer (HB_ANSWERS above)
    ("VS", "0", "0", "0"): "incorrect",  # no image: wrong
    ("VS", "0", "0", "1"): "unclear",    # no image, uncertain: right (VS, figure 0)
    ("VS", "0", "0", "2"): None,         # no reply (a timeout): uncertain, right on VS figure 0
    ("VS", "0", "0", "3"): "correct",    # right
    ("VS", "0", "1", "0"): "unclear",    # image (figure 1), uncertain: wrong
    ("VD", "0", "0", "0"): "correct",    # right
    ("VD", "0", "0", "1"): "correct",    # right
    ("VD", "0", "0", "2"): "correct",    # right (the rule read this unparseable answer as wrong)
    ("VD", "0", "1", "0"): "incorrect",  # wrong
}


def _hb_judgments(recs, verdicts=HB_VERDICTS) -> dict:
    """One judgment per answer the HallusionBench rows score (m's clean answers and m[image_withheld]'s
    no-image answers), keyed by trial id, as :func:`perceptbench.vsi.judge.read_judgments` returns them."""
    out = {}
    for r in recs:
        e = r.run_meta.model_extra["external"]
        if r.model == "m" or r.run_meta.model_extra.get("no_image"):
            v = verdicts[(e["category"], e["set_id"], e["figure_id"], e["question_id"])]
            out[r.trial_id] = {"trial_id": r.trial_id, "verdict": v, "reply": None if v is None else v,
                               "judge": "gpt", "judge_version": "gpt-x@1"}
    return out


def test_hallusionbench_judge_verdicts_combine_into_aacc_facc_qacc_at_judge():
    from perceptbench.vsi.native import hallusionbench_judge_rows

    task, recs = _hb_records()
    judgments = _hb_judgments(recs)
    assert len(judgments) == 9
    v = _values(hallusionbench_judge_rows(task.task_id, answers_of_records(recs), seed=0, no_image=True, judgments=judgments))
    # right under the judge: VS q1, q2 (uncertain on no-image VS), q3; VD fig0 q0, q1, q2 -> aAcc 6/9
    assert v["hallusionbench.aAcc@judge"].value == pytest.approx(6 / 9)
    # fAcc: VS/1 {unclear on a figure: wrong} no, VD/0 {right x3} ok, VD/1 {incorrect} no -> 1/3
    assert v["hallusionbench.fAcc@judge"].value == pytest.approx(1 / 3)
    # qAcc: VS q0 {fig0 wrong, fig1 wrong} no, VS q1 ok, VS q2 ok, VS q3 ok, VD q0 {fig0 right, fig1 wrong} no,
    # VD q1 ok, VD q2 ok -> 5/7
    assert v["hallusionbench.qAcc@judge"].value == pytest.approx(5 / 7)
    # per category: VS aAcc 3/5 (q1, q2, q3); VD aAcc 3/4, fAcc 1/2, qAcc 2/3 (q1, q2)
    assert v["hallusionbench.aAcc[VS]@judge"].value == pytest.approx(3 / 5)
    assert v["hallusionbench.aAcc[VD/illusion]@judge"].value == pytest.approx(3 / 4)
    assert v["hallusionbench.fAcc[VD]@judge"].value == pytest.approx(1 / 2)
    assert v["hallusionbench.qAcc[VD]@judge"].value == pytest.approx(2 / 3)
    # the questions with an image only: aAcc VS fig1 wrong + VD 3 of 4 -> 3/5; qAcc VS q0 no, VD q0 no, q1, q2 -> 2/4
    assert v["hallusionbench.aAcc@image_questions@judge"].value == pytest.approx(3 / 5)
    assert v["hallusionbench.qAcc@image_questions@judge"].value == pytest.approx(2 / 4)
    # n_null: the answers the judge called unclear or did not answer: VS q1, q2 (no image), VS fig1 q0 -> 3
    r = v["hallusionbench.aAcc@judge"]
    assert r.n_null == 3 and r.n == 2 and r.ci_low <= r.value <= r.ci_high
    assert "judge reading: gpt (gpt-x@1)" in r.note and "1 without a reply" in r.note
    # the rule-based rows do not change (aAcc 7/9 as in the test above) and no rule row is named @judge
    rule = _values(hallusionbench_rows(task.task_id, answers_of_records(recs), seed=0, no_image=True))
    assert rule["hallusionbench.aAcc"].value == pytest.approx(7 / 9)
    assert not any(k.endswith("@judge") for k in rule) and all(k.endswith("@judge") for k in v)


def test_hallusionbench_judge_rows_refuse_to_mix_readings_when_an_answer_has_no_verdict():
    from perceptbench.vsi.native import hallusionbench_judge_rows

    task, recs = _hb_records()
    judgments = _hb_judgments(recs)
    judgments.pop(next(iter(judgments)))  # one answer the judge has not read
    rows = hallusionbench_judge_rows(task.task_id, answers_of_records(recs), seed=0, no_image=True, judgments=judgments)
    assert {r.metric for r in rows} == {"hallusionbench.aAcc@judge", "hallusionbench.fAcc@judge",
                                        "hallusionbench.qAcc@judge"}
    assert all(math.isnan(r.value) and "1 of 9 answers of m" in r.note and "--judge" in r.note for r in rows)
    # no judgment at all: no judge rows (a run without --judge scores as before)
    assert hallusionbench_judge_rows(task.task_id, answers_of_records(recs), seed=0, no_image=True, judgments={}) == []


def test_scoring_adds_the_judge_rows_after_the_rule_based_rows_unchanged():
    from perceptbench.scoring import score_records

    _, recs = _hb_records()
    plain = score_records(recs, seed=0)
    judged = score_records(recs, seed=0, judgments=_hb_judgments(recs))
    assert judged[:len(plain)] == plain
    assert judged[len(plain):] and all(r.metric.endswith("@judge") for r in judged[len(plain):])


def test_mmvp_per_pattern_pair_and_question_accuracy_from_a_pattern_map(tmp_path):
    """``vsi.mmvp@patterns=FILE`` (a made-up map of the fixture's two pairs: no public map exists)."""
    pytest.importorskip("datasets")
    from perceptbench.external.mmvp import load_mmvp

    task = get_task("vsi.mmvp")
    m = tmp_path / "patterns.csv"
    m.write_text("Index,Type\n1,Texts\n2,Texts\n3,Color and Appearance\n4,Color and Appearance\n")
    stim = load_mmvp(FIXTURES / "mmvp" / "release", patterns=m)
    # truths 1 A, 2 B, 3 B, 4 A; answers A, B, A, A: pair 1 (Texts) both right; pair 2 (Color) only Index 4 right
    recs = [_answer(task, s.stimulus_id, s.meta, s.answer, a) for s, a in zip(stim, "ABAA")]
    v = _values(mmvp_rows(task.task_id, answers_of_records(recs), seed=0))
    expect = {"mmvp.pair_accuracy": 1 / 2, "mmvp.question_accuracy": 3 / 4,
              "mmvp.pair_accuracy[Texts]": 1.0, "mmvp.question_accuracy[Texts]": 1.0,
              "mmvp.pair_accuracy[Color and Appearance]": 0.0, "mmvp.question_accuracy[Color and Appearance]": 1 / 2}
    assert {k: v[k].value for k in expect} == pytest.approx(expect)
    r = v["mmvp.question_accuracy[Color and Appearance]"]
    assert r.n == 1 and r.ci_low <= r.value <= r.ci_high  # one pair: the bootstrap unit
    assert "mmvp.pair_accuracy[pattern]" not in v  # the "no pattern" row only when nothing is labelled


def test_the_mmvp_pattern_map_is_a_task_setting_named_by_its_content(tmp_path):
    m = tmp_path / "patterns.csv"
    m.write_text("Index,Type\n1,Texts\n2,Texts\n")
    t = get_task(f"vsi.mmvp@source={FIXTURES / 'mmvp' / 'release'},patterns={m}")
    assert "patterns=sha256:" in t.task_id and str(tmp_path) not in t.task_id
    assert get_task("vsi.mmvp").task_id == "vsi.mmvp"
