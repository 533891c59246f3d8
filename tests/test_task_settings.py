"""Task settings are validated (type and range) and normalised before anything is written
(issue 7 item 7; issue 11: one setting, one task id)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perceptbench.tasks import get_task
from perceptbench.tasks.base import Setting, Stimulus, require_test_stimuli

FIXTURE = Path(__file__).parent / "fixtures" / "salbench" / "local_annotations.json"
SC = "similarity.chart.series_count"

BAD = [
    (f"{SC}@n_test=0", "n_test='0'", "an integer in [1, 100000]"),
    (f"{SC}@n_test=-5", "n_test='-5'", "an integer in [1, 100000]"),
    (f"{SC}@n_test=abc", "n_test='abc'", "an integer in [1, 100000]"),
    (f"{SC}@n_test=2.5", "n_test='2.5'", "an integer"),
    (f"{SC}@n_test=4_0", "n_test='4_0'", "an integer"),  # int() would accept it
    (f"{SC}@n_test=١٢", "n_test='١٢'", "an integer"),  # and this
    (f"{SC}@n_test=100001", "n_test='100001'", "[1, 100000]"),
    (f"{SC}@n_probe=-1", "n_probe='-1'", "an integer in [0, 100000]"),
    ("salbench.detection.syn@n=0", "n='0'", "an integer in [3, 1000000]"),
    ("salbench.detection.syn@n=2", "n='2'", "[3, "),
    ("salbench.detection.syn@n_probe=x", "n_probe='x'", "an integer"),
    ("salbench.detection.syn@shots=4", "shots='4'", "one of 0, 3, 5"),
    ("salbench.detection.syn@shots=3,n_probe=2", "shots=3 needs n_probe >= 3", "n_probe=2"),
    ("salbench.detection.nat@probe_fraction=1", "probe_fraction='1'", "a number in [0, 1)"),
    ("salbench.detection.nat@probe_fraction=-0.1", "probe_fraction='-0.1'", "[0, 1)"),
    ("salbench.detection.nat@probe_fraction=nan", "probe_fraction='nan'", "[0, 1)"),
    ("salbench.detection.nat@probe_fraction=half", "probe_fraction='half'", "[0, 1)"),
    ("similarity.chart.mark_color@kernel=l7", "kernel='l7'", "one of l5, l9, sa, td, tm"),
]


@pytest.mark.parametrize("task_id,names,allowed", BAD)
def test_bad_setting_is_one_line_naming_setting_value_and_range(task_id, names, allowed):
    with pytest.raises(ValueError) as e:
        get_task(task_id)
    msg = str(e.value)
    assert names in msg and allowed in msg and "\n" not in msg, msg


@pytest.mark.parametrize("a,b", [
    (f"{SC}@n_test=040", f"{SC}@n_test=40"),
    (f"{SC}@n_test=+40", f"{SC}@n_test= 40"),
    (f"{SC}@n_test=041,n_probe=0150", f"{SC}@n_test=41"),
    ("salbench.detection.nat@probe_fraction=0.50", "salbench.detection.nat@probe_fraction=.5"),
    ("salbench.detection.nat@probe_fraction=5e-1", "salbench.detection.nat@probe_fraction=0.5"),
    ("salbench.detection.syn@n=0030,shots=3", "salbench.detection.syn@shots=3,n=30"),
])
def test_one_setting_one_task_id(a, b):
    assert get_task(a).task_id == get_task(b).task_id
    assert get_task(a).params == get_task(b).params


def test_normalised_ids():
    assert get_task(f"{SC}@n_test=040").task_id == SC  # 40 is the default
    assert get_task(f"{SC}@n_test=041").task_id == f"{SC}@n_test=41"
    assert get_task("salbench.detection.nat@probe_fraction=0.0").task_id == "salbench.detection.nat"
    assert get_task("salbench.detection.nat@probe_fraction=0.50").task_id == "salbench.detection.nat@probe_fraction=0.5"


def test_setting_normalise_and_describe():
    s = Setting("float", 0, 1, maximum_open=True)
    assert [s.normalise(v) for v in ("0", "0.25", "2.5e-1", ".25")] == ["0", "0.25", "0.25", "0.25"]
    assert s.describe() == "a number in [0, 1)"
    with pytest.raises(ValueError):
        s.normalise("inf")
    assert Setting("int", 1).describe() == "an integer in [1, inf)"


def test_zero_test_stimuli_is_an_error():
    task = get_task(SC)
    probe_only = [Stimulus("p0", "probe_train", render=lambda: None, ground_truth=2)]
    with pytest.raises(ValueError, match="no test stimuli"):
        require_test_stimuli(task, probe_only)
    require_test_stimuli(task, probe_only + [Stimulus("t0", "test", render=lambda: None, ground_truth=2)])


def test_probe_fraction_leaving_no_test_stimulus_is_an_error():
    t = get_task(f"salbench.detection.nat@source={FIXTURE},probe_fraction=0.99")
    with pytest.raises(ValueError, match="probe_fraction=0.99 leaves no test stimulus"):
        t.stimuli(0)


def _cli(*args):
    env = {**os.environ, "COLUMNS": "300"}
    return subprocess.run([sys.executable, "-m", "perceptbench.cli", *args], capture_output=True, text=True, env=env)


@pytest.mark.parametrize("task_id,needle", [
    (f"{SC}@n_test=0", "n_test='0' is invalid; allowed: an integer in [1, 100000]"),
    (f"{SC}@n_test=abc", "n_test='abc' is invalid"),
    (f"salbench.detection.nat@source={FIXTURE},probe_fraction=0.99", "leaves no test stimulus"),
])
def test_cli_run_refuses_before_writing(tmp_path, task_id, needle):
    out = tmp_path / "run"
    p = _cli("run", "--out", str(out), "--task", task_id, "--model", "x=hf:/nonexistent", "--no-progress")
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stdout and "wrote" not in p.stdout, p.stdout
    assert "Traceback" not in p.stderr
    assert not (out / "records.jsonl").exists() and not (out / "run.json").exists()
