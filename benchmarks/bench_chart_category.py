"""``similarity.chart.category_mean`` on the default encoder: where a run's time goes, and a
before/after comparison of two source trees (issue 25, item 3).

    # stage split of one run, in process (CPU and wall seconds per stage):
    PYTHONPATH=src python benchmarks/bench_chart_category.py stages [--task TASK] --out DIR
    # whole-process runs of two source trees, interleaved (order alternating), CPU time:
    PYTHONPATH=src python benchmarks/bench_chart_category.py compare --before ../main/src --after src \\
        [--task similarity.chart.category_mean@n_test=40,n_probe=120] [--repeats 5]

``stages`` runs ``perceptbench run --task TASK --out DIR`` (the CLI, in this process, default
encoder) with a CPU-time (``time.process_time``: user + system, all threads) and wall-time timer
around each stage, counted each time the stage's function is called:

* ``render``: :func:`perceptbench.stimuli.tseng_scatterplots.render_plot` (drawing and
  downsampling, probe-train and test images);
* ``embed``: ``EfficientNetLiteEncoder.embed`` (preprocessing and the forward pass);
* ``probe fit`` / ``probe predict``: ``ClassProbeReadout.fit`` / ``.predict`` (scikit-learn;
  the first call includes importing it);
* ``rest``: everything else of the process after ``main`` started (imports of torch and the
  package, human records, validating and writing records, scoring).

It prints torch's intra-op thread count (the forward pass's share of the cores).  Run it under
``/usr/bin/time -v`` for the whole process's CPU, wall time and peak memory.  The stage
functions do not call one another, so the stages do not overlap.

``compare`` runs ``python -m perceptbench.cli run --task TASK --out <fresh dir>`` with
``PYTHONPATH`` set to each tree in turn (``benchmarks/_measure.py``: CPU = user + system of the
child, from ``os.wait4``), the order alternating between repeats, and prints per arm the median
[min-max] of CPU and wall seconds, the per-repeat ratio before/after (CPU), the load per repeat,
and the headline rows of both runs' ``scores.csv`` (the task's numbers before and after).

Needs the data mirror (PERCEPTBENCH_MIRROR, default ``../shared/data`` beside the repository).
Figures measured: docs/performance.md, section "``similarity.chart.category_mean`` on the
default encoder".  Nothing here is asserted by a test.
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure as _m  # noqa: E402

os.environ.setdefault("PERCEPTBENCH_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))

TASK = "similarity.chart.category_mean"
REDUCED = TASK + "@n_test=40,n_probe=120"
HEADLINE = ("accuracy", "B", "kappa_aggregate", "kappa_pairwise")


class StageTimer:
    """CPU and wall seconds per named stage, summed over calls (not re-entrant per stage)."""

    def __init__(self):
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def wrap(self, owner, attr: str, stage: str) -> None:
        """Replace ``owner.attr`` by a timed wrapper counted under ``stage``."""
        fn = getattr(owner, attr)

        def timed(*a, **k):
            c0, w0 = time.process_time(), time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.cpu[stage] = self.cpu.get(stage, 0.0) + time.process_time() - c0
                self.wall[stage] = self.wall.get(stage, 0.0) + time.perf_counter() - w0
                self.calls[stage] = self.calls.get(stage, 0) + 1

        setattr(owner, attr, timed)


def stages(task: str, out: str) -> None:
    c_start, w_start = time.process_time(), time.perf_counter()
    import torch

    from perceptbench.cli import app
    from perceptbench.models.default import EfficientNetLiteEncoder
    from perceptbench.readouts.encoder import ClassProbeReadout
    from perceptbench.stimuli import tseng_scatterplots as ts

    t = StageTimer()
    t.wrap(ts, "render_plot", "render")
    t.wrap(EfficientNetLiteEncoder, "embed", "embed")
    t.wrap(ClassProbeReadout, "fit", "probe fit")
    t.wrap(ClassProbeReadout, "predict", "probe predict")
    load0 = os.getloadavg()
    try:
        app(["run", "--task", task, "--out", out], standalone_mode=False)
    finally:
        cpu, wall = time.process_time() - c_start, time.perf_counter() - w_start
        print(f"\n{task}: torch intra-op threads {torch.get_num_threads()}, load at start "
              f"{load0[0]:.1f}, at end {os.getloadavg()[0]:.1f}")
        print(f"{'stage':14s} {'calls':>6s} {'CPU s':>9s} {'wall s':>9s} {'CPU share':>9s}")
        for s in ("render", "embed", "probe fit", "probe predict"):
            print(f"{s:14s} {t.calls.get(s, 0):6d} {t.cpu.get(s, 0):9.1f} {t.wall.get(s, 0):9.1f} "
                  f"{t.cpu.get(s, 0) / cpu:9.1%}")
        rest_c, rest_w = cpu - sum(t.cpu.values()), wall - sum(t.wall.values())
        print(f"{'rest':14s} {'':6s} {rest_c:9.1f} {rest_w:9.1f} {rest_c / cpu:9.1%}")
        print(f"{'total':14s} {'':6s} {cpu:9.1f} {wall:9.1f}")


def headline(scores: Path) -> dict[str, str]:
    """``metric -> value [lo, hi]`` of the efficientnet-lite0 rows of a run's scores.csv."""
    out = {}
    with open(scores, newline="") as f:
        for r in csv.DictReader(f):
            if r["model"] != "human:panel" and r["metric"] in HEADLINE:
                ci = f" [{float(r['ci_low']):.4f}, {float(r['ci_high']):.4f}]" if r["ci_low"] else ""
                out[r["metric"]] = f"{float(r['value']):.4f}{ci}"
    return out


def compare(before: str, after: str, task: str, repeats: int) -> None:
    arms = {"before": str(Path(before).resolve()), "after": str(Path(after).resolve())}
    times: dict[str, list[dict]] = {a: [] for a in arms}
    scores: dict[str, dict] = {}
    loads = []
    with tempfile.TemporaryDirectory(prefix="bench_chart_") as tmp:
        for r in range(repeats):
            order = list(arms) if r % 2 == 0 else list(arms)[::-1]
            loads.append(round(os.getloadavg()[0], 1))
            for a in order:
                out = Path(tmp) / f"{a}{r}"
                env = {**os.environ, "PYTHONPATH": arms[a]}
                m = _m.run_child([sys.executable, "-m", "perceptbench.cli", "run", "--task", task,
                                  "--out", str(out)], env=env)
                times[a].append(m)
                h = headline(out / "scores.csv")
                if a in scores and scores[a] != h:
                    raise SystemExit(f"{a}: repeat {r} gave other scores than repeat 0 (not deterministic)")
                scores[a] = h
                print(f"repeat {r} {a:6s}: CPU {m['cpu_s']:.1f} s, wall {m['wall_s']:.1f} s, "
                      f"peak RSS {m['peak_rss_mib']:.0f} MiB (load {loads[-1]})", flush=True)
    print(f"\n{task}, {repeats} repeats, order alternating, load at the repeats' starts {loads}")
    for a in arms:
        s = _m.summary([m["cpu_s"] for m in times[a]], 1)
        w = _m.summary([m["wall_s"] for m in times[a]], 1)
        print(f"  {a:6s} CPU {s['median']} [{s['min']}-{s['max']}] s   wall {w['median']} [{w['min']}-{w['max']}] s")
    rat = [b["cpu_s"] / a["cpu_s"] for b, a in zip(times["before"], times["after"])]
    print(f"  before/after CPU ratio {statistics.median(rat):.2f} [{min(rat):.2f}-{max(rat):.2f}]")
    print(f"\n| metric | before | after |\n| --- | --- | --- |")
    for k in HEADLINE:
        print(f"| {k} | {scores['before'].get(k, '-')} | {scores['after'].get(k, '-')} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    st = sub.add_parser("stages")
    st.add_argument("--task", default=TASK)
    st.add_argument("--out", required=True)
    cp = sub.add_parser("compare")
    cp.add_argument("--before", required=True, help="the src/ folder of the tree before the change")
    cp.add_argument("--after", required=True, help="the src/ folder of the tree after the change")
    cp.add_argument("--task", default=REDUCED)
    cp.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    if args.cmd == "stages":
        stages(args.task, args.out)
    else:
        compare(args.before, args.after, args.task, args.repeats)


if __name__ == "__main__":
    main()
