"""Seed 000's cross-model analyses (§3, Tables A2-A3, D.1) on planted records, scored by
``perceptbench score``: each value is worked out here by hand from the planted answers and the
per-task rows the same command wrote (rank formula, pair loop, plain means)."""

import csv
import math
from itertools import combinations

import pytest

from helpers.cli import cli
from helpers.records import plant_answers, plant_records
from perceptbench.core.rundir import RunDir
from perceptbench.tasks import get_task

SIL, MARK = "closure.nat.silhouette", "similarity.chart.mark_color"
#: right answers out of the test stimuli (80 silhouettes, the rest wrong; no null)
RIGHT = {SIL: {"a": 10, "b": 30, "c": 50, "d": 75}, MARK: {"a": 60, "b": 100, "c": 20, "d": 40}}
DECLARED = {"a": {"family": "clip-like", "objective": "contrastive image-text"},
            "b": {"family": "clip-like", "objective": "contrastive image-text"},
            "c": {"family": "ssl", "objective": "self-distillation"}}  # d declares nothing


def _run(out, models, declared=None):
    recs = []
    for tid in (SIL, MARK):
        task = get_task(tid)
        stim = task.stimuli(0)
        recs += task.human_records(0, "planted", stim)
        n_test = sum(s.split == "test" for s in stim)
        for m in models:
            k = RIGHT[tid][m]
            recs += plant_answers(tid, m, {i: "right" if i < k else "wrong" for i in range(n_test)})
    plant_records(out, recs)
    rd = RunDir(out)
    rd.start(0)
    if declared:
        rd.update_run_json(lambda d: d.update(models=declared))
    p = cli("score", out, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    with open(rd.scores_csv) as f:
        return {(r["task_id"], r["model"], r["metric"]): r for r in csv.DictReader(f)}


def _v(rows, *key):
    return float(rows[key]["value"])


@pytest.fixture(scope="module")
def four(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("crossmodel") / "four", "abcd", DECLARED)


def _ranks(xs):
    return [sorted(xs).index(x) + 1 for x in xs]  # distinct values: ranks 1..n


def test_cross_task_rank_correlation_of_the_models_headline_b(four):
    b_sil = [_v(four, SIL, m, "B") for m in "abcd"]
    b_mark = [_v(four, MARK, m, "B") for m in "abcd"]
    # the planted order carries through to B: ranks 1 2 3 4 on silhouettes, 3 4 1 2 on marks
    assert _ranks(b_sil) == [1, 2, 3, 4] and _ranks(b_mark) == [3, 4, 1, 2]
    d2 = sum((x - y) ** 2 for x, y in zip(_ranks(b_sil), _ranks(b_mark)))
    rho = 1 - 6 * d2 / (4 * (4 ** 2 - 1))  # = 1 - 96/60 = -0.6
    row = four[(f"{SIL}~{MARK}", "all-models", "rank_rho[B~B]")]
    assert float(row["value"]) == pytest.approx(rho) == pytest.approx(-0.6)
    assert row["n"] == "4" and -1 <= float(row["ci_low"]) <= rho <= float(row["ci_high"]) <= 1


def test_accuracy_kappa_discordance_and_rho_on_silhouettes(four):
    acc = [_v(four, SIL, m, "accuracy") for m in "abcd"]
    assert acc == pytest.approx([RIGHT[SIL][m] / 80 for m in "abcd"])
    kap = [_v(four, SIL, m, "kappa_aggregate") for m in "abcd"]
    pairs = list(combinations(range(4), 2))
    disc = sum((acc[i] - acc[j]) * (kap[i] - kap[j]) < 0 for i, j in pairs) / len(pairs)
    assert _v(four, SIL, "all-models", "accuracy_kappa_discordance") == pytest.approx(disc, abs=1e-6)
    d2 = sum((x - y) ** 2 for x, y in zip(_ranks(acc), _ranks(kap)))
    assert _v(four, SIL, "all-models", "accuracy_kappa_rho") == pytest.approx(1 - 6 * d2 / 60, abs=1e-6)


def test_models_above_human_accuracy_and_at_or_below_the_kappa_ceiling(four):
    human = _v(four, SIL, "human:panel", "observer_accuracy_mean@test")
    ceiling = _v(four, SIL, "human:panel", "ceiling_kappa_pairwise_mean@test")
    above = [m for m in "abcd" if RIGHT[SIL][m] / 80 > human]
    assert above == ["d"]  # 75/80 = 0.94; the observers average 0.77
    at = [m for m in above if float(four[(SIL, m, "kappa_aggregate")]["ci_high"]) >= ceiling]
    below = [m for m in above if m not in at]
    assert below == ["d"]  # planted errors all on one class: d's kappa interval stays far under the ceiling
    assert _v(four, SIL, "all-models", "n_above_human_accuracy") == 1
    assert _v(four, SIL, "all-models", "n_at_kappa_ceiling") == len(at)
    assert _v(four, SIL, "all-models", "n_below_kappa_ceiling") == len(below)
    frac = _v(four, SIL, "all-models", "median_fraction_of_kappa_ceiling")
    assert frac == pytest.approx(_v(four, SIL, "d", "kappa_aggregate") / ceiling, abs=1e-5)


def test_summaries_per_declared_family_and_objective(four):
    for tid in (SIL, MARK):
        b = {m: _v(four, tid, m, "B") for m in "abcd"}
        clip = four[(tid, "all-models", "B_mean[family=clip-like]")]
        assert float(clip["value"]) == pytest.approx((b["a"] + b["b"]) / 2, abs=1e-6) and clip["n"] == "2"
        assert min(b["a"], b["b"]) - 1e-6 <= float(clip["ci_low"]) <= float(clip["ci_high"]) <= max(b["a"], b["b"]) + 1e-6
        ssl = four[(tid, "all-models", "B_mean[family=ssl]")]
        assert float(ssl["value"]) == pytest.approx(b["c"], abs=1e-6) and ssl["n"] == "1" and ssl["ci_low"] == ""
        obj = four[(tid, "all-models", "B_mean[objective=contrastive image-text]")]
        assert float(obj["value"]) == pytest.approx((b["a"] + b["b"]) / 2, abs=1e-6)
        assert (tid, "all-models", "B_mean[objective=self-distillation]") in four
        assert sorted(k[2] for k in four if k[0] == tid and "_mean[" in k[2]) == [  # d declares nothing
            "B_mean[family=clip-like]", "B_mean[family=ssl]", "B_mean[objective=contrastive image-text]",
            "B_mean[objective=self-distillation]"]


def test_ci_halfwidth_bound_beside_each_task(four):
    for tid in (SIL, MARK):
        n = int(four[(tid, "a", "null_rate")]["n"])
        row = four[(tid, "all-models", "ci_halfwidth_bound")]
        assert row["n"] == str(n) and float(row["value"]) == pytest.approx(1.96 / (2 * math.sqrt(n)), abs=1e-6)
    assert four[(SIL, "all-models", "ci_halfwidth_bound")]["n"] == "80"


def test_no_cross_model_row_for_a_single_model_run(tmp_path):
    rows = _run(tmp_path / "one", "a", {"a": DECLARED["a"]})
    assert (SIL, "a", "B") in rows
    assert not [k for k in rows if k[1] == "all-models" or "~" in k[0]]


def test_no_group_rows_without_declared_metadata(tmp_path):
    rows = _run(tmp_path / "bare", "ab")
    assert (f"{SIL}~{MARK}", "all-models", "rank_rho[B~B]") in rows
    assert not [k for k in rows if "_mean[" in k[2]]
