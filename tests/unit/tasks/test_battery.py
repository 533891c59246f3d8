"""``--battery``: the default battery stays the README's fast main job; ``full`` adds every opt-in
task whose human data are here, and refuses in one line, before anything is written, while the
cue-conflict images are not fetched (issue 23 item 4)."""

import sys
from pathlib import Path

import pytest

from helpers.cli import cli
from perceptbench.api import RunOptions
from perceptbench.sources.fetch import MissingSourceError
from perceptbench.stimuli import cue_conflict
from perceptbench.tasks.gestalt import MARK_KERNEL_IDS
from perceptbench.tasks.registry import (DEFAULT_BATTERY, FULL_BATTERY, battery_of, battery_tasks,
                                         check_battery)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
from make_cue_conflict_fixture import release_names, write_cue_conflict_images  # noqa: E402

OPT_IN = ("similarity.chart.mark_shape", "similarity.chart.mark_size", "similarity.chart.mark_shape_color",
          "similarity.chart.mark_size_color", "similarity.chart.mark_shape_size", "closure.nat.edges",
          "shape_bias.nat.cue_conflict")


def test_the_default_battery_is_unchanged_and_full_adds_the_opt_in_tasks():
    assert DEFAULT_BATTERY == ("closure.nat.silhouette", "similarity.chart.mark_color",
                               "similarity.chart.series_count")
    assert battery_tasks("default") == DEFAULT_BATTERY
    assert FULL_BATTERY == DEFAULT_BATTERY + OPT_IN and set(MARK_KERNEL_IDS) <= set(FULL_BATTERY)
    assert [battery_of(t) for t in ("closure.nat.silhouette", "closure.nat.edges", "salbench.detection.syn")] == [
        "default", "full", ""]
    with pytest.raises(ValueError, match="--battery 'huge': must be one of default, full"):
        battery_tasks("huge")


def test_a_run_takes_the_battery_then_the_named_tasks():
    assert RunOptions().task_ids() == DEFAULT_BATTERY
    assert RunOptions(tasks=["closure.nat.edges"]).task_ids() == ("closure.nat.edges",)
    assert RunOptions(battery="full").task_ids() == FULL_BATTERY
    extra = "salbench.detection.syn@n=60,n_probe=60"
    assert RunOptions(battery="default", tasks=[extra, "closure.nat.silhouette"]).task_ids() == DEFAULT_BATTERY + (
        extra,)


def test_full_refuses_in_one_line_naming_the_fetch_command_and_writes_nothing(tmp_path):
    out = tmp_path / "run"
    p = cli("run", "--battery", "full", "--out", out, "--no-progress", env={"PERCEPTBENCH_CACHE": str(tmp_path)},
            in_process=True)
    flat = " ".join(p.stderr.split())
    assert p.returncode == 2, p.stdout
    assert flat.count("error:") == 1 and "--battery full includes shape_bias.nat.cue_conflict" in flat
    assert "`perceptbench sources fetch geirhos2019-cue-conflict`" in flat
    assert not out.exists()


def test_full_is_accepted_once_the_images_are_in_the_default_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path))
    with pytest.raises(MissingSourceError):
        check_battery("full")
    write_cue_conflict_images(tmp_path / "texture-vs-shape" / cue_conflict.STIMULI_FOLDER, release_names())
    check_battery("full")
    check_battery("default")
