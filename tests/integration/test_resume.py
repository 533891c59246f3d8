"""Resuming never mixes versions silently (issue 7 item 3), and one trial can be run and shown
(item 8): ``--stimulus`` runs only those stimuli into normal records, ``show`` prints one."""

from __future__ import annotations

import json

import pytest

from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_records
from perceptbench.tasks import get_task
from perceptbench.tasks.gestalt import SilhouetteTask

from helpers.cli import cli

TASK = "closure.nat.silhouette"
IDS = ("silh_airplane1", "silh_airplane4")


class EchoVLM:
    """A deterministic VLM: answers with a class name that depends on the prompt's length."""

    name = "echo"
    family = "vlm"
    supports_multi_image = True

    def __init__(self, version="echo@1", max_new_tokens=40):
        self.model_version = version
        self.generation_settings = {"decoding": "greedy", "max_new_tokens": max_new_tokens}
        self.calls = 0

    def generate(self, requests, batch_size=8):
        self.calls += len(requests)
        return [("bear", "I think it is a knife.")[len(r.prompt) % 2] for r in requests]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))


def _run(out, ids=IDS, loader=None, **kw):
    vlm = loader or EchoVLM()
    return run(RunConfig(out=out, tasks=[TASK], models=["echo=hf:/nonexistent"], stimuli=ids, **kw),
               progress=False, load_model=lambda arg: vlm)


def test_stimulus_runs_only_those_and_resumes_like_any_run(tmp_path):
    out = tmp_path / "run"
    s = _run(out, ids=IDS[:1])
    recs = read_records(out / "records.jsonl")
    model = [r for r in recs if r.model == "echo"]
    assert [r.stimulus_id for r in model] == [IDS[0]]
    assert {r.stimulus_id for r in recs} == {IDS[0]}  # human records of that stimulus only
    assert s.written == len(recs)
    s2 = _run(out, ids=IDS)  # resume: the finished trial is skipped, the new one is written
    assert s2.skipped == 1 and s2.written - s2.human_written == 1
    rows = score_records(read_records(out / "records.jsonl"))
    assert any(r.model == "echo" and r.metric == "accuracy" and r.n == 2 for r in rows)


def test_unknown_stimulus_is_a_one_line_error_listing_valid_ids(tmp_path):
    with pytest.raises(ValueError) as e:
        _run(tmp_path / "run", ids=("silh_nope",))
    msg = str(e.value)
    assert "\n" not in msg and "silh_nope" in msg and "silh_airplane1" in msg
    assert not (tmp_path / "run" / "records.jsonl").exists()  # nothing written
    with pytest.raises(ValueError, match="probe-train"):
        _run(tmp_path / "run", ids=("silh_airplane2",))


def test_resume_under_a_new_prompt_is_refused_then_allowed_and_split(tmp_path, monkeypatch):
    out = tmp_path / "run"
    _run(out, ids=IDS[:1])
    before = (out / "records.jsonl").read_bytes()
    monkeypatch.setattr(SilhouetteTask, "prompt_text", SilhouetteTask.prompt_text + " Answer in one word.")
    with pytest.raises(ValueError) as e:
        _run(out, ids=IDS)
    msg = str(e.value)
    assert "\n" not in msg and "prompt changed" in msg and "--allow-mixed" in msg and "--out" in msg
    assert (out / "records.jsonl").read_bytes() == before  # nothing written
    s = _run(out, ids=IDS, allow_mixed=True)
    assert [d.what for d in s.mixed] == ["prompt"]
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["mixed"][0]["what"] == "prompt" and run_json["mixed"][0]["run_id"] == s.run_id
    recs = [r for r in read_records(out / "records.jsonl") if r.model == "echo"]
    new = [r for r in recs if r.stimulus_id == IDS[1]][0]
    assert new.run_meta.model_extra["mixed_resume"] == [f"prompt ({TASK}, echo)"]
    assert len({r.prompt_hash for r in recs}) == 2
    # scoring never pools the two prompt versions: one respondent per version, one trial each
    rows = [r for r in score_records(read_records(out / "records.jsonl")) if r.metric == "accuracy"]
    echo = sorted(r.model for r in rows if r.model.startswith("echo"))
    assert len(echo) == 2 and all(m.startswith("echo[prompt=") for m in echo)
    assert all(r.n == 1 for r in rows if r.model.startswith("echo"))


def test_package_version_task_settings_and_generation_settings_are_compared(tmp_path, monkeypatch):
    out = tmp_path / "run"
    _run(out, ids=IDS[:1])
    import perceptbench.runner as runner

    monkeypatch.setattr(runner, "__version__", "9.9.9")
    with pytest.raises(ValueError, match=r"package version changed .*'0\.1\.0' -> '9\.9\.9'"):
        _run(out, ids=IDS)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"generation settings changed"):
        _run(out, ids=IDS, loader=EchoVLM(max_new_tokens=8))
    with pytest.raises(ValueError, match=r"model_version changed .*another short name"):
        _run(out, ids=IDS, loader=EchoVLM(version="echo@2"), allow_mixed=True)  # other weights: never mixed
    monkeypatch.setattr(SilhouetteTask, "defaults", {"fake_setting": "1"})
    with pytest.raises(ValueError, match=r"task settings changed"):
        _run(out, ids=IDS)


def test_show_prints_one_trial_without_torch(tmp_path):
    out = tmp_path / "run"
    _run(out, ids=IDS[:1])
    tid = f"{TASK}|{IDS[0]}|echo|rep0"
    p = cli("show", str(out), tid, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr  # TORCH_IMPORTED (97) if show imported torch
    text = " ".join(p.stdout.split())  # rich wraps long lines
    assert "What object is shown in this black silhouette?" in p.stdout  # the prompt text
    assert "raw_output:" in p.stdout and ("bear" in p.stdout or "knife" in p.stdout)
    assert '"rule"' in p.stdout  # parse metadata
    png = out / "stimuli" / TASK / f"{IDS[0]}.png"
    assert png.is_file() and str(png) in p.stdout.replace("\n", "")
    assert "pixels match the record's stimulus_sha256" in text
    bad = cli("show", str(out), "nope")
    assert bad.returncode == 2 and "no trial 'nope'" in bad.stderr


def test_cache_modes_reach_the_model(tmp_path):
    """run(cache_mode=...): ``off`` writes no cache entry, ``refresh`` asks the model again."""
    vlm = EchoVLM()
    _run(tmp_path / "a", ids=IDS, loader=vlm, cache_mode="off")
    assert vlm.calls == 2
    assert not list((tmp_path / "cache").rglob("*.json"))
    _run(tmp_path / "b", ids=IDS, loader=vlm)
    assert vlm.calls == 4  # the cache was empty: asked again
    s = _run(tmp_path / "c", ids=IDS, loader=vlm)
    assert vlm.calls == 4 and s.cache_hits == 2
    s = _run(tmp_path / "d", ids=IDS, loader=vlm, cache_mode="refresh")
    assert vlm.calls == 6 and s.cache_hits == 0


def test_cli_stimulus_errors_are_one_line(tmp_path):
    p = cli("run", "--task", TASK, "--stimulus", "silh_nope", "--out", str(tmp_path / "r"), "--no-progress")
    text = " ".join(p.stderr.split())  # one message (rich wraps it at the console width)
    assert p.returncode == 2 and text.count("error:") == 1 and "silh_nope" in text, p.stdout + p.stderr
    assert "valid ids: silh_airplane1" in text and not (tmp_path / "r" / "records.jsonl").exists()
    p = cli("run", "--task", TASK, "--no-cache", "--refresh-cache", "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "exclude each other" in p.stderr


def test_resume_says_how_many_human_records_were_already_written(tmp_path):
    from perceptbench.records import read_records

    sid = [s for s in get_task("similarity.chart.mark_color").stimuli(0) if s.split == "test"][0].stimulus_id
    args = ("run", "--task", "similarity.chart.mark_color", "--stimulus", sid, "--model", "efficientnet-lite0", "--out", tmp_path / "r",
            "--no-progress")
    p = cli(*args, in_process=True)
    rc, first = p.returncode, " ".join(p.stdout.split())  # the console wraps long paths
    assert rc == 0, first
    n_h = sum(r.model_family == "human" for r in read_records(tmp_path / "r" / "records.jsonl"))
    assert n_h > 0 and "human records already written" not in first
    p = cli(*args, in_process=True)
    rc, again = p.returncode, " ".join(p.stdout.split())  # the console wraps long paths
    # the rerun writes nothing: 1 model trial skipped, and the n_h human records were already there
    assert rc == 0 and "wrote 0 records" in again
    assert f"skipped 1 finished trials ({n_h} human records already written)" in again, again
