"""The four external VSI benchmarks end to end through the CLI with a tiny random-weight VLM, on the
fixtures in each release's own format (tests/fixtures/{pope,hallusionbench,mmvp,mmstar}), with the
image and image-withheld conditions: the records hold what the benchmark-native rows need, and
those rows reach scores.csv.  (The values of a random-weight model mean nothing: the known-answer
tests in tests/known_answers/test_vsi_native.py pin the formulas.)"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="model extra not installed")
pytest.importorskip("datasets", reason="external extra not installed")

from helpers.cli import cli
from helpers.paths import FIXTURES
from helpers.task_data import write_hallusionbench_images, write_pope_images
from perceptbench.records import read_records


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    from perceptbench.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("native") / "tiny-llava", init_range=1.0)


def _columns_score_like_records(path: Path, monkeypatch) -> None:
    """``score`` takes every task of the run's file from its columns (reading one back as records
    fails) and gives the rows :func:`~perceptbench.scoring.score_records` gives on its records."""
    from perceptbench.record_table import ColumnarRecords
    from perceptbench.scoring import score_file, score_records

    def refuse(*a, **k):
        raise AssertionError("a task was read back as records")

    with monkeypatch.context() as m:
        m.setattr(ColumnarRecords, "records", refuse)
        m.setattr(ColumnarRecords, "iter_records", refuse)
        rows = score_file(path, path.parent / "rescored.csv")
    want = score_records(read_records(path), features_dir=path.parent / "features")
    assert [repr(vars(r)) for r in rows] == [repr(vars(r)) for r in want]


def test_vsi_mmstar_runs_end_to_end(tiny_llava, tmp_path, monkeypatch):
    """The crash of issue 21: ``vsi.mmstar`` read the grounding setting ``box_threshold``, which
    MMStar (whole image only) does not have, and stopped with ``error: box_threshold``."""
    out = tmp_path / "run"
    task = f"vsi.mmstar@source={FIXTURES / 'mmstar' / 'mmstar.parquet'},verbal_conf=0,base_llm=base"
    p = cli("run", "--model", f"llava=hf:{tiny_llava}", "--model", f"base=hf:{tiny_llava}", "--task", task,
            "--condition", "image", "--condition", "image_withheld", "--out", str(out), "--no-progress",
            env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "box_threshold" not in p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    blind = [r for r in recs if r.model == "llava[image_withheld]"]
    assert len(blind) == 3 and all(isinstance(r.raw_output, str) for r in blind)  # a greedy answer, no image
    assert all(r.run_meta.model_extra["external"]["category"] for r in recs if r.readout == "vlm_vsi_clean")
    rows = {(r["model"], r["metric"]): r for r in csv.DictReader((out / "scores.csv").open())}
    for m in ("llava", "llava[image_withheld]"):
        assert rows[(m, "mmstar.accuracy")]["n"] == "3"
        assert (m, "mmstar.accuracy[math/numeric commonsense and calculation]") in rows
    assert rows[("llava", "mmstar.multimodal_gain")]["n"] == "3"
    assert rows[("llava", "mmstar.multimodal_leakage")]["n"] == "3"
    full = json.loads((out / "scores.json").read_text())
    assert any(r["metric"].startswith("mmstar.auroc_vsi[math,whole") and r["model"] == "llava" for r in full)
    _columns_score_like_records(out / "records.jsonl", monkeypatch)


def _hb_images(root: Path) -> None:
    write_hallusionbench_images(root, FIXTURES / "hallusionbench" / "HallusionBench.json")


def _pope_images(folder: Path) -> None:
    write_pope_images(folder, FIXTURES / "pope" / "coco_pope_adversarial.json")


def test_pope_hallusionbench_mmvp_native_rows_end_to_end(tiny_llava, tmp_path, monkeypatch):
    _hb_images(tmp_path / "hb")
    _pope_images(tmp_path / "val2014")
    tasks = [f"vsi.pope@images={tmp_path / 'val2014'},questions={FIXTURES / 'pope' / 'coco_pope_adversarial.json'},"
             "perturbation=whole,verbal_conf=0,limit=4",
             f"vsi.hallusionbench@images={tmp_path / 'hb'},questions={FIXTURES / 'hallusionbench' / 'HallusionBench.json'},"
             "perturbation=whole,verbal_conf=0",
             f"vsi.mmvp@source={FIXTURES / 'mmvp' / 'release'},perturbation=whole,verbal_conf=0"]
    out = tmp_path / "run"
    args = [a for t in tasks for a in ("--task", t)]
    p = cli("run", "--model", f"llava=hf:{tiny_llava}", *args, "--condition", "image", "--condition",
            "image_withheld", "--out", str(out), "--no-progress",
            env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    hb = [r for r in recs if r.task_id.startswith("vsi.hallusionbench")]
    # 5 image questions x (clean + whole blur) for llava; 5 + 4 no-image questions without the image
    assert len([r for r in hb if r.model == "llava"]) == 10
    blind = [r for r in hb if r.model == "llava[image_withheld]"]
    assert len(blind) == 9 and sum(bool(r.run_meta.model_extra.get("no_image")) for r in blind) == 4
    rows = {(r["task_id"].split("@")[0], r["model"], r["metric"]): r for r in csv.DictReader((out / "scores.csv").open())}
    for k in ("accuracy", "precision", "recall", "f1", "yes_ratio"):
        for conv in ("nulls_excluded", "nulls_as_wrong"):
            assert ("vsi.pope", "llava", f"pope.{k}@{conv}") in rows
    assert rows[("vsi.pope", "llava", "pope.accuracy@nulls_as_wrong")]["n"] == "4"
    # aAcc over all 9 questions (4 asked without the image), in 2 question sets
    assert rows[("vsi.hallusionbench", "llava", "hallusionbench.aAcc")]["n"] == "2"
    assert ("vsi.hallusionbench", "llava", "hallusionbench.fAcc[VD/illusion]") in rows
    assert ("vsi.hallusionbench", "llava", "hallusionbench.qAcc[VS/chart]@image_questions") in rows
    assert rows[("vsi.mmvp", "llava", "mmvp.pair_accuracy")]["n"] == "2"
    assert ("vsi.mmvp", "llava", "mmvp.question_accuracy") in rows
    _columns_score_like_records(out / "records.jsonl", monkeypatch)
    # `render` writes what a VLM is shown: the questions asked without an image have no image to write
    p = cli("render", tasks[1], "--out", str(tmp_path / "shown"), env={"PERCEPTBENCH_RESPONSE_CACHE": None})
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(json.loads((tmp_path / "shown" / "index.json").read_text())) == 10
