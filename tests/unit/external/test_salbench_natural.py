"""SalBench natural-split loaders on a fixture that includes the real mirrored O3 example.

The mirrored images live outside the repository: ``$PERCEPTBENCH_MIRROR`` (default
/work/shared/data) / kotseruba-p3o3/examples/.  Only small annotation files are fixtures.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from perceptbench.external import salbench_natural as sn
from helpers.paths import FIXTURES

FIX = FIXTURES / "salbench"
MIRROR = os.environ.get("PERCEPTBENCH_MIRROR", "/work/shared/data")
EXAMPLES = Path(MIRROR) / "kotseruba-p3o3" / "examples"
O3_BBOX = (471, 453, 795, 788)
P3_BBOX = (753, 626, 827, 699)


def test_mirror_present():
    # fail loudly (not skip) when the mirror is missing: the other tests need it
    assert (EXAMPLES / "images" / "C4kfsNTXa2Irj.jpg").is_file(), f"mirror not found under {MIRROR}"


def test_local_schema_loads_real_o3_and_p3_examples():
    items = sn.load_local(FIX / "local_annotations.json", mirror=MIRROR)
    assert [it.stimulus_id for it in items] == ["o3-C4kfsNTXa2Irj", "p3-image_circle_90_20_36_16"]
    o3, p3 = items
    assert o3.split == "nat" and o3.labels == frozenset({"Shape"})
    assert o3.target_bbox == O3_BBOX and o3.meta["bbox_source"] == "target_mask"
    assert o3.n_distractors == 11 and o3.meta["n_distractors_source"] == "distractor_mask_components"
    assert o3.object_category == "fried eggs"
    img = o3.load_image()
    assert img.mode == "RGB" and img.size == (1024, 1024)
    # the box really contains the target mask and the target differs from the background
    mask = np.asarray(Image.open(o3.target_mask_path).convert("L")) > 127
    x0, y0, x1, y1 = o3.target_bbox
    assert mask[y0 : y1 + 1, x0 : x1 + 1].sum() == mask.sum()
    assert p3.split == "syn" and p3.labels == frozenset({"Color"})
    assert p3.target_bbox == P3_BBOX and p3.n_distractors == 48 and "bbox_source" not in p3.meta
    assert "annotation_note" in p3.meta


def test_local_schema_uses_environment_variable(monkeypatch):
    monkeypatch.setenv(sn.MIRROR_ENV, MIRROR)
    assert len(sn.load_local(FIX / "local_annotations.json")) == 2
    monkeypatch.delenv(sn.MIRROR_ENV)
    with pytest.raises(ValueError, match="PERCEPTBENCH_MIRROR"):
        sn.load_local(FIX / "local_annotations.json")


def test_relative_mirror_is_relative_to_the_working_directory(monkeypatch):
    """`PERCEPTBENCH_MIRROR=../shared/data` (the README's form) names a directory relative to where
    the command runs, not to the annotation file (before: resolved against the fixture's folder
    and the image was "not found")."""
    mirror = Path(MIRROR).resolve()
    monkeypatch.chdir(mirror.parent)
    monkeypatch.setenv(sn.MIRROR_ENV, os.path.join(".", mirror.name))
    items = sn.load_local(FIX / "local_annotations.json")
    assert items[0].load_image().size == (1024, 1024)
    assert sn.load_local(FIX / "local_annotations.json", mirror=mirror.name)[0].load_image().size == (1024, 1024)


def test_o3_release_layout_with_feature_list_and_columns():
    for ann in ("o3_release_annotations.csv", "o3_release_columns.csv"):
        (item,) = sn.load_o3_release(EXAMPLES, FIX / ann)
        assert item.labels == frozenset({"Shape"}), ann
        assert item.source == "release:O3" and item.split == "nat"
        assert item.target_bbox == O3_BBOX
        assert item.n_distractors == 11


def test_p3_release_layout():
    (item,) = sn.load_p3_release(EXAMPLES, feature="Color", pattern="image_*.png")
    assert item.labels == frozenset({"Color"}) and item.split == "syn"
    assert item.target_bbox == P3_BBOX
    assert item.n_distractors == 48  # 7 x 7 grid minus the target
    with pytest.raises(ValueError, match="feature="):
        sn.load_p3_release(EXAMPLES)
    with pytest.raises(ValueError, match="'Shape'"):
        sn.load_p3_release(EXAMPLES, feature="Shape")


def test_hf_rows_are_mapped_and_question_parsed():
    img = Image.open(EXAMPLES / "images" / "C4kfsNTXa2Irj.jpg")
    referring = (
        "Context: This image depicts a scene with 11 fried eggs. Among those, one object category at "
        "location given by this bounding box (471, 453, 795, 788), is different from the others. Given "
        "this list of low-level visual features defined according to feature integration theory: "
        "Orientation, Color, Focus, Shape, Size, Location, Pattern. Task: In which way does the special "
        "object differ from the rest. Write out all applicable features separated by comma."
    )
    rows = [{"image_id": "C4kfsNTXa2Irj", "image": img, "question": referring, "answer": "shape"}]
    (it,) = list(sn.items_from_hf_rows(rows, "O3_box"))
    assert it.split == "nat" and it.labels == frozenset({"Shape"})
    assert it.n_distractors == 11 and it.object_category == "fried eggs" and it.target_bbox == O3_BBOX
    assert it.meta["variant"] == "referring" and it.load_image().size == (1024, 1024)
    detection = [{"image_id": "x1", "image": img, "question": "Context: Given this list ...", "answer": "Color, Shape"}]
    (d,) = list(sn.items_from_hf_rows(detection, "O3"))
    assert d.labels == frozenset({"Color", "Shape"}) and d.n_distractors is None and d.target_bbox is None
    (s,) = list(sn.items_from_hf_rows([{"image_id": "7", "image": img, "answer": "size"}], "P3"))
    assert s.split == "syn" and s.labels == frozenset({"Size"})
    with pytest.raises(ValueError, match="'Shape'"):
        list(sn.items_from_hf_rows([{"image_id": "7", "image": img, "answer": "Shape"}], "P3"))
    with pytest.raises(ValueError, match="'O4'"):
        list(sn.items_from_hf_rows(rows, "O4"))
    with pytest.raises(ValueError, match="'answer'"):
        list(sn.items_from_hf_rows([{"image_id": "1"}], "O3"))


def test_load_hf_without_datasets_gives_install_hint(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match="pip install datasets"):
        sn.load_hf("O3")
    with pytest.raises(ValueError, match="'O9'"):
        sn.load_hf("O9")


def test_parse_answer_strict():
    assert sn.parse_answer("Color, Pattern", "nat") == frozenset({"Color", "Pattern"})
    assert sn.parse_answer(["orientation"], "syn") == frozenset({"Orientation"})
    with pytest.raises(ValueError, match="'Texture'"):
        sn.parse_answer("Texture", "nat")
    with pytest.raises(ValueError, match="empty"):
        sn.parse_answer(" , ", "nat")
    with pytest.raises(ValueError, match="'both'"):
        sn.parse_answer("Color", "both")


def test_bad_local_records(tmp_path):
    bad = tmp_path / "a.json"
    bad.write_text('[{"image_id": "a", "image": "missing.png", "answer": "Color", "split": "nat"}]')
    with pytest.raises(FileNotFoundError, match="missing.png"):
        sn.load_local(bad)
    bad.write_text('[{"image_id": "a", "answer": "Color"}]')
    with pytest.raises(ValueError, match="'image'"):
        sn.load_local(bad)
    img = tmp_path / "i.png"
    Image.new("RGB", (8, 8)).save(img)
    bad.write_text('[{"image_id": "a", "image": "i.png", "answer": "Color", "split": "nat", "n_distractors": -2}]')
    with pytest.raises(ValueError, match="-2"):
        sn.load_local(bad)
    bad.write_text('[{"image_id": "a", "image": "i.png", "answer": "Color"}]')
    with pytest.raises(ValueError, match="split"):
        sn.load_local(bad)
    assert sn.load_local(bad, default_split="nat")[0].labels == frozenset({"Color"})
    with pytest.raises(FileNotFoundError, match="nope.json"):
        sn.load_local(tmp_path / "nope.json")


def test_mask_helpers():
    m = np.zeros((10, 12), dtype=bool)
    m[2:4, 3:6] = True
    m[7:9, 8:11] = True
    m[0, 0] = True  # below min_pixels
    assert sn.bbox_from_mask(m) == (0, 0, 10, 8)
    assert sn.count_mask_components(m, min_pixels=2) == 2
    with pytest.raises(ValueError, match="no foreground"):
        sn.bbox_from_mask(np.zeros((3, 3), dtype=bool))


def test_measure_p3_difficulty_on_real_example():
    (item,) = sn.load_p3_release(EXAMPLES, feature="Color", pattern="image_*.png")
    value, level = sn.measure_p3_difficulty(item)
    # orange distractors vs a teal target: far apart in RGB
    assert value > 100 and level == "easy"
    # the same masks measured as a size item: target and distractors have equal areas
    as_size = sn.SalBenchItem(**{**item.__dict__, "labels": frozenset({"Size"})})
    ratio, lvl = sn.measure_p3_difficulty(as_size)
    assert 0.97 < ratio < 1.03 and lvl == "hard"
    as_orient = sn.SalBenchItem(**{**item.__dict__, "labels": frozenset({"Orientation"})})
    with pytest.raises(ValueError, match="period_deg"):
        sn.measure_p3_difficulty(as_orient)
    o3 = sn.load_local(FIX / "local_annotations.json", mirror=MIRROR)[0]
    with pytest.raises(ValueError, match="one label"):
        sn.measure_p3_difficulty(o3)


def test_measure_p3_difficulty_orientation_on_generated_masks(tmp_path):
    # masks written from a generated orientation stimulus, in the release layout
    from perceptbench.stimuli import search_arrays as sa

    stim = sa.make_search_stimulus(3, 0, "orientation", "medium")
    arr = np.asarray(stim.image).astype(int)
    fg = np.any(arr != 128, axis=2)
    x0, y0, x1, y1 = stim.target_bbox
    t = np.zeros_like(fg)
    t[y0 : y1 + 1, x0 : x1 + 1] = fg[y0 : y1 + 1, x0 : x1 + 1]
    for sub, m in (("images", None), ("targ_images", t), ("dist_images", fg & ~t)):
        (tmp_path / sub).mkdir()
        im = stim.image if m is None else Image.fromarray((m * 255).astype(np.uint8))
        im.save(tmp_path / sub / "s.png")
    (item,) = sn.load_p3_release(tmp_path, feature="Orientation")
    value, level = sn.measure_p3_difficulty(item, period_deg=sa.SYMMETRY_PERIOD_DEG[stim.shape])
    assert level == "medium" and abs(value - stim.difference) < 3
