"""How much each headline number moves between the parser modes, on one run.

There is no real thinking VLM here (no hub weights, see /work/shared/ENVIRONMENT.md), so
the run uses a *scripted* model, ``scripted-thinker``: for each trial it looks up the
stimulus's truth (by the image's sha256), answers correctly with probability 0.7 (else a
seeded wrong option), and wraps the answer in one of the output shapes that thinking and
chatty models produce, drawn with fixed probabilities (plain answer; a ``<think>`` block
naming other options first; a ``<think>`` block cut off by the token budget; two answer
markers, the model correcting itself; an answer that negates another option first;
``**Answer:** X`` followed by an explanation naming other options; a hedge naming two
options; for SalBench also "All of them" and "None").  The mix is this script's choice, not a measurement of any
model: the table shows how sensitive each headline is to the parser on such outputs.

The run goes through the normal runner (records, response cache in a temporary
directory), then ``score_file(..., parser_mode=MODE)`` re-parses the records' raw outputs
under ``seed``, ``default`` and ``strict`` and the script prints a markdown table.

    PYTHONPATH=src PERCEPTBENCH_MIRROR=/work/shared/data python benchmarks/parser_mode_sensitivity.py [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import tempfile
from pathlib import Path

import numpy as np

TASKS = ("closure.nat.silhouette", "similarity.chart.mark_color", "similarity.chart.series_count",
         "salbench.detection.syn@n=150,n_probe=0")
HEADLINE = {
    "closure.nat.silhouette": ("accuracy", "B", "kappa_aggregate", "kappa_over_ceiling", "null_rate"),
    "similarity.chart.mark_color": ("B", "null_rate"),
    "similarity.chart.series_count": ("accuracy", "mean_abs_error", "capacity_k", "null_rate"),
    "salbench.detection.syn@n=150,n_probe=0": ("exact_match", "mean_f1", "exact_match@nulls_excluded", "null_rate"),
}
COUNTS = ("n_ambiguous", "n_unclosed_reasoning", "n_multiple_answer_markers", "n_reparsed_changed")
P_CORRECT = 0.7
STYLES = ("plain", "think", "think_cut", "self_correct", "negation", "explained", "hedge")
P_STYLES = (0.27, 0.25, 0.10, 0.10, 0.10, 0.13, 0.05)


def _say(x) -> str:
    return ", ".join(x) if isinstance(x, list) else str(x)


class ScriptedThinker:
    """A VLM-interface object whose answers are scripted (module docstring)."""

    name = "scripted-thinker"
    family = "vlm"
    supports_multi_image = True
    generation_settings = {"scripted": "v1", "p_correct": P_CORRECT}

    def __init__(self, truths: dict[str, tuple], seed: int = 0):
        self.truths = truths  # image sha256 -> (truth, options, kind)
        self.seed = seed
        self.model_version = f"scripted-thinker:v1:seed{seed}"

    def _rng(self, sha: str) -> np.random.Generator:
        return np.random.default_rng(int(hashlib.sha256(f"{self.seed}:{sha}".encode()).hexdigest()[:15], 16))

    def _answer(self, sha: str) -> str:
        truth, options, kind = self.truths[sha]
        rng = self._rng(sha)
        wrong_opts = [o for o in options if o != truth]
        ans = truth if rng.random() < P_CORRECT else wrong_opts[int(rng.integers(len(wrong_opts)))]
        other = wrong_opts[int(rng.integers(len(wrong_opts)))]
        if other == ans:
            other = next(o for o in options if o != ans)
        style = STYLES[int(rng.choice(len(STYLES), p=P_STYLES))]
        if kind == "multilabel":
            r = rng.random()
            if r < 0.05:
                return "All of them"
            if r < 0.08:
                return "None"
            ans, other = [ans] if isinstance(ans, str) else ans, other
        a, o = _say(ans), _say(other)
        noun = {"choice": "object", "position": "mark", "count": "series count", "multilabel": "feature"}[kind]
        if style == "plain":
            return a
        if style == "think":
            return f"<think>Maybe the {noun} is {o}? Let me compare again.</think>\nThe answer is {a}."
        if style == "think_cut":
            return f"<think>First I compare the {noun}s. The {noun} {o} looks"
        if style == "self_correct":
            return f"Answer: {o}\nWait, looking again more carefully.\nAnswer: {a}"
        if style == "negation":
            return f"It is not {o}, it is {a}."
        if style == "hedge":
            return f"Either {o} or {a}, I cannot decide."
        return f"**Answer:** {a}\n\n(The {noun} {o} is close, but differs less.)"

    def generate(self, requests, batch_size: int = 8) -> list[str]:
        from perceptbench.seeding import image_sha256

        return [self._answer(image_sha256(r.images[-1])) for r in requests]

    def next_token_distribution(self, image, prompt, top_k: int = 20):  # pragma: no cover - unused
        from perceptbench.models.base import NotSupportedByProvider

        raise NotSupportedByProvider("the scripted model writes text only; it has no token distribution")


def _truth_table(seed: int) -> dict[str, tuple]:
    from perceptbench.seeding import image_sha256
    from perceptbench.tasks import get_task

    out = {}
    for tid in TASKS:
        task = get_task(tid)
        kind = task.response_space
        options = list(task.categories) if kind == "multilabel" else list(task.options())
        for s in task.stimuli(seed):
            if s.split != "test" or s.ground_truth is None and kind != "position":
                continue
            images, _, _ = task.vlm_request(s, seed)
            truth = s.ground_truth if s.ground_truth is not None else options[0]
            if kind == "multilabel":
                opts = [[c] for c in options]
                out[image_sha256(images[-1])] = (list(truth), opts, kind)
            else:
                out[image_sha256(images[-1])] = (truth, options, kind)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="run directory (default: a temporary one)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="pb-parser-modes-"))
    os.environ.setdefault("PERCEPTBENCH_RESPONSE_CACHE", str(out / "response-cache"))

    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import PARSER_MODES, score_file

    truths = _truth_table(args.seed)
    model = ScriptedThinker(truths, args.seed)
    run(RunConfig(out=out, tasks=TASKS, models=("scripted-thinker=hf:scripted",), seed=args.seed, batch_size=32),
        progress=False, load_model=lambda arg: model)
    scores = {}
    for mode in PARSER_MODES:
        rows = score_file(out / "records.jsonl", out / f"scores.{mode}.csv", parser_mode=mode)
        scores[mode] = {(r.task_id, r.metric): r.value for r in rows if r.model == model.name}
    modes = ("seed", "default", "strict")
    print(f"run: {out} (model {model.name}, {model.model_version}; seed {args.seed})\n")
    print("| task | metric | " + " | ".join(modes) + " | max move |")
    print("|---|---|" + "---:|" * (len(modes) + 1))
    for tid in TASKS:
        for metric in HEADLINE[tid] + COUNTS:
            vals = [scores[m].get((tid, metric), float("nan")) for m in modes]
            def fmt(v, metric=metric):
                if not np.isfinite(v):
                    return "undefined"
                return f"{v:.0f}" if metric.startswith("n_") else f"{v:.3f}"
            move = max(vals) - min(vals) if all(np.isfinite(vals)) else float("nan")
            print(f"| {tid} | {metric} | " + " | ".join(fmt(v) for v in vals) + f" | {fmt(move)} |")


if __name__ == "__main__":
    main()
