"""Encoder-path throughput: images/s from render to written record, against a bare batched
forward pass ``model(x)`` on the same images (issue 25, item 5).

    PYTHONPATH=src python benchmarks/bench_encoder_path.py [--batch-size 8] [--repeats 5] [--threads 1]

Uses the embedded default (EfficientNet-Lite0) on ``closure.nat.silhouette`` and
``similarity.chart.series_count``.  Three arms, interleaved (``benchmarks/_measure.py``: the order
alternates between repeats; CPU time = ``time.process_time`` of this process, all threads, plus
ended children; the 1-minute load average is recorded per timing):

* ``path``: ``perceptbench.runner.run`` of both tasks into a fresh run directory: every
  probe-train and test image rendered, preprocessed, embedded and read out, human records, test
  trials validated and fsync'ed to records.jsonl, scores written;
* ``preprocess+forward``: ``EfficientNetLiteEncoder.embed`` on the same images, pre-rendered
  (resize, crop, normalise, forward, L2 norm);
* ``bare model(x)``: ``model(x)`` on the same images, preprocessed beforehand, in batches of
  ``--batch-size``.

The first ``path`` run of the process is timed apart (before the repeats) and printed on its own
line: it also pays importing scikit-learn, once per process (a user's ``perceptbench run`` pays it
once for all its tasks); the repeats measure the per-run cost.

Printed: per arm the median [min-max] of CPU and wall seconds over the repeats and the load
range; the ratios ``bare / path`` and ``bare / (preprocess+forward)`` (CPU time per repeat, median
[range]): 1.0 = the path costs no more than the forward passes.  ``--threads`` sets torch's
threads (default 1: on a shared machine the second core belongs to the neighbours).  Needs the
data mirror (PERCEPTBENCH_MIRROR).

Measured (issue 25; shared 2-core machine; ``--tasks similarity.chart.series_count``, 190 images,
CPU ratios, median [range] of 5): bare / path 0.724 [0.633-0.828] before, 0.722 [0.659-0.842]
after batched normalisation; bare / (preprocess+forward) 0.888 [0.865-0.910] before (load 8-18),
0.998 [0.870-1.051] after (load 4-8).  After the 6-fit ridge readout and the timm-free default
(``--tasks similarity.chart.series_count@n_test=10``, 160 images, load 15-21): bare / path 0.858
[0.848-0.932], bare / (preprocess+forward) 0.925 [0.873-0.988].  At a low load and the defaults:
0.973 [0.849-1.077] (series_count, 300 images, load 1.1-3.0) and 0.919 [0.821-1.065] (both default
tasks, 460 images, load 2.4-3.2).  Details: docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure_in_process as _m  # noqa: E402

os.environ.setdefault("PERCEPTBENCH_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tasks", nargs="+", default=["closure.nat.silhouette", "similarity.chart.series_count"])
    args = ap.parse_args()

    import torch

    from perceptbench.models.default import EfficientNetLiteEncoder
    from perceptbench.runner import RunConfig, run
    from perceptbench.tasks import get_task

    if args.threads:
        torch.set_num_threads(args.threads)
    enc = EfficientNetLiteEncoder()
    tasks = tuple(args.tasks)
    images = [s.render() for t in tasks for s in get_task(t).stimuli(0)]  # probe-train + test, each embedded once
    bs = args.batch_size
    x = [enc._batch(images[i:i + bs]) for i in range(0, len(images), bs)]

    def path():
        with tempfile.TemporaryDirectory() as d:
            run(RunConfig(out=Path(d), tasks=tasks, batch_size=bs), progress=False, load_model=lambda _arg: enc)

    def pre_forward():
        enc.embed(images, batch_size=bs)

    def bare():
        with torch.inference_mode():
            for xb in x:
                enc.model(xb)

    bare()  # warm-up
    # the first run in a process also imports scikit-learn (the probe; once per process, ~2-3 s CPU):
    # timed apart, so that the interleaved repeats compare the steady per-run cost
    first = _m.timed(path)
    runs = _m.interleave({"path": path, "preprocess+forward": pre_forward, "bare model(x)": bare}, args.repeats)
    print(f"{len(images)} images ({', '.join(tasks)}), batch {bs}, torch threads {torch.get_num_threads()}, "
          f"{args.repeats} interleaved repeats (median [range]):")
    _m.report(runs)
    p, pf, b = runs.values()
    print(f"  bare / path:                CPU {_m.spread(_m.ratio(p, b))}   wall {_m.spread(_m.ratio(p, b, 'wall'))}")
    print(f"  bare / preprocess+forward:  CPU {_m.spread(_m.ratio(pf, b))}   wall {_m.spread(_m.ratio(pf, b, 'wall'))}")
    print(f"  first run (imports scikit-learn): CPU {first['cpu']:.2f} s, wall {first['wall']:.2f} s, load {first['load']:.1f};"
          f" bare (median) / first: CPU {statistics.median(r['cpu'] for r in b) / first['cpu']:.3f}")
    print(f"  load {_m.loads(runs)}")


if __name__ == "__main__":
    main()
