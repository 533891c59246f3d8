"""similarity.chart.category_mean (Tseng et al., CHI 2023): trial -> stimulus mapping on
hand-checked rows, the study rendering, human trials as records, ceilings, and a run."""

import csv
import math
from collections import Counter, defaultdict

import numpy as np
import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from perceptbench.records import TrialRecord
from perceptbench.stimuli import tseng_scatterplots as ts
from perceptbench.stimuli.render import hex_to_rgb
from perceptbench.tasks import get_task
from perceptbench.tasks.chart_category import CategoryMeanTask, WRONG, stimulus_id_for

from helpers.records import plant_record
from helpers.score_rows import SEED, assert_rows, boot_row

TASK = "similarity.chart.category_mean"


@pytest.fixture(scope="module")
def trials():
    return {t.row: t for t in ts.human_trials()}


# Rows of public/dataset/user response.csv checked by hand against the batches' info.csv
# (grep for the delta): (row, participant, batch, index, k, ans, correct)
HAND_CHECKED = [
    (0, "0uCqodzmQcMa7PSJ624O", "GGHS73HTQE", 0, 3, 2, True),
    # the release prints this delta as 2.081497483263586, info.csv as 2.0814974832635866
    (14, "0uCqodzmQcMa7PSJ624O", "GGHS73HTQE", 16, 10, 5, True),
    (19, "0uCqodzmQcMa7PSJ624O", "GGHS73HTQE", 21, 6, 2, False),
    (48, "14FQGehev0fgSXeFdfQm", "QT513F3WQS", 6, 6, 0, True),
    # 2.3734631108018918 in the responses, 2.3734631108018913 in info.csv
    (49, "14FQGehev0fgSXeFdfQm", "QT513F3WQS", 7, 6, 1, False),
]


@pytest.mark.parametrize("row,pid,batch,index,k,ans,correct", HAND_CHECKED)
def test_hand_checked_rows_map_to_their_plot(trials, row, pid, batch, index, k, ans, correct):
    t = trials[row]
    assert (t.participant, t.batch, t.index, t.correct) == (pid, batch, index, correct)
    p = ts.load_plots()[(batch, index)]
    assert (p.category_num, p.answer) == (k, ans)


def test_every_trial_maps_and_each_participant_lacks_the_shared_plots():
    tr = ts.human_trials()
    assert len(tr) == 3822
    by_p = defaultdict(list)
    for t in tr:
        by_p[t.participant].append(t)
    assert len(by_p) == 91
    shared = ts.shared_plots()
    assert len(shared) == 30 and len({i for b, i in shared if b == ts.batches()[0]}) == 3
    for pid, ts_ in by_p.items():
        assert len({t.batch for t in ts_}) == 1 and len({t.palette for t in ts_}) == 1
        b = ts_[0].batch
        seen = {t.index for t in ts_}
        assert len(seen) == 42
        assert set(range(45)) - seen == {i for bb, i in shared if bb == b}


def test_answers_are_the_highest_mean_category():
    for p in ts.load_plots().values():
        means = [p.xy[p.ca == c, 1].mean() for c in range(p.category_num)]
        assert int(np.argmax(means)) == p.answer


def test_unmappable_trial_is_a_one_line_error():
    rows, path, _ = ts._read_csv("dataset/user response.csv")
    rows = [dict(r) for r in rows]
    rows[0]["number_points"] = "99"  # hand-made mismatch with GGHS73HTQE/0 (12 points)
    with pytest.raises(ValueError, match=r"row 0 \(0uCqodzmQcMa7PSJ624O_Q_0\).*GGHS73HTQE/0.csv") as e:
        ts.map_human_trials(rows, path, ts.load_plots(), ts.palettes())
    assert "\n" not in str(e.value)
    assert len(ts.map_human_trials(rows[1:], path, ts.load_plots(), ts.palettes())) == len(rows) - 1


def test_render_follows_the_study_geometry():
    p = ts.load_plots()[("GGHS73HTQE", 7)]
    colors = ts.palettes()["Tab10"]
    img = ts.render_plot(p, colors)
    assert img.size == (460, 400 + ts.ANSWER_ROW_PX)
    assert ts.render_plot(p, colors, answer_row=False).size == (460, 400)
    a = np.asarray(img)
    # a point's centre: x, y in [-1, 11] onto the 370 x 360 plot area offset (60, 10)
    x, y = p.xy[0]
    px = 60 + (x + 1) / 12 * 370
    py = 10 + 360 - (y + 1) / 12 * 360
    assert tuple(a[int(round(py)), int(round(px))]) == pytest.approx(hex_to_rgb(colors[p.ca[0]]), abs=40)
    # x axis line at y = 370 (dark), white far from the data
    assert a[370, 200].max() < 120 and a[5, 455].min() == 255
    # the swatches: one per category, in category order
    for c in range(p.category_num):
        cx = int((460 / p.category_num) * (c + 0.5))
        assert tuple(a[418, cx]) == pytest.approx(hex_to_rgb(colors[c]), abs=3)


def test_stimuli_split_is_disjoint_by_batch_and_seeded():
    t = get_task(TASK)
    st = t.stimuli(0)
    test_b = {s.meta["batch"] for s in st if s.split == "test"}
    probe_b = {s.meta["batch"] for s in st if s.split == "probe_train"}
    assert test_b.isdisjoint(probe_b) and len(probe_b) == 3 and len(test_b) == 7
    assert t.probe_batches(0) == t.probe_batches(0) and t.probe_batches(0) != t.probe_batches(1)
    assert all(s.ground_truth == ts.load_plots()[(s.meta["batch"], s.meta["plot_index"])].answer + 1 for s in st)
    sub = get_task(TASK + "@n_probe=20,n_test=10").stimuli(0)
    assert Counter(s.split for s in sub) == {"test": 10, "probe_train": 20}
    with pytest.raises(ValueError, match="n_test"):
        get_task(TASK + "@n_test=zero")


def test_human_records_and_accuracy_by_k_from_the_raw_csv(mirror):
    t = get_task(TASK)
    st = t.stimuli(0)
    hr = t.human_records(0, "r", st)
    assert len(hr) == 3822
    r0 = next(r for r in hr if r.run_meta.model_extra["source_row"] == 19)
    assert r0.model == "human:0uCqodzmQcMa7PSJ624O" and r0.response == WRONG and r0.correct is False
    assert r0.stimulus_id == stimulus_id_for("GGHS73HTQE", 21, "StataS2") and r0.ground_truth == 3
    rows = {(r.model, r.metric): r for r in t.score(hr, 0)}
    # independent count from the raw CSV
    with open(mirror / "tseng2023-categorical-scatterplots/public/dataset/user response.csv") as f:
        raw = list(csv.DictReader(f))
    for k in (2, 5, 10):
        sel = [int(r["correct_answer"]) for r in raw if int(r["category_number"]) == k]
        assert rows[("human:panel", f"a_k[{k}]@all")].value == pytest.approx(np.mean(sel))
        assert rows[("human:panel", f"a_k[{k}]@all")].n == len(sel)
    assert rows[("human:panel", "accuracy@all")].value == pytest.approx(
        np.mean([int(r["correct_answer"]) for r in raw]))
    assert rows[("human:panel", "a_k[2]@all")].value > rows[("human:panel", "a_k[9]@all")].value
    for m in ("ceiling_kappa_pairwise_mean@all", "ceiling_kappa_loo_mean@all"):
        assert np.isfinite(rows[("human:panel", m)].value)


def _rec(task, model, sid, correct, gt=2, k=3, family="human", split="test"):
    resp = gt if correct else (WRONG if family == "human" else 1)
    return plant_record(task, stimulus_id=sid, model=model, model_family=family,
                        readout="human_trial" if family == "human" else "class_probe", response=resp,
                        ground_truth=gt, manipulated_value=k, raw_output=None, prompt_id=None, prompt_hash=None,
                        model_version="v", seed=0, run_id="r", split=split)


def test_ceilings_and_b_on_a_hand_computed_panel():
    """Cell A (3 observers, 4 stimuli) and cell B (1 observer): pairwise kappa over the three
    within-cell pairs, leave-one-out in cell A, B on the majority-correct stimuli."""
    t = CategoryMeanTask()
    A = [stimulus_id_for("AAAAAAAAAA", i, "Tab10") for i in range(4)]
    Bs = [stimulus_id_for("BBBBBBBBBB", i, "Tab10") for i in range(4)]
    obs = {"human:o1": [1, 1, 0, 0], "human:o2": [1, 0, 0, 1], "human:o3": [1, 1, 1, 0]}
    recs: list[TrialRecord] = []
    for m, cs in obs.items():
        recs += [_rec(t, m, s, c) for s, c in zip(A, cs)]
    recs += [_rec(t, "human:o4", s, c) for s, c in zip(Bs, [1, 1, 1, 0])]
    model = [1, 0, 0, 1]
    recs += [_rec(t, "m", s, c, family="encoder") for s, c in zip(A, model)]
    rows = {(r.model, r.metric): r for r in t.score(recs, 0)}

    def kap(a, b):
        a, b = np.array(a, float), np.array(b, float)
        c_obs = np.mean(a * b + (1 - a) * (1 - b))
        c_exp = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
        return (c_obs - c_exp) / (1 - c_exp)

    # o1-o2: c_obs 0.5, c_exp 0.5 -> 0;  o1-o3: c_obs 0.75, p 0.5/0.75 -> c_exp 0.5 -> 0.5
    # o2-o3: c_obs 0.25, c_exp 0.5 -> -0.5
    assert kap(obs["human:o1"], obs["human:o2"]) == pytest.approx(0.0)
    assert kap(obs["human:o1"], obs["human:o3"]) == pytest.approx(0.5)
    assert kap(obs["human:o2"], obs["human:o3"]) == pytest.approx(-0.5)
    assert rows[("human:panel", "ceiling_kappa_pairwise_mean@all")].value == pytest.approx(0.0)
    assert rows[("human:panel", "ceiling_kappa_pairwise_mean@all")].n == 3
    o = np.array(list(obs.values()), float)
    loo = [kap(o[j], (o.sum(0) - o[j]) / 2) for j in range(3)]
    assert rows[("human:panel", "ceiling_kappa_loo_mean@all")].value == pytest.approx(np.mean(loo))
    # majority correct on A[0] (3/3), A[1] (2/3); wrong on A[2] (1/3) and A[3] (1/3): B on 2 stimuli
    assert rows[("human:panel", "n_mode_correct@all")].value == 2
    assert rows[("human:panel", "n_mode_unknown@all")].value == 2
    assert rows[("m", "B")].n == 2 and rows[("m", "B")].value == pytest.approx(0.5)
    p = o.mean(0)
    m = np.array(model, float)
    c_obs = np.mean(m * p + (1 - m) * (1 - p))
    c_exp = m.mean() * p.mean() + (1 - m.mean()) * (1 - p.mean())
    assert rows[("m", "kappa_aggregate")].value == pytest.approx((c_obs - c_exp) / (1 - c_exp))
    assert rows[("m", "kappa_pairwise")].value == pytest.approx(
        np.nanmean([kap(model, obs[k]) for k in obs]))


def test_run_tiny_encoder_end_to_end(tmp_path):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import score_file
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "tiny-clip")
    task = TASK + "@n_probe=60,n_test=12"
    run(RunConfig(out=tmp_path / "run", tasks=(task,), models=(f"tiny=hf:{d}",)), progress=False)
    rows = {(r.model, r.metric): r for r in score_file(tmp_path / "run" / "records.jsonl")}
    assert rows[("tiny", "accuracy")].n + rows[("tiny", "accuracy")].n_null == 12
    for m in ("B", "kappa_aggregate", "kappa_pairwise", "chance", "position_floor"):
        assert ("tiny", m) in rows
    assert ("human:panel", "ceiling_kappa_pairwise_mean@test") in rows


def test_tiny_vlm_gets_the_study_question_with_k(tmp_path, monkeypatch):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.records import read_records
    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import score_file
    from perceptbench.seeding import text_hash
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    d = build_tiny_vlm("llava", tmp_path / "tiny-llava")
    task = TASK + "@n_probe=1,n_test=4"
    run(RunConfig(out=tmp_path / "run", tasks=(task,), models=(f"vlm=hf:{d}",), batch_size=4), progress=False)
    recs = [r for r in read_records(tmp_path / "run" / "records.jsonl") if r.model == "vlm"]
    assert len(recs) == 4
    t = get_task(task)
    for r in recs:
        prompt = t.prompt_text.format(k=r.manipulated_value)
        assert f"numbered 1 to {r.manipulated_value} under the plot" in prompt
        assert r.prompt_hash == text_hash(prompt) and r.readout == "vlm_prompt"
        assert r.response is None or r.response in range(1, 11)
    rows = {(r.model, r.metric): r for r in score_file(tmp_path / "run" / "records.jsonl")}
    assert ("vlm", "kappa_aggregate") in rows and ("human:panel", "ceiling_kappa_pairwise_mean@test") in rows


def _cm_rec(task, model, sid, correct, gt, k, family="human", split="test", response=...):
    from perceptbench.tasks.chart_category import WRONG

    if response is ...:
        response = gt if correct else (WRONG if family == "human" else (1 if gt != 1 else 2))
    return plant_record(task, stimulus_id=sid, model=model, model_family=family,
                        readout="human_trial" if family == "human" else "class_probe", response=response,
                        ground_truth=gt, manipulated_value=k, raw_output=None, prompt_id=None, prompt_hash=None,
                        model_version="v", seed=0, run_id="r", split=split)


def _pct_ref(values, key):
    """Mean of the finite values with the 2.5/97.5 percentiles of 2000 seeded resamples of them."""
    from perceptbench.metrics.bootstrap import N_BOOT_KAPPA, BootstrapResult
    from perceptbench.seeding import rng_for

    v = values[np.isfinite(values)]
    if v.size == 0:
        return BootstrapResult(float("nan"), float("nan"), float("nan"), N_BOOT_KAPPA, N_BOOT_KAPPA, SEED)
    idx = rng_for(SEED, "bootstrap-units", key, v.size, N_BOOT_KAPPA).integers(0, v.size, size=(N_BOOT_KAPPA, v.size))
    lo, hi = np.percentile(v[idx].mean(1), [2.5, 97.5])
    return BootstrapResult(float(v.mean()), float(lo), float(hi), N_BOOT_KAPPA, 0, SEED)


def _kap(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    c_obs = np.mean(a * b + (1 - a) * (1 - b))
    c_exp = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
    return (c_obs - c_exp) / (1 - c_exp) if c_exp != 1 else float("nan")


def test_category_mean_score_rows_by_hand():
    """Cells: A (test split; o1-o3 on A0-A3, k 3,3,2,2), P (probe; o4, o5 always right: their
    kappa is undefined), Q (probe; o6 right, o7 wrong on Q0: a tied mode), R (probe; o8 alone
    on R0).  Model m answers A0-A3, Q0, R0 (A2 null)."""
    from perceptbench.metrics.agreement import agreement_b, masked_mean
    from perceptbench.metrics.bootstrap import N_BOOT_KAPPA
    from perceptbench.metrics.capacity import accuracy_by_k
    from perceptbench.metrics.error_consistency import UNDEFINED_REASON, kappa
    from perceptbench.tasks.chart_category import K_LEVELS, CategoryMeanTask, stimulus_id_for

    t = CategoryMeanTask()
    tid = t.task_id
    A = [stimulus_id_for("AAAAAAAAAA", i, "Tab10") for i in range(4)]
    P = [stimulus_id_for("PPPPPPPPPP", i, "Tab10") for i in range(2)]
    Q, R = stimulus_id_for("QQQQQQQQQQ", 0, "Tab10"), stimulus_id_for("RRRRRRRRRR", 0, "Tab10")
    gt = {A[0]: 2, A[1]: 1, A[2]: 2, A[3]: 3, P[0]: 1, P[1]: 1, Q: 1, R: 2}
    kk = {A[0]: 3, A[1]: 3, A[2]: 2, A[3]: 2, P[0]: 4, P[1]: 4, Q: 4, R: 4}
    obs = {"human:o1": {A[0]: 1, A[1]: 1, A[2]: 0, A[3]: 0}, "human:o2": {A[0]: 1, A[1]: 0, A[2]: 0, A[3]: 1},
           "human:o3": {A[0]: 1, A[1]: 1, A[2]: 1, A[3]: 0}, "human:o4": {P[0]: 1, P[1]: 1},
           "human:o5": {P[0]: 1, P[1]: 1}, "human:o6": {Q: 1}, "human:o7": {Q: 0}, "human:o8": {R: 1}}
    recs = [_cm_rec(t, m, s, c, gt[s], kk[s], split="test" if s in A else "probe_train")
            for m, d in obs.items() for s, c in d.items()]
    mc = {A[0]: 1, A[1]: 0, A[2]: 0, A[3]: 1, Q: 0, R: 1}
    recs += [_cm_rec(t, "m", s, c, gt[s], kk[s], family="encoder", response=None if s == A[2] else ...)
             for s, c in reversed(mc.items())]
    got = t.score(recs, SEED)

    def ratio_ref(num, den, strata=None, mask=None):
        mask = np.ones(len(num)) if mask is None else mask
        return bootstrap(lambda i: (num[i] * mask[i]).sum(-1) / (den[i] * mask[i]).sum(-1), len(num),
                         n_draws=N_BOOT_B, seed=SEED, strata=strata)

    want = []
    for name, stims in (("test", A), ("all", A + P + [Q, R])):
        s, hp = "@" + name, "human:panel"
        num = np.array([sum(d.get(x, 0) for d in obs.values()) for x in stims], float)
        den = np.array([sum(x in d for d in obs.values()) for x in stims], float)
        k = np.array([kk[x] for x in stims])
        acc_obs = np.array([np.mean([c for x, c in d.items() if x in stims]) for d in obs.values()
                            if any(x in stims for x in d)])
        # test: 7/12 pooled, observers .5 .5 .75;  all: 13/19 pooled, observers' mean 5.75/8, min 0, max 1
        assert num.sum() / den.sum() == pytest.approx(7 / 12 if name == "test" else 13 / 19)
        assert (acc_obs.mean(), acc_obs.min(), acc_obs.max()) == pytest.approx(
            (7 / 12, 0.5, 0.75) if name == "test" else (5.75 / 8, 0.0, 1.0))
        want += [boot_row(tid, hp, "accuracy" + s, ratio_ref(num, den), int(den.sum()), 0,
                           f"all human trials pooled; bootstrap over {len(stims)} stimuli"),
                 ScoreRow(tid, hp, "observer_accuracy_mean" + s, float(acc_obs.mean()), None, None, len(acc_obs), 0,
                          f"{len(acc_obs)} participants"),
                 ScoreRow(tid, hp, "observer_accuracy_min" + s, float(acc_obs.min()), None, None, len(acc_obs), 0),
                 ScoreRow(tid, hp, "observer_accuracy_max" + s, float(acc_obs.max()), None, None, len(acc_obs), 0)]
        for lev in sorted(set(k.tolist())):  # a(2) = 2/6, a(3) = 5/6, a(4) = 6/7
            mask = (k == lev).astype(float)
            b = ratio_ref(num, den, strata=k, mask=mask)
            assert b.estimate == pytest.approx({2: 2 / 6, 3: 5 / 6, 4: 6 / 7}[lev])
            want.append(boot_row(tid, hp, f"a_k[{lev}]" + s, b, int(den[k == lev].sum()), 0,
                                  "human accuracy at k categories (Tseng et al. 2023 highest-mean judgement: a "
                                  "different task from series counting's a(k), not the same measurement); "
                                  "bootstrap over stimuli by k"))
        o = np.array([[obs[f"human:o{j}"][x] for x in A] for j in (1, 2, 3)], float)
        # pairs o1-o2 0, o1-o3 .5, o2-o3 -.5 (cell A); o4-o5 undefined (both always right); o6-o7 0
        pw = np.array([0.0, 0.5, -0.5] + ([float("nan"), 0.0] if name == "all" else []))
        loo = np.array([_kap(o[j], (o.sum(0) - o[j]) / 2) for j in range(3)])
        n_ok = 3 if name == "test" else 4
        want += [boot_row(tid, hp, "ceiling_kappa_pairwise_mean" + s, _pct_ref(pw, "pairs" + s), n_ok, len(pw) - n_ok,
                           f"mean over {n_ok} pairs of participants who saw the same batch in the same palette "
                           f"({len(pw) - n_ok} undefined pairs left out); CI resamples pairs"),
                 ScoreRow(tid, hp, "ceiling_kappa_pairwise_min" + s, -0.5, None, None, n_ok, 0),
                 ScoreRow(tid, hp, "ceiling_kappa_pairwise_max" + s, 0.5, None, None, n_ok, 0),
                 boot_row(tid, hp, "ceiling_kappa_loo_mean" + s, _pct_ref(loo, "loo" + s), 3, 0,
                           "each participant in a batch x palette cell of >= 3 vs the mean of the others "
                           "in the cell; CI resamples participants")]
        # >= 2 observers: test A0-A3 (4), all + P0 P1 Q (7); strict majority right: A0 A1 (+ P0 P1);
        # wrong: A2 A3; tied: Q (1 of 2)
        multi, ok, wrong, tied = (4, 2, 2, 0) if name == "test" else (7, 4, 2, 1)
        want += [ScoreRow(tid, hp, "n_stimuli_multi_observer" + s, float(multi), None, None, len(stims), 0,
                          "stimuli seen by >= 2 participants: B is defined on these"),
                 ScoreRow(tid, hp, "n_mode_correct" + s, float(ok), None, None, multi, 0,
                          "strict majority correct: modal answer = the answer"),
                 ScoreRow(tid, hp, "n_mode_unknown" + s, float(wrong), None, None, multi, 0,
                          "strict majority wrong: modal answer not released (chosen category not in the data)"),
                 ScoreRow(tid, hp, "n_mode_tied" + s, float(tied), None, None, multi, 0)]
    # model m, by stimulus id: A0 A1 A2 A3 Q R; correct 1 0 0 1 0 1; A2 null
    correct = np.array([1, 0, 0, 1, 0, 1], float)
    valid = np.array([1, 1, 0, 1, 1, 1], bool)
    k = np.array([3, 3, 2, 2, 4, 4])
    p = np.array([1, 2 / 3, 1 / 3, 1 / 3, 1 / 2, 1])  # panel accuracy per stimulus
    known = np.array([1, 1, 0, 0, 0, 0], bool)  # >= 2 observers and a strict majority right: A0 A1
    acc = bootstrap(lambda i: masked_mean(correct[i], valid[i]), 6, n_draws=N_BOOT_B, seed=SEED)
    assert acc.estimate == pytest.approx(3 / 5)  # 3 right of 5 parseable
    b = bootstrap(lambda i: agreement_b(correct[i].astype(bool), (valid & known)[i]), 6, n_draws=N_BOOT_B, seed=SEED)
    assert b.estimate == 0.5  # A0 right, A1 wrong
    ka = bootstrap(lambda i: kappa(correct[i], p[i], valid[i]), 6, n_draws=N_BOOT_KAPPA, seed=SEED)
    # c_obs = (1 + 1/3 + 1/3 + 1/2 + 1)/5 = .6333, c_exp = .6 * .7 + .4 * .3 = .54: kappa .0933/.46
    assert ka.estimate == pytest.approx((0.95 / 1.5 - 0.54) / 0.46)
    # per participant on the stimuli both answered (A2 null left out): o1 o2 o3 on A0 A1 A3, o6 o7 on Q,
    # o8 on R; o7 and o8 give c_exp = 1 (undefined); o4 o5 share nothing with m
    m_of = {A[0]: 1, A[1]: 0, A[3]: 1, Q: 0, R: 1}
    per = np.array([_kap([m_of[x] for x in d if x in m_of], [d[x] for x in d if x in m_of])
                    for _, d in sorted(obs.items()) if any(x in m_of for x in d)])
    assert len(per) == 6 and np.isnan(per).sum() == 2
    want += [boot_row(tid, "m", "accuracy", acc, 5, 1),
             boot_row(tid, "m", "B", b, 2, 1,
                       "match with the human modal answer on stimuli seen by >= 2 participants whose strict majority "
                       "was correct; 3 multi-observer stimuli with a tied or unreleased (wrong) mode and 1 "
                       "single-observer stimuli excluded"),
             boot_row(tid, "m", "kappa_aggregate", ka, 5, 1),
             boot_row(tid, "m", "kappa_pairwise", _pct_ref(per, "pairwise|m"), 4, 1,
                       "mean over 4 participants of kappa(model, participant) on the stimuli both answered "
                       "(2 undefined left out); CI resamples participants")]
    for lev, n_ok, n_null in ((2, 1, 1), (3, 2, 0), (4, 2, 0)):  # a(2) = 1/1, a(3) = 1/2, a(4) = 1/2
        j = K_LEVELS.index(lev)
        bk = bootstrap(lambda i, j=j: accuracy_by_k(correct[i], valid[i], k[i], np.array(K_LEVELS))[:, j], 6,
                       n_draws=N_BOOT_B, seed=SEED, strata=k)
        assert bk.estimate == {2: 1.0, 3: 0.5, 4: 0.5}[lev]
        want.append(boot_row(tid, "m", f"a_k[{lev}]", bk, n_ok, n_null))
    want += [ScoreRow(tid, "m", "chance", 13 / 36, None, None, 6, 0,  # mean 1/k = (2/3 + 1 + 1/2) / 6
                      "mean of 1/k over the answered stimuli (uniform guessing)"),
             ScoreRow(tid, "m", "position_floor", 0.5, None, None, 6, 0,  # answers 2,1,2,3,1,2: "2" 3 of 6
                      "accuracy of always naming the most frequent answer position (seed 000 D.3 floor; the "
                      "release's answers are not uniform over positions)"),
             ScoreRow(tid, "m", "null_rate", 1 / 6, None, None, 6, 1)]
    assert UNDEFINED_REASON
    assert_rows(got, want)


def test_category_mean_split_defaults_to_test_and_refusal_names_the_task():
    from perceptbench.tasks.chart_category import CategoryMeanTask, stimulus_id_for

    t = CategoryMeanTask()
    sids = [stimulus_id_for("AAAAAAAAAA", i, "Tab10") for i in range(2)]
    recs = [plant_record(t, stimulus_id=s, model=m, model_family="human", readout="human_trial", response=2,
                         ground_truth=2, manipulated_value=3, raw_output=None, prompt_id=None, prompt_hash=None,
                         model_version="v", seed=0, run_id="r") for m in ("human:o1", "human:o2") for s in sids]
    metrics = [r.metric for r in t.score(recs, SEED)]
    # records without a split are test trials: both the test and the all panel are written
    assert "accuracy@test" in metrics and "accuracy@all" in metrics
    with pytest.raises(ValueError, match=r"^similarity.chart.category_mean: no human trial records to score against$"):
        t.score([], SEED)


def test_category_ceilings_list_pairs_cell_by_cell_in_observer_name_order():
    from perceptbench.tasks.chart_category import CategoryMeanTask

    # cell {q0, q1} seen by o9 and o8 (inserted first), cell {a0, a1} by o1 and o2
    humans = {"human:o9": {"q0": 1.0, "q1": 0.0}, "human:o8": {"q0": 1.0, "q1": 1.0},
              "human:o1": {"a0": 1.0, "a1": 0.0}, "human:o2": {"a0": 0.0, "a1": 1.0}}
    pw, loo = CategoryMeanTask().scorer._ceilings(humans, {"q0", "q1", "a0", "a1"})
    # cells ordered by their sorted observer names: (o1, o2) first: kappa -1; then (o8, o9): c_exp = 1*.5 +
    # 0*.5 = .5, c_obs = .5 -> 0; no cell of >= 3, so no leave-one-out kappa
    assert pw.tolist() == [-1.0, 0.0] and loo.size == 0


def test_category_mean_six_observer_cell_levels_with_a_gap_and_a_silent_model():
    """One cell of six observers on eight stimuli (k 2 or 4, never 3): fifteen distinct pair kappas,
    so the intervals depend on the resampling stream; a model with no parseable answer."""
    from perceptbench.metrics.error_consistency import UNDEFINED_REASON
    from perceptbench.tasks.chart_category import CategoryMeanTask, stimulus_id_for

    t = CategoryMeanTask()
    sids = [stimulus_id_for("CCCCCCCCCC", i, "Tab10") for i in range(8)]
    k = [2, 4, 2, 4, 2, 4, 2, 4]
    o = np.array([[1, 1, 0, 1, 0, 1, 1, 0], [1, 0, 0, 1, 1, 1, 0, 0], [0, 1, 1, 1, 0, 0, 1, 1],
                  [1, 1, 1, 0, 0, 1, 0, 1], [0, 0, 1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0, 0, 1]], float)
    recs = [_cm_rec(t, f"human:o{j}", s, o[j, i], 2, k[i]) for j in range(6) for i, s in enumerate(sids)]
    recs += [_cm_rec(t, "mute", s, 0, 2, k[i], family="encoder", response=None) for i, s in enumerate(sids)]
    rows = {(r.model, r.metric): r for r in t.score(recs, SEED)}
    pw = np.array([_kap(o[a], o[b]) for a in range(6) for b in range(a + 1, 6)])
    loo = np.array([_kap(o[j], (o.sum(0) - o[j]) / 5) for j in range(6)])
    for metric, ref in (("ceiling_kappa_pairwise_mean@all", _pct_ref(pw, "pairs@all")),
                        ("ceiling_kappa_loo_mean@all", _pct_ref(loo, "loo@all"))):
        r = rows[("human:panel", metric)]
        assert (r.value, r.ci_low, r.ci_high) == pytest.approx((ref.estimate, ref.low, ref.high), abs=1e-12)
    # levels 2 and 4 are scored, 3 (between them) is skipped, not the end of the loop
    assert ("human:panel", "a_k[4]@all") in rows and ("human:panel", "a_k[3]@all") not in rows
    assert ("mute", "a_k[4]") in rows and ("mute", "a_k[3]") not in rows
    # the silent model: no kappa defined, each row says why; no participant to pair it with
    assert rows[("mute", "kappa_aggregate")].note == UNDEFINED_REASON
    assert rows[("mute", "kappa_pairwise")].n == 0 and math.isnan(rows[("mute", "kappa_pairwise")].value)
    # a model answering a stimulus without human trials is refused, naming it
    stray = [_cm_rec(t, "m", stimulus_id_for("ZZZZZZZZZZ", 0, "Tab10"), 1, 2, 2, family="encoder")]
    with pytest.raises(ValueError, match=r"^similarity.chart.category_mean: m answered tseng_ZZZZZZZZZZ_00_Tab10, "
                                         r"which has no human trial$"):
        t.score(recs + stray, SEED)


def test_category_mean_position_floor_counts_answer_positions_above_three():
    """The floor is the share of the most frequent answer position among all k positions: here
    position 5 (3 of 4 stimuli), which a three-position floor would not see."""
    from perceptbench.tasks.chart_category import CategoryMeanTask, stimulus_id_for

    t = CategoryMeanTask()
    sids = [stimulus_id_for("DDDDDDDDDD", i, "Tab10") for i in range(4)]
    gts = [5, 5, 5, 1]
    recs = [_cm_rec(t, "human:o1", s, 1, gt, 6) for s, gt in zip(sids, gts)]
    recs += [_cm_rec(t, "m", s, 1, gt, 6, family="encoder") for s, gt in zip(sids, gts)]
    rows = {(r.model, r.metric): r for r in t.score(recs, SEED)}
    assert rows[("m", "position_floor")].value == 0.75


def test_category_mean_leave_one_out_interval_resamples_participants_on_its_own_stream():
    """Twelve participants in one cell: twelve distinct leave-one-out kappas, enough that the
    interval depends on the resampling stream (``loo@all``), which is the pairs' stream's sibling."""
    from perceptbench.tasks.chart_category import CategoryMeanTask, stimulus_id_for

    t = CategoryMeanTask()
    sids = [stimulus_id_for("EEEEEEEEEE", i, "Tab10") for i in range(10)]
    o = np.random.default_rng(7).integers(0, 2, size=(12, 10)).astype(float)
    recs = [_cm_rec(t, f"human:o{j:02d}", s, o[j, i], 2, 3) for j in range(12) for i, s in enumerate(sids)]
    loo = np.array([_kap(o[j], (o.sum(0) - o[j]) / 11) for j in range(12)])
    ref, other = _pct_ref(loo, "loo@all"), _pct_ref(loo, "XXlooXX@all")
    assert (ref.low, ref.high) != (other.low, other.high)  # the stream shows in the interval
    r = {(x.model, x.metric): x for x in t.score(recs, SEED)}[("human:panel", "ceiling_kappa_loo_mean@all")]
    assert (r.value, r.ci_low, r.ci_high) == pytest.approx((ref.estimate, ref.low, ref.high), abs=1e-12)


def test_category_ceilings_pool_the_leave_one_out_kappas_of_every_cell_of_three():
    from perceptbench.tasks.chart_category import CategoryMeanTask

    cells = {"a": np.array([[1, 0, 1, 0], [0, 1, 1, 0], [1, 1, 0, 1]], float),
             "b": np.array([[1, 0, 0, 1], [0, 0, 1, 1], [1, 1, 0, 0]], float)}
    humans = {f"human:{c}{j}": {f"{c}{i}": o[j, i] for i in range(4)} for c, o in cells.items() for j in range(3)}
    pw, loo = CategoryMeanTask().scorer._ceilings(humans, {f"{c}{i}" for c in cells for i in range(4)})
    # cell a's three observers, then cell b's (cells in observer-name order), each vs the mean of the other two
    want = [_kap(o[j], (o.sum(0) - o[j]) / 2) for o in cells.values() for j in range(3)]
    np.testing.assert_allclose(loo, want, equal_nan=True)
    assert pw.size == 6


# ---------------------------------------------------------------- renderer versions (issue 25, item 3)

V1_SHA = "f4cfa04505cf85421864f828202b9e4549ea74d6eaf2e89cb3a5d583113dc703"
"""image_sha256 of GGHS73HTQE/7 in Tab10 with the answer row, rendered by the task's first renderer
(4x, Lanczos), computed with the code before renderer version 2 existed."""


def test_renderer_version_1_reproduces_the_earlier_pixels_and_2_differs_only_at_edges():
    from perceptbench.seeding import image_sha256

    p = ts.load_plots()[("GGHS73HTQE", 7)]
    colors = ts.palettes()["Tab10"]
    v1, v2 = ts.render_plot(p, colors, version=1), ts.render_plot(p, colors)
    assert image_sha256(v1) == V1_SHA
    assert image_sha256(v2) == image_sha256(ts.render_plot(p, colors, version=2))  # deterministic
    assert image_sha256(v2) != V1_SHA and v2.size == v1.size
    a, b = np.asarray(v1, dtype=int), np.asarray(v2, dtype=int)
    d = np.abs(a - b)
    # the stated tolerance (docs/metrics.md): same shapes and colours; the box filter drops the Lanczos
    # ringing at edges: mean |difference| under 1 of 255, none above 64
    assert d.mean() < 1.0 and d.max() <= 64
    # a box filter has no ringing: every channel of v2 lies within the range of the drawn colours and
    # pixels are pure white wherever the 4x drawing was white (far from any shape)
    assert (a[5, 400:] == 255).all() and (b[5, 400:] == 255).all()
    assert tuple(b[418, int(460 / p.category_num * 0.5)]) == hex_to_rgb(colors[0])


def test_renderer_version_is_a_task_setting_recorded_on_every_record():
    t = get_task(TASK + "@n_test=2,n_probe=2")
    assert t.params["renderer"] == str(ts.RENDERER_VERSION) == "2" and t.task_id == TASK + "@n_probe=2,n_test=2"
    old = get_task(TASK + "@n_test=2,n_probe=2,renderer=1")
    assert old.task_id == TASK + "@n_probe=2,n_test=2,renderer=1"
    s2, s1 = t.stimuli(0)[0], old.stimuli(0)[0]
    assert s1.stimulus_id == s2.stimulus_id
    plot = ts.load_plots()[(s2.meta["batch"], s2.meta["plot_index"])]
    colors = ts.palettes()[s2.meta["palette"]]
    assert s2.render().tobytes() == ts.render_plot(plot, colors, version=2).tobytes()
    assert s1.render().tobytes() == ts.render_plot(plot, colors, version=1).tobytes()
    rec = plant_record(t, stimulus_id=s2.stimulus_id, response=1, ground_truth=s2.ground_truth)
    assert rec.run_meta.model_extra["task_params"]["renderer"] == "2"
    with pytest.raises(ValueError, match="renderer"):
        get_task(TASK + "@renderer=3")
    with pytest.raises(ValueError, match="renderer version 3"):
        ts.render_plot(plot, colors, version=3)


def test_a_run_written_with_the_earlier_renderer_is_not_resumed(tmp_path):
    """Records written before renderer version 2 carry no ``renderer`` in ``task_params``: a resume
    with version 2's images is refused, naming the setting, before anything is written."""
    from perceptbench.runner import RunConfig, run
    from helpers.records import plant_records

    tid = TASK + "@n_probe=2,n_test=2"
    t = get_task(tid)
    s = [x for x in t.stimuli(0) if x.split == "test"][0]
    rec = plant_record(t, stimulus_id=s.stimulus_id, response=1, ground_truth=s.ground_truth,
                       model="efficientnet-lite0", model_family="encoder", readout="class_probe", split="test")
    meta = rec.run_meta.model_dump()
    meta["task_params"] = {k: v for k, v in meta["task_params"].items() if k != "renderer"}  # as version 1 wrote
    rec = rec.model_copy(update={"run_meta": type(rec.run_meta)(**meta)})
    path = plant_records(tmp_path / "run", [rec])
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"task settings changed.*'renderer': None\} -> \{'renderer': '2'\}"):
        run(RunConfig(out=tmp_path / "run", tasks=(tid,)), progress=False)
    assert path.read_bytes() == before


def test_renderer_2_keeps_the_default_encoders_features_within_the_stated_tolerance():
    """docs/performance.md: on 160 stimuli the default encoder's features of renderer 1 and 2 have
    cosine >= 0.9989 (different stimuli: median 0.91); stated tolerance 0.998."""
    pytest.importorskip("timm", reason="model extra not installed")
    from perceptbench.models.registry import load_model

    m = load_model("efficientnet-lite0")
    st2 = get_task(TASK + "@n_test=3,n_probe=1").stimuli(0)
    st1 = get_task(TASK + "@n_test=3,n_probe=1,renderer=1").stimuli(0)
    e1, e2 = m.embed([s.render() for s in st1]), m.embed([s.render() for s in st2])
    cos = (e1 * e2).sum(1) / np.linalg.norm(e1, axis=1) / np.linalg.norm(e2, axis=1)
    assert (cos >= 0.998).all() and (cos < 1 - 1e-7).all()  # close, and really other pixels
