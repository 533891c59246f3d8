"""POPE loader on a fixture in POPE's own format and on the registered (mirrored) question files.

Images are small synthetic JPEGs written here under COCO's file names (never the real COCO images).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from perceptbench.external import pope
from perceptbench.external._common import MissingExternalDataError
from perceptbench.external.base import VQAStimulus
from perceptbench.stimuli.images import ImageLoadError
from helpers.paths import FIXTURES

FIX = FIXTURES / "pope" / "coco_pope_adversarial.json"


def _write_images(folder: Path, names, size=(32, 24)) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, n in enumerate(sorted(set(names))):
        Image.new("RGB", size, (10 * i, 100, 200)).save(folder / n, "JPEG")


def test_fixture_in_pope_format_loads(tmp_path):
    rows = pope.read_questions(FIX)
    _write_images(tmp_path / "val2014", [r["image"] for r in rows])
    stim = pope.load_pope("adversarial", tmp_path / "val2014", questions=FIX)
    assert len(stim) == 7 and all(isinstance(s, VQAStimulus) for s in stim)
    s = stim[0]
    assert s.stimulus_id == "pope-coco-adversarial-0001"
    assert s.image_id == "COCO_val2014_000000310196"
    assert s.question == "Is there a snowboard in the image?"
    assert (s.answer, s.answer_type, s.options, s.region) == ("yes", "yes_no", None, None)
    assert s.object_phrase == "snowboard"
    assert [x.object_phrase for x in stim] == ["snowboard", "backpack", "person", "car", "skis", "dog", "dining table"]
    assert stim[1].answer == "no"
    img = s.load()
    assert img.mode == "RGB" and img.size == (32, 24)
    assert s.meta["split"] == "adversarial" and len(s.meta["question_file_sha256"]) == 64
    assert len({x.stimulus_id for x in stim}) == len(stim)


def test_object_phrase_follows_the_template():
    assert pope.object_phrase("Is there a dining table in the image?") == "dining table"
    assert pope.object_phrase("Is there an apple in the image?") == "apple"
    assert pope.object_phrase("What is in the image?") is None


def test_registered_question_file_and_seeded_subset(tmp_path):
    full = pope.load_pope("adversarial", tmp_path, check_images=False)
    assert len(full) == 3000
    assert sum(s.answer == "yes" for s in full) == 1500
    sub = pope.load_pope("adversarial", tmp_path, limit=20, seed=7, check_images=False)
    again = pope.load_pope("adversarial", tmp_path, limit=20, seed=7, check_images=False)
    assert [s.stimulus_id for s in sub] == [s.stimulus_id for s in again]
    assert [s.stimulus_id for s in sub] != [s.stimulus_id for s in full[:20]]
    assert sub[0].meta["question_file"] == "pope/output/coco/coco_pope_adversarial.json"
    _write_images(tmp_path / "imgs", [s.meta["image_file"] for s in sub])
    ok = pope.load_pope("adversarial", tmp_path / "imgs", limit=20, seed=7)
    assert np.asarray(ok[0].load()).shape == (24, 32, 3)
    seem = pope.load_pope("random", tmp_path, dataset="gqa", limit=3, check_images=False)
    assert seem[0].stimulus_id.startswith("pope-gqa-random-") and seem[0].object_phrase


def test_missing_image_dir_and_files_are_one_line_errors(tmp_path):
    with pytest.raises(MissingExternalDataError) as e:
        pope.load_pope("adversarial", tmp_path / "nope", questions=FIX)
    msg = str(e.value)
    assert "nope" in msg and "val2014" in msg and "\n" not in msg
    with pytest.raises(MissingExternalDataError, match="no image directory given"):
        pope.load_pope("adversarial", None, questions=FIX)
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingExternalDataError, match=r"2 of 2 images missing .*COCO_val2014_000000310196.jpg"):
        pope.load_pope("adversarial", tmp_path / "empty", questions=FIX)
    with pytest.raises(ValueError, match="split must be one of"):
        pope.load_pope("hard", tmp_path, questions=FIX)


def test_malformed_records_name_file_and_line(tmp_path):
    bad = tmp_path / "q.json"
    bad.write_text('{"question_id": 1, "image": "a.jpg", "text": "Is there a cat in the image?", "label": "maybe"}\n')
    (tmp_path / "imgs").mkdir()
    with pytest.raises(ValueError, match=r"q.json record 1: label must be yes or no"):
        pope.load_pope("random", tmp_path / "imgs", questions=bad)
    bad.write_text('{"question_id": 1, "image": "a.jpg", "text": "How many cats?", "label": "yes"}\n')
    with pytest.raises(ValueError, match="does not follow POPE's template"):
        pope.load_pope("random", tmp_path / "imgs", questions=bad)
    bad.write_text('{"question_id": 1, "image": "a.jpg"\n')
    with pytest.raises(ValueError, match="line 1: not valid JSON"):
        pope.read_questions(bad)


def test_corrupt_image_fails_when_loaded_naming_file_and_question(tmp_path):
    rows = pope.read_questions(FIX)
    _write_images(tmp_path, [r["image"] for r in rows])
    (tmp_path / rows[0]["image"]).write_bytes(b"\xff\xd8\xff broken")
    stim = pope.load_pope("adversarial", tmp_path, questions=FIX)
    with pytest.raises(ImageLoadError, match=r"COCO_val2014_000000310196.jpg \(POPE question 1\)"):
        stim[0].load()


@pytest.mark.parametrize("image", ["../secret.jpg", "sub/../../secret.jpg", "/etc/secret.jpg", "..\\secret.jpg",
                                   "C:\\secret.jpg", ""])
def test_image_path_outside_the_images_folder_is_refused_in_one_line(tmp_path, image):
    """Issue 20 item 7: a downloaded question file could make perceptbench read (and send to an
    API model) any image on disk; every record is checked, whether in the subset or not."""
    (tmp_path / "secret.jpg").write_bytes(b"not yours")
    imgs = tmp_path / "imgs"
    _write_images(imgs, ["a.jpg"])
    q = tmp_path / "q.json"
    q.write_text(f'{{"question_id": 1, "image": "a.jpg", "text": "Is there a cat in the image?", "label": "yes"}}\n'
                 f'{{"question_id": 2, "image": {json.dumps(image)}, "text": "Is there a dog in the image?", '
                 f'"label": "no"}}\n')
    with pytest.raises(ValueError) as e:
        pope.load_pope("random", imgs, questions=q, limit=1, seed=0)
    msg = str(e.value)
    assert f"{q} record 2: image" in msg and repr(image) in msg and "would leave" in msg and "\n" not in msg


def test_image_paths_in_subfolders_stay_allowed(tmp_path):
    imgs = tmp_path / "imgs"
    _write_images(imgs / "val", ["a.jpg"])
    q = tmp_path / "q.json"
    q.write_text('{"question_id": 1, "image": "val/a.jpg", "text": "Is there a cat in the image?", "label": "yes"}\n')
    (s,) = pope.load_pope("random", imgs, questions=q)
    assert s.load().size == (32, 24)


def test_repeated_question_id_is_refused_naming_it(tmp_path):
    """Issue 20 item 3: a repeated question_id silently dropped a question (3 scored as n = 2)."""
    _write_images(tmp_path / "imgs", ["a.jpg", "b.jpg"])
    q = tmp_path / "q.json"
    rec = '{{"question_id": {}, "image": "{}", "text": "Is there a {} in the image?", "label": "yes"}}\n'
    q.write_text(rec.format(1, "a.jpg", "cat") + rec.format(2, "b.jpg", "dog") + rec.format(2, "a.jpg", "cup"))
    with pytest.raises(ValueError) as e:
        pope.load_pope("random", tmp_path / "imgs", questions=q, limit=1)
    msg = str(e.value)
    assert str(q) in msg and "duplicate question_id '2'" in msg and "\n" not in msg
