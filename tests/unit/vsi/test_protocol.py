"""The vsi.* tasks declare a Setting for every setting: `perceptbench tasks` lists real ranges,
bad values are one-line errors naming task, setting and the allowed values, and equal values
spelled differently are one task id."""

import pytest

from perceptbench.tasks import get_task
from perceptbench.tasks.registry import list_tasks

from helpers.cli import cli


def _vsi_classes():
    return [c for c in list_tasks() if c.base_id.startswith("vsi.")]


def test_every_vsi_setting_has_a_spec():
    classes = _vsi_classes()
    assert len(classes) == 8
    for cls in classes:
        for key in cls.defaults:
            spec = cls.setting_spec(cls, key)
            assert spec is not None, (cls.base_id, key)
            assert spec.describe() and spec.describe() != "any"


@pytest.mark.parametrize("task_id, words", [
    ("vsi.salbench.syn@sigma=0", ["sigma='0'", "a number > 0, in pixels"]),
    ("vsi.salbench.syn@sigma=-3", ["sigma='-3'", "> 0"]),
    ("vsi.salbench.syn@top_k=0", ["top_k='0'", "an integer in [1, inf)"]),
    ("vsi.salbench.syn@n=1.5", ["n='1.5'", "an integer"]),
    ("vsi.closure.nat.silhouette@n=some", ["n='some'", "or all"]),
    ("vsi.pope@limit=0", ["limit='0'", "or all"]),
    ("vsi.pope@box_threshold=2", ["box_threshold='2'", "a number in [0, 1]"]),
    ("vsi.mmstar@perturbation=region", ["perturbation='region'", "one of whole"]),
    ("vsi.hallusionbench@verbal_conf=yes", ["verbal_conf='yes'", "one of 0, 1"]),
])
def test_bad_settings_are_one_line_errors(task_id, words):
    with pytest.raises(ValueError) as e:
        get_task(task_id)
    msg = str(e.value)
    assert "\n" not in msg and task_id.split("@")[0] in msg
    for w in words:
        assert w in msg, msg


def test_normalised_spellings_are_one_task_id():
    assert get_task("vsi.salbench.syn@sigma=20.0,top_k=050").task_id == "vsi.salbench.syn"
    assert get_task("vsi.salbench.syn@sigma=1e1").task_id == "vsi.salbench.syn@sigma=10"
    assert get_task("vsi.closure.nat.silhouette@n=all").task_id == "vsi.closure.nat.silhouette"
    # an answer prefix is kept verbatim (its spaces are tokens)
    assert get_task("vsi.salbench.syn@answer_prefix= Answer:").answer_prefix == " Answer:"


def test_tasks_command_lists_ranges_for_vsi(tmp_path):
    p = cli("tasks", columns=400)
    assert p.returncode == 0, p.stderr
    out = " ".join(p.stdout.split())
    assert "sigma=20 (a number > 0, in pixels)" in out and "limit=all (an integer in [1, inf) or all)" in out


def test_every_vsi_benchmark_declares_its_answer_prefix_and_its_prompt_asks_for_the_answer_first():
    """Seed 002 D.1 ("the top-50 next-token distribution after answer-prefix tokens"): each VSI
    task's answer_prefix default is the one declared for it in ANSWER_PREFIXES (empty: the
    distribution is read right after the chat template's generation prompt), and the prompt
    that makes that position the first answer token ends with an answer instruction."""
    import re

    from perceptbench.vsi.benchmarks import ANSWER_PREFIXES, VSI_TASKS

    assert sorted(c.base_id for c in VSI_TASKS) == sorted(ANSWER_PREFIXES)
    for cls in VSI_TASKS:
        assert cls.defaults["answer_prefix"] == ANSWER_PREFIXES[cls.base_id], cls.base_id
        for prompt in cls.prompt_text.split(" | "):  # external tasks: the letter and the yes/no forms
            last = prompt.strip().splitlines()[-1]
            # the last sentence: "Answer ..." (or seed 000's silhouette "Choose exactly one: ...")
            assert re.search(r"(?:^|[.?] )(?:Answer\b|Choose exactly one:)[^?]*$", last), (cls.base_id, last)
    t = get_task("vsi.salbench.syn@n=3")
    assert t.answer_prefix == ANSWER_PREFIXES["vsi.salbench.syn"] and t.task_id == "vsi.salbench.syn@n=3"
    # a declared prefix other than the benchmark's is a setting of its own, named in the task id
    assert get_task("vsi.pope@answer_prefix=Answer:").task_id != get_task("vsi.pope").task_id


@pytest.mark.parametrize("order, blurs", [("in turn", 1), ("whole first", 2), ("region twice", 2)])
def test_blurred_stimuli_are_the_perturbations_of_the_clean_image_in_any_render_order(order, blurs, monkeypatch):
    """The region blur takes its pixels from the sample's whole blur (shared through a one-sample
    slot): every image equals perturb's own functions on the clean image, whatever the order, and
    rendered in turn (as the VSI run does) a sample is blurred once, not twice."""
    from PIL import Image

    from perceptbench.stimuli import perturb

    task = get_task("vsi.salbench.syn@n=3")
    filters = []
    real_filter = Image.Image.filter
    monkeypatch.setattr(Image.Image, "filter", lambda im, f: filters.append(f) or real_filter(im, f))
    by_sample: dict = {}
    for s in task.stimuli(0):
        by_sample.setdefault(s.meta["vsi"]["sample_id"], {})[s.meta["vsi"]["condition"]] = s
    for conds in by_sample.values():
        clean, region, whole = conds["clean"], conds["region_blur"], conds["whole_blur"]
        seq = {"in turn": [region, whole], "whole first": [whole, region],
               "region twice": [region, region, whole, whole]}[order]
        filters.clear()
        got = [(s, s.render()) for s in seq]
        assert len(filters) == blurs
        img = clean.render()
        box = tuple(region.meta["vsi"]["region_bbox"])
        want = {"region_blur": perturb.region_blur(img, perturb.box_mask(img.size, box), 20.0),
                "whole_blur": perturb.whole_blur(img, 20.0)}
        for s, im in got:
            assert im.tobytes() == want[s.meta["vsi"]["condition"]].tobytes()
