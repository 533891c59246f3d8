"""The VSI part of scoring against the number of records (issue 25: VSI scoring that grows
linearly, in compact form), measured here, never asserted in tests.

    PYTHONPATH=src python benchmarks/bench_vsi_scoring.py FILE_1 FILE_2 ... [--repeats 3]

Method.  Files: mixed records of growing size (``benchmarks/mixed_records.py``: the VSI pin
run's records under every model, so the VSI records and models grow with the file).  Per round
and file (files in alternating order from round to round), a fresh child process
(``--one FILE``) reads the file's columns (``record_table.read_columns``, every family, not
timed), then times in CPU time (``time.process_time``), as ``perceptbench score`` runs them:
``read``, the VSI tasks read into what they are scored from (code with
``vsi.samples.read_vsi_columns``: each record streamed off the file, validated and read into
columns; older code: the records read back as objects and re-parsed, ``prepare_records``);
``task``, the VSI tasks' own scoring (with the columns' re-parse of the clean answers); ``suite``,
the cross-task VSI analyses (``takes_part`` per task, what it keeps, then ``rows``).  Printed per
file: VSI records and models, score rows, the child's peak RSS, and median and range over rounds
of the three parts and their sum, with the load at each round's start; then the growth of the
median sum from the first file to each other one against the growth in VSI records (linear =
equal).  The code measured is the one on ``PYTHONPATH`` (run the script twice, on two
checkouts, to compare them).  Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def one(path: str) -> dict:
    """The VSI part of scoring ``path`` in this process (module docstring)."""
    from perceptbench.record_table import read_columns
    from perceptbench.scoring import prepare_records, reparse_columns
    from perceptbench.tasks import get_task
    from perceptbench.vsi.suite import VSISuiteAnalysis

    try:
        from perceptbench.vsi.samples import read_vsi_columns
    except ImportError:  # code before the VSI columns
        read_vsi_columns = None
    cols = read_columns(path)
    if cols is None:
        raise SystemExit(f"{path}: not readable by the columnar reader")
    tids = sorted(t for t in cols if t.startswith("vsi."))
    n = sum(cols[t].n for t in tids)
    models = len({cols[t].models[m] for t in tids for m in set(cols[t].model.tolist())})
    c0 = time.process_time()
    data = {}
    for t in tids:
        c = read_vsi_columns(cols, t) if read_vsi_columns and getattr(get_task(t), "scores_columns", False) else None
        data[t] = c if c is not None else prepare_records(cols.records(t))
    c1 = time.process_time()
    rows = []
    for t in tids:
        seed = int(cols[t].seed[0])
        if isinstance(data[t], list):
            rows += get_task(t).score(data[t], seed)
        else:
            data[t], _ = reparse_columns(data[t], get_task(t), "default")  # (its parse-count rows not counted:
            rows += get_task(t).score_columns(data[t], seed)  # the record path adds them outside task.score)
    c2 = time.process_time()
    analysis, kept = VSISuiteAnalysis(), []
    for t in tids:
        if analysis.takes_part(data[t]):
            kept += analysis.keep(data[t]) if hasattr(analysis, "keep") else data[t]
    rows += analysis.rows(kept, seed=None, features_dir=None, families=None, task_rows=rows, models=None)
    c3 = time.process_time()
    return {"vsi_records": n, "vsi_models": models, "rows": len(rows),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "read_s": c1 - c0, "task_s": c2 - c1, "suite_s": c3 - c2, "vsi_s": c3 - c0}


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
                  "peak_rss_mib": max(r["peak_rss_mib"] for r in rs),
                  **{k: summary([r[k] for r in rs], 2) for k in ("read_s", "task_s", "suite_s", "vsi_s", "load")}}
    first = a.files[0]
    for f in a.files[1:]:
        res[f]["growth"] = {"vsi_cpu": round(res[f]["vsi_s"]["median"] / res[first]["vsi_s"]["median"], 2),
                            "vsi_records": round(res[f]["vsi_records"] / res[first]["vsi_records"], 2)}
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
