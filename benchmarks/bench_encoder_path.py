"""Encoder-path throughput: stimuli/s from render to written record, against the bare
batched forward pass ``model(x)`` on the same batch size.

    python benchmarks/bench_encoder_path.py [--batch-size 32] [--repeats 3]

Uses the embedded default (EfficientNet-Lite0) on ``closure.nat.silhouette`` and
``similarity.chart.series_count`` (every probe-train and test image is rendered, preprocessed,
embedded and read out; test trials are validated and fsync'ed to records.jsonl).  Prints a JSON
summary.  Needs the data mirror (PERCEPTBENCH_MIRROR) or internet.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("PERCEPTBENCH_MIRROR", str(Path(__file__).resolve().parents[2] / "shared" / "data"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    import torch

    from perceptbench.models.default import EfficientNetLiteEncoder
    from perceptbench.runner import RunConfig, run
    from perceptbench.tasks import get_task

    enc = EfficientNetLiteEncoder()
    tasks = ("closure.nat.silhouette", "similarity.chart.series_count")
    n_images = sum(len(get_task(t).stimuli(0)) for t in tasks)  # probe-train + test, each embedded once
    n_trials = sum(sum(s.split == "test" for s in get_task(t).stimuli(0)) for t in tasks)

    path_times = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            run(RunConfig(out=Path(d), tasks=tasks, batch_size=args.batch_size), progress=False,
                load_model=lambda _arg: enc)
            path_times.append(time.perf_counter() - t0)

    x = torch.randn(args.batch_size, 3, 224, 224)
    with torch.inference_mode():
        enc.model(x)  # warm-up
        fwd = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            enc.model(x)
            fwd.append(time.perf_counter() - t0)
    path_ips = n_images / min(path_times)
    bare_ips = args.batch_size / min(fwd)
    print(json.dumps({
        "batch_size": args.batch_size, "torch_threads": torch.get_num_threads(),
        "images_per_run": n_images, "test_trials_per_run": n_trials,
        "path_seconds_best": round(min(path_times), 3),
        "path_images_per_s": round(path_ips, 2), "path_trials_per_s": round(n_trials / min(path_times), 2),
        "bare_forward_images_per_s": round(bare_ips, 2),
        "path_over_bare_ratio": round(path_ips / bare_ips, 3),
        "note": "path includes human records, rendering, preprocessing, embedding, readout fit, validation, fsync",
    }, indent=1))


if __name__ == "__main__":
    sys.exit(main())
