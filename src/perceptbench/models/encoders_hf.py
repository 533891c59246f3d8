"""Hugging Face ``transformers`` image encoders: CLIP, SigLIP, SigLIP2, DINOv2, ViT, ViTMAE, BEiT.

:class:`HFEncoder` loads a model by hub id (``openai/clip-vit-base-patch32``) or from a
local directory written by ``save_pretrained``, reads the family from its config
(``config.model_type``), preprocesses with the model's own image processor and returns one
L2-normalised float32 vector per image.  For the image-text families (CLIP, SigLIP,
SigLIP2) the object is an :class:`HFImageTextEncoder` that also has ``embed_text``.

Embedding per family (``pooling``; the default is the first one listed):

=====================  =====================================================================
``model_type``         embedding
=====================  =====================================================================
clip                   ``"projected"``: ``CLIPModel.get_image_features`` = the vision tower's
                       pooled CLS token (after ``post_layernorm``) times ``visual_projection``:
                       the vector CLIP's contrastive loss is trained on; width
                       ``projection_dim``.
siglip, siglip2        ``"projected"``: ``get_image_features`` = the vision tower's
                       attention-pooling head (MAP) output, the vector SigLIP's sigmoid loss
                       is trained on; width ``vision_config.hidden_size``.
dinov2,                ``"cls"``: the CLS token of ``last_hidden_state`` (after the final
dinov2_with_registers  LayerNorm; equals ``pooler_output``), the global descriptor the DINOv2
                       paper uses for k-NN and linear evaluation.  ``"mean"``: mean of the
                       patch tokens (register tokens excluded).
vit                    ``"cls"``: the CLS token of ``last_hidden_state`` (after the final
                       LayerNorm), the input of ``ViTForImageClassification``'s classifier.
                       The model is built without ``ViTPooler`` (dense + tanh), which the
                       released ViT checkpoints do not train.  ``"mean"``: mean of patch tokens.
vit_mae                ``"mean"``: mean of the patch tokens of ``last_hidden_state`` (CLS
                       excluded, after the final LayerNorm), the feature the MAE paper found
                       better than CLS for linear probing.  ``mask_ratio`` is forced to 0.0
                       and the patch order is fixed (``noise = arange``), so every patch is
                       encoded, in order, deterministically.  ``"cls"``: the CLS token.
beit                   ``"pooler"``: ``BeitModel``'s own pooler, i.e. with
                       ``use_mean_pooling=True`` (the released checkpoints) the LayerNorm of
                       the mean of the patch tokens (CLS excluded), which is what
                       ``BeitForImageClassification`` classifies; with
                       ``use_mean_pooling=False`` the CLS token.  ``"mean"`` / ``"cls"``:
                       plain mean of patch tokens / CLS token of ``last_hidden_state``.
=====================  =====================================================================

Preprocessing: the checkpoint's own ``AutoImageProcessor``, with the PIL ("slow")
backend (``backend="pil"`` in transformers 5.x, ``use_fast=False`` in 4.x), i.e. the
reference implementation the models were released with.  The PIL backend needs no
torchvision and gives the same pixels on every machine; transformers falls back to the
other backend only if a model has no PIL processor.

Loading pins one revision: a hub id is resolved to its commit hash first, and config,
weights, processor and tokenizer are all read at that commit.  ``model_version`` is
``ORG/NAME@<40-hex commit>`` for a hub model and ``local:<abs path>:<sha256[:16]>`` for
a directory, the hash taken over the names and bytes of its weight files.

Loading failures (unknown id, offline and not cached, unsupported family, weights that
do not fit the architecture) raise :class:`~perceptbench.models.base.ModelLoadError`
naming the id.  Nothing here downloads at import time; torch and transformers are
imported when a model is built.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import re
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
from PIL import Image

from ..seeding import file_sha256
from .base import ENCODER_BATCH_SIZE, ModelLoadError

#: model_type -> default pooling
DEFAULT_POOLING: dict[str, str] = {
    "clip": "projected",
    "siglip": "projected",
    "siglip2": "projected",
    "dinov2": "cls",
    "dinov2_with_registers": "cls",
    "vit": "cls",
    "vit_mae": "mean",
    "beit": "pooler",
}
#: model_type -> poolings it accepts
ALLOWED_POOLING: dict[str, tuple[str, ...]] = {
    "clip": ("projected",),
    "siglip": ("projected",),
    "siglip2": ("projected",),
    "dinov2": ("cls", "mean"),
    "dinov2_with_registers": ("cls", "mean"),
    "vit": ("cls", "mean"),
    "vit_mae": ("mean", "cls"),
    "beit": ("pooler", "mean", "cls"),
}
SUPPORTED_MODEL_TYPES = tuple(DEFAULT_POOLING)
TEXT_MODEL_TYPES = ("clip", "siglip", "siglip2")

#: File suffixes counted as weights for a local directory's ``model_version`` hash.
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pth", ".pt", ".ckpt", ".msgpack", ".h5")

_COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
_SNAPSHOT_RE = re.compile(r"snapshots/([0-9a-f]{40})/")


# --------------------------------------------------------------------------- shared helpers
# (also used by encoders_timm and encoders_openclip)


def l2_normalise_rows(x: np.ndarray) -> np.ndarray:
    """Return ``x`` (n, d) with each row scaled to unit Euclidean norm, as float32.

    The norm is computed in float64.  Raises ``RuntimeError`` if a row has zero or
    non-finite norm (such a row cannot be normalised and would poison cosine readouts).
    """
    x64 = np.asarray(x, dtype=np.float64)
    if x64.ndim != 2:
        raise RuntimeError(f"expected a 2-D feature array, got shape {x64.shape}")
    norms = np.linalg.norm(x64, axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (norms == 0))
    if bad.size:
        raise RuntimeError(f"embedding rows {bad[:10].tolist()} have zero or non-finite norm")
    return np.ascontiguousarray((x64 / norms[:, None]).astype(np.float32))


def sha256_of_files(paths: Iterable[Path], root: Path | None = None) -> str:
    """Hex sha256 over files, in sorted order, hashing each one's name (relative to ``root``) and bytes."""
    h = hashlib.sha256()
    for p in sorted(Path(p) for p in paths):
        rel = p.relative_to(root).as_posix() if root is not None else p.name
        h.update(rel.encode("utf-8") + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


sha256_of_file = file_sha256


def check_images(images: Sequence[Image.Image]) -> list[Image.Image]:
    """Validate a sequence of PIL images and return them in RGB mode (converted copies where needed)."""
    out = []
    for i, im in enumerate(images):
        if not isinstance(im, Image.Image):
            raise TypeError(f"images[{i}] is {type(im).__name__}, expected PIL.Image.Image")
        out.append(im if im.mode == "RGB" else im.convert("RGB"))
    return out


def check_texts(texts: Sequence[str]) -> list[str]:
    """Validate sentences for ``embed_text``; raises TypeError naming the first non-string item."""
    texts = list(texts)
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, expected str")
    return texts


def check_batch_size(batch_size: int) -> int:
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    return batch_size


def embed_batched(images: Sequence[Image.Image], batch_size: int, dim, forward) -> np.ndarray:
    """The batching loop every torch image encoder shares.

    Validates ``images`` (PIL, converted to RGB) and ``batch_size``; calls
    ``forward(batch: list[PIL.Image]) -> torch.Tensor (b, d)`` under ``torch.inference_mode``
    for consecutive batches; returns ``(n, d)`` float32 with L2-normalised rows (``(0, dim())``
    for no images)."""
    import torch

    images = check_images(images)
    check_batch_size(batch_size)
    if not images:
        return np.zeros((0, dim()), dtype=np.float32)
    chunks = []
    with torch.inference_mode():
        for i in range(0, len(images), batch_size):
            feats = forward(images[i : i + batch_size])
            chunks.append(feats.detach().to("cpu", torch.float32).numpy())
    return l2_normalise_rows(np.concatenate(chunks, axis=0))


def local_dir_version(path: Path) -> str:
    """``local:<abs path>:<first 16 hex of sha256>`` for a model directory, the hash taken over
    the weight files *and* every processor, tokenizer and config file
    (:func:`perceptbench.models.identity.local_model_sha256`, ``"all"``): editing e.g. the image
    processor's resize or normalisation gives a new version (issue 7 item 2).

    Raises ModelLoadError if the directory holds no weight file.
    """
    from .identity import local_model_sha256

    path = Path(path).resolve()
    try:
        digest = local_model_sha256(path)["all"]
    except FileNotFoundError:
        raise ModelLoadError(f"no weight files ({', '.join(WEIGHT_SUFFIXES)}) in local model directory {path}") from None
    return f"local:{path}:{digest[:16]}"


@contextlib.contextmanager
def _quiet_loading():
    """Hide transformers' per-load progress bars ("Loading weights") during a load; restore after."""
    from transformers.utils import logging as tf_logging

    was_on = tf_logging.is_progress_bar_enabled()
    tf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            tf_logging.enable_progress_bar()


def _transformers_major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


# --------------------------------------------------------------------------- encoder


class HFEncoder:
    """An image encoder from a Hugging Face ``transformers`` checkpoint.

    Parameters
    ----------
    model_id_or_dir:
        Hub id (``"facebook/dinov2-small"``) or a local directory written by
        ``save_pretrained`` (config, weights, ``preprocessor_config.json``).
    name:
        Short stable name for records; default: the hub id, or the directory's name.
    revision:
        Hub branch, tag or commit (default: the default branch).  Resolved to a commit
        hash once; everything is read at that commit.  Ignored for a directory.
    device:
        torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
    pooling:
        ``None`` for the family's default, or one of ``ALLOWED_POOLING[model_type]``
        (see the module docstring for what each means).
    cache_dir:
        Hugging Face cache directory (default: the user's HF cache).
    local_files_only:
        Never contact the hub (also implied by ``HF_HUB_OFFLINE=1``).
    processor_backend:
        ``"pil"`` (default, reference processors) or ``None`` for transformers' default
        (torchvision "fast" processors when torchvision is installed).

    Constructing ``HFEncoder(...)`` for a CLIP / SigLIP / SigLIP2 checkpoint returns an
    :class:`HFImageTextEncoder` (a subclass with ``embed_text``), so that
    ``isinstance(enc, TextEncoder)`` holds exactly for the encoders that can embed text.

    Attributes
    ----------
    name, model_version, family (``"encoder"``), model_type (transformers family),
    pooling, dim (embedding width d), settings (JSON-able dict for ``run_meta``).

    Raises
    ------
    ModelLoadError
        when the id/directory cannot be resolved or loaded (offline and not cached,
        unknown id, missing processor), the family is unsupported, or the checkpoint
        leaves weights of the architecture uninitialised.
    ValueError
        for a pooling the family does not support.
    """

    family = "encoder"

    def __new__(cls, *args, **kwargs):
        if cls is HFEncoder and (args or kwargs):  # (no arguments: copy / unpickle)
            bound = inspect.signature(HFEncoder.__init__).bind(None, *args, **kwargs)
            bound.apply_defaults()
            a = bound.arguments
            _, _, config = _resolve_and_load_config(
                a["model_id_or_dir"], a["revision"], a["cache_dir"], a["local_files_only"]
            )
            if config.model_type in TEXT_MODEL_TYPES:
                cls = HFImageTextEncoder
        return super().__new__(cls)

    def __init__(
        self,
        model_id_or_dir: str | Path,
        name: str | None = None,
        revision: str | None = None,
        device: str = "cpu",
        pooling: str | None = None,
        *,
        cache_dir: str | Path | None = None,
        local_files_only: bool = False,
        processor_backend: str | None = "pil",
    ):
        import torch

        src, pinned, config = _resolve_and_load_config(model_id_or_dir, revision, cache_dir, local_files_only)
        self.source = str(src)
        self.model_type: str = config.model_type
        if self.model_type not in SUPPORTED_MODEL_TYPES:
            raise ModelLoadError(
                f"{model_id_or_dir!r}: model_type {self.model_type!r} is not supported by HFEncoder "
                f"(supported: {', '.join(SUPPORTED_MODEL_TYPES)})"
            )
        self.pooling = pooling if pooling is not None else DEFAULT_POOLING[self.model_type]
        if self.pooling not in ALLOWED_POOLING[self.model_type]:
            raise ValueError(
                f"pooling {self.pooling!r} not available for {self.model_type}; "
                f"choose one of {ALLOWED_POOLING[self.model_type]}"
            )
        is_local = Path(str(model_id_or_dir)).is_dir()
        if is_local:
            self.model_version = local_dir_version(Path(src))
            self.name = name or Path(src).resolve().name
        else:
            self.model_version = f"{model_id_or_dir}@{pinned}"
            self.name = name or str(model_id_or_dir)
        self._load_kw: dict[str, Any] = {}
        if not is_local:
            self._load_kw = dict(revision=pinned, cache_dir=cache_dir, local_files_only=local_files_only)
        self.device = torch.device(device)
        self.runtime_settings = {"device_type": torch.device(device).type, "dtype": "float32"}
        """Where it runs; always float32 (:class:`~perceptbench.models.base.RuntimeDeclared`)."""

        self.model = self._load_model(src, config)
        self.model.eval().to(self.device)
        self.processor = self._load_processor(src, processor_backend)
        self.dim = self._embedding_dim()
        self.settings = {
            "model_type": self.model_type,
            "pooling": self.pooling,
            "image_processor": type(self.processor).__name__,
            "processor_backend": processor_backend or "default",
            "dim": self.dim,
        }
        if self.model_type == "vit_mae":
            self.settings["mask_ratio"] = 0.0

    # ------------------------------------------------------------------ loading

    def _load_model(self, src, config):
        import torch
        import transformers as tf

        kw = dict(self._load_kw)
        kw["dtype" if _transformers_major() >= 5 else "torch_dtype"] = torch.float32
        mt = self.model_type
        allowed_missing: tuple[str, ...] = ()
        if mt == "clip":
            cls = tf.CLIPModel
        elif mt == "siglip":
            cls = tf.SiglipModel
        elif mt == "siglip2":
            cls = tf.Siglip2Model
        elif mt == "dinov2":
            cls = tf.Dinov2Model
        elif mt == "dinov2_with_registers":
            cls = tf.Dinov2WithRegistersModel
        elif mt == "vit":
            cls = tf.ViTModel
            kw["add_pooling_layer"] = False
        elif mt == "vit_mae":
            cls = tf.ViTMAEModel
            config.mask_ratio = 0.0
            kw["config"] = config
        elif mt == "beit":
            cls = tf.BeitModel
            kw["add_pooling_layer"] = True
            # Checkpoints saved from BeitForMaskedImageModeling carry no pooler; its
            # LayerNorm then starts at weight 1, bias 0 (deterministic).  Recorded in settings.
            allowed_missing = ("pooler.",)
        else:  # pragma: no cover - guarded by SUPPORTED_MODEL_TYPES
            raise ModelLoadError(f"unsupported model_type {mt!r}")
        try:
            with _quiet_loading():
                model, info = cls.from_pretrained(src, output_loading_info=True, **kw)
        except Exception as e:
            raise ModelLoadError(f"could not load weights of {self.source!r} as {cls.__name__}: {e}") from e
        missing = sorted(info.get("missing_keys", []) or [])
        bad = [k for k in missing if not k.startswith(allowed_missing or ("\0",))]
        if bad:
            raise ModelLoadError(
                f"{self.source!r}: the checkpoint leaves {len(bad)} weights of {cls.__name__} "
                f"uninitialised (e.g. {bad[:5]}); refusing to embed with random weights"
            )
        self._missing_weights = missing
        return model

    def _load_processor(self, src, backend):
        from transformers import AutoImageProcessor

        kw = dict(self._load_kw)
        if backend is not None:
            if _transformers_major() >= 5:
                kw["backend"] = backend
            else:
                kw["use_fast"] = backend != "pil"
        try:
            return AutoImageProcessor.from_pretrained(src, **kw)
        except Exception as e:
            raise ModelLoadError(f"could not load the image processor of {self.source!r}: {e}") from e

    def _embedding_dim(self) -> int:
        cfg = self.model.config
        if self.model_type == "clip":
            return int(cfg.projection_dim)
        if self.model_type in ("siglip", "siglip2"):
            return int(cfg.vision_config.hidden_size)
        return int(cfg.hidden_size)

    # ------------------------------------------------------------------ embedding

    def _forward_features(self, inputs) -> "Any":
        """Pooled (not yet normalised) float32 features, shape (b, dim), for one processed batch."""
        import torch

        model = self.model
        mt = self.model_type
        if mt in ("clip", "siglip", "siglip2"):
            out = model.get_image_features(**inputs)
            return out if isinstance(out, torch.Tensor) else out.pooler_output
        pixel_values = inputs["pixel_values"]
        if mt == "vit_mae":
            b, _, h, w = pixel_values.shape
            p = model.config.patch_size
            n_patches = (h // p) * (w // p)
            # mask_ratio is 0.0, and ascending noise makes argsort the identity: all
            # patches kept, in their original order (no random shuffle).
            noise = torch.arange(n_patches, dtype=torch.float32, device=pixel_values.device)
            out = model(pixel_values=pixel_values, noise=noise.expand(b, n_patches))
            hidden = out.last_hidden_state
            if hidden.shape[1] != n_patches + 1:
                raise RuntimeError(f"ViTMAE kept {hidden.shape[1] - 1} of {n_patches} patches; masking is on")
        else:
            out = model(pixel_values=pixel_values)
            hidden = out.last_hidden_state
        if self.pooling == "pooler":
            return out.pooler_output
        if self.pooling == "cls":
            return hidden[:, 0]
        # "mean": patch tokens only (skip CLS and any register tokens)
        n_prefix = 1 + int(getattr(model.config, "num_register_tokens", 0) or 0)
        return hidden[:, n_prefix:].mean(dim=1)

    def embed(self, images: Sequence[Image.Image], batch_size: int = ENCODER_BATCH_SIZE) -> np.ndarray:
        """Embed images: ``(n, dim)`` float32, rows L2-normalised, deterministic.

        ``images``: PIL images (converted to RGB when needed).  Processed in batches of
        ``batch_size`` under ``torch.inference_mode`` in eval mode; results do not depend
        on the batch size beyond float rounding (~1e-6).
        """
        import torch

        images = check_images(images)
        check_batch_size(batch_size)
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        chunks = []
        with torch.inference_mode():
            for i in range(0, len(images), batch_size):
                inputs = self.processor(images=images[i : i + batch_size], return_tensors="pt")
                inputs = {k: v.to(self.device) for k, v in inputs.items()}
                if "pixel_values" in inputs:
                    inputs["pixel_values"] = inputs["pixel_values"].to(torch.float32)
                feats = self._forward_features(inputs)
                chunks.append(feats.detach().to("cpu", torch.float32).numpy())
        return l2_normalise_rows(np.concatenate(chunks, axis=0))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, model_version={self.model_version!r}, pooling={self.pooling!r})"


class HFImageTextEncoder(HFEncoder):
    """A CLIP / SigLIP / SigLIP2 :class:`HFEncoder` that also embeds text (``TextEncoder``).

    Text: the checkpoint's tokenizer (loaded at the pinned revision on first use).  CLIP:
    ``padding=True`` (longest), truncated to the text tower's ``max_position_embeddings``
    (77 for OpenAI CLIP).  SigLIP / SigLIP2: ``padding="max_length"`` to the text tower's
    ``max_position_embeddings`` (64 for the released models), as they were trained and
    as the model cards prescribe; the pooled text vector is read at the last position.
    Whatever inputs the tokenizer returns (``input_ids``, and ``attention_mask`` where
    the tokenizer declares it) go to ``get_text_features``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tokenizer = None
        self.settings["text_padding"] = "longest" if self.model_type == "clip" else "max_length"

    @property
    def tokenizer(self):
        if self._tokenizer is None:
            from transformers import AutoTokenizer

            try:
                self._tokenizer = AutoTokenizer.from_pretrained(self.source, **self._load_kw)
            except Exception as e:
                raise ModelLoadError(f"could not load the tokenizer of {self.source!r}: {e}") from e
        return self._tokenizer

    def embed_text(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed sentences into the image embedding space: ``(n, dim)`` float32, rows L2-normalised.

        Raises TypeError for non-string items; ModelLoadError if the tokenizer cannot be loaded.
        """
        import torch

        texts = check_texts(texts)
        check_batch_size(batch_size)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        max_len = int(self.model.config.text_config.max_position_embeddings)
        padding = True if self.model_type == "clip" else "max_length"
        tok = self.tokenizer
        chunks = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                enc = tok(texts[i : i + batch_size], padding=padding, truncation=True,
                          max_length=max_len, return_tensors="pt")
                enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
                out = self.model.get_text_features(**enc)
                feats = out if isinstance(out, torch.Tensor) else out.pooler_output
                chunks.append(feats.detach().to("cpu", torch.float32).numpy())
        return l2_normalise_rows(np.concatenate(chunks, axis=0))


# --------------------------------------------------------------------------- resolution


def _resolve_and_load_config(model_id_or_dir, revision, cache_dir, local_files_only):
    """Resolve the source and (for hub ids) the commit hash; load the config at it.

    Returns ``(src, commit_or_None, config)``.  Raises ModelLoadError naming the id.
    """
    from transformers import AutoConfig

    ident = str(model_id_or_dir)
    if Path(ident).is_dir():
        src, commit, kw = Path(ident), None, {}
    else:
        if Path(ident).exists():
            raise ModelLoadError(f"{ident!r} is a file, expected a model directory or hub id")
        if ident.startswith(("/", "./", "../", "~")):
            raise ModelLoadError(f"local model directory {ident!r} does not exist")
        commit = _resolve_commit(ident, revision, cache_dir, local_files_only)
        src, kw = ident, dict(revision=commit, cache_dir=cache_dir, local_files_only=local_files_only)
    try:
        config = AutoConfig.from_pretrained(src, **kw)
    except Exception as e:
        raise ModelLoadError(f"could not load the config of Hugging Face model {ident!r}: {e}") from e
    return src, commit, config


def _resolve_commit(repo_id: str, revision, cache_dir, local_files_only) -> str:
    """The 40-hex commit that ``revision`` (default branch if None) of ``repo_id`` points to.

    Uses the hub when online, the local cache's ``refs/`` when offline.
    """
    if revision is not None and _COMMIT_RE.match(str(revision)):
        return str(revision)
    if not local_files_only:  # an unreachable hub: read the cache only, never wait on retries
        from .hub import hub_unreachable_reason

        local_files_only = hub_unreachable_reason() is not None
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(repo_id, "config.json", revision=revision, cache_dir=cache_dir,
                               local_files_only=local_files_only)
    except Exception as e:
        raise ModelLoadError(
            f"could not resolve Hugging Face model {repo_id!r} (revision {revision or 'default'}): "
            f"{type(e).__name__}: {e}. Offline (HF_HUB_OFFLINE=1) it must already be in the "
            f"Hugging Face cache; or pass a local directory."
        ) from e
    m = _SNAPSHOT_RE.search(Path(path).as_posix())
    if m is None:
        raise ModelLoadError(f"could not read the commit hash of {repo_id!r} from the cached path {path}")
    return m.group(1)
