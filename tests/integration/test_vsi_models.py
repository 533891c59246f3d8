"""VSI on tiny local VLMs: top-50 vs full-softmax KL, batch invariance, an image-ignoring
model (VSI = 0) vs an image-dependent one (VSI > 0), the CLI end to end, re-scoring with torch
blocked, the response cache and resume after kill -9."""

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.metrics.topk_kl import kl_topk
from perceptbench.models.base import VLMRequest
from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_file
from perceptbench.tasks import get_task
from perceptbench.vsi.protocol import CONFIDENCE_PROMPT
from perceptbench.testing.tiny_vlm import build_tiny_llava
from helpers.cli import cli
from perceptbench.vsi.samples import vsi_flagged, vsi_samples

TASK = "vsi.salbench.syn@n=9"
TOL_ABS, TOL_REL = 1e-3, 1e-2
"""Top-50 vs full-softmax KL tolerance when the top 50 tokens hold >= 99% of the mass (docs/metrics.md)."""


@pytest.fixture(scope="module")
def peaked_llava(tmp_path_factory):
    """A tiny LLaVA whose first-token distributions are peaked (init_range 1.0: top-50 mass > 0.99),
    like a real VLM answering a short question."""
    return build_tiny_llava(tmp_path_factory.mktemp("vsi") / "tiny-llava-peaked", init_range=1.0)


@pytest.fixture(scope="module")
def vlm(peaked_llava):
    from perceptbench.models.vlm_hf import HFVLM

    return HFVLM(peaked_llava)


def _requests(task_id=TASK):
    t = get_task(task_id)
    return [VLMRequest((s.render(),), s.meta["vsi_prompt"], 8) for s in t.stimuli(0)]


def test_top50_kl_close_to_full_softmax_kl(vlm):
    reqs = _requests()
    full = vlm.next_token_distributions(reqs, top_k=None, batch_size=9)
    top = vlm.next_token_distributions(reqs, top_k=50, batch_size=9)
    assert all(f.complete for f in full) and not any(t.complete for t in top)
    checked = 0
    for j in range(0, len(reqs), 3):  # clean, region_blur, whole_blur per sample
        assert np.exp(top[j].logprobs).sum() >= 0.99
        for c in (1, 2):
            kf = kl_topk(full[j].token_ids, full[j].logprobs, full[j + c].token_ids, full[j + c].logprobs,
                         p_complete=True, q_complete=True)
            kt = kl_topk(top[j].token_ids, top[j].logprobs, top[j + c].token_ids, top[j + c].logprobs)
            assert abs(kt - kf) <= TOL_ABS + TOL_REL * kf, (kf, kt)
            checked += 1
    assert checked == 18


def test_batch_invariance_1_vs_8(vlm):
    reqs = _requests()[:8]
    a = vlm.next_token_distributions(reqs, top_k=50, batch_size=1)
    b = vlm.next_token_distributions(reqs, top_k=50, batch_size=8)
    for x, y in zip(a, b):
        assert x.token_ids[:10] == y.token_ids[:10]
        np.testing.assert_allclose(x.logprobs[:10], y.logprobs[:10], atol=1e-4)
        assert abs(kl_topk(x.token_ids, x.logprobs, y.token_ids, y.logprobs)) < 1e-4
    g1 = vlm.generate_with_distribution(reqs, batch_size=1)
    g8 = vlm.generate_with_distribution(reqs, batch_size=8)
    assert [t for t, _ in g1] == [t for t, _ in g8]
    for (_, x), (_, y), z in zip(g1, g8, a):  # generation's first step = the prefill distribution
        np.testing.assert_allclose(x.logprobs[:10], y.logprobs[:10], atol=1e-4)
        np.testing.assert_allclose(x.logprobs[:10], z.logprobs[:10], atol=1e-4)


class ImageIgnoringVLM:
    """Wraps an HFVLM and shows it one fixed grey image whatever the request carries."""

    def __init__(self, inner):
        self.inner = inner
        self.name = inner.name + "-blind"
        self.model_version = inner.model_version + "+image-ignoring"
        self.family, self.supports_multi_image = inner.family, inner.supports_multi_image
        self.generation_settings = inner.generation_settings
        self._grey = Image.new("RGB", (64, 64), (128, 128, 128))

    def _blind(self, reqs):
        return [VLMRequest(tuple(self._grey for _ in r.images), r.prompt, r.max_new_tokens) for r in reqs]

    def generate(self, reqs, batch_size=8):
        return self.inner.generate(self._blind(reqs), batch_size=batch_size)

    def generate_with_distribution(self, reqs, **kw):
        return self.inner.generate_with_distribution(self._blind(reqs), **kw)

    def generate_with_distribution_and_follow_up(self, reqs, *a, **kw):
        return self.inner.generate_with_distribution_and_follow_up(self._blind(reqs), *a, **kw)

    def generate_follow_up(self, reqs, *a, **kw):
        return self.inner.generate_follow_up(self._blind(reqs), *a, **kw)

    def next_token_distributions(self, reqs, **kw):
        return self.inner.next_token_distributions(self._blind(reqs), **kw)

    def next_token_distribution(self, image, prompt, top_k=None):
        return self.inner.next_token_distributions(self._blind([VLMRequest((image,), prompt)]), top_k=top_k)[0]


def test_image_ignoring_model_has_zero_vsi_image_dependent_has_positive(vlm, tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    blind = ImageIgnoringVLM(vlm)
    models = {f"{blind.name}=hf:/blind": blind, f"{vlm.name}=hf:/seeing": vlm}
    cfg = RunConfig(out=tmp_path / "run", tasks=(TASK,), models=tuple(models), batch_size=4)
    run(cfg, progress=False, load_model=lambda a: models[a])
    recs = list(read_records(tmp_path / "run" / "records.jsonl"))
    ss, flagged = vsi_samples(recs), vsi_flagged(recs)
    blind_s = [s for s in ss if s.model == blind.name]
    blind_f = [f for f in flagged if f.model == blind.name]
    seeing = [s for s in ss if s.model == vlm.name]
    assert len(seeing) == 18 and not [f for f in flagged if f.model == vlm.name]
    # identical inputs: the clean (generation's first step) and perturbed (prefill) distributions
    # agree to float rounding.  Where they agree bit for bit although the records' images differ,
    # the pair is flagged (the distribution does not come from the image), never scored as a VSI
    # of exactly 0; where rounding differs, VSI is 0 to 1e-9 nats.  Every pair is one or the other.
    assert len(blind_s) + len(blind_f) == 18 and blind_s and blind_f
    assert {f.reason for f in blind_f} == {"identical_across_conditions"}
    assert max(s.vsi for s in blind_s) < 1e-9
    assert not any(s.argmax_changed for s in blind_s)
    assert sum(s.vsi > 1e-6 for s in seeing) >= 0.8 * len(seeing)
    whole = [s.vsi for s in seeing if s.perturbation == "whole"]
    assert min(whole) > 1e-6


@pytest.fixture(scope="module")
def cli_run(peaked_llava, tmp_path_factory):
    d = tmp_path_factory.mktemp("vsicli")
    out = d / "run"
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(d / "cache")}
    p = cli("run", "--model", f"hf:{peaked_llava}", "--task", TASK, "--task",
            "vsi.similarity.chart.mark_color@n=4,sigma=10", "--out", str(out), "--no-progress", "--batch-size", "4",
            env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return out, d, env, p.stdout


def test_cli_family_records_and_scores(cli_run):
    out, _, _, stdout = cli_run
    recs = read_records(out / "records.jsonl", allow_torn_tail=False)
    syn = [r for r in recs if r.task_id == TASK]
    mc = [r for r in recs if r.task_id.startswith("vsi.similarity.chart.mark_color")]
    assert len(syn) == 27 and len(mc) == 8
    assert {r.manipulated_value for r in syn} == {"clean", "region_blur:sigma=20", "whole_blur:sigma=20"}
    assert {r.manipulated_value for r in mc} == {"clean", "whole_blur:sigma=10"}
    for r in syn:
        v = r.run_meta.model_extra["vsi"]
        assert len(v["token_ids"]) == len(v["logprobs"]) == 50 and v["top_k"] == 50
        assert v["region_source"] == "exact" and not v["fallback"]
        if v["condition"] == "clean":
            assert r.readout == "vlm_vsi_clean" and isinstance(r.raw_output, str)
            assert 0 < v["max_prob"] <= 1 and v["verbal_raw"] is not None
            assert r.response in (None, "A", "B", "C")
            # the confidence question: a follow-up turn, recorded verbatim, answered from the clean KV cache
            assert v["confidence_prompt"] == CONFIDENCE_PROMPT and v["confidence_turn"] == "follow_up"
            assert v["confidence_kv_reuse"] is True and v["confidence_max_new_tokens"] == 8
            assert r.run_meta.model_extra["confidence_prompt_hash"] == get_task(TASK).confidence_prompt_hash
            assert r.run_meta.model_extra["settings"]["max_new_tokens"] == 8
        else:
            assert r.readout == "vlm_vsi_perturbed" and r.response is None and r.raw_output is None
    rows = json.loads((out / "scores.json").read_text())
    metrics = {(r["task_id"], r["metric"]) for r in rows}
    for m in ("vsi_median", "insensitive_frac@0.05", "insensitive_frac@0.01", "argmax_change_rate", "vsi_histogram"):
        assert (TASK, m + "[region_blur,sigma=20]") in metrics and (TASK, m + "[whole_blur,sigma=20]") in metrics
    assert (TASK, "n_fallback[region_blur,sigma=20]") in metrics and (TASK, "n_parse_null") in metrics
    hist = next(r for r in rows if r["metric"] == "vsi_histogram[whole_blur,sigma=20]" and r["task_id"] == TASK)
    assert sum(json.loads(hist["note"])["counts"]) == 9


def test_rescore_without_torch_identical(cli_run, tmp_path):
    out, _, _, _ = cli_run
    # torch blocked by an import hook in the child (exit 97 if score imported it anyway)
    p = cli("score", str(out / "records.jsonl"), "--out", str(tmp_path / "s.csv"), torch="blocked", columns=None)
    assert p.returncode == 0, p.stdout + p.stderr
    # the samples read from the records alone, also with torch blocked
    code = ("import sys\nclass _B:\n    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'torch': raise ImportError('torch blocked')\n"
            "sys.meta_path.insert(0, _B())\n"
            "from perceptbench.vsi.samples import vsi_flagged, vsi_samples\nfrom perceptbench.records import read_records\n"
            f"print('N', len(vsi_samples(read_records({str(out / 'records.jsonl')!r}))))\n"
            "assert 'torch' not in sys.modules\nprint('NO_TORCH_OK')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "NO_TORCH_OK" in p.stdout and "N 22" in p.stdout, p.stdout + p.stderr
    assert (tmp_path / "s.csv").read_text() == (out / "scores.csv").read_text()
    assert (tmp_path / "s.json").read_text() == (out / "scores.json").read_text()


def test_rerun_served_from_cache(cli_run, peaked_llava, tmp_path):
    _, d, env, _ = cli_run
    p = cli("run", "--model", f"hf:{peaked_llava}", "--task", TASK, "--out", str(tmp_path / "again"),
            "--no-progress", "--batch-size", "4", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    # 9 clean (text + distribution), 9 confidence texts, 18 perturbed distributions: all cached
    assert "36 of 36" in p.stdout.replace("\n", " "), p.stdout
    a = {r.trial_id: r.run_meta.model_extra["vsi"]["logprobs"] for r in read_records(d / "run" / "records.jsonl")
         if r.task_id == TASK}
    b = {r.trial_id: r.run_meta.model_extra["vsi"]["logprobs"] for r in read_records(tmp_path / "again" / "records.jsonl")}
    assert a == b


def test_kill_9_then_resume(cli_run, peaked_llava, tmp_path):
    out = tmp_path / "killed"
    rec = out / "records.jsonl"
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache2")}
    task = "vsi.salbench.syn@n=12"  # 36 records: enough for a partial state, kill after 6
    proc = cli("run", "--model", f"hf:{peaked_llava}", "--task", task, "--out", str(out), "--no-progress",
               "--batch-size", "3", env=env, columns=None, background=True)
    deadline = time.time() + 600
    n = lambda: rec.read_bytes().count(b"\n") if rec.exists() else 0
    while n() < 6 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partial = rec.read_bytes()
    done_before = {r.trial_id: r for r in read_records(rec)}
    assert 0 < len(done_before) < 36
    p = cli("run", "--model", f"hf:{peaked_llava}", "--task", task, "--out", str(out), "--no-progress",
            "--batch-size", "3", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    recs = read_records(rec, allow_torn_tail=False)
    assert len(recs) == len({r.trial_id for r in recs}) == 36
    assert rec.read_bytes().startswith(partial[:partial.rfind(b"\n") + 1])
    for r in recs:
        if r.trial_id in done_before:
            assert r == done_before[r.trial_id]
    assert len(vsi_samples(recs)) == 24


def test_recorded_confidence_equals_uncached_follow_up(cli_run, vlm):
    out, _, _, _ = cli_run
    recs = [r for r in read_records(out / "records.jsonl") if r.task_id == TASK and r.readout == "vlm_vsi_clean"]
    by_id = {s.stimulus_id: s for s in get_task(TASK).stimuli(0)}
    reqs = [VLMRequest((by_id[r.stimulus_id].render(),), by_id[r.stimulus_id].meta["vsi_prompt"], 8) for r in recs]
    ref = vlm.generate_follow_up(reqs, [r.raw_output for r in recs], CONFIDENCE_PROMPT, 8, batch_size=1)
    assert [r.run_meta.model_extra["vsi"]["verbal_raw"] for r in recs] == [f.text for f in ref]


def test_resume_over_single_turn_confidence_records_says_so(cli_run, peaked_llava, tmp_path):
    """Records from before the follow-up turn carry another confidence_prompt_hash: a resume stops
    with a one-line 'confidence prompt changed' message (and --allow-mixed records the mix)."""
    out, _, env, _ = cli_run
    d = tmp_path / "old"
    d.mkdir()
    lines = (out / "records.jsonl").read_text().splitlines()
    old = []
    for line in lines:
        rec = json.loads(line)
        if rec["task_id"] != TASK:
            continue
        if rec["readout"] == "vlm_vsi_clean":
            rec["run_meta"]["confidence_prompt_hash"] = "0ld0ld00"
        old.append(json.dumps(rec))
    keep = old[:len(old) // 2]
    (d / "records.jsonl").write_text("\n".join(keep) + "\n")
    (d / "run.json").write_text((out / "run.json").read_text())
    p = cli("run", "--model", f"hf:{peaked_llava}", "--task", TASK, "--out", str(d), "--no-progress", env=env)
    assert p.returncode != 0
    assert "confidence prompt changed" in (p.stdout + p.stderr).replace("\n", " "), p.stdout + p.stderr
    assert (d / "records.jsonl").read_text() == "\n".join(keep) + "\n"
