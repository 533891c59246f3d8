"""The VSI respondent's run-time path (issue 25): a tiny-LLaVA VSI run with the KV cache grown in
place writes the same records, field by field, as with transformers' own cache (answers, parses,
top-50 distributions, verbalised confidence, hashes)."""

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.models.response_cache import CachedVLM, ResponseCache
from perceptbench.records import RecordStore
from perceptbench.respond.base import Job
from perceptbench.tasks import get_task
from perceptbench.testing.tiny_vlm import build_tiny_llava
from perceptbench.vsi.respondent import run_vsi_task, vsi_job_context


def _vsi_records(vlm, tmp: Path, name: str) -> list[dict]:
    """The records of one VSI run of ``vlm`` (empty response cache), as written."""
    task = get_task("vsi.salbench.syn@n=5")  # 15 trials: a full batch of 4 and a ragged one per condition
    stim = task.stimuli(0)
    cached = CachedVLM(vlm, ResponseCache(tmp / f"cache-{name}"))
    path = tmp / f"{name}.jsonl"
    with RecordStore(path) as store:
        job = Job(task, vlm, cached.name, stim, [], store, 0, "run", tmp)
        n, hits, _ = run_vsi_task(vsi_job_context(job, cached), cached, store, stim, 4, lambda k: None)
    assert n == len(stim) and hits == 0
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_records_with_the_in_place_kv_cache_equal_the_old_path_field_by_field(tmp_path):
    from perceptbench.models.vlm_hf import HFVLM

    vlm = HFVLM(build_tiny_llava(tmp_path / "tiny-llava", init_range=1.0))
    assert vlm.kv_in_place and vlm._cache_kwargs()  # the new path is the default and applies to LLaVA
    new = _vsi_records(vlm, tmp_path, "new")
    vlm.kv_in_place = False
    old = _vsi_records(vlm, tmp_path, "old")
    assert len(new) == len(old) == 15
    clean = [r for r in new if r["readout"] == "vlm_vsi_clean"]
    assert clean and all(r["run_meta"]["vsi"]["verbal_raw"] is not None for r in clean)  # the follow-up ran
    assert all(r["run_meta"]["vsi"]["confidence_kv_reuse"] for r in clean)
    for a, b in zip(old, new):
        assert a.keys() == b.keys()
        for key in a:
            assert a[key] == b[key], (a["trial_id"], key)
