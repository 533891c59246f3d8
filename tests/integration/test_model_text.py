"""Any text a model returns is stored (issue 20 item 4): a lone surrogate (half an emoji, as a
streaming server can split one) neither aborts a run nor poisons the response cache; the text
is normalised as :func:`perceptbench.core.text.model_text` documents."""

from __future__ import annotations

import json
import zlib

from perceptbench.records import read_records

from helpers.cli import cli
from helpers.servers import GlitchServer, chat_json

TASK = "similarity.chart.mark_color"

# the JSON escapes as a server sends them: a lone high surrogate, and a pair split in two escapes
LONE = '"The odd one out is 2 \\ud83d"'
PAIR = '"2 \\ud83d\\ude00"'


def _answer(raw_text_json: str) -> str:
    body = json.dumps(chat_json("PLACEHOLDER"))
    return body.replace('"PLACEHOLDER"', raw_text_json)


def _run(srv, out, cache):
    return cli("run", "--model", f"api=openai-compatible:{srv.url}#m", "--task", TASK, "--out", out,
               "--no-progress", env={"PERCEPTBENCH_RESPONSE_CACHE": str(cache)})


def test_a_lone_surrogate_in_an_answer_is_stored_and_the_rerun_is_served_from_the_cache(tmp_path):
    def respond(body, n):  # deterministic per request (the rerun's stale-cache check re-asks one)
        return 200, _answer(LONE if zlib.crc32(json.dumps(body).encode()) % 2 else PAIR)

    with GlitchServer(respond) as srv:
        p = _run(srv, tmp_path / "run", tmp_path / "cache")
        assert p.returncode == 0, p.stdout + p.stderr
        asked = len(srv.requests)
        recs = [r for r in read_records(tmp_path / "run" / "records.jsonl") if r.model == "api"]
        assert recs and len(recs) == asked
        raws = {r.raw_output for r in recs}
        # lone half -> U+FFFD; a pair sent as two escapes -> the emoji it encodes
        assert raws == {"The odd one out is 2 \ufffd", "2 \U0001f600"}
        assert {r.response for r in recs if r.raw_output.startswith("The odd")} == {2}
        # the cache holds the stored text: a rerun into a new directory asks the model nothing more
        # (one re-ask: the stale-cache check of a self-hosted model known by name only)
        p = _run(srv, tmp_path / "again", tmp_path / "cache")
        assert p.returncode == 0, p.stdout + p.stderr
        assert len(srv.requests) == asked + 1
        again = {r.trial_id: r.raw_output for r in read_records(tmp_path / "again" / "records.jsonl")
                 if r.model == "api"}
        assert again == {r.trial_id: r.raw_output for r in recs}
