"""VSI on external benchmarks through the CLI: POPE and HallusionBench fixtures (in each release's
own format, synthetic images), regions from the grounding step with tiny random Grounding DINO and
SAM saved from configs, the whole-image fallback (counted), and a one-line error for a missing
image folder before any model is loaded."""

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.records import read_records
from helpers.paths import FIXTURES
from helpers.cli import cli
from perceptbench.vsi.samples import vsi_samples

FIX = FIXTURES


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from perceptbench.testing.tiny_grounding import build_tiny_grounding_dino, build_tiny_sam
    from perceptbench.testing.tiny_vlm import build_tiny_llava

    d = tmp_path_factory.mktemp("vsiext")
    det, seg = build_tiny_grounding_dino(), build_tiny_sam()
    for obj, sub in ((det, "gdino"), (seg, "sam")):
        obj.model.save_pretrained(d / sub)
        obj.processor.save_pretrained(d / sub)
    return build_tiny_llava(d / "tiny-llava", init_range=1.0), d / "gdino", d / "sam", d


def _pope_images(folder: Path):
    folder.mkdir(parents=True, exist_ok=True)
    names = {json.loads(l)["image"] for l in (FIX / "pope" / "coco_pope_adversarial.json").read_text().splitlines()
             if l.strip()}
    rng = np.random.default_rng(0)
    for n in sorted(names):
        im = Image.fromarray(rng.integers(0, 256, (96, 128, 3), dtype=np.uint8))
        ImageDraw.Draw(im).ellipse((40, 30, 80, 70), fill=(250, 250, 0))
        im.save(folder / n, "JPEG")


def test_vsi_pope_grounding_and_hallusionbench_fallback_cli(models, tmp_path):
    vlm, gdino, sam, _ = models
    _pope_images(tmp_path / "val2014")
    hb_rows = json.loads((FIX / "hallusionbench" / "HallusionBench.json").read_text())
    for r in hb_rows:
        if r["filename"]:
            p = tmp_path / "hb" / r["filename"].removeprefix("./")
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (64, 48), (200, 30, 30)).save(p)
    pope = (f"vsi.pope@images={tmp_path / 'val2014'},questions={FIX / 'pope' / 'coco_pope_adversarial.json'},"
            f"detector={gdino},segmenter={sam},limit=4")
    # box_threshold=1: no box can score above it -> the whole-image fallback path, counted
    hb = (f"vsi.hallusionbench@images={tmp_path / 'hb'},questions={FIX / 'hallusionbench' / 'HallusionBench.json'},"
          f"detector={gdino},segmenter={sam},box_threshold=1,verbal_conf=0")
    out = tmp_path / "run"
    p = cli("run", "--model", f"hf:{vlm}", "--task", pope, "--task", hb, "--out", str(out), "--no-progress",
            "--batch-size", "4", env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    pr = [r for r in recs if r.task_id.startswith("vsi.pope")]
    hr = [r for r in recs if r.task_id.startswith("vsi.hallusionbench")]
    assert len(pr) == 12 and len(hr) == 15
    for r in pr:
        v = r.run_meta.model_extra["vsi"]
        assert v["benchmark"] == "pope.adversarial"
        if v["condition"] == "region_blur":
            assert v["region_source"] == "grounding" and not v["fallback"]
            assert v["region"]["meta"]["phrase"] == r.run_meta.model_extra["object_phrase"]
            assert v["region"]["mask_pixels"] > 0 and len(v["region_bbox"]) == 4
        if v["condition"] == "clean":
            assert r.response in (None, "yes", "no") and r.ground_truth in ("yes", "no")
            assert r.run_meta.model_extra["vsi_answer"]["type"] == "yes_no"
    for r in hr:
        v = r.run_meta.model_extra["vsi"]
        if v["condition"] == "region_blur":
            assert v["fallback"] and v["region_source"] == "fallback_whole"
        if v["condition"] == "clean":
            assert v["verbal_conf"] is None and v["verbal_raw"] is None
            # seed 002 D.1's 64 new tokens, not the hf adapter's 40-token battery default
            st = r.run_meta.model_extra["settings"]
            assert st["request_max_new_tokens"] == 64 and st["max_new_tokens"] == 64
    ss = vsi_samples(recs)
    assert {s.benchmark for s in ss} == {"pope.adversarial", "hallusionbench"}
    assert {s.region_source for s in ss if s.benchmark == "hallusionbench" and s.perturbation == "region"} == \
        {"fallback_whole"}
    rows = json.loads((out / "scores.json").read_text())
    fb = {r["task_id"].split("@")[0]: r["value"] for r in rows if r["metric"] == "n_fallback[region_blur,sigma=20]"}
    assert fb == {"vsi.pope": 0, "vsi.hallusionbench": 5}


def test_missing_image_folder_is_one_line_before_model_load(tmp_path):
    p = cli("run", "--model", "hf:/nonexistent/model", "--task", f"vsi.pope@images={tmp_path / 'nope'}", "--out",
            str(tmp_path / "run"), "--no-progress")
    assert p.returncode != 0
    assert "image directory not found" in p.stderr and "val2014" in p.stderr
    assert "no such model directory" not in p.stderr  # failed before the model was looked at


def test_mmstar_is_whole_image_only():
    from perceptbench.tasks import get_task

    with pytest.raises(ValueError, match="whole"):
        get_task("vsi.mmstar@perturbation=region")
    assert get_task("vsi.mmstar").conditions == ("clean", "whole_blur")


def test_unloadable_detector_fails_before_the_vlm_and_the_run_directory(tmp_path):
    """The grounding models load before the VLM and before anything is written: a detector that
    cannot be loaded is a one-line error naming the setting, and no run directory is left."""
    _pope_images(tmp_path / "val2014")
    (tmp_path / "empty-detector").mkdir()
    out = tmp_path / "run"
    task = (f"vsi.pope@images={tmp_path / 'val2014'},questions={FIX / 'pope' / 'coco_pope_adversarial.json'},"
            f"detector={tmp_path / 'empty-detector'},limit=2")
    p = cli("run", "--model", "hf:/nonexistent/model", "--task", task, "--out", str(out), "--no-progress",
            env={"HF_HUB_OFFLINE": "1"})
    assert p.returncode != 0
    msg = p.stderr.replace("\n", " ")
    assert "detector=" in msg and "empty-detector" in msg and "cannot be loaded" in msg, p.stdout + p.stderr
    assert "/nonexistent/model" not in msg  # failed before the VLM was looked at
    assert not out.exists()


@pytest.mark.parametrize("spoil", ["corrupt", "bomb"])
def test_bad_benchmark_image_fails_in_one_line_before_anything_is_written(tmp_path, spoil):
    """Issue 20 item 7: a corrupt image stopped a benchmark run after its run directory had been
    created; every image is now decoded (and its size checked) before anything is written."""
    _pope_images(tmp_path / "val2014")
    first = json.loads((FIX / "pope" / "coco_pope_adversarial.json").read_text().splitlines()[0])["image"]
    bad = tmp_path / "val2014" / first
    if spoil == "corrupt":
        bad.write_bytes(bad.read_bytes()[:200])
    else:
        Image.new("1", (9000, 9000)).save(bad, "PNG")  # 81 megapixels under a .jpg name
    out = tmp_path / "run"
    task = f"vsi.pope@images={tmp_path / 'val2014'},questions={FIX / 'pope' / 'coco_pope_adversarial.json'}"
    p = cli("run", "--model", "hf:/nonexistent/model", "--task", task, "--out", str(out), "--no-progress")
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr
    msg = " ".join(p.stderr.split())
    assert msg.startswith("error:") and first in msg and "POPE question" in msg, msg
    assert ("megapixels" in msg) == (spoil == "bomb")
    assert "/nonexistent/model" not in msg  # before the model was looked at
    assert not out.exists()


def test_moved_images_keep_the_task_and_runs_merge(models, tmp_path):
    """Issue 20 item 3: the images' location is run_meta.data_location, not part of the task id:
    a run from another folder (another machine) is the same task and merges trial for trial."""
    from perceptbench.runs import load_runs

    vlm = models[0]
    _pope_images(tmp_path / "a" / "val2014")
    _pope_images(tmp_path / "b" / "imgs")
    q = FIX / "pope" / "coco_pope_adversarial.json"
    for where, out in (("a/val2014", "run_a"), ("b/imgs", "run_b")):
        p = cli("run", "--model", f"llava=hf:{vlm}", "--task",
                f"vsi.pope@images={tmp_path / where},questions={q},limit=2,perturbation=whole,verbal_conf=0",
                "--out", tmp_path / out, "--no-progress")
        assert p.returncode == 0, p.stdout + p.stderr
    ra, rb = (read_records(tmp_path / o / "records.jsonl") for o in ("run_a", "run_b"))
    assert {r.task_id for r in ra} == {r.task_id for r in rb}
    assert all(str(tmp_path) not in r.task_id and "images" not in r.run_meta.model_extra["task_params"] for r in ra)
    assert {r.run_meta.model_extra["data_location"]["images"] for r in rb} == {str(tmp_path / "b" / "imgs")}
    merged = load_runs([tmp_path / "run_a", tmp_path / "run_b"])
    assert len(merged) == len(ra) == len(rb)
