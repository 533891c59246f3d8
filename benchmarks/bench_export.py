"""`perceptbench export --format parquet` against duckdb writing the same records as Parquet
(issue 25: export within 2x of duckdb).

    PYTHONPATH=src python benchmarks/bench_export.py RUN_DIR [--repeats 5]

Method.  RUN_DIR: a scored run (e.g. one of bench_report.py's ``--keep`` runs or a
``mixed_records.py`` file scored once).  ``--repeats`` rounds, each running A then B in fresh
processes: A = duckdb (``python -c``: ``COPY (SELECT * FROM read_json_auto(records.jsonl))
TO 'x.parquet' (FORMAT parquet)``, duckdb's own typed columns from its JSON reader, the same
rows and fields, no schema check), B = whole-process ``perceptbench export RUN --format
parquet --out TMP`` (every line validated, records.parquet and scores.parquet written).  CPU
time of each child (user + system, ``os.wait4``), wall beside it, the load at each round's
start; median and range of each and of B/A in CPU time.  duckdb is installed with the
project (the columnar reader uses it).  Figures measured: docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

DUCK = r"""
import duckdb, sys
con = duckdb.connect(config={"threads": 2})
con.execute("SET enable_progress_bar = false")
src, dst = sys.argv[1].replace("'", "''"), sys.argv[2].replace("'", "''")
con.execute(f"COPY (SELECT * FROM read_json_auto('{src}', format='newline_delimited', sample_size=-1)) "
            f"TO '{dst}' (FORMAT parquet)")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from _measure import interleave, ratios, run_child, summary

    with tempfile.TemporaryDirectory() as tmp:
        rec = a.run_dir / "records.jsonl"
        rounds = interleave({
            "duckdb": lambda: run_child([sys.executable, "-c", DUCK, str(rec), str(Path(tmp) / "duck.parquet")]),
            "export": lambda: run_child([sys.executable, "-m", "perceptbench.cli", "export", str(a.run_dir),
                                         "--format", "parquet", "--out", str(Path(tmp) / "pb")])}, a.repeats)
    out = {"cpus": os.cpu_count(), "records": sum(1 for _ in open(rec, "rb")),
           "duckdb_cpu_s": summary([r["duckdb"]["cpu_s"] for r in rounds], 2),
           "export_cpu_s": summary([r["export"]["cpu_s"] for r in rounds], 2),
           "duckdb_wall_s": summary([r["duckdb"]["wall_s"] for r in rounds], 2),
           "export_wall_s": summary([r["export"]["wall_s"] for r in rounds], 2),
           "export_over_duckdb_cpu": summary(ratios(rounds, "duckdb", "export"), 2),
           "load": summary([r["load"] for r in rounds], 1)}
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
