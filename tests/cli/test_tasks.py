"""``perceptbench tasks`` says plainly which tasks are scored against human data, and which are not
and what stands in (issue 24 item 4)."""

from __future__ import annotations

import re

import pytest

from perceptbench.tasks.registry import DEFAULT_BATTERY

from perceptbench.tasks import get_task
from perceptbench.tasks.registry import TASKS

from helpers.cli import cli


@pytest.mark.parametrize("base_id", sorted(TASKS))
def test_every_task_says_in_words_whether_human_data_score_it(base_id):
    words = get_task(base_id).human_data
    assert re.match(r"^(yes|no)[: ]", words), words  # a plain yes or no first
    assert len(words) > 40 and "none:" not in words  # then what, whose, or what stands in


@pytest.mark.parametrize("base_id, first", [
    ("closure.nat.silhouette", "yes: each of 10 observers' answer"),
    ("closure.nat.edges", "yes: each of 10 observers' answer to every line drawing"),
    ("similarity.chart.mark_color", "yes: a perceptual kernel"),
    ("similarity.chart.series_count", "no per-trial answers: a published capacity band"),
    ("similarity.chart.category_mean", "yes: 3,822 per-trial answers"),
    ("salbench.detection.syn", "no human answers"),
    ("vsi.pope", "no human answers: the benchmark's ground-truth labels"),
    ("vsi.closure.nat.silhouette", "yes: each of 10 observers' answer"),  # the clean answers, as the base task
])
def test_human_data_names_what_each_family_is_scored_against(base_id, first):
    words = get_task(base_id).human_data
    assert words.startswith(first), words
    assert ("VSI" in words) == base_id.startswith("vsi.")


def test_the_tasks_listing_shows_the_human_data_column():
    p = cli("tasks", columns=100)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    block = out[out.index("closure.nat.silhouette"):out.index("similarity.chart.mark_color")]
    assert "human data: yes: each of 10 observers' answer to every silhouette" in " ".join(block.split())
    assert "human reference id: geirhos2019.silhouette.modal" in block
    sal = out[out.index("salbench.detection.syn\n"):]
    assert "human data: no human answers" in " ".join(sal.split()[:60])


def test_the_edge_task_is_listed_with_its_human_data_and_is_not_in_the_default_run():
    p = cli("tasks", columns=100)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    silh = out[out.index("closure.nat.silhouette\n"):out.index("closure.nat.edges\n")]
    edges = out[out.index("closure.nat.edges\n"):out.index("similarity.chart.mark_color")]
    assert "battery: default (and full)" in silh and "battery: full" in edges  # opt-in: --task or --battery full
    assert "human reference id: geirhos2019.edges.modal" in edges
    assert "published:* records" in " ".join(edges.split())


@pytest.mark.parametrize("base_id, ref", [
    ("similarity.chart.mark_shape", "demiralp2014.shape-tm"), ("similarity.chart.mark_size", "demiralp2014.size-tm"),
    ("similarity.chart.mark_shape_color", "demiralp2014.shapecolor-tm"),
    ("similarity.chart.mark_size_color", "demiralp2014.sizecolor-tm"),
    ("similarity.chart.mark_shape_size", "demiralp2014.shapesize-tm")])
def test_the_kernel_tasks_are_listed_opt_in_with_their_kernel(base_id, ref):
    p = cli("tasks", columns=100)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    start = out.index(base_id + "\n")
    block = out[start:out.index("\n", out.index("description:", start))]
    assert "human data: yes: a perceptual kernel" in " ".join(block.split())
    assert f"human reference id: {ref}" in block
    assert "battery: full" in block  # opt-in: the colour task alone is in the default run
    assert "battery: default (and full)" in out[out.index("similarity.chart.mark_color\n"):]


def test_tasks_says_which_battery_runs_each_task():
    from perceptbench.tasks.registry import FULL_BATTERY

    out = cli("tasks", columns=100).stdout
    for tid in FULL_BATTERY:
        block = out[out.index(tid + "\n"):]
        block = block[:block.index("description:")]
        assert ("battery: default (and full)" if tid in DEFAULT_BATTERY else "battery: full") in block, tid
    sal = out[out.index("salbench.detection.syn\n"):]
    assert "battery:" not in sal[:sal.index("description:")]  # named with --task only
    assert "full = 10 tasks" in " ".join(out.split())


def test_the_tasks_listing_names_the_silhouette_observers_records_id_beside_the_reference_id():
    """Before: the listing gave only geirhos2019.silhouette.modal (the id model trials carry) while the
    observers' records and the report's provenance say geirhos2019.silhouette.raw: both are named now."""
    out = cli("tasks", columns=100).stdout
    block = " ".join(out[out.index("closure.nat.silhouette\n"):out.index("closure.nat.edges\n")].split())
    assert "human reference id: geirhos2019.silhouette.modal" in block
    assert ("human records' id: geirhos2019.silhouette.raw (the observers' trials; the human reference id is "
            "their modal answer)") in block
    task = get_task("closure.nat.silhouette")
    assert task.human_raw_ref_id == "geirhos2019.silhouette.raw"  # the id its human records carry
    wide = cli("tasks", columns=400).stdout
    assert "geirhos2019.silhouette.raw" in wide and "geirhos2019.silhouette.modal" in wide


def test_the_piped_tasks_listing_keeps_each_field_on_one_line():
    """Piped, each field is one whole line (grep finds it); before, rich broke lines at 150 columns."""
    out = cli("tasks", columns=None, env={"COLUMNS": None}).stdout
    edges = out[out.index("closure.nat.edges\n"):out.index("\n", out.index("    description:", out.index("closure.nat.edges\n")))]
    human = [line for line in edges.splitlines() if line.startswith("    human data: ")]
    assert len(human) == 1 and human[0].rstrip().endswith("published:* records"), edges
    assert all(line.startswith("    ") for line in edges.splitlines()[1:]), edges  # no continuation lines
