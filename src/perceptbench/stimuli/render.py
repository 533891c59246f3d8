"""Renderers for chart-track stimuli: colour chips, numbered montages and scatterplots.

All sizes are in pixels; colours are sRGB hex strings.  Rendering is deterministic given
the arguments (Pillow, no anti-aliasing randomness)."""

from __future__ import annotations

from functools import lru_cache
from typing import Sequence

import numpy as np
from PIL import Image, ImageDraw, ImageFont

CHIP_CANVAS_PX = 224
"""Side of a component chip image (matches the default encoders' input size)."""
CHIP_SQUARE_PX = 112
"""Side of the filled square mark centred on a chip (Demiralp et al.'s ``color10`` draws a
filled rect chip; the scale here is perceptbench's)."""
MONTAGE_LABEL_PX = 64
"""Height of the band under each chip that carries its number."""


def hex_to_rgb(h: str) -> tuple[int, int, int]:
    h = h.lstrip("#")
    if len(h) != 6:
        raise ValueError(f"not a #rrggbb colour: {h!r}")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))  # type: ignore[return-value]


def color_chip(hex_color: str, canvas: int = CHIP_CANVAS_PX, square: int = CHIP_SQUARE_PX) -> Image.Image:
    """A white ``canvas``x``canvas`` RGB image with a centred filled ``square`` mark."""
    img = Image.new("RGB", (canvas, canvas), "white")
    o = (canvas - square) // 2
    ImageDraw.Draw(img).rectangle([o, o, o + square - 1, o + square - 1], fill=hex_to_rgb(hex_color))
    return img


@lru_cache(maxsize=4)
def _font(size: int) -> ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def numbered_montage(components: Sequence[Image.Image], label_px: int = MONTAGE_LABEL_PX) -> Image.Image:
    """Components side by side, each numbered 1..n in black below it (the human-facing
    odd-one-out stimulus of seed 000 §2.1 "Construction").  Components must share a size."""
    w, h = components[0].size
    if any(c.size != (w, h) for c in components):
        raise ValueError("montage components must have equal sizes")
    out = Image.new("RGB", (w * len(components), h + label_px), "white")
    draw = ImageDraw.Draw(out)
    font = _font(int(label_px * 0.7))
    for i, comp in enumerate(components):
        out.paste(comp, (i * w, 0))
        draw.text((i * w + w // 2, h + label_px // 2), str(i + 1), fill="black", font=font, anchor="mm")
    return out


def scatterplot(points_xy: np.ndarray, colors: Sequence[str], series: np.ndarray,
                size_px: int = 384, radius_px: int = 6) -> Image.Image:
    """A bare scatterplot (no axes or legend, seed 000 §2.1 "Scope"): white ``size_px``
    square, filled circles of ``radius_px`` drawn in the given order.

    ``points_xy``: float (n, 2) in pixel coordinates; ``series``: int (n,) index into
    ``colors``."""
    img = Image.new("RGB", (size_px, size_px), "white")
    d = ImageDraw.Draw(img)
    for (x, y), s in zip(points_xy, series):
        d.ellipse([x - radius_px, y - radius_px, x + radius_px, y + radius_px], fill=hex_to_rgb(colors[s]))
    return img
