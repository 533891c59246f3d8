"""Speed of the VSI analyses (issue 9 targets, measured here, never asserted in tests).

    python benchmarks/bench_vsi_analyses.py [--n 500] [--n-perm 100000]

1. Permutation Spearman: 15 model pairs x n samples x n_perm shuffles (target < 10 s on the
   2-core build machine).
2. ``score_vsi_analyses`` on a synthetic 6-model x 4-benchmark x 2-perturbation grid at sigma 20
   (n samples per cell, 10^5 shuffles per model pair; target < 60 s).
Each of the three calls (untied pairs, tied pairs, the grid) is timed ``--repeats`` times (default
5), the three interleaved with the order alternating between repeats (``benchmarks/_measure.py``:
CPU = ``time.process_time``, every thread numpy uses; wall; the 1-minute load average per timing);
printed: median [min-max] of CPU and wall seconds per call and the load range.  The build
machine is shared: wall time under load overstates the cost, CPU time counts the work.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from perceptbench.metrics.permutation import permutation_spearman_many
from perceptbench.vsi.analysis import score_vsi_analyses
from perceptbench.vsi.samples import VSISample

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure_in_process as _m  # noqa: E402


def grid(n: int, models: int = 6, benchmarks: int = 4, seed: int = 0) -> list[VSISample]:
    rng = np.random.default_rng(seed)
    out = []
    for b in range(benchmarks):
        latent = rng.random(n)
        for m in range(models):
            wrong = rng.random(n) < 0.1 + 0.4 * (latent < 0.3)
            mp = rng.uniform(0.3, 1.0, n)
            vc = rng.integers(0, 101, n)
            for pert in ("region", "whole"):
                vsi = 0.01 * np.exp(4 * latent + rng.normal(0, 0.7, n))
                for i in range(n):
                    out.append(VSISample(f"vsi.bench{b}", f"bench{b}", f"model{m}", f"fam{m // 2}", f"s{i:04d}",
                                         f"img{i // 2}", pert, 20.0, float(vsi[i]), bool(vsi[i] > 0.3),
                                         None if i % 50 == 0 else bool(not wrong[i]), float(mp[i]),
                                         None if i % 20 == 1 else float(vc[i]), "exact"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--n-perm", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    rng = np.random.default_rng(1)
    lat = rng.random(a.n)
    xs = [lat + rng.normal(0, 1, a.n) for _ in range(6)]
    pairs = [(xs[i], xs[j]) for i in range(6) for j in range(i + 1, 6)]
    tied = [(np.round(x, 1), np.round(y, 1)) for x, y in pairs]  # ties: the per-pair path
    samples = grid(a.n)
    runs = _m.interleave({"permutation, 15 pairs": lambda: permutation_spearman_many(pairs, n_perm=a.n_perm),
                          "permutation, 15 tied pairs": lambda: permutation_spearman_many(tied, n_perm=a.n_perm),
                          "grid 6x4x2": lambda: score_vsi_analyses(samples, seed=0, n_perm=a.n_perm)}, a.repeats)
    print(f"n={a.n} samples, n_perm={a.n_perm}, grid {len(samples)} samples -> "
          f"{len(runs['grid 6x4x2'][0]['value'])} rows; {a.repeats} interleaved repeats (median [range]):")
    _m.report(runs)


if __name__ == "__main__":
    main()
