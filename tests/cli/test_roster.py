"""`run --roster`, `models --roster`, declared metadata in run.json / models.csv, and the VSI
family means reading the declared families (issue 22 items 1-2)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from perceptbench.core.rundir import RunDir
from perceptbench.records import read_records
from perceptbench.tasks import get_task

from helpers.cli import cli, one_line_error
from helpers.records import plant_records, plant_vsi_record

OFFLINE = {"HF_HUB_OFFLINE": "1"}


@pytest.fixture
def empty_hf_home(tmp_path):
    home = tmp_path / "hf"
    home.mkdir()
    return {"HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), **OFFLINE}


def test_offline_roster_run_fails_at_once_naming_every_download_and_writes_nothing(tmp_path, empty_hf_home):
    out = tmp_path / "run"
    p = cli("run", "--roster", "seed002", "--task", "vsi.salbench.syn@n=4", "--out", out, "--no-progress",
            env=empty_hf_home, columns=2000, torch="unimported")  # refused before any model back-end is imported
    one_line_error(p, "roster seed002", "5 of 5 models cannot load here", "HF_HUB_OFFLINE is set",
                   "nothing was written", "huggingface-cli download Qwen/Qwen2.5-VL-7B-Instruct",
                   "huggingface-cli download llava-hf/llava-1.5-7b-hf")
    assert not out.exists() and not (out / "records.jsonl").exists()


def test_bad_roster_file_is_one_line_naming_file_and_field(tmp_path):
    bad = tmp_path / "mine.toml"
    bad.write_text('[roster]\nname = "mine"\nsource = "me"\n[[model]]\nname = "a"\nspec = "hf:Org/A"\nfamily = "vlm"\n')
    out = tmp_path / "run"
    p = cli("run", "--roster", bad, "--out", out, "--no-progress", columns=2000, torch="unimported")
    one_line_error(p, f"{bad}: model[0] (a).family", "'vlm' is not a family")
    assert not out.exists()
    p = cli("models", "--roster", "nope", columns=2000, torch="unimported")
    one_line_error(p, "--roster 'nope': no packaged roster of that name", "seed002")


def test_models_lists_rosters_and_a_rosters_metadata_without_torch():
    p = cli("models", columns=300, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    for name in ("seed000", "seed001", "seed001-backbones", "seed002"):
        assert name in p.stdout
    assert "SHORT[KEY=VALUE,...]=SPEC" in p.stdout and "closed-vlm" in p.stdout
    p = cli("models", "--roster", "seed002", columns=400, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = {ln.split("│")[1].strip(): ln for ln in p.stdout.splitlines() if ln.count("│") > 5}
    row = lines["qwen2.5-vl-7b"]
    for cell in ("Qwen2.5-VL-7B", "hf:Qwen/Qwen2.5-VL-7B-Instruct", "unpinned", "inferred", "open-vlm", "7B",
                 "Qwen2.5-VL ViT", "open", "qwen-vl"):
        assert cell in row, (cell, row)
    assert "llava" in lines["llava-1.5-7b"] and "CLIP ViT-L/14-336" in lines["llava-1.5-7b"]
    assert "the source reports 6" in p.stdout and "sixth is not named" in " ".join(p.stdout.split())


class _Echo:
    """A VLM stand-in answering 'bear' to everything."""

    family = "vlm"
    supports_multi_image = True
    model_version = "echo@1"
    generation_settings = {"decoding": "greedy", "max_new_tokens": 40}

    def __init__(self, name):
        self.name = name

    def generate(self, requests, batch_size=8):
        return ["bear" for _ in requests]


@pytest.fixture
def echo_loader(monkeypatch, tmp_path):
    import perceptbench.models.registry as registry

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "load_model", lambda arg, runtime=None: _Echo(registry.parse_model_arg(arg)[0]))


def test_inline_metadata_goes_to_run_json_and_models_csv(tmp_path, mirror, echo_loader):
    out = tmp_path / "run"
    arg = "echo[family=open-vlm,params=7B,architecture=llava,vision_tower=CLIP ViT-L/14-336]=hf:/nonexistent"
    p = cli("run", "--out", out, "--task", "closure.nat.silhouette", "--stimulus", "silh_airplane1",
            "--model", arg, "--model", "plain=hf:/nonexistent2", "--no-progress", in_process=True)
    assert p.returncode == 0, p.stdout
    models = json.loads((out / "run.json").read_text())["models"]
    assert models == {"echo": {"spec": "hf:/nonexistent", "revision": "unpinned", "roster": None, "seed_name": None,
                               "family": "open-vlm", "objective": None, "params": 7_000_000_000,
                               "vision_tower": "CLIP ViT-L/14-336", "access": None, "architecture": "llava"}}
    rows = list(csv.DictReader(open(RunDir(out).models_csv)))
    assert [(r["model"], r["family"], r["params"], r["architecture"]) for r in rows] == [
        ("echo", "open-vlm", "7000000000", "llava")]


def test_a_run_without_declared_metadata_writes_neither(tmp_path, mirror, echo_loader):
    out = tmp_path / "run"
    p = cli("run", "--out", out, "--task", "closure.nat.silhouette", "--stimulus", "silh_airplane1",
            "--model", "echo=hf:/nonexistent", "--no-progress", in_process=True)
    assert p.returncode == 0, p.stdout
    assert "models" not in json.loads((out / "run.json").read_text()) and not RunDir(out).models_csv.exists()


def _vsi_run(out, declared):
    """Three models' VSI records on 10 samples (VSI rising with the sample, a little jitter per model),
    with ``declared`` as run.json's ``models``."""
    task = get_task("vsi.salbench.syn@n=10")
    clean = [math.log(p) for p in (0.6, 0.3, 0.1)]
    recs = []
    rng = np.random.default_rng(0)
    for m in ("a", "b", "c"):
        for i in range(10):
            p = min(0.55, 0.05 + 0.05 * i + 0.02 * rng.random())
            blur = [math.log(x) for x in (0.6 - p, 0.3 + p * 0.8, 0.1 + p * 0.2)]
            recs.append(plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], clean, model=m))
            recs.append(plant_vsi_record(task, "region_blur", f"s{i}", [1, 2, 3], blur, model=m))
    plant_records(out, recs)
    rd = RunDir(out)
    rd.start(0)
    if declared:
        rd.update_run_json(lambda d: d.update(models=declared))
    return task.task_id


def _family_rows(out, *extra):
    p = cli("score", out, *extra, torch="unimported")
    assert p.returncode == 0, p.stdout + p.stderr
    return {r["metric"]: r for r in csv.DictReader(open(RunDir(out).scores_csv)) if r["model"] == "all-pairs"}


def test_vsi_family_means_read_the_declared_families(tmp_path):
    declared = {"a": {"family": "open-vlm", "architecture": "qwen-vl"},
                "b": {"family": "open-vlm", "architecture": "qwen-vl"},
                "c": {"family": "open-vlm", "architecture": "llava"}}
    out = tmp_path / "tagged"
    _vsi_run(out, declared)
    rows = _family_rows(out)
    same, cross = rows["vsi_rho_mean_same_family[region,sigma=20]"], rows["vsi_rho_mean_cross_family[region,sigma=20]"]
    assert (same["n"], cross["n"]) == ("1", "2")  # a~b same line; a~c, b~c across
    # without declared families (the records say vlm for all three) the means are undefined, as before
    bare = tmp_path / "bare"
    _vsi_run(bare, None)
    rows = _family_rows(bare)
    assert rows["vsi_rho_mean_same_family[region,sigma=20]"]["value"] == "nan"
    # --family still overrides the declared family model by model
    rows = _family_rows(out, "--family", "a=intern-vl")  # now three lines: every pair across
    assert rows["vsi_rho_mean_cross_family[region,sigma=20]"]["n"] == "3"
    assert rows["vsi_rho_mean_same_family[region,sigma=20]"]["value"] == "nan"


def test_merge_keeps_the_declared_metadata(tmp_path):
    declared = {"a": {"architecture": "qwen-vl"}, "b": {"architecture": "qwen-vl"}, "c": {"architecture": "llava"}}
    one, two, merged = tmp_path / "one", tmp_path / "two", tmp_path / "merged"
    _vsi_run(one, declared)
    _vsi_run(two, None)
    p = cli("merge", one, two, "--out", merged, in_process=True)
    assert p.returncode == 0, p.stdout
    assert json.loads((merged / "run.json").read_text())["models"] == declared
    assert _family_rows(merged)["vsi_rho_mean_same_family[region,sigma=20]"]["n"] == "1"


def test_a_user_roster_runs_its_models_with_their_metadata(tmp_path, mirror, echo_loader):
    for d in ("m1", "m2"):
        (tmp_path / d).mkdir()
    roster = tmp_path / "lab.toml"
    roster.write_text(f'[roster]\nname = "lab"\nsource = "our lab"\n'
                      f'[[model]]\nname = "one"\nseed_name = "Model One"\nspec = "hf:{tmp_path / "m1"}"\n'
                      f'family = "clip-like"\nparams = "150M"\n'
                      f'[[model]]\nname = "two"\nspec = "hf:{tmp_path / "m2"}"\nfamily = "open-vlm"\n'
                      f'architecture = "llava"\n')
    out = tmp_path / "run"
    p = cli("run", "--roster", roster, "--model", "extra=hf:/nonexistent", "--out", out, "--task",
            "closure.nat.silhouette", "--stimulus", "silh_airplane1", "--no-progress", in_process=True)
    assert p.returncode == 0, p.stdout
    models = {r.model for r in read_records(out / "records.jsonl") if r.model_family != "human"}
    assert models == {"one", "two", "extra"}  # the roster's models and the --model one
    declared = json.loads((out / "run.json").read_text())["models"]
    assert set(declared) == {"one", "two"}
    assert declared["one"] == {"spec": f"hf:{tmp_path / 'm1'}", "revision": "unpinned", "roster": "lab",
                               "seed_name": "Model One", "family": "clip-like", "objective": None,
                               "params": 150_000_000, "vision_tower": None, "access": None, "architecture": None}
    rows = {r["model"]: r for r in csv.DictReader(open(RunDir(out).models_csv))}
    assert rows["two"]["family"] == "open-vlm" and rows["two"]["access"] == "" and rows["two"]["roster"] == "lab"
