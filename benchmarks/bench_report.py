"""`perceptbench report` against `perceptbench score` on a run with many models (issue 10
target: under 10 s for 45 models; issue 25: 400 models within a small multiple of `score`).

    PYTHONPATH=src PERCEPTBENCH_MIRROR=... python benchmarks/bench_report.py \\
        [--models 45 400] [--repeats 5] [--pairs auto]

Method.  For each model count N, a synthetic run directory
(:func:`perceptbench.testing.synthetic_runs.write_synthetic_run`: the real human records of
the Gestalt battery plus N synthetic VLMs on closure, mark colour, series count and SalBench
detection with 60 stimuli; 400 models: about 122,000 records) is written once, untimed.  Then
``--repeats`` rounds, each running A then B in fresh processes: A = whole-process
``perceptbench score RUN``, B = whole-process ``perceptbench report RUN --pairs P`` (reading
records.jsonl and scores.json, re-parsing, the headline rows, the paired differences, every
figure and the page).  CPU time of each child (user + system, ``os.wait4``), wall time beside
it; the load average at each round's start.  Printed: median and range over rounds of each
arm's CPU and wall time and of report/score in CPU time (per round).  Figures measured:
docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", type=int, nargs="*", default=[45, 400])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pairs", default="auto", help="report --pairs (auto, all, neighbours)")
    ap.add_argument("--keep", type=Path, help="write the runs here (and reuse them) instead of a temp dir")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from _measure import interleave, ratios, run_child, summary

    from perceptbench.testing.synthetic_runs import write_synthetic_run

    out: dict = {"cpus": os.cpu_count(), "pairs": args.pairs}
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for n in args.models:
            d = base / f"models-{n}"
            if not (d / "records.jsonl").exists():
                write_synthetic_run(d, [f"model-{i:03d}" for i in range(n)])
            cli = [sys.executable, "-m", "perceptbench.cli"]
            rounds = interleave({"score": lambda: run_child(cli + ["score", str(d)]),
                                 "report": lambda: run_child(cli + ["report", str(d), "--out", str(d / "report.html"),
                                                                   "--pairs", args.pairs])}, args.repeats)
            out[f"models_{n}"] = {
                "records": sum(1 for _ in open(d / "records.jsonl", "rb")),
                "score_cpu_s": summary([r["score"]["cpu_s"] for r in rounds], 2),
                "report_cpu_s": summary([r["report"]["cpu_s"] for r in rounds], 2),
                "score_wall_s": summary([r["score"]["wall_s"] for r in rounds], 2),
                "report_wall_s": summary([r["report"]["wall_s"] for r in rounds], 2),
                "report_over_score_cpu": summary(ratios(rounds, "score", "report"), 2),
                "report_peak_rss_mib": summary([r["report"]["peak_rss_mib"] for r in rounds], 0),
                "load": summary([r["load"] for r in rounds], 1)}
            print(json.dumps({f"models_{n}": out[f"models_{n}"]}), file=sys.stderr, flush=True)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
