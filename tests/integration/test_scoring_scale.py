"""Scoring at scale (issue 12): the columnar, one-task-at-a-time scoring path gives the
scores of the validating in-memory path, and the values pinned from the code before the
change (to 1e-12), on a real default run (``perceptbench run``: the battery on the default
encoder, 2440 records) and on the same run with its model records copied under three more
model names (responses of the copies altered by a fixed rule, so each copy scores differently).  Also: parquet export, errors naming file and line."""

import gzip
import json
import math
import subprocess
import sys

import pytest

from perceptbench.record_table import iter_task_records, read_index
from perceptbench.records import RecordError, read_records
from perceptbench.scoring import score_file, score_records

from helpers.cli import cli
from helpers.paths import FIXTURES

FIX = FIXTURES / "scale"


@pytest.fixture
def run(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "records.jsonl").write_bytes(gzip.decompress((FIX / "default_multi.jsonl.gz").read_bytes()))
    return d


N_DEFAULT = 2440  # the first lines of the fixture are the default run as written


def _same(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            u, v = x[k], y[k]
            if isinstance(u, float) and isinstance(v, float):
                assert (math.isnan(u) and math.isnan(v)) or abs(u - v) <= 1e-12, (k, x, y)
            else:
                assert u == v, (k, x, y)


@pytest.mark.parametrize("which", ["default", "multi"])
def test_scores_pinned_to_values_before_the_columnar_path(run, which):
    if which == "default":
        lines = (run / "records.jsonl").read_text().splitlines(keepends=True)
        (run / "records.jsonl").write_text("".join(lines[:N_DEFAULT]))
    from perceptbench.core.rows import is_aggregate_model

    rows = score_file(run / "records.jsonl")
    models = {r.model for r in rows if not r.model.startswith("human:") and not is_aggregate_model(r.model)}
    assert len(models) == (1 if which == "default" else 4)
    expected = json.loads((FIX / f"expected_scores_{which}.json").read_text())
    got = json.loads((run / "scores.json").read_text())
    # the pinned rows come first, unchanged; a run of several models then gets the cross-model rows of
    # seed 000 §3 (analyses/crossmodel.py, added after the pin: model "all-models"), a one-model run none
    _same(got[:len(expected)], expected)
    added = got[len(expected):]
    assert all(r["model"] == "all-models" for r in added) and (len(added) > 0) == (which == "multi")
    # the in-memory, validating path gives the same table
    _same([vars(r) for r in score_records(read_records(run / "records.jsonl"))],
          [vars(r) for r in rows])


def test_index_groups_by_task_and_rejects_duplicates(run, tmp_path):
    idx = read_index(run / "records.jsonl")
    assert idx is not None and idx.n == len(read_records(run / "records.jsonl"))
    assert sorted(idx.by_task) == ["closure.nat.silhouette", "similarity.chart.mark_color",
                                   "similarity.chart.series_count"]
    assert all(s == [0] for s in idx.seeds.values())
    lines = (run / "records.jsonl").read_text().splitlines(keepends=True)
    dup = tmp_path / "dup.jsonl"
    dup.write_text("".join(lines + [lines[3]]))
    with pytest.raises(RecordError, match=rf"dup.jsonl:{len(lines) + 1}: duplicate trial_id .*first at line 4"):
        read_index(dup)


def test_bad_or_torn_lines_fall_back_to_the_validating_reader(run, tmp_path):
    lines = (run / "records.jsonl").read_text().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(lines[:5] + ['{"trial_id": 3}\n'] + lines[5:]))
    with pytest.raises(RecordError, match=r"bad.jsonl:6: "):
        list(iter_task_records(bad))
    torn = tmp_path / "torn.jsonl"
    torn.write_text("".join(lines) + lines[0][:40])  # a crash mid-write: the torn line is ignored
    assert read_index(torn) is None
    assert sum(len(r) for _, r in iter_task_records(torn)) == len(lines)


def test_export_parquet_typed_tables(run):
    pq = pytest.importorskip("pyarrow.parquet")
    score_file(run / "records.jsonl")
    p = cli("export", str(run), "--format", "parquet", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    rec = pq.read_table(run / "records.parquet")
    sc = pq.read_table(run / "scores.parquet")
    assert rec.num_rows == len(read_records(run / "records.jsonl"))
    assert str(rec.schema.field("correct").type) == "bool" and str(rec.schema.field("seed").type) == "int64"
    assert str(sc.schema.field("value").type) == "double" and str(sc.schema.field("n").type) == "int64"
    scores = json.loads((run / "scores.json").read_text())
    assert sc.column("value").to_pylist()[:5] == [r["value"] for r in scores[:5]]
    first = read_records(run / "records.jsonl")[0]
    row = rec.slice(0, 1).to_pylist()[0]
    assert row["trial_id"] == first.trial_id and json.loads(row["response_json"]) == first.response
    p = cli("export", str(run), "--format", "csv", columns=None)
    assert p.returncode == 2 and "only 'parquet'" in p.stderr


def test_core_and_local_executor_never_import_ray():
    code = ("import sys, perceptbench.runner, perceptbench.cli, perceptbench.scoring, perceptbench.record_table; "
            "assert 'ray' not in sys.modules, 'ray imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
