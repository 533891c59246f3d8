"""Headline metrics as the seeds define them (issue 7 item 6)."""

import math
import warnings

import numpy as np
import pytest

from perceptbench.metrics.agreement import masked_mean, position_floor
from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from perceptbench.scoring import score_records
from perceptbench.tasks import get_task
from perceptbench.tasks.gestalt import KERNELS, kernel_odd_one_out, load_color_kernel

from helpers.records import plant_record


# --------------------------------------------------------------------------- SalBench

def _salbench_records(task, answers, truth=("Color",)):
    recs = []
    for i, text in enumerate(answers):
        response, meta = task.parse_answer(text)
        recs.append(plant_record(task, stimulus_id=f"s{i:02d}", model="vlm", model_family="vlm", readout="vlm_prompt",
                                 response=response, ground_truth=list(truth), manipulated_value="color/easy",
                                 raw_output=text, prompt_id="p", prompt_hash="h", model_version="v", seed=0,
                                 run_id="r", parse=meta))
    return recs


def _rows(rows):
    return {r.metric: r for r in rows}


def test_salbench_mean_f1_averages_all_categories():
    """Three stimuli, all Color, answered Color: seed 001 / lmms-eval 0.333, old headline 1.000."""
    task = get_task("salbench.detection.syn")
    rows = _rows(score_records(_salbench_records(task, ["Color"] * 3)))
    assert rows["mean_f1"].value == pytest.approx(1 / 3)
    assert rows["mean_f1@defined_categories"].value == 1.0
    assert math.isnan(rows["f1[Size]"].value) and "counted as 0" in rows["f1[Size]"].note


def test_salbench_whole_set_answers_and_nulls_count_in_the_headline():
    task = get_task("salbench.detection.syn")
    # 5 correct + 5 "All of them": the old parser made the latter null and scored 1.0
    rows = _rows(score_records(_salbench_records(task, ["Color"] * 5 + ["All of them"] * 5)))
    assert rows["exact_match"].value == 0.5 and rows["null_rate"].value == 0
    # 4 correct + 1 null: every stimulus counts in the headline; the variant says it excludes nulls
    rows = _rows(score_records(_salbench_records(task, ["Color"] * 4 + ["I cannot tell."])))
    assert rows["exact_match"].value == pytest.approx(0.8) and rows["exact_match"].n == 5
    assert rows["exact_match@nulls_excluded"].value == 1.0 and rows["exact_match@nulls_excluded"].n == 4
    assert rows["exact_match[difficulty=easy]"].value == pytest.approx(0.8)
    # an answer that never closes its reasoning: null, counted
    rows = _rows(score_records(_salbench_records(task, ["Color", "<think>it is larger"])))
    assert rows["n_unclosed_reasoning"].value == 1 and rows["exact_match"].value == 0.5


# --------------------------------------------------------------------------- series count

def test_series_count_accuracy_and_error_resample_within_k():
    task = get_task("similarity.chart.series_count@n_test=30")
    ks = [2 + (i % 15) for i in range(30)]
    answers = [k if i % 3 else k + 1 for i, k in enumerate(ks)]
    recs = [plant_record(task, stimulus_id=f"t{i:03d}", model="enc", model_family="encoder", readout="ridge_round",
                         response=a, ground_truth=k, manipulated_value=k, raw_output=str(a), prompt_id=None,
                         prompt_hash=None, model_version="v", seed=0, run_id="r")
            for i, (k, a) in enumerate(zip(ks, answers))]
    rows = _rows(task.score(recs, 0))
    k = np.array(ks)
    correct = np.array([a == kk for a, kk in zip(answers, ks)], float)
    err = np.abs(np.array(answers) - k).astype(float)
    valid = np.ones(30, bool)
    for metric, x in (("accuracy", correct), ("mean_abs_error", err)):
        strat = bootstrap(lambda i: masked_mean(x[i], valid[i]), 30, n_draws=N_BOOT_B, seed=0, strata=k)
        plain = bootstrap(lambda i: masked_mean(x[i], valid[i]), 30, n_draws=N_BOOT_B, seed=0)
        assert (rows[metric].ci_low, rows[metric].ci_high) == (strat.low, strat.high)
        assert (strat.low, strat.high) != (plain.low, plain.high)
        assert "stratified by k" in rows[metric].note


# --------------------------------------------------------------------------- mark colour

@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_mark_colour_target_positions_are_counterbalanced(kernel, seed):
    task = get_task(f"similarity.chart.mark_color@kernel={kernel}")
    stims = task.stimuli(seed)
    kern = load_color_kernel(kernel)
    gts = []
    for s in stims:
        odd = kernel_odd_one_out(kern, tuple(sorted(s.meta["order"])))
        assert s.ground_truth == (None if odd is None else s.meta["order"].index(odd) + 1)
        if s.ground_truth is not None:
            gts.append(s.ground_truth)
    counts = np.bincount(gts, minlength=4)[1:]
    assert counts.max() - counts.min() <= 1
    m = len(gts)
    assert position_floor(np.array(gts)) == pytest.approx(math.ceil(m / 3) / m)  # was 0.392 (tm, seed 0)
    assert [s.meta["order"] for s in stims] == [s.meta["order"] for s in task.stimuli(seed)]


def test_mark_colour_position_assignment_depends_on_seed():
    task = get_task("similarity.chart.mark_color")
    a = [s.ground_truth for s in task.stimuli(0)]
    b = [s.ground_truth for s in task.stimuli(1)]
    assert a != b


# --------------------------------------------------------------------------- ceilings

@pytest.fixture(scope="module")
def silhouette():
    task = get_task("closure.nat.silhouette")
    stims = task.stimuli(0)
    return task, stims, task.human_records(0, "r", stims)


def _copy_model(task, stims, humans, observer, name="copycat"):
    test = {s.stimulus_id for s in stims if s.split == "test"}
    return [plant_record(task, stimulus_id=r.stimulus_id, model=name, model_family="vlm", readout="vlm_prompt",
                         response=r.response if r.response in task.options() else None, ground_truth=r.ground_truth,
                         manipulated_value=None, raw_output=str(r.response), prompt_id="p", prompt_hash="h",
                         model_version="v", seed=0, run_id="r")
            for r in humans if r.model == observer and r.stimulus_id in test]


def test_kappa_and_b_over_ceiling_are_ratios_never_clipped(silhouette):
    task, stims, humans = silhouette
    observer = sorted({r.model for r in humans})[0]
    rows = task.score(humans + _copy_model(task, stims, humans, observer), 0)
    panel = {r.metric: r for r in rows if r.model == "human:panel"}
    m = {r.metric: r for r in rows if r.model == "copycat"}
    ratio = m["kappa_aggregate"].value / panel["ceiling_kappa_pairwise_mean@test"].value
    assert m["kappa_over_ceiling"].value == pytest.approx(ratio)
    assert m["B_over_ceiling"].value == pytest.approx(m["B"].value / panel["observer_B_mean@test"].value)
    # an observer copied as a model agrees with a panel that contains it: above the ceiling, kept
    assert m["kappa_over_ceiling"].value > 1 and "above 1" in m["kappa_over_ceiling"].note
    assert m["kappa_over_ceiling"].ci_low <= m["kappa_over_ceiling"].value <= m["kappa_over_ceiling"].ci_high


def test_undefined_ceilings_carry_their_reason_without_numpy_warnings(silhouette):
    task, stims, humans = silhouette
    # every observer always right: c_exp = 1, every human kappa undefined
    perfect = [r.model_copy(update={"response": r.ground_truth, "correct": True}) for r in humans]
    observer = sorted({r.model for r in humans})[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rows = task.score(perfect + _copy_model(task, stims, humans, observer), 0)
    panel = {r.metric: r for r in rows if r.model == "human:panel"}
    for metric in ("ceiling_kappa_pairwise_mean@test", "ceiling_kappa_pairwise_min@test",
                   "ceiling_kappa_loo_max@all"):
        assert math.isnan(panel[metric].value) and panel[metric].note.startswith("undefined"), metric
    m = {r.metric: r for r in rows if r.model == "copycat"}
    assert math.isnan(m["kappa_over_ceiling"].value) and m["kappa_over_ceiling"].note.startswith("undefined")
