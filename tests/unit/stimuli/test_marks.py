"""stimuli/marks.py: the kernel study's marks drawn as its stimulus code drew them
(uwdata/perceptual-kernels@eda46ab shared/stim.js, exp/*/tm/*-tm.html appendStimuli)."""

import math

import numpy as np
import pytest

from perceptbench.stimuli import marks
from perceptbench.stimuli.marks import (MARK_CANVAS_PX, MARK_UNIT_PX, PALETTES, STROKE_UNITS, get_palette,
                                        rasterise, shape_paths, size_radius)

C = MARK_CANVAS_PX // 2  # the centre pixel row / column


def ink(img) -> np.ndarray:
    """1 - brightness of each pixel (0 white .. 1 full stroke colour), from the darkest channel."""
    a = np.asarray(img, dtype=float)
    return 1 - a.min(axis=2) / 255


def test_constants_are_the_studys_cell_and_stroke():
    # a 72 px cell at 36 px per unit spans -1..1 units; the stroke is 4.5 px there
    assert MARK_UNIT_PX * 2 == MARK_CANVAS_PX == 224
    assert STROKE_UNITS == 0.125


def test_size_palette_radii_are_sqrt_d_over_5():
    d = [0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5]
    assert [size_radius(i) for i in range(10)] == [math.sqrt(x / 5) for x in d]
    assert get_palette("size").paths_and_stroke(3) == (((math.sqrt(1 / 5),),), "#000000")


def test_shape10_geometry_follows_stim_js():
    r0 = 1 / math.sqrt(math.pi)
    assert shape_paths(0) == ((r0,),)  # circle of unit area
    (square, closed), = shape_paths(1)
    assert closed and len(square) == 4
    # regularPolygon(4, 1/sqrt 2) rotated 45 degrees: an axis-aligned unit square
    assert np.allclose(sorted(square), [(-0.5, -0.5), (-0.5, 0.5), (0.5, -0.5), (0.5, 0.5)])
    (diamond, _), = shape_paths(5)
    assert np.allclose(diamond, [(1 / math.sqrt(2), 0), (0, 1 / math.sqrt(2)), (-1 / math.sqrt(2), 0),
                                 (0, -1 / math.sqrt(2))])
    plus = shape_paths(2)
    assert [p[0] for p in plus] == [((r0, 0.0), (-r0, 0.0)), ((0.0, r0), (0.0, -r0))]
    assert len(shape_paths(4)) == 3  # the asterisk: three strokes through the centre
    r6 = 0.8 * math.sqrt(4 / (3 * math.sqrt(3)))
    # triangles: regularPolygon(3, r6) (vertex (r6, 0), shifted -0.25 r6) under rotate(-90/90/180/0);
    # SVG's y points down, so rotate(-90) points the apex up (negative y)
    apex = {i: min(shape_paths(i)[0][0], key=lambda p: (p[1], p[0])) for i in (6,)}
    assert np.allclose(apex[6], (0, -0.75 * r6))
    assert np.allclose(max(shape_paths(7)[0][0], key=lambda p: p[1]), (0, 0.75 * r6))
    assert np.allclose(min(shape_paths(8)[0][0], key=lambda p: p[0]), (-0.75 * r6, 0))
    assert np.allclose(max(shape_paths(9)[0][0], key=lambda p: p[0]), (0.75 * r6, 0))
    with pytest.raises(IndexError):
        shape_paths(10)


def test_bivariate_index_rule_j_is_d_div_4():
    # shapeXcolor4: s=[1,2,3,5], c=[0,1,3,9]; d=6 -> j=1 (orange #ff7f0e), i=2 (cross, shape10 case 3)
    paths, stroke = get_palette("shapecolor").paths_and_stroke(6)
    assert stroke == "#ff7f0e" and paths == shape_paths(3)
    # sizeXcolor4: d=13 -> j=3 (#17becf), i=1 (size index 1)
    assert get_palette("sizecolor").paths_and_stroke(13) == (((size_radius(1),),), "#17becf")
    # shapeXsize4: d=9 -> j=2 (size index 8, scale 1.8 r), i=1 (plus)
    paths, stroke = get_palette("shapesize").paths_and_stroke(9)
    k = 1.8 * size_radius(8)
    assert stroke == "#000000"
    assert np.allclose([p[0] for p in paths], [[(x * k, y * k) for x, y in p[0]] for p in shape_paths(2)])
    assert get_palette("shapesize").labels[9] == "plus/d=2.25"
    assert {p: PALETTES[p].n for p in PALETTES} == {"shape": 10, "size": 10, "shapecolor": 16, "sizecolor": 16,
                                                    "shapesize": 16}


def test_circle_outline_is_a_14px_ring_at_its_radius():
    img = get_palette("size").image(9)
    assert img.size == (224, 224) and img.mode == "RGB"
    row = ink(img)[C]
    r_px = size_radius(9) * MARK_UNIT_PX  # 79.2 px
    assert row[C] == 0 and row[0] == 0  # hollow, no fill; white outside
    on = np.flatnonzero(row > 0.5)
    left = on[on < C]
    # the ring's dark run straddles the radius and is 14 px (0.125 units) wide
    assert len(left) == 14 and left.min() < C - r_px < left.max()


def test_stroke_colour_and_round_cap_and_antialiased_edge():
    img = get_palette("shapecolor").image(5)  # plus in orange
    a = np.asarray(img)
    assert tuple(a[C, C]) == (0xff, 0x7f, 0x0e)  # the centre of the plus is fully inked
    edge = ink(img)[C - 20]  # a row through the vertical arm only
    assert 0 < edge.max() <= 1 and ((edge > 0) & (edge < 1)).any()  # partial pixels at the edge
    # round caps: the arm ends half a stroke (7 px) beyond its endpoint r0, tapering
    r0_px = MARK_UNIT_PX / math.sqrt(math.pi)
    col = ink(img)[:, C]
    assert col[int(C - r0_px - 5)] > 0.5 and col[int(C - r0_px - 8)] == 0


def test_rendering_is_deterministic_and_copies():
    p = get_palette("shape")
    a, b = p.image(4), p.image(4)
    assert a is not b and a.tobytes() == b.tobytes()
    a.putpixel((0, 0), (0, 0, 0))
    assert p.image(4).getpixel((0, 0)) == (255, 255, 255)  # the cached image is untouched
    assert rasterise(shape_paths(4), "#000000").tobytes() == b.tobytes()


def test_unknown_palette_and_index_are_refused():
    with pytest.raises(KeyError, match="known"):
        get_palette("texture")
    with pytest.raises(IndexError, match="0..15"):
        get_palette("shapesize").image(16)
    assert marks.TABLEAU10[3] == "#d62728"
