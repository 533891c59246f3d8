"""`perceptbench run` / `score` on a multi-model VSI run: every analysis row and the signal table.

The three models are deterministic numpy stand-ins with the local-VLM interface the VSI runner
uses (greedy answer + first-token distribution, prefill distributions, text generation) and a
vision-tower hook, so the real runner, records, feature cache, scoring and CLI all run; no torch
model is needed except the embedded witness encoder (efficientnet-lite0).
"""

from __future__ import annotations

import csv
import hashlib
import json

import numpy as np
import pytest

from perceptbench.models.base import TokenDistribution

from helpers.cli import cli

TOKENS = ("A", "B", "C", "D", "x", "y")


class NumpyVLM:
    """Answers from image statistics: the logits of A/B/C follow the channel standard deviations
    (blur changes them), scaled by ``gain``; on samples whose image hash falls in the
    ``ignore`` bucket the image is ignored (constant logits)."""

    family = "vlm"
    supports_multi_image = False

    def __init__(self, name: str, gain: float, ignore_mod: int):
        self.name, self.gain, self.ignore_mod = name, gain, ignore_mod
        self.model_version = f"numpy:{name}"
        self.generation_settings = {"decoding": "greedy", "gain": gain}

    def _logits(self, img, prompt: str) -> np.ndarray:
        a = np.asarray(img.convert("RGB"), float) / 255.0
        h = int(hashlib.sha256(prompt.encode()).hexdigest()[:6], 16)
        base = np.array([0.3, 0.2, 0.1, -2.0, -3.0, -3.0]) + 0.5 * np.sin(h + np.arange(6))
        if h % self.ignore_mod == 0:
            return base
        return base + self.gain * np.r_[a.std((0, 1)) - a.std(), 0, 0, 0]

    def _dist(self, req, top_k) -> TokenDistribution:
        lg = self._logits(req.images[0], req.prompt)
        lp = lg - np.log(np.exp(lg).sum())
        order = np.argsort(-lp, kind="stable")[:top_k]
        return TokenDistribution(tuple(TOKENS[i] for i in order), lp[order], True, tuple(int(i) for i in order))

    def generate_with_distribution(self, requests, top_k=50, batch_size=8, answer_prefix=""):
        out = []
        for r in requests:
            d = self._dist(r, top_k)
            out.append((d.tokens[0], d))
        return out

    def next_token_distributions(self, requests, top_k=50, batch_size=8, answer_prefix=""):
        return [self._dist(r, top_k) for r in requests]

    def next_token_distribution(self, image, prompt, top_k=None):
        from perceptbench.models.base import VLMRequest

        return self._dist(VLMRequest((image,), prompt), top_k or 6)

    def generate(self, requests, batch_size=8):
        return [str(60 + 10 * (i % 4)) for i, _ in enumerate(requests)]

    def generate_follow_up(self, requests, answers, follow_up, max_new_tokens=8, batch_size=8, answer_prefix=""):
        return [str(60 + 10 * (i % 4)) for i, _ in enumerate(requests)]  # verbalised confidence

    def vision_features(self, images):
        f = []
        for im in images:
            a = np.asarray(im.convert("RGB").resize((8, 8)), float).ravel() / 255.0
            v = np.r_[a, np.abs(np.diff(a)).mean()]
            f.append(v / np.linalg.norm(v))
        return np.array(f, np.float32)


MODELS = {"m1": NumpyVLM("m1", 30.0, 3), "m2": NumpyVLM("m2", 25.0, 4), "m3": NumpyVLM("m3", 40.0, 5)}


@pytest.fixture(scope="module")
def vsi_run(tmp_path_factory):
    pytest.importorskip("torch")  # the witness encoder
    import os

    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import score_file

    root = tmp_path_factory.mktemp("vsi_cli")
    os.environ["PERCEPTBENCH_RESPONSE_CACHE"] = str(root / "cache")
    cfg = RunConfig(out=root / "run", tasks=("vsi.salbench.syn@n=30",), models=tuple(f"{m}=hf:/numpy/{m}" for m in MODELS), seed=0, batch_size=16)
    run(cfg, progress=False, load_model=lambda arg: MODELS[arg.split("=")[0]])
    score_file(root / "run" / "records.jsonl")
    return root / "run"


def test_run_writes_every_analysis_row_and_features(vsi_run):
    rows = list(csv.DictReader(open(vsi_run / "scores.csv")))
    metrics = {(r["model"], r["metric"]) for r in rows}
    for m in MODELS:
        for stem in ("auroc_vsi", "auroc_max_prob", "auroc_verbal_conf", "prr80_vsi", "ece_norm_vsi", "brier_max_prob",
                     "error_rate_ratio", "cw_enrichment", "quadrant_wrong_high_low_vsi",
                     "pearson_neg_vsi_neg_verbal", "probe_acc_all", "witness_probe_acc_all"):
            assert (m, f"{stem}[region,sigma=20]") in metrics, (m, stem)
        assert (m, "signal_margin[sigma=20]") in metrics and (m, "rho_region_whole[sigma=20]") in metrics
    assert ("m1~m2", "vsi_rho[region,sigma=20]") in metrics
    assert ("all-pairs", "vsi_rho_grand_mean[whole,sigma=20]") in metrics
    assert sorted(p.name for p in (vsi_run / "features").glob("*.npz")) == [
        "m1_vsi.salbench.syn_n_30.npz", "m2_vsi.salbench.syn_n_30.npz", "m3_vsi.salbench.syn_n_30.npz",
        "witness_efficientnet-lite0_vsi.salbench.syn_n_30.npz"]


def test_score_cli_prints_signal_table_and_reproduces_without_torch(vsi_run, tmp_path):
    before = (vsi_run / "scores.csv").read_text()
    out = cli("score", str(vsi_run / "records.jsonl"), torch="unimported")  # 97 if score imported torch
    assert out.returncode == 0, out.stderr[-3000:]
    assert "which error signal wins" in out.stdout
    for m in MODELS:
        assert m in out.stdout
    assert (vsi_run / "scores.csv").read_text() == before  # identical numbers, probe rows included


def test_records_file_scored_alone_gives_undefined_probe_rows_naming_the_feature_files(vsi_run, tmp_path):
    """Issue 20 item 8: scoring a copy of records.jsonl without features/ dropped the probe rows
    (probe accuracy, gap, witness) without a word; they are now undefined, each naming its file."""
    import shutil

    full = {(r["model"], r["metric"]): r for r in json.loads((vsi_run / "scores.json").read_text())}
    alone = tmp_path / "copy"
    alone.mkdir()
    shutil.copy(vsi_run / "records.jsonl", alone / "records.jsonl")
    p = cli("score", alone / "records.jsonl", torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {(r["model"], r["metric"]): r for r in json.loads((alone / "scores.json").read_text())}
    assert set(rows) == set(full)  # no row dropped
    import re

    probe_metric = re.compile(r"(witness_)?(probe_acc_all|(probe_acc|argmax_change|gap)_(low|high|shared_low)_vsi)\[")
    probe = [k for k in full if probe_metric.match(k[1])]
    assert len(probe) >= 2 * 10 * len(MODELS)  # own tower and witness, 10 rows each, per model and cell
    for k in probe:
        r = rows[k]
        assert r["value"] is None and "features/ beside records.jsonl" in r["note"], r
        witness = k[1].startswith("witness_")
        need = "witness_efficientnet-lite0_vsi.salbench.syn_n_30.npz" if witness else f"{k[0]}_vsi.salbench.syn_n_30.npz"
        assert str(alone / "features" / need) in r["note"], r["note"]
    others = [k for k in full if k not in probe]
    assert all(rows[k]["value"] == full[k]["value"] for k in others)  # every other row as in the run directory


def test_merged_runs_keep_their_probe_features_and_score_as_the_whole_run(vsi_run, tmp_path):
    """Before: ``merge`` wrote records.jsonl and run.json only, so a merged VSI run lost features/
    and every probe row (probe accuracy, gap, witness) became undefined without a word.  Now each
    run's feature files go along (a (model, task) from the first run that has it), and a file that
    differs between the runs is named in a warning on stderr."""
    import shutil

    lines = (vsi_run / "records.jsonl").read_text().splitlines(keepends=True)
    parts = {"a": [ln for ln in lines if json.loads(ln)["model"] == "m1"],
             "b": [ln for ln in lines if json.loads(ln)["model"] != "m1"]}
    assert parts["a"] and parts["b"] and len(parts["a"]) + len(parts["b"]) == len(lines)
    for name, keep in (("a", ("m1_", "witness_")), ("b", ("m2_", "m3_", "witness_"))):
        (tmp_path / name / "features").mkdir(parents=True)
        (tmp_path / name / "records.jsonl").write_text("".join(parts[name]))
        for f in (vsi_run / "features").iterdir():
            if f.name.startswith(keep):
                shutil.copy(f, tmp_path / name / "features" / f.name)
    p = cli("merge", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "m", columns=300)
    assert p.returncode == 0 and "8 probe feature files" in " ".join(p.stdout.split()) and not p.stderr, \
        p.stdout + p.stderr
    assert sorted(f.name for f in (tmp_path / "m" / "features").iterdir()) == sorted(
        f.name for f in (vsi_run / "features").iterdir())
    assert cli("score", tmp_path / "m", torch="unimported").returncode == 0
    full = {(r["model"], r["metric"]): r["value"] for r in json.loads((vsi_run / "scores.json").read_text())}
    merged = {(r["model"], r["metric"]): r["value"] for r in json.loads((tmp_path / "m" / "scores.json").read_text())}
    assert merged == full  # the probe rows included
    assert full[("m2", "probe_acc_all[region,sigma=20]")] is not None
    # a witness file that differs between the runs: the first run's is kept, and the warning names it
    witness = next((tmp_path / "b" / "features").glob("witness_*.json"))
    witness.write_text(witness.read_text().replace('"n"', '"n" ', 1))
    p = cli("merge", tmp_path / "a", tmp_path / "b", "--out", tmp_path / "m2", columns=300)
    said = " ".join(p.stderr.split())
    assert p.returncode == 0 and said.startswith("warning: 1 probe feature file(s) differ") and \
        f"features/{witness.name}" in said, p.stdout + p.stderr
    assert (tmp_path / "m2" / "features" / witness.name).read_bytes() == \
        (tmp_path / "a" / "features" / witness.name).read_bytes()


def test_score_pairs_option_compares_ranking_neighbours_and_refuses_an_unknown_mode(tmp_path):
    """score --pairs neighbours: of 3 VSI models, the 2 neighbours in the ranking by median VSI get
    per-pair rows (not all 3 pairs), each saying so; the mean rho stays over the 3 pairs (from the
    rank-correlation matrix); the python API takes pairs= too; a bad mode is one line."""
    import csv as _csv

    from perceptbench import python_api
    from perceptbench.tasks import get_task

    from helpers.cli import one_line_error
    from helpers.records import plant_records, plant_vsi_record

    task = get_task("vsi.salbench.syn@n=4,perturbation=whole")
    rng = np.random.default_rng(0)
    recs = []
    for model, shift in (("m1", 0.2), ("m2", 1.0), ("m3", 3.0)):  # median VSI grows with the shift
        for i in range(12):
            p = np.sort(rng.dirichlet(np.ones(4)))[::-1]
            q = np.roll(p, 1) * (1 - shift / 10) + shift / 40
            recs += [plant_vsi_record(task, "clean", f"s{i:02d}", [1, 2, 3, 4], np.log(p).tolist(), model=model),
                     plant_vsi_record(task, "whole_blur", f"s{i:02d}", [1, 2, 3, 4], np.log(q / q.sum()).tolist(),
                                      model=model, image_sha256="y")]
    path = plant_records(tmp_path / "run", recs)
    p = cli("score", str(path), "--pairs", "neighbours", "--out", str(tmp_path / "n.csv"))
    assert p.returncode == 0, p.stdout + p.stderr
    nb = {(r["model"], r["metric"]): r for r in _csv.DictReader(open(tmp_path / "n.csv"))}
    every = python_api.score(path, pairs="auto")  # 3 models: every pair
    rho = every[every.metric == "vsi_rho[whole,sigma=20]"]
    assert sorted(rho.model) == ["m1~m2", "m1~m3", "m2~m3"]
    assert sorted(m for m, metric in nb if metric == "vsi_rho[whole,sigma=20]") == ["m1~m2", "m2~m3"]
    assert sorted(m for m, metric in nb if metric.startswith("joint_error_grid")) == ["m1~m2", "m2~m3"]
    notes = {(r["model"], r["metric"]): r["note"] for r in json.loads((tmp_path / "n.json").read_text())}
    assert "only the 2 neighbours in the ranking by median VSI" in notes[("m1~m2", "vsi_rho[whole,sigma=20]")]
    mean = every[every.metric == "vsi_rho_mean[whole,sigma=20]"].iloc[0]
    got = nb[("all-pairs", "vsi_rho_mean[whole,sigma=20]")]
    assert int(got["n"]) == mean.n == 3 and float(got["value"]) == pytest.approx(mean.value, abs=1e-6)
    assert "rank-correlation matrix" in notes[("all-pairs", "vsi_rho_mean[whole,sigma=20]")]
    one_line_error(cli("score", str(path), "--pairs", "every", "--out", str(tmp_path / "e.csv"), columns=250),
                   "--pairs", "'every'", "auto, all, neighbours")
    assert not (tmp_path / "e.csv").exists()
