"""Known answer: a task scored on repetitions is scored on their majority vote (seed 000 D.4).

Planted: model ``m`` answers the first six test stimuli of the series-count task three times each
(``rep`` 0..2, ``n_reps`` 3); by hand, the votes are right on stimuli 0, 1 (2 of 3 right), 4 (tie,
the right answer given first) and wrong on 2 (2 of 3 wrong), 3 (tie, a wrong answer first) and 5 (every
repetition null: a null vote, excluded).  Accuracy = 3 right / 5 voted = 0.6, whereas the 18
repetitions scored as trials would give 7 / 15."""

import math

from perceptbench.scoring import score_records
from perceptbench.tasks import get_task

from helpers.records import plant_record

TASK = "similarity.chart.series_count"


def _planted():
    task = get_task(TASK)
    test = [s for s in task.stimuli(0) if s.split == "test"][:6]
    R, W, N = "right", "wrong", None
    plan = [(R, R, W), (W, R, R), (W, R, W), (W, R, N), (R, W, N), (N, N, N)]
    recs = []
    for s, reps in zip(test, plan):
        for i, how in enumerate(reps):
            ans = None if how is None else s.ground_truth if how == "right" else s.ground_truth + 1
            recs.append(plant_record(task, stimulus_id=s.stimulus_id, response=ans, ground_truth=s.ground_truth,
                                     manipulated_value=s.manipulated_value, rep=i, n_reps=3,
                                     raw_output="" if ans is None else str(ans), prompt_id=task.prompt_id,
                                     prompt_hash=task.prompt_hash, split=s.split,
                                     settings={"temperature": 0.7, "do_sample": True},
                                     parse={"rule": "planted", "ambiguous": False, "mode": "default"}))
    return recs


def test_accuracy_is_the_accuracy_of_the_votes_and_the_rows_say_so():
    rows = {r.metric: r for r in score_records(_planted()) if r.model == "m"}
    acc = rows["accuracy"]
    assert math.isclose(acc.value, 3 / 5) and acc.n == 5 and acc.n_null == 1
    rep = rows["n_repetitions"]
    assert rep.value == 3 and rep.n == 6 and rep.n_null == 1
    assert "majority vote over 3 repetitions" in rep.note and "temperature 0.7" in rep.note
    assert "lowest rep" in rep.note
    assert rows["n_vote_ties"].value == 2
