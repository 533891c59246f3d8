"""Test helpers shared by the tests that start a real local server process
(transformers serve, llama_cpp.server, scripted servers)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path


def stop_process(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Terminate ``proc`` and wait for it; kill it if it has not exited after ``timeout`` s."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def transformers_cli() -> str:
    """Path of the ``transformers`` CLI beside this interpreter (extra ``transformers[serving]``)."""
    exe = Path(sys.executable).parent / "transformers"
    found = str(exe) if exe.exists() else shutil.which("transformers")
    assert found, "the `transformers` CLI is missing: pip install 'transformers[serving]'"
    return found


def start_transformers_serve(model_dir: Path, port: int, log: Path, timeout: float = 180) -> subprocess.Popen:
    """Start ``transformers serve MODEL_DIR`` on 127.0.0.1:``port`` (CPU, offline, no API key in
    its environment, output to ``log``) and wait until ``/health`` answers 200.  Raises
    AssertionError with the log's tail when it exits or is not healthy within ``timeout`` s."""
    import httpx

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.pop("OPENAI_API_KEY", None)
    with open(log, "wb") as fh:
        proc = subprocess.Popen([transformers_cli(), "serve", str(model_dir), "--host", "127.0.0.1", "--port",
                                 str(port), "--device", "cpu"], stdout=fh, stderr=subprocess.STDOUT, env=env,
                                cwd=Path(model_dir).parent)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    stop_process(proc)
    raise AssertionError(f"transformers serve did not become healthy (rc={proc.poll()}):\n"
                         f"{Path(log).read_text()[-3000:]}")


def chat_json(text: str, logprobs: list | None = None) -> dict:
    """An OpenAI chat-completions response body answering ``text``; ``logprobs``: the first
    token's ``[(token, logprob), ...]`` top list (the first entry is the chosen token)."""
    choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    if logprobs is not None:
        choice["logprobs"] = {"content": [{"token": logprobs[0][0], "logprob": logprobs[0][1],
                                           "top_logprobs": [{"token": t, "logprob": lp} for t, lp in logprobs]}]}
    return {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]}


class GlitchServer:
    """A fake OpenAI-compatible server on 127.0.0.1 (a real HTTP server in a thread) whose
    answers a test writes: ``respond(body, n)`` gets the request's JSON body and its 0-based
    number and returns ``(status, payload)``; a ``str``/``bytes`` payload is sent as it is (so
    truncated JSON and raw escapes such as a lone ``\\ud83d`` can be sent), anything else as
    JSON.  ``GET .../models`` answers 404 (no model metadata).  ``requests`` holds every body.
    Use as a context manager; ``url`` ends in ``/v1``."""

    def __init__(self, respond):
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.respond = respond
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._send(404, b'{"error": "not found"}')

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                with outer.lock:
                    n = len(outer.requests)
                    outer.requests.append(body)
                status, payload = outer.respond(body, n)
                if isinstance(payload, str):
                    payload = payload.encode("utf-8")
                elif not isinstance(payload, bytes):
                    payload = json.dumps(payload).encode("utf-8")
                self._send(status, payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "GlitchServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class FileServer:
    """A real HTTP server on 127.0.0.1 (a thread) serving the files under ``root`` at
    ``url/<relative path>``, as a raw-file host (GitHub's raw.githubusercontent.com) does.
    ``faults`` maps a relative path to what goes wrong there: an int answers that HTTP status,
    ``"hang"`` sleeps ``hang_s`` seconds before answering (a timeout for a shorter client timeout),
    ``"truncate"`` announces the full Content-Length and sends half the bytes, then closes; a
    fault given as ``(fault, n)`` applies to the first ``n`` requests of that path only.
    ``requests`` lists every requested relative path.  Use as a context manager."""

    def __init__(self, root, faults: dict | None = None, hang_s: float = 3.0):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        from urllib.parse import unquote

        self.root = Path(root)
        self.faults = dict(faults or {})
        self.requests: list[str] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                rel = unquote(self.path.lstrip("/"))
                with outer.lock:
                    outer.requests.append(rel)
                    fault = outer.faults.get(rel)
                    if isinstance(fault, tuple):
                        f, left = fault
                        outer.faults[rel] = (f, left - 1) if left > 1 else None
                        fault = f
                if fault == "hang":
                    time.sleep(hang_s)
                    fault = None
                if isinstance(fault, int):
                    self.send_response(fault)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                p = outer.root / rel
                if not p.is_file():
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                data = p.read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fault == "truncate":
                    self.wfile.write(data[:len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "FileServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
