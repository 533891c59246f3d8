"""HallusionBench's judge reading (perceptbench.vsi.judge): the benchmark's prompt and verdict rule,
the judgments sidecar (append-only, resumed, one judge per run), and a judge that times out (a null
verdict, recorded, asked again by the rerun), against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import time

import pytest
from PIL import Image

from helpers.paths import FIXTURES
from helpers.records import plant_vsi_record
from helpers.servers import GlitchServer, chat_json
from perceptbench.seeding import text_hash
from perceptbench.tasks import get_task
from perceptbench.vsi.judge import (JUDGE_TEMPLATE_HASH, check_same_judge, judge_prompt, judge_run, parse_verdict,
                                    read_judgments)

HB_JSON = FIXTURES / "hallusionbench" / "HallusionBench.json"


@pytest.mark.parametrize("reply, verdict", [
    ("Incorrect.", "incorrect"), ("correct", "correct"), ("The prediction is CORRECT.", "correct"),
    ("incorrect, not correct", "incorrect"),  # "incorrect" wins, as in evaluate_by_chatgpt
    ("I cannot tell", "unclear"), ("", "unclear"), (None, None)])
def test_a_judge_reply_is_read_as_hallusionbench_reads_gpt4s(reply, verdict):
    assert parse_verdict(reply) == verdict


def test_the_judge_prompt_is_the_benchmarks_with_question_reference_and_answer():
    p = judge_prompt("Is the left circle larger?", "The circles are the same size.", "Yes, it is.")
    assert p.startswith("Imagine you are an intelligent teacher.")
    assert "please generate \u201ccorrect\u201d" in p and 'please generate "unclear"' in p
    assert p.endswith("Question:Is the left circle larger?\nReference answer: The circles are the same size.\n"
                      "Prediction answer:Yes, it is.\nOutput:")
    assert judge_prompt("q", "r", None).endswith("Prediction answer:\nOutput:")


def test_read_judgments_keeps_the_latest_line_drops_a_torn_tail_and_names_a_bad_line(tmp_path):
    p = tmp_path / "judgments.jsonl"
    line = lambda t, v: json.dumps({"trial_id": t, "verdict": v, "judge": "j", "judge_version": "1"})  # noqa: E731
    p.write_text(line("a", None) + "\n" + line("a", "correct") + "\n" + line("b", "unclear") + "\n" + '{"trial_')
    got = read_judgments(p)
    assert {k: j["verdict"] for k, j in got.items()} == {"a": "correct", "b": "unclear"}
    assert read_judgments(tmp_path / "none.jsonl") == {}
    p.write_text(line("a", "yes") + "\n")
    with pytest.raises(ValueError, match=r"judgments.jsonl:1: field 'verdict' must be one of correct, incorrect, "
                                         r"unclear or null, got 'yes'"):
        read_judgments(p)


def test_a_second_judge_in_one_run_directory_is_refused(tmp_path):
    judged = {"a": {"trial_id": "a", "verdict": "correct", "judge": "gpt", "judge_version": "gpt-4@1",
                    "judge_template_hash": JUDGE_TEMPLATE_HASH}}
    check_same_judge(judged, "gpt", "gpt-4@1", tmp_path / "judgments.jsonl")  # the same judge: fine
    with pytest.raises(ValueError, match=r"holds judgments by judge 'gpt' .* --judge other .* would mix two readings"):
        check_same_judge(judged, "other", None, tmp_path / "judgments.jsonl")
    with pytest.raises(ValueError, match="would mix two readings"):
        check_same_judge(judged, "gpt", "gpt-4@2", tmp_path / "judgments.jsonl")


def _hb_task(tmp_path):
    for r in json.loads(HB_JSON.read_text()):
        if r["filename"]:
            p = tmp_path / "hb" / r["filename"].removeprefix("./")
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (8, 8)).save(p)
    return get_task(f"vsi.hallusionbench@images={tmp_path / 'hb'},questions={HB_JSON}")


def _answers(task):
    """m's clean answers to the 5 image questions and m[image_withheld]'s to the 4 asked without an image."""
    recs = []
    for vs in task.load(0):
        if vs.meta.get("no_image"):
            recs.append(plant_vsi_record(task, "image_withheld", vs.stimulus_id, [1], [0.0], raw_output="No.",
                                         model="m[image_withheld]", external=vs.meta, no_image=True))
        else:
            recs.append(plant_vsi_record(task, "clean", vs.stimulus_id, [1], [0.0], response="yes",
                                         raw_output="Yes, it is.", external=vs.meta))
    return recs


def _judge(srv, **kw):
    from perceptbench.models.api import OpenAICompatibleVLM

    return lambda arg: OpenAICompatibleVLM(srv.url, "judge-model", name="gpt", query_server=False, backoff_initial=0.01,
                                           backoff_max=0.02, **kw)


def test_judge_run_writes_one_recorded_verdict_per_answer_and_a_timeout_is_a_null_verdict_asked_again(tmp_path):
    task = _hb_task(tmp_path)
    recs = _answers(task)
    slow = {"on": True}

    def respond(body, n):
        text = body["messages"][0]["content"]
        text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
        if slow["on"] and "Question:Is the right orange circle larger" in text:
            time.sleep(1.0)  # past the judge's timeout
        return 200, chat_json("Incorrect." if "Prediction answer:No." in text else "correct")

    run = tmp_path / "run"
    run.mkdir()
    with GlitchServer(respond) as srv:
        written, failed = judge_run(run, f"gpt=openai-compatible:{srv.url}#judge-model", [task], 0, recs,
                                    _judge(srv, timeout=0.3, max_retries=0), batch_size=4)
        assert (written, failed) == (9, 1)
        lines = [json.loads(x) for x in (run / "judgments.jsonl").read_text().splitlines()]
        assert len(lines) == 9 and {x["trial_id"] for x in lines} == {r.trial_id for r in recs}
        late = [x for x in lines if x["reply"] is None]
        assert len(late) == 1 and late[0]["verdict"] is None and late[0]["error"]
        ok = [x for x in lines if x["reply"] is not None]
        assert {x["verdict"] for x in ok if x["model"] == "m[image_withheld]"} == {"incorrect"}
        assert {x["verdict"] for x in ok if x["model"] == "m"} == {"correct"}
        for x in lines:  # what a verdict is traced back by
            assert x["judge"] == "gpt" and "judge-model" in x["judge_version"]
            assert x["judge_prompt_hash"] == text_hash(x["judge_prompt"]) and x["judge_template_hash"] == JUDGE_TEMPLATE_HASH
            assert x["judge_spec"] == f"gpt=openai-compatible:{srv.url}#judge-model" and x["judge_settings"]
        assert "Reference answer: The right orange circle is the same size" in late[0]["judge_prompt"]
        assert "Prediction answer:Yes, it is.\nOutput:" in late[0]["judge_prompt"]
        # the rerun asks only the answer without a reply, appends its new line and keeps the old one
        slow["on"] = False
        before = len(srv.requests)
        assert judge_run(run, f"gpt=openai-compatible:{srv.url}#judge-model", [task], 0, recs,
                         _judge(srv, timeout=0.3, max_retries=0)) == (1, 0)
        assert len(srv.requests) - before == 1
        assert len((run / "judgments.jsonl").read_text().splitlines()) == 10
        assert read_judgments(run / "judgments.jsonl")[late[0]["trial_id"]]["verdict"] == "correct"
        # a third run has nothing to ask: the judge is not even loaded
        assert judge_run(run, f"gpt=openai-compatible:{srv.url}#judge-model", [task], 0, recs,
                         lambda arg: pytest.fail("loaded")) == (0, 0)
