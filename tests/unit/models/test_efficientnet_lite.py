"""models/efficientnet_lite.py: the plain-torch EfficientNet-Lite is timm's ``tf_efficientnet_lite{0,1,2}``
bit for bit (same state-dict keys in the same order, same logits), and its preprocessing is the
geometric part of timm's eval transform, pixel for pixel."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="model extra not installed")
timm = pytest.importorskip("timm", reason="model extra not installed")

from PIL import Image

from perceptbench.models.efficientnet_lite import EfficientNetLite, make_divisible, resize_center_crop


@pytest.mark.parametrize("variant", ["lite0", "lite1", "lite2"])
def test_network_is_timms_bit_for_bit(variant):
    # random weights (seeded) copied from timm's model: same keys and order, equal logits and features
    torch.manual_seed(0)
    ref = timm.create_model(f"tf_efficientnet_{variant}", pretrained=False).eval()
    ours = EfficientNetLite(variant).eval()
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict(ref.state_dict(), strict=True)
    x = torch.randn(2, 3, 97, 130)  # odd and even sizes: TF "SAME" padding is asymmetric on odd inputs
    with torch.inference_mode():
        assert torch.equal(ours.forward_features(x), ref.forward_features(x))
        assert torch.equal(ours(x), ref(x))
    assert ours.num_features == ref.num_features == 1280


@pytest.mark.parametrize("size,crop_pct", [(224, 0.875), (240, 0.882), (260, 0.89)])
def test_resize_center_crop_is_timms_geometric_transform(size, crop_pct):
    from torchvision import transforms as T

    tf = timm.data.create_transform(input_size=(3, size, size), interpolation="bicubic", crop_pct=crop_pct,
                                    mean=(0.5,) * 3, std=(0.5,) * 3)
    geometric = T.Compose(list(tf.transforms)[:-2])
    rng = np.random.default_rng(1)
    for w, h in [(224, 224), (384, 384), (256, 256), (100, 300), (301, 257), (460, 456), (1000, 20)]:
        im = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        ours = resize_center_crop(im, size, crop_pct)
        assert ours.size == (size, size)
        assert np.array_equal(np.asarray(ours), np.asarray(geometric(im))), (w, h)


def test_make_divisible_rounds_to_eight_and_never_below_ninety_percent():
    assert [make_divisible(v) for v in (16, 17.6, 35.2, 12, 3)] == [16, 16, 32, 16, 8]
    assert make_divisible(20) == 24  # 20 -> 24 (nearest multiple, half up)
