"""The runner's checks before anything is written: one identity per trial (issue 20 item 3)."""

from __future__ import annotations

import dataclasses

import pytest

from perceptbench.records import make_trial_id
from perceptbench.runner import check_trial_identity
from perceptbench.tasks import get_task

from helpers.cli import cli, one_line_error

TASK = "similarity.chart.mark_color"


def test_separator_in_a_part_is_refused_so_two_trials_cannot_share_an_id():
    """Model ``m1|m2`` on stimulus ``s`` had the id of model ``m2`` on stimulus ``s|m1``."""
    with pytest.raises(ValueError, match=r"model name 'm1\|m2' contains '\|'"):
        make_trial_id("t", "s", "m1|m2", 0)
    with pytest.raises(ValueError, match=r"stimulus id 's\|m1' contains '\|'"):
        make_trial_id("t", "s|m1", "m2", 0)
    with pytest.raises(ValueError, match=r"task id 'a\|b' contains"):
        make_trial_id("a|b", "s", "m", 0)
    assert make_trial_id("t", "s", "m", 2) == "t|s|m|rep2"


def test_run_refuses_a_model_name_with_the_separator_before_anything_is_written(tmp_path):
    out = tmp_path / "run"
    p = cli("run", "--model", "m1|m2=efficientnet-lite0", "--task", TASK, "--out", out, "--no-progress",
            columns=300)
    one_line_error(p, "model name 'm1|m2'", "'|'", "SHORT=SPEC")
    assert not out.exists()


def test_distinct_trial_ids_must_equal_stimuli_x_models_x_reps(mirror):
    task = get_task(TASK)
    stimuli = task.stimuli(0)
    test = [s for s in stimuli if s.split == "test"]
    n = check_trial_identity([(task, stimuli)], ["a", "b"], ["image"])
    assert n == 2 * len(test)
    twin = dataclasses.replace(test[1], stimulus_id=test[0].stimulus_id)  # two stimuli under one id
    with pytest.raises(ValueError) as e:
        check_trial_identity([(task, stimuli + [twin])], ["a", "b"], ["image"])
    msg = str(e.value)
    assert (f"{TASK}: {2 * (len(test) + 1)} trials" in msg and f"stimulus id {test[0].stimulus_id!r}" in msg
            and "nothing was run" in msg and "\n" not in msg)


def test_run_json_is_begun_while_the_run_holds_the_records_lock(tmp_path, mirror, monkeypatch):
    """Issue 20 item 6: two runs of different seeds started together into one new --out; the
    refused one's run.json won the race (it was written in a lock taken and released before the
    records store took it again).  run.json must be begun inside the lock the run keeps."""
    from perceptbench.core import rundir
    from perceptbench.runner import RunConfig, run

    held_at_start = []
    original = rundir.RunDir.start

    def start(self, seed, **kw):
        held_at_start.append(str(self.records.resolve()) in rundir._HELD)
        return original(self, seed, **kw)

    monkeypatch.setattr(rundir.RunDir, "start", start)
    run(RunConfig(out=tmp_path / "run", tasks=[TASK], models=[]), progress=False)
    assert held_at_start == [True]


def test_a_resumed_run_says_it_cut_a_torn_final_line(tmp_path, mirror):
    """The store cuts the incomplete last line a crash left (never a whole record); the run said
    nothing of it, while score and report warn of the same line.  It now warns, naming the file and
    the bytes cut, and the trial is written again."""
    import io

    from rich.console import Console

    from perceptbench.records import read_records
    from perceptbench.runner import RunConfig, run

    out = tmp_path / "run"
    cfg = RunConfig(out=out, tasks=[TASK], models=[])
    run(cfg, progress=False)
    records = out / "records.jsonl"
    whole = records.read_bytes()
    lines = whole.splitlines(keepends=True)
    records.write_bytes(b"".join(lines[:-1]) + lines[-1][:30])  # the last record torn after 30 bytes
    buf = io.StringIO()
    summary = run(cfg, progress=False, console=Console(file=buf, width=300))
    want = f"{records}: cut its incomplete final line (30 bytes, a write a crash left unfinished); that trial runs again"
    assert summary.warnings == [want]
    assert f"warning: {want}" in buf.getvalue()
    (tmp_path / "whole.jsonl").write_bytes(whole)
    assert sorted(r.trial_id for r in read_records(records, allow_torn_tail=False)) == sorted(
        r.trial_id for r in read_records(tmp_path / "whole.jsonl"))
