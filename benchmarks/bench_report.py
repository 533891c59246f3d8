"""Wall time of `perceptbench report` over a run with many models (issue 10: under 10 s
for 45 models on the build machine).

Writes a synthetic run directory (perceptbench.testing.synthetic_runs: the real human
records of the Gestalt battery plus N synthetic VLMs on closure, mark colour, series
count and SalBench detection with 60 stimuli), scores it once (untimed; reported), then
times ``write_report`` end to end: reading records.jsonl and scores.json, the headline
rows, every paired difference (N(N-1)/2 pairs x task x metric), the figures and the page.

    PYTHONPATH=src PERCEPTBENCH_MIRROR=... python benchmarks/bench_report.py [--models 45] [--repeats 3]

The best of ``--repeats`` runs is reported (shared machine), and the median beside it, with
the process's CPU time and the load average (on a busy machine wall time exceeds CPU time).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, default=45)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from perceptbench.reports.html import write_report
    from perceptbench.scoring import score_file
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp) / "run"
        t0 = time.perf_counter()
        write_synthetic_run(d, [f"model-{i:02d}" for i in range(args.models)])
        t_write = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = score_file(d / "records.jsonl")
        t_score = time.perf_counter() - t0
        n_rec = sum(1 for _ in open(d / "records.jsonl"))
        times, cpu = [], []
        for _ in range(args.repeats):
            t0, c0 = time.perf_counter(), time.process_time()
            res = write_report([d], d / "report.html")
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        size = (d / "report.html").stat().st_size
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, python "
          f"{platform.python_version()}")
    print(f"run: {args.models} models, {n_rec} records, {len(rows)} score rows "
          f"(synthesised in {t_write:.1f} s, scored in {t_score:.1f} s, untimed)")
    print(f"report: {res.n_figures} figures, {size / 1e6:.2f} MB HTML")
    print(f"write_report: best {min(times):.2f} s, median {statistics.median(times):.2f} s over {len(times)} runs "
          f"(target < 10 s); CPU time of this process best {min(cpu):.2f} s")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs (shared machine)")


if __name__ == "__main__":
    main()
