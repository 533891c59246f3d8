"""Tests for the VSI image perturbations (perceptbench.stimuli.perturb); the blur's own
properties are tested in tests/unit/vsi/test_measurement.py."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from perceptbench.stimuli.perturb import box_mask, region_blur, whole_blur


def _noise(w, h, seed=0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


@pytest.mark.parametrize("sigma", [0.3, 1, 10, 20, 40])
@pytest.mark.parametrize("box", [(181, 239, 199, 271), (0, 0, 30, 30), (400, 480, 512, 512), (0, 0, 512, 512)])
def test_region_blur_from_the_given_whole_blur_is_the_same_bytes(sigma, box):
    im = _noise(512, 512, seed=2)
    im.info["dpi"] = (72, 72)
    m = box_mask(im.size, box)
    own = region_blur(im, m, sigma)
    shared = region_blur(im, m, sigma, blurred=whole_blur(im, sigma))
    assert shared.tobytes() == own.tobytes() and shared.mode == own.mode == "RGB"
    assert own.info == shared.info == {}  # a new image, as Image.fromarray gave before the paste


def test_region_blur_takes_its_pixels_from_the_given_blur():
    im = _noise(64, 48)
    m = box_mask(im.size, (10, 10, 20, 20))
    grey = Image.new("RGB", im.size, (7, 8, 9))
    out = np.asarray(region_blur(im, m, 5, dilate_px=0, blurred=grey))
    assert (out[10:20, 10:20] == (7, 8, 9)).all() and np.array_equal(out[:10], np.asarray(im)[:10])
    with pytest.raises(ValueError, match=r"blurred image size \(32, 48\) does not match the image's \(64, 48\)"):
        region_blur(im, m, 5, blurred=grey.crop((0, 0, 32, 48)))
