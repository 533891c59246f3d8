"""A newcomer's rough edges: --out paths, empty record files, validate's problem count,
several runs, render's default folder, Ctrl-C during a run, help texts, CI formatting."""

import errno
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from perceptbench.cli import format_ci, format_value
from perceptbench.runner import RunConfig, run

from helpers.cli import cli, one_line_error
from helpers.records import plant_answers, plant_records

TASK = "similarity.chart.mark_color"


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
    p = cli("score", str(human_runs[0] / "records.jsonl"), "--out", str(target), columns=250)
    one_line_error(p, "--out", "directory", "scores CSV file")
    assert sorted(os.listdir(tmp_path)) == ["runs"] and not os.listdir(target)


def test_render_and_run_out_file_are_one_line(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    one_line_error(cli("render", TASK, "--out", str(f), "--limit", "1", columns=250), "--out", "must be a directory")
    one_line_error(cli("run", "--out", str(f), "--task", TASK, "--no-progress",
                       columns=250), "--out", "must be a directory")
    one_line_error(cli("run", "--out", str(f / "sub"), "--task", TASK, "--no-progress",
                       columns=250), "--out", "is a file")
    assert f.read_text() == "x"


def test_render_default_does_not_litter_the_working_directory(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    p = cli("render", TASK, "--limit", "2", cwd=work, columns=str(tmp_path / "cache"),
            env={"PERCEPTBENCH_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    assert os.listdir(work) == []
    folder = tmp_path / "cache" / "stimuli" / f"{TASK}-seed0"
    assert str(folder) in p.stdout.replace("\n", "")
    assert len(json.loads((folder / "index.json").read_text())) == 2


def test_empty_records_file_is_an_error_for_every_command(tmp_path):
    """score, merge, export, report and show refuse an empty records.jsonl in one line naming it
    (before: report wrote a page of 0 models, show listed "0 model trials", both exit 0); validate
    lists it as its problem."""
    empty = tmp_path / "records.jsonl"
    empty.write_text("")
    one_line_error(cli("score", str(empty), columns=250), "holds no trial records")
    one_line_error(cli("merge", str(empty), "--out", tmp_path / "m", columns=250), str(empty), "holds no trial records")
    one_line_error(cli("export", str(empty), columns=250), str(empty), "holds no trial records")
    one_line_error(cli("report", str(empty), "--out", tmp_path / "r.html", columns=250), str(empty),
                   "holds no trial records", "nothing to report")
    one_line_error(cli("show", tmp_path, columns=250), str(empty), "holds no trial records", "nothing to show")
    one_line_error(cli("show", tmp_path, "1", columns=250), str(empty), "holds no trial records")
    p = cli("validate", str(empty), columns=250)
    assert p.returncode == 2 and "holds no trial records" in p.stdout and "1 problem(s)" in p.stdout
    assert sorted(os.listdir(tmp_path)) == ["records.jsonl"]


def test_validate_says_how_many_problems_are_not_shown(tmp_path, human_runs):
    data = (human_runs[0] / "records.jsonl").read_bytes()
    n = data.count(b"\n")
    dup = tmp_path / "dup.jsonl"
    dup.write_bytes(data + data)
    p = cli("validate", str(dup), columns=250)
    assert p.returncode == 2
    assert f"{n} valid records, {n} problem(s) ({n - 50} more not shown)" in p.stdout


def test_score_and_merge_several_runs(tmp_path, human_runs):
    a, b = human_runs
    one_line_error(cli("score", str(a), str(b), columns=250), "--out is required")
    p = cli("score", str(a), str(b), "--out", str(tmp_path / "both.csv"), columns=250)
    assert p.returncode == 0, p.stdout + p.stderr
    single = cli("score", str(a), "--out", str(tmp_path / "a.csv"), columns=250)
    assert single.returncode == 0
    assert (tmp_path / "both.csv").read_text() == (tmp_path / "a.csv").read_text()
    p = cli("merge", str(a), str(b), "--out", str(tmp_path / "m"), columns=250)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "m" / "records.jsonl").read_bytes().count(b"\n") == \
        (a / "records.jsonl").read_bytes().count(b"\n")
    assert json.loads((tmp_path / "m" / "run.json").read_text())["seed"] == 0
    assert cli("validate", str(tmp_path / "m"), columns=250).returncode == 0
    one_line_error(cli("merge", str(a), "--out", str(tmp_path / "m"), columns=250), "--out", "not empty")


def test_merge_refuses_conflicts_naming_trial_and_files(tmp_path, human_runs):
    a = human_runs[0]
    lines = (a / "records.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["raw_output"] = "changed"
    c = tmp_path / "c"
    c.mkdir()
    (c / "records.jsonl").write_text(json.dumps(rec) + "\n")
    p = cli("merge", str(a), str(c), "--out", str(tmp_path / "m"), columns=250)
    one_line_error(p, rec["trial_id"], str(a / "records.jsonl"), str(c / "records.jsonl"), "raw_output")
    assert not (tmp_path / "m").exists()


def test_help_texts_for_all_rows_and_render_seed():
    p = cli("score", "--help", columns=250)
    assert "headline metrics" in p.stdout.split("--all-rows")[1][:200]
    p = cli("render", "--help", columns=250)
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
    proc = cli("run", "--out", str(out), "--task", "closure.nat.silhouette", "--batch-size", "1", "--no-progress",
               columns=None, env={"COLUMNS": None}, background=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
               text=True, preexec_fn=_sigint_as_in_a_terminal)
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
    line = next(ln for ln in text.splitlines() if said in ln)  # one line, not wrapped at 150 columns (a log's width)
    assert f"({n} in {records})" in line and line.endswith("resume where it stopped."), text
    assert "Rerun the same command to resume" in text and "Traceback" not in text
    assert len(read_records(records)) == n  # every written line is a whole, valid record


@pytest.mark.parametrize("columns", ["40", "80", "120", "180", "400"])
def test_tasks_ids_stay_whole_at_any_width(columns):
    from perceptbench.tasks.registry import NOT_RUNNABLE, list_tasks

    p = cli("tasks", columns=columns)
    assert p.returncode == 0, p.stderr
    tokens = {tok.strip("│┃ ") for line in p.stdout.splitlines() for tok in line.split()}
    ids = [c.base_id for c in list_tasks()] + list(NOT_RUNNABLE) + ["similarity.chart.mark_color@kernel=l5"]
    missing = [i for i in ids if i not in tokens]
    assert not missing, f"ids broken at COLUMNS={columns}: {missing}"


def test_run_out_foreign_nonempty_directory_is_refused(tmp_path):
    """Before: accepted silently, run files written beside the user's notes.txt."""
    d = tmp_path / "notarun"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    p = cli("run", "--out", str(d), "--task", "similarity.chart.mark_color", "--model", "timm:no_such_arch_xyz",
            "--no-progress", columns=250)
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


def test_score_out_message_names_the_written_file(tmp_path, human_run):
    """Before: 'N score rows in scores.csv' after --out /tmp/both.csv."""
    target = tmp_path / "both.csv"
    p = cli("score", str(human_run), "--out", str(target), columns=250)
    assert p.returncode == 0, p.stdout + p.stderr
    flat = " ".join(p.stdout.split())
    assert f"score rows in {target}" in flat and "rows in scores.csv" not in flat


@pytest.mark.parametrize("junk", [[".DS_Store"], ["Thumbs.db", "desktop.ini"], [".directory"], ["THUMBS.DB"]])
def test_run_out_holding_only_os_junk_counts_as_empty(tmp_path, junk):
    """Before: '--out ... is a directory that perceptbench did not write (it holds '.DS_Store')'."""
    from perceptbench.cli import _check_out
    from perceptbench.runs import foreign_out_dir

    d = tmp_path / "fresh"
    d.mkdir()
    for name in junk:
        (d / name).write_bytes(b"\0junk")
    assert foreign_out_dir(d) is None
    _check_out(d, "run")  # no exception
    (d / "notes.txt").write_text("mine")  # a real file beside the junk is still refused, and named
    why = foreign_out_dir(d)
    assert why is not None and "'notes.txt'" in why and "more" not in why


@pytest.fixture()
def planted_run(tmp_path):
    d = tmp_path / "run"
    answers = {i: "right" if i % 2 else "wrong" for i in range(12)}
    plant_records(d, plant_answers("similarity.chart.mark_color", "a", answers))
    return d


def test_export_and_score_refuse_files_they_did_not_write(planted_run, tmp_path):
    out = tmp_path / "x"
    out.mkdir()
    (out / "scores.parquet").write_text("my precious")
    assert cli("score", planted_run, in_process=True).returncode == 0
    p = cli("export", planted_run, "--format", "parquet", "--out", out, in_process=True)
    rc, text = p.returncode, " ".join(p.stderr.split())  # the console wraps long paths
    assert rc == 2 and "scores.parquet exists and is not a perceptbench" in text and "refusing" in text
    assert text.count("error:") == 1 and "Traceback" not in text
    assert (out / "scores.parquet").read_text() == "my precious" and not (out / "records.parquet").exists()
    (out / "scores.parquet").unlink()
    assert cli("export", planted_run, "--out", out, in_process=True).returncode == 0
    assert cli("export", planted_run, "--out", out, in_process=True).returncode == 0  # its own files: overwritten
    # an existing file as --out: one clear line, no raw errno
    p = cli("export", planted_run, "--out", out / "scores.parquet", in_process=True)
    rc, text = p.returncode, " ".join(p.stderr.split())  # the console wraps long paths
    assert rc == 2 and "is a file" in text and "Errno" not in text
    precious = tmp_path / "precious.csv"
    precious.write_text("my precious\n")
    p = cli("score", planted_run, "--out", precious, in_process=True)
    rc, text = p.returncode, " ".join(p.stderr.split())  # the console wraps long paths
    assert rc == 2 and "precious.csv exists and is not a perceptbench scores table" in text
    assert precious.read_text() == "my precious\n" and not precious.with_suffix(".json").exists()
    mine = tmp_path / "mine.csv"
    assert cli("score", planted_run, "--out", mine, in_process=True).returncode == 0
    assert cli("score", planted_run, "--out", mine, in_process=True).returncode == 0  # a table it wrote: overwritten
    (tmp_path / "other.json").write_text('{"precious": 1}')  # score also writes the .json beside the csv
    p = cli("score", planted_run, "--out", tmp_path / "other.csv", in_process=True)
    rc, text = p.returncode, " ".join(p.stderr.split())  # the console wraps long paths
    assert rc == 2 and "other.json exists" in text and not (tmp_path / "other.csv").exists()


@pytest.mark.parametrize("sid", ["../../../x", "/nonexistent-perceptbench-dir/x", "sub/../../x"])
def test_render_confines_every_written_file_to_out(tmp_path, sid):
    """Issue 20 item 7: an annotation file's id ``../../../x`` wrote a PNG three levels above --out."""
    from PIL import Image

    Image.new("RGB", (24, 16), (200, 30, 30)).save(tmp_path / "img.png")
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps([{"image_id": sid, "split": "nat", "image": "img.png", "answer": "Shape",
                                "object_category": "c", "n_distractors": 3, "bbox": [1, 1, 5, 5]}]))
    out = tmp_path / "a" / "b" / "c" / "out"
    before = sorted(p for p in tmp_path.rglob("*"))
    p = cli("render", f"salbench.detection.nat@source={ann}", "--out", out, columns=400)
    one_line_error(p, repr(sid), "would leave", str(out))
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing written, not even --out


def test_render_keeps_ids_with_subfolders_inside_out(tmp_path):
    from PIL import Image

    Image.new("RGB", (24, 16), (200, 30, 30)).save(tmp_path / "img.png")
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps([{"image_id": "set1/x", "split": "nat", "image": "img.png", "answer": "Shape",
                                "object_category": "c", "n_distractors": 3, "bbox": [1, 1, 5, 5]}]))
    p = cli("render", f"salbench.detection.nat@source={ann}", "--out", tmp_path / "out", columns=400)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "out" / "set1" / "x.png").is_file()


@pytest.mark.parametrize("link", [True, False], ids=["symlink_outside_out", "foreign_file"])
def test_run_never_cuts_a_foreign_records_file(tmp_path, link):
    """Issue 20 item 6: a records.jsonl that was a symlink to a foreign file (or a foreign file
    itself) had its last line truncated by the torn-tail repair before the run stopped."""
    foreign = tmp_path / "notes.txt"
    content = b"my notes\nline two without newline"
    foreign.write_bytes(content)
    out = tmp_path / "run"
    out.mkdir()
    if link:
        (out / "records.jsonl").symlink_to(foreign)
    else:
        (out / "records.jsonl").write_bytes(content)
    p = cli("run", "--out", out, "--task", TASK, "--no-progress", columns=400)
    one_line_error(p, str(out / "records.jsonl"), *(("symbolic link", "outside") if link else ("not valid JSON",)))
    assert foreign.read_bytes() == content and (out / "records.jsonl").read_bytes() == content
    assert sorted(x.name for x in out.iterdir()) == ["records.jsonl"]  # no run.json either


def test_a_run_stopped_before_its_first_record_says_no_records_file_yet(tmp_path, monkeypatch):
    """Before: a run stopped while its model loaded said "(0 in RUN/records.jsonl)", a file that did
    not exist."""
    from perceptbench import api

    def stop(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "run", stop)
    out = tmp_path / "r"
    p = cli("run", "--out", out, "--task", TASK, "--no-progress", in_process=True)
    assert p.returncode == 130 and not p.stdout, p.stdout + p.stderr
    said = " ".join(p.stderr.split())
    assert said.startswith(f"interrupted: 0 records written in this run (no {out / 'records.jsonl'} yet)"), said


def test_interrupted_merge_leaves_no_out_and_its_rerun_works(tmp_path, human_runs, monkeypatch):
    """Issue 20 item 6: merge interrupted by SIGTERM left a 0-byte records.jsonl and no run.json,
    and its rerun was refused (--out not empty).  Here the interruption comes after the records
    were written, before run.json: the worst moment."""
    from perceptbench.cli.errors import Terminated
    from perceptbench.core import rundir

    def stop(self, seed, **kw):
        raise Terminated()

    out = tmp_path / "merged"
    monkeypatch.setattr(rundir.RunDir, "start", stop)
    p = cli("merge", human_runs[0], human_runs[1], "--out", out, in_process=True)
    assert p.returncode == 143 and "nothing was merged" in p.stderr and "Traceback" not in p.stdout + p.stderr, \
        p.stdout + p.stderr
    assert not out.exists() and os.listdir(tmp_path) == []  # no OUT, no hidden leftover
    monkeypatch.undo()
    p = cli("merge", human_runs[0], human_runs[1], "--out", out, in_process=True)
    assert p.returncode == 0, p.stdout
    assert sorted(os.listdir(out)) == ["records.jsonl", "run.json"]


def _wait_for_start_up_handler(proc, timeout: float = 120.0) -> None:
    """Return once the child has installed the command line's own SIGTERM handler, which
    ``perceptbench.cli`` does before its slow imports (typer, every command module): from then
    on a signal is the command's to answer.  Before it, during the interpreter's own start-up,
    a signal gets Python's default (a KeyboardInterrupt traceback, exit -2) and no code of the
    project runs yet: a fixed sleep before signalling hit that window on a loaded machine.
    Linux: the handler shows in /proc/PID/status ``SigCgt``; elsewhere, wait 0.3 s."""
    status = Path(f"/proc/{proc.pid}/status")
    if not status.parent.exists():
        time.sleep(0.3)
        return
    bit = 1 << (signal.SIGTERM - 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the command ended (exit {proc.returncode}) before it could be signalled"
        caught = next((ln.split()[1] for ln in status.read_text().splitlines() if ln.startswith("SigCgt:")), "0")
        if int(caught, 16) & bit:
            return
        time.sleep(0.002)
    raise AssertionError(f"no SIGTERM handler in the command after {timeout} s")


@pytest.mark.parametrize("sig, rc", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_start_up_is_one_line(tmp_path, sig, rc):
    """Issue 20 item 6: Ctrl-C while the command line was still importing printed a traceback."""
    proc = cli("run", "--out", tmp_path / "run", "--task", TASK, "--no-progress", background=True,
               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait_for_start_up_handler(proc)
    proc.send_signal(sig)
    out, err = (b.decode() for b in proc.communicate(timeout=120))
    text = out + err
    assert proc.returncode == rc and "Traceback" not in text, text
    assert 1 <= len([ln for ln in text.splitlines() if ln.strip()]) <= 2, text  # one message (wrapped at most once)
    assert "interrupted" in text or "terminated" in text, text


def test_interrupt_wrapped_by_python_during_an_import_still_exits_with_its_code(monkeypatch):
    """A start-up signal whose exit landed in a class body's __set_name__ (an import) reaches the
    top wrapped in a RuntimeError ("Error calling __set_name__ ..."): before, typer printed that
    traceback and the exit was 1; main() finds the interrupt in the chain and exits 130."""
    import perceptbench.cli as pcli

    def app():
        try:
            raise pcli.StartUpInterrupt(130)
        except SystemExit as e:
            raise RuntimeError("Error calling __set_name__ on 'cached_property' instance") from e

    monkeypatch.setattr(pcli, "app", app)
    with pytest.raises(SystemExit) as got:
        pcli.main()
    assert got.value.code == 130 and got.value.__cause__ is None and not isinstance(got.value, RuntimeError)

    def other():
        raise RuntimeError("a real error")

    monkeypatch.setattr(pcli, "app", other)
    with pytest.raises(RuntimeError, match="a real error"):
        pcli.main()


@pytest.mark.parametrize("err, said", [
    (errno.EACCES, "cannot write here"),
    (errno.ENOSPC, "disk full); everything written before is kept"),
], ids=["read_only", "disk_full"])
def test_score_that_cannot_write_is_one_line_naming_the_file(tmp_path, human_runs, monkeypatch, err, said):
    """Issue 20 item 6: `score` on a read-only run directory printed a traceback; a full disk
    named no file (and left scores.json.tmp behind before the redesign)."""
    import shutil

    from perceptbench.core import rundir

    run = tmp_path / "run"
    shutil.copytree(human_runs[0], run)
    before = sorted(os.listdir(run))

    def refuse(src, dst):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(rundir.os, "replace", refuse)
    p = cli("score", run, in_process=True, columns=400)
    monkeypatch.undo()
    assert p.returncode == 2 and "Traceback" not in p.stdout, p.stdout
    msg = " ".join(p.stderr.split())
    assert msg.startswith(f"error: {run / 'scores.csv'}: {os.strerror(err)}") and said in msg, msg
    assert sorted(os.listdir(run)) == before  # no temporary file left


def test_disk_full_during_a_run_names_the_file_and_says_a_rerun_resumes(tmp_path, mirror, monkeypatch):
    from perceptbench.records import RecordStore

    def full(self, records):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(RecordStore, "append", full)
    p = cli("run", "--out", tmp_path / "run", "--task", TASK, "--model", "m=efficientnet-lite0", "--no-progress",
            in_process=True, columns=400)
    assert p.returncode == 2 and "Traceback" not in p.stdout, p.stdout
    msg = " ".join(p.stderr.split())
    assert msg.startswith(f"error: {tmp_path / 'run' / 'records.jsonl'}: No space left on device (disk full)"), msg
    assert "rerun the same command: it resumes" in msg


def test_export_and_report_name_their_default_output_when_no_out_was_given(planted_run):
    """Without ``--out``, export writes into the run directory and report to RUN/report.html: a
    foreign file there is refused by its path and the advice to give ``--out``, never as if the
    user had given an ``--out`` to replace."""
    (planted_run / "records.parquet").write_text("my precious")
    p = cli("export", planted_run, in_process=True)
    text = " ".join(p.stderr.split())
    assert p.returncode == 2 and text.count("error:") == 1
    assert "records.parquet exists and is not a perceptbench records.parquet export" in text
    assert "give --out to write elsewhere" in text and "--out:" not in text and "another --out" not in text
    assert (planted_run / "records.parquet").read_text() == "my precious"
    (planted_run / "report.html").write_text("<html>mine</html>")
    p = cli("report", planted_run, in_process=True)
    text = " ".join(p.stderr.split())
    assert p.returncode == 2 and text.count("error:") == 1
    assert "report.html (the default output) exists and is not a perceptbench report" in text
    assert "give --out with a new .html path" in text and "--out " + str(planted_run) not in text
    assert (planted_run / "report.html").read_text() == "<html>mine</html>"
