"""The stumbles of a fresh user's README walk-through (issue 11 follow-up): model x task
compatibility checked before the run directory exists, --out refusals for run and report,
and the report / score texts that misled (each test failed before its fix)."""

import os
import subprocess
import sys

import pytest

TASK = "similarity.chart.mark_color"


def cli(*args, cwd=None, **env):
    return subprocess.run([sys.executable, "-m", "perceptbench.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "COLUMNS": "250", **env})


def one_line_error(p, *needles):
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    out = " ".join(p.stdout.split())
    assert out.startswith("error:") and all(n in out for n in needles), out


# item 3 ------------------------------------------------------------------------------------

def test_encoder_on_vsi_task_writes_nothing(tmp_path, mirror):
    """Before: a progress bar, then 'is an image encoder', leaving run.json and an empty records.jsonl."""
    pytest.importorskip("torch")
    out = tmp_path / "x3"
    p = cli("run", "--task", "vsi.salbench.syn@n=2", "--out", str(out), "--no-progress")
    one_line_error(p, "vsi.salbench.syn", "efficientnet-lite0 is an image encoder")
    assert not out.exists()


# item 5 ------------------------------------------------------------------------------------

def test_run_out_foreign_nonempty_directory_is_refused(tmp_path):
    """Before: accepted silently, run files written beside the user's notes.txt."""
    d = tmp_path / "notarun"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    p = cli("run", "--out", str(d), "--task", TASK, "--model", "timm:no_such_arch_xyz", "--no-progress")
    one_line_error(p, "--out", "did not write", "notes.txt")
    assert sorted(os.listdir(d)) == ["notes.txt"] and (d / "notes.txt").read_text() == "mine"


def test_run_out_empty_directory_and_run_directory_are_accepted(tmp_path, mirror):
    from perceptbench.cli import _check_out

    empty = tmp_path / "empty"
    empty.mkdir()
    _check_out(empty, "run")  # no exception
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "records.jsonl").write_text("")
    (rundir / "scores.csv").write_text("")
    _check_out(rundir, "run")


# item 4 ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def human_run(tmp_path_factory, mirror):
    from perceptbench.runner import RunConfig, run

    out = tmp_path_factory.mktemp("hr") / "run"
    run(RunConfig(out=out, tasks=[TASK], models=[]), progress=False)
    return out


def test_report_out_directory_names_report_html(tmp_path, human_run):
    """Before: '--out must be the path of the scores CSV file' (the score command's message)."""
    p = cli("report", str(human_run), "--out", str(tmp_path))
    one_line_error(p, "--out", "is a directory", "report's HTML file")
    assert "scores CSV" not in p.stdout


def test_report_refuses_foreign_file_and_non_html_suffix(tmp_path, human_run):
    """Before: notes.txt silently overwritten with HTML; r.pdf got HTML."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    one_line_error(cli("report", str(human_run), "--out", str(notes)), "--out", ".html")
    assert notes.read_text() == "my notes"
    one_line_error(cli("report", str(human_run), "--out", str(tmp_path / "r.pdf")), "--out", ".html")
    assert not (tmp_path / "r.pdf").exists()
    foreign = tmp_path / "page.html"
    foreign.write_text("<html>someone else's page</html>")
    one_line_error(cli("report", str(human_run), "--out", str(foreign)), "not a perceptbench report")
    assert foreign.read_text() == "<html>someone else's page</html>"


def test_report_overwrites_its_own_report(tmp_path, human_run):
    out = tmp_path / "rep.html"
    for _ in range(2):  # the second call overwrites the report written by the first
        p = cli("report", str(human_run), "--out", str(out))
        assert p.returncode == 0, p.stdout + p.stderr
    assert out.read_text().count("perceptbench report") >= 1 and out.with_suffix(".md").exists()
