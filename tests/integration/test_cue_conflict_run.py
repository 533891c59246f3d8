"""The opt-in cue-conflict task end to end (issue 23 item 3): the default encoder and a tiny VLM
run ``shape_bias.nat.cue_conflict`` on the synthetic stand-in images (the release's names and
layout, written by tests/fixtures/make_cue_conflict_fixture.py) beside the 10 observers and the
paper's three CNNs; scored with shape bias and error consistency, re-scored from records alone,
and drawn in the report.  The models answer 8 test images (``--stimulus``, two per class of four
classes) to keep the test short; the full 608 ran once by hand (18 min on a loaded 2-core machine)."""

import csv
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="model extra not installed")  # the CI installs it

from perceptbench.tasks import get_task
from perceptbench.testing.tiny_vlm import build_tiny_vlm
from helpers.cli import cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_cue_conflict_fixture import release_names, write_cue_conflict_images  # noqa: E402

TASK = "shape_bias.nat.cue_conflict"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    images = write_cue_conflict_images(tmp_path_factory.mktemp("cue") / "img", release_names())
    vlm = build_tiny_vlm("llava", tmp_path_factory.mktemp("vlm") / "tiny-llava")
    out = tmp_path_factory.mktemp("run") / "cue"
    split = get_task(TASK).split(0)
    picked = []
    for cls in ("airplane", "cat", "knife", "truck"):
        picked += sorted(s for s, sp in split.items() if sp == "test" and s.startswith(f"cue_{cls}"))[:2]
    stim = [a for s in picked for a in ("--stimulus", s)]
    p = cli("run", "--task", f"{TASK}@images={images}", *stim, "--model", "efficientnet-lite0",
            "--model", f"hf:{vlm}", "--out", str(out), "--no-progress")
    assert p.returncode == 0, p.stdout + p.stderr
    return out


def test_every_respondent_gets_shape_bias_and_error_consistency_rows(run):
    with open(run / "scores.csv") as f:
        got = {(r["model"], r["metric"]) for r in csv.DictReader(f)}
    for m in ("efficientnet-lite0", "tiny-llava", "published:alexnet", "published:googlenet", "published:vgg16"):
        for metric in ("neither_share", "shape_bias.airplane", "kappa_pairwise"):
            assert (m, metric) in got, (m, metric)
    for metric in ("shape_bias_mean@all", "shape_bias_min@all", "shape_bias_max@all", "shape_bias_pooled@test"):
        assert ("human:panel", metric) in got


def test_scores_are_recomputed_from_records_alone(run, tmp_path):
    p = cli("score", run / "records.jsonl", "--out", tmp_path / "again.csv", torch="blocked")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "again.csv").read_bytes() == (run / "scores.csv").read_bytes()


def test_the_report_draws_the_per_category_figure(run, tmp_path):
    p = cli("report", run, "--out", tmp_path / "r.html", "--figures", tmp_path / "figs")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "figs" / "shape_bias_by_category.png").is_file()
    assert "Shape bias per category" in (tmp_path / "r.html").read_text()
