"""The one loader for every image that comes from outside the project.

Natural SalBench/O3 stimuli, user-given image folders, POPE / HallusionBench / MMVP /
MMStar images and the mirrored silhouettes all pass through :func:`load_image`, so a model
sees an image the way a person sees it in an image viewer:

1. decoded completely (a corrupt or truncated file is an :class:`ImageLoadError` naming the
   file, raised before anything is written), after its size is read from the header: an
   image of more than :data:`MAX_IMAGE_PIXELS` pixels (a "decompression bomb": a 12 KB PNG
   can declare 100 megapixels) is an :class:`ImageLoadError` naming the file, never decoded;
2. EXIF orientation applied (``PIL.ImageOps.exif_transpose``, EXIF tag 0x0112), *before*
   any box is drawn or region computed: annotations of released benchmarks are made on the
   displayed (rotated) image;
3. transparency (an alpha band, or a ``tRNS`` transparent colour / palette entry)
   composited onto ``background`` (white unless the dataset declares another), never
   dropped, which would show transparent pixels as their stored colour, usually black;
4. every other colour mode converted to 8-bit RGB: palette ``P``, bilevel ``1``, greyscale
   ``L``, 16-bit greyscale ``I;16*`` and 32-bit ``I`` / ``F`` (rescaled, see
   :func:`_to_8bit`), ``CMYK``, ``YCbCr``, ``LAB``, ``HSV``.

The PNG/JPEG decoders are Pillow's.  Pillow's global ``ImageFile.LOAD_TRUNCATED_IMAGES``
must stay False (its default) for truncated files to be detected; :func:`load_image`
checks it and refuses to run otherwise.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import BinaryIO, Union

import numpy as np
from PIL import Image, ImageFile, ImageOps

__all__ = ["ImageLoadError", "ImageInput", "load_image", "load_mask", "WHITE", "MAX_IMAGE_PIXELS",
           "max_image_pixels"]

#: default background for transparent pixels: white, as image viewers and the web show them
WHITE: tuple[int, int, int] = (255, 255, 255)

MAX_IMAGE_PIXELS: int = 50_000_000
"""Most pixels (width x height) an image from outside the project may have: 50 megapixels,
above the largest image of every benchmark perceptbench reads (COCO, GQA, HallusionBench,
MMVP, MMStar, SalBench: at most a few megapixels) and of a 48-megapixel phone photo, and
below Pillow's own warning threshold (``PIL.Image.MAX_IMAGE_PIXELS``, 89.5 megapixels), above
which Pillow only warns.  The environment variable ``PERCEPTBENCH_MAX_IMAGE_PIXELS`` (a
positive integer) replaces it (:func:`max_image_pixels`)."""


def max_image_pixels() -> int:
    """The pixel limit in force: ``PERCEPTBENCH_MAX_IMAGE_PIXELS`` when set, else
    :data:`MAX_IMAGE_PIXELS`.  Raises ValueError naming the variable for a value that is not a
    positive integer."""
    raw = os.environ.get("PERCEPTBENCH_MAX_IMAGE_PIXELS", "").strip()
    if not raw:
        return MAX_IMAGE_PIXELS
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValueError(f"PERCEPTBENCH_MAX_IMAGE_PIXELS must be a positive integer (pixels), got {raw!r}")
    return int(raw)


def _check_pixels(size: tuple[int, int], name: str) -> None:
    w, h = size
    limit = max_image_pixels()
    if w * h > limit:
        raise ImageLoadError(
            f"image {name} is {w}x{h} = {w * h / 1e6:.1f} megapixels, above the limit of {limit / 1e6:g} "
            "megapixels for images from outside the project (not decoded; set PERCEPTBENCH_MAX_IMAGE_PIXELS "
            "to raise it if the image is genuine)")


ImageInput = Union[str, os.PathLike, bytes, bytearray, memoryview, BinaryIO, Image.Image]

_ALPHA_MODES = {"RGBA", "LA", "PA", "La", "RGBa"}
_SIXTEEN_BIT = {"I;16", "I;16L", "I;16B", "I;16N"}


class ImageLoadError(ValueError):
    """An image could not be decoded; the message names the file (or the given ``source``)."""


def _name(obj: ImageInput, source: str | None) -> str:
    if source:
        return str(source)
    if isinstance(obj, (str, os.PathLike)):
        return str(obj)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return f"<{len(obj)} bytes in memory>"
    if isinstance(obj, Image.Image):
        return getattr(obj, "filename", "") or "<in-memory image>"
    return getattr(obj, "name", None) or "<file object>"


def _to_8bit(im: Image.Image) -> Image.Image:
    """16/32-bit greyscale -> ``L``.  ``I;16*``: value * 255 / 65535 (the full 16-bit range);
    ``I`` and ``F``: values <= 255 kept (8-bit data widened by a decoder), otherwise clipped to
    [0, 65535] and scaled like ``I;16`` (16-bit PNGs that Pillow opens as ``I``)."""
    a = np.asarray(im, dtype=np.float64)
    if im.mode in _SIXTEEN_BIT or (a.size and a.max() > 255):
        a = np.clip(a, 0, 65535) * (255.0 / 65535.0)
    return Image.fromarray(np.clip(np.rint(a), 0, 255).astype(np.uint8), mode="L")


def _has_transparency(im: Image.Image) -> bool:
    return im.mode in _ALPHA_MODES or "transparency" in im.info


def _composite(im: Image.Image, background: tuple[int, int, int]) -> Image.Image:
    rgba = im.convert("RGBA")
    base = Image.new("RGBA", rgba.size, tuple(background) + (255,))
    return Image.alpha_composite(base, rgba).convert("RGB")


def _check_background(background) -> tuple[int, int, int]:
    try:
        bg = tuple(int(v) for v in background)
    except (TypeError, ValueError):
        bg = ()
    if len(bg) != 3 or not all(0 <= v <= 255 for v in bg):
        raise ValueError(f"background must be an (R, G, B) triple of integers 0-255, got {background!r}")
    return bg  # type: ignore[return-value]


def _open(obj: ImageInput, name: str) -> Image.Image:
    """Decode fully and detach from the file; every decoder failure -> ImageLoadError."""
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise RuntimeError(
            "PIL.ImageFile.LOAD_TRUNCATED_IMAGES is True in this process: truncated images would "
            "load silently with grey bands; set it back to False")
    if isinstance(obj, Image.Image):
        _check_pixels(obj.size, name)
        try:
            obj.load()
        except Exception as e:  # noqa: BLE001 - PIL raises OSError, SyntaxError, ValueError ...
            raise ImageLoadError(f"cannot decode image {name}: {e}") from e
        return obj
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        if not path.is_file():
            raise ImageLoadError(f"image file not found: {name}")
        fp: object = path
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        fp = io.BytesIO(bytes(obj))
    else:
        fp = obj
    import warnings

    try:
        with warnings.catch_warnings():  # the size is checked here, against our own limit
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            im = Image.open(fp)  # type: ignore[arg-type]
    except Exception as e:  # noqa: BLE001 - UnidentifiedImageError, DecompressionBombError, OSError
        raise ImageLoadError(f"cannot decode image {name}: {type(e).__name__}: {e}") from e
    with im:
        _check_pixels(im.size, name)
        try:
            im.load()
            out = im.copy()
            out.info = dict(im.info)
            exif = im.getexif()
            if exif:
                out.info["exif"] = exif.tobytes()
            return out
        except Exception as e:  # noqa: BLE001 - OSError (truncated), SyntaxError, ValueError
            raise ImageLoadError(f"cannot decode image {name}: {type(e).__name__}: {e}") from e


def load_image(
    path_or_bytes: ImageInput,
    *,
    background: tuple[int, int, int] = WHITE,
    source: str | None = None,
) -> Image.Image:
    """Load an image as a person sees it: EXIF-rotated, transparency on ``background``, RGB.

    Parameters
    ----------
    path_or_bytes: a file path, the encoded bytes, a binary file object, or a PIL image
        (as the ``datasets`` library returns them; its EXIF, if any, is applied the same way).
    background: (R, G, B), 0-255, that transparent pixels are composited onto (alpha
        "over" compositing, Porter & Duff 1984); white by default, else the dataset's
        declared background.
    source: name used in error messages instead of the path (e.g. ``"MMStar row 12"``).

    Returns
    -------
    A new, fully decoded ``PIL.Image.Image`` in mode ``"RGB"`` (uint8, H x W x 3 as an array),
    of the displayed size (width and height swapped for EXIF orientations 5-8).

    Raises
    ------
    ImageLoadError (a ValueError): missing, unreadable, corrupt or truncated file, or more
    pixels than :func:`max_image_pixels`; the message names the file (or ``source``).  ValueError: a malformed ``background``.
    """
    bg = _check_background(background)
    name = _name(path_or_bytes, source)
    im = _open(path_or_bytes, name)
    try:
        im = ImageOps.exif_transpose(im) or im
    except Exception as e:  # noqa: BLE001 - malformed EXIF block
        raise ImageLoadError(f"cannot apply the EXIF orientation of image {name}: {e}") from e
    if im.mode in _SIXTEEN_BIT or im.mode in ("I", "F"):
        im = _to_8bit(im)
    if _has_transparency(im):
        return _composite(im, bg)
    out = im.convert("RGB")  # always a new image: the caller's PIL image is never modified
    out.info.pop("exif", None)
    return out


def load_mask(path_or_bytes: ImageInput, *, source: str | None = None, threshold: int = 127) -> np.ndarray:
    """A binary mask image as a (H, W) bool array, oriented like :func:`load_image`.

    The same decoding and EXIF orientation as :func:`load_image` (so mask and image stay
    registered); transparent pixels count as background (composited onto black); then
    luminance (ITU-R 601-2, Pillow's ``"L"``) ``> threshold`` is foreground.  The default 127
    tolerates JPEG compression noise in released masks (e.g. O3's).

    Raises ImageLoadError naming the file, as :func:`load_image`.
    """
    rgb = load_image(path_or_bytes, background=(0, 0, 0), source=source)
    return np.asarray(rgb.convert("L")) > threshold
