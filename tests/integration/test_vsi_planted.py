"""Planted case (issue 9): a tiny LLaVA made to ignore the image on a known subset.

The model's first-token distributions come from a real tiny LLaVA (random weights), except that
on the planted subset S the wrapper hands the model one fixed grey image instead of the sample's
image, for the clean and the blurred view alike (the "language head ignores the image").  The
probe features come from the same model's real vision tower on the real clean/blurred images.
Expected: VSI = 0 on S and lower than elsewhere; on S the probe still tells the views apart
(accuracy above the argmax-change rate, which is 0 there); with errors planted on S, AUROC of
-VSI > 0.5.  Re-scoring from the stored samples and cached features in a fresh interpreter
without torch gives identical rows.
"""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image, ImageFilter  # noqa: E402

from perceptbench.metrics.topk_kl import kl_topk  # noqa: E402
from perceptbench.vsi.analysis import score_vsi_analyses  # noqa: E402
from perceptbench.vsi.features import ProbeFeatures, ProbeItem, cache_probe_features, store_key  # noqa: E402
from perceptbench.vsi.samples import VSISample  # noqa: E402

N = 40
PLANTED = set(range(0, N, 2))  # every other sample ignores the image
PROMPT = "Three objects are shown, numbered 1, 2 and 3. Which one is the odd one out?"


class IgnoringVLM:
    """Wraps an HFVLM: samples in ``ignore`` are answered from a fixed grey image."""

    def __init__(self, inner, ignore: set[str]):
        self.inner, self.ignore, self.name = inner, ignore, inner.name
        self.grey = Image.new("RGB", (64, 64), (128, 128, 128))

    def dist(self, sample_id: str, image):
        return self.inner.next_token_distribution(self.grey if sample_id in self.ignore else image, PROMPT, top_k=50)

    def vision_features(self, images):
        return self.inner.vision_features(images)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    from perceptbench.models.vlm_hf import HFVLM
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    root = tmp_path_factory.mktemp("planted")
    vlm = HFVLM(build_tiny_vlm("llava", root / "llava", seed=0), name="tiny-llava")
    rng = np.random.default_rng(0)
    imgs = [Image.fromarray((rng.random((64, 64, 3)) * 255).astype("uint8")).filter(ImageFilter.GaussianBlur(1))
            for _ in range(N)]
    blurred = [im.filter(ImageFilter.GaussianBlur(20)) for im in imgs]
    ids = [f"s{i:02d}" for i in range(N)]
    m = IgnoringVLM(vlm, {ids[i] for i in PLANTED})
    samples = []
    for i, sid in enumerate(ids):
        p, q = m.dist(sid, imgs[i]), m.dist(sid, blurred[i])
        v = kl_topk(p.token_ids, p.logprobs, q.token_ids, q.logprobs)
        wrong = (i in PLANTED and i % 4 == 0) or i in (1, 5)  # errors planted on S (10) + 2 elsewhere
        samples.append(VSISample("vsi.planted", "planted", vlm.name, "vlm", sid, f"img{i}", "region", 20.0, v,
                                 bool(p.token_ids[0] != q.token_ids[0]), not wrong,
                                 float(np.exp(p.logprobs[0])), None, "exact"))
    items = [ProbeItem(sid, f"img{i}", "region", 20.0, (lambda im=imgs[i]: im), (lambda im=blurred[i]: im))
             for i, sid in enumerate(ids)]
    feat_dir = root / "features"
    cache_probe_features(m, items, feat_dir, key=store_key(vlm.name, "vsi.planted"))
    return samples, feat_dir


def test_planted_subset(planted):
    samples, feat_dir = planted
    vsi = np.array([s.vsi for s in samples])
    in_s = np.array([i in PLANTED for i in range(N)])
    assert np.all(vsi[in_s] == 0)
    assert np.median(vsi[~in_s]) > 0
    rows = score_vsi_analyses(samples, seed=0, n_perm=1000, probe=ProbeFeatures(feat_dir))
    by = {r.metric: r for r in rows}
    low = "[region,sigma=20]"
    assert by["argmax_change_low_vsi" + low].value == 0 or by["argmax_change_low_vsi" + low].n > len(PLANTED)
    assert by["probe_acc_low_vsi" + low].value > by["argmax_change_low_vsi" + low].value
    assert by["probe_acc_low_vsi" + low].value > 0.7
    assert by["gap_low_vsi" + low].value > 0.5
    auroc = by["auroc_vsi" + low]
    assert auroc.value > 0.5 and math.isfinite(auroc.value)


def test_rescoring_without_torch_is_identical(planted, tmp_path):
    samples, feat_dir = planted
    rows = score_vsi_analyses(samples, seed=0, n_perm=1000, probe=ProbeFeatures(feat_dir))
    (tmp_path / "samples.json").write_text(json.dumps([dataclasses.asdict(s) for s in samples]))
    code = f"""
import json, sys, dataclasses, math
from perceptbench.vsi.analysis import score_vsi_analyses
from perceptbench.vsi.features import ProbeFeatures
from perceptbench.vsi.samples import VSISample
s = [VSISample(**d) for d in json.load(open({str(tmp_path / 'samples.json')!r}))]
rows = score_vsi_analyses(s, seed=0, n_perm=1000, probe=ProbeFeatures({str(feat_dir)!r}))
print(json.dumps([[r.task_id, r.model, r.metric, None if math.isnan(r.value) else r.value, r.ci_low, r.ci_high]
                  for r in rows]))
assert 'torch' not in sys.modules, 'torch was imported'
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    want = [[r.task_id, r.model, r.metric, None if math.isnan(r.value) else r.value, r.ci_low, r.ci_high]
            for r in rows]
    assert got == want
    assert any(g[2].startswith("probe_acc_low_vsi") for g in got)
