"""The one external-image loader (issue 7 item 4): images reach the model as a person sees them.

Every test image is generated here with Pillow; each case failed with the loaders the
project had before (``Image.open(...).convert("RGB")``).
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFile

from perceptbench.stimuli.images import ImageLoadError, load_image, load_mask
from perceptbench.external import salbench_natural as sn
from perceptbench.stimuli.search_arrays import draw_red_box
from perceptbench.tasks import get_task

ORIENTATION = 0x0112
BG = (200, 200, 200)
TARGET = (0, 0, 255)
BBOX = (80, 20, 99, 39)  # inclusive, in the displayed (rotated) image


def _displayed_scene() -> Image.Image:
    """120x80 displayed scene: blue target at BBOX, three black distractors on the left."""
    im = Image.new("RGB", (120, 80), BG)
    d = ImageDraw.Draw(im)
    d.rectangle(BBOX, fill=TARGET)
    for x in (10, 35, 60):
        d.rectangle((x, 50, x + 12, 62), fill=(0, 0, 0))
    return im


def _save_rotated_jpeg(displayed: Image.Image, path, mode: str = "RGB") -> None:
    """Store ``displayed`` the way a camera does with EXIF Orientation 6 (rotate 90° CW to view)."""
    stored = displayed.transpose(Image.Transpose.ROTATE_90).convert(mode)
    exif = Image.Exif()
    exif[ORIENTATION] = 6
    stored.save(path, "JPEG", quality=95, exif=exif.tobytes())


def test_exif_orientation_6_is_applied(tmp_path):
    p = tmp_path / "rot.jpg"
    _save_rotated_jpeg(_displayed_scene(), p)
    with Image.open(p) as raw:
        assert raw.size == (80, 120) and raw.getexif()[ORIENTATION] == 6
    img = load_image(p)
    assert img.mode == "RGB" and img.size == (120, 80)
    a = np.asarray(img).astype(int)
    x0, y0, x1, y1 = BBOX
    assert np.abs(a[y0 + 2:y1 - 1, x0 + 2:x1 - 1] - TARGET).max() < 30  # the target is where the box says
    assert np.abs(a[5, 5] - BG).max() < 10


def test_rotated_natural_stimulus_gets_its_red_box_around_the_target(tmp_path):
    """The red box of a visual-referring natural stimulus surrounds the target, and the box
    derived from a (rotation-tagged) target mask is the displayed one."""
    _save_rotated_jpeg(_displayed_scene(), tmp_path / "img.jpg")
    mask = Image.new("L", (120, 80), 0)
    ImageDraw.Draw(mask).rectangle(BBOX, fill=255)
    _save_rotated_jpeg(mask.convert("RGB"), tmp_path / "targ.jpg", mode="L")
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps([{"image_id": "rot", "split": "nat", "image": "img.jpg",
                                "target_mask": "targ.jpg", "answer": "Color", "n_distractors": 3,
                                "object_category": "squares"}]))
    (item,) = sn.load_local(ann)
    assert item.target_bbox == BBOX
    (st,) = get_task(f"salbench.visual_referring.nat@source={ann}").stimuli(0)
    img = np.asarray(st.render()).astype(int)
    assert img.shape == (80, 120, 3)
    x0, y0, x1, y1 = BBOX
    assert np.abs(img[(y0 + y1) // 2, (x0 + x1) // 2] - TARGET).max() < 30
    red = (img[..., 0] > 200) & (img[..., 1] < 60) & (img[..., 2] < 60)
    ring = np.zeros_like(red)
    ring[y0 - 5:y1 + 6, x0 - 5:x1 + 6] = True
    ring[y0:y1 + 1, x0:x1 + 1] = False
    assert red.sum() > 100 and red[ring].sum() == red.sum()  # every red pixel is on the ring around the target


def test_transparent_png_composited_on_white_keeps_black_distractors(tmp_path):
    """RGBA PNG: transparent background stored as black, opaque black distractors, red target."""
    a = np.zeros((60, 90, 4), dtype=np.uint8)  # fully transparent, stored colour black
    a[10:20, 10:20] = (0, 0, 0, 255)
    a[10:20, 40:50] = (0, 0, 0, 255)
    a[40:50, 70:80] = (255, 0, 0, 255)
    a[30:35, 30:35] = (0, 0, 0, 128)  # half-transparent black over white -> mid grey
    p = tmp_path / "t.png"
    Image.fromarray(a, "RGBA").save(p)
    img = np.asarray(load_image(p)).astype(int)
    assert (img[0, 0] == 255).all()
    dark = (img.sum(axis=2) < 60)
    assert dark.sum() == 200  # the two distractors, nothing else
    assert tuple(img[45, 75]) == (255, 0, 0)
    assert abs(img[32, 32, 0] - 127) <= 1
    grey = np.asarray(load_image(p, background=(0, 128, 0))).astype(int)
    assert tuple(grey[0, 0]) == (0, 128, 0)


def test_palette_with_transparent_index_and_la(tmp_path):
    p = Image.new("P", (20, 10), 0)
    p.putpalette([0, 0, 0, 255, 0, 0] + [0] * 762)
    ImageDraw.Draw(p).rectangle((10, 0, 19, 9), fill=1)
    path = tmp_path / "p.png"
    p.save(path, transparency=0)
    img = np.asarray(load_image(path))
    assert tuple(img[5, 2]) == (255, 255, 255) and tuple(img[5, 15]) == (255, 0, 0)
    la = Image.fromarray(np.dstack([np.zeros((10, 10), np.uint8), np.r_[np.zeros((5, 10)), np.full((5, 10), 255)].astype(np.uint8)]), "LA")
    la.save(tmp_path / "la.png")
    img = np.asarray(load_image(tmp_path / "la.png"))
    assert tuple(img[0, 0]) == (255, 255, 255) and tuple(img[9, 0]) == (0, 0, 0)


def test_palette_opaque(tmp_path):
    p = Image.new("P", (4, 4), 1)
    p.putpalette([0, 0, 0, 10, 200, 30] + [0] * 762)
    p.save(tmp_path / "p.png")
    img = load_image(tmp_path / "p.png")
    assert img.mode == "RGB" and tuple(np.asarray(img)[0, 0]) == (10, 200, 30)


def test_16bit_greyscale_is_rescaled_not_clipped(tmp_path):
    ramp = np.linspace(0, 65535, 256).astype(np.uint16).reshape(16, 16)
    Image.fromarray(ramp).save(tmp_path / "g16.png")
    with Image.open(tmp_path / "g16.png") as raw:
        assert raw.mode.startswith("I")
    img = np.asarray(load_image(tmp_path / "g16.png"))
    assert img.shape == (16, 16, 3) and img.dtype == np.uint8
    assert img[0, 0, 0] == 0 and img[-1, -1, 0] == 255
    assert 120 <= img[8, 0, 0] <= 135  # mid-ramp is mid-grey (a plain convert() gives 255)
    assert (np.diff(img[..., 0].ravel().astype(int)) >= 0).all()


def test_cmyk_jpeg(tmp_path):
    Image.new("CMYK", (8, 8), (0, 255, 255, 0)).save(tmp_path / "c.jpg", quality=95)
    img = np.asarray(load_image(tmp_path / "c.jpg")).astype(int)
    assert np.abs(img[4, 4] - (255, 0, 0)).max() < 20


@pytest.mark.parametrize("mode,value,rgb", [("L", 77, (77, 77, 77)), ("1", 1, (255, 255, 255))])
def test_greyscale_and_bilevel(tmp_path, mode, value, rgb):
    Image.new(mode, (6, 6), value).save(tmp_path / "g.png")
    img = load_image(tmp_path / "g.png")
    assert img.mode == "RGB" and tuple(np.asarray(img)[3, 3]) == rgb


def test_corrupt_and_truncated_files_are_one_line_errors_naming_the_file(tmp_path):
    bad = tmp_path / "not_an_image.jpg"
    bad.write_bytes(b"this is text, not a JPEG")
    with pytest.raises(ImageLoadError) as e:
        load_image(bad)
    assert str(bad) in str(e.value) and "\n" not in str(e.value)
    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 255, (64, 64, 3), dtype=np.uint8)).save(buf, "JPEG")
    trunc = tmp_path / "truncated.jpg"
    trunc.write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(ImageLoadError) as e:
        load_image(trunc)
    assert str(trunc) in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ImageLoadError, match="image file not found: .*missing.png"):
        load_image(tmp_path / "missing.png")
    with pytest.raises(ImageLoadError, match="MMStar row 3"):
        load_image(b"garbage", source="MMStar row 3")
    assert isinstance(ImageLoadError("x"), ValueError)


def test_truncated_file_refused_even_if_pillow_is_told_to_accept_it(tmp_path, monkeypatch):
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    with pytest.raises(RuntimeError, match="LOAD_TRUNCATED_IMAGES"):
        load_image(b"anything")


def test_bytes_file_objects_and_pil_images_load_the_same(tmp_path):
    p = tmp_path / "rot.jpg"
    _save_rotated_jpeg(_displayed_scene(), p)
    ref = np.asarray(load_image(p))
    assert np.array_equal(np.asarray(load_image(p.read_bytes())), ref)
    with open(p, "rb") as f:
        assert np.array_equal(np.asarray(load_image(f)), ref)
    pil = Image.open(p)
    assert np.array_equal(np.asarray(load_image(pil)), ref)  # datasets hands PIL images with EXIF
    assert pil.size == (80, 120)  # the caller's image is not modified


def test_mask_is_oriented_like_its_image(tmp_path):
    mask = Image.new("L", (120, 80), 0)
    ImageDraw.Draw(mask).rectangle(BBOX, fill=255)
    _save_rotated_jpeg(mask.convert("RGB"), tmp_path / "m.jpg", mode="L")
    m = load_mask(tmp_path / "m.jpg")
    assert m.shape == (80, 120) and m.dtype == bool
    assert sn.bbox_from_mask(m) == BBOX


def test_bad_background_is_an_error():
    with pytest.raises(ValueError, match="background"):
        load_image(b"x", background=(300, 0, 0))


def test_red_box_drawn_after_orientation_lies_inside_the_image(tmp_path):
    p = tmp_path / "rot.jpg"
    _save_rotated_jpeg(_displayed_scene(), p)
    draw_red_box(load_image(p), BBOX)  # the unrotated 80x120 image cannot hold this box
    with Image.open(p) as raw, pytest.raises(ValueError):
        draw_red_box(raw.convert("RGB"), BBOX)


@pytest.fixture(scope="module")
def bomb_png(tmp_path_factory):
    """A ~12 KB bilevel PNG that decodes to 10000 x 10000 = 100 megapixels (issue 20 item 7)."""
    p = tmp_path_factory.mktemp("bomb") / "bomb.png"
    Image.new("1", (10_000, 10_000)).save(p, optimize=True)
    assert p.stat().st_size < 50_000
    return p


def test_image_over_the_pixel_limit_is_a_one_line_error_naming_the_file(bomb_png, recwarn):
    from perceptbench.stimuli.images import MAX_IMAGE_PIXELS

    assert MAX_IMAGE_PIXELS < 100_000_000
    for obj in (bomb_png, bomb_png.read_bytes()):
        with pytest.raises(ImageLoadError) as e:
            load_image(obj, source=None if obj is bomb_png else "bytes of bomb.png")
        msg = str(e.value)
        assert ("bomb.png" in msg and "10000x10000" in msg and "megapixels" in msg
                and "PERCEPTBENCH_MAX_IMAGE_PIXELS" in msg and "\n" not in msg), msg
    assert not [w for w in recwarn.list if issubclass(w.category, Image.DecompressionBombWarning)]


def test_pixel_limit_applies_to_pil_images_and_follows_the_variable(tmp_path, monkeypatch):
    big = Image.new("RGB", (200, 100))
    monkeypatch.setenv("PERCEPTBENCH_MAX_IMAGE_PIXELS", "19999")
    with pytest.raises(ImageLoadError, match="MMStar row 1 is 200x100"):
        load_image(big, source="MMStar row 1")  # datasets hands decoded PIL images
    monkeypatch.setenv("PERCEPTBENCH_MAX_IMAGE_PIXELS", "20000")
    assert load_image(big).size == (200, 100)  # the limit itself is allowed
    monkeypatch.setenv("PERCEPTBENCH_MAX_IMAGE_PIXELS", "lots")
    with pytest.raises(ValueError, match="PERCEPTBENCH_MAX_IMAGE_PIXELS must be a positive integer"):
        load_image(big)
