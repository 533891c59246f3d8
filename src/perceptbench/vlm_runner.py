"""Where the VLM response cache lives.  The prompt trials themselves are
:class:`perceptbench.respond.prompt.PromptRespondent`."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "PERCEPTBENCH_RESPONSE_CACHE"


def response_cache_dir() -> Path:
    """``PERCEPTBENCH_RESPONSE_CACHE`` or ``<PERCEPTBENCH_CACHE or ~/.cache/perceptbench>/responses``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    from .sources.fetch import cache_dir

    return cache_dir() / "responses"
