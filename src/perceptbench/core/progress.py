"""Progress of a run as plain lines, for output that is not a terminal (a log file, ``nohup``, a
cluster job), where rich's progress bars would appear only at the end.

:class:`PlainProgress` has the part of ``rich.progress.Progress``'s interface the runner uses
(``add_task``, ``update``, ``advance``, a context manager), so the runner picks one or the other
by whether its console is a terminal (:func:`progress_for`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

PROGRESS_EVERY_S = 30.0
"""Default seconds between two plain progress lines of one task (``perceptbench run --progress-every``)."""


@dataclass
class _Line:
    description: str
    total: int
    done: int = 0
    started: float | None = None
    printed: float | None = None
    finished: bool = False
    extra: dict = field(default_factory=dict)


class PlainProgress:
    """Plain progress lines: ``progress: DESCRIPTION done/total (pct%) RATE/s ETA MM:SS``.

    A line is printed when a task's description changes (loading a model, computing probe
    features: printed at once), when it finishes, and otherwise at most once every ``every``
    seconds (wall clock) of advancing.  The rate is trials per second since the task's trials
    started (its first description that is not ``loading ...``, else its first trial written); the ETA is the trials left divided by that rate.  ``print_line`` receives
    each line; ``clock`` gives seconds (``time.monotonic``; injectable for tests).  Raises
    ValueError for ``every`` <= 0."""

    def __init__(self, print_line: Callable[[str], None], every: float = PROGRESS_EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not every > 0:
            raise ValueError(f"progress interval {every!r}: must be a number of seconds > 0")
        self.print_line, self.every, self.clock = print_line, float(every), clock
        self.tasks: list[_Line] = []

    def __enter__(self) -> "PlainProgress":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, description: str, total: int) -> int:
        """Register a task of ``total`` trials; returns its id.  Prints nothing yet."""
        self.tasks.append(_Line(description, int(total)))
        return len(self.tasks) - 1

    def update(self, task_id: int, description: str | None = None, refresh: bool = False) -> None:
        """A new description is printed at once (it says what the run is doing now)."""
        t = self.tasks[task_id]
        if t.started is None and t.done == 0 and description is not None and not description.startswith("loading "):
            t.started = t.printed = self.clock()  # the model is loaded: its trials start now
        if description is not None and description != t.description:
            t.description = description
            self.print_line(f"progress: {description} ({t.done}/{t.total})")

    def advance(self, task_id: int, k: int = 1) -> None:
        """``k`` more trials of ``task_id`` written; prints a line when due (see the class)."""
        t = self.tasks[task_id]
        now = self.clock()
        if t.started is None:
            t.started, t.printed = now, now
        t.done += int(k)
        if t.finished:
            return
        if t.done >= t.total:
            t.finished = True
            self.print_line(self._line(t, now))
        elif now - t.printed >= self.every:
            t.printed = now
            self.print_line(self._line(t, now))

    def _line(self, t: _Line, now: float) -> str:
        pct = 100.0 * t.done / t.total if t.total else 100.0
        elapsed = now - (t.started if t.started is not None else now)
        rate = t.done / elapsed if elapsed > 0 else float("nan")
        if t.done >= t.total:
            eta = "done"
        elif rate > 0:
            left = (t.total - t.done) / rate
            eta = f"ETA {int(left // 60):d}:{int(left % 60):02d}"
        else:
            eta = "ETA ?"
        rate_s = f"{rate:.2f}/s" if rate == rate else "?/s"
        return f"progress: {t.description} {t.done}/{t.total} ({pct:.0f}%) {rate_s} {eta}"


def progress_for(console, enabled: bool, every: float = PROGRESS_EVERY_S, rich_columns: tuple = ()):
    """The progress display of a run: rich bars on a terminal, :class:`PlainProgress` lines on
    ``console`` when it is not one (``console.is_terminal`` False), nothing when ``enabled`` is
    False or there is no console."""
    from rich.progress import Progress

    if enabled and console is not None and not console.is_terminal:
        return PlainProgress(lambda s: console.print(s, highlight=False, markup=False, soft_wrap=True), every)
    return Progress(*rich_columns, disable=not enabled, console=console)
