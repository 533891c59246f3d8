"""The one helper for planting trial records: :func:`plant_record` builds one valid
:class:`~perceptbench.records.TrialRecord`, :func:`plant_records` writes records to a
``records.jsonl`` as a run would."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perceptbench.records import RecordStore, TrialRecord, make_trial_id, score_correct
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
