"""The stumbles of a fresh user's README walk-through (issue 11 follow-up): model x task
compatibility checked before the run directory exists, --out refusals for run and report,
and the report / score texts that misled (each test failed before its fix)."""

import os
import subprocess
import sys

import pytest

TASK = "similarity.chart.mark_color"


def cli(*args, cwd=None, **env):
    return subprocess.run([sys.executable, "-m", "perceptbench.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "COLUMNS": "250", **env})


def one_line_error(p, *needles):
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stdout + p.stderr
    out = " ".join(p.stdout.split())
    assert out.startswith("error:") and all(n in out for n in needles), out


# item 3 ------------------------------------------------------------------------------------

def test_encoder_on_vsi_task_writes_nothing(tmp_path, mirror):
    """Before: a progress bar, then 'is an image encoder', leaving run.json and an empty records.jsonl."""
    pytest.importorskip("torch")
    out = tmp_path / "x3"
    p = cli("run", "--task", "vsi.salbench.syn@n=2", "--out", str(out), "--no-progress")
    one_line_error(p, "vsi.salbench.syn", "efficientnet-lite0 is an image encoder")
    assert not out.exists()


# item 5 ------------------------------------------------------------------------------------

def test_run_out_foreign_nonempty_directory_is_refused(tmp_path):
    """Before: accepted silently, run files written beside the user's notes.txt."""
    d = tmp_path / "notarun"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    p = cli("run", "--out", str(d), "--task", TASK, "--model", "timm:no_such_arch_xyz", "--no-progress")
    one_line_error(p, "--out", "did not write", "notes.txt")
    assert sorted(os.listdir(d)) == ["notes.txt"] and (d / "notes.txt").read_text() == "mine"


def test_run_out_empty_directory_and_run_directory_are_accepted(tmp_path, mirror):
    from perceptbench.cli import _check_out

    empty = tmp_path / "empty"
    empty.mkdir()
    _check_out(empty, "run")  # no exception
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "records.jsonl").write_text("")
    (rundir / "scores.csv").write_text("")
    _check_out(rundir, "run")


# item 4 ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def human_run(tmp_path_factory, mirror):
    from perceptbench.runner import RunConfig, run

    out = tmp_path_factory.mktemp("hr") / "run"
    run(RunConfig(out=out, tasks=[TASK], models=[]), progress=False)
    return out


def test_report_out_directory_names_report_html(tmp_path, human_run):
    """Before: '--out must be the path of the scores CSV file' (the score command's message)."""
    p = cli("report", str(human_run), "--out", str(tmp_path))
    one_line_error(p, "--out", "is a directory", "report's HTML file")
    assert "scores CSV" not in p.stdout


def test_report_refuses_foreign_file_and_non_html_suffix(tmp_path, human_run):
    """Before: notes.txt silently overwritten with HTML; r.pdf got HTML."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    one_line_error(cli("report", str(human_run), "--out", str(notes)), "--out", ".html")
    assert notes.read_text() == "my notes"
    one_line_error(cli("report", str(human_run), "--out", str(tmp_path / "r.pdf")), "--out", ".html")
    assert not (tmp_path / "r.pdf").exists()
    foreign = tmp_path / "page.html"
    foreign.write_text("<html>someone else's page</html>")
    one_line_error(cli("report", str(human_run), "--out", str(foreign)), "not a perceptbench report")
    assert foreign.read_text() == "<html>someone else's page</html>"


def test_report_overwrites_its_own_report(tmp_path, human_run):
    out = tmp_path / "rep.html"
    for _ in range(2):  # the second call overwrites the report written by the first
        p = cli("report", str(human_run), "--out", str(out))
        assert p.returncode == 0, p.stdout + p.stderr
    assert out.read_text().count("perceptbench report") >= 1 and out.with_suffix(".md").exists()


# items 1, 2, 7, 9: report / score honesty ----------------------------------------------------

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


def test_signal_table_says_no_parseable_answers_not_zero_errors():
    """Before: 'idef ... 0 errors < 5' when all 40 answers were null."""
    import numpy as np

    from perceptbench.metrics.error_detection import class_check

    assert class_check(np.zeros(0, bool)).startswith("no parseable answers")
    assert class_check(np.zeros(40, bool)) == "0 errors < 5"  # 40 parsed, all correct: a real count


def test_report_vsi_iqr_integer_counts_model_vs_model_and_markdown(tmp_path, mirror):
    """Before: vsi_median's quartiles in the CI column, n_fallback as 0.000, 'Fewer than two models
    on any task' beside a three-model VSI task, report.md with 'P(in band) &lt; 0.5'."""
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import _md_cell, render_report, row_text
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import synthetic_records

    recs = synthetic_records(["vlm-a"], tasks=(TASK,))
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


# items 8 and 6: scores.csv counts, the README's export query -----------------------------------

def test_scores_csv_writes_counts_as_integers(tmp_path):
    """Before: n_no_human_ref 0.0, n_verbal_conf_missing 23.0, capacity_k 8.0,2.0,8.0."""
    import csv

    from perceptbench.scoring import write_scores
    from perceptbench.core.rows import ScoreRow

    rows = [ScoreRow("t", "m", "capacity_k", 8.0, 2.0, 8.0, 40, 0), ScoreRow("t", "m", "n_verbal_conf_missing", 23.0,
                                                                             None, None, 40, None),
            ScoreRow("t", "m", "accuracy", 0.8625, 0.75, 1.0, 40, 0), ScoreRow("t", "m", "B", 2 / 3, None, None, 3, 0)]
    csv_path, _ = write_scores(rows, tmp_path / "scores.csv")
    got = {r["metric"]: r for r in csv.DictReader(open(csv_path))}
    assert (got["capacity_k"]["value"], got["capacity_k"]["ci_low"], got["capacity_k"]["ci_high"]) == ("8", "2", "8")
    assert got["n_verbal_conf_missing"]["value"] == "23"
    assert got["accuracy"]["value"] == "0.8625" and got["accuracy"]["ci_high"] == "1.0"  # not a count: as before
    assert got["B"]["value"] == "0.666667"


def test_readme_export_query_runs_as_written(tmp_path, mirror):
    """Before: the README's query imported duckdb, which no install command installs."""
    import re
    from pathlib import Path

    import pyarrow.parquet as pq

    from perceptbench.reports.export import export_parquet
    from perceptbench.scoring import score_file
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    readme = (Path(__file__).parents[1] / "README.md").read_text()
    block = re.search(r"perceptbench export runs/default --format parquet\n```\n\n```python\n(.*?)```", readme,
                      re.S).group(1)
    run_dir = tmp_path / "runs" / "default"
    write_synthetic_run(run_dir, ["model-a", "model-b"], tasks=("closure.nat.silhouette",))
    score_file(run_dir / "records.jsonl")
    export_parquet(run_dir)
    for c in ("n", "n_null", "n_draws", "n_dropped", "seed"):
        assert str(pq.read_schema(run_dir / "scores.parquet").field(c).type) == "int64", c
    p = subprocess.run([sys.executable, "-c", block + "\nprint(s.dtypes['n_draws'], s.dtypes['seed'])"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "model-a" in p.stdout and "Int64 Int64" in p.stdout, p.stdout


# items 11, 12, 16 -------------------------------------------------------------------------------

def test_python_score_accepts_a_list_of_runs(human_run):
    """Before: pb.score(["a", "b"]) raised a raw TypeError from pathlib."""
    import perceptbench as pb

    listed = pb.score([human_run, human_run])
    assert listed.equals(pb.score(human_run, human_run)) and len(listed) > 0
    assert len(pb.load_records((human_run,))) == len(pb.load_records(human_run))


def test_help_and_models_listing_keep_bracketed_text():
    """Before: --executor help said pip install "perceptbench" (the [ray] extra eaten as rich
    markup); `perceptbench models` showed timm:NAME for timm:NAME[@WEIGHTS_FILE]."""
    assert 'perceptbench[ray]' in cli("run", "--help").stdout
    assert "timm:NAME[@WEIGHTS_FILE]" in cli("models").stdout


def test_unknown_task_says_did_you_mean(tmp_path):
    p = cli("render", "similarity.chart.mark_colour", "--out", str(tmp_path / "r"))
    one_line_error(p, "did you mean 'similarity.chart.mark_color'")


def test_score_out_message_names_the_written_file(tmp_path, human_run):
    """Before: 'N score rows in scores.csv' after --out /tmp/both.csv."""
    target = tmp_path / "both.csv"
    p = cli("score", str(human_run), "--out", str(target))
    assert p.returncode == 0, p.stdout + p.stderr
    flat = " ".join(p.stdout.split())
    assert f"score rows in {target}" in flat and "rows in scores.csv" not in flat


# item 14 (SIGTERM mid-run): tests/test_cli_paths.py::test_stopping_a_run_says_what_was_written_and_how_to_resume

# item 13 -------------------------------------------------------------------------------------------

@pytest.fixture
def empty_hf_cache(monkeypatch, tmp_path):
    import huggingface_hub.constants as c

    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    return cache


def test_hf_offline_fails_at_once_naming_why(empty_hf_cache, monkeypatch):
    """Before: 5 'Retrying in 8s' lines, 46 s, then a generic error."""
    pytest.importorskip("transformers")
    from perceptbench.models.base import ModelLoadError
    from perceptbench.models.registry import load_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="HF_HUB_OFFLINE is set") as e:
        load_model("hf:openai/clip-vit-base-patch32")
    assert "--model hf:/path/to/model" in str(e.value)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ModelLoadError, match="127.0.0.1:9 is not reachable"):
        load_model("hf:openai/clip-vit-base-patch32")


# item 15 -------------------------------------------------------------------------------------------

def test_readme_builds_every_tiny_model_it_uses_and_names_no_private_path():
    """Before: the report example used hf:PATH/tiny-llava and hf:PATH/tiny-clip without saying how
    to build them; docs/references.md pointed at shared/seeds/, which a user does not have."""
    import importlib
    import re
    from pathlib import Path

    root = Path(__file__).parents[1]
    readme = (root / "README.md").read_text()
    assert "hf:PATH/" not in readme
    for mod, names in re.findall(r"from (perceptbench\.testing\.\w+) import ([\w, ]+?)(?:;|\")", readme):
        m = importlib.import_module(mod)
        for n in names.split(","):
            n = n.strip().split(" as ")[0]
            assert hasattr(m, n), f"README imports {mod}.{n}, which does not exist"
    used = set(re.findall(r"hf:(/tmp/tiny/[\w-]+)", readme))
    built = set(re.findall(r"build_tiny_\w+\('(/tmp/tiny/[\w-]+)'\)", readme))
    for names in re.findall(r"f'/tmp/tiny/\{f\}'\) for f in \(([^)]*)\)", readme):  # the VSI section's loop
        built |= {f"/tmp/tiny/{n.strip().strip(chr(39))}" for n in names.split(",")}
    assert used and used <= built, used - built
    assert "shared/seeds" not in (root / "docs" / "references.md").read_text()
    assert "not the random seed" in readme


def test_show_without_trial_id_lists_model_trials(tmp_path, mirror):
    """Before: `show DIR TRIAL_ID` gave no way to find a trial id."""
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    d = write_synthetic_run(tmp_path / "run", ["model-a"], tasks=(TASK,))
    p = cli("show", str(d))
    assert p.returncode == 0, p.stdout + p.stderr
    ids = [ln for ln in p.stdout.splitlines() if ln.startswith(TASK + "|")]
    assert ids and all("|model-a|" in t for t in ids) and f"{len(ids)} model trials" in p.stdout
    assert cli("show", str(d), ids[0]).returncode == 0


def test_report_explains_position_missing_chance_and_kernel_range(tmp_path, mirror):
    """Before: floor->ceiling position 0.39 next to v/ceil 0.64, SalBench chance '-' and
    'kernels 0.700-0.874' with no explanation."""
    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.headline import headline_rows
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    d = write_synthetic_run(tmp_path / "run", ["model-a"], tasks=(TASK,))
    recs = read_records(d / "records.jsonl")
    rows = score_records(recs)
    html, _, _ = render_report(ReportData([d], recs, rows, "t"), "t")
    assert "position = (value &minus; floor) / (ceiling &minus; floor)" in html
    assert "SalBench exact match" in html and "the other human colour kernels" in html
    b = next(h for h in headline_rows(rows) if h.metric == "B")
    assert "their mean is the ceiling" in b.extra


def test_ak_figure_flags_small_n_per_k():
    """Before: a(k) resting on 2-3 trials per k (CIs [0, 1] or [0, 0]) carried no small-n flag."""
    from perceptbench.reports.figures import ak_curves
    from perceptbench.core.rows import ScoreRow

    tid = "similarity.chart.series_count@n_test=40"
    rows = [ScoreRow(tid, "m", f"a_k[{k}]", 0.5, 0.0, 1.0, 3, 0) for k in range(2, 17)]
    rows += [ScoreRow(tid, "m", "capacity_k", 8.0, 2.0, 8.0, 40, 0)]
    assert "small n: 3-3 trials per k (&lt; 30)" in ak_curves(rows)
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

    boxes = [Text.get_window_extent(t, r) for t in fig.axes[0].texts]  # the label text, not its leader line
    assert len(boxes) == 4
    ys = sorted((b.y0, b.y1) for b in boxes)
    for (lo0, hi0), (lo1, hi1) in zip(ys, ys[1:]):
        assert lo1 - hi0 >= 2, ys  # at least 2 px of white between neighbouring labels


def test_report_sections_are_numbered_without_gaps(tmp_path, mirror):
    """Before: without VSI records the page went from 5. SalBench to 7. cards."""
    import re

    from perceptbench.records import read_records
    from perceptbench.reports.data import ReportData
    from perceptbench.reports.html import render_report
    from perceptbench.scoring import score_records
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    d = write_synthetic_run(tmp_path / "run", ["model-a"], tasks=(TASK,))
    recs = read_records(d / "records.jsonl")
    html, _, _ = render_report(ReportData([d], recs, score_records(recs), "t"), "t")
    nums = [int(n) for n in re.findall(r'<h2 id="[a-z]+">(\d+)\.', html)]
    assert nums == list(range(1, len(nums) + 1)) and 'id="vsi"' not in html
    assert re.search(r'<h2 id="cards">6\.', html) and "section 6" in html


def test_python_run_refuses_a_foreign_directory(tmp_path):
    import perceptbench as pb

    d = tmp_path / "notarun"
    d.mkdir()
    (d / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="did not write"):
        pb.run(d, tasks=[TASK], models=[])
    assert sorted(os.listdir(d)) == ["notes.txt"]


def test_series_chance_label_explains_the_answer_range():
    """Before: 'chance 1/20 (answers 1-20)' beside a(k) over k = 2-16, unexplained."""
    from perceptbench.reports.headline import headline_rows
    from perceptbench.core.rows import ScoreRow

    tid = "similarity.chart.series_count"
    h = next(x for x in headline_rows([ScoreRow(tid, "m", "accuracy", 0.3, 0.2, 0.4, 40, 0)]) if x.metric == "accuracy")
    assert h.floor == 1 / 20 and "rendered 2-16" in h.floor_label and "1/15" in h.floor_label


# second walk-through (issue "stumbles") ------------------------------------------------------

@pytest.mark.parametrize("junk", [[".DS_Store"], ["Thumbs.db", "desktop.ini"], [".directory"], ["THUMBS.DB"]])
def test_run_out_holding_only_os_junk_counts_as_empty(tmp_path, junk):
    """Before: '--out ... is a directory that perceptbench did not write (it holds '.DS_Store')'."""
    from perceptbench.cli import _check_out
    from perceptbench.runs import foreign_out_dir

    d = tmp_path / "fresh"
    d.mkdir()
    for name in junk:
        (d / name).write_bytes(b"\0junk")
    assert foreign_out_dir(d) is None
    _check_out(d, "run")  # no exception
    (d / "notes.txt").write_text("mine")  # a real file beside the junk is still refused, and named
    why = foreign_out_dir(d)
    assert why is not None and "'notes.txt'" in why and "more" not in why


class PixelStatsEncoder:
    """An image encoder without torch: per-channel mean and std of the pixels (6 features);
    counts the images it embeds."""
    name = "pixstats"
    model_version = "pixstats:v1"
    family = "encoder"

    def __init__(self):
        self.n_embedded = 0

    def embed(self, images, batch_size=8):
        import numpy as np

        self.n_embedded += len(images)
        a = [np.asarray(im.convert("RGB"), np.float32) / 255.0 for im in images]
        return np.stack([np.concatenate([x.mean((0, 1)), x.std((0, 1))]) for x in a])


SAL = "n=6,n_probe=6"


@pytest.fixture(scope="module")
def encoder_salbench_run(tmp_path_factory, mirror):
    from perceptbench.runner import RunConfig, run

    out = tmp_path_factory.mktemp("salenc") / "run"
    enc = PixelStatsEncoder()
    tasks = [f"salbench.detection.syn@{SAL}", f"salbench.detection.syn@{SAL},shots=3",
             f"salbench.referring.syn@{SAL}", f"salbench.visual_referring.syn@{SAL}",
             f"salbench.visual_referring.syn@{SAL},shots=3"]
    run(RunConfig(out=out, tasks=tasks, models=["pixstats=hf:unused"]), progress=False, load_model=lambda a: enc)
    return out, enc


def test_salbench_settings_that_do_not_reach_an_encoder_are_skipped(encoder_salbench_run):
    """Before: detection shots=3 and referring on an encoder probe were scored, with the very
    number of detection at shots=0 (the probe reads no prompt), and nothing said so."""
    from perceptbench.records import read_records
    from perceptbench.reports.headline import headline_rows
    from perceptbench.scoring import score_file

    out, enc = encoder_salbench_run
    # embedded: probe + test of detection and of visual referring at shots=0 only (2 x (6 + 6))
    assert enc.n_embedded == 24
    recs = [r for r in read_records(out / "records.jsonl") if r.model == "pixstats"]
    assert len(recs) == 30
    by_task = {}
    for r in recs:
        by_task.setdefault(r.task_id, []).append(r)
    for tid, rs in by_task.items():
        skipped = {r.run_meta.model_extra.get("skipped") for r in rs}
        if "shots=3" in tid or ".referring." in tid:
            assert all(r.response is None and r.raw_output is None for r in rs)
            (why,) = skipped
            assert ("shots=3 does not apply to an encoder" in why) if "shots=3" in tid else \
                ("referring prompt's box never reaches an encoder" in why)
        else:
            assert skipped == {None} and all(r.response is not None for r in rs)
    rows = {(r.task_id, r.metric): r for r in score_file(out / "records.jsonl") if r.model == "pixstats"}
    for tid in by_task:
        applies = "shots=3" not in tid and ".referring." not in tid
        assert ((tid, "exact_match") in rows) == applies and ((tid, "skipped") in rows) != applies
    heads = {h.task_id: h for h in headline_rows(score_file(out / "records.jsonl")) if h.model == "pixstats"
             and h.metric in ("exact_match", "skipped")}
    assert heads[f"salbench.referring.syn@{SAL}"].flags[0].startswith("skipped: the referring prompt's box")
    assert heads[f"salbench.detection.syn@{SAL},shots=3"].flags[0].startswith("skipped: shots=3 does not apply")


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


def test_loading_a_hf_model_prints_no_progress_bar_or_info_log(tmp_path, capfd):
    """Before: transformers' 'Loading weights: 100%|...' bar leaked into `perceptbench run`'s output."""
    pytest.importorskip("torch")
    import transformers.utils.logging as tl

    from perceptbench.models.registry import load_model
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "tiny-clip")
    capfd.readouterr()
    before = (tl.get_verbosity(), tl.is_progress_bar_enabled())
    tl.set_verbosity_info()
    try:
        load_model(f"hf:{d}")
        out, err = capfd.readouterr()
        assert "Loading weights" not in out + err and "loading weights file" not in (out + err).lower()
        assert tl.get_verbosity() == 20 and tl.is_progress_bar_enabled()  # restored afterwards
    finally:
        tl.set_verbosity(before[0])


def test_progress_says_what_the_model_does_before_its_first_trial(tmp_path, mirror):
    """Before: the bar stood at 0/N (for ~17 s with the default encoder) while the model loaded
    and computed its probe features, with nothing on screen saying so."""
    import io

    from rich.console import Console

    from perceptbench.runner import RunConfig, run

    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    enc = PixelStatsEncoder()
    run(RunConfig(out=tmp_path / "run", tasks=[f"salbench.detection.syn@{SAL}"], models=["pixstats=hf:unused"]),
        progress=True, console=console, load_model=lambda a: enc)
    text = buf.getvalue()
    assert "loading model pixstats=hf:unused ..." in text
    assert f"salbench.detection.syn@{SAL} | pixstats: computing probe features (6 probe-train stimuli) ..." in text
    assert "6/6" in text


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize("group", [(), ("sources",)])
def test_top_level_help_lists_each_command_on_one_line(columns, group):
    """Before: at 80 columns `report` and `show` broke mid-sentence ('... a Markdown summary from' /
    'trial records ...'): their docstrings' hard line breaks were kept in the command list."""
    p = cli(*group, "--help", COLUMNS=columns)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if "Commands" in ln)
    panel = [ln for ln in lines[start + 1:] if ln.startswith("│")]
    assert len(panel) >= 3
    for ln in panel:  # every row starts with a command name: no continuation line
        assert ln[2:3].isalpha(), f"continuation line in the command list at {columns} columns: {ln!r}"
        assert max(len(x) for x in lines) <= int(columns)


def test_report_shows_skipped_encoder_settings_as_skipped_not_not_run(encoder_salbench_run, tmp_path):
    """The matrix said 'not run' for the skipped variants (the lookup wanted an exact_match row)."""
    import re

    from perceptbench.reports.data import load_report_data
    from perceptbench.reports.html import render_report

    out, _ = encoder_salbench_run
    html, md, _ = render_report(load_report_data([out]), "t")
    matrix = html[html.index('id="matrix"'):html.index('id="dissociation"')]
    row = re.search(r"<tr><td>pixstats</td>(.*?)</tr>", matrix[matrix.index("<table"):]).group(1)
    assert "not run" not in row and row.count("skipped") >= 3
    assert "shots=3 does not apply to an encoder" in row  # the reason, on the cell's warning sign
    assert "| pixstats | skipped |" in md


def test_readme_names_one_mirror_path_and_says_the_tests_default_it():
    """Before: the README mixed PERCEPTBENCH_MIRROR=/path/to/mirror and =../shared/data, and its test
    command did not say whether the variable was needed."""
    import re
    from pathlib import Path

    import conftest

    root = Path(__file__).parents[1]
    readme = (root / "README.md").read_text()
    assert set(re.findall(r"PERCEPTBENCH_MIRROR=(\S+)", readme)) == {"../shared/data"}
    assert conftest.DEFAULT_MIRROR == root.parent / "shared" / "data"  # what the README says the tests default to
    assert "tests default `PERCEPTBENCH_MIRROR` to `../shared/data` (`tests/conftest.py`)" in " ".join(readme.split())


def test_encoder_records_of_an_older_run_on_shots_are_scored_as_skipped(encoder_salbench_run):
    """A run written before this fix holds encoder answers for shots=3 / referring: scoring gives
    them the skipped row too, not the repeated detection number."""
    from perceptbench.records import TrialRecord, make_trial_id, read_records
    from perceptbench.scoring import score_records

    out, _ = encoder_salbench_run
    det = [r for r in read_records(out / "records.jsonl") if r.task_id == f"salbench.detection.syn@{SAL}"]
    old = []
    for tid in (f"salbench.detection.syn@{SAL},shots=3", f"salbench.referring.syn@{SAL}"):
        for r in det:
            d = r.model_dump()
            d.update(task_id=tid, trial_id=make_trial_id(tid, r.stimulus_id, r.model, r.rep))
            old.append(TrialRecord.model_validate(d))
    rows = {(r.task_id, r.metric): r for r in score_records(old)}
    assert "shots=3 does not apply" in rows[(f"salbench.detection.syn@{SAL},shots=3", "skipped")].note
    assert "never reaches an encoder" in rows[(f"salbench.referring.syn@{SAL}", "skipped")].note
    assert not any(metric == "exact_match" for _, metric in rows)
