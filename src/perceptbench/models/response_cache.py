"""Content-addressed cache of generated text, so a rerun or a re-score never calls a model again.

Key = sha256 (hex) of the canonical JSON (sorted keys, no whitespace, UTF-8) of::

    {"schema": SCHEMA_VERSION,
     "model_version": <VLM.model_version>,
     "prompt_sha256": sha256(prompt UTF-8),
     "image_sha256s": [perceptbench.seeding.image_sha256 of each attached image, in order],
     "generation_settings": <VLM.generation_settings + the request's max_new_tokens>}

``model_version`` is the model's identity (:mod:`perceptbench.models.identity`): for a local
directory a hash over weights and processor/tokenizer/chat-template/generation files, for a
hub id the resolved commit, for an API the URL, model, user pin and the server's
distinguishing model metadata.

One JSON file per key at ``<directory>/<key[:2]>/<key>.json`` holding ``{"schema", "key",
"text", "meta"}``; written to a temporary file in the same directory, flushed, fsynced and
moved into place with ``os.replace`` (atomic on POSIX and Windows), so a reader sees either
no file or a whole one.  A file that is torn, corrupt, of another schema or of another key
is a miss (and is overwritten by the next ``put``), never an error.

An image's key part is :func:`perceptbench.seeding.image_sha256`, the hash records carry as
``stimulus_sha256``: one image, one key, whether the caller passes the recorded hashes or the
cache hashes the request's images itself.  (Releases before this one hashed a request's images
here in another byte layout, ``b"RGB" + "WxH" + b"\0"`` + RGB bytes, on that path only; such
entries are misses now, never wrong answers.)

Pure Python + Pillow; no torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

from ..seeding import image_sha256
from .base import TokenDistribution, VLMRequest

__all__ = ["SCHEMA_VERSION", "CACHE_MODES", "ResponseCache", "CachedVLM", "StaleCacheError", "image_sha256",
           "canonical_json"]

SCHEMA_VERSION = 1

CACHE_MODES = ("use", "refresh", "off")
"""``use``: answer from the cache, store misses; ``refresh``: never read, (over)write every
answer; ``off``: neither read nor write (``run --no-cache``)."""


class StaleCacheError(RuntimeError):
    """A cached answer no longer matches what the model answers now (the model behind a
    name changed while its identity did not)."""


def canonical_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, ``(",", ":")`` separators, no NaN/inf, non-ASCII kept.

    Raises ``TypeError``/``ValueError`` for values JSON cannot represent exactly.
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class ResponseCache:
    """A directory of cached generations, one JSON file per key (see module docstring).

    Safe for concurrent readers and writers of distinct keys across processes (atomic
    replace); two writers of the same key both write the same content.
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.directory)!r})"

    @staticmethod
    def key_for(
        model_version: str,
        prompt: str,
        image_sha256s: Sequence[str],
        generation_settings: dict,
    ) -> str:
        """The cache key (64 hex chars) for one request.

        ``image_sha256s`` are the hex sha256 of the attached images, in attachment order
        (order matters).  ``generation_settings`` must be JSON-able (``TypeError``
        otherwise).
        """
        payload = {
            "schema": SCHEMA_VERSION,
            "model_version": str(model_version),
            "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
            "image_sha256s": [str(s) for s in image_sha256s],
            "generation_settings": generation_settings,
        }
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()

    def path_for(self, key: str) -> Path:
        """Where the entry for ``key`` lives (it may not exist)."""
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key (64 lowercase hex chars): {key!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get_entry(self, key: str) -> dict | None:
        """The stored ``{"schema", "key", "text", "meta"}`` dict, or None on a miss
        (no file, unreadable, torn or corrupt JSON, wrong schema or key)."""
        p = self.path_for(key)
        try:
            with open(p, "r", encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        if (
            not isinstance(data, dict)
            or data.get("schema") != SCHEMA_VERSION
            or data.get("key") != key
            or not isinstance(data.get("text"), str)
        ):
            return None
        return data

    def get(self, key: str) -> str | None:
        """The cached text for ``key`` (possibly ``""``), or None on a miss."""
        e = self.get_entry(key)
        return None if e is None else e["text"]

    def put(self, key: str, text: str, meta: dict | None = None, fsync: bool = True) -> Path:
        """Store ``text`` under ``key`` atomically (replacing any entry); returns the path.

        ``meta`` (JSON-able; e.g. model_version, settings, image hashes) is stored for
        auditing and not used for lookup.  Never put secrets in it.  ``fsync=False`` skips
        the flush to disk (the write is still atomic): after a power loss such an entry may be
        missing or empty, which :meth:`get` treats as a miss, never as a wrong answer (used by
        VSI, which writes five entries per sample: one fsync each cost more wall time than a
        small model's forward passes, ``benchmarks/bench_vsi.py``).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        p = self.path_for(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        data = canonical_json({"schema": SCHEMA_VERSION, "key": key, "text": text, "meta": meta or {}})
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:8]}.", suffix=".tmp", dir=p.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(data)
                f.flush()
                if fsync:
                    os.fsync(f.fileno())
            os.replace(tmp, p)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return p

    def __contains__(self, key: str) -> bool:
        return self.get_entry(key) is not None


class CachedVLM:
    """A :class:`~perceptbench.models.base.VLM` wrapper that answers from a
    :class:`ResponseCache` and calls the inner model only for misses.

    ``calls`` counts requests the inner model answered; ``hits`` requests answered from
    the cache.  Identical requests within one ``generate`` call are sent to the inner
    model once.  Misses go to the inner model in chunks of ``chunk_size`` and are stored
    after each chunk, so an interrupted run keeps what it finished.  ``name``,
    ``model_version``, ``family``, ``supports_multi_image`` and ``generation_settings``
    are the inner model's.  ``next_token_distribution`` is passed through uncached.

    ``mode`` is one of :data:`CACHE_MODES`.  When the inner model's identity is its name
    only and its answers are deterministic (``inner.verify_cache_hits``, e.g. a
    self-hosted OpenAI-compatible server at temperature 0 that reports nothing
    distinguishing about its model), the first cache hit of this wrapper is re-asked
    live (one extra call, counted in ``calls`` and ``verified``); a different answer
    raises :class:`StaleCacheError` instead of serving stale answers.  This detects a
    swapped model whenever it answers that one request differently; it cannot detect a
    swap that answers it identically.
    """

    def __init__(self, vlm: Any, cache: ResponseCache, chunk_size: int = 64, mode: str = "use") -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode {mode!r} not in {CACHE_MODES}")
        self.inner = vlm
        self.cache = cache
        self.chunk_size = max(1, int(chunk_size))
        self.mode = mode
        self.calls = 0
        self.hits = 0
        self.verified = 0

    # VLM attributes, read through to the inner model
    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model_version(self) -> str:
        return self.inner.model_version

    @property
    def family(self) -> str:
        return self.inner.family

    @property
    def supports_multi_image(self) -> bool:
        return self.inner.supports_multi_image

    @property
    def generation_settings(self) -> dict:
        return self.inner.generation_settings

    def __repr__(self) -> str:
        return f"CachedVLM({self.inner!r}, {self.cache!r})"

    def request_settings(self, request: VLMRequest) -> dict:
        """Settings that enter the key: the model's plus the request's max_new_tokens."""
        return dict(self.inner.generation_settings, request_max_new_tokens=int(request.max_new_tokens))

    def key_for_request(self, request: VLMRequest, image_sha256s: Sequence[str] | None = None) -> str:
        """Cache key of one request (image hashes computed from pixels if not given)."""
        shas = list(image_sha256s) if image_sha256s is not None else [image_sha256(im) for im in request.images]
        if len(shas) != len(request.images):
            raise ValueError("one sha256 per attached image is required")
        return self.cache.key_for(self.inner.model_version, request.prompt, shas, self.request_settings(request))

    def generate(
        self,
        requests: Sequence[VLMRequest],
        batch_size: int = 8,
        image_sha256s: Sequence[Sequence[str]] | None = None,
    ) -> list[str]:
        """Answers in order; cached ones without calling the inner model.

        ``image_sha256s``: optional per-request lists of stimulus sha256s (as recorded by
        the stimulus pipeline) to key on instead of pixel hashes.
        """
        reqs = list(requests)
        if image_sha256s is not None and len(image_sha256s) != len(reqs):
            raise ValueError("image_sha256s must have one entry per request")
        keys = [
            self.key_for_request(r, None if image_sha256s is None else image_sha256s[i])
            for i, r in enumerate(reqs)
        ]
        out: list[str | None] = [self.cache.get(k) if self.mode == "use" else None for k in keys]
        self.hits += sum(x is not None for x in out)
        if getattr(self.inner, "verify_cache_hits", False) and not self.verified:
            first = next((i for i, x in enumerate(out) if x is not None), None)
            if first is not None:
                self._verify(reqs[first], out[first])
        todo: dict[str, int] = {}  # key -> index of the first request with that key
        for i, (k, x) in enumerate(zip(keys, out)):
            if x is None and k not in todo:
                todo[k] = i
        pending = list(todo.items())
        for start in range(0, len(pending), self.chunk_size):
            chunk = pending[start : start + self.chunk_size]
            texts = self.inner.generate([reqs[i] for _, i in chunk], batch_size=batch_size)
            if len(texts) != len(chunk):
                raise RuntimeError(f"inner model returned {len(texts)} answers for {len(chunk)} requests")
            self.calls += len(chunk)
            for (k, i), text in zip(chunk, texts):
                r = reqs[i]
                if self.mode == "off":
                    for j, kj in enumerate(keys):
                        if kj == k and out[j] is None:
                            out[j] = text
                    continue
                self.cache.put(
                    k,
                    text,
                    meta={
                        "model": self.inner.name,
                        "model_version": self.inner.model_version,
                        "prompt_sha256": hashlib.sha256(r.prompt.encode("utf-8")).hexdigest(),
                        "generation_settings": self.request_settings(r),
                    },
                )
                for j, kj in enumerate(keys):
                    if kj == k and out[j] is None:
                        out[j] = text
        return [x if x is not None else "" for x in out]

    def _verify(self, request: VLMRequest, cached: str) -> None:
        live = self.inner.generate([request], batch_size=1)
        self.calls += 1
        self.verified += 1
        if len(live) != 1 or live[0] != cached:
            now = live[0] if live else ""
            raise StaleCacheError(
                f"{self.inner.name}: a cached answer differs from what {self.inner.model_version} answers now "
                f"(cached {cached[:40]!r}, now {now[:40]!r}): the model behind this name changed (or it is not "
                "deterministic); rerun with --refresh-cache, or pin the version (URL#MODEL@VERSION)")

    def next_token_distribution(self, image, prompt, top_k=None) -> TokenDistribution:
        """The inner model's next-token distribution (not cached)."""
        return self.inner.next_token_distribution(image, prompt, top_k=top_k)
