"""Grounding step (issue 8 "Regions" (c)) with tiny random Grounding DINO and SAM built offline."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from perceptbench.external.base import Region
from perceptbench.external.grounding import Detection, ground_region, region_from_detections
from perceptbench.testing.tiny_grounding import build_tiny_grounding_dino, build_tiny_sam, tiny_wordpiece_tokenizer


@pytest.fixture(scope="module")
def models():
    return build_tiny_grounding_dino(), build_tiny_sam()


def _image() -> Image.Image:
    im = Image.new("RGB", (80, 60), (200, 200, 200))
    ImageDraw.Draw(im).rectangle((40, 20, 60, 40), fill=(255, 0, 0))
    return im


def test_tokenizer_has_no_unknown_pieces():
    tok = tiny_wordpiece_tokenizer()
    ids = tok("red striped shirt.").input_ids
    assert tok.unk_token_id not in ids


def test_grounding_gives_a_mask_of_the_image_size(models):
    det, seg = models
    img = _image()
    found = det.detect(img, "red square", box_threshold=0.3)
    assert found and all(d.score > 0.3 for d in found)
    assert [d.score for d in found] == sorted((d.score for d in found), reverse=True)
    r = ground_region(img, "red square", detector=det, segmenter=seg, box_threshold=0.3)
    assert r.source == "grounding"
    assert r.mask.shape == (60, 80) and r.mask.dtype == bool and r.mask.any()
    x0, y0, x1, y1 = r.box
    assert 0 <= x0 < x1 <= 80 and 0 <= y0 < y1 <= 60
    assert r.to_mask(img.size).shape == (60, 80)
    assert r.meta["phrase"] == "red square" and r.meta["score"] == pytest.approx(found[0].score, abs=1e-6)
    assert r.meta["detector"].startswith("tiny-random-grounding-dino")
    again = ground_region(img, "red square", detector=det, segmenter=seg)
    assert again.box == r.box and np.array_equal(again.mask, r.mask)  # deterministic


def test_fallback_on_empty_box_list(models):
    _, seg = models
    img = _image()
    r = region_from_detections(img, [], segmenter=seg)
    assert r.source == "fallback_whole" and r.mask is None and r.box is None
    assert r.to_mask(img.size).all() and "no box above 0.3" in r.meta["reason"]
    below = region_from_detections(img, [Detection(0.29, (1, 1, 10, 10))], segmenter=seg)
    assert below.source == "fallback_whole" and below.meta["n_boxes"] == 0
    hit = region_from_detections(img, [Detection(0.2, (1, 1, 10, 10)), Detection(0.9, (40, 20, 61, 41))],
                                 segmenter=seg)
    assert hit.source == "grounding" and hit.box == (40, 20, 61, 41) and hit.meta["n_boxes"] == 1


def test_fallback_when_no_box_passes_and_without_phrase(models):
    det, seg = models
    img = _image()
    r = ground_region(img, "red square", detector=det, segmenter=seg, box_threshold=1.0)
    assert r.source == "fallback_whole" and r.meta["phrase"] == "red square"
    assert ground_region(img, None, detector=det, segmenter=seg).meta["reason"] == "no object phrase"
    with pytest.raises(ValueError, match="box_threshold"):
        ground_region(img, "x", detector=det, segmenter=seg, box_threshold=1.5)
    assert isinstance(r, Region)
