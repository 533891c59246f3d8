"""Every task that ``perceptbench tasks`` lists runs end to end at its smallest setting (on a
fixture where its data is external), with the default encoder or, for the tasks only a VLM can
answer (SalBench, VSI), a tiny random-weight VLM; each then has headline rows for its model
(the table printed after ``run``/``score``, the report's matrix and cards) and appears in a
section of the report before the provenance.  The tasks are read from the registry, so a task
added later is walked without anyone listing it here; one that needs external data fails here
until it gets a fixture in :func:`fixture_specs` (issue 24: the suite was green while
``vsi.mmstar`` could never run and ``category_mean`` had no headline)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="model extra not installed")
pytest.importorskip("transformers", reason="model extra not installed")
pytest.importorskip("datasets", reason="external extra not installed")

from perceptbench.core.settings import Setting  # noqa: E402
from perceptbench.reports import figures as F  # noqa: E402
from perceptbench.reports.data import load_report_data  # noqa: E402
from perceptbench.reports.headline import headline_rows  # noqa: E402
from perceptbench.reports.html import build_report  # noqa: E402
from perceptbench.runner import RunConfig, run  # noqa: E402
from perceptbench.sources.things_release import IMAGES_ENV, TRIPLETS_ENV  # noqa: E402
from perceptbench.tasks import get_task  # noqa: E402
from perceptbench.tasks.registry import list_tasks  # noqa: E402

from helpers.paths import FIXTURES  # noqa: E402
from helpers.task_data import (THINGS_TRIPLETS, write_hallusionbench_images, write_pope_images,  # noqa: E402
                               write_things_images)

sys.path.insert(0, str(FIXTURES))
from make_cue_conflict_fixture import release_names, write_cue_conflict_images  # noqa: E402

LISTED = [cls.base_id for cls in list_tasks()]
VLM_ONLY = ("salbench.", "vsi.")
"""Tasks run with the tiny VLM: SalBench's referring variants and every VSI task need a prompt."""

SMALL_COUNT = 3
"""The generic smallest setting: every integer count setting (``n``, ``n_test``, ``limit``) at
max(its minimum, 3); the probe-train split of a probe readout keeps its default."""

SMALLEST = {
    "similarity.chart.series_count": "n_test=15,n_probe=30",  # every k once, 2 per k to fit the ridge probe
    "similarity.chart.category_mean": "probe_batches=1,n_test=12,n_probe=40",
    "similarity.nat.things_ooo": "n=2",  # the fixture release has 2 test triplets with a modal choice
    "salbench.detection.syn": "n=3,n_probe=0", "salbench.referring.syn": "n=3,n_probe=0",
    "salbench.visual_referring.syn": "n=3,n_probe=0",
    "vsi.salbench.syn": "n=2,verbal_conf=0", "vsi.closure.nat.silhouette": "n=2,verbal_conf=0",
    "vsi.similarity.chart.mark_color": "n=2,verbal_conf=0", "vsi.similarity.chart.series_count": "n=2,verbal_conf=0",
}
"""Smallest settings where the generic rule (:data:`SMALL_COUNT`) does not fit."""


def fixture_specs(tmp: Path) -> dict[str, str]:
    """base id -> settings that point a task whose data is external at a fixture under ``tmp``
    (written here; the files in tests/fixtures are in each release's own format)."""
    sal = FIXTURES / "salbench" / "local_annotations.json"
    pope_q = FIXTURES / "pope" / "coco_pope_adversarial.json"
    hb_q = FIXTURES / "hallusionbench" / "HallusionBench.json"
    write_pope_images(tmp / "val2014", pope_q)
    write_hallusionbench_images(tmp / "hb", hb_q)
    cue = write_cue_conflict_images(tmp / "cue", release_names())
    return {
        "shape_bias.nat.cue_conflict": f"images={cue}",
        "salbench.detection.nat": f"source={sal}", "salbench.referring.nat": f"source={sal}",
        "salbench.visual_referring.nat": f"source={sal}",
        "vsi.pope": f"images={tmp / 'val2014'},questions={pope_q},perturbation=whole,verbal_conf=0,limit=2",
        "vsi.hallusionbench": f"images={tmp / 'hb'},questions={hb_q},perturbation=whole,verbal_conf=0",
        "vsi.mmvp": f"source={FIXTURES / 'mmvp' / 'release'},perturbation=whole,verbal_conf=0",
        "vsi.mmstar": f"source={FIXTURES / 'mmstar' / 'mmstar.parquet'},verbal_conf=0",
    }


def smallest_task_id(base: str, fixtures: dict[str, str]) -> str:
    """``base`` at its smallest setting: :data:`SMALLEST`, else every integer count setting at
    max(minimum, :data:`SMALL_COUNT`); plus the fixture settings of an external-data task."""
    cls = next(c for c in list_tasks() if c.base_id == base)
    if base in SMALLEST:
        parts = [SMALLEST[base]]
    else:
        parts = []
        for k in cls.defaults:
            spec = cls.setting_spec(cls, k)
            if k in ("n", "n_test", "limit") and isinstance(spec, Setting) and spec.kind == "int":
                parts.append(f"{k}={max(int(spec.minimum or 1), SMALL_COUNT)}")
    if base in fixtures:
        parts.append(fixtures[base])
    params = ",".join(p for p in parts if p)
    return base + (f"@{params}" if params else "")


@pytest.fixture(scope="module")
def walk_env(tmp_path_factory):
    """(smallest task spec per listed base id, tiny VLM directory), the fixtures' environment set."""
    from perceptbench.testing.tiny_vlm import build_tiny_llava

    tmp = tmp_path_factory.mktemp("every-task")
    specs = {b: smallest_task_id(b, fixture_specs(tmp / "data")) for b in LISTED}
    llava = build_tiny_llava(tmp / "tiny-llava", init_range=1.0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(TRIPLETS_ENV, str(THINGS_TRIPLETS))
        mp.setenv(IMAGES_ENV, str(write_things_images(tmp / "things")))
        mp.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp / "cache"))
        yield specs, llava


def test_the_registry_lists_every_family():
    """The walk below covers what ``perceptbench tasks`` prints (its rows come from list_tasks)."""
    assert {"closure.nat.silhouette", "similarity.chart.category_mean", "vsi.mmstar"} <= set(LISTED)
    assert len(LISTED) == len(set(LISTED))


@pytest.mark.parametrize("base", LISTED)
def test_task_runs_and_has_a_headline_row_and_a_report_section(walk_env, base, tmp_path):
    specs, llava = walk_env
    spec = specs[base]
    model = f"tiny-llava=hf:{llava}" if base.startswith(VLM_ONLY) else "efficientnet-lite0"
    stim = ()
    if base == "shape_bias.nat.cue_conflict":  # 4 of its 608 test images (its probe split is the release's)
        stim = [s.stimulus_id for s in get_task(spec).stimuli(0) if s.split == "test"][:4]
    run(RunConfig(out=tmp_path / "run", tasks=[spec], models=[model], stimuli=stim), progress=False)
    data = load_report_data([tmp_path / "run"])
    html, _, drawn, _ = build_report(data, base)
    for d in drawn:
        F.close(d)
    tid = get_task(spec).task_id  # as the records spell it
    mine = [h for h in headline_rows(data.scores) if h.task_id == tid and not h.model.startswith("human:")]
    assert mine, f"{tid}: no headline row (reports/headline.py TASK_RULES)"
    before_provenance = html[:html.index('<h2 id="provenance">')]
    assert tid in before_provenance.replace("&amp;", "&").replace("&#34;", '"'), \
        f"{tid}: in no section of the report before the provenance"
