"""The VSI part of scoring against the number of records (issue 25: VSI scoring that grows
linearly), measured here, never asserted in tests.

    PYTHONPATH=src python benchmarks/bench_vsi_scoring.py FILE_1 FILE_2 ... [--repeats 3]

Method.  Files: mixed records of growing size (``benchmarks/mixed_records.py``: the VSI pin
run's records under every model, so the VSI records and models grow with the file).  Per round
and file (files in alternating order from round to round), a fresh child process
(``--one FILE``) reads the file's VSI tasks (by byte offset, re-parsed as scoring does, not
timed), then times in CPU time (``time.process_time``) the VSI tasks' own scoring
(``task.score``) and the cross-task VSI analyses (the suite analysis: ``takes_part`` per task,
then ``rows``), as ``perceptbench score`` runs them.  Printed per file: VSI records and models,
score rows, and median and range over rounds of the two parts and their sum, with the load at
each round's start; then the growth of the median sum from the first file to each other one
against the growth in VSI records (linear = equal).  The code measured is the one on
``PYTHONPATH``.  Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def one(path: str) -> dict:
    """The VSI part of scoring ``path`` in this process (module docstring)."""
    from perceptbench.record_table import read_index, task_records
    from perceptbench.scoring import prepare_records
    from perceptbench.tasks import get_task
    from perceptbench.vsi.suite import VSISuiteAnalysis

    idx = read_index(path)
    if idx is None:
        raise SystemExit(f"{path}: not readable by the columnar index")
    tids = sorted(t for t in idx.by_task if t.startswith("vsi."))
    recs = {t: prepare_records(task_records(idx, t)) for t in tids}
    c0 = time.process_time()
    rows = []
    for t in tids:
        seed = idx.seeds[t][0] if idx.seeds.get(t) else 0
        rows += get_task(t).score(recs[t], seed)
    c1 = time.process_time()
    analysis, kept = VSISuiteAnalysis(), []
    for t in tids:
        if analysis.takes_part(recs[t]):
            kept += recs[t]
    rows += analysis.rows(kept, seed=None, features_dir=None, families=None, task_rows=rows, models=None)
    c2 = time.process_time()
    return {"vsi_records": sum(map(len, recs.values())),
            "vsi_models": len({r.model for rs in recs.values() for r in rs}), "rows": len(rows),
            "task_s": c1 - c0, "suite_s": c2 - c1, "vsi_s": c2 - c0}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="*")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one")
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one)))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from _measure import summary

    runs: dict[str, list[dict]] = {f: [] for f in a.files}
    for i in range(a.repeats):
        for f in (a.files if i % 2 == 0 else a.files[::-1]):
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, __file__, "--one", f], check=True, capture_output=True, text=True)
            runs[f].append(dict(json.loads(out.stdout), load=round(load, 2)))
            print(f, runs[f][-1], flush=True)
    res = {}
    for f, rs in runs.items():
        res[f] = {"vsi_records": rs[0]["vsi_records"], "vsi_models": rs[0]["vsi_models"], "rows": rs[0]["rows"],
                  **{k: summary([r[k] for r in rs], 2) for k in ("task_s", "suite_s", "vsi_s", "load")}}
    first = a.files[0]
    for f in a.files[1:]:
        res[f]["growth"] = {"vsi_cpu": round(res[f]["vsi_s"]["median"] / res[first]["vsi_s"]["median"], 2),
                            "vsi_records": round(res[f]["vsi_records"] / res[first]["vsi_records"], 2)}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
