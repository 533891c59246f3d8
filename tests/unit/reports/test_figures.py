"""reports/figures.py: each draw function returns its Figure and its tidy data (``report --figures``)."""

import json

import numpy as np
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


# ---------------------------------------------------------------- values on few answers, in every figure

def _planted_scores(answers_by_model: dict, tid: str):
    from perceptbench.scoring import score_records

    from perceptbench.tasks import get_task

    from helpers.records import plant_answers

    task = get_task(tid)  # the human records the task's scorer compares with, as a run writes them
    humans = task.human_records(0, "planted", task.stimuli(0))
    return score_records(humans + [r for m, a in answers_by_model.items() for r in plant_answers(tid, m, a)])


def _marker_faces(ax) -> dict:
    """label -> marker face colour of each labelled Line2D of ``ax`` (errorbar data lines too)."""
    out = {}
    for c in ax.containers:
        if c.get_label() and c.lines[0] is not None:
            out[c.get_label()] = c.lines[0].get_markerfacecolor()
    return out


def test_null_heavy_model_is_hollow_annotated_and_marked_in_the_data_of_the_scatter(mirror):
    """Before: a model with 76 of 80 answers null was a clean filled dot at (0, 0) in accuracy vs
    error consistency, and its tidy rows did not say it rested on 4 answers."""
    sil = "closure.nat.silhouette"
    rows = _planted_scores({"thin": {**{i: "right" for i in range(4)}, **{i: None for i in range(4, 80)}},
                            "full": {i: "right" if i % 3 else "wrong" for i in range(80)}}, sil)
    d = F.draw_dissociation(rows)
    try:
        ev = {(r["model"], r["metric"]): r["evidence"] for r in d.rows if r["role"] == "model"}
        assert ev[("thin", "accuracy")] == "76/80 null" and ev[("thin", "kappa_pairwise")] == "76/80 null"
        assert ev[("full", "accuracy")] == "" and ev[("full", "kappa_pairwise")] == ""
        assert all(r["evidence"] == "" for r in d.rows if r["role"] != "model")
        ax = d.fig.axes[0]
        faces = _marker_faces(ax)
        assert faces["thin (76/80 null)"] == "white" and faces["full"] != "white"
        assert "76/80 null" in [t.get_text() for t in ax.texts]  # the annotation beside the point
        assert F.THIN_NOTE in [t.get_text() for t in ax.get_legend().get_texts()]
    finally:
        F.close(d)


def test_small_n_and_null_heavy_marks_in_the_kernel_figure_and_its_csv_column(mirror):
    """The same rule in the mark figure: hollow, with the text, and an evidence column (also in
    the figure's CSV header)."""
    from perceptbench.reports.headline import MIN_N

    tid = "similarity.chart.mark_color"
    rows = _planted_scores({"few": {i: "right" if i % 2 else "wrong" for i in range(MIN_N - 10)},
                            "many": {i: "right" if i % 2 else "wrong" for i in range(120)}}, tid)
    d = F.draw_mark_color(rows)
    try:
        ev = {r["model"]: r["evidence"] for r in d.rows if r["role"] == "model"}
        assert ev == {"few": f"n={MIN_N - 10}", "many": ""}
        ax = d.fig.axes[0]
        assert _marker_faces(ax)["few"] == "white" and _marker_faces(ax)["many"] != "white"
        assert f"n={MIN_N - 10}" in [t.get_text() for t in ax.texts]
        assert "evidence" in F.DATA_COLUMNS
    finally:
        F.close(d)


def test_full_results_draw_no_hollow_marker_and_no_legend_note(mirror):
    tid = "similarity.chart.mark_color"
    rows = _planted_scores({"many": {i: "right" if i % 2 else "wrong" for i in range(120)}}, tid)
    d = F.draw_mark_color(rows)
    try:
        assert all(r["evidence"] == "" for r in d.rows)
        assert F.THIN_NOTE not in [t.get_text() for t in d.fig.legends[0].get_texts()]
    finally:
        F.close(d)


# ---------------------------------------------------------------- VSI in the model x task matrix

def _vsi_scores(tid: str) -> list:
    """Score rows of planted VSI records: model 'ignores' gets the clean distribution back under
    the region blur (VSI 0 on every sample: insensitive fraction 1.00), 'uses' a very different
    one (VSI of nats on every sample: insensitive fraction 0.00)."""
    import numpy as np

    from perceptbench.scoring import score_records
    from perceptbench.tasks import get_task

    from helpers.records import plant_vsi_record

    task = get_task(tid)
    lp, moved = [float(x) for x in np.log([0.90, 0.08, 0.02])], [float(x) for x in np.log([0.02, 0.08, 0.90])]
    recs = []
    for m, blurred in (("ignores", lp), ("uses", moved)):
        for i in range(4):
            recs.append(plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], lp, model=m))
            recs.append(plant_vsi_record(task, "region_blur", f"s{i}", [1, 2, 3], blurred, model=m))
    return score_records(recs)


def _cell_colours(d, cells):
    """(row, col) -> RGBA of each of ``cells`` of the matrix as drawn (the image's colormap and norm)."""
    im = d.fig.axes[0].images[0]
    arr = im.get_array()
    return {(i, j): tuple(im.cmap(im.norm(float(arr[i, j])))) for i, j in cells}


def test_vsi_worst_value_has_the_colour_of_the_worst_battery_value():
    """Before: an insensitive fraction of 1.00 (the answer ignores the image region, the worst
    outcome) was painted in the light colour that means 'at the human ceiling' in every other
    column.  Now dark is worse in every column."""
    from perceptbench.reports.headline import headline_rows

    vt, bt = "vsi.salbench.syn@n=4", "similarity.chart.mark_color"
    rows = _vsi_scores(vt) + [ScoreRow(bt, "ignores", "B", 0.0, 0.0, 0.1, 120, 0),  # the worst battery value
                              ScoreRow(bt, "uses", "B", 1.0, 0.9, 1.0, 120, 0)]      # the best
    heads = headline_rows(rows)
    ins = next(h.metric for h in heads if h.task_id == vt and h.metric.startswith("insensitive_frac@0.05[region_blur"))
    by = {(h.model, h.metric): h.value for h in heads}
    assert by[("ignores", ins)] == 1.0 and by[("uses", ins)] == 0.0  # the planted records do what they say
    cols = [(bt, "B"), (vt, ins)]
    d = F.draw_matrix(heads, ["ignores", "uses"], cols)
    try:
        rows_drawn = [t.get_text() for t in d.fig.axes[0].get_yticklabels()]
        ignores, uses = rows_drawn.index("ignores"), rows_drawn.index("uses")
        c = _cell_colours(d, [(i, j) for i in (ignores, uses) for j in (0, 1)])
        assert c[(ignores, 1)] == c[(ignores, 0)]  # VSI 1.00 ("ignores image") = battery 0.0
        assert c[(uses, 1)] == c[(uses, 0)]  # VSI 0.00 = battery 1.0
        texts = [t.get_text() for t in d.fig.axes[0].texts]
        assert any(t.startswith("1.00") and "ignores image" in t for t in texts)  # the cell prints the value
        assert any("lower is better" in t.get_text() for t in d.fig.axes[0].get_xticklabels())
        vsi_cells = [r for r in d.rows if r["metric"] == ins]
        assert {r["value"] for r in vsi_cells} == {0.0, 1.0}
        assert all("coloured by 1 - value" in r["plotted_as"] for r in vsi_cells)
    finally:
        F.close(d)


def test_reliability_diagram_draws_full_bins_on_the_line_and_thin_bins_hollow_with_their_count():
    import matplotlib.pyplot as plt

    from perceptbench.reports.figures import draw_vsi_reliability
    from perceptbench.vsi.pooled import reliability_row

    # max_prob: six samples in [.9, 1] (5 right: accuracy 5/6, mean .95), two in [.5, .6) (thin: 2 < 5)
    conf = np.array([0.9, 0.92, 0.94, 0.96, 0.98, 1.0, 0.52, 0.58])
    ok = np.array([1, 1, 1, 1, 1, 0, 1, 0], bool)
    r = reliability_row("vsi.t", "m", "reliability_max_prob[region,sigma=20]", conf, ok, 0, "max_prob")
    assert draw_vsi_reliability([]) is None
    d = draw_vsi_reliability([r])
    try:
        bins = {round(x["x"], 3): x for x in d.rows}
        assert set(bins) == {0.95, 0.55}
        assert bins[0.95]["value"] == pytest.approx(5 / 6) and bins[0.95]["n"] == 6 and bins[0.95]["evidence"] == ""
        assert bins[0.55]["value"] == 0.5 and bins[0.55]["evidence"] == "n=2"
        ax = d.fig.axes[0]
        hollow_marks = [ln for ln in ax.lines if ln.get_markerfacecolor() == "white" and len(ln.get_xdata())]
        assert len(hollow_marks) == 1 and hollow_marks[0].get_xdata()[0] == pytest.approx(0.55)
        assert any(t.get_text() == "n=2" for t in ax.texts)
        line = [ln for ln in ax.lines if ln.get_markerfacecolor() != "white" and len(ln.get_xdata()) == 1]
        assert line and line[0].get_xdata()[0] == pytest.approx(0.95)  # the thin bin is not on the line
    finally:
        plt.close(d.fig)


def test_joint_quintile_heatmap_shows_the_share_both_wrong_per_joint_quintile():
    import matplotlib.pyplot as plt

    count = [[5, 0, 0, 0, 0], [0, 5, 0, 0, 0], [0, 0, 5, 0, 0], [0, 0, 0, 0, 5], [0, 0, 0, 5, 0]]
    both = [[1, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 0], [0, 0, 0, 0, 2], [0, 0, 0, 0, 0]]
    r = ScoreRow("vsi.t", "A~B", "joint_error_grid[region,sigma=20]", 25.0, None, None, 25, None,
                 json.dumps({"count": count, "both_wrong": both}))
    assert F.draw_vsi_joint_quintiles([]) is None
    d = F.draw_vsi_joint_quintiles([r])
    try:
        cells = {x["x"]: x for x in d.rows}
        # five non-empty joint quintiles; (0, 0): 1 of 5 both wrong; (3, 4): 2 of 5
        assert len(cells) == 5 and cells["q_A=0, q_B=0"]["value"] == pytest.approx(0.2)
        assert cells["q_A=3, q_B=4"]["value"] == pytest.approx(0.4) and cells["q_A=3, q_B=4"]["n"] == 5
        texts = [t.get_text() for t in d.fig.axes[0].texts]
        assert "1/5" in texts and "2/5" in texts and len(texts) == 5  # empty cells print nothing
        img = d.fig.axes[0].images[0].get_array()
        assert img[0, 0] == pytest.approx(0.2) and (np.ma.is_masked(img[0, 1]) or np.isnan(img[0, 1]))
    finally:
        plt.close(d.fig)


# ---------------------------------------------------------------- the matrix grouped by declared family

def test_models_group_by_family_in_vocabulary_order_keeping_the_ranking_within_a_family():
    from perceptbench.reports.html import group_by_family, model_families

    ranked = ["vlm-a", "sup-a", "nodecl", "clip-a", "sup-b", "vlm-b"]
    declared = {"vlm-a": {"family": "open-vlm"}, "vlm-b": {"family": "open-vlm"}, "sup-a": {"family": "supervised"},
                "sup-b": {"family": "supervised"}, "clip-a": {"family": "clip-like"}, "other": {"family": "mim"}}
    fams = model_families(ranked, declared)
    assert fams["nodecl"] == "undeclared" and set(fams) == set(ranked)  # 'other' is not in the matrix
    assert group_by_family(ranked, fams) == ["sup-a", "sup-b", "clip-a", "vlm-a", "vlm-b", "nodecl"]
    assert model_families(ranked, {}) == {} and model_families(ranked, {"x": {"family": "mim"}}) == {}
    assert group_by_family(ranked, {}) == ranked  # nothing declared: the ranking as it was


def test_matrix_colours_model_names_by_family_with_a_legend_and_says_the_family_in_its_data():
    from matplotlib.colors import to_hex

    from perceptbench.reports.headline import headline_rows

    bt = "similarity.chart.mark_color"
    heads = headline_rows([ScoreRow(bt, m, "B", v, v - 0.1, v + 0.1, 120, 0)
                           for m, v in (("s1", 0.9), ("s2", 0.5), ("v1", 0.7))])
    fams = {"s1": "supervised", "s2": "supervised", "v1": "open-vlm"}
    d = F.draw_matrix(heads, ["s1", "s2", "v1"], [(bt, "B")], fams)
    plain = F.draw_matrix(heads, ["s1", "s2", "v1"], [(bt, "B")])
    try:
        ax = d.fig.axes[0]
        colour = {t.get_text(): to_hex(t.get_color()) for t in ax.get_yticklabels()}
        assert colour["s1"] == colour["s2"] == F.OKABE_ITO[0].lower() and colour["v1"] == F.OKABE_ITO[1].lower()
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["supervised", "open-vlm"]
        assert {r["model"]: r["role"] for r in d.rows if r["model"] in fams} == {
            "s1": "model (family: supervised)", "s2": "model (family: supervised)", "v1": "model (family: open-vlm)"}
        pax = plain.fig.axes[0]
        assert pax.get_legend() is None and {r["role"] for r in plain.rows if r["model"] in fams} == {"model"}
        assert len({to_hex(t.get_color()) for t in pax.get_yticklabels()}) == 1
    finally:
        F.close(d)
        F.close(plain)


# ---------------------------------------------------------------- nothing clipped (issue 24)

def _inside_figure(fig) -> bool:
    """Every drawn artist (text, marker, legend) lies within the figure's own area."""
    from perceptbench.reports.figures import RC
    import matplotlib.pyplot as plt

    with plt.rc_context(RC):
        fig.canvas.draw()
        tb = fig.get_tightbbox(fig.canvas.get_renderer())
    w, h = fig.get_size_inches()
    return tb.x0 >= 0 and tb.y0 >= 0 and tb.x1 <= w and tb.y1 <= h


def _mark_rows(model: str, b: float, ci: tuple[float, float], floor: float) -> list:
    """Score rows of the default mark-colour task: ``model``'s B with its CI and position floor,
    and the other four kernels' B against tm (their values in the default run)."""
    tid = "similarity.chart.mark_color"
    rows = [ScoreRow(tid, model, "B", b, ci[0], ci[1], 120, 0),
            ScoreRow(tid, model, "position_floor", floor, None, None, 120, 0)]
    return rows + [ScoreRow(tid, f"human:kernel-{k}", "B", v, None, None, 120, 0)
                   for k, v in (("l5", 0.870), ("l9", 0.874), ("td", 0.76), ("sa", 0.70))]


def test_mark_figure_draws_a_point_at_b_1_whole_and_the_kernels_as_a_labelled_band():
    """Before: a model at B = 1.0 sat on the axes' edge, half clipped, and the kernels were grey
    ticks squeezed into the right margin."""
    d = F.draw_mark_color(_mark_rows("perfect", 1.0, (1.0, 1.0), 0.39))
    try:
        ax = d.fig.axes[0]
        assert ax.get_xlim()[1] > 1.0 and ax.get_xlim()[0] < 0.0  # B = 0 and 1 inside the axes
        point = ax.containers[0].lines[0]
        assert not point.get_clip_on() and list(point.get_xdata()) == [1.0]
        band = [c for c in ax.collections if c.get_label().startswith("range of the other kernels")]
        (x0, x1) = band[0].get_paths()[0].get_extents().intervalx
        assert (round(x0, 3), round(x1, 3)) == (0.70, 0.874)  # the kernels' range, min to max
        assert _inside_figure(d.fig)
    finally:
        F.close(d)


def test_capacity_labels_stay_inside_the_figure_with_long_model_names():
    """Before: the a(k) capacity panel's 'P(in band)' labels sat right of the axes and were
    clipped at the figure's edge (long model names squeezed the axes)."""
    tid = "similarity.chart.series_count"
    rows = []
    for i, m in enumerate(["efficientnet-lite0", "hf:some-organisation/a-very-long-model-name-for-testing-7B-Instruct"]):
        rows += [ScoreRow(tid, m, f"a_k[{k}]", max(0.0, 1 - k / 14), 0.0, 1.0, 10, 0) for k in range(2, 17)]
        rows += [ScoreRow(tid, m, "capacity_k", 8.0 + i, 2.0, 16.0, 150, 0),
                 ScoreRow(tid, m, "capacity_in_band_prob", 0.4, None, None, 150, 0)]
    d = F.draw_ak_curves(rows)
    try:
        lower = d.fig.axes[1]
        texts = [t.get_text() for t in lower.texts]
        assert any(t.endswith("P(in band) 0.40") and "a-very-long-model-name" in t for t in texts)
        assert not [t for t in lower.get_yticklabels() if t.get_text()]  # no labels beside the axes
        assert _inside_figure(d.fig)
    finally:
        F.close(d)


def test_one_model_matrix_keeps_its_colour_bar_label_inside_the_figure():
    """Before: the colour bar's two-line label ran off the top of a one-model matrix (README screenshot)."""
    from perceptbench.reports.headline import headline_rows

    sil = "closure.nat.silhouette"
    rows = [ScoreRow(sil, "m", "B", 0.68, 0.58, 0.79, 80, 0), ScoreRow(sil, "m", "null_rate", 0.0, None, None, 80, 0),
            ScoreRow(sil, "human:panel", "observer_B_mean@test", 0.82, None, None, 80, 0)]
    heads = headline_rows(rows)
    d = F.draw_matrix(heads, ["m"], [(sil, "B")])
    try:
        assert _inside_figure(d.fig)
    finally:
        F.close(d)


# ---------------------------------------------------------------- what a reader needs on the figure itself

def _ak_rows(n=10):
    tid = "similarity.chart.series_count"
    rows = [ScoreRow(tid, "m", f"a_k[{k}]", 0.8 if k <= 4 else 0.3, 0.0, 1.0, n, 0) for k in range(2, 17)]
    return tid, rows + [ScoreRow(tid, "m", "capacity_k", 5.0, 2.0, 13.0, 15 * n, 0),
                        ScoreRow(tid, "m", "capacity_in_band_prob", 0.03, None, None, 15 * n, 0)]


def _legend_texts(fig) -> list[str]:
    return [t.get_text() for lg in fig.legends for t in lg.get_texts()]


def test_ak_figure_prints_the_counts_its_hollow_points_promise_draws_chance_and_defines_capacity_k():
    """Before: the legend promised counts beside the hollow a(k) points that were not drawn,
    capacity_k was not defined on the figure, and chance (1/20) was not drawn."""
    tid, rows = _ak_rows(n=10)
    d = F.draw_ak_curves(rows)
    try:
        ax, axc = d.fig.axes[:2]
        counts = [t for t in ax.texts if t.get_text() == "n=10"]
        assert len(counts) == 15  # one count per k, for the 15 hollow points
        assert any("trials at that k\n(n above each k)" in t for t in _legend_texts(d.fig))
        chance = [ln for ln in ax.get_lines() if list(ln.get_ydata()) == [0.05, 0.05]]
        assert chance and any(t.startswith("chance 0.05") for t in _legend_texts(d.fig))
        assert "capacity_k = the smallest k with a(k) below 0.5 x the model's mean a(k ≤ 4)" in axc.get_xlabel()
        thr = [r for r in d.rows if r["role"] == "capacity threshold"]
        assert len(thr) == 1 and thr[0]["value"] == pytest.approx(0.4)  # half of mean a(2..4) = 0.8
        assert any(list(ln.get_ydata()) == [pytest.approx(0.4)] * 2 and ln.get_linestyle() == "--"
                   for ln in ax.get_lines())
        assert ax.get_title(loc="left").startswith("Counting colour series (similarity.chart.series_count)")
        assert _inside_figure(d.fig)
    finally:
        F.close(d)
    _, rows = _ak_rows(n=40)  # enough trials per k: no hollow point, no counts to print
    d = F.draw_ak_curves(rows)
    try:
        assert not [t for t in d.fig.axes[0].texts if t.get_text().startswith("n=")]
    finally:
        F.close(d)


def test_mark_figure_names_the_reference_kernel_and_says_what_each_kernel_code_means():
    """Before: the mark figure did not name the kernel B is scored against (tm) nor explain
    'sa', 'td', 'l5', 'l9'."""
    tid = "similarity.chart.mark_color"
    d = F.draw_mark_color(_mark_rows("m", 0.52, (0.42, 0.61), 0.33))
    try:
        ax = d.fig.axes[0]
        assert [t.get_text() for t in ax.get_yticklabels()] == ["similarity.chart.\nmark_color\nreference: tm"]
        codes = next(t for t in _legend_texts(d.fig) if t.startswith("kernel codes"))
        for part in ("l5 = Likert, 5 points", "l9 = Likert, 9 points", "sa = spatial arrangement",
                     "td = triplet discrimination", "tm = triplet matching"):
            assert part in codes
        assert ax.get_title().startswith("Mark colour odd-one-out\n(similarity.chart.mark_color)")
        assert _inside_figure(d.fig)
    finally:
        F.close(d)
    d = F.draw_mark_color([ScoreRow(tid + "@kernel=l5", "m", "B", 0.5, 0.4, 0.6, 120, 0)])
    try:
        assert d.fig.axes[0].get_yticklabels()[0].get_text().endswith("reference: l5")
    finally:
        F.close(d)


def test_figure_titles_give_the_task_name_beside_its_id():
    """Before: figure titles named tasks by id only ('salbench.detection.syn@n=60: per-category F1')."""
    sal = "salbench.detection.syn@n=60,n_probe=60"
    rows = [ScoreRow(sal, "m", f"f1[{c}]", 0.5, 0.4, 0.6, 60, 0) for c in ("color", "size")]
    rows += [ScoreRow(sal, "m", "exact_match", 0.3, 0.2, 0.4, 60, 0),
             ScoreRow(sal, "m", "exact_match[difficulty=easy]", 0.3, 0.2, 0.4, 20, 0)]
    sil = "closure.nat.silhouette"
    rows += [ScoreRow(sil, "m", "accuracy", 0.7, 0.6, 0.8, 80, 0), ScoreRow(sil, "m", "kappa_pairwise", 0.1, 0.0, 0.2, 80, 0)]
    want = f"SalBench detection, search arrays ({sal})"
    for draw, title in ((F.draw_salbench_categories, lambda f: f.axes[0].get_title()),
                        (F.draw_salbench_breakdowns, lambda f: f.axes[0].get_title()),
                        (F.draw_salbench_shots, lambda f: f.axes[0].get_title()),
                        (F.draw_dissociation, lambda f: f.axes[0].get_title())):
        d = draw(rows)
        try:
            t = title(d.fig)
            assert ("Closure: objects from silhouettes" in t and sil in t) if draw is F.draw_dissociation else \
                ("SalBench detection, search arrays" in t and "salbench.detection.syn" in t), t
            if draw in (F.draw_salbench_categories, F.draw_salbench_breakdowns):
                assert t.startswith(want)
        finally:
            F.close(d)


def test_matrix_draws_the_floor_and_ceiling_rows_as_references_off_the_colour_scale():
    """Before: the floor/chance row was coloured on the same 'dark = worse' scale as the models,
    so a floor of 0.00 read as the worst respondent."""
    from matplotlib.patches import Rectangle

    from perceptbench.reports.headline import headline_rows

    sil = "closure.nat.silhouette"
    rows = [ScoreRow(sil, "m", "B", 0.68, 0.58, 0.79, 80, 0), ScoreRow(sil, "m", "null_rate", 0.0, None, None, 80, 0),
            ScoreRow(sil, "human:panel", "observer_B_mean@test", 0.82, None, None, 80, 0),
            ScoreRow(sil, "human:panel", "observer_accuracy_mean@test", 0.76, None, None, 80, 0)]
    d = F.draw_matrix(headline_rows(rows), ["m"], [(sil, "B")])
    try:
        ax = d.fig.axes[0]
        img = np.ma.masked_invalid(ax.images[0].get_array())
        assert img.mask[:2].all() and not img.mask[2].any()  # the two reference rows carry no colour
        hatched = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch()]
        assert len(hatched) == 2 and {p.get_y() for p in hatched} == {-0.5, 0.5}
        assert "not on the colour scale" in ax.get_title()
        refs = [r for r in d.rows if r["role"] in ("floor", "human ceiling")]
        assert refs and all(r["plotted_as"] == F.REFERENCE_CELL for r in refs)
        assert {t.get_text() for t in ax.texts} >= {"0.06", "0.82"}  # their values still printed
        assert _inside_figure(d.fig)
    finally:
        F.close(d)


def test_paired_differences_figure_shows_significance_by_shape_never_by_a_hollow_marker():
    """Before: a hollow marker meant 'not significant' here ('filled: Holm-adjusted p < 0.05') while on
    every other figure of the page hollow means 'few answers'."""
    from matplotlib.colors import to_rgba

    from perceptbench.reports.paired import PairedDiff

    diffs = [PairedDiff("similarity.chart.mark_color", "B", "a", "b", 0.3, 0.1, 0.5, 40, 1000, p=0.001, p_holm=0.003),
             PairedDiff("similarity.chart.mark_color", "B", "a", "c", 0.05, -0.1, 0.2, 40, 1000, p=0.4, p_holm=0.8)]
    d = F.draw_paired_forest(diffs)
    try:
        marks = [ln for ln in d.fig.axes[0].get_lines() if ln.get_marker() not in ("None", None, "")]
        assert sorted(ln.get_marker() for ln in marks) == ["D", "o"]
        # every marker filled with its own colour: no white (hollow) face
        assert all(to_rgba(ln.get_markerfacecolor()) == to_rgba(ln.get_color()) for ln in marks)
        legend = [t.get_text() for lg in d.fig.legends for t in lg.get_texts()]
        assert legend == [F.PAIRED_SIGNIFICANT, F.PAIRED_NOT_SIGNIFICANT]
        assert "blue diamond: Holm-adjusted p < 0.05" in d.fig._suptitle.get_text()
        assert "filled" not in d.fig._suptitle.get_text()
        notes = [r["note"] for r in d.rows]
        assert F.PAIRED_SIGNIFICANT in notes[0] and F.PAIRED_NOT_SIGNIFICANT in notes[1]
    finally:
        F.close(d)
