"""API VLMs: any OpenAI-compatible chat-completions endpoint, Anthropic, Gemini.

All three implement :class:`perceptbench.models.base.VLM` (family ``"api"``) over plain
HTTP with ``httpx`` (one sync client per adapter, requests fanned out over a thread pool
of ``concurrency`` workers) and retry with ``tenacity``:

* retried: HTTP 408, 409, 425, 429, every 5xx (incl. Anthropic's 529), timeouts and
  connection / protocol errors; exponential backoff with jitter
  (``backoff_initial * 2**attempt``, at most ``backoff_max`` seconds); a ``Retry-After``
  header (seconds or HTTP date) replaces the backoff, capped at ``retry_after_max``;
* retried the same way: a 200 response that is not a whole JSON object (truncated JSON), an
  OpenAI-compatible response without ``choices[0].message`` (an empty ``choices`` list), and a
  logprobs response without logprobs from a provider that has returned logprobs before in this
  session (issue 20 item 2; retries exhausted, that one is a
  :class:`~perceptbench.models.base.NoLogprobs`, not an :class:`APIError`; a provider that has
  never returned them is told at once with ``NoLogprobs``, not retried: whether it is
  unsupported is decided by the caller from consecutive such answers);
* not retried: other 4xx (bad request, auth, not found);
* after ``max_retries`` retries (``max_retries + 1`` attempts) an :class:`APIError` names
  the provider, the URL (never a key: every adapter sends keys in headers) and the last
  status, transport error or malformed response;
* a batch (:meth:`generate`, :meth:`generate_follow_up`) in which some requests fail for good
  raises :class:`~perceptbench.models.base.PartialAnswers` carrying the answers that arrived
  (the response cache stores them and the respondents record them before the run stops).

Decoding: temperature 0 where supported (seed 000 appendix D.4: "closed models ran
once at temperature 0 where supported").  Images go as base64 PNG: OpenAI ``image_url``
data-URL parts, Anthropic ``image`` blocks with a base64 source, Gemini ``inline_data``
parts; images come before the text, as in the human-facing protocol (appendix B).

Secrets: a key is read from its environment variable at request time only, never stored
on the adapter, and never put into ``repr``, ``generation_settings``, ``model_version``,
log messages or exception text (any echo of the key in a server's error body is
redacted).  Credentials written into a URL (``http://user:secret@host/v1``) are sent with the
request but redacted as pip does (``user:****@``, :mod:`perceptbench.core.urls`) in
``model_version``, the identity, cache entries, log lines and messages (:attr:`shown_url`).  A content-moderation refusal that arrives as a successful response is
returned as its (possibly empty) text: the parser turns it into a null response.
"""

from __future__ import annotations

import abc
import base64
import email.utils
import io
import logging
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import httpx
import numpy as np
import tenacity
from PIL import Image

from ..core.text import model_text
from ..core.urls import redact_url, redact_urls_in, split_userinfo
from .base import (ModelLoadError, NoLogprobs, NotSupportedByProvider, PartialAnswers, TokenDistribution,
                   VLMRequest)

__all__ = [
    "APIError",
    "OpenAICompatibleVLM",
    "AnthropicVLM",
    "GeminiVLM",
    "png_data_url",
    "png_base64",
]

log = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 425, 429})


class APIError(RuntimeError):
    """An API request failed for good (non-retryable status, or retries exhausted).

    Attributes: ``provider``, ``url`` (no key in it, its userinfo redacted), ``status`` (int
    or None for a transport error), ``attempts`` (requests made).  URL credentials in the
    message are redacted (:func:`perceptbench.core.urls.redact_urls_in`).
    """

    def __init__(self, message: str, *, provider: str, url: str, status: int | None, attempts: int):
        super().__init__(redact_urls_in(message))
        self.provider = provider
        self.url = redact_url(url)
        self.status = status
        self.attempts = attempts


class _Malformed(Exception):
    """Internal: a 200 response that is not what the request asks for (truncated JSON, no
    ``choices``, no logprobs after the provider returned them before): retried like a 5xx."""


class _MissingLogprobs(_Malformed):
    """Internal: a response without logprobs from a provider that returned them before; retried,
    and after the retries a :class:`~perceptbench.models.base.NoLogprobs` (the caller leaves that
    request unanswered), not an :class:`APIError`."""


class _RetryableHTTP(Exception):
    """Internal: a retryable HTTP status, carrying the parsed Retry-After (seconds)."""

    def __init__(self, status: int, body: str, retry_after: float | None):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


def png_base64(image: Image.Image) -> str:
    """Base64 (ASCII str) of the image encoded as PNG in RGB mode."""
    buf = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def png_data_url(image: Image.Image) -> str:
    """``data:image/png;base64,...`` URL of the image (OpenAI ``image_url`` parts)."""
    return "data:image/png;base64," + png_base64(image)


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    value = value.strip()
    try:
        secs = float(value)
        return max(0.0, secs) if math.isfinite(secs) else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _is_loopback(url: str) -> bool:
    """Whether ``url`` points at this machine (localhost, 127.0.0.0/8, ::1)."""
    import ipaddress

    host = httpx.URL(url).host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _is_refused(e: BaseException) -> bool:
    """Whether a transport error is a refused TCP connection (nothing listens on the port)."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, ConnectionRefusedError) or "connection refused" in str(e).lower():
            return True
        e = e.__cause__ or e.__context__
    return False


def _is_retryable_status(status: int) -> bool:
    return status in RETRY_STATUS or 500 <= status <= 599


class _HTTPVLM(abc.ABC):
    """Shared HTTP machinery: key lookup, retries, thread pool, redaction."""

    family = "api"
    supports_multi_image = True
    provider = "api"
    key_required = True

    def __init__(
        self,
        model: str,
        *,
        api_key_env: str,
        name: str | None,
        concurrency: int,
        timeout: float,
        max_retries: int,
        backoff_initial: float,
        backoff_max: float,
        retry_after_max: float,
        temperature: float | None,
        max_tokens: int | None,
        extra_body: dict | None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be >= 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = str(model)
        self.name = name or self.model
        self.api_key_env = api_key_env
        self.concurrency = int(concurrency)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff_initial = float(backoff_initial)
        self.backoff_max = float(backoff_max)
        self.retry_after_max = float(retry_after_max)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        if self.key_required and not os.environ.get(api_key_env):
            raise ModelLoadError(
                f"{self._label()} model {self.model!r}: environment variable {api_key_env} is not set (the API "
                "key is read only from the environment)"
            )
        self._retry_announced = False
        self._client = httpx.Client(
            timeout=httpx.Timeout(self.timeout),
            limits=httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency),
        )

    # ---------------------------------------------------------------- secrets
    def _key(self) -> str | None:
        return os.environ.get(self.api_key_env) or None

    def _redact(self, text: str) -> str:
        key = self._key()
        if key:
            text = text.replace(key, "***")
        return redact_urls_in(text)

    @property
    def shown_url(self) -> str:
        """The base URL as the user gave it, as records, caches and messages show it: userinfo
        redacted (:func:`perceptbench.core.urls.redact_url`)."""
        return self.__dict__.get("_shown_url") or redact_url(self.base_url)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, url={self._base_for_repr()!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    def _base_for_repr(self) -> str:  # overridden
        return ""

    def _label(self) -> str:
        """The provider as the user named it (messages only; ``provider`` stays in settings)."""
        return self.provider

    def _announce_retry(self, rs: tenacity.RetryCallState, url: str) -> None:
        """One warning line per adapter for the first retry; later retries are logged at DEBUG."""
        why = self._redact(str(rs.outcome.exception())) if rs.outcome else "?"
        if not self._retry_announced:
            self._retry_announced = True
            log.warning("%s: request to %s failed (%s); retrying quietly (up to %d retries per request, "
                        "backoff up to %.0f s)", self._label(), url, why, self.max_retries, self.backoff_max)
        else:
            log.debug("%s: attempt %d to %s failed (%s); retrying", self._label(), rs.attempt_number, url, why)

    def close(self) -> None:
        """Close the HTTP client (connections); the adapter is unusable afterwards."""
        self._client.close()

    # ----------------------------------------------------------------- retry
    def _wait(self, retry_state: tenacity.RetryCallState) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(exc, _RetryableHTTP) and exc.retry_after is not None:
            return min(exc.retry_after, self.retry_after_max)
        # backoff_initial * 2**(n-1) plus up to backoff_initial of jitter, at most backoff_max
        expo = tenacity.wait_exponential(multiplier=self.backoff_initial, max=self.backoff_max)
        jitter = tenacity.wait_random(0, self.backoff_initial)
        return min(expo(retry_state) + jitter(retry_state), self.backoff_max)

    def _post_json(self, url: str, headers: dict, body: dict,
                   on_error: Callable[[int, str], None] | None = None,
                   extract: Callable[[dict], Any] | None = None) -> Any:
        """POST ``body`` as JSON with retries; returns the decoded JSON object, or what
        ``extract(data)`` returns from it.

        ``on_error(status, body_text)`` may raise a more specific exception for a
        non-retryable status before the generic :class:`APIError`.  ``extract`` raises
        :class:`_Malformed` for a response that lacks what was asked (retried like a 5xx); a
        200 response that is not a JSON object is retried the same way.
        """
        attempts = 0

        def once() -> dict:
            nonlocal attempts
            attempts += 1
            try:
                resp = self._client.post(url, headers=headers, json=body)
            except httpx.ConnectError as e:
                if _is_loopback(url) and _is_refused(e):
                    raise APIError(
                        f"{self._label()}: nothing is listening at {url} (connection refused on a loopback "
                        "address; not retried). Start the server first (e.g. `transformers serve DIR --port P`, "
                        "ready when GET /health answers 200) or check the URL and port.",
                        provider=self.provider, url=url, status=None, attempts=attempts,
                    ) from None
                raise
            if resp.status_code >= 400:
                text = self._redact(resp.text[:500])
                if _is_retryable_status(resp.status_code):
                    raise _RetryableHTTP(resp.status_code, text, _parse_retry_after(resp.headers.get("retry-after")))
                if on_error is not None:
                    on_error(resp.status_code, text)
                raise APIError(
                    self._redact(
                        f"{self._label()} request to {url} failed with HTTP {resp.status_code} "
                        f"(not retried): {text}"
                    ),
                    provider=self.provider, url=url, status=resp.status_code, attempts=attempts,
                )
            try:
                data = resp.json()
            except ValueError:
                data = None
            if not isinstance(data, dict):  # truncated or not JSON at all
                raise _Malformed(f"a response that is not a JSON object ({len(resp.content)} bytes: "
                                 f"{self._redact(resp.text[:120])!r})")
            return data if extract is None else extract(data)

        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(
                (_RetryableHTTP, _Malformed, httpx.TimeoutException, httpx.TransportError)
            ),
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            before_sleep=lambda rs: self._announce_retry(rs, redact_url(url)),
            reraise=True,
        )
        try:
            return retrying(once)
        except _RetryableHTTP as e:
            raise APIError(
                self._redact(
                    f"{self._label()} request to {url} failed with HTTP {e.status} after {attempts} "
                    f"attempts ({self.max_retries} retries): {e.body[:300]}"
                ),
                provider=self.provider, url=url, status=e.status, attempts=attempts,
            ) from None
        except _MissingLogprobs as e:
            raise NoLogprobs(self._redact(f"{self._label()} response from {url} without logprobs after {attempts} "
                                          f"attempts ({self.max_retries} retries): {e}")) from None
        except _Malformed as e:
            raise APIError(
                self._redact(f"{self._label()} response from {url} was malformed after {attempts} attempts "
                             f"({self.max_retries} retries): {e}"),
                provider=self.provider, url=url, status=200, attempts=attempts,
            ) from None
        except (httpx.TimeoutException, httpx.TransportError) as e:
            raise APIError(
                self._redact(
                    f"{self._label()} request to {url} failed after {attempts} attempts "
                    f"({self.max_retries} retries): {type(e).__name__}: {e}"
                ),
                provider=self.provider, url=url, status=None, attempts=attempts,
            ) from None

    # ------------------------------------------------------------- logprobs
    def _logprobs_or_glitch(self, entries: Any, data: dict) -> list:
        """``entries`` (a response's top-logprob list) when not empty.  Else, once this adapter
        has received logprobs before, a glitch (:class:`_Malformed`, retried); before that,
        :class:`~perceptbench.models.base.NoLogprobs` at once (a server that ignores ``logprobs``
        is not asked ``max_retries`` more times per request)."""
        if isinstance(entries, list) and entries:
            return entries
        if getattr(self, "_logprobs_seen", False):
            raise _MissingLogprobs(f"no logprobs in a response (this server returned them before): "
                             f"{self._redact(str(data)[:160])}")
        raise NoLogprobs(f"{self._label()} server at {self._base_for_repr()} (model {self.model!r}) returned no "
                         "logprobs for logprobs=true/top_logprobs; its next-token distribution is unavailable")

    def _seen(self, d: TokenDistribution) -> TokenDistribution:
        """``d``, noting that this provider returns logprobs (later responses without them are
        glitches, retried)."""
        self._logprobs_seen = True
        return d

    # -------------------------------------------------------------- interface
    @abc.abstractmethod
    def _generate_one(self, request: VLMRequest, turns: Sequence[tuple[str, str]] = ()) -> str:
        """One request -> the provider's answer text (each provider's request shape)."""

    def answer_budget(self, request_max_new_tokens: int) -> int:
        """New tokens a request gets (:class:`~perceptbench.models.base.AnswerBudget`): a set
        ``max_tokens`` replaces the request's ``max_new_tokens``."""
        return int(self.max_tokens) if self.max_tokens is not None else int(request_max_new_tokens)

    def _budget(self, request: VLMRequest) -> int:
        return self.answer_budget(request.max_new_tokens)

    def generate(self, requests: Sequence[VLMRequest], batch_size: int = 8) -> list[str]:
        """Answers, one string per request, in order; ``concurrency`` requests in flight.

        ``batch_size`` is accepted for interface compatibility and ignored (each request
        is one HTTP call).  Raises :class:`APIError` when every request fails for good,
        :class:`~perceptbench.models.base.PartialAnswers` when some do.
        """
        return self._each(self._generate_one, list(requests))

    def _each(self, fn: Callable[[Any], str], jobs: list) -> list[str]:
        """``fn`` over ``jobs``, ``concurrency`` in flight, answers in order.  When some fail for
        good (:class:`APIError`) and others were answered: :class:`PartialAnswers` (in sequence,
        the jobs after the first failure are not sent); when all fail: the first error."""
        if not jobs:
            return []
        out: list = [None] * len(jobs)
        first: APIError | None = None
        if len(jobs) == 1 or self.concurrency == 1:
            for i, job in enumerate(jobs):
                try:
                    out[i] = fn(job)
                except APIError as e:
                    first = e
                    break
        else:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(jobs))) as pool:
                futures = [pool.submit(fn, job) for job in jobs]
                for i, f in enumerate(futures):
                    try:
                        out[i] = f.result()
                    except APIError as e:
                        first = first or e
        if first is not None:
            if all(a is None for a in out):
                raise first
            raise PartialAnswers(out, first) from first
        return out

    def generate_follow_up(self, requests: Sequence[VLMRequest], answers: Sequence[str], follow_up: str,
                           max_new_tokens: int = 8, batch_size: int = 8, answer_prefix: str = "") -> list[str]:
        """Answers to a follow-up user turn: the conversation ``user: [images] + request.prompt``,
        ``assistant: answer_prefix + answer.strip()``, ``user: follow_up`` (VSI's verbalised
        confidence, seed 002 appendix A).  One HTTP call per request, ``concurrency`` in flight;
        ``batch_size`` is ignored.  Raises as :meth:`generate`."""
        jobs = [(VLMRequest(r.images, r.prompt, max_new_tokens), answer_prefix + a.strip())
                for r, a in zip(requests, answers)]
        return self._each(lambda job: self._generate_one(job[0], turns=((job[1], follow_up),)), jobs)

    def _pin(self, version: str | None) -> None:
        """Identity of a hosted model known by name (and an optional user pin) only."""
        self.pinned_version = version or None
        self.identity_by_name_only = not self.pinned_version
        self.verify_cache_hits = False  # hosted APIs are not deterministic: a re-asked answer proves nothing
        self.identity = {"kind": "api", "url": self.shown_url, "model": self.model,
                         "pinned_version": self.pinned_version}
        self.identity_warning = None if self.pinned_version else (
            f"{self.provider}:{self.model}: the provider may update the model behind this name; cached answers "
            f"are matched by name only (pin one with {self.provider}:{self.model}@VERSION, or --refresh-cache)")

    def _settings(self, **extra: Any) -> dict:
        s = {
            "provider": self.provider,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.extra_body:
            s["extra_body"] = self.extra_body
        s.update(extra)
        return s


class OpenAICompatibleVLM(_HTTPVLM):
    """Any OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, SGLang, Ollama,
    llama.cpp server, LM Studio, ``transformers serve``).

    Parameters
    ----------
    base_url:
        Up to and including the API version, e.g. ``"https://api.openai.com/v1"`` or
        ``"http://127.0.0.1:8000/v1"``; ``/chat/completions`` is appended.
    model:
        The ``model`` field of each request.
    api_key_env:
        Environment variable holding the key, sent as ``Authorization: Bearer``.  For
        local servers the variable may be unset (no header is sent).
    concurrency, timeout (seconds per request), max_retries (retries after the first
        attempt), backoff_initial / backoff_max / retry_after_max (seconds):
        see the module docstring.
    temperature:
        0.0 by default; ``None`` omits the field (models that reject it).
    max_tokens:
        Output budget per request; ``None`` uses each request's ``max_new_tokens``.
    max_tokens_field:
        ``"max_tokens"`` (default) or ``"max_completion_tokens"`` (newer OpenAI models).
    extra_body:
        Extra JSON fields merged into every request body (e.g. ``{"reasoning_effort":
        "low"}``); recorded in ``generation_settings``.
    max_top_logprobs:
        Largest ``top_logprobs`` the provider accepts (OpenAI: 20).
    require_key:
        If True, a missing ``api_key_env`` variable raises :class:`ModelLoadError` at
        construction (use for hosted APIs such as OpenAI's; local servers need no key).
    version:
        A version the user pins (``openai-compatible:URL#MODEL@VERSION``): part of
        ``model_version`` and so of every cache key; never sent to the server.
    query_server:
        Ask ``GET {base_url}/models`` (then ``/models/{model}``) once at construction for
        the model's metadata (default True).

    Attributes
    ----------
    model_version:
        ``URL#MODEL`` [``@VERSION``] [``+server:<12 hex>``]: the last part is a hash of the
        server's model metadata when it holds anything beyond the name (see
        :func:`perceptbench.models.identity.server_model_identity`).
    identity_by_name_only, identity_warning:
        True (and a one-line warning) when neither a pin nor the server's metadata can
        tell a model swapped behind the same name; ``verify_cache_hits`` is then True for
        a self-hosted server at temperature 0 (the response cache re-asks one cached
        request per run and stops if the answer changed).
    """

    provider = "openai-compatible"
    key_required = False

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 4,
        timeout: float = 60,
        max_retries: int = 5,
        *,
        name: str | None = None,
        backoff_initial: float = 1.0,
        backoff_max: float = 30.0,
        retry_after_max: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        max_tokens_field: str = "max_tokens",
        extra_body: dict | None = None,
        max_top_logprobs: int = 20,
        require_key: bool = False,
        version: str | None = None,
        query_server: bool = True,
    ) -> None:
        given = str(base_url).rstrip("/")
        # credentials in the URL go as Basic auth: the URL requested (and logged by httpx) has none
        self.base_url, url_auth = split_userinfo(given)
        self._shown_url = redact_url(given)
        self._provider_label = "openai" if httpx.URL(self.base_url).host == "api.openai.com" else self.provider
        self.max_tokens_field = max_tokens_field
        self.key_required = bool(require_key)
        self.max_top_logprobs = int(max_top_logprobs)
        super().__init__(
            model, api_key_env=api_key_env, name=name, concurrency=concurrency, timeout=timeout,
            max_retries=max_retries, backoff_initial=backoff_initial, backoff_max=backoff_max,
            retry_after_max=retry_after_max, temperature=temperature, max_tokens=max_tokens,
            extra_body=extra_body,
        )
        self.url = self.base_url + "/chat/completions"
        if url_auth is not None:
            self._client.auth = httpx.BasicAuth(*url_auth)
        self.generation_settings = self._settings(max_tokens_field=max_tokens_field)
        self._set_identity(version, self._fetch_model_entry() if query_server else (None, "not queried"))

    # --------------------------------------------------------------- identity
    def _fetch_model_entry(self) -> tuple[dict | None, str]:
        """(this model's entry of ``GET {base_url}/models``, or of ``GET {base_url}/models/{model}``;
        None when the server lists no such model or the request fails) and what happened."""
        from urllib.parse import quote

        tried = []
        for url, single in ((self.base_url + "/models", False),
                            (self.base_url + "/models/" + quote(self.model, safe=""), True)):
            try:
                resp = self._client.get(url, headers=self._headers(), timeout=min(self.timeout, 10.0))
            except httpx.HTTPError as e:
                tried.append(f"GET {url}: {type(e).__name__}")
                continue
            if resp.status_code != 200:
                tried.append(f"GET {url}: HTTP {resp.status_code}")
                continue
            try:
                data = resp.json()
            except ValueError:
                tried.append(f"GET {url}: not JSON")
                continue
            if single:
                if isinstance(data, dict) and data.get("id") == self.model:
                    return data, f"GET {url}"
            else:
                for entry in (data.get("data") or []) if isinstance(data, dict) else []:
                    if isinstance(entry, dict) and entry.get("id") == self.model:
                        return entry, f"GET {url}"
            tried.append(f"GET {url}: model not listed")
        return None, "; ".join(tried)

    def _set_identity(self, version: str | None, fetched: tuple[dict | None, str]) -> None:
        """``model_version`` = ``URL#MODEL`` [``@VERSION`` when pinned] [``+server:<sha12>`` of
        the server's distinguishing model metadata], and the ``identity`` behind it."""
        import hashlib
        import json

        from .identity import server_model_identity

        entry, how = fetched
        how = redact_urls_in(how)
        fields, distinguishing = server_model_identity(entry)
        self.pinned_version = version or None
        mv = f"{self.shown_url}#{self.model}"
        if self.pinned_version:
            mv += f"@{self.pinned_version}"
        if distinguishing:
            mv += "+server:" + hashlib.sha256(
                json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()[:12]
        self.model_version = mv
        self.identity_by_name_only = not self.pinned_version and not distinguishing
        # re-asking one cached request live tells a swapped model only where answers are deterministic:
        # self-hosted servers at temperature 0, not hosted APIs (they are not deterministic even at 0)
        self.verify_cache_hits = self.identity_by_name_only and not self.key_required and self.temperature == 0
        self.identity = {"kind": "api", "url": self.shown_url, "model": self.model,
                         "pinned_version": self.pinned_version, "server_metadata": fields,
                         "server_metadata_distinguishing": distinguishing, "server_metadata_source": how}
        self.identity_warning = None
        if self.identity_by_name_only:
            self.identity_warning = (
                f"{self.shown_url}#{self.model}: the server reports nothing that tells one model from another "
                f"under this name ({'its /models entry: ' + json.dumps(fields) if entry else how}), so cached "
                "answers are matched by name only; pin a version with "
                f"openai-compatible:{self.shown_url}#{self.model}@VERSION (change VERSION whenever the served "
                "model changes) or run with --refresh-cache"
                + ("; each run re-asks one cached request and stops if the answer changed" if self.verify_cache_hits
                   else ""))

    def _base_for_repr(self) -> str:
        return self.shown_url

    def _label(self) -> str:
        return self._provider_label

    def _headers(self) -> dict:
        h = {"Content-Type": "application/json"}
        key = self._key()
        if key:
            h["Authorization"] = f"Bearer {key}"
        return h

    def _body(self, images: Sequence[Image.Image], prompt: str, max_tokens: int,
              turns: Sequence[tuple[str, str]] = ()) -> dict:
        """Chat-completions body; ``turns``: (assistant, user) text pairs after the first user turn."""
        content: list[dict] = [{"type": "image_url", "image_url": {"url": png_data_url(im)}} for im in images]
        content.append({"type": "text", "text": prompt})
        messages: list[dict] = [{"role": "user", "content": content}]
        for a, u in turns:
            messages += [{"role": "assistant", "content": a}, {"role": "user", "content": u}]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self.max_tokens_field: max_tokens,
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(self.extra_body)
        return body

    def _generate_one(self, request: VLMRequest, turns: Sequence[tuple[str, str]] = ()) -> str:
        def message(data: dict) -> dict:
            try:
                msg = data["choices"][0]["message"]
            except (KeyError, IndexError, TypeError):
                msg = None
            if not isinstance(msg, dict):
                raise _Malformed(f"no choices[0].message in {self._redact(str(data)[:200])}")
            return msg

        msg = self._post_json(self.url, self._headers(),
                              self._body(request.images, request.prompt, self._budget(request), turns),
                              extract=message)
        content = msg.get("content")
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return model_text(content if content else (msg.get("refusal") or ""))

    def next_token_distribution(
        self, image: Image.Image, prompt: str, top_k: int | None = None
    ) -> TokenDistribution:
        """Top-k log-probabilities of the first generated token (``complete=False``).

        Sends ``logprobs=true, top_logprobs=k`` (k = ``top_k`` or ``max_top_logprobs``),
        ``max_tokens=1``, temperature 0.  Raises ``ValueError`` if ``top_k`` exceeds
        ``max_top_logprobs``; :class:`NotSupportedByProvider` if the server refuses the fields with
        HTTP 400/422 naming them (``transformers serve``; vLLM asked for more than its
        ``--max-logprobs``); :class:`~perceptbench.models.base.NoLogprobs` (a subclass) if a
        response carries none and no earlier one did (once one did, a response without them is
        retried like a 5xx and, retries exhausted, an :class:`APIError`).  Entries whose token strings coincide are kept
        once (the more probable); an empty token string is dropped (see :func:`_distribution`), so
        the result can hold fewer than k tokens.
        """
        k = self.max_top_logprobs if top_k is None else int(top_k)
        if not 1 <= k <= self.max_top_logprobs:
            raise ValueError(f"top_k must be in 1..{self.max_top_logprobs} for {self.provider}, got {top_k}")
        imgs = () if image is None else (tuple(image) if isinstance(image, (list, tuple)) else (image,))
        body = self._body(imgs, prompt, 1)
        body["logprobs"] = True
        body["top_logprobs"] = k

        def on_error(status: int, text: str) -> None:
            # servers that refuse the fields (e.g. ``transformers serve``: HTTP 422 naming them)
            if status in (400, 422) and "logprob" in text.lower():
                raise NotSupportedByProvider(
                    f"{self.provider} server at {self.shown_url} (model {self.model!r}) refuses logprobs: "
                    f"HTTP {status}: {self._redact(text[:200])}")

        def top(data: dict) -> list:
            try:
                entries = data["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
            except (KeyError, IndexError, TypeError):
                entries = None
            return self._logprobs_or_glitch(entries, data)

        entries = self._post_json(self.url, self._headers(), body, on_error=on_error, extract=top)
        return self._seen(_distribution([(e.get("token", ""), e.get("logprob")) for e in entries
                                         if isinstance(e, dict)], k))


class AnthropicVLM(_HTTPVLM):
    """Anthropic Messages API (``POST {base_url}/v1/messages``).

    The key is read from ``api_key_env`` (default ``ANTHROPIC_API_KEY``; must be set,
    else :class:`ModelLoadError`) and sent as ``x-api-key``.  ``max_tokens`` is required by
    the API: ``None`` uses each request's ``max_new_tokens``.  The Messages API returns no
    token log-probabilities, so this class declares no
    :class:`~perceptbench.models.base.FirstTokenDistribution`: its VSI trials are recorded as
    skipped ("exposes no next-token distribution"), never asked.
    """

    provider = "anthropic"
    API_VERSION = "2023-06-01"

    def __init__(
        self,
        model: str,
        api_key_env: str = "ANTHROPIC_API_KEY",
        concurrency: int = 4,
        timeout: float = 60,
        max_retries: int = 5,
        *,
        base_url: str = "https://api.anthropic.com",
        name: str | None = None,
        backoff_initial: float = 1.0,
        backoff_max: float = 30.0,
        retry_after_max: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        extra_body: dict | None = None,
        version: str | None = None,
    ) -> None:
        self.base_url = str(base_url).rstrip("/")
        super().__init__(
            model, api_key_env=api_key_env, name=name, concurrency=concurrency, timeout=timeout,
            max_retries=max_retries, backoff_initial=backoff_initial, backoff_max=backoff_max,
            retry_after_max=retry_after_max, temperature=temperature, max_tokens=max_tokens,
            extra_body=extra_body,
        )
        self.url = self.base_url + "/v1/messages"
        self._pin(version)
        self.model_version = f"anthropic:{self.model}" + (f"@{version}" if version else "")
        self.generation_settings = self._settings(anthropic_version=self.API_VERSION)

    def _base_for_repr(self) -> str:
        return self.shown_url

    def _headers(self) -> dict:
        return {
            "Content-Type": "application/json",
            "x-api-key": self._key() or "",
            "anthropic-version": self.API_VERSION,
        }

    def _body(self, request: VLMRequest, turns: Sequence[tuple[str, str]] = ()) -> dict:
        content: list[dict] = [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png_base64(im)}}
            for im in request.images
        ]
        content.append({"type": "text", "text": request.prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self._budget(request),
            "messages": [{"role": "user", "content": content}]
            + [m for a, u in turns for m in ({"role": "assistant", "content": a}, {"role": "user", "content": u})],
        }
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(self.extra_body)
        return body

    def _generate_one(self, request: VLMRequest, turns: Sequence[tuple[str, str]] = ()) -> str:
        data = self._post_json(self.url, self._headers(), self._body(request, turns))
        blocks = data.get("content") or []
        return model_text("".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"))


class GeminiVLM(_HTTPVLM):
    """Google Gemini API (``POST {base_url}/v1beta/models/{model}:generateContent``).

    The key is read from ``api_key_env`` (default ``GEMINI_API_KEY``; must be set) and
    sent in the ``x-goog-api-key`` header, never in the URL.  ``next_token_distribution``
    requests ``responseLogprobs`` / ``logprobs=k`` (k <= ``max_top_logprobs``, 20) with
    ``maxOutputTokens=1``; a model without logprobs (HTTP 400 mentioning logprobs, or a
    response without ``logprobsResult``) raises :class:`NotSupportedByProvider`.
    """

    provider = "gemini"

    def __init__(
        self,
        model: str,
        api_key_env: str = "GEMINI_API_KEY",
        concurrency: int = 4,
        timeout: float = 60,
        max_retries: int = 5,
        *,
        base_url: str = "https://generativelanguage.googleapis.com",
        name: str | None = None,
        backoff_initial: float = 1.0,
        backoff_max: float = 30.0,
        retry_after_max: float = 60.0,
        temperature: float | None = 0.0,
        max_tokens: int | None = None,
        extra_body: dict | None = None,
        max_top_logprobs: int = 20,
        version: str | None = None,
    ) -> None:
        self.base_url = str(base_url).rstrip("/")
        self.max_top_logprobs = int(max_top_logprobs)
        super().__init__(
            model, api_key_env=api_key_env, name=name, concurrency=concurrency, timeout=timeout,
            max_retries=max_retries, backoff_initial=backoff_initial, backoff_max=backoff_max,
            retry_after_max=retry_after_max, temperature=temperature, max_tokens=max_tokens,
            extra_body=extra_body,
        )
        m = self.model if self.model.startswith("models/") else f"models/{self.model}"
        self.url = f"{self.base_url}/v1beta/{m}:generateContent"
        self._pin(version)
        self.model_version = f"gemini:{self.model}" + (f"@{version}" if version else "")
        self.generation_settings = self._settings()

    def _base_for_repr(self) -> str:
        return self.shown_url

    def _headers(self) -> dict:
        return {"Content-Type": "application/json", "x-goog-api-key": self._key() or ""}

    def _body(self, images: Sequence[Image.Image], prompt: str, max_tokens: int,
              turns: Sequence[tuple[str, str]] = ()) -> dict:
        """generateContent body; ``turns``: (model, user) text pairs after the first user turn."""
        parts: list[dict] = [{"inline_data": {"mime_type": "image/png", "data": png_base64(im)}} for im in images]
        parts.append({"text": prompt})
        gen: dict[str, Any] = {"maxOutputTokens": max_tokens}
        if self.temperature is not None:
            gen["temperature"] = self.temperature
        contents: list[dict] = [{"role": "user", "parts": parts}]
        for a, u in turns:
            contents += [{"role": "model", "parts": [{"text": a}]}, {"role": "user", "parts": [{"text": u}]}]
        body: dict[str, Any] = {"contents": contents, "generationConfig": gen}
        for k, v in self.extra_body.items():
            if k == "generationConfig" and isinstance(v, dict):
                gen.update(v)
            else:
                body[k] = v
        return body

    def _generate_one(self, request: VLMRequest, turns: Sequence[tuple[str, str]] = ()) -> str:
        data = self._post_json(self.url, self._headers(),
                               self._body(request.images, request.prompt, self._budget(request), turns))
        cands = data.get("candidates") or []
        if not cands:  # prompt blocked (promptFeedback.blockReason): a null response
            return ""
        parts = (cands[0].get("content") or {}).get("parts") or []
        return model_text("".join(p.get("text", "") for p in parts if isinstance(p, dict) and not p.get("thought")))

    def next_token_distribution(self, image, prompt, top_k=None) -> TokenDistribution:
        """Top-k log-probabilities of the first generated token (``complete=False``)."""
        k = self.max_top_logprobs if top_k is None else int(top_k)
        if not 1 <= k <= self.max_top_logprobs:
            raise ValueError(f"top_k must be in 1..{self.max_top_logprobs} for gemini, got {top_k}")
        imgs = () if image is None else (tuple(image) if isinstance(image, (list, tuple)) else (image,))
        body = self._body(imgs, prompt, 1)
        body["generationConfig"]["responseLogprobs"] = True
        body["generationConfig"]["logprobs"] = k

        def on_error(status: int, text: str) -> None:
            if status == 400 and "logprob" in text.lower():
                raise NotSupportedByProvider(
                    f"gemini model {self.model!r} does not support logprobs: HTTP 400: {self._redact(text[:200])}"
                )

        def candidates(data: dict) -> list:
            try:
                top = data["candidates"][0]["logprobsResult"]["topCandidates"][0]["candidates"]
            except (KeyError, IndexError, TypeError):
                top = None
            return self._logprobs_or_glitch(top, data)

        top = self._post_json(self.url, self._headers(), body, on_error=on_error, extract=candidates)
        return self._seen(_distribution([(c.get("token", ""), c.get("logProbability")) for c in top
                                         if isinstance(c, dict)], k))


def _distribution(pairs: list[tuple[str, Any]], k: int) -> TokenDistribution:
    """Provider top-k (token, logprob) pairs -> a sorted, de-duplicated TokenDistribution.

    Token strings are normalised first (:func:`~perceptbench.core.text.model_text`: a lone
    surrogate, a byte fragment some servers escape as one, becomes U+FFFD).  Entries with the
    same token string are kept once (the more probable).  An entry whose token
    string is empty is dropped when any other entry remains: it names no token.  llama.cpp's
    Python server (llama-cpp-python 0.3.x) decodes each top token on its own with
    ``errors="ignore"`` and keys the top list by that string, so byte fragments of multi-byte
    characters and control tokens all come back as ``""``, merged into one entry that carries the
    *least* probable of them (measured: 50 asked, 30 returned on a 512-token vocabulary).  The
    dropped mass joins the remaining-mass bucket of the VSI support (docs/metrics.md); the list
    may therefore hold fewer than ``k`` entries.  Raises :class:`NotSupportedByProvider` when no
    entry carries a log-probability.
    """
    best: dict[str, float] = {}
    for tok, lp in pairs:
        if lp is None:
            continue
        lp = float(lp)
        tok = "" if tok is None else model_text(str(tok))
        if tok not in best or lp > best[tok]:
            best[tok] = lp
    if not best:
        raise NoLogprobs("provider returned top-logprob entries without log-probabilities")
    if "" in best and len(best) > 1:
        del best[""]
    items = sorted(best.items(), key=lambda t: -t[1])[:k]
    return TokenDistribution(
        tokens=tuple(t for t, _ in items),
        logprobs=np.array([lp for _, lp in items], dtype=np.float64),
        complete=False,
        token_ids=None,
    )
