"""Tiny, seeded, randomly initialised image encoders built fully offline, for tests.

Every builder here constructs a model from a *config object* (no hub download, no
network), seeds its random initialisation, and writes it to a directory in the same
layout a real checkpoint has, so the real loaders in :mod:`perceptbench.models` can load
it exactly as they would load ``openai/clip-vit-base-patch32`` or ``timm/resnet10t``:

* Hugging Face transformers (``build_tiny_clip`` ... ``build_tiny_beit``): ``config.json``,
  ``model.safetensors``, ``preprocessor_config.json`` (and tokenizer files for the
  image-text models), via ``save_pretrained``.
* open_clip (``build_tiny_openclip``): a ``local-dir:`` folder with
  ``open_clip_config.json`` and ``open_clip_model.safetensors``.
* timm (``save_tiny_timm_checkpoint``): a ``state_dict`` file for ``checkpoint_path=``.

Sizes: hidden width 32, 2 layers, 2 heads, 32x32 px input, patch 8 (16 patches; the
timm checkpoint uses timm's own ``test_*`` architectures, 160 px), so a
forward pass of a few images takes milliseconds on 2 CPU cores.  The weights are random:
these models are for testing the loading / preprocessing / pooling / normalisation code,
and their embeddings mean nothing perceptually.

Tokenizers (offline):

* CLIP: a real CLIP byte-level BPE built from open_clip's bundled
  ``bpe_simple_vocab_16e6.txt.gz`` (the vocabulary OpenAI CLIP ships), truncated to the
  first ``num_merges`` merges to stay small (a truncated merge list is still a valid BPE:
  words just split into more pieces).
* SigLIP / SigLIP2: a Gemma-style BPE with byte fallback (``Siglip2Tokenizer`` class)
  whose vocabulary is the special tokens, the 256 byte tokens ``<0x00>``..``<0xFF>`` and
  the characters ``a-z0-9`` and the space marker; no merges.  The real SigLIP tokenizer is
  a SentencePiece model that cannot be built offline; any tokenizer whose ids fit the
  tiny text tower's vocabulary exercises the same code path.

All builders return the output directory as a :class:`pathlib.Path`.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Callable

# Tiny-architecture constants shared by all builders.
HIDDEN = 32
LAYERS = 2
HEADS = 2
INTERMEDIATE = 64
IMAGE_SIZE = 32
PATCH = 8
PROJECTION = 16  # CLIP / open_clip joint embedding width

_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
_IMAGENET_MEAN = [0.485, 0.456, 0.406]
_IMAGENET_STD = [0.229, 0.224, 0.225]
_HALF = [0.5, 0.5, 0.5]


def _seeded(seed: int, build: Callable):
    """Call ``build()`` with torch's global RNG seeded, restoring the RNG state afterwards."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


# --------------------------------------------------------------------------- tokenizers


def clip_bpe_vocab_and_merges(num_merges: int = 2000) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """CLIP's byte-level BPE vocabulary and merges, from open_clip's bundled BPE file.

    Reproduces ``open_clip.tokenizer.SimpleTokenizer``'s construction (which is OpenAI
    CLIP's): the 256 byte-to-unicode symbols, the same with the ``</w>`` end-of-word
    suffix, one token per merge, then ``<|startoftext|>`` and ``<|endoftext|>``.
    ``num_merges`` (at most 48894) truncates the merge list to keep the vocabulary small:
    the vocabulary size is ``512 + num_merges + 2``.
    """
    import open_clip.tokenizer as oct

    path = Path(oct.__file__).with_name("bpe_simple_vocab_16e6.txt.gz")
    lines = gzip.open(path).read().decode("utf-8").split("\n")
    full = lines[1 : 49152 - 256 - 2 + 1]
    if not 0 <= num_merges <= len(full):
        raise ValueError(f"num_merges must be in [0, {len(full)}], got {num_merges}")
    merges = [tuple(m.split()) for m in full[:num_merges]]
    symbols = list(oct.bytes_to_unicode().values())
    vocab_list = symbols + [s + "</w>" for s in symbols] + ["".join(m) for m in merges]
    vocab_list += ["<|startoftext|>", "<|endoftext|>"]
    vocab = {tok: i for i, tok in enumerate(vocab_list)}
    return vocab, merges


def build_clip_tokenizer(num_merges: int = 2000):
    """A ``transformers.CLIPTokenizer`` built offline from open_clip's BPE file.

    Works with transformers 5.x (``vocab=``/``merges=`` objects) and 4.x (files).
    """
    from transformers import CLIPTokenizer

    vocab, merges = clip_bpe_vocab_and_merges(num_merges)
    try:
        return CLIPTokenizer(vocab=vocab, merges=merges)
    except TypeError:  # transformers 4.x: slow tokenizer wants files
        import tempfile

        d = Path(tempfile.mkdtemp(prefix="pb-clip-tok-"))
        (d / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
        (d / "merges.txt").write_text(
            "#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n", encoding="utf-8"
        )
        return CLIPTokenizer(vocab_file=str(d / "vocab.json"), merges_file=str(d / "merges.txt"))


def build_byte_fallback_tokenizer():
    """A small Gemma-style byte-fallback BPE tokenizer (``Siglip2Tokenizer``), offline.

    Vocabulary, 5 + 256 + 37 = 298 ids: ``<pad>``=0, ``<eos>``=1, ``<bos>``=2,
    ``<unk>``=3, ``<mask>``=4, the 256 byte tokens ``<0x00>``..``<0xFF>``, then ``▁``
    and ``a-z0-9``.  Text is lower-cased; pads on the left (the class's default).
    Any UTF-8 text tokenizes (unknown characters fall back to bytes).
    """
    from transformers import Siglip2Tokenizer

    vocab_list = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    vocab_list += [f"<0x{b:02X}>" for b in range(256)]
    vocab_list += ["\u2581"] + list("abcdefghijklmnopqrstuvwxyz0123456789")
    vocab = {tok: i for i, tok in enumerate(vocab_list)}
    return Siglip2Tokenizer(vocab=vocab, merges=[])


# --------------------------------------------------------------------------- HF builders


def _text_kwargs(vocab_size: int, max_len: int, **extra) -> dict:
    return dict(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        max_position_embeddings=max_len,
        **extra,
    )


def _vision_kwargs(**extra) -> dict:
    return dict(
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        image_size=IMAGE_SIZE,
        patch_size=PATCH,
        **extra,
    )


def _save(model, processor_parts: list, out_dir) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    for part in processor_parts:
        part.save_pretrained(out)
    return out


def build_tiny_clip(out_dir, seed: int = 0) -> Path:
    """Tiny ``CLIPModel`` (vision + text towers, projection 16) + CLIP image processor + BPE tokenizer."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    tok = build_clip_tokenizer()
    config = CLIPConfig(
        text_config=_text_kwargs(
            len(tok), 16, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=_vision_kwargs(),
        projection_dim=PROJECTION,
    )
    model = _seeded(seed, lambda: CLIPModel(config))
    proc = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        image_mean=_CLIP_MEAN, image_std=_CLIP_STD,
    )
    return _save(model, [proc, tok], out_dir)


def build_tiny_siglip(out_dir, seed: int = 0) -> Path:
    """Tiny ``SiglipModel`` + SigLIP image processor (resize to 32x32, mean/std 0.5) + byte-fallback tokenizer."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    tok = build_byte_fallback_tokenizer()
    config = SiglipConfig(
        text_config=_text_kwargs(len(tok), 16, pad_token_id=tok.pad_token_id,
                                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id),
        vision_config=_vision_kwargs(),
    )
    model = _seeded(seed, lambda: SiglipModel(config))
    proc = SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                                image_mean=_HALF, image_std=_HALF)
    return _save(model, [proc, tok], out_dir)


def build_tiny_siglip2(out_dir, seed: int = 0) -> Path:
    """Tiny ``Siglip2Model`` (NaFlex: at most 16 patches of 8 px) + Siglip2 image processor + tokenizer."""
    from transformers import Siglip2Config, Siglip2ImageProcessor, Siglip2Model

    tok = build_byte_fallback_tokenizer()
    vision = _vision_kwargs(num_patches=16)
    vision.pop("image_size")
    config = Siglip2Config(
        text_config=_text_kwargs(len(tok), 16, pad_token_id=tok.pad_token_id,
                                 bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id),
        vision_config=vision,
    )
    model = _seeded(seed, lambda: Siglip2Model(config))
    proc = Siglip2ImageProcessor(patch_size=PATCH, max_num_patches=16, image_mean=_HALF, image_std=_HALF)
    return _save(model, [proc, tok], out_dir)


def build_tiny_dinov2(out_dir, seed: int = 0) -> Path:
    """Tiny ``Dinov2Model`` + ``BitImageProcessor`` (shortest edge 32, centre crop 32, ImageNet mean/std)."""
    from transformers import BitImageProcessor, Dinov2Config, Dinov2Model

    config = Dinov2Config(**_vision_kwargs(mlp_ratio=2))
    model = _seeded(seed, lambda: Dinov2Model(config))
    proc = BitImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_center_crop=True, do_convert_rgb=True, image_mean=_IMAGENET_MEAN, image_std=_IMAGENET_STD,
    )
    return _save(model, [proc], out_dir)


def build_tiny_dinov2_with_registers(out_dir, seed: int = 0) -> Path:
    """Tiny ``Dinov2WithRegistersModel`` (4 register tokens) + ``BitImageProcessor`` as for DINOv2."""
    from transformers import BitImageProcessor, Dinov2WithRegistersConfig, Dinov2WithRegistersModel

    config = Dinov2WithRegistersConfig(**_vision_kwargs(mlp_ratio=2, num_register_tokens=4))
    model = _seeded(seed, lambda: Dinov2WithRegistersModel(config))
    proc = BitImageProcessor(
        size={"shortest_edge": IMAGE_SIZE}, crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
        do_center_crop=True, do_convert_rgb=True, image_mean=_IMAGENET_MEAN, image_std=_IMAGENET_STD,
    )
    return _save(model, [proc], out_dir)


def build_tiny_vit(out_dir, seed: int = 0) -> Path:
    """Tiny ``ViTModel`` (no pooler layer) + ``ViTImageProcessor`` (resize 32x32, mean/std 0.5)."""
    from transformers import ViTConfig, ViTImageProcessor, ViTModel

    config = ViTConfig(**_vision_kwargs())
    model = _seeded(seed, lambda: ViTModel(config, add_pooling_layer=False))
    proc = ViTImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, image_mean=_HALF, image_std=_HALF)
    return _save(model, [proc], out_dir)


def build_tiny_vitmae(out_dir, seed: int = 0) -> Path:
    """Tiny ``ViTMAEModel`` (mask_ratio 0.75 in its config, as the real checkpoints) + ``ViTImageProcessor``.

    The config keeps the real checkpoints' ``mask_ratio=0.75`` on purpose: the loader must
    override it (tests check that embeddings are deterministic and unmasked).
    """
    from transformers import ViTImageProcessor, ViTMAEConfig, ViTMAEModel

    config = ViTMAEConfig(**_vision_kwargs(mask_ratio=0.75, decoder_hidden_size=HIDDEN,
                                           decoder_num_hidden_layers=1, decoder_num_attention_heads=HEADS,
                                           decoder_intermediate_size=INTERMEDIATE))
    model = _seeded(seed, lambda: ViTMAEModel(config))
    proc = ViTImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE},
                             image_mean=_IMAGENET_MEAN, image_std=_IMAGENET_STD)
    return _save(model, [proc], out_dir)


def build_tiny_beit(out_dir, seed: int = 0) -> Path:
    """Tiny ``BeitModel`` with its mean-pooling pooler (``use_mean_pooling=True``) + ``BeitImageProcessor``."""
    from transformers import BeitConfig, BeitImageProcessor, BeitModel

    config = BeitConfig(**_vision_kwargs(use_mean_pooling=True, use_relative_position_bias=True,
                                         vocab_size=64))
    model = _seeded(seed, lambda: BeitModel(config, add_pooling_layer=True))
    # Give the pooler's LayerNorm non-trivial affine parameters (fresh ones are 1 and 0),
    # so a test can tell the pooler apart from a plain mean of patch tokens.
    import torch

    def _perturb():
        with torch.no_grad():
            model.pooler.layernorm.weight.add_(0.5 * torch.randn_like(model.pooler.layernorm.weight))
            model.pooler.layernorm.bias.add_(0.5 * torch.randn_like(model.pooler.layernorm.bias))

    _seeded(seed + 1, _perturb)
    proc = BeitImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, do_center_crop=False,
                              do_reduce_labels=False, image_mean=_HALF, image_std=_HALF)
    return _save(model, [proc], out_dir)


#: family name (transformers ``model_type``) -> builder
TINY_HF_BUILDERS: dict[str, Callable] = {
    "clip": build_tiny_clip,
    "siglip": build_tiny_siglip,
    "siglip2": build_tiny_siglip2,
    "dinov2": build_tiny_dinov2,
    "dinov2_with_registers": build_tiny_dinov2_with_registers,
    "vit": build_tiny_vit,
    "vit_mae": build_tiny_vitmae,
    "beit": build_tiny_beit,
}


def install_in_fake_hub_cache(src_dir, cache_dir, repo_id: str, commit: str) -> Path:
    """Lay a saved model directory out as a Hugging Face hub cache entry for ``repo_id``.

    Writes ``cache_dir/models--ORG--NAME/snapshots/COMMIT/<files>`` and
    ``refs/main`` = ``COMMIT``, the layout ``huggingface_hub`` reads in offline mode, so
    ``from_pretrained(repo_id, cache_dir=cache_dir, local_files_only=True)`` resolves it
    without a network.  ``commit`` must be 40 hex digits.  Returns the snapshot directory.
    """
    import shutil

    if len(commit) != 40 or any(c not in "0123456789abcdef" for c in commit):
        raise ValueError("commit must be 40 lowercase hex digits")
    repo_dir = Path(cache_dir) / ("models--" + repo_id.replace("/", "--"))
    snap = repo_dir / "snapshots" / commit
    shutil.copytree(src_dir, snap, dirs_exist_ok=True)
    (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return snap


# --------------------------------------------------------------------------- open_clip


def tiny_openclip_model_cfg() -> dict:
    """An open_clip model config (``embed_dim``/``vision_cfg``/``text_cfg``) for a tiny ViT CLIP.

    Vision: ViT, 32 px, patch 8, width 32, 2 layers, head width 16.  Text: the standard
    CLIP BPE vocabulary (49408 ids, open_clip's own ``SimpleTokenizer``), context 16,
    width 32, 2 layers.  Joint embedding width 16.
    """
    return {
        "embed_dim": PROJECTION,
        "vision_cfg": {"image_size": IMAGE_SIZE, "layers": LAYERS, "width": HIDDEN,
                       "head_width": HIDDEN // HEADS, "patch_size": PATCH},
        "text_cfg": {"context_length": 16, "vocab_size": 49408, "width": HIDDEN,
                     "heads": HEADS, "layers": LAYERS},
    }


def register_tiny_openclip_arch(config_dir, name: str = "pb-tiny-ViT") -> str:
    """Register :func:`tiny_openclip_model_cfg` as a built-in open_clip architecture ``name``.

    Writes ``config_dir/NAME.json`` and calls ``open_clip.add_model_config`` (a process-
    global registry).  Returns ``name``, usable as ``OpenCLIPEncoder(name, pretrained=None)``.
    """
    import open_clip

    d = Path(config_dir)
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.json"
    path.write_text(json.dumps(tiny_openclip_model_cfg(), indent=1))
    open_clip.add_model_config(path)
    return name


def build_tiny_openclip(out_dir, seed: int = 0) -> Path:
    """A tiny seeded open_clip model saved as a ``local-dir:`` folder.

    Files: ``open_clip_config.json`` (``model_cfg`` + ``preprocess_cfg``: 32 px, CLIP
    mean/std, bicubic, shortest-edge resize + centre crop) and
    ``open_clip_model.safetensors``.  Load with ``OpenCLIPEncoder("local-dir:" + str(out))``.
    """
    import open_clip
    from safetensors.torch import save_file

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = tiny_openclip_model_cfg()
    model = _seeded(seed, lambda: open_clip.CLIP(**cfg))
    state = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(out / "open_clip_model.safetensors"))
    (out / "open_clip_config.json").write_text(json.dumps({
        "model_cfg": cfg,
        "preprocess_cfg": {"size": IMAGE_SIZE, "mean": _CLIP_MEAN, "std": _CLIP_STD,
                           "interpolation": "bicubic", "resize_mode": "shortest"},
    }, indent=1))
    return out


# --------------------------------------------------------------------------- timm


def save_tiny_timm_checkpoint(path, model_name: str = "test_vit", seed: int = 0) -> Path:
    """Save the ``state_dict`` (classifier included) of a seeded random ``timm`` model.

    ``model_name`` should be one of timm's tiny test architectures (``test_vit``,
    ``test_resnet``, ``test_efficientnet`` ...).  Returns ``path``.
    """
    import timm
    import torch

    model = _seeded(seed, lambda: timm.create_model(model_name, pretrained=False))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), path)
    return path
