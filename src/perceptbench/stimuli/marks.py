"""Chart marks as the perceptual-kernel study drew them (Demiralp, Bernstein & Heer 2014):
the shape palette, the size palette and the three 4x4 bivariate palettes, rasterised
deterministically.

Geometry is the release's own stimulus code, uwdata/perceptual-kernels@eda46ab
``shared/stim.js`` (functions ``regularPolygon``, ``shape10``, ``size10``, ``shapeXcolor4``,
``sizeXcolor4``, ``shapeXsize4``) with the styling of the experiments' ``appendStimuli``
(``exp/<palette>/{tm,td}/<palette>-<task>.html``, identical in both tasks): every mark is an
outline with no fill, stroke 4.5 px with round caps and joins, drawn in a symbol group
``translate(36,36) scale(36)`` (a 72 px cell, 36 px per symbol unit).  Black strokes except
where the bivariate palette colours them (Tableau-10, ``shared/palettes.js``).  The size
palette's stroke is ``1/8`` unit scaled with the group (4.5 px); the shape and bivariate
marks' is a non-scaling 4.5 px, so the ``shapeXsize4`` marks keep a 4.5 px stroke whatever
their scale.  ``../shared/data_notes/palettes_used.json`` transcribes the same facts.

Here the cell is :data:`MARK_CANVAS_PX` square (the colour chips' canvas) and one symbol unit is
:data:`MARK_UNIT_PX` (so the study's proportions are kept: the cell spans -1..1 units and the
stroke is 0.125 units, 14 px).  The stroke region is the path's Minkowski sum with a disc of the
stroke's diameter (what SVG draws for round caps and joins); each pixel's ink is the fraction of
its 4x4 sub-pixel centres inside it (a deterministic stand-in for the browser's anti-aliasing),
blended linearly from white to the stroke colour and rounded.  Coordinates are SVG's (y down):
``rotate(a)`` maps (x, y) to (x cos a - y sin a, x sin a + y cos a), a in degrees."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np
from PIL import Image

from .render import CHIP_CANVAS_PX, hex_to_rgb

__all__ = ["MARK_CANVAS_PX", "MARK_UNIT_PX", "STROKE_UNITS", "TABLEAU10", "SHAPE_NAMES", "SIZE_D",
           "size_radius", "shape_paths", "MarkPalette", "PALETTES", "get_palette", "render_mark"]

MARK_CANVAS_PX = CHIP_CANVAS_PX
"""Side of a mark's component image (the colour chips' canvas, the default encoders' input)."""
MARK_UNIT_PX = CHIP_CANVAS_PX / 2
"""Pixels per symbol unit: the study's cell spans -1..1 units (72 px at 36 px per unit)."""
STROKE_UNITS = 4.5 / 36
"""Stroke width in symbol units: 4.5 px at the study's 36 px per unit (``appendStimuli``)."""
SUPERSAMPLE = 4
"""Sub-pixel samples per pixel side for the ink fraction."""

TABLEAU10: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
"""Tableau-10 / d3.category10 in the study's order (``shared/palettes.js``, ``palettes.tableau10``)."""

SHAPE_NAMES: tuple[str, ...] = ("circle", "square", "plus", "cross", "asterisk", "diamond",
                                "triangle-up", "triangle-down", "triangle-left", "triangle-right")
"""The ``shape10`` symbols in the study's index order (cases 0-9 of ``shape10``); the triangles
are ``regularPolygon(3)`` (a vertex on +x) under ``rotate(-90)``, ``rotate(90)``,
``rotate(180)`` and no rotation."""

SIZE_D: tuple[float, ...] = (0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.25, 2.5)
"""``size.r`` of ``stim.js``: circle radius sqrt(d / 5) units for these d (area grows linearly)."""

BIVARIATE_SHAPES = (1, 2, 3, 5)
"""``shapeXcolor4`` / ``shapeXsize4``: ``s = [1, 2, 3, 5]`` (square, plus, cross, diamond)."""
BIVARIATE_SIZES = (0, 1, 8, 9)
"""``sizeXcolor4`` / ``shapeXsize4``: ``s`` resp. ``z = [0, 1, 8, 9]`` into the size palette."""
BIVARIATE_COLORS = (0, 1, 3, 9)
"""``shapeXcolor4`` / ``sizeXcolor4``: ``c = [0, 1, 3, 9]`` into Tableau-10."""
SHAPE_SIZE_SCALE = 1.8
"""``shapeXsize4`` scales a ``shape10`` symbol by 1.8 x the size palette's radius."""

Polyline = tuple[tuple[tuple[float, float], ...], bool]  # (points, closed)
Paths = tuple[tuple[float, ...] | Polyline, ...]  # circles as (radius,), polylines as (points, closed)


def size_radius(i: int) -> float:
    """Radius in symbol units of size-palette mark ``i`` (0..9): sqrt(d_i / 5) (``size10``)."""
    return math.sqrt(SIZE_D[i] / 5)


def _regular_polygon(n: int, r: float) -> list[tuple[float, float]]:
    """``regularPolygon(n, r)`` of stim.js: vertex 0 at (r, 0), then every 2 pi / n; a triangle
    is shifted by -0.25 r in x."""
    pts = [(r, 0.0)] + [(r * math.cos(i * 2 * math.pi / n), r * math.sin(i * 2 * math.pi / n)) for i in range(1, n)]
    if n == 3:
        pts = [(x - 0.25 * r, y) for x, y in pts]
    return pts


def _rotate(pts, deg: float) -> tuple[tuple[float, float], ...]:
    a = math.radians(deg)
    c, s = math.cos(a), math.sin(a)
    return tuple((x * c - y * s, x * s + y * c) for x, y in pts)


def shape_paths(i: int) -> Paths:
    """The outline of ``shape10`` symbol ``i`` (0..9) in symbol units: circles as ``(r,)``,
    polylines as ``(points, closed)``.  Constants of stim.js: r0 = 1/sqrt(pi) (circle of unit
    area; the plus, cross and asterisk's half-length), r1 = 1/sqrt(2) (the square's and diamond's
    vertex radius), r6 = 0.8 sqrt(4 / (3 sqrt 3)) (the triangles'); the asterisk's arms at
    90 and +-30 degrees.  Raises IndexError outside 0..9."""
    if not 0 <= i < 10:
        raise IndexError(f"shape index {i} outside 0..9")
    r0, r1 = 1 / math.sqrt(math.pi), 1 / math.sqrt(2)
    r6 = 0.8 * math.sqrt(4 / (3 * math.sqrt(3)))
    x = r0 * math.cos(math.pi / 4)
    xs, ys = r0 * math.cos(math.pi / 6), r0 * math.sin(math.pi / 6)

    def seg(a, b):
        return ((a, b), False)

    if i == 0:
        return ((r0,),)
    if i == 1:
        return ((_rotate(_regular_polygon(4, r1), 45), True),)
    if i == 2:
        return (seg((r0, 0.0), (-r0, 0.0)), seg((0.0, r0), (0.0, -r0)))
    if i == 3:
        return (seg((x, x), (-x, -x)), seg((-x, x), (x, -x)))
    if i == 4:
        return (seg((0.0, r0), (0.0, -r0)), seg((xs, ys), (-xs, -ys)), seg((-xs, ys), (xs, -ys)))
    if i == 5:
        return ((tuple(_regular_polygon(4, r1)), True),)
    return ((_rotate(_regular_polygon(3, r6), {6: -90, 7: 90, 8: 180, 9: 0}[i]), True),)


def _scaled(paths: Paths, k: float) -> Paths:
    return tuple((p[0] * k,) if len(p) == 1 else (tuple((x * k, y * k) for x, y in p[0]), p[1]) for p in paths)


@lru_cache(maxsize=1)
def _grid(canvas: int, ss: int) -> tuple[np.ndarray, np.ndarray]:
    """Sub-pixel sample centres in symbol units, shape (canvas*ss, canvas*ss) each."""
    c = (np.arange(canvas * ss, dtype=np.float64) + 0.5) / ss  # pixel coordinates
    u = (c - canvas / 2) / MARK_UNIT_PX
    return np.meshgrid(u, u)  # (x, y): x varies along columns, y (down) along rows


def rasterise(paths: Paths, stroke: str, canvas: int = MARK_CANVAS_PX) -> Image.Image:
    """A white ``canvas`` x ``canvas`` RGB image of ``paths`` (symbol units, centred) stroked
    :data:`STROKE_UNITS` wide in ``stroke`` (#rrggbb) with round caps and joins, no fill; ink per
    pixel = fraction of its :data:`SUPERSAMPLE`\u00b2 sub-pixel centres within half the stroke of
    the path."""
    X, Y = _grid(canvas, SUPERSAMPLE)
    h = STROKE_UNITS / 2
    inside = np.zeros(X.shape, dtype=bool)
    for p in paths:
        if len(p) == 1:  # circle of radius p[0] at the origin
            inside |= np.abs(np.hypot(X, Y) - p[0]) <= h
            continue
        pts, closed = p
        seq = list(pts) + ([pts[0]] if closed else [])
        for (ax, ay), (bx, by) in zip(seq[:-1], seq[1:]):
            dx, dy = bx - ax, by - ay
            t = np.clip(((X - ax) * dx + (Y - ay) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
            inside |= np.hypot(X - ax - t * dx, Y - ay - t * dy) <= h
    ink = inside.reshape(canvas, SUPERSAMPLE, canvas, SUPERSAMPLE).mean(axis=(1, 3))
    rgb = np.array(hex_to_rgb(stroke), dtype=np.float64)
    img = np.rint(255.0 + ink[..., None] * (rgb - 255.0)).astype(np.uint8)
    return Image.fromarray(img, "RGB")


@dataclass(frozen=True)
class MarkPalette:
    """One palette of the kernel study: ``name`` (the release's file prefix, e.g. ``shape``),
    ``n`` marks, ``labels`` (one short name per mark, in the study's index order) and
    ``paths_and_stroke(i)`` -> (:data:`Paths`, stroke colour) of mark ``i``; ``source`` names the
    stim.js function."""

    name: str
    n: int
    labels: tuple[str, ...]
    paths_and_stroke: Callable[[int], tuple[Paths, str]]
    source: str

    def image(self, i: int) -> Image.Image:
        """Mark ``i`` (0..n-1) on a white :data:`MARK_CANVAS_PX` square (a new image each call).
        Raises IndexError outside 0..n-1."""
        if not 0 <= i < self.n:
            raise IndexError(f"{self.name} palette has marks 0..{self.n - 1}, not {i}")
        return render_mark(self.name, i).copy()


def _shape10(i: int):
    return shape_paths(i), "#000000"


def _size10(i: int):
    return ((size_radius(i),),), "#000000"


def _split(d: int) -> tuple[int, int]:
    """The bivariate index rule of stim.js: j = floor(d / 4), i = d - 4 j."""
    j = d // 4
    return d - 4 * j, j


def _shape_color(d: int):
    i, j = _split(d)
    return shape_paths(BIVARIATE_SHAPES[i]), TABLEAU10[BIVARIATE_COLORS[j]]


def _size_color(d: int):
    i, j = _split(d)
    return ((size_radius(BIVARIATE_SIZES[i]),),), TABLEAU10[BIVARIATE_COLORS[j]]


def _shape_size(d: int):
    i, j = _split(d)
    # shapeXsize4 replaces shape10's transform by scale(...) and restores rotate(45) for the square
    return _scaled(shape_paths(BIVARIATE_SHAPES[i]), SHAPE_SIZE_SCALE * size_radius(BIVARIATE_SIZES[j])), "#000000"


def _bivariate_labels(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{first[d % 4]}/{second[d // 4]}" for d in range(16))


_SHAPE4 = tuple(SHAPE_NAMES[s] for s in BIVARIATE_SHAPES)
_SIZE4 = tuple(f"d={SIZE_D[s]}" for s in BIVARIATE_SIZES)
_COLOR4 = tuple(TABLEAU10[c] for c in BIVARIATE_COLORS)

PALETTES: dict[str, MarkPalette] = {p.name: p for p in (
    MarkPalette("shape", 10, SHAPE_NAMES, _shape10, "shape10"),
    MarkPalette("size", 10, tuple(f"d={d}" for d in SIZE_D), _size10, "size10"),
    MarkPalette("shapecolor", 16, _bivariate_labels(_SHAPE4, _COLOR4), _shape_color, "shapeXcolor4"),
    MarkPalette("sizecolor", 16, _bivariate_labels(_SIZE4, _COLOR4), _size_color, "sizeXcolor4"),
    MarkPalette("shapesize", 16, _bivariate_labels(_SHAPE4, _SIZE4), _shape_size, "shapeXsize4"),
)}
"""The drawn palettes by the release's file prefix (the colour palette is a filled chip:
:func:`perceptbench.stimuli.render.color_chip`)."""


def get_palette(name: str) -> MarkPalette:
    """The palette called ``name``; raises KeyError listing the known ones."""
    try:
        return PALETTES[name]
    except KeyError:
        raise KeyError(f"unknown mark palette {name!r}; known: {sorted(PALETTES)}") from None


@lru_cache(maxsize=64)
def render_mark(palette: str, i: int) -> Image.Image:
    """Mark ``i`` of ``palette`` rasterised once per process (:func:`rasterise`); callers that
    may modify the image take a copy (:meth:`MarkPalette.image`)."""
    paths, stroke = get_palette(palette).paths_and_stroke(i)
    return rasterise(paths, stroke)
