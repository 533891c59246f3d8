"""The report's data (perceptbench.reports.data): a run rescored from its records keeps the judge
reading of its judgments.jsonl (HallusionBench's @judge rows), as `perceptbench score` does."""

from __future__ import annotations

import json

from helpers.records import plant_records
from perceptbench.reports.data import load_report_data
from perceptbench.tasks import get_task
from perceptbench.vsi.judge import JUDGMENTS


def test_a_run_rescored_for_the_report_keeps_its_judge_reading(tmp_path):
    from helpers.records import plant_vsi_record

    task = get_task("vsi.hallusionbench@no_image=0")
    ext = {"category": "VD", "subcategory": "illusion", "set_id": "0", "figure_id": "0", "question_id": "0"}
    recs = [plant_vsi_record(task, "clean", "hb-q0", [1], [0.0], response="yes", raw_output="Yes.", external=ext)]
    plant_records(tmp_path / "run", recs)
    data = load_report_data([tmp_path / "run"])  # no scores.json: rescored from the records
    assert data.scores_source == "rescored from records"
    assert not any(r.metric.endswith("@judge") for r in data.scores)
    (tmp_path / "run" / JUDGMENTS).write_text(json.dumps(
        {"trial_id": recs[0].trial_id, "verdict": "correct", "reply": "Correct.", "judge": "gpt",
         "judge_version": "gpt-x"}) + "\n")
    judged = {r.metric: r for r in load_report_data([tmp_path / "run"]).scores if r.metric.endswith("@judge")}
    # the rule reads "yes" against the planted truth "B": wrong (0); the judge said correct: 1
    rule = {r.metric: r for r in load_report_data([tmp_path / "run"]).scores}
    assert rule["hallusionbench.aAcc@image_questions"].value == 0.0
    assert judged["hallusionbench.aAcc@image_questions@judge"].value == 1.0
    assert "gpt (gpt-x)" in judged["hallusionbench.aAcc@image_questions@judge"].note
