"""Wall time of the default battery on the local executor vs ``--executor ray`` with 2 workers
on a local Ray cluster (issue 12; measured here, never asserted in tests).

    python benchmarks/bench_ray.py [--workers 2] [--tasks TASK ...]

Each run writes a fresh run directory (no response cache, no resume).  Prints one JSON object:
local and Ray wall seconds, their ratio, the Ray start-up time (``ray.init``), and
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
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--tasks", nargs="*", default=None)
    a = ap.parse_args()
    import ray

    from perceptbench.runner import RunConfig, run
    from perceptbench.tasks.registry import DEFAULT_BATTERY

    tasks = a.tasks or list(DEFAULT_BATTERY)
    out: dict = {"tasks": tasks, "workers": a.workers}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        s = run(RunConfig(out=Path(tmp) / "local", tasks=tasks), progress=False)
        out["local_s"] = round(time.perf_counter() - t, 1)
        out["model_trials"] = s.written - s.human_written
        t = time.perf_counter()
        ray.init(num_cpus=a.workers, include_dashboard=False, log_to_driver=False)
        out["ray_init_s"] = round(time.perf_counter() - t, 1)
        t = time.perf_counter()
        s = run(RunConfig(out=Path(tmp) / "ray", tasks=tasks), progress=False, executor="ray",
                ray_options={"workers": a.workers})
        out["ray_s"] = round(time.perf_counter() - t, 1)
        out["shards"] = len(s.per_task_model)
        ray.shutdown()
    out["ratio_local_over_ray"] = round(out["local_s"] / out["ray_s"], 2)
    out["overhead_per_shard_s_upper"] = round((out["ray_s"] - out["local_s"] / a.workers) / out["shards"], 1)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
