"""Merging several runs by trial id (perceptbench.runs.load_runs)."""

import json

import numpy as np
import pytest

from perceptbench.records import RecordError
from perceptbench.runs import ABSENT, SHOWN_CHARS, conflict_message, first_difference, load_runs
from perceptbench.tasks import get_task

from helpers.records import plant_record, plant_records, plant_vsi_record


def rec(stim="s1", model="m", response=1, gt=1, seed=0, run_id="run-a", **meta):
    return plant_record("t", stimulus_id=stim, model=model, response=response, ground_truth=gt,
                        model_family="encoder", readout="odd_one_out_cosine", principle="similarity", track="chart",
                        response_space="position", human_ref_id="h", raw_output="{}", prompt_id="p",
                        prompt_hash="abcd1234", model_version="v1", seed=seed, run_id=run_id, run_meta=meta)


def write(dirpath, recs):
    plant_records(dirpath / "records.jsonl", recs)
    return dirpath


def test_identical_duplicates_collapse_ignoring_run_id(tmp_path):
    a = write(tmp_path / "a", [rec("s1"), rec("s2")])
    b = write(tmp_path / "b", [rec("s2", run_id="run-b"), rec("s3", run_id="run-b")])
    merged = load_runs([a, b / "records.jsonl"])  # a directory and a file, mixed
    assert [r.stimulus_id for r in merged] == ["s1", "s2", "s3"]
    assert merged[1].run_meta.run_id == "run-a"  # the first one read is kept


def test_real_human_records_of_two_runs_merge(tmp_path, mirror):
    """The issue's case: two runs of one seed share identical human records (other run ids)."""
    task = get_task("similarity.chart.mark_color@kernel=l5")
    stim = task.stimuli(0)
    human = task.human_records(0, "run-a", stim)
    a = write(tmp_path / "a", human)
    b = write(tmp_path / "b", task.human_records(0, "run-b", stim))
    merged = load_runs([a, b])
    assert len(human) > 100 and [r.trial_id for r in merged] == [r.trial_id for r in human]


@pytest.mark.parametrize("other, field", [
    (dict(response=2), "response"),
    (dict(stimulus_sha256="ff"), "run_meta.stimulus_sha256"),
])
def test_conflicting_duplicate_is_refused_naming_trial_and_both_files(tmp_path, other, field):
    a = write(tmp_path / "a", [rec("s1", stimulus_sha256="00")])
    b = write(tmp_path / "b", [rec("s1", run_id="run-b", **{"stimulus_sha256": "00", **other})])
    with pytest.raises(RecordError) as e:
        load_runs([a, b])
    msg = str(e.value)
    assert "t|s1|m|rep0" in msg and str(a / "records.jsonl") in msg and str(b / "records.jsonl") in msg
    assert field in msg and "\n" not in msg


def test_conflict_names_both_lines_and_the_first_differing_logprob_not_the_whole_list(tmp_path):
    """The user's case: one VSI trial in two runs whose 50 first-token log-probabilities differ in
    the 4th.  The refusal printed the whole run_meta.vsi.logprobs of both records (2,300
    characters) and no line numbers; it names FILE:LINE of each record and logprobs[3]."""
    task = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    ids = list(range(50))
    lps = np.log(np.linspace(1, 0.01, 50) / np.linspace(1, 0.01, 50).sum()).tolist()
    other = lps[:3] + [lps[3] - 0.001] + lps[4:]
    a = write(tmp_path / "a", [plant_vsi_record(task, "clean", "s1", ids, lps),
                               plant_vsi_record(task, "clean", "s2", ids, lps)])
    b = write(tmp_path / "b", [plant_vsi_record(task, "clean", "s2", ids, other, run_id="r2")])
    with pytest.raises(RecordError) as e:
        load_runs([a, b])
    msg = str(e.value)
    assert f"{a / 'records.jsonl'}:2 and {b / 'records.jsonl'}:1" in msg
    assert f"run_meta.vsi.logprobs[3]: {json.dumps(lps[3])} vs {json.dumps(other[3])};" in msg
    assert json.dumps(lps[4]) not in msg and len(msg) < 400 + len(str(tmp_path)) * 2
    assert "conflicting trials cannot be merged (keep one run, or rerun the model under another short name)" in msg


def test_conflict_shows_long_values_cut_to_80_characters(tmp_path):
    long_a, long_b = "A" * 500, "A" * 499 + "B"
    a = write(tmp_path / "a", [rec("s1").model_copy(update={"raw_output": long_a})])
    b = write(tmp_path / "b", [rec("s1").model_copy(update={"raw_output": long_b})])
    with pytest.raises(RecordError) as e:
        load_runs([a, b])
    msg = str(e.value)
    shown = '"' + "A" * (SHOWN_CHARS - 4) + "..."  # the JSON string's quote, then 76 letters
    assert SHOWN_CHARS == 80 and len(shown) == 80
    assert f"first in raw_output: {shown} vs {shown};" in msg and long_a not in msg


@pytest.mark.parametrize("a, b, expected", [
    ({"x": 1}, {"x": 1}, None),
    ({"x": 1, "y": 2}, {"x": 1, "y": 3}, ("y", 2, 3)),
    ({"m": {"v": {"lp": [0.1, 0.2, 0.3]}}}, {"m": {"v": {"lp": [0.1, 0.25, 0.4]}}}, ("m.v.lp[1]", 0.2, 0.25)),
    ({"l": [1, 2]}, {"l": [1, 2, 3]}, ("l[2]", ABSENT, 3)),
    ({"x": 1}, {"x": 1, "z": None}, ("z", ABSENT, None)),
    ({"r": [{"k": "a"}]}, {"r": [{"k": "b"}]}, ("r[0].k", "a", "b")),
    ({"r": "A"}, {"r": ["A"]}, ("r", "A", ["A"])),
])
def test_first_difference_gives_the_dotted_path_and_both_values(a, b, expected):
    assert first_difference(a, b) == expected


def test_conflict_message_refuses_two_records_that_do_not_differ(tmp_path):
    with pytest.raises(ValueError, match="do not differ"):
        conflict_message("t|s1|m|rep0", (tmp_path / "a.jsonl", 1), (tmp_path / "b.jsonl", 1), {"x": [1]}, {"x": [1]})


def test_different_seeds_are_refused_naming_both_files(tmp_path):
    a = write(tmp_path / "a", [rec("s1", seed=0)])
    b = write(tmp_path / "b", [rec("s2", seed=1)])
    with pytest.raises(RecordError) as e:
        load_runs([a, b])
    msg = str(e.value)
    assert str(a / "records.jsonl") in msg and str(b / "records.jsonl") in msg and "seed 1" in msg


def test_bad_paths_and_empty_runs_are_refused(tmp_path):
    with pytest.raises(RecordError, match="no run directory"):
        load_runs([])
    with pytest.raises(RecordError, match="no such run directory"):
        load_runs([tmp_path / "nope"])
    (tmp_path / "d").mkdir()
    with pytest.raises(RecordError, match="not a run directory"):
        load_runs([tmp_path / "d"])
    (tmp_path / "d" / "records.jsonl").write_text("")
    with pytest.raises(RecordError, match="holds no trial records"):
        load_runs([tmp_path / "d"])


def test_inputs_are_not_modified(tmp_path):
    a = write(tmp_path / "a", [rec("s1")])
    b = write(tmp_path / "b", [rec("s1", response=3)])
    before = [(p / "records.jsonl").read_bytes() for p in (a, b)]
    with pytest.raises(RecordError):
        load_runs([a, b])
    assert [(p / "records.jsonl").read_bytes() for p in (a, b)] == before
    assert json.loads(before[0].splitlines()[0])["response"] == 1
