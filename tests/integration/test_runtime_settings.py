"""Device, dtype and attention implementation of local models (``--device``, ``--dtype``,
``--attn-implementation``; :mod:`perceptbench.models.runtime`): recorded in every model record,
part of the response cache's key and of the resume check, refused in one line before anything is
written when the machine cannot run them.  What needs a GPU (cuda, flash attention) is not tested
here; CPU runs bfloat16 and float16."""

import json

import pytest

pytest.importorskip("transformers", reason="model extra not installed")
torch = pytest.importorskip("torch")

from perceptbench.models.runtime import Runtime, check_runtime
from perceptbench.records import read_records
from perceptbench.testing.tiny_vlm import build_tiny_vlm
from helpers.cli import cli

TASK = "similarity.chart.mark_color"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_vlm("llava", tmp_path_factory.mktemp("rt") / "tiny-llava")


def _first_ids(n=3, seed=0):
    from perceptbench.tasks import get_task

    return [s.stimulus_id for s in get_task(TASK).stimuli(seed) if s.split == "test"][:n]


def _run(tiny, out, cache, *extra):
    args = ["run", "--model", f"vlm=hf:{tiny}", "--task", TASK, "--out", str(out), "--no-progress"]
    for sid in _first_ids():
        args += ["--stimulus", sid]
    return cli(*args, *extra, env={"PERCEPTBENCH_RESPONSE_CACHE": str(cache)})


def test_vlm_dtype_and_attention_are_recorded_in_every_record(tiny, tmp_path):
    out = tmp_path / "run"
    p = _run(tiny, out, tmp_path / "cache", "--dtype", "bfloat16", "--attn-implementation", "eager")
    assert p.returncode == 0, p.stdout + p.stderr
    recs = [r for r in read_records(out / "records.jsonl") if r.model == "vlm"]
    assert len(recs) == 3
    for r in recs:
        s = r.run_meta.model_extra["settings"]
        assert (s["dtype"], s["device_type"], s["attn_implementation"]) == ("bfloat16", "cpu", "eager")


def test_default_vlm_records_say_float32_and_carry_no_attention_key(tiny, tmp_path):
    out = tmp_path / "run"
    assert _run(tiny, out, tmp_path / "cache").returncode == 0
    for r in (r for r in read_records(out / "records.jsonl") if r.model == "vlm"):
        s = r.run_meta.model_extra["settings"]
        assert s["dtype"] == "float32" and s["device_type"] == "cpu" and "attn_implementation" not in s


def test_dtype_is_part_of_the_response_cache_key(tiny, tmp_path):
    cache = tmp_path / "cache"
    assert _run(tiny, tmp_path / "a", cache).returncode == 0
    p = _run(tiny, tmp_path / "b", cache, "--dtype", "float16")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "response cache: 0 of 3" in p.stdout  # float16 answers are not float32's cached ones
    p = _run(tiny, tmp_path / "c", cache, "--dtype", "float16")
    assert "response cache: 3 of 3" in p.stdout


def test_resume_in_another_dtype_is_refused_unless_allowed(tiny, tmp_path):
    out = tmp_path / "run"
    assert _run(tiny, out, tmp_path / "cache").returncode == 0
    args = ["run", "--model", f"vlm=hf:{tiny}", "--task", TASK, "--out", str(out), "--no-progress",
            "--dtype", "bfloat16", *[a for sid in _first_ids(4) for a in ("--stimulus", sid)]]
    before = [r for r in read_records(out / "records.jsonl") if r.model == "vlm"]
    p = cli(*args, env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode != 0
    assert ("generation settings changed for 3 finished trial(s) of similarity.chart.mark_color (vlm): "
            "{'dtype': 'float32'} -> {'dtype': 'bfloat16'}") in " ".join((p.stdout + p.stderr).split())
    # the refused run wrote no model trial (a new stimulus's human records need no model and are kept)
    assert [r for r in read_records(out / "records.jsonl") if r.model == "vlm"] == before
    p = cli(*args, "--allow-mixed", env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    mixed = json.loads((out / "run.json").read_text())
    assert "generation settings" in json.dumps(mixed)
    fourth = [r for r in read_records(out / "records.jsonl") if r.model == "vlm"][-1]
    assert fourth.stimulus_id == _first_ids(4)[3] and fourth.run_meta.model_extra["settings"]["dtype"] == "bfloat16"


def test_encoder_records_say_where_they_ran_and_float32(tmp_path):
    out = tmp_path / "run"
    sid = _first_ids(1)[0]
    p = cli("run", "--task", TASK, "--stimulus", sid, "--out", str(out), "--no-progress", "--dtype", "bfloat16")
    assert p.returncode == 0, p.stdout + p.stderr
    recs = [r for r in read_records(out / "records.jsonl") if r.model == "efficientnet-lite0"]
    assert recs and all(r.run_meta.model_extra["settings"] == {"batch_size": 8, "device_type": "cpu",
                                                               "dtype": "float32"} for r in recs)


def test_a_device_that_is_not_there_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a machine without CUDA, on any machine
    out = tmp_path / "run"
    p = cli("run", "--task", TASK, "--out", str(out), "--device", "cuda", in_process=True)
    assert p.returncode == 2
    text = " ".join((p.stdout + p.stderr).split())  # one message (the in-process console wraps it)
    assert text.startswith("error: --device cuda: CUDA is not available here") and text.count("error:") == 1
    assert text.endswith("or use --device cpu")
    assert not out.exists()


def test_a_dtype_the_device_cannot_compute_in_is_refused(monkeypatch):
    def no_half(*a, **k):
        raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Half\'\nmore')

    monkeypatch.setattr(torch, "softmax", no_half)
    with pytest.raises(ValueError, match=r"--dtype float16: device cpu cannot compute in it \(\"addmm_impl_cpu_\" "
                                         r"not implemented for 'Half'\); use --dtype float32$"):
        check_runtime(Runtime("cpu", "float16"))
    check_runtime(Runtime("cpu", "float32"))  # float32 needs no check: never refused


def test_runtime_names_are_checked_without_torch():
    with pytest.raises(ValueError, match="--dtype 'half'"):
        Runtime(dtype="half").check_names()
    with pytest.raises(ValueError, match="--device ''"):
        Runtime(device=" ").check_names()
    assert Runtime().is_default and not Runtime(dtype="bfloat16").is_default


def test_a_vsi_resume_in_another_dtype_is_refused(tiny, tmp_path):
    """VSI records keep the task's answer budget in their settings, so a resume compares their
    precision and device settings only (runner.RUNTIME_KEYS): another dtype is refused, the same
    one resumes."""
    from perceptbench.tasks import get_task

    vsi = "vsi.salbench.syn@n=2"
    ids = [s.stimulus_id for s in get_task(vsi).stimuli(0) if s.split == "test"]
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")}
    base = ["run", "--model", f"vlm=hf:{tiny}", "--task", vsi, "--out", str(tmp_path / "run"), "--no-progress"]
    assert cli(*base, "--stimulus", ids[0], env=env).returncode == 0
    p = cli(*base, "--stimulus", ids[0], "--stimulus", ids[1], "--dtype", "bfloat16", env=env)
    assert p.returncode != 0 and "{'dtype': 'float32'} -> {'dtype': 'bfloat16'}" in " ".join(p.stderr.split())
    p = cli(*base, "--stimulus", ids[0], "--stimulus", ids[1], env=env)
    assert p.returncode == 0, p.stdout + p.stderr
