"""Trials/s of batched (batch 8) vs one-at-a-time greedy generation on a tiny local VLM.

Builds a tiny random model of the chosen family offline (perceptbench.testing.tiny_vlm),
makes N requests with different images and the verbatim mark-color prompt (seed 000
appendix B), generates them at batch size 1 and at batch size B, asserts the answers are
identical token for token, and prints both rates and their ratio.

    PYTHONPATH=src python benchmarks/bench_vlm_batching.py [--family llava] [--n 32] [--batch 8]

Timings exclude model loading and include preprocessing, generation and decoding.  One
untimed warm-up request runs first.  Each mode is timed ``--repeats`` times; the best
(maximum) rate is reported, the usual convention for throughput on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

PROMPT = (
    "Three colored chart marks are shown, numbered 1, 2 and 3. Which one is the odd one out "
    "(least similar in color to the other two)? Answer 1, 2, or 3."
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", default="llava", choices=["llava", "idefics3", "qwen2_vl"])
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=40)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    args = ap.parse_args()

    import torch

    from perceptbench.models.base import VLMRequest
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        d = build_tiny_vlm(args.family, os.path.join(tmp, args.family))
        vlm = HFVLM(d, max_new_tokens=args.max_new_tokens)
        rng = np.random.default_rng(0)
        reqs = [
            VLMRequest(
                images=(Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)),),
                prompt=PROMPT,
                max_new_tokens=args.max_new_tokens,
            )
            for _ in range(args.n)
        ]
        vlm.generate_ids(reqs[:1], batch_size=1)  # warm-up

        def timed(bs: int) -> tuple[float, list[list[int]]]:
            best, ids = 0.0, None
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                out = vlm.generate_ids(reqs, batch_size=bs)
                rate = len(reqs) / (time.perf_counter() - t0)
                best = max(best, rate)
                assert ids is None or out == ids
                ids = out
            return best, ids

        r1, ids1 = timed(1)
        rb, idsb = timed(args.batch)
        assert ids1 == idsb, "batching changed greedy answers"
        distinct = len({tuple(x) for x in ids1})
        gen_tokens = sum(len(x) for x in ids1)
        print(f"family={args.family} n={args.n} max_new_tokens={args.max_new_tokens} "
              f"generated_tokens={gen_tokens} distinct_answers={distinct}")
        print(f"machine: {platform.processor() or platform.machine()}, torch threads={torch.get_num_threads()}, "
              f"torch {torch.__version__}")
        print(f"one-at-a-time : {r1:8.2f} trials/s")
        print(f"batch {args.batch:<7d}: {rb:8.2f} trials/s")
        print(f"ratio batched/one-at-a-time: {rb / r1:.2f}x  (answers identical: True)")


if __name__ == "__main__":
    main()
