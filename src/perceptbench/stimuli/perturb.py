"""Image perturbations for the Visual Sensitivity Index (seed 002 §2, appendix A).

``region_blur`` blurs only the question-relevant region (its mask dilated by 4 px);
``whole_blur`` blurs the whole image.  Both use Pillow's ``ImageFilter.GaussianBlur`` with
the radius equal to the Gaussian standard deviation in pixels (Pillow's radius *is* the
sigma of its extended box-blur approximation); the mask is dilated with
``scipy.ndimage.binary_dilation`` (a disk of radius ``dilate_px``).  Outside the dilated
mask every pixel is byte-identical to the input; sigma 0 returns an identical copy.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

__all__ = ["DEFAULT_SIGMA_PX", "ROBUSTNESS_SIGMAS_PX", "DILATE_PX", "dilate_mask", "box_mask",
           "region_blur", "whole_blur"]

DEFAULT_SIGMA_PX = 20.0
"""Default Gaussian sigma in pixels (seed 002 §2)."""
ROBUSTNESS_SIGMAS_PX = (10.0, 20.0, 40.0)
"""Sigmas of the robustness check (seed 002 §4, appendix C.2)."""
DILATE_PX = 4
"""Mask dilation in pixels (seed 002 appendix A)."""
BLUR_MARGIN_SIGMAS = 4.0
"""Region blur is computed on a crop this many sigmas (+2 px) beyond the dilated mask."""


def _rgb(image: Image.Image) -> Image.Image:
    if not isinstance(image, Image.Image):
        raise TypeError(f"expected a PIL image, got {type(image).__name__}")
    return image if image.mode == "RGB" else image.convert("RGB")


def _check_sigma(sigma_px: float) -> float:
    s = float(sigma_px)
    if not np.isfinite(s) or s < 0:
        raise ValueError(f"sigma_px must be a finite number >= 0, got {sigma_px!r}")
    return s


def box_mask(size: tuple[int, int], box: tuple[int, int, int, int]) -> np.ndarray:
    """Boolean mask of shape (H, W) that is True inside ``box`` = (x0, y0, x1, y1), pixels,
    exclusive ends (clipped to the image).  ``size`` = (W, H).  Raises ValueError for an
    empty or inverted box."""
    w, h = size
    x0, y0, x1, y1 = (int(v) for v in box)
    if x1 <= x0 or y1 <= y0:
        raise ValueError(f"box {box!r} is empty (need x0 < x1 and y0 < y1, exclusive ends)")
    m = np.zeros((h, w), dtype=bool)
    m[max(0, y0):min(h, y1), max(0, x0):min(w, x1)] = True
    return m


def dilate_mask(mask: np.ndarray, dilate_px: int = DILATE_PX) -> np.ndarray:
    """``mask`` (bool, shape (H, W)) dilated by a disk of radius ``dilate_px`` pixels
    (Euclidean), via ``scipy.ndimage.binary_dilation``.  ``dilate_px`` 0 returns a copy.
    Raises ValueError for a non-2-D mask or a negative radius."""
    from scipy.ndimage import binary_dilation

    m = np.asarray(mask, dtype=bool)
    if m.ndim != 2:
        raise ValueError(f"mask must be 2-D (H, W), got shape {m.shape}")
    r = int(dilate_px)
    if r < 0:
        raise ValueError(f"dilate_px must be >= 0, got {dilate_px!r}")
    if r == 0 or not m.any():
        return m.copy()
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
    (ya, yb), (xa, xb) = _extent(m)  # dilate only the mask's bounding box grown by r (same result, less work)
    y0, y1 = max(0, ya - r), min(m.shape[0], yb + r)
    x0, x1 = max(0, xa - r), min(m.shape[1], xb + r)
    out = np.zeros_like(m)
    out[y0:y1, x0:x1] = binary_dilation(m[y0:y1, x0:x1], structure=(xx * xx + yy * yy) <= r * r)
    return out


def _extent(mask: np.ndarray) -> tuple[tuple[int, int], tuple[int, int]]:
    """((first row, last row + 1), (first column, last column + 1)) of a non-empty 2-D bool mask."""
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    return (int(rows[0]), int(rows[-1]) + 1), (int(cols[0]), int(cols[-1]) + 1)


def whole_blur(image: Image.Image, sigma_px: float) -> Image.Image:
    """The whole image blurred by a Gaussian of standard deviation ``sigma_px`` pixels
    (Pillow ``GaussianBlur(radius=sigma_px)``), RGB.  sigma 0 -> an identical copy.
    Raises ValueError for a negative or non-finite sigma, TypeError for a non-image."""
    im = _rgb(image)
    s = _check_sigma(sigma_px)
    if s == 0:
        return im.copy()
    return im.filter(ImageFilter.GaussianBlur(radius=s))


def region_blur(image: Image.Image, mask: np.ndarray, sigma_px: float, dilate_px: int = DILATE_PX,
                blurred: Image.Image | None = None) -> Image.Image:
    """``image`` (RGB) with only ``mask`` dilated by ``dilate_px`` replaced by its Gaussian blur.

    ``mask``: bool array of shape (H, W) for an image of size (W, H).  The blur mixes in the
    region's surroundings (as a blurred photograph would): it is the whole image's Gaussian blur,
    computed on a crop reaching :data:`BLUR_MARGIN_SIGMAS` sigmas beyond the dilated mask, and
    pasted through the dilated mask; every pixel outside the dilated
    mask is byte-identical to the input.  ``blurred``: ``whole_blur(image, sigma_px)`` when the
    caller has it already (the VSI task renders both conditions of a sample); its pixels are
    pasted instead of blurring the crop, the same bytes (the crop's blur equals the whole
    image's inside the mask: tested).  Raises ValueError for a mask of the wrong shape, an
    empty mask, a negative sigma or dilation, or a ``blurred`` image of another size.
    """
    im = _rgb(image)
    s = _check_sigma(sigma_px)
    m = np.asarray(mask, dtype=bool)
    if m.shape != (im.height, im.width):
        raise ValueError(f"mask shape {m.shape} does not match image size (H, W) = {(im.height, im.width)}")
    if not m.any():
        raise ValueError("region mask is empty")
    if s == 0:
        return im.copy()
    d = dilate_mask(m, dilate_px)
    (ya, yb), (xa, xb) = _extent(d)
    if blurred is not None:
        if blurred.size != im.size:
            raise ValueError(f"blurred image size {blurred.size} does not match the image's {im.size}")
        x0, y0, x1, y1 = xa, ya, xb, yb
        source = _rgb(blurred).crop((x0, y0, x1, y1))
    else:
        # blur a crop reaching BLUR_MARGIN_SIGMAS * sigma (+2 px) beyond the dilated mask: Pillow's
        # extended-box approximation of the Gaussian has no weight beyond ~3 sigma, so inside the mask
        # the crop's blur equals the whole image's (tested), at a fraction of the cost
        pad = int(np.ceil(BLUR_MARGIN_SIGMAS * s)) + 2
        x0, y0 = max(0, xa - pad), max(0, ya - pad)
        x1, y1 = min(im.width, xb + pad), min(im.height, yb + pad)
        source = im.crop((x0, y0, x1, y1)).filter(ImageFilter.GaussianBlur(radius=s))
    out = im.copy()
    out.info = {}
    # a mode "1" mask copies the source's pixel wherever it is set, nothing blended
    out.paste(source, (x0, y0), Image.fromarray(d[y0:y1, x0:x1]))
    return out
