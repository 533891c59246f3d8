"""``--executor ray`` on a real local Ray cluster (2 CPUs on 127.0.0.1, started here):
records identical to a local run apart from run ids (one shard per task and model); a worker killed with kill -9 mid-shard
is restarted and its shard rerun, and every trial is in the file exactly once."""

import json
import os
import signal
import threading
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")  # .ci/run installs it
pytest.importorskip("torch", reason="model extra not installed")
psutil = pytest.importorskip("psutil")

from perceptbench.records import read_records  # noqa: E402
from perceptbench.runner import RunConfig, run  # noqa: E402

TASK = "similarity.chart.mark_color"  # 120 test trials on the default encoder, odd-one-out readout


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    import torch

    # Ray gives each 1-CPU worker OMP_NUM_THREADS=1; torch's float reductions depend on the
    # thread count, so the local reference runs on one thread too (else raw_output's cosines
    # can differ in the 6th decimal)
    out = tmp_path_factory.mktemp("local")
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run(RunConfig(out=out, tasks=[TASK]), progress=False)
    finally:
        torch.set_num_threads(n)
    return out


def _by_trial(path):
    out = {}
    for r in read_records(path):
        d = r.model_dump(mode="json")
        d["run_meta"].pop("run_id")
        out[r.trial_id] = d
    return out


def test_ray_records_equal_local(cluster, local_run, tmp_path):
    s = run(RunConfig(out=tmp_path, tasks=[TASK]), progress=False, executor="ray", ray_options={"workers": 2})
    assert s.per_task_model[(TASK, "efficientnet-lite0")] == 120
    got, want = _by_trial(tmp_path / "records.jsonl"), _by_trial(local_run / "records.jsonl")
    assert got.keys() == want.keys()
    diff = [t for t in want if got[t] != want[t]]
    assert not diff, (diff[:3], got[diff[0]], want[diff[0]]) if diff else None
    # a rerun (on Ray) finds everything done
    s2 = run(RunConfig(out=tmp_path, tasks=[TASK]), progress=False, executor="ray", ray_options={"workers": 2})
    assert s2.written == 0 and s2.skipped == 120


def _shard_workers():
    """PIDs of actor processes running a shard right now (Ray titles them ray::ShardWorker.run_shard)."""
    pids = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if "ShardWorker.run_shard" in cmd:
            pids.append(p.info["pid"])
    return pids


def test_worker_killed_mid_run_is_retried_exactly_once(cluster, local_run, tmp_path):
    errors = []

    def go():
        try:
            run(RunConfig(out=tmp_path, tasks=[TASK]), progress=False, executor="ray",
                ray_options={"workers": 2, "chunk_size": 20})
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=go)
    t.start()
    killed = None
    deadline = time.time() + 300
    while killed is None and t.is_alive() and time.time() < deadline:
        pids = _shard_workers()
        if pids:
            killed = pids[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    t.join(600)
    assert not errors, errors
    assert killed is not None, "no worker was seen running a shard"
    assert not psutil.pid_exists(killed) or psutil.Process(killed).status() == psutil.STATUS_ZOMBIE
    lines = (tmp_path / "records.jsonl").read_text().splitlines()
    ids = [json.loads(x)["trial_id"] for x in lines]
    assert len(ids) == len(set(ids))  # exactly once
    _same_up_to_rounding(tmp_path / "records.jsonl", local_run / "records.jsonl")


def _same_up_to_rounding(path, ref):
    """Every field equal except run_id; encoder raw_output decision values within 2e-6 (other
    batches than the reference embed the images: float rounding only)."""
    got, want = _by_trial(path), _by_trial(ref)
    assert got.keys() == want.keys()
    for t in want:  # shards of 20 embed in other batches than the local run: float rounding only
        g, w = json.loads(got[t].pop("raw_output")), json.loads(want[t].pop("raw_output"))
        assert got[t] == want[t]
        if got[t]["model_family"] == "human":
            assert g == w
            continue
        assert g.keys() == w.keys(), (t, g, w)
        assert all(np.allclose(np.asarray(g[k], float), np.asarray(w[k], float), rtol=0, atol=2e-6)
                   for k in g), (t, g, w)
        assert got[t] == want[t]


def test_local_run_resumed_on_ray(cluster, local_run, tmp_path):
    """A run started locally (10 stimuli) and finished on Ray holds every trial once."""
    from perceptbench.tasks import get_task

    first = [s.stimulus_id for s in get_task(TASK).stimuli(0) if s.split == "test"][:10]
    run(RunConfig(out=tmp_path, tasks=[TASK], stimuli=first), progress=False)
    s = run(RunConfig(out=tmp_path, tasks=[TASK]), progress=False, executor="ray", ray_options={"workers": 2})
    assert s.skipped == 10 and s.per_task_model[(TASK, "efficientnet-lite0")] == 110
    _same_up_to_rounding(tmp_path / "records.jsonl", local_run / "records.jsonl")


def test_vlm_on_ray_equals_local_in_several_shards(cluster, tmp_path):
    """The VLM path (run_vlm_task in ShardWorker actors, each loading the tiny LLaVA once):
    6 stimuli cut into 3 shards of 2 over 2 actors give the same records as a local run
    (greedy decoding; the local run on one torch thread like the 1-CPU Ray workers), and a
    rerun on Ray writes nothing."""
    import torch

    from perceptbench.tasks import get_task
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    vlm = build_tiny_vlm("llava", tmp_path / "tiny-llava")
    first = [s.stimulus_id for s in get_task(TASK).stimuli(0) if s.split == "test"][:6]

    def cfg(out):
        return RunConfig(out=out, tasks=[TASK], models=[f"hf:{vlm}"], stimuli=first)

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        run(cfg(tmp_path / "local"), progress=False)
    finally:
        torch.set_num_threads(n)
    s = run(cfg(tmp_path / "ray"), progress=False, executor="ray",
            ray_options={"workers": 2, "chunk_size": 2})
    assert s.per_task_model[(TASK, "tiny-llava")] == 6
    got, want = _by_trial(tmp_path / "ray" / "records.jsonl"), _by_trial(tmp_path / "local" / "records.jsonl")
    assert got.keys() == want.keys()
    model_trials = [t for t in want if want[t]["model"] == "tiny-llava"]
    assert len(model_trials) == 6
    diff = [t for t in want if got[t] != want[t]]
    assert not diff, (diff[:3], got[diff[0]], want[diff[0]]) if diff else None
    s2 = run(cfg(tmp_path / "ray"), progress=False, executor="ray", ray_options={"workers": 2, "chunk_size": 2})
    assert s2.written == 0 and s2.skipped == 6
