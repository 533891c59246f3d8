"""`export --format parquet` reads records column by column with duckdb (issue 25 item 6): the
table is the one the validating, record-by-record path gives (pyarrow equality, written file
too) on planted runs of several task families and on edge values; every line is checked as
the validating reader checks it, a bad line's error names file, line and field, and a failed
export leaves no partial file."""

import json

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from perceptbench.record_table import records_to_arrow  # noqa: E402
from perceptbench.records import RecordError, read_records  # noqa: E402
from perceptbench.reports import export as export_mod  # noqa: E402
from perceptbench.reports.export import export_parquet, records_arrow  # noqa: E402
from perceptbench.tasks import get_task  # noqa: E402

from helpers.records import plant_answers, plant_record, plant_records, plant_vsi_record  # noqa: E402


def _edge_records():
    """Bare records with the values whose JSON text duckdb rewrites: floats (1.0, -0.0, 1e-05,
    1e300), a bool and a large integer as manipulated value, strings with escapes and non-ASCII,
    nested and unsorted run_meta keys, null optional fields, list answers (sets: order differs)."""
    vals = [1.0, -0.0, 1e-05, 1e300, True, 2 ** 62, "k=3", None, 7]
    out = []
    for i, v in enumerate(vals):
        out.append(plant_record(
            "planted.edge", stimulus_id=f"s{i}", model="m\u00e9", response=["b", "a"] if i % 2 else "x\"y\n",
            ground_truth=["a", "b"] if i % 2 else ("x\"y\n" if i % 3 else None), manipulated_value=v,
            raw_output=None if i == 3 else "caf\u00e9 \u001f \U0001F600 \\ \t", prompt_id=None if i == 4 else "p",
            response_space="multilabel" if i % 2 else "choice",
            run_meta={"z": {"b": 1.5, "a": [1e-07, -0.0, 123456789.123456789]}, "\u00e9t\u00e9": "x", "a": None,
                      "big": 2 ** 70, "neg": -3}))
    return out


def _families(mirror):
    """Planted runs: the Gestalt battery (VLM answers and a human-kernel-free task), SalBench
    detection (label sets), VSI (distributions in run_meta), bare edge records."""
    vsi = get_task("vsi.salbench.syn@n=3")
    rng = np.random.default_rng(0)
    vsi_recs = [plant_vsi_record(vsi, cond, f"s{i}", [1, 2, 3], sorted(rng.normal(-2, 1, 3).tolist(), reverse=True),
                                 model=m, tokens=["A", "\u001f", "\u00e9"], raw_output="B" if cond == "clean" else None)
                for m in ("v1", "v2") for i in range(3) for cond in ("clean", "whole_blur")]
    return {
        "battery": (plant_answers("closure.nat.silhouette", "m1", {i: ("right", "wrong", None)[i % 3] for i in range(9)})
                    + plant_answers("similarity.chart.mark_color", "m1", {i: "right" for i in range(5)})
                    + plant_answers("closure.nat.silhouette", "m2", {i: "right" for i in range(4)})),
        "salbench": plant_answers("salbench.detection.syn@n=60,n_probe=0", "m1",
                                  {0: ["Orientation"], 1: ["Pattern", "Color"], 2: None, 3: "right"}),
        "vsi": vsi_recs,
        "edge": _edge_records(),
    }


@pytest.fixture
def families(mirror):
    return _families(mirror)


def _old_table(path):
    """What export wrote before the columnar reader: tasks sorted, records in file order."""
    by = {}
    for r in read_records(path):
        by.setdefault(r.task_id, []).append(r)
    return pa.concat_tables([records_to_arrow(by[t]) for t in sorted(by)])


@pytest.mark.parametrize("family", ["battery", "salbench", "vsi", "edge", "all"])
def test_columnar_export_equals_the_validating_path(tmp_path, families, family, monkeypatch):
    recs = [r for rs in families.values() for r in rs] if family == "all" else families[family]
    # interleave tasks in the file, so sorting by task matters
    recs = sorted(recs, key=lambda r: (r.stimulus_id, r.task_id))
    path = plant_records(tmp_path / "run", recs)
    table = records_arrow(path, batch_rows=4)  # several batches
    assert table is not None, "the columnar reader did not take the file"
    assert table.equals(records_to_arrow(read_records(path)))  # file order, same columns, types, values
    grouped = records_arrow(path, batch_rows=4, by_task=True)  # tasks sorted, each in file order
    assert grouped.equals(_old_table(path))
    per_task = {}
    for r in read_records(path):
        per_task[r.task_id] = per_task.get(r.task_id, 0) + 1
    assert [len(c) for c in grouped["task_id"].chunks] == [per_task[t] for t in sorted(per_task)]  # a chunk each
    new = export_parquet(tmp_path / "run", tmp_path / "new")[0]
    monkeypatch.setattr(export_mod, "records_arrow", lambda p, **kw: None)  # the validating path
    old = export_parquet(tmp_path / "run", tmp_path / "old")[0]
    assert pq.read_table(new).equals(pq.read_table(old))
    assert pq.read_table(new).equals(_old_table(path))


def _spoil(path, k, **fields):
    lines = path.read_text().splitlines(keepends=True)
    o = json.loads(lines[k - 1])
    for f, v in fields.items():
        if f.startswith("run_meta."):
            o["run_meta"][f.split(".", 1)[1]] = v
        else:
            o[f] = v
    lines[k - 1] = json.dumps(o, ensure_ascii=False) + "\n"
    path.write_text("".join(lines))


SPOILERS = {  # field -> value the record schema refuses, and the field the message names
    "string_as_number": ({"principle": 3}, "field principle"),
    "null_required_string": ({"owner": None}, "field owner"),
    "rep_as_string": ({"rep": "0"}, "field rep"),
    "rep_as_float": ({"n_reps": 1.0}, "field n_reps"),
    "correct_as_string": ({"correct": "true"}, "field correct"),
    "correct_disagrees": ({"correct": False}, "correct"),
    "response_object": ({"response": {"a": 1}, "correct": None}, "field response"),
    "response_bool": ({"response": True, "correct": None}, "field response"),
    "manipulated_list": ({"manipulated_value": [1]}, "field manipulated_value"),
    "seed_as_string": ({"run_meta.seed": "0"}, "field run_meta.seed"),
    "model_version_null": ({"run_meta.model_version": None}, "field run_meta.model_version"),
    "unknown_family": ({"model_family": "robot"}, "model_family"),
    "unknown_space": ({"response_space": "free"}, "response_space"),
    "trial_id_mismatch": ({"trial_id": "a|b|c|rep0"}, "trial_id"),
    "rep_out_of_range": ({"rep": 1, "trial_id": None}, "rep 1 outside"),
    "extra_field": ({"extra": 1}, "unknown fields ['extra']"),
}


@pytest.mark.parametrize("spoiler", sorted(SPOILERS))
def test_bad_line_names_file_line_and_field_and_leaves_no_partial_file(tmp_path, spoiler):
    recs = _edge_records() * 1
    path = plant_records(tmp_path / "run", recs)
    out = tmp_path / "out"
    export_parquet(tmp_path / "run", out)
    before = (out / "records.parquet").read_bytes()
    fields, what = SPOILERS[spoiler]
    k = 6
    if fields.get("trial_id", "") is None:  # keep the trial id consistent with the changed rep
        o = json.loads(path.read_text().splitlines()[k - 1])
        fields = {**fields, "trial_id": o["trial_id"].replace("|rep0", f"|rep{fields['rep']}")}
    _spoil(path, k, **fields)
    with pytest.raises(RecordError) as e:
        records_arrow(path, batch_rows=4)
    msg = str(e.value)
    assert msg.startswith(f"{path}:{k}: ") and what in msg, msg
    with pytest.raises(RecordError, match=rf"{path}:{k}: "):
        export_parquet(tmp_path / "run", out)
    assert (out / "records.parquet").read_bytes() == before  # the earlier export is untouched
    assert sorted(p.name for p in out.iterdir()) == ["records.parquet"]  # no temporary file left


def test_first_bad_line_in_file_order_is_named(tmp_path):
    path = plant_records(tmp_path / "run", _edge_records())
    _spoil(path, 8, owner=None)
    _spoil(path, 6, rep="0")  # the same batch of 4 rows as line 8; another batch of 2 rows
    for rows in (4, 2):
        with pytest.raises(RecordError, match=rf"{path}:6: field rep"):
            records_arrow(path, batch_rows=rows)


def test_duplicate_trial_id_names_both_lines(tmp_path):
    recs = _edge_records()
    path = plant_records(tmp_path / "run", recs)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + [lines[1]]))
    assert records_arrow(path) is None  # the validating path names both lines
    with pytest.raises(RecordError, match=rf"{path}:{len(lines) + 1}: duplicate trial_id .*first at line 2"):
        export_parquet(tmp_path / "run", tmp_path / "out")
    assert not (tmp_path / "out" / "records.parquet").exists()


def test_files_the_columnar_reader_cannot_take_go_the_validating_way(tmp_path, monkeypatch):
    """A run_meta key repeated (duckdb reads the first value, json.loads the last), a blank line
    and a torn final line: the columnar reader declines, the export equals the validating path."""
    recs = _edge_records()
    path = plant_records(tmp_path / "run", recs)
    lines = path.read_text().splitlines(keepends=True)
    o = lines[2].replace('"seed":0', '"seed":5,"seed":0')
    assert o != lines[2]
    cases = {"repeated_key": lines[:2] + [o] + lines[3:], "blank_line": lines[:4] + ["\n"] + lines[4:],
             "torn_tail": lines + [lines[0][:30]]}
    for name, content in cases.items():
        path.write_text("".join(content))
        assert records_arrow(path) is None, name
        new = pq.read_table(export_parquet(tmp_path / "run", tmp_path / name)[0])
        assert new.equals(_old_table(path)), name
