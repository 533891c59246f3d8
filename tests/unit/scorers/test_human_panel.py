"""scorers/human_panel.py: modal responses, leave-one-out sides, and a panel of one observer."""

import numpy as np

from perceptbench.tasks import get_task

from helpers.records import plant_answers, plant_record


def test_gestalt_mode_excludes_na_and_ties():
    from perceptbench.scorers.human_panel import modal_response

    _mode = lambda r: modal_response(r, "na")  # noqa: E731
    assert _mode(["cat", "cat", "dog"]) == "cat"
    assert _mode(["cat", "dog"]) is None                          # 1-1 tie
    assert _mode(["na", "na", "na", "dog"]) == "dog"              # na never votes
    assert _mode([None, None, "dog"]) == "dog"                    # nor a null
    assert _mode([]) is None and _mode(["na", None]) is None      # no vote at all
    assert _mode(["a", "b", "b", "c", "c", "c"]) == "c"           # a tie below the top does not matter
    assert _mode(["a", "a", "b", "b", "c"]) is None               # a tie at the top does


def test_gestalt_model_rows_order_and_loo_sides():
    from perceptbench.record_table import TaskColumns
    from perceptbench.scorers.common import respondent_positions as _model_rows
    from perceptbench.scorers.human_panel import _loo_sides, modal_response

    task = get_task("closure.nat.silhouette")
    task.n_reps = 2  # two repetitions per stimulus, so the order within a stimulus is by rep
    recs = [plant_record(task, stimulus_id=s, model=m, model_family="vlm", readout="vlm_prompt", response="cat",
                         ground_truth="cat", manipulated_value=None, raw_output="cat", prompt_id="p", prompt_hash="h",
                         model_version="v", seed=0, run_id="r", rep=rep)
            for m, s, rep in (("zz", "b", 0), ("aa", "b", 1), ("zz", "a", 0), ("aa", "a", 0), ("aa", "b", 0))]
    c = TaskColumns.from_records(task.task_id, recs)
    got = [(c.models[m], [(c.stimuli[c.stimulus[p]], int(c.rep[p])) for p in pos]) for m, pos in _model_rows(c)]
    # models in order of first appearance (zz before aa), records by (stimulus id, rep)
    assert got == [("zz", [("a", 0), ("b", 0)]), ("aa", [("a", 0), ("b", 0), ("b", 1)])]
    assert len(_model_rows(TaskColumns.from_records(task.task_id, recs[:1]))) == 1
    assert _model_rows(TaskColumns.from_records(task.task_id, [])) == []
    # three observers on two stimuli: leave-one-out modes and whether each observer matches them
    resp = [["cat", "cat", "dog"], ["dog", "na", "cat"]]
    side = _loo_sides(np.zeros((3, 2)), resp, [0, 1], lambda r: modal_response(r, "na"))
    # stimulus 0: without o1 {cat, dog} tie; without o2 tie; without o3 cat (o3 said dog: no match)
    # stimulus 1: without o1 {cat} -> cat (o1 dog: no); without o2 {dog, cat} tie; without o3 {dog} -> dog (no)
    assert side["loo_valid"].tolist() == [[False, True], [False, False], [True, True]]
    assert side["loo_match"].tolist() == [[False, False], [False, False], [False, False]]
    side = _loo_sides(np.zeros((3, 1)), [["cat", "cat", "cat"]], [0], lambda r: modal_response(r, "na"))
    assert side["loo_match"].tolist() == [[True], [True], [True]]


def test_scoring_with_one_human_observer_emits_no_numpy_warning():
    import math
    import warnings

    from perceptbench.metrics.error_consistency import leave_one_out_ceiling
    from perceptbench.scoring import score_records

    sil = "closure.nat.silhouette"
    task = get_task(sil)
    humans = task.human_records(0, "planted", task.stimuli(0))
    first = sorted({r.model for r in humans if r.model.startswith("human:subject")})[0]
    one = [r for r in humans if r.model == first]  # a torn file: one observer left
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # docs/metrics.md: scoring emits no numpy warnings
        # one observer: the leave-one-out panel (the others' mean) is empty, 0/0 -> NaN, the documented answer
        assert math.isnan(leave_one_out_ceiling(np.array([[1.0, 0.0, 1.0]]))[0])
        rows = score_records(one + plant_answers(sil, "m", {i: "right" for i in range(10)}))
    loo = [r for r in rows if r.model == first and r.metric.startswith("kappa_loo")]
    assert loo and all(math.isnan(r.value) for r in loo)


def test_human_side_caches_keep_the_most_recent_entries_by_seed_and_human_data():
    from perceptbench.scorers.human_panel import _HumanSideCache, _RowCache

    made = []
    rows = _RowCache(size=2)
    for key in (1, 2, 1, 3, 2, 1):
        assert rows.get(key, lambda: made.append(key) or [key]) == [key]
    # 1 and 2 computed; 1 a hit (now the most recent); 3 evicts 2, the least recent; 2 evicts 1; 1 evicts 3
    assert made == [1, 2, 3, 2, 1]
    made.clear()
    sides = _HumanSideCache(size=2)
    obs, resp = np.zeros((2, 1)), [["cat", "dog"]]
    for seed in (1, 2, 1, 3, 2, 1):
        assert sides.get(seed, obs, resp, [0], lambda: made.append(seed) or {"seed": seed})["seed"] == seed
    assert made == [1, 2, 3, 2, 1]
    # another correctness matrix, other responses or other columns are other human data: never a hit
    for args in ((np.ones((2, 1)), resp, [0]), (obs, [["cat", "cat"]], [0]), (obs, resp, [1])):
        assert sides.get(1, *args, lambda: {"new": True}) == {"new": True}


def test_human_rows_hash_reads_every_value_of_a_large_matrix():
    from perceptbench.scorers.human_panel import _human_hash

    obs = np.zeros((4, 600))  # more values than numpy prints: a printed form would hide the change below
    other = obs.copy()
    other[2, 300] = 1.0
    assert _human_hash(["h1"], obs) == _human_hash(["h1"], obs.copy())
    assert _human_hash(["h1"], obs) != _human_hash(["h1"], other)


def test_panel_scorer_reuses_no_human_side_value_across_seeds():
    """The human ceilings of a model block are bootstrapped on the seed's draws: a task scored
    with one seed and then another gives the second seed's rows, as a fresh task does."""
    from helpers.score_rows import assert_rows

    task = get_task("closure.nat.silhouette")
    panel = {"s0": ("cat", ["cat", "cat", "dog"]), "s1": ("dog", ["dog", "cat", "dog"]),
             "s2": ("car", ["car", "car", "car"]), "s3": ("bear", ["cat", "bear", "bear"]),
             "s4": ("bird", ["bird", "dog", "cat"])}
    model = {"s0": "cat", "s1": "cat", "s2": "car", "s3": "bear", "s4": "dog"}

    def rec(sid, who, family, response, gt):
        return plant_record(task, stimulus_id=sid, model=who, model_family=family, readout="vlm_prompt",
                            response=response, ground_truth=gt, manipulated_value=None, raw_output=response,
                            prompt_id="p", prompt_hash="h", model_version="v", seed=0, run_id="r")

    recs = [rec(s, f"human:h{j}", "human", r[j], gt) for s, (gt, r) in panel.items() for j in range(3)]
    recs += [rec(s, "m", "vlm", a, panel[s][0]) for s, a in model.items()]
    task.score(recs, 1)
    assert_rows(task.score(recs, 2), get_task("closure.nat.silhouette").score(recs, 2))
