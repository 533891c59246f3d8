"""Encoder-LLM gap probe (seed 002 §2.4, appendix A): folds, probe, subsets, cache."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from perceptbench.metrics import probe as mp
from perceptbench.vsi import features as vf
from perceptbench.vsi import probe as vp
from perceptbench.vsi.samples import VSISample


def test_slug_of_long_task_ids_is_short_and_unique():
    a = vf.slug("m@vsi.pope@images=" + "/very/long/path" * 30 + ",limit=4")
    b = vf.slug("m@vsi.pope@images=" + "/very/long/path" * 30 + ",limit=5")
    assert len(a) == 120 and a != b and vf.slug("m@vsi.salbench.syn@n=30") == "m_vsi.salbench.syn_n_30"


def test_groupkfold_never_splits_an_image():
    rng = np.random.default_rng(0)
    image_ids = np.array([f"img{k}" for k in rng.integers(0, 23, 70)])  # several questions per image
    folds = mp.probe_folds(image_ids)
    n = image_ids.size
    groups = np.r_[image_ids, image_ids]
    seen = np.zeros(2 * n, int)
    for tr, te in folds:
        seen[te] += 1
        assert not set(groups[tr]) & set(groups[te])  # no image on both sides
        for i in te:  # both views of the sample in the same test fold
            j = i + n if i < n else i - n
            assert j in set(te.tolist())
    assert np.all(seen == 1) and len(folds) == 5
    with pytest.raises(ValueError, match="distinct images"):
        mp.probe_folds(np.array(["a", "b", "a", "c"]))


def test_probe_separates_views_and_gap_on_subsets():
    rng = np.random.default_rng(1)
    n, d = 120, 16
    clean = rng.normal(size=(n, d))
    pert = clean + 0.0
    pert[:, 0] += 3.0  # the tower sees the blur along one direction
    ok, folds = mp.probe_oof_correct(clean, pert, np.array([f"i{k // 2}" for k in range(n)]))
    assert ok.mean() > 0.85 and folds.shape == (5,)  # Bayes accuracy Phi(1.5) = 0.93
    vsi = np.r_[np.full(40, 0.01), np.linspace(0.1, 2, 80)]
    ids = [f"s{i:03d}" for i in range(n)]
    low, ctrl = vp.subsets(vsi, ids, seed=0)
    assert low.sum() == 40 and ctrl.sum() == 24 and not (low & ctrl).any()  # top quintile = 24
    changed = np.r_[np.zeros(40, bool), np.ones(80, bool)]
    g = mp.gap_on_subset(np.ones(n), changed, np.array([f"i{k // 2}" for k in range(n)]), low, seed=0)
    assert g.probe_acc[0] == 1 and g.argmax_change[0] == 0 and g.gap[0] == 1 and g.n_images == 20


class _FakeTower:
    """Deterministic 'vision tower' for cache tests: features = pixel means of 4 quadrants."""
    name = "fake"
    model_version = "fake@1"

    def vision_features(self, images):
        out = []
        for im in images:
            a = np.asarray(im, float).mean(2)
            v = np.array([a[:32, :32].mean(), a[:32, 32:].mean(), a[32:, :32].mean(), a[32:, 32:].mean(),
                          a.std()])
            out.append(v / np.linalg.norm(v))
        return np.array(out, np.float32)


def test_cache_round_trip_and_skipped(tmp_path):
    from PIL import Image, ImageFilter

    rng = np.random.default_rng(2)
    imgs = [Image.fromarray((rng.random((64, 64, 3)) * 255).astype("uint8")) for _ in range(12)]
    items = [vf.ProbeItem(f"s{i}", f"img{i}", "region", 20.0, (lambda im=im: im),
                          (lambda im=im: im.filter(ImageFilter.GaussianBlur(3)))) for i, im in enumerate(imgs)]
    meta = vf.cache_probe_features(_FakeTower(), items, tmp_path, key="fake@t")
    assert json.loads(meta.read_text())["dim"] == 5
    store = vf.ProbeFeatures(tmp_path)
    f = store.get("fake@t")
    assert set(f) == {(f"s{i}", "region", 20.0) for i in range(12)}
    assert np.allclose(np.linalg.norm(f[("s0", "region", 20.0)][1]), 1, atol=1e-6)
    vf.cache_probe_features(object(), items, tmp_path, key="api-model@t")
    assert "no vision tower" in vf.ProbeFeatures(tmp_path).skipped("api-model@t")
    samples = [VSISample("t", "b", "api-model", "x", f"s{i}", f"img{i}", "region", 20.0, 0.01, False, True, 0.9,
                         None, "exact") for i in range(12)]
    rows = vp.probe_rows(samples, vf.ProbeFeatures(tmp_path))
    assert rows[0].metric == "skipped[region,sigma=20]" and "no vision tower" in rows[0].note
    other = [dataclasses.replace(x, model="nocache") for x in samples]
    rows = vp.probe_rows(other, vf.ProbeFeatures(tmp_path))
    assert rows[0].metric == "skipped[region,sigma=20]" and "no cached features" in rows[0].note
    # a tampered cache is refused
    p = tmp_path / "fake_t.npz"
    p.write_bytes(p.read_bytes()[:-3] + b"xyz")
    with pytest.raises(ValueError, match="sha256"):
        vf.ProbeFeatures(tmp_path).get("fake@t")


TOWERS = {"llava": "CLIPVisionModel", "llava_next": "CLIPVisionModel", "idefics3": "Idefics3VisionTransformer",
          "smolvlm": "SmolVLMVisionTransformer", "qwen2_vl": "Qwen2VisionTransformerPretrainedModel",
          "qwen2_5_vl": "Qwen2_5_VisionTransformerPretrainedModel", "qwen3_vl": "Qwen3VLVisionModel",
          "paligemma": "SiglipVisionModel", "gemma3": "SiglipVisionModel"}
"""The tower each tiny family's model holds, found by the generic lookup (no per-family table)."""


def _noise_image(seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((64, 64, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module")
def tiny_vlms(tmp_path_factory):
    pytest.importorskip("transformers")
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import VISION_FAMILIES, build_tiny_vlm

    root = tmp_path_factory.mktemp("towers")
    return {f: HFVLM(build_tiny_vlm(f, root / f), name=f) for f in VISION_FAMILIES}


def test_every_tiny_family_has_a_builder_and_the_families_cover_seed_002s_vlms():
    pytest.importorskip("transformers")
    from perceptbench.testing.tiny_vlm import VISION_FAMILIES

    assert set(TOWERS) == set(VISION_FAMILIES) and len(VISION_FAMILIES) >= 5
    assert {"llava_next", "qwen2_5_vl", "qwen3_vl"} <= set(VISION_FAMILIES)  # skipped before issue 22 item 5


@pytest.mark.parametrize("family", sorted(TOWERS))
def test_vision_tower_hook(family, tiny_vlms):
    """Every family's tower is found generically and gives unit-norm final-layer features that
    depend on the image (a blur moves them) and on nothing else (same image, same row)."""
    from PIL import ImageFilter

    m = tiny_vlms[family]
    assert type(m.vision_tower()).__name__ == TOWERS[family]
    im = _noise_image()
    f = m.vision_features([im, im.filter(ImageFilter.GaussianBlur(6)), im])
    assert f.dtype == np.float32 and f.shape == (3, 32)
    assert np.allclose(np.linalg.norm(f, axis=1), 1, atol=1e-5)
    assert np.array_equal(f[0], f[2]) and not np.allclose(f[0], f[1])


def _by_hand(h):
    v = h.float().reshape(-1, h.shape[-1]).mean(0)
    return (v / v.norm()).numpy()


def test_llava_next_features_are_every_crops_patch_tokens_without_cls(tiny_vlms):
    """LLaVA-NeXT, by hand: the CLIP tower on the base view and each any-resolution crop, CLS
    token dropped, mean over all crops' patch tokens (a 64x128 image: base view + 2 crops)."""
    import torch

    m = tiny_vlms["llava_next"]
    im = _noise_image(1).resize((128, 64))
    pv = m.processor.image_processor(images=[im], return_tensors="pt")["pixel_values"][0]
    assert pv.shape[0] == 3
    with torch.inference_mode():
        h = m.model.model.vision_tower(pv).last_hidden_state[:, 1:]
    np.testing.assert_allclose(m.vision_features([im])[0], _by_hand(h), atol=1e-6)


@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl"])
def test_qwen_features_are_the_patches_before_the_merger(family, tiny_vlms):
    """Qwen2.5-VL / Qwen3-VL, by hand: the ``visual`` blocks' output on every patch (before the
    2x2 merger projects them to the text width), mean over patches."""
    import torch

    m = tiny_vlms[family]
    enc = m.processor.image_processor(images=[_noise_image(2)], return_tensors="pt")
    with torch.inference_mode():
        h = m.model.model.visual(enc["pixel_values"], grid_thw=enc["image_grid_thw"]).last_hidden_state
    assert h.shape[-1] == 32 and h.dim() == 2
    np.testing.assert_allclose(m.vision_features([_noise_image(2)])[0], _by_hand(h), atol=1e-6)


@pytest.mark.parametrize("family", ["paligemma", "gemma3"])
def test_siglip_features_keep_every_token(family, tiny_vlms):
    """PaliGemma / Gemma 3, by hand: SigLIP has no CLS token; every one of its 16 tokens counts."""
    import torch

    m = tiny_vlms[family]
    assert not m._drops_cls()
    pv = m.processor.image_processor(images=[_noise_image(3)], return_tensors="pt")["pixel_values"]
    with torch.inference_mode():
        h = m.model.model.vision_tower(pixel_values=pv).last_hidden_state
    assert h.shape[1] == 16
    np.testing.assert_allclose(m.vision_features([_noise_image(3)])[0], _by_hand(h), atol=1e-6)


def test_model_without_tower_is_skipped(tmp_path):
    from perceptbench.models.vlm_hf import HFVLM, VisionTowerUnavailable

    class Bare:  # a model whose get_encoder(modality="image") finds no tower returns itself
        config = type("C", (), {"model_type": "mllama"})()

        def get_encoder(self, modality=None):
            return self

    class NoTower(HFVLM):  # an hf: model of a type whose tower transformers' lookup does not find
        def __init__(self):
            self.name = "other"
            self.model = Bare()

    with pytest.raises(VisionTowerUnavailable, match="mllama"):
        NoTower().vision_features([])
    from perceptbench.vsi import features as vf2

    meta = vf2.cache_probe_features(NoTower(), [vf.ProbeItem("s", "i", "region", 20.0, lambda: None, lambda: None)],
                                    tmp_path, key="other@t")
    assert "mllama" in json.loads(meta.read_text())["skipped"]


class _FakeTask:
    """A VSI task of 12 samples (the real stimuli of ``vsi.salbench.syn@n=12``), only what the
    feature writer reads."""

    def __init__(self):
        from perceptbench.tasks import get_task

        self._t = get_task("vsi.salbench.syn@n=12")
        self.task_id = "t"

    def stimuli(self, seed):
        return self._t.stimuli(seed)


def _witness_rows(tmp_path, monkeypatch, clip):
    monkeypatch.setattr(vf, "WITNESS_CLIP", clip)
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    task = _FakeTask()
    vf.cache_task_features(task, _FakeTower(), tmp_path / "features", 0)
    items = vf.probe_items(task, 0)
    samples = [VSISample("t", "b", "fake", "x", it.sample_id, it.image_id, it.perturbation, it.sigma, 0.01, False,
                         True, 0.9, None, "exact") for it in items]
    rows = vp.probe_rows(samples, vf.ProbeFeatures(tmp_path / "features"))
    return [r for r in rows if r.metric.startswith("witness_probe_acc_all")], tmp_path / "features"


def test_clip_witness_is_used_when_one_is_available_and_the_rows_say_so(tmp_path, monkeypatch):
    """Issue 22 item 5: a CLIP witness (seed 002 appendix A) when one is in the local cache (here a
    local directory standing for it); the store key, the sidecar and every witness row's note name it."""
    pytest.importorskip("transformers")
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    clip = build_tiny_clip(tmp_path / "tiny-clip")
    rows, feats = _witness_rows(tmp_path, monkeypatch, str(clip))
    assert rows and all(r.note.startswith("frozen external witness (tiny-clip, ") for r in rows)
    assert not math.isnan(rows[0].value)
    meta = json.loads((feats / "witness_tiny-clip_t.json").read_text())
    assert meta["key"] == "witness:tiny-clip@t" and meta["hook"] == "embed" and meta["model_version"]
    assert not (feats / "witness_efficientnet-lite0_t.json").exists()


def test_efficientnet_witness_is_the_offline_default_and_the_rows_say_so(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    rows, feats = _witness_rows(tmp_path, monkeypatch, "no-such-org/clip-not-in-the-cache")
    assert rows and all(r.note.startswith("frozen external witness (efficientnet-lite0);") for r in rows)
    assert json.loads((feats / "witness_efficientnet-lite0_t.json").read_text())["key"] == "witness:efficientnet-lite0@t"
    assert not math.isnan(rows[0].value)
