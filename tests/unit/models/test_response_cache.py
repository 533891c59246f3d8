"""ResponseCache / CachedVLM: hits skip the model, any input change misses, corrupt files are misses."""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest
from PIL import Image

from perceptbench.models.base import VLM, PartialAnswers, VLMRequest
from perceptbench.models.response_cache import CachedVLM, ResponseCache, StaleCacheError, canonical_json, image_sha256


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


class _ScriptedVLM:
    """Answers ``answer(prompt)``; records every generate call's (prompts, batch_size)."""

    name = "scripted"
    family = "api"
    supports_multi_image = False

    def __init__(self, answer=lambda p: f"ans:{p}", verify=False):
        self.model_version = "scripted@1"
        self.generation_settings = {"temperature": 0}
        self.answer = answer
        self.verify_cache_hits = verify
        self.batches: list[tuple[list[str], int]] = []

    def generate(self, requests, batch_size=8):
        self.batches.append(([r.prompt for r in requests], batch_size))
        out = self.answer(requests[0].prompt) if len(requests) == 1 else None
        return out if isinstance(out, list) else [self.answer(r.prompt) for r in requests]

    def next_token_distribution(self, image, prompt, top_k=None):
        return ("dist", image, prompt, top_k)


def _req(i):
    return VLMRequest(images=(Image.new("RGB", (4, 4), (i, 0, 0)),), prompt=f"p{i}")


def test_cache_repr_mode_check_and_passthrough(tmp_path):
    cache = ResponseCache(tmp_path)
    assert repr(cache) == f"ResponseCache({str(tmp_path)!r})"
    with pytest.raises(ValueError, match=r"^cache mode 'x' not in \('use', 'refresh', 'off'\)$"):
        CachedVLM(_ScriptedVLM(), cache, mode="x")
    c = CachedVLM(_ScriptedVLM(), cache)
    assert (c.calls, c.hits, c.verified) == (0, 0, 0)
    from perceptbench.models.base import FirstTokenDistribution

    assert isinstance(c, FirstTokenDistribution)  # declared by the inner model, so by the wrapper


@pytest.mark.parametrize("chunk_size", [0, 1])
def test_chunk_size_floor_is_one(tmp_path, chunk_size):
    # chunk_size 0 or 1 -> one request per inner call; 3 misses -> 3 calls, default batch size 8 passed on
    inner = _ScriptedVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path), chunk_size=chunk_size)
    assert c.generate([_req(1), _req(2), _req(3)]) == ["ans:p1", "ans:p2", "ans:p3"]
    assert inner.batches == [(["p1"], 8), (["p2"], 8), (["p3"], 8)]


def test_key_for_request_uses_given_hashes(tmp_path):
    c = CachedVLM(_ScriptedVLM(), ResponseCache(tmp_path))
    r = _req(1)
    given = ["ab" * 32]
    assert c.key_for_request(r, given) == c.cache.key_for("scripted@1", "p1", given, c.request_settings(r))
    assert c.key_for_request(r, given) != c.key_for_request(r)
    with pytest.raises(ValueError, match="^one sha256 per attached image is required$"):
        c.key_for_request(r, [])


def test_verify_first_hit_once(tmp_path):
    CachedVLM(_ScriptedVLM(), ResponseCache(tmp_path)).generate([_req(1), _req(2)])
    inner = _ScriptedVLM(verify=True)
    c = CachedVLM(inner, ResponseCache(tmp_path))
    # both answers from the cache; the first hit (p1) is re-asked live once, alone, batch size 1
    assert c.generate([_req(1), _req(2)]) == ["ans:p1", "ans:p2"]
    assert (c.hits, c.calls, c.verified) == (2, 1, 1) and inner.batches == [(["p1"], 1)]
    c.generate([_req(2)])
    assert (c.hits, c.calls, c.verified) == (3, 1, 1)  # verified already: no second live call


LONG = "x" * 45


@pytest.mark.parametrize("live,now", [
    (lambda p: "y" * 45, "y" * 40),   # a different answer
    (lambda p: [], ""),               # no answer at all
    (lambda p: [LONG, LONG], LONG[:40]),  # two answers for one request
])
def test_verify_mismatch_raises_stale(tmp_path, live, now):
    CachedVLM(_ScriptedVLM(answer=lambda p: LONG), ResponseCache(tmp_path)).generate([_req(1)])
    c = CachedVLM(_ScriptedVLM(answer=live, verify=True), ResponseCache(tmp_path))
    msg = (f"scripted: a cached answer differs from what scripted@1 answers now (cached {LONG[:40]!r}, "
           f"now {now!r}): the model behind this name changed (or it is not deterministic); rerun with "
           "--refresh-cache, or pin the version (URL#MODEL@VERSION)")
    with pytest.raises(StaleCacheError) as e:
        c.generate([_req(1)])
    assert str(e.value) == msg


def test_canonical_json_exact_form():
    # sorted keys, no spaces, non-ASCII kept, NaN refused
    assert canonical_json({"b": 1, "a": "é", "c": [1, 2.5]}) == '{"a":"é","b":1,"c":[1,2.5]}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_image_sha256_by_hand():
    im = Image.new("RGB", (2, 1), (1, 2, 3))
    # sha256(b"RGB:2x1:" + raw pixel bytes), perceptbench.seeding.image_sha256
    assert image_sha256(im) == hashlib.sha256(b"RGB:2x1:" + bytes([1, 2, 3, 1, 2, 3])).hexdigest()
    assert image_sha256(im.convert("RGBA")) != image_sha256(im)  # the mode is hashed


def test_key_and_path_by_hand(tmp_path):
    cache = ResponseCache(tmp_path / "a" / "b")  # nested folders are created
    payload = {"schema": 1, "model_version": "v", "prompt_sha256": hashlib.sha256(b"p").hexdigest(),
               "image_sha256s": ["s"], "generation_settings": {"t": 0}}
    key = hashlib.sha256(canonical_json(payload).encode()).hexdigest()
    assert ResponseCache.key_for("v", "p", ["s"], {"t": 0}) == key
    assert cache.path_for(key) == tmp_path / "a" / "b" / key[:2] / f"{key}.json"
    for bad in (key[:63], "X" * 64, key[:63] + "g"):
        with pytest.raises(ValueError, match=rf"^not a cache key \(64 lowercase hex chars\): {bad!r}$"):
            cache.path_for(bad)
    with pytest.raises(TypeError, match="^text must be str, got int$"):
        cache.put(key, 5)


def test_put_recreates_a_removed_directory_and_replaces_from_a_hidden_sibling(tmp_path, monkeypatch):
    import shutil

    cache = ResponseCache(tmp_path / "c")
    shutil.rmtree(tmp_path / "c")  # removed after construction: put creates it again
    key = "ab" * 32
    real_replace = os.replace
    seen = []

    def replace(src, dst):
        # atomic publish: the temporary file is a hidden sibling of the entry
        seen.append((os.path.dirname(src) == os.path.dirname(dst), os.path.basename(src).startswith(".")))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    cache.put(key, "hello")
    assert seen == [(True, True)] and cache.get(key) == "hello"


def test_put_failure_removes_the_temporary_file(tmp_path, monkeypatch):
    cache = ResponseCache(tmp_path)

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="^disk full$"):
        cache.put("cd" * 32, "x")
    monkeypatch.undo()
    assert list((tmp_path / "cd").iterdir()) == []


def test_generate_modes_meta_and_given_hashes(tmp_path):
    from perceptbench.models.response_cache import StaleCacheError  # noqa: F401  (module import check)

    inner = _ScriptedVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    # two distinct misses in one chunk each get their own answer; batch size passed on
    assert c.generate([_req(1), _req(2)], batch_size=3) == ["ans:p1", "ans:p2"]
    assert inner.batches == [(["p1", "p2"], 3)]
    e = c.cache.get_entry(c.key_for_request(_req(1)))
    assert e["meta"] == {"model": "scripted", "model_version": "scripted@1",
                         "prompt_sha256": hashlib.sha256(b"p1").hexdigest(),
                         "generation_settings": {"temperature": 0, "request_max_new_tokens": 40}}
    # given stimulus hashes are the key
    c.generate([_req(3)], image_sha256s=[["ef" * 32]])
    assert c.key_for_request(_req(3), ["ef" * 32]) in c.cache
    assert c.key_for_request(_req(3)) not in c.cache
    with pytest.raises(ValueError, match="^image_sha256s must have one entry per request$"):
        c.generate([_req(3)], image_sha256s=[])
    # refresh: the cached answer is not read, the new one overwrites it
    r = CachedVLM(_ScriptedVLM(answer=lambda p: "new"), ResponseCache(tmp_path), mode="refresh")
    assert r.generate([_req(1)]) == ["new"] and r.hits == 0 and c.cache.get(c.key_for_request(_req(1))) == "new"


def test_generate_off_mode_writes_nothing(tmp_path):
    inner = _ScriptedVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path / "off"), mode="off")
    # the same request twice: asked once, both slots filled; nothing stored
    assert c.generate([_req(1), _req(1), _req(2)]) == ["ans:p1", "ans:p1", "ans:p2"]
    assert inner.batches == [(["p1", "p2"], 8)] and c.calls == 2
    assert list((tmp_path / "off").iterdir()) == []


def test_generate_counts_and_verification_edge_cases(tmp_path):
    inner = _ScriptedVLM(verify=True)
    c = CachedVLM(inner, ResponseCache(tmp_path))
    # verification wanted but nothing cached yet: no live re-ask
    assert c.generate([_req(1)]) == ["ans:p1"] and (c.calls, c.verified) == (1, 0)
    # now a hit: re-asked live once; calls counts on from 1 to 2
    assert c.generate([_req(1)]) == ["ans:p1"] and (c.calls, c.hits, c.verified) == (2, 1, 1)
    bad = CachedVLM(_ScriptedVLM(answer=lambda p: ["a", "b"]), ResponseCache(tmp_path / "b"))
    with pytest.raises(RuntimeError, match="^inner model returned 2 answers for 1 requests$"):
        bad.generate([_req(5)])


def test_default_chunk_is_64_requests(tmp_path):
    # 65 distinct misses with the default chunk size 64 -> two inner calls of 64 and 1
    inner = _ScriptedVLM()
    CachedVLM(inner, ResponseCache(tmp_path), mode="off").generate([_req(i) for i in range(65)])
    assert [len(p) for p, _ in inner.batches] == [64, 1]


def test_a_lone_surrogate_from_the_model_is_stored_and_served_normalised(tmp_path):
    """Issue 20 item 4: a model's text with half an emoji is stored in the cache (a failed cache
    write used to abort every rerun the same way) and returned as the cache serves it."""
    inner = _ScriptedVLM(answer=lambda p: f"2 \ud83d {p}")
    c = CachedVLM(inner, ResponseCache(tmp_path))
    first = c.generate([_req(1), _req(2)])
    assert first == ["2 \ufffd p1", "2 \ufffd p2"]
    again = CachedVLM(inner, ResponseCache(tmp_path)).generate([_req(1), _req(2)])
    assert again == first and len(inner.batches) == 1  # served from the cache, the same text


class _PartlyFailingVLM(_ScriptedVLM):
    """Answers every prompt but ``fail``; the batch raises PartialAnswers with None there
    (an API client whose request for that prompt failed for good)."""

    def __init__(self, fail="p2"):
        super().__init__()
        self.fail = fail
        self.error = RuntimeError("HTTP 500")

    def generate(self, requests, batch_size=8):
        self.batches.append(([r.prompt for r in requests], batch_size))
        raise PartialAnswers([None if r.prompt == self.fail else f"ans:{r.prompt}" for r in requests], self.error)


def test_partial_answers_are_stored_and_raised_over_the_callers_requests(tmp_path):
    inner = _PartlyFailingVLM(fail="p2")
    c = CachedVLM(inner, ResponseCache(tmp_path), chunk_size=3)
    # the failed request comes first in its chunk; p1 is asked twice; p4 is in a chunk not sent
    reqs = [_req(2), _req(1), _req(3), _req(1), _req(4)]
    with pytest.raises(PartialAnswers) as e:
        c.generate(reqs)
    assert inner.batches == [(["p2", "p1", "p3"], 8)]
    assert e.value.answers == [None, "ans:p1", "ans:p3", "ans:p1", None]
    assert e.value.error is inner.error and e.value.__cause__ is inner.error
    assert str(e.value) == "HTTP 500 (3 of 5 answers of the batch arrived and are kept)"
    assert c.calls == 2 and c.hits == 0
    # what arrived is stored (the answers after the failed one too); the failed and unsent are not
    stored = {f"p{i}": c.cache.get(c.key_for_request(_req(i))) for i in (1, 2, 3, 4)}
    assert stored == {"p1": "ans:p1", "p2": None, "p3": "ans:p3", "p4": None}


def test_an_answer_the_inner_model_leaves_out_is_returned_empty_and_not_stored(tmp_path):
    # an inner model that returns None for a request without raising: "" for that request (read as a
    # null response downstream), neither stored nor counted as a call; the others as usual
    inner = _ScriptedVLM(answer=lambda p: None if p == "p1" else f"ans:{p}")
    c = CachedVLM(inner, ResponseCache(tmp_path))
    assert c.generate([_req(1), _req(2), _req(1)]) == ["", "ans:p2", ""]
    assert c.calls == 1 and c.cache.get(c.key_for_request(_req(1))) is None
    assert c.cache.get(c.key_for_request(_req(2))) == "ans:p2"


def test_a_clean_answer_keyed_on_its_budget_stores_the_model_version_as_meta(tmp_path):
    c = CachedVLM(_ScriptedVLM(), ResponseCache(tmp_path))
    assert c.generate([_req(1)], budget_in_key=True) == ["ans:p1"]
    entries = [json.loads(p.read_text("utf-8")) for p in tmp_path.rglob("*.json")]
    assert [(e["text"], e["meta"]) for e in entries] == [("ans:p1", {"model_version": "scripted@1"})]


def test_an_entry_is_written_through_a_hidden_temporary_file_named_after_its_key(tmp_path, monkeypatch):
    # the name put's docstring gives: a leftover of a killed writer is recognisable and never an entry
    import re

    cache = ResponseCache(tmp_path)
    key = "ab" * 32
    names = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (names.append(os.path.basename(src)), real_replace(src, dst)))
    cache.put(key, "hello")
    assert len(names) == 1 and re.fullmatch(r"\.abababab\.[a-z0-9_]{8}\.tmp", names[0]), names


def test_entries_are_utf8_whatever_the_locale(tmp_path):
    """A cache is shared between runs and machines: its files are UTF-8 under any locale.  Under the
    C locale (ASCII; this process is not in Python's UTF-8 mode) a non-ASCII answer written under the
    process's own locale is read back, and one written under C is stored as UTF-8."""
    import locale

    cache = ResponseCache(tmp_path)
    k1, k2 = "ab" * 32, "cd" * 32
    cache.put(k1, "é ✓")
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        read_back = cache.get(k1)
        cache.put(k2, "ü")
        written = cache.path_for(k2).read_bytes()
    finally:
        locale.setlocale(locale.LC_CTYPE, old)
    assert read_back == "é ✓" and cache.get(k2) == "ü"
    assert cache.path_for(k1).read_bytes().count("é ✓".encode("utf-8")) == 1 and "ü".encode("utf-8") in written
