"""Known-answer tests for the third walk-through's stumbles (issue stumbles2): paired
differences on the stimuli both models answered; export/score --out never overwrite foreign
files; the all-null flag on SalBench; no numpy warnings with one observer; SalBench's
majority-answer floor; seven retrieval sentences on synthetic images; resume/show/Ray output.
Records are planted with make_record on the tasks' real stimuli (seed 0)."""

from __future__ import annotations

import numpy as np
import pytest

from perceptbench.tasks import get_task
from perceptbench.tasks.base import make_record

MARK = "similarity.chart.mark_color"


def _plant(tid: str, model: str, answers: dict) -> list:
    """One VLM record per (stimulus index -> 'right' | 'wrong' | None | a label list) on ``tid``'s test stimuli, seed 0."""
    task = get_task(tid)
    test = [s for s in task.stimuli(0) if s.split == "test"]
    opts = list(task.options())
    out = []
    for i, how in answers.items():
        s = test[i]
        resp = (how if isinstance(how, list) else None if how is None else s.ground_truth if how == "right"
                else next(o for o in opts if o != s.ground_truth))
        out.append(make_record(task, stimulus_id=s.stimulus_id, model=model, model_family="vlm", readout="vlm_prompt",
                               response=resp, ground_truth=s.ground_truth, manipulated_value=s.manipulated_value,
                               raw_output="no answer" if resp is None else str(resp), prompt_id=task.prompt_id,
                               prompt_hash=task.prompt_hash, model_version="planted", seed=0, run_id="planted",
                               split=s.split, parse={"rule": "synthetic", "ambiguous": False, "mode": "default"}))
    return out


def test_paired_difference_is_on_the_stimuli_both_answered():
    from perceptbench.metrics.bootstrap import resample_indices
    from perceptbench.reports.paired import paired_differences

    # a: right on 0-5, wrong on 6-9; b: null on 0-3, wrong on 4-5, right on 6-9.
    a = _plant(MARK, "a", {**{i: "right" for i in range(6)}, **{i: "wrong" for i in range(6, 10)}})
    b = _plant(MARK, "b", {**{i: None for i in range(4)}, 4: "wrong", 5: "wrong", **{i: "right" for i in range(6, 10)}})
    diffs, notes = paired_differences(a + b)
    assert notes == []
    (d,) = diffs
    # common answered stimuli 4-9 (n=6): a right on 4,5 -> 2/6; b right on 6-9 -> 4/6; a - b = -1/3
    # (the old code subtracted a's B on 10 stimuli, 0.6, from b's on 6, 0.667: -0.067)
    assert (d.a, d.b, d.metric, d.n) == ("a", "b", "B", 6)
    assert d.diff == pytest.approx(-1 / 3, abs=1e-12)
    assert "6 stimuli both answered" in d.basis and "nulls excluded" in d.basis
    # the interval: the same resampled common stimuli for both models in every draw
    xa = np.array([1, 1, 0, 0, 0, 0.0])
    xb = np.array([0, 0, 1, 1, 1, 1.0])
    idx = resample_indices(6, 1000, 0)
    lo, hi = np.percentile(xa[idx].mean(1) - xb[idx].mean(1), [2.5, 97.5])
    assert (d.low, d.high) == pytest.approx((lo, hi), abs=1e-12)


def test_disjoint_answered_sets_give_no_number():
    from perceptbench.reports.paired import paired_differences

    # a answers 0-4 and is null on 5-9, b the reverse: no stimulus both answered
    a = _plant(MARK, "a", {**{i: "right" for i in range(5)}, **{i: None for i in range(5, 10)}})
    b = _plant(MARK, "b", {**{i: None for i in range(5)}, **{i: "right" for i in range(5, 10)}})
    diffs, notes = paired_differences(a + b)
    assert diffs == []
    assert len(notes) == 1 and "only 0 stimuli both answered" in notes[0] and "a - b" in notes[0]
    # 4 common answered stimuli (< 5): still no number
    c = _plant(MARK, "c", {**{i: "right" for i in range(4)}, **{i: None for i in range(4, 10)}})
    diffs, notes = paired_differences(a + c)
    assert diffs == [] and "only 4 stimuli both answered" in notes[0]


def _invoke(*args):
    from typer.testing import CliRunner

    from perceptbench.cli import app

    res = CliRunner().invoke(app, [str(a) for a in args])
    return res.exit_code, " ".join(res.output.split())  # the console wraps long paths


@pytest.fixture()
def planted_run(tmp_path):
    from perceptbench.records import RecordStore

    d = tmp_path / "run"
    with RecordStore(d / "records.jsonl") as store:
        store.append(_plant(MARK, "a", {i: "right" if i % 2 else "wrong" for i in range(12)}))
    return d


def test_export_and_score_refuse_files_they_did_not_write(planted_run, tmp_path):
    out = tmp_path / "x"
    out.mkdir()
    (out / "scores.parquet").write_text("my precious")
    assert _invoke("score", planted_run)[0] == 0
    rc, text = _invoke("export", planted_run, "--format", "parquet", "--out", out)
    assert rc == 2 and "scores.parquet exists and is not a perceptbench" in text and "refusing" in text
    assert text.count("error:") == 1 and "Traceback" not in text
    assert (out / "scores.parquet").read_text() == "my precious" and not (out / "records.parquet").exists()
    (out / "scores.parquet").unlink()
    assert _invoke("export", planted_run, "--out", out)[0] == 0
    assert _invoke("export", planted_run, "--out", out)[0] == 0  # its own files: overwritten
    # an existing file as --out: one clear line, no raw errno
    rc, text = _invoke("export", planted_run, "--out", out / "scores.parquet")
    assert rc == 2 and "is a file" in text and "Errno" not in text
    precious = tmp_path / "precious.csv"
    precious.write_text("my precious\n")
    rc, text = _invoke("score", planted_run, "--out", precious)
    assert rc == 2 and "precious.csv exists and is not a perceptbench scores table" in text
    assert precious.read_text() == "my precious\n" and not precious.with_suffix(".json").exists()
    mine = tmp_path / "mine.csv"
    assert _invoke("score", planted_run, "--out", mine)[0] == 0
    assert _invoke("score", planted_run, "--out", mine)[0] == 0  # a table it wrote: overwritten
    (tmp_path / "other.json").write_text('{"precious": 1}')  # score also writes the .json beside the csv
    rc, text = _invoke("score", planted_run, "--out", tmp_path / "other.csv")
    assert rc == 2 and "other.json exists" in text and not (tmp_path / "other.csv").exists()


SAL = "salbench.detection.syn@n=60,n_probe=0"


def test_all_null_salbench_cell_is_flagged_like_every_family():
    from perceptbench.reports.headline import cell_text, headline_rows
    from perceptbench.scoring import score_records

    # 12 SalBench stimuli, every answer null: exact_match = 0 on n = 12 (a null is an empty prediction), 12/12 null;
    # mark colour, every answer null: B undefined, n = 0
    recs = _plant(SAL, "v", {i: None for i in range(12)}) + _plant(MARK, "v", {i: None for i in range(12)})
    heads = {(h.task_id, h.metric): h for h in headline_rows(score_records(recs)) if h.model == "v"}
    sal, mark = heads[(SAL, "exact_match")], heads[(MARK, "B")]
    assert (sal.value, sal.n, sal.trials) == (0.0, 12, (12, 12))
    assert "no parseable answers" in sal.flags and "no parseable answers" in mark.flags
    assert cell_text(sal).endswith("· all null") and "12/12 null" not in cell_text(sal)
    # one parseable answer among 12: no such flag, the null mark instead
    recs = _plant(SAL, "w", {0: "right", **{i: None for i in range(1, 12)}})
    (h,) = [h for h in headline_rows(score_records(recs)) if h.model == "w" and h.metric == "exact_match"]
    assert "no parseable answers" not in h.flags and cell_text(h).endswith("· 11/12 null")


def test_scoring_with_one_human_observer_emits_no_numpy_warning():
    import math
    import warnings

    from perceptbench.metrics.error_consistency import leave_one_out_ceiling
    from perceptbench.scoring import score_records

    sil = "closure.nat.silhouette"
    task = get_task(sil)
    humans = task.human_records(0, "planted", task.stimuli(0))
    first = sorted({r.model for r in humans if r.model.startswith("human:subject")})[0]
    one = [r for r in humans if r.model == first]  # a torn file: one observer left
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # docs/metrics.md: scoring emits no numpy warnings
        # one observer: the leave-one-out panel (the others' mean) is empty, 0/0 -> NaN, the documented answer
        assert math.isnan(leave_one_out_ceiling(np.array([[1.0, 0.0, 1.0]]))[0])
        rows = score_records(one + _plant(sil, "m", {i: "right" for i in range(10)}))
    loo = [r for r in rows if r.model == first and r.metric.startswith("kappa_loo")]
    assert loo and all(math.isnan(r.value) for r in loo)


def test_salbench_exact_match_floor_is_the_majority_answer():
    from perceptbench.reports.headline import headline_rows
    from perceptbench.scoring import score_records
    from perceptbench.tasks.salbench import majority_answer_floor

    # truth sets: 3 x {Color}, 5 x {Orientation}, 2 x {Size, Color} -> a constant "Orientation" matches 5/10 = 0.5
    truths = [["Color"]] * 3 + [["Orientation"]] * 5 + [["Size", "Color"], ["Color", "Size"]]
    assert majority_answer_floor(truths) == (0.5, ["Orientation"])
    # a tie (2 x {Color}, 2 x {Size}) -> 2/4 = 0.5, the sorted-first answer
    assert majority_answer_floor([["Size"], ["Color"], ["Size"], ["Color"]]) == (0.5, ["Color"])
    assert majority_answer_floor([])[1] == []
    # a constant answerer on 8 planted stimuli (test stimuli 0,5,10 Color; 20,25,30,35 Orientation; 40 Size):
    # it answers "Orientation" everywhere -> exact match 4/8 = 0.5 = the floor, flagged "≤ floor"
    idx = [0, 5, 10, 20, 25, 30, 35, 40]
    recs = _plant(SAL, "const", {i: ["Orientation"] for i in idx})
    floor = 0.5
    rows = {r.metric: r for r in score_records(recs) if r.model == "const"}
    assert rows["exact_match"].value == pytest.approx(floor) == rows["exact_match_floor"].value
    (h,) = [h for h in headline_rows(rows.values()) if h.metric == "exact_match"]
    assert h.floor == pytest.approx(floor) and "≤ floor" in h.flags


def test_resume_says_how_many_human_records_were_already_written(tmp_path):
    from perceptbench.records import read_records

    sid = [s for s in get_task(MARK).stimuli(0) if s.split == "test"][0].stimulus_id
    args = ("run", "--task", MARK, "--stimulus", sid, "--model", "efficientnet-lite0", "--out", tmp_path / "r",
            "--no-progress")
    rc, first = _invoke(*args)
    assert rc == 0, first
    n_h = sum(r.model_family == "human" for r in read_records(tmp_path / "r" / "records.jsonl"))
    assert n_h > 0 and "human records already written" not in first
    rc, again = _invoke(*args)
    # the rerun writes nothing: 1 model trial skipped, and the n_h human records were already there
    assert rc == 0 and "wrote 0 records" in again
    assert f"skipped 1 finished trials ({n_h} human records already written)" in again, again


def test_show_suggests_model_trials_not_human_records(tmp_path):
    from perceptbench.records import RecordStore

    d = tmp_path / "run"
    task = get_task(MARK)
    humans = task.human_records(0, "planted", task.stimuli(0))
    with RecordStore(d / "records.jsonl") as store:  # human records first, as a run writes them
        store.append(humans + _plant(MARK, "a", {0: "right", 1: "wrong"}))
    rc, text = _invoke("show", d, "nope|x")
    # the two model trials are suggested (the listing's ids), no human kernel record
    assert rc == 2 and "no trial 'nope|x'" in text and "|a|rep0" in text and "human:" not in text, text
    assert "2 model trials" in text


def test_ray_init_silences_rays_own_log_lines(monkeypatch, tmp_path):
    """run_plan starts Ray with its driver logger at ERROR (ray.init's documented logging_level) and
    without worker log forwarding: Ray's "INFO worker.py -- Started a local Ray instance" and token-auth
    WARNING lines no longer reach the terminal (checked by hand on a real local Ray: stderr empty)."""
    import logging

    ray = pytest.importorskip("ray", reason="the ray extra is not installed")  # .ci/run installs it
    from perceptbench.executors import ray_executor

    seen = {}

    class Stop(Exception):
        pass

    def fake_init(**kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    with pytest.raises(Stop):
        ray_executor.run_plan([], store=None, seed=0, run_id="r", batch_size=None, out=tmp_path, cache_mode="off",
                              extra_meta=dict, gate=lambda *a: None)
    assert seen["logging_level"] == logging.ERROR and seen["log_to_driver"] is False


def test_no_paired_difference_for_encoder_settings_the_scorer_skips():
    from perceptbench.reports.paired import paired_differences

    # encoder answers recorded (by an older run) for shots=3: scored as `skipped`, so never compared
    tid = "salbench.detection.syn@n=60,n_probe=6,shots=3"
    recs = [r.model_copy(update={"readout": "linear_probe", "model_family": "encoder"})
            for m in ("e1", "e2") for r in _plant(tid, m, {i: "right" for i in range(8)})]
    assert paired_differences(recs) == ([], [])
    # the same answers at shots=0 are compared: both right on 8 stimuli -> difference 0 on n = 8
    base = "salbench.detection.syn@n=60,n_probe=0"
    recs = [r.model_copy(update={"readout": "linear_probe", "model_family": "encoder"})
            for m in ("e1", "e2") for r in _plant(base, m, {i: "right" for i in range(8)})]
    (d,), _ = paired_differences(recs)
    assert (d.diff, d.n) == (0.0, 8)


def test_synthetic_retrieval_ranks_seven_sentences_as_documented():
    """docs/salbench.md §6: all seven category sentences are ranked on synthetic images too, so
    chance on single-label stimuli is 1/7 (top-1) and 3/7 (top-3), not 1/3 and 1."""
    import json

    from perceptbench.scoring import score_records
    from perceptbench.tasks.salbench import SEVEN

    cos = {c: 0.1 * i for i, c in enumerate(SEVEN)}  # "Pattern" ranks first: never a synthetic truth
    recs = [r.model_copy(update={"readout": "zero_shot_retrieval", "model_family": "encoder",
                                 "raw_output": json.dumps({"cosine": cos})})
            for r in _plant(SAL, "clip", {i: ["Pattern"] for i in range(6)})]
    rows = {r.metric: r.value for r in score_records(recs) if r.model == "clip"}
    # top-1 chance 1/7 = 0.143, top-3 3/7 = 0.429; the 6 stimuli are all Color, the ranking Pattern > Location > Size misses them
    assert rows["retrieval_chance_top1"] == pytest.approx(1 / 7) and rows["retrieval_chance_top3"] == pytest.approx(3 / 7)
    assert rows["retrieval_top3"] == 0.0
