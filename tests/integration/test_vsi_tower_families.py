"""Issue 22 item 5: the VSI run with the encoder-LLM probe on a tiny model of every VLM family
(:data:`perceptbench.testing.tiny_vlm.VISION_FAMILIES`): each model's own vision tower is found,
its features are written, and scoring gives own-tower probe rows (no ``skipped`` row)."""

import json

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.runner import RunConfig, run  # noqa: E402
from perceptbench.scoring import score_file  # noqa: E402
from perceptbench.testing.tiny_vlm import VISION_FAMILIES, build_tiny_vlm  # noqa: E402

TASK = "vsi.salbench.syn@n=10"  # 10 samples: the fewest the 5-fold probe scores


@pytest.fixture(scope="module")
def tower_run(tmp_path_factory, monkeypatch_module):
    root = tmp_path_factory.mktemp("tower_families")
    monkeypatch_module.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(root / "cache"))
    models = tuple(f"{f}=hf:{build_tiny_vlm(f, root / f)}" for f in VISION_FAMILIES)
    run(RunConfig(out=root / "run", tasks=(TASK,), models=models, batch_size=8), progress=False)
    score_file(root / "run" / "records.jsonl")
    return root / "run"


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


NO_ANSWER_POSITION = ("gemma3",)
"""Tiny models whose random text model puts all its mass on a newline as the first answer token:
every sample is flagged ``non_answer_position`` (no VSI at a whitespace position), so no VSI cell
and no probe row; their tower features are still written
(``test_feature_sidecars_name_each_familys_tower``) and checked by hand in
``tests/unit/vsi/test_probe.py``."""


def test_every_family_gets_own_tower_probe_rows(tower_run):
    rows = json.loads((tower_run / "scores.json").read_text())
    for fam in NO_ANSWER_POSITION:
        mine = {r["metric"]: r for r in rows if r["model"] == fam}
        assert mine["n_flagged[region_blur,sigma=20]"]["value"] == 10
        assert not any("probe" in m or "skipped" in m for m in mine)
    for fam in set(VISION_FAMILIES) - set(NO_ANSWER_POSITION):
        mine = {r["metric"]: r for r in rows if r["model"] == fam}
        assert not [m for m in mine if m.startswith("skipped")], (fam, [mine[m]["note"] for m in mine if "skipped" in m])
        probe = [r for m, r in mine.items() if m.startswith("probe_acc_all[")]
        assert len(probe) == 2, fam  # region and whole blur
        for r in probe:
            assert 0 <= r["value"] <= 1 and r["n"] == 10, (fam, r)
            assert "own vision tower" in r["note"]
        assert any(m.startswith("witness_probe_acc_all[") and mine[m]["value"] is not None for m in mine)


def test_feature_sidecars_name_each_familys_tower(tower_run):
    for fam in VISION_FAMILIES:
        meta = json.loads((tower_run / "features" / f"{fam}_vsi.salbench.syn_n_10.json").read_text())
        assert meta["hook"] == "vision_features" and meta["dim"] == 32 and "skipped" not in meta, (fam, meta)
        assert meta["vision_tower"] and meta["vision_tower"] != "?"
