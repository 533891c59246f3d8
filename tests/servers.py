"""Test helper shared by the tests that start a real local server process
(transformers serve, llama_cpp.server, scripted servers)."""

from __future__ import annotations

import subprocess


def stop_process(proc: subprocess.Popen, timeout: float = 20) -> None:
    """Terminate ``proc`` and wait for it; kill it if it has not exited after ``timeout`` s."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
