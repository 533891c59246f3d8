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
import base64
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np
from PIL import Image

from ..core.text import model_text
from ..seeding import image_sha256
from .base import (FOLLOW_UP_TURN, VLM, AnswerBudget, BatchedDistributions, DistributionAndFollowUp, Encoder,
                   FirstTokenDistribution, FollowUpTurn, Identified, PartialAnswers, TextEncoder, TokenDistribution,
                   TopLogprobsLimit, VerifiesCacheHits, VisionFeatures, VLMRequest, answer_budget)

__all__ = ["SCHEMA_VERSION", "CACHE_MODES", "CACHE_ENV", "ResponseCache", "CachedVLM", "StaleCacheError",
           "image_sha256", "canonical_json", "response_cache_dir", "with_response_cache", "dist_to_meta",
           "dist_from_meta"]

CACHE_ENV = "PERCEPTBENCH_RESPONSE_CACHE"

SCHEMA_VERSION = 1

CACHE_MODES = ("use", "refresh", "off")
"""``use``: answer from the cache, store misses; ``refresh``: never read, (over)write every
answer; ``off``: neither read nor write (``run --no-cache``)."""


def response_cache_dir() -> Path:
    """``PERCEPTBENCH_RESPONSE_CACHE`` or ``<PERCEPTBENCH_CACHE or ~/.cache/perceptbench>/responses``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    from ..sources.fetch import cache_dir

    return cache_dir() / "responses"


def dist_to_meta(d: TokenDistribution, source: str) -> dict:
    """A distribution as JSON-able keys (ids, tokens, logprobs, complete, ``distribution_source``):
    the ``run_meta.vsi`` fields of a VSI record and the text of a cached distribution."""
    return {"token_ids": None if d.token_ids is None else [int(i) for i in d.token_ids],
            "tokens": [model_text(str(t)) for t in d.tokens], "logprobs": [float(x) for x in np.asarray(d.logprobs)],
            "complete": bool(d.complete), "distribution_source": source}


def dist_from_meta(m: dict) -> TokenDistribution:
    """Inverse of :func:`dist_to_meta` (exact: JSON floats round-trip); ``KeyError``/``TypeError``/
    ``ValueError`` on a malformed dict."""
    return TokenDistribution(tuple(m["tokens"]), np.asarray(m["logprobs"], dtype=np.float64), bool(m["complete"]),
                             None if m["token_ids"] is None else tuple(int(i) for i in m["token_ids"]))


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
        small model's forward passes, ``benchmarks/bench_vsi.py``).  The temporary file is
        ``.<key[:8]>.<random>.tmp`` beside the entry (hidden; left behind only by a killed writer,
        and never read as an entry).  Entries are UTF-8 whatever the locale.
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


def _shas(images: Sequence[Image.Image], given: Sequence[str] | None) -> list[str]:
    shas = list(given) if given is not None else [image_sha256(im) for im in images]
    if len(shas) != len(images):
        raise ValueError("one sha256 per attached image is required")
    return shas


def _per_request(requests: Sequence[VLMRequest], image_sha256s: Sequence[Sequence[str]] | None) -> list[list[str]]:
    if image_sha256s is not None and len(image_sha256s) != len(requests):
        raise ValueError("image_sha256s must have one entry per request")
    return [_shas(r.images, None if image_sha256s is None else image_sha256s[i]) for i, r in enumerate(requests)]


class CachedVLM:
    """A model wrapper that answers from a :class:`ResponseCache` and calls the inner model only
    for misses, under one cache policy (``mode``, one of :data:`CACHE_MODES`) for every call.

    ``CachedVLM(model, cache, mode=...)`` builds an instance of a class made for the inner
    model's capabilities (:mod:`perceptbench.models.base` protocols): the wrapper implements
    exactly the protocols the inner model implements (``isinstance(CachedVLM(m, c), P) ==
    isinstance(m, P)``), so no caller unwraps it.  Cached calls and their keys
    (:meth:`ResponseCache.key_for` over the model version, a prompt, the image hashes and
    settings):

    * :meth:`generate` (answering): the prompt, settings = the model's ``generation_settings`` +
      ``request_max_new_tokens``; with ``budget_in_key`` (VSI clean answers) also
      ``max_new_tokens`` = the budget used (:func:`~perceptbench.models.base.answer_budget`)
      and a non-empty ``answer_prefix``.
    * distributions (:meth:`next_token_distribution`, :meth:`next_token_distributions`, the
      distribution half of :meth:`generate_with_distribution`): the prompt, settings =
      ``generation_settings`` + ``{"vsi_first_token": {"top_k", "answer_prefix"}}``; the text is
      :func:`dist_to_meta` JSON.
    * follow-up answers (:meth:`generate_follow_up`): the whole conversation (``{"turns":
      [prompt, answer_prefix + answer.strip(), follow_up], "confidence_turn": FOLLOW_UP_TURN}``),
      settings + ``request_max_new_tokens``, ``max_new_tokens`` (budget), ``confidence_turn``.
    * features (:meth:`vision_features`, :meth:`embed`): the images of one call in order (a hit
      returns that call's exact array), prompt ``""``, settings ``{"features": hook, ...}``; the
      text is ``{"shape", "dtype", "b64"}`` JSON of the float32 array.

    ``use`` reads and stores misses; ``refresh`` never reads, asks the model again and
    overwrites; ``off`` neither reads nor writes.  ``calls`` counts requests the inner model
    answered (a VSI clean answer with its distribution is one request), ``hits`` requests
    answered from the cache.  ``embed_text`` and ``answer_budget`` pass through uncached.

    When the inner model's identity is its name only and its answers are deterministic
    (:class:`~perceptbench.models.base.VerifiesCacheHits`), the first cache hit of
    :meth:`generate` is re-asked live (one extra call, counted in ``calls`` and ``verified``);
    a different answer raises :class:`StaleCacheError` instead of serving stale answers.
    """

    _classes: ClassVar[dict[tuple, type]] = {}

    def __new__(cls, vlm: Any, cache: ResponseCache, chunk_size: int = 64, mode: str = "use"):
        if cls is CachedVLM:
            mixins = tuple(m for proto, m in _CAPABILITIES if isinstance(vlm, proto))
            cls = CachedVLM._classes.get(mixins)
            if cls is None:
                name = "CachedVLM[" + ",".join(m.__name__.lstrip("_") for m in mixins) + "]"
                cls = CachedVLM._classes[mixins] = type(name, (*mixins, CachedVLM), {"__doc__": CachedVLM.__doc__})
        return object.__new__(cls)

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

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model_version(self) -> str:
        return self.inner.model_version

    @property
    def family(self) -> str:
        return self.inner.family

    def __repr__(self) -> str:
        return f"CachedVLM({self.inner!r}, {self.cache!r})"

    # the one cache policy: every cached call reads and writes through these two
    def _read(self, key: str) -> str | None:
        return self.cache.get(key) if self.mode == "use" else None

    def _write(self, key: str, text: str, meta: dict, fsync: bool = False) -> None:
        if self.mode != "off":
            self.cache.put(key, text, meta=meta, fsync=fsync)

    def _settings(self) -> dict:
        return dict(self.inner.generation_settings) if isinstance(self.inner, VLM) else {}

    @property
    def distribution_source(self) -> str:
        """``"hf_logits"`` (the model's own logits, :class:`BatchedDistributions`) or
        ``"api_top_logprobs"`` (a provider's top-k logprobs), as recorded and cached."""
        return "hf_logits" if isinstance(self.inner, BatchedDistributions) else "api_top_logprobs"

    # ----------------------------------------------------------- distributions
    def _dist_key(self, prompt: str, shas: Sequence[str], top_k: int | None, answer_prefix: str) -> str:
        settings = dict(self._settings(), vsi_first_token={"top_k": top_k, "answer_prefix": answer_prefix})
        return self.cache.key_for(self.inner.model_version, prompt, shas, settings)

    def _read_dist(self, key: str) -> TokenDistribution | None:
        t = self._read(key)
        if t is None:
            return None
        try:
            return dist_from_meta(json.loads(t))
        except (ValueError, KeyError, TypeError):
            return None

    def _write_dist(self, key: str, d: TokenDistribution) -> None:
        self._write(key, json.dumps(dist_to_meta(d, self.distribution_source)),
                    {"model_version": self.inner.model_version, "kind": "vsi_first_token"})

    def _budget_key(self, req: VLMRequest, shas: Sequence[str], answer_prefix: str) -> str:
        settings = dict(self._settings(), request_max_new_tokens=int(req.max_new_tokens),
                        max_new_tokens=answer_budget(self.inner, req.max_new_tokens))
        if answer_prefix:  # a prefixed answer is another request: key it apart
            settings["answer_prefix"] = answer_prefix
        return self.cache.key_for(self.inner.model_version, req.prompt, shas, settings)

    def _follow_up_key(self, req: VLMRequest, shas: Sequence[str], answer: str, follow_up: str,
                       max_new_tokens: int, answer_prefix: str) -> str:
        conv = json.dumps({"turns": [req.prompt, answer_prefix + answer.strip(), follow_up],
                           "confidence_turn": FOLLOW_UP_TURN})
        settings = dict(self._settings(), request_max_new_tokens=max_new_tokens,
                        max_new_tokens=answer_budget(self.inner, max_new_tokens), confidence_turn=FOLLOW_UP_TURN)
        return self.cache.key_for(self.inner.model_version, conv, shas, settings)

    def _write_follow_up(self, key: str, text: str) -> None:
        self._write(key, text, {"model_version": self.inner.model_version, "kind": "vsi_confidence"})

    # ----------------------------------------------------------------- features
    def _cached_array(self, hook: str, images: Sequence[Image.Image], settings: dict, compute) -> np.ndarray:
        imgs = list(images)
        key = self.cache.key_for(self.inner.model_version, "", [image_sha256(im) for im in imgs],
                                 dict(self._settings(), features=hook, **settings))
        t = self._read(key)
        if t is not None:
            try:
                e = json.loads(t)
                arr = np.frombuffer(base64.b64decode(e["b64"]), dtype=e["dtype"]).reshape(e["shape"])
                self.hits += 1
                return arr.copy()
            except (ValueError, KeyError, TypeError):
                pass
        arr = np.ascontiguousarray(np.asarray(compute(imgs), dtype=np.float32))
        self.calls += 1
        self._write(key, json.dumps({"shape": list(arr.shape), "dtype": "float32",
                                     "b64": base64.b64encode(arr.tobytes()).decode("ascii")}),
                    {"model_version": self.inner.model_version, "kind": f"features:{hook}"})
        return arr


class _Answering:
    """:class:`~perceptbench.models.base.VLM`, cached."""

    @property
    def supports_multi_image(self) -> bool:
        return self.inner.supports_multi_image

    @property
    def generation_settings(self) -> dict:
        return self.inner.generation_settings

    def request_settings(self, request: VLMRequest) -> dict:
        """Settings that enter the key: the model's plus the request's max_new_tokens, and its
        ``sample_seed`` when it has one (a sampled answer: each repetition its own entry)."""
        out = dict(self.inner.generation_settings, request_max_new_tokens=int(request.max_new_tokens))
        if request.sample_seed is not None:  # greedy requests keep the keys they always had
            out["sample_seed"] = int(request.sample_seed)
        return out

    def key_for_request(self, request: VLMRequest, image_sha256s: Sequence[str] | None = None) -> str:
        """Cache key of one :meth:`generate` request (image hashes computed from pixels if not given)."""
        return self.cache.key_for(self.inner.model_version, request.prompt, _shas(request.images, image_sha256s),
                                  self.request_settings(request))

    def generate(self, requests: Sequence[VLMRequest], batch_size: int = 8,
                 image_sha256s: Sequence[Sequence[str]] | None = None, *, budget_in_key: bool = False) -> list[str]:
        """Answers in order; cached ones without calling the inner model.

        ``image_sha256s``: optional per-request lists of stimulus sha256s (as recorded by the
        stimulus pipeline) to key on instead of pixel hashes.  ``budget_in_key``: key the budget
        used too (VSI clean answers, see the class docstring).  Identical requests are sent to
        the inner model once; misses go in chunks of ``chunk_size``, stored after each chunk.  The
        inner model's texts are normalised (:func:`~perceptbench.core.text.model_text`) before they
        are stored or returned, so the cache and the records hold the same text.  When the inner
        model raises :class:`~perceptbench.models.base.PartialAnswers`, the answers that arrived
        are stored and a ``PartialAnswers`` over *these* requests is raised (None where no answer
        is known: failed, or in a chunk not sent).  An answer the inner model returns as None
        without raising is returned as ``""``, neither stored nor counted in ``calls``."""
        reqs = list(requests)
        shas = _per_request(reqs, image_sha256s)
        keys = [self._budget_key(r, s, "") if budget_in_key else self.key_for_request(r, s) for r, s in zip(reqs, shas)]
        out: list[str | None] = [self._read(k) for k in keys]
        self.hits += sum(x is not None for x in out)
        if isinstance(self.inner, VerifiesCacheHits) and self.inner.verify_cache_hits and not self.verified:
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
            failed = None
            try:
                texts = self.inner.generate([reqs[i] for _, i in chunk], batch_size=batch_size)
            except PartialAnswers as e:  # keep (store) what arrived, then say what failed
                texts, failed = e.answers, e.error
            texts = [None if t is None else model_text(t) for t in texts]
            if len(texts) != len(chunk):
                raise RuntimeError(f"inner model returned {len(texts)} answers for {len(chunk)} requests")
            self.calls += sum(t is not None for t in texts)
            for (k, i), text in zip(chunk, texts):
                if text is None:
                    continue
                r = reqs[i]
                if budget_in_key:
                    meta = {"model_version": self.inner.model_version}
                else:
                    meta = {"model": self.inner.name, "model_version": self.inner.model_version,
                            "prompt_sha256": hashlib.sha256(r.prompt.encode("utf-8")).hexdigest(),
                            "generation_settings": self.request_settings(r)}
                self._write(k, text, meta, fsync=not budget_in_key)
                for j, kj in enumerate(keys):
                    if kj == k and out[j] is None:
                        out[j] = text
            if failed is not None:
                raise PartialAnswers(out, failed) from failed
        return [x if x is not None else "" for x in out]

    def _verify(self, request: VLMRequest, cached: str) -> None:
        live = [model_text(t) for t in self.inner.generate([request], batch_size=1)]
        self.calls += 1
        self.verified += 1
        if len(live) != 1 or live[0] != cached:
            now = live[0] if live else ""
            raise StaleCacheError(
                f"{self.inner.name}: a cached answer differs from what {self.inner.model_version} answers now "
                f"(cached {cached[:40]!r}, now {now[:40]!r}): the model behind this name changed (or it is not "
                "deterministic); rerun with --refresh-cache, or pin the version (URL#MODEL@VERSION)")


class _FirstToken:
    """:class:`~perceptbench.models.base.FirstTokenDistribution`, cached."""

    def next_token_distribution(self, image, prompt: str, top_k: int | None = None,
                                image_sha256s: Sequence[str] | None = None) -> TokenDistribution:
        """The inner model's distribution (``top_k`` as asked), from the cache when stored."""
        imgs = () if image is None else (tuple(image) if isinstance(image, (list, tuple)) else (image,))
        key = self._dist_key(prompt, _shas(imgs, image_sha256s), top_k, "")
        d = self._read_dist(key)
        if d is not None:
            self.hits += 1
            return d
        d = self.inner.next_token_distribution(image, prompt, top_k=top_k)
        self.calls += 1
        self._write_dist(key, d)
        return d


class _Batched:
    """:class:`~perceptbench.models.base.BatchedDistributions`, cached."""

    def next_token_distributions(self, requests: Sequence[VLMRequest], top_k: int | None = 50, batch_size: int = 8,
                                 answer_prefix: str = "", image_sha256s: Sequence[Sequence[str]] | None = None
                                 ) -> list[TokenDistribution]:
        """One distribution per request; only misses reach the inner model (one batched call)."""
        reqs = list(requests)
        keys = [self._dist_key(r.prompt, s, top_k, answer_prefix) for r, s in zip(reqs, _per_request(reqs, image_sha256s))]
        out = [self._read_dist(k) for k in keys]
        todo = [i for i, d in enumerate(out) if d is None]
        self.hits += len(reqs) - len(todo)
        if todo:
            res = self.inner.next_token_distributions([reqs[i] for i in todo], top_k=top_k, batch_size=batch_size,
                                                      answer_prefix=answer_prefix)
            self.calls += len(todo)
            for i, d in zip(todo, res):
                out[i] = d
                self._write_dist(keys[i], d)
        return out  # type: ignore[return-value]

    def generate_with_distribution(self, requests: Sequence[VLMRequest], top_k: int | None = 50, batch_size: int = 8,
                                   answer_prefix: str = "", image_sha256s: Sequence[Sequence[str]] | None = None
                                   ) -> list[tuple[str, TokenDistribution]]:
        """(answer, distribution) per request; a request whose answer or distribution is not
        stored is asked again for both."""
        reqs = list(requests)
        shas = _per_request(reqs, image_sha256s)
        tkeys = [self._budget_key(r, s, answer_prefix) for r, s in zip(reqs, shas)]
        dkeys = [self._dist_key(r.prompt, s, top_k, answer_prefix) for r, s in zip(reqs, shas)]
        texts, dists = [self._read(k) for k in tkeys], [self._read_dist(k) for k in dkeys]
        todo = [i for i in range(len(reqs)) if texts[i] is None or dists[i] is None]
        self.hits += len(reqs) - len(todo)
        if todo:
            res = self.inner.generate_with_distribution([reqs[i] for i in todo], top_k=top_k, batch_size=batch_size,
                                                        answer_prefix=answer_prefix)
            self.calls += len(todo)
            for i, (t, d) in zip(todo, res):
                texts[i], dists[i] = t, d
                self._write(tkeys[i], t, {"model_version": self.inner.model_version})
                self._write_dist(dkeys[i], d)
        return list(zip(texts, dists))  # type: ignore[arg-type]


class _FollowUp:
    """:class:`~perceptbench.models.base.FollowUpTurn`, cached (keyed on the whole conversation)."""

    def generate_follow_up(self, requests: Sequence[VLMRequest], answers: Sequence[str], follow_up: str,
                           max_new_tokens: int = 8, batch_size: int = 8, answer_prefix: str = "",
                           image_sha256s: Sequence[Sequence[str]] | None = None) -> list:
        """One answer per request: a ``str`` when served from the cache, else what the inner model
        returned (``str`` or an object with ``text`` and ``cache_reused``)."""
        reqs = list(requests)
        keys = [self._follow_up_key(r, s, a, follow_up, max_new_tokens, answer_prefix)
                for r, s, a in zip(reqs, _per_request(reqs, image_sha256s), answers)]
        out: list = [self._read(k) for k in keys]
        todo = [i for i, x in enumerate(out) if x is None]
        self.hits += len(reqs) - len(todo)
        if todo:
            res = self.inner.generate_follow_up([reqs[i] for i in todo], [answers[i] for i in todo], follow_up,
                                                max_new_tokens, batch_size=batch_size, answer_prefix=answer_prefix)
            self.calls += len(todo)
            for i, f in zip(todo, res):
                out[i] = f
                self._write_follow_up(keys[i], f if isinstance(f, str) else f.text)
        return out


class _DistributionAndFollowUp:
    """:class:`~perceptbench.models.base.DistributionAndFollowUp`, cached: the answer and distribution
    as :meth:`generate_with_distribution`, the follow-up as :meth:`generate_follow_up`."""

    def generate_with_distribution_and_follow_up(
            self, requests: Sequence[VLMRequest], follow_up: str, follow_up_max_new_tokens: int = 8,
            top_k: int | None = 50, batch_size: int = 8, answer_prefix: str = "",
            image_sha256s: Sequence[Sequence[str]] | None = None) -> list[tuple]:
        """(answer, distribution, follow-up answer) per request.  A request whose answer or
        distribution is not stored is asked again for all three in one pass; one with both stored
        but no follow-up answer gets the follow-up turn alone (:meth:`generate_follow_up` of the
        inner model when it has one).  A follow-up answer from the cache is a ``str``."""
        reqs = list(requests)
        shas = _per_request(reqs, image_sha256s)
        tkeys = [self._budget_key(r, s, answer_prefix) for r, s in zip(reqs, shas)]
        dkeys = [self._dist_key(r.prompt, s, top_k, answer_prefix) for r, s in zip(reqs, shas)]
        texts, dists = [self._read(k) for k in tkeys], [self._read_dist(k) for k in dkeys]
        fkey = lambda i: self._follow_up_key(reqs[i], shas[i], texts[i], follow_up,  # noqa: E731
                                             follow_up_max_new_tokens, answer_prefix)
        fols: list = [None if t is None else self._read(fkey(i)) for i, t in enumerate(texts)]
        single = isinstance(self.inner, FollowUpTurn)
        full = [i for i in range(len(reqs)) if texts[i] is None or dists[i] is None
                or (fols[i] is None and not single)]
        need_f = [i for i in range(len(reqs)) if i not in full and fols[i] is None]
        # requests counted: the clean one and the follow-up one per request; the combined pass asks
        # both again (also a follow-up stored for a stored answer whose distribution is missing)
        self.hits += (len(reqs) - len(full)) + sum(fols[i] is not None for i in range(len(reqs)) if i not in full)
        self.calls += 2 * len(full) + len(need_f)
        if full:
            res = self.inner.generate_with_distribution_and_follow_up(
                [reqs[i] for i in full], follow_up, follow_up_max_new_tokens, top_k=top_k, batch_size=batch_size,
                answer_prefix=answer_prefix)
            for i, (t, d, f) in zip(full, res):
                texts[i], dists[i], fols[i] = t, d, f
                self._write(tkeys[i], t, {"model_version": self.inner.model_version})
                self._write_dist(dkeys[i], d)
        if need_f:
            res = self.inner.generate_follow_up([reqs[i] for i in need_f], [texts[i] for i in need_f], follow_up,
                                                follow_up_max_new_tokens, batch_size=batch_size,
                                                answer_prefix=answer_prefix)
            for i, f in zip(need_f, res):
                fols[i] = f
        for i in full + need_f:
            self._write_follow_up(fkey(i), fols[i] if isinstance(fols[i], str) else fols[i].text)
        return list(zip(texts, dists, fols))


class _VisionFeatures:
    """:class:`~perceptbench.models.base.VisionFeatures`, cached per call."""

    def vision_features(self, images: Sequence[Image.Image]) -> np.ndarray:
        """The inner model's ``(n, d)`` float32 features of ``images``; a stored call is served whole."""
        return self._cached_array("vision_features", images, {}, self.inner.vision_features)


class _Embed:
    """:class:`~perceptbench.models.base.Encoder`, cached per call (``batch_size`` enters the key:
    batching changes embeddings by float rounding)."""

    def embed(self, images: Sequence[Image.Image], batch_size: int = 8) -> np.ndarray:
        """The inner encoder's ``(n, d)`` float32 embeddings of ``images``."""
        return self._cached_array("embed", images, {"batch_size": int(batch_size)},
                                  lambda imgs: self.inner.embed(imgs, batch_size=batch_size))


class _EmbedText:
    """:class:`~perceptbench.models.base.TextEncoder`, passed through (not cached)."""

    def embed_text(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.embed_text(texts)


class _Budget:
    """:class:`~perceptbench.models.base.AnswerBudget`, passed through."""

    def answer_budget(self, request_max_new_tokens: int) -> int:
        return self.inner.answer_budget(request_max_new_tokens)


class _TopLogprobs:
    """:class:`~perceptbench.models.base.TopLogprobsLimit`, read through."""

    @property
    def max_top_logprobs(self) -> int:
        return self.inner.max_top_logprobs


class _Identity:
    """:class:`~perceptbench.models.base.Identified`, read through."""

    @property
    def identity(self) -> dict:
        return self.inner.identity

    @property
    def identity_warning(self) -> str | None:
        return self.inner.identity_warning


class _Verifies:
    """:class:`~perceptbench.models.base.VerifiesCacheHits`, read through."""

    @property
    def verify_cache_hits(self) -> bool:
        return self.inner.verify_cache_hits


_CAPABILITIES: tuple[tuple[type, type], ...] = (
    (VLM, _Answering), (FirstTokenDistribution, _FirstToken), (BatchedDistributions, _Batched),
    (FollowUpTurn, _FollowUp), (DistributionAndFollowUp, _DistributionAndFollowUp),
    (VisionFeatures, _VisionFeatures), (Encoder, _Embed), (TextEncoder, _EmbedText), (AnswerBudget, _Budget),
    (TopLogprobsLimit, _TopLogprobs), (Identified, _Identity), (VerifiesCacheHits, _Verifies))
"""Protocol -> the wrapper's implementation of it; a wrapper class gets the mixins of exactly the
protocols its inner model implements."""


def with_response_cache(model: Any, mode: str = "use") -> CachedVLM:
    """``model`` itself when it already is a :class:`CachedVLM`, else ``model`` behind the response
    cache of :func:`response_cache_dir` with cache ``mode`` (``ValueError`` for another mode)."""
    if isinstance(model, CachedVLM):
        return model
    return CachedVLM(model, ResponseCache(response_cache_dir()), mode=mode)
