"""The response cache cannot serve stale answers (issue 7 item 2).

* a local model directory's processor settings are part of its identity: edit one, and the
  model_version changes and every answer is asked again;
* an OpenAI-compatible server's ``/v1/models`` metadata is part of the identity when it says
  anything beyond the name; a user pin (``URL#MODEL@VERSION``) always is;
* a real ``transformers serve`` that swaps the model behind one name (it reports nothing
  distinguishing) is detected: a warning at load, and a re-asked cached answer that differs
  stops the run instead of serving the first model's answers;
* ``--no-cache`` / ``--refresh-cache``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from perceptbench.models.api import OpenAICompatibleVLM
from perceptbench.models.base import VLMRequest
from perceptbench.models.identity import local_model_sha256, server_model_identity
from perceptbench.models.registry import split_pinned_version
from perceptbench.models.response_cache import CachedVLM, ResponseCache, StaleCacheError
from helpers.servers import free_port as _free_port  # noqa: E402
from helpers.servers import start_transformers_serve, stop_process  # noqa: E402

FAST = dict(backoff_initial=0.01, backoff_max=0.05, retry_after_max=0.2, max_retries=1)


def _image(seed: int, size=(64, 64)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _reqs(n=10, max_new_tokens=8):
    return [VLMRequest(images=(_image(i),), prompt="Which one is the odd one out? Answer 1, 2, or 3.",
                       max_new_tokens=max_new_tokens) for i in range(n)]


# ------------------------------------------------------------------ local model directory
def test_processor_setting_change_is_a_new_version_and_a_cache_miss(tmp_path):
    pytest.importorskip("torch")
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    d = build_tiny_vlm("llava", tmp_path / "llava")
    cache = ResponseCache(tmp_path / "cache")
    reqs = _reqs(10)
    c1 = CachedVLM(HFVLM(d), cache)
    first = c1.generate(reqs)
    v1, ident1 = c1.model_version, c1.inner.identity
    # edit the image processor's normalisation and resize (weights untouched)
    # (transformers 5 saves it inside processor_config.json; older releases in preprocessor_config.json)
    cfg_path = d / "preprocessor_config.json"
    if cfg_path.exists():
        cfg = outer = json.loads(cfg_path.read_text())
    else:
        cfg_path = d / "processor_config.json"
        outer = json.loads(cfg_path.read_text())
        cfg = outer["image_processor"]
    cfg["image_mean"] = [0.0, 0.0, 0.0]
    cfg["image_std"] = [1.0, 1.0, 1.0]
    cfg_path.write_text(json.dumps(outer, indent=2))
    c2 = CachedVLM(HFVLM(d), cache)
    assert c2.model_version != v1
    assert c2.inner.identity["weights_sha256"] == ident1["weights_sha256"]  # same weights ...
    assert c2.inner.identity["configs_sha256"] != ident1["configs_sha256"]  # ... other processor
    second = c2.generate(reqs)
    assert (c2.hits, c2.calls) == (0, 10)  # before: 10 of 10 served from the first processor's cache
    assert sum(a != b for a, b in zip(first, second)) >= 1  # the setting changes answers
    # and the chat template / generation config / tokenizer are covered too
    for name in ("generation_config.json", "tokenizer_config.json", "chat_template.jinja"):
        before = local_model_sha256(d)["all"]
        p = d / name
        p.write_text(p.read_text().rstrip() + "\n\n")
        assert local_model_sha256(d)["all"] != before, name
    before = local_model_sha256(d)["all"]
    (d / "README.md").write_text("notes")  # documentation does not change answers
    assert local_model_sha256(d)["all"] == before


# ------------------------------------------------------------------ server metadata, pins
def test_server_model_identity_rules():
    now = 1_800_000_000.0
    # transformers serve: nothing beyond the name
    f, dist = server_model_identity({"id": "./my-vlm", "object": "model", "owned_by": "local", "created": 0,
                                     "status": {"value": "loaded"}}, now)
    assert f == {"id": "./my-vlm", "object": "model", "owned_by": "local"} and not dist
    # vLLM: created is the request time, permission holds a fresh random id; root/max_model_len stay
    f, dist = server_model_identity({"id": "m", "object": "model", "created": int(now) - 3, "owned_by": "vllm",
                                     "root": "/models/m", "max_model_len": 4096,
                                     "permission": [{"id": "modelperm-123"}]}, now)
    assert "created" not in f and "permission" not in f and f["max_model_len"] == 4096 and dist
    # llama.cpp: meta describes the weights
    f, dist = server_model_identity({"id": "m", "object": "model", "created": int(now), "owned_by": "llamacpp",
                                     "meta": {"n_params": 1234, "size": 99}}, now)
    assert f["meta"]["n_params"] == 1234 and dist
    # a checkpoint date far from now counts
    assert server_model_identity({"id": "m", "created": 1_600_000_000}, now)[1]
    assert server_model_identity(None) == ({}, False)


def test_pin_syntax():
    assert split_pinned_version("./my-vlm@2026-11-29") == ("./my-vlm", "2026-11-29")
    assert split_pinned_version("gpt-4o-mini") == ("gpt-4o-mini", None)
    from perceptbench.models.base import ModelLoadError

    with pytest.raises(ModelLoadError):
        split_pinned_version("model@")


class _Server:
    """A scripted OpenAI-compatible server whose /v1/models metadata and answers can be swapped."""

    def __init__(self, models_entry, answer):
        self.models_entry, self.answer, self.chat_calls = models_entry, answer, 0
        srv = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, obj):
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/v1/models" and srv.models_entry is not None:
                    self._send(200, {"object": "list", "data": [srv.models_entry]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                self.rfile.read(n)
                srv.chat_calls += 1
                self._send(200, {"choices": [{"message": {"role": "assistant", "content": srv.answer}}]})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_changed_server_metadata_changes_identity(tmp_path):
    entry = {"id": "my-vlm", "object": "model", "owned_by": "llamacpp", "created": 1,
             "meta": {"n_params": 1000, "size": 4000}}
    srv = _Server(dict(entry), "2")
    try:
        cache = ResponseCache(tmp_path / "cache")
        c1 = CachedVLM(OpenAICompatibleVLM(srv.url, "my-vlm", **FAST), cache)
        assert not c1.inner.identity_by_name_only and c1.inner.identity_warning is None
        assert c1.generate(_reqs(4)) == ["2"] * 4
        # the same name now serves other weights: the server says so in its metadata
        srv.models_entry = {**entry, "meta": {"n_params": 2000, "size": 8000}}
        srv.answer = "3"
        c2 = CachedVLM(OpenAICompatibleVLM(srv.url, "my-vlm", **FAST), cache)
        assert c2.model_version != c1.model_version
        assert c2.generate(_reqs(4)) == ["3"] * 4 and (c2.hits, c2.calls) == (0, 4)
        # a server that lists nothing: identity by name only, and the adapter says so
        srv.models_entry = None
        c3 = OpenAICompatibleVLM(srv.url, "my-vlm", **FAST)
        assert c3.identity_by_name_only and "@VERSION" in c3.identity_warning
        # a pin is part of the identity and never sent
        p1 = OpenAICompatibleVLM(srv.url, "my-vlm", version="v1", **FAST)
        p2 = OpenAICompatibleVLM(srv.url, "my-vlm", version="v2", **FAST)
        assert p1.model_version.endswith("#my-vlm@v1") and p1.model_version != p2.model_version
        assert not p1.identity_by_name_only and p1.identity_warning is None
        assert p1._body((), "x", 1)["model"] == "my-vlm"
    finally:
        srv.close()


def test_no_cache_and_refresh_cache(tmp_path):
    srv = _Server({"id": "m", "object": "model", "created": 1_500_000_000}, "1")
    try:
        vlm = OpenAICompatibleVLM(srv.url, "m", **FAST)
        cache = ResponseCache(tmp_path / "cache")
        CachedVLM(vlm, cache).generate(_reqs(3))
        srv.answer = "2"
        assert CachedVLM(vlm, cache).generate(_reqs(3)) == ["1"] * 3  # same identity: served from the cache
        off = CachedVLM(vlm, ResponseCache(tmp_path / "c2"), mode="off")
        assert off.generate(_reqs(3)) == ["2"] * 3 and off.calls == 3
        assert not [f for _, _, fs in os.walk(tmp_path / "c2") for f in fs]  # --no-cache writes nothing
        ref = CachedVLM(vlm, cache, mode="refresh")
        assert ref.generate(_reqs(3)) == ["2"] * 3 and (ref.hits, ref.calls) == (0, 3)
        assert CachedVLM(vlm, cache).generate(_reqs(3)) == ["2"] * 3  # overwritten
        with pytest.raises(ValueError):
            CachedVLM(vlm, cache, mode="sometimes")
    finally:
        srv.close()


# ------------------------------------------------------------------ a real server, swapped
class _Serve:
    """``transformers serve MODEL_DIR`` (tests/helpers/servers.py), healthy when constructed."""

    def __init__(self, model_dir: Path, port: int, log: Path):
        self.proc = start_transformers_serve(model_dir, port, log)

    def stop(self):
        stop_process(self.proc)


def test_swapped_model_behind_one_name_on_a_real_server_is_never_served_stale(tmp_path):
    """A tiny LLaVA served as ./my-vlm, then a tiny Qwen2-VL served under the same name and port.
    transformers serve reports nothing that tells them apart ({"id", "owned_by": "local",
    "created": 0}): the adapter warns that the identity is the name only, and the cache re-asks
    one cached request, sees a different answer and stops (before: all answers served stale)."""
    pytest.importorskip("torch")
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    work = tmp_path / "serve"
    work.mkdir()
    d = work / "my-vlm"
    port = _free_port()
    base = f"http://127.0.0.1:{port}/v1"
    cache = ResponseCache(tmp_path / "cache")
    reqs = _reqs(6, max_new_tokens=6)

    build_tiny_vlm("llava", d)
    srv = _Serve(d, port, tmp_path / "serve1.log")
    try:
        a = OpenAICompatibleVLM(base, str(d), timeout=120, **FAST)
        assert a.identity_by_name_only and a.identity_warning and "@VERSION" in a.identity_warning
        first = CachedVLM(a, cache).generate(reqs)
    finally:
        srv.stop()
    shutil.rmtree(d)
    build_tiny_vlm("qwen2_vl", d)
    srv = _Serve(d, port, tmp_path / "serve2.log")
    try:
        b = OpenAICompatibleVLM(base, str(d), timeout=120, **FAST)
        assert b.model_version == a.model_version  # nothing the server reports tells them apart ...
        assert b.identity_warning  # ... and the user is told so at load
        c = CachedVLM(b, cache)
        with pytest.raises(StaleCacheError, match="--refresh-cache"):
            c.generate(reqs)  # ... and no stale answer is served
        assert c.verified == 1
        fresh = CachedVLM(b, cache, mode="refresh").generate(reqs)
        assert sum(x != y for x, y in zip(first, fresh)) >= 4  # the two models do answer differently
        pinned = CachedVLM(OpenAICompatibleVLM(base, str(d), version="qwen-1", timeout=120, **FAST), cache)
        assert pinned.generate(reqs) == fresh and (pinned.hits, pinned.calls) == (0, 6)
        again = CachedVLM(OpenAICompatibleVLM(base, str(d), timeout=120, **FAST), cache)
        assert again.generate(reqs) == fresh and again.verified == 1  # refreshed cache verifies
    finally:
        srv.stop()


def test_hub_id_identity_is_the_resolved_commit_offline(tmp_path):
    """A hub id's identity is the commit its revision resolves to; offline, the local hub cache's
    ref (here a hand-made cache holding a tiny model).  The model is loaded at that commit."""
    pytest.importorskip("torch")
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    sha = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--acme--tiny-vlm"
    build_tiny_vlm("llava", repo / "snapshots" / sha)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(sha)
    code = ("import json; from perceptbench.models.vlm_hf import HFVLM; m = HFVLM('acme/tiny-vlm'); "
            "print(json.dumps([m.model_version, m.identity, m.identity_by_name_only]))")
    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    version, identity, by_name = json.loads(p.stdout.strip().splitlines()[-1])
    assert version == f"acme/tiny-vlm@{sha}" and not by_name
    assert identity == {"kind": "hub", "revision": "main", "commit": sha, "resolved_by": "local-cache"}


def test_hf_encoder_version_covers_processor_settings(tmp_path):
    """An image-text encoder in a local directory: editing its image processor's normalisation
    gives a new model_version (before: the hash covered the weight files only)."""
    import json

    from perceptbench.models.encoders_hf import local_dir_version
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "clip")
    before = local_dir_version(d)
    cfg = next(p for p in d.iterdir() if p.name in ("preprocessor_config.json", "processor_config.json"))
    data = json.loads(cfg.read_text())
    data["image_mean"] = [0.5, 0.5, 0.5]
    cfg.write_text(json.dumps(data))
    after = local_dir_version(d)
    assert before.rsplit(":", 1)[0] == after.rsplit(":", 1)[0] and before != after
