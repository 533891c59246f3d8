"""A newcomer's rough edges: --out paths, empty record files, validate's problem count,
several runs, render's default folder, Ctrl-C during a run, help texts, CI formatting."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from perceptbench.cli import format_ci, format_value
from perceptbench.runner import RunConfig, run

TASK = "similarity.chart.mark_color"


def cli(*args, cwd=None, **env):
    return subprocess.run([sys.executable, "-m", "perceptbench.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "COLUMNS": "250", **env})


def one_line_error(p, *needles):
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    out = p.stdout.strip()
    assert out.startswith("error:") and all(n in out for n in needles), out


@pytest.fixture(scope="module")
def human_runs(tmp_path_factory, mirror):
    """Two run directories of seed 0 holding the (identical) human records of mark_color."""
    base = tmp_path_factory.mktemp("runs")
    for name in ("a", "b"):
        run(RunConfig(out=base / name, tasks=[TASK], models=[]), progress=False)
    return base / "a", base / "b"


def test_score_out_existing_directory_is_one_line_and_leaves_no_tmp(tmp_path, human_runs):
    target = tmp_path / "runs"
    target.mkdir()
    p = cli("score", str(human_runs[0] / "records.jsonl"), "--out", str(target))
    one_line_error(p, "--out", "directory", "scores CSV file")
    assert sorted(os.listdir(tmp_path)) == ["runs"] and not os.listdir(target)


def test_render_and_run_out_file_are_one_line(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    one_line_error(cli("render", TASK, "--out", str(f), "--limit", "1"), "--out", "must be a directory")
    one_line_error(cli("run", "--out", str(f), "--task", TASK, "--no-progress"), "--out", "must be a directory")
    one_line_error(cli("run", "--out", str(f / "sub"), "--task", TASK, "--no-progress"), "--out", "is a file")
    assert f.read_text() == "x"


def test_render_default_does_not_litter_the_working_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    p = cli("render", TASK, "--limit", "2", cwd=work, PERCEPTBENCH_CACHE=str(tmp_path / "cache"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.listdir(work) == []
    folder = tmp_path / "cache" / "stimuli" / f"{TASK}-seed0"
    assert str(folder) in p.stdout.replace("\n", "")
    assert len(json.loads((folder / "index.json").read_text())) == 2


def test_empty_records_file_is_an_error_for_score_and_validate(tmp_path):
    empty = tmp_path / "records.jsonl"
    empty.write_text("")
    one_line_error(cli("score", str(empty)), "holds no trial records")
    p = cli("validate", str(empty))
    assert p.returncode == 2 and "holds no trial records" in p.stdout and "1 problem(s)" in p.stdout
    assert not (tmp_path / "scores.csv").exists()


def test_validate_says_how_many_problems_are_not_shown(tmp_path, human_runs):
    data = (human_runs[0] / "records.jsonl").read_bytes()
    n = data.count(b"\n")
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(data + data)
    p = cli("validate", str(dup))
    assert p.returncode == 2
    assert f"{n} valid records, {n} problem(s) ({n - 50} more not shown)" in p.stdout


def test_score_and_merge_several_runs(tmp_path, human_runs):
    a, b = human_runs
    one_line_error(cli("score", str(a), str(b)), "--out is required")
    p = cli("score", str(a), str(b), "--out", str(tmp_path / "both.csv"))
    assert p.returncode == 0, p.stdout + p.stderr
    single = cli("score", str(a), "--out", str(tmp_path / "a.csv"))
    assert single.returncode == 0
    assert (tmp_path / "both.csv").read_text() == (tmp_path / "a.csv").read_text()
    p = cli("merge", str(a), str(b), "--out", str(tmp_path / "m"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "m" / "records.jsonl").read_bytes().count(b"\n") == \
        (a / "records.jsonl").read_bytes().count(b"\n")
    assert json.loads((tmp_path / "m" / "run.json").read_text())["seed"] == 0
    assert cli("validate", str(tmp_path / "m")).returncode == 0
    one_line_error(cli("merge", str(a), "--out", str(tmp_path / "m")), "--out", "not empty")


def test_merge_refuses_conflicts_naming_trial_and_files(tmp_path, human_runs):
    a = human_runs[0]
    lines = (a / "records.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["raw_output"] = "changed"
    c = tmp_path / "c"
    c.mkdir()
    (c / "records.jsonl").write_text(json.dumps(rec) + "\n")
    p = cli("merge", str(a), str(c), "--out", str(tmp_path / "m"))
    one_line_error(p, rec["trial_id"], str(a / "records.jsonl"), str(c / "records.jsonl"), "raw_output")
    assert not (tmp_path / "m").exists()


def test_help_texts_for_all_rows_and_render_seed():
    p = cli("score", "--help")
    assert "headline metrics" in p.stdout.split("--all-rows")[1][:200]
    p = cli("render", "--help")
    assert "The run seed: stimuli, splits" in p.stdout.split("--seed")[1][:200]


@pytest.mark.parametrize("low, high, shown", [
    (float("nan"), float("nan"), ""), (None, None, ""), (0.1, float("nan"), ""), (0.12345, 0.5, "[0.123, 0.500]")])
def test_ci_is_never_nan(low, high, shown):
    assert format_ci(low, high) == shown


def test_values_have_one_format():
    assert format_value("B", float("nan")) == "undefined"
    assert format_value("B", 1.0) == "1.000" and format_value("n_differ_min", 16.0) == "16"


def _sigint_as_in_a_terminal():
    """Child setup: SIGINT at its default, as in a terminal where Ctrl-C is pressed.  A test run
    started in the background by a non-interactive shell inherits SIGINT *ignored*, and Python then
    never raises KeyboardInterrupt, so the run would finish instead of stopping."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig, rc, said", [(signal.SIGINT, 130, "interrupted:"),
                                           (signal.SIGTERM, 143, "terminated (SIGTERM):")])
def test_stopping_a_run_says_what_was_written_and_how_to_resume(tmp_path, mirror, sig, rc, said):
    """Ctrl-C (SIGINT) and a scheduler's stop (SIGTERM; before: no message at all) mid-run: exit
    130 / 143, one line saying how many records were written and how to resume, every written line a
    whole valid record."""
    from perceptbench.records import read_records

    out = tmp_path / "r"
    cmd = [sys.executable, "-m", "perceptbench.cli", "run", "--out", str(out), "--task", "closure.nat.silhouette",
           "--batch-size", "1", "--no-progress"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "COLUMNS": "250"},
                            preexec_fn=_sigint_as_in_a_terminal)
    records = out / "records.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if records.exists() and records.stat().st_size > 0:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be stopped"
    proc.send_signal(sig)
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode == rc, text
    n = records.read_bytes().count(b"\n")
    assert said in text and f"({n} in {records})" in text.replace("\n", "")
    assert "Rerun the same command to resume" in text and "Traceback" not in text
    assert len(read_records(records)) == n  # every written line is a whole, valid record


@pytest.mark.parametrize("columns", ["40", "80", "120", "180", "400"])
def test_tasks_ids_stay_whole_at_any_width(columns):
    from perceptbench.tasks.registry import NOT_RUNNABLE, list_tasks

    p = cli("tasks", COLUMNS=columns)
    assert p.returncode == 0, p.stderr
    tokens = {tok.strip("│┃ ") for line in p.stdout.splitlines() for tok in line.split()}
    ids = [c.base_id for c in list_tasks()] + list(NOT_RUNNABLE) + ["similarity.chart.mark_color@kernel=l5"]
    missing = [i for i in ids if i not in tokens]
    assert not missing, f"ids broken at COLUMNS={columns}: {missing}"
