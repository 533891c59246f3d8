"""similarity.chart.category_mean in the report: headline rows (accuracy against chance and
the pooled human accuracy, kappa against the human-human ceiling), its figure (accuracy by
number of categories beside the human curve; kappa against the ceiling) and its section."""

import math

import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.reports import figures as F
from perceptbench.reports.data import ReportData
from perceptbench.reports.headline import headline_rows
from perceptbench.reports.html import build_report

TID = "similarity.chart.category_mean@n_test=40"


def planted_rows(model="enc"):
    """Score rows as CellPanelScorer writes them, with hand-chosen numbers."""
    return [
        ScoreRow(TID, "human:panel", "accuracy@test", 0.912, 0.902, 0.923, 2900, 0),
        ScoreRow(TID, "human:panel", "a_k[2]@test", 0.97, 0.95, 0.99, 300, 0),
        ScoreRow(TID, "human:panel", "a_k[3]@test", 0.94, 0.91, 0.96, 320, 0),
        ScoreRow(TID, "human:panel", "ceiling_kappa_pairwise_mean@test", 0.062, -0.023, 0.169, 120, 3),
        ScoreRow(TID, model, "accuracy", 0.4, 0.25, 0.55, 40, 0),
        ScoreRow(TID, model, "B", 0.41, 0.25, 0.55, 37, 0),
        ScoreRow(TID, model, "kappa_pairwise", 0.031, -0.05, 0.11, 35, 0),
        ScoreRow(TID, model, "a_k[2]", 0.5, 0.2, 0.8, 20, 0),
        ScoreRow(TID, model, "a_k[3]", 0.3, 0.1, 0.5, 20, 0),
        ScoreRow(TID, model, "chance", 0.4166667, None, None, 40, 0),
        ScoreRow(TID, model, "position_floor", 0.35, None, None, 40, 0),
        ScoreRow(TID, model, "null_rate", 0.0, None, None, 40, 0),
    ]


def test_headline_gives_accuracy_against_chance_and_human_accuracy_and_kappa_against_the_ceiling():
    heads = {h.metric: h for h in headline_rows(planted_rows())}
    assert set(heads) == {"accuracy", "kappa_pairwise"}
    acc = heads["accuracy"]
    assert (acc.value, acc.ci_low, acc.ci_high) == (0.4, 0.25, 0.55)
    assert acc.floor == 0.4166667 and "chance" in acc.floor_label
    assert acc.ceiling == 0.912 and acc.ceiling_ci == (0.902, 0.923)
    assert acc.ratio == pytest.approx(0.4 / 0.912)
    assert acc.position == pytest.approx((0.4 - 0.4166667) / (0.912 - 0.4166667))
    assert "≤ chance" in acc.flags and "position floor 0.350" in acc.extra
    k = heads["kappa_pairwise"]
    assert k.floor == 0.0 and k.ceiling == 0.062 and k.ceiling_ci == (-0.023, 0.169)
    assert "human-human" in k.ceiling_label and k.ratio == pytest.approx(0.031 / 0.062)


def test_figure_draws_the_model_and_human_curves_by_k_and_the_kappa_ceiling():
    d = F.draw_category_mean(planted_rows())
    F.close(d)
    assert d.name == "category_mean_accuracy_by_k_and_error_consistency"
    got = {(r["model"], r["metric"], r["x"]): r["value"] for r in d.rows}
    assert got == {("human:panel", "a_k[2]@test", 2): 0.97, ("human:panel", "a_k[3]@test", 3): 0.94,
                   ("enc", "a_k[2]", 2): 0.5, ("enc", "a_k[3]", 3): 0.3,
                   ("human:panel", "ceiling_kappa_pairwise_mean@test", None): 0.062,
                   ("enc", "kappa_pairwise", "enc"): 0.031}
    assert all(r["evidence"] == "n=20" for r in d.rows if r["metric"].startswith("a_k[") and r["model"] == "enc")
    assert F.draw_category_mean([r for r in planted_rows() if not r.task_id.startswith("similarity.chart.cat")]) \
        is None


def test_report_has_a_category_mean_section_and_matrix_columns():
    data = ReportData([], [], planted_rows(), "planted")
    html, md, drawn, tables = build_report(data, "planted")
    for d in drawn:
        F.close(d)
    assert 'id="category"' in html and "Highest-mean category" in html
    assert "No headline metrics" not in html
    assert "category_mean_accuracy_by_k_and_error_consistency" in [d.name for d in drawn]
    matrix = next(t for t in tables if t.name == "table_model_by_task_matrix")
    assert matrix.columns[1:3] == (f"{TID} accuracy", f"{TID} kappa_pairwise")
    assert math.isclose(next(h for h in headline_rows(planted_rows()) if h.metric == "accuracy").value, 0.4)
