"""The embedded default encoder: real weights mapped into the plain-torch EfficientNet-Lite0,
checked against the reference implementation that ships with them, against timm's
``tf_efficientnet_lite0`` and transform, and on a real photograph."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="model extra not installed")  # the CI installs it

from PIL import Image

from perceptbench.models.default import EfficientNetLiteEncoder, weights_path


@pytest.fixture(scope="module")
def enc():
    return EfficientNetLiteEncoder()


@pytest.fixture(scope="module")
def photo():
    import matplotlib.cbook as cbook

    with Image.open(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)) as im:
        return im.convert("RGB")


def test_logits_equal_reference_implementation(enc, photo):
    from efficientnet_lite_pytorch import EfficientNet

    ref = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=weights_path("efficientnet-lite0")).eval()
    x = enc._batch([photo, photo.rotate(90), photo.resize((100, 300))])
    with torch.inference_mode():
        ours = enc.model(x)
        theirs = ref(x)
    assert torch.allclose(ours, theirs, atol=1e-4), float((ours - theirs).abs().max())


def test_top1_of_a_real_photo(enc, photo):
    # Grace Hopper in uniform (matplotlib's sample photo): ImageNet 400 academic gown top-1,
    # 652 military uniform in the top 5
    logits = enc.logits([photo])[0]
    top5 = np.argsort(-logits)[:5]
    assert top5[0] == 400
    assert 652 in top5


def test_embeddings_shape_norm_determinism(enc, photo):
    imgs = [photo, photo.convert("L").convert("RGB"), Image.new("RGB", (224, 224), "white")]
    e1 = enc.embed(imgs, batch_size=2)
    e2 = enc.embed(imgs, batch_size=3)
    assert e1.shape == (3, 1280) and e1.dtype == np.float32
    assert np.allclose(np.linalg.norm(e1, axis=1), 1, atol=1e-5)
    assert np.allclose(e1, e2, atol=1e-5)
    assert not np.allclose(e1[0], e1[2])
    assert enc.model_version == "sha256:579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db"
    assert enc.data_config["mean"] == (0.5, 0.5, 0.5) and enc.data_config["crop_pct"] == 0.875


def test_batch_preprocessing_is_bit_identical_to_timms_per_image_transform(enc, photo):
    # issue 25: the geometric steps per image, ToTensor and Normalize once on the whole batch, without
    # torchvision; the input (and so every embedding) stays bit-identical to timm's per-image transform
    import timm

    imgs = [photo, photo.resize((100, 300)), photo.convert("L"), Image.new("RGB", (224, 224), "white"),
            photo.crop((0, 0, 384, 384)), photo.resize((300, 257)), photo.resize((256, 256))]
    ref_model = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    config = timm.data.resolve_data_config({}, model=ref_model)
    assert enc.data_config == config
    tf = timm.data.create_transform(**config)
    ref = torch.stack([tf(im.convert("RGB")) for im in imgs])
    x = enc._batch(imgs)
    assert x.dtype == torch.float32 and x.is_contiguous() and torch.equal(x, ref)


def test_features_and_logits_are_bit_identical_to_timms_tf_efficientnet_lite0(enc, photo):
    # the pinned scores rest on timm's network: the plain-torch copy must give the same bits
    import timm

    from perceptbench.models.default import map_state_dict

    ref = timm.create_model("tf_efficientnet_lite0", pretrained=False)
    sd = torch.load(weights_path("efficientnet-lite0"), map_location="cpu", weights_only=True)
    ref.load_state_dict(map_state_dict(sd, list(ref.state_dict())), strict=True)
    ref.eval()
    x = enc._batch([photo, photo.rotate(90), photo.resize((100, 300))])
    with torch.inference_mode():
        f, g = enc.model.forward_features(x), ref.forward_features(x)
        assert torch.equal(f, g)
        assert torch.equal(enc.model.forward_head(f, pre_logits=True), ref.forward_head(g, pre_logits=True))
        assert torch.equal(enc.model(x), ref(x))


def test_default_encoder_imports_neither_timm_nor_torchvision(photo, tmp_path):
    # issue 25, item 7: timm imports torchvision at import time (timm.layers), ~195 MiB of the default
    # job; a subprocess that refuses both still builds and runs the default encoder
    import subprocess
    import sys

    photo.save(tmp_path / "p.png")
    code = (
        "import importlib.abc, sys\n"
        "class Refuse(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in ('timm', 'torchvision'):\n"
        "            raise ImportError('refused ' + name)\n"
        "sys.meta_path.insert(0, Refuse())\n"
        "from PIL import Image\n"
        "from perceptbench.models.default import EfficientNetLiteEncoder\n"
        f"e = EfficientNetLiteEncoder().embed([Image.open({str(tmp_path / 'p.png')!r})])\n"
        "assert e.shape == (1, 1280)\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'timm', 'torchvision'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_default_batch_size_per_family():
    from perceptbench.models.base import ENCODER_BATCH_SIZE, VLM_BATCH_SIZE, default_batch_size

    assert (ENCODER_BATCH_SIZE, VLM_BATCH_SIZE) == (8, 32)
    assert default_batch_size(None, "encoder") == 8 and default_batch_size(None, "vlm") == 32
    assert default_batch_size(5, "encoder") == 5 and default_batch_size(64, "vlm") == 64


def test_embed_forward_passes_hold_at_most_8_images(enc, photo, monkeypatch):
    """The default batch bounds the activations of one forward pass (issue 11: a batch of 32
    added ~690 MiB to a SalBench run's peak memory, a batch of 8 ~200 MiB)."""
    sizes = []
    inner = enc.model.forward_features

    def spy(x):
        sizes.append(x.shape[0])
        return inner(x)

    monkeypatch.setattr(enc.model, "forward_features", spy)
    e = enc.embed([photo.rotate(7 * i) for i in range(20)])
    assert sizes == [8, 8, 4] and e.shape == (20, 1280)


def test_salbench_records_identical_at_batch_8_and_32(enc, tmp_path):
    """A run at the default batch (8) writes the records a run at 32 wrote: same responses and
    raw outputs (cosines to 6 decimals) for every trial; only ``settings.batch_size`` differs."""
    from perceptbench.records import read_records
    from perceptbench.runner import RunConfig, run

    task = "salbench.detection.syn@n=12,n_probe=12"
    got = {}
    for bs in (None, 32):
        out = tmp_path / f"bs{bs}"
        run(RunConfig(out=out, tasks=(task,), models=("efficientnet-lite0",), batch_size=bs), progress=False,
            load_model=lambda arg: enc)
        got[bs] = {r.trial_id: r for r in read_records(out / "records.jsonl") if r.model_family == "encoder"}
    assert len(got[None]) == 12 and set(got[None]) == set(got[32])

    def strip(r):
        d = r.model_dump()
        settings = d["run_meta"].pop("settings")
        d["run_meta"].pop("run_id")
        return d, settings["batch_size"]

    for tid, r in got[None].items():
        a, bs_a = strip(r)
        b, bs_b = strip(got[32][tid])
        assert (bs_a, bs_b) == (8, 32)
        assert a == b, tid
