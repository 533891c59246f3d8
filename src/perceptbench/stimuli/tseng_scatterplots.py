"""Tseng et al. (CHI 2023) colour-coded multiclass scatterplots and their 3,822 human trials.

Source: ``tseng2023-scatterplots`` (chintseng/Categorical-Perception-In-Scatterplots@c0d6818).
The release holds, under ``public/``:

* ``dataset/<BATCH>/<i>.csv`` (``x,y,ca``), i = 0..44, for 10 batches named by 10-character
  codes (``asset/task_id_code.json``), and ``dataset/<BATCH>/info.csv``
  (``index,category_num,point_num,delta,ans``): ``ans`` is the 0-based category with the
  highest mean y, ``delta`` the gap between the highest and the second-highest category
  mean y (both re-derived from the CSVs by :func:`load_plots`, which refuses a mismatch);
* ``color_palettes.json``: 10 palettes ``{code: {name, value: [10 hex colours]}}``;
* ``dataset/user response.csv`` (``,id,color_palette,delta,category_number,time_spent,
  number_points,correct_answer``): one row per trial; ``id`` = ``<participant>_Q_<i>``;
  ``correct_answer`` is 1/0 correctness.  The chosen category itself is not released.

Trial -> stimulus mapping (documented in docs/metrics.md, tested on hand-checked rows)
--------------------------------------------------------------------------------------
1. Each participant saw one batch in one palette (``color_palette``).  The batch is the one
   whose ``info.csv`` holds the participant's ``delta`` values: every participant's
   trials fall in exactly one batch (a participant whose deltas point to two batches, or
   to none, is an error naming the participant).
2. ``Q_<i>`` is row ``index = i`` of that batch's ``info.csv`` and the plot ``<i>.csv``;
   the trial's ``delta``, ``category_number`` and ``number_points`` must equal that row's
   ``delta`` (to 1e-9 relative: the release prints floats with different last digits),
   ``category_num`` and ``point_num``, else a one-line error names the trial.
3. Three plots appear in all 10 batches (identical deltas); they are the three indices
   every participant lacks (42 of 45 trials per participant are released; we read them as
   the study's attention checks, which the release drops).  They have no human trial.

Rendering (:func:`render_plot`) follows the study page ``public/task.js`` of the release
(read at commit 1a46f90; the final commit's page is not in our index): an SVG of
460 x 400 px, margins top 10, right 30, bottom 30, left 60; linear x and y scales with
domain [-1, 11] onto the 370 x 360 px plot area; d3 left and bottom axes with tick marks
and no tick labels (d3 ``ticks(10)`` on [-1, 11] gives 13 ticks, step 1; tick size 6);
circles of radius 5 px filled with ``palette[ca]`` in CSV row order; the answer row below
the plot shows one 23 px colour swatch per category in category order (radio buttons).
Not recovered: the browser's exact anti-aliasing (approximated by 4x supersampling: the
plot is drawn at 4x and each 4 x 4 block averaged, i.e. the area each shape covers of a pixel
at 1/16-pixel resolution, :data:`RENDERER_VERSION` 2),
the page's CSS around the plot (a grey #eee card, Bootstrap layout), the final page's code
(palette assignment read as ``palette[ca]`` as in the pilot page), and the trial time
limit of the final study.  The numbers under the swatches are perceptbench's addition: a
text answer needs a name for each swatch.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..sources import get_source, resolve
from .render import hex_to_rgb

SOURCE_ID = "tseng2023-scatterplots"
ROOT = "tseng2023-categorical-scatterplots/public/"

SVG_W, SVG_H = 460, 400
MARGIN = {"top": 10, "right": 30, "bottom": 30, "left": 60}
PLOT_W = SVG_W - MARGIN["left"] - MARGIN["right"]  # 370
PLOT_H = SVG_H - MARGIN["top"] - MARGIN["bottom"]  # 360
DOMAIN = (-1.0, 11.0)
POINT_RADIUS_PX = 5
TICK_SIZE_PX = 6
TICKS = tuple(range(-1, 12))
SWATCH_PX = 23
ANSWER_ROW_PX = 56
SUPERSAMPLE = 4
"""Study geometry from the release's ``public/task.js`` (d3 v7); see the module docstring."""

RENDERER_VERSION = 2
"""The version of :func:`render_plot`'s pixels; the task records it (setting ``renderer``) so
that a run is never resumed or pooled with images of another version.

* 1 (perceptbench <= 0.1.0 before issue 25): drawn at 4x, downsampled with a Lanczos filter
  (``Image.resize(LANCZOS)``, 81 ms of the 88 ms an image took);
* 2: drawn at 4x, downsampled by averaging each 4 x 4 block (``Image.reduce(4)``, a box filter:
  each pixel is the area each shape covers of it, how a browser's coverage anti-aliasing
  works; ~13 ms an image in all).  Same geometry and colours; pixels differ from version 1
  only at shape edges, where the Lanczos filter rang (mean |difference| 0.3 of 255 over
  all pixels, at most 37), docs/performance.md."""
RENDERER_VERSIONS = (1, 2)


@dataclass(frozen=True)
class Plot:
    """One released scatterplot: ``xy`` float64 (n, 2) in data units, ``ca`` int (n,)
    0-based categories, ``answer`` 0-based category with the highest mean y."""

    batch: str
    index: int
    category_num: int
    point_num: int
    delta: float
    answer: int
    xy: np.ndarray
    ca: np.ndarray
    sha256: str

    @property
    def plot_id(self) -> str:
        return f"{self.batch}_{self.index:02d}"


@dataclass(frozen=True)
class HumanTrial:
    """One row of ``user response.csv`` mapped to its plot."""

    participant: str
    batch: str
    index: int
    palette: str
    correct: bool
    time_spent_s: float
    row: int
    raw: str


def _sf(rel: str):
    src = get_source(SOURCE_ID)
    for f in src.files:
        if f.path == ROOT + rel:
            return f
    raise KeyError(f"{ROOT + rel} is not a registered file of {SOURCE_ID}")


def source_sha256(rel: str) -> str:
    """Pinned sha256 of a release file (``rel`` relative to ``public/``)."""
    return _sf(rel).sha256


def _read_csv(rel: str) -> tuple[list[dict], Path, str]:
    sf = _sf(rel)
    p = resolve(sf)
    with open(p, newline="") as f:
        return list(csv.DictReader(f)), p, sf.sha256


@lru_cache(maxsize=1)
def batches() -> tuple[str, ...]:
    """The 10 batch codes in the release's order (``asset/task_id_code.json``)."""
    p = resolve(_sf("asset/task_id_code.json"))
    codes = json.loads(p.read_text())
    if not (isinstance(codes, list) and len(codes) == 10):
        raise ValueError(f"{p}: expected a list of 10 batch codes")
    return tuple(codes)


@lru_cache(maxsize=1)
def palettes() -> dict[str, tuple[str, ...]]:
    """Palette name -> 10 hex colours (``color_palettes.json``)."""
    p = resolve(_sf("color_palettes.json"))
    out = {}
    for code, v in json.loads(p.read_text()).items():
        try:
            name, vals = v["name"], tuple(v["value"])
        except (KeyError, TypeError):
            raise ValueError(f"{p}: palette {code!r} lacks 'name'/'value'") from None
        if len(vals) != 10:
            raise ValueError(f"{p}: palette {name!r} has {len(vals)} colours, expected 10")
        out[name] = vals
    return out


@lru_cache(maxsize=1)
def load_plots() -> dict[tuple[str, int], Plot]:
    """All 450 plots keyed by (batch, index); ``info.csv`` checked against the CSVs.

    Raises ValueError naming the file when ``ans``/``category_num``/``point_num``/``delta``
    disagree with the points."""
    out = {}
    for b in batches():
        rows, ipath, _ = _read_csv(f"dataset/{b}/info.csv")
        for r in rows:
            i = int(r["index"])
            sf = _sf(f"dataset/{b}/{i}.csv")
            p = resolve(sf)
            try:
                d = np.loadtxt(p, delimiter=",", skiprows=1, ndmin=2)
            except ValueError as e:
                raise ValueError(f"{p}: cannot parse x,y,ca ({e})") from None
            ca = d[:, 2].astype(int)
            k = int(r["category_num"])
            means = np.array([d[ca == c, 1].mean() for c in range(k)])
            srt = np.sort(means)
            counts = Counter(ca.tolist())
            if (sorted(counts) != list(range(k)) or set(counts.values()) != {int(r["point_num"])}
                    or int(np.argmax(means)) != int(r["ans"])
                    or not math.isclose(srt[-1] - srt[-2], float(r["delta"]), rel_tol=1e-9)):
                raise ValueError(f"{ipath}: row index={i} disagrees with {p} (categories, points, ans or delta)")
            out[(b, i)] = Plot(b, i, k, int(r["point_num"]), float(r["delta"]), int(r["ans"]),
                               d[:, :2].copy(), ca, sf.sha256)
    return out


def shared_plots() -> set[tuple[str, int]]:
    """(batch, index) of plots whose delta occurs in every batch (the 3 x 10 attention checks)."""
    by_delta: dict[float, set] = defaultdict(set)
    for key, p in load_plots().items():
        by_delta[round(p.delta, 9)].add(key)
    return {k for keys in by_delta.values() if len({b for b, _ in keys}) > 1 for k in keys}


@lru_cache(maxsize=1)
def human_trials() -> tuple[HumanTrial, ...]:
    """The 3,822 released trials (``dataset/user response.csv``), each mapped to its plot by the
    rule in the module docstring (:func:`map_human_trials`); read once per process.

    Raises ValueError with the CSV row for an unmappable trial."""
    rows, path, _ = _read_csv("dataset/user response.csv")
    return map_human_trials(rows, path, load_plots(), palettes())


def map_human_trials(rows: list[dict], path, plots: dict[tuple[str, int], Plot],
                     pal: dict[str, tuple[str, ...]]) -> tuple[HumanTrial, ...]:
    """Map the rows of ``user response.csv`` (read from ``path``, named in errors) to their plots
    (:func:`load_plots`) and palettes (:func:`palettes`) by the rule in the module docstring.

    Raises ValueError naming ``path`` and the row for an unmappable trial."""
    by_delta: dict[float, list[tuple[str, int]]] = defaultdict(list)
    for key, p in plots.items():
        by_delta[round(p.delta, 9)].append(key)
    by_part: dict[str, list[tuple[int, dict]]] = defaultdict(list)
    for n, r in enumerate(rows):
        pid, sep, q = r["id"].rpartition("_Q_")
        if not sep or not q.isdigit():
            raise ValueError(f"{path}: row {n}: id {r['id']!r} is not <participant>_Q_<i>")
        by_part[pid].append((n, r))
    out = []
    for pid, rs in sorted(by_part.items()):
        cands = Counter()
        for _, r in rs:
            for b, _i in by_delta.get(round(float(r["delta"]), 9), []):
                cands[b] += 1
        full = [b for b, c in cands.items() if c == len(rs)]
        if len(full) != 1:
            raise ValueError(f"{path}: participant {pid}: trials match batches {sorted(full) or 'none'}; "
                             "expected exactly one")
        b = full[0]
        pals = {r["color_palette"] for _, r in rs}
        if len(pals) != 1 or next(iter(pals)) not in pal:
            raise ValueError(f"{path}: participant {pid}: palette(s) {sorted(pals)} not one known palette")
        for n, r in rs:
            i = int(r["id"].rpartition("_Q_")[2])
            p = plots.get((b, i))
            if (p is None or not math.isclose(p.delta, float(r["delta"]), rel_tol=1e-9)
                    or p.category_num != int(r["category_number"]) or p.point_num != int(r["number_points"])):
                raise ValueError(f"{path}: row {n} ({r['id']}): does not match {b}/{i}.csv in delta, "
                                 "category_number or number_points")
            if r["correct_answer"] not in ("0", "1"):
                raise ValueError(f"{path}: row {n}: correct_answer {r['correct_answer']!r} not 0/1")
            out.append(HumanTrial(pid, b, i, r["color_palette"], r["correct_answer"] == "1",
                                  float(r["time_spent"]), n, json.dumps(r, separators=(",", ":"))))
    return tuple(out)


# --------------------------------------------------------------------------- rendering


def _px(v: float, extent: int, flip: bool) -> float:
    t = (v - DOMAIN[0]) / (DOMAIN[1] - DOMAIN[0]) * extent
    return extent - t if flip else t


def render_plot(plot: Plot, colors: tuple[str, ...], answer_row: bool = True,
                version: int = RENDERER_VERSION) -> Image.Image:
    """The study's scatterplot as an RGB image, 460 x 400 px (x 456 px with the answer row).

    ``colors``: the palette's 10 hex colours; category c is drawn in ``colors[c]``.
    ``answer_row``: add the row of category swatches numbered 1..k under the plot (the
    human-facing stimulus); without it the bare plot.  ``version``: the renderer version
    (:data:`RENDERER_VERSION`): anti-aliasing by drawing at 4x and downsampling with a box
    filter (2) or Lanczos (1, the earlier pixels).  Deterministic.  Raises ValueError for an
    unknown version."""
    if version not in RENDERER_VERSIONS:
        raise ValueError(f"render_plot: renderer version {version!r} is not one of {RENDERER_VERSIONS}")
    s = SUPERSAMPLE
    h = SVG_H + (ANSWER_ROW_PX if answer_row else 0)
    img = Image.new("RGB", (SVG_W * s, h * s), "white")
    d = ImageDraw.Draw(img)
    ox, oy = MARGIN["left"], MARGIN["top"]
    black = (0, 0, 0)
    lw = s  # 1 px lines

    def P(x, y):
        return ((ox + x) * s, (oy + y) * s)

    # axes: domain paths with outer ticks, then inner ticks (no labels)
    d.line([P(0, PLOT_H), P(PLOT_W, PLOT_H)], fill=black, width=lw)
    d.line([P(0, 0), P(0, PLOT_H)], fill=black, width=lw)
    for t in TICKS:
        x = _px(t, PLOT_W, False)
        d.line([P(x, PLOT_H), P(x, PLOT_H + TICK_SIZE_PX)], fill=black, width=lw)
        y = _px(t, PLOT_H, True)
        d.line([P(-TICK_SIZE_PX, y), P(0, y)], fill=black, width=lw)
    r = POINT_RADIUS_PX * s
    for (x, y), c in zip(plot.xy, plot.ca):
        cx, cy = P(_px(x, PLOT_W, False), _px(y, PLOT_H, True))
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=hex_to_rgb(colors[int(c)]))
    if answer_row:
        k = plot.category_num
        slot = SVG_W / k
        font = ImageFont.load_default(size=14 * s)
        for c in range(k):
            cx = (slot * (c + 0.5)) * s
            cy = (SVG_H + 18) * s
            rr = SWATCH_PX / 2 * s
            d.ellipse([cx - rr, cy - rr, cx + rr, cy + rr], fill=hex_to_rgb(colors[c]))
            d.text((cx, (SVG_H + 44) * s), str(c + 1), fill=black, font=font, anchor="mm")
    if version == 1:
        return img.resize((SVG_W, h), Image.LANCZOS)
    return img.reduce(s)
