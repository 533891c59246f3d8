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


@pytest.fixture(autouse=True)
def _fresh_score_caches_under_mutation_testing():
    """Under mutation testing (mutmut sets ``MUTANT_UNDER_TEST``) every test starts with empty
    in-process caches of human-side score rows, so every test that scores runs the scoring code
    itself; otherwise a test served from an earlier test's cache is never linked to, nor run
    against, the mutants of the functions behind the cache.  Normal runs keep the caches."""
    if "MUTANT_UNDER_TEST" in os.environ:
        import sys

        gestalt = sys.modules.get("perceptbench.tasks.gestalt")
        if gestalt is not None:
            gestalt._HUMAN_ROWS.entries.clear()
            gestalt._HUMAN_SIDE.entries.clear()
    yield
