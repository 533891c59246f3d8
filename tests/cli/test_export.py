"""`perceptbench export`: which run it reads and where it writes (the tables themselves:
tests/unit/reports/test_export.py; refusing files it did not write: tests/cli/test_paths.py)."""

import shutil

import pytest

pq = pytest.importorskip("pyarrow.parquet")

from helpers.cli import cli, one_line_error  # noqa: E402
from helpers.records import plant_answers, plant_records  # noqa: E402


@pytest.fixture()
def scored_run(tmp_path):
    """A run directory of planted VLM answers, scored (records.jsonl and scores.json)."""
    d = tmp_path / "run"
    plant_records(d, plant_answers("similarity.chart.mark_color", "a", {i: "right" if i % 2 else "wrong"
                                                                        for i in range(12)}))
    assert cli("score", d, in_process=True).returncode == 0
    return d


def test_export_of_a_records_file_writes_beside_it_what_its_run_directory_gives(scored_run, tmp_path):
    """`score`, `validate` and `report` took a records file; `export` refused it as 'not a run
    directory'.  The folder the file lies in is its run directory: scores.json from there, and the
    parquet files written there by default."""
    assert cli("export", scored_run, "--out", tmp_path / "from_dir", in_process=True).returncode == 0
    p = cli("export", scored_run / "records.jsonl", in_process=True)
    assert p.returncode == 0, p.stdout
    assert f"records: {scored_run / 'records.parquet'}" in p.stdout
    for name in ("records.parquet", "scores.parquet"):
        assert pq.read_table(scored_run / name).equals(pq.read_table(tmp_path / "from_dir" / name))


def test_export_of_a_records_file_of_another_name_reads_that_file(scored_run, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(scored_run / "records.jsonl", other / "merged.jsonl")  # no scores.json beside it
    p = cli("export", other / "merged.jsonl", "--out", tmp_path / "out", in_process=True)
    assert p.returncode == 0 and "no scores.json" in p.stdout, p.stdout
    assert pq.read_table(tmp_path / "out" / "records.parquet").num_rows == 12
    assert not (tmp_path / "out" / "scores.parquet").exists() and sorted(x.name for x in other.iterdir()) == [
        "merged.jsonl"]


def test_export_refuses_a_missing_path_and_a_folder_without_records(tmp_path):
    one_line_error(cli("export", tmp_path / "nowhere.jsonl", columns=300), "nowhere.jsonl",
                   "no such run directory or records file")
    (tmp_path / "empty").mkdir()
    one_line_error(cli("export", tmp_path / "empty", columns=300), "not a run directory (no records.jsonl in it)")
    assert sorted(x.name for x in tmp_path.iterdir()) == ["empty"] and not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize("content", [b"", b"\n\n"], ids=["empty", "blank_lines"])
def test_export_refuses_a_records_file_without_a_record_as_score_does(tmp_path, content):
    """Before: export of a run whose records.jsonl held no record said it wrote records.parquet
    and wrote none (a stale one from an earlier export stayed); score refuses such a file."""
    run = tmp_path / "run"
    plant_records(run, plant_answers("similarity.chart.mark_color", "a", {0: "right", 1: "wrong"}))
    assert cli("export", run, in_process=True).returncode == 0
    earlier = (run / "records.parquet").read_bytes()
    (run / "records.jsonl").write_bytes(content)
    one_line_error(cli("export", run, columns=300), str(run / "records.jsonl"), "holds no trial records",
                   "nothing to export")
    one_line_error(cli("score", run, columns=300), "holds no trial records")
    assert (run / "records.parquet").read_bytes() == earlier  # the earlier export is untouched
    assert not (run / "scores.parquet").exists()


def test_a_refused_export_leaves_no_folder_it_made_behind(tmp_path):
    """An export that stops on a bad records file removed nothing it wrote but left the empty
    --out folder (and its new parents) it had made."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text('{"trial_id": "x", oops\n')
    out = tmp_path / "new" / "exports"
    p = cli("export", run, "--out", out, in_process=True)
    assert p.returncode == 2 and "records.jsonl:1: not valid JSON" in p.stderr, p.stdout + p.stderr
    assert not (tmp_path / "new").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    assert cli("export", run, "--out", kept, in_process=True).returncode == 2 and kept.is_dir()  # not made by it
