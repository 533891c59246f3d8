"""The grounding step of region-blur VSI (seed 002 appendix A): the question's object phrase
-> Grounding DINO box -> SAM mask, through transformers' own model classes.

* Detector: ``GroundingDinoForObjectDetection`` + ``GroundingDinoProcessor`` (Liu et al. 2023,
  "Grounding DINO"); default hub id ``IDEA-Research/grounding-dino-tiny``.  The phrase is
  lower-cased and ended with "." by the processor (its own candidate-label format).  Boxes are
  kept when their score exceeds ``box_threshold`` (0.3, seed 002 appendix A: "Whole-image
  perturbation is used when no box exceeds confidence 0.3") and their phrase tokens exceed
  ``text_threshold`` (0.25, Grounding DINO's default); the highest-scoring box is used.
* Segmenter: ``SamModel`` + ``SamProcessor`` (Kirillov et al. 2023, "Segment Anything"),
  default ``facebook/sam-vit-base``, prompted with that box, one mask
  (``multimask_output=False``), upsampled to the image by ``post_process_masks``
  (threshold 0 on the mask logits).  An empty SAM mask falls back to the filled box
  (``meta["sam_empty"] = True``).
* No phrase, or no box above the threshold -> ``Region(source="fallback_whole")`` with the
  reason in ``meta``; callers count these per cell.

The mask dilation (4 px) belongs to the perturbation, not here.  Importing this module does
not import torch; building or calling a detector/segmenter does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

import numpy as np
from PIL import Image

from .base import Region

__all__ = [
    "BOX_THRESHOLD", "TEXT_THRESHOLD", "DEFAULT_DETECTOR", "DEFAULT_SEGMENTER",
    "Detection", "Detector", "Segmenter", "ground_region", "region_from_detections",
    "default_detector", "default_segmenter",
]

BOX_THRESHOLD = 0.3  # seed 002 appendix A
TEXT_THRESHOLD = 0.25  # Grounding DINO's default text threshold (transformers' post-processing)
DEFAULT_DETECTOR = "IDEA-Research/grounding-dino-tiny"
DEFAULT_SEGMENTER = "facebook/sam-vit-base"


@dataclass(frozen=True)
class Detection:
    """One detector box: ``score`` in [0, 1]; ``box`` = (x0, y0, x1, y1) float pixels of the
    image (Grounding DINO's corner format); ``label`` the phrase tokens it matched."""

    score: float
    box: tuple[float, float, float, float]
    label: str = ""


@dataclass
class Detector:
    """A Grounding DINO model with its processor; ``name`` / ``revision`` go to the records."""

    model: Any
    processor: Any
    name: str
    revision: str | None = None

    @classmethod
    def from_pretrained(cls, model_id: str = DEFAULT_DETECTOR, *, revision: str | None = None,
                        device: str = "cpu") -> "Detector":
        """Load from the hub or a local directory (needs internet for a hub id).  Errors of
        ``from_pretrained`` (no network, unknown id) propagate."""
        from transformers import AutoProcessor, GroundingDinoForObjectDetection

        proc = AutoProcessor.from_pretrained(model_id, revision=revision)
        model = GroundingDinoForObjectDetection.from_pretrained(model_id, revision=revision).to(device).eval()
        return cls(model, proc, model_id, revision)

    def detect(self, image: Image.Image, phrase: str, *, box_threshold: float = BOX_THRESHOLD,
               text_threshold: float = TEXT_THRESHOLD) -> list[Detection]:
        """Boxes for ``phrase`` with score > ``box_threshold``, highest score first."""
        import torch

        inputs = self.processor(images=image, text=[[phrase.strip().lower()]], return_tensors="pt")
        inputs = inputs.to(self.model.device)
        with torch.no_grad():
            out = self.model(**inputs)
        res = self.processor.post_process_grounded_object_detection(
            out, inputs["input_ids"], threshold=box_threshold, text_threshold=text_threshold,
            target_sizes=[(image.height, image.width)])[0]
        labels = res["text_labels"] if "text_labels" in res else [""] * len(res["scores"])
        dets = [Detection(float(s), tuple(float(v) for v in b.tolist()), str(lab))
                for s, b, lab in zip(res["scores"], res["boxes"], labels)]
        return sorted((d for d in dets if d.score > box_threshold), key=lambda d: -d.score)


@dataclass
class Segmenter:
    """A SAM model with its processor; ``name`` / ``revision`` go to the records."""

    model: Any
    processor: Any
    name: str
    revision: str | None = None

    @classmethod
    def from_pretrained(cls, model_id: str = DEFAULT_SEGMENTER, *, revision: str | None = None,
                        device: str = "cpu") -> "Segmenter":
        """Load from the hub or a local directory (needs internet for a hub id)."""
        from transformers import SamModel, SamProcessor

        proc = SamProcessor.from_pretrained(model_id, revision=revision)
        model = SamModel.from_pretrained(model_id, revision=revision).to(device).eval()
        return cls(model, proc, model_id, revision)

    def segment(self, image: Image.Image, box: Sequence[float]) -> np.ndarray:
        """The SAM mask for one box prompt: (H, W) bool array of the image's size."""
        import torch

        inputs = self.processor(images=image, input_boxes=[[[float(v) for v in box]]], return_tensors="pt")
        inputs = inputs.to(self.model.device)
        with torch.no_grad():
            out = self.model(**inputs, multimask_output=False)
        masks = self.processor.post_process_masks(out.pred_masks.cpu(), inputs["original_sizes"].cpu(),
                                                  inputs["reshaped_input_sizes"].cpu())
        m = np.asarray(masks[0][0, 0].numpy(), dtype=bool)  # batch 0 -> box 0 -> the one mask
        if m.shape != (image.height, image.width):
            raise RuntimeError(f"SAM mask has shape {m.shape}, image is {(image.height, image.width)}")
        return m


@lru_cache(maxsize=2)
def default_detector(device: str = "cpu") -> Detector:
    """Grounding DINO tiny from the hub (``IDEA-Research/grounding-dino-tiny``), cached."""
    return Detector.from_pretrained(DEFAULT_DETECTOR, device=device)


@lru_cache(maxsize=2)
def default_segmenter(device: str = "cpu") -> Segmenter:
    """SAM ViT-B from the hub (``facebook/sam-vit-base``), cached."""
    return Segmenter.from_pretrained(DEFAULT_SEGMENTER, device=device)


def _int_box(box: Sequence[float], size: tuple[int, int]) -> tuple[int, int, int, int] | None:
    w, h = size
    x0, y0 = max(0, math.floor(box[0])), max(0, math.floor(box[1]))
    x1, y1 = min(w, math.ceil(box[2])), min(h, math.ceil(box[3]))
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else None


def region_from_detections(
    image: Image.Image,
    detections: Sequence[Detection],
    *,
    segmenter: Segmenter | None = None,
    box_threshold: float = BOX_THRESHOLD,
    meta: dict[str, Any] | None = None,
) -> Region:
    """The region for a list of detector boxes (any order).

    Keeps boxes with score > ``box_threshold``; none left (or only boxes outside the image) ->
    ``Region(source="fallback_whole")`` with ``meta["reason"]``.  Otherwise the highest-scoring
    box, refined by ``segmenter`` (None = the default SAM) into a (H, W) mask:
    ``Region(box, mask, source="grounding")`` with the score in ``meta``.
    """
    info = dict(meta or {})
    info.update(box_threshold=box_threshold, n_boxes=sum(d.score > box_threshold for d in detections))
    kept = sorted((d for d in detections if d.score > box_threshold), key=lambda d: -d.score)
    for det in kept:
        box = _int_box(det.box, image.size)
        if box is None:
            continue
        seg = segmenter if segmenter is not None else default_segmenter()
        mask = seg.segment(image, det.box)
        info.update(score=round(det.score, 6), label=det.label, segmenter=seg.name,
                    segmenter_revision=seg.revision)
        if not mask.any():
            mask = Region(box=box, source="grounding").to_mask(image.size)
            info["sam_empty"] = True
        return Region(box=box, mask=mask, source="grounding", meta=info)
    info["reason"] = f"no box above {box_threshold}"
    return Region(source="fallback_whole", meta=info)


def ground_region(
    image: Image.Image,
    phrase: str | None,
    *,
    detector: Detector | None = None,
    segmenter: Segmenter | None = None,
    box_threshold: float = BOX_THRESHOLD,
    text_threshold: float = TEXT_THRESHOLD,
) -> Region:
    """Region of ``image`` (PIL, RGB, displayed orientation) named by ``phrase``.

    ``detector`` / ``segmenter``: None = the hub defaults (:data:`DEFAULT_DETECTOR`,
    :data:`DEFAULT_SEGMENTER`; need internet the first time).  Returns
    ``Region(source="grounding")`` with the SAM mask (H x W bool) and the integer box
    (exclusive ends), or ``Region(source="fallback_whole")`` when ``phrase`` is empty/None or
    no box scores above ``box_threshold`` (reason, phrase and model names in ``meta``).
    Raises ValueError for a threshold outside [0, 1].
    """
    for name, v in (("box_threshold", box_threshold), ("text_threshold", text_threshold)):
        if not 0.0 <= float(v) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1], got {v!r}")
    if image.mode != "RGB":
        image = image.convert("RGB")
    if not phrase or not phrase.strip():
        return Region.whole("no object phrase")
    det = detector if detector is not None else default_detector()
    found = det.detect(image, phrase, box_threshold=box_threshold, text_threshold=text_threshold)
    return region_from_detections(image, found, segmenter=segmenter, box_threshold=box_threshold,
                                  meta={"phrase": phrase, "detector": det.name, "detector_revision": det.revision,
                                        "text_threshold": text_threshold})
