"""Scoring at scale (issue 12 targets, measured here, never asserted in tests).

    python benchmarks/bench_scoring.py RUN_DIR [--sizes 100000 1000000] [--models45]

RUN_DIR is a finished default run (``perceptbench run --out RUN_DIR``).  Its model records are
copied under new model names (``copy-00001`` ...; trial ids renamed to match) beside its human
records until a file holds about N records; each size is scored in a fresh subprocess with
``perceptbench.scoring.score_file`` (the `perceptbench score` path) and its wall time and peak
RSS (``ru_maxrss`` of the child) printed.  ``--models45``: the battery x 45 models, timed after
imports.  Last, the vectorised bootstrap (one ``(n_draws, n)`` index matrix) against a per-draw
Python loop calling the same statistic on one row of that matrix, for two statistics: kappa_pairwise
(one model vs 10 observers, n = 120 stimuli, 2000 draws) and agreement B (n = 120, 1000 draws).
Prints one JSON object.  Targets: 10^6 records under 1 GiB and 60 s; 45 models under 2 s; the
bootstrap ratio >= 50x.

Measured 2026-11-29 on the shared 2-core build machine (load ~1.5), base run = the default run of
the battery on the default encoder (tests/fixtures/scale/default_multi.jsonl.gz, first 2440 lines):
  45 models (13,000 records): 1.51 s scoring after imports (1.44-1.51 s over three runs),
    332 MiB peak RSS -- target 2 s met.  Before the count-path kappa (same machine, same file):
    5.9 s, 798 MiB; code before issue 12: 9.1 s, 743 MiB.
  99,880 records (106 MiB JSONL): 10.9 s, 928 MiB peak RSS (before: 33.4 s, 1058 MiB; code
    before issue 12: 76.5 s, 1413 MiB).
  999,880 records (1061 MiB JSONL): 106.6 s, 7062 MiB peak RSS -- targets (60 s, 1 GiB) NOT met:
    one task's records are still held as record objects at a time.
  Bootstrap ratio, vectorised vs per-draw loop on the same statistic and the same draws:
    kappa_pairwise 3.2-5.5 ms vs 102-112 ms per 2000 draws, 19-32x over five runs (29x in the
    run above); B 0.4 ms vs 7 ms, 15-18x.  Target 50x NOT met: a per-draw call of either
    statistic costs ~50 us (B: ~7 us) of numpy call overhead, and the vectorised kappa_pairwise
    is bounded by building the (2000, 120) resample count matrix (offsets, bincount, cast: ~3
    passes over 240k elements, ~1 ms each on this machine).
Where time goes now (cProfile, 45 models): reading records (pydantic model_construct, the pyarrow
index) ~0.7 s; per-model bootstraps ~0.75 s.  Stacking models into one (models, draws) array per
task is not done; it would cut only the second part.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def replicate(run_dir: Path, out: Path, n_target: int) -> int:
    """Write ``out`` with the run's records plus copies of its model records; returns the count."""
    lines = (run_dir / "records.jsonl").read_text().splitlines()
    human, model = [], []
    for ln in lines:
        (human if '"model_family":"human"' in ln else model).append(ln)
    names = sorted({json.loads(ln)["model"] for ln in model})
    n = 0
    with open(out, "w") as f:
        for ln in human + model:
            f.write(ln + "\n")
        n = len(human) + len(model)
        k = 0
        while n + len(model) <= n_target:
            k += 1
            new = f"copy-{k:05d}"
            for ln in model:
                for m in names:  # rename model and trial id (task|stimulus|model|rep)
                    ln = ln.replace(f'|{m}|rep', f'|{new}|rep').replace(f'"model":"{m}"', f'"model":"{new}"')
                f.write(ln + "\n")
            n += len(model)
    return n


CHILD = r"""
import resource, sys, time
t0 = time.perf_counter()
from perceptbench.scoring import score_file
t1 = time.perf_counter()
rows = score_file(sys.argv[1], sys.argv[2])
t2 = time.perf_counter()
print(len(rows), t1 - t0, t2 - t1, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def score_child(records: Path) -> dict:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, str(records), str(records.with_name("scores.csv"))],
                       capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t
    n_rows, t_imp, t_score, rss = p.stdout.split()[-4:]
    return {"wall_s": round(wall, 2), "import_s": round(float(t_imp), 2), "score_s": round(float(t_score), 2),
            "peak_rss_mib": round(float(rss)), "score_rows": int(n_rows)}


def _ratio(stat, n: int, n_draws: int, seed: int, reps: int) -> dict:
    """Vectorised :func:`bootstrap` of ``stat`` vs a per-draw Python loop calling ``stat`` on one
    row of the same index matrix; the two intervals are checked equal to 1e-12."""
    from perceptbench.metrics.bootstrap import bootstrap, resample_indices

    t = time.perf_counter()
    for _ in range(reps):
        vec = bootstrap(stat, n, n_draws=n_draws, seed=seed)
    t_vec = (time.perf_counter() - t) / reps
    idx = resample_indices(n, n_draws, seed)
    t = time.perf_counter()
    loop = np.array([float(stat(idx[d][None, :])[0]) for d in range(n_draws)])
    low, high = np.percentile(loop[np.isfinite(loop)], [2.5, 97.5])
    t_loop = time.perf_counter() - t
    assert abs(low - vec.low) < 1e-12 and abs(high - vec.high) < 1e-12, (low, high, vec)
    return {"n": n, "draws": n_draws, "vectorised_ms": round(1e3 * t_vec, 3),
            "per_draw_loop_ms": round(1e3 * t_loop, 1), "ratio": round(t_loop / t_vec, 1)}


def bootstrap_ratio(seed: int = 0) -> dict:
    """Two statistics: kappa_pairwise (one model vs 10 observers, n = 120 stimuli, 2000 draws,
    the silhouette row the scorer bootstraps per model) and agreement B (n = 120, 1000 draws)."""
    from perceptbench.metrics.agreement import agreement_b
    from perceptbench.metrics.error_consistency import kappa_pairwise_mean_resampled

    rng = np.random.default_rng(0)
    n = 120
    observers = (rng.random((10, n)) < 0.75).astype(float)
    correct = (rng.random(n) < 0.7).astype(float)
    valid = rng.random(n) < 0.95
    match = rng.random(n) < 0.7
    kp = lambda i: kappa_pairwise_mean_resampled(correct, observers, valid, i)  # noqa: E731
    b = lambda i: agreement_b(match[i], valid[i])  # noqa: E731
    return {"kappa_pairwise": _ratio(kp, n, 2000, seed, 5), "B": _ratio(b, n, 1000, seed, 20)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--models45", action="store_true")
    a = ap.parse_args()
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        if a.models45:
            lines = (a.run_dir / "records.jsonl").read_text().count("\n")
            n_model = sum('"model_family":"human"' not in ln for ln in (a.run_dir / "records.jsonl").open())
            p = Path(tmp) / "m45.jsonl"
            n = replicate(a.run_dir, p, lines + 44 * n_model)
            out["models_45"] = {"records": n, **score_child(p)}
        for size in a.sizes:
            p = Path(tmp) / f"n{size}.jsonl"
            n = replicate(a.run_dir, p, size)
            out[f"records_{size}"] = {"records": n, "mib": round(p.stat().st_size / 2**20), **score_child(p)}
            p.unlink()
    out["bootstrap"] = bootstrap_ratio()
    out["cpu_s_self"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_utime, 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
