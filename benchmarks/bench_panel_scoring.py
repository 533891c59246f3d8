"""The chart-category panel and SalBench scorers (``score_columns``) of two source trees, in
process, side by side (issue 25, item 1), measured here, never asserted in tests.

    PYTHONPATH=src python benchmarks/bench_panel_scoring.py FILE --before-src OTHER/src \
        [--after-src src] [--repeats 5] [--tasks TASK ...]

Method.  One worker process per source tree (``--before-src``, ``--after-src``: the ``src``
folder of a checkout, e.g. a worktree of main and this branch) reads ``FILE`` once with
``perceptbench.record_table.read_columns`` and re-parses the VLM answers as ``perceptbench
score`` does (``scoring.reparse_columns``; not timed), keeping the columns of the
``similarity.chart.category_mean`` and ``salbench.*`` tasks (or ``--tasks``).  Then, per task,
``--repeats`` rounds: each round asks both workers, one after the other in an order that
alternates between rounds (before after, after before, ...), to run the task's
``score_columns`` once, timed inside the worker by ``benchmarks/_measure_in_process.py``
(``timed``: CPU time ``time.process_time`` and wall time, the 1-minute load at the start).
Printed per task: median [min-max] of CPU and wall seconds of each tree, the per-round ratio
before / after in CPU time, and whether the two trees' score rows are identical (sha256 of
every row's fields, full floats: the bit-for-bit check).  Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(path: str, tasks: list[str]) -> None:
    """Read ``path``'s columns, then answer ``TASK`` lines on stdin with one JSON timing line each."""
    import math

    sys.path.insert(0, str(HERE))
    import numpy as np

    from _measure_in_process import timed
    from perceptbench.record_table import read_columns
    from perceptbench.scoring import reparse_columns
    from perceptbench.tasks import get_task

    cols = read_columns(path)
    if cols is None:
        raise SystemExit(f"{path}: not readable by the columnar reader")
    keep = {}
    for t in sorted(cols):
        if (t in tasks) if tasks else (t.startswith("similarity.chart.category_mean") or t.startswith("salbench.")):
            task = get_task(t)
            c, _ = reparse_columns(cols[t], task, "default")
            keep[t] = (task, c, int(np.unique(c.seed)[0]))
    print(json.dumps({"ready": sorted(keep), "records": {t: int(c.n) for t, (_, c, _) in keep.items()},
                      "models": {t: len(set(c.model.tolist())) for t, (_, c, _) in keep.items()}}), flush=True)

    def digest(rows) -> str:
        h = hashlib.sha256()
        for r in rows:
            h.update(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                                 for k, v in vars(r).items()}).encode())
        return h.hexdigest()

    for line in sys.stdin:
        t = line.strip()
        task, c, seed = keep[t]
        res = timed(lambda: task.score_columns(c, seed))
        print(json.dumps({"cpu": res["cpu"], "wall": res["wall"], "load": res["load"], "rows": len(res["value"]),
                          "digest": digest(res["value"])}), flush=True)


class Worker:
    def __init__(self, src: str, path: str, tasks: list[str]):
        env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()))
        self.p = subprocess.Popen([sys.executable, __file__, "--worker", path, *(["--tasks", *tasks] if tasks else [])],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.info = json.loads(self.p.stdout.readline())

    def run(self, task: str) -> dict:
        self.p.stdin.write(task + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self) -> None:
        self.p.stdin.close()
        self.p.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--before-src", help="src folder of the baseline tree")
    ap.add_argument("--after-src", default=str(HERE.parent / "src"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tasks", nargs="*", default=[])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.file, args.tasks)
    if not args.before_src:
        ap.error("--before-src is required")
    sys.path.insert(0, str(HERE))
    import _measure_in_process as _m

    arms = {"before": Worker(args.before_src, args.file, args.tasks), "after": Worker(args.after_src, args.file,
                                                                                       args.tasks)}
    try:
        tasks = arms["after"].info["ready"]
        print(f"{args.file}: {args.repeats} interleaved rounds per task; before = {args.before_src}, "
              f"after = {args.after_src}; CPU and wall seconds of score_columns inside each worker")
        for t in tasks:
            runs = {name: [] for name in arms}
            for r in range(args.repeats):
                for name in (list(arms) if r % 2 == 0 else list(arms)[::-1]):
                    runs[name].append(arms[name].run(t))
            same = len({x["digest"] for rs in runs.values() for x in rs}) == 1
            print(f"{t}: {arms['after'].info['records'][t]} records, {arms['after'].info['models'][t]} respondents, "
                  f"{runs['after'][0]['rows']} rows; rows identical before/after: {same}")
            _m.report(runs)
            print(f"  before / after, CPU per round: {_m.spread(_m.ratio(runs['after'], runs['before']), '{:.2f}')}x"
                  f"   load {_m.loads(runs)}")
    finally:
        for w in arms.values():
            w.close()


if __name__ == "__main__":
    main()
