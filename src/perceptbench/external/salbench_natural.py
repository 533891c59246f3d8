"""Loaders for published SalBench / P3 / O3 data (seed 001 §3, Appendix A).

Three sources, one record type (:class:`SalBenchItem`):

(a) the Hugging Face dataset ``salbench-vlm/salbench`` (gated; configs ``P3``, ``P3_box``,
    ``P3_box_img`` = synthetic, ``O3``, ``O3_box``, ``O3_box_img`` = natural; split
    ``test``), through the ``datasets`` library, imported only when called
    (:func:`load_hf`).  Fields, as read and scored by lmms-eval's ``salbench`` task
    (``lmms_eval/tasks/salbench/utils.py``): ``image_id``, ``image`` (PIL image), ``question``
    (the prompt text), ``answer`` (comma-separated feature names).  The ``*_box_img`` images
    already carry the red box.  The distractor count, object category and box are parsed
    from the question text when it follows the seed's referring template; absent otherwise.
(b) the original releases (Kotseruba et al. 2019, ykotseruba/P3O3_metrics ``data/
    download_data.sh``): ``images/``, ``targ_images/`` (target mask) and ``dist_images/``
    (distractor mask) folders holding same-named files; P3 additionally in ``colors/``,
    ``orientations/``, ``sizes/`` sub-folders (:func:`load_p3_release`).  O3's feature
    labels come from an annotation table the user supplies (:func:`load_o3_release`;
    the release's own annotation file could not be inspected offline, so its columns are
    mapped by arguments).  Boxes are derived from the target mask; distractor counts, when
    not annotated, from the connected components of the distractor mask.
(c) a local directory in this project's schema (:func:`load_local`): a JSON list, JSONL
    or CSV file of records with the HF field names plus optional ``split``,
    ``n_distractors``, ``bbox``, ``object_category``, ``target_mask``,
    ``distractor_mask``.  Paths are relative to the annotation file or may start with
    ``${PERCEPTBENCH_MIRROR}`` (expanded from the ``mirror`` argument or the environment).

Images and masks are read through :func:`perceptbench.stimuli.images.load_image` /
:func:`~perceptbench.stimuli.images.load_mask` (EXIF orientation applied before any box is
derived or drawn, transparency onto white, every colour mode to RGB).  Masks are read as
grayscale and thresholded at > 127 (the O3 masks are JPEG with compression noise).  Boxes
are (x_min, y_min, x_max, y_max) inclusive pixel coordinates of the displayed image.
"""

from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np
from PIL import Image
from scipy import ndimage

from perceptbench.stimuli.images import load_image, load_mask
from perceptbench.readouts.multilabel import SALBENCH_LABELS, SYNTHETIC_LABELS
from perceptbench.stimuli.search_arrays import difficulty_of
from ._common import refuse_duplicate_ids

__all__ = [
    "HF_CONFIGS",
    "HF_DATASET",
    "MIRROR_ENV",
    "SalBenchItem",
    "bbox_from_mask",
    "count_mask_components",
    "items_from_hf_rows",
    "load_hf",
    "load_local",
    "load_o3_release",
    "load_p3_release",
    "measure_p3_difficulty",
    "parse_answer",
]

HF_DATASET = "salbench-vlm/salbench"
#: config -> (split, task variant)
HF_CONFIGS: dict[str, tuple[str, str]] = {
    "P3": ("syn", "detection"),
    "P3_box": ("syn", "referring"),
    "P3_box_img": ("syn", "visual_referring"),
    "O3": ("nat", "detection"),
    "O3_box": ("nat", "referring"),
    "O3_box_img": ("nat", "visual_referring"),
}
MIRROR_ENV = "PERCEPTBENCH_MIRROR"
SPLIT_LABELS: dict[str, tuple[str, ...]] = {"nat": SALBENCH_LABELS, "syn": SYNTHETIC_LABELS}
P3_FEATURE_DIRS: dict[str, str] = {"colors": "Color", "orientations": "Orientation", "sizes": "Size"}
IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".bmp")


@dataclass(frozen=True, eq=False)
class SalBenchItem:
    """One published SalBench stimulus with its truth.

    Attributes
    ----------
    stimulus_id: unique id (``image_id`` of the source, prefixed by the source kind).
    split: ``"nat"`` (O3, seven labels) or ``"syn"`` (P3, Orientation/Color/Size).
    labels: truth set, canonical names from :data:`SALBENCH_LABELS`.
    source: ``"hf:<config>"``, ``"release:O3"``, ``"release:P3"`` or ``"local"``.
    image_path: file of the image (None when the image came in memory from ``datasets``).
    n_distractors: number of distractors or None when unknown.
    target_bbox: (x_min, y_min, x_max, y_max) inclusive pixels or None.
    object_category: plural noun for the referring prompts, or None.
    question: the source's prompt text (HF) or None.
    target_mask_path / distractor_mask_path: mask files or None.
    meta: extra source fields (strings/numbers), e.g. how a count was obtained.
    """

    stimulus_id: str
    split: str
    labels: frozenset[str]
    source: str
    image_path: Path | None = None
    n_distractors: int | None = None
    target_bbox: tuple[int, int, int, int] | None = None
    object_category: str | None = None
    question: str | None = None
    target_mask_path: Path | None = None
    distractor_mask_path: Path | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    _image: Image.Image | None = field(default=None, repr=False)

    def load_image(self) -> Image.Image:
        """The stimulus as a PIL RGB image, as a person sees it (EXIF orientation applied,
        transparency on white; :func:`perceptbench.stimuli.images.load_image`).

        Raises FileNotFoundError naming a missing file; ImageLoadError (ValueError) naming a
        corrupt or truncated one.
        """
        if self._image is not None:
            return load_image(self._image, source=f"{self.stimulus_id} (in-memory image)")
        if self.image_path is None:
            raise FileNotFoundError(f"{self.stimulus_id}: no image path and no in-memory image")
        if not self.image_path.is_file():
            raise FileNotFoundError(f"{self.stimulus_id}: image file not found: {self.image_path}")
        return load_image(self.image_path)


# ----------------------------------------------------------------------------- helpers
def parse_answer(answer: str | Sequence[str], split: str) -> frozenset[str]:
    """Truth labels from an ``answer`` field ("Color, Shape" or a list), strictly.

    Case-insensitive match to the split's label set (seed 001 §3.1: natural = seven
    features, synthetic = Orientation, Color, Size).  Raises ValueError for an unknown
    split, an empty answer or a name that is not a label of the split (naming it).
    """
    if split not in SPLIT_LABELS:
        raise ValueError(f"split must be 'nat' or 'syn', got {split!r}")
    parts = [p for p in re.split(r"[,;]", answer)] if isinstance(answer, str) else list(answer)
    by_lower = {lab.lower(): lab for lab in SPLIT_LABELS[split]}
    out = set()
    for p in parts:
        key = str(p).strip().strip("[]'\" ").lower()
        if not key:
            continue
        if key not in by_lower:
            raise ValueError(f"answer label {p!r} is not a {split} SalBench label {SPLIT_LABELS[split]}")
        out.add(by_lower[key])
    if not out:
        raise ValueError(f"empty answer {answer!r}")
    return frozenset(out)


def _read_mask(path: Path) -> np.ndarray:
    if not path.is_file():
        raise FileNotFoundError(f"mask file not found: {path}")
    return load_mask(path)


def bbox_from_mask(mask: np.ndarray | str | Path) -> tuple[int, int, int, int]:
    """(x_min, y_min, x_max, y_max), inclusive, of the True pixels of a (H, W) mask or file.

    Raises ValueError for an empty mask.
    """
    m = _read_mask(Path(mask)) if isinstance(mask, (str, Path)) else np.asarray(mask, dtype=bool)
    ys, xs = np.nonzero(m)
    if xs.size == 0:
        raise ValueError(f"mask {mask if isinstance(mask, (str, Path)) else ''} has no foreground pixels")
    return int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())


def count_mask_components(mask: np.ndarray | str | Path, min_pixels: int = 20) -> int:
    """Number of 8-connected foreground components with >= ``min_pixels`` pixels.

    Used as the distractor count when none is annotated.  An approximation: touching
    distractors merge into one component, and objects cut by the frame still count.
    """
    m = _read_mask(Path(mask)) if isinstance(mask, (str, Path)) else np.asarray(mask, dtype=bool)
    lab, n = ndimage.label(m, structure=np.ones((3, 3), dtype=int))
    if n == 0:
        return 0
    sizes = np.bincount(lab.ravel())[1:]
    return int((sizes >= min_pixels).sum())


_Q_COUNT = re.compile(r"scene with\s+(\d+)\s+(.+?)\.\s+Among", re.IGNORECASE | re.DOTALL)
_Q_BOX = re.compile(
    r"bounding box[^(\[\d]*[(\[]\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)",
    re.IGNORECASE,
)


def _from_question(question: str | None) -> tuple[int | None, str | None, tuple | None]:
    if not question:
        return None, None, None
    n, cat, box = None, None, None
    m = _Q_COUNT.search(question)
    if m:
        n, cat = int(m.group(1)), m.group(2).strip()
    b = _Q_BOX.search(question)
    if b:
        box = tuple(int(round(float(v))) for v in b.groups())
    return n, cat, box


def _expand(path: str, base: Path, mirror: str | None) -> Path:
    token = "${" + MIRROR_ENV + "}"
    if token in path or f"${MIRROR_ENV}" in path:
        root = mirror if mirror is not None else os.environ.get(MIRROR_ENV)
        if not root:
            raise ValueError(
                f"path {path!r} uses ${{{MIRROR_ENV}}} but neither mirror= nor the environment "
                f"variable {MIRROR_ENV} is set"
            )
        root = os.path.abspath(root)  # a relative mirror is relative to the working directory, not to this file
        path = path.replace(token, root).replace(f"${MIRROR_ENV}", root)
    p = Path(path)
    return p if p.is_absolute() else (base / p)


def _opt_int(v: Any, what: str) -> int | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be an integer, got {v!r}") from None
    if f != int(f) or f < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {v!r}")
    return int(f)


def _opt_bbox(v: Any, what: str) -> tuple[int, int, int, int] | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, str):
        v = [x for x in re.split(r"[\s,()\[\]]+", v) if x]
    if len(v) != 4:
        raise ValueError(f"{what} must have 4 values (x_min, y_min, x_max, y_max), got {v!r}")
    x0, y0, x1, y1 = (int(round(float(x))) for x in v)
    if x1 < x0 or y1 < y0:
        raise ValueError(f"{what} must satisfy x_min <= x_max, y_min <= y_max, got {v!r}")
    return x0, y0, x1, y1


def _read_table(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise FileNotFoundError(f"annotation file not found: {path}")
    suffix = path.suffix.lower()
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        data = json.loads(text)
        if isinstance(data, dict) and "records" in data:
            data = data["records"]
        if not isinstance(data, list):
            raise ValueError(f"{path}: expected a JSON list of records (or {{'records': [...]}})")
        return data
    if suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if suffix in (".csv", ".tsv"):
        return list(csv.DictReader(text.splitlines(), delimiter="\t" if suffix == ".tsv" else ","))
    raise ValueError(f"{path}: unsupported annotation format {suffix!r} (use .json, .jsonl, .csv, .tsv)")


# ----------------------------------------------------------------------------- (a) HF
def items_from_hf_rows(rows: Iterable[Mapping[str, Any]], config: str) -> Iterator[SalBenchItem]:
    """Convert rows of ``salbench-vlm/salbench`` (fields ``image_id``, ``image``,
    ``question``, ``answer``) into :class:`SalBenchItem` lazily.

    ``image`` may be a PIL image (as ``datasets`` returns it) or a path.  Optional row
    fields ``n_distractors`` / ``num_distractors``, ``bbox`` and ``object_category`` are used
    when present; otherwise they are parsed from the question (referring template, seed 001
    §4 "Setting"), else None.  Raises ValueError for an unknown config or a row without
    ``image_id`` / ``answer``.
    """
    if config not in HF_CONFIGS:
        raise ValueError(f"unknown SalBench config {config!r}; expected one of {tuple(HF_CONFIGS)}")
    split, variant = HF_CONFIGS[config]
    for i, row in enumerate(rows):
        for key in ("image_id", "answer"):
            if key not in row:
                raise ValueError(f"{config} row {i} has no {key!r} field (fields: {sorted(row)})")
        q = row.get("question")
        qn, qcat, qbox = _from_question(q)
        n = _opt_int(row.get("n_distractors", row.get("num_distractors")), f"{config} row {i} n_distractors")
        img = row.get("image")
        yield SalBenchItem(
            stimulus_id=f"salbench-{config}-{row['image_id']}",
            split=split,
            labels=parse_answer(row["answer"], split),
            source=f"hf:{config}",
            image_path=Path(img) if isinstance(img, (str, Path)) else None,
            n_distractors=n if n is not None else qn,
            target_bbox=_opt_bbox(row.get("bbox"), f"{config} row {i} bbox") or qbox,
            object_category=row.get("object_category") or qcat,
            question=q,
            meta={"config": config, "variant": variant, "image_id": row["image_id"]},
            _image=img if isinstance(img, Image.Image) else None,
        )


def load_hf(
    config: str = "O3",
    split: str = "test",
    token: str | bool | None = True,
    cache_dir: str | None = None,
) -> Iterator[SalBenchItem]:
    """Stream ``salbench-vlm/salbench`` from the Hugging Face hub (needs internet, a hub
    token with access to the gated dataset, and ``pip install datasets``).

    Raises ImportError with the install hint when ``datasets`` is missing and ValueError for
    an unknown config; hub errors (no access, no network) propagate from ``datasets``.
    """
    if config not in HF_CONFIGS:
        raise ValueError(f"unknown SalBench config {config!r}; expected one of {tuple(HF_CONFIGS)}")
    try:
        import datasets  # noqa: PLC0415 - optional dependency, imported lazily
    except ImportError as exc:
        raise ImportError(
            "loading SalBench from the Hugging Face hub needs the `datasets` package: "
            "pip install datasets (the perceptbench[external] extra; and `huggingface-cli login` with access to "
            f"{HF_DATASET})"
        ) from exc
    ds = datasets.load_dataset(HF_DATASET, config, split=split, token=token, cache_dir=cache_dir)
    return items_from_hf_rows(ds, config)


# ----------------------------------------------------------------------------- (c) local
def load_local(
    annotations: str | Path,
    mirror: str | None = None,
    default_split: str | None = None,
) -> list[SalBenchItem]:
    """Load stimuli listed in a local annotation file (.json list, .jsonl, .csv, .tsv).

    Record fields: ``image_id`` and ``image`` (path) and ``answer`` (required); ``split``
    (``"nat"``/``"syn"``; else ``default_split``), ``n_distractors``, ``bbox``,
    ``object_category``, ``question``, ``target_mask``, ``distractor_mask`` (optional);
    anything else goes to ``meta``.  A missing ``bbox`` is derived from ``target_mask``; a
    missing ``n_distractors`` from the components of ``distractor_mask`` (recorded in
    ``meta["n_distractors_source"]``).  Paths: relative to the annotation file, or starting
    with ``${PERCEPTBENCH_MIRROR}``.

    Raises FileNotFoundError for a missing annotation, image or mask file; ValueError for
    a malformed record (naming the record and field) or duplicate ``image_id``.
    """
    ann = Path(annotations)
    rows = _read_table(ann)
    base = ann.parent
    items: list[SalBenchItem] = []
    seen: set[str] = set()
    known = {"image_id", "image", "answer", "split", "n_distractors", "bbox", "object_category",
             "question", "target_mask", "distractor_mask"}
    for i, row in enumerate(rows):
        where = f"{ann.name} record {i}"
        for key in ("image_id", "image", "answer"):
            if not row.get(key):
                raise ValueError(f"{where}: missing required field {key!r}")
        sid = str(row["image_id"])
        if sid in seen:
            raise ValueError(f"{where}: duplicate image_id {sid!r}")
        seen.add(sid)
        split = row.get("split") or default_split
        if split not in SPLIT_LABELS:
            raise ValueError(f"{where}: split must be 'nat' or 'syn', got {split!r}")
        image_path = _expand(str(row["image"]), base, mirror)
        if not image_path.is_file():
            raise FileNotFoundError(f"{where}: image file not found: {image_path}")
        tmask = _expand(str(row["target_mask"]), base, mirror) if row.get("target_mask") else None
        dmask = _expand(str(row["distractor_mask"]), base, mirror) if row.get("distractor_mask") else None
        meta = {k: v for k, v in row.items() if k not in known}
        bbox = _opt_bbox(row.get("bbox"), f"{where} bbox")
        if bbox is None and tmask is not None:
            bbox = bbox_from_mask(tmask)
            meta["bbox_source"] = "target_mask"
        n = _opt_int(row.get("n_distractors"), f"{where} n_distractors")
        if n is None and dmask is not None:
            n = count_mask_components(dmask)
            meta["n_distractors_source"] = "distractor_mask_components"
        qn, qcat, qbox = _from_question(row.get("question"))
        items.append(
            SalBenchItem(
                stimulus_id=sid,
                split=split,
                labels=parse_answer(row["answer"], split),
                source="local",
                image_path=image_path,
                n_distractors=n if n is not None else qn,
                target_bbox=bbox or qbox,
                object_category=row.get("object_category") or qcat,
                question=row.get("question"),
                target_mask_path=tmask,
                distractor_mask_path=dmask,
                meta=meta,
            )
        )
    return items


# ----------------------------------------------------------------------------- (b) releases
def _release_item(root: Path, name: str, split: str, labels: frozenset[str], source: str,
                  n_distractors: int | None, category: str | None, meta: dict) -> SalBenchItem:
    img = root / "images" / name
    if not img.is_file():
        raise FileNotFoundError(f"image file not found: {img}")
    tmask = root / "targ_images" / name
    dmask = root / "dist_images" / name
    bbox = bbox_from_mask(tmask) if tmask.is_file() else None
    if n_distractors is None and dmask.is_file():
        n_distractors = count_mask_components(dmask)
        meta = {**meta, "n_distractors_source": "distractor_mask_components"}
    return SalBenchItem(
        stimulus_id=f"{source.split(':')[1]}-{Path(name).stem}",
        split=split,
        labels=labels,
        source=source,
        image_path=img,
        n_distractors=n_distractors,
        target_bbox=bbox,
        object_category=category,
        target_mask_path=tmask if tmask.is_file() else None,
        distractor_mask_path=dmask if dmask.is_file() else None,
        meta=meta,
    )


def load_p3_release(root: str | Path, feature: str | None = None, pattern: str = "*") -> list[SalBenchItem]:
    """Items of the original P3 release (or a folder in its layout).

    ``root`` either holds ``colors/``, ``orientations/``, ``sizes/`` (each with ``images/``,
    ``targ_images/``, ``dist_images/``), the label being given by the sub-folder, or is
    itself such a folder, in which case ``feature`` ("Color" | "Orientation" | "Size") must
    be given.  ``pattern`` (a glob on file names, e.g. ``"image_*.png"``) selects files.
    Box from the target mask, distractor count from the distractor mask's components.
    Raises FileNotFoundError / ValueError naming the problem.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"P3 release folder not found: {root}")
    subdirs = [(root / d, lab) for d, lab in P3_FEATURE_DIRS.items() if (root / d / "images").is_dir()]
    if not subdirs:
        if feature is None:
            raise ValueError(f"{root} has no colors/orientations/sizes sub-folders; pass feature=")
        lab = parse_answer(feature, "syn")
        if len(lab) != 1:
            raise ValueError(f"feature must name one synthetic feature, got {feature!r}")
        subdirs = [(root, next(iter(lab)))]
    items = []
    for folder, lab in subdirs:
        names = sorted(p.name for p in (folder / "images").glob(pattern) if p.suffix.lower() in IMAGE_EXTS)
        for name in names:
            items.append(_release_item(folder, name, "syn", frozenset({lab}), "release:P3", None, None, {}))
    refuse_duplicate_ids([it.stimulus_id for it in items], f"P3 release {root}", "stimulus id (file name stem)")
    return items


_TRUTHY = {"1", "true", "yes", "y", "x"}


def load_o3_release(
    root: str | Path,
    annotations: str | Path,
    image_col: str = "image",
    features_col: str | None = "features",
    count_col: str | None = "n_distractors",
    category_col: str | None = "object",
) -> list[SalBenchItem]:
    """Items of the original O3 release (``images/``, ``targ_images/``, ``dist_images/``).

    ``annotations``: a CSV/TSV/JSON/JSONL table with one row per image: ``image_col`` = file
    name in ``images/``; labels either in ``features_col`` (comma-separated names) or, when
    ``features_col`` is None or absent from a row, as one column per feature (named like
    the label, case-insensitive; "1"/"true"/"yes"/"x" = present).  Optional distractor count
    and object category columns.  Box from the target mask; count from the distractor mask's
    components when not annotated.

    Raises FileNotFoundError for missing folders/files and ValueError for rows without
    labels or with unknown label names (naming the row).
    """
    root = Path(root)
    if not (root / "images").is_dir():
        raise FileNotFoundError(f"O3 release folder without images/: {root}")
    rows = _read_table(Path(annotations))
    items = []
    for i, row in enumerate(rows):
        where = f"{Path(annotations).name} row {i}"
        name = row.get(image_col)
        if not name:
            raise ValueError(f"{where}: missing image column {image_col!r}")
        if features_col and row.get(features_col):
            labels = parse_answer(row[features_col], "nat")
        else:
            lower = {str(k).strip().lower(): v for k, v in row.items()}
            labels = frozenset(
                lab for lab in SALBENCH_LABELS if str(lower.get(lab.lower(), "")).strip().lower() in _TRUTHY
            )
            if not labels:
                raise ValueError(f"{where}: no feature labels for {name!r}")
        n = _opt_int(row.get(count_col), f"{where} {count_col}") if count_col else None
        cat = (row.get(category_col) or None) if category_col else None
        items.append(_release_item(root, str(name), "nat", labels, "release:O3", n, cat, {}))
    refuse_duplicate_ids([it.stimulus_id for it in items], f"O3 release {annotations}", "stimulus id")
    return items


_FEATURE_OF_LABEL = {"Color": "color", "Orientation": "orientation", "Size": "size"}


def _components(mask: np.ndarray, min_pixels: int = 20) -> list[np.ndarray]:
    lab, n = ndimage.label(mask, structure=np.ones((3, 3), dtype=int))
    out = []
    for i, sl in enumerate(ndimage.find_objects(lab), start=1):
        m = np.zeros_like(mask)
        m[sl] = lab[sl] == i
        if m.sum() >= min_pixels:
            out.append(m)
    return out


def _moment(mask: np.ndarray, order: int) -> complex:
    ys, xs = np.nonzero(mask)
    z = (xs - xs.mean()) - 1j * (ys - ys.mean())
    if order == 1:
        return complex(np.sum(np.abs(z) ** 2 * z))
    return complex(np.sum(z**order))


def measure_p3_difficulty(
    item: SalBenchItem,
    period_deg: float | None = None,
) -> tuple[float, str | None]:
    """Difficulty of a published P3 item measured from its image and masks.

    The feature is the item's single label.  Measures (seed 001 §6.1): color = Euclidean
    distance between the median RGB of the target's and the distractors' mask pixels (masks
    eroded by 2 px to skip anti-aliased rims); size = target mask area / median distractor
    component area; orientation = folded rotation between the target and the median-area
    distractor from image moments of order 360/``period_deg`` (180-periodic shapes: order 2,
    90-periodic: order 4; 360: order 2 axis resolved by the order-1 moment), so
    ``period_deg`` (the shape's rotational symmetry period) is required for orientation.
    Returns ``(value, level)``, level from :func:`search_arrays.difficulty_of` (None when
    the value falls in no bin).

    Raises ValueError when the item has no masks, is not a single-feature synthetic item,
    or orientation is asked without ``period_deg``.
    """
    if item.split != "syn" or len(item.labels) != 1:
        raise ValueError(f"{item.stimulus_id}: needs a synthetic item with one label, got {sorted(item.labels)}")
    if item.target_mask_path is None or item.distractor_mask_path is None:
        raise ValueError(f"{item.stimulus_id}: target and distractor masks are required")
    feature = _FEATURE_OF_LABEL[next(iter(item.labels))]
    tmask = _read_mask(item.target_mask_path)
    dmask = _read_mask(item.distractor_mask_path) & ~tmask
    if feature == "color":
        img = np.asarray(item.load_image()).astype(np.float64)
        tc = ndimage.binary_erosion(tmask, iterations=2)
        dc = ndimage.binary_erosion(dmask, iterations=2)
        if not tc.any() or not dc.any():
            raise ValueError(f"{item.stimulus_id}: masks too small to sample colours")
        value = float(np.linalg.norm(np.median(img[tc], axis=0) - np.median(img[dc], axis=0)))
        return value, difficulty_of("color", value)
    comps = _components(dmask)
    if not comps:
        raise ValueError(f"{item.stimulus_id}: distractor mask has no components")
    areas = np.array([c.sum() for c in comps])
    if feature == "size":
        value = float(tmask.sum() / np.median(areas))
        return value, difficulty_of("size", value)
    if not period_deg or period_deg <= 0:
        raise ValueError(f"{item.stimulus_id}: orientation needs the shape's symmetry period_deg, got {period_deg!r}")
    ref = comps[int(np.argsort(areas)[len(areas) // 2])]
    k = int(round(360.0 / period_deg))
    if k == 1:
        d2 = np.degrees(np.angle(_moment(tmask, 2) / _moment(ref, 2))) / 2
        d1 = np.degrees(np.angle(_moment(tmask, 1) / _moment(ref, 1)))
        d = min((d2 - 180, d2, d2 + 180), key=lambda c: abs((c - d1 + 180) % 360 - 180))
        value = float(abs((d + 180) % 360 - 180))
    else:
        value = float(abs(np.degrees(np.angle(_moment(tmask, k) / _moment(ref, k))) / k))
    return value, difficulty_of("orientation", value)
