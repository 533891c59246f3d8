"""Synthetic run directories for report tests and benchmarks (no model is run).

:func:`write_synthetic_run` writes a ``records.jsonl`` holding the tasks' real human
records (silhouette observers and colour kernels, read from the mirror) and, for each
synthetic model, one record per test stimulus whose response is the ground truth with a
model-specific probability, else a seeded random option, else null.  The records pass the
trial-record schema and score like any run; their values mean nothing.  Needs the
human-data mirror (``PERCEPTBENCH_MIRROR``); imports no torch."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np

from ..core.rundir import RunDir
from ..records import RecordStore, TrialRecord
from ..seeding import text_hash
from ..tasks import get_task
from ..tasks.base import make_record

DEFAULT_TASKS = ("closure.nat.silhouette", "similarity.chart.mark_color", "similarity.chart.series_count",
                 "salbench.detection.syn@n=60,n_probe=0")


def synthetic_records(models: Sequence[str], tasks: Sequence[str] = DEFAULT_TASKS, seed: int = 0,
                      run_id: str = "synthetic-run", null_rate: float = 0.05,
                      raw_output: str | None = None) -> list[TrialRecord]:
    """Human records of ``tasks`` plus one synthetic VLM record per (model, test stimulus).

    Model i answers correctly with probability 0.2 + 0.6 i / max(1, len(models) - 1), gives
    a null answer with probability ``null_rate``, else a uniformly random option.
    ``raw_output``: text recorded before the answer in every model trial's raw output
    (``"<raw_output>\nAnswer: <response>"``; default: the answer alone)."""
    out: list[TrialRecord] = []
    for tid in tasks:
        task = get_task(tid)
        stim = task.stimuli(seed)
        out += task.human_records(seed, run_id, stim)
        test = [s for s in stim if s.split == "test"]
        options = list(task.options())
        for i, m in enumerate(models):
            rng = np.random.default_rng([seed, i, len(tid)])
            p = 0.2 + 0.6 * i / max(1, len(models) - 1)
            for s in test:
                u = rng.random()
                if u < null_rate:
                    resp = None
                elif u < null_rate + p and s.ground_truth is not None:
                    resp = s.ground_truth
                else:
                    resp = options[int(rng.integers(len(options)))]
                    if task.response_space == "multilabel":
                        resp = [resp]
                # a given raw_output is followed by the answer, so that scoring (which re-parses every
                # raw output) reads the planted response back
                text = str(resp) if raw_output is None else f"{raw_output}\nAnswer: {resp}"
                out.append(make_record(
                    task, stimulus_id=s.stimulus_id, model=m, model_family="vlm", readout="vlm_prompt",
                    response=resp, ground_truth=s.ground_truth, manipulated_value=s.manipulated_value,
                    raw_output=text, prompt_id=task.prompt_id, prompt_hash=task.prompt_hash,
                    model_version=f"synthetic:{text_hash(m)}", seed=seed, run_id=run_id, split=s.split,
                    parse={"rule": "synthetic", "ambiguous": False, "mode": "default"}))
    return out


def write_synthetic_run(out_dir: str | os.PathLike, models: Sequence[str], **kw) -> Path:
    """Write :func:`synthetic_records` to ``out_dir/records.jsonl`` and return the directory."""
    out = Path(out_dir)
    with RecordStore(RunDir(out).records) as store:
        store.append(synthetic_records(models, **kw))
    return out
