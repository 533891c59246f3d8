"""tasks/gestalt.py: the silhouette, mark-colour and series-count tasks' score rows, written out by hand
from synthetic records, and the kernel odd-one-out rule."""

import numpy as np
import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from perceptbench.tasks import get_task

from helpers.records import plant_record
from helpers.score_rows import SEED, assert_rows, boot_row, values_equal


# stimulus: ground truth, split, responses of observers h1..h4 (na = no answer, left out of the vote)
SIL = {
    "sil_t0": ("airplane", "test", ["airplane", "airplane", "bear", "na"]),   # mode airplane
    "sil_t1": ("bear", "test", ["bear", "cat", "cat", "bear"]),               # tied: no mode
    "sil_t2": ("bird", "test", ["bird", "bird", "bird", "dog"]),              # mode bird
    "sil_t3": ("boat", "test", ["car", "boat", "car", "na"]),                 # mode car (wrong)
    "sil_t4": ("car", "test", ["car", "car", "na", "car"]),                   # mode car
    "sil_t5": ("cat", "test", ["cat", "dog", "cat", "cat"]),                  # mode cat
    "sil_p0": ("dog", "probe_train", ["dog", "dog", "bear", "dog"]),          # mode dog
    "sil_p1": ("clock", "probe_train", ["clock", "na", "na", "na"]),          # mode clock (3 na not counted)
}


SIL_MODELS = {  # first appearance order vlm_b, vlm_a, enc (rows come in that order)
    "vlm_b": {"sil_t0": "bear", "sil_t1": "bear", "sil_t2": "bird", "sil_t3": "car", "sil_t4": None, "sil_t5": "cat"},
    "vlm_a": {"sil_t0": "airplane", "sil_t1": "cat", "sil_t2": "bird", "sil_t3": "boat", "sil_t4": "car",
              "sil_t5": "dog"},
    "enc": {"sil_t0": "airplane", "sil_t1": None, "sil_t2": None},
    "mute": {"sil_t0": None, "sil_t1": None, "sil_t2": None},  # nothing valid: every kappa undefined
    "solo": {"sil_t2": "bird"},  # one trial
}


def _sil_records(task, sil=SIL, who="human:h"):
    recs = []
    for m, answers in SIL_MODELS.items():
        for sid, r in reversed(answers.items()):
            recs.append(plant_record(task, stimulus_id=sid, model=m, model_family="vlm", readout="vlm_prompt",
                                     response=r, ground_truth=sil[sid][0], manipulated_value=None, raw_output=str(r),
                                     prompt_id="p", prompt_hash="h", model_version="v", seed=0, run_id="r"))
    for j in (3, 1, 0, 2):  # observers in no particular order: they are sorted by name
        for sid, (gt, split, resp) in sil.items():
            recs.append(plant_record(task, stimulus_id=sid, model=f"{who}{j + 1}", model_family="human",
                                     readout="human_trial", response=resp[j], ground_truth=gt, manipulated_value=None,
                                     raw_output=resp[j], prompt_id="p", prompt_hash="h", model_version="v", seed=0,
                                     run_id="r", **({} if split is None else {"split": split})))
    return recs


def _nanmean0(x):
    x = np.asarray(x, float)
    ok = ~np.isnan(x)
    k = ok.sum(0)
    return np.where(k > 0, np.where(ok, x, 0.0).sum(0) / np.maximum(k, 1), np.nan)


def _mode_ref(votes):
    from collections import Counter

    c = Counter(v for v in votes if v not in ("na", None)).most_common()
    return None if not c or (len(c) > 1 and c[0][1] == c[1][1]) else c[0][0]


def _sil_expected(tid, SIL=SIL, who="human:h"):  # noqa: N803 (the table being scored)
    """Every row of the silhouette task on SIL / SIL_MODELS, from the metric functions by the
    gathering path (index matrices), not the task's count path."""
    from perceptbench.metrics.agreement import masked_mean, null_bracket
    from perceptbench.metrics.bootstrap import N_BOOT_KAPPA
    from perceptbench.metrics.error_consistency import (
        UNDEFINED_REASON, kappa, kappa_pairwise_mean, leave_one_out_ceiling, pairwise_ceiling)

    stims = sorted(SIL)  # sil_p0 sil_p1 sil_t0 .. sil_t5
    gt = [SIL[s][0] for s in stims]
    resp = np.array([SIL[s][2] for s in stims], dtype=object).T  # (J, n)
    obs = (resp == np.array(gt, dtype=object)[None]).astype(float)
    J = 4
    humans = [f"{who}{j + 1}" for j in range(J)]
    hp = "human:panel"

    def why(v, note=""):
        return note if np.isfinite(v) else (f"undefined: every observer pair's kappa is undefined ({UNDEFINED_REASON})"
                                            + (f"; {note}" if note else ""))

    def kn(v):
        return "" if np.isfinite(v) else UNDEFINED_REASON

    def boot(stat, n, nd):
        return bootstrap(stat, n, n_draws=nd, seed=SEED)

    rows = []
    for name, cols in (("test", [i for i, st in enumerate(stims) if SIL[st][1] in ("test", None)]),
                       ("all", list(range(len(stims))))):
        s, O, R, n = "@" + name, obs[:, cols], resp[:, cols], len(cols)
        modal = [_mode_ref(R[:, k]) for k in range(n)]
        acc = O.mean(1)
        pw = pairwise_ceiling(O)
        loo = leave_one_out_ceiling(O)
        others = (O.sum(0)[None] - O) / (J - 1)
        pw_b = boot(lambda i: _nanmean0(pairwise_ceiling(O[:, i])), n, N_BOOT_KAPPA)
        loo_b = boot(lambda i: _nanmean0(kappa(O[:, i], others[:, i])), n, N_BOOT_KAPPA)
        n_undef = int(np.isnan(pw).sum())
        pw_note = f"mean over {len(pw)} observer pairs" + (
            f"; {n_undef} pair(s) with undefined kappa left out" if n_undef else "")
        panel = [ScoreRow(tid, hp, "observer_accuracy_mean" + s, float(acc.mean()), None, None, n, 0),
                 ScoreRow(tid, hp, "observer_accuracy_min" + s, float(acc.min()), None, None, n, 0),
                 ScoreRow(tid, hp, "observer_accuracy_max" + s, float(acc.max()), None, None, n, 0),
                 boot_row(tid, hp, "ceiling_kappa_pairwise_mean" + s, pw_b, n, 0, why(pw_b.estimate, pw_note))]
        def ext(x, fn):
            return float(fn(x[~np.isnan(x)])) if (~np.isnan(x)).any() else float("nan")

        for metric, v in (("ceiling_kappa_pairwise_min", ext(pw, np.min)),
                          ("ceiling_kappa_pairwise_max", ext(pw, np.max))):
            panel.append(ScoreRow(tid, hp, metric + s, float(v), None, None, n, 0, why(v)))
        panel.append(boot_row(tid, hp, "ceiling_kappa_loo_mean" + s, loo_b, n, 0,
                               why(loo_b.estimate, "each observer vs leave-one-out mean of the others")))
        for metric, v in (("ceiling_kappa_loo_min", ext(loo, np.min)), ("ceiling_kappa_loo_max", ext(loo, np.max))):
            panel.append(ScoreRow(tid, hp, metric + s, float(v), None, None, n, 0, why(v)))
        panel.append(ScoreRow(tid, hp, "n_tied_mode" + s, float(sum(x is None for x in modal)), None, None, n, 0,
                              "images whose modal response is tied: no modal reference"))
        obs_rows, b_obs = [], []
        for j, h in enumerate(humans):
            lm = [_mode_ref(np.delete(R[:, k], j)) for k in range(n)]
            has = np.array([x is not None for x in lm])
            match = np.array([R[j, k] == lm[k] for k in range(n)], float)
            a = boot(lambda i: O[j][i].mean(1), n, N_BOOT_B)
            b = boot(lambda i: masked_mean(match[i], has[i]), n, N_BOOT_B)
            kl = boot(lambda i: kappa(O[j][i], others[j][i]), n, N_BOOT_KAPPA)
            b_obs.append(b.estimate)
            obs_rows += [boot_row(tid, h, "accuracy" + s, a, n, 0),
                         boot_row(tid, h, "B" + s, b, int(has.sum()), 0,
                                   "modal match; " + ("1 tied-mode image" if (~has).sum() == 1 else f"{int((~has).sum())} tied-mode images") + " excluded"),
                         boot_row(tid, h, "kappa_loo" + s, kl, n, 0, kn(kl.estimate) or "vs leave-one-out panel mean")]
        panel.append(ScoreRow(tid, hp, "observer_B_mean" + s, float(np.mean(b_obs)), None, None, n, 0,
                              "mean over observers of B against the modal response of the other observers "
                              "(leave-one-out mode)"))
        rows += panel + obs_rows
    for m, answers in SIL_MODELS.items():
        sids = sorted(answers)
        cols = [stims.index(x) for x in sids]
        n, O, R = len(cols), obs[:, cols], resp[:, cols]
        r = [answers[x] for x in sids]
        valid = np.array([x is not None for x in r])
        correct = np.array([x == SIL[sid][0] for x, sid in zip(r, sids)], float)
        modal = [_mode_ref(R[:, k]) for k in range(n)]
        has = np.array([x is not None for x in modal])
        match = valid & np.array([x == h for x, h in zip(r, modal)])
        vb = valid & has
        p = O.mean(0)
        loo_match = np.array([[R[j, k] == _mode_ref(np.delete(R[:, k], j)) for k in range(n)] for j in range(J)])
        loo_valid = np.array([[_mode_ref(np.delete(R[:, k], j)) is not None for k in range(n)] for j in range(J)])
        nv, nn = int(valid.sum()), int((~valid).sum())

        def k_agg(i):
            return kappa(correct[i], p[i], valid[i])

        def b_of(i):
            return masked_mean(match[i], vb[i])

        acc = boot(lambda i: masked_mean(correct[i], valid[i]), n, N_BOOT_B)
        b = boot(b_of, n, N_BOOT_B)
        ka = boot(k_agg, n, N_BOOT_KAPPA)
        kp = boot(lambda i: kappa_pairwise_mean(correct[i], O[:, i], valid[i]), n, N_BOOT_KAPPA)
        def ratio(a, b):  # never clipped; undefined where the ceiling is 0 or undefined
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where((b != 0) & np.isfinite(b), a / b, np.nan)

        kr = boot(lambda i: ratio(k_agg(i), _nanmean0(pairwise_ceiling(O[:, i]))), n, N_BOOT_KAPPA)
        br = boot(lambda i: ratio(b_of(i), _nanmean0(masked_mean(loo_match[:, i], loo_valid[:, i]))), n, N_BOOT_B)
        rows += [boot_row(tid, m, "accuracy", acc, nv, nn),
                 boot_row(tid, m, "B", b, int(vb.sum()), nn,
                           "modal match; " + ("1 tied-mode image" if (~has).sum() == 1 else f"{int((~has).sum())} tied-mode images") + " excluded"),
                 boot_row(tid, m, "kappa_aggregate", ka, nv, nn, kn(ka.estimate)),
                 boot_row(tid, m, "kappa_pairwise", kp, nv, nn, kn(kp.estimate))]
        for metric, res, what in (
                ("kappa_over_ceiling", kr,
                 "kappa_aggregate / ceiling_kappa_pairwise_mean (mean kappa over observer pairs)"),
                ("B_over_ceiling", br, "B / observer_B_mean (observers vs the leave-one-out modal response)")):
            if not np.isfinite(res.estimate):
                note = f"undefined: {what.split(' / ')[0]} or its human ceiling is undefined or 0"
            elif res.estimate > 1:
                note = (f"{what}; above 1: the model agrees with the panel more than the average human does "
                        "(not clipped; read with the interval)")
            else:
                note = what
            rows.append(boot_row(tid, m, metric, res, n, nn, note))
        nu = nn / n
        rows.append(ScoreRow(tid, m, "null_rate", nu, None, None, n, nn))
        if not np.isfinite(b.estimate):  # no bracket around an undefined B
            continue
        lo, hi = null_bracket(b.estimate, nu)
        rows += [ScoreRow(tid, m, "B_full_low", lo, None, None, n, nn, "null bracket (1-nu)B <= B_full (seed 000 D.4)"),
                 ScoreRow(tid, m, "B_full_high", hi, None, None, n, nn,
                          "null bracket B_full <= (1-nu)B + nu (seed 000 D.4)")]
    return rows


def test_silhouette_score_rows_by_hand():
    task = get_task("closure.nat.silhouette")
    got = task.score(_sil_records(task), SEED)
    assert_rows(got, _sil_expected(task.task_id), tol=1e-12)
    # the same correctness with other wrong answers (h3 says cat, not car, on t3): the modes and the
    # leave-one-out modes change, so nothing computed for the first panel may be reused
    other = dict(SIL, sil_t3=("boat", "test", ["car", "boat", "cat", "na"]))
    assert_rows(task.score(_sil_records(task, other), SEED), _sil_expected(task.task_id, other), tol=1e-12)
    # no stimulus in the test split: the panel is still scored on all images
    probe = {k: (gt, "probe_train", r) for k, (gt, _, r) in SIL.items()}
    metrics = {r.metric for r in task.score(_sil_records(task, probe), SEED) if r.model == "human:panel"}
    assert "observer_B_mean@all" in metrics and not any(x.endswith("@test") for x in metrics)
    by = {(r.model, r.metric): r for r in got}
    # by hand, test split (t0..t5): modes airplane, -, bird, car, car, cat (one tied)
    assert by[("human:panel", "n_tied_mode@test")].value == 1
    assert by[("human:panel", "n_tied_mode@all")].value == 1  # p1: clock vs three na is a mode, not a tie
    # vlm_a vs the modes: t0 airplane=, t2 bird=, t3 boat!=car, t4 car=, t5 dog!=cat -> 3/5
    assert by[("vlm_a", "B")].value == pytest.approx(3 / 5) and by[("vlm_a", "B")].n == 5
    # vlm_b: t0 bear!=, t2 bird=, t3 car=, t4 null, t5 cat= -> 3/4; accuracy t1 t2 t5 right of 5 valid
    assert by[("vlm_b", "B")].value == pytest.approx(3 / 4) and by[("vlm_b", "accuracy")].value == pytest.approx(3 / 5)
    assert by[("vlm_b", "null_rate")].value == pytest.approx(1 / 6)
    # null bracket (seed 000 D.4): (1 - 1/6) * 3/4 = 0.625 and + 1/6
    assert by[("vlm_b", "B_full_low")].value == pytest.approx(0.625)
    assert by[("vlm_b", "B_full_high")].value == pytest.approx(0.625 + 1 / 6)
    # observers: accuracy on the test split h1 5/6, h2 4/6, h3 2/6, h4 3/6
    assert [by[(f"human:h{j}", "accuracy@test")].value for j in (1, 2, 3, 4)] == pytest.approx(
        [5 / 6, 4 / 6, 2 / 6, 3 / 6])


def test_silhouette_score_refuses_bad_panels():
    task = get_task("closure.nat.silhouette")
    recs = _sil_records(task)
    with pytest.raises(ValueError, match=r"^closure.nat.silhouette: no human observer records to score against$"):
        task.score([r for r in recs if not r.model.startswith("human:")], SEED)
    short = [r for r in recs if not (r.model == "human:h2" and r.stimulus_id in ("sil_t0", "sil_p1"))]
    with pytest.raises(ValueError, match=r"^closure.nat.silhouette: observer human:h2 lacks trials for 2 stimuli$"):
        task.score(short, SEED)
    extra = recs + [plant_record(task, stimulus_id=sid, model="stray", model_family="vlm", readout="vlm_prompt",
                                 response="cat", ground_truth="cat", manipulated_value=None, raw_output="cat",
                                 prompt_id="p", prompt_hash="h", model_version="v", seed=0, run_id="r")
                    for sid in ("sil_x9", "sil_p0")]  # sil_p0 is the first human column (0): the error names x9
    with pytest.raises(ValueError, match=r"^closure.nat.silhouette: stray answered sil_x9, which has no human data$"):
        task.score(extra, SEED)


MARK = ["mark_0-1-2", "mark_0-1-3", "mark_0-1-4", "mark_0-1-5", "mark_0-1-6"]


MARK_GT = [1, 2, None, 3, 1]  # the tm kernel's answer position; mark_0-1-4 tied under tm: no answer


MARK_RESP = {  # first appearance order: vlm, enc, human:kernel-sa, human:kernel-tm, human:kernel-l5
    "vlm": [1, None, 1, 2, 1],
    "enc": [1, 2, ..., 1, ...],   # ... = not answered (3 trials)
    "human:kernel-sa": [2, 2, None, 3, 1],
    "human:kernel-tm": MARK_GT,
    "human:kernel-l5": [1, 3, 2, 3, None],
}


def _mark_records(task):
    recs = []
    for m, resp in MARK_RESP.items():
        human = m.startswith("human:")
        for sid, gt, r in reversed(list(zip(MARK, MARK_GT, resp))):
            if r is ...:
                continue
            recs.append(plant_record(task, stimulus_id=sid, model=m, model_family="human" if human else "vlm",
                                     readout="human_kernel" if human else "vlm_prompt", response=r, ground_truth=gt,
                                     manipulated_value=None, raw_output=str(r), prompt_id="p", prompt_hash="h",
                                     model_version="v", seed=0, run_id="r"))
    return recs


def test_mark_colour_score_rows_by_hand():
    from perceptbench.metrics.agreement import masked_mean

    task = get_task("similarity.chart.mark_color")
    tid = task.task_id

    def b_row(m, match, valid):
        match, valid = np.array(match, bool), np.array(valid, bool)
        b = bootstrap(lambda i: masked_mean(match[i], valid[i]), len(match), n_draws=N_BOOT_B, seed=SEED)
        return b, b.estimate

    def floors(m, floor, n_t, n_none, n):
        return [ScoreRow(tid, m, "position_floor", floor, None, None, n_t, 0,
                         "max_k target-position frequency (seed 000 D.3)"),
                ScoreRow(tid, m, "n_no_human_ref", float(n_none), None, None, n, 0,
                         "triplets with a tied minimum pair under this kernel: excluded")]

    def nulls(m, n, n_null, b):
        nu = n_null / n
        return [ScoreRow(tid, m, "null_rate", nu, None, None, n, n_null),
                ScoreRow(tid, m, "B_full_low", (1 - nu) * b, None, None, n, n_null,
                         "null bracket (1-nu)B <= B_full (seed 000 D.4)"),
                ScoreRow(tid, m, "B_full_high", (1 - nu) * b + nu, None, None, n, n_null,
                         "null bracket B_full <= (1-nu)B + nu (seed 000 D.4)")]

    note = "agreement with the kernel's odd-one-out"
    want = []
    # vlm: 1=1, null, no answer, 2!=3, 1=1 -> 2/3 on 3; floor of targets 1,2,3,1 = 2/4; 1 of 5 without answer
    b, est = b_row("vlm", [1, 0, 0, 0, 1], [1, 0, 0, 1, 1])
    assert est == pytest.approx(2 / 3)
    want += [boot_row(tid, "vlm", "B", b, 3, 1, note)] + floors("vlm", 0.5, 4, 1, 5) + nulls("vlm", 5, 1, est)
    # enc on mark_0-1-2, -3, -5: 1=1, 2=2, 1!=3 -> 2/3; targets 1,2,3: floor 1/3
    b, est = b_row("enc", [1, 1, 0], [1, 1, 1])
    want += [boot_row(tid, "enc", "B", b, 3, 0, note)] + floors("enc", 1 / 3, 3, 0, 3) + nulls("enc", 3, 0, est)
    # kernel sa: 2!=1, 2=2, both none, 3=3, 1=1 -> 3/4; a human respondent gets no floor rows
    b, est = b_row("human:kernel-sa", [0, 1, 0, 1, 1], [1, 1, 0, 1, 1])
    assert est == 0.75
    want.append(boot_row(tid, "human:kernel-sa", "B", b, 4, 1, note))
    # kernel l5: 1=1, 3!=2, no answer, 3=3, null -> 2/3
    b, est = b_row("human:kernel-l5", [1, 0, 0, 1, 0], [1, 1, 0, 1, 0])
    want.append(boot_row(tid, "human:kernel-l5", "B", b, 3, 1, note))
    want += floors("human:kernels", 0.5, 4, 1, 5)  # from the first respondent's (vlm's) five trials
    # kernels pairwise, sorted l5 sa tm: l5~sa differ on 0-1-2, -3, -4, -6 (4); l5~tm on -3, -4, -6 (3); sa~tm on -2
    why = "triplets whose human answer differs between kernels"
    want += [ScoreRow(tid, "human:kernels", "n_differ[l5~sa]", 4.0, None, None, 5, 0, why),
             ScoreRow(tid, "human:kernels", "n_differ[l5~tm]", 3.0, None, None, 5, 0, why),
             ScoreRow(tid, "human:kernels", "n_differ[sa~tm]", 1.0, None, None, 5, 0, why),
             ScoreRow(tid, "human:kernels", "n_differ_min", 1.0, None, None, 5, 0),
             ScoreRow(tid, "human:kernels", "n_differ_max", 4.0, None, None, 5, 0)]
    assert_rows(task.score(_mark_records(task), SEED), want)
    # one kernel only: no agreement rows
    one = [r for r in _mark_records(task) if r.model in ("vlm", "human:kernel-tm")]
    assert not [r for r in task.score(one, SEED) if r.metric.startswith("n_differ")]
    # two kernels, l5 without mark_0-1-2: compared on the 4 triplets both have (-3, -4, -6 differ)
    two = [r for r in _mark_records(task) if r.model in ("vlm", "human:kernel-tm", "human:kernel-l5")
           and not (r.model == "human:kernel-l5" and r.stimulus_id == "mark_0-1-2")]
    got = {r.metric: (r.value, r.n) for r in task.score(two, SEED) if r.metric.startswith("n_differ")}
    assert got == {"n_differ[l5~tm]": (3.0, 4), "n_differ_min": (3.0, 4), "n_differ_max": (3.0, 4)}


def test_series_count_score_rows_by_hand():
    from perceptbench.metrics.agreement import masked_mean
    from perceptbench.metrics.bootstrap import resample_indices
    from perceptbench.metrics.capacity import accuracy_by_k, capacity_k

    task = get_task("similarity.chart.series_count@n_test=30")
    tid = task.task_id
    levels = np.arange(2, 17)
    ks = [2 + (i % 15) for i in range(30)]  # every k = 2..16 twice
    answers = {
        # right up to k = 8, one over above, null at the first k = 3: a(k<=4) = 1, a(9) = 0 -> capacity 9 (in band)
        "good": [None if i == 1 else (k if k <= 8 else k + 1) for i, k in enumerate(ks)],
        # always "2": a(2) = 1, a(3) = a(4) = 0, baseline 1/3, a(3) = 0 < 1/6 -> capacity 3 (outside the band)
        "bad": [2] * 30,
        # 15 trials, all right: a(k) never drops -> capacity undefined
        "short": list(range(2, 17)),
        # right up to k = 4, one of the two k = 5 right (a(5) = .5, not < .5), wrong from 6: capacity 6, the
        # band's lower edge; a draw with both k = 5 trials wrong (about 1 in 4) gives 5, outside
        "edge6": [k if k <= 4 or (k == 5 and i < 15) else k + 1 for i, k in enumerate(ks)],
        # right up to 11, wrong from 12: capacity 12, the band's upper edge, in every draw
        "edge12": [k if k <= 11 else k + 1 for k in ks],
        # k = 2..10 only (levels 11..16 never shown: no a(k) rows for them), all right: capacity undefined
        "partial": list(range(2, 11)),
    }
    k_of = {"short": list(range(2, 17)), "partial": list(range(2, 11))}
    recs = []
    for m, ans in answers.items():
        kk = k_of.get(m, ks)
        for i in reversed(range(len(ans))):
            recs.append(plant_record(task, stimulus_id=f"t{i:03d}_{m}", model=m, model_family="encoder",
                                     readout="ridge_round", response=ans[i], ground_truth=kk[i],
                                     manipulated_value=kk[i], raw_output=str(ans[i]), prompt_id=None, prompt_hash=None,
                                     model_version="v", seed=0, run_id="r"))
    want = []
    cap_want = {"good": 9.0, "bad": 3.0, "short": float("nan"), "edge6": 6.0, "edge12": 12.0, "partial": float("nan")}
    in_band_of = {}
    for m, ans in answers.items():
        k = np.array(k_of.get(m, ks))
        n = len(k)
        valid = np.array([a is not None for a in ans])
        correct = np.array([a == kk for a, kk in zip(ans, k)], float)
        err = np.array([abs(a - kk) if a is not None else 0 for a, kk in zip(ans, k)], float)
        n_null = int((~valid).sum())

        def boot(stat):
            return bootstrap(stat, n, n_draws=N_BOOT_B, seed=SEED, strata=k)

        def cap(i):
            return capacity_k(accuracy_by_k(correct[i], valid[i], k[i], levels), levels)

        want += [boot_row(tid, m, "accuracy", boot(lambda i: masked_mean(correct[i], valid[i])), int(valid.sum()),
                           n_null, "bootstrap stratified by k"),
                 boot_row(tid, m, "mean_abs_error", boot(lambda i: masked_mean(err[i], valid[i])), int(valid.sum()),
                           n_null, "|response - k| over parseable answers; bootstrap stratified by k")]
        for j, lev in enumerate(levels):
            at = k == lev
            if not at.any():
                continue
            want.append(boot_row(tid, m, f"a_k[{lev}]", boot(lambda i, j=j: accuracy_by_k(
                correct[i], valid[i], k[i], levels)[:, j]), int((at & valid).sum()), int((~valid[at]).sum())))
        cb = boot(cap)
        assert values_equal(cb.estimate, cap_want[m])
        finite = np.isfinite(cb.estimate)
        want.append(boot_row(tid, m, "capacity_k", cb, n, n_null,
                              "smallest k with a(k) < 0.5 mean a(k<=4); bootstrap stratified by k" if finite else
                              "a(k) never fell below half of mean a(k<=4) within k=2..16, or baseline is 0"))
        draws = cap(resample_indices(n, N_BOOT_B, SEED, k))
        in_band = float((np.isfinite(draws) & (draws >= 6) & (draws <= 12)).mean())
        in_band_of[m] = in_band
        # the rule: point estimate in the band 6-12 and at least 95% of the draws in it too
        want.append(ScoreRow(tid, m, "replicates", float(m in ("good", "edge6", "edge12") and in_band >= 0.95),
                             None, None, n, n_null,
                             "1 if the capacity_k point estimate lies in the human band 6-12 and at least 95% of its "
                             "bootstrap draws do (capacity_in_band_prob), else 0"))
        want.append(ScoreRow(tid, m, "capacity_in_band_prob", in_band, None, None, n, n_null,
                             "fraction of the capacity_k bootstrap draws (stratified by k) inside the human band; "
                             "undefined draws count as outside", N_BOOT_B, 0, SEED))
        want.append(ScoreRow(tid, m, "null_rate", n_null / n, None, None, n, n_null))
    assert_rows(task.score(recs, SEED), want, tol=1e-12)
    assert 0.6 < in_band_of["edge6"] < 0.9 and in_band_of["edge12"] == 1.0 and in_band_of["short"] == 0.0
    rep = {r.model: r.value for r in task.score(recs, SEED) if r.metric == "replicates"}
    # edge6: k = 6 is in the band but a quarter of the draws give 5: the evidence does not show it
    assert rep["edge12"] == 1.0 and rep["edge6"] == 0.0 and rep["bad"] == 0.0 and rep["short"] == 0.0


def test_kernel_odd_one_out_is_outside_the_least_dissimilar_pair():
    from perceptbench.tasks.gestalt import kernel_odd_one_out

    k = np.zeros((10, 10))
    for (a, b), v in {(0, 1): 0.1, (0, 2): 0.5, (1, 2): 0.4, (3, 4): 0.2, (3, 5): 0.2, (4, 5): 0.9,
                      (6, 7): 0.3, (6, 8): 0.1, (7, 8): 0.2}.items():
        k[a, b] = k[b, a] = v
    assert kernel_odd_one_out(k, (0, 1, 2)) == 2   # min pair (0, 1)
    assert kernel_odd_one_out(k, (6, 7, 8)) == 7   # min pair (6, 8)
    assert kernel_odd_one_out(k, (3, 4, 5)) is None  # (3, 4) and (3, 5) tie at the minimum


@pytest.mark.parametrize("kernel, seed", [("tm", SEED)] + [("l5", s) for s in range(10)])
def test_mark_colour_target_positions_follow_the_documented_streams(kernel, seed):
    """The class docstring's rule, restated: the m answered triplets (combination order) get
    positions 0, 1, 2 floor(m/3) times each plus m mod 3 distinct extras drawn by the
    ``position_extra`` stream (sorted), shuffled by the ``positions`` stream."""
    import itertools

    from perceptbench.seeding import rng_for
    from perceptbench.tasks.gestalt import kernel_odd_one_out, load_color_kernel

    task = get_task(f"similarity.chart.mark_color@kernel={kernel}")
    kern = load_color_kernel(kernel)
    answered = [t for t in itertools.combinations(range(10), 3) if kernel_odd_one_out(kern, t) is not None]
    m = len(answered)
    assert m == (120 if kernel == "tm" else 119)
    # l5: 119 answered, so 2 extras; ten seeds, as one draw of 2 of 3 positions often repeats across streams
    extra = sorted(rng_for(seed, task.base_id, "position_extra", kernel).choice(3, size=m % 3, replace=False))
    pos = np.array([p for p in range(3) for _ in range(m // 3)] + extra)
    pos = pos[rng_for(seed, task.base_id, "positions", kernel).permutation(m)]
    assert task.target_positions(seed) == {t: int(p) for t, p in zip(answered, pos)}


_ALL_RIGHT = {k: (gt, sp, [gt] * 4) for k, (gt, sp, _) in SIL.items()}


_TWO_RIGHT = {k: (gt, sp, [gt, gt] + r[2:]) for k, (gt, sp, r) in SIL.items()}


@pytest.mark.parametrize("variant, who", [
    # every observer always right: every pair's kappa undefined, the ceilings say why
    (_ALL_RIGHT, "human:h"),
    # h1 and h2 always right: their pair's kappa undefined and left out of the mean, counted in the note
    (_TWO_RIGHT, "human:h"),
    # no split recorded: every image is a test image
    ({k: (gt, None, r) for k, (gt, _, r) in SIL.items()}, "human:h"),
    # another split of t5, another truth of t1 (same answers), other observer names
    (dict(SIL, sil_t5=("cat", "probe_train", SIL["sil_t5"][2])), "human:h"),
    (dict(SIL, sil_t1=("cat", "test", SIL["sil_t1"][2])), "human:h"),
    (SIL, "human:q")])
def test_silhouette_score_variants_after_the_base_panel(variant, who):
    task = get_task("closure.nat.silhouette")
    task.score(_sil_records(task), SEED)  # the base panel first: nothing of it may be reused below
    assert_rows(task.score(_sil_records(task, variant, who), SEED), _sil_expected(task.task_id, variant, who),
                tol=1e-12)


def test_mark_colour_keeps_its_identity_and_the_other_palettes_add_subjects():
    """Issue 23: colour's task id, records and the default run stay as they were (its subject panel
    is opt-in, subjects=td, a late setting); the new palettes carry the raw subjects by default."""
    from perceptbench.tasks.gestalt import MARK_KERNEL_TASKS, MarkColorTask

    assert MarkColorTask.defaults == {"kernel": "tm", "subjects": "none", "min_catch": "0"}
    colour = get_task("similarity.chart.mark_color")
    assert colour.task_id == "similarity.chart.mark_color" and colour.identity_params == {"kernel": "tm"}
    assert get_task("similarity.chart.mark_color@subjects=td").task_id == "similarity.chart.mark_color@subjects=td"
    for cls in MARK_KERNEL_TASKS:
        if cls is not MarkColorTask:
            assert cls.defaults == {"kernel": "tm", "subjects": "td", "min_catch": "0"}
            assert get_task(cls.base_id).identity_params == {"kernel": "tm", "subjects": "td"}
            assert get_task(cls.base_id + "@subjects=none").task_id == cls.base_id + "@subjects=none"


def test_tied_mode_note_is_singular_for_one_image():
    """Before: 'modal match; 1 tied-mode images excluded' on closure's B row (n=79 of 80)."""
    from perceptbench.scorers.human_panel import tied_mode_note

    assert tied_mode_note(1) == "modal match; 1 tied-mode image excluded"
    assert tied_mode_note(3) == "modal match; 3 tied-mode images excluded"
