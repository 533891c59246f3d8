"""Choosing a respondent from what the task and the model declare: the human panel is a
respondent like any model, and a model that declares no next-token distribution (the
Anthropic Messages API) gets recorded skips on a VSI task, never a request."""

from __future__ import annotations

import json

from perceptbench.models.api import AnthropicVLM
from perceptbench.respond import HUMAN_PANEL, model_kind, respondent_for
from perceptbench.respond.human import HumanRespondent
from perceptbench.runner import RunConfig, run
from perceptbench.tasks import get_task


def _records(out):
    return [json.loads(ln) for ln in (out / "records.jsonl").read_text().splitlines()]


def test_the_human_panel_is_chosen_from_the_registry_like_a_model():
    task = get_task("closure.nat.silhouette")
    assert model_kind(HUMAN_PANEL) == "human"
    assert isinstance(respondent_for(task, HUMAN_PANEL), HumanRespondent)


def test_human_records_are_written_through_the_respondent_and_counted_on_resume(tmp_path, monkeypatch):
    calls = []
    original = HumanRespondent.run

    def spy(self, job):
        calls.append((job.task.task_id, job.model, len(job.pending)))
        return original(self, job)

    monkeypatch.setattr(HumanRespondent, "run", spy)
    out = tmp_path / "run"
    cfg = RunConfig(out=out, tasks=("closure.nat.silhouette",), models=("efficientnet-lite0",))
    first = run(cfg, progress=False)
    task = get_task("closure.nat.silhouette")
    assert calls == [("closure.nat.silhouette", HUMAN_PANEL, len(task.stimuli(0)))]
    humans = [r for r in _records(out) if r["model_family"] == "human"]
    assert first.human_written == len(humans) > 0 and first.human_skipped == 0
    again = run(cfg, progress=False)  # resume: every human record is there already
    assert again.human_written == 0 and again.human_skipped == len(humans)
    assert len([r for r in _records(out) if r["model_family"] == "human"]) == len(humans)


def test_run_stimulus_keeps_only_the_human_records_of_those_stimuli(tmp_path):
    task = get_task("closure.nat.silhouette")
    sid = next(s.stimulus_id for s in task.stimuli(0) if s.split == "test")
    out = tmp_path / "run"
    run(RunConfig(out=out, tasks=("closure.nat.silhouette",), models=("efficientnet-lite0",), stimuli=(sid,)),
        progress=False)
    humans = [r for r in _records(out) if r["model_family"] == "human"]
    assert humans and {r["stimulus_id"] for r in humans} == {sid}


def test_a_model_without_a_next_token_distribution_is_recorded_as_skipped_on_vsi(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    # nothing listens on port 9: any request would fail, so skips prove no request was made
    claude = AnthropicVLM("claude-test", base_url="http://127.0.0.1:9", name="claude", max_retries=0)
    out = tmp_path / "run"
    summary = run(RunConfig(out=out, tasks=("vsi.salbench.syn@n=2",), models=("claude=anthropic:claude-test",)),
                  progress=False, load_model=lambda arg: claude)
    recs = [r for r in _records(out) if r["model"] == "claude"]
    assert recs and summary.written == len(recs)
    assert all(r["response"] is None for r in recs)
    assert {r["run_meta"]["skipped"] for r in recs} == {"claude exposes no next-token distribution"}


def test_a_condition_no_respondent_serves_for_the_model_says_which_model_it_needs():
    import pytest

    from perceptbench.models.default import EfficientNetLiteEncoder

    with pytest.raises(ValueError) as e:
        respondent_for(get_task("similarity.chart.mark_color"), EfficientNetLiteEncoder(), "image_withheld",
                       "efficientnet-lite0")
    assert str(e.value) == ("similarity.chart.mark_color under condition 'image_withheld': no respondent for "
                            "efficientnet-lite0 (an image encoder); this condition needs a VLM")


def test_a_model_name_in_the_form_of_a_condition_label_is_refused():
    """``MODEL[condition]`` is how a condition's records name their respondent; a model named so
    would be read back as another model under a condition, so it is refused before any run."""
    import pytest

    from perceptbench.core.conditions import parse_respondent_label, respondent_label
    from perceptbench.models.registry import parse_model_arg

    # SHORT[...]=SPEC declares model metadata (issue 22), so a bracketed short name is refused there,
    # naming the KEY=VALUE form; a name made from a spec never carries brackets
    for arg in ("m[image_withheld]=hf:/x", "m[v2]=hf:/x"):
        with pytest.raises(ValueError, match=r"is not KEY=VALUE"):
            parse_model_arg(arg)
    assert "[" not in parse_model_arg("hf:/tmp/m[v2]")[0]
    name = "m[x-1]"  # not a [word]: the label rule reads it back as itself
    assert parse_respondent_label(respondent_label(name, "image_withheld")) == (name, "image_withheld")
    assert parse_respondent_label(name) == (name, "image")
