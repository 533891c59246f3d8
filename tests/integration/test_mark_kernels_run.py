"""The kernel odd-one-out tasks over mark shape, size and the three 4x4 bivariate sets (issue 23 items 1-2)
run end to end, opt-in, on the default encoder and a tiny VLM, and score like mark colour."""

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.records import read_records
from perceptbench.reports.headline import headline_rows
from perceptbench.scoring import score_file
from perceptbench.seeding import image_sha256
from perceptbench.tasks import get_task
from perceptbench.tasks.gestalt import MARK_KERNEL_IDS
from perceptbench.tasks.registry import DEFAULT_BATTERY
from perceptbench.testing.tiny_vlm import build_tiny_vlm
from helpers.cli import cli

NEW = [t for t in MARK_KERNEL_IDS if t != "similarity.chart.mark_color"]
STIMULI = ["mark_0-1-2", "mark_0-4-9", "mark_1-5-8", "mark_2-3-7", "mark_3-6-9", "mark_5-7-8"]


def test_the_new_kernel_tasks_are_opt_in():
    assert len(NEW) == 5 and not set(NEW) & set(DEFAULT_BATTERY)


def test_encoder_and_tiny_vlm_run_every_new_kernel_task(tmp_path):
    vlm = build_tiny_vlm("llava", tmp_path / "tiny-llava")
    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--model", "efficientnet-lite0", "--model", f"hf:{vlm}", "--no-progress"]
    for t in NEW:
        args += ["--task", t]
    for s in STIMULI:
        args += ["--stimulus", s]
    p = cli(*args, env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    rows = score_file(out / "records.jsonl")
    heads = {(h.task_id, h.model, h.metric) for h in headline_rows(rows)}
    for tid in NEW:
        task = get_task(tid)
        stimuli = {s.stimulus_id: s for s in task.stimuli(0)}
        mine = [r for r in recs if r.task_id == tid and not r.model.startswith("human:")]
        assert sorted((r.model, r.stimulus_id) for r in mine) == sorted(
            (m, s) for m in ("efficientnet-lite0", "tiny-llava") for s in STIMULI)
        for r in mine:
            assert r.response in (None, 1, 2, 3) and r.ground_truth == stimuli[r.stimulus_id].ground_truth
            assert r.readout == ("vlm_prompt" if r.model == "tiny-llava" else "odd_one_out_cosine")
            # the image the trial saw is the task's montage of the study's marks
            assert r.run_meta.model_extra["stimulus_sha256"] == image_sha256(stimuli[r.stimulus_id].render())
        enc = [r for r in mine if r.model == "efficientnet-lite0"]
        assert all(r.response is not None for r in enc)
        by = {(r.model, r.metric): r for r in rows if r.task_id == tid}
        for m in ("efficientnet-lite0", "tiny-llava"):
            assert by[(m, "B")].n + by[(m, "B")].n_null == len(STIMULI)
            assert (m, "position_floor") in by
            assert (tid, m, "B") in heads  # the headline table and report show them like mark colour
            # against the 20 subjects' raw judgments: error consistency beside the ceiling
            assert by[(m, "kappa_pairwise")].n + by[(m, "kappa_pairwise")].n_null == len(STIMULI)
            assert (tid, m, "kappa_pairwise") in heads and (m, "B_subject_mode") in by
        assert ("human:kernels", "n_differ_max") in by and ("human:kernel-tm", "B") not in by
        assert by[("human:panel", "ceiling_kappa_pairwise_mean@all")].n == len(STIMULI)  # humans: the run's stimuli
