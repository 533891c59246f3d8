"""HallusionBench's judge reading end to end through the CLI (issue 21): a tiny random-weight VLM
answers the HallusionBench fixture with and without the image, then ``run --judge`` asks a judge
model (the fake OpenAI-compatible server of tests/helpers/servers.py) about every answer.  The
verdicts land in judgments.jsonl, the ``@judge`` rows in scores.csv beside the rule-based rows,
which stay byte-identical; a rerun asks nothing again; ``score`` rebuilds the same table from the
files alone; the report shows the judge reading as a table of its own."""

from __future__ import annotations

import csv
import json

import pytest
from PIL import Image

pytest.importorskip("transformers", reason="model extra not installed")

from helpers.cli import cli
from helpers.paths import FIXTURES
from helpers.servers import GlitchServer, chat_json

HB_JSON = FIXTURES / "hallusionbench" / "HallusionBench.json"


def _verdict_for(body) -> str:
    """The fake judge: "Correct." on the illusion questions, "Incorrect" on the chart questions
    with an image, an unclear reply on the chart questions asked without one."""
    text = body["messages"][0]["content"]
    text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
    if "orange circle" in text:
        return "Correct."
    return "I cannot say." if "China, Hongkong" not in text and "importing" in text else "Incorrect"


@pytest.fixture(scope="module")
def tiny_llava(tmp_path_factory):
    from perceptbench.testing.tiny_vlm import build_tiny_llava

    return build_tiny_llava(tmp_path_factory.mktemp("judge") / "tiny-llava", init_range=1.0)


def _hb_images(root) -> None:
    for r in json.loads(HB_JSON.read_text()):
        if r["filename"]:
            p = root / r["filename"].removeprefix("./")
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (64, 48), (200, 30, 30)).save(p)


def test_run_with_a_judge_adds_the_judge_rows_beside_unchanged_rule_based_rows(tiny_llava, tmp_path):
    vlm = tiny_llava
    _hb_images(tmp_path / "hb")
    task = f"vsi.hallusionbench@images={tmp_path / 'hb'},questions={HB_JSON},perturbation=whole,verbal_conf=0"
    out = tmp_path / "run"
    env = {"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")}
    base = ["run", "--model", f"llava=hf:{vlm}", "--task", task, "--condition", "image", "--condition",
            "image_withheld", "--out", str(out), "--no-progress"]
    p = cli(*base, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    rule_only = (out / "scores.csv").read_text().splitlines()
    assert not (out / "judgments.jsonl").exists() and not any("@judge" in l for l in rule_only)

    with GlitchServer(lambda body, n: (200, chat_json(_verdict_for(body)))) as srv:
        judge = f"gpt=openai-compatible:{srv.url}#judge-model"
        p = cli(*base, "--judge", judge, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        asked = len([b for b in srv.requests if "messages" in b])
        # 5 image questions answered by llava + 4 no-image questions answered by llava[image_withheld]
        assert asked == 9
        lines = [json.loads(l) for l in (out / "judgments.jsonl").read_text().splitlines()]
        assert len(lines) == 9 and {x["model"] for x in lines} == {"llava", "llava[image_withheld]"}
        assert sorted(x["verdict"] for x in lines) == ["correct"] * 4 + ["incorrect"] * 2 + ["unclear"] * 3
        assert all(x["judge"] == "gpt" and x["judge_version"] and x["judge_prompt_hash"] for x in lines)
        judged = (out / "scores.csv").read_text().splitlines()
        # the rule-based rows byte-identical, in the same order; the judge rows added, named @judge
        assert [l for l in judged if "@judge" not in l] == rule_only
        rows = {r["metric"]: r for r in csv.DictReader(judged) if r["metric"].endswith("@judge")}
        for m in ("hallusionbench.aAcc@judge", "hallusionbench.fAcc@judge", "hallusionbench.qAcc@judge",
                  "hallusionbench.aAcc[VD/illusion]@judge", "hallusionbench.aAcc@image_questions@judge"):
            assert m in rows, sorted(rows)
        # the fake judge: illusion answers all correct -> VD aAcc 1
        assert float(rows["hallusionbench.aAcc[VD/illusion]@judge"]["value"]) == 1.0
        # the chart question about China is judged incorrect with and without the image: qAcc[VS] < 1
        assert float(rows["hallusionbench.qAcc[VS/chart]@judge"]["value"]) == pytest.approx(3 / 4)

        # a rerun asks the judge nothing again
        p = cli(*base, "--judge", judge, env=env)
        assert p.returncode == 0, p.stdout + p.stderr
        assert len([b for b in srv.requests if "messages" in b]) == asked
        # a second judge in the same run directory is refused before anything is asked
        p = cli(*base, "--judge", f"other=openai-compatible:{srv.url}#judge-model", env=env)
        assert p.returncode != 0 and "would mix two readings" in p.stdout + p.stderr
        assert len([b for b in srv.requests if "messages" in b]) == asked

    # scores from the files alone (no model, no judge): the same table
    p = cli("score", str(out), "--out", str(tmp_path / "rescored.csv"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "rescored.csv").read_text().splitlines() == judged

    p = cli("report", str(out), "--out", str(tmp_path / "report.html"))
    assert p.returncode == 0, p.stdout + p.stderr
    html = (tmp_path / "report.html").read_text()
    rule = html[html.index('id="native-hallusionbench"'):html.index('id="native-hallusionbench-judge"')]
    judge_table = html[html.index('id="native-hallusionbench-judge"'):]
    assert "rule-based reading (the default)" in rule and "@judge" not in rule
    assert "HallusionBench (judge reading)" in judge_table and "Judge: gpt (" in judge_table
    assert "hallusionbench.aAcc@judge" in judge_table


def test_a_local_hf_vlm_asked_without_an_image_is_a_judge_too(tiny_llava, tmp_path):
    """``--judge hf:DIR``: a local VLM reads the judge prompt as text only; its raw replies (whatever
    a random-weight model says) are recorded with their verdicts and the weights' version."""
    from perceptbench.models.registry import load_model
    from perceptbench.records import read_records
    from perceptbench.tasks import get_task
    from perceptbench.vsi.judge import judge_run, parse_verdict, read_judgments

    _hb_images(tmp_path / "hb")
    task = f"vsi.hallusionbench@images={tmp_path / 'hb'},questions={HB_JSON},perturbation=whole,verbal_conf=0"
    out = tmp_path / "run"
    p = cli("run", "--model", f"llava=hf:{tiny_llava}", "--task", task, "--condition", "image", "--condition",
            "image_withheld", "--out", str(out), "--no-progress", env={"PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 0, p.stdout + p.stderr
    written, failed = judge_run(out, f"tj=hf:{tiny_llava}", [get_task(task)], 0, read_records(out / "records.jsonl"),
                                load_model)
    assert (written, failed) == (9, 0)
    got = read_judgments(out / "judgments.jsonl")
    assert len(got) == 9
    for j in got.values():
        assert isinstance(j["reply"], str) and j["verdict"] == parse_verdict(j["reply"])
        assert j["judge"] == "tj" and "sha256" in j["judge_version"]
