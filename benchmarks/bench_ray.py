"""Wall time of the default battery on the local executor vs ``--executor ray`` with 2 workers
on a local Ray cluster (issue 12; measured here, never asserted in tests).

    python benchmarks/bench_ray.py [--workers 2] [--repeats 5] [--tasks TASK ...]

Each run writes a fresh run directory (no response cache, no resume).  The local and the Ray run
are interleaved ``--repeats`` times (default 5; order alternating, ``benchmarks/_measure.py``),
Ray started once before the first repeat.  CPU time of the Ray arm counts the driver and every
process of the Ray cluster (raylet, workers: psutil, recursively over this process's children,
user + system, sampled before and after the run; a worker that ends during the run is counted up
to its last sample only, so the Ray CPU figure is a lower bound); the local arm's CPU is this
process's.  Printed: median [min-max] of CPU and wall per arm with the load range, the
per-repeat ratio local / Ray (wall and CPU), the ``ray.init`` time, and for the last repeat
``(ray wall - local wall / workers) / shards``: the cost per shard above an ideal split of the
local time (actor start, a model load per actor, stimuli rebuilt per actor, records shipped to
the driver).  A negative value means the Ray run beat the ideal split: the shared machine's load
changed between the two runs, or one-thread workers contended less than the local run's two
torch threads.

Measured 2026-11-29 on the shared 2-core build machine (battery, default encoder, 240 model
trials, 3 shards): (1) busy machine: local 203.2 s, Ray 2 workers 76.3 s (+10.1 s ray.init),
ratio 2.66 -- above 2x, so the local figure was inflated by other jobs; (2) quieter: local 50.8 s,
Ray 27.1 s (+5.9 s ray.init), ratio 1.87, 0.6 s per shard above the ideal split.  The battery
has only 3 shards (one per task) for 2 workers, so the longest task bounds the Ray run; with
ray.init counted the ratio falls to 1.54; start-up dominates for runs under a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure_in_process as _m  # noqa: E402


def _tree_cpu() -> float:
    """CPU seconds (user + system) of this process and every live descendant (psutil)."""
    import psutil

    me = psutil.Process()
    total = 0.0
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", nargs="*", default=None)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    import ray

    from perceptbench.runner import RunConfig, run
    from perceptbench.tasks.registry import DEFAULT_BATTERY

    tasks = a.tasks or list(DEFAULT_BATTERY)
    out: dict = {"tasks": tasks, "workers": a.workers}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        ray.init(num_cpus=a.workers, include_dashboard=False, log_to_driver=False)
        out["ray_init_s"] = round(time.perf_counter() - t, 1)
        count = iter(range(10 ** 6))
        last: dict = {}

        def local():
            s = run(RunConfig(out=Path(tmp) / f"local{next(count)}", tasks=tasks), progress=False)
            last["model_trials"] = s.written - s.human_written

        def on_ray():
            c0 = _tree_cpu()
            s = run(RunConfig(out=Path(tmp) / f"ray{next(count)}", tasks=tasks), progress=False, executor="ray",
                    ray_options={"workers": a.workers})
            last["shards"] = len(s.per_task_model)
            return _tree_cpu() - c0

        runs = _m.interleave({"local": local, f"ray, {a.workers} workers": on_ray}, a.repeats)
        for r in runs[f"ray, {a.workers} workers"]:
            r["cpu"] = r["value"]  # the whole cluster's CPU, not only the driver's
        ray.shutdown()
    lo, ry = runs.values()
    print(f"{a.repeats} interleaved repeats (median [range]):")
    _m.report(runs)
    print(f"  ratio local / ray: wall {_m.spread(_m.ratio(ry, lo, 'wall'))}   CPU {_m.spread(_m.ratio(ry, lo))}   "
          f"load {_m.loads(runs)}")
    out.update(last)
    out["overhead_per_shard_s_upper_median"] = round(
        (_m.statistics.median(r["wall"] for r in ry) - _m.statistics.median(r["wall"] for r in lo) / a.workers)
        / out["shards"], 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
