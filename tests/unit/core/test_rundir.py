"""The run directory's owner (perceptbench.core.rundir): run.json is written only under the
records lock, and every file through one atomic write."""

import subprocess
import sys
import textwrap

import pytest

from perceptbench.core.rundir import RunDir, atomic_write, write_atomic
from perceptbench.records import RecordStore


def test_run_json_is_written_inside_an_open_store_and_read_back(tmp_path):
    rd = RunDir(tmp_path / "run")
    with RecordStore(rd.records):  # this process holds the records lock: the write does not ask again
        rd.start(7, merged_from=["a"])
        rd.update_run_json(lambda d: d.setdefault("mixed", []).append({"what": "prompt"}))
    data = rd.read_run_json()
    assert data["seed"] == 7 and data["merged_from"] == ["a"] and data["mixed"] == [{"what": "prompt"}]
    assert sorted(p.name for p in rd.root.iterdir()) == ["records.jsonl", "run.json"]  # no temporary left


def test_run_json_write_is_refused_while_another_process_holds_the_records_lock(tmp_path):
    rd = RunDir(tmp_path / "run")
    rd.start(0)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from perceptbench.records import RecordStore
        with RecordStore({str(rd.records)!r}):
            print("held", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RuntimeError, match="being written by another perceptbench process"):
            rd.update_run_json(lambda d: d.update(seed=1))
        with pytest.raises(RuntimeError, match="being written by another perceptbench process"):
            rd.start(0)
    finally:
        holder.communicate("\n", timeout=60)
    assert rd.read_run_json()["seed"] == 0
    rd.update_run_json(lambda d: d.update(note="after"))  # the lock is free again
    assert rd.read_run_json()["note"] == "after"


def test_resuming_with_another_seed_names_both_seeds(tmp_path):
    rd = RunDir(tmp_path / "run")
    with RecordStore(rd.records):
        rd.start(1)
    rd.records.write_text("x\n")  # a run with records
    with pytest.raises(ValueError, match="seed 1; rerun with --seed 1 .* for seed 2"):
        rd.start(2)
    rd.start(1)  # the same seed resumes


def test_unreadable_run_json_is_a_one_line_error_naming_the_file(tmp_path):
    rd = RunDir(tmp_path)
    rd.run_json.write_text("{not json")
    with pytest.raises(ValueError, match=r"run\.json: not valid JSON"):
        rd.read_run_json()


def test_atomic_write_keeps_the_old_file_and_no_temporary_when_the_writer_fails(tmp_path):
    p = tmp_path / "scores.csv"
    write_atomic(p, "old\n")
    with pytest.raises(ZeroDivisionError):
        with atomic_write(p) as f:
            f.write("half")
            1 / 0
    assert p.read_text() == "old\n" and [x.name for x in tmp_path.iterdir()] == ["scores.csv"]
    write_atomic(p, b"new\n")
    assert p.read_bytes() == b"new\n"


def test_scores_of_another_parser_mode_go_beside_the_default_table(tmp_path):
    rd = RunDir(tmp_path)
    assert rd.scores_for("default") == rd.scores_csv == tmp_path / "scores.csv"
    assert rd.scores_for("strict") == tmp_path / "scores.strict.csv"
    assert rd.scores_json == tmp_path / "scores.json"
    assert rd.features == tmp_path / "features" and rd.report_html == tmp_path / "report.html"
