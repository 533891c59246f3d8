"""P3-style synthetic visual-search arrays for the SalBench synthetic split (seed 001).

Seed 001 §3 describes the P3 set (Kotseruba et al. 2019) that SalBench re-uses: 2,514 images
(810 color, 864 orientation, 840 size search arrays) "arranged in a 7x7 grid", one target
among distractors, "pixel jitter applied to prevent perceptual grouping".  Seed 001 §6.1
defines the difficulty levels that this module reproduces:

* color: Euclidean distance between target and distractor RGB values
  (hard <= 50, medium 50-100, easy > 100);
* orientation: angular difference in rotation between target and distractors
  (hard 0-30 deg, medium 30-60 deg, easy 60-90 deg);
* size: area ratio target/distractor (hard 0.5-1.5, medium 0.3-0.5 or 1.5-3.0,
  easy < 0.3 or > 3.0).

Design (all lengths in pixels, angles in degrees, counter-clockwise as displayed):

* Image: ``image_size`` x ``image_size`` RGB (default 512), uniform gray background
  (128, 128, 128) as in the P3 release (whose images are 1024 x 1024).
* Grid: 7 x 7 cells of ``image_size / 7`` px; every cell holds one object (48 distractors
  + 1 target).  Each object's centre is the rounded cell centre plus an independent
  integer jitter drawn uniformly from ``[-jitter_px, +jitter_px]`` on each axis
  (default 7 px; P3 uses 15 px at 1024 px).
* Objects are solid, hard-edged (not anti-aliased) polygons, so every object pixel has
  exactly its object's RGB value and pixel areas are exact.  An object is rasterised once
  as a binary sprite and stamped at integer positions, so all distractors are pixel-wise
  identical.  Sprite half-extents are bounded so that objects never touch (>= 2 px gap)
  and never leave the image.
* "Size" of an object is its rendered pixel area (count of its mask pixels).

Shapes (``SHAPES``) and their rotational symmetry period (the smallest rotation that maps
the shape onto itself): circle (any angle: cannot carry orientation), ellipse (axes 1 :
0.5, 180), square (90), rectangle (sides 1 : 0.45, 180), cross (an equal-armed plus, arm
width 0.6 x arm half-length; non-convex, 90) and ``L`` (an L-shaped bracket; non-convex,
360).  An orientation difference is measured modulo the period and folded into
``[0, period/2]``; hence 90-periodic shapes (square, cross) can only express differences
up to 45 deg and carry only hard and medium orientation targets, while easy orientation
targets use ellipse, rectangle and L.

Difficulty bins, edges (see :func:`difficulty_of`): color hard ``d <= 50``, medium
``50 < d <= 100``, easy ``d > 100``; orientation hard ``0 <= a <= 30``, medium
``30 < a <= 60``, easy ``60 < a <= 90``; size hard ``0.5 <= r <= 1.5``, medium
``0.3 <= r < 0.5`` or ``1.5 < r <= 3.0``, easy ``r < 0.3`` or ``r > 3.0``.  The generator
samples strictly inside these bins (``SAMPLING_RANGES``) and never produces an identical
target: colour distance >= 12, folded angle >= 6 deg, area ratio at least 10 % away from 1.

Determinism: every stimulus is a pure function of ``(seed, index, feature, difficulty,
image_size, jitter_px)``; its random stream is ``seeding.rng_for(seed,
"salbench.search_array", index)`` (never the global state).
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field, fields
from functools import cached_property
from typing import Iterator, Mapping, Sequence

import numpy as np
from PIL import Image, ImageDraw

from ..seeding import image_sha256, rng_for

__all__ = [
    "BACKGROUND_RGB",
    "DEFAULT_DIFFICULTY_MIX",
    "DEFAULT_IMAGE_SIZE",
    "DEFAULT_JITTER_PX",
    "DIFFICULTIES",
    "FEATURES",
    "FEATURE_LABEL",
    "GRID",
    "P3_COMPOSITION",
    "SAMPLING_RANGES",
    "SHAPES",
    "SHAPE_PLURAL",
    "SYMMETRY_PERIOD_DEG",
    "SearchLayout",
    "SearchStimulus",
    "difficulty_of",
    "draw_red_box",
    "folded_angle_difference",
    "format_box_text",
    "generate_p3",
    "make_search_stimulus",
    "plan_p3",
    "search_layout",
]

FEATURES: tuple[str, ...] = ("color", "orientation", "size")
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
#: answer label (seed 001 §4 "Setting" feature list) for each synthetic feature
FEATURE_LABEL: dict[str, str] = {"color": "Color", "orientation": "Orientation", "size": "Size"}
#: seed 001 §3: 2,514 P3 images = 810 color + 864 orientation + 840 size
P3_COMPOSITION: dict[str, int] = {"color": 810, "orientation": 864, "size": 840}
#: project choice (the seed does not give P3's mix; its Fig. A.1 says most color and size
#: items are easy): equal thirds per feature
DEFAULT_DIFFICULTY_MIX: dict[str, float] = {"easy": 1 / 3, "medium": 1 / 3, "hard": 1 / 3}

GRID = 7  # seed 001 §3: "arranged in a 7x7 grid"
DEFAULT_IMAGE_SIZE = 512
DEFAULT_JITTER_PX = 7  # P3: 15 px at 1024 px, scaled to 512 px
BACKGROUND_RGB: tuple[int, int, int] = (128, 128, 128)  # P3 background gray
MIN_GAP_PX = 2  # minimum clearance between neighbouring sprites
MIN_SIZE_PX = 10  # smallest nominal object extent

SHAPES: tuple[str, ...] = ("circle", "ellipse", "square", "rectangle", "cross", "L")
#: rotational symmetry period in degrees; None = invariant under every rotation
SYMMETRY_PERIOD_DEG: dict[str, float | None] = {
    "circle": None,
    "ellipse": 180.0,
    "square": 90.0,
    "rectangle": 180.0,
    "cross": 90.0,
    "L": 360.0,
}
SHAPE_PLURAL: dict[str, str] = {
    "circle": "circles",
    "ellipse": "ellipses",
    "square": "squares",
    "rectangle": "rectangles",
    "cross": "crosses",
    "L": "L-shapes",
}

#: ranges the generator samples from, strictly inside the seed's bins (see module doc):
#: color -> RGB distance; orientation -> folded angle (deg); size -> area ratio intervals
SAMPLING_RANGES: dict[str, dict[str, tuple[tuple[float, float], ...]]] = {
    "color": {"hard": ((12.0, 48.0),), "medium": ((54.0, 96.0),), "easy": ((106.0, 180.0),)},
    "orientation": {"hard": ((6.0, 26.0),), "medium": ((34.0, 56.0),), "easy": ((64.0, 86.0),)},
    "size": {
        "hard": ((0.56, 0.88), (1.14, 1.44)),
        "medium": ((0.32, 0.47), (1.6, 2.8)),
        "easy": ((0.12, 0.27), (3.3, 5.0)),
    },
}
_SIZE_MIN_SEPARATION_FROM_ONE = 0.10  # measured area ratio never within 10 % of 1
_MAX_TRIES = 200


def difficulty_of(feature: str, value: float) -> str | None:
    """Difficulty level of a feature difference, seed 001 §6.1, with this project's edges.

    Parameters
    ----------
    feature: ``"color"`` (value = Euclidean RGB distance, 0-255 units), ``"orientation"``
        (value = folded angular difference in degrees, see
        :func:`folded_angle_difference`) or ``"size"`` (value = target/distractor pixel-area
        ratio).
    value: the difference, a finite float.

    Returns ``"easy"``, ``"medium"`` or ``"hard"``; ``None`` when the value lies in no bin
    (an orientation difference above 90 deg, or a non-positive size ratio).  Edges:
    color hard ``d <= 50`` < medium ``<= 100`` < easy; orientation hard ``[0, 30]``,
    medium ``(30, 60]``, easy ``(60, 90]``; size hard ``[0.5, 1.5]``, medium
    ``[0.3, 0.5)`` or ``(1.5, 3.0]``, easy ``< 0.3`` or ``> 3.0``.

    Raises ValueError for an unknown feature or a non-finite / negative value.
    """
    if feature not in FEATURES:
        raise ValueError(f"unknown feature {feature!r}; expected one of {FEATURES}")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"difference must be finite and >= 0, got {value!r} for {feature!r}")
    if feature == "color":
        return "hard" if v <= 50 else ("medium" if v <= 100 else "easy")
    if feature == "orientation":
        if v <= 30:
            return "hard"
        if v <= 60:
            return "medium"
        return "easy" if v <= 90 else None
    if v == 0:
        return None
    if 0.5 <= v <= 1.5:
        return "hard"
    if 0.3 <= v < 0.5 or 1.5 < v <= 3.0:
        return "medium"
    return "easy"


def folded_angle_difference(angle_a_deg: float, angle_b_deg: float, period_deg: float) -> float:
    """Smallest rotation (degrees) between two orientations of a ``period_deg``-periodic shape.

    ``d = (a - b) mod period``; returns ``min(d, period - d)``, in ``[0, period/2]``.
    Raises ValueError when ``period_deg`` is not positive (a circle has no orientation).
    """
    if not period_deg or period_deg <= 0:
        raise ValueError(f"symmetry period must be > 0 degrees, got {period_deg!r}")
    d = (float(angle_a_deg) - float(angle_b_deg)) % period_deg
    return float(min(d, period_deg - d))


# ----------------------------------------------------------------------------- shapes
def _unit_polygon(shape: str) -> np.ndarray:
    """Vertices (N, 2) float64 of a shape centred at 0 with circumradius 1, y up."""
    if shape in ("circle", "ellipse"):
        t = np.linspace(0.0, 2 * np.pi, 96, endpoint=False)
        b = 1.0 if shape == "circle" else 0.5
        return np.stack([np.cos(t), b * np.sin(t)], axis=1)
    if shape == "square":
        h = 1 / math.sqrt(2)
        return np.array([[-h, -h], [h, -h], [h, h], [-h, h]])
    if shape == "rectangle":
        w = 1 / math.sqrt(1 + 0.45**2)
        h = 0.45 * w
        return np.array([[-w, -h], [w, -h], [w, h], [-w, h]])
    if shape == "cross":
        L = 1 / math.sqrt(1 + 0.3**2)
        a = 0.3 * L
        return np.array(
            [[a, -L], [a, -a], [L, -a], [L, a], [a, a], [a, L],
             [-a, L], [-a, a], [-L, a], [-L, -a], [-a, -a], [-a, -L]]
        )
    if shape == "L":
        s, t = 1.0, 0.4  # side and stroke width of the bracket, rotation about bbox centre
        pts = np.array([[0, 0], [s, 0], [s, t], [t, t], [t, s], [0, s]], dtype=float) - s / 2
        return pts / np.abs(pts).max() / math.sqrt(2)
    raise ValueError(f"unknown shape {shape!r}; expected one of {SHAPES}")


_SUPERSAMPLE = 4


def _render_sprite(shape: str, size_px: float, angle_deg: float) -> np.ndarray:
    """Binary mask (S, S) bool of one object; S odd, the rotation centre at pixel S//2.

    ``size_px`` is the nominal extent = diameter of the circumscribed circle.  The polygon
    is rasterised at 4x resolution and a pixel is set when >= 50 % of its 16 sub-pixels are
    covered, so the rendered area follows the geometric area closely at every angle
    (a plain rasteriser adds about half the perimeter, which would let a rotated target
    differ from its distractors in area too).
    """
    radius = size_px / 2.0
    half = int(math.ceil(radius)) + 1
    side = 2 * half + 1
    k = _SUPERSAMPLE
    th = math.radians(angle_deg)
    pts = _unit_polygon(shape) * radius
    x = pts[:, 0] * math.cos(th) - pts[:, 1] * math.sin(th)
    y = pts[:, 0] * math.sin(th) + pts[:, 1] * math.cos(th)
    # PIL samples pixel (i, j) at its centre (i, j); the centre of output pixel ``half`` is
    # at sub-pixel coordinate k*half + (k-1)/2.  Image y points down.
    c = k * half + (k - 1) / 2.0
    verts = [(c + k * float(a), c - k * float(b)) for a, b in zip(x, y)]
    canvas = Image.new("L", (side * k, side * k), 0)
    ImageDraw.Draw(canvas).polygon(verts, fill=1)
    cover = np.asarray(canvas, dtype=np.uint8).reshape(side, k, side, k).sum(axis=(1, 3))
    return cover * 2 >= k * k


# ----------------------------------------------------------------------------- record
@dataclass(frozen=True, eq=False)
class _SearchFacts:
    """What one search array is, without its pixels (the attributes of :class:`SearchStimulus`
    but ``image``)."""

    stimulus_id: str
    index: int
    seed: int
    image_size: int
    jitter_px: int
    feature: str
    difficulty: str
    difference: float
    shape: str
    symmetry_period_deg: float | None
    n_distractors: int
    target_cell: tuple[int, int]
    target_bbox: tuple[int, int, int, int]
    target_rgb: tuple[int, int, int]
    distractor_rgb: tuple[int, int, int]
    target_angle_deg: float
    distractor_angle_deg: float
    target_area_px: int
    distractor_area_px: int
    target_size_px: float
    distractor_size_px: float

    @property
    def labels(self) -> frozenset[str]:
        """Ground-truth answer set, e.g. ``frozenset({"Color"})`` (seed 001 §3.1)."""
        return frozenset({FEATURE_LABEL[self.feature]})

    @property
    def object_category(self) -> str:
        """Plural noun for the referring prompts' ``{object category}`` (e.g. "circles")."""
        return SHAPE_PLURAL[self.shape]


@dataclass(frozen=True, eq=False)
class SearchLayout(_SearchFacts):
    """One search array before drawing: every attribute of its :class:`SearchStimulus` but
    ``image``, plus what :meth:`draw` stamps: ``sprites`` = (distractor, target) bool masks
    (S, S), ``origins`` = (n_cells, 2) int, the top-left (x, y) pixel of each cell's sprite box,
    cells in row-major order.  A pure function of :func:`make_search_stimulus`'s arguments
    (:func:`search_layout`); about 10 KB, against 768 KB for a 512 px image, so a caller that
    renders later (the VSI task, one per sample) keeps this instead of the image."""

    sprites: tuple[np.ndarray, np.ndarray] = field(repr=False)
    origins: np.ndarray = field(repr=False)

    def draw(self) -> Image.Image:
        """The array's pixels, a new RGB image each call (nothing cached): the gray background,
        then each cell's sprite box stamped as a tile (sprite pixels in the object's colour, the
        rest background).  The boxes are disjoint (checked by :func:`search_layout`), so this is
        byte for byte the image of colouring each sprite's mask pixels in turn (tested)."""
        bg = np.asarray(BACKGROUND_RGB, dtype=np.uint8)
        arr = np.empty((self.image_size, self.image_size, 3), dtype=np.uint8)
        arr[0] = bg  # one row, then copied down (broadcasting a 3-vector over the image is ~100x slower)
        arr[1:] = arr[0]
        target = self.target_cell[0] * GRID + self.target_cell[1]
        tiles = [np.where(m[..., None], np.asarray(rgb, dtype=np.uint8), bg)
                 for m, rgb in zip(self.sprites, (self.distractor_rgb, self.target_rgb))]
        for k, (x0, y0) in enumerate(self.origins.tolist()):
            t = tiles[k == target]
            arr[y0:y0 + t.shape[0], x0:x0 + t.shape[1]] = t
        return Image.fromarray(arr, mode="RGB")

    def stimulus(self) -> "SearchStimulus":
        """The :class:`SearchStimulus` (this layout drawn)."""
        return SearchStimulus(image=self.draw(), **{f.name: getattr(self, f.name) for f in fields(_SearchFacts)})


@dataclass(frozen=True, eq=False)
class SearchStimulus(_SearchFacts):
    """One rendered P3-style search array.

    Attributes
    ----------
    stimulus_id: ``"p3syn-s{seed}-{index:05d}"``, unique per (seed, index).
    index, seed: position in the plan and the generator seed (with ``feature``,
        ``difficulty``, ``image_size`` and ``jitter_px`` they determine the image).
    image: PIL RGB image, ``image_size`` x ``image_size`` px.
    feature: ``"color" | "orientation" | "size"``; difficulty: ``"easy" | "medium" | "hard"``.
    difference: the difficulty measure: RGB distance (color), folded angle in degrees
        (orientation) or measured pixel-area ratio target/distractor (size).
    shape: one of :data:`SHAPES`; symmetry_period_deg: its period (None for circle).
    n_distractors: number of distractors (48 for a full 7 x 7 grid).
    target_cell: (row, col) of the target's grid cell, 0-based from the top-left.
    target_bbox: (x_min, y_min, x_max, y_max), inclusive integer pixel coordinates of the
        target's extreme pixels, origin top-left.
    target_rgb / distractor_rgb: (r, g, b) uint8 values.
    target_angle_deg / distractor_angle_deg: rotation, counter-clockwise as displayed.
    target_area_px / distractor_area_px: rendered pixel areas.
    target_size_px / distractor_size_px: nominal extents (circumscribed diameters).
    sha256: hex digest of :meth:`png_bytes` (a cached property: computed on first use).
    pixel_sha256: ``seeding.image_sha256`` of the image (pixels only, independent of the
        PNG encoder; the project's usual stimulus hash).
    """

    image: Image.Image = field(repr=False)

    @cached_property
    def sha256(self) -> str:
        """Hex sha256 of :meth:`png_bytes` (computed on first use: PNG encoding costs ~15 ms per
        512 px array, which a caller that only needs the pixels, e.g. the VSI task, never pays)."""
        return hashlib.sha256(_png_bytes(self.image)).hexdigest()

    @cached_property
    def pixel_sha256(self) -> str:
        """``seeding.image_sha256`` of the image (computed on first use)."""
        return image_sha256(self.image)

    def png_bytes(self) -> bytes:
        """The image encoded as PNG (compress_level 6), the bytes behind :attr:`sha256`."""
        return _png_bytes(self.image)


def _png_bytes(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


# ----------------------------------------------------------------------------- planning
def _check_feature_difficulty(feature: str, difficulty: str) -> None:
    if feature not in FEATURES:
        raise ValueError(f"unknown feature {feature!r}; expected one of {FEATURES}")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"unknown difficulty {difficulty!r}; expected one of {DIFFICULTIES}")


def _split_counts(total: int, mix: Mapping[str, float]) -> dict[str, int]:
    """Largest-remainder split of ``total`` over difficulties (ties -> easy, medium, hard)."""
    w = np.array([float(mix.get(d, 0.0)) for d in DIFFICULTIES])
    raw = w / w.sum() * total
    base = np.floor(raw).astype(int)
    rest = total - int(base.sum())
    order = sorted(range(3), key=lambda i: (-(raw[i] - base[i]), i))
    for i in order[:rest]:
        base[i] += 1
    return {d: int(base[i]) for i, d in enumerate(DIFFICULTIES)}


def plan_p3(
    counts: Mapping[str, int] | None = None,
    difficulty_mix: Mapping[str, float] | None = None,
) -> list[tuple[str, str]]:
    """The ordered list of (feature, difficulty) pairs that :func:`generate_p3` renders.

    ``counts`` defaults to :data:`P3_COMPOSITION` (seed 001 §3); ``difficulty_mix`` to
    equal thirds.  Each feature's count is split over difficulties by largest remainder;
    within a feature, difficulties alternate (easy, medium, hard, easy, ...) until a level
    runs out; features follow in the order color, orientation, size.

    Raises ValueError for unknown feature or difficulty keys, negative counts, or a mix
    with negative weights or zero total weight.
    """
    counts = dict(P3_COMPOSITION if counts is None else counts)
    mix = dict(DEFAULT_DIFFICULTY_MIX if difficulty_mix is None else difficulty_mix)
    for k, v in counts.items():
        if k not in FEATURES:
            raise ValueError(f"unknown feature {k!r} in counts; expected keys from {FEATURES}")
        if int(v) != v or v < 0:
            raise ValueError(f"count for {k!r} must be a non-negative integer, got {v!r}")
    for k, v in mix.items():
        if k not in DIFFICULTIES:
            raise ValueError(f"unknown difficulty {k!r} in difficulty_mix; expected {DIFFICULTIES}")
        if not math.isfinite(float(v)) or v < 0:
            raise ValueError(f"difficulty_mix weight for {k!r} must be >= 0, got {v!r}")
    if sum(mix.values()) <= 0:
        raise ValueError(f"difficulty_mix has zero total weight: {mix!r}")
    plan: list[tuple[str, str]] = []
    for feat in FEATURES:
        n = int(counts.get(feat, 0))
        left = _split_counts(n, mix)
        while any(left.values()):
            for d in DIFFICULTIES:
                if left[d]:
                    plan.append((feat, d))
                    left[d] -= 1
    return plan


def _allowed_shapes(feature: str, difficulty: str) -> tuple[str, ...]:
    if feature != "orientation":
        return SHAPES
    lo = SAMPLING_RANGES["orientation"][difficulty][0][0]
    # a shape with period P can show folded differences up to P/2 only (3 deg margin)
    return tuple(s for s in SHAPES if SYMMETRY_PERIOD_DEG[s] and SYMMETRY_PERIOD_DEG[s] / 2 > lo + 3)


# ----------------------------------------------------------------------------- geometry
def _layout(image_size: int, jitter_px: int) -> tuple[np.ndarray, int]:
    """Rounded cell centres (GRID, GRID, 2) as (x, y) and the max sprite half-extent."""
    cell = image_size / GRID
    centres = np.round((np.arange(GRID) + 0.5) * cell).astype(int)
    half_max = int(math.floor((cell - 2 * jitter_px - 1 - MIN_GAP_PX) / 2))
    xy = np.stack(np.meshgrid(centres, centres, indexing="xy"), axis=-1)  # [row, col] -> (x, y)
    return xy, half_max


def _sample_interval(rng: np.random.Generator, intervals: Sequence[tuple[float, float]]) -> float:
    lo, hi = intervals[int(rng.integers(len(intervals)))]
    return float(rng.uniform(lo, hi))


def _random_rgb(rng: np.random.Generator, min_bg_dist: float) -> np.ndarray:
    bg = np.array(BACKGROUND_RGB, dtype=float)
    for _ in range(_MAX_TRIES):
        c = rng.integers(0, 256, size=3)
        if np.linalg.norm(c - bg) >= min_bg_dist:
            return c.astype(int)
    raise RuntimeError("could not draw a distractor colour far enough from the background")


def _validate_geometry(image_size: int, jitter_px: int) -> tuple[np.ndarray, int, float]:
    if int(image_size) != image_size or image_size < 224:
        raise ValueError(f"image_size must be an integer >= 224 px, got {image_size!r}")
    if int(jitter_px) != jitter_px or jitter_px < 0:
        raise ValueError(f"jitter_px must be a non-negative integer, got {jitter_px!r}")
    centres, half_max = _layout(int(image_size), int(jitter_px))
    max_size = 2.0 * (half_max - 1)
    if 0.6 * max_size * math.sqrt(min(r[0] for r in SAMPLING_RANGES["size"]["easy"])) < MIN_SIZE_PX:
        raise ValueError(
            f"jitter_px={jitter_px} leaves objects at most {max_size:.0f} px wide in a "
            f"{image_size} px image; too small for the size feature's ranges"
        )
    return centres, half_max, max_size


def make_search_stimulus(seed: int, index: int, feature: str, difficulty: str, image_size: int = DEFAULT_IMAGE_SIZE,
                         jitter_px: int = DEFAULT_JITTER_PX) -> SearchStimulus:
    """Render one search array; a pure function of its arguments:
    ``search_layout(...).stimulus()`` (see :func:`search_layout` for the arguments, the
    design and the errors raised)."""
    return search_layout(seed, index, feature, difficulty, image_size, jitter_px).stimulus()


def search_layout(
    seed: int,
    index: int,
    feature: str,
    difficulty: str,
    image_size: int = DEFAULT_IMAGE_SIZE,
    jitter_px: int = DEFAULT_JITTER_PX,
) -> SearchLayout:
    """One search array up to its drawing (:class:`SearchLayout`; ``.draw()`` gives the image,
    ``.stimulus()`` the :class:`SearchStimulus` that :func:`make_search_stimulus` returns); a pure
    function of its arguments.

    Parameters
    ----------
    seed, index: non-negative ints; the random stream is
        ``rng_for(seed, "salbench.search_array", index)``.
    feature, difficulty: see :data:`FEATURES`, :data:`DIFFICULTIES`.
    image_size: side in pixels (>= 224).  jitter_px: max absolute jitter per axis, >= 0 and
        small enough that the smallest easy size target keeps >= MIN_SIZE_PX (10 px) when
        the larger object spans 60 % of the largest extent (at 512 px: jitter_px <= 9).

    The target differs from the identical distractors in exactly ``feature``; the others
    are shared (same sprite for color; same colour and angle for size; same colour and
    rendered area for orientation, the target's nominal size being rescaled by <= 5 % to
    match the area).  Rejection sampling guarantees that the rendered
    difference (RGB distance, area ratio of the rendered masks) lies in the declared bin.

    Raises ValueError for bad arguments (naming the value) and RuntimeError if no valid
    configuration is found in 200 tries (not observed with the defaults).
    """
    _check_feature_difficulty(feature, difficulty)
    for name, v in (("seed", seed), ("index", index)):
        if int(v) != v or v < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    centres, half_max, max_size = _validate_geometry(image_size, jitter_px)

    rng = rng_for(int(seed), "salbench.search_array", int(index))
    shapes = _allowed_shapes(feature, difficulty)
    shape = shapes[int(rng.integers(len(shapes)))]
    period = SYMMETRY_PERIOD_DEG[shape]
    d_rgb = _random_rgb(rng, min_bg_dist=80.0)
    t_rgb = d_rgb.copy()
    d_angle = float(rng.uniform(0.0, 360.0))
    t_angle = d_angle
    d_size = float(rng.uniform(0.55, 0.95)) * max_size
    t_size = d_size
    ranges = SAMPLING_RANGES[feature][difficulty]

    if feature == "color":
        bg = np.array(BACKGROUND_RGB, dtype=float)
        for _ in range(_MAX_TRIES):
            dist = _sample_interval(rng, ranges)
            u = rng.normal(size=3)
            u /= np.linalg.norm(u)
            cand = np.round(d_rgb + dist * u)
            if cand.min() < 0 or cand.max() > 255:
                continue
            real = float(np.linalg.norm(cand - d_rgb))
            if real > 0 and difficulty_of("color", real) == difficulty and np.linalg.norm(cand - bg) >= 40:
                t_rgb = cand.astype(int)
                break
        else:
            raise RuntimeError(f"no {difficulty} colour target found for seed={seed} index={index}")
    elif feature == "orientation":
        lo, hi = ranges[0]
        hi = min(hi, period / 2 - 3.0)
        delta = float(rng.uniform(lo, hi))
        t_angle = d_angle + (delta if rng.random() < 0.5 else -delta)

    d_mask = _render_sprite(shape, d_size, d_angle)
    t_mask = d_mask
    if feature == "orientation":
        # rasterisation at another angle changes the pixel area by up to ~7 %; rescale the
        # target (by at most 5 %) so its rendered area matches the distractors' (size = area)
        target_area = int(d_mask.sum())
        best = None
        first = _render_sprite(shape, d_size, t_angle)
        guess = math.sqrt(target_area / max(int(first.sum()), 1))
        cands = np.clip(guess * np.linspace(0.985, 1.015, 7), 0.95, 1.05)
        for scale in np.concatenate([[1.0], cands]):
            m = first if scale == 1.0 else _render_sprite(shape, d_size * float(scale), t_angle)
            key = (abs(int(m.sum()) - target_area), abs(float(scale) - 1.0))
            if best is None or key < best[0]:
                best = (key, float(scale), m)
        t_size = d_size * best[1]
        t_mask = best[2]
    elif feature == "size":
        for _ in range(_MAX_TRIES):
            ratio = _sample_interval(rng, ranges)
            k = math.sqrt(ratio)
            # the larger of target and distractor spans 60-100 % of the largest size
            big = float(rng.uniform(0.6, 1.0)) * max_size
            d_size, t_size = (big, big * k) if k < 1 else (big / k, big)
            if min(d_size, t_size) < MIN_SIZE_PX:
                continue
            d_mask = _render_sprite(shape, d_size, d_angle)
            t_mask = _render_sprite(shape, t_size, t_angle)
            real = t_mask.sum() / d_mask.sum()
            if difficulty_of("size", real) == difficulty and abs(real - 1) >= _SIZE_MIN_SEPARATION_FROM_ONE:
                break
        else:
            raise RuntimeError(f"no {difficulty} size target found for seed={seed} index={index}")

    for m in (d_mask, t_mask):
        if m.shape[0] // 2 > half_max:  # pragma: no cover - guarded by max_size
            raise RuntimeError("sprite larger than the cell allows")

    n_cells = GRID * GRID
    target_flat = int(rng.integers(n_cells))
    jitter = rng.integers(-jitter_px, jitter_px + 1, size=(n_cells, 2))
    # top-left pixel of each cell's sprite box: the rounded cell centre + jitter - half the sprite
    halves = np.full(n_cells, d_mask.shape[0] // 2)
    halves[target_flat] = t_mask.shape[0] // 2
    origins = (centres.reshape(n_cells, 2) + jitter - halves[:, None]).astype(np.int64)
    sides = 2 * halves + 1
    ends = origins + sides[:, None]
    grid_o, grid_e = origins.reshape(GRID, GRID, 2), ends.reshape(GRID, GRID, 2)
    # boxes lie in the image and never overlap (the sprite bound above), so drawing order is moot
    if (origins.min() < 0 or ends.max() > image_size or (grid_o[:, 1:, 0] < grid_e[:, :-1, 0]).any()
            or (grid_o[1:, :, 1] < grid_e[:-1, :, 1]).any()):  # pragma: no cover - guarded by max_size
        raise RuntimeError("sprite boxes overlap or leave the image")
    ys, xs = np.nonzero(t_mask)
    tx, ty = (int(v) for v in origins[target_flat])
    bbox = (tx + int(xs.min()), ty + int(ys.min()), tx + int(xs.max()), ty + int(ys.max()))

    if feature == "color":
        difference = float(np.linalg.norm(t_rgb.astype(float) - d_rgb))
    elif feature == "orientation":
        difference = folded_angle_difference(t_angle, d_angle, period)
    else:
        difference = float(t_mask.sum() / d_mask.sum())

    return SearchLayout(
        stimulus_id=f"p3syn-s{int(seed)}-{int(index):05d}",
        index=int(index),
        seed=int(seed),
        image_size=int(image_size),
        jitter_px=int(jitter_px),
        feature=feature,
        difficulty=difficulty,
        difference=difference,
        shape=shape,
        symmetry_period_deg=period,
        n_distractors=n_cells - 1,
        target_cell=divmod(target_flat, GRID),
        target_bbox=bbox,
        target_rgb=tuple(int(v) for v in t_rgb),
        distractor_rgb=tuple(int(v) for v in d_rgb),
        target_angle_deg=float(t_angle % 360.0),
        distractor_angle_deg=float(d_angle % 360.0),
        target_area_px=int(t_mask.sum()),
        distractor_area_px=int(d_mask.sum()),
        target_size_px=float(t_size),
        distractor_size_px=float(d_size),
        sprites=(d_mask, t_mask),
        origins=origins,
    )


def generate_p3(
    seed: int = 0,
    counts: Mapping[str, int] | None = None,
    difficulty_mix: Mapping[str, float] | None = None,
    image_size: int = DEFAULT_IMAGE_SIZE,
    jitter_px: int = DEFAULT_JITTER_PX,
) -> Iterator[SearchStimulus]:
    """Lazily render the synthetic split, one :class:`SearchStimulus` at a time.

    Default composition = P3 (seed 001 §3): 810 color + 864 orientation + 840 size = 2,514
    images, each feature split in equal thirds over easy / medium / hard (project choice,
    see :data:`DEFAULT_DIFFICULTY_MIX`).  The order is :func:`plan_p3`'s; stimulus ``i``
    equals ``make_search_stimulus(seed, i, *plan[i], image_size, jitter_px)``, so any
    subset can be re-rendered alone.  Arguments are validated before the first image.
    """
    if int(seed) != seed or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    plan = plan_p3(counts, difficulty_mix)
    _validate_geometry(image_size, jitter_px)

    def _it() -> Iterator[SearchStimulus]:
        for i, (feat, diff) in enumerate(plan):
            yield make_search_stimulus(seed, i, feat, diff, image_size=image_size, jitter_px=jitter_px)

    return _it()


# ----------------------------------------------------------------------------- referring
def _check_bbox(bbox: Sequence[float], size: tuple[int, int] | None = None) -> tuple[int, int, int, int]:
    if len(bbox) != 4:
        raise ValueError(f"bbox must have 4 values (x_min, y_min, x_max, y_max), got {bbox!r}")
    x0, y0, x1, y1 = (int(round(float(v))) for v in bbox)
    if x1 < x0 or y1 < y0 or min(x0, y0) < 0:
        raise ValueError(f"bbox must satisfy 0 <= x_min <= x_max and 0 <= y_min <= y_max, got {bbox!r}")
    if size is not None and (x1 >= size[0] or y1 >= size[1]):
        raise ValueError(f"bbox {bbox!r} lies outside an image of size {size[0]}x{size[1]}")
    return x0, y0, x1, y1


def draw_red_box(
    image: Image.Image,
    bbox: Sequence[float],
    width_px: int = 3,
    pad_px: int = 2,
    color: tuple[int, int, int] = (255, 0, 0),
) -> Image.Image:
    """Copy of ``image`` (converted to RGB) with a rectangle outline around ``bbox``.

    The "visual referring" input of seed 001 §3.1 (iii): "visually highlights the odd object,
    typically with a red box".  ``bbox`` = (x_min, y_min, x_max, y_max) inclusive pixels;
    the outline's inner edge lies ``pad_px`` outside the box so it never covers the target,
    and it is ``width_px`` pixels thick (clipped at the image border).

    Raises ValueError for a malformed bbox, a bbox outside the image, width_px < 1 or
    pad_px < 0.
    """
    if int(width_px) != width_px or width_px < 1:
        raise ValueError(f"width_px must be an integer >= 1, got {width_px!r}")
    if int(pad_px) != pad_px or pad_px < 0:
        raise ValueError(f"pad_px must be an integer >= 0, got {pad_px!r}")
    out = image.convert("RGB").copy()
    x0, y0, x1, y1 = _check_bbox(bbox, out.size)
    w, h = out.size
    draw = ImageDraw.Draw(out)
    for k in range(int(width_px)):
        o = int(pad_px) + 1 + k
        box = (max(x0 - o, 0), max(y0 - o, 0), min(x1 + o, w - 1), min(y1 + o, h - 1))
        draw.rectangle(box, outline=color)
    return out


def format_box_text(
    bbox: Sequence[float],
    image_size: tuple[int, int] | None = None,
    units: str = "pixels",
) -> str:
    """The target box as text for the "referring" prompt (seed 001 §4 "Setting" (ii)).

    ``units="pixels"`` -> ``"(x_min, y_min, x_max, y_max)"`` in integer pixels (the seed's
    form); ``"unit"`` -> coordinates divided by width/height, 3 decimals; ``"permille"`` ->
    integers in 0-1000 (the convention of Qwen2-VL-style grounding).  The last two need
    ``image_size`` = (width, height).

    Raises ValueError for a malformed bbox, an unknown ``units`` value, or a missing
    ``image_size``.
    """
    x0, y0, x1, y1 = _check_bbox(bbox, image_size)
    if units == "pixels":
        return f"({x0}, {y0}, {x1}, {y1})"
    if units not in ("unit", "permille"):
        raise ValueError(f"units must be 'pixels', 'unit' or 'permille', got {units!r}")
    if image_size is None:
        raise ValueError(f"units={units!r} needs image_size=(width, height)")
    w, h = image_size
    vals = (x0 / w, y0 / h, x1 / w, y1 / h)
    if units == "unit":
        return "(" + ", ".join(f"{v:.3f}" for v in vals) + ")"
    return "(" + ", ".join(str(int(round(v * 1000))) for v in vals) + ")"
