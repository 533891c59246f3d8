"""record_table.py: VSI lines read in read_columns' duckdb pass (issue 25): their distributions'
numbers bit for bit those of ``json.loads``, and every field checked as the validating reader
checks it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from perceptbench.tasks import get_task

from helpers.records import plant_records, plant_vsi_record

#: doubles whose decimal forms are easy to round wrongly: shortest reprs, 17 digits, halfway cases,
#: subnormals, the extremes, integers where floats are expected (beyond 2**53 and 2**64 too), exponents
TRICKY = ["0.1", "0.30000000000000004", "-0.0", "-0", "0", "5e-324", "4.9406564584124654e-324",
          "2.4703282292062328e-324", "2.4703282292062327e-324", "1e-320", "2.2250738585072011e-308",
          "2.2250738585072014e-308", "2.225073858507201136057409796709131975934819546351645e-308",
          "1.7976931348623157e308", "-1.7976931348623157e+308", "8.98846567431158e307", "1e23", "1E5", "0.1e1",
          "123e-20", "-4.725214580993681", "-0.9690409703064254", "3.141592653589793238462643383279",
          "1.00000000000000011102230246251565404236316680908203125",
          "1.000000000000000111022302462515654042363166809082031250001", "7.2057594037927933e16",
          "9007199254740993", "-9007199254740993", "123456789012345678", "9223372036854775807",
          "-9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
          "-3", "17", "0.000001", "-12.5E-3"]


def _vsi_file(tmp_path, lps_text: list[str], name="run"):
    """A records file of one VSI task, one model: 4 samples x (clean, region, whole), whose
    ``logprobs`` are written as the literal texts ``lps_text`` (one per token, ids 0..k-1)."""
    task = get_task("vsi.salbench.syn@n=4")
    k = len(lps_text)
    recs = [plant_vsi_record(task, cond, f"s{i}", list(range(k)), [-1.0] * k, image_sha256=f"{i}{cond}")
            for i in range(4) for cond in ("clean", "region_blur", "whole_blur")]
    p = plant_records(tmp_path / name, recs)
    lines = [ln.replace("[" + ",".join(["-1.0"] * k) + "]", "[" + ",".join(lps_text) + "]")
             for ln in p.read_text().splitlines()]
    assert all("[" + ",".join(lps_text) + "]" in ln for ln in lines)
    p.write_text("\n".join(lines) + "\n")
    return p, task.task_id


def test_logprobs_read_by_duckdb_are_bit_identical_to_json_loads(tmp_path):
    """Every tricky decimal form of a log-probability (and integers written where floats are
    expected) comes out of duckdb's reader as the very double ``json.loads`` gives, bit for bit."""
    from perceptbench.record_table import read_columns

    p, tid = _vsi_file(tmp_path, TRICKY)
    c = read_columns(p)[tid]
    f = c.vsi_fields
    assert f is not None and f["ok"].all() and np.array_equal(f["lp_len"], np.full(12, len(TRICKY)))
    want = np.array([[float(x) for x in json.loads(ln)["run_meta"]["vsi"]["logprobs"]]
                     for ln in p.read_text().splitlines()], np.float64).ravel()
    assert np.array_equal(f["lp"].view(np.uint64), want.view(np.uint64))
    assert np.array_equal(f["ids"], np.tile(np.arange(len(TRICKY)), 12))
    assert np.signbit(f["lp"][TRICKY.index("-0.0")])


@pytest.mark.parametrize("element", ['"1.5"', "true", "null", '"a"', "[1]", '{"a": 1}'])
def test_a_logprob_that_is_not_a_number_is_not_taken_by_the_columns(tmp_path, element):
    """duckdb would cast a string or a boolean to a number (and read a null as missing): such a line
    is marked (``ok`` False), so its task is read by the record path, which judges it as always."""
    from perceptbench.record_table import read_columns

    p, tid = _vsi_file(tmp_path, ["-0.5", element, "-2.0"])
    f = read_columns(p)[tid].vsi_fields
    assert f is not None and not f["ok"].any()


@pytest.mark.parametrize("edit, field", [
    (lambda o: o.update(track=5), "track"), (lambda o: o.update(owner=None), "owner"),
    (lambda o: o.update(response_space="colour"), "response_space 'colour' not in"),
    (lambda o: o.update(principle=["x"]), "principle"),
    (lambda o: o["run_meta"].update(seed=1.5), "run_meta.seed"),
    (lambda o: o["run_meta"].update(seed=True), "run_meta.seed"),
    (lambda o: o["run_meta"].update(run_id=3), "run_meta.run_id"),
    (lambda o: o.update(human_ref_id=7), "human_ref_id"), (lambda o: o.update(prompt_hash=1), "prompt_hash"),
    (lambda o: o.update(correct=False), "correct must be null")])
def test_a_vsi_line_is_checked_against_the_whole_schema(tmp_path, edit, field):
    """VSI lines are not parsed again by the validating reader, so ``read_columns`` checks the fields
    it does not read itself; a bad one stops the read with the validating reader's one-line error
    naming file, line and field."""
    from perceptbench.record_table import read_columns
    from perceptbench.records import RecordError

    p, _ = _vsi_file(tmp_path, ["-0.5", "-1.5"])
    lines = p.read_text().splitlines()
    o = json.loads(lines[4])
    edit(o)
    lines[4] = json.dumps(o)
    p.write_text("\n".join(lines) + "\n")
    # a field's problem names it ("field F: ..."); a rule over several fields says it in its own words
    with pytest.raises(RecordError, match=rf"^{p}:5: {'' if ' ' in field else 'field '}{field}"):
        read_columns(p)


def test_columnar_reads_run_in_the_jemalloc_pool_and_restore_the_default(monkeypatch):
    """``in_arrow_pool`` (``read_columns``, ``export_parquet``): pyarrow's jemalloc pool while the
    function runs (the system allocator where pyarrow lacks it), the default pool back after, also
    when it raises; a pool the user chose (``ARROW_DEFAULT_MEMORY_POOL``) is left alone."""
    import pyarrow as pa

    from perceptbench.record_table import in_arrow_pool

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    before = pa.default_memory_pool().backend_name

    @in_arrow_pool
    def inside(fail: bool = False) -> str:
        if fail:
            raise ValueError("planted")
        return pa.default_memory_pool().backend_name

    want = "jemalloc" if "jemalloc" in pa.supported_memory_backends() else "system"
    assert inside() == want
    assert pa.default_memory_pool().backend_name == before
    with pytest.raises(ValueError, match="planted"):
        inside(fail=True)
    assert pa.default_memory_pool().backend_name == before
    monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", before)
    assert inside() == before


def test_overlapping_columnar_reads_in_threads_share_one_pool_switch_and_restore_the_default(monkeypatch):
    """Two threads inside ``in_arrow_pool`` at once, the first leaving before the second: each runs
    in the jemalloc pool to its end, and the user's default is back after both (each call saving
    and restoring the pool itself left the second thread's pool switched back under it, and the
    process in jemalloc after both)."""
    import threading

    import pyarrow as pa

    from perceptbench.record_table import in_arrow_pool

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    orig = pa.default_memory_pool()
    want = "jemalloc" if "jemalloc" in pa.supported_memory_backends() else "system"
    if want == orig.backend_name:  # a default the switch must visibly undo
        pa.set_memory_pool(pa.system_memory_pool() if want == "jemalloc" else pa.mimalloc_memory_pool())
    before = pa.default_memory_pool().backend_name
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, list[str]] = {"a": [], "b": []}

    @in_arrow_pool
    def work(name: str) -> None:
        seen[name].append(pa.default_memory_pool().backend_name)
        if name == "a":
            a_in.set()
            b_in.wait(10)
        else:
            b_in.set()
            a_out.wait(10)
        seen[name].append(pa.default_memory_pool().backend_name)

    def first():
        work("a")
        a_out.set()

    ta, tb = threading.Thread(target=first), threading.Thread(target=lambda: (a_in.wait(10), work("b")))
    ta.start(), tb.start()
    ta.join(20), tb.join(20)
    now = pa.default_memory_pool().backend_name
    pa.set_memory_pool(orig)
    assert seen == {"a": [want, want], "b": [want, want]}
    assert now == before
