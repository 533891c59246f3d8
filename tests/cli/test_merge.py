"""`perceptbench merge`: how a conflict between two runs reads (the merging itself: tests/unit/test_runs.py,
its --out and interruption: tests/cli/test_paths.py)."""

import json

import numpy as np

from perceptbench.tasks import get_task

from helpers.cli import cli, one_line_error
from helpers.records import plant_records, plant_vsi_record


def test_vsi_conflict_is_one_short_line_naming_lines_and_the_differing_logprob(tmp_path, mirror):
    """A VSI trial in two runs whose first-token log-probabilities differ in the 4th of 50: the
    refusal printed both whole lists (about 2,300 characters, no line numbers)."""
    task = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    ids = list(range(50))
    lps = np.log(np.linspace(1, 0.01, 50) / np.linspace(1, 0.01, 50).sum()).tolist()
    other = lps[:3] + [lps[3] - 0.001] + lps[4:]
    a = plant_records(tmp_path / "a", [plant_vsi_record(task, "clean", f"s{i}", ids, lps) for i in range(3)])
    b = plant_records(tmp_path / "b", [plant_vsi_record(task, "clean", "s2", ids, other, run_id="r2")])
    p = cli("merge", a.parent, b.parent, "--out", tmp_path / "m", columns=80)
    trial = f"{task.task_id}|s2~clean|m|rep0"
    one_line_error(p, repr(trial), f"{a}:3 and {b}:1", f"first in run_meta.vsi.logprobs[3]: {json.dumps(lps[3])} vs "
                   f"{json.dumps(other[3])};", "keep one run, or rerun the model under another short name")
    assert p.stderr.count("\n") == 1 and not p.stdout  # one line, also on an 80-column console
    assert len(p.stderr) < 300 + len(str(a)) + len(str(b)) and json.dumps(lps[4]) not in p.stderr
    assert not (tmp_path / "m").exists()
