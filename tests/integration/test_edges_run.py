"""The opt-in edge task end to end (issue 23 item 2): the default encoder and a tiny VLM run
``closure.nat.edges`` beside its 10 observers and the paper's five published CNNs, which are read
from the release, never run; scored, re-scored from records alone, resumed, and drawn."""

import csv

import pytest

pytest.importorskip("torch", reason="model extra not installed")  # the CI installs it

from perceptbench.records import read_records
from perceptbench.testing.tiny_vlm import build_tiny_vlm
from helpers.cli import cli

TASK = "closure.nat.edges"
PUBLISHED = {"published:alexnet", "published:googlenet", "published:vgg16", "published:resnet50",
             "published:resnet50-sin"}


@pytest.fixture(scope="module")
def edges_run(tmp_path_factory):
    vlm = build_tiny_vlm("llava", tmp_path_factory.mktemp("vlm") / "tiny-llava")
    out = tmp_path_factory.mktemp("run") / "edges"
    args = ("run", "--task", TASK, "--model", "efficientnet-lite0", "--model", f"hf:{vlm}", "--out", str(out),
            "--no-progress")
    p = cli(*args)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, p.stdout, args


def test_edges_run_writes_model_human_and_published_records(edges_run):
    out, stdout, _ = edges_run
    assert "(160 model trials, 1600 human, 400 published model trials)" in stdout
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    assert {r.task_id for r in recs} == {TASK}
    by_model = {}
    for r in recs:
        by_model.setdefault(r.model, []).append(r)
    assert len(by_model["efficientnet-lite0"]) == len(by_model["tiny-llava"]) == 80
    assert {r.model_family for r in by_model["tiny-llava"]} == {"vlm"}
    assert sum(r.model_family == "human" for r in recs) == 1600
    assert {m for m in by_model if m.startswith("published:")} == PUBLISHED
    assert all(len(by_model[m]) == 80 and {r.model_family for r in by_model[m]} == {"published"} for m in PUBLISHED)
    # the published CNNs answered the same test images as the models
    assert {r.stimulus_id for r in by_model["published:alexnet"]} == {r.stimulus_id for r in by_model["tiny-llava"]}
    assert cli("validate", out).returncode == 0


def test_edges_scores_every_respondent_like_the_silhouettes(edges_run):
    out, stdout, _ = edges_run
    with open(out / "scores.csv") as f:
        rows = list(csv.DictReader(f))
    got = {(r["model"], r["metric"]) for r in rows}
    for m in ["efficientnet-lite0", "tiny-llava", *PUBLISHED]:
        for metric in ("accuracy", "B", "kappa_aggregate", "kappa_pairwise", "kappa_over_ceiling", "B_over_ceiling"):
            assert (m, metric) in got, (m, metric)
    for metric in ("ceiling_kappa_pairwise_mean", "ceiling_kappa_loo_mean", "observer_accuracy_mean"):
        assert ("human:panel", f"{metric}@test") in got and ("human:panel", f"{metric}@all") in got
    assert {m for m, met in got if m.startswith("human:subject-") and met == "kappa_loo@all"} == {
        f"human:subject-{i:02d}" for i in range(1, 11)}
    assert "closure.nat.edges: value [95% bootstrap CI]" in stdout and "published:resnet50-sin" in stdout
    again = cli("score", out, "--out", out / "rescored.csv")
    assert again.returncode == 0, again.stderr
    assert (out / "rescored.csv").read_text() == (out / "scores.csv").read_text()


def test_edges_resume_writes_nothing_twice(edges_run):
    out, _, args = edges_run
    n = len((out / "records.jsonl").read_text().splitlines())
    p = cli(*args)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "wrote 0 records" in p.stdout
    assert len((out / "records.jsonl").read_text().splitlines()) == n


def test_edges_report_draws_its_accuracy_vs_kappa_figure(edges_run):
    out, _, _ = edges_run
    p = cli("report", out, "--out", out / "report.html")
    assert p.returncode == 0, p.stdout + p.stderr
    html = (out / "report.html").read_text()
    # the title is two lines (one SVG text each): the figure is one page column wide
    assert "accuracy on line drawings" in html and "Accuracy vs error consistency" in html
    assert "(closure.nat.edges, test split)" in html
    assert "No closure.nat.silhouette records" not in html
