"""One cache policy covers every model call of a VSI trial (issue 19 item 2): the clean answer
with its distribution, the confidence follow-up, the perturbed prefill distributions and the
probe features (the model's vision tower and the witness encoder).

Calls are counted with a spy on the model's methods and on the witness's ``embed``; cache
entries are inspected on disk (inode per entry: an entry rewritten by ``os.replace`` gets a new
one)."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.runner import RunConfig, run  # noqa: E402

TASK = "vsi.salbench.syn@n=4"
MODEL_CALLS = ("generate", "generate_with_distribution", "generate_with_distribution_and_follow_up",
               "generate_follow_up", "next_token_distributions", "next_token_distribution", "vision_features")


class Spy:
    """Counts, per method, the requests (or images) each model call of ``vlm`` carries."""

    def __init__(self, vlm):
        self.vlm, self.counts = vlm, Counter()
        for m in MODEL_CALLS:
            setattr(vlm, m, self._counting(m, getattr(vlm, m)))

    def _counting(self, name, fn):
        def call(first, *a, **kw):
            self.counts[name] += len(first) if isinstance(first, (list, tuple)) and name != "next_token_distribution" \
                else 1
            return fn(first, *a, **kw)
        return call


@pytest.fixture(scope="module")
def spy(tmp_path_factory):
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    return Spy(HFVLM(build_tiny_vlm("llava", tmp_path_factory.mktemp("tiny") / "llava", seed=0), name="tiny"))


@pytest.fixture
def witness_calls(monkeypatch):
    from perceptbench.models.default import EfficientNetLiteEncoder

    counts = Counter()
    embed = EfficientNetLiteEncoder.embed

    def counting(self, images, *a, **kw):
        counts["witness_embed"] += len(images)
        return embed(self, images, *a, **kw)
    monkeypatch.setattr(EfficientNetLiteEncoder, "embed", counting)
    return counts


def _run(spy, witness_calls, out: Path, mode: str) -> Counter:
    spy.counts.clear()
    witness_calls.clear()
    cfg = RunConfig(out=out, tasks=(TASK,), models=("tiny=hf:/tiny",), batch_size=4, cache_mode=mode)
    run(cfg, progress=False, load_model=lambda a: spy.vlm)
    return Counter({**spy.counts, **witness_calls})


def _entries(cache: Path) -> dict[str, int]:
    """Cache entry file -> inode."""
    return {str(p.relative_to(cache)): p.stat().st_ino for p in cache.rglob("*.json")}


def _without(obj, keys: tuple[str, ...]):
    if isinstance(obj, dict):
        return {k: _without(v, keys) for k, v in obj.items() if k not in keys}
    return [_without(v, keys) for v in obj] if isinstance(obj, list) else obj


def _records(out: Path, also: tuple[str, ...] = ()) -> list[dict]:
    """Records without run id and timestamps (and the keys in ``also``), by trial id."""
    recs = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    return sorted((_without(r, ("run_id", "timestamp", "started_at") + also) for r in recs),
                  key=lambda r: r["trial_id"])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_no_cache_neither_reads_nor_writes_any_vsi_call(spy, witness_calls, cache, tmp_path):
    fresh = _run(spy, witness_calls, tmp_path / "off1", "off")
    assert {"generate_with_distribution_and_follow_up", "next_token_distributions", "vision_features",
            "witness_embed"} <= set(fresh), fresh
    assert _entries(cache) == {}  # nothing written
    assert _run(spy, witness_calls, tmp_path / "use", "use") == fresh  # fills the cache
    before = _entries(cache)
    assert before
    # a filled cache is not read: every call reaches the model again, and nothing is rewritten
    assert _run(spy, witness_calls, tmp_path / "off2", "off") == fresh
    assert _entries(cache) == before


def test_refresh_cache_asks_again_for_every_vsi_call_and_rewrites(spy, witness_calls, cache, tmp_path):
    fresh = _run(spy, witness_calls, tmp_path / "use", "use")
    before = _entries(cache)
    assert _run(spy, witness_calls, tmp_path / "refresh", "refresh") == fresh
    after = _entries(cache)
    assert after.keys() == before.keys()  # the same keys
    assert [k for k in before if after[k] == before[k]] == []  # every entry written again
    assert _records(tmp_path / "refresh") == _records(tmp_path / "use")


def test_use_cache_second_run_in_new_directory_calls_no_model(spy, witness_calls, cache, tmp_path):
    fresh = _run(spy, witness_calls, tmp_path / "first", "use")
    assert sum(fresh.values()) > 0
    assert _run(spy, witness_calls, tmp_path / "second", "use") == Counter()
    # a follow-up answer served from the cache records no KV-cache reuse (None), as before
    assert _records(tmp_path / "second", ("confidence_kv_reuse",)) == \
        _records(tmp_path / "first", ("confidence_kv_reuse",))
    for d in ("first", "second"):
        assert sorted(os.listdir(tmp_path / d / "features"))
    assert {p.name: p.read_bytes() for p in (tmp_path / "second" / "features").glob("*.npz")} == \
        {p.name: p.read_bytes() for p in (tmp_path / "first" / "features").glob("*.npz")}
