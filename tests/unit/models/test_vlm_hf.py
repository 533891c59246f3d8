"""HFVLM on tiny random LLaVA, Idefics3 and Qwen2-VL models built offline.

Tolerance used for batch invariance of next-token logits: ``LOGIT_ATOL = 1e-4`` (absolute,
float32 logits of order 1-10; the observed differences between batch size 1 and 8 on
these models are ~1e-5, from a different summation order in batched matmuls).
"""

import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# explicit imports: a missing torch/transformers must fail the suite, not skip it
import torch  # noqa: E402,F401
from PIL import Image  # noqa: E402

from perceptbench.models.base import ModelLoadError, TokenDistribution, VLM, VLMRequest  # noqa: E402
from perceptbench.models.vlm_hf import HFVLM, local_weights_sha256  # noqa: E402
from perceptbench.testing.tiny_vlm import FAMILIES, build_tiny_vlm  # noqa: E402

LOGIT_ATOL = 1e-4

PROMPTS = [
    "Three colored chart marks are shown, numbered 1, 2 and 3. Which one is the odd one out "
    "(least similar in color to the other two)? Answer 1, 2, or 3.",
    "How many distinct color series (groups of same-colored points) are in this scatterplot? "
    "Answer with a single integer.",
    "What object is shown in this black silhouette? Choose exactly one: airplane, bear, car.",
    "Which one is different?",
]
SIZES = [(64, 64), (80, 60), (50, 90), (120, 100), (33, 47)]


def _image(seed: int, size=(64, 64)) -> Image.Image:
    rng = np.random.default_rng(seed)
    w, h = size
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def _requests(n: int = 10) -> list[VLMRequest]:
    """n requests with different images, sizes and prompts (ragged lengths after padding)."""
    return [
        VLMRequest(images=(_image(100 + i, SIZES[i % len(SIZES)]),), prompt=PROMPTS[i % len(PROMPTS)] * (1 + i % 3))
        for i in range(n)
    ]


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_vlms")
    return {f: build_tiny_vlm(f, root / f, seed=0) for f in FAMILIES}


@pytest.fixture(scope="session")
def models(tiny_dirs):
    return {f: HFVLM(d, max_new_tokens=40) for f, d in tiny_dirs.items()}


@pytest.mark.parametrize("family", FAMILIES)
def test_is_a_vlm_with_versions_and_settings(models, tiny_dirs, family):
    m = models[family]
    assert isinstance(m, VLM)
    assert m.family == "vlm" and m.supports_multi_image
    assert m.tokenizer.padding_side == "left"
    path, sha = m.model_version.split("@sha256:")
    assert path == str(tiny_dirs[family].resolve())
    from perceptbench.models.identity import local_model_sha256

    assert sha == local_model_sha256(tiny_dirs[family])["all"][:16]  # weights and processor/tokenizer configs
    assert m.identity["weights_sha256"] == local_weights_sha256(tiny_dirs[family])
    gs = m.generation_settings
    assert gs["decoding"] == "greedy" and gs["do_sample"] is False and gs["max_new_tokens"] == 40
    import json

    json.dumps(gs)  # JSON-able


@pytest.mark.parametrize("family", FAMILIES)
def test_generate_deterministic_across_calls_and_loads(models, tiny_dirs, family):
    reqs = _requests(4)
    a = models[family].generate(reqs)
    b = models[family].generate(reqs)
    c = HFVLM(tiny_dirs[family]).generate(reqs)  # fresh load of the same directory
    assert all(isinstance(x, str) for x in a)
    assert a == b == c
    assert any(len(x) > 0 for x in a)


@pytest.mark.parametrize("family", FAMILIES)
def test_batch_invariance_tokens_and_logits(models, family):
    m = models[family]
    reqs = _requests(10)  # >= 8; batch size 8 gives one full and one ragged batch
    ids1 = m.generate_ids(reqs, batch_size=1)
    ids8 = m.generate_ids(reqs, batch_size=8)
    # the inputs really produce different outputs, so equality below is informative
    assert len({tuple(x) for x in ids1}) >= 5, ids1
    assert ids1 == ids8
    l1 = m.first_token_logits(reqs, batch_size=1)
    l8 = m.first_token_logits(reqs, batch_size=8)
    assert l1.shape == l8.shape and l1.shape[0] == len(reqs)
    np.testing.assert_allclose(l1, l8, rtol=0, atol=LOGIT_ATOL)
    # the first generated token is the argmax of those logits
    for row, ids in zip(l1, ids1):
        top = int(row.argmax())
        assert (ids and top == ids[0]) or (not ids and top in m._eos_ids)


@pytest.mark.parametrize("family", FAMILIES)
def test_max_new_tokens_prefix_property(models, family):
    m = models[family]
    reqs = _requests(3)
    full = m.generate_ids(reqs)
    short = m.generate_ids([VLMRequest(r.images, r.prompt, max_new_tokens=3) for r in reqs])
    for f, s in zip(full, short):
        assert len(s) <= 3 and s == f[: len(s)]
    assert max(len(x) for x in full) <= 40


@pytest.mark.parametrize("family", FAMILIES)
def test_multi_image_and_text_only(models, family):
    m = models[family]
    one = VLMRequest(images=(_image(1),), prompt=PROMPTS[0])
    two = VLMRequest(images=(_image(1), _image(2)), prompt=PROMPTS[0])
    none = VLMRequest(images=(), prompt=PROMPTS[0])
    out = m.generate([one, two, none, one], batch_size=8)
    assert out[0] == out[3]
    assert len({out[0], out[1], out[2]}) >= 2  # the images reach the model
    assert m.generate([two], batch_size=1)[0] == out[1]


@pytest.mark.parametrize("family", FAMILIES)
def test_next_token_distribution_complete_and_top_k(models, family):
    m = models[family]
    img, prompt = _image(7), PROMPTS[1]
    d = m.next_token_distribution(img, prompt)
    assert isinstance(d, TokenDistribution) and d.complete
    vocab = m.model.get_output_embeddings().weight.shape[0]
    assert len(d.tokens) == len(d.token_ids) == d.logprobs.shape[0] == vocab
    assert d.logprobs.dtype == np.float64
    assert abs(np.exp(d.logprobs).sum() - 1.0) < 1e-9
    assert np.all(np.diff(d.logprobs) <= 0)  # sorted descending
    assert len(set(d.token_ids)) == vocab
    k = m.next_token_distribution(img, prompt, top_k=5)
    assert not k.complete and len(k.tokens) == 5
    assert k.token_ids == d.token_ids[:5]
    np.testing.assert_allclose(k.logprobs, d.logprobs[:5], rtol=0, atol=1e-12)
    # the distribution is that of the first token generate() produces
    first = m.generate_ids([VLMRequest(images=(img,), prompt=prompt)])[0][0]
    assert d.token_ids[0] == first
    assert d.tokens[0] == m.tokenizer.decode([first])
    with pytest.raises(ValueError):
        m.next_token_distribution(img, prompt, top_k=0)


def test_model_version_tracks_weights(tmp_path, tiny_dirs):
    other = build_tiny_vlm("llava", tmp_path / "llava_seed1", seed=1)
    same = build_tiny_vlm("llava", tmp_path / "llava_seed0", seed=0)
    v0 = local_weights_sha256(tiny_dirs["llava"])
    assert local_weights_sha256(same) == v0  # seeded build is reproducible byte for byte
    assert local_weights_sha256(other) != v0


def test_load_errors(tmp_path):
    with pytest.raises(ModelLoadError):
        HFVLM(tmp_path)  # empty directory
    with pytest.raises(ModelLoadError):
        HFVLM("perceptbench-no-such-org/no-such-model")  # offline, not cached


# ------------------------------------------------------------ KV cache grown in place (issue 25)
def test_growing_kv_layer_returns_views_of_one_buffer_equal_to_concatenation():
    from transformers.cache_utils import DynamicLayer

    from perceptbench.models.vlm_hf import _growing_layer_class

    g = torch.Generator().manual_seed(0)
    grow, ref = DynamicLayer(), DynamicLayer()
    grow.__class__ = _growing_layer_class()
    steps = [torch.randn(2, 3, n, 4, generator=g) for n in (5, 1, 1, 1)]
    ptrs = set()
    for k in steps:
        a, b = grow.update(k, k + 1), ref.update(k, k + 1)
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        ptrs.add(a[0].data_ptr())
    assert len(ptrs) == 1  # no new tensor per step: the buffer grows in place
    grow.crop(-2), ref.crop(-2)  # the follow-up turn drops the generated answer
    k = torch.randn(2, 3, 70, 4, generator=g)  # more than the spare room: reallocated, the kept part copied
    a, b = grow.update(k, -k), ref.update(k, -k)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and a[0].shape[-2] == 76
    # states replaced by other code (a reorder) are not a view of the buffer: copied, not overwritten
    grow.keys, grow.values = grow.keys.flip(0).contiguous(), grow.values.flip(0).contiguous()
    ref.keys, ref.values = ref.keys.flip(0).contiguous(), ref.values.flip(0).contiguous()
    k = torch.randn(2, 3, 1, 4, generator=g)
    a, b = grow.update(k, k), ref.update(k, k)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])


@pytest.mark.parametrize("family", FAMILIES)
def test_follow_up_suffixes_in_one_tokenizer_call_are_each_conversations_own_ids(models, family):
    """The follow-up turn's token ids after each clean prompt, from one batched tokenizer call, equal
    each conversation tokenized alone (by hand here)."""
    from perceptbench.vsi.protocol import CONFIDENCE_PROMPT

    m = models[family]
    reqs = _requests(5)
    answers = ["B", " 3 \n", "car", "", "yes, the second"]
    got = m._follow_up_suffixes(reqs, answers, CONFIDENCE_PROMPT, "(")
    for r, a, suffix in zip(reqs, answers, got):
        ci = m.tokenizer(m._chat_text(1, r.prompt, "("), add_special_tokens=False)["input_ids"]
        fi = m.tokenizer(m.follow_up_text(1, r.prompt, a, CONFIDENCE_PROMPT, "("), add_special_tokens=False)["input_ids"]
        assert fi[:len(ci)] == ci and suffix == fi[len(ci):] and suffix


@pytest.mark.parametrize("family", FAMILIES)
def test_in_place_kv_cache_gives_identical_answers_logits_and_distributions(models, family):
    """The VSI generations with the in-place cache equal transformers' own cache bit for bit: greedy
    texts, clean distributions (ids, tokens, log-probabilities) and the follow-up turn's logits at
    every step, on both follow-up paths (the clean pass's cache reused, the conversation prefilled)."""
    from perceptbench.models.vlm_hf import _growing_layer_class
    from perceptbench.vsi.protocol import CONFIDENCE_PROMPT

    m = models[family]
    reqs = [VLMRequest(r.images, r.prompt, 8) for r in _requests(5)]
    assert m.kv_in_place
    (cache,) = m._cache_kwargs().values()
    assert any(isinstance(layer, _growing_layer_class()) for layer in cache.layers)
    out = {}
    try:
        for flag in (False, True):
            m.kv_in_place = flag
            res = m.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, 8, batch_size=4,
                                                             return_logits=True)
            ref = m.generate_follow_up(reqs, [t for t, _, _ in res], CONFIDENCE_PROMPT, 8, batch_size=4,
                                       return_logits=True)
            out[flag] = res, ref
    finally:
        m.kv_in_place = True
    (old, old_ref), (new, new_ref) = out[False], out[True]
    assert all(f.cache_reused for _, _, f in new)
    for (t0, d0, f0), (t1, d1, f1), g0, g1 in zip(old, new, old_ref, new_ref):
        assert t0 == t1 and d0.token_ids == d1.token_ids and d0.tokens == d1.tokens
        assert np.array_equal(d0.logprobs, d1.logprobs)
        assert f0.text == f1.text and np.array_equal(f0.logits, f1.logits)
        assert g0.text == g1.text and np.array_equal(g0.logits, g1.logits)


@pytest.mark.parametrize("family", FAMILIES)
def test_follow_up_turn_is_written_into_the_clean_pass_kv_buffers(models, family, monkeypatch):
    """The clean pass reserves room for the follow-up turn (``_follow_up_room``): the turn over the reused
    cache and its answer are written into the clean pass's KV buffers, with no reallocation and no copy of
    the prompt's keys and values (the default spare of 64 positions is shorter than the tiny BPE's
    confidence turn); values unchanged (the test above)."""
    from perceptbench.vsi.protocol import CONFIDENCE_PROMPT

    m = models[family]
    reqs = [VLMRequest(r.images, r.prompt, 8) for r in _requests(3)]
    gen, seen = m.model.generate, []

    def spy(*a, **kw):
        out = gen(*a, **kw)
        cache = out.get("cache") if out.get("cache") is not None else out.get("past_key_values")
        seen.append([(layer._kbuf.data_ptr(), layer._vbuf.data_ptr()) for layer in cache.layers])
        return out

    monkeypatch.setattr(m.model, "generate", spy)
    (text, _, f), *_ = m.generate_with_distribution_and_follow_up(reqs, CONFIDENCE_PROMPT, 8, batch_size=3)
    assert f.cache_reused and len(seen) == 2
    suffix = m._follow_up_suffixes(reqs[:1], [text], CONFIDENCE_PROMPT, "")
    assert len(suffix[0]) > 64  # the turn alone outgrows the default spare
    assert seen[0] == seen[1]  # the same buffers after the clean pass and after the follow-up turn
