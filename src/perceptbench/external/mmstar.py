"""MMStar (Chen et al., NeurIPS 2024): 1,500 vision-indispensable multiple-choice questions,
read with the ``datasets`` library.

Format read: the hub dataset ``Lin-Chen/MMStar`` (sources registry ``chen2024-mmstar``,
split ``val``; its ``mmstar.parquet``) or a local copy of that parquet: columns ``index``,
``question`` (the stem, then ``"\\nOptions: A: ..., B: ..., C: ..., D: ..."``), ``image``,
``answer`` (a letter), ``category``, ``l2_category``, ``meta_info``.

MMStar is measured with whole-image perturbation only (seed 002 §2 / Table: "MMStar uses
whole-image VSI because diagram- and chart-style layouts make localized region detection
unreliable"): ``region=None`` and ``object_phrase=None`` for every stimulus, and
``meta["whole_image_only"] = True``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._common import lazy_loader, refuse_duplicate_ids, seeded_subset
from ._hf import load_rows
from .base import VQAStimulus, option_letters

__all__ = ["HUB_ID", "split_question", "load_mmstar"]

HUB_ID = "Lin-Chen/MMStar"
_HOW_TO_GET = (f"with internet, omit source= to read {HUB_ID} from the Hugging Face hub (pip install "
               "'perceptbench[external]'); offline, download its mmstar.parquet and pass source=PATH")


def split_question(text: str) -> tuple[str, tuple[str, ...]]:
    """``"Stem?\\nOptions: A: x, B: y"`` -> ``("Stem?", ("x", "y"))``.

    Options are cut at ``", B:"``, ``", C:"``, ... in letter order, so commas inside an option
    are kept.  Raises ValueError when there is no ``Options:`` block or fewer than two options.
    """
    head, sep, tail = str(text).rpartition("Options:")
    if not sep:
        raise ValueError(f"MMStar question has no 'Options:' block: {text[:80]!r}")
    m = re.match(r"\s*A\s*:\s*", tail)
    if not m:
        raise ValueError(f"MMStar options must start with 'A:', got {tail[:40]!r}")
    rest, opts = tail[m.end():], []
    for letter in option_letters(26)[1:]:
        nxt = re.search(rf",\s*{letter}\s*:\s*", rest)
        if not nxt:
            break
        opts.append(rest[: nxt.start()].strip())
        rest = rest[nxt.end():]
    opts.append(rest.strip())
    if len(opts) < 2:
        raise ValueError(f"MMStar question has fewer than two options: {tail[:80]!r}")
    return head.strip(), tuple(opts)


def load_mmstar(
    source: str | Path | None = None,
    *,
    split: str = "val",
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    categories: tuple[str, ...] | None = None,
    limit: int | None = None,
    seed: int = 0,
) -> list[VQAStimulus]:
    """MMStar stimuli (letter questions, whole-image perturbation only).

    Parameters
    ----------
    source: None = the hub dataset :data:`HUB_ID` at ``revision`` (default: the registry's pin;
        needs internet); else a local parquet copy (file or folder).
    split / cache_dir: passed to ``datasets.load_dataset``.
    categories: keep only these ``category`` values (e.g. ``("math", "science & technology")``).
    limit / seed: a seeded random subset (``rng_for(seed, "mmstar")``), dataset order kept.

    Returns :class:`VQAStimulus` records: ``question`` = the stem (text before ``Options:``),
    ``options`` parsed in letter order, ``answer`` the letter, ``image_id = "mmstar-<index>"``,
    ``region=None``, ``object_phrase=None``; ``meta`` with index, category, l2_category,
    meta_info, the raw question, ``whole_image_only=True`` and the origin.

    Raises ImportError without ``datasets``; MissingExternalDataError (one line naming what to
    get and where); ValueError naming the row for a malformed row, and naming the ids for a
    repeated ``index``.
    """
    from ..sources import get_source

    if source is None and revision is None:
        revision = get_source("chen2024-mmstar").hub_revision
    ds, origin = load_rows(source, hub_id=HUB_ID, split=split, revision=revision, cache_dir=cache_dir,
                           benchmark="MMStar", how_to_get=_HOW_TO_GET)
    idx = list(range(len(ds)))
    if "index" in ds.column_names:  # every row: two stimuli under one id would load as one
        refuse_duplicate_ids([int(v) for v in ds["index"] if v is not None], f"MMStar ({origin})", "index")
    if categories is not None:
        cats = set(categories)
        if "category" not in ds.column_names:
            raise ValueError(f"MMStar ({origin}): no 'category' column to filter on (columns: {ds.column_names})")
        idx = [i for i, c in enumerate(ds["category"]) if c in cats]
    keep = [idx[j] for j in seeded_subset(len(idx), limit, seed, "mmstar")]
    out = []
    for i in keep:
        row = ds[i]
        where = f"MMStar row {i} ({origin})"
        for key in ("index", "question", "answer", "image"):
            if row.get(key) is None:
                raise ValueError(f"{where}: missing field {key!r} (columns: {sorted(row)})")
        try:
            stem, options = split_question(row["question"])
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        answer = str(row["answer"]).strip().upper()
        img = row["image"]
        if isinstance(img, dict):
            img = img.get("bytes") or img.get("path")
        index = int(row["index"])
        out.append(VQAStimulus(
            stimulus_id=f"mmstar-{index:04d}",
            image_id=f"mmstar-{index:04d}",
            load=lazy_loader(img, source=f"MMStar image {index} ({origin})"),
            question=stem,
            answer=answer,
            answer_type="letter",
            options=options,
            region=None,
            object_phrase=None,
            meta={"benchmark": "mmstar", "index": index, "category": row.get("category"),
                  "l2_category": row.get("l2_category"), "meta_info": row.get("meta_info"),
                  "question_raw": row["question"], "whole_image_only": True, "origin": origin,
                  "revision": revision},
        ))
    return out
