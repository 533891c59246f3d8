"""Majority vote over repetitions (seed 000 D.4): the vote, the tie rule, and the records."""

import pytest

from perceptbench.scorers.repetitions import aggregate_repetitions, majority_vote

from helpers.records import plant_record


@pytest.mark.parametrize("answers, want", [
    (["cat", "dog", "cat"], ("cat", False)),
    ([None, "dog", None], ("dog", False)),           # nulls are excluded, not votes
    ([None, None, None], (None, False)),             # every repetition null: the vote is null
    (["dog", "cat", "cat", "dog"], ("dog", True)),   # tie: the tied answer given first
    (["cat", "dog", "cat", "dog"], ("cat", True)),
    ([3, 4, None, 4], (4, False)),
    ([["a", "b"], ["b", "a"], ["a"]], (["a", "b"], False)),  # multilabel answers count as sets
])
def test_majority_vote(answers, want):
    assert majority_vote(answers) == want


def test_one_voted_record_per_stimulus_keeps_every_repetitions_answer():
    recs = [plant_record("t", stimulus_id=s, response=a, ground_truth="cat", rep=i, n_reps=3)
            for s, answers in (("s1", ["dog", "cat", "cat"]), ("s2", ["dog", None, "cow"]))
            for i, a in enumerate(answers)]
    plain = plant_record("t", stimulus_id="s3", response="cat", ground_truth="cat")
    out = aggregate_repetitions(recs[:3] + [plain] + recs[3:])
    assert [(r.stimulus_id, r.response, r.correct, r.rep) for r in out] == [
        ("s1", "cat", True, 0), ("s3", "cat", True, 0), ("s2", "dog", False, 0)]
    assert out[0].run_meta.model_extra["vote"] == {"n_reps": 3, "n_votes": 3, "tied": False,
                                                   "responses": ["dog", "cat", "cat"]}
    assert out[2].run_meta.model_extra["vote"]["tied"] and out[1] is plain
    assert aggregate_repetitions([plain]) == [plain]  # no repetitions: unchanged
