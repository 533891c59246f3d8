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
