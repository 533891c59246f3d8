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
