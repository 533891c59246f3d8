"""`perceptbench paper SEED RUN`: a paper's published numbers beside a run's (issue 22 item 6)."""

from __future__ import annotations

import csv
import io
import json
import os
import re

import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.tasks import get_task

from helpers.cli import cli, one_line_error
from helpers.records import plant_record, plant_records


def _write_scores(run, rows):
    import dataclasses

    (run / "scores.json").write_text(json.dumps([dataclasses.asdict(r) for r in rows]))
    later = os.stat(run / "records.jsonl").st_mtime + 1
    os.utime(run / "scores.json", (later, later))


@pytest.fixture
def planted_run(tmp_path):
    """A run of two SalBench models (one declared as GPT-4o in run.json, one named like a roster
    entry) whose score rows are planted (the published numbers of seed 001 are compared with them)."""
    run = tmp_path / "run"
    task = get_task("salbench.detection.nat")
    plant_records(run, [plant_record(task, stimulus_id="o3_0001", response=["Color"], ground_truth=["Color"],
                                     model="mine", manipulated_value=3)])
    (run / "run.json").write_text(json.dumps({"seed": 0, "package_version": "0.1.0", "models": {
        "mine": {"spec": "openai:gpt-4o", "revision": "unpinned", "roster": None, "seed_name": "GPT-4o"}}}))
    _write_scores(run, [
        ScoreRow("salbench.detection.nat", "mine", "mean_f1", 0.5, 0.45, 0.55, 2001, 0),
        ScoreRow("salbench.detection.nat", "mine", "exact_match", 0.4, 0.35, 0.45, 2001, 0),
        ScoreRow("salbench.detection.nat", "qwen2-vl-2b", "mean_f1", 0.25, None, None, 2001, 0),
        ScoreRow("salbench.detection.nat@shots=3", "mine", "mean_f1", 0.3, None, None, 2001, 0),
    ])
    return run


def test_paper_prints_published_numbers_beside_the_runs_and_what_it_cannot_cover(planted_run):
    p = cli("paper", "seed001", planted_run, columns=250, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "seed001: 2604 published numbers vs run" in out
    # Table 1: GPT-4o NAT detection 0-shot F1 47.6 -> run 0.500, difference +0.024
    line = next(l for l in out.splitlines() if "GPT-4o -> mine" in l and "mean_f1" in l and "0.476" in l)
    assert "0.500 [0.450, 0.550]" in line and "0.024" in line and "compared" in line
    # 3-shot: 38.9 -> 0.300
    assert any("0.389" in l and "0.300" in l and "-0.089" in l for l in out.splitlines())
    # Qwen2-VL-1.5B (Table 1) is the run's qwen2-vl-2b by the seed001 roster: 19.2 -> 0.250
    assert any("Qwen2-VL-1.5B -> qwen2-vl-2b" in l and "0.192" in l and "0.058" in l for l in out.splitlines())
    for why in ("task not run", "model not in run", "metric not computed", "different setting",
                "no perceptbench task"):
        assert why in out
    assert "salbench.detection.nat: Claude-sonnet" in out  # grouped: one line per task and paper model
    assert "the run's tasks: salbench.detection.nat, salbench.detection.nat@shots=3; its models: mine, qwen2-vl-2b" in out
    every = cli("paper", "seed001", planted_run, "--all", columns=250, torch="unimported").stdout
    # --all: one line per number: Claude-sonnet on NAT detection = Table 1 (1) + Table A.1 (exact match, mean F1, 7 F1s)
    assert sum("Claude-sonnet" in l and "model not in run" in l for l in every.splitlines()) == 1 + 9


def test_paper_json_and_csv_give_every_number_with_its_status(planted_run):
    j = cli("paper", "1", planted_run, "--format", "json", torch="unimported")
    assert j.returncode == 0, j.stdout
    rows = json.loads(j.stdout)
    assert len(rows) == 2604
    got = next(r for r in rows if r["section"] == "Table A.1 (appendix C)" and r["paper_model"] == "GPT-4o"
               and r["metric"] == "exact_match" and r["settings"] == "shots=0" and r["task_id"] == "salbench.detection.nat")
    assert (got["paper_value"], got["run_value"], got["status"], got["run_model"]) == (45.2, 0.4, "compared", "mine")
    assert got["difference"] == pytest.approx(0.4 - 0.452)
    c = cli("paper", "seed001", planted_run, "--format", "csv", torch="unimported")
    table = list(csv.DictReader(io.StringIO(c.stdout)))
    assert len(table) == 2604 and {r["status"] for r in table} >= {"compared", "task not run", "model not in run"}
    assert [r["difference"] for r in table if r["status"] == "task not run"][0] == ""


def test_paper_on_a_run_without_any_of_its_tasks_says_so(planted_run):
    p = cli("paper", "seed002", planted_run, columns=250, torch="unimported")
    assert p.returncode == 0
    assert "the run covers none of them" in p.stdout and "vsi.pope" in p.stdout


def test_paper_refuses_an_unknown_paper_or_format_in_one_line(planted_run, tmp_path):
    one_line_error(cli("paper", "seed009", planted_run), "no published numbers for 'seed009'", "seed000")
    one_line_error(cli("paper", "seed000", planted_run, "--format", "xml"), "--format 'xml'")
    one_line_error(cli("paper", "seed000", tmp_path / "nowhere"), "no such run directory")


def test_paper_table_keeps_task_ids_whole_and_says_what_a_floor_row_is_about(tmp_path):
    """Before: the covered table folded task ids inside a narrow column ('similarity.c' /
    'hart.mark_co') and the position-floor row read 'human -> efficientnet-lite0'."""
    run = tmp_path / "run"
    mc = "similarity.chart.mark_color"
    plant_records(run, [plant_record(get_task(mc), stimulus_id="t0001", response=1, ground_truth=1, model="enc")])
    (run / "run.json").write_text(json.dumps({"seed": 0, "package_version": "0.1.0"}))
    _write_scores(run, [ScoreRow(mc, "enc", "position_floor", 0.333, None, None, 120, 0),
                        ScoreRow(mc, "enc", "B", 0.52, 0.42, 0.61, 120, 0)])
    p = cli("paper", "seed000", run, columns=100, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "Mark colour odd-one-out (similarity.chart.mark_color)" in out  # the task names its table, whole
    from perceptbench.tasks.registry import TASKS

    ids = re.findall(r"(?:similarity|closure)\.[\w.]*", out)
    assert ids and all(i in TASKS for i in ids), ids  # every task id whole, never folded inside a column
    wide = cli("paper", "seed000", run, columns=250, torch="unimported").stdout
    line = next(l for l in wide.splitlines() if "position_floor" in l and "0.350" in l)
    assert "any respondent (the row of enc)" in line and "human ->" not in line
