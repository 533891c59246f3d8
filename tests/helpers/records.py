"""The one helper for planting trial records: :func:`plant_record` builds one valid
:class:`~perceptbench.records.TrialRecord` (every record a test plants goes through it),
:func:`plant_records` writes records to a ``records.jsonl`` as a run would.  Two shorthands build on
it: :func:`plant_answers` (a VLM's answers to a task's test stimuli) and :func:`plant_vsi_record`
(one VSI record with its first-token distribution)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from perceptbench.records import RecordStore, TrialRecord, make_trial_id, score_correct
from perceptbench.tasks import get_task
from perceptbench.tasks.base import Task, make_record


def plant_record(task: Task | str, *, stimulus_id: str, response: Any, ground_truth: Any, model: str = "m",
                 model_family: str = "vlm", readout: str = "vlm_prompt", manipulated_value: Any = None,
                 raw_output: str | None = None, prompt_id: str | None = None, prompt_hash: str | None = None,
                 model_version: str = "v", seed: int = 0, run_id: str = "r", rep: int = 0,
                 **more: Any) -> TrialRecord:
    """One valid trial record, ``correct`` derived from ``response`` and ``ground_truth``
    (:func:`perceptbench.records.score_correct`).

    ``task`` is a :class:`~perceptbench.tasks.base.Task`: the record is built by the package's
    own factory :func:`perceptbench.tasks.base.make_record` (task fields, ``n_reps``,
    ``human_ref_id``, ``package_version`` and ``task_params`` from the task), and ``more`` goes
    into ``run_meta`` (``split=``, ``parse=``, ``vsi=``...).

    ``task`` is a string: a bare record of a made-up task with that id (no registry lookup),
    for tests of records, readers and metrics that need no task.  ``more`` may then set the
    other top-level fields (``principle``, ``track``, ``owner``, ``response_space``,
    ``human_ref_id``, ``n_reps``, ``correct``) and ``run_meta`` entries (``run_meta={...}``
    added to model_version/seed/run_id).

    Raises pydantic's ValidationError when the fields do not make a valid record."""
    if isinstance(task, Task):
        return make_record(task, stimulus_id=stimulus_id, model=model, model_family=model_family,
                           readout=readout, response=response, ground_truth=ground_truth,
                           manipulated_value=manipulated_value, raw_output=raw_output, prompt_id=prompt_id,
                           prompt_hash=prompt_hash, model_version=model_version, seed=seed, run_id=run_id,
                           rep=rep, **more)
    fields: dict[str, Any] = dict(principle="closure", track="nat", owner="perceptbench", response_space="choice",
                                  human_ref_id=None, n_reps=1)
    run_meta = {"model_version": model_version, "seed": seed, "run_id": run_id, **more.pop("run_meta", {})}
    fields.update(more)
    fields.setdefault("correct", score_correct(response, ground_truth))
    return TrialRecord(trial_id=make_trial_id(task, stimulus_id, model, rep), task_id=task, stimulus_id=stimulus_id,
                       manipulated_value=manipulated_value, model=model, model_family=model_family, readout=readout,
                       response=response, ground_truth=ground_truth, raw_output=raw_output, rep=rep,
                       prompt_id=prompt_id, prompt_hash=prompt_hash, run_meta=run_meta, **fields)


def plant_records(path: Path, records: list[TrialRecord]) -> Path:
    """Append ``records`` to the records file ``path`` (created with its directory; a directory
    means its ``records.jsonl``) through :class:`perceptbench.records.RecordStore`, as a run
    writes them; returns the file's path."""
    path = Path(path)
    if path.suffix != ".jsonl":
        path = path / "records.jsonl"
    with RecordStore(path) as store:
        store.append(records)
    return path


def plant_answers(tid: str, model: str, answers: dict) -> list[TrialRecord]:
    """One VLM record (:func:`plant_record`) per entry of ``answers`` (index into the test stimuli of
    task ``tid`` at seed 0 -> 'right' | 'wrong' | None | a label list), with the task's prompt id
    and hash, run id 'planted' and a synthetic parse."""
    task = get_task(tid)
    test = [s for s in task.stimuli(0) if s.split == "test"]
    opts = list(task.options())
    out = []
    for i, how in answers.items():
        s = test[i]
        resp = (how if isinstance(how, list) else None if how is None else s.ground_truth if how == "right"
                else next(o for o in opts if o != s.ground_truth))
        out.append(plant_record(task, stimulus_id=s.stimulus_id, model=model, response=resp,
                                ground_truth=s.ground_truth, manipulated_value=s.manipulated_value,
                                raw_output="no answer" if resp is None else str(resp), prompt_id=task.prompt_id,
                                prompt_hash=task.prompt_hash, model_version="planted", run_id="planted",
                                split=s.split, parse={"rule": "synthetic", "ambiguous": False, "mode": "default"}))
    return out


def plant_vsi_record(task: Task, cond: str, sample: str, ids: list[int], lps: list[float], *, response: Any = "B",
                     raw_output: str | None = None, model: str = "m", conf: float | None = 80.0,
                     fallback: bool = False, skipped: str | None = None, sigma_px: float | None = None,
                     image_sha256: str = "x", tokens: list[str] | None = None, benchmark: str = "salbench.syn",
                     **more: Any) -> TrialRecord:
    """One VSI record (:func:`plant_record`) of ``task``: sample ``sample`` under condition ``cond``
    ('clean' or a perturbation), first-token distribution token ids ``ids`` with log-probabilities
    ``lps`` (natural log), ground truth 'B'.  A clean record carries ``response``, max_prob
    exp(lps[0]) and the verbal confidence ``conf``; a perturbed one no response.  ``skipped``
    marks the trial skipped with that reason; ``sigma_px`` the blur sigma recorded (default 0 for a
    clean record, else 20); ``image_sha256`` the hash of the image the distribution was computed on;
    ``tokens`` the token strings (default: the ids as strings); ``benchmark`` the sample's benchmark;
    ``more`` further ``run_meta`` keys."""
    clean = cond == "clean"
    vsi = {"sample_id": sample, "image_id": sample, "benchmark": benchmark, "condition": cond,
           "sigma_px": (0.0 if clean else 20.0) if sigma_px is None else sigma_px, "dilate_px": 4, "region_source": "exact", "region_bbox": [0, 0, 4, 4],
           "fallback": fallback, "answer_prefix": "", "top_k": 50, "token_ids": ids,
           "tokens": [str(i) for i in ids] if tokens is None else tokens,
           "logprobs": lps, "complete": False, "distribution_source": "hf_logits", "image_sha256": image_sha256,
           "max_prob": float(np.exp(lps[0])) if clean else None, "verbal_conf": conf if clean else None,
           "verbal_raw": None}
    extra = {"skipped": skipped} if skipped else {}
    return plant_record(task, stimulus_id=f"{sample}~{cond}", model=model, model_family="vlm",
                        readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed",
                        response=response if clean else None, ground_truth="B", manipulated_value=cond,
                        raw_output=raw_output, prompt_id=task.prompt_id, vsi=vsi, **extra, **more)
