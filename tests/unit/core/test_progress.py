"""Plain progress lines for output that is not a terminal (issue 24 item 3): when each line is
printed, and what it says (done/total, percent, rate, ETA), on an injected clock."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.progress import Progress

from perceptbench.core.progress import PROGRESS_EVERY_S, PlainProgress, progress_for


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_lines_are_printed_on_a_new_description_when_due_and_at_the_end():
    lines, clock = [], Clock()
    p = PlainProgress(lines.append, every=10, clock=clock)
    with p as bar:
        t = bar.add_task("silhouette | m", total=40)
        assert lines == []  # registering prints nothing
        bar.update(t, description="loading m ...")  # what the run does now: printed at once
        clock.t = 130.0  # loading took 30 s: not part of the rate
        bar.update(t, description="silhouette | m: computing probe features")
        bar.update(t, description="silhouette | m: computing probe features")  # unchanged: no line
        clock.t = 134.0
        bar.update(t, description="silhouette | m")
        bar.advance(t, 8)  # 4 s after the trials started: not due yet
        clock.t = 139.9
        bar.advance(t, 4)
        clock.t = 140.0
        bar.advance(t, 8)  # 10 s after the start: due; 20 done in 10 s
        clock.t = 145.0
        bar.advance(t, 10)  # 5 s after the last line: not due
        clock.t = 150.0
        bar.advance(t, 10)  # the last trials: printed whatever the interval
        bar.advance(t, 0)  # nothing after the end
    assert lines == [
        "progress: loading m ... (0/40)",
        "progress: silhouette | m: computing probe features (0/40)",
        "progress: silhouette | m (0/40)",
        "progress: silhouette | m 20/40 (50%) 2.00/s ETA 0:10",
        "progress: silhouette | m 40/40 (100%) 2.00/s done",
    ]


def test_the_eta_counts_minutes_and_the_rate_starts_at_the_first_trial_without_a_description():
    lines, clock = [], Clock()
    bar = PlainProgress(lines.append, every=1, clock=clock)
    t = bar.add_task("x | m", total=1000)
    bar.advance(t, 1)  # no description given: the first trial starts the clock
    clock.t += 4.0
    bar.advance(t, 3)  # 4 done in 4 s -> 996 s left = 16:36
    assert lines == ["progress: x | m 4/1000 (0%) 1.00/s ETA 16:36"]


def test_tasks_are_timed_apart():
    lines, clock = [], Clock()
    bar = PlainProgress(lines.append, every=5, clock=clock)
    a, b = bar.add_task("a", total=2), bar.add_task("b", total=10)
    bar.advance(a, 1)
    clock.t += 1
    bar.advance(a, 1)
    clock.t += 1
    bar.advance(b, 1)
    clock.t += 5
    bar.advance(b, 4)
    assert lines == ["progress: a 2/2 (100%) 2.00/s done", "progress: b 5/10 (50%) 1.00/s ETA 0:05"]


@pytest.mark.parametrize("every", [0, -1, float("nan")])
def test_a_non_positive_interval_is_refused(every):
    with pytest.raises(ValueError, match="must be a number of seconds > 0"):
        PlainProgress(print, every=every)


def test_a_terminal_gets_bars_other_output_gets_lines_and_disabled_gets_neither(tmp_path):
    with open(tmp_path / "log", "w") as f:
        log = Console(file=f)
        plain = progress_for(log, True, 7)
        assert isinstance(plain, PlainProgress) and plain.every == 7
        assert isinstance(progress_for(log, False), Progress)  # --no-progress: a disabled rich bar
        tty = Console(file=f, force_terminal=True)
        assert isinstance(progress_for(tty, True), Progress)
        assert PROGRESS_EVERY_S == 30.0
