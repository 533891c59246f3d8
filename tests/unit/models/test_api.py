"""API adapters: a real OpenAI-compatible server, retry/backoff on real local HTTP servers,
request shapes for Anthropic and Gemini, and no key leaks.

(a) ``transformers serve`` (extra ``transformers[serving]``) is started as a subprocess on
    127.0.0.1 serving a tiny local Qwen2-VL directory; nothing is faked.
(b) ``http.server`` servers in threads answer scripted status codes (429 / 503 / 500).
(c) A key put into the environment never shows up in repr, settings, versions or errors,
    even when a server echoes it back.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

from perceptbench.models.api import APIError, AnthropicVLM, GeminiVLM, OpenAICompatibleVLM, png_base64
from perceptbench.models.base import FirstTokenDistribution, ModelLoadError, NotSupportedByProvider, VLM, VLMRequest
from helpers.servers import chat_json as _chat_json, free_port as _free_port  # noqa: E402

SECRET = "sk-test-SECRET-0123456789abcdef"
FAST = dict(backoff_initial=0.01, backoff_max=0.05, retry_after_max=0.2)


def _image(seed: int, size=(64, 64)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


# ---------------------------------------------------------------------------------------
# (a) a real OpenAI-compatible server: transformers serve
# ---------------------------------------------------------------------------------------


def test_real_server_generate_deterministic(served_model):
    base_url, d = served_model
    vlm = OpenAICompatibleVLM(base_url, str(d), concurrency=2, timeout=120, max_retries=1, **FAST)
    assert isinstance(vlm, VLM) and vlm.family == "api"
    prompt = "Three colored chart marks are shown, numbered 1, 2 and 3. Which one is the odd one out? Answer 1, 2, or 3."
    reqs = [VLMRequest(images=(_image(i),), prompt=prompt, max_new_tokens=12) for i in range(3)]
    a = vlm.generate(reqs)
    b = vlm.generate(reqs)
    assert a == b  # temperature 0: deterministic
    assert all(isinstance(x, str) and x for x in a)
    assert len(set(a)) >= 2  # the image reaches the model: different images, different answers


def test_real_server_matches_local_hfvlm(served_model):
    """The served answer equals the local adapter's greedy answer for the same image and
    prompt: the image is sent, in the right place, and decoding is greedy on both sides."""
    from perceptbench.models.vlm_hf import HFVLM

    base_url, d = served_model
    vlm = OpenAICompatibleVLM(base_url, str(d), timeout=120, max_retries=1, **FAST)
    local = HFVLM(d)
    req = VLMRequest(images=(_image(11),), prompt="How many distinct color series are there?", max_new_tokens=10)
    ids = local.generate_ids([req])[0]
    # transformers serve decodes without skipping special tokens; compare token for token
    assert vlm.generate([req]) == [local.tokenizer.decode(ids, skip_special_tokens=False)]
    assert len(ids) >= 3


def test_real_server_has_no_logprobs(served_model):
    base_url, d = served_model
    vlm = OpenAICompatibleVLM(base_url, str(d), timeout=120, max_retries=1, **FAST)
    with pytest.raises(NotSupportedByProvider, match="no logprobs"):
        vlm.next_token_distribution(_image(0), "Answer 1, 2, or 3.", top_k=5)
    with pytest.raises(ValueError):
        vlm.next_token_distribution(_image(0), "Answer 1, 2, or 3.", top_k=21)


# ---------------------------------------------------------------------------------------
# scripted local HTTP servers
# ---------------------------------------------------------------------------------------


class Scripted:
    """A real HTTP server on 127.0.0.1 whose responses follow a script.

    ``script`` items: (status, headers dict, body dict or str); the last item repeats.
    Records every request (path, headers, JSON body) and the peak number in flight.
    """

    def __init__(self, script, delay: float = 0.0):
        self.script = list(script)
        self.delay = delay
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(n)
                with outer.lock:
                    i = len(outer.requests)
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(raw or b"{}")})
                    outer.in_flight += 1
                    outer.peak = max(outer.peak, outer.in_flight)
                    status, headers, body = outer.script[min(i, len(outer.script) - 1)]
                if outer.delay:
                    time.sleep(outer.delay)
                if callable(body):
                    body = body(self)
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                with outer.lock:
                    outer.in_flight -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


REQ = VLMRequest(images=(_image(0),), prompt="Answer 1, 2, or 3.")


# ---------------------------------------------------------------------------------------
# (b) retries
# ---------------------------------------------------------------------------------------


def test_retry_429_then_503_then_200():
    script = [
        (429, {"Retry-After": "0"}, {"error": {"message": "rate limited"}}),
        (503, {}, {"error": {"message": "overloaded"}}),
        (200, {}, _chat_json("The odd one out is 2.")),
    ]
    with Scripted(script) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", max_retries=5, timeout=10, **FAST)
        t0 = time.monotonic()
        assert vlm.generate([REQ]) == ["The odd one out is 2."]
        assert time.monotonic() - t0 < 5
    assert len(srv.requests) == 3
    assert all(r["path"] == "/v1/chat/completions" for r in srv.requests)


def test_persistent_500_raises_clear_error_after_max_retries():
    with Scripted([(500, {}, {"error": "boom"})]) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", max_retries=3, timeout=10, **FAST)
        t0 = time.monotonic()
        with pytest.raises(APIError) as ei:
            vlm.generate([REQ])
        elapsed = time.monotonic() - t0
    assert len(srv.requests) == 4  # 1 attempt + 3 retries
    assert elapsed < 3.0  # backoff 0.01..0.05 s per retry, bounded
    e = ei.value
    assert e.status == 500 and e.attempts == 4
    assert srv.url + "/v1/chat/completions" in str(e) and "HTTP 500" in str(e) and "4 attempts" in str(e)


def test_retry_after_is_capped():
    script = [(429, {"Retry-After": "3600"}, {"error": "slow down"}), (200, {}, _chat_json("3"))]
    with Scripted(script) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", max_retries=2, **FAST)  # cap 0.2 s
        t0 = time.monotonic()
        assert vlm.generate([REQ]) == ["3"]
        assert time.monotonic() - t0 < 3.0
    assert len(srv.requests) == 2


def test_exponential_backoff_is_applied():
    with Scripted([(502, {}, {"error": "bad gateway"}), (502, {}, {}), (200, {}, _chat_json("1"))]) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", max_retries=5, backoff_initial=0.2, backoff_max=1.0)
        t0 = time.monotonic()
        assert vlm.generate([REQ]) == ["1"]
        # waits >= initial (0.2) then >= 2*initial (0.4), at most backoff_max each
        assert 0.55 <= time.monotonic() - t0 < 3.0


def test_400_is_not_retried():
    with Scripted([(400, {}, {"error": "bad request"})]) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", max_retries=5, **FAST)
        with pytest.raises(APIError, match="HTTP 400"):
            vlm.generate([REQ])
    assert len(srv.requests) == 1


def test_connection_refused_on_loopback_fails_fast_with_clear_error():
    port = _free_port()  # nothing listens there
    vlm = OpenAICompatibleVLM(f"http://127.0.0.1:{port}/v1", "m", max_retries=2, timeout=2, **FAST)
    with pytest.raises(APIError) as ei:
        vlm.generate([REQ])
    assert ei.value.attempts == 1 and ei.value.status is None  # a local server that is not up: no retries
    assert f"127.0.0.1:{port}/v1/chat/completions" in str(ei.value) and "nothing is listening" in str(ei.value)


def test_timeout_is_retried():
    script = [(200, {}, _chat_json("slow"))]
    with Scripted(script, delay=0.6) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", max_retries=1, timeout=0.2, **FAST)
        with pytest.raises(APIError, match="Timeout"):
            vlm.generate([REQ])
    assert len(srv.requests) == 2


def test_concurrency_is_bounded_and_order_kept():
    script = [(200, {}, _chat_json("ok"))]
    with Scripted(script, delay=0.15) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", concurrency=3, **FAST)
        reqs = [VLMRequest(images=(_image(i),), prompt=f"prompt {i}") for i in range(9)]
        out = vlm.generate(reqs)
    assert out == ["ok"] * 9
    assert 2 <= srv.peak <= 3
    prompts = sorted(r["body"]["messages"][0]["content"][-1]["text"] for r in srv.requests)
    assert prompts == sorted(f"prompt {i}" for i in range(9))


def test_openai_request_shape_and_logprobs(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    top = [(" 2", -0.1), ("2", -2.5), (" 3", -3.0), (" 2", -4.0)]
    script = [(200, {}, _chat_json("2")), (200, {}, _chat_json("2", logprobs=top))]
    with Scripted(script) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", extra_body={"seed": 0}, **FAST)
        two = VLMRequest(images=(_image(1), _image(2)), prompt="Which?", max_new_tokens=7)
        assert vlm.generate([two]) == ["2"]
        d = vlm.next_token_distribution(_image(1), "Which?", top_k=5)
    body = srv.requests[0]["body"]
    parts = body["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "image_url", "text"]  # images first
    assert parts[0]["image_url"]["url"] == "data:image/png;base64," + png_base64(_image(1))
    assert body["temperature"] == 0.0 and body["max_tokens"] == 7 and body["seed"] == 0
    lp_body = srv.requests[1]["body"]
    assert lp_body["logprobs"] is True and lp_body["top_logprobs"] == 5 and lp_body["max_tokens"] == 1
    assert not d.complete and d.tokens == (" 2", "2", " 3")  # duplicate " 2" kept once (best)
    np.testing.assert_allclose(d.logprobs, [-0.1, -2.5, -3.0])
    assert "Authorization" not in srv.requests[0]["headers"]  # no key in the env: no header


def test_refusal_is_text_not_error():
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                 "refusal": "I can't help with that."}}]}
    with Scripted([(200, {}, body)]) as srv:
        vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", **FAST)
        assert vlm.generate([REQ]) == ["I can't help with that."]


# ---------------------------------------------------------------------------------------
# Anthropic and Gemini request/response shapes (scripted local servers)
# ---------------------------------------------------------------------------------------


def test_anthropic_shape_and_no_logprobs(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    resp = {"id": "m1", "type": "message", "role": "assistant", "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "The odd one out is "}, {"type": "text", "text": "3."}]}
    with Scripted([(529, {}, {"type": "error", "error": {"type": "overloaded_error"}}), (200, {}, resp)]) as srv:
        vlm = AnthropicVLM("claude-test", base_url=srv.url, **FAST)
        assert vlm.generate([REQ]) == ["The odd one out is 3."]
    assert len(srv.requests) == 2  # 529 (overloaded) retried
    r = srv.requests[1]
    assert r["path"] == "/v1/messages"
    assert r["headers"]["x-api-key"] == SECRET and r["headers"]["anthropic-version"] == "2023-06-01"
    content = r["body"]["messages"][0]["content"]
    assert content[0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": png_base64(REQ.images[0])}}
    assert content[1] == {"type": "text", "text": REQ.prompt}
    assert r["body"]["temperature"] == 0.0 and r["body"]["max_tokens"] == 40
    # the Messages API returns no logprobs: the adapter does not declare the capability at all
    assert not isinstance(vlm, FirstTokenDistribution) and not hasattr(vlm, "next_token_distribution")


def test_gemini_shape_and_logprobs(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    gen = {"candidates": [{"content": {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"text": "two"}]}}]}
    lp = {"candidates": [{"content": {"parts": [{"text": "2"}]},
                          "logprobsResult": {"topCandidates": [{"candidates": [
                              {"token": "2", "logProbability": -0.05}, {"token": "3", "logProbability": -3.2}]}]}}]}
    no_lp = {"error": {"code": 400, "message": "Logprobs is not enabled for models/gemini-test"}}
    with Scripted([(200, {}, gen), (200, {}, lp), (400, {}, no_lp)]) as srv:
        vlm = GeminiVLM("gemini-test", base_url=srv.url, **FAST)
        assert vlm.generate([REQ]) == ["two"]
        d = vlm.next_token_distribution(_image(0), "Answer 1, 2, or 3.", top_k=2)
        with pytest.raises(NotSupportedByProvider, match="logprobs"):
            vlm.next_token_distribution(_image(0), "Answer 1, 2, or 3.", top_k=2)
    r = srv.requests[0]
    assert r["path"] == "/v1beta/models/gemini-test:generateContent"
    assert "key=" not in r["path"] and r["headers"]["x-goog-api-key"] == SECRET
    parts = r["body"]["contents"][0]["parts"]
    assert parts[0] == {"inline_data": {"mime_type": "image/png", "data": png_base64(REQ.images[0])}}
    assert parts[1] == {"text": REQ.prompt}
    assert r["body"]["generationConfig"] == {"maxOutputTokens": 40, "temperature": 0.0}
    g = srv.requests[1]["body"]["generationConfig"]
    assert g["responseLogprobs"] is True and g["logprobs"] == 2 and g["maxOutputTokens"] == 1
    assert d.tokens == ("2", "3") and not d.complete
    np.testing.assert_allclose(d.logprobs, [-0.05, -3.2])


def test_missing_key_fails_at_construction(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(ModelLoadError, match="ANTHROPIC_API_KEY"):
        AnthropicVLM("claude-test")
    with pytest.raises(ModelLoadError, match="GEMINI_API_KEY"):
        GeminiVLM("gemini-test")
    monkeypatch.delenv("PB_UNSET_KEY", raising=False)
    with pytest.raises(ModelLoadError, match="PB_UNSET_KEY"):
        OpenAICompatibleVLM("https://api.openai.com/v1", "gpt-x", api_key_env="PB_UNSET_KEY", require_key=True)
    OpenAICompatibleVLM("http://127.0.0.1:1/v1", "local", api_key_env="PB_UNSET_KEY")  # local: no key needed


# ---------------------------------------------------------------------------------------
# (c) the key never leaks
# ---------------------------------------------------------------------------------------


def _echo_auth(handler):
    """A hostile 401 body that echoes every auth header back."""
    return {"error": {"message": "invalid key: " + " ".join(
        handler.headers.get(h, "") for h in ("Authorization", "x-api-key", "x-goog-api-key"))}}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
@pytest.mark.parametrize("status", [401, 500])
def test_key_never_leaks(monkeypatch, caplog, kind, status):
    caplog.set_level("DEBUG")
    monkeypatch.setenv("PB_TEST_KEY", SECRET)
    with Scripted([(status, {}, _echo_auth)]) as srv:
        if kind == "openai":
            vlm = OpenAICompatibleVLM(srv.url + "/v1", "m", api_key_env="PB_TEST_KEY", max_retries=1, **FAST)
        elif kind == "anthropic":
            vlm = AnthropicVLM("c", api_key_env="PB_TEST_KEY", base_url=srv.url, max_retries=1, **FAST)
        else:
            vlm = GeminiVLM("g", api_key_env="PB_TEST_KEY", base_url=srv.url, max_retries=1, **FAST)
        with pytest.raises(APIError) as ei:
            vlm.generate([REQ])
    # the key really was sent (so the checks below are not vacuous) ...
    sent = json.dumps([r["headers"] for r in srv.requests])
    assert SECRET in sent
    # ... and it appears nowhere the project writes
    err = ei.value
    texts = [repr(vlm), str(vlm.__dict__), json.dumps(vlm.generation_settings), vlm.model_version, vlm.name,
             str(err), repr(err), repr(err.__cause__), repr(err.__context__), err.url, caplog.text]
    for t in texts:
        assert SECRET not in t
    assert "***" in str(err)  # the echoed key was redacted, not dropped silently
    assert f"HTTP {status}" in str(err) and srv.url in str(err)


# ---------------------------------------------------------------------------------------
# transient glitches in 200 responses (issue 20 item 2), on the fake server of tests/helpers
# ---------------------------------------------------------------------------------------

from helpers.servers import GlitchServer  # noqa: E402
from perceptbench.models.base import NoLogprobs, PartialAnswers  # noqa: E402

TOP = [(" 2", -0.1), (" 3", -2.5), (" 1", -3.0)]
TRUNCATED = json.dumps(_chat_json("The odd one out is 2."))[:37]


@pytest.mark.parametrize("glitch", [
    (200, TRUNCATED),                                                # truncated JSON
    (200, {"id": "x", "object": "chat.completion", "choices": []}),  # an empty choices list
    (200, {"id": "x", "choices": [{"index": 0}]}),                   # a choice without its message
    (200, "[]"),                                                     # JSON, but not an object
    (200, ""),                                                       # nothing at all
])
def test_a_malformed_200_response_is_retried_like_a_5xx(glitch):
    with GlitchServer(lambda body, n: glitch if n < 2 else (200, _chat_json("2"))) as srv:
        vlm = OpenAICompatibleVLM(srv.url, "m", max_retries=3, query_server=False, **FAST)
        assert vlm.generate([REQ]) == ["2"]
    assert len(srv.requests) == 3


def test_a_malformed_response_that_persists_is_an_api_error_after_the_retries():
    with GlitchServer(lambda body, n: (200, TRUNCATED)) as srv:
        vlm = OpenAICompatibleVLM(srv.url, "m", max_retries=2, query_server=False, **FAST)
        with pytest.raises(APIError, match="malformed after 3 attempts") as ei:
            vlm.generate([REQ])
    assert len(srv.requests) == 3 and ei.value.attempts == 3 and "not a JSON object" in str(ei.value)


def test_one_response_without_logprobs_is_retried_once_the_server_has_returned_them():
    def respond(body, n):
        return 200, _chat_json("2", logprobs=None if n in (1, 2) else TOP)

    with GlitchServer(respond) as srv:
        vlm = OpenAICompatibleVLM(srv.url, "m", max_retries=3, query_server=False, **FAST)
        first = vlm.next_token_distribution(_image(0), "Which?", top_k=3)
        second = vlm.next_token_distribution(_image(1), "Which?", top_k=3)  # two glitches, then logprobs
    assert first.tokens == second.tokens == (" 2", " 3", " 1") and len(srv.requests) == 4


def test_a_server_that_never_returned_logprobs_is_told_at_once_not_retried():
    with GlitchServer(lambda body, n: (200, _chat_json("2"))) as srv:
        vlm = OpenAICompatibleVLM(srv.url, "m", max_retries=3, query_server=False, **FAST)
        with pytest.raises(NoLogprobs, match="returned no logprobs"):
            vlm.next_token_distribution(_image(0), "Which?", top_k=3)
    assert len(srv.requests) == 1  # the caller decides whether this is consistent


def test_gemini_logprobs_glitch_is_retried(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    with_lp = {"candidates": [{"content": {"parts": [{"text": "2"}]}, "logprobsResult": {"topCandidates": [
        {"candidates": [{"token": "2", "logProbability": -0.2}, {"token": "3", "logProbability": -1.9}]}]}}]}
    without = {"candidates": [{"content": {"parts": [{"text": "2"}]}}]}
    with GlitchServer(lambda body, n: (200, without if n == 1 else with_lp)) as srv:
        vlm = GeminiVLM("g", base_url=srv.url[:-3], max_retries=2, **FAST)
        assert vlm.next_token_distribution(_image(0), "Which?", top_k=2).tokens == ("2", "3")
        assert vlm.next_token_distribution(_image(0), "Which?", top_k=2).tokens == ("2", "3")
    assert len(srv.requests) == 3


@pytest.mark.parametrize("concurrency", [1, 3])
def test_a_batch_keeps_the_answers_that_arrived_when_one_request_fails_for_good(concurrency):
    def respond(body, n):
        prompt = body["messages"][0]["content"][-1]["text"]
        return (500, {"error": "boom"}) if prompt == "prompt 1" else (200, _chat_json(f"answer to {prompt}"))

    with GlitchServer(respond) as srv:
        vlm = OpenAICompatibleVLM(srv.url, "m", max_retries=1, concurrency=concurrency, query_server=False, **FAST)
        reqs = [VLMRequest(images=(_image(i),), prompt=f"prompt {i}") for i in range(3)]
        with pytest.raises(PartialAnswers) as ei:
            vlm.generate(reqs)
    e = ei.value
    assert isinstance(e.error, APIError) and e.error.status == 500 and "HTTP 500" in str(e)
    # in sequence the requests after the failure are not sent; concurrently all are
    want = ["answer to prompt 0", None, None] if concurrency == 1 else ["answer to prompt 0", None,
                                                                        "answer to prompt 2"]
    assert e.answers == want and f"{3 - want.count(None)} of 3 answers" in str(e)


def test_url_credentials_are_sent_but_redacted_everywhere(tmp_path, caplog):
    """Issue 20 item 7: ``http://user:secret@host/...`` was copied into model_version (so every
    record), the identity, cache entries and error messages."""
    from perceptbench.models.response_cache import CachedVLM, ResponseCache

    caplog.set_level("DEBUG")
    pw = "s3cr3t-pw-42"
    with Scripted([(200, {}, _chat_json("2")), (500, {}, {"error": "boom"})]) as srv:
        url = srv.url.replace("http://", f"http://alice:{pw}@") + "/v1"
        vlm = OpenAICompatibleVLM(url, "m", max_retries=1, **FAST)
        cached = CachedVLM(vlm, ResponseCache(tmp_path / "cache"))
        assert cached.generate([REQ]) == ["2"]
        with pytest.raises(APIError) as ei:
            vlm.generate([VLMRequest(images=(_image(1),), prompt="again")])
    assert srv.requests[0]["headers"]["Authorization"].startswith("Basic ")  # the credentials were used
    assert vlm.model_version.startswith(srv.url.replace("http://", "http://alice:****@") + "/v1#m")
    cache_files = [p.read_text() for p in (tmp_path / "cache").rglob("*.json")]
    assert cache_files
    texts = [vlm.model_version, json.dumps(vlm.identity), repr(vlm), str(vlm.identity_warning), str(ei.value),
             ei.value.url, caplog.text, *cache_files]
    for t in texts:
        assert pw not in t, t


@pytest.mark.parametrize("url, shown", [
    ("http://user:pw@host:8000/v1", "http://user:****@host:8000/v1"),
    ("https://tok3n@host/v1", "https://****@host/v1"),
    ("http://host/v1?next=a@b", "http://host/v1?next=a@b"),
    ("http://host/v1", "http://host/v1"),
])
def test_redact_url_follows_pip(url, shown):
    from perceptbench.core.urls import redact_url, redact_urls_in

    assert redact_url(url) == shown
    assert redact_urls_in(f"request to {url} failed; see {url}") == f"request to {shown} failed; see {shown}"
