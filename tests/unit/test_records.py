import json
import os

import pytest

from perceptbench.records import (
    RecordError, RecordStore, SCHEMA_FIELDS, TrialRecord, check_file, has_torn_tail, make_trial_id,
    parse_record_line, read_records, score_correct, validate_file)

from helpers.records import plant_record

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


def _trial(stim, seed=0, task="t"):
    return plant_record(task, stimulus_id=stim, response="a", ground_truth="a", model_family="encoder",
                        readout="prototype_cosine", seed=seed)


def test_check_file_lists_every_problem_in_order(tmp_path):
    p = tmp_path / "r.jsonl"
    a, b, c = (_trial(s, seed=k).to_json_line() for k, s in enumerate(("a", "b", "c")))
    # lines: 1 a | 2 blank | 3 bad JSON | 4 duplicate of a | 5 invalid UTF-8 | 6 b (seed 1) | 7 c (seed 2) | 8 torn
    p.write_bytes("\n".join([a, "", "{oops", a]).encode() + b"\n\xff\xfe\n" + f"{b}\n{c}\n".encode() + b'{"trial')
    n_ok, errors, total = check_file(p)
    assert n_ok == 3 and total == 5
    assert errors[0].startswith(f"{p}:3: not valid JSON")
    assert errors[1] == f"{p}:4: duplicate trial_id 't|a|m|rep0' (first at line 1)"
    assert errors[2].startswith(f"{p}:5: not valid UTF-8 (byte 0xff at column 1)")
    assert errors[3] == f"{p}:8: incomplete final line (torn write)"
    assert errors[4] == f"{p}: task t mixes run_meta.seed values [0, 1, 2]"
    # max_errors keeps the first messages; the total still counts all
    assert check_file(p, max_errors=2) == (3, errors[:2], 5)
    assert validate_file(p, 1) == (3, errors[:1])


def test_check_file_two_seeds_and_empty_file(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(_trial("a", seed=0).to_json_line() + "\n" + _trial("b", seed=1).to_json_line() + "\n")
    # two distinct seeds are already a mix (boundary of "more than one")
    assert check_file(p) == (2, [f"{p}: task t mixes run_meta.seed values [0, 1]"], 1)
    p.write_text(_trial("a").to_json_line() + "\n")
    # one valid record, no problem -> no "empty file" message
    assert check_file(p) == (1, [], 0)
    p.write_text("")
    assert check_file(p) == (0, [f"{p}: holds no trial records (empty file)"], 1)
    p.write_text("{bad\n")
    # only a bad line: that problem, not also "empty file"
    n_ok, errors, total = check_file(p)
    assert (n_ok, total) == (0, 1) and errors[0].startswith(f"{p}:1: not valid JSON")


def test_has_torn_tail(tmp_path):
    p = tmp_path / "r.jsonl"
    for data, torn in ((b"", False), (b"x\n", False), (b"x", True), (b"x\ny", True)):
        p.write_bytes(data)
        assert has_torn_tail(p) is torn


def test_record_store_file_mode_parents_and_repair(tmp_path):
    p = tmp_path / "a" / "b" / "r.jsonl"  # parent folders are created
    umask = os.umask(0)
    os.umask(umask)
    with RecordStore(p) as s:
        assert s.truncated_bytes == 0  # a new, empty file
    assert os.stat(p).st_mode & 0o777 == 0o644 & ~umask
    p.write_text(_trial("a").to_json_line() + "\n")
    with RecordStore(p) as s:
        assert s.truncated_bytes == 0 and s.done == {"t|a|m|rep0"}  # healthy file: nothing cut
    p.write_bytes(b"{")
    with RecordStore(p) as s:  # a one-byte torn line is cut away
        assert s.truncated_bytes == 1
    assert p.read_bytes() == b""


def test_record_store_append_validates_dicts_and_iterates(tmp_path):
    p = tmp_path / "r.jsonl"
    a = _trial("a")
    s = RecordStore(p)
    assert s.append([a.model_dump(mode="json")]) == 1  # a dict is validated into a record
    assert s.append([a]) == 0  # already stored: nothing written
    assert list(s) == [a]
    s.close()
    s.close()  # a second close is a no-op and touches no other descriptor
    os.fstat(1)
    os.fstat(2)


def test_record_store_failed_open_releases_the_lock(tmp_path):
    # bug found by mutation testing: a corrupt file left the descriptor locked, so a retry in the
    # same process was refused as "being written by another perceptbench process"
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"junkXX\nXX")
    with pytest.raises(RecordError, match=r":1: not valid JSON"):
        RecordStore(p)
    # the file is not perceptbench's: its last line is not cut (issue 20 item 6)
    assert p.read_bytes() == b"junkXX\nXX"
    p.write_text(_trial("a").to_json_line() + "\n")
    with RecordStore(p) as s:
        assert s.done == {"t|a|m|rep0"}


def test_record_store_append_survives_short_writes(tmp_path, monkeypatch):
    # os.write may write fewer bytes than asked; append loops until every byte is written
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    with RecordStore(tmp_path / "r.jsonl") as s:
        assert s.append([_trial("a"), _trial("b")]) == 2
    monkeypatch.undo()
    assert [r.stimulus_id for r in read_records(tmp_path / "r.jsonl")] == ["a", "b"]


def test_check_file_default_max_errors_is_50(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("{bad\n" * 51)
    n_ok, errors, total = check_file(p)
    assert (n_ok, len(errors), total) == (0, 50, 51)
    assert len(validate_file(p)[1]) == 50


def test_score_correct_lists_are_sets_only_against_lists():
    # two lists compare as sets; a list never equals a string even with the same letters
    assert score_correct(["b", "a"], ["a", "b"]) is True
    assert score_correct(["a", "b"], "ab") is False
    assert score_correct(["a"], ["a", "b"]) is False


def test_record_line_form_and_parse_messages(tmp_path):
    r = _trial("é")
    line = r.to_json_line()
    # schema order, no spaces after separators, non-ASCII kept
    assert line.startswith('{"trial_id":"t|é|m|rep0","task_id":"t",') and '"stimulus_id":"é"' in line
    with pytest.raises(RecordError, match=r"^f:3: a record must be a JSON object$"):
        parse_record_line("[1]", "f:3")
    bad = json.loads(line)
    bad["trial_id"] = "x"
    # a record-level (not field) rule is reported in its own words, without pydantic's "Value error,"
    with pytest.raises(RecordError, match=r"^<string>: trial_id 'x' != "):
        parse_record_line(json.dumps(bad))


@pytest.mark.parametrize("change, message", [
    ({"response": float("nan")}, "field response: must be a string, an integer, a list of strings or null (got NaN)"),
    ({"ground_truth": 1.5}, "field ground_truth: must be a string, an integer, a list of strings or null (got 1.5)"),
    ({"rep": "0"}, 'field rep: Input should be a valid integer (got "0")'),
    ({"run_meta": {"seed": 0}}, "field run_meta.model_version: missing"),
    ({"correct": None}, "correct is null although response and ground_truth are set"),
], ids=["nan_response", "float_truth", "string_rep", "missing_nested", "record_rule"])
def test_a_bad_field_is_named_with_what_it_must_be_and_the_value_found(change, message):
    """Messages name the field, what it must hold and the value found, not pydantic's internals: the
    union branch it tried last (``response.str: Input should be a valid string`` for a NaN in an
    integer answer), ``field record: Value error, ...`` for a rule over several fields."""
    obj = json.loads(rec("a").to_json_line())
    obj.update(change)
    with pytest.raises(RecordError) as e:
        parse_record_line(json.dumps(obj), "f:4")
    assert str(e.value) == f"f:4: {message}"


def test_a_field_list_names_only_what_is_wrong_and_json_errors_name_their_column():
    obj = json.loads(rec("a").to_json_line())
    del obj["owner"]
    with pytest.raises(RecordError, match=r"^f:1: missing fields \['owner'\]$"):
        parse_record_line(json.dumps(obj), "f:1")
    with pytest.raises(RecordError, match=r"^f:1: not valid JSON \(Unterminated string starting at column 14\)$"):
        parse_record_line('{"trial_id": "abc', "f:1")
    with pytest.raises(RecordError, match=r"^f:1: not valid JSON \(Expecting ',' delimiter at column 8\)$"):
        parse_record_line('{"a":1 "b":2}', "f:1")


def test_read_records_blank_lines_duplicates_and_missing_file(tmp_path):
    p = tmp_path / "r.jsonl"
    a, b = _trial("a").to_json_line(), _trial("b").to_json_line()
    p.write_text(f"{a}\n\n{b}\n")
    assert [x.stimulus_id for x in read_records(p)] == ["a", "b"]  # a blank line is skipped, not the end
    p.write_text(f"{a}\n{b}\n{a}\n")
    with pytest.raises(RecordError, match=rf"^{p}:3: duplicate trial_id 't\|a\|m\|rep0' \(first at line 1\)$"):
        read_records(p)
    with pytest.raises(RecordError, match=rf"^{tmp_path / 'no.jsonl'}: no such records file$"):
        read_records(tmp_path / "no.jsonl")


def test_record_store_refuses_a_second_writer_with_a_clear_message(tmp_path):
    p = tmp_path / "r.jsonl"
    with RecordStore(p) as s:
        s.append([_trial("a")])
        with pytest.raises(RuntimeError, match=rf"^{p} is being written by another perceptbench process$"):
            RecordStore(p)
        assert s.done == {"t|a|m|rep0"} and s.truncated_bytes == 0
    with RecordStore(p) as s2:  # the refused open released nothing of the first; reopening works
        assert s2.done == {"t|a|m|rep0"}


def test_a_torn_tail_read_is_a_torn_tail_warning_naming_the_file_and_line(tmp_path):
    from perceptbench.records import TornTailWarning

    p = tmp_path / "r.jsonl"
    a, b = _trial("a").to_json_line(), _trial("b").to_json_line()
    p.write_text(f"{a}\n{b[:20]}")
    with pytest.warns(TornTailWarning, match=rf"^{p}:2: incomplete final line \(torn write\)$"):
        assert [x.stimulus_id for x in read_records(p, allow_torn_tail=True)] == ["a"]


def test_a_record_that_cannot_be_written_names_the_trial_and_the_model_and_stays_pending(tmp_path):
    """Issue 20 item 4: an error while writing a record names the file, the trial and the model;
    nothing of its batch is written and the trials are not taken as done (a retry writes them)."""
    p = tmp_path / "records.jsonl"
    bad = rec("b", model="api-model", raw_output="half an emoji \ud83d")  # text that bypassed normalisation
    with RecordStore(p) as s:
        s.append([rec("a")])
        with pytest.raises(RecordError) as ei:
            s.append([rec("c"), bad])
        msg = str(ei.value)
        assert str(p) in msg and repr(bad.trial_id) in msg and "'api-model'" in msg and "surrogate" in msg
        assert s.done == {make_trial_id("t", "a", "m", 0)}
        assert s.append([rec("c"), rec("b", model="api-model", raw_output="half an emoji \ufffd")]) == 2
    assert [r.stimulus_id for r in read_records(p, allow_torn_tail=False)] == ["a", "c", "b"]


@pytest.mark.parametrize("content", [
    b"name,score\nalice,1\nbob,2",  # a foreign file whose last line has no newline
    b"{\"x\": 1}\n{\"trial_id\": \"half",  # a torn tail after a line that is no record
], ids=["foreign_text", "bad_line_before_torn_tail"])
def test_store_never_truncates_a_file_that_is_not_perceptbench_records(tmp_path, content):
    """Issue 20 item 6: the torn-tail repair cut the last line of a foreign file before the run
    stopped with an error."""
    p = tmp_path / "records.jsonl"
    p.write_bytes(content)
    with pytest.raises(RecordError) as e:
        RecordStore(p)
    assert str(p) in str(e.value) and "\n" not in str(e.value)
    assert p.read_bytes() == content


def test_store_still_cuts_a_torn_record_after_valid_lines(tmp_path):
    p = tmp_path / "records.jsonl"
    good = _trial("a").to_json_line() + "\n"
    p.write_bytes(good.encode() + _trial("b").to_json_line().encode()[:40])
    with RecordStore(p) as store:
        assert store.truncated_bytes == 40 and store.done == {_trial("a").trial_id}
    assert p.read_bytes() == good.encode()


@pytest.mark.parametrize("key", ['"vsi"', '"\\u0076si"', '"\\u0076\\u0073\\u0069"'],
                         ids=["plain", "one_escape", "all_escaped"])
def test_vsi_given_twice_is_refused_however_its_key_is_spelled(key):
    """``vsi`` twice in ``run_meta`` is refused whether its key is written plainly or through
    ``\\u`` escapes (the line is then decoded with the duplicate check, not json.loads alone); the
    same line with the key once reads."""
    line = rec().to_json_line()
    assert "vsi" not in line and "\\u" not in line
    twice = line.replace('"run_meta":{', '"run_meta":{' + f"{key}: null, {key}: null, ")
    with pytest.raises(RecordError, match=r"^f:1: field run_meta\.vsi: the key appears twice in one object"):
        parse_record_line(twice, "f:1")
    once = line.replace('"run_meta":{', '"run_meta":{"other": 1, "other": 2, ')  # elsewhere: the last one
    assert parse_record_line(once, "f:1").run_meta.model_extra["other"] == 2


def test_a_whole_last_record_without_its_newline_is_read_and_the_store_ends_it_with_one(tmp_path):
    """A file whose last line is a complete record lacking only its newline (edited or joined by
    hand) loses nothing: readers keep the record without a torn-write warning, ``check_file``
    reports no problem, and a store opened on it adds the newline instead of cutting the line."""
    import warnings

    p = tmp_path / "records.jsonl"
    a, b = _trial("a").to_json_line(), _trial("b").to_json_line()
    p.write_text(f"{a}\n{b}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [x.stimulus_id for x in read_records(p, allow_torn_tail=False)] == ["a", "b"]
    assert check_file(p) == (2, [], 0)
    with RecordStore(p) as s:
        assert s.truncated_bytes == 0 and s.done == {_trial("a").trial_id, _trial("b").trial_id}
        assert s.append([_trial("c")]) == 1
    assert p.read_text() == f"{a}\n{b}\n{_trial('c').to_json_line()}\n"


def test_a_last_line_without_its_newline_that_repeats_a_trial_is_a_duplicate_not_a_record(tmp_path):
    p = tmp_path / "records.jsonl"
    a = _trial("a").to_json_line()
    p.write_text(f"{a}\n{a}")
    n, errors, _ = check_file(p)
    assert n == 1 and errors == [f"{p}:2: duplicate trial_id {_trial('a').trial_id!r} (first at line 1)"]
    with pytest.raises(RecordError, match="duplicate"):
        RecordStore(p)
    assert p.read_text() == f"{a}\n{a}"
