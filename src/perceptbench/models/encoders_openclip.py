"""``open_clip`` image-text encoders (OpenAI CLIP, LAION CLIP, SigLIP, EVA-CLIP, ... via open_clip).

:class:`OpenCLIPEncoder` builds ``open_clip.create_model_and_transforms(model_name,
pretrained=...)`` and its tokenizer (``open_clip.get_tokenizer``).

* ``embed``: ``model.encode_image`` on the *validation* transform open_clip returns for
  the checkpoint (resize to the model's image size, centre crop, the checkpoint's
  mean/std): the projected image embedding CLIP's contrastive loss is trained on
  (attention-pool / CLS-token output times the visual projection, as the architecture
  defines), then L2-normalised.
* ``embed_text``: ``model.encode_text`` on the tokenizer's output (fixed context
  length, e.g. 77 for CLIP, 64 for SigLIP), L2-normalised: the same joint space.

``model_name`` forms and ``model_version``:

* built-in architecture + pretrained tag, e.g. ``("ViT-B-32", "laion2b_s34b_b79k")``:
  ``ViT-B-32@laion2b_s34b_b79k`` + ``@<40-hex hub commit>`` when the weights came from
  the Hugging Face hub, else ``+sha256:<64 hex>`` of the downloaded file;
* built-in architecture + a weights file path as ``pretrained``:
  ``ViT-B-32+sha256:<64 hex of the file>``;
* built-in architecture, ``pretrained=None``: random weights, seeded (``seed``), for
  tests only: ``ViT-B-32@random-init(seed=0)``;
* ``hf-hub:ORG/NAME`` (config + weights from the hub): ``hf-hub:ORG/NAME@<commit>``;
* ``local-dir:/path`` (``open_clip_config.json`` + weights file):
  ``local:<abs path>:<sha256[:16] over its weight files>``.

Loading failures (unknown architecture or tag, weights not downloadable offline, a
``local-dir`` without weights) raise :class:`~perceptbench.models.base.ModelLoadError`
naming the model.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np
from PIL import Image

from .base import ENCODER_BATCH_SIZE, ModelLoadError
from .encoders_hf import (
    check_batch_size,
    check_texts,
    embed_batched,
    l2_normalise_rows,
    local_dir_version,
    sha256_of_file,
)

_SNAPSHOT_RE = re.compile(r"snapshots/([0-9a-f]{40})/")


class OpenCLIPEncoder:
    """An image-text encoder from ``open_clip`` (implements ``Encoder`` and ``TextEncoder``).

    Parameters
    ----------
    model_name:
        Built-in architecture (``"ViT-B-32"``, ``"RN50"``, ``"ViT-B-16-SigLIP"`` ...; see
        ``open_clip.list_models()``), ``"hf-hub:ORG/NAME"`` or ``"local-dir:/path"``.
    pretrained:
        For a built-in architecture: a pretrained tag (``open_clip.list_pretrained()``) or
        a weights file path; ``None`` builds seeded random weights (tests).  Must be
        ``None`` with the ``hf-hub:``/``local-dir:`` forms.
    name:
        Short stable name for records (default ``ARCH@TAG``, or ``model_name``).
    device:
        torch device string.
    seed:
        Seed of the random initialisation when ``pretrained`` is None for a built-in name.
    cache_dir:
        Download cache (open_clip's default when None).

    Attributes
    ----------
    name, model_version, family (``"encoder"``), dim (joint embedding width),
    settings (JSON-able dict for ``run_meta``).
    """

    family = "encoder"

    def __init__(
        self,
        model_name: str,
        pretrained: str | None = None,
        name: str | None = None,
        device: str = "cpu",
        *,
        seed: int = 0,
        cache_dir: str | None = None,
    ):
        import open_clip
        import torch

        self.model_name = model_name
        self.pretrained = pretrained
        self.device = torch.device(device)
        self.runtime_settings = {"device_type": torch.device(device).type, "dtype": "float32"}
        """Where it runs; always float32 (:class:`~perceptbench.models.base.RuntimeDeclared`)."""
        self._cache_dir = cache_dir
        schema = model_name.split(":", 1)[0] if model_name.startswith(("hf-hub:", "local-dir:")) else None
        if schema and pretrained is not None:
            raise ValueError(f"pretrained must be None with a {schema}: model name (got {pretrained!r})")
        label = f"{model_name}@{pretrained}" if pretrained and schema is None else model_name
        self.name = name or label

        if schema == "local-dir":
            local = Path(model_name.split(":", 1)[1])
            if not local.is_dir():
                raise ModelLoadError(f"open_clip local-dir {str(local)!r} does not exist")
            self.model_version = local_dir_version(local)  # raises if no weight file
        kwargs = dict(device=self.device, precision="fp32", cache_dir=cache_dir)
        if schema == "hf-hub" or pretrained is not None:
            check_pretrained_reachable(model_name, pretrained, cache_dir)
        try:
            if pretrained is None and schema is None:
                with torch.random.fork_rng(devices=[]):
                    torch.manual_seed(seed)
                    model, _, preprocess = open_clip.create_model_and_transforms(
                        model_name, pretrained=None, pretrained_image=False, pretrained_text=False, **kwargs
                    )
            else:
                model, _, preprocess = open_clip.create_model_and_transforms(
                    model_name, pretrained=pretrained, **kwargs
                )
        except Exception as e:
            raise ModelLoadError(
                f"could not build open_clip model {label!r}: {type(e).__name__}: {e}. "
                f"Offline, pretrained weights must already be in the cache."
            ) from e
        self.model = model.eval()
        self.preprocess = preprocess
        self._tokenizer = None
        self._dim: int | None = None

        if schema is None:
            if pretrained is None:
                self.model_version = f"{model_name}@random-init(seed={seed})"
                weights = "random-init"
            elif Path(pretrained).is_file():
                self.model_version = f"{model_name}+sha256:{sha256_of_file(pretrained)}"
                weights = "file"
            else:
                self.model_version = self._tag_version(model_name, pretrained)
                weights = "pretrained"
        elif schema == "hf-hub":
            commit = _cached_commit(model_name.split(":", 1)[1], "open_clip_config.json", cache_dir)
            self.model_version = f"{model_name}@{commit}" if commit else model_name
            weights = "hf-hub"
        else:
            weights = "local-dir"
        self.settings = {"weights": weights, "pooling": "open_clip encode_image (projected)",
                         "preprocess": repr(preprocess)}

    def _tag_version(self, arch: str, tag: str) -> str:
        """``ARCH@TAG`` plus the hub commit or the sha256 of the (already downloaded) weights file."""
        from open_clip.pretrained import download_pretrained, get_pretrained_cfg

        version = f"{arch}@{tag}"
        try:
            path = download_pretrained(get_pretrained_cfg(arch, tag), cache_dir=self._cache_dir)
        except Exception:  # pragma: no cover - the model was just built from this file
            return version
        if not path:
            return version
        m = _SNAPSHOT_RE.search(Path(path).as_posix())
        return f"{version}@{m.group(1)}" if m else f"{version}+sha256:{sha256_of_file(path)}"

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            import open_clip

            try:
                self._tokenizer = open_clip.get_tokenizer(self.model_name, cache_dir=self._cache_dir)
            except Exception as e:
                raise ModelLoadError(f"could not load the tokenizer of open_clip model {self.name!r}: {e}") from e
        return self._tokenizer

    @property
    def dim(self) -> int:
        """Joint embedding width d (read once from a forward pass of a blank image)."""
        if self._dim is None:
            self._dim = int(self.embed([Image.new("RGB", (8, 8))]).shape[1])
        return self._dim

    def embed(self, images: Sequence[Image.Image], batch_size: int = ENCODER_BATCH_SIZE) -> np.ndarray:
        """Embed images: ``(n, d)`` float32, rows L2-normalised, deterministic.

        Batches of ``batch_size`` under ``torch.inference_mode`` in eval mode.
        """
        import torch

        def forward(batch):
            x = torch.stack([self.preprocess(im) for im in batch])
            return self.model.encode_image(x.to(self.device, torch.float32))

        out = embed_batched(images, batch_size, lambda: self.dim, forward)
        self._dim = out.shape[1]
        return out

    def embed_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed sentences into the image space: ``(n, d)`` float32, rows L2-normalised.

        Texts longer than the model's context length are truncated by the tokenizer.
        Raises TypeError for non-string items, ModelLoadError if the tokenizer cannot load.
        """
        import torch

        texts = check_texts(texts)
        check_batch_size(batch_size)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        tok = self.tokenizer
        chunks = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                tokens = tok(texts[i : i + batch_size]).to(self.device)
                feats = self.model.encode_text(tokens)
                chunks.append(feats.detach().to("cpu", torch.float32).numpy())
        return l2_normalise_rows(np.concatenate(chunks, axis=0))

    def __repr__(self) -> str:
        return f"OpenCLIPEncoder(name={self.name!r}, model_version={self.model_version!r})"


def _cached_commit(repo_id: str, filename: str, cache_dir) -> str | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(repo_id, filename, cache_dir=cache_dir)
    except Exception:
        return None
    if isinstance(path, str):
        m = _SNAPSHOT_RE.search(Path(path).as_posix())
        if m:
            return m.group(1)
    return None


def check_pretrained_reachable(model_name: str, pretrained: str | None, cache_dir: str | None = None) -> None:
    """Fail at once when open_clip would have to download weights from an unreachable hub.

    The weights of ``model_name@pretrained`` (open_clip's pretrained table: its ``hf_hub``
    entry, ``open_clip_pytorch_model.bin`` or its ``open_clip_model.safetensors`` alternative) or
    of an ``hf-hub:ORG/NAME`` model are looked up in the Hugging Face cache; when they are not
    there and :func:`~perceptbench.models.hub.hub_unreachable_reason` gives a reason, raises
    :class:`ModelLoadError` naming the weights, the reason and the local alternatives, instead
    of waiting on the hub client's retries (open_clip tries two files, each with retries).
    Returns None when loading may proceed: weights cached, hub reachable, ``pretrained`` a
    local file, or a tag open_clip downloads from a URL or does not know (it names it then)."""
    import os

    import open_clip.pretrained as ocp

    from .hub import hub_unreachable_reason

    if model_name.startswith("hf-hub:"):
        repo, files = model_name.split(":", 1)[1], ("open_clip_config.json",)
        label = model_name
    else:
        if pretrained is None or os.path.isfile(os.path.expanduser(pretrained)):
            return
        hub = (ocp.get_pretrained_cfg(model_name, pretrained) or {}).get("hf_hub", "")
        if not hub:
            return
        repo, fname = os.path.split(hub)
        files = (fname or "open_clip_pytorch_model.bin", "open_clip_model.safetensors")
        label = f"{model_name}@{pretrained}"
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - open_clip needs it for hub weights
        return
    for f in files:
        try:
            if isinstance(try_to_load_from_cache(repo, f, cache_dir=cache_dir), str):
                return
        except Exception:
            continue
    why = hub_unreachable_reason()
    if why:
        raise ModelLoadError(
            f"open_clip:{label}: pretrained weights ({repo}) are not in the Hugging Face cache and {why}; download "
            "them where the hub is reachable, or pass a local copy: --model open_clip:local-dir:/path/to/model or "
            "--model open_clip:ARCH@/path/to/weights.bin")
