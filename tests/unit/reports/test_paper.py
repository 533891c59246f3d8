"""Known answers of the published-vs-run matching (perceptbench.reports.paper.compare) on planted
score rows and planted published numbers: which run row each number is compared with, the
difference, and every reason a number is not covered."""

from __future__ import annotations

import math

import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.published import PublishedNumber
from perceptbench.reports.paper import compare, uncovered_groups


def pub(task="salbench.detection.nat", model="GPT-4o", metric="mean_f1", value=47.6, *, settings=None,
        run_model="", scale=0.01, population="", seed="seed001", section="Table 1"):
    return PublishedNumber(seed, section, task, settings or {}, model, run_model, metric, value, None, None, scale,
                           population, "", 2)


def row(task, model, metric, value, n=10, ci=(None, None), note=""):
    return ScoreRow(task, model, metric, value, ci[0], ci[1], n, 0, note)


def one(p, rows, declared=None):
    (c,) = compare([p], rows, declared)
    return c


def test_a_model_declared_with_the_papers_name_is_compared_and_the_difference_is_run_minus_paper():
    rows = [row("salbench.detection.nat", "mine", "mean_f1", 0.5, ci=(0.4, 0.6))]
    c = one(pub(), rows, {"mine": {"seed_name": "GPT-4o", "family": "closed-vlm"}})
    assert (c.status, c.run_task, c.run_model, c.run_value, c.run_ci) == (
        "compared", "salbench.detection.nat", "mine", 0.5, (0.4, 0.6))
    assert c.difference == pytest.approx(0.5 - 0.476)
    assert c.published.value == 47.6  # the published value itself is never changed


def test_a_run_model_named_like_a_roster_entry_takes_that_entrys_seed_name():
    # seed001.toml: name qwen2-vl-2b, seed_name Qwen2-VL-1.5B (Table 1's name for it)
    rows = [row("salbench.detection.syn", "qwen2-vl-2b", "mean_f1", 0.3)]
    c = one(pub("salbench.detection.syn", "Qwen2-VL-1.5B", value=26.3), rows)
    assert (c.status, c.run_model) == ("compared", "qwen2-vl-2b")
    assert c.difference == pytest.approx(0.3 - 0.263)


def test_a_run_model_whose_own_name_is_the_papers_name_ignoring_case_and_separators_matches():
    rows = [row("salbench.detection.nat", "gpt_4o", "mean_f1", 0.4)]
    assert one(pub(), rows).status == "compared"
    rows = [row("salbench.detection.nat", "gpt-4o-mini", "mean_f1", 0.4)]
    c = one(pub(), rows)
    assert (c.status, c.run_value, c.difference) == ("model not in run", None, None)
    assert "'GPT-4o'" in c.reason


def test_the_setting_picks_the_runs_instance_of_the_task_and_a_missing_one_is_a_different_setting():
    rows = [row("salbench.detection.nat", "gpt-4o", "mean_f1", 0.40),
            row("salbench.detection.nat@shots=3", "gpt-4o", "mean_f1", 0.39)]
    assert one(pub(settings={"shots": "3"}, value=38.9), rows).run_value == 0.39
    assert one(pub(settings={"shots": "0"}), rows).run_value == 0.40  # shots=0 is the task's default
    c = one(pub(settings={"shots": "5"}), rows)
    assert c.status == "different setting" and "shots=5" in c.reason and "@shots=3" in c.reason


def test_a_non_default_run_setting_the_paper_does_not_name_is_a_caveat_on_the_compared_row():
    rows = [row("salbench.detection.syn@n=30", "gpt-4o", "mean_f1", 0.8)]
    c = one(pub("salbench.detection.syn"), rows)
    assert c.status == "compared" and "n=30" in c.reason


def test_task_not_run_metric_not_computed_and_undefined_values_say_why():
    assert one(pub(), [row("salbench.detection.syn", "gpt-4o", "mean_f1", 0.8)]).status == "task not run"
    c = one(pub(metric="f1[Focus]"), [row("salbench.detection.nat", "gpt-4o", "mean_f1", 0.4)])
    assert (c.status, c.reason) == ("metric not computed", "no row of gpt-4o")
    c = one(pub(metric="f1[Focus]"), [row("salbench.detection.nat", "gpt-4o", "f1[Focus]", math.nan,
                                          note="category never true nor predicted")])
    assert c.status == "metric not computed" and "category never true nor predicted" in c.reason
    c = one(pub(task=""), [])
    assert c.status == "no perceptbench task"


def test_human_references_are_read_from_the_named_respondent_or_any_row():
    rows = [row("closure.nat.silhouette", "human:panel", "ceiling_kappa_pairwise_mean@test", 0.45),
            row("similarity.chart.mark_color", "efficientnet-lite0", "position_floor", 1 / 3)]
    c = one(pub("closure.nat.silhouette", "human", "ceiling_kappa_pairwise_mean@test", 0.489,
                run_model="human:panel", scale=1, seed="seed000"), rows)
    assert (c.status, c.run_model) == ("compared", "human:panel")
    assert c.difference == pytest.approx(0.45 - 0.489)
    c = one(pub("similarity.chart.mark_color", "human", "position_floor", 0.35, run_model="*", scale=1,
                seed="seed000"), rows)
    assert (c.status, c.run_model) == ("compared", "efficientnet-lite0")
    assert c.difference == pytest.approx(1 / 3 - 0.35)


def test_a_count_is_compared_with_the_rows_n():
    rows = [row("salbench.detection.syn", "m", "exact_match[feature=color]", 0.9, n=810)]
    c = one(pub("salbench.detection.syn", "all", "exact_match[feature=color]#n", 810, run_model="*", scale=1), rows)
    assert (c.status, c.run_value, c.difference, c.run_ci) == ("compared", 810.0, 0.0, (None, None))


def test_a_number_over_the_papers_population_is_not_the_runs_until_the_run_has_as_many_of_its_models():
    p = pub("closure.nat.silhouette", "all", "n_above_human_accuracy", 34, run_model="all-models", scale=1,
            population="2 models", seed="seed000")
    rows = [row("closure.nat.silhouette", "all-models", "n_above_human_accuracy", 1.0),
            row("closure.nat.silhouette", "clip", "accuracy", 0.9)]
    c = one(p, rows)
    assert c.status == "different population" and c.run_value == 1.0
    assert "over its 2 models; the run has 1 of them" in c.reason
    # a second of the paper's models (seed000.toml: dinov2 -> DINOv2); the paper file names both
    rows.append(row("closure.nat.silhouette", "dinov2", "accuracy", 0.8))
    others = [pub("closure.nat.silhouette", n, "accuracy", 0.9, scale=1, seed="seed000") for n in ("CLIP", "DINOv2")]
    assert compare([p] + others, rows)[0].status == "compared"


def test_uncovered_numbers_group_by_reason_in_status_order():
    ps = [pub("salbench.detection.syn"), pub("salbench.detection.syn", section="Table A.2"),
          pub(model="Claude-sonnet"), pub(task="", section="§4.2")]
    rows = [row("salbench.detection.nat", "gpt-4o", "mean_f1", 0.4)]
    cs = compare(ps, rows)
    assert [c.status for c in cs] == ["task not run", "task not run", "model not in run", "no perceptbench task"]
    assert uncovered_groups(cs) == [
        ("model not in run", "salbench.detection.nat: Claude-sonnet", 1, "Table 1"),
        ("task not run", "salbench.detection.syn", 2, "Table 1; Table A.2"),
        ("no perceptbench task", "perceptbench has no task for it", 1, "§4.2")]
