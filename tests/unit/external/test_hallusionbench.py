"""HallusionBench loader on a fixture of records copied from the release's HallusionBench.json,
and on the registered (mirrored) file; images are small synthetic PNGs written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from perceptbench.external import hallusionbench as hb
from perceptbench.external._common import MissingExternalDataError
from perceptbench.external.phrases import principal_noun_phrase
from helpers.paths import FIXTURES

FIX = FIXTURES / "hallusionbench" / "HallusionBench.json"


def _images(root: Path, rels) -> None:
    for i, rel in enumerate(sorted(set(rels))):
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGBA", (40, 30), (200, 0, 0, 0 if i == 0 else 255)).save(p)


def test_fixture_loads_only_questions_with_images(tmp_path):
    rows = json.loads(FIX.read_text())
    _images(tmp_path, [r["filename"].removeprefix("./") for r in rows if r["filename"]])
    stim = hb.load_hallusionbench(tmp_path, questions=FIX)
    assert len(stim) == sum(r["visual_input"] != "0" for r in rows) == 5
    s = next(x for x in stim if x.meta["category"] == "VS")
    assert s.stimulus_id == "hallusionbench-VS-chart-0-1-0-v1" and s.image_id == "VS/chart/0_1"
    assert s.answer == "no" and s.answer_type == "yes_no" and s.region is None  # gt_answer "0"
    assert {x.answer for x in stim} == {"yes", "no"}
    ill = [x for x in stim if x.meta["subcategory"] == "illusion"]
    assert ill[0].object_phrase == "right orange circle"
    img = s.load()
    assert img.mode == "RGB" and img.size == (40, 30)
    assert len({x.stimulus_id for x in stim}) == len(stim)
    assert [x.meta["category"] for x in hb.load_hallusionbench(tmp_path, questions=FIX, categories=("VD",))] == ["VD"] * 4


def test_registered_file(tmp_path):
    stim = hb.load_hallusionbench(tmp_path, check_images=False)
    assert len(stim) == 951  # 1129 questions, 178 of them asked without an image
    assert len({s.stimulus_id for s in stim}) == 951
    assert stim[0].meta["question_file"] == "hallusionbench/HallusionBench.json"
    with_phrase = sum(s.object_phrase is not None for s in stim)
    assert 0.5 * len(stim) < with_phrase < len(stim)


def test_missing_images_are_one_line_errors(tmp_path):
    with pytest.raises(MissingExternalDataError) as e:
        hb.load_hallusionbench(tmp_path / "nope", questions=FIX)
    assert "hallusion_bench.zip" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(MissingExternalDataError, match=r"3 of 3 images missing .*VS/chart/0_1.png"):
        hb.load_hallusionbench(tmp_path, questions=FIX)


def test_malformed_record(tmp_path):
    bad = tmp_path / "hb.json"
    rows = json.loads(FIX.read_text())
    rows[4]["gt_answer"] = "2"
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=r"hb.json record 4: gt_answer must be"):
        hb.load_hallusionbench(tmp_path, questions=bad)


@pytest.mark.parametrize("q,phrase", [
    ("Is the right orange circle the same size as the left orange circle?", "right orange circle"),
    ("Are the butterfly's wings closer to being open or closed?", "butterfly's wings"),
    ("Is the school bus parked near the building?", "school bus"),
    ("Is there a red striped shirt on the man?", "red striped shirt"),
    ("According to the chart, does China have the largest population?", "largest population"),
    ("Do you see any window in this image?", None),
    ("How many apples?", None),
])
def test_principal_noun_phrase_rule(q, phrase):
    assert principal_noun_phrase(q) == phrase


def test_no_image_questions_are_returned_flagged_and_follow_the_subset(tmp_path):
    rows = json.loads(FIX.read_text())
    _images(tmp_path, [r["filename"].removeprefix("./") for r in rows if r["filename"]])
    full = hb.load_hallusionbench(tmp_path, questions=FIX, no_image=True)
    blind = [s for s in full if s.meta.get("no_image")]
    assert len(full) == 9 and len(blind) == 4 and {s.meta["visual_input"] for s in blind} == {"0"}
    assert blind[0].image_id == "no-image/VS/chart/0"
    with pytest.raises(ValueError, match="without an image"):
        blind[0].load()
    # a subset draws the same image questions as without no_image, and only the no-image questions of the
    # question groups (category, subcategory, set_id, question_id) it drew
    for seed in range(6):
        img = hb.load_hallusionbench(tmp_path, questions=FIX, limit=2, seed=seed)
        both = hb.load_hallusionbench(tmp_path, questions=FIX, limit=2, seed=seed, no_image=True)
        assert [s.stimulus_id for s in both if not s.meta.get("no_image")] == [s.stimulus_id for s in img]
        drawn = {(s.meta["category"], s.meta["subcategory"], s.meta["set_id"], s.meta["question_id"]) for s in img}
        got = {(s.meta["category"], s.meta["subcategory"], s.meta["set_id"], s.meta["question_id"])
               for s in both if s.meta.get("no_image")}
        assert got == {g for g in drawn if g[0] == "VS"}


@pytest.mark.parametrize("filename", ["./../../etc/x.png", "/tmp/x.png", "VS/../../x.png"])
def test_filename_outside_the_images_folder_is_refused_in_one_line(tmp_path, filename):
    """Issue 20 item 7: image paths are confined to the images folder."""
    bad = tmp_path / "hb.json"
    rows = json.loads(FIX.read_text())
    rows[5]["filename"] = filename
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError) as e:
        hb.load_hallusionbench(tmp_path, questions=bad, check_images=False)
    msg = str(e.value)
    assert f"{bad} record 5: filename" in msg and "would leave" in msg and "\n" not in msg


def test_two_questions_under_one_id_are_refused_naming_it(tmp_path):
    bad = tmp_path / "hb.json"
    rows = json.loads(FIX.read_text())
    rows.append(dict(rows[5], question="Is the left circle larger?"))
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError) as e:
        hb.load_hallusionbench(tmp_path, questions=bad, check_images=False)
    assert "duplicate" in str(e.value) and "hallusionbench-VD-illusion-" in str(e.value) and "\n" not in str(e.value)
