"""EfficientNet-Lite in plain torch, the same network and the same float operations as timm's
``tf_efficientnet_lite{0,1,2}`` (issue 25, item 7: the default encoder runs without importing
timm, which imports torchvision at import time, ~195 MiB of the default job's memory).

Architecture: Tan & Le 2019 (EfficientNet, arXiv:1905.11946) with the "Lite" changes of the
TensorFlow TPU repository (``models/official/efficientnet/lite``: ReLU6, no squeeze-excitation,
stem and head fixed at 32 and 1280 channels, first and last stage not depth-scaled), as timm
builds it (``timm/models/efficientnet.py::_gen_efficientnet_lite``, arch_def copied below;
``_efficientnet_blocks.py::DepthwiseSeparableConv, InvertedResidual``; TF "SAME" padding
``timm/layers/padding.py::pad_same``; BatchNorm eps 1e-3).  Modules carry timm's names in
timm's order, so state dicts are interchangeable; the outputs are bit-identical to timm's
(``tests/unit/models/test_efficientnet_lite.py``), hence every embedding of the default
encoder and every pinned score is unchanged.

Preprocessing (:func:`resize_center_crop`): timm's pretrained config (``crop_pct`` 0.875,
bicubic, mean = std = 0.5) as torchvision applies it to a PIL image: short side to
``floor(224 / 0.875)`` = 256 px (long side ``int(256 * long / short)``), PIL bicubic, centre crop
224 (offsets ``int(round((h - 224) / 2))``), as ``torchvision.transforms.functional.resize`` and
``center_crop`` do (tested bit-identical against timm's ``create_transform``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

ARCH_DEF = (("ds", 1, 3, 1, 1, 16), ("ir", 2, 3, 2, 6, 24), ("ir", 2, 5, 2, 6, 40), ("ir", 3, 3, 2, 6, 80),
            ("ir", 3, 5, 1, 6, 112), ("ir", 4, 5, 2, 6, 192), ("ir", 1, 3, 1, 6, 320))
"""(block type, repeats, kernel, stride of the first block, expansion, out channels) per stage:
timm's ``['ds_r1_k3_s1_e1_c16'], ['ir_r2_k3_s2_e6_c24'], ...`` for EfficientNet-Lite."""

MULTIPLIERS = {"lite0": (1.0, 1.0), "lite1": (1.0, 1.1), "lite2": (1.1, 1.2)}
"""(channel multiplier, depth multiplier) per variant (timm ``tf_efficientnet_lite*``)."""

BN_EPS = 1e-3
"""TensorFlow's BatchNorm epsilon (timm ``BN_EPS_TF_DEFAULT``)."""

STEM, HEAD = 32, 1280
MEAN = STD = (0.5, 0.5, 0.5)
INPUT_PX, CROP_PCT = 224, 0.875


def make_divisible(v: float, divisor: int = 8, round_limit: float = 0.9) -> int:
    """Channels rounded to a multiple of ``divisor``, never below 90% of ``v`` (timm ``make_divisible``)."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < round_limit * v else new_v


def _same_pad(x: torch.Tensor, k: int, s: int) -> torch.Tensor:
    """TF "SAME" zero padding before a strided conv (timm ``pad_same``): total ``max((ceil(n/s) - 1) * s
    + k - n, 0)`` per side pair, the odd pixel on the right/bottom."""
    ih, iw = x.size()[-2:]
    ph = max((math.ceil(ih / s) - 1) * s + k - ih, 0)
    pw = max((math.ceil(iw / s) - 1) * s + k - iw, 0)
    return F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), value=0)


class _Conv(nn.Conv2d):
    """Conv without bias; stride 1: static symmetric padding ``(k - 1) // 2``; stride 2: TF SAME."""

    def __init__(self, cin: int, cout: int, k: int, stride: int = 1, groups: int = 1):
        super().__init__(cin, cout, k, stride, (k - 1) // 2 if stride == 1 else 0, groups=groups, bias=False)

    def forward(self, x):
        if self.stride[0] == 1:
            return super().forward(x)
        return F.conv2d(_same_pad(x, self.kernel_size[0], self.stride[0]), self.weight, None, self.stride, (0, 0),
                        self.dilation, self.groups)


class _BNAct(nn.BatchNorm2d):
    """BatchNorm (eps 1e-3) then ReLU6 in place when ``act`` (timm ``BatchNormAct2d``)."""

    def __init__(self, c: int, act: bool = True):
        super().__init__(c, eps=BN_EPS)
        self.act = act

    def forward(self, x):
        x = super().forward(x)
        return F.hardtanh(x, 0.0, 6.0, inplace=True) if self.act else x


class _DepthwiseSeparable(nn.Module):
    """Depthwise conv, BN+ReLU6, pointwise conv, BN; residual when shapes allow."""

    def __init__(self, cin: int, cout: int, k: int, stride: int):
        super().__init__()
        self.conv_dw, self.bn1 = _Conv(cin, cin, k, stride, groups=cin), _BNAct(cin)
        self.conv_pw, self.bn2 = _Conv(cin, cout, 1), _BNAct(cout, act=False)
        self.skip = stride == 1 and cin == cout

    def forward(self, x):
        y = self.bn2(self.conv_pw(self.bn1(self.conv_dw(x))))
        return y + x if self.skip else y


class _InvertedResidual(nn.Module):
    """Pointwise expansion, BN+ReLU6, depthwise conv, BN+ReLU6, pointwise projection, BN; residual when shapes allow."""

    def __init__(self, cin: int, cout: int, k: int, stride: int, exp: int):
        super().__init__()
        mid = make_divisible(cin * exp)
        self.conv_pw, self.bn1 = _Conv(cin, mid, 1), _BNAct(mid)
        self.conv_dw, self.bn2 = _Conv(mid, mid, k, stride, groups=mid), _BNAct(mid)
        self.conv_pwl, self.bn3 = _Conv(mid, cout, 1), _BNAct(cout, act=False)
        self.skip = stride == 1 and cin == cout

    def forward(self, x):
        y = self.bn3(self.conv_pwl(self.bn2(self.conv_dw(self.bn1(self.conv_pw(x))))))
        return y + x if self.skip else y


class EfficientNetLite(nn.Module):
    """EfficientNet-Lite ``variant`` ("lite0", "lite1", "lite2"), eval-only features.

    ``forward(x (n, 3, H, W) float32) -> (n, num_classes)`` logits; ``forward_features`` ->
    (n, 1280, H/32, W/32); ``forward_head(f, pre_logits=True)`` -> (n, 1280) average-pooled
    features (timm's API).  Raises KeyError for an unknown variant."""

    def __init__(self, variant: str = "lite0", num_classes: int = 1000):
        super().__init__()
        ch_mult, depth_mult = MULTIPLIERS[variant]
        self.conv_stem, self.bn1 = _Conv(3, STEM, 3, 2), _BNAct(STEM)
        stages, cin = [], STEM
        for i, (kind, reps, k, s, exp, cout) in enumerate(ARCH_DEF):
            cout = make_divisible(cout * ch_mult)
            if 0 < i < len(ARCH_DEF) - 1:  # timm: fix_first_last, depth_trunc "ceil"
                reps = int(math.ceil(reps * depth_mult))
            blocks = []
            for j in range(reps):
                stride = s if j == 0 else 1
                blocks.append(_DepthwiseSeparable(cin, cout, k, stride) if kind == "ds"
                              else _InvertedResidual(cin, cout, k, stride, exp))
                cin = cout
            stages.append(nn.Sequential(*blocks))
        self.blocks = nn.Sequential(*stages)
        self.conv_head, self.bn2 = _Conv(cin, HEAD, 1), _BNAct(HEAD)
        self.num_features = HEAD
        self.classifier = nn.Linear(HEAD, num_classes)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.conv_head(self.blocks(self.bn1(self.conv_stem(x)))))

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return x if pre_logits else self.classifier(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))


def resize_center_crop(im: Image.Image, size: int = INPUT_PX, crop_pct: float = CROP_PCT) -> Image.Image:
    """The geometric preprocessing of timm's eval transform for a PIL image (module docstring):
    short side to ``floor(size / crop_pct)`` px, PIL bicubic, then the centre ``size`` x ``size``
    (``crop_pct`` <= 1, so the resized image always covers the crop: torchvision's padding branch
    never applies).  ``im``: any size, RGB; returns a ``size`` x ``size`` PIL image."""
    scale = math.floor(size / crop_pct)
    w, h = im.size
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = scale, int(scale * long / short)
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    if (new_w, new_h) != (w, h):
        im = im.resize((new_w, new_h), Image.BICUBIC)
    top, left = int(round((new_h - size) / 2.0)), int(round((new_w - size) / 2.0))
    return im.crop((left, top, left + size, top + size))
