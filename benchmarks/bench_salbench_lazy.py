"""SalBench synthetic stimuli are generated lazily: time of ``render --limit 1`` and peak
memory of a full SalBench run on the default encoder.

    python benchmarks/bench_salbench_lazy.py [--task salbench.detection.syn] [--n 2514] [--skip-run]
                                             [--batch-size B]

1. ``perceptbench render TASK --limit 1`` in a subprocess: wall time (s).  Before lazy
   generation, the whole set (2,514 test + 300 probe-train arrays) was rendered first.
2. ``perceptbench run --task TASK@n=N --model efficientnet-lite0 [--batch-size B]`` in a
   subprocess: wall time, CPU time (user + system, s) and peak resident memory (ru_maxrss of
   the child, MiB = 2^20 bytes).  Default N = 2514, the full P3 composition (plus the 300
   probe-train arrays of the linear probe); default B: the CLI's (8 images per forward pass
   since issue 11; 32 before).

Each is repeated ``--repeats`` times (default 5; the run at full size takes an hour a repeat on
the shared machine: use ``--n`` for a fraction, or ``--skip-run``), render and run interleaved
(``benchmarks/_measure.py``); printed: median [min-max] of wall, CPU (the child's user + system,
``RUSAGE_CHILDREN``) and peak RSS per command, with the 1-minute load average at each start.
Timings depend on the machine and its load (CPU time less so than wall time); nothing is asserted.

Measured (2-core machine shared with other developers, torch 2.14.1 CPU threads = 2):

  before (batch 32): peak 1,581 MiB, 1,617 s wall, ~432 s CPU (load 2.4 at start, ~15 during)
  after  (batch 8):  peak 1,101 MiB, 3,265 s wall, 694 s CPU (load 13-14 throughout, tests running beside)
  Target < 1.5 GB (1,536 MiB) met; time not shown unchanged (loads differed; docs/salbench.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure_in_process as _m  # noqa: E402

os.environ.setdefault("PERCEPTBENCH_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def _child(cmd: list[str]) -> tuple[float, float, float, int, str]:
    """(wall s, CPU s (user + system), peak RSS MiB, exit code, output tail) of one CLI subprocess."""
    code = ("import resource, subprocess, sys, json, time; t=time.perf_counter(); "
            "p=subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "u=resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(json.dumps([time.perf_counter()-t, u.ru_utime+u.ru_stime, u.ru_maxrss/1024, "
            "p.returncode, (p.stdout+p.stderr)[-600:]]))")
    out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, check=True)
    wall, cpu, rss, rc, tail = json.loads(out.stdout.strip().splitlines()[-1])
    return wall, cpu, rss, rc, tail


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="salbench.detection.syn")
    ap.add_argument("--n", type=int, default=2514)
    ap.add_argument("--skip-run", action="store_true")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--batch-size", type=int, default=None, help="--batch-size of the run (default: the CLI's)")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "perceptbench.cli"]
    task = args.task if args.n == 2514 else f"{args.task}@n={args.n}"
    bs = [] if args.batch_size is None else ["--batch-size", str(args.batch_size)]
    with tempfile.TemporaryDirectory() as tmp:
        count = iter(range(10 ** 6))

        def command(argv_of):
            def go():
                k = next(count)
                wall, cpu, rss, rc, tail = _child(cli + argv_of(f"{tmp}/{k}"))
                assert rc == 0, tail
                return {"wall": wall, "cpu": cpu, "rss": rss}
            return go

        arms = {"render --limit 1": command(lambda d: ["render", args.task, "--limit", "1", "--out", d])}
        if not args.skip_run:
            arms[f"run {task}"] = command(lambda d: ["run", "--task", task, "--model", "efficientnet-lite0", "--out", d,
                                                     "--no-progress", *bs])
        runs = _m.interleave(arms, args.repeats)
    print(f"{args.repeats} interleaved repeats, each command in a fresh subprocess (median [range]; the child's "
          "own wall, CPU = user + system, peak RSS):")
    for name, rs in runs.items():
        v = [r["value"] for r in rs]
        print(f"  {name:40s} wall {_m.spread([x['wall'] for x in v], '{:.1f}')} s   CPU "
              f"{_m.spread([x['cpu'] for x in v], '{:.1f}')} s   peak RSS {_m.spread([x['rss'] for x in v], '{:.0f}')} "
              f"MiB   load {min(r['load'] for r in rs):.1f}-{max(r['load'] for r in rs):.1f}")
    print(json.dumps({"task": task, "batch_size": args.batch_size or "default", "cpu_count": os.cpu_count()}))


if __name__ == "__main__":
    main()
