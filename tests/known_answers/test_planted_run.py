"""End-to-end value check (issue 14): a run whose scores are known in advance.

A stub encoder with planted embeddings runs the real silhouette task through the real runner
and scorer.  The stub embeds every probe-train image as the one-hot vector of its own class,
so the class prototypes are the 16 one-hot vectors; a test image of a class in CORRECT is
embedded as its own class (answered correctly), every other test image as the next class in
order (a planted error).  The expected accuracy, B against the observers' modal response and
both kappa forms are then computed here, independently of the scoring code, from the raw
human trials and plain Python arithmetic.
"""

from collections import Counter

import numpy as np
import pytest

from perceptbench.records import read_records
from perceptbench.runner import RunConfig, run
from perceptbench.scoring import score_records
from perceptbench.seeding import image_sha256
from perceptbench.stimuli import silhouettes
from perceptbench.tasks import get_task

CLASSES = list(silhouettes.CLASSES)
CORRECT = set(CLASSES[:6])  # 6 of 16 classes answered correctly: 30 of 80 test images


class PlantedEncoder:
    name = "planted"
    model_version = "planted:v1"
    family = "encoder"

    def __init__(self, by_sha):
        self.by_sha = by_sha  # image sha256 -> (class, split)

    def embed(self, images, batch_size=32):
        out = np.zeros((len(images), len(CLASSES)), np.float32)
        for row, im in zip(out, images):
            label, split = self.by_sha[image_sha256(im)]
            c = CLASSES.index(label)
            if split == "test" and label not in CORRECT:
                c = (c + 1) % len(CLASSES)
            row[c] = 1.0
        return out


def _mode(votes):
    c = Counter(v for v in votes if v != silhouettes.NO_ANSWER).most_common()
    return None if not c or (len(c) > 1 and c[0][1] == c[1][1]) else c[0][0]


def _kappa(m, h):
    n = len(m)
    c_obs = sum(a * b + (1 - a) * (1 - b) for a, b in zip(m, h)) / n
    pm, ph = sum(m) / n, sum(h) / n
    c_exp = pm * ph + (1 - pm) * (1 - ph)
    return (c_obs - c_exp) / (1 - c_exp)


@pytest.fixture(scope="module")
def planted_run(tmp_path_factory):
    task = get_task("closure.nat.silhouette")
    stimuli = task.stimuli(0)
    by_sha = {image_sha256(s.render()): (s.ground_truth, s.split) for s in stimuli}
    out = tmp_path_factory.mktemp("planted")
    run(RunConfig(out=out, tasks=["closure.nat.silhouette"], models=["planted=efficientnet-lite0"], seed=0),
        progress=False, load_model=lambda arg: PlantedEncoder(by_sha))
    records = read_records(out / "records.jsonl")
    rows = {(r.model, r.metric): r for r in score_records(records)}
    return stimuli, records, rows


def test_planted_answers_are_recorded(planted_run):
    stimuli, records, _ = planted_run
    model = {r.stimulus_id: r for r in records if r.model == "planted"}
    test = [s for s in stimuli if s.split == "test"]
    assert len(model) == len(test) == 80
    for s in test:
        want = s.ground_truth if s.ground_truth in CORRECT else CLASSES[(CLASSES.index(s.ground_truth) + 1) % 16]
        assert model[s.stimulus_id].response == want


def test_planted_scores_equal_independent_computation(planted_run):
    stimuli, records, rows = planted_run
    test_ids = sorted(s.stimulus_id for s in stimuli if s.split == "test")
    truth = {s.stimulus_id: s.ground_truth for s in stimuli}
    votes = {sid: [] for sid in test_ids}
    observers: dict[str, dict[str, int]] = {}
    for t in silhouettes.observer_trials():  # the raw published trials, read without the scorer
        if t.stimulus_id in votes:
            votes[t.stimulus_id].append(t.response)
            observers.setdefault(t.subject, {})[t.stimulus_id] = int(t.response == t.category)
    assert len(observers) == 10
    pred = {sid: (truth[sid] if truth[sid] in CORRECT else CLASSES[(CLASSES.index(truth[sid]) + 1) % 16])
            for sid in test_ids}
    m = [int(pred[sid] == truth[sid]) for sid in test_ids]
    # accuracy: 6 classes x 5 test images each = 30 of 80
    assert sum(m) == 30
    assert rows[("planted", "accuracy")].value == pytest.approx(30 / 80, abs=1e-12)
    modal = {sid: _mode(votes[sid]) for sid in test_ids}
    with_mode = [sid for sid in test_ids if modal[sid] is not None]
    b = sum(pred[sid] == modal[sid] for sid in with_mode) / len(with_mode)
    assert rows[("planted", "B")].value == pytest.approx(b, abs=1e-12)
    assert rows[("planted", "B")].n == len(with_mode)
    p = [sum(o[sid] for o in observers.values()) / 10 for sid in test_ids]
    assert rows[("planted", "kappa_aggregate")].value == pytest.approx(_kappa(m, p), abs=1e-12)
    pairwise = [_kappa(m, [o[sid] for sid in test_ids]) for o in observers.values()]
    assert rows[("planted", "kappa_pairwise")].value == pytest.approx(float(np.mean(pairwise)), abs=1e-12)
    # the CI brackets the estimate and is not degenerate
    r = rows[("planted", "kappa_aggregate")]
    assert r.ci_low < r.value < r.ci_high
