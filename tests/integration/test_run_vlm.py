"""A local VLM answers the battery through the prompt readout: verbatim prompt, rule parser,
null responses recorded, answers cached by content (seed 000 §2.2, appendix B)."""

import json
import re

import pytest

pytest.importorskip("transformers", reason="model extra not installed")

from perceptbench.models.registry import load_model
from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_file
from perceptbench.tasks import get_task
from perceptbench.testing.tiny_vlm import build_tiny_vlm
from helpers.cli import cli


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    return build_tiny_vlm("llava", tmp_path_factory.mktemp("vlm") / "tiny-llava")


def test_cli_run_tiny_vlm_mark_color(tiny_llava, tmp_path):
    out = tmp_path / "run"
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")}
    p = cli("run", "--model", f"hf:{tiny_llava}", "--task", "similarity.chart.mark_color", "--out", str(out),
            "--no-progress", "--batch-size", "8", env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    task = get_task("similarity.chart.mark_color")
    recs = [r for r in read_records(out / "records.jsonl", allow_torn_tail=False) if r.model == "tiny-llava"]
    assert len(recs) == 120
    for r in recs:
        assert r.readout == "vlm_prompt" and r.model_family == "vlm"
        assert r.prompt_id == "similarity.chart.mark_color.v1" and r.prompt_hash == task.prompt_hash
        assert isinstance(r.raw_output, str)
        assert r.response in (None, 1, 2, 3)
        assert r.run_meta.model_extra["parse"]["mode"] == "default"
        assert r.run_meta.model_extra["settings"]["max_new_tokens"] == 40
        assert r.run_meta.model_version.startswith(str(tiny_llava))
    n_null = sum(r.response is None for r in recs)
    rows = {(r.model, r.metric): r for r in score_file(out / "records.jsonl")}
    assert rows[("tiny-llava", "null_rate")].n_null == n_null
    assert ("tiny-llava", "n_ambiguous") in rows
    # the cache line counts distinct requests (identical questions are asked once), never trials
    m = re.search(r"response cache: (\d+) of (\d+) distinct VLM requests answered from the cache", p.stdout)
    assert m and int(m[1]) == 0 and 0 < int(m[2]) <= 120, p.stdout


class CountingVLM:
    """Wraps a VLM and counts requests that reach the model."""

    def __init__(self, vlm):
        self.vlm, self.calls = vlm, 0
        for a in ("name", "model_version", "family", "supports_multi_image", "generation_settings"):
            setattr(self, a, getattr(vlm, a))

    def generate(self, requests, batch_size=8):
        self.calls += len(requests)
        return self.vlm.generate(requests, batch_size=batch_size)


def test_cache_rerun_makes_zero_model_calls(tiny_llava, tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    wrapped = CountingVLM(load_model(f"hf:{tiny_llava}"))
    cfg = RunConfig(out=tmp_path / "run", tasks=["closure.nat.silhouette"], models=[f"hf:{tiny_llava}"],
                    batch_size=8)
    run(cfg, progress=False, load_model=lambda _a: wrapped)
    assert wrapped.calls == 80
    first = (tmp_path / "run" / "records.jsonl").read_text().splitlines()
    (tmp_path / "run" / "records.jsonl").unlink()
    run(cfg, progress=False, load_model=lambda _a: wrapped)
    assert wrapped.calls == 80  # every answer came from the cache
    second = (tmp_path / "run" / "records.jsonl").read_text().splitlines()

    def strip(lines):
        out = []
        for ln in lines:
            d = json.loads(ln)
            d["run_meta"].pop("run_id")
            out.append(d)
        return out

    assert strip(first) == strip(second)


def test_parser_modes_rescore_from_raw_output(tmp_path):
    """score --parser default|strict|seed re-parses raw_output; nothing else is needed."""
    from helpers.records import plant_record, plant_records

    task = get_task("similarity.chart.mark_color")
    stims = task.stimuli(0)[:5]
    answers = ["1 or 2", "The odd one out is 3.", "", "<think>1 or 2?</think> Answer: 3", "<think>mark 2 is"]
    recs = []
    for s, text in zip(stims, answers):
        response, parse_meta = task.parse_answer(text)
        recs.append(plant_record(task, stimulus_id=s.stimulus_id, model="m", model_family="api", readout="vlm_prompt",
                                 response=response, ground_truth=s.ground_truth, manipulated_value=None,
                                 raw_output=text, prompt_id=task.prompt_id, prompt_hash=task.prompt_hash,
                                 model_version="x", seed=0, run_id="r", parse=parse_meta))
    assert [r.response for r in recs] == [1, 3, None, 3, None]
    assert recs[4].run_meta.model_extra["parse"]["null_reason"] == "unclosed_reasoning"
    path = plant_records(tmp_path / "records.jsonl", recs)
    got = {mode: {r.metric: r for r in score_file(path, tmp_path / f"s.{mode}.csv", parser_mode=mode)}
           for mode in ("default", "strict", "seed")}
    assert got["default"]["n_ambiguous"].value == 1 and got["default"]["null_rate"].value == 0.4
    assert got["default"]["n_unclosed_reasoning"].value == 1 and got["default"]["n_reparsed_changed"].value == 0
    assert got["strict"]["null_rate"].value == 0.6
    # the seed's rule reads the first integer of the raw output, reasoning included
    assert got["seed"]["null_rate"].value == 0.2 and got["seed"]["n_ambiguous"].value == 2
    assert got["seed"]["n_unclosed_reasoning"].value == 0 and got["seed"]["n_reparsed_changed"].value == 2
    with pytest.raises(ValueError, match="parser mode"):
        score_file(path, tmp_path / "x.csv", parser_mode="lenient")


def test_openai_compatible_never_gets_the_openai_key(monkeypatch):
    from perceptbench.models.registry import COMPATIBLE_KEY_ENV

    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leave")
    monkeypatch.delenv(COMPATIBLE_KEY_ENV, raising=False)
    m = load_model("srv=openai-compatible:http://127.0.0.1:9/v1#some-model")
    assert m.api_key_env == COMPATIBLE_KEY_ENV and m._key() is None


def test_resume_with_other_weights_is_refused(tiny_llava, tmp_path, monkeypatch):
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    other = build_tiny_vlm("llava", tmp_path / "tiny-llava", seed=1)
    cfg = RunConfig(out=tmp_path / "run", tasks=["similarity.chart.mark_color"], models=[f"m=hf:{tiny_llava}"],
                    batch_size=8)
    vlm = load_model(f"m=hf:{tiny_llava}")

    class Partial(CountingVLM):
        def generate(self, requests, batch_size=8):
            if self.calls >= 16:
                raise RuntimeError("simulated crash")
            return super().generate(requests, batch_size)

    with pytest.raises(RuntimeError, match="simulated crash"):
        run(cfg, progress=False, load_model=lambda _a: Partial(vlm))
    cfg2 = RunConfig(out=tmp_path / "run", tasks=["similarity.chart.mark_color"], models=[f"m=hf:{other}"],
                     batch_size=8)
    with pytest.raises(ValueError, match="model_version"):
        run(cfg2, progress=False)
