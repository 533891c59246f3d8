"""Test configuration: the data mirror and offline mode.

Tests read human data from the local mirror (``PERCEPTBENCH_MIRROR``, default
``../shared/data`` beside the repository) and never download anything."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MIRROR = REPO.parent / "shared" / "data"

os.environ.setdefault("PERCEPTBENCH_MIRROR", str(DEFAULT_MIRROR))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def mirror() -> Path:
    p = Path(os.environ["PERCEPTBENCH_MIRROR"])
    if not (p / "texture-vs-shape").is_dir():
        raise RuntimeError(f"data mirror not found at {p}; set PERCEPTBENCH_MIRROR")
    return p
