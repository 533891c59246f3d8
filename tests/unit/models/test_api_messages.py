"""API messages that lead somewhere: the right provider and key, quiet retries, fail fast
on a local server that is not running."""

import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from perceptbench.models.api import APIError, OpenAICompatibleVLM
from perceptbench.models.base import ModelLoadError, VLMRequest
from perceptbench.models.registry import load_model

from helpers.cli import cli

FAST = dict(backoff_initial=0.01, backoff_max=0.05, retry_after_max=0.2)


def test_openai_without_key_names_openai_and_its_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelLoadError) as e:
        load_model("openai:gpt-4o-mini")
    msg = str(e.value)
    assert msg.startswith("openai model 'gpt-4o-mini'") and "OPENAI_API_KEY" in msg
    assert "openai-compatible" not in msg


def test_openai_without_key_on_the_cli_writes_nothing(tmp_path, mirror):
    p = cli("run", "--out", str(tmp_path / "r"), "--model", "openai:gpt-4o-mini", "--task",
            "similarity.chart.mark_color", "--no-progress", env={"OPENAI_API_KEY": None}, columns=300)
    assert p.returncode == 2 and "OPENAI_API_KEY" in p.stderr and "openai-compatible" not in p.stderr
    assert not (tmp_path / "r").exists()


class _Flaky(BaseHTTPRequestHandler):
    fails = 0

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        cls = type(self)
        if cls.fails > 0:
            cls.fails -= 1
            self.send_response(503)
            self.end_headers()
            return
        body = json.dumps({"choices": [{"message": {"content": "1"}}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_retries_are_quiet_one_progress_line(caplog):
    _Flaky.fails = 5
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        vlm = OpenAICompatibleVLM(f"http://127.0.0.1:{srv.server_address[1]}/v1", "m", max_retries=5,
                                  concurrency=1, **FAST)
        from PIL import Image

        req = VLMRequest((Image.new("RGB", (8, 8)),), "which?")
        with caplog.at_level(logging.DEBUG, logger="perceptbench.models.api"):
            assert vlm.generate([req, req]) == ["1", "1"]  # request 1 is retried 5 times
            _Flaky.fails = 2
            assert vlm.generate([req]) == ["1"]  # 2 more retries, later in the run
    finally:
        srv.shutdown()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "retrying quietly" in warnings[0].getMessage()
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 6  # the other retries, at DEBUG


def test_refused_loopback_connection_is_one_clear_error_without_retry_lines(caplog):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    vlm = OpenAICompatibleVLM(f"http://localhost:{port}/v1", "m", max_retries=40, backoff_initial=1, backoff_max=30)
    from PIL import Image

    with caplog.at_level(logging.DEBUG, logger="perceptbench.models.api"):
        with pytest.raises(APIError, match="nothing is listening") as e:
            vlm.generate([VLMRequest((Image.new("RGB", (8, 8)),), "which?")])
    assert e.value.attempts == 1 and not caplog.records
