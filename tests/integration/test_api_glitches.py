"""A battery run against an OpenAI-compatible provider that glitches (issue 20 item 2), on the
fake server of ``tests/helpers/servers.py``, in-process with short retry backoffs.

Before: a 200 response with truncated JSON or an empty ``choices`` list stopped the run, and each
stop discarded the answers of its batch that had arrived."""

from __future__ import annotations

import json

import pytest

from perceptbench.models.api import OpenAICompatibleVLM
from perceptbench.models.base import PartialAnswers
from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.tasks import get_task

from helpers.servers import GlitchServer, chat_json

TASK = "similarity.chart.mark_color"
FAST = dict(backoff_initial=0.01, backoff_max=0.05, retry_after_max=0.2)


@pytest.fixture(scope="module")
def stimuli():
    return [s.stimulus_id for s in get_task(TASK).stimuli(0) if s.split == "test"][:8]


def _run(srv, out, stimuli, max_retries=2):
    def load(arg):
        return OpenAICompatibleVLM(srv.url, "m", name="api", max_retries=max_retries, concurrency=4,
                                   query_server=False, **FAST)

    cfg = RunConfig(out=out, tasks=(TASK,), models=(f"api=openai-compatible:{srv.url}#m",), batch_size=4,
                    stimuli=tuple(stimuli), cache_mode="off")
    return run(cfg, progress=False, load_model=load)


def _answers(out):
    return {r.stimulus_id: r.raw_output for r in read_records(out / "records.jsonl", allow_torn_tail=False)
            if r.model == "api"}


def _prompt_of(body) -> str:
    return json.dumps(body["messages"][0]["content"][0])[:200]  # the image part: one per stimulus


def test_glitches_in_200_responses_are_retried_and_the_run_finishes(tmp_path, stimuli):
    glitches = {2: (200, json.dumps(chat_json("2"))[:30]),                 # truncated JSON
                5: (200, {"id": "x", "object": "chat.completion", "choices": []}),  # empty choices
                6: (503, {"error": "overloaded"})}

    with GlitchServer(lambda body, n: glitches.get(n, (200, chat_json("The odd one is 2.")))) as srv:
        _run(srv, tmp_path / "run", stimuli)
        n = len(srv.requests)
    assert len(_answers(tmp_path / "run")) == 8 and n == 8 + 3


def test_a_request_that_fails_for_good_keeps_its_batch_and_the_rerun_asks_only_it(tmp_path, stimuli):
    state = {"bad": None, "on": True}

    def respond(body, n):
        key = _prompt_of(body)
        if state["on"] and (state["bad"] is None and n == 5 or state["bad"] == key):
            state["bad"] = key
            return 500, {"error": "boom"}
        return 200, chat_json("The odd one is 2.")

    with GlitchServer(respond) as srv:
        with pytest.raises(PartialAnswers, match=r"HTTP 500 .* \(3 of 4 answers of the batch arrived and are kept\)"):
            _run(srv, tmp_path / "run", stimuli, max_retries=1)
        assert len(_answers(tmp_path / "run")) == 7  # the first batch and 3 of the second
        state["on"] = False
        before = len(srv.requests)
        _run(srv, tmp_path / "run", stimuli)
        asked = [_prompt_of(b) for b in srv.requests[before:]]
    assert asked == [state["bad"]] and len(_answers(tmp_path / "run")) == 8
