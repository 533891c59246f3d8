"""reports/figures.py: each draw function returns its Figure and its tidy data (``report --figures``)."""

import json

import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.reports import figures as F


def test_vsi_histogram_data_rows_are_the_bins_of_the_rows_note():
    tid, metric = "vsi.salbench.syn@n=40", "vsi_histogram[region_blur,sigma=20]"
    edges = [0.0, 1e-4, 1e-2, 1.0, None]
    rows = [ScoreRow(tid, "m", metric, 40.0, None, None, 40, None,
                     json.dumps({"edges_nats": edges, "counts": [30, 6, 4, 0]})),
            ScoreRow(tid, "m", "insensitive_frac@0.05[region_blur,sigma=20]", 0.9, 0.8, 0.97, 40, 0)]
    d = F.draw_vsi_histograms(rows)
    F.close(d)
    assert d.name == "vsi_per_sample_histograms"
    bins = [r for r in d.rows if r["plotted_as"] == "bin"]
    assert [(r["x"], r["n"], r["value"]) for r in bins] == [
        ("[0, 0.0001)", 30, pytest.approx(0.75)), ("[0.0001, 0.01)", 6, pytest.approx(0.15)),
        ("[0.01, 1)", 4, pytest.approx(0.1)), ("[1, inf)", 0, 0.0)]
    assert all(r["value_source"].startswith("share of samples in the bin") for r in bins)
    ins = [r for r in d.rows if r["metric"].startswith("insensitive_frac")]
    assert len(ins) == 1 and ins[0]["value"] == 0.9 and ins[0]["value_source"] == "scores.csv"


def test_every_row_has_every_column_and_says_where_its_number_comes_from():
    tid = "similarity.chart.mark_color"
    rows = [ScoreRow(tid, "m", "B", 0.5, 0.4, 0.6, 120, 3), ScoreRow(tid, "m", "position_floor", 0.33, None, None, 120, 0),
            ScoreRow(tid, "human:kernel-l5", "B", 0.87, None, None, 120, 0)]
    d = F.draw_mark_color(rows)
    F.close(d)
    assert all(set(r) == set(F.DATA_COLUMNS) and r["figure"] == d.name and r["value_source"] for r in d.rows)
    by_role = {r["role"]: r for r in d.rows}
    assert set(by_role) == {"model", "floor", "kernel"}
    m = by_role["model"]
    assert (m["model"], m["metric"], m["value"], m["ci_low"], m["ci_high"], m["n"], m["n_null"]) == \
        ("m", "B", 0.5, 0.4, 0.6, 120, 3)
    assert by_role["kernel"]["model"] == "human:kernel-l5" and by_role["kernel"]["x"] == tid


def test_rows_about_several_models_are_not_respondents_of_the_headline_or_the_figures():
    from perceptbench.reports.headline import headline_rows

    tid = "closure.nat.silhouette"
    rows = [ScoreRow(tid, m, "accuracy", 0.5, 0.4, 0.6, 80, 0) for m in ("a", "all-models", "a~b", "all-pairs")]
    assert F._models(rows, lambda t: t == tid) == ["a"]
    assert [h.model for h in headline_rows(rows)] == ["a"]
