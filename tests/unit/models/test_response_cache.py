"""ResponseCache / CachedVLM: hits skip the model, any input change misses, corrupt files are misses."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from PIL import Image

from perceptbench.models.base import VLM, VLMRequest
from perceptbench.models.response_cache import CachedVLM, ResponseCache, image_sha256


class CountingVLM:
    """A deterministic inner model that records every request it is asked to answer."""

    name = "counting"
    family = "vlm"
    supports_multi_image = True

    def __init__(self, version="counting@1", settings=None):
        self.model_version = version
        self.generation_settings = settings or {"decoding": "greedy", "max_new_tokens": 40}
        self.seen: list[VLMRequest] = []

    def generate(self, requests, batch_size=8):
        self.seen.extend(requests)
        return [
            f"{r.prompt[:12]}|{'+'.join(image_sha256(im)[:6] for im in r.images)}|{self.model_version}"
            for r in requests
        ]

    def next_token_distribution(self, image, prompt, top_k=None):
        raise NotImplementedError


def _img(seed, size=(32, 32)):
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _reqs():
    return [VLMRequest(images=(_img(i),), prompt=f"Which one? Answer 1, 2, or 3. #{i}") for i in range(5)]


def test_second_call_makes_no_inner_calls(tmp_path):
    inner = CountingVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    assert isinstance(c, VLM)
    first = c.generate(_reqs())
    assert c.calls == 5 and c.hits == 0 and len(inner.seen) == 5
    # a new process: fresh wrapper and cache object over the same directory
    inner2 = CountingVLM()
    c2 = CachedVLM(inner2, ResponseCache(tmp_path))
    second = c2.generate(_reqs())
    assert second == first
    assert c2.calls == 0 and c2.hits == 5 and inner2.seen == []


def test_any_input_change_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    base = VLMRequest(images=(_img(1), _img(2)), prompt="Answer 1, 2, or 3.")
    CachedVLM(CountingVLM(), cache).generate([base])
    variants = {
        "prompt": (CountingVLM(), VLMRequest(base.images, "Answer 1, 2 or 3.")),
        "image pixels": (CountingVLM(), VLMRequest((_img(1), _img(3)), base.prompt)),
        "image order": (CountingVLM(), VLMRequest((_img(2), _img(1)), base.prompt)),
        "one image fewer": (CountingVLM(), VLMRequest((_img(1),), base.prompt)),
        "max_new_tokens": (CountingVLM(), VLMRequest(base.images, base.prompt, max_new_tokens=8)),
        "settings": (CountingVLM(settings={"decoding": "greedy", "max_new_tokens": 20}), base),
        "model version": (CountingVLM(version="counting@2"), base),
    }
    for what, (inner, req) in variants.items():
        c = CachedVLM(inner, cache)
        c.generate([req])
        assert (c.calls, c.hits) == (1, 0), what
    # and the unchanged request still hits
    c = CachedVLM(CountingVLM(), cache)
    c.generate([base])
    assert (c.calls, c.hits) == (0, 1)


def test_key_is_canonical_and_order_sensitive():
    k = ResponseCache.key_for("m@1", "p", ["a" * 64, "b" * 64], {"x": 1, "y": [1, 2]})
    assert k == ResponseCache.key_for("m@1", "p", ["a" * 64, "b" * 64], {"y": [1, 2], "x": 1})  # dict order
    assert k != ResponseCache.key_for("m@1", "p", ["b" * 64, "a" * 64], {"x": 1, "y": [1, 2]})
    assert len(k) == 64 and int(k, 16) >= 0
    with pytest.raises(TypeError):
        ResponseCache.key_for("m", "p", [], {"bad": object()})


def test_image_hash_is_pixel_based():
    a = _img(5)
    assert image_sha256(a) == image_sha256(a.copy())
    assert image_sha256(a) != image_sha256(a.convert("RGBA"))  # the mode is part of the pixels hashed
    assert image_sha256(a) != image_sha256(_img(6))
    assert image_sha256(Image.new("RGB", (2, 8))) != image_sha256(Image.new("RGB", (8, 2)))


def test_one_image_one_cache_key_whatever_the_call_path(tmp_path):
    """A request whose images the cache hashes itself gets the key of the same request given
    the hashes records carry (``stimulus_sha256``: :func:`perceptbench.seeding.image_sha256`)."""
    from perceptbench.models.base import VLMRequest
    from perceptbench.seeding import image_sha256 as record_sha256

    cached = CachedVLM(CountingVLM(), ResponseCache(tmp_path))
    req = VLMRequest((_img(3), _img(4).convert("RGBA")), "which one?")
    assert cached.key_for_request(req) == cached.key_for_request(req, [record_sha256(im) for im in req.images])


@pytest.mark.parametrize(
    "garbage",
    [b"", b"{", b'{"schema": 1, "key": "', b"\xff\xfe\x00", b"[]", b'{"schema": 1}',
     b'{"schema": 999, "key": "KEY", "text": "x", "meta": {}}',
     b'{"schema": 1, "key": "0000", "text": "x", "meta": {}}',
     b'{"schema": 1, "key": "KEY", "text": 5, "meta": {}}'],
)
def test_corrupt_file_is_a_miss_and_is_overwritten(tmp_path, garbage):
    cache = ResponseCache(tmp_path)
    inner = CountingVLM()
    c = CachedVLM(inner, cache)
    req = _reqs()[0]
    key = c.key_for_request(req)
    p = cache.path_for(key)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(garbage.replace(b"KEY", key.encode()))
    assert cache.get(key) is None and key not in cache
    out = c.generate([req])
    assert (c.calls, c.hits) == (1, 0)
    assert cache.get(key) == out[0]  # overwritten with a valid entry
    data = json.loads(p.read_text())
    assert data["key"] == key and data["text"] == out[0]


def test_put_is_atomic_and_leaves_no_temp_files(tmp_path):
    cache = ResponseCache(tmp_path)
    key = ResponseCache.key_for("m", "p", [], {})
    cache.put(key, "first", {"a": 1})
    cache.put(key, "", {"a": 2})  # empty text (a refusal) is a valid cached answer
    assert cache.get(key) == ""
    assert cache.get_entry(key)["meta"] == {"a": 2}
    files = [f for _, _, fs in os.walk(tmp_path) for f in fs]
    assert files == [f"{key}.json"]
    with pytest.raises(ValueError):
        cache.path_for("../../etc/passwd")


def test_duplicates_within_a_call_are_generated_once(tmp_path):
    inner = CountingVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path), chunk_size=2)
    r = _reqs()
    out = c.generate([r[0], r[1], r[0], r[2], r[1]])
    assert len(inner.seen) == 3 and c.calls == 3
    assert out[0] == out[2] and out[1] == out[4]


def test_with_a_real_tiny_vlm(tmp_path):
    """End to end with HFVLM on a tiny LLaVA: rerun = zero model calls, identical text."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    d = build_tiny_vlm("llava", tmp_path / "llava")
    reqs = [VLMRequest(images=(_img(i, (64, 64)),), prompt="Answer 1, 2, or 3.", max_new_tokens=8) for i in range(4)]
    c1 = CachedVLM(HFVLM(d), ResponseCache(tmp_path / "cache"))
    a = c1.generate(reqs)
    assert c1.calls == 4
    c2 = CachedVLM(HFVLM(d), ResponseCache(tmp_path / "cache"))
    b = c2.generate(reqs)
    assert a == b and c2.calls == 0 and c2.hits == 4
    assert c2.model_version == c1.inner.model_version
