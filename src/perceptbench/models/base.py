"""The two model interfaces every back-end implements: :class:`Encoder` and :class:`VLM`.

Nothing here imports torch.  Images cross these interfaces as ``PIL.Image.Image``
objects in RGB mode; embeddings as numpy arrays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

import numpy as np
from PIL import Image


ENCODER_BATCH_SIZE = 8
"""Default images per forward pass of an image encoder (issue 11).  Measured on the embedded
EfficientNet-Lite0 on CPU (``benchmarks/bench_salbench_lazy.py``, docs/salbench.md): the full
``salbench.detection.syn`` run peaked at 1,581 MiB (2^20 bytes) at 32 and 1,101 MiB at 8; a
forward pass at 32 adds ~690 MiB of activations, at 8 ~240 MiB.  Embeddings at 8 and 32 were
bit-identical on the arrays checked (batch 1 differs by ~6e-8).  Time per image on a loaded
2-core CPU: from no difference to ~20% more at 8 than at 32 (docs/salbench.md)."""

VLM_BATCH_SIZE = 32
"""Default requests per batch of a VLM run (``perceptbench run --batch-size``)."""


def default_batch_size(batch_size: int | None, family: str) -> int:
    """``batch_size`` if given, else the default of the model ``family`` (``"encoder"``:
    :data:`ENCODER_BATCH_SIZE`, otherwise :data:`VLM_BATCH_SIZE`)."""
    if batch_size is not None:
        return batch_size
    return ENCODER_BATCH_SIZE if family == "encoder" else VLM_BATCH_SIZE


class ModelLoadError(RuntimeError):
    """A model could not be built or loaded (missing package, missing weights, bad id)."""


class NotSupportedByProvider(NotImplementedError):
    """The provider cannot do what was asked (e.g. Anthropic returns no logprobs)."""


@runtime_checkable
class Encoder(Protocol):
    """An image encoder.

    Attributes
    ----------
    name: the short, stable name the user gave (goes into ``TrialRecord.model``).
    model_version: the exact weights (hub id + revision, or sha256 of the weights file);
        goes into ``run_meta.model_version``.
    family: ``"encoder"``.
    """

    name: str
    model_version: str
    family: str

    def embed(self, images: Sequence[Image.Image], batch_size: int = ENCODER_BATCH_SIZE) -> np.ndarray:
        """Embed images.

        Returns an array of shape ``(n, d)``, dtype float32, each row L2-normalised
        (unit Euclidean norm).  Deterministic: the same images give the same bytes.
        """
        ...


@runtime_checkable
class TextEncoder(Protocol):
    """An image-text encoder (CLIP, SigLIP ...) that can also embed sentences."""

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        """Returns ``(n, d)`` float32, rows L2-normalised, in the image embedding space."""
        ...


@dataclass(frozen=True)
class VLMRequest:
    """One generation request: images attached before the text, in order.

    ``images`` holds one image for a plain trial, several for few-shot prompts.
    """

    images: tuple[Image.Image, ...]
    prompt: str
    max_new_tokens: int = 40


@dataclass(frozen=True)
class TokenDistribution:
    """A next-token distribution.

    ``tokens``: decoded token strings, length k; ``logprobs``: natural-log probabilities
    (nats), float64 array of shape (k,), sorted descending.  ``complete`` is True when the
    distribution covers the full vocabulary (local models, top_k=None); False when it is a
    provider's top-k truncation.
    """

    tokens: tuple[str, ...]
    logprobs: np.ndarray
    complete: bool
    token_ids: tuple[int, ...] | None = None


@runtime_checkable
class VLM(Protocol):
    """A vision-language model that answers in free text.

    Attributes: ``name``, ``model_version`` as for :class:`Encoder`; ``family`` is
    ``"vlm"`` (local) or ``"api"``; ``supports_multi_image``; ``generation_settings``
    (a JSON-able dict: decoding, max_new_tokens, temperature ...) that goes into the
    response-cache key and ``run_meta``.
    """

    name: str
    model_version: str
    family: str
    supports_multi_image: bool
    generation_settings: dict

    def generate(self, requests: Sequence[VLMRequest], batch_size: int = 8) -> list[str]:
        """Greedy (temperature 0) answers, one string per request, in order."""
        ...

    def next_token_distribution(
        self, image: Image.Image, prompt: str, top_k: int | None = None
    ) -> TokenDistribution:
        """Distribution of the first generated token.  Raises NotSupportedByProvider."""
        ...


@dataclass
class ModelSpec:
    """A parsed command-line model name, e.g. ``hf:ORG/NAME`` -> kind='hf', ref='ORG/NAME'."""

    kind: str
    ref: str
    options: dict = field(default_factory=dict)
