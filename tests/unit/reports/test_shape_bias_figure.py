"""The per-category shape-bias figure (issue 23 item 3): categories on y, shape fraction on x,
the observers' mean and each model overlaid, tidy rows equal to the score rows drawn."""

import matplotlib.pyplot as plt

from perceptbench.core.rows import ScoreRow
from perceptbench.reports.figures import draw_shape_bias_by_category

T = "shape_bias.nat.cue_conflict"


def rows():
    return [ScoreRow(T, "human:panel", "shape_bias_pooled@test", 0.96, 0.95, 0.97, 100, 0),
            ScoreRow(T, "human:panel", "shape_bias_mean.airplane@test", 0.9, None, None, 10, 0),
            ScoreRow(T, "human:panel", "shape_bias_mean.cat@test", 1.0, None, None, 10, 0),
            ScoreRow(T, "m", "shape_bias", 0.3, 0.2, 0.4, 50, 0),
            ScoreRow(T, "m", "shape_bias.airplane", 0.25, None, None, 20, 0),
            ScoreRow(T, "m", "shape_bias.cat", float("nan"), None, None, 0, 0, "undefined"),
            ScoreRow("closure.nat.silhouette", "m", "accuracy", 0.5, 0.4, 0.6, 80, 0)]


def test_the_figure_draws_humans_and_models_per_category():
    d = draw_shape_bias_by_category(rows())
    try:
        assert d.name == "shape_bias_by_category"
        ax = d.fig.axes[0]
        assert [t.get_text() for t in ax.get_yticklabels()] == ["airplane", "cat"]
        drawn = {(r["model"], r["metric"], r["x"]): r["value"] for r in d.rows}
        assert drawn == {("human:panel", "shape_bias_pooled@test", None): 0.96,
                         ("human:panel", "shape_bias_mean.airplane@test", "airplane"): 0.9,
                         ("human:panel", "shape_bias_mean.cat@test", "cat"): 1.0,
                         ("m", "shape_bias", None): 0.3,
                         ("m", "shape_bias.airplane", "airplane"): 0.25}  # the undefined cat point is not drawn
        assert "shape" in ax.get_xlabel() and ax.get_xlim()[0] > ax.get_xlim()[1]  # shape on the left
    finally:
        plt.close(d.fig)


def test_no_cue_conflict_rows_no_figure():
    assert draw_shape_bias_by_category([r for r in rows() if r.task_id != T]) is None


def test_a_model_with_few_answers_is_hollow_and_marked_in_its_legend_and_data():
    """The figures' one rule for values on few answers (headline.thin_evidence): 40 of 50 null."""
    thin = [ScoreRow(T, "m", "null_rate", 0.8, None, None, 50, 40)] + rows()
    d = draw_shape_bias_by_category(thin)
    try:
        ev = {(r["model"], r["metric"]): r["evidence"] for r in d.rows}
        assert ev[("m", "shape_bias")] == "40/50 null" and ev[("human:panel", "shape_bias_pooled@test")] == ""
        labels = [t.get_text() for t in d.fig.legends[0].get_texts()]
        assert "m (0.30), 40/50 null" in labels and any(t.startswith("hollow: few answers") for t in labels)
        faces = [c.get_facecolors() for c in d.fig.axes[0].collections if c.get_label().startswith("m (")]
        assert faces and all(tuple(f) == (1.0, 1.0, 1.0, 1.0) for f in faces[0])
    finally:
        plt.close(d.fig)
    d = draw_shape_bias_by_category(rows())  # no null_rate row: only the n rule (under 30 scored trials)
    try:
        ev = {(r["model"], r["metric"]): r["evidence"] for r in d.rows}
        assert ev[("m", "shape_bias")] == "" and ev[("m", "shape_bias.airplane")] == "n=20"
    finally:
        plt.close(d.fig)
