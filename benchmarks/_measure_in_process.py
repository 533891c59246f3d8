"""In-process timing (the benchmarks that time code inside one process; benchmarks/_measure.py times child processes). Shared measurement method of the benchmark scripts (issue 25, item 4).

Every arm (A, B, ...) is timed in the same way and the arms are *interleaved*: repeat ``r`` runs
each arm once, in an order that alternates between repeats (A B, B A, A B, ...), so neighbours'
load falls on both arms alike.  Each timing records

* ``cpu``: CPU seconds of this process (``time.process_time``: user + system, all threads) plus
  those of children that ended during the call (``resource.getrusage(RUSAGE_CHILDREN)``), the main
  measure on a shared machine (it counts the work done, not the neighbours' share of the cores);
* ``wall``: ``time.perf_counter`` seconds;
* ``load``: the 1-minute load average (``os.getloadavg``) when the call started.

:func:`report` prints, per arm, the median and range (min-max) of CPU and wall seconds over the
repeats and the load range; :func:`ratio` the median and range of per-repeat ratios (A's repeat r
over B's repeat r, both measured side by side).  Nothing here is asserted by a test: speed
lives in ``benchmarks/`` (issue 25).
"""

from __future__ import annotations

import os
import resource
import statistics
import time
from typing import Callable


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def timed(fn: Callable[[], object]) -> dict:
    """Run ``fn()`` once: ``{"cpu", "wall", "load", "value"}`` (seconds; ``value``: what fn returned)."""
    load = os.getloadavg()[0]
    c0, k0, w0 = time.process_time(), _children_cpu(), time.perf_counter()
    value = fn()
    w1, c1, k1 = time.perf_counter(), time.process_time(), _children_cpu()
    return {"cpu": (c1 - c0) + (k1 - k0), "wall": w1 - w0, "load": load, "value": value}


def interleave(arms: dict[str, Callable[[], object]], repeats: int) -> dict[str, list[dict]]:
    """Each arm ``repeats`` times, interleaved (order reversed on odd repeats): ``{arm: [timed(...)]}``."""
    names = list(arms)
    out: dict[str, list[dict]] = {n: [] for n in names}
    for r in range(repeats):
        for n in (names if r % 2 == 0 else names[::-1]):
            out[n].append(timed(arms[n]))
    return out


def spread(xs: list[float], fmt: str = "{:.3f}") -> str:
    """``median [min-max]`` of ``xs``."""
    return f"{fmt.format(statistics.median(xs))} [{fmt.format(min(xs))}-{fmt.format(max(xs))}]"


def report(runs: dict[str, list[dict]], unit: str = "s") -> None:
    """Print per arm: CPU and wall seconds as median [range] and the load range."""
    for name, rs in runs.items():
        loads = [r["load"] for r in rs]
        print(f"  {name:28s} CPU {spread([r['cpu'] for r in rs])} {unit}   wall {spread([r['wall'] for r in rs])} "
              f"{unit}   load {min(loads):.1f}-{max(loads):.1f}   (n={len(rs)})")


def ratio(a: list[dict], b: list[dict], key: str = "cpu") -> list[float]:
    """Per-repeat ratios ``b[r][key] / a[r][key]`` (how many A's fit in one B: A's speed relative to B)."""
    return [y[key] / x[key] for x, y in zip(a, b)]


def loads(runs: dict[str, list[dict]]) -> str:
    """The load range over all timings of ``runs``."""
    ls = [r["load"] for rs in runs.values() for r in rs]
    return f"{min(ls):.1f}-{max(ls):.1f}"
