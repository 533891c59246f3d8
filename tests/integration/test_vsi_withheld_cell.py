"""The image-withheld VSI cell: ``perceptbench run --condition image --condition image_withheld``
on a VSI task scores KL(p_clean of M || p of M[image_withheld]) per sample, with the rows a blur
cell has, checked here against a KL written out by hand from the records; a run without the
withheld condition has no such row, and M's own rows do not change."""

from __future__ import annotations

import json
import math
import statistics

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.core.conditions import DEFAULT_CONDITION, parse_respondent_label, respondent_label  # noqa: E402
from perceptbench.records import read_records  # noqa: E402
from perceptbench.runner import RunConfig, run  # noqa: E402
from perceptbench.scoring import PARSE_COUNTS, score_file, score_records  # noqa: E402
from perceptbench.testing.tiny_vlm import build_tiny_vlm  # noqa: E402

from helpers.by_hand import kl_by_hand, percentile  # noqa: E402

TASK = "vsi.salbench.syn@n=8"
TAG = "[image_withheld]"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(records path with the withheld condition, records path without it); one response cache."""
    root = tmp_path_factory.mktemp("withheld-cell")
    model = build_tiny_vlm("llava", root / "tiny-llava")
    mp = pytest.MonkeyPatch()
    mp.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(root / "cache"))
    try:
        for name, conditions in (("both", ("image", "image_withheld")), ("image", ("image",))):
            run(RunConfig(out=root / name, tasks=(TASK,), models=(f"llava=hf:{model}",), conditions=conditions),
                progress=False)
    finally:
        mp.undo()
    return root / "both" / "records.jsonl", root / "image" / "records.jsonl"


def test_withheld_records_score_a_vsi_cell_against_the_models_clean_records(runs):
    both, _ = runs
    recs = [json.loads(ln) for ln in both.read_text().splitlines()]
    clean = {r["run_meta"]["vsi"]["sample_id"]: r["run_meta"]["vsi"] for r in recs
             if r["model"] == "llava" and r["readout"] == "vlm_vsi_clean"}
    blind = {r["run_meta"]["vsi"]["sample_id"]: r["run_meta"]["vsi"] for r in recs
             if r["model"] == "llava[image_withheld]"}
    assert len(blind) == 8 and set(blind) == set(clean)
    kl = [kl_by_hand(clean[s], blind[s]) for s in sorted(clean)]
    changed = [(clean[s]["token_ids"] or clean[s]["tokens"])[0] != (blind[s]["token_ids"] or blind[s]["tokens"])[0]
               for s in sorted(clean)]

    rows = {r.metric: r for r in score_file(both) if r.model == "llava[image_withheld]"}
    assert set(rows) == {f"{m}{TAG}" for m in ("vsi_median", "vsi_q25", "vsi_q75", "insensitive_frac@0.05",
                                                "insensitive_frac@0.01", "argmax_change_rate", "vsi_histogram")
                         } | set(PARSE_COUNTS)  # the answers given without the image are re-parsed too
    # the default parser reads each answer given without the image as the run did
    assert rows["n_reparsed_changed"].value == 0 and rows["n_reparsed_changed"].n == 8
    med = rows["vsi_median" + TAG]
    assert med.n == 8 and med.value == pytest.approx(statistics.median(kl), rel=1e-9, abs=1e-15)
    assert (med.ci_low, med.ci_high) == pytest.approx((percentile(kl, 0.25), percentile(kl, 0.75)), rel=1e-9)
    assert med.note.startswith("KL(p_clean of llava || p of llava[image_withheld])")
    for t in (0.05, 0.01):
        assert rows[f"insensitive_frac@{t:g}{TAG}"].value == pytest.approx(sum(x < t for x in kl) / 8)
    assert rows["argmax_change_rate" + TAG].value == pytest.approx(sum(changed) / 8)
    hist = json.loads(rows["vsi_histogram" + TAG].note)
    edges = [math.inf if e is None else e for e in hist["edges_nats"]]
    assert hist["counts"] == [sum(lo <= x < hi for x in kl) for lo, hi in zip(edges, edges[1:])]
    assert sum(hist["counts"]) == 8


def test_a_run_without_the_withheld_condition_has_no_withheld_row_and_the_same_other_rows(runs):
    both, image_only = runs

    def table(path):
        return {(r.task_id, r.model, r.metric): (str(r.value), str(r.ci_low), str(r.ci_high), r.n, r.n_null)
                for r in score_file(path, out_csv=path.with_name("s.csv"))}

    with_blind, without = table(both), table(image_only)
    assert not [k for k in without if "image_withheld" in k[1] or "image_withheld" in k[2]]
    withheld_rows = {k for k in with_blind if "image_withheld" in k[1] or "image_withheld" in k[2]}
    assert withheld_rows and all(k[1] == "llava[image_withheld]" and (k[2].endswith(TAG) or k[2] in PARSE_COUNTS)
                                 for k in withheld_rows)
    # the model's own rows and the cross-task analyses (blur cells only) are unchanged
    assert {k: v for k, v in with_blind.items() if k not in withheld_rows} == without


def test_withheld_records_without_the_models_clean_records_give_a_row_that_says_so(runs):
    both, _ = runs
    rows = [r for r in score_records([r for r in read_records(both) if r.model != "llava"])
            if r.model == "llava[image_withheld]"]
    assert [r.metric for r in rows] == ["vsi_median" + TAG, *PARSE_COUNTS]  # and its answers' parse counts
    assert math.isnan(rows[0].value) and "no clean record of llava" in rows[0].note


@pytest.mark.parametrize("label, expected", [
    ("llava[image_withheld]", ("llava", "image_withheld")),
    ("llava", ("llava", DEFAULT_CONDITION)),
    ("llava[prompt=1a2b3c4d]", ("llava[prompt=1a2b3c4d]", DEFAULT_CONDITION)),  # a prompt version, no condition
    ("hf:org/m[image_withheld]", ("hf:org/m", "image_withheld")),
    ("[image_withheld]", ("[image_withheld]", DEFAULT_CONDITION)),  # no model name before the bracket
])
def test_a_respondent_label_is_read_back_into_model_and_condition(label, expected):
    assert parse_respondent_label(label) == expected
    assert respondent_label(*expected) == label
