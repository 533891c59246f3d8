"""``timm`` image encoders: any timm architecture, its pooled pre-logits features.

:class:`TimmEncoder` builds ``timm.create_model(model_name, num_classes=0)``: with the
classifier removed, ``model(x)`` returns the *pooled pre-logits features* that timm's
classifier would read, i.e. ``forward_head(forward_features(x), pre_logits=True)``:

* CNNs (ResNet, EfficientNet, ConvNeXt ...): the global average pool of the last
  feature map (plus the model's head norm where it has one, e.g. ConvNeXt).
* ViTs: the token pooling the architecture is configured with (``global_pool``: the CLS
  token for most, mean of patch tokens for ``*_gap_*`` models), after the final norm /
  ``fc_norm``.

Preprocessing is what timm declares for the model's pretrained config
(``timm.data.resolve_data_config`` + ``timm.data.create_transform(is_training=False)``):
resize (bicubic or as declared) to ``input_size / crop_pct``, centre crop to
``input_size``, to tensor, normalise with the config's mean/std.

Weights (``model_version``):

* ``pretrained=True``: timm's default (or the ``.tag`` given in the name) pretrained
  weights, downloaded by timm from the hub on first use;
  ``timm:<arch>.<tag>`` and, when the cached hub file is found, ``@<40-hex commit>``.
* ``checkpoint_path=FILE``: a timm-format ``state_dict`` (as saved by
  ``torch.save(model.state_dict())``, or a training checkpoint holding ``state_dict`` /
  ``model`` / EMA weights); classifier weights in it are dropped, every other weight must
  match the architecture exactly.  ``timm:<arch>+sha256:<64 hex of the file>``.
* ``pretrained=False`` and no checkpoint: random weights, seeded (``seed``), for tests:
  ``timm:<arch>@random-init(seed=N)``.

Errors: :class:`~perceptbench.models.base.ModelLoadError` naming the model for an
unknown architecture, weights that cannot be fetched (offline and not cached), or a
checkpoint that does not fit.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from .base import ENCODER_BATCH_SIZE, ModelLoadError
from .encoders_hf import embed_batched, sha256_of_file
from .hub import hub_unreachable_reason

_SNAPSHOT_RE = re.compile(r"snapshots/([0-9a-f]{40})/")


class TimmEncoder:
    """An image encoder from a ``timm`` architecture.

    Parameters
    ----------
    model_name:
        timm name, optionally with a pretrained tag: ``"resnet50"``, ``"resnet50.a1_in1k"``,
        ``"vit_small_patch16_224.augreg_in21k"``.
    name:
        Short stable name for records (default: ``model_name``).
    pretrained:
        Load timm's pretrained weights (ignored when ``checkpoint_path`` is given).
    checkpoint_path:
        A local timm-format weights file to load instead.
    device:
        torch device string.
    seed:
        Seed of the random initialisation when no weights are loaded (``pretrained=False``
        and no checkpoint), so that two instances are identical.

    Attributes
    ----------
    name, model_version, family (``"encoder"``), dim (feature width d), data_config
    (timm's resolved preprocessing), settings (JSON-able dict for ``run_meta``).
    """

    family = "encoder"

    def __init__(
        self,
        model_name: str,
        name: str | None = None,
        pretrained: bool = True,
        checkpoint_path: str | Path | None = None,
        device: str = "cpu",
        *,
        seed: int = 0,
    ):
        import timm
        import torch

        self.name = name or model_name
        self.device = torch.device(device)
        self.runtime_settings = {"device_type": torch.device(device).type, "dtype": "float32"}
        """Where it runs; always float32 (:class:`~perceptbench.models.base.RuntimeDeclared`)."""
        if checkpoint_path is not None:
            self.model = self._from_checkpoint(model_name, Path(checkpoint_path))
            arch = self.model.pretrained_cfg.get("architecture", model_name.split(".")[0])
            self.model_version = f"timm:{arch}+sha256:{sha256_of_file(checkpoint_path)}"
            weights = "checkpoint"
        elif pretrained:
            check_pretrained_reachable(model_name)
            try:
                self.model = timm.create_model(model_name, pretrained=True, num_classes=0)
            except Exception as e:
                raise ModelLoadError(
                    f"could not build timm model {model_name!r} with pretrained weights: "
                    f"{type(e).__name__}: {e}. Offline (HF_HUB_OFFLINE=1) the weights must already "
                    f"be in the Hugging Face cache; or pass checkpoint_path."
                ) from e
            cfg = self.model.pretrained_cfg
            arch, tag = cfg.get("architecture", model_name), cfg.get("tag")
            self.model_version = f"timm:{arch}.{tag}" if tag else f"timm:{arch}"
            commit = _cached_hub_commit(cfg.get("hf_hub_id"))
            if commit:
                self.model_version += f"@{commit}"
            weights = "pretrained"
        else:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                self.model = _create(model_name, pretrained=False, num_classes=0)
            arch = self.model.pretrained_cfg.get("architecture", model_name.split(".")[0])
            self.model_version = f"timm:{arch}@random-init(seed={seed})"
            weights = "random-init"
        self.model.eval().to(self.device)

        from timm.data import create_transform, resolve_data_config

        self.data_config = resolve_data_config({}, model=self.model)
        self.transform = create_transform(**self.data_config, is_training=False)
        self.dim = int(self.model.num_features if not hasattr(self.model, "head_hidden_size")
                       else self.model.head_hidden_size)
        self.settings = {
            "weights": weights,
            "pooling": "timm pre-logits (num_classes=0)",
            "global_pool": str(getattr(self.model, "global_pool", "")),
            "data_config": {k: list(v) if isinstance(v, tuple) else v for k, v in self.data_config.items()},
            "dim": self.dim,
        }

    @staticmethod
    def _from_checkpoint(model_name: str, path: Path):
        import timm.models

        if not path.is_file():
            raise ModelLoadError(f"timm checkpoint for {model_name!r} not found: {path}")
        model = _create(model_name, pretrained=False, num_classes=0)
        try:
            state = timm.models.load_state_dict(str(path), use_ema=True, device="cpu")
        except Exception as e:
            raise ModelLoadError(f"could not read timm checkpoint {path} for {model_name!r}: {e}") from e
        classifier = model.pretrained_cfg.get("classifier") or ()
        heads = (classifier,) if isinstance(classifier, str) else tuple(classifier)
        state = {k: v for k, v in state.items() if not any(k.startswith(h + ".") for h in heads)}
        missing, unexpected = model.load_state_dict(state, strict=False)
        if missing or unexpected:
            raise ModelLoadError(
                f"checkpoint {path} does not fit timm model {model_name!r}: "
                f"missing {list(missing)[:5]}, unexpected {list(unexpected)[:5]}"
            )
        return model

    def embed(self, images: Sequence[Image.Image], batch_size: int = ENCODER_BATCH_SIZE) -> np.ndarray:
        """Embed images: ``(n, dim)`` float32, rows L2-normalised, deterministic.

        Batches of ``batch_size`` under ``torch.inference_mode`` in eval mode.
        """
        import torch

        def forward(batch):
            x = torch.stack([self.transform(im) for im in batch])
            return self.model(x.to(self.device, torch.float32))

        return embed_batched(images, batch_size, lambda: self.dim, forward)

    def __repr__(self) -> str:
        return f"TimmEncoder(name={self.name!r}, model_version={self.model_version!r})"


def check_pretrained_reachable(model_name: str) -> None:
    """Fail fast when timm's pretrained weights for ``model_name`` would need a download
    that cannot happen.

    Raises :class:`ModelLoadError` for an unknown architecture or pretrained tag, and
    when the weights are not in the Hugging Face cache while the hub is unreachable
    (see :func:`hub_unreachable_reason`); the message says how to pass a local weights
    file (``timm:NAME@/path/to/weights``).  Returns None when loading may proceed."""
    import timm
    from timm.models import get_pretrained_cfg

    try:
        cfg = get_pretrained_cfg(model_name, allow_unregistered=False)
    except RuntimeError as e:
        known = "" if timm.is_model(model_name.split(".")[0]) else " (see timm.list_models())"
        raise ModelLoadError(f"timm:{model_name}: {e}{known}") from None
    hub_id = getattr(cfg, "hf_hub_id", None)
    if hub_id and _cached_hub_commit(hub_id) is None and _cached_weights_file(hub_id) is None:
        why = hub_unreachable_reason()
        if why:
            raise ModelLoadError(
                f"timm:{model_name}: pretrained weights ({hub_id}) are not in the Hugging Face cache and {why}; "
                f"pass a local weights file instead: --model timm:{model_name}@/path/to/weights.pth")


def _cached_weights_paths(hf_hub_id: str):
    """Paths of timm's weight files for ``hf_hub_id`` (``ORG/NAME[:FILE]``) in the local hub cache,
    in the order timm looks for them (safetensors, open_clip safetensors, pytorch bin)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover
        return
    repo = hf_hub_id.split(":")[0]
    for fname in ("model.safetensors", "open_clip_model.safetensors", "pytorch_model.bin"):
        try:
            path = try_to_load_from_cache(repo, fname)
        except Exception:
            continue
        if isinstance(path, str):
            yield path


def _cached_weights_file(hf_hub_id: str) -> str | None:
    """The first cached weights file of ``hf_hub_id`` (:func:`_cached_weights_paths`), or None."""
    return next(_cached_weights_paths(hf_hub_id), None)


def _create(model_name: str, **kw):
    import timm

    try:
        return timm.create_model(model_name, **kw)
    except Exception as e:
        raise ModelLoadError(f"could not build timm model {model_name!r}: {type(e).__name__}: {e}") from e


def _cached_hub_commit(hf_hub_id: str | None) -> str | None:
    """The hub commit of timm's cached weights for ``hf_hub_id`` (``ORG/NAME[:FILE]``), if found in the cache."""
    if not hf_hub_id:
        return None
    for path in _cached_weights_paths(hf_hub_id):
        m = _SNAPSHOT_RE.search(Path(path).as_posix())
        if m:
            return m.group(1)
    return None
