"""The multi-seed summary (perceptbench/seeds.py, ``score --across-seeds``) on planted runs of
three seeds whose accuracies are known by hand, and its refusals."""

import csv
import math

import pytest

from perceptbench.seeds import score_seed_runs, seed_summary, write_seeds_summary
from perceptbench.tasks import get_task

from helpers.cli import cli, one_line_error
from helpers.records import plant_record, plant_records

TID = "similarity.chart.series_count@n_test=15,n_probe=0"
RIGHT = {0: 6, 1: 9, 2: 12}
"""Seed -> right answers of 15: accuracy 0.4, 0.6, 0.8 (mean 0.6, SD 0.2, min 0.4, max 0.8)."""


def planted_run(path, seed, right, model="m", version="v", tid=TID):
    """Model ``model`` answers the first ``right`` of the seed's 15 test stimuli right, the others k + 1."""
    task = get_task(tid)
    test = [s for s in task.stimuli(seed) if s.split == "test"]
    recs = [plant_record(task, stimulus_id=s.stimulus_id, model=model, model_family="encoder", readout="ridge_round",
                         response=s.ground_truth if i < right else s.ground_truth + 1, ground_truth=s.ground_truth,
                         manipulated_value=s.manipulated_value, raw_output="x", model_version=version, seed=seed,
                         run_id=f"seed{seed}", split="test")
            for i, s in enumerate(test)]
    return plant_records(path, recs).parent


@pytest.fixture
def runs(tmp_path):
    return [planted_run(tmp_path / f"s{s}", s, n) for s, n in RIGHT.items()]


def test_mean_sd_range_and_each_seed_by_hand(runs):
    by_seed = score_seed_runs(runs)
    assert list(by_seed) == [0, 1, 2]
    acc = next(r for r in seed_summary(by_seed) if r.model == "m" and r.metric == "accuracy")
    assert acc.values == pytest.approx({0: 0.4, 1: 0.6, 2: 0.8})
    # mean (0.4 + 0.6 + 0.8) / 3 = 0.6; SD sqrt((0.04 + 0 + 0.04) / 2) = 0.2
    assert (acc.mean, acc.sd, acc.low, acc.high, acc.n_seeds) == pytest.approx((0.6, 0.2, 0.4, 0.8, 3))


def test_summary_csv_and_terminal_table(runs, tmp_path):
    out = tmp_path / "seeds.csv"
    p = cli("score", *map(str, runs), "--across-seeds", "--out", str(out), torch="unimported", columns=200)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {(r["model"], r["metric"]): r for r in csv.DictReader(out.open())}
    acc = rows[("m", "accuracy")]
    assert (acc["n_seeds"], acc["mean"], acc["sd"], acc["min"], acc["max"]) == ("3", "0.6", "0.2", "0.4", "0.8")
    assert (acc["seed_0"], acc["seed_1"], acc["seed_2"]) == ("0.4", "0.6", "0.8")
    assert "headline metrics over 3 seeds" in p.stdout and "0.400-0.800" in p.stdout
    for r in runs:  # nothing was merged or written into the runs
        assert sorted(x.name for x in r.iterdir()) == ["records.jsonl"]


def test_write_keeps_nan_and_leaves_a_missing_seed_empty(tmp_path):
    from perceptbench.core.rows import ScoreRow

    rows = seed_summary({0: [ScoreRow("t", "m", "x", float("nan"), None, None, 1, 0)],
                         3: [ScoreRow("t", "m", "x", 0.5, None, None, 1, 0), ScoreRow("t", "m", "y", 1.0, None, None, 1, 0)]})
    x = rows[0]
    assert x.n_seeds == 1 and x.mean == 0.5 and math.isnan(x.sd)
    write_seeds_summary(rows, [0, 3], tmp_path / "s.csv")
    got = list(csv.reader((tmp_path / "s.csv").open()))
    assert got[1][-2:] == ["nan", "0.5"] and got[2][-2:] == ["", "1.0"]


@pytest.mark.parametrize("change, words", [
    ("same_seed", "are both seed 0"),
    ("other_model", "has model m on"),  # run a has m, run b has other: the first difference is named
    ("other_version", "is version v in"),
    ("other_settings", "has task similarity.chart.series_count@n_probe=0,n_test=12"),
])
def test_runs_that_differ_in_more_than_the_seed_are_refused(tmp_path, change, words):
    a = planted_run(tmp_path / "a", 0, 6)
    b = {"same_seed": lambda: planted_run(tmp_path / "b", 0, 9),
         "other_model": lambda: planted_run(tmp_path / "b", 1, 9, model="other"),
         "other_version": lambda: planted_run(tmp_path / "b", 1, 9, version="w"),
         "other_settings": lambda: planted_run(tmp_path / "b", 1, 9, tid="similarity.chart.series_count@n_test=12,n_probe=0"),
         }[change]()
    with pytest.raises(ValueError, match=words):
        score_seed_runs([a, b])
    p = cli("score", str(a), str(b), "--across-seeds", "--out", str(tmp_path / "s.csv"), columns=400)
    one_line_error(p, words)
    assert not (tmp_path / "s.csv").exists()


def test_report_and_merge_over_seeds_point_to_the_summary(runs, tmp_path):
    """Before: 'cannot be merged (score them separately)' and no way to summarise the seeds."""
    p = cli("report", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "r.html"), columns=400)
    one_line_error(p, "of seed 1", "--across-seeds")
    p = cli("merge", str(runs[0]), str(runs[1]), "--out", str(tmp_path / "m"), columns=400)
    one_line_error(p, "--across-seeds")
