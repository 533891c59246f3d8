"""Any registered encoder runs the battery through the same runner: a tiny randomly
initialised CLIP (built offline from a config) named as ``hf:<local dir>``."""

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.models.registry import load_model, parse_model_arg
from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_file
from perceptbench.testing.tiny_encoders import build_tiny_clip


def test_hf_local_dir_encoder_runs_mark_color(tmp_path):
    d = build_tiny_clip(tmp_path / "tiny-clip")
    arg = f"tiny=hf:{d}"
    assert parse_model_arg(arg)[0] == "tiny"
    run(RunConfig(out=tmp_path / "run", tasks=["similarity.chart.mark_color", "closure.nat.silhouette"],
                  models=[arg], batch_size=16), progress=False)
    recs = [r for r in read_records(tmp_path / "run" / "records.jsonl") if r.model == "tiny"]
    assert len(recs) == 120 + 80
    assert {r.readout for r in recs} == {"odd_one_out_cosine", "prototype_cosine"}
    assert all(r.run_meta.model_version.startswith("local:") for r in recs)
    rows = score_file(tmp_path / "run" / "records.jsonl")
    assert {("tiny", "B"), ("tiny", "kappa_aggregate")} <= {(r.model, r.metric) for r in rows}


def test_open_clip_without_weights_is_refused():
    from perceptbench.models.base import ModelLoadError

    with pytest.raises(ModelLoadError, match="names no weights"):
        load_model("open_clip:RN50")
