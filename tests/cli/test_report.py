"""perceptbench report: headline rows (terminal table and card), paired differences, the
self-contained HTML page checked in headless Chromium with the network disabled,
escaping of record strings, merging run directories, no torch."""

import io
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.reports.headline import headline_rows
from perceptbench.scoring import score_file
from perceptbench.testing.synthetic_runs import write_synthetic_run

from helpers.browser import chromium_path, load_page
from helpers.cli import cli, one_line_error
from helpers.records import plant_answers, plant_records

XSS_MODEL = "<img src=x onerror=alert(1)>"
XSS_RAW = "<script>alert(1)</script>"


# ---------------------------------------------------------------- headline rows

def _h(rows, model, metric):
    return next(h for h in headline_rows(rows) if h.model == model and h.metric == metric)


def test_headline_marks_floor_small_n_nulls_and_unclipped_ratio():
    mc = "similarity.chart.mark_color"
    sal = "salbench.detection.syn@n=30"
    sil = "closure.nat.silhouette"
    rows = [
        ScoreRow(mc, "m", "B", 0.383, 0.30, 0.47, 120, 0),
        ScoreRow(mc, "m", "position_floor", 0.392, None, None, 120, 0),
        ScoreRow(mc, "m", "null_rate", 0.0, None, None, 120, 0),
        ScoreRow(mc, "human:kernel-l5", "B", 0.70, 0.6, 0.8, 120, 0),
        ScoreRow(mc, "human:kernel-l9", "B", 0.80, 0.7, 0.9, 120, 0),
        # seed 001 headline: every stimulus counts (2 right of 30; 28 nulls as empty sets); the
        # issue's "exact_match 1.000 on n = 2" is the nulls-excluded variant now
        ScoreRow(sal, "vlm", "exact_match", 2 / 30, 0.0, 0.167, 30, 28),
        ScoreRow(sal, "vlm", "exact_match@nulls_excluded", 1.0, 1.0, 1.0, 2, 28),
        ScoreRow(sil, "tiny", "accuracy", 0.5, 0.2, 0.8, 12, 0),
        ScoreRow(sal, "vlm", "null_rate", 28 / 30, None, None, 30, 28),
        ScoreRow(sil, "human:panel", "observer_accuracy_mean@test", 0.765, None, None, 80, 0),
        ScoreRow(sil, "human:panel", "ceiling_kappa_pairwise_mean@test", 0.450, 0.346, 0.532, 80, 0),
        ScoreRow(sil, "enc", "accuracy", 0.775, 0.675, 0.863, 80, 0),
        ScoreRow(sil, "enc", "kappa_pairwise", 0.146, -0.009, 0.302, 80, 0),
        ScoreRow(sil, "enc", "null_rate", 0.0, None, None, 80, 0),
        ScoreRow("similarity.chart.series_count", "enc", "capacity_k", 8.0, 2.0, 8.0, 40, 0),
        ScoreRow("similarity.chart.series_count", "enc", "replicates", 0.0, None, None, 40, 0),
        ScoreRow("similarity.chart.series_count", "enc", "capacity_in_band_prob", 0.399, None, None, 40, 0),
    ]
    b = _h(rows, "m", "B")
    assert b.floor == 0.392 and "≤ floor" in b.flags
    assert b.ceiling == pytest.approx(0.75) and b.ratio == pytest.approx(0.383 / 0.75)
    em = _h(rows, "vlm", "exact_match")
    assert em.value == pytest.approx(2 / 30) and em.bracket is None  # nulls are already in the value
    assert any(f.startswith("nulls 93%") for f in em.flags) and "nulls excluded: 1.000" in em.extra
    assert "small n=12" in _h(rows, "tiny", "accuracy").flags
    acc = _h(rows, "enc", "accuracy")
    # 0.775 [0.675, 0.863] vs ceiling 0.765: the CI includes the ceiling, so not "above ceiling"
    assert acc.ratio == pytest.approx(0.775 / 0.765) and acc.ratio > 1 and "above ceiling" not in acc.flags
    assert "at ceiling (CI includes it)" in acc.flags
    above = _h(rows + [ScoreRow(sil, "enc2", "accuracy", 0.9, 0.8, 0.95, 80, 0)], "enc2", "accuracy")
    assert "above ceiling" in above.flags  # lower CI bound 0.8 > 0.765
    k = _h(rows, "enc", "kappa_pairwise")
    assert k.ceiling == 0.450 and k.ceiling_ci == (0.346, 0.532) and "CI reaches chance" in k.flags
    heads = headline_rows(rows)
    assert not any(h.metric == "replicates" for h in heads)  # never on its own
    cap = _h(rows, "enc", "capacity_k")
    assert ("replicates: no (k=8 inside the human band 6-12, but in the band in only 40% of draws (< 95%: not "
            "shown))") in cap.extra and "P(in band)=0.399" in cap.extra
    assert "k in the band in only 40% of draws" in cap.flags  # was the cryptic "P(in band) < 0.5"


# ---------------------------------------------------------------- a synthetic run with hostile strings

@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep") / "run"
    write_synthetic_run(d, ["model-a", XSS_MODEL, "model-$c$"], raw_output=XSS_RAW)
    score_file(d / "records.jsonl")
    return d


def test_report_cli_writes_html_and_markdown_without_torch(hostile_run, tmp_path):
    out = tmp_path / "report.html"
    p = cli("report", str(hostile_run), "--out", str(out), torch="unimported", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr  # TORCH_IMPORTED (97) if report imported torch
    html = out.read_text()
    md = out.with_suffix(".md").read_text()
    assert XSS_MODEL not in html and XSS_RAW not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert XSS_MODEL not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert not re.search(r"""(src|href|url)\s*[=(]\s*["']?\s*(https?:)?//""", html)  # nothing fetched from afar
    for section in ('id="matrix"', 'id="dissociation"', 'id="ak"', 'id="markcolor"', 'id="salbench"', 'id="cards"',
                    'id="paired"', 'id="provenance"'):
        assert section in html
    assert 'id="vsi"' not in html  # no VSI records, no VSI section


def test_report_in_headless_chromium(hostile_run, tmp_path):
    assert chromium_path(), "chromium is not installed: apt-get install chromium (.ci/run installs it)"
    out = tmp_path / "report.html"
    p = cli("report", str(hostile_run), "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    res = load_page(out, {
        "scripts": "document.querySelectorAll('script').length",
        "imgs": "document.querySelectorAll('img').length",
        "onerror": "document.querySelectorAll('[onerror]').length",
        "figures": "document.querySelectorAll('figure svg').length",
        "text_model": f"document.body.innerText.includes({XSS_MODEL!r})",
        "text_raw": f"document.body.innerText.includes({XSS_RAW!r})",
        "dollar": "document.body.innerText.includes('model-$c$')",
        "cards": "document.querySelectorAll('#cards ~ h3').length",
        "height": "document.documentElement.scrollHeight",
        "matrix_px": "document.querySelector('figure svg').getBoundingClientRect().width",
        "page_px": "document.documentElement.scrollWidth",
    })
    assert res.console_errors == [], res.console_errors
    assert res.dialogs == []
    assert [u for u in res.requests if not u.startswith(("file:", "data:"))] == []
    v = res.values
    assert v["scripts"] == 0 and v["imgs"] == 0 and v["onerror"] == 0
    assert v["text_model"] and v["text_raw"] and v["dollar"]  # rendered as text
    assert v["figures"] >= 7  # matrix, dissociation, a(k), mark colour, 3 SalBench, forest
    # drawn at print size (7.16 in = 687 px), shown 1.35x on screen, within the page
    assert 900 < v["matrix_px"] <= v["page_px"], (v["matrix_px"], v["page_px"])
    from PIL import Image

    img = Image.open(io.BytesIO(res.screenshot)).convert("L")
    shot_dir = os.environ.get("PERCEPTBENCH_SCREENSHOT_DIR")
    if shot_dir:
        img.save(Path(shot_dir) / "report_test.png")
    a = np.asarray(img, float)
    assert a.shape[0] >= 2000 and a.std() > 10 and (a < 128).mean() > 0.01  # a long page with dark ink on it


def test_browser_harness_detects_errors_and_requests(tmp_path):
    """The checks above can fail: a page with a console error and an external image."""
    assert chromium_path(), "chromium is not installed"
    page = tmp_path / "bad.html"
    page.write_text("<html><body><p>x</p><script>console.error('boom')</script>"
                    "<img src='http://203.0.113.7/x.png'></body></html>")
    res = load_page(page, {"n": "document.querySelectorAll('img').length"})
    assert any("boom" in e for e in res.console_errors)
    assert any(u.startswith("http://203.0.113.7") for u in res.requests)


# ---------------------------------------------------------------- paired differences, merging

def test_paired_differences_match_the_scores(hostile_run):
    from perceptbench.records import read_records
    from perceptbench.reports.paired import paired_differences

    recs = read_records(hostile_run / "records.jsonl")
    rows = {(r.task_id, r.model, r.metric): r.value for r in score_file(hostile_run / "records.jsonl",
                                                                          hostile_run / "s.csv")}
    diffs, notes = paired_differences(recs)
    assert notes == []
    seen = set()
    for d in diffs:
        seen.add((d.task_id, d.metric))
        want = rows[(d.task_id, d.a, d.metric)] - rows[(d.task_id, d.b, d.metric)]
        if d.task_id.startswith("salbench."):  # every stimulus counts (null = empty prediction): the rows' difference
            assert d.diff == pytest.approx(want), (d, want)
        else:  # on the stimuli both answered (5% nulls each): close to, not equal to, the rows' difference
            answered = sum(r.task_id == d.task_id and r.model == d.a for r in recs)  # the task's test stimuli
            assert d.n < answered and d.diff == pytest.approx(want, abs=0.1), (d, want)
        assert d.low <= d.diff <= d.high
    assert ("closure.nat.silhouette", "kappa_pairwise") in seen and ("closure.nat.silhouette", "B") in seen
    assert ("similarity.chart.mark_color", "B") in seen
    # model-a answers correctly with p=0.2, model-$c$ with p=0.8: B differs on mark colour
    d = next(d for d in diffs if d.task_id == "similarity.chart.mark_color" and {d.a, d.b} == {"model-a", "model-$c$"})
    assert d.excludes_zero


def test_report_merges_run_directories_and_refuses_other_seeds(tmp_path):
    a = write_synthetic_run(tmp_path / "a", ["alpha"], tasks=("similarity.chart.mark_color",), run_id="ra")
    b = write_synthetic_run(tmp_path / "b", ["beta"], tasks=("similarity.chart.mark_color",), run_id="rb")
    p = cli("report", str(a), str(b), "--out", str(tmp_path / "r.html"))
    assert p.returncode == 0, p.stdout + p.stderr
    html = (tmp_path / "r.html").read_text()
    assert "alpha" in html and "beta" in html and " of 1 paired differences" in html
    c = write_synthetic_run(tmp_path / "c", ["gamma"], tasks=("similarity.chart.mark_color",), seed=1, run_id="rc")
    p = cli("report", str(a), str(c), "--out", str(tmp_path / "r2.html"))
    assert p.returncode == 2 and "seed" in p.stderr and "Traceback" not in p.stdout + p.stderr
    assert not (tmp_path / "r2.html").exists()
    p = cli("report", str(tmp_path / "nope"))
    assert p.returncode == 2 and "nope" in p.stderr


def test_paired_draws_reproduce_the_scorers_intervals(hostile_run):
    """The count-matrix evaluation gives the scorers' own bootstrap intervals (Gestalt tasks;
    SalBench's scorer resamples only the scorable trials, which cannot be paired)."""
    from perceptbench.records import read_records
    from perceptbench.reports.paired import model_draws

    rows = {(r.task_id, r.model, r.metric): r for r in score_file(hostile_run / "records.jsonl",
                                                                   hostile_run / "s2.csv")}
    draws = model_draws(read_records(hostile_run / "records.jsonl"))
    assert len(draws) >= 3 * 5
    for (tid, m, metric), (point, d, _) in draws.items():
        r = rows[(tid, m, metric)]
        if tid.startswith("salbench."):
            assert point == pytest.approx(r.value, abs=1e-12)
            continue
        assert point == pytest.approx(r.value, abs=1e-12)
        lo, hi = np.percentile(d[np.isfinite(d)], [2.5, 97.5])
        assert (lo, hi) == pytest.approx((r.ci_low, r.ci_high), abs=1e-9), (tid, m, metric)


def test_vsi_section_from_vsi_score_rows(tmp_path):
    """Score rows named as branch `vsi` / `vsi-analyses` write them give the VSI section: a
    histogram from vsi_histogram rows, the insensitive fractions, the signal table and the
    headline rows (median VSI with its IQR shown as such, not as a CI)."""
    import json

    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records

    d = write_synthetic_run(tmp_path / "v", ["vlm-a"], tasks=("similarity.chart.mark_color",))
    recs = read_records(d / "records.jsonl")
    tid, cell = "vsi.salbench.syn", "[region_blur,sigma=20]"
    edges = [0.0] + [10.0 ** e for e in np.arange(-4.0, 1.01, 0.5)] + [None]
    vsi = [ScoreRow(tid, "vlm-a", "vsi_median" + cell, 0.02, 0.004, 0.3, 50, None, "nats; quartiles"),
           ScoreRow(tid, "vlm-a", "insensitive_frac@0.05" + cell, 0.56, 0.42, 0.7, 50, None),
           ScoreRow(tid, "vlm-a", "argmax_change_rate" + cell, 0.1, 0.04, 0.18, 50, None),
           ScoreRow(tid, "vlm-a", "vsi_histogram" + cell, 50.0, None, None, 50, None,
                    json.dumps({"edges_nats": edges, "counts": [3, 4, 5, 6, 7, 8, 6, 5, 3, 2, 1, 0]})),
           ScoreRow(tid, "vlm-a", "auroc_vsi" + cell, 0.48, 0.35, 0.6, 50, 0),
           ScoreRow(tid, "vlm-a", "signal_auroc[vsi,sigma=20]", 0.48, None, None, 50, 0),
           ScoreRow(tid, "vlm-a", "signal_auroc[max_prob,sigma=20]", 0.61, None, None, 50, 0)]
    data = ReportData([d], recs, score_records(recs) + vsi, "test")
    html, md, n_fig = render_report(data, "vsi")
    assert 'id="vsi"' in html and "signal_auroc" not in md
    sec = html[html.index('id="vsi"'):html.index('id="cards"')]
    assert sec.count("<svg") == 1 and "max_prob" in sec and "0.610" in sec and "56% below 0.05 nats" in sec
    h = {x.metric: x for x in headline_rows(data.scores) if x.task_id == tid}
    med = h["vsi_median" + cell]
    assert med.ci_low is None and "IQR [0.004, 0.300] nats" in med.extra
    au = h["auroc_vsi" + cell]
    assert au.floor == 0.5 and "≤ chance" in au.flags


def test_vsi_section_draws_reliability_diagrams_and_the_pooled_table(tmp_path):
    """The VSI section gains the reliability diagrams (seed 002 B.2) from the reliability_* rows and
    the table of the pooled and threshold rows (seed 002 §3, §4, C.2), also as a table file."""
    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import build_report
    from perceptbench.reports import figures as F
    from perceptbench.scoring import score_records
    from perceptbench.vsi.pooled import reliability_row

    d = write_synthetic_run(tmp_path / "v", ["vlm-a"], tasks=("similarity.chart.mark_color",))
    recs = read_records(d / "records.jsonl")
    tid, cell = "vsi.salbench.syn", "[region,sigma=20]"
    conf = np.array([0.55, 0.62, 0.91, 0.93, 0.95, 0.97, 0.99])
    vsi = [ScoreRow(tid, "vlm-a", "insensitive_frac@0.05[region_blur,sigma=20]", 0.56, 0.42, 0.7, 50, None),
           reliability_row(tid, "vlm-a", "reliability_max_prob" + cell, conf, conf > 0.6, 0, "max_prob"),
           ScoreRow(tid, "vlm-a", "cw_enrichment@0.05" + cell, 2.125, None, None, 17, 0, "counts"),
           ScoreRow(tid, "all-models", "signal_wins[max_prob,sigma=20]", 3.0, None, None, 4, None, "3 of 4")]
    data = ReportData([d], recs, score_records(recs) + vsi, "test")
    html, md, drawn, tables = build_report(data, "vsi")
    for x in drawn:
        F.close(x)
    sec = html[html.index('id="vsi"'):html.index('id="cards"')]
    assert sec.count("<svg") == 1 and "Reliability diagrams" in sec  # no histogram rows: the diagrams alone
    assert "Pooled and threshold analyses" in sec and "2.125" in sec and ">3<" in sec  # a count as an integer
    assert "vsi_reliability_diagrams" in [x.name for x in drawn]
    t = next(t for t in tables if t.name == "table_vsi_pooled_and_threshold_analyses")
    assert [r[2] for r in t.rows] == ["cw_enrichment@0.05" + cell, "signal_wins[max_prob,sigma=20]"]


def test_report_out_directory_names_report_html(tmp_path, human_run):
    """Before: '--out must be the path of the scores CSV file' (the score command's message)."""
    p = cli("report", str(human_run), "--out", str(tmp_path), columns=250)
    one_line_error(p, "--out", "is a directory", "report's HTML file")
    assert "scores CSV" not in p.stdout


def test_report_refuses_foreign_file_and_non_html_suffix(tmp_path, human_run):
    """Before: notes.txt silently overwritten with HTML; r.pdf got HTML."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    one_line_error(cli("report", str(human_run), "--out", str(notes), columns=250), "--out", ".html")
    assert notes.read_text() == "my notes"
    one_line_error(cli("report", str(human_run), "--out", str(tmp_path / "r.pdf"), columns=250), "--out", ".html")
    assert not (tmp_path / "r.pdf").exists()
    foreign = tmp_path / "page.html"
    foreign.write_text("<html>someone else's page</html>")
    one_line_error(cli("report", str(human_run), "--out", str(foreign), columns=250), "not a perceptbench report")
    assert foreign.read_text() == "<html>someone else's page</html>"


def test_report_refuses_an_htm_suffix_as_the_docs_say(tmp_path, human_run):
    """Before: --out x.htm was accepted while the README and the error for .txt say --out must
    end in .html: one rule, .html only."""
    out = tmp_path / "x.htm"
    p = cli("report", str(human_run), "--out", str(out), columns=250)
    one_line_error(p, "--out", "must end in .html", str(tmp_path / "x.html"))
    assert not out.exists() and not (tmp_path / "x.md").exists()


def test_report_overwrites_its_own_report(tmp_path, human_run):
    out = tmp_path / "rep.html"
    for _ in range(2):  # the second call overwrites the report written by the first
        p = cli("report", str(human_run), "--out", str(out), columns=250)
        assert p.returncode == 0, p.stdout + p.stderr
    assert out.read_text().count("perceptbench report") >= 1 and out.with_suffix(".md").exists()


CELL = "[region_blur,sigma=20]"


VSI = "vsi.salbench.syn@n=40"


def _vsi_rows(model, *, all_null=False, insensitive=1.0):
    import json

    import numpy as np

    from perceptbench.core.rows import ScoreRow

    edges = [0.0] + [10.0 ** e for e in np.arange(-4.0, 1.01, 0.5)] + [None]
    return [ScoreRow(VSI, model, "vsi_median" + CELL, 0.0002, 0.0, 0.001, 40, 0, "nats; quartiles"),
            ScoreRow(VSI, model, "insensitive_frac@0.05" + CELL, insensitive, insensitive, insensitive, 40, 0),
            ScoreRow(VSI, model, "n_fallback" + CELL, 0.0, None, None, 40, None),
            ScoreRow(VSI, model, "vsi_histogram" + CELL, 40.0, None, None, 40, None,
                     json.dumps({"edges_nats": edges, "counts": [30, 4, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0]})),
            ScoreRow(VSI, model, "auroc_vsi" + CELL, float("nan"), float("nan"), float("nan"),
                     0 if all_null else 40, 40 if all_null else 0, "no parseable answers")]


def test_flags_for_all_null_and_image_ignoring_models():
    """Before: insensitive_frac 1.00 [1.00, 1.00] with no flag (read as a perfect score); an
    all-null model's row carried no flag saying so."""
    from perceptbench.reports.headline import headline_rows

    h = {(x.model, x.metric): x for x in headline_rows(_vsi_rows("idef", all_null=True)
                                                        + _vsi_rows("llava", insensitive=0.4))}
    assert "every sample insensitive" in h[("idef", "insensitive_frac@0.05" + CELL)].flags
    assert "every sample insensitive" not in h[("llava", "insensitive_frac@0.05" + CELL)].flags
    au = h[("idef", "auroc_vsi" + CELL)]
    assert "no parseable answers" in au.flags
    assert "parsed clean answer" in au.extra and "VSI rows need no parsed answer" in au.extra  # why n differs


def test_report_vsi_iqr_integer_counts_model_vs_model_and_markdown(tmp_path, mirror):
    """Before: vsi_median's quartiles in the CI column, n_fallback as 0.000, 'Fewer than two models
    on any task' beside a three-model VSI task, report.md with 'P(in band) &lt; 0.5'."""
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import _md_cell, render_report, row_text
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import synthetic_records

    recs = synthetic_records(["vlm-a"], tasks=("similarity.chart.mark_color",))
    from perceptbench.records import TrialRecord

    vsi_recs = []
    for m in ("m1", "m2", "m3"):  # VSI records of three models (one stimulus each is enough here)
        d = recs[-1].model_dump()
        d.update(task_id=VSI, model=m, trial_id=f"{VSI}|s0|{m}|rep0", stimulus_id="s0")
        vsi_recs.append(TrialRecord.model_validate(d))
    rows = score_records(recs) + _vsi_rows("m1") + _vsi_rows("m2") + _vsi_rows("m3")
    data = ReportData([tmp_path], recs + vsi_recs, rows, "test")
    html, md, _ = render_report(data, "t")
    sec = html[html.index('id="vsi"'):html.index('id="cards"')]
    med = next(r for r in rows if r.metric == "vsi_median" + CELL)
    assert "IQR" in row_text(med) and "[" not in row_text(med) and "quartiles, not a CI" in sec
    assert row_text(next(r for r in rows if r.metric == "n_fallback" + CELL)) == "0"
    paired = html[html.index('id="paired"'):html.index('id="provenance"')]
    assert "Fewer than two models" not in paired and "vsi.salbench.syn@n=40: 3 models" in paired
    assert _md_cell("P(in band) < 0.5") == "P(in band) < 0.5" and "&lt;" not in md
    assert _md_cell("<img src=x>") == "&lt;img src=x&gt;"


def test_vsi_histogram_panels_do_not_overlap():
    """Before: the first panel's x label was drawn over the second panel's title."""
    import matplotlib

    matplotlib.use("Agg")
    from perceptbench.reports.figures import vsi_histogram_figure
    from perceptbench.core.rows import ScoreRow

    rows = _vsi_rows("m1")
    rows += [ScoreRow(VSI, r.model, r.metric.replace("region", "whole"), r.value, r.ci_low, r.ci_high, r.n,
                      r.n_null, r.note) for r in rows if r.metric.startswith("vsi_histogram")]
    fig = vsi_histogram_figure(rows)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    a0, a1 = fig.axes[:2]
    xlabel = a0.xaxis.label.get_window_extent(r)
    title = a1.title.get_window_extent(r)
    assert xlabel.y0 > title.y1 or title.y0 > xlabel.y1, (xlabel, title)


def test_report_explains_position_missing_chance_and_kernel_range(tmp_path, mirror):
    """Before: floor->ceiling position 0.39 next to v/ceil 0.64, SalBench chance '-' and
    'kernels 0.700-0.874' with no explanation."""
    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.headline import headline_rows
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    d = write_synthetic_run(tmp_path / "run", ["model-a"], tasks=("similarity.chart.mark_color",))
    recs = read_records(d / "records.jsonl")
    rows = score_records(recs)
    html, _, _ = render_report(ReportData([d], recs, rows, "t"), "t")
    assert "position = (value &minus; floor) / (ceiling &minus; floor)" in html
    assert "the other human colour kernels" in html
    # each metric's floor and ceiling in the words of its rule (the terminal table's), not a fixed sentence
    assert "similarity.chart.mark_color</code> B: floor = position floor; ceiling = mean B of the other" in html
    b = next(h for h in headline_rows(rows) if h.metric == "B")
    assert "their mean is the ceiling" in b.extra


def test_ak_figure_flags_small_n_per_k():
    """Before: a(k) resting on 2-3 trials per k (CIs [0, 1] or [0, 0]) carried no small-n flag."""
    from perceptbench.reports.figures import ak_curves
    from perceptbench.core.rows import ScoreRow

    tid = "similarity.chart.series_count@n_test=40"
    rows = [ScoreRow(tid, "m", f"a_k[{k}]", 0.5, 0.0, 1.0, 3, 0) for k in range(2, 17)]
    rows += [ScoreRow(tid, "m", "capacity_k", 8.0, 2.0, 8.0, 40, 0)]
    assert "small n: 3 trials per k (&lt; 30)" in ak_curves(rows)  # one count for every k: said once
    big = [ScoreRow(tid, "m", f"a_k[{k}]", 0.5, 0.4, 0.6, 60, 0) for k in range(2, 17)]
    assert "small n" not in ak_curves(big)


def test_mark_colour_kernel_labels_do_not_overlap(monkeypatch):
    """Before: the labels of kernels l5 (0.870) and l9 (0.874) were drawn over each other."""
    import matplotlib

    matplotlib.use("Agg")
    from perceptbench.reports import figures as F
    from perceptbench.core.rows import ScoreRow

    monkeypatch.setattr(F, "to_svg", lambda fig: fig)  # keep the figure to measure its texts
    tid = "similarity.chart.mark_color"
    rows = [ScoreRow(tid, "m", "B", 0.5, 0.4, 0.6, 120, 0), ScoreRow(tid, "m", "position_floor", 0.33, None, None, 120, 0)]
    rows += [ScoreRow(tid, f"human:kernel-{k}", "B", v, None, None, 120, 0)
             for k, v in (("l5", 0.870), ("l9", 0.874), ("td", 0.76), ("sa", 0.70))]
    fig = F.mark_color(rows)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    from matplotlib.text import Text

    texts = fig.axes[0].texts
    # close kernels (l5 0.870, l9 0.874) share one label; every kernel is named once
    assert sorted(n for t in texts for n in t.get_text().split(", ")) == ["l5", "l9", "sa", "td"]
    boxes = [Text.get_window_extent(t, r) for t in texts]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert not a.overlaps(b), (a, b)  # no two labels drawn over each other


def test_report_sections_are_numbered_without_gaps(tmp_path, mirror):
    """Before: without VSI records the page went from 5. SalBench to 7. cards."""
    import re

    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    d = write_synthetic_run(tmp_path / "run", ["model-a"], tasks=("similarity.chart.mark_color",))
    recs = read_records(d / "records.jsonl")
    html, _, _ = render_report(ReportData([d], recs, score_records(recs), "t"), "t")
    nums = [int(n) for n in re.findall(r'<h2 id="[a-z]+">(\d+)\.', html)]
    assert nums == list(range(1, len(nums) + 1)) and 'id="vsi"' not in html
    # a mark-colour run shows the matrix, mark colour and the cards (no empty battery sections)
    assert re.findall(r'<h2 id="([a-z]+)">', html) == ["matrix", "markcolor", "cards", "provenance"]
    assert re.search(r'<h2 id="cards">3\.', html) and "section 3" in html


def test_series_chance_label_explains_the_answer_range():
    """Before: 'chance 1/20 (answers 1-20)' beside a(k) over k = 2-16, unexplained."""
    from perceptbench.reports.headline import headline_rows
    from perceptbench.core.rows import ScoreRow

    tid = "similarity.chart.series_count"
    h = next(x for x in headline_rows([ScoreRow(tid, "m", "accuracy", 0.3, 0.2, 0.4, 40, 0)]) if x.metric == "accuracy")
    assert h.floor == 1 / 20 and "rendered 2-16" in h.floor_label and "1/15" in h.floor_label


def test_matrix_cell_marks_a_value_resting_on_few_parsed_answers(tmp_path, mirror):
    """Before: the matrix showed '0.00 [0.00, 0.00]' for a model with 76/80 null answers, and
    report.md the bare value, with no mark that it rests on 4 parsed answers."""
    import re

    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import synthetic_records

    sil = "closure.nat.silhouette"
    recs = synthetic_records(["mostly-null"], tasks=(sil,), null_rate=0.95) + \
        [r for r in synthetic_records(["fine"], tasks=(sil,), null_rate=0.0) if r.model == "fine"]
    model = [r for r in recs if r.model == "mostly-null"]
    n_null = sum(r.response is None for r in model)
    assert len(model) == 80 and n_null > 0.1 * 80
    html, md, _ = render_report(ReportData([tmp_path], recs, score_records(recs), "test"), "t")
    mark = f"· {n_null}/80 null"
    matrix = html[html.index('id="matrix"'):html.index('id="dissociation"')]
    table = matrix[matrix.index("<table"):]
    row = re.search(r"<tr><td>mostly-null</td>(.*?)</tr>", table).group(1)
    assert row.count(mark) == 2  # B and kappa cells
    assert "null" not in re.search(r"<tr><td>fine</td>(.*?)</tr>", table).group(1)
    svg_text = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", matrix))
    assert f"{n_null}/80 null" in svg_text  # in the figure's cell too
    assert "76/80 null" in matrix  # the legend under the figure
    md_row = next(ln for ln in md.splitlines() if "| mostly-null | B |" in ln)
    assert mark in md_row and "Marks:" in md


def test_no_negative_zero_and_no_zero_of_zero_paired_line(tmp_path, mirror):
    """Before: '-0.000' in CIs (report, terminal), and report.md said 'Paired differences: 0 of 0
    exclude 0.' for a one-model run."""
    from perceptbench.cli import format_ci, format_value
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.headline import fmt
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.core.rows import ScoreRow
    from perceptbench.testing.synthetic_runs import synthetic_records

    assert format_ci(-1e-17, 0.25) == "[0.000, 0.250]" and format_value("kappa", -0.0) == "0.000"
    assert fmt(-0.0004, 2) == "0.00" and fmt(-1e-12, sign=True) == "+0.000" and fmt(-0.2) == "-0.200"
    sil = "closure.nat.silhouette"
    recs = synthetic_records(["solo"], tasks=(sil,))
    rows = [r if not (r.model == "solo" and r.metric == "kappa_pairwise") else
            ScoreRow(r.task_id, r.model, r.metric, -1e-17, -2e-17, 0.1, r.n, r.n_null) for r in score_records(recs)]
    html, md, _ = render_report(ReportData([tmp_path], recs, rows, "test"), "t")
    assert "-0.000" not in html and "-0.00" not in html and "-0.000" not in md
    assert "0 of 0" not in md and "Paired differences: none; fewer than two models on any task" in md


def test_paired_difference_is_on_the_stimuli_both_answered():
    from perceptbench.metrics.bootstrap import resample_indices
    from perceptbench.reports.paired import paired_differences

    # a: right on 0-5, wrong on 6-9; b: null on 0-3, wrong on 4-5, right on 6-9.
    a = plant_answers("similarity.chart.mark_color", "a", {**{i: "right" for i in range(6)}, **{i: "wrong" for i in range(6, 10)}})
    b = plant_answers("similarity.chart.mark_color", "b", {**{i: None for i in range(4)}, 4: "wrong", 5: "wrong", **{i: "right" for i in range(6, 10)}})
    diffs, notes = paired_differences(a + b)
    assert notes == []
    (d,) = diffs
    # common answered stimuli 4-9 (n=6): a right on 4,5 -> 2/6; b right on 6-9 -> 4/6; a - b = -1/3
    # (the old code subtracted a's B on 10 stimuli, 0.6, from b's on 6, 0.667: -0.067)
    assert (d.a, d.b, d.metric, d.n) == ("a", "b", "B", 6)
    assert d.diff == pytest.approx(-1 / 3, abs=1e-12)
    assert "6 stimuli both answered" in d.basis and "nulls excluded" in d.basis
    # the interval: the same resampled common stimuli for both models in every draw
    xa = np.array([1, 1, 0, 0, 0, 0.0])
    xb = np.array([0, 0, 1, 1, 1, 1.0])
    idx = resample_indices(6, 1000, 0)
    lo, hi = np.percentile(xa[idx].mean(1) - xb[idx].mean(1), [2.5, 97.5])
    assert (d.low, d.high) == pytest.approx((lo, hi), abs=1e-12)
    # its two-sided bootstrap p from the same draws: 2 (min(#d <= 0, #d >= 0) + 1) / (B + 1)
    dd = xa[idx].mean(1) - xb[idx].mean(1)
    k = min(int((dd <= 0).sum()), int((dd >= 0).sum()))
    assert d.p == pytest.approx(min(1.0, 2 * (k + 1) / 1001), abs=1e-15)
    assert d.p_holm == d.p_bh == d.p  # a family of one


def test_bootstrap_p_by_hand():
    from perceptbench.reports.paired import bootstrap_p

    # 10 draws, 3 at or below 0 (one exactly 0 counts on both sides), 8 at or above: 2 (3 + 1) / 11
    d = np.array([-0.2, -0.1, 0.0, 0.1, 0.1, 0.2, 0.3, 0.3, 0.4, 0.5])
    assert bootstrap_p(d) == pytest.approx(8 / 11)
    assert bootstrap_p(np.r_[d, np.nan]) == pytest.approx(8 / 11)  # an undefined draw is left out
    assert bootstrap_p(np.full(999, 0.3)) == pytest.approx(2 / 1000)  # never 0: at least 2 / (B + 1)
    assert bootstrap_p(np.zeros(5)) == 1.0  # capped at 1
    assert np.isnan(bootstrap_p(np.array([np.nan])))


def test_holm_and_benjamini_hochberg_by_hand():
    from perceptbench.reports.paired import adjust_p_values

    p = [0.01, 0.04, np.nan, 0.03, 0.20]
    holm, bh = adjust_p_values(p)
    # Holm (m = 4 defined): sorted 0.01, 0.03, 0.04, 0.20 times 4, 3, 2, 1 -> 0.04, 0.09, 0.08, 0.20, made
    # non-decreasing in that order -> 0.04, 0.09, 0.09, 0.20
    assert holm[[0, 3, 1, 4]] == pytest.approx([0.04, 0.09, 0.09, 0.20])
    # BH: p_(i) m / i -> 0.04, 0.06, 0.0533, 0.20, made non-increasing from the top -> 0.04, 0.0533, 0.0533, 0.20
    assert bh[[0, 3, 1, 4]] == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.20])
    assert np.isnan(holm[2]) and np.isnan(bh[2])


def test_the_report_gives_p_values_adjusted_for_its_comparisons(tmp_path):
    """Issue 24: 12 paired intervals, 7 marked 'excludes 0', and no correction for multiple comparisons."""
    from perceptbench.reports.paired import paired_differences

    runs = []
    for name, right in (("a", range(0, 40)), ("b", range(0, 20)), ("c", range(10, 30))):
        runs += plant_answers("similarity.chart.mark_color", name, {i: "right" if i in right else "wrong"
                                                                    for i in range(40)})
    plant_records(tmp_path / "run", runs)
    out = tmp_path / "r.html"
    p = cli("report", tmp_path / "run", "--out", out, columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    diffs, _ = paired_differences(runs)
    assert len(diffs) == 3 and all(np.isfinite(d.p) and d.p_holm >= d.p and d.p_bh >= d.p for d in diffs)
    html, md = out.read_text(), out.with_suffix(".md").read_text()
    n_holm = sum(d.p_holm < 0.05 for d in diffs)
    assert f"{n_holm} have a Holm-adjusted p &lt; 0.05" in html and "<th>p, Holm</th><th>p, BH</th>" in html
    assert "The figure draws the Holm-adjusted ones as blue diamonds and the table marks them." in html
    assert f"{n_holm} have a Holm-adjusted p < 0.05" in md and ", Holm " in md


def test_disjoint_answered_sets_give_no_number():
    from perceptbench.reports.paired import paired_differences

    # a answers 0-4 and is null on 5-9, b the reverse: no stimulus both answered
    a = plant_answers("similarity.chart.mark_color", "a", {**{i: "right" for i in range(5)}, **{i: None for i in range(5, 10)}})
    b = plant_answers("similarity.chart.mark_color", "b", {**{i: None for i in range(5)}, **{i: "right" for i in range(5, 10)}})
    diffs, notes = paired_differences(a + b)
    assert diffs == []
    assert len(notes) == 1 and "only 0 stimuli both answered" in notes[0] and "a - b" in notes[0]
    # 4 common answered stimuli (< 5): still no number
    c = plant_answers("similarity.chart.mark_color", "c", {**{i: "right" for i in range(4)}, **{i: None for i in range(4, 10)}})
    diffs, notes = paired_differences(a + c)
    assert diffs == [] and "only 4 stimuli both answered" in notes[0]


def test_all_null_salbench_cell_is_flagged_like_every_family():
    from perceptbench.reports.headline import cell_text, headline_rows
    from perceptbench.scoring import score_records

    # 12 SalBench stimuli, every answer null: exact_match = 0 on n = 12 (a null is an empty prediction), 12/12 null;
    # mark colour, every answer null: B undefined, n = 0
    recs = plant_answers("salbench.detection.syn@n=60,n_probe=0", "v", {i: None for i in range(12)}) + plant_answers("similarity.chart.mark_color", "v", {i: None for i in range(12)})
    heads = {(h.task_id, h.metric): h for h in headline_rows(score_records(recs)) if h.model == "v"}
    sal, mark = heads[("salbench.detection.syn@n=60,n_probe=0", "exact_match")], heads[("similarity.chart.mark_color", "B")]
    assert (sal.value, sal.n, sal.trials) == (0.0, 12, (12, 12))
    assert "no parseable answers" in sal.flags and "no parseable answers" in mark.flags
    assert cell_text(sal).endswith("· all null") and "12/12 null" not in cell_text(sal)
    # one parseable answer among 12: no such flag, the null mark instead
    recs = plant_answers("salbench.detection.syn@n=60,n_probe=0", "w", {0: "right", **{i: None for i in range(1, 12)}})
    (h,) = [h for h in headline_rows(score_records(recs)) if h.model == "w" and h.metric == "exact_match"]
    assert "no parseable answers" not in h.flags and cell_text(h).endswith("· 11/12 null")


def test_no_paired_difference_for_encoder_settings_the_scorer_skips():
    from perceptbench.reports.paired import paired_differences

    # encoder answers recorded (by an older run) for shots=3: scored as `skipped`, so never compared
    tid = "salbench.detection.syn@n=60,n_probe=6,shots=3"
    recs = [r.model_copy(update={"readout": "linear_probe", "model_family": "encoder"})
            for m in ("e1", "e2") for r in plant_answers(tid, m, {i: "right" for i in range(8)})]
    assert paired_differences(recs) == ([], [])
    # the same answers at shots=0 are compared: both right on 8 stimuli -> difference 0 on n = 8
    base = "salbench.detection.syn@n=60,n_probe=0"
    recs = [r.model_copy(update={"readout": "linear_probe", "model_family": "encoder"})
            for m in ("e1", "e2") for r in plant_answers(base, m, {i: "right" for i in range(8)})]
    (d,), _ = paired_differences(recs)
    assert (d.diff, d.n) == (0.0, 8)


def test_benchmark_native_tables_beside_the_vsi_rows(tmp_path):
    """Issue 21: one table per external benchmark, one column per model (the comparison), values
    with their CI and n; a row a model cannot have says why instead of a number."""
    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records

    d = write_synthetic_run(tmp_path / "v", ["vlm-a"], tasks=("similarity.chart.mark_color",))
    recs = read_records(d / "records.jsonl")
    pope, star = "vsi.pope@split=random", "vsi.mmstar"
    rows = [ScoreRow(pope, "vlm-a", "pope.f1@nulls_excluded", 0.812, 0.79, 0.83, 3000, 4),
            ScoreRow(pope, "vlm-b", "pope.f1@nulls_excluded", 0.701, 0.68, 0.72, 3000, 0),
            ScoreRow(star, "vlm-a", "mmstar.multimodal_leakage", float("nan"), None, None, 0, None,
                     "multi-modal leakage needs the base LLM's answers"),
            ScoreRow(star, "vlm-a", "mmstar.accuracy[math]", 0.4, 0.3, 0.5, 250, 2)]
    html, _, _ = render_report(ReportData([d], recs, score_records(recs) + rows, "test"), "native")
    sec = html[html.index('id="vsi"'):html.index('id="cards"')]
    assert 'id="native-pope"' in sec and 'id="native-mmstar"' in sec and 'id="native-mmvp"' not in sec
    pope_table = sec[sec.index('id="native-pope"'):sec.index('id="native-mmstar"')]
    assert "<th>vlm-a</th><th>vlm-b</th>" in pope_table and "0.812 [0.790, 0.830]" in pope_table
    assert "0.701 [0.680, 0.720]" in pope_table and "n=3000" in pope_table
    assert "n/a: multi-modal leakage needs the base LLM" in sec[sec.index('id="native-mmstar"'):]


def test_report_redacts_url_credentials_of_older_records(tmp_path):
    """Issue 20 item 7: a model URL's userinfo (``http://user:secret@host``) in a record's
    model_version reached the report; the page and its Markdown show ``user:****@``."""
    from helpers.records import plant_records

    url = "http://alice:s3cr3t-pw@10.0.0.7:8000/v1#m"
    recs = [r.model_copy(update={"run_meta": r.run_meta.model_copy(update={"model_version": url})})
            for r in plant_answers("similarity.chart.mark_color", "m", {i: "right" for i in range(6)})]
    plant_records(tmp_path / "run", recs)
    out = tmp_path / "report.html"
    p = cli("report", tmp_path / "run", "--out", out, columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    html, md = out.read_text(), out.with_suffix(".md").read_text()
    assert "s3cr3t-pw" not in html + md + p.stdout
    assert "http://alice:****@10.0.0.7:8000/v1#m" in html


def test_model_named_with_a_leading_underscore_keeps_its_legend_label(tmp_path):
    """Issue 20 item 3: matplotlib leaves out legend entries whose label starts with '_', so a
    model named ``_hidden`` vanished from the figure legends."""
    from perceptbench.reports import figures as F

    d = write_synthetic_run(tmp_path / "run", ["_hidden", "model-a"])
    score_file(d / "records.jsonl")
    rows = [ScoreRow(**{k: v for k, v in r.items() if k in ScoreRow.__dataclass_fields__})
            for r in json.loads((d / "scores.json").read_text())]
    for svg in (F.dissociation(rows, ["_hidden", "model-a"]), F.ak_curves(rows, ["_hidden", "model-a"])):
        legend = svg[svg.index('id="legend_1"'):]
        assert "_hidden" in legend and "model-a" in legend


# ---------------------------------------------------------------- report --figures DIR (issue 24 item 1)

@pytest.fixture(scope="module")
def figure_files(hostile_run, tmp_path_factory):
    """`report --figures DIR` on the hostile run: (html path, DIR, stdout)."""
    d = tmp_path_factory.mktemp("figs")
    out, figs = d / "report.html", d / "paper" / "figures"
    (d / "paper").mkdir()
    p = cli("report", str(hostile_run), "--out", str(out), "--figures", str(figs), torch="unimported", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, figs, p.stdout


def _csv_rows(path):
    import csv

    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _inline_svgs(html: str) -> list[str]:
    return re.findall(r"<figure><svg.*?</svg>", html, flags=re.S)


def test_figures_dir_has_pdf_svg_png_and_csv_of_every_figure_the_page_shows(figure_files):
    from PIL import Image

    from perceptbench.reports.figures import DOUBLE_COLUMN_IN, SINGLE_COLUMN_IN

    out, figs, stdout = figure_files
    html = out.read_text()
    stems = sorted(p.stem for p in figs.glob("*.pdf"))
    assert len(stems) == len(_inline_svgs(html)) >= 8, stems  # one file set per figure on the page
    assert "accuracy_vs_error_consistency_silhouettes" in stems and "model_vs_model_paired_differences" in stems
    assert not any(re.fullmatch(r"fig\d*", s) for s in stems)
    for s in stems:
        for ext in ("pdf", "svg", "png", "csv"):
            assert (figs / f"{s}.{ext}").stat().st_size > 0, (s, ext)
        pdf = (figs / f"{s}.pdf").read_bytes()
        assert pdf.startswith(b"%PDF-")
        assert b"/FontFile2" in pdf and b"/Type3" not in pdf, s  # TrueType embedded: editable text, no Type 3
        pdf_w = float(re.search(rb"/MediaBox \[ *0 0 ([0-9.]+) ", pdf).group(1)) / 72
        assert (figs / f"{s}.svg").read_text().lstrip().startswith("<?xml")
        with Image.open(figs / f"{s}.png") as im:
            assert [round(x) for x in im.info["dpi"]] == [300, 300], s
            width_in = im.size[0] / 300
        # a page column or the text width (the matrix may grow beyond it with many columns)
        assert pdf_w == pytest.approx(width_in, abs=0.01), s  # the PDF page is the figure, no margin added
        assert width_in == pytest.approx(SINGLE_COLUMN_IN, abs=0.01) or \
            (s == "model_by_task_headline_matrix" and width_in >= DOUBLE_COLUMN_IN - 0.01) or \
            width_in == pytest.approx(DOUBLE_COLUMN_IN, abs=0.01), (s, width_in)
    assert f"({len(list(figs.iterdir()))} files" in stdout
    assert not list(figs.glob(".*"))  # no temporary file left behind


def test_figure_files_are_the_figures_of_the_page(figure_files):
    """One function per figure: the SVG file is the page's inline SVG, byte for byte (the
    file carries the XML prologue and metadata besides)."""
    out, figs, _ = figure_files
    inline = _inline_svgs(out.read_text())
    for path in figs.glob("*.svg"):
        s = path.read_text()
        s = s[s.index("<svg"):]
        s = s[:s.index("<metadata>")] + s[s.index("</metadata>") + len("</metadata>"):]
        assert any(x[len("<figure>"):] == s.rstrip() for x in inline), path.name


def test_figure_csv_numbers_are_those_of_scores_csv(figure_files, hostile_run):
    _, figs, _ = figure_files
    scores = {(r["task_id"], r["model"], r["metric"]): r for r in _csv_rows(hostile_run / "scores.csv")}
    n_checked = 0
    for path in figs.glob("*.csv"):
        if path.stem.startswith("table_"):
            continue
        rows = _csv_rows(path)
        assert rows, path.name
        assert list(rows[0]) == ["figure", "panel", "task_id", "model", "role", "metric", "plotted_as", "x",
                                 "value", "ci_low", "ci_high", "n", "n_null", "value_source", "evidence", "note"]
        for r in rows:
            assert r["figure"] == path.stem
            if r["value_source"] != "scores.csv":
                assert r["value_source"], r  # a derived number says how it was derived
                continue
            want = scores[(r["task_id"], r["model"], r["metric"])]
            assert [r[c] for c in ("value", "ci_low", "ci_high", "n", "n_null")] == \
                [want[c] for c in ("value", "ci_low", "ci_high", "n", "n_null")], (path.name, r)
            n_checked += 1
    assert n_checked > 100
    models = {r["model"] for r in _csv_rows(figs / "accuracy_vs_error_consistency_silhouettes.csv") if r["role"] == "model"}
    assert models == {"model-a", XSS_MODEL, "model-$c$"}  # labels as written, not escaped for HTML


def test_tables_as_csv_and_latex_with_the_same_rows(figure_files, hostile_run):
    from helpers.latex import body_rows, braces_balanced

    _, figs, _ = figure_files
    names = sorted(p.stem for p in figs.glob("table_*.csv"))
    assert {"table_headline_metrics", "table_model_by_task_matrix", "table_model_vs_model_paired_differences",
            "table_provenance_models", "table_provenance_trials_per_task_and_model",
            "table_vlm_answers_as_given"} <= set(names)
    for name in names:
        rows = _csv_rows(figs / f"{name}.csv")
        tex = (figs / f"{name}.tex").read_text()
        assert braces_balanced(tex), name
        assert tex.count("\\begin{") == tex.count("\\end{") == 2, name
        body = body_rows(tex)
        assert len(body) == len(rows) > 0, name
        n_cols = len(rows[0])
        assert all(line.count(" & ") == n_cols - 1 for line in body), name  # no stray & from a cell
        assert XSS_MODEL not in tex and "<" not in tex and "$c$" not in tex.replace("$-$", "")
    scores = {(r["task_id"], r["model"], r["metric"]): r for r in _csv_rows(hostile_run / "scores.csv")}
    for r in _csv_rows(figs / "table_headline_metrics.csv"):
        want = scores[(r["task_id"], r["model"], r["metric"])]
        assert [r[c] for c in ("value", "ci_low", "ci_high", "n", "n_null")] == \
            [want[c] for c in ("value", "ci_low", "ci_high", "n", "n_null")], r
    tex = (figs / "table_headline_metrics.tex").read_text()
    assert r"\textless{}img src=x onerror=alert(1)\textgreater{}" in tex and r"model-\$c\$" in tex


def test_figure_files_are_byte_identical_on_a_second_run(figure_files, hostile_run, tmp_path):
    """A second report (another process) into a copy of DIR: it overwrites the files it wrote
    (the manifest lists them) with the same bytes."""
    import shutil

    _, figs, _ = figure_files
    again = tmp_path / "again"
    shutil.copytree(figs, again)
    for x in again.iterdir():
        os.utime(x, ns=(0, 0))  # 1970: a file written again has a later time
    p = cli("report", str(hostile_run), "--out", str(tmp_path / "r.html"), "--figures", str(again))
    assert p.returncode == 0, p.stdout + p.stderr
    names = sorted(x.name for x in figs.iterdir())
    assert names == sorted(x.name for x in again.iterdir()) and "perceptbench-figures.sha256" in names
    assert all((again / n).stat().st_mtime_ns > 0 for n in names)  # every file written again
    differ = [n for n in names if (figs / n).read_bytes() != (again / n).read_bytes()]
    assert differ == []
    assert b"CreationDate" not in (figs / "accuracy_vs_error_consistency_silhouettes.pdf").read_bytes()


def test_figure_type_is_7_to_9_points(figure_files):
    """Text sizes in the SVG files (user unit = pt at print size): 7-9 pt, none smaller."""
    _, figs, _ = figure_files
    for path in figs.glob("*.svg"):
        sizes = {float(x) for x in re.findall(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([0-9.]+)px", path.read_text())}
        assert sizes and min(sizes) >= 7 and max(sizes) <= 9, (path.name, sorted(sizes))


def test_no_figure_text_runs_off_the_page(hostile_run):
    """Before: the a(k) and VSI titles, centred over a narrower axes, were cut at the figure's
    left edge; the forest plot's x label ran past its right edge."""
    from perceptbench.reports import figures as F
    from perceptbench.reports.data import load_report_data
    from perceptbench.reports.html import build_report

    _, _, drawn, _ = build_report(load_report_data([hostile_run]), "t")
    assert len(drawn) >= 8
    drawn.append(F.draw_vsi_histograms(_vsi_rows("llava-1.5-7b") + _vsi_rows("idefics2-8b-with-a-long-name")))
    for d in drawn:
        fig = d.fig
        fig.canvas.draw()
        ink = fig.get_tightbbox(fig.canvas.get_renderer())  # inches: every drawn title, label, legend, tick
        w, h = fig.get_size_inches()
        assert ink.x0 >= -0.01 and ink.y0 >= -0.01 and ink.x1 <= w + 0.01 and ink.y1 <= h + 0.01, (d.name, ink, w, h)
        F.close(d)


def test_figures_dir_errors_are_one_line_and_write_nothing(tmp_path, human_run):
    a_file = tmp_path / "figs.txt"
    a_file.write_text("mine")
    out = tmp_path / "r.html"
    one_line_error(cli("report", str(human_run), "--out", str(out), "--figures", str(a_file), columns=250),
                   "--figures", "is a file")
    assert a_file.read_text() == "mine"
    one_line_error(cli("report", str(human_run), "--out", str(out), "--figures", str(a_file / "figs"),
                       columns=250), "--figures", "figs.txt is a file, so nothing can be written below it")
    assert not out.exists() and a_file.read_text() == "mine"


def test_figures_dir_and_its_missing_parents_are_created_as_out_is(tmp_path, human_run):
    """docs/report.md's ``--figures paper/figures`` failed in a fresh clone ('the parent directory
    paper does not exist') while ``--out`` created its missing parents."""
    figs = tmp_path / "paper" / "figures"
    p = cli("report", str(human_run), "--out", str(tmp_path / "r.html"), "--figures", str(figs), in_process=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert (figs / "perceptbench-figures.sha256").is_file() and any(figs.glob("*.pdf"))


def test_unwritable_figures_dir_is_named(tmp_path, monkeypatch):
    """The check itself (as root, a chmod'ed directory stays writable, so os.access is made to say no)."""
    import perceptbench.reports.files as files

    monkeypatch.setattr(files.os, "access", lambda p, mode: False)
    with pytest.raises(ValueError, match=r"^--figures .*figs: its parent .* is not writable; give another --figures$"):
        files.check_figures_dir(tmp_path / "figs")
    with pytest.raises(ValueError, match="the directory is not writable"):
        files.check_figures_dir(tmp_path)


def test_report_help_documents_figures():
    p = cli("report", "--help", columns=200)
    assert p.returncode == 0 and "--figures" in p.stdout and "300-dpi PNG" in p.stdout and "LaTeX" in p.stdout
def test_mark_figure_has_one_panel_per_kernel_channel(monkeypatch):
    """Issue 23: the similarity principle covers colour, shape and size on the same footing."""
    import matplotlib

    matplotlib.use("Agg")
    from perceptbench.core.rows import ScoreRow
    from perceptbench.reports import figures as F

    monkeypatch.setattr(F, "to_svg", lambda fig: fig)
    rows = []
    for tid, model in (("similarity.chart.mark_color", "a"), ("similarity.chart.mark_shape", "b"),
                       ("similarity.chart.mark_shape_size@kernel=td", "a")):
        rows += [ScoreRow(tid, model, "B", 0.5, 0.4, 0.6, 120, 0),
                 ScoreRow(tid, model, "position_floor", 0.33, None, None, 120, 0),
                 ScoreRow(tid, "human:kernel-l5", "B", 0.8, None, None, 120, 0)]
    fig = F.mark_color(rows)
    assert [ax.get_title() for ax in fig.axes[:3]] == [  # each panel: the channel's task name and id
        "Mark colour odd-one-out (similarity.chart.mark_color)", "Mark shape odd-one-out (similarity.chart.mark_shape)",
        "Mark shape x size odd-one-out (similarity.chart.mark_shape_size)"]
    labels = fig.legends[0].get_texts()  # one legend under the panels
    assert {"a", "b"} <= {t.get_text() for t in labels}  # model b answered the shape panel only
    only_colour = F.mark_color(rows[:3])
    assert len(only_colour.axes) == 1 and only_colour.axes[0].get_title().startswith("Mark colour odd-one-out")


def test_vsi_only_report_shows_only_its_sections_and_the_answers(tmp_path):
    """Before: a VSI-only run's page had four empty battery sections ('No closure.nat.silhouette
    records' ...), a human-likeness card for tasks without human data, an empty sources table, and
    'No VLM answers in these records' although the VLMs had answered."""
    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.tasks import get_task

    from helpers.records import plant_vsi_record

    task = get_task("vsi.salbench.syn@n=4")
    lp, moved = [float(x) for x in np.log([0.9, 0.08, 0.02])], [float(x) for x in np.log([0.02, 0.08, 0.9])]
    recs = []
    for m in ("vlm-a", "vlm-b", "vlm-c"):
        for i in range(4):
            recs.append(plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], lp, model=m, response="B",
                                         raw_output=f"{m} says: the answer is B ({i})"))
            recs.append(plant_vsi_record(task, "region_blur", f"s{i}", [1, 2, 3], moved if m == "vlm-a" else lp, model=m))
    run = tmp_path / "run"
    plant_records(run, recs)
    recs = read_records(run / "records.jsonl")
    html, md, _ = render_report(ReportData([run], recs, score_records(recs), "t"), "t")
    ids = re.findall(r'<h2 id="([a-z]+)">(\d+)\.', html)
    assert [sid for sid, _ in ids] == ["matrix", "vsi", "paired", "provenance"]
    assert [int(n) for _, n in ids] == [1, 2, 3, 4]
    nav = html[html.index("<nav>"):html.index("</nav>")]
    assert re.findall(r'href="#([a-z]+)"', nav) == ["matrix", "vsi", "paired", "provenance"]
    for empty in ("No closure.nat.silhouette records", "No similarity.chart.series_count records",
                  "No similarity.chart.mark_color records", "No SalBench records", "Human-likeness card",
                  "No VLM answers in these records", "<h3>Human references and source files</h3>"):
        assert empty not in html, empty
    answers = html[html.index("<h3>Answers as given"):]
    for m in ("vlm-a", "vlm-b", "vlm-c"):  # the first 3 answers of each VLM, from its clean trials
        assert all(f"{m} says: the answer is B ({i})" in answers for i in range(3))
    assert "~region_blur" not in answers  # a perturbed trial is a distribution, not an answer
    assert "No human records in these runs" in html
    matrix = html[html.index('id="matrix"'):html.index('id="vsi"')]
    svg_text = re.findall(r"<text[^>]*>([^<]*)</text>", matrix[:matrix.index("</svg>")])
    assert "vlm-a" in svg_text and "floor / chance" not in svg_text and "human ceiling" not in svg_text
    trials = html[html.index("<h3>Trials per task and model</h3>"):html.index("<h3>Skipped")]
    # 8 records per model, 4 answers all parsed: a perturbed trial (no answer by design) is no null
    assert trials.count('<td class="num">8</td><td class="num">0</td>') == 3


def test_answers_as_given_list_answers_given_without_the_image_and_leave_out_skipped_trials(tmp_path):
    """The provenance's answer table lists the records that hold an answer as given by the one rule
    scoring re-parses (:func:`perceptbench.scoring.holds_given_answer`): an image-withheld
    respondent's answers are listed (before: its answers were missing, the table read the clean
    readout only), a skipped trial is not (before: listed with an empty answer)."""
    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.tasks import get_task

    from helpers.records import plant_vsi_record

    task = get_task("vsi.salbench.syn@n=4")
    lp = [float(x) for x in np.log([0.9, 0.08, 0.02])]
    recs = [plant_vsi_record(task, "clean", "s0", [1, 2, 3], lp, model="vlm", raw_output=None, response=None,
                             skipped="planted skip"),
            plant_vsi_record(task, "clean", "s1", [1, 2, 3], lp, model="vlm", raw_output="vlm answers B (s1)")]
    for i in range(2):
        r = plant_vsi_record(task, "image_withheld", f"s{i}", [1, 2, 3], lp, model="vlm[image_withheld]",
                             raw_output=f"without the image: C ({i})", sigma_px=0.0, image_sha256=None)
        recs.append(r.model_copy(update={"response": "C", "correct": False}))
    run = tmp_path / "run"
    plant_records(run, recs)
    recs = read_records(run / "records.jsonl")
    html, _, _ = render_report(ReportData([run], recs, score_records(recs), "t"), "t")
    answers = html[html.index("<h3>Answers as given"):]
    assert "without the image: C (0)" in answers and "without the image: C (1)" in answers
    assert "vlm answers B (s1)" in answers
    table = answers[:answers.index("</table>")]
    assert table.count("<tr><td>") == 3  # the skipped trial s0 is not an answer


def test_matrix_is_grouped_and_coloured_by_declared_family(tmp_path):
    """Issue 22 item 3 (seed 000's matrix figure grouped by family): with run.json ``models``
    declaring families, the report's matrix (figure, table, --figures PNG/CSV) groups the models by
    family and names each one's family; the same run without the declaration keeps the ranking."""
    import csv as _csv
    import re

    from perceptbench.core.rundir import RunDir

    models = ["m0", "m1", "m2", "m3"]  # m3 answers best: first in the ungrouped ranking
    tasks = ("similarity.chart.mark_color", "closure.nat.silhouette")
    plain = write_synthetic_run(tmp_path / "plain", models, tasks=tasks)
    grouped = write_synthetic_run(tmp_path / "grouped", models, tasks=tasks)
    fams = {"m0": "open-vlm", "m1": "supervised", "m3": "open-vlm"}  # m2 declares none
    RunDir(grouped).write_run_json({"seed": 0, "models": {m: {"family": f} for m, f in fams.items()}})
    rows = {}
    for d in (plain, grouped):
        p = cli("report", str(d), "--out", str(tmp_path / f"{d.name}.html"), "--figures", str(tmp_path / f"fig-{d.name}"))
        assert p.returncode == 0, p.stdout + p.stderr
        html = (tmp_path / f"{d.name}.html").read_text()
        table = html[html.index('id="matrix"'):html.index('id="dissociation"')]
        rows[d.name] = re.findall(r"<tr><td>(m\d)</td>(?:<td>([a-z-]+)</td>)?", table)
    assert [m for m, _ in rows["plain"]] == ["m3", "m2", "m1", "m0"] and {f for _, f in rows["plain"]} == {""}
    assert rows["grouped"] == [("m1", "supervised"), ("m3", "open-vlm"), ("m0", "open-vlm"), ("m2", "undeclared")]
    assert "grouped by declared family" in (tmp_path / "grouped.html").read_text()
    assert "grouped by declared family" not in (tmp_path / "plain.html").read_text()
    data = list(_csv.DictReader(open(tmp_path / "fig-grouped" / "model_by_task_headline_matrix.csv")))
    assert {(r["model"], r["role"]) for r in data if r["model"] == "m2"} == {("m2", "model (family: undeclared)")}
    assert (tmp_path / "fig-grouped" / "model_by_task_headline_matrix.png").stat().st_size > 10_000


def test_report_pairs_option_compares_neighbours_and_refuses_an_unknown_mode(tmp_path):
    """report --pairs neighbours: 3 models, 2 neighbour pairs on the page (not 3); a bad mode is one line."""
    run = write_synthetic_run(tmp_path / "run", ["alpha", "beta", "gamma"], tasks=("similarity.chart.mark_color",))
    p = cli("report", str(run), "--out", str(tmp_path / "r.html"), "--pairs", "neighbours")
    assert p.returncode == 0, p.stdout + p.stderr
    assert " of 2 paired differences" in (tmp_path / "r.html").read_text()
    one_line_error(cli("report", str(run), "--out", str(tmp_path / "r2.html"), "--pairs", "every", columns=250),
                   "--pairs", "'every'", "auto, all, neighbours")
    assert not (tmp_path / "r2.html").exists()
