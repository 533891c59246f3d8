import json

import pytest

from perceptbench.records import (
    SCHEMA_FIELDS, RecordError, RecordStore, TrialRecord, make_trial_id, parse_record_line, read_records)

SEED_EXAMPLE = {"trial_id": "closure.nat.silhouette|silh_airplane_0|qwen2-vl-2b|rep0", "task_id": "closure.nat.silhouette",
                "principle": "closure", "track": "nat", "stimulus_id": "silh_airplane_0", "manipulated_value": None,
                "model": "qwen2-vl-2b", "model_family": "vlm", "readout": "vlm_prompt", "owner": "sai",
                "response_space": "choice", "response": "airplane", "ground_truth": "airplane", "correct": True,
                "human_ref_id": "geirhos.silhouette", "raw_output": "The black silhouette shown in the im", "rep": 0,
                "n_reps": 1, "prompt_id": "closure.nat.silhouette.v1", "prompt_hash": "be08cec2",
                "run_meta": {"model_version": "Qwen/Qwen2-VL-2B-Instruct", "seed": 0, "run_id": "vlm-20260709-204530"}}


def rec(stim="s1", model="m", response=1, gt=1, **kw):
    d = dict(SEED_EXAMPLE, task_id="t", stimulus_id=stim, model=model, response=response, ground_truth=gt,
             response_space="position", correct=None if response is None or gt is None else response == gt,
             trial_id=make_trial_id("t", stim, model, 0))
    d.update(kw)
    return TrialRecord.model_validate(d)


def test_seed_appendix_c_example_validates_field_for_field():
    r = parse_record_line(json.dumps(SEED_EXAMPLE))
    assert tuple(json.loads(r.to_json_line())) == SCHEMA_FIELDS
    assert len(SCHEMA_FIELDS) == 21


@pytest.mark.parametrize("mutate, msg", [
    (lambda d: d.pop("owner"), "missing fields ['owner']"),
    (lambda d: d.update(extra=1), "unknown fields ['extra']"),
    (lambda d: d.update(trial_id="x"), "trial_id"),
    (lambda d: d.update(correct=False), "correct"),
    (lambda d: d.update(response=None), "correct must be null"),
    (lambda d: d["run_meta"].pop("seed"), "run_meta.seed"),
    (lambda d: d.update(model_family="robot"), "model_family"),
])
def test_invalid_records_name_the_field(mutate, msg):
    d = json.loads(json.dumps(SEED_EXAMPLE))
    mutate(d)
    with pytest.raises(RecordError) as e:
        parse_record_line(json.dumps(d), "f.jsonl:7")
    assert "f.jsonl:7" in str(e.value) and msg in str(e.value)


def test_null_response_is_valid_and_not_correct_or_wrong():
    r = rec(response=None)
    assert r.correct is None


def test_store_appends_skips_done_and_repairs_torn_tail(tmp_path):
    p = tmp_path / "records.jsonl"
    with RecordStore(p) as s:
        assert s.append([rec("a"), rec("b")]) == 2
        assert s.append([rec("a"), rec("c")]) == 1  # a already stored
    full = p.read_bytes()
    # simulate kill -9 in the middle of a write: half a line at the end
    p.write_bytes(full + rec("d").to_json_line().encode()[:40])
    assert [r.stimulus_id for r in read_records(p)] == ["a", "b", "c"]
    with pytest.raises(RecordError, match="torn"):
        read_records(p, allow_torn_tail=False)
    with RecordStore(p) as s:
        assert s.truncated_bytes == 40
        assert s.done == {make_trial_id("t", x, "m", 0) for x in "abc"}
        s.append([rec("d")])
    assert p.read_bytes().startswith(full)
    assert [r.stimulus_id for r in read_records(p, allow_torn_tail=False)] == ["a", "b", "c", "d"]


def test_corrupt_middle_line_is_an_error_naming_the_line(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(rec("a").to_json_line() + "\n{not json\n" + rec("b").to_json_line() + "\n")
    with pytest.raises(RecordError, match=r"r.jsonl:2"):
        read_records(p)
    with pytest.raises(RecordError):
        RecordStore(p)
    assert p.read_text().count("\n") == 3  # nothing was lost or rewritten


def test_duplicate_trial_ids_are_rejected(tmp_path):
    p = tmp_path / "r.jsonl"
    line = rec("a").to_json_line()
    p.write_text(line + "\n" + line + "\n")
    with pytest.raises(RecordError, match="duplicate trial_id"):
        read_records(p)


def test_second_writer_is_refused(tmp_path):
    p = tmp_path / "r.jsonl"
    with RecordStore(p):
        with pytest.raises(RuntimeError, match="another perceptbench process"):
            RecordStore(p)


def test_types_are_strict():
    d = json.loads(json.dumps(SEED_EXAMPLE))
    d["correct"] = "yes"
    with pytest.raises(RecordError, match="correct"):
        parse_record_line(json.dumps(d))
    d = json.loads(json.dumps(SEED_EXAMPLE))
    d["rep"] = "0"
    with pytest.raises(RecordError, match="rep"):
        parse_record_line(json.dumps(d))


def test_validate_file_lists_every_problem(tmp_path):
    from perceptbench.records import validate_file

    p = tmp_path / "r.jsonl"
    good = [rec(x).to_json_line() for x in "abcd"]
    p.write_text("\n".join([good[0], "{bad", good[1], good[1], '{"a": 1}', good[2]]) + "\n" + good[3][:20])
    n_ok, errors = validate_file(p)
    assert n_ok == 3
    assert [e.split(":")[1] for e in errors] == ["2", "4", "5", "7"]
