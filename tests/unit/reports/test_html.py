"""reports/html.py: the page's tables in the order the run was given its tasks and models, and
task ids that wrap only between their parts."""

from perceptbench.records import read_records
from perceptbench.reports.data import ReportData
from perceptbench.reports.html import breakable, build_report, given_order
from perceptbench.reports import figures as F
from perceptbench.scoring import score_records
from perceptbench.testing.synthetic_runs import write_synthetic_run

MARK, SIL = "similarity.chart.mark_color", "closure.nat.silhouette"


def _report(tmp_path, models, tasks):
    d = write_synthetic_run(tmp_path / "run", models, tasks=tasks, null_rate=0.0)
    recs = read_records(d / "records.jsonl")
    html, md, drawn, tables = build_report(ReportData([d], recs, score_records(recs), "t"), "t")
    for x in drawn:
        F.close(x)
    return recs, html, md, {t.name: t for t in tables}


def test_tables_follow_the_order_the_run_was_given_not_the_names(tmp_path, mirror):
    """Before: every report table listed tasks and models by name (closure before mark colour,
    alpha before zeta) whatever order --task and --model gave them in."""
    recs, html, md, tables = _report(tmp_path, ["zeta", "alpha"], (MARK, SIL))
    assert given_order(recs) == ([MARK, SIL], ["zeta", "alpha"])
    matrix = tables["table_model_by_task_matrix"]
    tasks_in = [c for c in matrix.columns if c.startswith((MARK, SIL))]
    assert tasks_in[0].startswith(MARK) and tasks_in[-1].startswith(SIL)
    assert [r[0] for r in tables["table_provenance_models"].rows] == ["zeta", "alpha"]
    trials = [(r[0], r[1]) for r in tables["table_provenance_trials_per_task_and_model"].rows]
    assert trials == [(MARK, "zeta"), (MARK, "alpha"), (SIL, "zeta"), (SIL, "alpha")]
    assert [r[0] for r in tables["table_provenance_human_references"].rows] == [MARK, SIL]
    heads = [(r[0], r[1]) for r in tables["table_headline_metrics"].rows]
    assert heads.index((MARK, "zeta")) < heads.index((MARK, "alpha")) < heads.index((SIL, "zeta"))
    assert md.index(f"| {MARK} | zeta |") < md.index(f"| {SIL} | zeta |")


def test_matrix_table_headers_break_task_ids_only_between_their_parts(tmp_path, mirror):
    """Before: the table under the matrix wrapped 'closure.nat.silhouett' / 'e' (CSS
    overflow-wrap: anywhere on every header)."""
    assert str(breakable("salbench.detection.syn@n=60,n_probe=60")) == \
        "salbench.<wbr>detection.<wbr>syn@<wbr>n=60,<wbr>n_probe=60"
    assert str(breakable("<b>.x")) == "&lt;b&gt;.<wbr>x"  # escaped first
    _, html, _, _ = _report(tmp_path, ["m"], (SIL,))
    assert f'<th class="tid">closure.<wbr>nat.<wbr>silhouette<br><span class="nw">B</span></th>' in html
    assert "th.tid { overflow-wrap: normal; }" in html


SERIES = "similarity.chart.series_count"


def test_provenance_says_kernel_answers_are_derived_not_human_and_names_the_reference_kernel(tmp_path, mirror):
    """Before: the kernels' odd ones out read '5 respondents (human:kernel-l5 ... human:kernel-tm)',
    as if five people had answered, the reference kernel (the ground truth) among them."""
    _, html, _, tables = _report(tmp_path, ["m"], (MARK,))
    row = next(r for r in tables["table_provenance_human_references"].rows if r[0] == MARK)
    assert row[1] == ("5 perceptual kernels' derived answers, not human trials (human:kernel-l5 ... human:kernel-tm; "
                      "reference kernel tm = the ground truth)")
    assert "respondents (human:kernel" not in html and row[1].replace("'", "&#39;") in html
    assert "<th>respondents (human, kernel-derived, or none)</th>" in html and "human respondent(s)" not in html


def test_provenance_has_a_row_for_the_series_count_literature_reference(tmp_path, mirror):
    """Before: series_count's reference (the 6-12 capacity band, Healey 1996; Ware 2013) had no
    row in 'Human references and source files': it could not be traced from the page."""
    _, html, md, tables = _report(tmp_path, ["m"], (MARK, SERIES))
    rows = tables["table_provenance_human_references"].rows
    assert [r[0] for r in rows] == [MARK, SERIES]
    task_id, who, ref, sha, n = rows[1]
    assert ref == "capacity-band.healey1996-ware2013" and n == 0 and sha == "- (no data file)"
    assert who.startswith("none: a literature reference (Healey 1996; Ware 2013: the 6-12 band") and \
        who.endswith("not a data file")
    prov = html[html.index("<h3>Human references and source files</h3>"):html.index("<h3>Skipped")]
    assert "capacity-band.healey1996-ware2013" in prov and "not a data file" in prov


def test_provenance_names_the_id_the_silhouette_model_trials_carry_beside_the_observers_records_id(tmp_path, mirror):
    """Before: the page named only geirhos2019.silhouette.raw (the observers' records) while the model
    trials and `perceptbench tasks` say geirhos2019.silhouette.modal: the two could not be matched."""
    recs, _, _, tables = _report(tmp_path, ["m"], (SIL,))
    row = next(r for r in tables["table_provenance_human_references"].rows if r[0] == SIL)
    assert {r.human_ref_id for r in recs if r.model == "m"} == {"geirhos2019.silhouette.modal"}
    assert row[2] == ("geirhos2019.silhouette.raw, geirhos2019.silhouette.modal (the id the model trials carry: "
                      "their reference, derived from these records)")


def test_provenance_records_headers_are_never_broken_mid_word(tmp_path, mirror):
    """Before: the narrow records column of 'Human references and source files' read 'reco' / 'rds'
    (every header may break anywhere, for long model names)."""
    _, html, _, _ = _report(tmp_path, ["m"], (MARK,))
    prov = html[html.index('<h2 id="provenance">'):]
    assert prov.count('<th class="nw">records</th>') == 3 and "<th>records</th>" not in prov
    assert ".nw { white-space: nowrap; }" in html
