"""POPE (Li et al., EMNLP 2023): "Is there a <object> in the image?" yes/no questions.

Question files come from the sources registry (``li2023-pope``: pinned URL, sha256, MIT
license, data mirror): ``output/coco/coco_pope_{split}.json`` (COCO val2014 images) and
``output/seem/{aokvqa,gqa}/{dataset}_pope_seem_{split}.json`` (A-OKVQA: COCO images; GQA:
GQA images), ``split`` in random / popular / adversarial.  The COCO files are JSON lines,
the SEEM files a JSON list; both hold records ``{"question_id", "image", "text", "label"}``.

The object phrase to ground (seed 002 appendix A, "the question's principal noun phrase")
is the ``<object>`` of POPE's own question template, read by :data:`TEMPLATE`; a question
that does not follow the template is an error naming the file and line.  POPE has no region
annotations: ``region`` is None and the region comes from the grounding step.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from ..core.paths import confine
from ..sources import resolve, source_file
from ._common import check_files_exist, check_images_dir, lazy_loader, refuse_duplicate_ids, seeded_subset
from .base import VQAStimulus

__all__ = ["SPLITS", "DATASETS", "TEMPLATE", "question_file", "read_questions", "object_phrase", "load_pope"]

SPLITS = ("random", "popular", "adversarial")
DATASETS = ("coco", "aokvqa", "gqa")
SOURCE_ID = "li2023-pope"
#: POPE's question template (Li et al. 2023, §3: "Is there a <object> in the image?")
TEMPLATE = re.compile(r"^\s*Is there an? (?P<object>.+?) in the image\?\s*$", re.IGNORECASE)

_HOW_TO_GET = {
    "coco": "POPE's COCO questions use the COCO 2014 validation images: download val2014.zip from "
            "cocodataset.org, unzip it and pass the folder of COCO_val2014_*.jpg files (images=DIR)",
    "aokvqa": "POPE's A-OKVQA questions use COCO val2014 images: download val2014.zip from "
              "cocodataset.org, unzip it and pass the folder (images=DIR)",
    "gqa": "POPE's GQA questions use the GQA images: download images.zip from the GQA website "
           "(cs.stanford.edu/people/dorarad/gqa), unzip it and pass the folder (images=DIR)",
}


def question_file(split: str, dataset: str = "coco") -> str:
    """Mirror-relative path of POPE's question file; raises ValueError naming a bad split/dataset."""
    if split not in SPLITS:
        raise ValueError(f"POPE split must be one of {SPLITS}, got {split!r}")
    if dataset not in DATASETS:
        raise ValueError(f"POPE dataset must be one of {DATASETS}, got {dataset!r}")
    if dataset == "coco":
        return f"pope/output/coco/coco_pope_{split}.json"
    return f"pope/output/seem/{dataset}/{dataset}_pope_seem_{split}.json"


def read_questions(path: str | Path) -> list[dict]:
    """Records of a POPE question file (JSON lines or a JSON list).

    Raises ValueError naming the file and line for malformed JSON or a record without
    ``question_id`` / ``image`` / ``text`` / ``label``.
    """
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if text.lstrip().startswith("["):
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON: {e}") from None
        numbered = list(enumerate(rows, start=1))
    else:
        numbered = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                numbered.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                raise ValueError(f"{path} line {lineno}: not valid JSON: {e}") from None
    out = []
    for n, r in numbered:
        if not isinstance(r, dict):
            raise ValueError(f"{path} record {n}: expected an object, got {type(r).__name__}")
        for key in ("question_id", "image", "text", "label"):
            if key not in r:
                raise ValueError(f"{path} record {n}: missing field {key!r}")
        out.append({**r, "_line": n})
    return out


def object_phrase(question: str) -> str | None:
    """The object named by POPE's template ("Is there a <object> in the image?"), or None."""
    m = TEMPLATE.match(question)
    return m.group("object").strip() if m else None


def load_pope(
    split: str,
    images_dir: str | Path | None,
    *,
    dataset: str = "coco",
    limit: int | None = None,
    seed: int = 0,
    questions: str | Path | None = None,
    check_images: bool = True,
) -> list[VQAStimulus]:
    """POPE stimuli of one split, images loaded lazily from ``images_dir``.

    Parameters
    ----------
    split: ``"random"``, ``"popular"`` or ``"adversarial"``.
    images_dir: folder holding the files named in the question file (COCO val2014 for coco).
    dataset: ``"coco"`` (default), ``"aokvqa"`` or ``"gqa"``.
    limit: keep a seeded random subset of this many questions (None: all 3000), drawn with
        ``rng_for(seed, "pope", dataset, split)``, in file order.
    questions: a question file to use instead of the registered one (tests, local copies);
        its sha256 is recorded but not checked against a pin.
    check_images: check that every selected image file exists (default) before returning.

    Returns a list of :class:`VQAStimulus` with ``answer_type="yes_no"``, ``region=None``,
    ``object_phrase`` from the template, ``image_id`` = the image file's stem, ``meta`` with
    benchmark, dataset, split, question_id, image file, question file and its sha256.

    Raises MissingExternalDataError (a FileNotFoundError; one line saying what to download and
    where) for a missing image folder or image files; MissingSourceError / ChecksumError from
    the sources registry for the question file; ValueError (naming file and line) for a
    malformed record, a label other than yes/no, a question off the template or a repeated
    ``question_id`` (naming it);
    :class:`~perceptbench.core.paths.PathEscapeError` (a ValueError naming the file and record)
    for an image path that is absolute or holds ``..`` (it would leave ``images_dir``).
    """
    from ..seeding import file_sha256

    rel = question_file(split, dataset)
    how = _HOW_TO_GET[dataset]
    root = check_images_dir(images_dir, f"POPE ({dataset}, {split})", how)
    if questions is None:
        qpath = resolve(source_file(rel))
        sha = source_file(rel).sha256
    else:
        qpath = Path(questions)
        if not qpath.is_file():
            raise FileNotFoundError(f"POPE question file not found: {qpath}")
        sha = file_sha256(qpath)
    rows = read_questions(qpath)
    for r in rows:  # a question file must not pick images outside the image folder (nor send them to an API)
        confine(root, str(r["image"]), f"{qpath} record {r['_line']}: image")
    refuse_duplicate_ids([r["question_id"] for r in rows], f"POPE question file {qpath}", "question_id")
    keep = seeded_subset(len(rows), limit, seed, "pope", dataset, split)
    out: list[VQAStimulus] = []
    for i in keep:
        r = rows[i]
        where = f"{qpath} record {r['_line']}"
        label = str(r["label"]).strip().lower()
        if label not in ("yes", "no"):
            raise ValueError(f"{where}: label must be yes or no, got {r['label']!r}")
        phrase = object_phrase(str(r["text"]))
        if phrase is None:
            raise ValueError(f"{where}: question {r['text']!r} does not follow POPE's template "
                             "'Is there a <object> in the image?'")
        image_path = root / str(r["image"])
        out.append(VQAStimulus(
            stimulus_id=f"pope-{dataset}-{split}-{int(r['question_id']):04d}",
            image_id=Path(str(r["image"])).stem,
            load=lazy_loader(image_path, source=f"{image_path} (POPE question {r['question_id']})"),
            question=str(r["text"]),
            answer=label,
            answer_type="yes_no",
            options=None,
            region=None,
            object_phrase=phrase,
            meta={"benchmark": f"pope.{split}" if dataset == "coco" else f"pope.{dataset}.{split}",
                  "dataset": dataset, "split": split, "question_id": int(r["question_id"]),
                  "image_file": str(r["image"]), "question_file": rel if questions is None else str(qpath),
                  "question_file_sha256": sha},
        ))
    if check_images:
        check_files_exist([root / s.meta["image_file"] for s in out], f"POPE ({dataset}, {split})", root, how)
    return out
