"""MMVP (Tong et al., CVPR 2024): 300 images in 150 "CLIP-blind" pairs, one two-option
question per image, read with the ``datasets`` library.

Formats read (field names as released):

* the hub dataset ``lmms-lab-eval/MMVP`` (default; sources registry ``tong2024-mmvp``: the
  hub copy ``MMVP/MMVP`` is reported to hold the images only, without the question text), or a
  local parquet copy in that format: columns ``Index`` (1-based), ``Question``, ``Options`` (``"(a) Open (b) Closed"``),
  ``Correct Answer`` (``"(a)"`` / ``"(b)"``) and ``image``;
* the release folder (github.com/tsb0601/MMVP): ``Questions.csv`` with the same columns (the
  index column may be spelled ``lndex``) and images ``MMVP Images/<Index>.jpg``.

Images ``2k-1`` and ``2k`` form pair ``k`` (``meta["pair"]``, 1-based).  A pattern column
(``Type`` / ``type`` / ``pattern``, one of the paper's nine visual patterns), when the copy has
one, is kept as ``meta["pattern"]``; the released ``Questions.csv`` and the hub copies have none,
and no public per-question map of the 300 questions to the nine patterns exists (the authors
categorised the questions for the paper's Fig. 6; the repository holds no such map: tsb0601/MMVP issue 3;
what was searched: docs/metrics.md, "MMVP visual patterns").  A map a user holds can be given as
a CSV file (``patterns=FILE``, :func:`read_pattern_map`); nothing here invents one.

Label corrections (``corrections=True``, the default): the answers of Index 99, 100, 279 and
280 are swapped in the release (github.com/tsb0601/MMVP issues 14 and 30; lmms-eval applies
the same four, EvolvingLMMs-Lab/lmms-eval issue 1018): :data:`LABEL_CORRECTIONS` sets them, the
released answer is kept in ``meta["answer_released"]`` and ``meta["label_corrected"]`` says
whether the loaded answer differs from it (the fix is idempotent on a copy already corrected).  MMVP has no region
annotations; the object phrase comes from :func:`perceptbench.external.phrases.principal_noun_phrase`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._common import check_files_exist, lazy_loader, refuse_duplicate_ids, seeded_subset
from ._hf import load_rows
from .base import VQAStimulus, option_letters
from .phrases import principal_noun_phrase

__all__ = ["HUB_ID", "LABEL_CORRECTIONS", "PATTERNS", "parse_options", "parse_answer", "read_pattern_map", "load_mmvp"]

PATTERNS = ("Orientation and Direction", "Presence of Specific Features", "State and Condition", "Quantity and Count",
            "Positional and Relational Context", "Color and Appearance", "Structural Characteristics", "Texts",
            "Viewpoint and Perspective")
"""MMVP's nine visual patterns (Tong et al. 2024 §3.2, Fig. 6), spelled as the MMVP-VLM release's
``Type`` categories (tsb0601/MMVP ``scripts/evaluate_vlm.py``)."""

HUB_ID = "lmms-lab-eval/MMVP"

LABEL_CORRECTIONS = {99: "B", 100: "A", 279: "B", 280: "A"}
"""Corrected answer letter by 1-based ``Index`` (elephant tusks 99/100: short/long; elderly
person 279/280: sitting/standing), from tsb0601/MMVP issues 14 and 30."""
_HOW_TO_GET = (f"with internet, omit source= to read {HUB_ID} from the Hugging Face hub (pip install "
               "'perceptbench[external]'); offline, download the MMVP benchmark folder (Questions.csv and "
               "'MMVP Images/', github.com/tsb0601/MMVP) or a parquet copy of the hub dataset and pass "
               "source=PATH")
_OPT = re.compile(r"\(([a-z])\)\s*(.*?)\s*(?=\([a-z]\)|$)", re.IGNORECASE | re.DOTALL)


def parse_options(options: str) -> tuple[str, ...]:
    """``"(a) Open (b) Closed"`` -> ``("Open", "Closed")``; raises ValueError when the labels
    are not (a), (b), ... in order."""
    found = _OPT.findall(str(options))
    letters = [a.lower() for a, _ in found]
    if len(found) < 2 or letters != [chr(ord("a") + i) for i in range(len(found))]:
        raise ValueError(f"MMVP options must read '(a) ... (b) ...', got {options!r}")
    return tuple(t.strip() for _, t in found)


def parse_answer(answer: str, n_options: int) -> str:
    """``"(a)"`` / ``"a"`` / ``"(b) Closed"`` -> ``"A"`` / ``"B"``; raises ValueError otherwise."""
    m = re.match(r"^\s*\(?([a-z])\)?(?:\s|$)", str(answer), re.IGNORECASE)
    letter = m.group(1).upper() if m else None
    if letter not in option_letters(n_options):
        raise ValueError(f"MMVP correct answer must be one of (a)..({chr(96 + n_options)}), got {answer!r}")
    return letter


def read_pattern_map(path: str | Path) -> dict[int, str]:
    """A user's map of MMVP questions to visual patterns: a CSV file with a header holding an
    index column (``Index`` / ``index`` / ``lndex``: the 1-based MMVP Index) and a pattern column
    (``Type`` / ``type`` / ``pattern``, one of :data:`PATTERNS`).  Returns ``{Index: pattern}``.

    Raises FileNotFoundError for a missing file; ValueError naming the file, line and value for a
    missing column, an index that is not an integer in 1..300 or is repeated, a pattern not among
    the nine, or the two questions of one pair (Index 2k-1, 2k) mapped to different patterns (a
    pattern belongs to a CLIP-blind pair)."""
    import csv

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"MMVP pattern map not found: {path}")
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        icol = next((c for c in ("Index", "index", "lndex") if c in cols), None)
        pcol = next((c for c in ("Type", "type", "pattern") if c in cols), None)
        if icol is None or pcol is None:
            raise ValueError(f"{path}: an MMVP pattern map needs an Index column and a Type (or pattern) column, "
                             f"got {cols}")
        out: dict[int, str] = {}
        for line, row in enumerate(reader, 2):
            try:
                index = int(str(row[icol]).strip())
            except ValueError:
                index = 0
            if not 1 <= index <= 300:
                raise ValueError(f"{path}:{line}: {icol} must be an MMVP Index 1..300, got {row[icol]!r}")
            if index in out:
                raise ValueError(f"{path}:{line}: {icol} {index} appears twice")
            pattern = str(row[pcol] or "").strip()
            if pattern not in PATTERNS:
                raise ValueError(f"{path}:{line}: {pcol} must be one of MMVP's nine patterns ({', '.join(PATTERNS)}), "
                                 f"got {pattern!r}")
            out[index] = pattern
    for index, pattern in out.items():
        other = index + 1 if index % 2 else index - 1
        if other in out and out[other] != pattern:
            raise ValueError(f"{path}: pair {(index + 1) // 2} (Index {min(index, other)}, {max(index, other)}) is "
                             f"mapped to two patterns, {out[min(index, other)]!r} and {out[max(index, other)]!r}")
    return out


def _field(row: dict, *names: str):
    for n in names:
        if n in row and row[n] is not None:
            return row[n]
    raise KeyError(names[0])


def load_mmvp(
    source: str | Path | None = None,
    *,
    split: str = "train",
    revision: str | None = None,
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    seed: int = 0,
    corrections: bool = True,
    patterns: str | Path | None = None,
) -> list[VQAStimulus]:
    """MMVP stimuli (two-option letter questions).

    Parameters
    ----------
    source: None = the hub dataset :data:`HUB_ID` (needs internet); else a local copy: a
        parquet file/folder in the hub's format, or the release folder with ``Questions.csv``.
    split / revision / cache_dir: passed to ``datasets.load_dataset`` for the hub.
    limit / seed: a seeded random subset (``rng_for(seed, "mmvp")``), dataset order kept.
    corrections: apply :data:`LABEL_CORRECTIONS` (module docstring).
    patterns: a CSV map of Index -> visual pattern (:func:`read_pattern_map`); its pattern is
        ``meta["pattern"]`` (and ``meta["pattern_map"]`` the file), replacing a pattern column of
        the source; a question the map leaves out has no pattern.

    Returns :class:`VQAStimulus` records: ``answer_type="letter"``, ``options`` parsed from
    ``Options``, ``answer`` ``"A"``/``"B"``, ``image_id = "mmvp-<Index>"``, ``region=None``,
    ``object_phrase`` by the phrase rule; ``meta`` with index, pair, the raw options/answer
    and where the data came from.

    Raises ImportError without ``datasets``; MissingExternalDataError (one line naming what to
    get and where) for a missing local copy, missing images or an unreachable hub; ValueError
    naming the row for a malformed row.
    """
    pattern_map = read_pattern_map(patterns) if patterns else None  # a bad map fails before the dataset loads
    root = Path(source).expanduser() if source is not None else None
    csv_release = root is not None and root.is_dir() and (root / "Questions.csv").is_file()
    ds, origin = load_rows(root / "Questions.csv" if csv_release else source, hub_id=HUB_ID, split=split,
                           revision=revision, cache_dir=cache_dir, benchmark="MMVP", how_to_get=_HOW_TO_GET)
    n_rows = len(ds)
    index_col = next((c for c in ("Index", "lndex", "index") if c in ds.column_names), None)
    if index_col is not None:  # every row, not only the subset: a repeated Index is a broken copy
        refuse_duplicate_ids(ds[index_col], f"MMVP ({origin})", "Index")
    keep = seeded_subset(n_rows, limit, seed, "mmvp")
    out, paths = [], []
    for i in keep:
        row = ds[i]
        where = f"MMVP row {i} ({origin})"
        try:
            index = int(_field(row, "Index", "lndex", "index"))
            question = str(_field(row, "Question", "question"))
            raw_opts = str(_field(row, "Options", "options"))
            raw_ans = str(_field(row, "Correct Answer", "answer"))
        except KeyError as e:
            raise ValueError(f"{where}: missing column {e.args[0]!r} (columns: {sorted(row)})") from None
        try:
            options = parse_options(raw_opts)
            answer = parse_answer(raw_ans, len(options))
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        released = answer
        if corrections and index in LABEL_CORRECTIONS:
            answer = LABEL_CORRECTIONS[index]
        pattern = next((row[k] for k in ("Type", "type", "pattern") if row.get(k) not in (None, "")), None)
        if pattern_map is not None:
            pattern = pattern_map.get(index)
        if csv_release:
            img = root / "MMVP Images" / f"{index}.jpg"  # type: ignore[operator]
            paths.append(img)
        else:
            img = row.get("image")
            if img is None:
                raise ValueError(f"{where}: no 'image' column")
            if isinstance(img, dict):  # undecoded datasets Image feature
                img = img.get("bytes") or img.get("path")
        out.append(VQAStimulus(
            stimulus_id=f"mmvp-{index:03d}",
            image_id=f"mmvp-{index:03d}",
            load=lazy_loader(img, source=f"MMVP image {index} ({origin})"),
            question=question,
            answer=answer,
            answer_type="letter",
            options=options,
            region=None,
            object_phrase=principal_noun_phrase(question),
            meta={"benchmark": "mmvp", "index": index, "pair": (index + 1) // 2, "options_raw": raw_opts,
                  "answer_raw": raw_ans, "answer_released": released, "label_corrected": answer != released,
                  "origin": origin, "revision": revision, **({"pattern": str(pattern)} if pattern else {}),
                  **({"pattern_map": str(patterns)} if pattern_map is not None else {})},
        ))
    if csv_release:
        check_files_exist(paths, "MMVP", root / "MMVP Images", _HOW_TO_GET)  # type: ignore[operator]
    refuse_duplicate_ids([s.stimulus_id for s in out], f"MMVP ({origin})", "stimulus id")
    return out
