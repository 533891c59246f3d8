"""Few-shot examples never show the query: the same image under two stimulus ids (it happens
in real releases) is excluded by image content, not only by id (issue 7 item 5)."""

import json
import shutil

import numpy as np
from PIL import Image

from perceptbench.seeding import image_sha256
from perceptbench.tasks import get_task

LABELS = ["Shape", "Size"] * 4


def _annotations(tmp_path):
    rng = np.random.default_rng(0)
    rows = []
    for i, lab in enumerate(LABELS):
        p = tmp_path / f"img{i}.png"
        Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(p)
        rows.append({"image_id": f"x{i}", "image": p.name, "answer": lab, "split": "nat"})
    # one photograph released twice, under two ids (a re-encoded copy with the same pixels),
    # with a label no other stimulus has, so a label-balanced draw always picks it when it is in the pool
    Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)).save(tmp_path / "dup_a.png")
    shutil.copy(tmp_path / "dup_a.png", tmp_path / "dup_b.png")
    rows += [{"image_id": "dup-a", "image": "dup_a.png", "answer": "Color", "split": "nat"},
             {"image_id": "dup-b", "image": "dup_b.png", "answer": "Color", "split": "nat"}]
    ann = tmp_path / "ann.json"
    ann.write_text(json.dumps(rows))
    return ann


def test_duplicated_image_under_two_ids_is_never_its_own_example(tmp_path):
    ann = _annotations(tmp_path)
    split_cases = 0
    for seed in range(12):
        task = get_task(f"salbench.detection.nat@source={ann},probe_fraction=0.7,shots=3")
        stimuli = task.stimuli(seed)
        splits = {s.stimulus_id: s.split for s in stimuli}
        if {splits["dup-a"], splits["dup-b"]} == {"test", "probe_train"}:
            split_cases += 1
        for q in (s for s in stimuli if s.split == "test"):
            imgs, prompt, extra = task.vlm_request(q, seed)
            query_sha = image_sha256(imgs[-1])
            shown = [image_sha256(im) for im in imgs[:-1]]
            assert query_sha not in shown, (seed, q.stimulus_id, extra["fewshot_stimulus_ids"])
            assert len(set(shown)) == len(shown)  # one image is never shown as two examples either
            assert q.stimulus_id not in extra["fewshot_stimulus_ids"]
    assert split_cases >= 2  # the duplicate straddled the split on several seeds: the check was exercised


def test_visual_referring_compares_the_image_before_the_box(tmp_path):
    """Two ids of one photograph with different boxes render differently (the red box), but it is
    still the same photograph: its content hash is taken before the box is drawn."""
    task = get_task("salbench.visual_referring.syn@n=3,n_probe=3")
    s = [x for x in task.stimuli(0) if x.split == "test"][0]
    assert task._content_sha256(s) != image_sha256(s.render())  # the box is not part of the content hash
    assert task._content_sha256(s) == image_sha256(s._source_image())
