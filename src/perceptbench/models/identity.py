"""What a model *is*, for the response-cache key and ``run_meta.model_version``.

A cached answer may be reused only when everything that can change it is the same.  This
module computes that identity for the three kinds of model a VLM can be:

* a local model directory (``hf:/path``): :func:`local_model_sha256` hashes the weights
  *and* every other file that shapes an answer (image-processor settings such as resize
  and normalisation, tokenizer, chat template, generation config);
* a hub id (``hf:ORG/NAME[@REV]``): :func:`resolve_hub_revision`, the commit sha the
  files resolve to (asked of the hub with ``huggingface_hub`` when online, read from the
  local hub cache when offline);
* an API model: :func:`server_model_identity` over what an OpenAI-compatible server
  reports about the model at ``GET {base_url}/models`` (seed: none; the OpenAI "List
  models" schema: ``id``, ``object``, ``created``, ``owned_by``, plus server extras such
  as vLLM's ``root``/``max_model_len`` or llama.cpp's ``meta``).

What cannot be known: a server that reports nothing but the model's name (``transformers
serve`` lists ``{"id", "owned_by": "local", "created": 0}``) can swap the model behind the
name without any visible change; the adapter then says so (``identity_by_name_only``) and
the user can pin a version (``openai-compatible:URL#MODEL@VERSION``).

Pure Python (hashlib, json); no torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = [
    "WEIGHT_SUFFIXES", "local_model_files", "local_model_sha256", "resolve_hub_revision",
    "server_model_identity", "NAME_LIKE_FIELDS", "VOLATILE_FIELDS",
]

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")

# files in a model directory that cannot change an answer (documentation, VCS metadata)
_IGNORED_NAMES = {"README.md", "README", "LICENSE", "LICENSE.txt", "LICENSE.md", "NOTICE", ".gitattributes",
                  "USE_POLICY.md"}


def local_model_files(directory: str | os.PathLike) -> tuple[list[Path], list[Path]]:
    """(weight files, other files) of a local model directory, each sorted by relative path.

    Other files are everything else except hidden paths (a leading ``.``: ``.git/``,
    ``.cache/``) and documentation (README, LICENSE, NOTICE): ``config.json``,
    ``preprocessor_config.json``, ``processor_config.json``, ``tokenizer*.json``,
    ``chat_template.jinja``/``.json``, ``generation_config.json``, vocabularies ...
    Sub-directories are included.
    """
    root = Path(directory)
    weights, other = [], []
    for p in sorted(root.rglob("*"), key=lambda q: q.relative_to(root).as_posix()):
        rel = p.relative_to(root)
        if not p.is_file() or any(part.startswith(".") for part in rel.parts) or p.name in _IGNORED_NAMES:
            continue
        (weights if p.name.endswith(WEIGHT_SUFFIXES) else other).append(p)
    return weights, other


def _hash_files(root: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(p.relative_to(root).as_posix().encode())
        h.update(b"\0")
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()


def local_model_sha256(directory: str | os.PathLike) -> dict[str, str]:
    """Content hashes of a local model directory.

    Returns ``{"weights": sha256, "configs": sha256, "all": sha256}`` (64 hex chars each):
    ``weights`` over the weight files (``*.safetensors``, ``*.bin``, ``*.pt``, ``*.pth``,
    ``*.gguf``), ``configs`` over every other file of :func:`local_model_files`
    (processor, tokenizer, chat template, generation config ...), ``all`` over both (the
    identity: any byte of any of these files changed -> a different hash).  Each file
    enters as its relative path and bytes, in sorted path order.

    Raises FileNotFoundError if the directory holds no weight file.
    """
    root = Path(directory)
    weights, other = local_model_files(root)
    if not weights:
        raise FileNotFoundError(f"no weight files ({', '.join('*' + s for s in WEIGHT_SUFFIXES)}) in {root}")
    w, c = _hash_files(root, weights), _hash_files(root, other)
    return {"weights": w, "configs": c, "all": hashlib.sha256(f"{w}:{c}".encode()).hexdigest()}


def _offline() -> bool:
    return any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def resolve_hub_revision(repo_id: str, revision: str | None = None) -> tuple[str | None, str]:
    """The commit sha a hub model id (and optional branch/tag/sha) resolves to, and how.

    Returns ``(sha or None, how)``; ``how`` is ``"given"`` (``revision`` already a
    40-hex commit), ``"hub"`` (asked with ``huggingface_hub.HfApi().model_info`` while
    online), ``"local-cache"`` (the ref recorded in the local hub cache, offline or when
    the hub is unreachable) or ``"unresolved"`` (neither: the identity is the name only).
    Never raises for a network problem.
    """
    rev = revision or "main"
    if len(rev) == 40 and all(c in "0123456789abcdef" for c in rev.lower()):
        return rev.lower(), "given"
    if not _offline():
        try:
            from huggingface_hub import HfApi

            sha = HfApi().model_info(repo_id, revision=rev).sha
            if sha:
                return str(sha), "hub"
        except Exception:  # offline, unreachable, private: fall back to the local cache
            pass
    try:
        from huggingface_hub import constants

        ref = Path(constants.HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}" / "refs" / rev
        if ref.is_file():
            sha = ref.read_text().strip()
            if sha:
                return sha, "local-cache"
    except Exception:
        pass
    return None, "unresolved"


NAME_LIKE_FIELDS = frozenset({"id", "object", "owned_by", "root", "parent"})
"""``/models`` fields that only repeat a name or a path: they enter the identity hash but do
not tell two models served under one name apart."""

VOLATILE_FIELDS = frozenset({"status", "permission"})
"""``/models`` fields that change between two identical queries (``transformers serve``'s
loaded/unloaded ``status``; vLLM's ``permission`` carries a fresh random id per request):
left out of the identity."""


def server_model_identity(entry: dict | None, now: float | None = None) -> tuple[dict, bool]:
    """(identity fields, distinguishing) from one ``/models`` entry of a server.

    Identity fields: every field of ``entry`` except :data:`VOLATILE_FIELDS`, and except
    ``created`` when it is 0/absent or within 600 s of ``now`` (vLLM and SGLang report
    the time of the request there, not a checkpoint date).  ``distinguishing`` is True
    when a non-empty field beyond :data:`NAME_LIKE_FIELDS` remains (a checkpoint date, a
    digest, llama.cpp's ``meta`` with parameter count and size ...): only then can a
    model swapped behind the same name change the identity.  ``entry=None`` (no list,
    model not listed) gives ``({}, False)``.
    """
    if not isinstance(entry, dict):
        return {}, False
    now = time.time() if now is None else now
    fields: dict[str, Any] = {}
    for k, v in entry.items():
        if k in VOLATILE_FIELDS:
            continue
        if k == "created":
            try:
                c = float(v)
            except (TypeError, ValueError):
                continue
            if c == 0 or abs(c - now) < 600:
                continue
        fields[k] = v
    try:
        json.dumps(fields, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        fields = {k: str(v) for k, v in fields.items()}
    distinguishing = any(k not in NAME_LIKE_FIELDS and v not in (None, "", 0, [], {}) for k, v in fields.items())
    return fields, distinguishing
