"""Local Hugging Face VLMs through transformers' generic image-text-to-text classes.

:class:`HFVLM` implements :class:`perceptbench.models.base.VLM` with
``AutoProcessor`` + ``AutoModelForImageTextToText`` and the processor's own chat
template (images first, then the text, in one user turn; several images allowed).
Decoding is greedy (argmax, no sampling, one beam, no repetition penalty), capped at 40
new tokens by default (seed 000 appendix D.4), batched with left padding under
``torch.inference_mode()``.  Tested on the LLaVA, Idefics3/SmolVLM and Qwen2-VL families
(``tests/unit/models/test_vlm_hf.py``, on tiny random models from
:mod:`perceptbench.testing.tiny_vlm`); the vision-tower features (:meth:`HFVLM.vision_features`,
one generic route) and the VSI run also on LLaVA-NeXT, Qwen2.5-VL, Qwen3-VL, PaliGemma, Gemma 3
and SmolVLM (``tests/unit/vsi/test_probe.py``, ``tests/integration/test_vsi_tower_families.py``).

torch and transformers are imported when an :class:`HFVLM` is constructed, not when
this module is imported.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from PIL import Image

from .base import ModelLoadError, TokenDistribution, VLMRequest

__all__ = ["HFVLM", "FollowUp", "VisionTowerUnavailable", "growing_kv_cache", "local_weights_sha256"]

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def local_weights_sha256(directory: str | os.PathLike) -> str:
    """sha256 (hex) over a local model directory's weight files only
    (``local_model_sha256(directory)["weights"]``, see
    :func:`perceptbench.models.identity.local_model_sha256`; the model identity also covers
    the processor/tokenizer/chat-template/generation files).  Raises ``ModelLoadError`` if
    the directory holds no weight file."""
    from .identity import local_model_sha256

    try:
        return local_model_sha256(directory)["weights"]
    except FileNotFoundError as e:
        raise ModelLoadError(str(e)) from None


class VisionTowerUnavailable(ModelLoadError):
    """The model's vision tower cannot be reached by :meth:`HFVLM.vision_features` (the
    message says why); the encoder-LLM probe writes a ``skipped`` row instead."""


def _transformers_at_least(major: int, minor: int) -> bool:
    import transformers

    parts = transformers.__version__.split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (major, minor)
    except (ValueError, IndexError):
        return True


def _torch_dtype(dtype: Any):
    import torch

    if dtype is None:
        return torch.float32
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        return {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16,
                "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}[str(dtype)]
    except KeyError:
        raise ValueError(f"unsupported dtype {dtype!r}") from None


class HFVLM:
    """A local transformers VLM answering in free text (family ``"vlm"``).

    Parameters
    ----------
    model_id_or_dir:
        A hub id (``"Qwen/Qwen2-VL-2B-Instruct"``) or a local directory holding a saved
        model + processor; a local directory is accepted wherever a hub id is.  Nothing is
        downloaded when ``HF_HUB_OFFLINE=1``.
    name:
        Short stable name for trial records (default: the id, or the directory's name).
    revision:
        Hub revision (branch, tag or commit); ignored for a local directory.
    device:
        torch device string (``"cpu"``, ``"cuda"``, ``"cuda:1"``).
    dtype:
        ``None`` (float32), ``"bfloat16"``, ``"float16"`` or a ``torch.dtype``.
    attn_implementation:
        transformers' attention implementation (``"eager"``, ``"sdpa"``,
        ``"flash_attention_2"`` ...; :data:`perceptbench.models.runtime.ATTN_IMPLEMENTATIONS`);
        ``None`` keeps the model's default.  Recorded in ``generation_settings`` when given.
    temperature:
        0 (default): greedy answers.  Above 0: :meth:`generate` samples each answer at this
        temperature (top-k and top-p off, no repetition penalty) with ``torch.manual_seed`` set to the
        request's ``sample_seed`` before it, one request at a time, so an answer depends on its seed
        only (not on the batch); recorded in ``generation_settings`` (``decoding: "sample"``,
        ``do_sample``, ``temperature``).  The VSI methods stay greedy (their distributions are the
        model's, not a sample).
    max_new_tokens:
        Cap on generated tokens per request of :meth:`generate` (default 40, seed 000 D.4).  A
        request's own ``VLMRequest.max_new_tokens`` applies when it is smaller.  The VSI methods
        honour the request's budget (the task's, seed 002 D.1) unless a cap is given here
        (:meth:`answer_budget`).

    Attributes
    ----------
    model_version:
        ``"<hub id>@<commit sha>"`` for a hub model (the commit resolved with
        ``huggingface_hub`` when online, else the local hub cache's ref; the model is
        loaded at that commit), or ``"<absolute dir>@sha256:<first 16 hex>"`` for a local
        directory, hashed over the weights *and* every processor, tokenizer, chat-template
        and generation-config file (:func:`perceptbench.models.identity.local_model_sha256`),
        so editing e.g. the image processor's resize or normalisation is a new version.
    identity:
        JSON-able dict behind ``model_version`` (component hashes, or the commit and how
        it was resolved); ``identity_by_name_only`` is True for a hub id whose commit
        could not be resolved.
    generation_settings:
        JSON-able dict of everything besides weights and inputs that changes an answer:
        decoding, max_new_tokens, dtype, device type, the attention implementation when one was
        asked for, and the chat template's sha256.

    Raises
    ------
    ModelLoadError
        transformers/torch missing, an unknown id, a hub id not in the local cache while
        offline, or a directory without a loadable model/processor.
    """

    family = "vlm"
    supports_multi_image = True
    identity_warning: str | None = None
    """Declared (:class:`~perceptbench.models.base.Identified`): a local or hub model's identity is
    hashed or resolved, never the name only, so there is nothing to warn about."""

    def __init__(
        self,
        model_id_or_dir: str | os.PathLike,
        name: str | None = None,
        revision: str | None = None,
        device: str = "cpu",
        dtype: Any = None,
        max_new_tokens: int | None = None,
        attn_implementation: str | None = None,
        temperature: float = 0.0,
    ) -> None:
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ModelLoadError(
                f"HFVLM needs torch and transformers (pip install 'perceptbench[models]'): {e}"
            ) from e
        self._torch = torch
        ref = str(model_id_or_dir)
        local = Path(ref).expanduser()
        self.is_local = local.is_dir()
        self.model_id = str(local.resolve()) if self.is_local else ref
        self.name = name or (local.resolve().name if self.is_local else ref)
        self.device = str(device)
        self.dtype = _torch_dtype(dtype)
        self.max_new_tokens_explicit = max_new_tokens is not None
        max_new_tokens = 40 if max_new_tokens is None else max_new_tokens
        if int(max_new_tokens) < 1:
            raise ValueError("max_new_tokens must be >= 1")
        self.max_new_tokens = int(max_new_tokens)
        self.identity: dict = {}
        if not self.is_local:
            from .identity import resolve_hub_revision

            sha, how = resolve_hub_revision(ref, revision)
            self.identity = {"kind": "hub", "revision": revision or "main", "commit": sha, "resolved_by": how}
            if sha:
                revision = sha  # load exactly the files the identity names
        kw = {} if self.is_local else {"revision": revision}
        try:
            self.processor = AutoProcessor.from_pretrained(self.model_id, **kw)
            # transformers >= 4.56 names it ``dtype``; older releases ``torch_dtype``
            dtype_kw = "dtype" if _transformers_at_least(4, 56) else "torch_dtype"
            attn = {"attn_implementation": attn_implementation} if attn_implementation else {}
            self.model = AutoModelForImageTextToText.from_pretrained(self.model_id, **{dtype_kw: self.dtype}, **attn,
                                                                     **kw)
        except (OSError, ValueError, KeyError, ImportError) as e:
            raise ModelLoadError(f"could not load VLM {ref!r}: {type(e).__name__}: {e}") from e
        self.model.to(self.device).eval()
        tok = getattr(self.processor, "tokenizer", None)
        if tok is None:
            raise ModelLoadError(f"processor of {ref!r} has no tokenizer")
        self.tokenizer = tok
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        if self.is_local:
            from .identity import local_model_sha256

            try:
                shas = local_model_sha256(self.model_id)
            except FileNotFoundError as e:
                raise ModelLoadError(str(e)) from None
            self.identity = {"kind": "local", "weights_sha256": shas["weights"], "configs_sha256": shas["configs"]}
            # weights AND processor/tokenizer/chat-template/generation configs: any change -> new version
            self.model_version = f"{self.model_id}@sha256:{shas['all'][:16]}"
        else:
            commit = self.identity.get("commit") or getattr(self.model.config, "_commit_hash", None)
            if commit and not self.identity.get("commit"):
                self.identity.update(commit=commit, resolved_by="loaded-config")
            self.model_version = f"{self.model_id}@{commit or 'unresolved'}"
        self.identity_by_name_only = not self.is_local and not self.identity.get("commit")
        template = getattr(self.processor, "chat_template", None) or getattr(tok, "chat_template", None)
        if not template:
            raise ModelLoadError(f"{ref!r} has no chat template (processor or tokenizer)")
        if isinstance(template, dict):  # several named templates
            template = template.get("default") or next(iter(template.values()))
        self._chat_template_sha = hashlib.sha256(str(template).encode()).hexdigest()[:16]
        self._eos_ids = self._collect_eos_ids()
        self.generation_settings = {
            "decoding": "greedy",
            "do_sample": False,
            "num_beams": 1,
            "temperature": 0.0,
            "repetition_penalty": 1.0,
            "max_new_tokens": self.max_new_tokens,
            "dtype": str(self.dtype).replace("torch.", ""),
            "device_type": self._torch.device(self.device).type,
            "chat_template_sha256": self._chat_template_sha,
        }
        if attn_implementation:  # only when given: the cache keys of runs without it stay as they were
            self.generation_settings["attn_implementation"] = str(attn_implementation)
        self.kv_in_place = True
        """The VSI generations (:meth:`generate_with_distribution`, the follow-up turn) keep their KV cache in
        buffers that grow in place (:func:`growing_kv_cache`) instead of re-concatenating it at every step; the
        values are the same (tested bit for bit), so this is not a generation setting.  False: transformers'
        own cache (the reference the tests and ``benchmarks/bench_vsi.py --stages`` compare with)."""
        self.temperature = float(temperature)
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, not {temperature!r}")
        if self.temperature > 0:  # only when sampling: greedy runs keep their settings and cache keys
            self.generation_settings.update(decoding="sample", do_sample=True, temperature=self.temperature,
                                            top_k=0, top_p=1.0)

    def __repr__(self) -> str:
        return f"HFVLM(name={self.name!r}, model_version={self.model_version!r})"

    # ------------------------------------------------------------------ helpers
    def _collect_eos_ids(self) -> set[int]:
        ids: set[int] = set()
        for src in (self.model.generation_config.eos_token_id, self.tokenizer.eos_token_id):
            if src is None:
                continue
            ids.update([src] if isinstance(src, int) else list(src))
        return ids

    def _chat_text(self, n_images: int, prompt: str, answer_prefix: str = "") -> str:
        content = [{"type": "image"} for _ in range(n_images)] + [{"type": "text", "text": prompt}]
        messages = [{"role": "user", "content": content}]
        text = self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        return text + answer_prefix

    def _encode(self, requests: Sequence[VLMRequest], answer_prefix: str = ""):
        texts = [self._chat_text(len(r.images), r.prompt, answer_prefix) for r in requests]
        kwargs: dict[str, Any] = {"text": texts, "padding": True, "return_tensors": "pt"}
        if any(r.images for r in requests):
            kwargs["images"] = [[_rgb(im) for im in r.images] for r in requests]
        return self._model_inputs(self.processor(**kwargs))

    def _model_inputs(self, inputs):
        """The processor's outputs the model takes, on the device: ``labels`` (PaliGemma's processor
        adds training labels) never; ``token_type_ids`` only where the model's ``forward`` names it
        (PaliGemma and Gemma 3 attend bidirectionally over the image tokens with it; other
        families' tokenizers return it unasked and their models refuse it)."""
        inputs.pop("labels", None)
        if "token_type_ids" not in self._forward_params():
            inputs.pop("token_type_ids", None)
        return inputs.to(self.device)

    @staticmethod
    def _groups(requests: Sequence[VLMRequest], batch_size: int) -> list[list[int]]:
        """Index batches of at most ``batch_size``; requests with and without images are
        never mixed in one batch (processors reject such batches)."""
        out: list[list[int]] = []
        for with_images in (True, False):
            idx = [i for i, r in enumerate(requests) if bool(r.images) == with_images]
            out += [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]
        return out

    def _greedy_kwargs(self, max_new: int) -> dict:
        return dict(
            max_new_tokens=max_new,
            do_sample=False,
            num_beams=1,
            repetition_penalty=1.0,
            temperature=None,
            top_p=None,
            top_k=None,
            pad_token_id=self.tokenizer.pad_token_id,
        )

    def _cache_kwargs(self, room: int = 0) -> dict:
        """``{name: cache}`` for ``model.generate``: an empty :func:`growing_kv_cache` when
        :attr:`kv_in_place` is on and the model takes one, else ``{}`` (generate makes its own).
        ``room``: positions to reserve beyond the prompt (at least the layer's default spare)."""
        if not self.kv_in_place:
            return {}
        cache = growing_kv_cache(self.model, room)
        if cache is None:
            return {}
        params = self._forward_params()
        return {"cache" if "cache" in params else "past_key_values": cache}

    def _forward_params(self) -> set[str]:
        import inspect

        return set(inspect.signature(self.model.forward).parameters)

    # --------------------------------------------------------------- interface
    def generate_ids(self, requests: Sequence[VLMRequest], batch_size: int = 8) -> list[list[int]]:
        """Greedy generated token ids per request (eos and everything after it removed).

        Returns one list of ints per request, in order, each at most
        ``min(request.max_new_tokens, self.max_new_tokens)`` long.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if self.temperature > 0:
            return [self._sample_ids(r) for r in requests]
        results: list[list[int] | None] = [None] * len(requests)
        for group in self._groups(requests, batch_size):
            batch = [requests[i] for i in group]
            limits = [max(1, min(int(r.max_new_tokens), self.max_new_tokens)) for r in batch]
            inputs = self._encode(batch)
            with self._torch.inference_mode():
                out = self.model.generate(**inputs, **self._greedy_kwargs(max(limits)))
            new = out[:, inputs["input_ids"].shape[1]:].tolist()
            for row, i, lim in zip(new, group, limits):
                ids: list[int] = []
                for t in row[:lim]:
                    if t in self._eos_ids:
                        break
                    ids.append(t)
                # left padding only: after eos generate pads with pad_token_id; those
                # come after the eos we stop at.
                results[i] = ids
        return [r if r is not None else [] for r in results]

    def _sample_ids(self, request: VLMRequest) -> list[int]:
        """One sampled answer (token ids, eos and after removed) to ``request`` at
        :attr:`temperature`, from ``torch.manual_seed(request.sample_seed)`` (0 when it has none)."""
        lim = max(1, min(int(request.max_new_tokens), self.max_new_tokens))
        inputs = self._encode([request])
        kw = dict(self._greedy_kwargs(lim), do_sample=True, temperature=self.temperature, top_k=0, top_p=1.0)
        self._torch.manual_seed(int(request.sample_seed or 0))
        with self._torch.inference_mode():
            out = self.model.generate(**inputs, **kw)
        return self._greedy_ids(out[0, inputs["input_ids"].shape[1]:].tolist(), lim)

    def generate(self, requests: Sequence[VLMRequest], batch_size: int = 8) -> list[str]:
        """Greedy answers, one decoded string per request, in order.

        ``batch_size`` only affects speed: answers are identical at batch size 1 and 8
        (left padding + attention mask; tested).  Special tokens are dropped from the text.
        """
        ids = self.generate_ids(requests, batch_size=batch_size)
        return [self.tokenizer.decode(x, skip_special_tokens=True) for x in ids]

    def first_token_logits(self, requests: Sequence[VLMRequest], batch_size: int = 8) -> np.ndarray:
        """Logits of the first generated position, shape ``(n, vocab)``, float32.

        ``vocab`` is the model's output dimension (may exceed the tokenizer's length for
        padded vocabularies).  Computed with the same left-padded batches as ``generate``.
        """
        rows: list[np.ndarray | None] = [None] * len(requests)
        for group in self._groups(requests, batch_size):
            inputs = self._encode([requests[i] for i in group])
            with self._torch.inference_mode():
                logits = self.model(**inputs).logits[:, -1, :].float().cpu().numpy()
            for k, i in enumerate(group):
                rows[i] = logits[k]
        return np.stack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32)

    def next_token_distribution(
        self, image: Image.Image | Sequence[Image.Image] | None, prompt: str, top_k: int | None = None
    ) -> TokenDistribution:
        """Softmax over the full vocabulary at the first generated position.

        ``image``: one PIL image (or a sequence of them, or None), attached before the
        prompt as in ``generate``.  Returns log-probabilities (nats, float64, computed
        with ``log_softmax`` in float64) sorted descending; ``top_k=None`` gives every
        vocabulary entry (``complete=True``, probabilities sum to 1), ``top_k=k`` the k
        most probable (``complete=False`` unless k covers the vocabulary).  ``tokens`` are
        each id decoded on its own (special tokens kept); ``token_ids`` the ids.
        """
        imgs: tuple = () if image is None else (tuple(image) if isinstance(image, (list, tuple)) else (image,))
        logits = self.first_token_logits([VLMRequest(images=imgs, prompt=prompt)], batch_size=1)[0]
        lp = logits.astype(np.float64)
        lp = lp - lp.max()
        lp = lp - np.log(np.exp(lp).sum())
        order = np.argsort(-lp, kind="stable")
        V = lp.shape[0]
        if top_k is not None:
            if top_k < 1:
                raise ValueError("top_k must be >= 1 or None")
            order = order[: min(int(top_k), V)]
        ids = [int(i) for i in order]
        return TokenDistribution(
            tokens=self._token_texts(ids),
            logprobs=lp[order],
            complete=len(ids) == V,
            token_ids=tuple(ids),
        )

    # ------------------------------------------------------ vision-tower features
    def vision_tower(self):
        """The model's vision tower (an ``nn.Module``), found generically: transformers' own
        ``get_encoder(modality="image")`` lookup (attributes ``vision_tower``, ``visual``,
        ``vision_model``, ``vision_encoder``, ``image_tower`` of the model or its base model), and
        the model's ``get_image_features``, which runs it on the processor's outputs.  Raises
        ``VisionTowerUnavailable`` naming the model type and class when either is missing."""
        kind = getattr(getattr(self.model, "config", None), "model_type", "?")
        cls = type(self.model).__name__
        get_encoder = getattr(self.model, "get_encoder", None)
        tower = None
        if callable(get_encoder):
            try:
                tower = get_encoder(modality="image")
            except (TypeError, ValueError):
                tower = None
        inner = getattr(self.model, "base_model", None)
        if tower is None or tower is self.model or tower is inner:
            raise VisionTowerUnavailable(f"{self.name}: no vision tower found on {cls} (model_type {kind!r}): "
                                         "transformers' get_encoder(modality='image') returns the model itself")
        if not callable(getattr(self.model, "get_image_features", None)):
            raise VisionTowerUnavailable(f"{self.name}: {cls} (model_type {kind!r}) has a vision tower "
                                         f"({type(tower).__name__}) but no get_image_features to run it")
        return tower

    def vision_feature_source(self) -> str:
        """In words, where :meth:`vision_features` comes from (written in the feature sidecar):
        the tower's class, and whether the CLS token is dropped.  Raises
        ``VisionTowerUnavailable`` as :meth:`vision_tower` does."""
        cls = " without the CLS token" if self._drops_cls() else ""
        return f"{type(self.vision_tower()).__name__} final layer (last_hidden_state){cls}, mean over tokens"

    def _drops_cls(self) -> bool:
        """Whether the tower's final layer starts with a CLS token the model itself drops:
        ``vision_feature_select_strategy == "default"`` (the LLaVA families' CLIP towers; the
        model's own ``get_image_features`` drops it the same way).  SigLIP towers (PaliGemma,
        Gemma 3, Idefics3/SmolVLM) and the Qwen-VL towers have no CLS token and no such key."""
        return getattr(self.model.config, "vision_feature_select_strategy", None) == "default"

    def vision_features(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Final-layer vision-tower features, mean-pooled over tokens and L2-normalised.

        ``images``: PIL images, preprocessed by the model's own image processor.  Returns
        float32 ``(n, d)`` with ``d`` the tower's hidden size; rows have unit L2 norm.  This is
        the input to the encoder-LLM probe (seed 002 §2.4, appendix A: "normalised final-layer
        image features").  One image per forward pass.

        One route for every family: the model's ``get_image_features`` (transformers 5.x) with
        the image processor's outputs that it names (``pixel_values`` and, per family,
        ``image_grid_thw``, ``image_sizes``, ``pixel_attention_mask`` ...), whose
        ``last_hidden_state`` is the tower's final layer *before* the projector or patch merger:
        ``(crops, tokens, d)`` for ViT towers (every crop of an any-resolution image: LLaVA-NeXT,
        Idefics3 without its padding crops), ``(patches, d)`` for the Qwen-VL towers (the patches
        before the 2x2 merger).  The mean runs over every token of every crop.  Per family only
        where the outputs differ: the CLS token is dropped where the model declares
        ``vision_feature_select_strategy == "default"`` (:meth:`_drops_cls`).  Raises
        ``VisionTowerUnavailable`` when the tower cannot be reached (:meth:`vision_tower`) or
        ``get_image_features`` returns no ``last_hidden_state``."""
        import inspect

        self.vision_tower()
        torch = self._torch
        fn = self.model.get_image_features
        names = set(inspect.signature(fn).parameters) | {"pixel_values"}
        ip = self.processor.image_processor
        drop_cls = self._drops_cls()
        rows = []
        for im in images:
            enc = ip(images=[_rgb(im)], return_tensors="pt")
            kw = {k: v.to(self.device) for k, v in enc.items() if k in names and hasattr(v, "to")}
            kw["pixel_values"] = kw["pixel_values"].to(self.dtype)
            with torch.inference_mode():
                out = fn(**kw)
            h = getattr(out, "last_hidden_state", None)
            if h is None:
                raise VisionTowerUnavailable(f"{self.name}: {type(self.model).__name__}.get_image_features returned "
                                             "no last_hidden_state (the tower's final layer)")
            if drop_cls and h.dim() == 3:
                h = h[:, 1:]
            v = h.float().reshape(-1, h.shape[-1]).mean(0)
            v = v / v.norm().clamp_min(1e-12)
            rows.append(v.cpu().numpy().astype(np.float32))
        return np.stack(rows) if rows else np.zeros((0, 0), np.float32)


    # ------------------------------------------------ VSI: batched first-token distributions
    def _forward_last_logits(self, inputs):
        """Logits of the last input position, (b, vocab) float32 numpy; computes only that
        position's logits where the model supports ``logits_to_keep``."""
        with self._torch.inference_mode():
            try:
                out = self.model(**inputs, logits_to_keep=1)
            except TypeError:
                out = self.model(**inputs)
            return out.logits[:, -1, :].float().cpu().numpy()

    def _distribution(self, logits: np.ndarray, top_k: int | None) -> TokenDistribution:
        lp = logits.astype(np.float64)
        lp = lp - lp.max()
        lp = lp - np.log(np.exp(lp).sum())
        V = lp.shape[0]
        if top_k is None or top_k >= V:
            order = np.argsort(-lp, kind="stable")
        else:
            if top_k < 1:
                raise ValueError("top_k must be >= 1 or None")
            part = np.argpartition(-lp, int(top_k) - 1)[: int(top_k)]
            order = part[np.lexsort((part, -lp[part]))]  # descending logprob, ties by id
        ids = [int(i) for i in order]
        return TokenDistribution(tokens=self._token_texts(ids), logprobs=lp[order], complete=len(ids) == V,
                                 token_ids=tuple(ids))

    def _token_texts(self, ids: list[int]) -> tuple[str, ...]:
        """Each id decoded on its own (special tokens kept), as ``tokenizer.batch_decode([[i] ...])``
        gives it; decoded once per id and kept (the same ids recur in every distribution)."""
        memo = self.__dict__.setdefault("_token_text_memo", {})
        new = [i for i in dict.fromkeys(ids) if i not in memo]
        if new:
            memo.update(zip(new, self.tokenizer.batch_decode([[i] for i in new], skip_special_tokens=False)))
        return tuple(memo[i] for i in ids)

    def next_token_distributions(self, requests: Sequence[VLMRequest], top_k: int | None = 50, batch_size: int = 8,
                                 answer_prefix: str = "") -> list[TokenDistribution]:
        """First-answer-token distributions for many requests: prefill passes only, no generation.

        The input is the chat template's text with the generation (assistant) prefix, plus
        ``answer_prefix`` (seed 002 D.1: "after answer-prefix tokens"); requests are batched with
        left padding as in :meth:`generate`.  Each result holds the ``top_k`` most probable tokens
        (ids, decoded tokens, log-probabilities in nats from a float64 log-softmax over the full
        vocabulary, sorted descending, ties by id); ``top_k=None`` gives the whole vocabulary.
        Batch size changes results by float rounding only (tested: 1e-4 between 1 and 8).
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        out: list[TokenDistribution | None] = [None] * len(requests)
        for group in self._groups(requests, batch_size):
            logits = self._forward_last_logits(self._encode([requests[i] for i in group], answer_prefix))
            for k, i in enumerate(group):
                out[i] = self._distribution(logits[k], top_k)
        return out  # type: ignore[return-value]

    def answer_budget(self, request_max_new_tokens: int) -> int:
        """New-token budget of a VSI clean answer or confidence turn: the request's own (the task's,
        seed 002 D.1: 8, HallusionBench 64) unless this adapter was built with an explicit
        ``max_new_tokens`` cap, which then also applies (the 40-token default of
        :meth:`generate` is seed 000's battery budget and does not cut VSI answers)."""
        n = max(1, int(request_max_new_tokens))
        return min(n, self.max_new_tokens) if self.max_new_tokens_explicit else n

    def _greedy_ids(self, row: list[int], limit: int) -> list[int]:
        ids: list[int] = []
        for t in row[:limit]:
            if t in self._eos_ids:
                break
            ids.append(t)
        return ids

    def generate_with_distribution(self, requests: Sequence[VLMRequest], top_k: int | None = 50,
                                   batch_size: int = 8, answer_prefix: str = ""
                                   ) -> list[tuple[str, TokenDistribution]]:
        """Greedy answers continuing ``answer_prefix`` (the prefix itself is not in the text) and
        the first generated position's distribution from the same pass (``generate`` with
        ``output_logits``: the raw, unprocessed logits), so the clean condition costs one
        generation and no extra prefill.  Budget per request: :meth:`answer_budget`.  Returns
        (text, distribution) per request, in order."""
        return [(t, d) for t, d, _ in self._clean_and_follow_up(requests, top_k, batch_size, answer_prefix, None, 0)]

    def generate_with_distribution_and_follow_up(
        self, requests: Sequence[VLMRequest], follow_up: str, follow_up_max_new_tokens: int = 8,
        top_k: int | None = 50, batch_size: int = 8, answer_prefix: str = "", reuse_cache: bool = True,
        return_logits: bool = False,
    ) -> list[tuple[str, TokenDistribution, "FollowUp"]]:
        """:meth:`generate_with_distribution` plus a greedy answer to a follow-up user turn.

        The follow-up conversation is ``user: [images] + request.prompt``, ``assistant:
        answer_prefix + answer.strip()``, ``user: follow_up`` (the chat template's own rendering,
        :meth:`follow_up_text`), answered greedily in at most
        ``answer_budget(follow_up_max_new_tokens)`` tokens (seed 002 appendix A: verbalised
        confidence "elicited in a second forward pass").  With ``reuse_cache`` the clean pass's
        KV cache (cropped to the prompt) is reused, so only the answer and the follow-up turn
        are prefilled; the result equals the uncached :meth:`generate_follow_up` up to float
        rounding (tested: 1e-4 on the logits of every step, identical texts, on tiny LLaVA,
        Idefics3 and Qwen2-VL).  A batch whose follow-up token ids do not extend the clean
        prompt's ids exactly (a chat template that rewrites earlier turns) is prefilled in full
        instead; ``FollowUp.cache_reused`` says which happened.  ``return_logits`` as for
        :meth:`generate_follow_up`.  Returns (text, distribution,
        FollowUp) per request, in order."""
        return self._clean_and_follow_up(requests, top_k, batch_size, answer_prefix, follow_up,
                                         follow_up_max_new_tokens, reuse_cache, return_logits)

    def follow_up_text(self, n_images: int, prompt: str, answer: str, follow_up: str, answer_prefix: str = "") -> str:
        """The chat-template text of the follow-up conversation (see
        :meth:`generate_with_distribution_and_follow_up`), ending with the generation prompt."""
        messages = [{"role": "user", "content": [{"type": "image"} for _ in range(n_images)]
                     + [{"type": "text", "text": prompt}]},
                    {"role": "assistant", "content": [{"type": "text", "text": answer_prefix + answer.strip()}]},
                    {"role": "user", "content": [{"type": "text", "text": follow_up}]}]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def generate_follow_up(self, requests: Sequence[VLMRequest], answers: Sequence[str], follow_up: str,
                           max_new_tokens: int = 8, batch_size: int = 8, answer_prefix: str = "",
                           return_logits: bool = False) -> list["FollowUp"]:
        """Greedy answers to the follow-up turn, the whole conversation prefilled (no cache):
        the reference :meth:`generate_with_distribution_and_follow_up` is tested against, and
        the path for a clean answer already in the response cache.  ``answers``: the clean
        greedy answers, one per request.  ``return_logits``: keep each step's raw logits
        (``FollowUp.logits``, (steps, vocab) float32)."""
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        out: list[FollowUp | None] = [None] * len(requests)
        limit = self.answer_budget(max_new_tokens)
        for group in self._groups(requests, batch_size):
            texts = [self.follow_up_text(len(requests[i].images), requests[i].prompt, answers[i], follow_up,
                                         answer_prefix) for i in group]
            kwargs: dict[str, Any] = {"text": texts, "padding": True, "return_tensors": "pt"}
            if any(requests[i].images for i in group):
                kwargs["images"] = [[_rgb(im) for im in requests[i].images] for i in group]
            inputs = self._model_inputs(self.processor(**kwargs))
            with self._torch.inference_mode():
                gen = self.model.generate(**inputs, **self._greedy_kwargs(limit), output_logits=return_logits,
                                          return_dict_in_generate=True, **self._cache_kwargs())
            self._collect_follow_up(gen, inputs["input_ids"].shape[1], group, limit, out, False, return_logits)
        return out  # type: ignore[return-value]

    def _collect_follow_up(self, gen, start: int, group, limit: int, out: list, reused: bool, logits: bool) -> None:
        lg = np.stack([x.float().cpu().numpy() for x in gen.logits], 1) if logits else None
        for k, (row, i) in enumerate(zip(gen.sequences[:, start:].tolist(), group)):
            ids = self._greedy_ids(row, limit)
            out[i] = FollowUp(self.tokenizer.decode(ids, skip_special_tokens=True), reused,
                              None if lg is None else lg[k, :len(ids) + (len(ids) < len(row[:limit]))])

    def _follow_up_suffixes(self, batch: Sequence[VLMRequest], answers: Sequence[str], follow_up: str,
                            answer_prefix: str) -> list[list[int]] | None:
        """Token ids the follow-up conversation adds after each clean prompt, or None when some
        conversation does not extend its clean prompt token for token."""
        cleans = [self._chat_text(len(r.images), r.prompt, answer_prefix) for r in batch]
        fulls = [self.follow_up_text(len(r.images), r.prompt, a, follow_up, answer_prefix)
                 for r, a in zip(batch, answers)]
        if not all(f.startswith(c) for c, f in zip(cleans, fulls)):
            return None
        ids = self.tokenizer(cleans + fulls, add_special_tokens=False)["input_ids"]  # one call: the same ids
        suffixes = []
        for ci, fi in zip(ids[:len(cleans)], ids[len(cleans):]):
            if fi[:len(ci)] != ci or len(fi) == len(ci):
                return None
            suffixes.append(fi[len(ci):])
        return suffixes

    def _follow_up_room(self, request: VLMRequest, follow_up: str, answer_prefix: str, answer_max: int,
                        follow_max: int) -> int:
        """KV positions to reserve after a clean prompt so that the follow-up turn and its answer fit in the
        clean pass's buffers (:class:`GrowingKVLayer`: no reallocation and no copy of the prompt's keys and
        values at the turn): the turn's tokens with an empty answer (``request``'s conversation; the turn's
        text is the same for every request), 4 per answer token (a decoded answer can re-tokenize into
        more tokens: byte-level pieces), the follow-up's own budget and 8 more.  An estimate: a turn
        that does not fit is still right, its buffers are reallocated."""
        n = len(request.images)
        texts = [self._chat_text(n, request.prompt, answer_prefix),
                 self.follow_up_text(n, request.prompt, "", follow_up, answer_prefix)]
        clean, full = self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        return max(0, len(full) - len(clean)) + 4 * answer_max + self.answer_budget(follow_max) + 8

    def _clean_and_follow_up(self, requests, top_k, batch_size, answer_prefix, follow_up, follow_max,
                             reuse_cache=True, return_logits=False):
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        torch = self._torch
        out: list[tuple | None] = [None] * len(requests)
        for group in self._groups(requests, batch_size):
            batch = [requests[i] for i in group]
            limits = [self.answer_budget(r.max_new_tokens) for r in batch]
            inputs = self._encode(batch, answer_prefix)
            room = self._follow_up_room(batch[0], follow_up, answer_prefix, max(limits), follow_max) \
                if follow_up is not None and reuse_cache and self.kv_in_place else 0
            with torch.inference_mode():
                gen = self.model.generate(**inputs, **self._greedy_kwargs(max(limits)), output_logits=True,
                                          return_dict_in_generate=True, **self._cache_kwargs(room))
            first = gen.logits[0].float().cpu().numpy()
            L = inputs["input_ids"].shape[1]
            texts = [self.tokenizer.decode(self._greedy_ids(row, lim), skip_special_tokens=True)
                     for row, lim in zip(gen.sequences[:, L:].tolist(), limits)]
            fol: list = [None] * len(group)
            if follow_up is not None:
                fmax = self.answer_budget(follow_max)
                cache_name = "cache" if gen.get("cache") is not None else "past_key_values"
                cache = gen.get(cache_name)
                suffixes = self._follow_up_suffixes(batch, texts, follow_up, answer_prefix) \
                    if reuse_cache and cache is not None and hasattr(cache, "crop") else None
                extra = cache.get_seq_length() - L if suffixes is not None else 0
                if extra > 0:  # drop the generated answer: the conversation re-tokenizes it
                    try:
                        cache.crop(-extra)
                    except RuntimeError:  # a sliding-window layer past its window (Gemma 3) cannot roll back
                        suffixes = None
                if suffixes is None:  # the whole conversation, prefilled
                    fol = self.generate_follow_up(batch, texts, follow_up, follow_max, len(batch), answer_prefix,
                                                  return_logits)
                else:
                    S = max(map(len, suffixes))
                    pad = self.tokenizer.pad_token_id
                    # pads between the cached prompt and each follow-up (attention mask 0; position ids
                    # from the mask's cumulative sum, as for left padding)
                    ids = torch.tensor([[pad] * (S - len(s)) + s for s in suffixes], dtype=inputs["input_ids"].dtype)
                    mask = torch.tensor([[0] * (S - len(s)) + [1] * len(s) for s in suffixes],
                                        dtype=inputs["attention_mask"].dtype)
                    ids = torch.cat([inputs["input_ids"], ids.to(self.device)], 1)
                    mask = torch.cat([inputs["attention_mask"], mask.to(self.device)], 1)
                    with torch.inference_mode():
                        g2 = self.model.generate(input_ids=ids, attention_mask=mask, **{cache_name: cache},
                                                 **self._greedy_kwargs(fmax), output_logits=return_logits,
                                                 return_dict_in_generate=True)
                    self._collect_follow_up(g2, ids.shape[1], list(range(len(group))), fmax, fol, True,
                                            return_logits)
            for k, i in enumerate(group):
                out[i] = (texts[k], self._distribution(first[k], top_k), fol[k])
        return out


_GROWING_LAYER: Any = None


def _growing_layer_class():
    """transformers' ``DynamicLayer`` with in-place growth (built on first use: this module does not
    import transformers)."""
    global _GROWING_LAYER
    if _GROWING_LAYER is not None:
        return _GROWING_LAYER
    from transformers.cache_utils import DynamicLayer

    class GrowingKVLayer(DynamicLayer):
        """A ``DynamicLayer`` whose keys and values live in buffers with room for :attr:`spare` more
        positions: ``update`` copies the new states into the buffers and returns views of their filled
        part, where ``DynamicLayer.update`` concatenates the whole cache into new tensors at every
        generated token (for a 715-token batch of 8 at hidden 384, 2 x 8.8 MB per layer per step).  The
        returned keys and values hold the same numbers as the concatenation, in a strided view (the
        attention kernels read them through their strides).  ``crop`` (inherited) narrows the view;
        the next ``update`` overwrites the dropped positions.  When the view no longer lies in the
        buffers (the cache was reordered, offloaded or reset by other code) or the states do not fit,
        the buffers are reallocated from the current states (one copy, as a concatenation would)."""

        spare = 64
        """Positions reserved beyond what an ``update`` needs when the buffers are (re)allocated: room
        for the decoding steps of a VSI answer (8 tokens; HallusionBench 64) without another copy.  A
        layer's own ``spare`` (:func:`growing_kv_cache`'s ``room``) can be larger: the clean pass
        reserves the follow-up turn's positions too (:meth:`HFVLM._follow_up_room`)."""

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, m = self.get_seq_length(), key_states.shape[-2]
            kb, vb = getattr(self, "_kbuf", None), getattr(self, "_vbuf", None)
            if not (kb is not None and n + m <= kb.shape[-2] and _view_of(self.keys, kb, n, key_states)
                    and _view_of(self.values, vb, n, value_states)):
                kb = key_states.new_empty((*key_states.shape[:-2], n + m + self.spare, key_states.shape[-1]))
                vb = value_states.new_empty((*value_states.shape[:-2], n + m + self.spare, value_states.shape[-1]))
                if n:
                    kb[..., :n, :].copy_(self.keys)
                    vb[..., :n, :].copy_(self.values)
                self._kbuf, self._vbuf = kb, vb
            kb[..., n:n + m, :].copy_(key_states)
            vb[..., n:n + m, :].copy_(value_states)
            self.keys, self.values = kb[..., :n + m, :], vb[..., :n + m, :]
            return self.keys, self.values

    _GROWING_LAYER = GrowingKVLayer
    return GrowingKVLayer


def _view_of(view, buf, n: int, new) -> bool:
    """Whether ``view`` (a layer's keys or values, ``n`` positions) is the filled part of ``buf`` and
    ``new`` states can be written after it (same leading shape, dtype and device)."""
    if n == 0:
        return buf.shape[:-2] == new.shape[:-2] and buf.shape[-1] == new.shape[-1] and buf.dtype == new.dtype \
            and buf.device == new.device
    return (view.data_ptr() == buf.data_ptr() and view.stride() == buf.stride()
            and view.shape[:-2] == new.shape[:-2] and view.dtype == new.dtype and view.device == new.device)


def growing_kv_cache(model, room: int = 0):
    """An empty ``DynamicCache`` for ``model.generate`` whose full-attention layers grow in place
    (:func:`_growing_layer_class`: no per-token concatenation of the whole cache), each reserving
    ``max(room, GrowingKVLayer.spare)`` positions beyond its first update (the prompt), or None where that
    does not apply: a model whose generate does not use transformers' default dynamic cache, one
    configured with another ``cache_implementation``, a transformers release without per-layer caches,
    or a model without a plain ``DynamicLayer`` (sliding-window and linear-attention layers are left as
    they are).  Greedy answers, logits and distributions are identical with and without it (tested bit
    for bit on tiny LLaVA, Idefics3 and Qwen2-VL; ``tests/unit/models/test_vlm_hf.py``)."""
    try:
        from transformers.cache_utils import DynamicCache, DynamicLayer
    except ImportError:  # pragma: no cover - transformers without per-layer caches
        return None
    supports = getattr(model, "_supports_default_dynamic_cache", None)
    gen_cfg = getattr(model, "generation_config", None)
    if not callable(supports) or not supports() or getattr(gen_cfg, "cache_implementation", None) is not None:
        return None
    try:
        cache = DynamicCache(config=model.config.get_text_config(decoder=True))
    except (TypeError, ValueError, AttributeError):  # pragma: no cover - other transformers releases
        return None
    layers = getattr(cache, "layers", None) or []
    grow = _growing_layer_class()
    swapped = 0
    for layer in layers:
        if type(layer) is DynamicLayer:
            layer.__class__ = grow
            layer.spare = max(int(room), grow.spare)
            swapped += 1
    return cache if swapped else None


@dataclass(frozen=True)
class FollowUp:
    """A greedy answer to a follow-up user turn: ``text``; ``cache_reused`` True when the clean
    pass's KV cache was reused (only the new turn prefilled); ``logits`` each generated step's
    raw logits, (steps, vocab) float32, when asked for (tests), else None."""

    text: str
    cache_reused: bool
    logits: np.ndarray | None = None


def _rgb(im: Image.Image) -> Image.Image:
    return im if im.mode == "RGB" else im.convert("RGB")
