"""What a report is written from: the trial records and score rows of one or more run
directories (no torch, no model, no source files).

One run directory: ``records.jsonl`` and, when it is at least as new as the records,
``scores.json`` (else the records are scored again, which reads records only).  Several
run directories: the records are merged by trial id by :func:`perceptbench.runs.load_runs`
(identical duplicates collapse; conflicting records and different seeds are refused) and
scored together, so every model is bootstrapped on the same resamples (paired)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..records import RecordError, TrialRecord, read_records
from ..runs import load_runs, records_path
from ..core.rows import ScoreRow
from ..core.rundir import RunDir


@dataclass
class ReportData:
    """``run_dirs``: the directories read; ``records``: every trial record (models and
    humans); ``scores``: the score rows; ``scores_source``: where the rows came from
    (``scores.json`` path or ``rescored from records``); ``models``: the declared model metadata
    (``run.json``'s ``models`` of each run, later runs winning for a model declared twice; ``{}``
    when none is declared)."""

    run_dirs: list[Path]
    records: list[TrialRecord]
    scores: list[ScoreRow]
    scores_source: str
    models: dict = field(default_factory=dict)


def _read_scores_json(path: Path) -> list[ScoreRow]:
    try:
        raw = json.loads(path.read_text())
        return [ScoreRow(**{k: (float("nan") if k == "value" and v is None else v) for k, v in d.items()})
                for d in raw]
    except (json.JSONDecodeError, TypeError) as e:
        raise RecordError(f"{path}: not a scores.json written by perceptbench ({e})") from None


def load_report_data(paths: list[str | os.PathLike]) -> ReportData:
    """Records and score rows of the run directories ``paths`` (each a directory holding
    ``records.jsonl`` or the records file itself).

    Raises RecordError (file named) for a missing, invalid or empty records file or scores.json,
    ValueError for run directories that cannot be merged."""
    dirs = [Path(p) for p in paths]
    if not dirs:
        raise ValueError("no run directory given")
    models: dict = {}
    for d in dirs:
        models.update(RunDir.beside(records_path(d)).declared_models())
    if len(dirs) == 1:
        rp = records_path(dirs[0])
        records = read_records(rp)
        if not records:  # as score, export and merge refuse it: a page of nothing is no report
            raise RecordError(f"{rp}: holds no trial records (empty file); nothing to report")
        sj = RunDir.beside(rp).scores_json
        if sj.exists() and sj.stat().st_mtime >= rp.stat().st_mtime:
            return ReportData(dirs, records, _read_scores_json(sj), str(sj), models)
    else:
        records = load_runs(dirs)
    from ..scoring import score_records
    from ..vsi.judge import judgments_path, read_judgments

    # one run: a judge's verdicts beside its records are part of its scores (several merged: none)
    judgments = read_judgments(judgments_path(RunDir.beside(records_path(dirs[0])).root)) if len(dirs) == 1 else None
    return ReportData(dirs, records, score_records(records, judgments=judgments), "rescored from records", models)


def finite(x) -> bool:
    """True for a real, finite number (None and NaN are not)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
