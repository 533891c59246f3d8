"""The record every external VQA benchmark loader returns, and the region it may carry.

A :class:`VQAStimulus` is one (image, question) pair of a released benchmark (POPE,
HallusionBench, MMVP, MMStar) with its ground truth; the image is loaded lazily through
:func:`perceptbench.stimuli.images.load_image`.  A :class:`Region` is the part of the image a
question is about (seed 002 §2, "region blur"): from the stimulus itself (``"exact"``), from
the benchmark's own annotations (``"annotation"``), from the grounding step
(``"grounding"``, :mod:`perceptbench.external.grounding`) or the whole image when grounding
found nothing (``"fallback_whole"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from PIL import Image

__all__ = ["REGION_SOURCES", "ANSWER_TYPES", "Region", "VQAStimulus", "option_letters"]

#: where a region comes from, in decreasing order of trust
REGION_SOURCES = ("exact", "annotation", "grounding", "fallback_whole")
ANSWER_TYPES = ("yes_no", "letter")


def option_letters(n: int) -> tuple[str, ...]:
    """The first ``n`` option letters, ``("A", "B", ...)``; raises ValueError outside 1..26."""
    if not 1 <= n <= 26:
        raise ValueError(f"number of options must be 1..26, got {n}")
    return tuple(chr(ord("A") + i) for i in range(n))


@dataclass(frozen=True, kw_only=True, eq=False)
class Region:
    """The question-relevant part of an image, in displayed-image pixels.

    Attributes
    ----------
    box: ``(x0, y0, x1, y1)`` integer pixels, exclusive ends (``x0 <= x < x1``), or None.
    mask: (H, W) bool array or None; when given it is the region and ``box`` is its extent.
    source: one of :data:`REGION_SOURCES`.  ``"fallback_whole"`` means the whole image (box
        and mask may then be None).
    meta: JSON-able details (detector score, phrase, fallback reason, ...).

    Raises ValueError (naming the field) for an unknown source, an empty or inverted box, a
    non-2-D mask, or a non-fallback region with neither box nor mask.
    """

    box: tuple[int, int, int, int] | None = None
    mask: np.ndarray | None = field(default=None, repr=False)
    source: str
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.source not in REGION_SOURCES:
            raise ValueError(f"Region.source must be one of {REGION_SOURCES}, got {self.source!r}")
        if self.box is not None:
            if len(self.box) != 4:
                raise ValueError(f"Region.box must be (x0, y0, x1, y1), got {self.box!r}")
            box = tuple(int(v) for v in self.box)
            if box[2] <= box[0] or box[3] <= box[1]:
                raise ValueError(f"Region.box must have x0 < x1 and y0 < y1 (exclusive ends), got {self.box!r}")
            object.__setattr__(self, "box", box)
        if self.mask is not None:
            m = np.asarray(self.mask)
            if m.ndim != 2:
                raise ValueError(f"Region.mask must be a 2-D (H, W) array, got shape {m.shape}")
            object.__setattr__(self, "mask", m.astype(bool, copy=False))
        if self.source != "fallback_whole" and self.box is None and self.mask is None:
            raise ValueError(f"a Region with source {self.source!r} needs a box or a mask")

    @classmethod
    def from_inclusive_box(cls, box: tuple[int, int, int, int], *, source: str, **kw) -> "Region":
        """A region from an inclusive (x_min, y_min, x_max, y_max) box, as SalBench's ``target_bbox``."""
        x0, y0, x1, y1 = (int(v) for v in box)
        return cls(box=(x0, y0, x1 + 1, y1 + 1), source=source, **kw)

    @classmethod
    def whole(cls, reason: str = "") -> "Region":
        """The whole-image fallback region (seed 002 appendix A: no box above threshold)."""
        return cls(source="fallback_whole", meta={"reason": reason} if reason else {})

    @property
    def is_whole(self) -> bool:
        """True for the whole-image fallback."""
        return self.source == "fallback_whole"

    def to_mask(self, size: tuple[int, int]) -> np.ndarray:
        """The region as a (H, W) bool array for an image of ``size = (W, H)`` pixels.

        Whole-image fallback: all True.  A mask is returned as is (its shape must be (H, W));
        otherwise the box, clipped to the image, is filled.  Raises ValueError when the mask's
        shape differs from ``size`` or the clipped box is empty.
        """
        w, h = (int(v) for v in size)
        if self.source == "fallback_whole" and self.mask is None and self.box is None:
            return np.ones((h, w), dtype=bool)
        if self.mask is not None:
            if self.mask.shape != (h, w):
                raise ValueError(f"Region.mask has shape {self.mask.shape}, image is (H, W) = {(h, w)}")
            return self.mask.copy()
        x0, y0, x1, y1 = self.box  # type: ignore[misc]
        x0, x1 = max(0, x0), min(w, x1)
        y0, y1 = max(0, y0), min(h, y1)
        if x1 <= x0 or y1 <= y0:
            raise ValueError(f"Region.box {self.box} lies outside the {w}x{h} image")
        out = np.zeros((h, w), dtype=bool)
        out[y0:y1, x0:x1] = True
        return out

    def to_json(self) -> dict[str, Any]:
        """JSON-able summary for trial records (the mask as its pixel count and box extent)."""
        d: dict[str, Any] = {"source": self.source, "box": list(self.box) if self.box else None}
        if self.mask is not None:
            ys, xs = np.nonzero(self.mask)
            d["mask_pixels"] = int(xs.size)
            d["mask_extent"] = ([int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
                                if xs.size else None)
        if self.meta:
            d["meta"] = dict(self.meta)
        return d


@dataclass(frozen=True, eq=False)
class VQAStimulus:
    """One (image, question) stimulus of an external benchmark, with its ground truth.

    Attributes
    ----------
    stimulus_id: unique per (image, question), e.g. ``"pope-coco-adversarial-0001"``.
    image_id: groups all questions/views of one image (grouped cross-validation, dedup).
    load: zero-argument callable returning the image (``PIL.Image``, RGB) through
        :func:`~perceptbench.stimuli.images.load_image`; raises ImageLoadError naming the file.
    question: the benchmark's question text, verbatim (options not appended).
    answer: ``"yes"``/``"no"`` (``answer_type="yes_no"``) or an option letter ``"A".."Z"``
        (``answer_type="letter"``).
    answer_type: ``"yes_no"`` or ``"letter"``.
    options: option texts in letter order for letter questions, else None.
    region: the question-relevant region from the benchmark's own annotations, or None.
    object_phrase: the phrase to ground when ``region`` is None (POPE: the queried object),
        or None when there is none (then the region is the whole image).
    meta: JSON-able extras (benchmark, split, category, source file and sha256, ...).

    Raises ValueError (naming the stimulus and field) for an unknown answer type, a yes/no
    answer other than "yes"/"no", or a letter answer outside the options.
    """

    stimulus_id: str
    image_id: str
    load: Callable[[], Image.Image] = field(repr=False)
    question: str
    answer: str
    answer_type: str
    options: tuple[str, ...] | None = None
    region: Region | None = None
    object_phrase: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        where = f"stimulus {self.stimulus_id!r}"
        if self.answer_type not in ANSWER_TYPES:
            raise ValueError(f"{where}: answer_type must be one of {ANSWER_TYPES}, got {self.answer_type!r}")
        if self.answer_type == "yes_no":
            if self.answer not in ("yes", "no"):
                raise ValueError(f"{where}: a yes_no answer must be 'yes' or 'no', got {self.answer!r}")
            if self.options is not None:
                raise ValueError(f"{where}: a yes_no stimulus has no options")
        else:
            if not self.options:
                raise ValueError(f"{where}: a letter stimulus needs its options")
            object.__setattr__(self, "options", tuple(str(o) for o in self.options))
            if self.answer not in option_letters(len(self.options)):
                raise ValueError(f"{where}: answer {self.answer!r} is not one of the option letters "
                                 f"{option_letters(len(self.options))}")

    @property
    def letters(self) -> tuple[str, ...] | None:
        """Option letters in order (``("A", "B", ...)``) or None for yes/no stimuli."""
        return option_letters(len(self.options)) if self.options else None
