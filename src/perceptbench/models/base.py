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


class NoLogprobs(NotSupportedByProvider):
    """One response carried no logprobs although they were asked for.  On its own this says
    nothing about the provider (a glitch, retried by the API adapters once the provider has
    returned logprobs before); a caller declares the provider unsupported only when it happens
    consistently (:data:`perceptbench.vsi.respondent.NO_LOGPROBS_UNSUPPORTED_AFTER`)."""


class PartialAnswers(RuntimeError):
    """Some requests of a batch failed for good, others were answered.

    ``answers``: one entry per request, in order, the answer (``str``) or None where the request
    failed or was not sent; ``error``: the first failure (also the ``__cause__``).  Callers keep
    the answers that arrived (cache them, record them) and then raise ``error`` on."""

    def __init__(self, answers: list, error: BaseException):
        n = sum(a is not None for a in answers)
        super().__init__(f"{error} ({n} of {len(answers)} answers of the batch arrived and are kept)")
        self.answers = list(answers)
        self.error = error


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
class RuntimeDeclared(Protocol):
    """A local model that declares where and in what precision it runs: ``runtime_settings``,
    a JSON-able dict (``{"device_type": "cpu" | "cuda" | "mps", "dtype": "float32"}`` for the
    image encoders, which always run in float32; :mod:`perceptbench.models.runtime`).  Encoder
    records carry it in ``run_meta.settings`` and the resume check compares it."""

    runtime_settings: dict


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
    sample_seed: int | None = None
    """The seed of a sampled answer (``--temperature`` above 0: one per trial and repetition); None
    for greedy decoding.  Part of the response cache key when given."""


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
    """Answering: a vision-language model that answers in free text (greedy decoding).

    Attributes: ``name``, ``model_version`` as for :class:`Encoder`; ``family`` is
    ``"vlm"`` (local) or ``"api"``; ``supports_multi_image``; ``generation_settings``
    (a JSON-able dict: decoding, max_new_tokens, temperature ...) that goes into the
    response-cache key and ``run_meta``.  Further capabilities are the protocols below,
    each checked with ``isinstance`` (never by probing for a method).
    """

    name: str
    model_version: str
    family: str
    supports_multi_image: bool
    generation_settings: dict

    def generate(self, requests: Sequence[VLMRequest], batch_size: int = 8) -> list[str]:
        """Greedy (temperature 0) answers, one string per request, in order."""
        ...


@runtime_checkable
class FirstTokenDistribution(Protocol):
    """The distribution of the first generated token of one request (local VLMs and API
    providers that return logprobs)."""

    def next_token_distribution(
        self, image: Image.Image | Sequence[Image.Image] | None, prompt: str, top_k: int | None = None
    ) -> TokenDistribution:
        """Distribution of the first generated token.  Raises NotSupportedByProvider."""
        ...


@runtime_checkable
class BatchedDistributions(Protocol):
    """First-answer-token distributions from the model's own logits, batched (local ``hf:``
    VLMs): prefill-only passes and a greedy answer whose first step gives the distribution.
    ``answer_prefix`` is appended to the assistant turn before the first answer token."""

    def next_token_distributions(self, requests: Sequence[VLMRequest], top_k: int | None = 50,
                                 batch_size: int = 8, answer_prefix: str = "") -> list[TokenDistribution]:
        """One distribution per request (prefill passes, no generation)."""
        ...

    def generate_with_distribution(self, requests: Sequence[VLMRequest], top_k: int | None = 50,
                                   batch_size: int = 8, answer_prefix: str = ""
                                   ) -> list[tuple[str, TokenDistribution]]:
        """(greedy answer, first-step distribution) per request."""
        ...


@runtime_checkable
class FollowUpTurn(Protocol):
    """The follow-up turn: the conversation ``user: [images] + request.prompt``, ``assistant:
    answer_prefix + answer.strip()``, ``user: follow_up`` (:data:`FOLLOW_UP_TURN`), answered
    greedily."""

    def generate_follow_up(self, requests: Sequence[VLMRequest], answers: Sequence[str], follow_up: str,
                           max_new_tokens: int = 8, batch_size: int = 8, answer_prefix: str = "") -> list:
        """One answer per request: a ``str`` or an object with ``text`` and ``cache_reused``."""
        ...


@runtime_checkable
class DistributionAndFollowUp(Protocol):
    """A greedy answer with its first-step distribution and the follow-up turn answered in the
    same pass (a local VLM reuses the clean pass's KV cache)."""

    def generate_with_distribution_and_follow_up(
            self, requests: Sequence[VLMRequest], follow_up: str, follow_up_max_new_tokens: int = 8,
            top_k: int | None = 50, batch_size: int = 8, answer_prefix: str = "") -> list[tuple]:
        """(answer, distribution, follow-up answer with ``text`` and ``cache_reused``) per request."""
        ...


@runtime_checkable
class VisionFeatures(Protocol):
    """Features from a VLM's own vision tower (the encoder-LLM probe, seed 002 §2.4)."""

    def vision_features(self, images: Sequence[Image.Image]) -> np.ndarray:
        """``(n, d)`` float32, rows L2-normalised."""
        ...


@runtime_checkable
class AnswerBudget(Protocol):
    """A model whose new-token budget differs from the request's.  A model without it gets
    exactly the ``max_new_tokens`` a request asks for (:func:`answer_budget`)."""

    def answer_budget(self, request_max_new_tokens: int) -> int:
        """New tokens a request asking for ``request_max_new_tokens`` actually gets."""
        ...


@runtime_checkable
class TopLogprobsLimit(Protocol):
    """A provider that returns at most ``max_top_logprobs`` alternatives per position."""

    max_top_logprobs: int


@runtime_checkable
class Identified(Protocol):
    """A model that states what its ``model_version`` was computed from.  ``identity``: a JSON-able
    dict (component hashes, commit, URL ...) recorded as ``run_meta.model_identity`` when not
    empty; ``identity_warning``: one line shown before a run when the identity is the name only
    (None otherwise).  A model without them records no identity and warns nothing."""

    identity: dict
    identity_warning: str | None


@runtime_checkable
class VerifiesCacheHits(Protocol):
    """``verify_cache_hits`` True: the model's identity is its name only but its answers are
    deterministic, so the response cache re-asks its first hit live
    (:class:`~perceptbench.models.response_cache.CachedVLM`).  A model without it: False."""

    verify_cache_hits: bool


FOLLOW_UP_TURN = "follow_up"
"""How :class:`FollowUpTurn` poses its question: as a second user turn after the model's own answer
(recorded as ``confidence_turn``; part of the response-cache key of a follow-up answer)."""


def answer_budget(model, request_max_new_tokens: int) -> int:
    """The new-token budget ``model`` gives a request asking for ``request_max_new_tokens``:
    :meth:`AnswerBudget.answer_budget` where declared, else the request's own."""
    if isinstance(model, AnswerBudget):
        return int(model.answer_budget(request_max_new_tokens))
    return int(request_max_new_tokens)


@dataclass
class ModelSpec:
    """A parsed command-line model name, e.g. ``hf:ORG/NAME`` -> kind='hf', ref='ORG/NAME'."""

    kind: str
    ref: str
    options: dict = field(default_factory=dict)
