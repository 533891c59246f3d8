"""Verbalised confidence as a follow-up turn (seed 002 appendix A): the clean pass's KV cache
reused for the follow-up equals the whole conversation prefilled from scratch (1e-4 on the
logits of every generated step, identical texts and parsed integers) on tiny LLaVA, Idefics3 and
Qwen2-VL; batch sizes 1 and 4 agree; the VSI records name the follow-up turn."""

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.models.base import VLMRequest
from perceptbench.readouts.answers import parse_confidence
from perceptbench.tasks import get_task
from perceptbench.testing.tiny_vlm import build_tiny_vlm
from perceptbench.vsi.protocol import CONF_MAX_NEW_TOKENS, CONFIDENCE_PROMPT


def _requests():
    t = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    reqs = [VLMRequest((s.render(),), s.meta["vsi_prompt"], 8) for s in t.stimuli(0)
            if s.meta["vsi"]["condition"] == "clean"]
    # prompts of different lengths: the follow-up turns are padded between prompt and turn
    reqs[1] = VLMRequest(reqs[1].images, reqs[1].prompt + " Be brief, please.", 3)
    reqs[3] = VLMRequest((Image.new("RGB", (40, 56), (200, 30, 30)),), "Is there a red square? Answer yes or no.", 8)
    return reqs


@pytest.fixture(scope="module", params=["llava", "idefics3", "qwen2_vl"])
def vlm(request, tmp_path_factory):
    from perceptbench.models.vlm_hf import HFVLM

    return HFVLM(build_tiny_vlm(request.param, tmp_path_factory.mktemp(request.param) / "m"))


def test_cached_follow_up_equals_uncached_conversation(vlm):
    reqs = _requests()
    res = vlm.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, CONF_MAX_NEW_TOKENS, batch_size=4,
                                                       return_logits=True)
    assert all(f.cache_reused for _, _, f in res)
    answers = [t for t, _, _ in res]
    assert len({len(a) for a in answers}) > 1  # answers of different lengths in one batch
    ref = vlm.generate_follow_up(reqs, answers, CONFIDENCE_PROMPT, CONF_MAX_NEW_TOKENS, batch_size=4,
                                 return_logits=True)
    assert not any(f.cache_reused for f in ref)
    for (_, _, f), g in zip(res, ref):
        assert f.text == g.text
        assert parse_confidence(f.text) == parse_confidence(g.text)
        assert f.logits.shape == g.logits.shape and f.logits.shape[0] >= 1
        np.testing.assert_allclose(f.logits, g.logits, atol=1e-4, rtol=0)
    # the clean part is unchanged by the follow-up
    plain = vlm.generate_with_distribution(reqs, batch_size=4)
    for (t, d, _), (t2, d2) in zip(res, plain):
        assert t == t2 and d.token_ids == d2.token_ids
        np.testing.assert_allclose(d.logprobs, d2.logprobs, atol=1e-6)


def test_follow_up_batch_invariance_and_no_reuse_path(vlm):
    reqs = _requests()
    a = vlm.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, batch_size=1, return_logits=True)
    b = vlm.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, batch_size=4, return_logits=True)
    c = vlm.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, batch_size=4, reuse_cache=False,
                                                     return_logits=True)
    assert not any(f.cache_reused for _, _, f in c)
    for (ta, _, fa), (tb, _, fb), (tc, _, fc) in zip(a, b, c):
        assert ta == tb == tc and fa.text == fb.text == fc.text
        np.testing.assert_allclose(fa.logits, fb.logits, atol=1e-4, rtol=0)
        np.testing.assert_allclose(fb.logits, fc.logits, atol=1e-4, rtol=0)


def test_follow_up_conversation_text(vlm):
    r = _requests()[0]
    clean = vlm._chat_text(1, r.prompt)
    full = vlm.follow_up_text(1, r.prompt, " B ", CONFIDENCE_PROMPT)
    assert full.startswith(clean) and full.count(CONFIDENCE_PROMPT) == 1 and "B" in full[len(clean):]


def test_vsi_budget_honours_the_request_unless_capped(tmp_path):
    """HallusionBench asks 64 new tokens (seed 002 D.1): the hf adapter's 40-token default (seed 000,
    battery prompts) does not cut it; an explicit cap does, and generate() keeps its cap."""
    from perceptbench.models.vlm_hf import HFVLM

    d = build_tiny_vlm("llava", tmp_path / "m")
    seen = []
    for cap, want in ((None, 64), (16, 16)):
        vlm = HFVLM(d, max_new_tokens=cap)
        gen = vlm.model.generate

        def spy(*a, **kw):
            seen.append(kw["max_new_tokens"])
            return gen(*a, **kw)

        vlm.model.generate = spy
        req = [VLMRequest((Image.new("RGB", (32, 32)),), "Is there a cat? Answer yes or no.", 64)]
        vlm.generate_with_distribution(req)
        assert seen[-1] == want and vlm.answer_budget(64) == want
        vlm.generate(req)
        assert seen[-1] == (40 if cap is None else 16)


def test_unsynced_cache_entries_read_back_and_torn_ones_are_misses(tmp_path):
    """VSI writes its response-cache entries without fsync: an entry reads back, and what a power
    loss could leave (an empty or torn file) is a miss, never a wrong answer."""
    from perceptbench.models.response_cache import ResponseCache

    c = ResponseCache(tmp_path / "cache")
    k1 = c.key_for("m@1", "prompt one", ["a" * 64], {"x": 1})
    k2 = c.key_for("m@1", "prompt two", ["a" * 64], {"x": 1})
    p1 = c.put(k1, "B", fsync=False)
    p2 = c.put(k2, '{"tokens": ["A"]}', fsync=False)
    assert c.get(k1) == "B" and c.get(k2) == '{"tokens": ["A"]}'
    p1.write_text("")
    p2.write_bytes(p2.read_bytes()[:-7])
    assert c.get(k1) is None and c.get(k2) is None
