"""scorers/cell_panel.py: the category-mean ratio and percentage statistics over resampled cells."""

import math

import numpy as np
import pytest

from helpers.score_rows import SEED


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


def test_observer_matrix_kappa_equals_kappa_on_each_participants_common_stimuli():
    """kappa(model, participant) for every participant at once equals the loop over participants
    on the stimuli both answered (a later record of a stimulus wins; participants sharing none
    left out), bit for bit."""
    from perceptbench.metrics.error_consistency import kappa
    from perceptbench.scorers.cell_panel import _ObserverMatrix

    rng = np.random.default_rng(2)
    stim = [f"s{i}" for i in range(30)]
    col = {s: i for i, s in enumerate(stim)}
    humans = {f"human:o{j}": {s: float(rng.random() < 0.7) for s in rng.permutation(stim)[:rng.integers(1, 12)]}
              for j in range(25)}
    cols = rng.integers(0, 20, 40)  # stimuli 20..29 never answered; repeats: the last record stands
    correct = (rng.random(40) < 0.5).astype(float)
    valid = rng.random(40) < 0.8
    resp = {}
    for k, c, v in zip(cols, correct, valid):
        resp[stim[k]] = (c, v)
    want = []
    for o, d in sorted(humans.items()):
        common = [s for s in d if s in resp and resp[s][1]]
        if common:
            want.append(float(kappa(np.array([resp[s][0] for s in common]), np.array([d[s] for s in common]))))
    got = _ObserverMatrix(humans, col).kappa_per_observer(cols, correct, valid)
    assert len(want) < len(humans) and np.array_equal(got, np.array(want), equal_nan=True)


def test_ratio_boots_equal_a_per_draw_loop_per_mask():
    """Several masks on one set of (stratified) draws: each equals the plain per-draw ratio of
    sums and its percentiles, to the last bit; an empty mask is NaN throughout; fractional
    weights take the gathering path and still equal the loop."""
    from perceptbench.metrics.bootstrap import resample_indices
    from perceptbench.scorers.cell_panel import ratio_boots

    rng = np.random.default_rng(5)
    n, d = 40, 300
    den = rng.integers(0, 4, n).astype(float)  # some stimuli seen by nobody: 0 / 0 draws
    num = np.floor(den * rng.random(n))
    strata = rng.integers(2, 5, n)
    masks = np.array([strata == 2, strata == 3, strata == 9], float)  # the last: no stimulus
    for nu, de in ((num, den), (num / 3, den)):
        got = ratio_boots(nu, de, masks, d, SEED, strata=strata)
        idx = resample_indices(n, d, SEED, strata)
        for j, r in enumerate(got):
            with np.errstate(invalid="ignore", divide="ignore"):
                draws = np.array([(nu[i] * masks[j][i]).sum() / (de[i] * masks[j][i]).sum() if
                                  (de[i] * masks[j][i]).sum() > 0 else np.nan for i in idx])
                est = (nu * masks[j]).sum() / (de * masks[j]).sum() if (de * masks[j]).sum() > 0 else np.nan
            ok = np.isfinite(draws)
            lo, hi = np.percentile(draws[ok], [2.5, 97.5]) if ok.any() else (np.nan, np.nan)
            assert (r.n_dropped, r.n_draws) == (int((~ok).sum()), d)
            for a, b in ((r.estimate, est), (r.low, lo), (r.high, hi)):
                assert a == b or (math.isnan(a) and math.isnan(b)), j


def _panel_records(task, rng, models):
    """Six observers in two cells (stimuli s0-s5 and s6-s11, k 2-4) and the models' answers:
    ``models`` {name: (stimulus indices, P(correct), P(null))}."""
    from perceptbench.tasks.chart_category import stimulus_id_for
    from helpers.records import plant_record

    sids = [stimulus_id_for("AAAAAAAAAA" if i < 6 else "BBBBBBBBBB", i, "Tab10") for i in range(12)]
    k = {s: 2 + i % 3 for i, s in enumerate(sids)}
    gt = {s: 1 + i % 2 for i, s in enumerate(sids)}

    def rec(model, s, correct, family, null=False):
        resp = None if null else gt[s] if correct else ("other" if family == "human" else 3)
        return plant_record(task, stimulus_id=s, model=model, model_family=family,
                            readout="human_trial" if family == "human" else "class_probe", response=resp,
                            ground_truth=gt[s], manipulated_value=k[s], raw_output=None, prompt_id=None,
                            prompt_hash=None, model_version="v", seed=0, run_id="r", split="test")

    recs = [rec(f"human:o{j}", s, rng.random() < 0.7, "human") for j in range(6)
            for s in (sids[:6] if j < 3 else sids[6:])]
    models_recs = {m: [rec(m, sids[i], rng.random() < pc, "encoder", rng.random() < pn) for i in ix]
                   for m, (ix, pc, pn) in models.items()}
    return recs, models_recs


def test_models_scored_together_equal_each_model_scored_alone():
    """The block path (models with the same trials share every draw: accuracy, B, a(k), kappa)
    gives each model the rows it gets when scored alone beside the panel, to the last bit:
    nulls, an always-right model (kappa 0), a model with every answer null (kappa undefined), and a model
    on a subset of the stimuli (its own block)."""
    from perceptbench.tasks.chart_category import CategoryMeanTask

    t = CategoryMeanTask()
    rng = np.random.default_rng(8)
    every = list(range(12))
    humans, models = _panel_records(t, rng, {"m1": (every, 0.6, 0.1), "m2": (every, 0.5, 0.2),
                                             "m3": (every, 1.0, 0.0), "m4": (every, 0.5, 1.0),
                                             "m5": ([0, 2, 3, 7, 9], 0.5, 0.2)})
    together = t.scorer.score(humans + [r for rs in models.values() for r in rs], SEED)
    assert {r.model for r in together} >= set(models)
    for m, rs in models.items():
        alone = [vars(r) for r in t.scorer.score(humans + rs, SEED) if r.model == m]
        got = [vars(r) for r in together if r.model == m]
        assert repr(got) == repr(alone), m
    kappa_of = {r.model: r for r in together if r.metric == "kappa_aggregate"}
    assert kappa_of["m3"].value == 0.0  # always right: c_obs = c_exp
    assert math.isnan(kappa_of["m4"].value) and kappa_of["m4"].n_dropped == 2000  # nothing valid: undefined


def test_single_model_panel_rows_equal_the_per_draw_forms():
    """One model: accuracy and kappa_aggregate equal the per-draw bootstrap of the statistic on
    its trials (seed 000 D.5), bit for bit."""
    from perceptbench.metrics.bootstrap import N_BOOT_B, N_BOOT_KAPPA, bootstrap
    from perceptbench.metrics.error_consistency import kappa
    from perceptbench.tasks.chart_category import CategoryMeanTask

    t = CategoryMeanTask()
    humans, models = _panel_records(t, np.random.default_rng(3), {"m": (list(range(12)), 0.6, 0.15)})
    rows = {r.metric: r for r in t.scorer.score(humans + models["m"], SEED) if r.model == "m"}
    recs = sorted(models["m"], key=lambda r: r.stimulus_id)
    correct = np.array([float(r.correct is True) for r in recs])
    valid = np.array([r.response is not None for r in recs])
    hum = {}
    for r in humans:
        hum.setdefault(r.stimulus_id, []).append(float(r.correct is True))
    p = np.array([np.mean(hum[r.stimulus_id]) for r in recs])
    ka = bootstrap(lambda i: kappa(correct[i], p[i], valid[i]), len(recs), n_draws=N_BOOT_KAPPA, seed=SEED)
    acc = bootstrap(lambda i: (correct[i] * valid[i]).sum(-1) / valid[i].sum(-1), len(recs), n_draws=N_BOOT_B,
                    seed=SEED)
    for metric, want in (("kappa_aggregate", ka), ("accuracy", acc)):
        r = rows[metric]
        assert (r.value, r.ci_low, r.ci_high) == (want.estimate, want.low, want.high), metric
