"""Records -> score rows.  Reads nothing but trial records (no sources, no models, no
torch): re-scoring never re-runs a model."""

from __future__ import annotations

import csv
import json
import math
import os
from collections import defaultdict
from pathlib import Path

from .records import TrialRecord, read_records
from .tasks import get_task
from .tasks.base import ScoreRow


PARSER_MODES = ("default", "strict")


def _is_ambiguous(r: TrialRecord) -> bool:
    parse = (r.run_meta.model_extra or {}).get("parse") or {}
    return bool(parse.get("ambiguous"))


def apply_parser_mode(records: list[TrialRecord], mode: str) -> list[TrialRecord]:
    """``strict``: answers flagged ambiguous (naming several in-set options) become null
    responses; ``default``: records unchanged (the first option named counts)."""
    if mode not in PARSER_MODES:
        raise ValueError(f"parser mode {mode!r} not in {PARSER_MODES}")
    if mode == "default":
        return records
    return [r.model_copy(update={"response": None, "correct": None}) if _is_ambiguous(r) else r for r in records]


def _ambiguity_rows(task_id: str, records: list[TrialRecord], mode: str) -> list[ScoreRow]:
    by_model: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        if r.readout == "vlm_prompt":
            by_model[r.model].append(r)
    rows = []
    for m, rs in sorted(by_model.items()):
        n_amb = sum(_is_ambiguous(r) for r in rs)
        rows.append(ScoreRow(task_id, m, "n_ambiguous", float(n_amb), None, None, len(rs),
                             sum(r.response is None for r in rs),
                             f"answers naming more than one in-set option; parser mode {mode}"))
    return rows


def score_records(records: list[TrialRecord], seed: int | None = None, parser_mode: str = "default",
                  features_dir: str | os.PathLike | None = None,
                  families: dict[str, str] | None = None) -> list[ScoreRow]:
    """Score every task present in ``records``.

    The bootstrap seed is ``seed`` if given, else the records' ``run_meta.seed`` (which
    must be unique per task; ValueError otherwise).  ``parser_mode="strict"`` scores
    ambiguous VLM answers as null (see :func:`apply_parser_mode`).  VSI records also get the
    cross-task VSI analyses (:func:`vsi_analysis_rows`); ``features_dir`` holds the cached
    probe features (``<run>/features``) for the encoder-LLM gap rows; ``families``
    ({model: family}) tags model families for the same- vs cross-family agreement means."""
    records = apply_parser_mode(records, parser_mode)
    by_task: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task_id].append(r)
    rows: list[ScoreRow] = []
    for task_id in sorted(by_task):
        recs = by_task[task_id]
        s = seed
        if s is None:
            seeds = {r.run_meta.seed for r in recs}
            if len(seeds) != 1:
                raise ValueError(f"{task_id}: records carry several seeds {sorted(seeds)}; pass --seed")
            s = seeds.pop()
        rows += get_task(task_id).score(recs, s)
        rows += _ambiguity_rows(task_id, recs, parser_mode)
    rows += vsi_analysis_rows(records, seed, features_dir, families)
    return rows


def vsi_analysis_rows(records: list[TrialRecord], seed: int | None = None,
                      features_dir: str | os.PathLike | None = None,
                      families: dict[str, str] | None = None) -> list[ScoreRow]:
    """Seed 002 §2.3-§4 analyses over every VSI record (all tasks and models together): empty
    when there is none.  Seed: ``seed``, else the VSI records' unique seed (ValueError if several).
    Probe rows need ``features_dir`` (read with numpy; no torch)."""
    from .metrics.vsi import vsi_samples

    samples = vsi_samples(records)
    if not samples:
        return []
    from .metrics.vsi_analysis import score_vsi_analyses
    from .metrics.vsi_probe import ProbeFeatures

    s = seed
    if s is None:
        tasks = {x.task_id for x in samples}
        seeds = {r.run_meta.seed for r in records if r.task_id in tasks}
        if len(seeds) != 1:
            raise ValueError(f"VSI records carry several seeds {sorted(seeds)}; pass --seed")
        s = seeds.pop()
    probe = ProbeFeatures(features_dir) if features_dir is not None and Path(features_dir).is_dir() else None
    return score_vsi_analyses(samples, seed=s, probe=probe, families=families)


def _fmt(x) -> str:
    if x is None:
        return ""
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        return repr(round(x, 6))
    return str(x)


def write_scores(rows: list[ScoreRow], csv_path: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``scores.csv`` (the tidy table) and ``scores.json`` beside it (the same rows
    plus note, bootstrap draws/drops and seed).  Both are written to a temporary file and
    renamed, so a crash never leaves a half-written table."""
    csv_path = Path(csv_path)
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = csv_path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(ScoreRow.CSV_COLUMNS)
        for r in rows:
            w.writerow([_fmt(getattr(r, c)) for c in ScoreRow.CSV_COLUMNS])
    os.replace(tmp, csv_path)
    json_path = csv_path.with_suffix(".json")
    tmpj = json_path.with_suffix(".json.tmp")

    def clean(v):
        return None if isinstance(v, float) and math.isnan(v) else v

    tmpj.write_text(json.dumps([{k: clean(v) for k, v in vars(r).items()} for r in rows], indent=1))
    os.replace(tmpj, json_path)
    return csv_path, json_path


def score_file(records_path: str | os.PathLike, out_csv: str | os.PathLike | None = None,
               seed: int | None = None, parser_mode: str = "default",
               families: dict[str, str] | None = None) -> list[ScoreRow]:
    """Read, validate and score a records file; write scores.csv/json next to it (or to out_csv).
    VSI probe features are read from the ``features/`` folder beside the records."""
    records_path = Path(records_path)
    rows = score_records(read_records(records_path), seed, parser_mode, records_path.with_name("features"), families)
    write_scores(rows, out_csv or records_path.with_name("scores.csv"))
    return rows
