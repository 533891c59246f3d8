"""Acceptance numbers computed from human data alone (SPEC §5), through the same record and
scoring code that scores models."""

import numpy as np
import pytest

from perceptbench.records import TrialRecord
from perceptbench.tasks import get_task
from perceptbench.tasks.gestalt import KERNELS, kernel_odd_one_out, load_color_kernel


def rows_by(rows, model):
    return {r.metric: r for r in rows if r.model == model}


@pytest.fixture(scope="module")
def silhouette_scores():
    t = get_task("closure.nat.silhouette")
    st = t.stimuli(0)
    hr = t.human_records(0, "test-run", st)
    return t, st, hr, t.score(hr, 0)


def test_human_records_are_valid_trial_records(silhouette_scores):
    _, _, hr, _ = silhouette_scores
    assert len(hr) == 1600 and all(isinstance(r, TrialRecord) for r in hr)
    assert {r.model for r in hr} == {f"human:subject-{i:02d}" for i in range(1, 11)}
    assert {r.model_family for r in hr} == {"human"}
    assert sum(r.response == "na" for r in hr) == 22
    assert all(r.correct is False for r in hr if r.response == "na")


def test_all_160_ceilings_equal_pinned_values(silhouette_scores):
    *_, rows = silhouette_scores
    p = rows_by(rows, "human:panel")
    assert round(p["observer_accuracy_mean@all"].value, 3) == 0.753
    assert round(p["observer_accuracy_min@all"].value, 4) == 0.6375
    assert round(p["observer_accuracy_max@all"].value, 3) == 0.850
    assert round(p["ceiling_kappa_pairwise_mean@all"].value, 3) == 0.476
    assert round(p["ceiling_kappa_pairwise_min@all"].value, 3) == 0.251
    assert round(p["ceiling_kappa_pairwise_max@all"].value, 3) == 0.709
    assert round(p["ceiling_kappa_loo_mean@all"].value, 3) == 0.474
    assert round(p["ceiling_kappa_loo_min@all"].value, 3) == 0.335
    assert round(p["ceiling_kappa_loo_max@all"].value, 3) == 0.579
    assert p["n_tied_mode@all"].value == 4
    c = p["ceiling_kappa_pairwise_mean@all"]
    assert c.ci_low < c.value < c.ci_high and c.n_draws == 2000


def test_test_split_ceilings_present_and_on_80_images(silhouette_scores):
    *_, rows = silhouette_scores
    p = rows_by(rows, "human:panel")
    assert p["ceiling_kappa_pairwise_mean@test"].n == 80
    assert p["ceiling_kappa_loo_mean@test"].n == 80


def test_observer_rows_scored_like_models(silhouette_scores):
    *_, rows = silhouette_scores
    s8 = rows_by(rows, "human:subject-08")
    assert round(s8["accuracy@all"].value, 4) == 0.6375
    assert round(s8["kappa_loo@all"].value, 3) == 0.335


def test_split_is_stratified_and_pinned():
    t = get_task("closure.nat.silhouette")
    split = t.split(0)
    test = sorted(s for s, v in split.items() if v == "test")
    assert len(test) == 80
    from collections import Counter
    assert set(Counter(s[5:].rstrip("0123456789") for s in test).values()) == {5}
    # the declared default split (seed 0) is fixed across versions
    import hashlib
    assert test[:6] == ['silh_airplane1', 'silh_airplane4', 'silh_airplane7', 'silh_airplane8', 'silh_airplane9',
                        'silh_bear2']
    assert hashlib.sha256(",".join(test).encode()).hexdigest()[:16] == "73dd7deed16da584"
    assert sorted(s for s, v in t.split(1).items() if v == "test") != test


def test_kernels_disagree_on_16_to_38_triplets_and_ties():
    ties = {}
    answers = {}
    import itertools
    for k in KERNELS:
        kern = load_color_kernel(k)
        answers[k] = [kernel_odd_one_out(kern, t) for t in itertools.combinations(range(10), 3)]
        ties[k] = sum(a is None for a in answers[k])
    assert ties == {"l5": 1, "l9": 1, "sa": 0, "td": 0, "tm": 0}
    diffs = [sum(x != y for x, y in zip(answers[a], answers[b])) for a, b in itertools.combinations(KERNELS, 2)]
    assert (min(diffs), max(diffs)) == (16, 38)


def test_mark_color_scores_kernel_agreement_from_records():
    t = get_task("similarity.chart.mark_color")
    st = t.stimuli(0)
    rows = t.score(t.human_records(0, "r", st), 0)
    k = rows_by(rows, "human:kernels")
    assert (k["n_differ_min"].value, k["n_differ_max"].value) == (16, 38)
    assert "human:kernel-tm" not in {r.model for r in rows}  # the reference itself is not scored


def test_tied_kernel_triplet_has_no_human_answer_and_is_counted():
    t = get_task("similarity.chart.mark_color@kernel=l5")
    assert t.task_id == "similarity.chart.mark_color@kernel=l5"
    st = t.stimuli(0)
    assert sum(s.ground_truth is None for s in st) == 1
    rows = t.score(t.human_records(0, "r", st), 0)
    assert rows_by(rows, "human:kernels")["n_no_human_ref"].value == 1


def test_mark_color_order_is_seeded():
    t = get_task("similarity.chart.mark_color")
    a = [s.meta["order"] for s in t.stimuli(0)]
    assert a == [s.meta["order"] for s in t.stimuli(0)]
    assert a != [s.meta["order"] for s in t.stimuli(1)]
    gts = np.array([s.ground_truth for s in t.stimuli(0)])
    assert set(np.unique(gts)) == {1, 2, 3}


# ---- the other palettes of the kernel study (issue 23 item 1): shape, size, the 4x4 bivariate sets

MARK_TASKS = {"similarity.chart.mark_shape": ("shape", 10), "similarity.chart.mark_size": ("size", 10),
              "similarity.chart.mark_shape_color": ("shapecolor", 16),
              "similarity.chart.mark_size_color": ("sizecolor", 16),
              "similarity.chart.mark_shape_size": ("shapesize", 16)}


def kernel_by_hand(mirror, palette, name):
    """The kernel file read as text: rows of comma-separated floats."""
    text = (mirror / "perceptual-kernels" / "data" / "kernels" / f"{palette}-{name}.txt").read_text()
    return [[float(x) for x in line.split(",")] for line in text.strip().splitlines()]


def odd_by_hand(k, i, j, l):
    """The item outside the least dissimilar pair, None on a tie (Demiralp et al. 2014)."""
    pairs = {(i, j): k[i][j], (i, l): k[i][l], (j, l): k[j][l]}
    lo = min(pairs.values())
    at = [p for p, v in pairs.items() if v == lo]
    return None if len(at) > 1 else [x for x in (i, j, l) if x not in at[0]][0]


@pytest.mark.parametrize("task_id", sorted(MARK_TASKS))
def test_mark_task_targets_are_the_kernel_odd_one_out_by_hand(task_id, mirror):
    palette, n = MARK_TASKS[task_id]
    t = get_task(task_id)
    st = t.stimuli(0)
    assert len(st) == n * (n - 1) * (n - 2) // 6
    k = kernel_by_hand(mirror, palette, "tm")
    assert len(k) == n
    for s in st[:25] + st[-5:]:  # a slice of the triplets, by hand
        i, j, l = (int(x) for x in s.stimulus_id[len("mark_"):].split("-"))
        assert sorted(s.meta["order"]) == [i, j, l]
        odd = odd_by_hand(k, i, j, l)
        assert s.ground_truth == s.meta["order"].index(odd) + 1
    assert t.human_ref_id == f"demiralp2014.{palette}-tm"


# inter-kernel spread: (min, max) over the 10 kernel pairs of the triplets whose odd one out differs,
# and the ties (triplets without a human answer) per kernel
MARK_SPREAD = {"similarity.chart.mark_shape": ((2, 32), {"l5": 2}),
               "similarity.chart.mark_size": ((6, 24), {"l5": 3}),
               "similarity.chart.mark_shape_color": ((3, 140), {"l5": 3, "l9": 1}),
               "similarity.chart.mark_size_color": ((31, 278), {"l5": 6}),
               "similarity.chart.mark_shape_size": ((15, 33), {"l5": 5})}


@pytest.mark.parametrize("task_id", sorted(MARK_SPREAD))
def test_mark_task_inter_kernel_spread_and_ties_by_hand(task_id, mirror):
    import itertools

    palette, n = MARK_TASKS[task_id]
    trips = list(itertools.combinations(range(n), 3))
    answers = {}
    for name in KERNELS:
        k = kernel_by_hand(mirror, palette, name)
        answers[name] = [odd_by_hand(k, *x) for x in trips]
    ties = {name: sum(a is None for a in v) for name, v in answers.items() if any(a is None for a in v)}
    diffs = {(a, b): sum(x != y for x, y in zip(answers[a], answers[b])) for a, b in itertools.combinations(KERNELS, 2)}
    spread, pinned_ties = MARK_SPREAD[task_id]
    assert (min(diffs.values()), max(diffs.values())) == spread and ties == pinned_ties
    # the same through the task's records and its scorer
    t = get_task(task_id)
    st = t.stimuli(0)
    rows = t.score(t.human_records(0, "r", st), 0)
    h = rows_by(rows, "human:kernels")
    assert (h["n_differ_min"].value, h["n_differ_max"].value) == spread
    assert all(h[f"n_differ[{a}~{b}]"].value == d for (a, b), d in diffs.items())
    # counterbalanced positions: every triplet answered under tm, ceil(m/3)/m
    m = len(trips)
    assert h["n_no_human_ref"].value == 0
    assert h["position_floor"].value == pytest.approx(-(-m // 3) / m)
    assert np.bincount([s.ground_truth for s in st], minlength=4)[1:].max() == -(-m // 3)
    # each other kernel's B against tm, by hand: matches over the triplets where both answer
    for name in ("l5", "sa"):
        both = [(x, y) for x, y in zip(answers[name], answers["tm"]) if x is not None and y is not None]
        assert rows_by(rows, f"human:kernel-{name}")["B"].value == pytest.approx(
            sum(x == y for x, y in both) / len(both))


def test_l5_shape_kernel_ties_leave_two_triplets_without_a_target():
    t = get_task("similarity.chart.mark_shape@kernel=l5")
    st = t.stimuli(0)
    assert sum(s.ground_truth is None for s in st) == 2
    rows = t.score(t.human_records(0, "r", st), 0)
    assert rows_by(rows, "human:kernels")["n_no_human_ref"].value == 2
    assert rows_by(rows, "human:kernels")["position_floor"].value == pytest.approx(40 / 118)


# ---- the 20 subjects' raw odd-one-out judgments (issue 23 item 1, raw triplets): ceilings by hand


def _slice_scores(task_id, n_subjects=5, n_triplets=30):
    """The task's subject records for the first subjects and triplets, a planted model on the same
    triplets (answer (k mod 3) + 1 on the k-th), scored through the task; and the matrices by hand."""
    from helpers.records import plant_record

    t = get_task(task_id)
    st = t.stimuli(0)
    keep = sorted(s.stimulus_id for s in st)[:n_triplets]
    subj = [f"human:subject-{i:02d}" for i in range(1, n_subjects + 1)]
    hr = [r for r in t.human_records(0, "r", st) if r.model in subj and r.stimulus_id in keep]
    gt = {s.stimulus_id: s.ground_truth for s in st}
    model = [plant_record(t, stimulus_id=s, response=k % 3 + 1, ground_truth=gt[s], split="test")
             for k, s in enumerate(keep)]
    resp = {(r.model, r.stimulus_id): r.response for r in hr}
    answers = [[resp[(m, s)] for s in keep] for m in subj]
    obs = [[float(a == gt[s]) for a, s in zip(row, keep)] for row in answers]
    m_resp = [k % 3 + 1 for k in range(len(keep))]
    return t.score(hr + model, 0), keep, gt, answers, obs, m_resp


def test_subject_panel_ceilings_and_model_error_consistency_by_hand_on_a_slice():
    import itertools

    from helpers.by_hand import kappa_by_hand, pairwise_mean_by_hand

    rows, keep, gt, answers, obs, m_resp = _slice_scores("similarity.chart.mark_shape")
    p = rows_by(rows, "human:panel")
    J, n = len(obs), len(keep)
    # human-human: every subject pair's kappa (seed 000 Eq. 2), their mean; each vs the others' mean accuracy
    pair_k = [kappa_by_hand(obs[a], obs[b]) for a, b in itertools.combinations(range(J), 2)]
    pair_k = [k for k in pair_k if not np.isnan(k)]
    assert p["ceiling_kappa_pairwise_mean@all"].value == pytest.approx(np.mean(pair_k))
    assert p["ceiling_kappa_pairwise_min@all"].value == pytest.approx(min(pair_k))
    loo = [kappa_by_hand(obs[j], [sum(obs[o][i] for o in range(J) if o != j) / (J - 1) for i in range(n)])
           for j in range(J)]
    assert p["ceiling_kappa_loo_mean@all"].value == pytest.approx(np.nanmean(loo))
    assert p["observer_accuracy_mean@all"].value == pytest.approx(sum(map(sum, obs)) / (J * n))
    # per triplet: share of agreeing subject pairs, share of subjects agreeing with the kernel
    agree = [sum(answers[a][i] == answers[b][i] for a, b in itertools.combinations(range(J), 2)) / (J * (J - 1) / 2)
             for i in range(n)]
    acc = [sum(obs[j][i] for j in range(J)) / J for i in range(n)]
    assert p["triplet_agreement_mean"].value == pytest.approx(sum(agree) / n)
    assert (p["triplet_agreement_min"].value, p["triplet_agreement_max"].value) == (min(agree), max(agree))
    assert (p["triplet_accuracy_min"].value, p["triplet_accuracy_max"].value) == (min(acc), max(acc))
    # the model against the subjects: error consistency and the subjects' modal answer
    m = rows_by(rows, "m")
    m_corr = [float(r == gt[s]) for r, s in zip(m_resp, keep)]
    assert m["kappa_pairwise"].value == pytest.approx(pairwise_mean_by_hand(m_corr, obs))
    assert m["kappa_aggregate"].value == pytest.approx(kappa_by_hand(m_corr, acc))
    from collections import Counter
    modes = []
    for i in range(n):
        c = Counter(row[i] for row in answers).most_common()
        modes.append(None if len(c) > 1 and c[0][1] == c[1][1] else c[0][0])
    scored = [(r, h) for r, h in zip(m_resp, modes) if h is not None]
    assert m["B_subject_mode"].value == pytest.approx(sum(r == h for r, h in scored) / len(scored))
    assert m["B"].value == pytest.approx(sum(m_corr) / n)  # the kernel B is unchanged beside them
    assert "accuracy" not in m and sum(r.model == "m" and r.metric == "null_rate" for r in rows) == 1


# the 20 subjects on every triplet (default kernel tm): (mean pairwise kappa ceiling, mean leave-one-out
# ceiling, mean subject agreement with the kernel, mean per-triplet subject-pair agreement)
SUBJECT_CEILINGS = {"similarity.chart.mark_shape": (0.632, 0.589, 0.837, 0.869),
                    "similarity.chart.mark_size": (0.187, 0.174, 0.773, 0.696),
                    "similarity.chart.mark_shape_color": (0.530, 0.495, 0.794, 0.817),
                    "similarity.chart.mark_size_color": (0.130, 0.108, 0.728, 0.621),
                    "similarity.chart.mark_shape_size": (0.252, 0.141, 0.816, 0.719)}


@pytest.mark.parametrize("task_id", sorted(SUBJECT_CEILINGS))
def test_subject_panel_ceilings_on_every_triplet_are_pinned(task_id):
    t = get_task(task_id)
    st = t.stimuli(0)
    hr = t.human_records(0, "r", st)
    assert len({r.model for r in hr if r.model.startswith("human:subject-")}) == 20
    p = rows_by(t.score(hr, 0), "human:panel")
    got = tuple(round(p[k].value, 3) for k in ("ceiling_kappa_pairwise_mean@all", "ceiling_kappa_loo_mean@all",
                                                 "observer_accuracy_mean@all", "triplet_agreement_mean"))
    assert got == SUBJECT_CEILINGS[task_id]
    assert p["ceiling_kappa_pairwise_mean@all"].n == len(st)


def test_subjects_none_leaves_the_raw_judgments_out():
    t = get_task("similarity.chart.mark_size@subjects=none")
    st = t.stimuli(0)
    hr = t.human_records(0, "r", st)
    assert {r.model for r in hr} == {f"human:kernel-{k}" for k in KERNELS}
    assert "human:panel" not in {r.model for r in t.score(hr, 0)}
    assert t.human_data.endswith("not per-trial answers")


def test_subject_panel_leaves_out_the_triplets_a_tied_kernel_cannot_answer():
    from helpers.records import plant_record

    t = get_task("similarity.chart.mark_shape@kernel=l5")
    st = t.stimuli(0)
    model = [plant_record(t, stimulus_id=s.stimulus_id, response=1, ground_truth=s.ground_truth, split="test")
             for s in st]
    rows = t.score(t.human_records(0, "r", st) + model, 0)
    p, m = rows_by(rows, "human:panel"), rows_by(rows, "m")
    assert p["ceiling_kappa_pairwise_mean@all"].n == 118 and m["kappa_pairwise"].n == 118  # 120 - 2 tied under l5
    assert m["B"].n == 118 and rows_by(rows, "human:kernels")["n_no_human_ref"].value == 2


# ---- catch-trial screening of the subjects (min_catch) and colour's opt-in subject panel


def test_catch_accuracy_and_screening_by_hand_on_a_slice(mirror):
    """Subjects 1-10 of mark shape on 30 triplets, their catch answers counted by hand from the raw file;
    with min_catch=8 subject 9 (3 of 10) leaves the panel, subject 2 (9 of 10) stays."""
    import itertools

    from helpers.by_hand import kappa_by_hand
    from perceptbench.stimuli.kernel_triplets import CATCH_TRIPLETS

    lines = (mirror / "perceptual-kernels/data/raw/shape-td.txt").read_text().splitlines()
    catch_ok = {}
    for s in range(1, 11):
        v = [int(x) - 4 for x in lines[s - 1].split(",")]
        catch_ok[s] = sum(v[3 * (128 + k) + 2] == other for k, (_, other) in enumerate(CATCH_TRIPLETS))
    assert (catch_ok[9], catch_ok[2]) == (3, 9)
    for min_catch in (0, 8):
        t = get_task("similarity.chart.mark_shape" + (f"@min_catch={min_catch}" if min_catch else ""))
        st = t.stimuli(0)
        keep = sorted(s.stimulus_id for s in st)[:30]
        subj = [f"human:subject-{i:02d}" for i in range(1, 11)]
        hr = [r for r in t.human_records(0, "r", st) if r.model in subj
              and (r.stimulus_id in keep or r.stimulus_id.startswith("catch_"))]
        assert sum(r.run_meta.split == "catch" for r in hr) == 100
        rows = t.score(hr, 0)
        for s in range(1, 11):
            assert rows_by(rows, f"human:subject-{s:02d}")["catch_accuracy"].value == catch_ok[s] / 10
        gt = {s.stimulus_id: s.ground_truth for s in st}
        resp = {(r.model, r.stimulus_id): r.response for r in hr}
        panel = [m for s, m in zip(range(1, 11), subj) if catch_ok[s] >= min_catch]
        obs = [[float(resp[(m, s)] == gt[s]) for s in keep] for m in panel]
        pair_k = [k for a, b in itertools.combinations(range(len(obs)), 2)
                  if not np.isnan(k := kappa_by_hand(obs[a], obs[b]))]
        p = rows_by(rows, "human:panel")
        assert p["ceiling_kappa_pairwise_mean@all"].value == pytest.approx(np.mean(pair_k))
        assert p["n_subjects_screened_out"].value == (1 if min_catch else 0)
        assert p["catch_accuracy_min"].value == 0.3
        assert ("human:subject-09" in p["n_subjects_screened_out"].note) == bool(min_catch)
        assert ("human:subject-09" in {r.model for r in rows if r.metric.startswith("kappa_loo")}) == (not min_catch)


def test_min_catch_needs_the_subjects_and_stays_out_of_the_records_at_its_default():
    with pytest.raises(ValueError, match="min_catch=8 .* needs subjects=td"):
        get_task("similarity.chart.mark_size@min_catch=8,subjects=none")
    with pytest.raises(ValueError, match="min_catch"):
        get_task("similarity.chart.mark_size@min_catch=11")
    t = get_task("similarity.chart.mark_size")
    assert t.identity_params == {"kernel": "tm", "subjects": "td"}
    assert get_task("similarity.chart.mark_size@min_catch=8").task_id == "similarity.chart.mark_size@min_catch=8"


def test_colour_subject_panel_is_opt_in_and_scored_like_the_other_palettes():
    base = get_task("similarity.chart.mark_color")
    st = base.stimuli(0)
    hr0 = base.human_records(0, "r", st)
    assert {r.model for r in hr0} == {f"human:kernel-{k}" for k in KERNELS}
    assert all(r.run_meta.task_params == {"kernel": "tm"} for r in hr0)  # as before the setting existed
    t = get_task("similarity.chart.mark_color@subjects=td")
    assert t.task_id == "similarity.chart.mark_color@subjects=td" and "20 subjects" in t.human_data
    hr = t.human_records(0, "r", t.stimuli(0))
    assert len({r.model for r in hr if r.model.startswith("human:subject-")}) == 20 and len(hr) == 600 + 20 * 130
    rows = t.score(hr, 0)
    p = rows_by(rows, "human:panel")
    got = tuple(round(p[k].value, 3) for k in ("ceiling_kappa_pairwise_mean@all", "ceiling_kappa_loo_mean@all",
                                                 "observer_accuracy_mean@all", "triplet_agreement_mean"))
    assert got == (0.147, 0.147, 0.616, 0.515) and p["catch_accuracy_min"].value == 0.7
    # the kernel rows are the default task's, row for row
    kernel_rows = [(r.model, r.metric, r.value, r.n) for r in base.score(hr0, 0)]
    assert [(r.model, r.metric, r.value, r.n) for r in rows][:len(kernel_rows)] == kernel_rows
