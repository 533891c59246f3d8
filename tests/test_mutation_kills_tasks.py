"""Known-answer tests for the tasks' scoring functions, written to kill surviving mutants
(issue 14; ``python scripts/mutation_report.py --module tasks.gestalt`` ...).  Each test
builds a few synthetic records, writes down every score row it expects (value, interval,
n, n_null, note, draws, seed) with the derivation in a comment, and compares whole rows."""

import dataclasses
import json
import math

import numpy as np
import pytest

from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from perceptbench.vsi.cells import HIST_EDGES, cell_summary
from perceptbench.tasks import get_task
from perceptbench.core.rows import ScoreRow
from perceptbench.tasks.base import make_record

L = np.log
SEED = 7  # not the functions' default seed 0, so a dropped ``seed=seed`` shows


def _eq(a, b, tol: float = 0.0) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return type(a) is type(b) and a == b if isinstance(a, str) or a is None or b is None else a == b


def assert_rows(got: list[ScoreRow], want: list[ScoreRow], tol: float = 0.0) -> None:
    """Row lists equal in order and in every field (NaN equals NaN; floats within ``tol``
    where a reference computes them by another path; value types checked for str/None)."""
    assert [(r.model, r.metric) for r in got] == [(r.model, r.metric) for r in want]
    for g, w in zip(got, want):
        for f in dataclasses.fields(ScoreRow):
            a, b = getattr(g, f.name), getattr(w, f.name)
            assert _eq(a, b, tol), f"{g.model} {g.metric}: {f.name} = {a!r}, want {b!r}"


def _boot_row(tid, model, metric, b, n, n_null, note=""):
    return ScoreRow.from_boot(tid, model, metric, b, n, n_null, note)  # an undefined value says so


# --------------------------------------------------------------------------- tasks/vsi.py: VSITask.score

def _vsi_rec(task, cond, sample, ids, lps, *, response="B", model="m", conf=80.0, fallback=False, skipped=None):
    clean = cond == "clean"
    vsi = {"sample_id": sample, "image_id": sample, "benchmark": "salbench.syn", "condition": cond,
           "sigma_px": 0.0 if clean else 20.0, "dilate_px": 4, "region_source": "exact", "region_bbox": [0, 0, 4, 4],
           "fallback": fallback, "answer_prefix": "", "top_k": 50, "token_ids": ids, "tokens": [str(i) for i in ids],
           "logprobs": lps, "complete": False, "distribution_source": "hf_logits", "image_sha256": "x",
           "max_prob": float(np.exp(lps[0])) if clean else None, "verbal_conf": conf if clean else None,
           "verbal_raw": None}
    extra = {"skipped": skipped} if skipped else {}
    return make_record(task, stimulus_id=f"{sample}~{cond}", model=model, model_family="vlm",
                       readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed",
                       response=response if clean else None, ground_truth="B", manipulated_value=cond,
                       raw_output=None, prompt_id=task.prompt_id, prompt_hash=None, model_version="v", seed=0,
                       run_id="r", vsi=vsi, **extra)


def _vsi_records(task):
    a, lp = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    return [
        # model "sk" first (scores are sorted by model): skipped with two reasons, one record not skipped
        _vsi_rec(task, "clean", "s0", a, lp, model="sk", skipped="z: no logprobs"),
        _vsi_rec(task, "clean", "s1", a, lp, model="sk", skipped="a: no images"),
        _vsi_rec(task, "clean", "s2", a, lp, model="sk"),
        # model "m": s0 right (conf 80), s1 wrong (no confidence), s3 unparseable (null), records out of order
        _vsi_rec(task, "clean", "s3", a, lp, response=None, conf=None),
        _vsi_rec(task, "clean", "s1", a, lp, response="A", conf=None),
        _vsi_rec(task, "clean", "s0", a, lp),
        _vsi_rec(task, "region_blur", "s0", a, lp),                              # VSI 0, argmax kept
        _vsi_rec(task, "region_blur", "s1", [2, 1], lp[:2], fallback=True),     # argmax changed
        _vsi_rec(task, "whole_blur", "s0", [2, 1, 3], lp),                       # VSI 0.6 ln2 + 0.3 ln .5
    ]


def _vsi_cell_rows(tid, m, cond, samples):
    """The rows of one VSI cell, from the metric's own cell summary of the paired samples."""
    cell = [x for x in samples if x.model == m and x.perturbation == cond.split("_")[0]]
    cs = cell_summary(np.array([x.vsi for x in cell]), np.array([x.argmax_changed for x in cell]), seed=SEED)
    tag, n = f"[{cond},sigma=20]", len(cell)
    rows = [ScoreRow(tid, m, "vsi_median" + tag, cs.median, cs.q25, cs.q75, n, None,
                     "nats; ci_low/ci_high hold the 25th/75th percentiles (quartiles), not a CI"),
            ScoreRow(tid, m, "vsi_q25" + tag, cs.q25, None, None, n, None, "nats"),
            ScoreRow(tid, m, "vsi_q75" + tag, cs.q75, None, None, n, None, "nats")]
    for t, word in ((0.05, "0.05"), (0.01, "0.01")):
        rows.append(_boot_row(tid, m, f"insensitive_frac@{word}" + tag, cs.insensitive[t], n, None,
                              f"fraction of samples with VSI < {word} nats (seed 002 §2.2)"))
    rows.append(_boot_row(tid, m, "argmax_change_rate" + tag, cs.argmax_change_rate, n, None,
                          "first-answer-token argmax differs clean vs perturbed (seed 002 §2.4)"))
    edges = [e if np.isfinite(e) else None for e in HIST_EDGES]
    rows.append(ScoreRow(tid, m, "vsi_histogram" + tag, float(n), None, None, n, None,
                         json.dumps({"edges_nats": edges, "counts": list(cs.hist_counts),
                                     "bins": "[lo, hi); last edge null = infinity"})))
    return rows


@pytest.mark.parametrize("spec, conds, verbal", [
    ("", ("region_blur", "whole_blur"), True),
    ("@perturbation=region,verbal_conf=0", ("region_blur",), False),
    ("@perturbation=whole", ("whole_blur",), True)])
def test_vsi_task_score_rows_by_hand(spec, conds, verbal):
    from perceptbench.vsi.samples import vsi_samples

    task = get_task("vsi.salbench.syn@n=3" + spec.replace("@", ","))
    tid = task.task_id
    recs = _vsi_records(task)
    samples = vsi_samples(recs)
    # the pairing the cells are built from: s0 and s1 region (s1's argmax changed), s0 whole
    assert [(x.model, x.sample_id, x.perturbation, x.argmax_changed) for x in samples] == [
        ("m", "s0", "region", False), ("m", "s0", "whole", True), ("m", "s1", "region", True)]
    assert samples[0].vsi == 0.0 and samples[1].vsi == pytest.approx(0.6 * L(2) + 0.3 * L(0.5))
    c = np.array([1.0, 0.0])  # parseable clean answers by stimulus id: s0 right, s1 wrong (s3 null, left out)
    want = [_boot_row(tid, "m", "accuracy", bootstrap(lambda i: c[i].mean(1), 2, n_draws=N_BOOT_B, seed=SEED), 2, 1,
                      "clean greedy answers, parseable only"),
            ScoreRow(tid, "m", "n_parse_null", 1.0, None, None, 3, 1,
                     "clean greedy answers the parser could not read (excluded from accuracy)")]
    if verbal:  # no confidence on s1 and s3: 2 of 3
        want.append(ScoreRow(tid, "m", "n_verbal_conf_missing", 2.0, None, None, 3, 1,
                             "clean samples whose confidence answer holds no integer 0-100 "
                             "(dropped from confidence analyses, seed 002 appendix A)"))
    for cond in conds:
        if cond == "region_blur":  # s1's region record fell back; the region cell has 2 samples
            want.append(ScoreRow(tid, "m", "n_fallback[region_blur,sigma=20]", 1.0, None, None, 2, None,
                                 "region blur fell back to the whole image (no region / no box above "
                                 "threshold; seed 002 appendix A)"))
        want += _vsi_cell_rows(tid, "m", cond, samples)
    # "sk": 3 records, two skip reasons (sorted, joined), NaN value, n_null None
    want.append(ScoreRow(tid, "sk", "skipped", float("nan"), None, None, 3, None, "a: no images; z: no logprobs"))
    assert_rows(task.score(recs, SEED), want)
    # the region cell by hand: VSI (0, v1) with argmax (kept, changed): rate 1/2, median (0 + v1)/2
    rows = {r.metric: r for r in task.score(recs, SEED)}
    if "region_blur" in conds:
        v1 = samples[2].vsi
        assert rows["argmax_change_rate[region_blur,sigma=20]"].value == 0.5
        assert rows["vsi_median[region_blur,sigma=20]"].value == pytest.approx(v1 / 2)
        assert rows["insensitive_frac@0.05[region_blur,sigma=20]"].value == (0.5 if v1 >= 0.05 else 1.0)


def test_vsi_task_score_a_region_cell_without_samples_gives_only_its_fallback_count():
    task = get_task("vsi.salbench.syn@n=3")
    a, lp = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    recs = [_vsi_rec(task, "clean", "s0", a, lp), _vsi_rec(task, "whole_blur", "s0", a, lp)]
    rows = [(r.metric, r.value, r.n) for r in task.score(recs, SEED)]
    # no region record: the fallback count is 0 of 0 and no cell rows follow; whole cell VSI 0
    assert ("n_fallback[region_blur,sigma=20]", 0.0, 0) in rows
    assert not any(m.startswith("vsi_median[region") for m, _, _ in rows)
    assert ("vsi_median[whole_blur,sigma=20]", 0.0, 1) in rows
    # a model with perturbed records only: no accuracy rows at all
    only = [_vsi_rec(task, "whole_blur", "s0", a, lp, model="p")]
    assert [r.metric for r in task.score(only, SEED)] == ["n_fallback[region_blur,sigma=20]"]


# --------------------------------------------------------------------------- tasks/chart_category.py

def _cm_rec(task, model, sid, correct, gt, k, family="human", split="test", response=...):
    from perceptbench.tasks.chart_category import WRONG

    if response is ...:
        response = gt if correct else (WRONG if family == "human" else (1 if gt != 1 else 2))
    return make_record(task, stimulus_id=sid, model=model, model_family=family,
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
        want += [_boot_row(tid, hp, "accuracy" + s, ratio_ref(num, den), int(den.sum()), 0,
                           f"all human trials pooled; bootstrap over {len(stims)} stimuli"),
                 ScoreRow(tid, hp, "observer_accuracy_mean" + s, float(acc_obs.mean()), None, None, len(acc_obs), 0,
                          f"{len(acc_obs)} participants"),
                 ScoreRow(tid, hp, "observer_accuracy_min" + s, float(acc_obs.min()), None, None, len(acc_obs), 0),
                 ScoreRow(tid, hp, "observer_accuracy_max" + s, float(acc_obs.max()), None, None, len(acc_obs), 0)]
        for lev in sorted(set(k.tolist())):  # a(2) = 2/6, a(3) = 5/6, a(4) = 6/7
            mask = (k == lev).astype(float)
            b = ratio_ref(num, den, strata=k, mask=mask)
            assert b.estimate == pytest.approx({2: 2 / 6, 3: 5 / 6, 4: 6 / 7}[lev])
            want.append(_boot_row(tid, hp, f"a_k[{lev}]" + s, b, int(den[k == lev].sum()), 0,
                                  "human accuracy at k categories (Tseng et al. 2023 highest-mean judgement: a "
                                  "different task from series counting's a(k), not the same measurement); "
                                  "bootstrap over stimuli by k"))
        o = np.array([[obs[f"human:o{j}"][x] for x in A] for j in (1, 2, 3)], float)
        # pairs o1-o2 0, o1-o3 .5, o2-o3 -.5 (cell A); o4-o5 undefined (both always right); o6-o7 0
        pw = np.array([0.0, 0.5, -0.5] + ([float("nan"), 0.0] if name == "all" else []))
        loo = np.array([_kap(o[j], (o.sum(0) - o[j]) / 2) for j in range(3)])
        n_ok = 3 if name == "test" else 4
        want += [_boot_row(tid, hp, "ceiling_kappa_pairwise_mean" + s, _pct_ref(pw, "pairs" + s), n_ok, len(pw) - n_ok,
                           f"mean over {n_ok} pairs of participants who saw the same batch in the same palette "
                           f"({len(pw) - n_ok} undefined pairs left out); CI resamples pairs"),
                 ScoreRow(tid, hp, "ceiling_kappa_pairwise_min" + s, -0.5, None, None, n_ok, 0),
                 ScoreRow(tid, hp, "ceiling_kappa_pairwise_max" + s, 0.5, None, None, n_ok, 0),
                 _boot_row(tid, hp, "ceiling_kappa_loo_mean" + s, _pct_ref(loo, "loo" + s), 3, 0,
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
    want += [_boot_row(tid, "m", "accuracy", acc, 5, 1),
             _boot_row(tid, "m", "B", b, 2, 1,
                       "match with the human modal answer on stimuli seen by >= 2 participants whose strict majority "
                       "was correct; 3 multi-observer stimuli with a tied or unreleased (wrong) mode and 1 "
                       "single-observer stimuli excluded"),
             _boot_row(tid, "m", "kappa_aggregate", ka, 5, 1),
             _boot_row(tid, "m", "kappa_pairwise", _pct_ref(per, "pairwise|m"), 4, 1,
                       "mean over 4 participants of kappa(model, participant) on the stimuli both answered "
                       "(2 undefined left out); CI resamples participants")]
    for lev, n_ok, n_null in ((2, 1, 1), (3, 2, 0), (4, 2, 0)):  # a(2) = 1/1, a(3) = 1/2, a(4) = 1/2
        j = K_LEVELS.index(lev)
        bk = bootstrap(lambda i, j=j: accuracy_by_k(correct[i], valid[i], k[i], np.array(K_LEVELS))[:, j], 6,
                       n_draws=N_BOOT_B, seed=SEED, strata=k)
        assert bk.estimate == {2: 1.0, 3: 0.5, 4: 0.5}[lev]
        want.append(_boot_row(tid, "m", f"a_k[{lev}]", bk, n_ok, n_null))
    want += [ScoreRow(tid, "m", "chance", 13 / 36, None, None, 6, 0,  # mean 1/k = (2/3 + 1 + 1/2) / 6
                      "mean of 1/k over the answered stimuli (uniform guessing)"),
             ScoreRow(tid, "m", "position_floor", 0.5, None, None, 6, 0,  # answers 2,1,2,3,1,2: "2" 3 of 6
                      "accuracy of always naming the most frequent answer position (seed 000 D.3 floor; the "
                      "release's answers are not uniform over positions)"),
             ScoreRow(tid, "m", "null_rate", 1 / 6, None, None, 6, 1)]
    assert UNDEFINED_REASON
    assert_rows(got, want)


# --------------------------------------------------------------------------- tasks/things_ooo.py

def _ooo_rec(task, model, sid, response, gt, **meta):
    human = model.startswith("human:")
    return make_record(task, stimulus_id=sid, model=model, model_family="human" if human else "vlm",
                       readout="human_trial" if human else "vlm_prompt", response=response,
                       ground_truth=gt, manipulated_value=None, raw_output=None, prompt_id=None, prompt_hash=None,
                       model_version="v", seed=0, run_id="r", **meta)


def _agree_boot(match, valid):
    from perceptbench.metrics.agreement import agreement_b

    return bootstrap(lambda i: agreement_b(match[i], valid[i]), len(match), n_draws=N_BOOT_B, seed=SEED)


def test_things_ooo_score_rows_by_hand():
    from perceptbench.tasks.things_ooo import RETEST, TEST

    task = get_task("similarity.nat.things_ooo")
    tid = task.task_id
    summary = {"release_pairs": 5, "release_agree": 2, "release_misaligned": 1, "release_types": 7,
               "release_tied_types": 2}
    gt = {"s0": 1, "s1": 2, "s2": 1, "s3": 3, "s9": 2}
    recs = [_ooo_rec(task, "vlm", s, r, gt[s]) for s, r in (("s3", 3), ("s0", 1), ("s1", None), ("s2", 3))]
    recs += [_ooo_rec(task, TEST, s, r, gt[s], **summary) for s, r in (("s2", 2), ("s0", 1), ("s1", 2), ("s3", 3))]
    recs += [_ooo_rec(task, RETEST, s, r, gt[s], **summary) for s, r in (("s0", 1), ("s1", 3), ("s3", 3), ("s9", 1))]
    ceiling = 2 / 5
    want = [ScoreRow(tid, "human:panel", "ceiling_test_retest", ceiling, None, None, 5, 0,
                     "agreement of first and repeated choices over all 5 aligned line pairs of "
                     "testset2/testset2_repeat (1 misaligned left out)"),
            # modal positions 1 2 1 3: f = .5 .25 .25, floor .5
            ScoreRow(tid, "human:panel", "position_floor", 0.5, None, None, 4, 0,
                     "max_k f_k of the modal choice's shown position, f = 0.50/0.25/0.25 (seed 000 D.3)"),
            ScoreRow(tid, "human:panel", "n_tied_types_excluded", 2.0, None, None, 7, 0,
                     "triplet types whose modal choice is tied: never sampled")]
    # retest vs test on the stimuli both have (s9 has no test line): s0 1=1, s1 3!=2, s3 3=3 -> 2/3
    ttr = _agree_boot(np.array([True, False, True]), np.ones(3, bool))
    assert ttr.estimate == pytest.approx(2 / 3)
    want.append(_boot_row(tid, "human:panel", "test_retest_on_sample", ttr, 3, 0,
                          "first vs repeated choice on the sampled triplets"))
    both = " (this response is one of those the mode is taken over)"
    for m, match, valid, want_b in (
            (TEST, [1, 1, 0, 1], [1, 1, 1, 1], 0.75),        # s0..s3: 1=1 2=2 2!=1 3=3
            (RETEST, [1, 0, 1, 0], [1, 1, 1, 1], 0.5),       # s0 s1 s3 s9: 1=1 3!=2 3=3 1!=2
            ("vlm", [1, 0, 0, 1], [1, 0, 1, 1], 2 / 3)):     # s0..s3: 1=1 null 3!=1 3=3
        v = np.array(valid, bool)
        b = _agree_boot(np.array(match, bool), v)
        assert b.estimate == pytest.approx(want_b)
        n_null = int((~v).sum())
        want.append(_boot_row(tid, m, "B", b, int(v.sum()), n_null,
                              "agreement with the modal human choice" + (both if m.startswith("human:") else "")))
        want.append(ScoreRow(tid, m, "B_over_ceiling", b.estimate / ceiling, b.low / ceiling, b.high / ceiling,
                             int(v.sum()), n_null,
                             "B / test-retest ceiling 0.4000 (seed 000 D.3); CI = B's CI / ceiling",
                             b.n_draws, b.n_dropped, b.seed))
        if m == "vlm":
            want += [ScoreRow(tid, m, "position_floor", 0.5, None, None, 4, 0,
                              "max_k target-position frequency (seed 000 D.3)"),
                     ScoreRow(tid, m, "null_rate", 0.25, None, None, 4, 1)]
    assert_rows(task.score(recs, SEED), want)


def test_things_ooo_score_without_release_counts_or_retest():
    from perceptbench.tasks.things_ooo import TEST

    task = get_task("similarity.nat.things_ooo")
    tid = task.task_id
    recs = [_ooo_rec(task, TEST, "s0", 2, 2, release_pairs=0, release_agree=0), _ooo_rec(task, "vlm", "s0", 3, 2)]
    b_t = _agree_boot(np.array([True]), np.array([True]))
    b_m = _agree_boot(np.array([False]), np.array([True]))
    # no aligned pairs: the ceiling is undefined and no B_over_ceiling row is written; no retest row
    assert_rows(task.score(recs, SEED), [
        ScoreRow(tid, "human:panel", "ceiling_test_retest", float("nan"), None, None, 0, 0,
                 "agreement of first and repeated choices over all 0 aligned line pairs of "
                 "testset2/testset2_repeat (None misaligned left out)"),
        ScoreRow(tid, "human:panel", "position_floor", 1.0, None, None, 1, 0,
                 "max_k f_k of the modal choice's shown position, f = 0.00/1.00/0.00 (seed 000 D.3)"),
        ScoreRow(tid, "human:panel", "n_tied_types_excluded", 0.0, None, None, None, 0,
                 "triplet types whose modal choice is tied: never sampled"),
        _boot_row(tid, TEST, "B", b_t, 1, 0, "agreement with the modal human choice (this response is one of "
                  "those the mode is taken over)"),
        _boot_row(tid, "vlm", "B", b_m, 1, 0, "agreement with the modal human choice"),
        ScoreRow(tid, "vlm", "position_floor", 1.0, None, None, 1, 0, "max_k target-position frequency (seed 000 D.3)"),
        ScoreRow(tid, "vlm", "null_rate", 0.0, None, None, 1, 0)])
    with pytest.raises(ValueError, match=r"similarity.nat.things_ooo: no human:testset2 records: the human "
                                         r"reference is missing"):
        task.score(recs[1:], SEED)


def test_things_ooo_zero_ceiling_writes_no_ratio():
    from perceptbench.tasks.things_ooo import TEST

    task = get_task("similarity.nat.things_ooo")
    recs = [_ooo_rec(task, TEST, "s0", 2, 2, release_pairs=3, release_agree=0), _ooo_rec(task, "vlm", "s0", 2, 2)]
    rows = task.score(recs, SEED)
    # 0 of 3 aligned pairs agree: ceiling 0, a ratio to it is undefined and not written
    assert [r.value for r in rows if r.metric == "ceiling_test_retest"] == [0.0]
    assert not [r for r in rows if r.metric == "B_over_ceiling"]


# --------------------------------------------------------------------------- tasks/salbench.py

def _sal_rec(task, model, sid, pred, truth, mv, readout="vlm_prompt", raw=None, **meta):
    return make_record(task, stimulus_id=sid, model=model, model_family="vlm", readout=readout,
                       response=None if pred is None else sorted(pred), ground_truth=sorted(truth),
                       manipulated_value=mv, raw_output=raw, prompt_id="p", prompt_hash="h", model_version="v",
                       seed=0, run_id="r", **meta)


def _sal_model_rows(tid, m, preds, truths, cats, groups, floor):
    """The rows SalBench writes for one model, from the saliency metric's own scores;
    ``floor``: (majority-answer exact-match floor, that answer), computed by hand by the caller."""
    from perceptbench.metrics.saliency import score_by_group, score_multilabel

    n_null = sum(p is None for p in preds)
    rows = []
    both = {"": score_multilabel(preds, truths, cats, null="empty", n_boot=N_BOOT_B, seed=SEED),
            "@nulls_excluded": score_multilabel(preds, truths, cats, null="exclude", n_boot=N_BOOT_B, seed=SEED)}
    for suffix, sc in both.items():
        rows.append(_boot_row(tid, m, "exact_match" + suffix, sc.ci["exact_match"], sc.n, n_null, "; ".join(sc.notes)))
        rows.append(_boot_row(tid, m, "mean_f1" + suffix, sc.ci["mean_f1"], sc.n, n_null,
                              f"mean over all {len(cats)} categories, an undefined F1 counted as 0 (seed 001 §4)"))
        for c in cats:
            note = ("undefined: category neither true nor predicted; counted as 0 in mean_f1"
                    if np.isnan(sc.category_f1[c]) else "")
            rows.append(_boot_row(tid, m, f"f1[{c}]" + suffix, sc.ci[f"f1:{c}"], sc.n, n_null, note))
    rows.append(_boot_row(tid, m, "mean_f1@defined_categories", both[""].ci["mean_f1_defined"], both[""].n, n_null,
                          "mean over the categories whose F1 is defined only (the project's headline before "
                          "issue 7); nulls as empty predictions"))
    rows.append(ScoreRow(tid, m, "null_rate", n_null / len(preds), None, None, len(preds), n_null))
    value, answer = floor
    rows.append(ScoreRow(tid, m, "exact_match_floor", value, None, None, len(truths), 0,
                         f"majority-answer floor: a constant answer {answer} matches exactly "
                         f"{value:.3f} of these {len(truths)} stimuli"))
    for gname, g in groups.items():
        for key, sc in score_by_group(preds, truths, g, cats, null="empty", n_boot=N_BOOT_B, seed=SEED).items():
            rows.append(_boot_row(tid, m, f"exact_match[{gname}={key}]", sc.ci["exact_match"], sc.n, sc.n_null))
    return rows


def test_salbench_syn_score_rows_by_hand():
    task = get_task("salbench.detection.syn@n=3")
    tid = task.task_id
    # s0 Color right; s1 Size answered nothing parseable (null); s2 Orientation answered Color + Orientation
    data = [("s2", ["Color", "Orientation"], ["Orientation"], "orientation/easy"),
            ("s0", ["Color"], ["Color"], "color/easy"), ("s1", None, ["Size"], "size/hard")]
    recs = [_sal_rec(task, "vlm", s, p, t, mv) for s, p, t, mv in data]
    recs += [_sal_rec(task, "sk", "s0", None, ["Color"], "color/easy", skipped="no multi-image support"),
             _sal_rec(task, "sk", "s1", None, ["Size"], "size/hard", skipped="a second reason")]
    preds = [["Color"], None, ["Color", "Orientation"]]  # by stimulus id s0 s1 s2
    truths = [["Color"], ["Size"], ["Orientation"]]
    groups = {"difficulty": ["easy", "hard", "easy"], "feature": ["color", "size", "orientation"],
              "feature_difficulty": ["color/easy", "size/hard", "orientation/easy"]}
    want = [ScoreRow(tid, "sk", "skipped", float("nan"), None, None, 2, 2, "a second reason; no multi-image support")]
    # floor: truth sets {Color}, {Size}, {Orientation} once each; the tie goes to the first sorted, ['Color']: 1/3
    want += _sal_model_rows(tid, "vlm", preds, truths, task.categories, groups, (1 / 3, ["Color"]))
    rows = task.score(recs, SEED)
    assert_rows(rows, want)
    by = {r.metric: r for r in rows}
    # exact match: all 3 count (null = empty): 1/3; nulls excluded: s0 right, s2 wrong: 1/2
    assert by["exact_match"].value == pytest.approx(1 / 3) and by["exact_match@nulls_excluded"].value == 0.5
    assert by["exact_match[difficulty=easy]"].value == 0.5 and by["exact_match[difficulty=hard]"].value == 0.0
    assert by["null_rate"].value == pytest.approx(1 / 3) and by["null_rate"].n_null == 1


def test_salbench_nat_retrieval_rows_by_hand():
    from perceptbench.metrics.retrieval import analytic_chance, truth_matrix
    from perceptbench.tasks.salbench import SEVEN

    task = get_task("salbench.detection.nat")
    tid = task.task_id
    # cosines over the seven categories; truth sets; distractor counts (bins <7, 7-15, <7)
    cos = {"a": dict(zip(SEVEN, [0.1, 0.9, 0.2, 0.3, 0.0, 0.0, 0.0])),   # ranked Color, Shape, Focus
           "b": dict(zip(SEVEN, [0.5, 0.1, 0.2, 0.6, 0.4, 0.3, 0.0])),   # ranked Shape, Orientation, Size
           "c": dict(zip(SEVEN, [0.0] * 7))}   # all tied: stable order Orientation, Color, Focus
    truth = {"a": ["Color"], "b": ["Focus", "Size"], "c": ["Pattern"]}
    nd = {"a": 3, "b": 10, "c": 6}
    recs = [_sal_rec(task, "clip", s, [max(cos[s], key=cos[s].get)], truth[s], nd[s], readout="zero_shot_retrieval",
                     raw=json.dumps({"cosine": cos[s]})) for s in ("c", "b", "a")]
    ids = ["a", "b", "c"]
    preds = [[max(cos[s], key=cos[s].get)] for s in ids]
    truths = [truth[s] for s in ids]
    # floor: truth sets {Color}, {Focus, Size}, {Pattern} once each; the tie goes to the first sorted, ['Color']: 1/3
    want = _sal_model_rows(tid, "clip", preds, truths, task.categories, {"distractors": ["<7", "7-15", "<7"]},
                           (1 / 3, ["Color"]))
    t = truth_matrix(truths, SEVEN)
    # top-1: a Color hit, b Shape miss, c Orientation miss -> 1/3; top-3: a hit, b Size (3rd) hit, c miss -> 2/3
    for k, hits in ((1, [1.0, 0.0, 0.0]), (3, [1.0, 1.0, 0.0])):
        h = np.array(hits)
        want.append(_boot_row(tid, "clip", f"retrieval_top{k}", bootstrap(lambda i: h[i].mean(1), 3,
                                                                          n_draws=N_BOOT_B, seed=SEED), 3, 0,
                              "hit if any of the top-k categories is in the truth set"))
        want.append(ScoreRow(tid, "clip", f"retrieval_chance_top{k}", analytic_chance(t, k), None, None, 3, 0,
                             "uniformly random ranking of the 7 categories, for this label distribution"))
    # chance top-1 = mean(1/7, 2/7, 1/7) = 4/21
    assert analytic_chance(t, 1) == pytest.approx(4 / 21)
    assert_rows(task.score(recs, SEED), want)


def test_distractor_group_bins_and_unknown():
    from perceptbench.tasks.salbench import distractor_group

    assert [distractor_group(n) for n in (None, 0, 6, 7, 15)] == ["unknown", "<7", "<7", "7-15", "7-15"]


# --------------------------------------------------------------------------- tasks/gestalt.py: silhouettes

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
            recs.append(make_record(task, stimulus_id=sid, model=m, model_family="vlm", readout="vlm_prompt",
                                    response=r, ground_truth=sil[sid][0], manipulated_value=None, raw_output=str(r),
                                    prompt_id="p", prompt_hash="h", model_version="v", seed=0, run_id="r"))
    for j in (3, 1, 0, 2):  # observers in no particular order: they are sorted by name
        for sid, (gt, split, resp) in sil.items():
            recs.append(make_record(task, stimulus_id=sid, model=f"{who}{j + 1}", model_family="human",
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
                 _boot_row(tid, hp, "ceiling_kappa_pairwise_mean" + s, pw_b, n, 0, why(pw_b.estimate, pw_note))]
        def ext(x, fn):
            return float(fn(x[~np.isnan(x)])) if (~np.isnan(x)).any() else float("nan")

        for metric, v in (("ceiling_kappa_pairwise_min", ext(pw, np.min)),
                          ("ceiling_kappa_pairwise_max", ext(pw, np.max))):
            panel.append(ScoreRow(tid, hp, metric + s, float(v), None, None, n, 0, why(v)))
        panel.append(_boot_row(tid, hp, "ceiling_kappa_loo_mean" + s, loo_b, n, 0,
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
            obs_rows += [_boot_row(tid, h, "accuracy" + s, a, n, 0),
                         _boot_row(tid, h, "B" + s, b, int(has.sum()), 0,
                                   f"modal match; {int((~has).sum())} tied-mode images excluded"),
                         _boot_row(tid, h, "kappa_loo" + s, kl, n, 0, kn(kl.estimate) or "vs leave-one-out panel mean")]
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
        rows += [_boot_row(tid, m, "accuracy", acc, nv, nn),
                 _boot_row(tid, m, "B", b, int(vb.sum()), nn,
                           f"modal match; {int((~has).sum())} tied-mode images excluded"),
                 _boot_row(tid, m, "kappa_aggregate", ka, nv, nn, kn(ka.estimate)),
                 _boot_row(tid, m, "kappa_pairwise", kp, nv, nn, kn(kp.estimate))]
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
            rows.append(_boot_row(tid, m, metric, res, n, nn, note))
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
    extra = recs + [make_record(task, stimulus_id=sid, model="stray", model_family="vlm", readout="vlm_prompt",
                                response="cat", ground_truth="cat", manipulated_value=None, raw_output="cat",
                                prompt_id="p", prompt_hash="h", model_version="v", seed=0, run_id="r")
                    for sid in ("sil_x9", "sil_p0")]  # sil_p0 is the first human column (0): the error names x9
    with pytest.raises(ValueError, match=r"^closure.nat.silhouette: stray answered sil_x9, which has no human data$"):
        task.score(extra, SEED)


# --------------------------------------------------------------------------- tasks/gestalt.py: mark colour

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
            recs.append(make_record(task, stimulus_id=sid, model=m, model_family="human" if human else "vlm",
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
    want += [_boot_row(tid, "vlm", "B", b, 3, 1, note)] + floors("vlm", 0.5, 4, 1, 5) + nulls("vlm", 5, 1, est)
    # enc on mark_0-1-2, -3, -5: 1=1, 2=2, 1!=3 -> 2/3; targets 1,2,3: floor 1/3
    b, est = b_row("enc", [1, 1, 0], [1, 1, 1])
    want += [_boot_row(tid, "enc", "B", b, 3, 0, note)] + floors("enc", 1 / 3, 3, 0, 3) + nulls("enc", 3, 0, est)
    # kernel sa: 2!=1, 2=2, both none, 3=3, 1=1 -> 3/4; a human respondent gets no floor rows
    b, est = b_row("human:kernel-sa", [0, 1, 0, 1, 1], [1, 1, 0, 1, 1])
    assert est == 0.75
    want.append(_boot_row(tid, "human:kernel-sa", "B", b, 4, 1, note))
    # kernel l5: 1=1, 3!=2, no answer, 3=3, null -> 2/3
    b, est = b_row("human:kernel-l5", [1, 0, 0, 1, 0], [1, 1, 0, 1, 0])
    want.append(_boot_row(tid, "human:kernel-l5", "B", b, 3, 1, note))
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


# --------------------------------------------------------------------------- tasks/gestalt.py: series count

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
            recs.append(make_record(task, stimulus_id=f"t{i:03d}_{m}", model=m, model_family="encoder",
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

        want += [_boot_row(tid, m, "accuracy", boot(lambda i: masked_mean(correct[i], valid[i])), int(valid.sum()),
                           n_null, "bootstrap stratified by k"),
                 _boot_row(tid, m, "mean_abs_error", boot(lambda i: masked_mean(err[i], valid[i])), int(valid.sum()),
                           n_null, "|response - k| over parseable answers; bootstrap stratified by k")]
        for j, lev in enumerate(levels):
            at = k == lev
            if not at.any():
                continue
            want.append(_boot_row(tid, m, f"a_k[{lev}]", boot(lambda i, j=j: accuracy_by_k(
                correct[i], valid[i], k[i], levels)[:, j]), int((at & valid).sum()), int((~valid[at]).sum())))
        cb = boot(cap)
        assert _eq(cb.estimate, cap_want[m])
        finite = np.isfinite(cb.estimate)
        want.append(_boot_row(tid, m, "capacity_k", cb, n, n_null,
                              "smallest k with a(k) < 0.5 mean a(k<=4); bootstrap stratified by k" if finite else
                              "a(k) never fell below half of mean a(k<=4) within k=2..16, or baseline is 0"))
        want.append(ScoreRow(tid, m, "replicates", float(m in ("good", "edge6", "edge12")), None, None, n, n_null,
                             "1 if the capacity_k point estimate lies in the human band 6-12; read with "
                             "capacity_in_band_prob"))
        draws = cap(resample_indices(n, N_BOOT_B, SEED, k))
        in_band = float((np.isfinite(draws) & (draws >= 6) & (draws <= 12)).mean())
        in_band_of[m] = in_band
        want.append(ScoreRow(tid, m, "capacity_in_band_prob", in_band, None, None, n, n_null,
                             "fraction of the capacity_k bootstrap draws (stratified by k) inside the human band; "
                             "undefined draws count as outside", N_BOOT_B, 0, SEED))
        want.append(ScoreRow(tid, m, "null_rate", n_null / n, None, None, n, n_null))
    assert_rows(task.score(recs, SEED), want, tol=1e-12)
    assert 0.6 < in_band_of["edge6"] < 0.9 and in_band_of["edge12"] == 1.0 and in_band_of["short"] == 0.0


# --------------------------------------------------------------------------- tasks/gestalt.py: helpers

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


def test_gestalt_batches_group_by_key_in_first_order_and_cut_blocks(monkeypatch):
    import perceptbench.scorers.common as g

    parity = lambda x: bytes([x % 2])  # noqa: E731
    assert g.batches([1, 0, 3, 2, 4], parity) == [[1, 3], [0, 2, 4]]
    monkeypatch.setattr(g, "MODEL_BLOCK", 2)
    assert g.batches([1, 0, 3, 2, 4, 5], parity) == [[1, 3], [5], [0, 2], [4]]
    assert g.batches([], parity) == []


def test_gestalt_nan_helpers():
    from perceptbench.scorers.common import nan_extreme as _nan_extreme, nanmean as _nanmean, ratio as _ratio

    x = np.array([[1.0, np.nan, 4.0], [3.0, np.nan, np.nan]])
    out = _nanmean(x, 0)  # column means over the defined entries: 2, undefined, 4
    assert out[0] == 2.0 and np.isnan(out[1]) and out[2] == 4.0
    assert list(_nanmean(x, 1)) == [2.5, 3.0]
    assert _nan_extreme(np.array([np.nan, 2.0, -1.0]), np.min) == -1.0
    assert _nan_extreme(np.array([np.nan, 2.0, -1.0]), np.max) == 2.0
    assert np.isnan(_nan_extreme(np.array([np.nan, np.nan]), np.min))
    r = _ratio(np.array([1.0, 2.0, 3.0, 4.0, np.nan]), np.array([2.0, 0.0, np.nan, -4.0, 1.0]))
    # 1/2, den 0 -> undefined, den NaN -> undefined, -1 (never clipped), NaN numerator stays NaN
    assert r[0] == 0.5 and r[3] == -1.0 and np.isnan(r[[1, 2, 4]]).all()
    assert list(_ratio(np.array([[3.0], [6.0]]), np.array([1.5, 3.0])).ravel()) == [2.0, 1.0, 4.0, 2.0]


def test_gestalt_null_rows_and_kappa_note():
    from perceptbench.metrics.error_consistency import UNDEFINED_REASON
    from perceptbench.scorers.common import kappa_note as _kappa_note, null_rows as _null_rows

    assert _kappa_note(0.25) == "" and _kappa_note(float("nan")) == UNDEFINED_REASON
    assert_rows(_null_rows("t", "m", 4, 1, None), [ScoreRow("t", "m", "null_rate", 0.25, None, None, 4, 1)])
    assert_rows(_null_rows("t", "m", 4, 1, float("nan")), [ScoreRow("t", "m", "null_rate", 0.25, None, None, 4, 1)])
    assert_rows(_null_rows("t", "m", 0, 0, None), [ScoreRow("t", "m", "null_rate", float("nan"), None, None, 0, 0)])
    # nu = 1/4, B = 0.6: (1 - 1/4) 0.6 = 0.45 and 0.45 + 0.25 = 0.7 (seed 000 D.4)
    assert_rows(_null_rows("t", "m", 4, 1, 0.6), [
        ScoreRow("t", "m", "null_rate", 0.25, None, None, 4, 1),
        ScoreRow("t", "m", "B_full_low", 0.75 * 0.6, None, None, 4, 1, "null bracket (1-nu)B <= B_full (seed 000 D.4)"),
        ScoreRow("t", "m", "B_full_high", 0.75 * 0.6 + 0.25, None, None, 4, 1,
                 "null bracket B_full <= (1-nu)B + nu (seed 000 D.4)")])


def test_kernel_odd_one_out_is_outside_the_least_dissimilar_pair():
    from perceptbench.tasks.gestalt import kernel_odd_one_out

    k = np.zeros((10, 10))
    for (a, b), v in {(0, 1): 0.1, (0, 2): 0.5, (1, 2): 0.4, (3, 4): 0.2, (3, 5): 0.2, (4, 5): 0.9,
                      (6, 7): 0.3, (6, 8): 0.1, (7, 8): 0.2}.items():
        k[a, b] = k[b, a] = v
    assert kernel_odd_one_out(k, (0, 1, 2)) == 2   # min pair (0, 1)
    assert kernel_odd_one_out(k, (6, 7, 8)) == 7   # min pair (6, 8)
    assert kernel_odd_one_out(k, (3, 4, 5)) is None  # (3, 4) and (3, 5) tie at the minimum


def test_gestalt_model_rows_order_and_loo_sides():
    from perceptbench.record_table import TaskColumns
    from perceptbench.scorers.common import respondent_positions as _model_rows
    from perceptbench.scorers.human_panel import _loo_sides, modal_response

    task = get_task("closure.nat.silhouette")
    task.n_reps = 2  # two repetitions per stimulus, so the order within a stimulus is by rep
    recs = [make_record(task, stimulus_id=s, model=m, model_family="vlm", readout="vlm_prompt", response="cat",
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


def test_category_ratio_boot_is_a_ratio_of_sums_undefined_at_zero():
    from perceptbench.scorers.cell_panel import ratio_boot as _ratio_boot

    def est(num, den, mask=None):
        return _ratio_boot(np.array(num, float), np.array(den, float), 50, SEED,
                           mask=None if mask is None else np.array(mask, float)).estimate

    assert est([1, 2], [2, 2]) == 0.75                   # (1 + 2) / (2 + 2)
    assert est([1], [1]) == 1.0                          # one trial is enough
    assert est([0.25], [0.5]) == 0.5                     # a fractional denominator is not floored at 1
    assert est([1, 2], [2, 2], mask=[0, 1]) == 1.0       # only the masked-in stimulus: 2/2
    assert math.isnan(est([0, 0], [0, 0]))               # nothing to divide: undefined, not 0
    assert math.isnan(est([1, 2], [2, 2], mask=[0, 0]))


def test_vsi_task_score_counts_every_fallback_and_scores_models_after_a_skipped_one():
    task = get_task("vsi.salbench.syn@n=3,perturbation=region")
    a, lp = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    recs = [_vsi_rec(task, "clean", "s0", a, lp, model="a_skipped", skipped="no logprobs"),
            _vsi_rec(task, "clean", "s0", a, lp), _vsi_rec(task, "clean", "s1", a, lp),
            _vsi_rec(task, "region_blur", "s0", a, lp, fallback=True),
            _vsi_rec(task, "region_blur", "s1", a, lp, fallback=True)]
    # a clean record written without VSI metadata counts as a missing confidence
    recs.append(make_record(task, stimulus_id="s2~clean", model="m", model_family="vlm", readout="vlm_vsi_clean",
                            response="B", ground_truth="B", manipulated_value="clean", raw_output="B",
                            prompt_id=task.prompt_id, prompt_hash=None, model_version="v", seed=0, run_id="r"))
    rows = {(r.model, r.metric): r for r in task.score(recs, SEED)}
    assert rows[("a_skipped", "skipped")].note == "no logprobs"
    assert rows[("m", "n_fallback[region_blur,sigma=20]")].value == 2.0   # two fallbacks, not "any"
    assert rows[("m", "n_verbal_conf_missing")].value == 1.0               # s2: no confidence recorded
    assert rows[("m", "accuracy")].value == 1.0 and rows[("m", "accuracy")].n == 3


def test_category_pct_mean_and_interval_of_resampled_values():
    from perceptbench.metrics.bootstrap import BootstrapResult
    from perceptbench.scorers.cell_panel import pct_boot as _pct

    v = np.array([0.1, 0.35, np.nan, 0.2, 0.9, 0.55, 0.05, 0.7])
    got = _pct(v, 400, SEED, "pairs@x")
    from perceptbench.seeding import rng_for

    ok = v[np.isfinite(v)]
    idx = rng_for(SEED, "bootstrap-units", "pairs@x", ok.size, 400).integers(0, ok.size, size=(400, ok.size))
    lo, hi = np.percentile(ok[idx].mean(1), [2.5, 97.5])
    # mean of the 7 defined values = 2.85 / 7; NaN left out; draws keyed by the key, the count and the draws
    assert got == BootstrapResult(pytest.approx(2.85 / 7), float(lo), float(hi), 400, 0, SEED)
    assert _pct(v, 400, SEED, "loo@x").low != got.low or _pct(v, 400, SEED, "loo@x").high != got.high
    one = _pct(np.array([0.4, np.nan]), 400, SEED, "k")
    assert (one.estimate, one.low, one.high, one.n_dropped) == (0.4, 0.4, 0.4, 0)
    none = _pct(np.array([np.nan, np.nan]), 400, SEED, "k")
    assert all(math.isnan(x) for x in (none.estimate, none.low, none.high))
    assert (none.n_draws, none.n_dropped, none.seed) == (400, 400, SEED)
    assert all(isinstance(x, float) for x in (none.estimate, none.low, none.high))


def test_category_mean_split_defaults_to_test_and_refusal_names_the_task():
    from perceptbench.tasks.chart_category import CategoryMeanTask, stimulus_id_for

    t = CategoryMeanTask()
    sids = [stimulus_id_for("AAAAAAAAAA", i, "Tab10") for i in range(2)]
    recs = [make_record(t, stimulus_id=s, model=m, model_family="human", readout="human_trial", response=2,
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


def test_salbench_scores_a_model_with_one_trial():
    task = get_task("salbench.detection.syn@n=3")
    rows = {r.metric: r.value for r in task.score([_sal_rec(task, "vlm", "s0", ["Color"], ["Color"], "color/easy")],
                                                  SEED)}
    assert rows["exact_match"] == 1.0 and rows["exact_match[feature=color]"] == 1.0 and rows["null_rate"] == 0.0


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


def test_salbench_encoder_records_of_settings_that_do_not_reach_an_encoder_score_as_skipped():
    """Encoder answers written before such settings were skipped at run time (no
    ``run_meta.skipped``) get the skipped row with the task's reason; a VLM's do not, and a
    single encoder record is enough (the reason comes from that record's readout)."""
    shots = get_task("salbench.detection.syn@n=3,shots=3")
    why = shots.encoder_not_applicable("linear_probe")
    assert why and "shots=3 does not apply" in why
    enc = [_sal_rec(shots, "probe", "s0", ["Color"], ["Color"], "color/easy", readout="linear_probe")]
    rows = shots.score(enc, SEED)
    assert [(r.model, r.metric, r.n, r.n_null, r.note) for r in rows] == [("probe", "skipped", 1, 1, why)]
    assert math.isnan(rows[0].value)
    vlm = [_sal_rec(shots, "vlm", "s0", ["Color"], ["Color"], "color/easy")]  # a VLM reads the examples: scored
    assert "exact_match" in {r.metric for r in shots.score(vlm, SEED)}
    det = get_task("salbench.detection.syn@n=3")  # shots=0 detection applies to an encoder: scored
    assert det.encoder_not_applicable("linear_probe") is None
    assert "exact_match" in {r.metric for r in det.score(
        [_sal_rec(det, "probe", "s0", ["Color"], ["Color"], "color/easy", readout="linear_probe")], SEED)}
    ref = get_task("salbench.referring.syn@n=3")
    rows = ref.score([_sal_rec(ref, "clip", "s0", ["Color"], ["Color"], "color/easy",
                               readout="zero_shot_retrieval")], SEED)
    assert [r.metric for r in rows] == ["skipped"] and "never reaches an encoder" in rows[0].note
