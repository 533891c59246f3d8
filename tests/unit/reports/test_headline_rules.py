"""Headline rules added so that every listed task has headline rows (issue 24): THINGS
odd-one-out (B against the position floor and the release's test-retest ceiling) and VSI tasks
without a region cell (vsi.mmstar, perturbation=whole: the whole-image cells)."""

import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.reports.headline import headline_rows


def test_things_b_sits_between_the_position_floor_and_the_test_retest_ceiling():
    tid = "similarity.nat.things_ooo@n=2"
    rows = [ScoreRow(tid, "human:panel", "ceiling_test_retest", 0.4, None, None, 5, 0),
            ScoreRow(tid, "m", "B", 0.5, 0.0, 1.0, 2, 0), ScoreRow(tid, "m", "position_floor", 0.5, None, None, 2, 0),
            ScoreRow(tid, "m", "null_rate", 0.0, None, None, 2, 0)]
    (h,) = headline_rows(rows)
    assert (h.metric, h.value, h.floor, h.ceiling) == ("B", 0.5, 0.5, 0.4)
    assert h.ratio == pytest.approx(1.25) and "≤ floor" in h.flags and "small n=2" in h.flags


def test_a_whole_image_only_vsi_task_gets_its_whole_blur_rows():
    tid = "vsi.mmstar@limit=3"
    cell = "[whole_blur,sigma=20]"
    rows = [ScoreRow(tid, "m", f"insensitive_frac@0.05{cell}", 1.0, 0.5, 1.0, 3, None),
            ScoreRow(tid, "m", f"vsi_median{cell}", 0.01, 0.0, 0.02, 3, None)]
    heads = headline_rows(rows)
    assert [h.metric for h in heads] == [f"insensitive_frac@0.05{cell}", f"vsi_median{cell}"]
    assert "every sample insensitive" in heads[0].flags
    # with a region cell present, only the region cells are headline rows (as before)
    region = "[region_blur,sigma=20]"
    rows.append(ScoreRow(tid, "m", f"insensitive_frac@0.05{region}", 0.2, 0.0, 0.5, 3, None))
    assert [h.metric for h in headline_rows(rows)] == [f"insensitive_frac@0.05{region}"]


def test_a_respondent_asked_without_the_image_gets_its_image_withheld_rows():
    """Before: ``M[image_withheld]`` had no headline row (only region or whole-image cells were
    read), so the report's matrix said "not run" for a respondent that ran, and the headline table
    left it out."""
    tid = "vsi.salbench.syn@n=6"
    cell = "[image_withheld]"
    rows = [ScoreRow(tid, "m", "insensitive_frac@0.05[region_blur,sigma=20]", 0.2, 0.0, 0.5, 6, None),
            ScoreRow(tid, "m[image_withheld]", f"insensitive_frac@0.05{cell}", 0.5, 0.0, 1.0, 6, None),
            ScoreRow(tid, "m[image_withheld]", f"vsi_median{cell}", 0.031, 0.01, 0.05, 6, None),
            ScoreRow(tid, "m[image_withheld]", f"argmax_change_rate{cell}", 0.5, 0.1, 0.9, 6, None)]
    heads = headline_rows(rows)
    assert [(h.model, h.metric) for h in heads] == [
        ("m", "insensitive_frac@0.05[region_blur,sigma=20]"), ("m[image_withheld]", f"insensitive_frac@0.05{cell}"),
        ("m[image_withheld]", f"vsi_median{cell}"), ("m[image_withheld]", f"argmax_change_rate{cell}")]
    # the matrix: each respondent's own column holds its value; the other's cell reads "n/a" (it ran
    # the task without that cell), "not run" is kept for a model without records of the task
    from perceptbench.reports.html import _matrix_cols
    from perceptbench.reports.tables import _matrix

    cols = _matrix_cols(heads)
    assert cols == [(tid, "insensitive_frac@0.05[region_blur,sigma=20]"), (tid, f"insensitive_frac@0.05{cell}")]
    rows = {r[0]: r[1:3] for r in _matrix(heads, ["m", "m[image_withheld]", "other"], cols, {}).rows}
    assert rows["m"][1] == "n/a" and rows["m[image_withheld]"][0] == "n/a"
    assert rows["m"][0].startswith("0.200") and rows["m[image_withheld]"][1].startswith("0.500")
    assert rows["other"] == ("not run", "not run")
    # the report page's matrix reads the same words through the template's ``absent``
    from perceptbench.reports.headline import absent_cell_text, tasks_run

    ran = tasks_run(heads)
    assert ran == {(tid, "m"), (tid, "m[image_withheld]")}
    assert [absent_cell_text(ran, tid, m) for m in ("m", "other")] == ["n/a", "not run"]


def test_an_undefined_median_vsi_says_why_beside_it_not_an_empty_iqr():
    """A respondent run only without the image has no clean record to pair with: its median VSI
    is undefined, and the headline (terminal table and report card) carries the score row's
    reason instead of ``IQR [-, -]``; a defined median keeps its quartiles."""
    tid = "vsi.salbench.syn@n=4"
    cell = "[image_withheld]"
    why = "no clean record of m for the samples of its 4 image_withheld records (run m under the image condition too)"
    rows = [ScoreRow(tid, "m[image_withheld]", f"vsi_median{cell}", float("nan"), None, None, 0, 0, why),
            ScoreRow(tid, "k[image_withheld]", f"vsi_median{cell}", 0.031, 0.01, 0.05, 6, 0)]
    undefined, defined = headline_rows(rows)
    assert "undefined" in undefined.flags and undefined.extra == why
    assert defined.extra == "IQR [0.010, 0.050] nats (quartiles, not a CI)"


def test_cue_conflict_shape_bias_beside_the_observers_pooled_shape_bias():
    tid = "shape_bias.nat.cue_conflict"
    rows = [ScoreRow(tid, "human:panel", "shape_bias_pooled@test", 0.96, 0.95, 0.97, 600, 0),
            ScoreRow(tid, "m", "shape_bias", 0.24, 0.2, 0.28, 500, 0),
            ScoreRow(tid, "m", "null_rate", 0.0, None, None, 608, 0)]
    (h,) = headline_rows(rows)
    assert (h.metric, h.value, h.ceiling, h.ceiling_ci) == ("shape_bias", 0.24, 0.96, (0.95, 0.97))
    assert h.ratio == pytest.approx(0.25) and h.floor is None


def test_index_lists_respondents_by_first_appearance_and_their_rows_in_order():
    """The headline index groups rows once (rules look up a respondent's rows, never scan every row):
    models per task in order of first appearance, humans and aggregates left out, tasks in order of
    their first model row; each respondent's rows and each (task, metric)'s rows in row order."""
    from perceptbench.reports.headline import _Index

    def row(t, m, metric):
        return ScoreRow(t, m, metric, 0.5, None, None, 1, 0)

    rows = [row("t1", "human:panel", "x"), row("t2", "b", "B"), row("t1", "a", "B"), row("t1", "b", "x"),
            row("t1", "human:kernel-1", "B"), row("t2", "b", "x"), row("t1", "a", "y")]
    ix = _Index(rows)
    assert list(ix.models_by_task.items()) == [("t2", ["b"]), ("t1", ["a", "b"])]
    assert ix.by_respondent[("t1", "a")] == [rows[2], rows[6]]
    assert ix.by_task_metric[("t1", "B")] == [rows[2], rows[4]]


# ---------------------------------------------------------------- one statement of each floor, everywhere

def _salbench_rows(tid="salbench.detection.syn@n=40"):
    return [ScoreRow(tid, "m", "exact_match", 0.3, 0.2, 0.4, 40, 0),
            ScoreRow(tid, "m", "exact_match_floor", 0.25, None, None, 40, 0),
            ScoreRow(tid, "m", "mean_f1", 0.5, 0.4, 0.6, 40, 0),
            ScoreRow(tid, "m", "null_rate", 0.0, None, None, 40, 0)]


def test_salbench_exact_match_floor_is_the_same_words_in_the_card_the_terminal_and_the_markdown(capsys):
    """Before: the card's caption said SalBench exact match has no floor ('none is given') while
    the terminal table and docs gave the majority-answer floor."""
    from perceptbench.cli.tables import print_headline
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.headline import reference_notes
    from perceptbench.reports.html import render_report

    rows = _salbench_rows()
    refs = reference_notes(headline_rows(rows))
    em = refs[("salbench.detection.syn", "exact_match")]
    assert em.startswith("floor = majority-answer floor")
    assert refs[("salbench.detection.syn", "mean_f1")] == "floor: none declared"
    html, md, _ = render_report(ReportData([], [], rows, "t"), "t")
    assert "none is given" not in html and em in html and em in md
    print_headline(rows)
    assert em in " ".join(capsys.readouterr().out.split())


def test_closure_b_on_fewer_stimuli_says_why_beside_its_n():
    """Before: B on n=79 where the task has 80 stimuli, with nothing on the page saying why."""
    tid = "closure.nat.silhouette"
    rows = [ScoreRow(tid, "human:panel", "observer_accuracy_mean@test", 0.76, None, None, 80, 0),
            ScoreRow(tid, "human:panel", "n_tied_mode@test", 1.0, None, None, 80, 0),
            ScoreRow(tid, "m", "B", 0.68, 0.58, 0.79, 79, 0, "modal match; 1 tied-mode image excluded"),
            ScoreRow(tid, "m", "null_rate", 0.0, None, None, 80, 0)]
    b = next(h for h in headline_rows(rows) if h.metric == "B")
    assert b.extra == "B on 79 of 80 stimuli: 1 stimulus with a tied human modal answer (no modal reference) left out"
    rows[2] = ScoreRow(tid, "m", "B", 0.68, 0.58, 0.79, 76, 3)
    rows[3] = ScoreRow(tid, "m", "null_rate", 3 / 80, None, None, 80, 3)
    b = next(h for h in headline_rows(rows) if h.metric == "B")
    assert b.extra.startswith("B on 76 of 80 stimuli: 1 stimulus with a tied") and "and 3 null answers" in b.extra
    rows[2] = ScoreRow(tid, "m", "B", 0.68, 0.58, 0.79, 80, 0)  # every stimulus counted: nothing to explain
    rows[3] = ScoreRow(tid, "m", "null_rate", 0.0, None, None, 80, 0)
    assert next(h for h in headline_rows(rows) if h.metric == "B").extra == ""
