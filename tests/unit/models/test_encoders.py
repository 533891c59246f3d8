"""Real encoder loaders (transformers, timm, open_clip) on tiny seeded models, fully offline.

The tiny models come from :mod:`perceptbench.testing.tiny_encoders`: built from config
objects with seeded random weights and saved in the same layout as real checkpoints, so
the loaders under test run the same code a real ``openai/clip-vit-base-patch32`` would.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw

pytest.importorskip("torch", reason="model back-ends need the [models] extra")
import torch  # noqa: E402

from perceptbench.models.base import Encoder, ModelLoadError, TextEncoder  # noqa: E402
from perceptbench.models.encoders_hf import HFEncoder, HFImageTextEncoder  # noqa: E402
from perceptbench.models.encoders_openclip import OpenCLIPEncoder  # noqa: E402
from perceptbench.models.encoders_timm import TimmEncoder  # noqa: E402
from perceptbench.testing import tiny_encoders as tiny  # noqa: E402

HF_FAMILIES = ["clip", "siglip", "siglip2", "dinov2", "dinov2_with_registers", "vit", "vit_mae", "beit"]
TEXT_FAMILIES = ["clip", "siglip", "siglip2"]
EXPECTED_DIM = {"clip": tiny.PROJECTION, "siglip": tiny.HIDDEN, "siglip2": tiny.HIDDEN,
                "dinov2": tiny.HIDDEN, "dinov2_with_registers": tiny.HIDDEN, "vit": tiny.HIDDEN, "vit_mae": tiny.HIDDEN, "beit": tiny.HIDDEN}
LOCAL_VERSION_RE = re.compile(r"^local:(/.+):([0-9a-f]{16})$")
TEXTS = ["a photo of a cat", "a red circle", "two dogs on the grass", "x"]


# --------------------------------------------------------------------------- fixtures


def _images() -> list[Image.Image]:
    """Six different images, different sizes, one grayscale (mode L)."""
    rng = np.random.default_rng(0)
    ims = [
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)),
        Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)),
        Image.fromarray(np.tile(np.linspace(0, 255, 50, dtype=np.uint8)[None, :, None], (30, 1, 3))),
    ]
    disk = Image.new("RGB", (48, 48), "white")
    ImageDraw.Draw(disk).ellipse([8, 8, 40, 40], fill=(220, 20, 20))
    square = Image.new("RGB", (32, 32), "black")
    ImageDraw.Draw(square).rectangle([4, 10, 20, 26], fill=(20, 40, 230))
    gray = Image.fromarray(rng.integers(0, 256, (36, 36), dtype=np.uint8), mode="L")
    return ims + [disk, square, gray]


@pytest.fixture(scope="module")
def images():
    return _images()


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_hf")
    return {fam: build(root / fam, seed=0) for fam, build in tiny.TINY_HF_BUILDERS.items()}


@pytest.fixture(scope="module")
def hf_encoders(tiny_dirs):
    return {fam: HFEncoder(tiny_dirs[fam], name=f"tiny-{fam}") for fam in HF_FAMILIES}


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    """Force huggingface_hub offline with an empty cache, whatever the environment says."""
    import huggingface_hub.constants as c

    cache = tmp_path / "empty_hf_cache"
    cache.mkdir()
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(cache))
    return cache


def _check_embedding(x: np.ndarray, n: int, d: int):
    assert isinstance(x, np.ndarray)
    assert x.shape == (n, d)
    assert x.dtype == np.float32
    assert np.all(np.isfinite(x))
    np.testing.assert_allclose(np.linalg.norm(x.astype(np.float64), axis=1), 1.0, atol=1e-6)


def _check_distinct(x: np.ndarray):
    """Every pair of rows differs (distinct inputs -> distinct embeddings)."""
    diff = np.linalg.norm(x[:, None, :] - x[None, :, :], axis=-1)
    off = diff[~np.eye(len(x), dtype=bool)]
    assert off.min() > 1e-3, f"two different inputs got (nearly) the same embedding: min distance {off.min()}"


def _unit(t: torch.Tensor) -> np.ndarray:
    t = t.detach().double()
    return (t / t.norm(dim=-1, keepdim=True)).float().numpy()


# --------------------------------------------------------------------------- HF: common contract


@pytest.mark.parametrize("family", HF_FAMILIES)
def test_hf_embed_contract(hf_encoders, images, family):
    enc = hf_encoders[family]
    assert isinstance(enc, Encoder)
    assert enc.family == "encoder" and enc.name == f"tiny-{family}" and enc.model_type == family
    x = enc.embed(images, batch_size=4)
    _check_embedding(x, len(images), EXPECTED_DIM[family])
    assert enc.dim == EXPECTED_DIM[family]
    _check_distinct(x)


@pytest.mark.parametrize("family", HF_FAMILIES)
def test_hf_deterministic_and_batch_invariant(hf_encoders, tiny_dirs, images, family):
    enc = hf_encoders[family]
    a = enc.embed(images, batch_size=4)
    b = enc.embed(images, batch_size=4)
    assert a.tobytes() == b.tobytes(), "two identical calls differ"
    one = enc.embed(images, batch_size=1)
    np.testing.assert_allclose(one, a, atol=1e-5, rtol=0)
    # a freshly loaded copy gives the same bytes (no random state in loading or pooling)
    fresh = HFEncoder(tiny_dirs[family])
    assert fresh.embed(images, batch_size=4).tobytes() == a.tobytes()
    # the same image embedded twice in one batch gives the same row
    dup = enc.embed([images[0], images[1], images[0]], batch_size=3)
    np.testing.assert_allclose(dup[0], dup[2], atol=1e-6)


@pytest.mark.parametrize("family", HF_FAMILIES)
def test_hf_local_model_version(hf_encoders, tiny_dirs, tmp_path, family):
    enc = hf_encoders[family]
    m = LOCAL_VERSION_RE.match(enc.model_version)
    assert m, enc.model_version
    assert m.group(1) == str(Path(tiny_dirs[family]).resolve())
    # the hash covers the weights: other weights -> other version; same weights -> same hash
    other = tiny.TINY_HF_BUILDERS[family](tmp_path / "other", seed=1)
    assert LOCAL_VERSION_RE.match(HFEncoder(other).model_version).group(2) != m.group(2)
    copy = shutil.copytree(tiny_dirs[family], tmp_path / "copy")
    assert LOCAL_VERSION_RE.match(HFEncoder(copy).model_version).group(2) == m.group(2)


def test_hf_input_handling(hf_encoders, images):
    enc = hf_encoders["vit"]
    gray = images[5]
    assert gray.mode == "L"
    np.testing.assert_array_equal(enc.embed([gray]), enc.embed([gray.convert("RGB")]))
    empty = enc.embed([])
    assert empty.shape == (0, enc.dim) and empty.dtype == np.float32
    with pytest.raises(ValueError):
        enc.embed(images, batch_size=0)
    with pytest.raises(TypeError):
        enc.embed([np.zeros((8, 8, 3), np.uint8)])


# --------------------------------------------------------------------------- HF: per-family pooling


def _pixels(enc, ims):
    return enc.processor(images=[im.convert("RGB") for im in ims], return_tensors="pt")


def test_clip_siglip_use_projected_image_features(hf_encoders, images):
    for fam in ("clip", "siglip", "siglip2"):
        enc = hf_encoders[fam]
        inputs = _pixels(enc, images[:3])
        with torch.no_grad():
            out = enc.model.get_image_features(**inputs)
        ref = out if isinstance(out, torch.Tensor) else out.pooler_output
        np.testing.assert_allclose(enc.embed(images[:3]), _unit(ref), atol=1e-6)
    # CLIP: pooled CLS after post_layernorm, times visual_projection (width projection_dim)
    enc = hf_encoders["clip"]
    with torch.no_grad():
        vis = enc.model.vision_model(pixel_values=_pixels(enc, images[:3])["pixel_values"])
        ref = enc.model.visual_projection(vis.pooler_output)
    np.testing.assert_allclose(enc.embed(images[:3]), _unit(ref), atol=1e-6)


def test_dinov2_and_vit_use_cls_token(hf_encoders, images):
    for fam in ("dinov2", "vit"):
        enc = hf_encoders[fam]
        assert enc.pooling == "cls"
        with torch.no_grad():
            hidden = enc.model(pixel_values=_pixels(enc, images)["pixel_values"]).last_hidden_state
        np.testing.assert_allclose(enc.embed(images), _unit(hidden[:, 0]), atol=1e-6)
        np.testing.assert_allclose(
            HFEncoder(enc.source, pooling="mean").embed(images), _unit(hidden[:, 1:].mean(1)), atol=1e-6
        )


def test_dinov2_with_registers_mean_skips_register_tokens(hf_encoders, images):
    enc = hf_encoders["dinov2_with_registers"]
    n_reg = enc.model.config.num_register_tokens
    assert n_reg == 4
    with torch.no_grad():
        hidden = enc.model(pixel_values=_pixels(enc, images)["pixel_values"]).last_hidden_state
    n_patches = (tiny.IMAGE_SIZE // tiny.PATCH) ** 2
    assert hidden.shape[1] == 1 + n_reg + n_patches
    np.testing.assert_allclose(enc.embed(images), _unit(hidden[:, 0]), atol=1e-6)
    np.testing.assert_allclose(HFEncoder(enc.source, pooling="mean").embed(images),
                               _unit(hidden[:, 1 + n_reg:].mean(1)), atol=1e-6)


def test_vitmae_is_unmasked_mean_of_patch_tokens(hf_encoders, tiny_dirs, images):
    enc = hf_encoders["vit_mae"]
    saved = json.loads((Path(tiny_dirs["vit_mae"]) / "config.json").read_text())
    assert saved["mask_ratio"] == 0.75  # the checkpoint asks for masking ...
    assert enc.model.config.mask_ratio == 0.0  # ... the loader turns it off
    assert enc.pooling == "mean"
    # Independent reference: the encoder run by hand, no masking, patches in order.
    m = enc.model
    with torch.no_grad():
        pix = _pixels(enc, images)["pixel_values"]
        emb = m.embeddings
        patches = emb.patch_embeddings(pix) + emb.position_embeddings[:, 1:, :]
        cls = (emb.cls_token + emb.position_embeddings[:, :1, :]).expand(len(images), -1, -1)
        seq = torch.cat([cls, patches], dim=1)
        h = seq
        for layer in (m.layers if hasattr(m, "layers") else m.encoder.layer):  # transformers 5.x / 4.x
            out = layer(h)
            h = out[0] if isinstance(out, tuple) else out
        hidden = m.layernorm(h)
    assert hidden.shape[1] == 1 + (tiny.IMAGE_SIZE // tiny.PATCH) ** 2
    np.testing.assert_allclose(enc.embed(images), _unit(hidden[:, 1:].mean(1)), atol=1e-5)
    np.testing.assert_allclose(HFEncoder(enc.source, pooling="cls").embed(images),
                               _unit(hidden[:, 0]), atol=1e-5)


def test_beit_uses_its_mean_pooling_pooler(hf_encoders, images):
    enc = hf_encoders["beit"]
    assert enc.pooling == "pooler" and enc.model.config.use_mean_pooling
    with torch.no_grad():
        hidden = enc.model(pixel_values=_pixels(enc, images)["pixel_values"]).last_hidden_state
        ref = enc.model.pooler.layernorm(hidden[:, 1:].mean(1))
    x = enc.embed(images)
    np.testing.assert_allclose(x, _unit(ref), atol=1e-6)
    plain_mean = HFEncoder(enc.source, pooling="mean").embed(images)
    np.testing.assert_allclose(plain_mean, _unit(hidden[:, 1:].mean(1)), atol=1e-6)
    assert np.abs(plain_mean - x).max() > 1e-3  # the pooler's LayerNorm matters


def test_invalid_pooling_rejected(tiny_dirs):
    with pytest.raises(ValueError, match="pooling"):
        HFEncoder(tiny_dirs["clip"], pooling="cls")
    with pytest.raises(ValueError, match="pooling"):
        HFEncoder(tiny_dirs["vit"], pooling="max")


def test_hf_uses_pil_processors(hf_encoders):
    for fam, enc in hf_encoders.items():
        assert enc.settings["processor_backend"] == "pil"
        assert type(enc.processor).__name__.endswith("Pil"), (fam, type(enc.processor).__name__)


# --------------------------------------------------------------------------- HF: text


@pytest.mark.parametrize("family", HF_FAMILIES)
def test_text_capability_matches_family(hf_encoders, family):
    enc = hf_encoders[family]
    assert isinstance(enc, TextEncoder) == (family in TEXT_FAMILIES)
    assert isinstance(enc, HFImageTextEncoder) == (family in TEXT_FAMILIES)


@pytest.mark.parametrize("family", TEXT_FAMILIES)
def test_hf_embed_text(hf_encoders, family):
    enc = hf_encoders[family]
    t = enc.embed_text(TEXTS)
    _check_embedding(t, len(TEXTS), enc.dim)
    _check_distinct(t)
    assert enc.embed_text(TEXTS).tobytes() == t.tobytes()
    # per-text result does not depend on what else is in the batch (padding is masked / fixed)
    np.testing.assert_allclose(enc.embed_text(TEXTS[:1]), t[:1], atol=1e-5)
    np.testing.assert_allclose(enc.embed_text(TEXTS, batch_size=1), t, atol=1e-5)
    # reference: get_text_features on the tokenizer output
    tok = enc.tokenizer
    max_len = enc.model.config.text_config.max_position_embeddings
    kw = dict(padding=True) if family == "clip" else dict(padding="max_length")
    batch = tok(TEXTS, truncation=True, max_length=max_len, return_tensors="pt", **kw)
    with torch.no_grad():
        out = enc.model.get_text_features(**{k: v for k, v in batch.items() if k in ("input_ids", "attention_mask")})
    ref = out if isinstance(out, torch.Tensor) else out.pooler_output
    np.testing.assert_allclose(t, _unit(ref), atol=1e-6)
    assert enc.embed_text([]).shape == (0, enc.dim)
    with pytest.raises(TypeError):
        enc.embed_text([3])


def test_clip_tokenizer_is_real_clip_bpe(tiny_dirs):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dirs["clip"])
    ids = tok("a photo of a cat")["input_ids"]
    assert ids[0] == tok.convert_tokens_to_ids("<|startoftext|>")
    assert ids[-1] == tok.convert_tokens_to_ids("<|endoftext|>")
    assert tok.convert_ids_to_tokens(ids[1:-1]) == ["a</w>", "photo</w>", "of</w>", "a</w>", "cat</w>"]


# --------------------------------------------------------------------------- HF: hub ids and errors


def test_hf_hub_id_pins_commit(tiny_dirs, tmp_path, images):
    commit = hashlib.sha1(b"perceptbench-test").hexdigest()
    cache = tmp_path / "hub"
    tiny.install_in_fake_hub_cache(tiny_dirs["vit"], cache, "pbtest/tiny-vit", commit)
    enc = HFEncoder("pbtest/tiny-vit", cache_dir=cache, local_files_only=True)
    assert enc.model_version == f"pbtest/tiny-vit@{commit}"
    assert enc.name == "pbtest/tiny-vit"
    local = HFEncoder(tiny_dirs["vit"])
    assert enc.embed(images).tobytes() == local.embed(images).tobytes()
    by_branch = HFEncoder("pbtest/tiny-vit", revision="main", cache_dir=cache, local_files_only=True)
    assert by_branch.model_version == enc.model_version
    by_commit = HFEncoder("pbtest/tiny-vit", revision=commit, cache_dir=cache, local_files_only=True)
    assert by_commit.model_version == enc.model_version
    # a CLIP from the hub cache is an image-text encoder too
    tiny.install_in_fake_hub_cache(tiny_dirs["clip"], cache, "pbtest/tiny-clip", commit)
    clip = HFEncoder("pbtest/tiny-clip", cache_dir=cache, local_files_only=True)
    assert isinstance(clip, TextEncoder) and clip.embed_text(["a cat"]).shape == (1, tiny.PROJECTION)


def test_hf_bad_id_offline_raises_model_load_error(offline_hub):
    bad = "perceptbench-test/no-such-model"
    with pytest.raises(ModelLoadError, match=re.escape(bad)):
        HFEncoder(bad)
    with pytest.raises(ModelLoadError, match="no-such-dir"):
        HFEncoder("./no-such-dir")


def test_hf_unsupported_family_and_mismatched_weights(tiny_dirs, tmp_path):
    from transformers import ConvNextConfig, ConvNextModel

    d = tmp_path / "convnext"
    ConvNextModel(ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)).save_pretrained(d)
    with pytest.raises(ModelLoadError, match="convnext"):
        HFEncoder(d)
    # a checkpoint that does not cover the architecture is refused, not silently random
    grown = Path(shutil.copytree(tiny_dirs["vit"], tmp_path / "vit3"))
    cfg = json.loads((grown / "config.json").read_text())
    cfg["num_hidden_layers"] = 3
    (grown / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="uninitialised"):
        HFEncoder(grown)


# --------------------------------------------------------------------------- timm


@pytest.fixture(scope="module")
def timm_encoder():
    return TimmEncoder("test_vit", name="tiny-vit-timm", pretrained=False)


def test_timm_contract(timm_encoder, images):
    enc = timm_encoder
    assert isinstance(enc, Encoder) and not isinstance(enc, TextEncoder)
    assert enc.family == "encoder" and enc.name == "tiny-vit-timm"
    assert enc.model_version == "timm:test_vit@random-init(seed=0)"
    x = enc.embed(images, batch_size=4)
    _check_embedding(x, len(images), enc.dim)
    _check_distinct(x)
    assert enc.embed(images, batch_size=4).tobytes() == x.tobytes()
    np.testing.assert_allclose(enc.embed(images, batch_size=1), x, atol=1e-5, rtol=0)
    # seeded random init: same seed -> same weights -> same bytes; other seed -> other weights
    assert TimmEncoder("test_vit", pretrained=False).embed(images, batch_size=4).tobytes() == x.tobytes()
    other = TimmEncoder("test_vit", pretrained=False, seed=1).embed(images, batch_size=4)
    assert np.abs(other - x).max() > 1e-3


def test_timm_checkpoint_and_reference(tmp_path, images):
    import timm
    from timm.data import create_transform, resolve_data_config

    path = tiny.save_tiny_timm_checkpoint(tmp_path / "w.pth", "test_vit", seed=3)
    enc = TimmEncoder("test_vit", checkpoint_path=path)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert enc.model_version == f"timm:test_vit+sha256:{sha}"
    # reference: the full classifier model with the same weights, its pre-logits features
    ref_model = timm.create_model("test_vit", pretrained=False)
    ref_model.load_state_dict(torch.load(path, weights_only=True))
    ref_model.eval()
    tf = create_transform(**resolve_data_config({}, model=ref_model), is_training=False)
    x = torch.stack([tf(im.convert("RGB")) for im in images])
    with torch.no_grad():
        ref = ref_model.forward_head(ref_model.forward_features(x), pre_logits=True)
    np.testing.assert_allclose(enc.embed(images), _unit(ref), atol=1e-6)
    # data config is timm's for this model
    assert enc.data_config["input_size"] == (3, 160, 160)


def test_timm_errors(tmp_path, offline_hub):
    with pytest.raises(ModelLoadError, match="no_such_arch"):
        TimmEncoder("no_such_arch", pretrained=False)
    with pytest.raises(ModelLoadError, match="test_vit"):
        TimmEncoder("test_vit", pretrained=True)  # offline, not cached
    path = tiny.save_tiny_timm_checkpoint(tmp_path / "vit.pth", "test_vit")
    with pytest.raises(ModelLoadError, match="does not fit"):
        TimmEncoder("test_resnet", checkpoint_path=path)
    with pytest.raises(ModelLoadError, match="not found"):
        TimmEncoder("test_vit", checkpoint_path=tmp_path / "missing.pth")


# --------------------------------------------------------------------------- open_clip


@pytest.fixture(scope="module")
def openclip_dir(tmp_path_factory):
    return tiny.build_tiny_openclip(tmp_path_factory.mktemp("oc") / "tiny", seed=0)


@pytest.fixture(scope="module")
def openclip_encoder(openclip_dir):
    return OpenCLIPEncoder("local-dir:" + str(openclip_dir))


def test_openclip_contract(openclip_encoder, openclip_dir, images):
    enc = openclip_encoder
    assert isinstance(enc, Encoder) and isinstance(enc, TextEncoder) and enc.family == "encoder"
    m = LOCAL_VERSION_RE.match(enc.model_version)
    assert m and m.group(1) == str(openclip_dir.resolve())
    x = enc.embed(images, batch_size=4)
    _check_embedding(x, len(images), tiny.PROJECTION)
    _check_distinct(x)
    assert enc.embed(images, batch_size=4).tobytes() == x.tobytes()
    np.testing.assert_allclose(enc.embed(images, batch_size=1), x, atol=1e-5, rtol=0)
    t = enc.embed_text(TEXTS)
    _check_embedding(t, len(TEXTS), tiny.PROJECTION)
    _check_distinct(t)
    assert enc.embed_text(TEXTS).tobytes() == t.tobytes()
    np.testing.assert_allclose(enc.embed_text(TEXTS, batch_size=1), t, atol=1e-5)


def test_openclip_matches_independent_reference(openclip_encoder, openclip_dir, images):
    import open_clip
    from safetensors.torch import load_file

    ref = open_clip.CLIP(**tiny.tiny_openclip_model_cfg())
    ref.load_state_dict(load_file(str(openclip_dir / "open_clip_model.safetensors")))
    ref.eval()
    x = torch.stack([openclip_encoder.preprocess(im.convert("RGB")) for im in images])
    tokens = open_clip.tokenize(TEXTS, context_length=16)
    with torch.no_grad():
        img_ref, txt_ref = ref.encode_image(x), ref.encode_text(tokens)
    np.testing.assert_allclose(openclip_encoder.embed(images), _unit(img_ref), atol=1e-6)
    np.testing.assert_allclose(openclip_encoder.embed_text(TEXTS), _unit(txt_ref), atol=1e-6)
    assert x.shape[-2:] == (tiny.IMAGE_SIZE, tiny.IMAGE_SIZE)


def test_openclip_builtin_arch_random_and_file(tmp_path, images, openclip_dir, openclip_encoder):
    arch = tiny.register_tiny_openclip_arch(tmp_path / "cfgs", name="pb-tiny-ViT")
    a = OpenCLIPEncoder(arch)  # pretrained=None: seeded random init
    assert a.model_version == "pb-tiny-ViT@random-init(seed=0)" and a.name == "pb-tiny-ViT"
    assert OpenCLIPEncoder(arch).embed(images).tobytes() == a.embed(images).tobytes()
    assert np.abs(OpenCLIPEncoder(arch, seed=1).embed(images) - a.embed(images)).max() > 1e-3
    # a weights file as `pretrained`: same weights as the local-dir model -> same embeddings
    wfile = openclip_dir / "open_clip_model.safetensors"
    f = OpenCLIPEncoder(arch, pretrained=str(wfile), name="tiny-file")
    assert f.model_version == f"pb-tiny-ViT+sha256:{hashlib.sha256(wfile.read_bytes()).hexdigest()}"
    assert f.name == "tiny-file"
    np.testing.assert_allclose(f.embed(images), openclip_encoder.embed(images), atol=1e-6)


def test_openclip_errors(tmp_path, offline_hub):
    with pytest.raises(ModelLoadError, match="no-such-arch"):
        OpenCLIPEncoder("no-such-arch")
    with pytest.raises(ModelLoadError, match=re.escape("ViT-B-32@openai")):
        OpenCLIPEncoder("ViT-B-32", pretrained="openai")  # offline, not cached
    empty = tmp_path / "noweights"
    empty.mkdir()
    (empty / "open_clip_config.json").write_text(json.dumps({"model_cfg": tiny.tiny_openclip_model_cfg()}))
    with pytest.raises(ModelLoadError, match="no weight files"):
        OpenCLIPEncoder("local-dir:" + str(empty))
    with pytest.raises(ValueError):
        OpenCLIPEncoder("local-dir:" + str(empty), pretrained="openai")


def test_loading_a_hf_model_prints_no_progress_bar_or_info_log(tmp_path, capfd):
    """Before: transformers' 'Loading weights: 100%|...' bar leaked into `perceptbench run`'s output."""
    pytest.importorskip("torch")
    import transformers.utils.logging as tl

    from perceptbench.models.registry import load_model
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "tiny-clip")
    capfd.readouterr()
    before = (tl.get_verbosity(), tl.is_progress_bar_enabled())
    tl.set_verbosity_info()
    try:
        load_model(f"hf:{d}")
        out, err = capfd.readouterr()
        assert "Loading weights" not in out + err and "loading weights file" not in (out + err).lower()
        assert tl.get_verbosity() == 20 and tl.is_progress_bar_enabled()  # restored afterwards
    finally:
        tl.set_verbosity(before[0])


def test_openclip_fails_at_once_when_its_weights_need_an_unreachable_hub(tmp_path, monkeypatch):
    """Before: open_clip tried two weight files, each with the hub client's retries (149 s offline)."""
    import huggingface_hub.constants as c
    import open_clip

    from perceptbench.models import encoders_openclip as eo

    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr("perceptbench.models.hub.hub_unreachable_reason",
                        lambda timeout=3.0: "huggingface.co:443 is not reachable (test)")

    def would_download(*a, **k):
        raise AssertionError("open_clip was asked to download")

    monkeypatch.setattr(open_clip, "create_model_and_transforms", would_download)
    want = ("open_clip:ViT-B-32@laion2b_s34b_b79k: pretrained weights (laion/CLIP-ViT-B-32-laion2B-s34B-b79K) are "
            "not in the Hugging Face cache and huggingface.co:443 is not reachable (test); download them")
    with pytest.raises(ModelLoadError, match=re.escape(want)):
        OpenCLIPEncoder("ViT-B-32", pretrained="laion2b_s34b_b79k")
    with pytest.raises(ModelLoadError, match=re.escape("open_clip:hf-hub:org/clip: pretrained weights (org/clip)")):
        OpenCLIPEncoder("hf-hub:org/clip")
    # weights in the cache (either file name): loading proceeds, whatever the hub
    snap = cache / "models--laion--CLIP-ViT-B-32-laion2B-s34B-b79K" / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (snap.parents[1] / "refs").mkdir()
    (snap.parents[1] / "refs" / "main").write_text("a" * 40)
    (snap / "open_clip_model.safetensors").write_bytes(b"x")
    assert eo.check_pretrained_reachable("ViT-B-32", "laion2b_s34b_b79k") is None
    with pytest.raises(ModelLoadError, match="AssertionError: open_clip was asked to download"):
        OpenCLIPEncoder("ViT-B-32", pretrained="laion2b_s34b_b79k")  # got past the check to open_clip
    # a local weights file or a reachable hub: nothing to check
    (tmp_path / "w.bin").write_bytes(b"x")
    assert eo.check_pretrained_reachable("ViT-B-32", str(tmp_path / "w.bin")) is None
    monkeypatch.setattr("perceptbench.models.hub.hub_unreachable_reason", lambda timeout=3.0: None)
    assert eo.check_pretrained_reachable("ViT-B-16", "laion2b_s34b_b88k") is None
