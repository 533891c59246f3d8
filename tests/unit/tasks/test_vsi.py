"""The parser modes reach VSI clean answers at scoring time, and VSI score rows count
ambiguous and unclosed-reasoning answers as battery rows do (issue 19 item 4)."""

import numpy as np
import pytest

from perceptbench.scoring import score_records

TASK = "vsi.salbench.syn@n=4"
RAW = {  # sample -> the clean greedy answer (ground truth B everywhere)
    "s0": "b",  # default/strict: B (lower case); seed: null
    "s1": "Option B, or maybe option C.",  # ambiguous: default and seed B, strict null
    "s2": "<think>C or B",  # reasoning block never closed: null (seed: null too, no rule fires)
    "s3": "Answer: **B**",  # default/strict: B; seed: null (markdown after the marker)
}


def _records(response):
    from perceptbench.tasks import get_task
    from perceptbench.tasks.base import make_record

    t = get_task(TASK)
    recs = []
    for sid, raw in RAW.items():
        for cond in ("clean", "whole_blur"):
            clean = cond == "clean"
            vsi = {"sample_id": sid, "image_id": sid, "benchmark": "salbench.syn", "condition": cond,
                   "sigma_px": 0.0 if clean else 20.0, "dilate_px": 4, "region_source": "exact",
                   "region_bbox": [0, 0, 4, 4], "fallback": False, "answer_prefix": "", "top_k": 50,
                   "token_ids": [1, 2], "tokens": ["1", "2"], "logprobs": [float(np.log(0.6)), float(np.log(0.3))],
                   "complete": False, "distribution_source": "hf_logits", "image_sha256": "x",
                   "max_prob": 0.6 if clean else None, "verbal_conf": None, "verbal_raw": None}
            recs.append(make_record(t, stimulus_id=f"{sid}~{cond}", model="m", model_family="vlm",
                                    readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed",
                                    response=response if clean else None, ground_truth="B",
                                    manipulated_value=cond, raw_output=raw if clean else None,
                                    prompt_id=t.prompt_id, prompt_hash=None, model_version="v", seed=0,
                                    run_id="r", vsi=vsi))
    return recs


def _rows(mode):
    rows = score_records(_records(response=None), parser_mode=mode)  # recorded responses: all null
    return {r.metric: r for r in rows if r.task_id == TASK and r.model == "m"}


@pytest.mark.parametrize("mode,n_null,accuracy", [("default", 1, 1.0), ("strict", 2, 1.0), ("seed", 3, 1.0)])
def test_parser_mode_re_parses_vsi_clean_answers(mode, n_null, accuracy):
    rows = _rows(mode)
    assert rows["n_parse_null"].value == n_null
    if accuracy is None:
        assert "accuracy" not in rows
    else:
        assert rows["accuracy"].value == accuracy and rows["accuracy"].n == 4 - n_null


@pytest.mark.parametrize("mode,ambiguous,unclosed", [("default", 1, 1), ("strict", 1, 1), ("seed", 1, 0)])
def test_vsi_rows_count_ambiguous_and_unclosed_reasoning(mode, ambiguous, unclosed):
    rows = _rows(mode)
    assert rows["n_ambiguous"].value == ambiguous and rows["n_ambiguous"].n == 4
    assert rows["n_unclosed_reasoning"].value == unclosed
    assert "parser mode " + mode in rows["n_ambiguous"].note
