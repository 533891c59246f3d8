"""CachedVLM serves every capability it declares from the cache, under one policy (issue 19 item 2).

The inner model is a pure-Python double that implements every protocol of
:mod:`perceptbench.models.base` and logs each call, so these tests run in milliseconds (they are in
the mutation selection).  Each cached call kind is checked for: the key it is stored under (written
out by hand from the class docstring), what a hit returns, which requests reach the inner model on a
partial hit, what ``calls``/``hits`` count, the metadata stored, and the three cache modes
(``use`` reads and stores, ``refresh`` asks again and overwrites, ``off`` neither reads nor writes).
The same policy on a real tiny VLM running a VSI trial: tests/integration/test_cache_policy_vsi.py.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np
import pytest
from PIL import Image

from perceptbench.models import base as B
from perceptbench.models import response_cache as RC
from perceptbench.models.base import FOLLOW_UP_TURN, TokenDistribution, VLMRequest
from perceptbench.models.response_cache import CachedVLM, ResponseCache, dist_from_meta, dist_to_meta, image_sha256

VERSION = "fake@1"
SETTINGS = {"decoding": "greedy", "temperature": 0}


@dataclass
class FollowUpAnswer:
    """What a local model's follow-up turn returns: text plus whether the KV cache was reused."""

    text: str
    cache_reused: bool = True


def _dist(tag: str) -> TokenDistribution:
    """A distinct two-token distribution per ``tag`` (logprobs exact in JSON)."""
    x = (sum(map(ord, tag)) % 7 + 1) / 8
    return TokenDistribution((f"A{tag}", f"B{tag}"), np.array([-x, -2 * x]), False, (len(tag), len(tag) + 1))


class FullModel:
    """Implements every protocol; each answer carries ``salt`` so a re-asked answer can be told apart
    from a cached one.  ``log`` holds (method, what was asked) per call."""

    name = "fake"
    family = "vlm"
    supports_multi_image = True
    max_top_logprobs = 20
    identity = {"weights": "abc"}
    identity_warning = "name only"
    verify_cache_hits = False

    def __init__(self, salt: str = "", budget: int | None = None):
        self.model_version = VERSION
        self.generation_settings = dict(SETTINGS)
        self.salt, self.budget, self.log = salt, budget, []

    def answer_budget(self, request_max_new_tokens):
        return request_max_new_tokens if self.budget is None else self.budget

    def generate(self, requests, batch_size=8):
        self.log.append(("generate", [r.prompt for r in requests], batch_size))
        return [f"ans:{r.prompt}{self.salt}" for r in requests]

    def next_token_distribution(self, image, prompt, top_k=None):
        self.log.append(("next_token_distribution", image, prompt, top_k))
        return _dist(prompt + self.salt)

    def next_token_distributions(self, requests, top_k=50, batch_size=8, answer_prefix=""):
        self.log.append(("next_token_distributions", [r.prompt for r in requests], top_k, batch_size, answer_prefix))
        return [_dist(answer_prefix + r.prompt + self.salt) for r in requests]

    def generate_with_distribution(self, requests, top_k=50, batch_size=8, answer_prefix=""):
        self.log.append(("generate_with_distribution", [r.prompt for r in requests], top_k, batch_size,
                         answer_prefix))
        return [(f"ans:{r.prompt}{self.salt}", _dist(answer_prefix + r.prompt + self.salt)) for r in requests]

    def generate_follow_up(self, requests, answers, follow_up, max_new_tokens=8, batch_size=8, answer_prefix=""):
        self.log.append(("generate_follow_up", [r.prompt for r in requests], list(answers), follow_up,
                         max_new_tokens, batch_size, answer_prefix))
        return [FollowUpAnswer(f"conf:{r.prompt}:{a}{self.salt}") for r, a in zip(requests, answers)]

    def generate_with_distribution_and_follow_up(self, requests, follow_up, follow_up_max_new_tokens=8, top_k=50,
                                                 batch_size=8, answer_prefix=""):
        self.log.append(("generate_with_distribution_and_follow_up", [r.prompt for r in requests], follow_up,
                         follow_up_max_new_tokens, top_k, batch_size, answer_prefix))
        return [(f"ans:{r.prompt}{self.salt}", _dist(answer_prefix + r.prompt + self.salt),
                 FollowUpAnswer(f"conf:{r.prompt}{self.salt}")) for r in requests]

    def vision_features(self, images):
        self.log.append(("vision_features", len(images)))
        return np.array([[float(np.asarray(im).mean()), len(self.salt) + 0.25] for im in images], dtype=np.float64)

    def embed(self, images, batch_size=8):
        self.log.append(("embed", len(images), batch_size))
        return np.array([[float(np.asarray(im)[0, 0, 0]), 0.5, len(self.salt)] for im in images], dtype=np.float32)

    def embed_text(self, texts):
        self.log.append(("embed_text", list(texts)))
        return np.ones((len(texts), 3), dtype=np.float32)


class NoFollowUpTurnModel(FullModel):
    """The combined pass only: declares DistributionAndFollowUp but not FollowUpTurn."""

    generate_follow_up = None  # type: ignore[assignment]


def _img(i: int) -> Image.Image:
    return Image.new("RGB", (4, 4), (i, 2 * i, 3))


def _req(i: int, max_new_tokens: int = 40) -> VLMRequest:
    return VLMRequest(images=(_img(i),), prompt=f"p{i}", max_new_tokens=max_new_tokens)


def _key(prompt: str, shas, **settings) -> str:
    """The key the class docstring documents: model version, prompt, image hashes, settings."""
    return ResponseCache.key_for(VERSION, prompt, list(shas), dict(SETTINGS, **settings))


def _sha(i: int) -> str:
    return image_sha256(_img(i))


def _entries(directory) -> dict[str, dict]:
    """Every stored entry under ``directory``: key -> the entry's JSON."""
    out = {}
    for p in sorted(directory.rglob("*.json")):
        d = json.loads(p.read_text("utf-8"))
        out[d["key"]] = d
    return out


def _dist_key(prompt, shas, top_k, answer_prefix=""):
    return _key(prompt, shas, vsi_first_token={"top_k": top_k, "answer_prefix": answer_prefix})


def _budget_key(req, shas, budget, answer_prefix=""):
    extra = {"answer_prefix": answer_prefix} if answer_prefix else {}
    return _key(req.prompt, shas, request_max_new_tokens=req.max_new_tokens, max_new_tokens=budget, **extra)


def _follow_up_key(req, shas, answer, follow_up, max_new_tokens, budget, answer_prefix=""):
    conv = json.dumps({"turns": [req.prompt, answer_prefix + answer.strip(), follow_up],
                       "confidence_turn": FOLLOW_UP_TURN})
    return _key(conv, shas, request_max_new_tokens=max_new_tokens, max_new_tokens=budget,
                confidence_turn=FOLLOW_UP_TURN)


def _same(a: TokenDistribution, b: TokenDistribution) -> bool:
    return (a.tokens == b.tokens and np.array_equal(a.logprobs, b.logprobs) and a.complete == b.complete
            and a.token_ids == b.token_ids)


# --------------------------------------------------------------------------- the wrapper's class


def test_the_wrapper_class_is_made_once_per_capability_set_and_passes_identity_through(tmp_path):
    cache = ResponseCache(tmp_path)
    a, b = CachedVLM(FullModel(), cache), CachedVLM(FullModel(), cache)
    assert type(a) is type(b) and type(a) is not CachedVLM
    assert type(a).__name__ == ("CachedVLM[Answering,FirstToken,Batched,FollowUp,DistributionAndFollowUp,"
                                "VisionFeatures,Embed,EmbedText,Budget,TopLogprobs,Identity,Verifies]")
    assert type(a).__doc__ == CachedVLM.__doc__
    assert (a.name, a.model_version, a.family) == ("fake", VERSION, "vlm")
    assert a.supports_multi_image is True and a.generation_settings == SETTINGS
    assert (a.max_top_logprobs, a.identity, a.identity_warning, a.verify_cache_hits) == (
        20, {"weights": "abc"}, "name only", False)
    assert a.answer_budget(7) == 7 and CachedVLM(FullModel(budget=3), cache).answer_budget(7) == 3
    assert repr(a).startswith("CachedVLM(<") and repr(a).endswith(f", ResponseCache({str(tmp_path)!r}))")


def test_the_distribution_source_names_the_models_own_logits_or_a_providers_top_logprobs(tmp_path):
    class Provider(FullModel):
        next_token_distributions = None  # type: ignore[assignment]

    assert CachedVLM(FullModel(), ResponseCache(tmp_path)).distribution_source == "hf_logits"
    assert CachedVLM(Provider(), ResponseCache(tmp_path)).distribution_source == "api_top_logprobs"


def test_a_distribution_round_trips_through_its_meta_exactly():
    d = TokenDistribution(("a", " b"), np.array([-0.1, -2.5]), True, (5, 7))
    m = dist_to_meta(d, "hf_logits")
    assert m == {"token_ids": [5, 7], "tokens": ["a", " b"], "logprobs": [-0.1, -2.5], "complete": True,
                 "distribution_source": "hf_logits"}
    assert _same(dist_from_meta(json.loads(json.dumps(m))), d)
    no_ids = dist_from_meta(dist_to_meta(TokenDistribution(("x",), np.array([0.0]), False), "api_top_logprobs"))
    assert no_ids.token_ids is None and no_ids.complete is False and no_ids.logprobs.dtype == np.float64


# --------------------------------------------------------------------------- first-token distribution


def test_a_first_token_distribution_is_stored_under_its_documented_key_and_served_from_it(tmp_path):
    inner = FullModel()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    d = c.next_token_distribution(_img(1), "p1", top_k=5)
    assert inner.log == [("next_token_distribution", _img(1), "p1", 5)] and (c.calls, c.hits) == (1, 0)
    key = _dist_key("p1", [_sha(1)], 5)
    entry = _entries(tmp_path)[key]
    assert entry["meta"] == {"model_version": VERSION, "kind": "vsi_first_token"}
    assert json.loads(entry["text"]) == dist_to_meta(d, "hf_logits")
    # a new wrapper over the same directory: a hit, the inner model is not asked
    inner2 = FullModel(salt="!")
    c2 = CachedVLM(inner2, ResponseCache(tmp_path))
    assert _same(c2.next_token_distribution(_img(1), "p1", top_k=5), d)
    assert inner2.log == [] and (c2.calls, c2.hits) == (0, 1)
    # top_k, the prompt and the image are each in the key
    c2.next_token_distribution(_img(1), "p1", top_k=6)
    c2.next_token_distribution(_img(1), "p2", top_k=5)
    c2.next_token_distribution(_img(2), "p1", top_k=5)
    assert (c2.calls, c2.hits) == (3, 1)


def test_a_first_token_distribution_keys_on_given_hashes_and_on_image_lists_or_no_image(tmp_path):
    c = CachedVLM(FullModel(), ResponseCache(tmp_path))
    c.next_token_distribution([_img(1), _img(2)], "p", image_sha256s=["ab" * 32, "cd" * 32])
    c.next_token_distribution((_img(3),), "p")
    c.next_token_distribution(None, "p")
    assert set(_entries(tmp_path)) == {_dist_key("p", ["ab" * 32, "cd" * 32], None), _dist_key("p", [_sha(3)], None),
                                       _dist_key("p", [], None)}
    with pytest.raises(ValueError, match="^one sha256 per attached image is required$"):
        c.next_token_distribution(_img(1), "p", image_sha256s=[])


def test_an_unreadable_cached_distribution_is_a_miss_and_is_asked_again(tmp_path):
    cache = ResponseCache(tmp_path)
    key = _dist_key("p1", [_sha(1)], 5)
    for text in ("not json", json.dumps({"tokens": ["a"]}), json.dumps({"tokens": ["a"], "logprobs": [-1.0],
                                                                          "complete": True, "token_ids": 5})):
        cache.put(key, text)
        inner = FullModel()
        c = CachedVLM(inner, cache)
        assert _same(c.next_token_distribution(_img(1), "p1", top_k=5), _dist("p1"))
        assert len(inner.log) == 1 and (c.calls, c.hits) == (1, 0)


# --------------------------------------------------------------------------- batched distributions


def test_batched_distributions_ask_the_inner_model_for_the_misses_only(tmp_path):
    inner = FullModel()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    first = c.next_token_distributions([_req(1)], top_k=4, batch_size=2, answer_prefix="(")
    assert set(_entries(tmp_path)) == {_dist_key("p1", [_sha(1)], 4, "(")}
    inner.log.clear()
    out = c.next_token_distributions([_req(0), _req(1), _req(2)], top_k=4, batch_size=2, answer_prefix="(")
    assert inner.log == [("next_token_distributions", ["p0", "p2"], 4, 2, "(")]
    assert _same(out[1], first[0]) and _same(out[0], _dist("(p0")) and _same(out[2], _dist("(p2"))
    assert (c.calls, c.hits) == (3, 1)
    inner.log.clear()
    c.next_token_distributions([_req(0), _req(1)], top_k=4, batch_size=2, answer_prefix="(")
    assert inner.log == [] and (c.calls, c.hits) == (3, 3)
    # the answer prefix and the hashes given are in the key
    c.next_token_distributions([_req(0)], top_k=4, image_sha256s=[["ef" * 32]])
    assert _dist_key("p0", ["ef" * 32], 4) in _entries(tmp_path) and c.calls == 4
    assert _entries(tmp_path)[_dist_key("p0", ["ef" * 32], 4)]["meta"]["kind"] == "vsi_first_token"


def test_an_answer_with_its_distribution_is_asked_again_whole_when_either_half_is_missing(tmp_path):
    inner = FullModel(budget=12)
    cache = ResponseCache(tmp_path)
    c = CachedVLM(inner, cache)
    out = c.generate_with_distribution([_req(1), _req(2)], top_k=3, batch_size=5, answer_prefix="A:")
    assert inner.log == [("generate_with_distribution", ["p1", "p2"], 3, 5, "A:")]
    assert out[0][0] == "ans:p1" and _same(out[0][1], _dist("A:p1"))
    tkey, dkey = _budget_key(_req(1), [_sha(1)], 12, "A:"), _dist_key("p1", [_sha(1)], 3, "A:")
    e = _entries(tmp_path)
    assert e[tkey]["text"] == "ans:p1" and e[tkey]["meta"] == {"model_version": VERSION}
    assert json.loads(e[dkey]["text"])["distribution_source"] == "hf_logits"
    # lose the distribution of p1: p1 is asked again (answer and distribution), p2 is served
    os.remove(cache.path_for(dkey))
    inner2 = FullModel(salt="!", budget=12)
    c2 = CachedVLM(inner2, cache)
    out2 = c2.generate_with_distribution([_req(1), _req(2)], top_k=3, batch_size=5, answer_prefix="A:")
    assert inner2.log == [("generate_with_distribution", ["p1"], 3, 5, "A:")] and (c2.calls, c2.hits) == (1, 1)
    assert out2[0][0] == "ans:p1!" and out2[1] == out[1][:1] + (out2[1][1],) and _same(out2[1][1], out[1][1])
    assert cache.get(tkey) == "ans:p1!"  # both halves overwritten together
    # lose the answer of p2 instead: p2 is asked again
    os.remove(cache.path_for(_budget_key(_req(2), [_sha(2)], 12, "A:")))
    inner2.log.clear()
    c2.generate_with_distribution([_req(1), _req(2)], top_k=3, batch_size=5, answer_prefix="A:")
    assert inner2.log == [("generate_with_distribution", ["p2"], 3, 5, "A:")]


def test_the_clean_answer_key_holds_the_budget_used_and_no_prefix_when_there_is_none(tmp_path):
    c = CachedVLM(FullModel(budget=9), ResponseCache(tmp_path))
    c.generate_with_distribution([_req(1, max_new_tokens=30)], top_k=None)
    assert set(_entries(tmp_path)) == {_budget_key(_req(1, 30), [_sha(1)], 9), _dist_key("p1", [_sha(1)], None)}
    # generate(budget_in_key=True) is the same answer key: a hit, no inner call
    inner = FullModel(budget=9)
    c2 = CachedVLM(inner, ResponseCache(tmp_path))
    assert c2.generate([_req(1, max_new_tokens=30)], budget_in_key=True) == ["ans:p1"] and inner.log == []


# --------------------------------------------------------------------------- follow-up turn


def test_a_follow_up_answer_is_keyed_on_the_whole_conversation(tmp_path):
    inner = FullModel(budget=6)
    cache = ResponseCache(tmp_path)
    c = CachedVLM(inner, cache)
    out = c.generate_follow_up([_req(1), _req(2)], [" B \n", "C"], "Sure?", max_new_tokens=4, batch_size=3,
                               answer_prefix="(")
    assert inner.log == [("generate_follow_up", ["p1", "p2"], [" B \n", "C"], "Sure?", 4, 3, "(")]
    assert [f.text for f in out] == ["conf:p1: B \n", "conf:p2:C"]  # what the inner model returned
    key = _follow_up_key(_req(1), [_sha(1)], " B \n", "Sure?", 4, 6, "(")
    e = _entries(tmp_path)[key]
    assert e["text"] == "conf:p1: B \n" and e["meta"] == {"model_version": VERSION, "kind": "vsi_confidence"}
    # a hit is the stored text; the answer is stripped in the key, so "B" is the same conversation
    inner2 = FullModel(budget=6)
    c2 = CachedVLM(inner2, cache)
    assert c2.generate_follow_up([_req(1)], ["B"], "Sure?", max_new_tokens=4, answer_prefix="(") == ["conf:p1: B \n"]
    assert inner2.log == [] and (c2.calls, c2.hits) == (0, 1)
    # each part of the conversation and the budget is in the key
    for args in ((["C"], "Sure?", 4, "("), (["B"], "Sure??", 4, "("), (["B"], "Sure?", 5, "("), (["B"], "Sure?", 4, "")):
        c2.generate_follow_up([_req(1)], args[0], args[1], max_new_tokens=args[2], answer_prefix=args[3])
    assert (c2.calls, c2.hits) == (4, 1)


def test_the_combined_pass_stores_answer_distribution_and_follow_up_and_counts_two_requests_a_trial(tmp_path):
    inner = FullModel()
    cache = ResponseCache(tmp_path)
    c = CachedVLM(inner, cache)
    out = c.generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, top_k=3, batch_size=2,
                                                     answer_prefix="(")
    assert inner.log == [("generate_with_distribution_and_follow_up", ["p1"], "Sure?", 5, 3, 2, "(")]
    assert out[0][0] == "ans:p1" and _same(out[0][1], _dist("(p1")) and out[0][2].text == "conf:p1"
    assert (c.calls, c.hits) == (2, 0)  # the clean request and the follow-up request
    assert set(_entries(tmp_path)) == {_budget_key(_req(1), [_sha(1)], 40, "("), _dist_key("p1", [_sha(1)], 3, "("),
                                       _follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 5, 5, "(")}
    # all three stored: served whole, the follow-up as a str
    inner2 = FullModel(salt="!")
    c2 = CachedVLM(inner2, cache)
    out2 = c2.generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, top_k=3, answer_prefix="(")
    assert inner2.log == [] and (c2.calls, c2.hits) == (0, 2)
    assert out2[0][0] == "ans:p1" and _same(out2[0][1], out[0][1]) and out2[0][2] == "conf:p1"


def test_a_missing_follow_up_alone_is_asked_as_a_follow_up_turn(tmp_path):
    cache = ResponseCache(tmp_path)
    CachedVLM(FullModel(), cache).generate_with_distribution_and_follow_up([_req(1), _req(2)], "Sure?", 5, top_k=3)
    os.remove(cache.path_for(_follow_up_key(_req(2), [_sha(2)], "ans:p2", "Sure?", 5, 5)))
    inner = FullModel(salt="!")
    c = CachedVLM(inner, cache)
    out = c.generate_with_distribution_and_follow_up([_req(1), _req(2)], "Sure?", 5, top_k=3, batch_size=4)
    # p2's cached answer is the one the follow-up turn continues from
    assert inner.log == [("generate_follow_up", ["p2"], ["ans:p2"], "Sure?", 5, 4, "")]
    assert (c.calls, c.hits) == (1, 3)  # 2 clean hits + p1's follow-up hit; p2's follow-up asked
    assert out[1][0] == "ans:p2" and out[1][2].text == "conf:p2:ans:p2!"
    assert cache.get(_follow_up_key(_req(2), [_sha(2)], "ans:p2", "Sure?", 5, 5)) == "conf:p2:ans:p2!"


def test_without_a_follow_up_turn_a_missing_follow_up_reruns_the_combined_pass(tmp_path):
    cache = ResponseCache(tmp_path)
    CachedVLM(NoFollowUpTurnModel(), cache).generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5)
    os.remove(cache.path_for(_follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 5, 5)))
    inner = NoFollowUpTurnModel(salt="!")
    c = CachedVLM(inner, cache)
    assert not isinstance(c, B.FollowUpTurn)
    out = c.generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5)
    assert [m[0] for m in inner.log] == ["generate_with_distribution_and_follow_up"]
    assert out[0][0] == "ans:p1!" and (c.calls, c.hits) == (2, 0)


# --------------------------------------------------------------------------- features


def test_vision_features_and_embeddings_are_stored_per_call_and_served_exactly(tmp_path):
    inner = FullModel()
    cache = ResponseCache(tmp_path)
    c = CachedVLM(inner, cache)
    v = c.vision_features([_img(1), _img(2)])
    e = c.embed([_img(1)], batch_size=3)
    assert v.dtype == np.float32 and v.shape == (2, 2) and e.shape == (1, 3)
    vkey = _key("", [_sha(1), _sha(2)], features="vision_features")
    ekey = _key("", [_sha(1)], features="embed", batch_size=3)
    stored = _entries(tmp_path)
    assert set(stored) == {vkey, ekey}
    assert stored[ekey]["meta"] == {"model_version": VERSION, "kind": "features:embed"}
    assert json.loads(stored[vkey]["text"])["shape"] == [2, 2] and json.loads(stored[vkey]["text"])["dtype"] == "float32"
    inner2 = FullModel(salt="!!")
    c2 = CachedVLM(inner2, cache)
    v2, e2 = c2.vision_features([_img(1), _img(2)]), c2.embed([_img(1)], batch_size=3)
    assert inner2.log == [] and (c2.calls, c2.hits) == (0, 2)
    assert np.array_equal(v2, v) and np.array_equal(e2, e) and v2.dtype == np.float32
    v2[0, 0] = -1  # a hit is the caller's own writable copy
    # another order of images, or another batch size, is another call
    c2.vision_features([_img(2), _img(1)])
    c2.embed([_img(1)], batch_size=4)
    assert [m[0] for m in inner2.log] == ["vision_features", "embed"] and inner2.log[1][2] == 4


def test_an_unreadable_stored_array_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    key = _key("", [_sha(1)], features="vision_features")
    for text in ("{}", json.dumps({"shape": [3], "dtype": "float32", "b64": "AAAA"}), "[1]"):
        cache.put(key, text)
        inner = FullModel()
        c = CachedVLM(inner, cache)
        assert c.vision_features([_img(1)]).shape == (1, 2) and len(inner.log) == 1 and c.hits == 0


def test_text_embeddings_pass_through_uncached(tmp_path):
    inner = FullModel()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    assert c.embed_text(["a", "b"]).shape == (2, 3) and c.embed_text(["a", "b"]).shape == (2, 3)
    assert inner.log == [("embed_text", ["a", "b"])] * 2 and _entries(tmp_path) == {}


# --------------------------------------------------------------------------- one policy for every call


def _every_call(c: CachedVLM) -> list:
    """One call of each cached kind; returns what each returned, comparable across wrappers."""
    wd = c.generate_with_distribution([_req(1)], top_k=3)[0]
    dfu = c.generate_with_distribution_and_follow_up([_req(2)], "Sure?", 5, top_k=3)[0]
    fu = c.generate_follow_up([_req(3)], ["B"], "Sure?")[0]
    return [c.generate([_req(0)])[0],
            c.next_token_distribution(_img(1), "p1").tokens,
            c.next_token_distributions([_req(1)], top_k=3)[0].tokens,
            wd[0], wd[1].tokens, dfu[0], dfu[1].tokens, dfu[2] if isinstance(dfu[2], str) else dfu[2].text,
            fu if isinstance(fu, str) else fu.text,
            c.vision_features([_img(1)]).tolist(), c.embed([_img(1)]).tolist()]


def test_use_serves_every_call_kind_from_the_cache(tmp_path):
    first = _every_call(CachedVLM(FullModel(), ResponseCache(tmp_path)))
    inner = FullModel(salt="!")
    c = CachedVLM(inner, ResponseCache(tmp_path))
    assert _every_call(c) == first and inner.log == [] and c.calls == 0 and c.hits == 9


def test_refresh_asks_every_call_kind_again_and_overwrites(tmp_path, monkeypatch):
    first = _every_call(CachedVLM(FullModel(), ResponseCache(tmp_path)))
    before = {k: e["text"] for k, e in _entries(tmp_path).items()}
    reads = []
    monkeypatch.setattr(ResponseCache, "get_entry", lambda self, key: reads.append(key))
    inner = FullModel(salt="!")
    c = CachedVLM(inner, ResponseCache(tmp_path), mode="refresh")
    again = _every_call(c)
    assert reads == [] and c.hits == 0 and c.calls == 9
    assert all(a != b for a, b in zip(again, first))  # every answer is the new model's
    after = {k: e["text"] for k, e in _entries(tmp_path).items()}
    # the combined pass's follow-up is keyed on the new answer; every other entry is overwritten
    old_fu = _follow_up_key(_req(2), [_sha(2)], "ans:p2", "Sure?", 5, 5)
    assert set(after) - set(before) == {_follow_up_key(_req(2), [_sha(2)], "ans:p2!", "Sure?", 5, 5)}
    assert after[old_fu] == before[old_fu] and all(after[k] != before[k] for k in before if k != old_fu)


def test_off_neither_reads_nor_writes_any_call_kind(tmp_path, monkeypatch):
    _every_call(CachedVLM(FullModel(), ResponseCache(tmp_path / "warm")))
    reads = []
    monkeypatch.setattr(ResponseCache, "get_entry", lambda self, key: reads.append(key))
    inner = FullModel(salt="!")
    c = CachedVLM(inner, ResponseCache(tmp_path / "warm"), mode="off")
    before = _entries(tmp_path / "warm")
    _every_call(c)
    assert reads == [] and c.hits == 0 and c.calls == 9 and _entries(tmp_path / "warm") == before
    cold = CachedVLM(FullModel(), ResponseCache(tmp_path / "cold"), mode="off")
    _every_call(cold)
    assert list((tmp_path / "cold").iterdir()) == []


def test_only_plain_answers_are_fsynced(tmp_path, monkeypatch):
    # a plain answer is flushed to disk; VSI entries (clean answer, distribution, follow-up, features)
    # are written atomically without fsync (ResponseCache.put's docstring)
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd)))
    c = CachedVLM(FullModel(), ResponseCache(tmp_path))
    c.generate([_req(9)])
    assert len(synced) == 1
    _every_call(c)  # one plain answer among them
    c.generate([_req(8)], budget_in_key=True)
    assert len(synced) == 2


# --------------------------------------------------------------------------- finding the cache


def test_the_cache_directory_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(RC.CACHE_ENV, str(tmp_path / "r"))
    assert RC.response_cache_dir() == tmp_path / "r"
    monkeypatch.delenv(RC.CACHE_ENV)
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path / "c"))
    assert RC.response_cache_dir() == tmp_path / "c" / "responses"


def test_with_response_cache_wraps_once_with_the_mode_given(tmp_path, monkeypatch):
    monkeypatch.setenv(RC.CACHE_ENV, str(tmp_path))
    c = RC.with_response_cache(FullModel(), mode="refresh")
    assert isinstance(c, CachedVLM) and c.mode == "refresh" and c.cache.directory == tmp_path
    assert RC.with_response_cache(c) is c
    assert RC.with_response_cache(FullModel()).mode == "use"
    with pytest.raises(ValueError, match="^cache mode 'never' not in"):
        RC.with_response_cache(FullModel(), mode="never")


# --------------------------------------------------------------------------- defaults, given hashes, counters


class StrFollowUpModel(FullModel):
    """A provider: its follow-up answers are plain ``str`` (no KV-cache flag)."""

    def generate_follow_up(self, *args, **kwargs):
        return [f.text for f in super().generate_follow_up(*args, **kwargs)]

    def generate_with_distribution_and_follow_up(self, *args, **kwargs):
        return [(t, d, f.text) for t, d, f in super().generate_with_distribution_and_follow_up(*args, **kwargs)]


def test_the_combined_pass_passes_its_defaults_on_and_keys_on_them(tmp_path):
    inner = FullModel()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    c.generate_with_distribution_and_follow_up([_req(1)], "Sure?")
    # follow_up_max_new_tokens 8, top_k 50, batch_size 8, no answer prefix
    assert inner.log == [("generate_with_distribution_and_follow_up", ["p1"], "Sure?", 8, 50, 8, "")]
    assert set(_entries(tmp_path)) == {_budget_key(_req(1), [_sha(1)], 40), _dist_key("p1", [_sha(1)], 50),
                                       _follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 8, 8)}


def test_the_combined_pass_keys_on_given_hashes_and_stores_the_answers_model_version(tmp_path):
    c = CachedVLM(FullModel(), ResponseCache(tmp_path))
    c.generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, top_k=3, image_sha256s=[["ab" * 32]])
    e = _entries(tmp_path)
    assert set(e) == {_budget_key(_req(1), ["ab" * 32], 40), _dist_key("p1", ["ab" * 32], 3),
                      _follow_up_key(_req(1), ["ab" * 32], "ans:p1", "Sure?", 5, 5)}
    assert e[_budget_key(_req(1), ["ab" * 32], 40)]["meta"] == {"model_version": VERSION}


def test_a_missing_distribution_alone_reruns_the_combined_pass(tmp_path):
    cache = ResponseCache(tmp_path)
    CachedVLM(FullModel(), cache).generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, top_k=3)
    os.remove(cache.path_for(_dist_key("p1", [_sha(1)], 3)))
    inner = FullModel(salt="!")
    c = CachedVLM(inner, cache)
    out = c.generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, top_k=3)
    assert [m[0] for m in inner.log] == ["generate_with_distribution_and_follow_up"]
    assert out[0][0] == "ans:p1!" and _same(out[0][1], _dist("p1!")) and (c.calls, c.hits) == (2, 0)


def test_a_missing_follow_up_alone_is_asked_with_the_answer_prefix(tmp_path):
    cache = ResponseCache(tmp_path)
    CachedVLM(FullModel(), cache).generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, answer_prefix="(")
    os.remove(cache.path_for(_follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 5, 5, "(")))
    inner = FullModel(salt="!")
    CachedVLM(inner, cache).generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5, batch_size=2,
                                                                     answer_prefix="(")
    assert inner.log == [("generate_follow_up", ["p1"], ["ans:p1"], "Sure?", 5, 2, "(")]


def test_follow_up_answers_given_as_str_are_stored_as_they_are(tmp_path):
    cache = ResponseCache(tmp_path)
    c = CachedVLM(StrFollowUpModel(), cache)
    assert c.generate_with_distribution_and_follow_up([_req(1)], "Sure?", 5)[0][2] == "conf:p1"
    assert cache.get(_follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 5, 5)) == "conf:p1"
    assert c.generate_follow_up([_req(2)], ["B"], "Sure?", max_new_tokens=5) == ["conf:p2:B"]
    assert cache.get(_follow_up_key(_req(2), [_sha(2)], "B", "Sure?", 5, 5)) == "conf:p2:B"
    # the missing follow-up of a stored answer, asked alone
    os.remove(cache.path_for(_follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 5, 5)))
    assert CachedVLM(StrFollowUpModel(salt="!"), cache).generate_with_distribution_and_follow_up(
        [_req(1)], "Sure?", 5)[0][2] == "conf:p1:ans:p1!"
    assert cache.get(_follow_up_key(_req(1), [_sha(1)], "ans:p1", "Sure?", 5, 5)) == "conf:p1:ans:p1!"


def test_a_follow_up_turn_passes_its_defaults_on_and_keys_on_given_hashes(tmp_path):
    inner = FullModel()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    c.generate_follow_up([_req(1)], ["B"], "Sure?")
    # max_new_tokens 8, batch_size 8, no answer prefix
    assert inner.log == [("generate_follow_up", ["p1"], ["B"], "Sure?", 8, 8, "")]
    assert set(_entries(tmp_path)) == {_follow_up_key(_req(1), [_sha(1)], "B", "Sure?", 8, 8)}
    c.generate_follow_up([_req(1)], ["B"], "Sure?", image_sha256s=[["ab" * 32]])
    assert _follow_up_key(_req(1), ["ab" * 32], "B", "Sure?", 8, 8) in _entries(tmp_path) and c.calls == 2


def test_batched_distributions_pass_their_defaults_on_and_key_on_them(tmp_path):
    inner = FullModel()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    c.next_token_distributions([_req(1)])
    c.generate_with_distribution([_req(2)])
    # top_k 50, batch_size 8, no answer prefix
    assert inner.log == [("next_token_distributions", ["p1"], 50, 8, ""), ("generate_with_distribution", ["p2"], 50, 8, "")]
    assert set(_entries(tmp_path)) == {_dist_key("p1", [_sha(1)], 50), _dist_key("p2", [_sha(2)], 50),
                                       _budget_key(_req(2), [_sha(2)], 40)}


def test_an_answer_with_its_distribution_keys_on_given_hashes_and_counts_across_calls(tmp_path):
    c = CachedVLM(FullModel(), ResponseCache(tmp_path))
    c.generate_with_distribution([_req(1)], top_k=3, image_sha256s=[["ab" * 32]])
    assert set(_entries(tmp_path)) == {_budget_key(_req(1), ["ab" * 32], 40), _dist_key("p1", ["ab" * 32], 3)}
    c.generate_with_distribution([_req(1), _req(2)], top_k=3, image_sha256s=[["ab" * 32], [_sha(2)]])
    assert (c.calls, c.hits) == (2, 1)
    c.generate_with_distribution([_req(1), _req(2)], top_k=3, image_sha256s=[["ab" * 32], [_sha(2)]])
    assert (c.calls, c.hits) == (2, 3)


# --------------------------------------------------------------------------- others


def test_integer_logprobs_in_a_meta_are_read_as_float64():
    # JSON written by another writer may hold 0 or -1 for 0.0 / -1.0: TokenDistribution's logprobs are float64
    d = dist_from_meta({"token_ids": None, "tokens": ["a", "b"], "logprobs": [0, -1], "complete": True})
    assert d.logprobs.dtype == np.float64 and d.logprobs.tolist() == [0.0, -1.0]


class EncoderOnly:
    """An image encoder: no generation settings (not a VLM)."""

    name = "enc"
    model_version = "enc@1"
    family = "encoder"

    def __init__(self):
        self.log = []

    def embed(self, images, batch_size=8):
        self.log.append(("embed", len(images), batch_size))
        return np.ones((len(images), 2), dtype=np.float32)


def test_an_encoders_embeddings_are_keyed_without_generation_settings_and_the_default_batch_size(tmp_path):
    inner = EncoderOnly()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    assert c.embed([_img(1)]).shape == (1, 2) and inner.log == [("embed", 1, 8)]
    assert set(_entries(tmp_path)) == {ResponseCache.key_for("enc@1", "", [_sha(1)],
                                                             {"features": "embed", "batch_size": 8})}


def test_with_response_cache_wraps_the_model_given(tmp_path, monkeypatch):
    monkeypatch.setenv(RC.CACHE_ENV, str(tmp_path))
    m = FullModel()
    c = RC.with_response_cache(m)
    assert c.inner is m and c.generate([_req(1)]) == ["ans:p1"] and m.log[0][0] == "generate"
