"""The multi-seed summary (issue 24): runs that differ only in their seed, scored one by one
(their records are never merged: stimuli, splits and answer orders depend on the seed, so two
seeds' records are not the same trials), and per (task, respondent, metric) the mean over the
seeds, the spread (sample SD, min and max) and each seed's value.  This is the robustness over
splits and position orders a reviewer asks for.  No torch.

Runs must agree in everything but the seed: the same task ids (settings included) and, per
task, the same non-human respondents with the same model versions; anything else is refused
in one line naming the two runs and the difference.  Two runs of one seed are refused too
(`perceptbench merge` joins those)."""

from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from .core.rows import ScoreRow

__all__ = ["SeedRow", "SEEDS_SUMMARY_CSV", "seed_summary", "score_seed_runs", "write_seeds_summary"]

SEEDS_SUMMARY_CSV = "seeds_summary.csv"


@dataclass(frozen=True)
class SeedRow:
    """One (task_id, model, metric) over seeds: ``values`` {seed: value} (the seeds whose run has
    the row; NaN kept as NaN), ``mean``/``sd``/``low``/``high`` over the finite values (``sd`` the
    sample standard deviation, ddof = 1; NaN with fewer than 2 finite values), ``n_seeds`` the
    number of finite values."""

    task_id: str
    model: str
    metric: str
    values: dict
    mean: float
    sd: float
    low: float
    high: float
    n_seeds: int


def _identity(records) -> tuple[dict[str, dict[str, set]], int]:
    """({task_id: {model: {model_version}}} of the non-human respondents, the run's one seed)."""
    out: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    seeds = set()
    for r in records:
        seeds.add(r.run_meta.seed)
        if r.model_family != "human":
            out[r.task_id][r.model].add(r.run_meta.model_version)
        else:
            out[r.task_id]  # a task with human records only still counts
    if len(seeds) != 1:
        raise ValueError(f"records of seeds {sorted(seeds)} in one run; --across-seeds takes one seed per run")
    return {t: dict(m) for t, m in out.items()}, seeds.pop()


def score_seed_runs(paths: Sequence[str | os.PathLike]) -> dict[int, list[ScoreRow]]:
    """Score each run of ``paths`` (run directories or records files) on its own, with its own
    seed: {seed: score rows}, in the order given.

    Raises ValueError (one line) for fewer than two runs, two runs of one seed, or runs that
    differ in anything but the seed (task ids and settings, respondents, model versions);
    RecordError for an unreadable records file."""
    from .records import read_records
    from .runs import records_path
    from .scoring import score_records

    files = [records_path(p) for p in paths]
    if len(files) < 2:
        raise ValueError("--across-seeds needs two or more runs of different seeds")
    first_id, first_seed, first_file = None, None, None
    by_seed: dict[int, list[ScoreRow]] = {}
    for f in files:
        records = read_records(f)
        ident, seed = _identity(records)
        if seed in by_seed:
            raise ValueError(f"{f} and another run are both seed {seed}: --across-seeds compares seeds; join runs "
                             "of one seed with perceptbench merge")
        if first_id is None:
            first_id, first_seed, first_file = ident, seed, f
        else:
            _check_same(first_id, first_file, ident, f)
        by_seed[seed] = score_records(records)
    return by_seed


def _check_same(a: dict, fa: Path, b: dict, fb: Path) -> None:
    """Refuse two runs whose tasks, respondents or model versions differ (one line)."""
    for t in sorted(set(a) ^ set(b)):
        has, lacks = (fa, fb) if t in a else (fb, fa)
        raise ValueError(f"runs differ in more than the seed: {has} has task {t} (its settings included), {lacks} "
                         "does not; give runs of the same tasks and models")
    for t in sorted(a):
        for m in sorted(set(a[t]) ^ set(b[t])):
            has, lacks = (fa, fb) if m in a[t] else (fb, fa)
            raise ValueError(f"runs differ in more than the seed: {has} has model {m} on {t}, {lacks} does not; "
                             "give runs of the same tasks and models")
        for m in sorted(a[t]):
            if a[t][m] != b[t][m]:
                raise ValueError(f"runs differ in more than the seed: model {m} on {t} is version "
                                 f"{', '.join(sorted(a[t][m]))} in {fa} but {', '.join(sorted(b[t][m]))} in {fb}")


def seed_summary(by_seed: dict[int, list[ScoreRow]]) -> list[SeedRow]:
    """Per (task_id, model, metric) in the order of first appearance: the mean, sample SD
    (ddof = 1), min and max of the finite values over the seeds, and each seed's value."""
    values: dict[tuple, dict[int, float]] = {}
    for seed, rows in by_seed.items():
        for r in rows:
            v = r.value if isinstance(r.value, (int, float)) else float("nan")
            values.setdefault((r.task_id, r.model, r.metric), {})[seed] = float(v)
    out = []
    for (t, m, met), vs in values.items():
        fin = [v for v in vs.values() if math.isfinite(v)]
        k = len(fin)
        mean = sum(fin) / k if k else float("nan")
        sd = math.sqrt(sum((v - mean) ** 2 for v in fin) / (k - 1)) if k >= 2 else float("nan")
        out.append(SeedRow(t, m, met, vs, mean, sd, min(fin) if fin else float("nan"),
                           max(fin) if fin else float("nan"), k))
    return out


def write_seeds_summary(rows: list[SeedRow], seeds: Sequence[int], path: str | os.PathLike) -> Path:
    """Write ``rows`` as CSV to ``path`` (through a temporary file and a rename): task_id, model,
    metric, n_seeds, mean, sd, min, max, then ``seed_<s>`` per seed (empty where that seed's run
    has no such row)."""
    import io

    from .core.rundir import write_atomic
    from .scoring import csv_cell

    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["task_id", "model", "metric", "n_seeds", "mean", "sd", "min", "max", *[f"seed_{s}" for s in seeds]])
    for r in rows:
        w.writerow([r.task_id, r.model, r.metric, r.n_seeds, csv_cell(r.mean), csv_cell(r.sd), csv_cell(r.low),
                    csv_cell(r.high), *[csv_cell(r.values[s]) if s in r.values else "" for s in seeds]])
    return write_atomic(Path(path), buf.getvalue())
