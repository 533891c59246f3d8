"""SalBench tasks end to end: default encoder (linear probe), a tiny local VLM (prompt
readout, few-shot, multi-image skip), an image-text encoder (zero-shot retrieval) on the
natural-split fixture."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch", reason="model extra not installed")

from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_file
from perceptbench.tasks import get_task
from helpers.paths import FIXTURES

FIXTURE = FIXTURES / "salbench" / "local_annotations.json"


def rows_of(path):
    return {(r.model, r.metric): r for r in score_file(path)}


def test_default_encoder_detection_syn_cli(tmp_path):
    out = tmp_path / "run"
    p = subprocess.run([sys.executable, "-m", "perceptbench.cli", "run", "--task", "salbench.detection.syn@n=30,n_probe=30",
                        "--out", str(out), "--no-progress"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    assert len(recs) == 30
    assert {r.readout for r in recs} == {"linear_probe"} and {r.response_space for r in recs} == {"multilabel"}
    assert all(len(r.response) == 1 and r.response[0] in ("Orientation", "Color", "Size") for r in recs)
    assert {r.manipulated_value.split("/")[1] for r in recs} == {"easy", "medium", "hard"}
    rows = rows_of(out / "records.jsonl")
    for metric in ("exact_match", "mean_f1", "f1[Color]", "exact_match@nulls_excluded", "mean_f1@defined_categories",
                   "exact_match[difficulty=hard]", "exact_match[feature_difficulty=size/easy]"):
        assert ("efficientnet-lite0", metric) in rows
    em = rows[("efficientnet-lite0", "exact_match")]
    assert em.value == pytest.approx(np.mean([r.correct for r in recs]))
    assert em.ci_low <= em.value <= em.ci_high


def test_prompts_and_visual_box():
    t = get_task("salbench.referring.syn@n=3,n_probe=3")
    s = [x for x in t.stimuli(0) if x.split == "test"][0]
    imgs, prompt, _ = t.vlm_request(s, 0)
    assert f"a scene with 48 {s.meta['object_category']}" in prompt
    assert s.meta["bbox_text"] in prompt and "Orientation, Color, Focus, Shape, Size, Location, Pattern" in prompt
    v = get_task("salbench.visual_referring.syn@n=3,n_probe=3")
    sv = [x for x in v.stimuli(0) if x.split == "test"][0]
    img = np.asarray(sv.render())
    x0, y0, x1, y1 = sv.meta["bbox"]
    red = (img[..., 0] > 200) & (img[..., 1] < 60) & (img[..., 2] < 60)
    assert red[max(0, y0 - 6):y1 + 7, max(0, x0 - 6):x1 + 7].sum() > 4 * (x1 - x0)
    assert not (np.asarray(s.render())[..., 0] > 200).all()
    d = get_task("salbench.detection.syn@n=3,n_probe=6,shots=3")
    sd = [x for x in d.stimuli(0) if x.split == "test"][0]
    imgs, prompt, extra = d.vlm_request(sd, 0)
    assert len(imgs) == 4 and prompt.count("Answer: ") == 3 and "Question (image 4)" in prompt
    assert len(extra["fewshot_stimulus_ids"]) == 3 and all(i.startswith("probe-") for i in extra["fewshot_stimulus_ids"])


@pytest.fixture(scope="module")
def tiny_vlm_dir(tmp_path_factory):
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    return build_tiny_vlm("qwen2_vl", tmp_path_factory.mktemp("vlm") / "tiny-qwen")


def test_tiny_vlm_detection_and_fewshot(tiny_vlm_dir, tmp_path, monkeypatch):
    from perceptbench.models.registry import load_model

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    vlm = load_model(f"hf:{tiny_vlm_dir}")
    tasks = ["salbench.detection.syn@n=3,n_probe=6", "salbench.detection.syn@n=3,n_probe=6,shots=3"]
    run(RunConfig(out=tmp_path / "run", tasks=tasks, models=[f"hf:{tiny_vlm_dir}"], batch_size=4), progress=False,
        load_model=lambda _a: vlm)
    recs = read_records(tmp_path / "run" / "records.jsonl")
    assert len(recs) == 6 and {r.readout for r in recs} == {"vlm_prompt"}
    few = [r for r in recs if "shots=3" in r.task_id]
    assert vlm.supports_multi_image
    assert all(len(r.run_meta.model_extra["image_sha256s"]) == 4 for r in few)
    assert len({r.prompt_hash for r in recs}) >= 2
    rows = rows_of(tmp_path / "run" / "records.jsonl")
    assert ("tiny-qwen", "null_rate") in rows

    class SingleImage:
        def __init__(self, v):
            self.v = v
            for a in ("name", "model_version", "family", "generation_settings"):
                setattr(self, a, getattr(v, a))
            self.supports_multi_image = False

        def generate(self, requests, batch_size=8):
            raise AssertionError("must not be called for a skipped few-shot task")

    run(RunConfig(out=tmp_path / "run2", tasks=tasks[1:], models=["single=hf:x"], batch_size=4), progress=False,
        load_model=lambda _a: SingleImage(vlm))
    rows = rows_of(tmp_path / "run2" / "records.jsonl")
    sk = rows[("tiny-qwen", "skipped")]
    assert "does not accept several images" in sk.note


def test_text_encoder_retrieval_on_natural_fixture(tmp_path):
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "clip")
    task = f"salbench.detection.nat@source={FIXTURE}"
    run(RunConfig(out=tmp_path / "run", tasks=[task], models=[f"clip=hf:{d}"]), progress=False)
    recs = read_records(tmp_path / "run" / "records.jsonl")
    assert len(recs) == 1 and recs[0].readout == "zero_shot_retrieval"
    assert set(json.loads(recs[0].raw_output)["cosine"]) == {"Orientation", "Color", "Focus", "Shape", "Size",
                                                             "Location", "Pattern"}
    assert recs[0].manipulated_value == 11  # distractors counted from the O3 mask
    rows = rows_of(tmp_path / "run" / "records.jsonl")
    assert rows[("clip", "retrieval_chance_top1")].value == pytest.approx(1 / 7)
    assert rows[("clip", "retrieval_chance_top3")].value == pytest.approx(3 / 7)
    assert ("clip", "exact_match[distractors=7-15]") in rows or any(k[1].startswith("exact_match[distractors=")
                                                                    for k in rows)


def test_fewshot_examples_vary_per_trial_and_balance_labels():
    d = get_task("salbench.detection.syn@n=30,n_probe=30,shots=3")
    test = [x for x in d.stimuli(0) if x.split == "test"]
    sets = [tuple(e.stimulus_id for e in d.fewshot_examples(0, s.stimulus_id)) for s in test]
    assert len(set(sets)) > 1
    lasts = {d.fewshot_examples(0, s.stimulus_id)[-1].ground_truth[0] for s in test}
    assert len(lasts) > 1  # no label is always shown last
    for s in test[:5]:
        labels = sorted(e.ground_truth[0] for e in d.fewshot_examples(0, s.stimulus_id))
        assert labels == ["Color", "Orientation", "Size"]
    assert sets == [tuple(e.stimulus_id for e in d.fewshot_examples(0, s.stimulus_id)) for s in test]


def test_natural_split_scores_every_item_by_default_and_probe_needs_opt_in():
    t = get_task(f"salbench.detection.nat@source={FIXTURE}")
    assert all(s.split == "test" for s in t.stimuli(0))
    with pytest.raises(ValueError, match="probe_fraction"):
        get_task(f"salbench.detection.nat@source={FIXTURE},probe_fraction=2").stimuli(0)
    # settings are validated when the task is made (issue 7 item 7), naming setting, value and range
    with pytest.raises(ValueError, match=r"setting n='abc' is invalid; allowed: an integer in \[3, 1000000\]"):
        get_task("salbench.detection.syn@n=abc")


def test_referring_prompt_refuses_missing_box(tmp_path):
    ann = tmp_path / "a.json"
    ann.write_text(json.dumps([{"image_id": "x", "split": "nat", "answer": "Color", "n_distractors": 4,
                                "object_category": "cups",
                                "image": "${PERCEPTBENCH_MIRROR}/kotseruba-p3o3/examples/images/C4kfsNTXa2Irj.jpg"}]))
    t = get_task(f"salbench.referring.nat@source={ann}")
    s = t.stimuli(0)[0]
    with pytest.raises(ValueError, match="bbox_text"):
        t.vlm_request(s, 0)


def test_synthetic_stimuli_are_generated_lazily(monkeypatch):
    """Listing a synthetic task's stimuli renders nothing; metadata and images come on first use,
    and only the metadata is kept (before: every array was rendered up front and kept)."""
    from perceptbench.stimuli import search_arrays as sa
    from perceptbench.tasks import get_task

    calls = []
    real = sa.make_search_stimulus
    monkeypatch.setattr(sa, "make_search_stimulus", lambda *a, **k: calls.append(a) or real(*a, **k))
    task = get_task("salbench.visual_referring.syn@n=30,n_probe=6")
    stimuli = task.stimuli(0)
    assert len(stimuli) == 36 and calls == []
    s = [x for x in stimuli if x.split == "test"][0]
    img = s.render()
    assert len(calls) == 1 and img.size == (512, 512)
    assert s.meta["n_distractors"] == 48 and len(calls) == 1  # filled by render, no second rendering
    ref = real(*calls[0])
    assert s.meta["bbox"] == list(ref.target_bbox) and s.meta["object_category"] == ref.object_category
    other = [x for x in stimuli if x.split == "test"][1]
    assert other.meta["feature"] and len(calls) == 2 - 1  # plan fields need no rendering
    assert "bbox_text" in dict(other.meta) and len(calls) == 2
