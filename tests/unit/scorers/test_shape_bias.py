"""The shape-bias scorer on planted records, every value worked out by hand."""

import math

import pytest

from helpers.records import plant_record
from perceptbench.record_table import TaskColumns
from perceptbench.tasks import get_task

A, B, C, SAME = "cue_airplane1-bicycle2", "cue_airplane2-cat1", "cue_cat3-dog1", "cue_cat1-cat2"
SHAPE = {A: "airplane", B: "airplane", C: "cat", SAME: "cat"}
ANSWERS = {  # respondent -> {stimulus: answer}
    "human:o1": {A: "airplane", B: "cat", C: "cat", SAME: "cat"},  # shape, texture, shape; SAME left out
    "human:o2": {A: "bicycle", B: "na", C: "dog", SAME: "cat"},  # texture, neither (na), texture
    "m": {A: "airplane", B: None, C: "bird", SAME: "cat"},  # shape, null, neither
}


@pytest.fixture(scope="module")
def task():
    return get_task("shape_bias.nat.cue_conflict")


def planted(task):
    recs = []
    for model, answers in ANSWERS.items():
        fam = "human" if model.startswith("human:") else "vlm"
        for sid, ans in answers.items():
            recs.append(plant_record(task, stimulus_id=sid, response=ans, ground_truth=SHAPE[sid], model=model,
                                     model_family=fam, split="test"))
    return recs


@pytest.fixture(scope="module")
def rows(task):
    recs = planted(task)
    return {(r.model, r.metric): r for r in task.shape_scorer.score(TaskColumns.from_records(task.task_id, recs), 0)}


def test_observer_shape_bias_counts_shape_over_shape_plus_texture(rows):
    assert rows["human:o1", "shape_bias@all"].value == pytest.approx(2 / 3)
    assert rows["human:o1", "shape_bias@all"].n == 3
    assert rows["human:o2", "shape_bias@all"].value == 0.0
    assert rows["human:o1", "fraction_texture@all"].value == pytest.approx(1 / 3)


def test_an_observers_na_counts_as_neither_cue(rows):
    assert rows["human:o2", "neither_share@all"].value == pytest.approx(1 / 3)
    assert rows["human:o2", "neither_share@all"].n_null == 0


def test_a_models_null_answer_is_left_out_and_counted(rows):
    assert rows["m", "shape_bias"].value == 1.0  # A shape; C neither; B null
    assert rows["m", "fraction_shape"].value == pytest.approx(1 / 2)
    assert rows["m", "neither_share"].value == pytest.approx(1 / 2)
    assert rows["m", "shape_bias"].n_null == 1


def test_same_class_images_are_left_out(rows):
    # SAME (cat texture on a cat shape) would add a shape decision for o1, o2 and m
    assert rows["human:o2", "shape_bias.cat@all"].value == 0.0
    assert "1 same-class image left out" in rows["m", "shape_bias"].note


def test_per_category_is_per_shape_class(rows):
    assert rows["human:o1", "shape_bias.airplane@all"].value == pytest.approx(0.5)  # A shape, B texture
    assert rows["human:o1", "shape_bias.cat@all"].value == 1.0
    assert math.isnan(rows["human:o1", "shape_bias.dog@all"].value)


def test_panel_mean_and_range_over_observers(rows):
    assert rows["human:panel", "shape_bias_mean@all"].value == pytest.approx(1 / 3)
    assert rows["human:panel", "shape_bias_min@all"].value == 0.0
    assert rows["human:panel", "shape_bias_max@all"].value == pytest.approx(2 / 3)
    assert rows["human:panel", "shape_bias_mean.airplane@all"].value == pytest.approx(0.25)
    assert rows["human:panel", "neither_share_mean@all"].value == pytest.approx(1 / 6)


def test_shape_bias_interval_brackets_the_estimate(rows):
    r = rows["human:o1", "shape_bias@all"]
    assert r.ci_low <= r.value <= r.ci_high and r.n_draws == 1000


def test_task_score_adds_error_consistency_rows(task):
    got = {(r.model, r.metric) for r in task.score(planted(task), 0)}
    assert ("m", "kappa_pairwise") in got and ("m", "shape_bias") in got


def test_a_stimulus_that_is_not_a_release_image_is_refused(task):
    recs = [plant_record(task, stimulus_id="edge_cat1", response="cat", ground_truth="cat", model="human:x",
                         model_family="human", split="test")]
    with pytest.raises(ValueError, match="edge_cat1"):
        task.shape_scorer.score(TaskColumns.from_records(task.task_id, recs), 0)


def test_pooled_panel_shape_bias_pools_decisions_over_observers(rows):
    # o1: 2 shape, 1 texture; o2: 0 shape, 2 texture -> 2 / 5 (not the mean of 2/3 and 0)
    r = rows["human:panel", "shape_bias_pooled@all"]
    assert r.value == pytest.approx(2 / 5) and r.n == 5
