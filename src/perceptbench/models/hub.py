"""Whether the Hugging Face hub can be reached: one check shared by every back-end that may
download weights (``hf:``, ``timm:``, ``open_clip:``), so an offline machine fails in well under
a second instead of after the hub client's retries.  Imports no torch."""

from __future__ import annotations

import os
import socket


def _host_port(url: str) -> tuple[str, int]:
    from urllib.parse import urlparse

    u = urlparse(url)
    return u.hostname or url, u.port or (80 if u.scheme == "http" else 443)


def _hub_host() -> tuple[str, int]:
    return _host_port(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")


def host_unreachable_reason(url: str, timeout: float = 3.0) -> str | None:
    """Why the host of ``url`` (``https://api.openai.com``) cannot be reached, or None when one
    TCP connection to it (port from the URL, else 443 / 80 for ``http``) succeeds within
    ``timeout`` seconds."""
    return _connect_reason(*_host_port(url), timeout)


def _connect_reason(host: str, port: int, timeout: float) -> str | None:
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return f"{host}:{port} is not reachable ({type(e).__name__}: {e})"
    return None


def hub_unreachable_reason(timeout: float = 3.0) -> str | None:
    """Why the Hugging Face hub cannot be reached, or None when it can.

    ``HF_HUB_OFFLINE`` (any value but empty/0/false) is a reason by itself; otherwise one
    TCP connection to the hub host (``HF_ENDPOINT`` or huggingface.co, port 443) is
    tried with a ``timeout`` in seconds, so an offline machine is detected in well under a
    second instead of after the hub client's retries."""
    try:
        from huggingface_hub import constants as hf_constants
        offline_const = bool(getattr(hf_constants, "HF_HUB_OFFLINE", False))
    except ImportError:  # pragma: no cover
        offline_const = False
    if offline_const or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() not in ("", "0", "false", "no", "off"):
        return "HF_HUB_OFFLINE is set"
    return _connect_reason(*_hub_host(), timeout)
