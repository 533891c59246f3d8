"""The image-withheld condition (``--condition image_withheld``): the question asked with no
image, recorded as its own respondent ``{model}[image_withheld]`` beside the image trials,
on a battery task and on a VSI task, with tiny random-weight VLMs."""

from __future__ import annotations

import json

import pytest

from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_file
from perceptbench.testing.tiny_vlm import build_tiny_vlm


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    return build_tiny_vlm("llava", tmp_path_factory.mktemp("vlm") / "tiny-llava")


def _records(out):
    return [json.loads(ln) for ln in (out / "records.jsonl").read_text().splitlines()]


class _SpyVLM:
    """A VLM that answers "1" and keeps every request (images and prompt) it was asked."""

    name, family, model_version, supports_multi_image = "spy", "vlm", "spy@1", True
    generation_settings = {"decoding": "greedy"}

    def __init__(self):
        self.requests = []

    def generate(self, requests, batch_size=8):
        self.requests += list(requests)
        return ["1" for _ in requests]


def test_battery_task_asks_the_prompt_without_the_image(tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    spy = _SpyVLM()
    out = tmp_path / "run"
    cfg = RunConfig(out=out, tasks=("similarity.chart.mark_color",), models=("spy=hf:spy",),
                    conditions=("image", "image_withheld"), cache_mode="off")  # off: every trial asks
    run(cfg, progress=False, load_model=lambda arg: spy)
    recs = [r for r in _records(out) if r["model_family"] != "human"]
    image = {r["stimulus_id"]: r for r in recs if r["model"] == "spy"}
    blind = {r["stimulus_id"]: r for r in recs if r["model"] == "spy[image_withheld]"}
    assert image and set(blind) == set(image)
    # the same question without an image is one request (identical requests of a batch are asked once)
    assert {len(q.images) for q in spy.requests} == {0, 1}
    assert {q.prompt for q in spy.requests if not q.images} == {q.prompt for q in spy.requests if q.images}
    for sid, r in blind.items():
        assert r["run_meta"]["condition"] == "image_withheld" and "condition" not in image[sid]["run_meta"]
        assert r["run_meta"]["image_sha256s"] == [] and r["run_meta"]["stimulus_sha256"] is None
        assert r["prompt_hash"] == image[sid]["prompt_hash"] and r["readout"] == "vlm_prompt"
    rows = score_file(out / "records.jsonl")
    models = {r.model for r in rows}
    assert {"spy", "spy[image_withheld]"} <= models  # scored as two respondents, never pooled
    n_blind = [r for r in rows if r.model == "spy[image_withheld]" and r.n is not None]
    assert n_blind and max(r.n for r in n_blind) <= len(blind)


def test_battery_task_with_a_tiny_vlm_end_to_end(tiny_llava, tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    run(RunConfig(out=out, tasks=("closure.nat.silhouette",), models=(f"llava=hf:{tiny_llava}",),
                  conditions=("image_withheld",)), progress=False)
    recs = [r for r in _records(out) if r["model_family"] != "human"]
    assert recs and {r["model"] for r in recs} == {"llava[image_withheld]"}
    assert all(isinstance(r["raw_output"], str) for r in recs)
    rows = score_file(out / "records.jsonl")
    assert any(r.model == "llava[image_withheld]" for r in rows)


def test_vsi_task_records_the_no_image_distribution_like_a_perturbed_condition(tiny_llava, tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    summary = run(RunConfig(out=out, tasks=("vsi.salbench.syn@n=4",), models=(f"llava=hf:{tiny_llava}",),
                            conditions=("image", "image_withheld")), progress=False)
    recs = _records(out)
    blind = [r for r in recs if r["model"] == "llava[image_withheld]"]
    image = [r for r in recs if r["model"] == "llava"]
    assert len(blind) == 4 and len(image) == 12  # one question per sample; clean + 2 blurs per sample
    for r in blind:
        v = r["run_meta"]["vsi"]
        assert r["stimulus_id"].endswith("~image_withheld") and r["readout"] == "vlm_vsi_perturbed"
        assert v["condition"] == "image_withheld" and v["image_sha256"] is None and v["sigma_px"] == 0.0
        assert len(v["tokens"]) == 50 and len(v["logprobs"]) == 50 and r["run_meta"]["condition"] == "image_withheld"
    clean = {r["run_meta"]["vsi"]["sample_id"]: r for r in image if r["readout"] == "vlm_vsi_clean"}
    for r in blind:  # the question without its image: another first-token distribution
        c = clean[r["run_meta"]["vsi"]["sample_id"]]["run_meta"]["vsi"]
        assert r["prompt_hash"] == clean[r["run_meta"]["vsi"]["sample_id"]]["prompt_hash"]
        assert r["run_meta"]["vsi"]["logprobs"] != c["logprobs"]
    assert summary.per_task_model[("vsi.salbench.syn@n=4", "llava[image_withheld]")] == 4
    rows = score_file(out / "records.jsonl")
    image_rows = [r for r in rows if r.model == "llava"]
    assert any(r.metric.startswith("vsi_median") for r in image_rows)  # the image trials score as before
    # a rerun finds every trial of both conditions done and asks nothing
    again = run(RunConfig(out=out, tasks=("vsi.salbench.syn@n=4",), models=(f"llava=hf:{tiny_llava}",),
                          conditions=("image", "image_withheld")), progress=False)
    assert again.written == 0 and again.skipped == 16


def test_unknown_condition_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="--condition 'no_such'"):
        run(RunConfig(out=tmp_path / "run", tasks=("similarity.chart.mark_color",), models=("spy=hf:spy",),
                      conditions=("no_such",)), progress=False, load_model=lambda arg: _SpyVLM())
    assert not (tmp_path / "run" / "records.jsonl").exists()
