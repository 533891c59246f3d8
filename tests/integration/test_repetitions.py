"""Repetitions at non-zero temperature, scored by majority vote (seed 000 D.4; ``--repetitions N
--temperature T``), end to end on a tiny VLM: every repetition is a recorded trial, the settings are
in every record, the cache keys each repetition apart, a resume at another temperature is refused,
the run is reproducible, and the scores are the votes' with rows that say so."""

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.records import read_records  # noqa: E402
from perceptbench.scorers.repetitions import majority_vote  # noqa: E402
from perceptbench.testing.tiny_vlm import build_tiny_vlm  # noqa: E402
from helpers.cli import cli  # noqa: E402

TASK = "similarity.chart.series_count"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_vlm("llava", tmp_path_factory.mktemp("reps") / "tiny-llava")


def _ids(n=4):
    from perceptbench.tasks import get_task

    return [s.stimulus_id for s in get_task(TASK).stimuli(0) if s.split == "test"][:n]


def _run(tiny, out, cache, *extra):
    args = ["run", "--model", f"vlm=hf:{tiny}", "--task", TASK, "--out", str(out), "--no-progress"]
    for sid in _ids():
        args += ["--stimulus", sid]
    return cli(*args, *extra, env={"PERCEPTBENCH_RESPONSE_CACHE": str(cache)})


@pytest.fixture(scope="module")
def reps_run(tiny, tmp_path_factory):
    root = tmp_path_factory.mktemp("reps_run")
    p = _run(tiny, root / "run", root / "cache", "--repetitions", "3", "--temperature", "1.5")
    assert p.returncode == 0, p.stdout + p.stderr
    return root


def test_every_repetition_is_a_recorded_trial_with_its_settings(reps_run):
    recs = [r for r in read_records(reps_run / "run" / "records.jsonl") if r.model == "vlm"]
    assert sorted((r.stimulus_id, r.rep) for r in recs) == sorted((s, i) for s in _ids() for i in range(3))
    for r in recs:
        s = r.run_meta.model_extra["settings"]
        assert r.n_reps == 3 and s["temperature"] == 1.5 and s["do_sample"] is True and s["decoding"] == "sample"
    by_stim = {}
    for r in recs:
        by_stim.setdefault(r.stimulus_id, []).append(r.raw_output)
    assert any(len(set(v)) > 1 for v in by_stim.values())  # sampled: repetitions differ


def test_scores_are_the_votes_and_the_rows_say_so(reps_run):
    import json

    recs = sorted((r for r in read_records(reps_run / "run" / "records.jsonl") if r.model == "vlm"),
                  key=lambda r: (r.stimulus_id, r.rep))
    right = n = 0
    for sid in _ids():
        rs = [r for r in recs if r.stimulus_id == sid]
        vote, _ = majority_vote([r.response for r in rs])
        if vote is not None:
            n += 1
            right += vote == rs[0].ground_truth
    rows = {r["metric"]: r for r in json.loads((reps_run / "run" / "scores.json").read_text()) if r["model"] == "vlm"}
    assert n > 0 and rows["accuracy"]["n"] == n and rows["accuracy"]["value"] == pytest.approx(right / n)
    assert rows["n_repetitions"]["value"] == 3 and "majority vote" in rows["n_repetitions"]["note"]
    assert "temperature 1.5" in rows["n_repetitions"]["note"]


def test_rerun_resumes_and_a_fresh_run_without_cache_gives_the_same_answers(tiny, reps_run, tmp_path):
    before = (reps_run / "run" / "records.jsonl").read_bytes()
    p = _run(tiny, reps_run / "run", reps_run / "cache", "--repetitions", "3", "--temperature", "1.5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (reps_run / "run" / "records.jsonl").read_bytes() == before  # every repetition finished: nothing asked
    again = _run(tiny, tmp_path / "again", tmp_path / "other-cache", "--repetitions", "3", "--temperature", "1.5")
    assert again.returncode == 0, again.stderr
    key = lambda path: sorted((r.trial_id, r.raw_output) for r in read_records(path) if r.model == "vlm")
    assert key(tmp_path / "again" / "records.jsonl") == key(reps_run / "run" / "records.jsonl")


def test_resume_at_another_temperature_is_refused_before_anything_is_written(tiny, reps_run):
    """A stimulus more, so the model loads and its settings are compared with the finished trials'."""
    before = (reps_run / "run" / "records.jsonl").read_bytes()
    p = _run(tiny, reps_run / "run", reps_run / "cache", "--repetitions", "3", "--temperature", "0.7",
             "--stimulus", _ids(5)[-1])
    assert p.returncode != 0 and "temperature" in (p.stdout + p.stderr)
    assert (reps_run / "run" / "records.jsonl").read_bytes() == before


def test_repetitions_without_temperature_are_refused_in_one_line(tiny, tmp_path):
    p = _run(tiny, tmp_path / "r", tmp_path / "c", "--repetitions", "3")
    assert p.returncode != 0 and "--temperature" in p.stderr + p.stdout and not (tmp_path / "r" / "records.jsonl").exists()
