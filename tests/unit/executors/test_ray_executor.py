"""executors/ray_executor.py without a cluster: how Ray is started."""

import pytest


def test_ray_init_silences_rays_own_log_lines(monkeypatch, tmp_path):
    """run_plan starts Ray with its driver logger at ERROR (ray.init's documented logging_level) and
    without worker log forwarding: Ray's "INFO worker.py -- Started a local Ray instance" and token-auth
    WARNING lines no longer reach the terminal (checked by hand on a real local Ray: stderr empty)."""
    import logging

    ray = pytest.importorskip("ray", reason="the ray extra is not installed")  # .ci/run installs it
    from perceptbench.executors import ray_executor

    seen = {}

    class Stop(Exception):
        pass

    def fake_init(**kw):
        seen.update(kw)
        raise Stop

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", fake_init)
    with pytest.raises(RuntimeError, match="Ray cluster .local. did not start .Stop"):
        ray_executor.run_plan([], store=None, seed=0, run_id="r", batch_size=None, out=tmp_path, cache_mode="off",
                              extra_meta=dict, gate=lambda *a: None)
    assert seen["logging_level"] == logging.ERROR and seen["log_to_driver"] is False


def test_ray_that_cannot_start_fails_in_one_line_before_anything_is_written(monkeypatch, tmp_path, mirror):
    """Issue 20 item 6: when the Ray node did not start in time, `run --executor ray` printed a
    traceback after it had written 150 human records."""
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    from helpers.cli import cli

    def no_node(**kw):
        raise TimeoutError("The current node timed out during startup.\nsee the logs")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", no_node)
    out = tmp_path / "run"
    p = cli("run", "--out", out, "--task", "similarity.chart.mark_color", "--model", "m=efficientnet-lite0",
            "--executor", "ray", "--no-progress", in_process=True, columns=400)
    assert p.returncode == 2 and "Traceback" not in p.stdout, p.stdout
    msg = " ".join(p.stderr.split())
    assert msg.startswith("error: --executor ray: the Ray cluster (local) did not start (TimeoutError: The current "
                          "node timed out during startup.); nothing was written"), msg
    assert not out.exists()
