"""HallusionBench (Guan et al., CVPR 2024): yes/no questions on charts, tables, maps, OCR,
illusions, videos and figures, in pairs of original and edited images.

The question file ``HallusionBench.json`` comes from the sources registry
(``guan2024-hallusionbench``: pinned URL, sha256, BSD-3-Clause, data mirror).  Its records
hold ``category`` (``VD`` visual dependent / ``VS`` visual supplement), ``subcategory``,
``visual_input`` (``"0"`` = the question is asked without an image, ``"1"`` = original
image, ``"2"`` = edited image), ``set_id``, ``figure_id``, ``question_id``, ``question``,
``gt_answer`` (``"1"`` = yes, ``"0"`` = no), ``gt_answer_details`` and ``filename`` (e.g.
``./VS/chart/0_1.png``, relative to the unzipped ``hallusion_bench`` image folder).

Questions with an image (``visual_input`` 1 or 2) are the VSI stimuli.  The questions asked
without an image (``visual_input`` 0, VS only: 178 in the release) belong to the benchmark's
question-level population (aAcc) and its question groups (qAcc); with ``no_image=True`` they are
returned too, flagged ``meta["no_image"]`` (their ``load`` raises: there is no image), to be
asked under the image-withheld condition.  HallusionBench's annotations give no region (no boxes or
masks in the release), so ``region`` is None; the object phrase comes from the documented
rule of :mod:`perceptbench.external.phrases` (None -> whole-image fallback).
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from ..core.paths import confine
from ..sources import resolve, source_file
from ._common import check_files_exist, check_images_dir, lazy_loader, refuse_duplicate_ids, seeded_subset
from .base import VQAStimulus
from .phrases import principal_noun_phrase

__all__ = ["QUESTION_FILE", "load_hallusionbench"]

QUESTION_FILE = "hallusionbench/HallusionBench.json"
_HOW_TO_GET = ("HallusionBench's images are distributed as hallusion_bench.zip (linked from the README "
               "of github.com/tianyi-lab/HallusionBench): download and unzip it and pass the folder "
               "that holds VD/ and VS/ (images=DIR)")
_REQUIRED = ("category", "subcategory", "visual_input", "set_id", "figure_id", "question_id",
             "question", "gt_answer", "filename")


def _stimulus_id(r: dict) -> str:
    ids = "-".join(str(r[x]) for x in ("set_id", "figure_id", "question_id"))
    return f"hallusionbench-{r['category']}-{r['subcategory']}-{ids}-v{r['visual_input']}"


def load_hallusionbench(
    images_dir: str | Path | None,
    *,
    categories: tuple[str, ...] = ("VD", "VS"),
    limit: int | None = None,
    seed: int = 0,
    questions: str | Path | None = None,
    check_images: bool = True,
    no_image: bool = False,
) -> list[VQAStimulus]:
    """HallusionBench stimuli with an image, loaded lazily from ``images_dir``.

    Parameters
    ----------
    images_dir: the unzipped ``hallusion_bench`` folder (holding ``VD/`` and ``VS/``).
    categories: keep these categories (``"VD"``, ``"VS"``).
    limit / seed: a seeded random subset (``rng_for(seed, "hallusionbench")``), file order kept.
    questions: a question file to use instead of the registered one (tests, local copies).
    check_images: check that every selected image exists before returning.
    no_image: also return the questions asked without an image (after the image questions), all
        of them, or with ``limit`` those of the question groups (category, subcategory, set_id,
        question_id) the subset drew; the image questions drawn are the same either way.

    Returns :class:`VQAStimulus` records: ``answer_type="yes_no"`` (gt 1 -> "yes", 0 -> "no"),
    ``region=None``, ``object_phrase`` by :func:`principal_noun_phrase`, ``image_id`` = the
    image path without extension (``"VS/chart/0_1"``), ``meta`` with category, subcategory,
    visual_input, set/figure/question ids, ``gt_answer_details`` and the question file sha256.

    Raises MissingExternalDataError (one line: what to download, where) for a missing folder
    or image; MissingSourceError / ChecksumError for the question file; ValueError naming the
    record and field for a malformed record or two questions under one stimulus id (naming it); :class:`~perceptbench.core.paths.PathEscapeError`
    (a ValueError naming the record) for a ``filename`` that is absolute or holds ``..``.
    """
    from ..seeding import file_sha256

    root = check_images_dir(images_dir, "HallusionBench", _HOW_TO_GET)
    if questions is None:
        qpath = resolve(source_file(QUESTION_FILE))
        sha = source_file(QUESTION_FILE).sha256
    else:
        qpath = Path(questions)
        if not qpath.is_file():
            raise FileNotFoundError(f"HallusionBench question file not found: {qpath}")
        sha = file_sha256(qpath)
    try:
        rows = json.loads(qpath.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{qpath}: not valid JSON: {e}") from None
    if not isinstance(rows, list):
        raise ValueError(f"{qpath}: expected a JSON list of records")
    bad_cat = set(categories) - {"VD", "VS"}
    if bad_cat:
        raise ValueError(f"HallusionBench categories must be VD and/or VS, got {sorted(bad_cat)}")
    picked, blind = [], []
    for n, r in enumerate(rows):
        where = f"{qpath} record {n}"
        if not isinstance(r, dict):
            raise ValueError(f"{where}: expected an object")
        for key in _REQUIRED:
            if key not in r:
                raise ValueError(f"{where}: missing field {key!r}")
        if r["category"] not in categories:
            continue
        if str(r["visual_input"]) == "0":
            blind.append((n, r))
            continue
        if not r["filename"]:
            raise ValueError(f"{where}: visual_input {r['visual_input']!r} but no filename")
        if str(r["gt_answer"]) not in ("0", "1"):
            raise ValueError(f"{where}: gt_answer must be '0' or '1', got {r['gt_answer']!r}")
        confine(root, str(r["filename"]).removeprefix("./"), f"{where}: filename")  # never outside images_dir
        picked.append((n, r))
    refuse_duplicate_ids([_stimulus_id(r) for _, r in picked + blind], f"HallusionBench question file {qpath}",
                         "category-subcategory-set_id-figure_id-question_id-visual_input")
    keep = seeded_subset(len(picked), limit, seed, "hallusionbench")
    chosen = [picked[k] for k in keep]
    if no_image:
        groups = {_question_group(r) for _, r in chosen}
        chosen += [(n, r) for n, r in blind if limit is None or _question_group(r) in groups]
    out = []
    for n, r in chosen:
        blind_q = str(r["visual_input"]) == "0"
        rel = None if blind_q else str(r["filename"]).removeprefix("./")
        path = None if blind_q else root / rel
        sid = _stimulus_id(r)
        out.append(VQAStimulus(
            stimulus_id=sid,
            image_id=f"no-image/{r['category']}/{r['subcategory']}/{r['set_id']}" if blind_q
            else str(Path(rel).with_suffix("")),
            load=partial(_no_image, sid) if blind_q else lazy_loader(path, source=f"{path} (HallusionBench record {n})"),
            question=str(r["question"]),
            answer="yes" if str(r["gt_answer"]) == "1" else "no",
            answer_type="yes_no",
            region=None,
            object_phrase=principal_noun_phrase(str(r["question"])),
            meta={"benchmark": "hallusionbench", "category": r["category"], "subcategory": r["subcategory"],
                  "visual_input": str(r["visual_input"]), "set_id": str(r["set_id"]),
                  "figure_id": str(r["figure_id"]), "question_id": str(r["question_id"]),
                  "gt_answer_details": r.get("gt_answer_details"), "image_file": rel, "record": n,
                  "question_file": QUESTION_FILE if questions is None else str(qpath),
                  "question_file_sha256": sha, **({"no_image": True} if blind_q else {})},
        ))
    if check_images:
        check_files_exist([root / s.meta["image_file"] for s in out if not s.meta.get("no_image")], "HallusionBench",
                          root, _HOW_TO_GET)
    return out


def _question_group(r: dict) -> tuple[str, str, str, str]:
    """A question's group across figures (HallusionBench ``utils.py``, ``get_eval_pair_all``: the
    key category, subcategory, set_id, question_id)."""
    return str(r["category"]), str(r["subcategory"]), str(r["set_id"]), str(r["question_id"])


def _no_image(stimulus_id: str):
    raise ValueError(f"{stimulus_id}: HallusionBench asks this question without an image (visual_input 0); "
                     "it is asked only under --condition image_withheld")
