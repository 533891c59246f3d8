"""A corrupt external image stops a run with a one-line error naming the file; the records
written before it stay, and the rerun after the file is fixed resumes (issue 7 item 4)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("torch", reason="model extra not installed")

from perceptbench.stimuli.images import ImageLoadError  # noqa: E402
from perceptbench.records import read_records  # noqa: E402
from perceptbench.runner import RunConfig, run  # noqa: E402


@pytest.mark.parametrize("when", ["before_the_run", "mid_run"])
def test_truncated_image_mid_run_loses_nothing_and_resumes(tmp_path, monkeypatch, when):
    """A truncated image is found before anything is written (issue 20 item 7: the run directory
    was created first); one that breaks after that check (``mid_run``: the check is skipped, as
    for a file replaced during the run) stops the run with the records before it kept."""
    from perceptbench.tasks.salbench import SalBenchTask
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 255, (48, 48, 3), dtype=np.uint8)).save(tmp_path / "a.png")
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (48, 48, 3), dtype=np.uint8)).save(buf, "JPEG")
    good_b = buf.getvalue()
    (tmp_path / "b.jpg").write_bytes(good_b[: len(good_b) // 2])
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps([
        {"image_id": "a", "split": "nat", "image": "a.png", "answer": "Color", "n_distractors": 3},
        {"image_id": "b", "split": "nat", "image": "b.jpg", "answer": "Shape", "n_distractors": 5}]))
    d = build_tiny_clip(tmp_path / "clip")
    cfg = RunConfig(out=tmp_path / "run", tasks=[f"salbench.detection.nat@source={ann}"],
                    models=[f"clip=hf:{d}"], batch_size=1)
    if when == "mid_run":
        monkeypatch.setattr(SalBenchTask, "check_images", lambda self, seed: None)
    with pytest.raises(ImageLoadError) as e:
        run(cfg, progress=False)
    assert "b.jpg" in str(e.value) and "\n" not in str(e.value)
    if when == "before_the_run":
        assert not (tmp_path / "run").exists()
        first = []
    else:
        first = read_records(tmp_path / "run" / "records.jsonl")
        assert [r.stimulus_id for r in first] == ["a"]
    (tmp_path / "b.jpg").write_bytes(good_b)
    summary = run(cfg, progress=False)
    recs = read_records(tmp_path / "run" / "records.jsonl")
    assert sorted(r.stimulus_id for r in recs) == ["a", "b"]
    if first:
        assert next(r for r in recs if r.stimulus_id == "a").trial_id == first[0].trial_id
    assert summary is not None
