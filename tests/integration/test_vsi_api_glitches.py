"""VSI on an OpenAI-compatible provider that glitches (issue 20 items 1 and 2), on the fake server
of ``tests/helpers/servers.py`` answering with image-dependent logprobs
(:func:`integration.test_vsi_api._logprobs`), run in-process with short retry backoffs.

Before: one response without logprobs marked every record of the run ``skipped`` (finished, so
never asked again); a positive log-probability was stored and made every later ``score`` fail."""

from __future__ import annotations

import json
import math

import pytest

from perceptbench.models.api import OpenAICompatibleVLM
from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_records

from helpers.servers import GlitchServer
from integration.test_vsi_api import _first_image, _logprobs

TASK = "vsi.salbench.syn@n=4,verbal_conf=0"
FAST = dict(backoff_initial=0.01, backoff_max=0.05, retry_after_max=0.2)


class Provider:
    """Answers like ``LogprobServer`` of test_vsi_api; ``glitch(body, n, lps)`` may replace an
    answer: it returns None (answer normally) or the response body to send instead."""

    def __init__(self, glitch=lambda body, n, lps: None):
        self.glitch = glitch

    def __call__(self, body, n):
        img = _first_image(body)
        lps = _logprobs(img) if img is not None else [("A", 0.0)]
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": lps[0][0]}}
        if body.get("logprobs"):
            k = int(body.get("top_logprobs") or 0)
            choice["logprobs"] = {"content": [{"token": lps[0][0], "logprob": lps[0][1], "top_logprobs": [
                {"token": t, "logprob": v} for t, v in lps[:k]]}]}
        instead = self.glitch(body, n, lps)
        return 200, instead if instead is not None else {"id": "x", "model": "m", "choices": [choice]}


def _run(srv, out, max_retries=2):
    def load(arg):
        return OpenAICompatibleVLM(srv.url, "m", name="api", max_retries=max_retries, query_server=False, **FAST)

    cfg = RunConfig(out=out, tasks=(TASK,), models=(f"api=openai-compatible:{srv.url}#m",), batch_size=4,
                    cache_mode="off")
    return run(cfg, progress=False, load_model=load)


def _recs(out):
    return [r for r in read_records(out / "records.jsonl", allow_torn_tail=False) if r.model == "api"]


def _no_logprobs(body):
    return {"id": "x", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"}}]}


def test_one_response_without_logprobs_is_retried_and_no_trial_is_skipped(tmp_path):
    logprob_requests = []

    def glitch(body, n, lps):
        if body.get("logprobs"):
            logprob_requests.append(n)
            if len(logprob_requests) == 3:  # the third logprobs answer lacks them, once
                return _no_logprobs(body)
        return None

    with GlitchServer(Provider(glitch)) as srv:
        _run(srv, tmp_path / "run")
    recs = _recs(tmp_path / "run")
    assert len(recs) == 12 and not any(r.run_meta.model_extra.get("skipped") for r in recs)
    assert len(logprob_requests) == 12 + 1  # one retry


def test_a_trial_whose_logprobs_never_arrive_stays_pending_and_the_next_run_asks_it(tmp_path):
    """Logprobs arrive for every request but those of one image: that trial (after the retries)
    writes no record, the others are kept, and the next run asks only it."""
    state = {"broken": None, "on": True}

    def glitch(body, n, lps):
        if not body.get("logprobs") or not state["on"]:
            return None
        key = json.dumps(body["messages"][0]["content"][0])
        if state["broken"] is None and n > 2:  # an image seen after logprobs have arrived once
            state["broken"] = key
        return _no_logprobs(body) if key == state["broken"] else None

    with GlitchServer(Provider(glitch)) as srv:
        _run(srv, tmp_path / "run")
        first = _recs(tmp_path / "run")
        assert len(first) == 11 and not any(r.run_meta.model_extra.get("skipped") for r in first)
        state["on"] = False  # the provider recovers: the rerun asks the missing trial only
        before = len(srv.requests)
        _run(srv, tmp_path / "run")
        asked = srv.requests[before:]
    recs = _recs(tmp_path / "run")
    assert len(recs) == 12 and {r.trial_id for r in first} < {r.trial_id for r in recs}
    assert 1 <= len(asked) <= 2 and all(json.dumps(b["messages"][0]["content"][0]) == state["broken"] for b in asked)


def test_a_provider_that_never_returns_logprobs_is_declared_unsupported_after_three_requests(tmp_path):
    with GlitchServer(Provider(lambda body, n, lps: _no_logprobs(body))) as srv:
        _run(srv, tmp_path / "run")
        n_asked = len(srv.requests)
    recs = _recs(tmp_path / "run")
    assert len(recs) == 12 and all("consistently: 3 requests in a row" in r.run_meta.model_extra["skipped"]
                                   for r in recs)
    assert n_asked == 3  # a server that never returned logprobs is not retried, nor asked 12 times
    rows = [r for r in score_records(recs) if r.model == "api"]
    assert [r.metric for r in rows] == ["skipped"]


@pytest.mark.parametrize("bad, why", [
    (0.7, "+0.7 at token"),                 # a positive log-probability (max_prob 2.01 before)
    (float("nan"), "+nan at token"),        # NaN (JSON NaN): stored as null before
    (float("-inf"), "-inf at token"),       # -Infinity
])
def test_a_bad_distribution_is_a_recorded_skip_of_that_trial_and_the_rest_is_scored(tmp_path, bad, why):
    hit = {}

    def glitch(body, n, lps):
        if body.get("logprobs") and not hit:
            hit["n"] = n
            k = int(body["top_logprobs"])
            return {"id": "x", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"},
                    "logprobs": {"content": [{"token": lps[0][0], "logprob": bad, "top_logprobs": [
                        {"token": t, "logprob": bad if i == 0 else v} for i, (t, v) in enumerate(lps[:k])]}]}}]}
        return None

    with GlitchServer(Provider(glitch)) as srv:
        _run(srv, tmp_path / "run")
    recs = _recs(tmp_path / "run")
    skipped = [r for r in recs if r.run_meta.model_extra.get("skipped")]
    assert len(recs) == 12 and len(skipped) == 1
    s = skipped[0].run_meta.model_extra
    assert s["skip_scope"] == "trial" and s["skipped"].startswith("invalid next-token distribution") and why in s["skipped"]
    assert all(v["max_prob"] is None or v["max_prob"] <= 1 for v in (r.run_meta.model_extra["vsi"] for r in recs))
    rows = {r.metric: r for r in score_records(recs) if r.model == "api"}
    assert "skipped" not in rows and rows["n_parse_null"].n == 3  # the 3 other clean answers are scored
    flagged = [(m, r) for m, r in rows.items() if m.startswith("n_flagged")]
    assert len(flagged) >= 1 and all("skipped_trial" in r.note for _, r in flagged)
    assert sum(r.value for _, r in flagged) in (1.0, 2.0)  # a clean skip leaves out its sample in both cells
    assert all(math.isfinite(rows[f"vsi_median[{c},sigma=20]"].value) for c in ("region_blur", "whole_blur"))


def test_a_non_answer_top_token_and_a_disagreeing_greedy_answer_are_flagged_per_trial(tmp_path):
    def glitch(body, n, lps):
        if body.get("logprobs") or n != 0:
            if body.get("logprobs") and n == 0:  # the first clean distribution is measured before the answer
                return {"id": "x", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant",
                        "content": "<think>"}, "logprobs": {"content": [{"token": "<think>", "logprob": -0.1,
                        "top_logprobs": [{"token": "<think>", "logprob": -0.1}, {"token": "\n", "logprob": -2.5}]}]}}]}
            return None
        return None

    def mismatch(body, n, lps):
        if not body.get("logprobs") and body["max_tokens"] > 1:  # every greedy answer disagrees with its logprobs
            other = next(t for t, _ in lps if t.strip() not in (lps[0][0].strip(), ""))
            return {"id": "x", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant",
                                                                                  "content": other}}]}
        return glitch(body, n, lps)

    with GlitchServer(Provider(mismatch)) as srv:
        _run(srv, tmp_path / "run")
    recs = _recs(tmp_path / "run")
    clean = [r for r in recs if r.run_meta.model_extra["vsi"]["condition"] == "clean"]
    flags = [r.run_meta.model_extra["vsi"].get("flags", []) for r in clean]
    assert sum("non_answer_position" in f for f in flags) == 1
    assert sum("answer_token_mismatch" in f for f in flags) == 3  # the <think> one has no answer token to compare
    rows = {r.metric: r for r in score_records(recs) if r.model == "api"}
    assert rows["n_answer_token_mismatch"].value == 3.0
    for c in ("region_blur", "whole_blur"):
        assert "1 non_answer_position" in rows[f"n_flagged[{c},sigma=20]"].note
        assert rows[f"vsi_median[{c},sigma=20]"].n == 3


def test_a_task_of_fewer_requests_than_the_threshold_all_without_logprobs_is_declared_unsupported_too(tmp_path):
    def load(arg):
        return OpenAICompatibleVLM(srv.url, "m", name="api", max_retries=2, query_server=False, **FAST)

    with GlitchServer(Provider(lambda body, n, lps: _no_logprobs(body))) as srv:
        cfg = RunConfig(out=tmp_path / "run", tasks=("vsi.salbench.syn@n=1,perturbation=whole,verbal_conf=0",),
                        models=(f"api=openai-compatible:{srv.url}#m",), cache_mode="off")
        run(cfg, progress=False, load_model=load)
        n_asked = len(srv.requests)
    recs = _recs(tmp_path / "run")
    assert n_asked == 2 and len(recs) == 2
    assert all("consistently: all 2 requests" in r.run_meta.model_extra["skipped"] for r in recs)


def test_a_call_that_fails_for_good_keeps_the_finished_trials_of_its_chunk_and_the_rerun_asks_the_rest(tmp_path):
    from perceptbench.models.base import PartialAnswers

    state = {"bad": None, "on": True}

    def glitch(body, n, lps):
        if body.get("logprobs") or not state["on"]:
            return None
        key = json.dumps(body["messages"][0]["content"][0])
        state["bad"] = state["bad"] or key  # the first greedy answer asked fails for good
        return "" if key == state["bad"] else None  # an empty 200 body: malformed, retried, then an error

    with GlitchServer(Provider(glitch)) as srv:
        with pytest.raises(PartialAnswers, match="malformed after 3 attempts"):
            _run(srv, tmp_path / "run")
        first = _recs(tmp_path / "run")
        assert len(first) == 3 and all(r.run_meta.model_extra["vsi"]["condition"] == "clean" for r in first)
        state["on"] = False
        before = len(srv.requests)
        _run(srv, tmp_path / "run")
        asked = srv.requests[before:]
    assert len(_recs(tmp_path / "run")) == 12
    # the failed clean trial (its distribution and answer) and the 8 perturbed distributions: nothing else
    assert sum(not b.get("logprobs") for b in asked) == 1 and len(asked) == 1 + 1 + 8
