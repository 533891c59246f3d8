"""SalBench synthetic stimuli are generated lazily: time of ``render --limit 1`` and peak
memory of a full SalBench run on the default encoder.

    python benchmarks/bench_salbench_lazy.py [--task salbench.detection.syn] [--n 2514] [--skip-run]

1. ``perceptbench render TASK --limit 1`` in a subprocess: wall time (s).  Before lazy
   generation, the whole set (2,514 test + 300 probe-train arrays) was rendered first.
2. ``perceptbench run --task TASK@n=N --model efficientnet-lite0`` in a subprocess: wall time
   and peak resident memory (ru_maxrss of the child, MiB).  Default N = 2514, the full P3
   composition (plus the 300 probe-train arrays of the linear probe).

Prints a JSON summary.  Timings depend on the machine and its load; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PERCEPTBENCH_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def _child(cmd: list[str]) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit code, output tail) of one CLI subprocess."""
    code = ("import resource, subprocess, sys, json, time; t=time.perf_counter(); "
            "p=subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(json.dumps([time.perf_counter()-t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024, "
            "p.returncode, (p.stdout+p.stderr)[-600:]]))")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, check=True)
    wall, rss, rc, tail = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, rss, rc, tail


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="salbench.detection.syn")
    ap.add_argument("--n", type=int, default=2514)
    ap.add_argument("--skip-run", action="store_true")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "perceptbench.cli"]
    res: dict = {"task": args.task, "cpu_count": os.cpu_count(), "load_avg_1min": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        wall, rss, rc, tail = _child(cli + ["render", args.task, "--limit", "1", "--out", f"{tmp}/render"])
        assert rc == 0, tail
        res["render_limit1_s"] = round(wall, 2)
        res["render_limit1_peak_rss_mib"] = round(rss)
        if not args.skip_run:
            task = args.task if args.n == 2514 else f"{args.task}@n={args.n}"
            wall, rss, rc, tail = _child(cli + ["run", "--task", task, "--model", "efficientnet-lite0", "--out",
                                                f"{tmp}/run", "--no-progress"])
            assert rc == 0, tail
            n = sum(1 for _ in open(f"{tmp}/run/records.jsonl"))
            res.update(run_task=task, run_records=n, run_s=round(wall, 1), run_peak_rss_mib=round(rss))
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
