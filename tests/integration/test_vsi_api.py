"""VSI on the ``openai-compatible:`` route, through the CLI.

(a) A scripted OpenAI-compatible server on 127.0.0.1 that returns ``top_logprobs`` computed from
    the image it receives and counts requests (the request plan and the response cache).  Its
    distributions depend on the image, so VSI is 0 only where the blurred image looks the same
    to it.  The real server that returns logprobs, llama.cpp's, is in test_vsi_llama_server.py.
(b) A real server, ``transformers serve`` on a tiny local Qwen2-VL, which ignores ``logprobs``:
    the task gets a ``skipped`` row naming the reason, as few-shot does today.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

from perceptbench.records import read_records

from helpers.cli import cli
from helpers.servers import free_port as _free_port  # noqa: E402
from perceptbench.vsi.samples import vsi_samples

TOKENS = ["A", "B", "C", " A", " B", "The", "Answer", "1", "2", "3", "x", "y"]


def _first_image(body: dict) -> Image.Image | None:
    for part in body["messages"][0]["content"]:
        if part.get("type") == "image_url":
            raw = base64.b64decode(part["image_url"]["url"].split(",", 1)[1])
            return Image.open(io.BytesIO(raw)).convert("RGB")
    return None


def _logprobs(img: Image.Image) -> list[tuple[str, float]]:
    """Deterministic logits from the image: local contrast and colour means per token."""
    a = np.asarray(img, dtype=np.float64) / 255.0
    contrast = np.abs(np.diff(a, axis=1)).mean() * 40.0
    feats = np.array([contrast, a[..., 0].mean(), a[..., 1].mean(), a[..., 2].mean(), 1.0])
    w = np.random.default_rng(7).normal(0, 3.0, (len(TOKENS), feats.size))
    logits = w @ feats
    lp = logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
    return sorted(zip(TOKENS, lp.tolist()), key=lambda t: -t[1])


class LogprobServer:
    """/v1/chat/completions answering with the argmax token and, when asked, top_logprobs
    (at most ``top_logprobs`` entries, as OpenAI does).  Counts requests."""

    def __init__(self):
        self.n = 0
        self.conversations: list[list[str]] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.n += 1
                last = body["messages"][-1]["content"]  # the turn to answer
                text_part = last if isinstance(last, str) else [p["text"] for p in last if p.get("type") == "text"][0]
                outer.conversations.append([m["role"] for m in body["messages"]])
                img = _first_image(body)
                lps = _logprobs(img) if img is not None else [("A", 0.0)]
                content = "80" if "How confident" in text_part else lps[0][0]
                choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                if body.get("logprobs"):
                    k = int(body.get("top_logprobs") or 0)
                    choice["logprobs"] = {"content": [{"token": lps[0][0], "logprob": lps[0][1],
                                                       "top_logprobs": [{"token": t, "logprob": v}
                                                                        for t, v in lps[:k]]}]}
                data = json.dumps({"id": "x", "object": "chat.completion", "model": body["model"],
                                   "choices": [choice]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_vsi_through_openai_compatible_server_with_logprobs(tmp_path):
    srv = LogprobServer()
    try:
        out = tmp_path / "run"
        env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")}
        args = ("run", "--model", f"scripted=openai-compatible:{srv.url}#scripted-vlm", "--task",
                "vsi.salbench.syn@n=6", "--out", str(out), "--no-progress", "--batch-size", "4")
        p = cli(*args, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        n_first = srv.n
        # per sample: clean generation + clean logprobs + confidence + 2 perturbed logprobs
        assert n_first == 6 * 5
        # the confidence question is a follow-up turn after the model's own answer
        assert srv.conversations.count(["user", "assistant", "user"]) == 6
        recs = read_records(out / "records.jsonl", allow_torn_tail=False)
        assert len(recs) == 18 and all(r.model_family == "api" for r in recs)
        for r in recs:
            v = r.run_meta.model_extra["vsi"]
            assert v["token_ids"] is None and v["distribution_source"] == "api_top_logprobs"
            assert v["top_k"] == 20 and len(v["tokens"]) == len(TOKENS) and not v["complete"]
            if v["condition"] == "clean":
                assert r.raw_output == v["tokens"][0] and v["verbal_conf"] == 80.0
                assert r.response == {"A": "A", " A": "A", "B": "B", " B": "B", "C": "C"}.get(r.raw_output)
        ss = vsi_samples(recs)
        assert len(ss) == 12 and all(s.vsi >= 0 for s in ss)
        assert sum(s.vsi > 1e-6 for s in ss if s.perturbation == "whole") == 6
        rows = {r["metric"]: r for r in json.loads((out / "scores.json").read_text())}
        assert rows["vsi_median[whole_blur,sigma=20]"]["value"] > 0
        # a rerun elsewhere is served from the response cache: the server sees only one re-ask of a
        # cached answer, the stale-cache check of a name-only self-hosted model (issue 7 item 2)
        p = cli(*args[:5], "--out", str(tmp_path / "again"), "--no-progress", "--batch-size", "4", env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert srv.n == n_first + 1
    finally:
        srv.close()


def test_real_server_without_logprobs_gets_skipped_row(tmp_path, served_model):
    """transformers serve (the session's tiny Qwen2-VL, tests/conftest.py) ignores ``logprobs``:
    every VSI trial is recorded as skipped with the reason, and scoring gives one skipped row."""
    base_url, d = served_model
    out = tmp_path / "run"
    p = cli("run", "--model", f"served=openai-compatible:{base_url}#{d}", "--task",
            "vsi.salbench.syn@n=2,verbal_conf=0", "--out", str(out), "--no-progress",
            env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    assert len(recs) == 6 and all("logprobs" in r.run_meta.model_extra["skipped"] for r in recs)
    assert all(r.response is None for r in recs)
    rows = [r for r in json.loads((out / "scores.json").read_text()) if r["model"] == "served"]
    assert [r["metric"] for r in rows] == ["skipped"] and "logprobs" in rows[0]["note"]
    assert vsi_samples(recs) == []


def test_api_distribution_drops_the_ambiguous_empty_token():
    """llama-cpp-python keys its top list by each token decoded alone, so byte fragments and
    control tokens come back merged under "": that entry names no token and is dropped (its mass
    joins the remaining-mass bucket), unless nothing else is left."""
    from perceptbench.models.api import _distribution

    d = _distribution([("", -1.0), (" A", -2.0), ("B", -2.5), (" A", -4.0), ("", -0.5), ("C", None)], 50)
    assert d.tokens == (" A", "B") and list(d.logprobs) == [-2.0, -2.5] and not d.complete
    assert _distribution([("", -0.7)], 50).tokens == ("",)
    assert _distribution([("x", -0.1), ("y", -3.0), ("z", -4.0)], 2).tokens == ("x", "y")


def test_max_top_logprobs_env_for_openai_compatible(monkeypatch):
    from perceptbench.models.base import ModelLoadError
    from perceptbench.models.registry import MAX_TOP_LOGPROBS_ENV, load_model

    url = f"openai-compatible:http://127.0.0.1:{_free_port()}/v1#m"  # nothing listens: /models fails quietly
    monkeypatch.delenv(MAX_TOP_LOGPROBS_ENV, raising=False)
    assert load_model(url).max_top_logprobs == 20
    monkeypatch.setenv(MAX_TOP_LOGPROBS_ENV, "50")
    assert load_model(url).max_top_logprobs == 50
    for bad in ("0", "fifty", "5000"):
        monkeypatch.setenv(MAX_TOP_LOGPROBS_ENV, bad)
        with pytest.raises(ModelLoadError, match=MAX_TOP_LOGPROBS_ENV):
            load_model(url)


def test_extra_body_env_for_openai_compatible(monkeypatch):
    from perceptbench.models.base import ModelLoadError
    from perceptbench.models.registry import EXTRA_BODY_ENV, load_model

    url = f"openai-compatible:http://127.0.0.1:{_free_port()}/v1#m"
    monkeypatch.setenv(EXTRA_BODY_ENV, '{"repeat_penalty": 1.0}')
    m = load_model(url)
    assert m.generation_settings["extra_body"] == {"repeat_penalty": 1.0}
    assert m._body((), "hi", 8)["repeat_penalty"] == 1.0
    for bad in ("{", "[1]", '{"model": "x"}'):
        monkeypatch.setenv(EXTRA_BODY_ENV, bad)
        with pytest.raises(ModelLoadError, match=EXTRA_BODY_ENV):
            load_model(url)
