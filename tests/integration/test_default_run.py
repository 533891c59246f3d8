"""The main job on the embedded default model: records, scores, resume after kill -9,
determinism.  These run the real model on CPU (a few minutes in all)."""

import csv
import json
import re
import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="model extra not installed")  # the CI installs it

from perceptbench.records import SCHEMA_FIELDS, read_records
from helpers.cli import TORCH_IMPORTED, cli

BATTERY_TRIALS = {"closure.nat.silhouette": 80, "similarity.chart.mark_color": 120,
                  "similarity.chart.series_count": 150}  # 10 per k (issue 24: 40 gave 2-3 per k)
HUMAN_RECORDS = 1600 + 600  # 10 observers x 160; 5 kernels x 120


def model_records(path):
    return [r for r in read_records(path) if r.model_family != "human"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "demo"
    p = cli("run", "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout


def test_default_run_writes_valid_records_and_scores(demo):
    out, stdout = demo
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    for line in (out / "records.jsonl").read_text().splitlines():
        assert tuple(json.loads(line)) == SCHEMA_FIELDS
    mr = [r for r in recs if r.model_family != "human"]
    assert {t: sum(r.task_id == t for r in mr) for t in BATTERY_TRIALS} == BATTERY_TRIALS
    assert len(recs) - len(mr) == HUMAN_RECORDS
    for r in mr:
        assert r.trial_id == f"{r.task_id}|{r.stimulus_id}|{r.model}|rep{r.rep}"
        assert r.model == "efficientnet-lite0" and r.model_family == "encoder"
        assert r.run_meta.model_version.startswith("sha256:5793")
        assert len(r.run_meta.model_extra["stimulus_sha256"]) == 64
        assert r.prompt_id.startswith("readout.") and len(r.prompt_hash) == 8 and r.raw_output
    with open(out / "scores.csv") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["task_id", "model", "metric", "value", "ci_low", "ci_high", "n", "n_null"]
    got = {(r["task_id"], r["model"], r["metric"]) for r in rows}
    for t, m in [("closure.nat.silhouette", "accuracy"), ("closure.nat.silhouette", "B"),
                 ("closure.nat.silhouette", "kappa_aggregate"), ("closure.nat.silhouette", "kappa_pairwise"),
                 ("similarity.chart.mark_color", "B"), ("similarity.chart.mark_color", "position_floor"),
                 ("similarity.chart.series_count", "accuracy"), ("similarity.chart.series_count", "capacity_k")]:
        assert (t, "efficientnet-lite0", m) in got
    panel = {r["metric"]: r for r in rows if r["model"] == "human:panel"}
    assert round(float(panel["ceiling_kappa_pairwise_mean@all"]["value"]), 3) == 0.476
    assert "ceiling_kappa_pairwise_mean@test" in panel and panel["ceiling_kappa_pairwise_mean@test"]["n"] == "80"
    acc = next(r for r in rows if r["model"] == "efficientnet-lite0" and r["metric"] == "accuracy"
               and r["task_id"] == "closure.nat.silhouette")
    assert float(acc["ci_low"]) <= float(acc["value"]) <= float(acc["ci_high"])
    assert "ceiling = mean pairwise observer kappa@test" in stdout  # the headline names its reference


def test_score_recomputes_identical_table_without_torch(demo, tmp_path):
    out, _ = demo
    # each command in its own process: exit 0, and TORCH_IMPORTED (97) if it imported torch
    p = cli("score", str(out / "records.jsonl"), "--out", str(tmp_path / "s.csv"), torch="unimported", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    p = cli("tasks", torch="unimported", columns=None)
    assert p.returncode != TORCH_IMPORTED, p.stderr  # its exit status is not checked, only torch
    p = cli("report", str(out), "--out", str(tmp_path / "r.html"), torch="unimported", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "s.csv").read_text() == (out / "scores.csv").read_text()


def _count_model_lines(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(b'"model_family":"encoder"' in ln for ln in path.read_bytes().split(b"\n"))


def test_kill_9_midway_then_resume_same_results_and_other_seed_refused(tmp_path, demo):
    """kill -9 mid-run, resume; the result equals an uninterrupted run (records and scores), which
    is also the same-seed determinism check; another --seed into that directory is refused."""
    out = tmp_path / "killed"
    rec = out / "records.jsonl"
    proc = cli("run", "--out", str(out), "--no-progress", "--batch-size", "4", columns=None, background=True)
    deadline = time.time() + 600
    while _count_model_lines(rec) < 8 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = rec.read_bytes()
    n_partial = _count_model_lines(rec)
    total = sum(BATTERY_TRIALS.values())
    assert 0 < n_partial < total, f"not a partial state: {n_partial} of {total}"
    done_before = {r.trial_id: r for r in read_records(rec)}
    p = cli("run", "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"skipped {n_partial} finished trials" in p.stdout
    recs = read_records(rec, allow_torn_tail=False)
    ids = [r.trial_id for r in recs]
    assert len(ids) == len(set(ids)) == total + HUMAN_RECORDS
    complete = partial[:partial.rfind(b"\n") + 1]
    assert rec.read_bytes().startswith(complete)  # finished records untouched, not recomputed
    for r in recs:
        if r.trial_id in done_before:
            assert r == done_before[r.trial_id]
    # the resumed run answers like an uninterrupted one
    ref = {r.trial_id: (r.response, r.ground_truth) for r in read_records(demo[0] / "records.jsonl")}
    assert {r.trial_id: (r.response, r.ground_truth) for r in recs} == ref
    # same seed, same results: this second run (two processes) scores byte-identically to the first
    assert (out / "scores.csv").read_text() == (demo[0] / "scores.csv").read_text()
    # another seed into the same directory is refused, not mixed
    p = cli("run", "--out", str(out), "--seed", "1", "--no-progress")
    assert p.returncode != 0 and "seed 0" in p.stderr


def test_a_run_whose_output_is_not_a_terminal_prints_plain_progress_lines(tmp_path):
    # stdout is a pipe here, as in a log file or a batch job: no bars at the end, lines as it goes
    p = cli("run", "--out", str(tmp_path / "r"), "--task", "similarity.chart.mark_color", "--stimulus", "mark_0-1-2",
            "--stimulus", "mark_0-1-3", "--batch-size", "1", "--progress-every", "0.001", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    # progress goes to standard error, so `run > summary.txt` holds the summary and tables alone
    assert not [ln for ln in p.stdout.splitlines() if ln.startswith(("progress: ", "loading "))], p.stdout
    assert re.search(r": wrote \d+ records \(2 model trials", p.stdout), p.stdout
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("progress: ")]
    task = "similarity.chart.mark_color | efficientnet-lite0"
    assert lines[0].startswith("progress: loading efficientnet-lite0 ...") or lines[0].startswith(f"progress: {task}")
    assert any(ln.startswith(f"progress: {task} 1/2 (50%) ") and " ETA " in ln for ln in lines), lines
    assert lines[-1].startswith(f"progress: {task} 2/2 (100%) ") and lines[-1].endswith(" done")
    assert re.search(r"━+ \d+/\d+ ", p.stdout + p.stderr) is None  # no rich bar drawn into the log


def test_run_prints_its_tasks_in_the_order_it_was_given_as_the_report_does(tmp_path):
    # --task order mark_color, then closure: not the alphabetical order score uses
    p = cli("run", "--out", str(tmp_path / "r"), "--task", "similarity.chart.mark_color", "--task",
            "closure.nat.silhouette", "--stimulus", "mark_0-1-2", "--stimulus", "silh_airplane1", "--no-progress",
            columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    mark = p.stdout.index("similarity.chart.mark_color: value [95% bootstrap CI]")
    closure = p.stdout.index("closure.nat.silhouette: value [95% bootstrap CI]")
    assert mark < closure, p.stdout
