"""The parser modes reach VSI clean answers at scoring time, and VSI score rows count
ambiguous and unclosed-reasoning answers as battery rows do (issue 19 item 4)."""

import json
import math

import numpy as np
import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from perceptbench.vsi.cells import HIST_EDGES, cell_summary
from perceptbench.scoring import score_records
from perceptbench.tasks import get_task

from helpers.records import plant_record, plant_vsi_record
from helpers.score_rows import SEED, assert_rows, boot_row

TASK = "vsi.salbench.syn@n=4"
RAW = {  # sample -> the clean greedy answer (ground truth B everywhere)
    "s0": "b",  # default/strict: B (lower case); seed: null
    "s1": "Option B, or maybe option C.",  # ambiguous: default and seed B, strict null
    "s2": "<think>C or B",  # reasoning block never closed: null (seed: null too, no rule fires)
    "s3": "Answer: **B**",  # default/strict: B; seed: null (markdown after the marker)
}


def _records(response):
    from perceptbench.tasks import get_task
    from helpers.records import plant_record

    t = get_task(TASK)
    recs = []
    for sid, raw in RAW.items():
        for cond in ("clean", "whole_blur"):
            clean = cond == "clean"
            vsi = {"sample_id": sid, "image_id": sid, "benchmark": "salbench.syn", "condition": cond,
                   "sigma_px": 0.0 if clean else 20.0, "dilate_px": 4, "region_source": "exact",
                   "region_bbox": [0, 0, 4, 4], "fallback": False, "answer_prefix": "", "top_k": 50,
                   "token_ids": [1, 2], "tokens": ["1", "2"], "logprobs": [float(np.log(0.6)), float(np.log(0.3))],
                   "complete": False, "distribution_source": "hf_logits", "image_sha256": "x",
                   "max_prob": 0.6 if clean else None, "verbal_conf": None, "verbal_raw": None}
            recs.append(plant_record(t, stimulus_id=f"{sid}~{cond}", model="m", model_family="vlm",
                                     readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed",
                                     response=response if clean else None, ground_truth="B",
                                     manipulated_value=cond, raw_output=raw if clean else None,
                                     prompt_id=t.prompt_id, prompt_hash=None, model_version="v", seed=0,
                                     run_id="r", vsi=vsi))
    return recs


def _rows(mode):
    rows = score_records(_records(response=None), parser_mode=mode)  # recorded responses: all null
    return {r.metric: r for r in rows if r.task_id == TASK and r.model == "m"}


@pytest.mark.parametrize("mode,n_null,accuracy", [("default", 1, 1.0), ("strict", 2, 1.0), ("seed", 3, 1.0)])
def test_parser_mode_re_parses_vsi_clean_answers(mode, n_null, accuracy):
    rows = _rows(mode)
    assert rows["n_parse_null"].value == n_null
    if accuracy is None:
        assert "accuracy" not in rows
    else:
        assert rows["accuracy"].value == accuracy and rows["accuracy"].n == 4 - n_null


@pytest.mark.parametrize("mode,ambiguous,unclosed", [("default", 1, 1), ("strict", 1, 1), ("seed", 1, 0)])
def test_vsi_rows_count_ambiguous_and_unclosed_reasoning(mode, ambiguous, unclosed):
    rows = _rows(mode)
    assert rows["n_ambiguous"].value == ambiguous and rows["n_ambiguous"].n == 4
    assert rows["n_unclosed_reasoning"].value == unclosed
    assert "parser mode " + mode in rows["n_ambiguous"].note


L = np.log


def _vsi_rec(task, cond, sample, ids, lps, *, response="B", model="m", conf=80.0, fallback=False, skipped=None):
    return plant_vsi_record(task, cond, sample, ids, lps, response=response, model=model, conf=conf,
                            fallback=fallback, skipped=skipped)


def _vsi_records(task):
    a, lp = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    return [
        # model "sk" first (scores are sorted by model): skipped with two reasons, one record not skipped
        _vsi_rec(task, "clean", "s0", a, lp, model="sk", skipped="z: no logprobs"),
        _vsi_rec(task, "clean", "s1", a, lp, model="sk", skipped="a: no images"),
        _vsi_rec(task, "clean", "s2", a, lp, model="sk"),
        # model "m": s0 right (conf 80), s1 wrong (no confidence), s3 unparseable (null), records out of order
        _vsi_rec(task, "clean", "s3", a, lp, response=None, conf=None),
        _vsi_rec(task, "clean", "s1", a, lp, response="A", conf=None),
        _vsi_rec(task, "clean", "s0", a, lp),
        _vsi_rec(task, "region_blur", "s0", a, lp),                              # VSI 0, argmax kept
        _vsi_rec(task, "region_blur", "s1", [2, 1], lp[:2], fallback=True),     # argmax changed
        _vsi_rec(task, "whole_blur", "s0", [2, 1, 3], lp),                       # VSI 0.6 ln2 + 0.3 ln .5
    ]


def _vsi_cell_rows(tid, m, cond, samples):
    """The rows of one VSI cell, from the metric's own cell summary of the paired samples."""
    cell = [x for x in samples if x.model == m and x.perturbation == cond.split("_")[0]]
    cs = cell_summary(np.array([x.vsi for x in cell]), np.array([x.argmax_changed for x in cell]), seed=SEED)
    tag, n = f"[{cond},sigma=20]", len(cell)
    rows = [ScoreRow(tid, m, "vsi_median" + tag, cs.median, cs.q25, cs.q75, n, None,
                     "nats; ci_low/ci_high hold the 25th/75th percentiles (quartiles), not a CI"),
            ScoreRow(tid, m, "vsi_q25" + tag, cs.q25, None, None, n, None, "nats"),
            ScoreRow(tid, m, "vsi_q75" + tag, cs.q75, None, None, n, None, "nats")]
    for t, word in ((0.05, "0.05"), (0.01, "0.01")):
        rows.append(boot_row(tid, m, f"insensitive_frac@{word}" + tag, cs.insensitive[t], n, None,
                              f"fraction of samples with VSI < {word} nats (seed 002 §2.2)"))
    rows.append(boot_row(tid, m, "argmax_change_rate" + tag, cs.argmax_change_rate, n, None,
                          "first-answer-token argmax differs clean vs perturbed (seed 002 §2.4)"))
    edges = [e if np.isfinite(e) else None for e in HIST_EDGES]
    rows.append(ScoreRow(tid, m, "vsi_histogram" + tag, float(n), None, None, n, None,
                         json.dumps({"edges_nats": edges, "counts": list(cs.hist_counts),
                                     "bins": "[lo, hi); last edge null = infinity"})))
    return rows


@pytest.mark.parametrize("spec, conds, verbal", [
    ("", ("region_blur", "whole_blur"), True),
    ("@perturbation=region,verbal_conf=0", ("region_blur",), False),
    ("@perturbation=whole", ("whole_blur",), True)])
def test_vsi_task_score_rows_by_hand(spec, conds, verbal):
    from perceptbench.vsi.samples import vsi_samples

    task = get_task("vsi.salbench.syn@n=3" + spec.replace("@", ","))
    tid = task.task_id
    recs = _vsi_records(task)
    samples = vsi_samples(recs)
    # the pairing the cells are built from: s0 and s1 region (s1's argmax changed), s0 whole
    assert [(x.model, x.sample_id, x.perturbation, x.argmax_changed) for x in samples] == [
        ("m", "s0", "region", False), ("m", "s0", "whole", True), ("m", "s1", "region", True)]
    assert samples[0].vsi == 0.0 and samples[1].vsi == pytest.approx(0.6 * L(2) + 0.3 * L(0.5))
    c = np.array([1.0, 0.0])  # parseable clean answers by stimulus id: s0 right, s1 wrong (s3 null, left out)
    want = [boot_row(tid, "m", "accuracy", bootstrap(lambda i: c[i].mean(1), 2, n_draws=N_BOOT_B, seed=SEED), 2, 1,
                      "clean greedy answers, parseable only"),
            ScoreRow(tid, "m", "n_parse_null", 1.0, None, None, 3, 1,
                     "clean greedy answers the parser could not read (excluded from accuracy)")]
    if verbal:  # no confidence on s1 and s3: 2 of 3
        want.append(ScoreRow(tid, "m", "n_verbal_conf_missing", 2.0, None, None, 3, 1,
                             "clean samples whose confidence answer holds no integer 0-100 "
                             "(dropped from confidence analyses, seed 002 appendix A)"))
    for cond in conds:
        if cond == "region_blur":  # s1's region record fell back; the region cell has 2 samples
            want.append(ScoreRow(tid, "m", "n_fallback[region_blur,sigma=20]", 1.0, None, None, 2, None,
                                 "region blur fell back to the whole image (no region / no box above "
                                 "threshold; seed 002 appendix A)"))
        want += _vsi_cell_rows(tid, "m", cond, samples)
    # "sk": 3 records, two skip reasons (sorted, joined), NaN value, n_null None
    want.append(ScoreRow(tid, "sk", "skipped", float("nan"), None, None, 3, None, "a: no images; z: no logprobs"))
    assert_rows(task.score(recs, SEED), want)
    # the region cell by hand: VSI (0, v1) with argmax (kept, changed): rate 1/2, median (0 + v1)/2
    rows = {r.metric: r for r in task.score(recs, SEED)}
    if "region_blur" in conds:
        v1 = samples[2].vsi
        assert rows["argmax_change_rate[region_blur,sigma=20]"].value == 0.5
        assert rows["vsi_median[region_blur,sigma=20]"].value == pytest.approx(v1 / 2)
        assert rows["insensitive_frac@0.05[region_blur,sigma=20]"].value == (0.5 if v1 >= 0.05 else 1.0)


def test_vsi_task_score_a_region_cell_without_samples_gives_only_its_fallback_count():
    task = get_task("vsi.salbench.syn@n=3")
    a, lp = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    recs = [_vsi_rec(task, "clean", "s0", a, lp), _vsi_rec(task, "whole_blur", "s0", a, lp)]
    rows = [(r.metric, r.value, r.n) for r in task.score(recs, SEED)]
    # no region record: the fallback count is 0 of 0 and no cell rows follow; whole cell VSI 0
    assert ("n_fallback[region_blur,sigma=20]", 0.0, 0) in rows
    assert not any(m.startswith("vsi_median[region") for m, _, _ in rows)
    assert ("vsi_median[whole_blur,sigma=20]", 0.0, 1) in rows
    # a model with perturbed records only: no accuracy rows at all
    only = [_vsi_rec(task, "whole_blur", "s0", a, lp, model="p")]
    assert [r.metric for r in task.score(only, SEED)] == ["n_fallback[region_blur,sigma=20]"]


def test_vsi_task_score_counts_every_fallback_and_scores_models_after_a_skipped_one():
    task = get_task("vsi.salbench.syn@n=3,perturbation=region")
    a, lp = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    recs = [_vsi_rec(task, "clean", "s0", a, lp, model="a_skipped", skipped="no logprobs"),
            _vsi_rec(task, "clean", "s0", a, lp), _vsi_rec(task, "clean", "s1", a, lp),
            _vsi_rec(task, "region_blur", "s0", a, lp, fallback=True),
            _vsi_rec(task, "region_blur", "s1", a, lp, fallback=True)]
    # a clean record written without VSI metadata counts as a missing confidence
    recs.append(plant_record(task, stimulus_id="s2~clean", model="m", model_family="vlm", readout="vlm_vsi_clean",
                             response="B", ground_truth="B", manipulated_value="clean", raw_output="B",
                             prompt_id=task.prompt_id, prompt_hash=None, model_version="v", seed=0, run_id="r"))
    rows = {(r.model, r.metric): r for r in task.score(recs, SEED)}
    assert rows[("a_skipped", "skipped")].note == "no logprobs"
    assert rows[("m", "n_fallback[region_blur,sigma=20]")].value == 2.0   # two fallbacks, not "any"
    assert rows[("m", "n_verbal_conf_missing")].value == 1.0               # s2: no confidence recorded
    assert rows[("m", "accuracy")].value == 1.0 and rows[("m", "accuracy")].n == 3


def test_withheld_records_score_a_vsi_cell_against_the_models_clean_records_by_hand():
    """``M[image_withheld]``'s records (the question without its image) against M's own clean
    records, sample by sample: the blur cell's rows tagged ``[image_withheld]``, values by hand."""
    import statistics

    from helpers.by_hand import kl_by_hand, percentile

    task = get_task("vsi.salbench.syn@n=6")
    lp = [math.log(p) for p in (0.6, 0.3, 0.05)]
    blind_ids = [[1, 2, 3], [2, 1, 3], [1, 2, 3], [3, 1, 2], [1, 2, 3], [2, 3, 1]]
    blind_lps = [lp, lp, [math.log(p) for p in (0.59, 0.31, 0.05)], lp, [math.log(p) for p in (0.9, 0.05, 0.02)], lp]
    recs = []
    for i, (ids, lps) in enumerate(zip(blind_ids, blind_lps)):
        recs.append(plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], lp, model="m"))
        recs.append(plant_vsi_record(task, "image_withheld", f"s{i}", ids, lps, model="m[image_withheld]",
                                     sigma_px=0.0))
    meta = {r.stimulus_id: r.run_meta.model_extra["vsi"] for r in recs}
    kl = [kl_by_hand(meta[f"s{i}~clean"], meta[f"s{i}~image_withheld"]) for i in range(6)]
    changed = [ids[0] != 1 for ids in blind_ids]
    rows = {r.metric: r for r in task.score(recs, seed=0) if r.model == "m[image_withheld]"}
    tag = "[image_withheld]"
    assert set(rows) == {m + tag for m in ("vsi_median", "vsi_q25", "vsi_q75", "insensitive_frac@0.05",
                                           "insensitive_frac@0.01", "argmax_change_rate", "vsi_histogram")}
    med = rows["vsi_median" + tag]
    assert (med.task_id, med.n, med.n_null) == (task.task_id, 6, None)
    assert med.value == pytest.approx(statistics.median(kl), rel=1e-9)
    assert (med.ci_low, med.ci_high) == pytest.approx((percentile(kl, 0.25), percentile(kl, 0.75)), rel=1e-9)
    assert rows["vsi_q25" + tag].value == pytest.approx(percentile(kl, 0.25), rel=1e-9)
    assert rows["vsi_q75" + tag].value == pytest.approx(percentile(kl, 0.75), rel=1e-9)
    assert med.note.startswith("KL(p_clean of m || p of m[image_withheld])")
    for t in (0.05, 0.01):
        r = rows[f"insensitive_frac@{t:g}{tag}"]
        assert r.value == pytest.approx(sum(x < t for x in kl) / 6) and r.n == 6
    assert 0 < sum(x < 0.05 for x in kl) < 6  # the planted cell has both kinds of sample
    ch = rows["argmax_change_rate" + tag]
    assert ch.value == pytest.approx(sum(changed) / 6) and ch.n == 6 and 0 < sum(changed) < 6
    hist = json.loads(rows["vsi_histogram" + tag].note)
    edges = [math.inf if e is None else e for e in hist["edges_nats"]]
    assert hist["counts"] == [sum(lo <= x < hi for x in kl) for lo, hi in zip(edges, edges[1:])]
    # the model's own rows do not change when its withheld records are scored beside them, and a
    # model sorted after the withheld respondent is still scored
    later = [plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], lp, model="z") for i in range(6)]
    scored = task.score(recs + later, seed=0)
    own = [r for r in scored if r.model == "m"]
    assert own == [r for r in task.score([r for r in recs if r.model == "m"], seed=0) if r.model == "m"]
    assert [r for r in scored if r.model == "z"] == task.score(later, seed=0)


def test_withheld_records_without_the_models_clean_records_give_one_row_that_says_so():
    task = get_task("vsi.salbench.syn@n=2")
    recs = [plant_vsi_record(task, "image_withheld", f"s{i}", [1, 2], [-0.1, -2.5], model="m[image_withheld]",
                             sigma_px=0.0) for i in range(2)]
    rows = [r for r in task.score(recs, seed=0) if r.model == "m[image_withheld]"]
    assert [r.metric for r in rows] == ["vsi_median[image_withheld]"]
    assert (rows[0].task_id, rows[0].n) == (task.task_id, 0)
    assert math.isnan(rows[0].value) and "no clean record of m" in rows[0].note


# ----------------------------------------------------------- guards (issue 20 item 1)

GOOD = [float(x) for x in L([0.6, 0.3, 0.05])]
OTHER = [float(x) for x in L([0.5, 0.3, 0.1])]


def _guard_records(task, planted):
    """Samples s0..s3 of model "m", clean and whole blur, on distinct images: s0 is planted as
    ``planted`` says (condition -> keyword arguments of plant_vsi_record), s1..s3 are good."""
    recs = []
    for i in range(4):
        for cond, lps in (("clean", GOOD), ("whole_blur", OTHER)):
            kw = dict(ids=[1, 2, 3], lps=lps, image_sha256=f"{cond}-{i}")
            if i == 0:
                kw.update(planted.get(cond, {}))
            ids, lps = kw.pop("ids"), kw.pop("lps")
            recs.append(plant_vsi_record(task, cond, f"s{i}", ids, lps, **kw))
    recs.append(plant_vsi_record(task, "clean", "s0", [1, 2], GOOD[:2], model="z"))  # a later model
    recs.append(plant_vsi_record(task, "whole_blur", "s0", [2, 1], GOOD[:2], model="z", image_sha256="y"))
    return recs


@pytest.mark.parametrize("planted, reason", [
    ({"clean": {"lps": [0.7, -1.0, -2.0]}}, "invalid_distribution"),             # positive: max_prob 2.01
    ({"whole_blur": {"lps": [float("nan"), -1.0, -2.0]}}, "invalid_distribution"),  # NaN
    ({"clean": {"lps": [-0.1, -0.2, -0.3]}}, "invalid_distribution"),            # total probability 2.46
    ({"clean": {"ids": [1, 1, 3]}}, "invalid_distribution"),                      # a token listed twice
    ({"clean": {"tokens": ["\n", "2", "3"]}}, "non_answer_position"),            # whitespace first
    ({"whole_blur": {"tokens": ["<think>", "2", "3"]}}, "non_answer_position"),  # a reasoning tag first
    ({"clean": {"ids": [1], "lps": [0.0]}, "whole_blur": {"ids": [1], "lps": [0.0]}}, "uninformative"),  # one-hot
    ({"whole_blur": {"lps": [-1.5, -1.5, -1.5]}}, "uninformative"),               # no ranking
    ({"whole_blur": {"lps": GOOD}}, "identical_across_conditions"),               # other image, same floats
    ({"clean": {"skipped": "invalid next-token distribution: x", "skip_scope": "trial"}}, "skipped_trial"),
])
def test_a_guarded_sample_is_left_out_counted_in_its_cell_and_the_rest_is_scored(planted, reason):
    from perceptbench.vsi.samples import vsi_flagged, vsi_samples

    task = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    recs = _guard_records(task, planted)
    assert [(f.sample_id, f.reason) for f in vsi_flagged(recs)] == [("s0", reason)]
    assert sorted(s.sample_id for s in vsi_samples(recs) if s.model == "m") == ["s1", "s2", "s3"]
    rows = {(r.model, r.metric): r for r in task.score(recs, SEED)}  # before: ValueError, nothing scored
    tag = "[whole_blur,sigma=20]"
    flagged = rows[("m", "n_flagged" + tag)]
    assert (flagged.value, flagged.n) == (1.0, 1) and f"1 {reason}" in flagged.note
    assert rows[("m", "vsi_median" + tag)].n == 3 and ("m", "skipped") not in rows
    assert rows[("z", "vsi_median" + tag)].n == 1 and ("z", "n_flagged" + tag) not in rows


def test_the_same_distribution_on_the_same_image_is_not_flagged():
    """Identical lists are a finding (VSI 0) when the blurred image did not change: same hash."""
    from perceptbench.vsi.samples import vsi_flagged

    task = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    recs = [plant_vsi_record(task, "clean", "s0", [1, 2, 3], GOOD, image_sha256="same"),
            plant_vsi_record(task, "whole_blur", "s0", [1, 2, 3], GOOD, image_sha256="same")]
    assert vsi_flagged(recs) == []
    assert {r.metric: r.value for r in task.score(recs, SEED)}["vsi_median[whole_blur,sigma=20]"] == 0.0


def test_a_records_file_with_a_bad_distribution_still_scores_and_reports_through_the_commands(tmp_path):
    """The issue's example: a stored positive log-probability (and a NaN, stored as null) made every
    later ``score`` fail naming no trial; now the other samples are scored and the bad ones counted."""
    from helpers.cli import cli
    from helpers.records import plant_records

    task = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    recs = _guard_records(task, {"clean": {"lps": [0.7, -1.0, -2.0]}})
    recs.append(plant_vsi_record(task, "clean", "s0", [1, 2], [float("-inf"), -1.0], model="y"))
    recs.append(plant_vsi_record(task, "whole_blur", "s0", [1, 2], [-0.5, -1.0], model="y", image_sha256="q"))
    path = plant_records(tmp_path / "run", recs)
    p = cli("score", path, "--out", tmp_path / "scores.csv", in_process=True)
    assert p.returncode == 0, p.stdout
    rows = {(r["model"], r["metric"]): r for r in json.loads((tmp_path / "scores.json").read_text())}
    assert rows[("m", "n_flagged[whole_blur,sigma=20]")]["value"] == 1.0
    assert rows[("y", "n_flagged[whole_blur,sigma=20]")]["value"] == 1.0  # -inf, stored as null
    assert rows[("m", "vsi_median[whole_blur,sigma=20]")]["n"] == 3
    p = cli("report", path.parent, "--out", tmp_path / "report.html", in_process=True)  # died the same way
    assert p.returncode == 0 and (tmp_path / "report.html").exists(), p.stdout
