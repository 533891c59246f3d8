"""Each model adapter declares exactly its capabilities as the protocols of
:mod:`perceptbench.models.base`, and the response-cache wrapper around it declares the same ones."""

from __future__ import annotations

import pytest

from perceptbench.models import base as B
from perceptbench.models.response_cache import CachedVLM, ResponseCache

PROTOCOLS = {"answering": B.VLM, "first_token": B.FirstTokenDistribution, "batched": B.BatchedDistributions,
             "follow_up": B.FollowUpTurn, "dist_follow_up": B.DistributionAndFollowUp,
             "vision_features": B.VisionFeatures, "embed": B.Encoder, "embed_text": B.TextEncoder,
             "budget": B.AnswerBudget, "top_logprobs": B.TopLogprobsLimit, "identity": B.Identified,
             "verifies": B.VerifiesCacheHits}
API = {"answering", "first_token", "follow_up", "budget", "identity", "verifies"}


def _caps(model) -> set[str]:
    return {name for name, proto in PROTOCOLS.items() if isinstance(model, proto)}


def _api_adapters(monkeypatch):
    from perceptbench.models.api import AnthropicVLM, GeminiVLM, OpenAICompatibleVLM

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    return [(OpenAICompatibleVLM("http://127.0.0.1:9/v1", "m", query_server=False), API | {"top_logprobs"}),
            (GeminiVLM("g"), API | {"top_logprobs"}),
            # the Messages API returns no logprobs: Anthropic declares no first-token distribution
            (AnthropicVLM("a", max_tokens=8), API - {"first_token"})]


def test_api_adapters_and_their_cached_wrappers_declare_exactly_their_capabilities(monkeypatch, tmp_path):
    for model, want in _api_adapters(monkeypatch):
        assert _caps(model) == want, type(model).__name__
        assert _caps(CachedVLM(model, ResponseCache(tmp_path))) == want, type(model).__name__


def test_hf_vlm_and_its_cached_wrapper_declare_exactly_their_capabilities(tmp_path):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    vlm = HFVLM(build_tiny_vlm("llava", tmp_path / "llava", seed=0))
    want = {"answering", "first_token", "batched", "follow_up", "dist_follow_up", "vision_features", "budget",
            "identity"}
    assert _caps(vlm) == want
    assert _caps(CachedVLM(vlm, ResponseCache(tmp_path / "c"))) == want


def test_encoders_and_their_cached_wrappers_declare_exactly_their_capabilities(tmp_path):
    from perceptbench.models.default import EfficientNetLiteEncoder

    enc = EfficientNetLiteEncoder()
    assert _caps(enc) == {"embed"}
    assert _caps(CachedVLM(enc, ResponseCache(tmp_path))) == {"embed"}
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.models.encoders_hf import HFEncoder

    from perceptbench.testing.tiny_encoders import build_tiny_clip

    clip = HFEncoder(str(build_tiny_clip(tmp_path / "tiny-clip")))
    assert _caps(clip) == {"embed", "embed_text"}
    assert _caps(CachedVLM(clip, ResponseCache(tmp_path))) == {"embed", "embed_text"}


def test_a_model_without_a_declared_capability_is_not_given_one_by_the_wrapper(tmp_path):
    class Answers:
        name, model_version, family, supports_multi_image = "a", "a@1", "vlm", False
        generation_settings: dict = {}

        def generate(self, requests, batch_size=8):
            return ["x" for _ in requests]

    c = CachedVLM(Answers(), ResponseCache(tmp_path))
    assert _caps(c) == {"answering"}
    assert not hasattr(c, "next_token_distribution") and not hasattr(c, "identity")
    assert B.answer_budget(c, 12) == 12
