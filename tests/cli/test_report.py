"""perceptbench report: headline rows (terminal table and card), paired differences, the
self-contained HTML page checked in headless Chromium with the network disabled,
escaping of record strings, merging run directories, no torch."""

import io
import re
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from perceptbench.reports.headline import headline_rows
from perceptbench.scoring import score_file
from perceptbench.core.rows import ScoreRow
from perceptbench.testing.synthetic_runs import write_synthetic_run

from helpers.browser import chromium_path, load_page

XSS_MODEL = "<img src=x onerror=alert(1)>"
XSS_RAW = "<script>alert(1)</script>"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "perceptbench.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"})


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
        ScoreRow("similarity.chart.series_count", "enc", "replicates", 1.0, None, None, 40, 0),
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
    assert "replicates: yes (k=8 inside the human band 6-12)" in cap.extra and "P(in band)=0.399" in cap.extra
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
    code = ("import sys; from perceptbench.cli import app\n"
            f"sys.argv=['perceptbench','report',{str(hostile_run)!r},'--out',{str(out)!r}]\n"
            "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'torch' not in sys.modules, 'report imported torch'\nprint('NO_TORCH_OK')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "NO_TORCH_OK" in p.stdout, p.stdout + p.stderr
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
    })
    assert res.console_errors == [], res.console_errors
    assert res.dialogs == []
    assert [u for u in res.requests if not u.startswith(("file:", "data:"))] == []
    v = res.values
    assert v["scripts"] == 0 and v["imgs"] == 0 and v["onerror"] == 0
    assert v["text_model"] and v["text_raw"] and v["dollar"]  # rendered as text
    assert v["figures"] >= 7  # matrix, dissociation, a(k), mark colour, 3 SalBench, forest
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
            assert d.n < 120 and d.diff == pytest.approx(want, abs=0.1), (d, want)
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
    assert p.returncode == 2 and "seed" in p.stdout and "Traceback" not in p.stdout + p.stderr
    assert not (tmp_path / "r2.html").exists()
    p = cli("report", str(tmp_path / "nope"))
    assert p.returncode == 2 and "nope" in p.stdout


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
