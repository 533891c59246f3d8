"""Builders for tiny randomly initialised VLMs saved to a local directory (fully offline).

Each ``build_tiny_*`` function builds a model of one family from config objects with a
fixed torch seed, a byte-level BPE tokenizer trained in process with the ``tokenizers``
library (no download), a short Jinja chat template and the family's processor, then
``save_pretrained``-s model + processor into ``directory`` and returns the path.  The
directory loads back with ``AutoProcessor.from_pretrained`` and
``AutoModelForImageTextToText.from_pretrained`` (so ``HFVLM`` and ``transformers serve``
accept it like a hub id).

The models are a few hundred thousand parameters (hidden size 64, 2 text layers, 1-2
vision layers, 64x64 pixel input): they run a 40-token greedy generation in well under a
second on one CPU core.  Their answers are meaningless but deterministic and depend on
the image and the prompt, which is what the adapter tests need.

Configuration details that must hold for these families to run (transformers 5.x):

* LLaVA: processor ``patch_size`` equal to the vision tower's patch size,
  ``num_additional_image_tokens=1`` (the CLS token) and
  ``vision_feature_select_strategy="default"`` (drops CLS) in both processor and config.
* Idefics3: ``image_seq_len = (image_size / patch_size)**2 / scale_factor**2`` and the image
  processor's ``max_image_size`` equal to the vision tower's ``image_size``; no splitting.
* Qwen2-VL: ``rope_parameters`` with ``mrope_section`` summing to ``head_dim / 2`` and a
  video processor object in the processor.

Requires ``torch``, ``transformers>=5`` and ``tokenizers`` (Idefics3's processor also
imports nothing extra; SmolVLM's would need ``num2words``).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "FAMILIES",
    "VISION_FAMILIES",
    "build_tiny_vlm",
    "build_tiny_llava",
    "build_tiny_idefics3",
    "build_tiny_qwen2_vl",
    "build_tiny_qwen2_5_vl",
    "build_tiny_qwen3_vl",
    "build_tiny_llava_next",
    "build_tiny_paligemma",
    "build_tiny_gemma3",
    "build_tiny_smolvlm",
    "train_tiny_tokenizer",
]

FAMILIES = ("llava", "idefics3", "qwen2_vl")
"""The families the whole adapter suite runs on (``tests/unit/models/test_vlm_hf.py``)."""

VISION_FAMILIES = FAMILIES + ("llava_next", "qwen2_5_vl", "qwen3_vl", "paligemma", "gemma3", "smolvlm")
"""Every family with a tiny builder: the vision-tower probe and the VSI run are tested on each
(``tests/unit/vsi/test_probe.py``, ``tests/integration/test_vsi_tower_families.py``)."""

_HIDDEN = 64
_HEADS = 4
_IMAGE = 64

# Special tokens used by the three families' processors.
_SPECIAL = [
    "<|pad|>", "<|bos|>", "<|im_start|>", "<|im_end|>",
    # LLaVA / Idefics3
    "<image>", "<fake_token_around_image>", "<global-img>", "<end_of_utterance>",
    # Qwen2-VL
    "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>",
] + [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]

_CORPUS = [
    "How many distinct color series (groups of same-colored points) are in this scatterplot? "
    "Answer with a single integer.",
    "Three colored chart marks are shown, numbered 1, 2 and 3. Which one is the odd one out "
    "(least similar in color to the other two)? Answer 1, 2, or 3.",
    "Three objects are shown, numbered 1, 2 and 3. Which one is the odd one out "
    "(least similar to the other two)? Answer 1, 2, or 3.",
    "What object is shown in this black silhouette? Choose exactly one: airplane, bear, "
    "bicycle, bird, boat, bottle, car, cat, chair, clock, dog, elephant, keyboard, knife, "
    "oven, truck.",
    "The odd one out is 2. I think it's number three. There are 12 series. One. Two. Three.",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
    "The answer is the red one, the blue one, the green one, orange, purple, brown, pink, gray.",
    "One object is different in color, orientation, size, focus, shape, location, pattern "
    "compared to the others.",
]


def _chat_template(image_placeholder: str) -> str:
    """A ChatML-style Jinja template; images are rendered where they appear in content."""
    return (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
        "{% if message['content'] is string %}{{ message['content'] }}"
        "{% else %}{% for c in message['content'] %}"
        "{% if c['type'] == 'image' or c['type'] == 'image_url' %}" + image_placeholder +
        "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
        "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )


def train_tiny_tokenizer(vocab_size: int = 512, extra_special_tokens: dict | None = None,
                         extra_corpus: tuple[str, ...] = ()):
    """Train a byte-level BPE tokenizer in process and wrap it for transformers.

    Returns a ``transformers`` fast tokenizer (``PreTrainedTokenizerFast``) with
    ``<|bos|>``/``<|im_end|>``/``<|pad|>`` as bos/eos/pad, left padding, and every special
    token the three families' processors look up.  ``extra_special_tokens`` names the
    family's placeholder tokens (default ``{"image_token": "<image>"}``).  Deterministic: the corpus is fixed and
    BPE training in ``tokenizers`` breaks ties deterministically.  ``extra_corpus`` adds
    training lines (e.g. ``"\\n\\n"``, which llama.cpp's Idefics3 image wrapper looks up as one
    token); the default vocabulary is unchanged without it.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(_SPECIAL),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 4 + list(extra_corpus), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|bos|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        padding_side="left",
        extra_special_tokens=extra_special_tokens or {"image_token": "<image>"},
    )
    fast.add_special_tokens({"additional_special_tokens": [t for t in _SPECIAL if t not in ("<|pad|>", "<|bos|>", "<|im_end|>")]})
    return fast


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def _finish(model, processor, directory: str | os.PathLike, tokenizer) -> Path:
    import torch

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    model.generation_config.do_sample = False
    model = model.to(torch.float32).eval()
    model.save_pretrained(d)
    processor.save_pretrained(d)
    return d


def _text_config_kwargs(tokenizer, init_range: float) -> dict:
    return dict(
        vocab_size=len(tokenizer),
        hidden_size=_HIDDEN,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=_HEADS,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=init_range,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )


def build_tiny_llava(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny LLaVA (CLIP vision tower 64x64 px, patch 16 -> 16 image tokens; Llama text model).

    ``init_range`` is the std of the random weights: larger than the usual 0.02 so that
    greedy answers depend visibly on the image and prompt.  Returns the directory path.
    """
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tokenizer = train_tiny_tokenizer()
    patch = 16
    vision = CLIPVisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        image_size=_IMAGE, patch_size=patch, projection_dim=32, initializer_range=init_range,
    )
    text = LlamaConfig(**_text_config_kwargs(tokenizer, init_range))
    cfg = LlavaConfig(
        vision_config=vision,
        text_config=text,
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_seq_length=(_IMAGE // patch) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
    )
    _seed(seed)
    model = LlavaForConditionalGeneration(cfg)
    image_processor = CLIPImageProcessor(
        size={"shortest_edge": _IMAGE}, crop_size={"height": _IMAGE, "width": _IMAGE},
    )
    processor = LlavaProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        patch_size=patch,
        vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
        chat_template=_chat_template("<image>"),
    )
    return _finish(model, processor, directory, tokenizer)


def build_tiny_idefics3(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2,
                        tokenizer_extra_corpus: tuple[str, ...] = ()) -> Path:
    """Tiny Idefics3 (SmolVLM architecture): 64x64 px, patch 16, scale factor 2 -> 4 image
    tokens per image (plus wrapper tokens); Llama text model.  ``tokenizer_extra_corpus``: see
    :func:`train_tiny_tokenizer`.  Returns the directory path."""
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
        Idefics3VisionConfig,
        LlamaConfig,
    )

    tokenizer = train_tiny_tokenizer(extra_corpus=tuple(tokenizer_extra_corpus))
    patch, scale = 16, 2
    vision = Idefics3VisionConfig(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        image_size=_IMAGE, patch_size=patch, initializer_range=init_range,
    )
    text = LlamaConfig(**_text_config_kwargs(tokenizer, init_range))
    text.architectures = ["LlamaForCausalLM"]  # as released Idefics3/SmolVLM configs carry (GGUF converters read it)
    cfg = Idefics3Config(
        vision_config=vision,
        text_config=text,
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        scale_factor=scale,
    )
    _seed(seed)
    model = Idefics3ForConditionalGeneration(cfg)
    image_processor = Idefics3ImageProcessor(
        do_image_splitting=False,
        size={"longest_edge": _IMAGE},
        max_image_size={"longest_edge": _IMAGE},
    )
    processor = Idefics3Processor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        image_seq_len=((_IMAGE // patch) ** 2) // (scale**2),
        chat_template=_chat_template("<image>"),
    )
    return _finish(model, processor, directory, tokenizer)


def _build_tiny_qwen(kind: str, directory, seed: int, init_range: float) -> Path:
    """One builder for the Qwen-VL generations (``qwen2_vl``, ``qwen2_5_vl``, ``qwen3_vl``): the
    same tokenizer, chat template, 64x64 px images and M-RoPE text model; the vision configs
    differ (Qwen2.5-VL: window attention with one full-attention block; Qwen3-VL: patch 16,
    learned position embeddings, one deepstack layer, interleaved M-RoPE, explicit head_dim)."""
    import transformers as tf

    tokenizer = train_tiny_tokenizer(
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>"}
    )
    patch, merge = (16 if kind == "qwen3_vl" else 8), 2
    head_dim = _HIDDEN // _HEADS
    text = dict(
        _text_config_kwargs(tokenizer, init_range),
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
    )
    assert sum(text["rope_parameters"]["mrope_section"]) == head_dim // 2
    common = dict(depth=2, num_heads=2, patch_size=patch, spatial_merge_size=merge, temporal_patch_size=2,
                  initializer_range=init_range)
    if kind == "qwen2_vl":
        vision = dict(common, embed_dim=32, hidden_size=_HIDDEN, mlp_ratio=2)
        config, model_cls, proc_cls = tf.Qwen2VLConfig, tf.Qwen2VLForConditionalGeneration, tf.Qwen2VLProcessor
    elif kind == "qwen2_5_vl":
        vision = dict(common, hidden_size=32, intermediate_size=64, out_hidden_size=_HIDDEN, window_size=32,
                      fullatt_block_indexes=[1])
        config, model_cls, proc_cls = (tf.Qwen2_5_VLConfig, tf.Qwen2_5_VLForConditionalGeneration,
                                       tf.Qwen2_5_VLProcessor)
    else:
        text["head_dim"] = head_dim
        text["rope_parameters"]["mrope_interleaved"] = True
        vision = dict(common, hidden_size=32, intermediate_size=64, out_hidden_size=_HIDDEN,
                      num_position_embeddings=16, deepstack_visual_indexes=[0])
        config, model_cls, proc_cls = tf.Qwen3VLConfig, tf.Qwen3VLForConditionalGeneration, tf.Qwen3VLProcessor
    cfg = config(
        text_config=text,
        vision_config=vision,
        image_token_id=tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        video_token_id=tokenizer.convert_tokens_to_ids("<|video_pad|>"),
        vision_start_token_id=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        vision_end_token_id=tokenizer.convert_tokens_to_ids("<|vision_end|>"),
    )
    _seed(seed)
    model = model_cls(cfg)
    pixels = _IMAGE * _IMAGE
    sizes = dict(patch_size=patch, merge_size=merge, temporal_patch_size=2)
    image_processor = tf.Qwen2VLImageProcessor(**sizes, min_pixels=pixels, max_pixels=pixels)
    if kind == "qwen3_vl":
        video_processor = tf.Qwen3VLVideoProcessor(**sizes, size={"shortest_edge": pixels, "longest_edge": pixels})
    else:
        video_processor = tf.Qwen2VLVideoProcessor(**sizes, min_pixels=pixels, max_pixels=pixels)
    processor = proc_cls(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_processor,
        chat_template=_chat_template("<|vision_start|><|image_pad|><|vision_end|>"),
    )
    return _finish(model, processor, directory, tokenizer)


def build_tiny_qwen2_vl(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny Qwen2-VL: 64x64 px images, patch 8, merge 2 -> 16 image tokens; M-RoPE with
    ``mrope_section=[2, 3, 3]`` (sums to head_dim/2 = 8).  Returns the directory path."""
    return _build_tiny_qwen("qwen2_vl", directory, seed, init_range)


def build_tiny_qwen2_5_vl(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny Qwen2.5-VL: as :func:`build_tiny_qwen2_vl` (patch 8, merge 2 -> 16 image tokens), the
    vision tower with window attention (window 32 px) and one full-attention block, an RMSNorm/SwiGLU
    ViT of width 32 projected to 64 by the merger.  Returns the directory path."""
    return _build_tiny_qwen("qwen2_5_vl", directory, seed, init_range)


def build_tiny_qwen3_vl(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny Qwen3-VL: 64x64 px images, patch 16, merge 2 -> 4 image tokens; learned position
    embeddings (a 4x4 grid), one deepstack layer, interleaved M-RoPE.  Returns the directory path."""
    return _build_tiny_qwen("qwen3_vl", directory, seed, init_range)


def _clip_vision(patch: int, init_range: float, siglip: bool = False, **extra):
    import transformers as tf

    cls = tf.SiglipVisionConfig if siglip else tf.CLIPVisionConfig
    return cls(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
               image_size=_IMAGE, patch_size=patch, initializer_range=init_range, **extra)


def build_tiny_llava_next(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny LLaVA-NeXT: a CLIP tower (64x64 px, patch 16) run on every crop of the any-resolution
    grid (pinpoints 64x64, 64x128, 128x64: a square image gives the base view + one crop), the
    CLS token dropped (``vision_feature_select_strategy="default"``); Llama text model.  Returns
    the directory path."""
    import transformers as tf

    tokenizer = train_tiny_tokenizer()
    patch = 16
    pins = [[_IMAGE, _IMAGE], [_IMAGE, 2 * _IMAGE], [2 * _IMAGE, _IMAGE]]
    cfg = tf.LlavaNextConfig(
        vision_config=_clip_vision(patch, init_range, projection_dim=32),
        text_config=tf.LlamaConfig(**_text_config_kwargs(tokenizer, init_range)),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=pins,
        vision_feature_select_strategy="default",
        vision_feature_layer=-1,
        image_seq_length=(_IMAGE // patch) ** 2,
    )
    _seed(seed)
    model = tf.LlavaNextForConditionalGeneration(cfg)
    image_processor = tf.LlavaNextImageProcessor(
        size={"shortest_edge": _IMAGE}, crop_size={"height": _IMAGE, "width": _IMAGE}, image_grid_pinpoints=pins,
    )
    processor = tf.LlavaNextProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=patch,
        vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=_chat_template("<image>"),
    )
    return _finish(model, processor, directory, tokenizer)


def build_tiny_paligemma(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny PaliGemma: a SigLIP tower (64x64 px, patch 16 -> 16 image tokens, no CLS token) and a
    Gemma text model (head_dim 16); the processor adds PaliGemma's location and segmentation
    tokens to the tokenizer before the text model's vocabulary is sized.  Returns the directory
    path."""
    import transformers as tf

    tokenizer = train_tiny_tokenizer()
    patch = 16
    image_processor = tf.SiglipImageProcessor(size={"height": _IMAGE, "width": _IMAGE})
    image_processor.image_seq_length = (_IMAGE // patch) ** 2
    processor = tf.PaliGemmaProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                      chat_template=_chat_template("<image>"))
    text = dict(_text_config_kwargs(tokenizer, init_range), head_dim=_HIDDEN // _HEADS)
    cfg = tf.PaliGemmaConfig(
        vision_config=_clip_vision(patch, init_range, siglip=True, projection_dim=_HIDDEN),
        text_config=tf.GemmaConfig(**text),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        projection_dim=_HIDDEN,
    )
    _seed(seed)
    model = tf.PaliGemmaForConditionalGeneration(cfg)
    return _finish(model, processor, directory, tokenizer)


def build_tiny_gemma3(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny Gemma 3: a SigLIP tower (64x64 px, patch 16 -> 16 patches, pooled to 4 image tokens),
    ``<|vision_start|>``/``<|vision_end|>`` as the begin/end-of-image tokens, no pan-and-scan; a
    Gemma 3 text model (head_dim 16, sliding window 64).  Returns the directory path."""
    import transformers as tf

    tokenizer = train_tiny_tokenizer(extra_special_tokens={
        "image_token": "<image>", "boi_token": "<|vision_start|>", "eoi_token": "<|vision_end|>"})
    patch, tokens = 16, 4
    image_processor = tf.Gemma3ImageProcessor(size={"height": _IMAGE, "width": _IMAGE}, do_pan_and_scan=False)
    processor = tf.Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer,
                                   chat_template=_chat_template("<|vision_start|>"), image_seq_length=tokens)
    text = dict(_text_config_kwargs(tokenizer, init_range), head_dim=_HIDDEN // _HEADS, sliding_window=64)
    cfg = tf.Gemma3Config(
        vision_config=_clip_vision(patch, init_range, siglip=True),
        text_config=tf.Gemma3TextConfig(**text),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"),
        boi_token_index=tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        eoi_token_index=tokenizer.convert_tokens_to_ids("<|vision_end|>"),
        mm_tokens_per_image=tokens,
    )
    _seed(seed)
    model = tf.Gemma3ForConditionalGeneration(cfg)
    return _finish(model, processor, directory, tokenizer)


def build_tiny_smolvlm(directory: str | os.PathLike, seed: int = 0, init_range: float = 0.2) -> Path:
    """Tiny SmolVLM (transformers' ``smolvlm`` classes; the processor needs ``num2words``): as
    :func:`build_tiny_idefics3`, 64x64 px, patch 16, scale factor 2 -> 4 image tokens, no
    splitting.  Returns the directory path."""
    import transformers as tf

    tokenizer = train_tiny_tokenizer()
    patch, scale = 16, 2
    vision = tf.SmolVLMVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                                    image_size=_IMAGE, patch_size=patch, initializer_range=init_range)
    cfg = tf.SmolVLMConfig(vision_config=vision, text_config=tf.LlamaConfig(**_text_config_kwargs(tokenizer, init_range)),
                           image_token_id=tokenizer.convert_tokens_to_ids("<image>"), scale_factor=scale)
    _seed(seed)
    model = tf.SmolVLMForConditionalGeneration(cfg)
    size = {"longest_edge": _IMAGE}
    processor = tf.SmolVLMProcessor(
        image_processor=tf.SmolVLMImageProcessor(do_image_splitting=False, size=size, max_image_size=size),
        tokenizer=tokenizer,
        video_processor=tf.SmolVLMVideoProcessor(size=size, max_image_size=size),
        image_seq_len=((_IMAGE // patch) ** 2) // (scale**2),
        chat_template=_chat_template("<image>"),
    )
    return _finish(model, processor, directory, tokenizer)


_BUILDERS = {
    "llava": build_tiny_llava,
    "idefics3": build_tiny_idefics3,
    "qwen2_vl": build_tiny_qwen2_vl,
    "llava_next": build_tiny_llava_next,
    "qwen2_5_vl": build_tiny_qwen2_5_vl,
    "qwen3_vl": build_tiny_qwen3_vl,
    "paligemma": build_tiny_paligemma,
    "gemma3": build_tiny_gemma3,
    "smolvlm": build_tiny_smolvlm,
}


def build_tiny_vlm(family: str, directory: str | os.PathLike, seed: int = 0) -> Path:
    """Build the tiny model of ``family`` (one of :data:`VISION_FAMILIES`) into ``directory``.

    Raises ``ValueError`` for an unknown family.
    """
    try:
        builder = _BUILDERS[family]
    except KeyError:
        raise ValueError(f"unknown family {family!r}; expected one of {VISION_FAMILIES}") from None
    return builder(directory, seed=seed)
