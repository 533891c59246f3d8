"""`perceptbench export --format parquet` against duckdb writing the same records as Parquet
(issue 25: export within 2x of duckdb).

    PYTHONPATH=src python benchmarks/bench_export.py RUN_DIR [--repeats 5] [--before-src OTHER/src]

Method.  RUN_DIR: a scored run (e.g. one of bench_report.py's ``--keep`` runs or a
``mixed_records.py`` file scored once).  ``--repeats`` rounds, each running A then B in fresh
processes: A = duckdb (``python -c``: ``COPY (SELECT * FROM read_json_auto(records.jsonl))
TO 'x.parquet' (FORMAT parquet)``, duckdb's own typed columns from its JSON reader, the same
rows and fields, no schema check), B = whole-process ``perceptbench export RUN --format
parquet --out TMP`` (every line checked, records.parquet and scores.parquet written);
with ``--before-src``, a third arm C = the same command run on another checkout's code
(``PYTHONPATH=OTHER/src``, e.g. main before a change), in the same rounds.  CPU
time of each child (user + system, ``os.wait4``), wall beside it, the load at each round's
start; median and range of each and of B/A (and C/A) in CPU time; peak RSS of B (and C).  duckdb is installed with the
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
    ap.add_argument("--before-src", type=Path, help="a third arm: the export of this src folder (PYTHONPATH)")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from _measure import interleave, ratios, run_child, summary

    with tempfile.TemporaryDirectory() as tmp:
        rec = a.run_dir / "records.jsonl"

        def export(out: str, src: Path | None = None) -> dict:
            env = None if src is None else {**os.environ, "PYTHONPATH": str(src.resolve())}
            return run_child([sys.executable, "-m", "perceptbench.cli", "export", str(a.run_dir), "--format",
                              "parquet", "--out", str(Path(tmp) / out)], env=env)

        arms = {"duckdb": lambda: run_child([sys.executable, "-c", DUCK, str(rec), str(Path(tmp) / "duck.parquet")]),
                "export": lambda: export("pb")}
        if a.before_src is not None:
            arms["before"] = lambda: export("before", a.before_src)
        rounds = interleave(arms, a.repeats)
    out = {"cpus": os.cpu_count(), "records": sum(1 for _ in open(rec, "rb")),
           "duckdb_cpu_s": summary([r["duckdb"]["cpu_s"] for r in rounds], 2),
           "export_cpu_s": summary([r["export"]["cpu_s"] for r in rounds], 2),
           "duckdb_wall_s": summary([r["duckdb"]["wall_s"] for r in rounds], 2),
           "export_wall_s": summary([r["export"]["wall_s"] for r in rounds], 2),
           "export_over_duckdb_cpu": summary(ratios(rounds, "duckdb", "export"), 2),
           "export_peak_rss_mib": summary([r["export"]["peak_rss_mib"] for r in rounds], 0),
           "load": summary([r["load"] for r in rounds], 1)}
    if a.before_src is not None:
        out.update({"before_cpu_s": summary([r["before"]["cpu_s"] for r in rounds], 2),
                    "before_wall_s": summary([r["before"]["wall_s"] for r in rounds], 2),
                    "before_over_duckdb_cpu": summary(ratios(rounds, "duckdb", "before"), 2),
                    "before_peak_rss_mib": summary([r["before"]["peak_rss_mib"] for r in rounds], 0)})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
