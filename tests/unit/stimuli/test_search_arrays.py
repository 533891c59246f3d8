"""Tests for the P3-style search-array generator (seed 001 §3, §6.1).

The key test measures every stimulus's difficulty from the rendered RGB image alone
(connected components of non-background pixels, their colours, pixel counts and
image-moment orientation) and checks it against the seed's bins, re-implemented here
independently of the generator.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest
from scipy import ndimage

from perceptbench.stimuli import search_arrays as sa
from perceptbench.stimuli.search_arrays import difficulty_of, folded_angle_difference

BG = np.array([128, 128, 128])
# rotational symmetry periods (degrees), stated independently of the module
PERIOD = {"ellipse": 180.0, "square": 90.0, "rectangle": 180.0, "cross": 90.0, "L": 360.0}


def seed_bin(feature: str, v: float) -> str | None:
    """Seed 001 §6.1 bins with the documented edges (independent re-implementation)."""
    if feature == "color":
        return "hard" if v <= 50 else "medium" if v <= 100 else "easy"
    if feature == "orientation":
        return "hard" if 0 <= v <= 30 else "medium" if v <= 60 else "easy" if v <= 90 else None
    if 0.5 <= v <= 1.5:
        return "hard"
    if 0.3 <= v < 0.5 or 1.5 < v <= 3.0:
        return "medium"
    return "easy" if (0 < v < 0.3 or v > 3.0) else None


def segment(image):
    """Objects of a search array, measured from pixels only."""
    arr = np.asarray(image.convert("RGB")).astype(int)
    fg = np.any(arr != BG, axis=2)
    lab, n = ndimage.label(fg, structure=np.ones((3, 3), dtype=int))
    objs = []
    for sl_i, sl in enumerate(ndimage.find_objects(lab), start=1):
        mask = lab[sl] == sl_i
        colours = np.unique(arr[sl][mask], axis=0)
        ys, xs = np.nonzero(mask)
        objs.append(
            {
                "mask": mask,
                "colours": colours,
                "area": int(mask.sum()),
                "bbox": (sl[1].start, sl[0].start, sl[1].stop - 1, sl[0].stop - 1),
                "xs": xs.astype(float),
                "ys": ys.astype(float),
            }
        )
    return objs


def moment(obj, order: int) -> complex:
    """Complex moment that rotates as exp(i*order*theta) (y flipped: counter-clockwise > 0)."""
    z = (obj["xs"] - obj["xs"].mean()) - 1j * (obj["ys"] - obj["ys"].mean())
    if order == 1:
        return complex(np.sum(np.abs(z) ** 2 * z))
    return complex(np.sum(z**order))


def measured_rotation(a, b, period: float) -> float:
    """Folded rotation between two masks of a period-periodic shape, in degrees.

    Order-k complex moments (k = 360/period) rotate as exp(i k theta); for the 360-periodic L
    the second-order moment gives the axis to +-180 deg and the order-1 moment
    sum(|z|^2 z) picks the half-turn.
    """
    k = int(round(360.0 / period))
    if k == 1:
        d2 = math.degrees(np.angle(moment(a, 2) / moment(b, 2))) / 2
        d1 = math.degrees(np.angle(moment(a, 1) / moment(b, 1)))
        cands = [d2 - 180, d2, d2 + 180]
        d = min(cands, key=lambda c: abs((c - d1 + 180) % 360 - 180))
        d = abs((d + 180) % 360 - 180)
        return d
    ma, mb = moment(a, k), moment(b, k)
    assert abs(ma) > 0 and abs(mb) > 0, "moment vanishes; orientation undefined"
    return abs(math.degrees(np.angle(ma / mb)) / k)


def analyse(stim):
    objs = segment(stim.image)
    assert len(objs) == 49 == stim.n_distractors + 1
    x0, y0, x1, y1 = stim.target_bbox
    in_box = [o for o in objs if o["bbox"][0] >= x0 and o["bbox"][1] >= y0 and o["bbox"][2] <= x1 and o["bbox"][3] <= y1]
    assert len(in_box) == 1, "exactly one object lies inside the target bbox"
    target = in_box[0]
    assert target["bbox"] == stim.target_bbox, "bbox is tight around the target's pixels"
    distractors = [o for o in objs if o is not target]
    for o in objs:
        assert len(o["colours"]) == 1, "objects are flat-coloured"
    # distractors are identical: same colour, same mask up to translation
    ref = distractors[0]
    for o in distractors[1:]:
        assert np.array_equal(o["colours"], ref["colours"])
        assert o["mask"].shape == ref["mask"].shape and np.array_equal(o["mask"], ref["mask"])
    return target, ref


CASES = [(f, d) for f in ("color", "orientation", "size") for d in ("easy", "medium", "hard")]


@pytest.mark.parametrize("feature,difficulty", CASES)
def test_difficulty_measured_from_pixels(feature, difficulty):
    shapes_seen = set()
    for index in range(30):
        stim = sa.make_search_stimulus(11, index, feature, difficulty)
        shapes_seen.add(stim.shape)
        target, dist = analyse(stim)
        t_rgb, d_rgb = target["colours"][0], dist["colours"][0]
        colour_dist = float(np.linalg.norm(t_rgb - d_rgb))
        area_ratio = target["area"] / dist["area"]
        if feature == "color":
            assert colour_dist > 0
            assert seed_bin("color", colour_dist) == difficulty, (stim.stimulus_id, colour_dist)
            assert np.array_equal(target["mask"], dist["mask"]), "only the colour differs"
        elif feature == "orientation":
            assert stim.shape != "circle"
            rot = measured_rotation(target, dist, PERIOD[stim.shape])
            assert rot >= 3.0, (stim.stimulus_id, rot)
            assert seed_bin("orientation", rot) == difficulty, (stim.stimulus_id, stim.shape, rot)
            assert abs(rot - stim.difference) < 3.0, (stim.stimulus_id, rot, stim.difference)
            assert colour_dist == 0
            assert abs(area_ratio - 1) <= 0.05, (stim.stimulus_id, area_ratio)
        else:
            assert abs(area_ratio - 1) >= 0.1
            assert seed_bin("size", area_ratio) == difficulty, (stim.stimulus_id, area_ratio)
            assert area_ratio == pytest.approx(stim.difference)
            assert colour_dist == 0
            if stim.shape != "circle" and min(target["area"], dist["area"]) >= 150:
                assert measured_rotation(target, dist, PERIOD[stim.shape]) < 6.0
        assert sa.difficulty_of(feature, stim.difference) == difficulty
    allowed = set(PERIOD) if feature == "orientation" else set(PERIOD) | {"circle"}
    if feature == "orientation" and difficulty == "easy":
        allowed = {"ellipse", "rectangle", "L"}
    assert shapes_seen <= allowed
    assert len(shapes_seen) >= min(3, len(allowed))


def test_orientation_measurement_detects_known_rotation():
    # guard for the measuring tool itself: a sprite rotated by 40 deg measures ~40 deg
    for shape, period in PERIOD.items():
        a = sa._render_sprite(shape, 50, 10.0)
        b = sa._render_sprite(shape, 50, 10.0 + 40.0 if period > 80 else 10.0 + 20.0)
        oa = {"xs": np.nonzero(a)[1].astype(float), "ys": np.nonzero(a)[0].astype(float)}
        ob = {"xs": np.nonzero(b)[1].astype(float), "ys": np.nonzero(b)[0].astype(float)}
        expect = 40.0 if period > 80 else 20.0
        assert measured_rotation(ob, oa, period) == pytest.approx(expect, abs=2.0), shape


def test_square_cannot_be_easy_orientation_and_circle_never_orientation():
    assert "square" not in sa._allowed_shapes("orientation", "easy")
    assert "cross" not in sa._allowed_shapes("orientation", "easy")
    for d in sa.DIFFICULTIES:
        assert "circle" not in sa._allowed_shapes("orientation", d)
    assert sa.folded_angle_difference(100, 10, 90) == pytest.approx(0.0)
    assert sa.folded_angle_difference(10, 170, 180) == pytest.approx(20.0)
    with pytest.raises(ValueError, match="period"):
        sa.folded_angle_difference(1, 2, 0)


def test_determinism_same_seed_same_bytes_different_seed_differs():
    counts = {"color": 2, "orientation": 2, "size": 2}
    a = list(sa.generate_p3(seed=4, counts=counts))
    b = list(sa.generate_p3(seed=4, counts=counts))
    c = list(sa.generate_p3(seed=5, counts=counts))
    assert [s.png_bytes() for s in a] == [s.png_bytes() for s in b]
    assert [s.sha256 for s in a] == [s.sha256 for s in b]
    assert all(s.sha256 == hashlib.sha256(s.png_bytes()).hexdigest() for s in a)
    assert [s.pixel_sha256 for s in a] == [s.pixel_sha256 for s in b]
    assert all(x.pixel_sha256 != y.pixel_sha256 for x, y in zip(a, c))
    assert all(x.sha256 != y.sha256 for x, y in zip(a, c))
    assert len({s.stimulus_id for s in a + c}) == 12
    # stimulus i can be re-rendered alone
    plan = sa.plan_p3(counts)
    one = sa.make_search_stimulus(4, 3, *plan[3])
    assert one.sha256 == a[3].sha256


def test_default_plan_is_p3_composition_in_equal_thirds():
    plan = sa.plan_p3()
    assert len(plan) == 2514
    for feat, n in (("color", 810), ("orientation", 864), ("size", 840)):
        assert sum(1 for f, _ in plan if f == feat) == n
        for d in sa.DIFFICULTIES:
            assert sum(1 for f, dd in plan if f == feat and dd == d) == n // 3
    assert sa.plan_p3({"color": 4}, {"easy": 1, "hard": 1}) == [
        ("color", "easy"), ("color", "hard"), ("color", "easy"), ("color", "hard")
    ]


def test_generation_is_lazy():
    it = sa.generate_p3(seed=0)
    first = next(it)
    assert first.feature == "color" and first.image.size == (512, 512) and first.image.mode == "RGB"


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"counts": {"shape": 3}}, "shape"),
        ({"counts": {"color": -1}}, "-1"),
        ({"difficulty_mix": {"trivial": 1}}, "trivial"),
        ({"difficulty_mix": {"easy": 0}}, "zero total"),
        ({"image_size": 100}, "100"),
        ({"seed": -3}, "-3"),
        ({"jitter_px": 30}, "jitter_px=30"),
    ],
)
def test_bad_input_raises_naming_value(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        sa.generate_p3(**kwargs)


def test_make_stimulus_rejects_unknown_feature_and_difficulty():
    with pytest.raises(ValueError, match="'texture'"):
        sa.make_search_stimulus(0, 0, "texture", "easy")
    with pytest.raises(ValueError, match="'extreme'"):
        sa.make_search_stimulus(0, 0, "color", "extreme")


def test_difficulty_of_edges():
    assert sa.difficulty_of("color", 50) == "hard"
    assert sa.difficulty_of("color", 50.01) == "medium"
    assert sa.difficulty_of("color", 100) == "medium"
    assert sa.difficulty_of("color", 100.5) == "easy"
    assert sa.difficulty_of("orientation", 30) == "hard"
    assert sa.difficulty_of("orientation", 60) == "medium"
    assert sa.difficulty_of("orientation", 90) == "easy"
    assert sa.difficulty_of("orientation", 91) is None
    assert sa.difficulty_of("size", 0.5) == "hard"
    assert sa.difficulty_of("size", 1.5) == "hard"
    assert sa.difficulty_of("size", 0.3) == "medium"
    assert sa.difficulty_of("size", 3.0) == "medium"
    assert sa.difficulty_of("size", 0.29) == "easy"
    assert sa.difficulty_of("size", 3.01) == "easy"
    with pytest.raises(ValueError, match="nan"):
        sa.difficulty_of("size", float("nan"))


def test_red_box_surrounds_target_without_covering_it():
    stim = sa.make_search_stimulus(2, 0, "size", "easy")
    boxed = sa.draw_red_box(stim.image, stim.target_bbox, width_px=3, pad_px=2)
    assert np.array_equal(np.asarray(stim.image), np.asarray(sa.make_search_stimulus(2, 0, "size", "easy").image))
    a = np.asarray(boxed).astype(int)
    orig = np.asarray(stim.image).astype(int)
    x0, y0, x1, y1 = stim.target_bbox
    # target pixels untouched
    assert np.array_equal(a[y0 : y1 + 1, x0 : x1 + 1], orig[y0 : y1 + 1, x0 : x1 + 1])
    # the ring 3..5 px outside the box is pure red where inside the image
    ring_x = x0 - 3
    if ring_x >= 0:
        col = a[max(y0 - 3, 0) : y1 + 4, ring_x]
        assert np.all(col == [255, 0, 0])
    changed = np.any(a != orig, axis=2)
    ys, xs = np.nonzero(changed)
    assert xs.min() >= max(x0 - 5, 0) and xs.max() <= x1 + 5 and ys.min() >= max(y0 - 5, 0)
    with pytest.raises(ValueError, match="outside"):
        sa.draw_red_box(stim.image, (0, 0, 600, 10))
    with pytest.raises(ValueError, match="width_px"):
        sa.draw_red_box(stim.image, stim.target_bbox, width_px=0)


def test_format_box_text():
    assert sa.format_box_text((20, 22, 55, 39)) == "(20, 22, 55, 39)"
    assert sa.format_box_text((0, 0, 256, 128), image_size=(512, 512), units="unit") == "(0.000, 0.000, 0.500, 0.250)"
    assert sa.format_box_text((0, 0, 256, 128), image_size=(512, 512), units="permille") == "(0, 0, 500, 250)"
    with pytest.raises(ValueError, match="image_size"):
        sa.format_box_text((0, 0, 1, 1), units="unit")
    with pytest.raises(ValueError, match="'inches'"):
        sa.format_box_text((0, 0, 1, 1), units="inches")
    with pytest.raises(ValueError, match="x_min <= x_max"):
        sa.format_box_text((5, 0, 1, 1))


def test_labels_and_object_category():
    s = sa.make_search_stimulus(0, 0, "orientation", "hard")
    assert s.labels == frozenset({"Orientation"})
    assert s.object_category == sa.SHAPE_PLURAL[s.shape]


@pytest.mark.parametrize("feature,value,expected", [
    # color: hard d <= 50 < medium <= 100 < easy (value exactly at each edge, one step either side)
    ("color", 0.0, "hard"), ("color", 49.999, "hard"), ("color", 50.0, "hard"), ("color", 50.001, "medium"),
    ("color", 99.999, "medium"), ("color", 100.0, "medium"), ("color", 100.001, "easy"), ("color", 441.7, "easy"),
    # orientation: hard [0, 30], medium (30, 60], easy (60, 90], above 90 no bin
    ("orientation", 0.0, "hard"), ("orientation", 30.0, "hard"), ("orientation", 30.001, "medium"),
    ("orientation", 60.0, "medium"), ("orientation", 60.001, "easy"), ("orientation", 90.0, "easy"),
    ("orientation", 90.001, None),
    # size: 0 no bin; easy < 0.3 <= medium < 0.5 <= hard <= 1.5 < medium <= 3.0 < easy
    ("size", 0.0, None), ("size", 0.001, "easy"), ("size", 0.299, "easy"), ("size", 0.3, "medium"),
    ("size", 0.499, "medium"), ("size", 0.5, "hard"), ("size", 1.0, "hard"), ("size", 1.5, "hard"),
    ("size", 1.501, "medium"), ("size", 3.0, "medium"), ("size", 3.001, "easy"), ("size", 10.0, "easy"),
])
def test_difficulty_of_bin_edges(feature, value, expected):
    assert difficulty_of(feature, value) == expected


@pytest.mark.parametrize("value", [-0.001, math.inf, math.nan])
def test_difficulty_of_rejects_negative_or_non_finite(value):
    with pytest.raises(ValueError, match=r"^difference must be finite and >= 0, got .+ for 'size'$"):
        difficulty_of("size", value)


def test_difficulty_of_rejects_unknown_feature():
    with pytest.raises(ValueError, match=r"^unknown feature 'shape'; expected one of \('color', 'orientation', 'size'\)$"):
        difficulty_of("shape", 1.0)


@pytest.mark.parametrize("a,b,period,expected", [
    (10.0, 350.0, 360.0, 20.0),   # (10 - 350) mod 360 = 20; min(20, 340) = 20
    (350.0, 10.0, 360.0, 20.0),   # (350 - 10) mod 360 = 340; min(340, 20) = 20
    (0.0, 100.0, 180.0, 80.0),    # -100 mod 180 = 80; min(80, 100) = 80
    (100.0, 0.0, 180.0, 80.0),    # 100 mod 180 = 100; min(100, 80) = 80
    (45.0, 0.0, 90.0, 45.0),      # 45 mod 90 = 45; min(45, 45) = 45 (largest folded value)
    (30.0, 30.0, 90.0, 0.0),      # identical orientations
    (95.0, 0.0, 90.0, 5.0),       # 95 mod 90 = 5
])
def test_folded_angle_difference_known_answers(a, b, period, expected):
    d = folded_angle_difference(a, b, period)
    assert isinstance(d, float) and d == pytest.approx(expected)


@pytest.mark.parametrize("period", [0, -90.0, None])
def test_folded_angle_difference_rejects_non_positive_period(period):
    with pytest.raises(ValueError, match=rf"^symmetry period must be > 0 degrees, got {period!r}$"):
        folded_angle_difference(10.0, 0.0, period)


def test_folded_angle_difference_small_positive_period():
    # any period > 0 is valid, also 1 degree: 0.75 mod 1 = 0.75; min(0.75, 0.25) = 0.25
    assert folded_angle_difference(0.75, 0.0, 1.0) == pytest.approx(0.25)


def test_png_and_pixel_hashes_are_computed_on_first_use_only(monkeypatch):
    # issue 25: rendering an array (the VSI and SalBench hot path) no longer PNG-encodes it to hash
    # it; the hashes are computed when read, once, and equal the eager ones
    png_calls, pix_calls = [], []
    real_png, real_pix = sa._png_bytes, sa.image_sha256
    monkeypatch.setattr(sa, "_png_bytes", lambda im: png_calls.append(1) or real_png(im))
    monkeypatch.setattr(sa, "image_sha256", lambda im: pix_calls.append(1) or real_pix(im))
    stim = sa.make_search_stimulus(7, 2, "color", "medium")
    assert png_calls == [] and pix_calls == []
    assert stim.sha256 == hashlib.sha256(real_png(stim.image)).hexdigest() == stim.sha256
    assert stim.pixel_sha256 == real_pix(stim.image) == stim.pixel_sha256
    assert len(png_calls) == 1 and len(pix_calls) == 1


# pixel hashes (seeding.image_sha256, first 16 hex) of arrays drawn by the generator before the
# layout / drawing split (masked colouring of each sprite in turn), at default and other sizes
_PIXELS_BEFORE_SPLIT = [((0, 0, "color", "easy", 512, 7), "1735808c4d95b0d4"),
                        ((0, 1, "orientation", "hard", 512, 7), "7d1757cdbaec5b6e"),
                        ((0, 2, "size", "medium", 512, 7), "03bf80828731db35"),
                        ((9, 3, "size", "easy", 800, 12), "39b6e09457160c1d"),
                        ((9, 4, "orientation", "easy", 600, 0), "1964c35839994adc")]


@pytest.mark.parametrize("args, pixels", _PIXELS_BEFORE_SPLIT)
def test_arrays_keep_their_pixels_across_the_layout_and_drawing_split(args, pixels):
    st = sa.make_search_stimulus(*args)
    assert st.pixel_sha256[:16] == pixels
    lay = sa.search_layout(*args)
    again = lay.draw()
    assert again.tobytes() == st.image.tobytes() and again is not lay.draw()  # drawn anew each call
    assert lay.stimulus().pixel_sha256 == st.pixel_sha256
    assert lay.target_bbox == st.target_bbox and lay.object_category == st.object_category


@pytest.mark.parametrize("feature", sa.FEATURES)
@pytest.mark.parametrize("size, jitter", [(512, 7), (512, 0), (700, 9)])
def test_tile_drawing_equals_colouring_each_sprites_mask_in_turn(feature, size, jitter):
    """draw() stamps each sprite's box as a tile; colouring only the mask pixels, cell by cell
    (by hand here), gives the same bytes because the boxes are disjoint."""
    for index, difficulty in enumerate(sa.DIFFICULTIES):
        lay = sa.search_layout(3, index, feature, difficulty, size, jitter)
        ref = np.empty((size, size, 3), np.uint8)
        ref[:, :] = BG
        target = lay.target_cell[0] * sa.GRID + lay.target_cell[1]
        for k, (x0, y0) in enumerate(lay.origins):
            m = lay.sprites[k == target]
            ref[y0:y0 + m.shape[0], x0:x0 + m.shape[1]][m] = lay.target_rgb if k == target else lay.distractor_rgb
        assert np.array_equal(np.asarray(lay.draw()), ref)
        (x0, y0), m = lay.origins[target], lay.sprites[1]
        ys, xs = np.nonzero(np.any(ref[y0:y0 + m.shape[0], x0:x0 + m.shape[1]] != BG, axis=2))
        assert lay.target_bbox == (x0 + xs.min(), y0 + ys.min(), x0 + xs.max(), y0 + ys.max())
