"""Trials/s of batched (batch 8) vs one-at-a-time greedy generation on a tiny local VLM.

Builds a tiny random model of the chosen family offline (perceptbench.testing.tiny_vlm),
makes N requests with different images and the verbatim mark-color prompt (seed 000
appendix B), generates them at batch size 1 and at batch size B, asserts the answers are
identical token for token, and prints both rates and their ratio.

    PYTHONPATH=src python benchmarks/bench_vlm_batching.py [--family llava] [--n 32] [--batch 8]

Timings exclude model loading and include preprocessing, generation and decoding.  One
untimed warm-up request runs first.  The two modes are interleaved, ``--repeats`` times (default
5), the order alternating between repeats (``benchmarks/_measure.py``: CPU = ``time.process_time``,
all threads; wall; the 1-minute load average per timing); printed: median [min-max] of CPU and
wall seconds, and of the per-repeat ratio one-at-a-time / batched (CPU), with the load range.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _measure_in_process as _m  # noqa: E402

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
    ap.add_argument("--repeats", type=int, default=5)
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

        runs = _m.interleave({"one at a time": lambda: vlm.generate_ids(reqs, batch_size=1),
                              f"batch {args.batch}": lambda: vlm.generate_ids(reqs, batch_size=args.batch)},
                             args.repeats)
        one, bat = runs.values()
        ids1 = one[0]["value"]
        assert all(r["value"] == ids1 for rs in runs.values() for r in rs), "batching changed greedy answers"
        distinct = len({tuple(x) for x in ids1})
        gen_tokens = sum(len(x) for x in ids1)
        print(f"family={args.family} n={args.n} max_new_tokens={args.max_new_tokens} "
              f"generated_tokens={gen_tokens} distinct_answers={distinct}")
        print(f"machine: {platform.processor() or platform.machine()}, torch threads={torch.get_num_threads()}, "
              f"torch {torch.__version__}; {args.repeats} interleaved repeats (median [range]):")
        _m.report(runs)
        print(f"  ratio one-at-a-time / batched: CPU {_m.spread(_m.ratio(bat, one))}   "
              f"wall {_m.spread(_m.ratio(bat, one, 'wall'))}   (answers identical: True; load {_m.loads(runs)})")


if __name__ == "__main__":
    main()
