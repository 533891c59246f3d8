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


@pytest.fixture(scope="session")
def served_model(tmp_path_factory):
    """(base_url, model dir): ``transformers serve`` on a free 127.0.0.1 port serving a tiny
    random-init Qwen2-VL, started once for the session (test_api_clients, test_vsi_api) and
    torn down after.  Nothing is faked: a real server process answers real HTTP."""
    pytest.importorskip("transformers", reason="model extra not installed")
    from helpers.servers import free_port, start_transformers_serve, stop_process

    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    d = build_tiny_vlm("qwen2_vl", tmp_path_factory.mktemp("served") / "tiny_qwen2_vl")
    port = free_port()
    proc = start_transformers_serve(d, port, tmp_path_factory.mktemp("servelog") / "serve.log")
    try:
        yield f"http://127.0.0.1:{port}/v1", d
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def human_run(tmp_path_factory, mirror):
    """A run directory with only the human records of similarity.chart.mark_color (one per test module)."""
    from perceptbench.runner import RunConfig, run

    out = tmp_path_factory.mktemp("hr") / "run"
    run(RunConfig(out=out, tasks=["similarity.chart.mark_color"], models=[]), progress=False)
    return out
