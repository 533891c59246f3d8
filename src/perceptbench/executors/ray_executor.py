"""``perceptbench run --executor ray``: tasks x models x chunks of stimuli on a Ray cluster.

Needs the ``ray`` extra (``pip install "perceptbench[ray]"``); nothing else in perceptbench
imports this module.  Work is cut into shards of one task, one model and up to
``chunk_size`` pending test stimuli.  Each model gets a pool of actors (:class:`ShardWorker`),
each of which loads the model once (``num_gpus=gpus_per_model`` per actor when asked) and
rebuilds the task's stimuli from the seed (deterministic), so only stimulus ids travel.  A
shard runs the local executor's own entry point (:func:`perceptbench.respond.run_trials`) into an
in-memory collector and returns the records as JSON lines; the **driver** validates them and
appends them to the one ``records.jsonl`` through :class:`~perceptbench.records.RecordStore`,
exactly as a local run does.  So resume, kill -9 safety (records reach the file only whole,
from one process) and ``score`` are unchanged, and a shard lost with its worker is simply run
again: actors are restarted (``max_restarts``) and their calls retried (``max_task_retries``);
a trial the store already holds is never written twice.

The VLM response cache and VSI probe features are written by the workers under the run
directory, so on a multi-node cluster that directory must be on a shared file system (a local
cluster on one machine always is).  API models get bounded concurrency across the cluster by
the size of their actor pool (``workers``).
"""

from __future__ import annotations

import os
import types
from pathlib import Path
from typing import Callable

from ..respond import DEFAULT_CONDITION, Job, run_trials
from ..respond.base import trial_stimuli
from ..core.conditions import respondent_label

__all__ = ["ShardWorker", "run_plan", "start_cluster"]


def start_cluster(address: str | None = None):
    """Join (``address``) or start (None) the Ray cluster, once per process; returns the ``ray``
    module.  The runner calls this before anything is written, so a cluster that cannot be
    reached or a local node that does not start in time fails with nothing on disk.

    Raises ImportError without the ``ray`` extra and RuntimeError (one line naming the address
    and Ray's own first line) when Ray cannot start or connect."""
    try:
        import ray
    except ImportError:
        raise ImportError('--executor ray needs Ray: pip install "perceptbench[ray]"') from None
    if not ray.is_initialized():
        import logging

        # Ray's own INFO/WARNING lines ("Started a local Ray instance", token-auth notice) stay out of
        # perceptbench's output: logging_level sets the driver's "ray" logger (Ray docs, ray.init);
        # errors still show; workers' logs are not forwarded (log_to_driver=False)
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        except Exception as e:  # noqa: BLE001 - ConnectionError, RuntimeError, TimeoutError ... all one to the user
            why = (str(e).strip().splitlines() or [""])[0][:300]
            raise RuntimeError(f"--executor ray: the Ray cluster {'at ' + address if address else '(local)'} "
                               f"did not start ({type(e).__name__}: {why}); nothing was written") from None
    return ray


class _Collector:
    """Stands in for :class:`~perceptbench.records.RecordStore` inside a worker: keeps the
    records a shard produces (deduplicated by trial id) instead of writing them."""

    def __init__(self):
        self.lines: list[str] = []
        self.done: set[str] = set()

    def append(self, records) -> int:
        n = 0
        for r in records:
            if r.trial_id in self.done:
                continue
            self.done.add(r.trial_id)
            self.lines.append(r.to_json_line())
            n += 1
        return n


class ShardWorker:
    """A Ray actor body: one model, loaded once in ``__init__``; :meth:`run_shard` runs one
    task on a list of test stimulus ids and returns ``(json lines, cache hits, cache requests)``."""

    def __init__(self, model_arg: str, seed: int, run_id: str, batch_size: int | None, out: str, cache_mode: str,
                 runtime=None):
        from ..models.registry import load_model

        self.model = load_model(model_arg, runtime)
        self.seed, self.run_id, self.batch_size, self.out, self.cache_mode = seed, run_id, batch_size, Path(out), cache_mode
        self._stimuli: dict[str, tuple] = {}

    def pid(self) -> int:
        """The worker's process id (tests kill it)."""
        return os.getpid()

    def model_info(self) -> dict:
        """What the driver's resume check needs of the loaded model."""
        from ..models.base import VLM, Identified, RuntimeDeclared
        from ..respond import model_kind

        m = self.model
        return {"name": m.name, "model_version": m.model_version, "kind": model_kind(m),
                "generation_settings": dict(m.generation_settings) if isinstance(m, VLM) else {},
                "runtime_settings": dict(m.runtime_settings) if isinstance(m, RuntimeDeclared) else {},
                "family": m.family, "identity_warning": m.identity_warning if isinstance(m, Identified) else None}

    def _task(self, spec: str):
        """The task of ``spec`` (:attr:`perceptbench.tasks.base.Task.spec`: its settings with
        their paths, which the task id leaves out or names by content) and its stimuli."""
        if spec not in self._stimuli:
            from ..tasks import get_task

            task = get_task(spec)
            self._stimuli[spec] = (task, task.stimuli(self.seed))
        return self._stimuli[spec]

    def run_shard(self, task_id: str, stimulus_ids: list[str], extra_meta: dict, condition: str = DEFAULT_CONDITION
                  ) -> tuple[list[str], int, int]:
        """Answer ``stimulus_ids`` of ``task_id`` under ``condition`` through
        :func:`perceptbench.respond.run_trials` (the local executor's entry point)."""
        task, stimuli = self._task(task_id)
        by_id = {s.stimulus_id: s for s in trial_stimuli(task, stimuli, condition)}
        job = Job(task, self.model, self.model.name, [by_id[s] for s in stimulus_ids],
                  [s for s in stimuli if s.split == "probe_train"], _Collector(), self.seed, self.run_id, self.out,
                  self.batch_size, self.cache_mode, extra_meta, condition=condition)
        res = run_trials(job)
        return job.sink.lines, res.cache_hits, res.cache_requests


def _chunks(xs: list, n: int):
    for i in range(0, len(xs), n):
        yield xs[i:i + n]


def run_plan(plan: list, *, store, seed: int, run_id: str, batch_size: int | None, out: Path, cache_mode: str,
             extra_meta: Callable[[], dict], gate: Callable[[str, object], None],
             advance: Callable[[int, int], None] | None = None, address: str | None = None,
             gpus_per_model: float = 0, workers: int | None = None, chunk_size: int | None = None,
             max_retries: int = 3, runtime=None) -> dict:
    """Run the local runner's ``plan`` (tuples ``(task, stimuli, model_arg, name, pending, condition)``)
    on Ray and append every returned record to ``store`` from this (driver) process.

    ``address``: a running cluster (``ray.init(address=...)``); None joins the cluster this
    process already initialised, else starts a local one.  ``workers``: actors per model
    (default: the cluster's CPU count, or its GPU count / ``gpus_per_model``).  ``gate(name,
    model_info)`` is called once per model before its shards run (the resume checks).
    ``runtime``: the local models' device, dtype and attention implementation
    (:class:`perceptbench.models.runtime.Runtime`; ``None``: CPU, float32).  ``chunk_size``: test stimuli per shard; None: all of a (task, model)'s pending stimuli in
    one shard, which gives records identical to a local run.  Smaller shards embed images in
    other batches than a local run (the odd-one-out readout's component cache starts empty
    per shard), which can move float rounding in ``raw_output``'s 6th decimal; responses
    are the same.  ``advance(plan_index, n)`` reports progress.  Returns ``{(task_id, name): (written, hits,
    requests)}``.  Raises ImportError without the ``ray`` extra, and whatever a shard raised
    once its retries are spent (``ray.exceptions.RayTaskError`` / ``ActorDiedError``)."""
    from ..records import parse_record_line

    ray = start_cluster(address)
    res = ray.cluster_resources()
    if workers is None:
        workers = int(res.get("GPU", 0) // gpus_per_model) if gpus_per_model else int(res.get("CPU", 1))
    workers = max(1, workers)
    Actor = ray.remote(ShardWorker).options(num_cpus=1, num_gpus=gpus_per_model or 0,
                                            max_restarts=max_retries, max_task_retries=max_retries)
    result: dict = {}
    by_model: dict[str, list[int]] = {}
    for i, (_, _, arg, _, _, _) in enumerate(plan):
        by_model.setdefault(arg, []).append(i)
    for arg, idxs in by_model.items():
        name = plan[idxs[0]][3]
        shards = [(i, plan[i][0].spec, [s.stimulus_id for s in chunk], plan[i][5])  # spec: paths included
                  for i in idxs for chunk in _chunks(plan[i][4], chunk_size or max(1, len(plan[i][4])))]
        pool = [Actor.remote(arg, seed, run_id, batch_size, str(out), cache_mode, runtime)
                for _ in range(min(workers, max(1, len(shards))))]
        gate(name, types.SimpleNamespace(**ray.get(pool[0].model_info.remote())))
        meta = extra_meta()
        for i in idxs:
            result[(plan[i][0].task_id, respondent_label(name, plan[i][5]))] = [0, 0, 0]
        todo = list(shards)
        running: dict = {}
        free = list(pool)
        try:
            while todo or running:
                while todo and free:  # one shard in flight per actor: a dead worker loses one shard
                    i, tid, ids, cond = todo.pop(0)
                    a = free.pop(0)
                    running[a.run_shard.remote(tid, ids, meta, cond)] = (a, i, tid, len(ids))
                ready, _ = ray.wait(list(running), num_returns=1)
                a, i, tid, k = running.pop(ready[0])
                lines, hits, reqs = ray.get(ready[0])
                recs = [parse_record_line(ln, f"ray shard {tid}|{name}") for ln in lines]
                acc = result[(plan[i][0].task_id, respondent_label(name, plan[i][5]))]
                acc[0] += store.append(recs)
                acc[1] += hits
                acc[2] += reqs
                free.append(a)
                if advance is not None:
                    advance(i, k)
        finally:
            for a in pool:
                ray.kill(a)
    return {k: tuple(v) for k, v in result.items()}
