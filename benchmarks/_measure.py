"""Shared measurement helpers of bench_scoring.py, bench_report.py and bench_export.py (issue 25).

Every arm is timed in CPU time (the measure on a shared machine: user + system seconds of the
process, or of a child process from ``os.wait4``) beside wall time; arms are interleaved
(A, B, A, B, ...) so a change of machine load hits both alike; each repeat records the load
average (``os.getloadavg()[0]``) at its start; :func:`summary` gives median and range."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from typing import Callable


def run_child(cmd: list[str], env: dict | None = None, cwd=None) -> dict:
    """Run ``cmd`` to completion; {"wall_s", "cpu_s" (user + system of that child and its own
    children), "peak_rss_mib" (its ``ru_maxrss``)}.  Raises CalledProcessError on failure."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, cmd, stderr=err)
    return {"wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mib": ru.ru_maxrss / 1024}


def in_process(fn: Callable[[], object]) -> dict:
    """Time ``fn()`` in this process: {"wall_s", "cpu_s" (``time.process_time``)}."""
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}


def interleave(arms: dict[str, Callable[[], dict]], repeats: int) -> list[dict]:
    """``repeats`` rounds, each running every arm once in the given order; one dict per round:
    {"load": load average at its start, arm: that arm's measurement}."""
    out = []
    for _ in range(repeats):
        rnd = {"load": round(os.getloadavg()[0], 2)}
        for name, fn in arms.items():
            rnd[name] = fn()
        out.append(rnd)
    return out


def summary(xs: list[float], nd: int = 3) -> dict:
    """{"median", "min", "max", "n"} of ``xs``."""
    return {"median": round(statistics.median(xs), nd), "min": round(min(xs), nd), "max": round(max(xs), nd),
            "n": len(xs)}


def ratios(rounds: list[dict], a: str, b: str, key: str = "cpu_s") -> list[float]:
    """Per round, ``b[key] / a[key]`` (B relative to A, both from the same round)."""
    return [r[b][key] / r[a][key] for r in rounds]
