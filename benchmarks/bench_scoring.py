"""Scoring at scale against a bare parse (issue 25; targets from issue 12), measured here,
never asserted in tests.

    PYTHONPATH=src PERCEPTBENCH_MIRROR=... python benchmarks/bench_scoring.py \
        [--sizes 100000 1000000] [--repeats 5] [--keep DIR] [--before-src OTHER/src] [--no-bootstrap | --ratio-only]

Method.  Records: mixed files of about N records written by ``benchmarks/mixed_records.py``
(the Gestalt battery, the chart-category task and SalBench detection: real human records and
synthetic VLM answers; plus the VSI pin run's records under every model; models added until
the file holds N records).  For each size, ``--repeats`` rounds, each running A then B in
fresh processes: A = a bare parse (``python -c``: ``json.loads`` of every line, nothing
kept), B = whole-process ``perceptbench score DIR`` (``python -m perceptbench.cli score``:
imports, reading and checking, scoring every task and the suite analyses, writing
scores.csv/json, printing the table).  CPU time (user + system) of each child comes from
``os.wait4`` (its own rusage, children included), wall time beside it, peak RSS its
``ru_maxrss``; the load average is recorded at each round's start.  Printed: median and
range (min-max) over rounds of B's CPU and wall time, of A's CPU time, of B/A in CPU time
(per round), of the peak RSS and of the load; with two sizes, the growth of B's median CPU
time against the growth in records (linear = equal).  Last, the vectorised bootstrap vs
per-draw loops (kappa_pairwise one model and 45 models, agreement B), rounds interleaved,
CPU time (``time.process_time``), the warm vectorised figure the mean of 20 calls.

Targets (issue 25): 10^6 mixed records scored in <= 3x the bare parse's CPU time, growth within
10% of linear from 10^5 to 10^6, peak RSS < 1 GiB.  Figures measured: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


BARE = r"""
import json, sys
with open(sys.argv[1], "rb") as f:
    for line in f:
        json.loads(line)
"""


def score_rounds(records: Path, repeats: int, before_src: Path | None = None) -> dict:
    """``repeats`` interleaved rounds of A = a bare parse (a fresh ``python`` that runs
    ``json.loads`` on every line) and B = whole-process ``perceptbench score`` of the same file
    (``python -m perceptbench.cli score DIR``: imports, reading, scoring, writing, the table
    printed); with ``before_src``, C = the same command on that src folder's code (``PYTHONPATH``,
    scores written to a copy's folder beside), in the same rounds; CPU time of each child from
    ``os.wait4``; per round B/A (and C/A, B/C) in CPU time."""
    from _measure import interleave, ratios, run_child, summary

    d = records.parent
    arms = {"bare_parse": lambda: run_child([sys.executable, "-c", BARE, str(records)]),
            "score": lambda: run_child([sys.executable, "-m", "perceptbench.cli", "score", str(d)])}
    if before_src is not None:
        other = d.parent / f"{d.name}-before"
        other.mkdir(exist_ok=True)
        if not (other / "records.jsonl").exists():
            (other / "records.jsonl").symlink_to(records.resolve())
        env = {**os.environ, "PYTHONPATH": str(before_src.resolve())}
        arms["before"] = lambda: run_child([sys.executable, "-m", "perceptbench.cli", "score", str(other)], env=env)
    rounds = interleave(arms, repeats)
    extra = {} if before_src is None else {
        "before_cpu_s": summary([r["before"]["cpu_s"] for r in rounds], 2),
        "before_wall_s": summary([r["before"]["wall_s"] for r in rounds], 2),
        "before_over_bare_cpu": summary(ratios(rounds, "bare_parse", "before"), 2),
        "score_over_before_cpu": summary(ratios(rounds, "before", "score"), 3),
        "before_peak_rss_mib": summary([r["before"]["peak_rss_mib"] for r in rounds], 0)}
    return {**extra, "rounds": [{k: ({m: round(x, 2) for m, x in v.items()} if isinstance(v, dict) else v)
                        for k, v in r.items()} for r in rounds],
            "score_cpu_s": summary([r["score"]["cpu_s"] for r in rounds], 2),
            "score_wall_s": summary([r["score"]["wall_s"] for r in rounds], 2),
            "bare_cpu_s": summary([r["bare_parse"]["cpu_s"] for r in rounds], 2),
            "score_over_bare_cpu": summary(ratios(rounds, "bare_parse", "score"), 2),
            "peak_rss_mib": summary([r["score"]["peak_rss_mib"] for r in rounds], 0),
            "load": summary([r["load"] for r in rounds], 1)}


def _ratio(vec_stat, loop_stats: dict, n: int, n_draws: int, seed: int, reps: int) -> dict:
    """Vectorised :func:`bootstrap` of ``vec_stat`` (the whole (n_draws, n) index matrix at
    once) vs per-draw Python loops, each calling a per-draw form of the same statistic on one
    row of the same index matrix; every loop's interval is checked equal to 1e-12.  ``reps``
    interleaved rounds, each: one cold vectorised call (caches cleared: the index and count
    matrices drawn again), 20 warm calls (their mean), then each loop once; all in CPU time
    (``time.process_time``).  Ratios per round against the fastest loop of that round;
    median and range over rounds, with the load average at each round's start."""
    from _measure import summary

    from perceptbench.metrics import bootstrap as bmod
    from perceptbench.metrics.bootstrap import bootstrap, resample_indices

    idx = resample_indices(n, n_draws, seed)
    warm, cold, loop_best, per_loop, loads = [], [], [], {k: [] for k in loop_stats}, []
    for _ in range(reps):
        loads.append(os.getloadavg()[0])
        bmod.DRAWS.indices.clear()  # cold: the index and count matrices drawn again
        bmod.DRAWS._counts.clear()
        c = time.process_time()
        vec = bootstrap(vec_stat, n, n_draws=n_draws, seed=seed)
        cold.append(time.process_time() - c)
        c = time.process_time()
        for _ in range(20):
            vec = bootstrap(vec_stat, n, n_draws=n_draws, seed=seed)
        warm.append((time.process_time() - c) / 20)
        best = float("inf")
        for name, stat in loop_stats.items():
            c = time.process_time()
            loop = np.array([float(stat(idx[d])) for d in range(n_draws)])
            low, high = np.percentile(loop[np.isfinite(loop)], [2.5, 97.5])
            t = time.process_time() - c
            assert abs(low - vec.low) < 1e-12 and abs(high - vec.high) < 1e-12, (name, low, high, vec)
            per_loop[name].append(1e3 * t)
            best = min(best, t)
        loop_best.append(best)
    return {"n": n, "draws": n_draws, "repeats": reps, "vectorised_cpu_ms": summary([1e3 * t for t in warm]),
            "vectorised_cold_cpu_ms": summary([1e3 * t for t in cold]),
            "per_draw_loop_cpu_ms": {k: summary(v, 1) for k, v in per_loop.items()},
            "ratio_cpu": summary([lb / w for lb, w in zip(loop_best, warm)], 1),
            "ratio_cold_cpu": summary([lb / c for lb, c in zip(loop_best, cold)], 1),
            "load": summary(loads, 1)}


def _ratio_models(n_models: int, seed: int = 0, reps: int = 5) -> dict:
    """kappa_pairwise of ``n_models`` models on the same 120 stimuli and 2000 shared draws:
    one :func:`bootstrap_counts` call (all draws x models at once) vs the per-draw loop run
    for each model; intervals checked equal to 1e-12.  ``reps`` interleaved rounds (one
    vectorised call, then the loops), CPU time; ratio per round, median and range."""
    from _measure import summary

    from perceptbench.metrics.bootstrap import bootstrap_counts, resample_indices
    from perceptbench.metrics.error_consistency import kappa_pairwise_counts, kappa_pairwise_mean

    rng = np.random.default_rng(1)
    n = 120
    observers = (rng.random((10, n)) < 0.75).astype(float)
    correct = (rng.random((n_models, n)) < 0.7).astype(float)
    valid = rng.random((n_models, n)) < 0.95
    idx = resample_indices(n, 2000, seed)
    vec_t, loop_t, loads = [], [], []
    for _ in range(reps):
        loads.append(os.getloadavg()[0])
        c = time.process_time()
        res = bootstrap_counts(lambda w: kappa_pairwise_counts(w, correct, observers, valid), n, n_draws=2000,
                               seed=seed)
        vec_t.append(time.process_time() - c)
        c = time.process_time()
        for m in range(n_models):
            loop = np.array([float(kappa_pairwise_mean(correct[m, i], observers[:, i], valid[m, i])) for i in idx])
            low, high = np.percentile(loop[np.isfinite(loop)], [2.5, 97.5])
            assert abs(low - res[m].low) < 1e-12 and abs(high - res[m].high) < 1e-12
        loop_t.append(time.process_time() - c)
    return {"models": n_models, "n": n, "draws": 2000, "repeats": reps,
            "vectorised_cpu_ms": summary([1e3 * t for t in vec_t], 1),
            "per_draw_loop_cpu_ms": summary([1e3 * t for t in loop_t], 1),
            "ratio_cpu": summary([lt / vt for lt, vt in zip(loop_t, vec_t)], 1), "load": summary(loads, 1)}


def bootstrap_ratio(seed: int = 0, reps: int = 5) -> dict:
    """Two statistics: kappa_pairwise (one model vs 10 observers, n = 120 stimuli, 2000 draws,
    the silhouette row the scorer bootstraps per model) and agreement B (n = 120, 1000 draws).
    Vectorised: the count forms the scorer uses (:func:`kappa_pairwise_counts`,
    :func:`masked_mean_counts` on the resample counts).  Loops: the natural per-draw forms on one gathered
    resample (``kappa_pairwise_mean(correct[i], observers[:, i], valid[i])``,
    ``agreement_b(match[i], valid[i])``) and, for kappa, the count form called per draw (the
    loop this benchmark used before); the fastest loop is the reference.  Last, 45 models at
    once vs the per-draw loop per model."""
    from perceptbench.metrics.agreement import agreement_b, masked_mean_counts
    from perceptbench.metrics.bootstrap import resample_counts
    from perceptbench.metrics.error_consistency import kappa_pairwise_counts, kappa_pairwise_mean

    def kappa_pairwise_resampled(i):
        return kappa_pairwise_counts(resample_counts(i), correct[None], observers, valid[None])[:, 0]

    rng = np.random.default_rng(0)
    n = 120
    observers = (rng.random((10, n)) < 0.75).astype(float)
    correct = (rng.random(n) < 0.7).astype(float)
    valid = rng.random(n) < 0.95
    match = rng.random(n) < 0.7
    kp = {"gather": lambda i: kappa_pairwise_mean(correct[i], observers[:, i], valid[i]),
          "count_form_per_draw": lambda i: kappa_pairwise_resampled(i[None])[0]}
    return {"kappa_pairwise": _ratio(kappa_pairwise_resampled,
                                     kp, n, 2000, seed, reps),
            "B": _ratio(lambda i: masked_mean_counts(resample_counts(i), match[None], valid[None])[:, 0],
                        {"gather": lambda i: agreement_b(match[i], valid[i])}, n, 1000, seed, reps),
            "kappa_pairwise_45_models": _ratio_models(45, seed, reps)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[100_000, 1_000_000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vsi", type=Path, default=Path("/work/pin/vsi"),
                    help="a VSI run whose records join every model (mixed_records.py)")
    ap.add_argument("--keep", type=Path, help="write the mixed files here (and reuse them) instead of a temp dir")
    ap.add_argument("--no-bootstrap", action="store_true", help="skip the bootstrap ratios")
    ap.add_argument("--ratio-only", action="store_true", help="only the bootstrap ratios")
    ap.add_argument("--before-src", type=Path, help="a third arm: `score` on this src folder's code (PYTHONPATH)")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from mixed_records import write_mixed

    out: dict = {"cpus": os.cpu_count(), "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    with tempfile.TemporaryDirectory() as tmp:
        base = a.keep or Path(tmp)
        for size in ([] if a.ratio_only else a.sizes):
            d = base / f"mixed-{size}"
            d.mkdir(parents=True, exist_ok=True)
            p = d / "records.jsonl"
            if not p.exists():
                write_mixed(p, size, a.vsi)
            n = sum(1 for _ in open(p, "rb"))
            out[f"records_{size}"] = {"records": n, "mib": round(p.stat().st_size / 2**20),
                                      **score_rounds(p, a.repeats, a.before_src)}
            print(json.dumps({f"records_{size}": out[f"records_{size}"]}), file=sys.stderr, flush=True)
        sizes = [k for k in out if k.startswith("records_")]
        if len(sizes) >= 2:  # growth of the score's CPU time against the growth in records
            lo, hi = out[sizes[0]], out[sizes[-1]]
            out["growth"] = {"records": round(hi["records"] / lo["records"], 2),
                             "score_cpu": round(hi["score_cpu_s"]["median"] / lo["score_cpu_s"]["median"], 2),
                             "bare_cpu": round(hi["bare_cpu_s"]["median"] / lo["bare_cpu_s"]["median"], 2)}
    if not a.no_bootstrap:
        out["bootstrap"] = bootstrap_ratio(reps=a.repeats)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
