"""Hand-checked VSI analyses (seed 002 §2.3-§4, B.2, C.2, D.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

from perceptbench.metrics import error_detection as ed
from perceptbench.metrics import permutation as pm
from perceptbench.vsi import analysis as va
from perceptbench.vsi.cells import quintiles
from perceptbench.vsi.samples import VSISample

# 8 samples.  Positives (errors) score 0.9, 0.4, 0.7; negatives 0.4, 0.1, 0.3, 0.8, 0.2.
# Pairs: 0.9 beats all 5 -> 5; 0.4 beats 0.1, 0.3, 0.2 and ties 0.4 -> 3.5; 0.7 beats 4 -> 4.
# AUROC = 12.5 / 15 = 0.8333.
ERR = np.array([1, 1, 0, 0, 1, 0, 0, 0], bool)
SCORE = np.array([0.9, 0.4, 0.4, 0.1, 0.7, 0.3, 0.8, 0.2])


def test_auroc_by_hand_and_sklearn():
    assert ed.auroc_rows(ERR, SCORE)[0] == pytest.approx(12.5 / 15)
    assert ed.auroc_rows(ERR, SCORE)[0] == pytest.approx(roc_auc_score(ERR, SCORE))
    rng = np.random.default_rng(3)
    for _ in range(20):  # ties included (scores rounded to one decimal)
        e = rng.random(40) < 0.4
        s = np.round(rng.random(40), 1)
        assert ed.auroc_rows(e, s)[0] == pytest.approx(roc_auc_score(e, s))


def test_auroc_draws_equals_rowwise_on_resamples():
    from perceptbench.metrics.bootstrap import resample_indices

    rng = np.random.default_rng(5)
    e = rng.random(50) < 0.3
    s = np.round(rng.random(50), 1)  # ties
    idx = resample_indices(50, 200, 0)
    assert np.allclose(ed.auroc_draws(e, s, idx), ed.auroc_rows(e[idx], s[idx]), equal_nan=True)


def test_permutation_tied_and_untied_paths_agree_in_distribution():
    # the same data with and without an (irrelevant) tie give nearly the same p
    rng = np.random.default_rng(11)
    x = rng.random(40)
    y = x + rng.normal(0, 0.6, 40)
    p_untied = pm.permutation_spearman(x, y, n_perm=20_000).p
    x2 = x.copy()
    x2[np.argsort(x)[:2]] = x.min()  # tie the two smallest values
    p_tied = pm.permutation_spearman(x2, y, n_perm=20_000).p
    assert abs(p_untied - p_tied) < 0.01 + 0.5 * max(p_untied, p_tied)


def test_auroc_small_class_is_nan_with_reason():
    d = ed.auroc(ERR, SCORE)  # 3 errors < 5
    assert math.isnan(d.value) and d.note == "3 errors < 5"
    assert ed.auroc(ERR, SCORE, min_class=3).value == pytest.approx(12.5 / 15)
    assert math.isnan(ed.auroc_rows(np.zeros(5, bool), np.arange(5.0))[0])


def test_prr80_by_hand():
    # n = 8 -> r = floor(1.6) = 1: reject 0.9 (an error).  R0 = 3/8, R_keep = 2/7,
    # PRR = 1 - (2/7)/(3/8) = 5/21.
    assert ed.prr_rows(ERR, SCORE)[0] == pytest.approx(5 / 21)
    # ties at the threshold: n = 10 -> r = 2; 0.9 rejected (error), then one of two samples tied
    # at 0.5 (one error, one correct) -> E_rej = 1 + 0.5.  R0 = 0.2, R_keep = 0.5/8 = 0.0625,
    # PRR = (0.2 - 0.0625)/0.2 = 0.6875, whatever the order of the tied samples.
    e = np.array([1, 0, 1, 0, 0, 0, 0, 0, 0, 0], bool)
    s = np.array([0.9, 0.5, 0.5, 0.1, 0.2, 0.3, 0.2, 0.1, 0.0, 0.05])
    assert ed.prr_rows(e, s)[0] == pytest.approx(0.6875)
    assert ed.prr_rows(e[[0, 2, 1, 3, 4, 5, 6, 7, 8, 9]], s[[0, 2, 1, 3, 4, 5, 6, 7, 8, 9]])[0] == pytest.approx(0.6875)
    assert math.isnan(ed.prr_rows(np.zeros(10, bool), s)[0])  # baseline risk 0


def test_ece_and_brier_by_hand():
    conf = np.array([0.95, 0.85, 0.82, 0.55, 0.51, 0.15, 0.05, 1.0])
    corr = np.array([1, 0, 1, 1, 0, 0, 0, 1], bool)
    # bins: 9 {.95, 1.0} acc 1 conf .975 -> .025; 8 {.85, .82} acc .5 conf .835 -> .335;
    # 5 {.55, .51} acc .5 conf .53 -> .03; 1 {.15} acc 0 -> .15; 0 {.05} acc 0 -> .05.
    # ECE = (2 .025 + 2 .335 + 2 .03 + .15 + .05) / 8 = .98 / 8
    assert ed.ece_rows(conf, corr)[0] == pytest.approx(0.98 / 8)
    # Brier = (.05^2 + .85^2 + .18^2 + .45^2 + .51^2 + .15^2 + .05^2 + 0) / 8 = 1.245 / 8
    assert ed.brier_rows(conf, corr)[0] == pytest.approx(1.245 / 8)
    with pytest.raises(ValueError):
        ed.ece_rows(np.array([1.2]), np.array([True]))
    assert va.normalised_vsi(np.array([0.0, np.log(2)])) == pytest.approx([0.0, 0.5])


def test_quintiles_and_hybrid():
    q = quintiles(np.array([5, 1, 1, 3, 2, 9, 0, 4, 7, 6.0]), [f"s{i}" for i in range(10)])
    assert list(q) == [3, 0, 1, 2, 1, 4, 0, 2, 4, 3]  # order 6,1,2,4,3,7,0,9,8,5; ties by id
    h = va.hybrid_score(np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.0, 0.0]))
    assert h == pytest.approx([2 / 3, 2 / 3, 2 / 3])


def test_paired_difference_of_identical_signals():
    rng = np.random.default_rng(0)
    e = rng.random(60) < 0.4
    s = rng.random(60)
    pd = ed.paired_auroc_diff(e, s, s, seed=1)
    assert pd.diff == 0 and pd.low == 0 and pd.high == 0 and pd.p == 1.0
    good = e + 0.3 * rng.random(60)  # nearly perfect signal
    pd = ed.paired_auroc_diff(e, good, s, seed=1)
    assert pd.diff > 0.3 and pd.low > 0 and pd.p == pytest.approx(2 / 1001)


def test_permutation_perfect_pair():
    x = np.arange(30.0)
    r = pm.permutation_spearman(x, 2 * x + 1, n_perm=10_000, seed=42)
    assert r.rho == pytest.approx(1.0) and r.p == 1 / (10_000 + 1)
    r = pm.permutation_spearman(x, -x, n_perm=10_000, seed=42)  # two-sided
    assert r.rho == pytest.approx(-1.0) and r.p == 1 / (10_000 + 1)


def test_permutation_null_is_roughly_uniform_and_rho_matches_scipy():
    rng = np.random.default_rng(7)
    pairs = [(rng.random(20), rng.random(20)) for _ in range(300)]
    res = pm.permutation_spearman_many(pairs, n_perm=999, seed=42)
    p = np.array([r.p for r in res])
    assert 0.42 < p.mean() < 0.58
    assert 0.05 < np.mean(p < 0.1) < 0.16
    assert 0.25 < np.mean(p < 0.3) < 0.35
    for (x, y), r in zip(pairs[:5], res[:5]):
        assert r.rho == pytest.approx(spearmanr(x, y).statistic)
    # a pair's p-value does not depend on the other pairs tested with it
    assert pm.permutation_spearman(*pairs[3], n_perm=999, seed=42).p == res[3].p


def _grid(n=60, models=("m1", "m2", "m3"), seed=0, sigmas=(20.0,), perts=("region", "whole")):
    """Synthetic samples: a shared latent 'insensitivity' drives VSI in every model; errors
    are more likely when VSI is low."""
    rng = np.random.default_rng(seed)
    latent = rng.random(n)
    out = []
    for mi, m in enumerate(models):
        wrong = rng.random(n) < 0.15 + 0.5 * (latent < 0.3)
        for pert in perts:
            for sg in sigmas:
                vsi = np.exp(4 * latent + rng.normal(0, 0.5, n) + (0 if pert == "region" else 0.3)) * 0.01
                for i in range(n):
                    out.append(VSISample(
                        task_id=f"vsi.bench@sigma={sg:g}", benchmark="bench", model=m,
                        model_family="fa" if mi < 2 else "fb", sample_id=f"s{i:03d}", image_id=f"img{i // 2}",
                        perturbation=pert, sigma=sg, vsi=float(vsi[i]), argmax_changed=bool(vsi[i] > 0.3),
                        correct=None if i == 0 else bool(not wrong[i]), max_prob=float(rng.uniform(0.3, 1)),
                        verbal_conf=None if i % 10 == 1 else float(rng.integers(0, 101)), region_source="exact"))
    return out


def test_score_vsi_analyses_end_to_end():
    s = _grid(sigmas=(10.0, 20.0))
    rows = va.score_vsi_analyses(s, seed=0, n_perm=2000)
    by = {(r.task_id, r.model, r.metric): r for r in rows}
    r = by[("vsi.bench@sigma=20", "m1", "auroc_vsi[region,sigma=20]")]
    assert r.n == 59 and r.n_null == 1 and r.value > 0.5 and r.ci_low < r.value < r.ci_high
    assert by[("vsi.bench@sigma=20", "m1~m2", "vsi_rho[region,sigma=20]")].value > 0.5
    assert by[("vsi.bench@sigma=20", "m1~m2", "vsi_rho_p[region,sigma=20]")].value == pytest.approx(1 / 2001)
    assert by[("vsi.bench@sigma=20", "all-pairs", "vsi_rho_mean_same_family[region,sigma=20]")].n == 1
    assert by[("vsi.bench@sigma=20", "all-pairs", "vsi_rho_mean_cross_family[region,sigma=20]")].n == 2
    assert ("vsi.bench@sigma=10,vsi.bench@sigma=20", "m1", "rho_sigma[region,10~20]") in by
    assert ("vsi.bench@sigma=20", "m1", "rho_region_whole[sigma=20]") in by
    table = va.signal_table_from_rows(rows)
    assert len(table) == 6 and all(t["winner"] in va.SIGNALS for t in table)
    q = [by[("vsi.bench@sigma=20", "m1", f"quadrant_{k}_low_vsi[region,sigma=20]")].value
         for k in ("correct_high", "correct_low", "wrong_high", "wrong_low")]
    assert sum(q) == pytest.approx(1.0)
    assert by[("vsi.bench@sigma=20", "all-pairs", "vsi_rho_grand_mean[region,sigma=20]")].n == 3
    keys = [(r.task_id, r.model, r.metric) for r in rows]
    assert len(keys) == len(set(keys))  # one row per (task, model, metric)
    # every row is finite or says why not
    for row in rows:
        assert math.isfinite(row.value) or row.note, row
    # deterministic
    rows2 = va.score_vsi_analyses(s, seed=0, n_perm=2000)
    assert [(r.metric, r.value, r.ci_low) for r in rows] == [(r.metric, r.value, r.ci_low) for r in rows2]


def test_tiny_cells_give_nan_rows_not_crashes():
    s = [x for x in _grid(n=8, models=("m1", "m2"), perts=("region",))]
    rows = va.score_vsi_analyses(s, seed=0, n_perm=100)
    by = {(r.model, r.metric): r for r in rows}
    r = by[("m1", "auroc_vsi[region,sigma=20]")]
    assert math.isnan(r.value) and ("errors <" in r.note or "correct answers <" in r.note)
    assert math.isnan(by[("m1", "error_rate_ratio[region,sigma=20]")].value)
    assert math.isnan(by[("m1", "auroc_hybrid[sigma=20]")].value)
    assert not any(row.value == 0.5 and not row.note for row in rows if "auroc" in row.metric)


def test_duplicate_sample_is_an_error():
    s = _grid(n=10, models=("m1",), perts=("region",))
    with pytest.raises(ValueError, match="appears twice"):
        va.score_vsi_analyses(s + s[:1], n_perm=10)


def test_two_tasks_of_one_benchmark_are_not_mixed():
    import dataclasses

    a = _grid(n=40, models=("m1",))
    b = [dataclasses.replace(x, task_id="vsi.bench@limit=40") for x in a]
    rows = va.score_vsi_analyses(a + b, seed=0, n_perm=100)
    margins = [r for r in rows if r.metric == "signal_margin[sigma=20]"]
    assert sorted(r.task_id for r in margins) == ["vsi.bench@limit=40", "vsi.bench@sigma=20"]
    keys = [(r.task_id, r.model, r.metric) for r in rows]
    assert len(keys) == len(set(keys))


def test_signal_table_says_no_parseable_answers_not_zero_errors():
    """Before: 'idef ... 0 errors < 5' when all 40 answers were null."""
    import numpy as np

    from perceptbench.metrics.error_detection import class_check

    assert class_check(np.zeros(0, bool)).startswith("no parseable answers")
    assert class_check(np.zeros(40, bool)) == "0 errors < 5"  # 40 parsed, all correct: a real count


def test_prr80_under_five_parseable_samples_and_small_quadrants_say_why_in_the_note():
    # 5 samples, the first unparseable: 4 parseable -> floor(0.2 * 4) = 0 rejected, PRR@80 undefined
    s = _grid(n=5, models=("m1",), perts=("region",))
    by = {r.metric: r for r in va.score_vsi_analyses(s, seed=0, n_perm=10)}
    for signal in ("vsi", "max_prob"):
        r = by[f"prr80_{signal}[region,sigma=20]"]
        assert math.isnan(r.value) and "4 parseable samples < 5" in r.note and "floor(0.2 n) = 0" in r.note
    # the quadrant rows are given from the single bottom-quintile sample, and say that the
    # quintile error rates beside them need 25
    q = by["quadrant_correct_high_low_vsi[region,sigma=20]"]
    assert q.n == 1 and math.isfinite(q.value)
    assert "from 1 bottom-quintile sample(s)" in q.note and "need 25 parseable samples" in q.note
    assert "4 parseable samples < 25" in by["error_rate_bottom_quintile[region,sigma=20]"].note


def test_class_check_note_is_singular_for_one_error_or_one_correct_answer():
    """Before: '1 errors < 5' in the VSI signal table and notes."""
    import numpy as np

    from perceptbench.metrics.error_detection import class_check

    assert class_check(np.array([True] + [False] * 9)) == "1 error < 5"
    assert class_check(np.array([False] + [True] * 9)) == "1 correct answer < 5"
    assert class_check(np.array([True] * 3 + [False] * 9)) == "3 errors < 5"


def _by(rows):
    return {(r.task_id, r.model, r.metric): r for r in rows}


def test_cross_model_pairs_up_to_twenty_models_are_every_pair_under_auto():
    from perceptbench.vsi.cells import _cells

    cells = _cells(_grid(n=30, models=tuple(f"m{i:02d}" for i in range(20)), perts=("region",)))
    auto = va.cross_model_rows(cells, families=None, n_perm=200, perm_seed=42)
    assert auto == va.cross_model_rows(cells, families=None, n_perm=200, perm_seed=42, pairs="all")
    assert sum(r.metric.startswith("vsi_rho[") for r in auto) == 190


def test_cross_model_pairs_above_twenty_models_are_ranking_neighbours_and_the_means_stay_over_all_pairs():
    from perceptbench.vsi.cells import _cells

    models = tuple(f"m{i:02d}" for i in range(21))
    cells = _cells(_grid(n=30, models=models, perts=("region",)))
    auto = va.cross_model_rows(cells, families=None, n_perm=200, perm_seed=42)
    every = _by(va.cross_model_rows(cells, families=None, n_perm=200, perm_seed=42, pairs="all"))
    rho = [r for r in auto if r.metric.startswith("vsi_rho[")]
    assert len(rho) == 20 and sum(r.metric.startswith("vsi_rho_p[") for r in auto) == 20
    # the pairs are consecutive in the ranking by median VSI (highest first), named a~b by name
    cell = {m: np.median([s.vsi for s in cells[("vsi.bench@sigma=20", "bench", m, "region", 20.0)]]) for m in models}
    ranked = sorted(models, key=lambda m: -cell[m])
    assert [r.model for r in rho] == ["~".join(sorted(p)) for p in zip(ranked, ranked[1:])]
    for r in auto:
        if "~" in r.model:  # a neighbour pair's row is the all-pairs row of that pair, plus the note
            want = every[(r.task_id, r.model, r.metric)]
            assert (r.value, r.n) == (want.value, want.n)
            assert "only the 20 neighbours in the ranking by median VSI" in r.note and "score --pairs all" in r.note
    for stem in ("vsi_rho_mean", "vsi_rho_mean_same_family", "vsi_rho_mean_cross_family", "vsi_rho_grand_mean"):
        key = ("vsi.bench@sigma=20", "all-pairs", f"{stem}[region,sigma=20]")
        got, want = _by(auto)[key], every[key]
        assert got.n == want.n and got.value == pytest.approx(want.value, abs=1e-12)  # every pair, by the matrix
    mean = _by(auto)[("vsi.bench@sigma=20", "all-pairs", "vsi_rho_mean[region,sigma=20]")]
    assert mean.n == 210 and "rank-correlation matrix" in mean.note and "no p-value" in mean.note
    per_pair = [r.value for k, r in every.items() if k[2] == "vsi_rho[region,sigma=20]"]
    assert mean.value == pytest.approx(np.mean(per_pair), abs=1e-12)


def test_joint_quintile_pairs_follow_the_same_rule():
    import json

    from perceptbench.vsi.cells import _cells
    from perceptbench.vsi.pooled import joint_quintile_rows

    cells = _cells(_grid(n=30, models=tuple(f"m{i:02d}" for i in range(21)), perts=("region",)))
    auto, every = joint_quintile_rows(cells), _by(joint_quintile_rows(cells, "all"))
    assert len(auto) == 20 * 4 and len(every) == 210 * 4
    for r in auto:
        want = every[(r.task_id, r.model, r.metric)]
        assert (r.value, r.n) == (want.value, want.n) or (math.isnan(r.value) and math.isnan(want.value))
        extra = json.loads(r.note)["pairs"] if r.metric.startswith("joint_error_grid") else r.note
        assert "only the 20 neighbours" in extra and "score --pairs all" in extra
    small = _cells(_grid(n=30, models=("m1", "m2", "m3"), perts=("region",)))
    assert joint_quintile_rows(small) == joint_quintile_rows(small, "all")
    with pytest.raises(ValueError, match="pairs 'some'"):
        va.score_vsi_analyses(_grid(n=10, models=("m1",), perts=("region",)), n_perm=10, pairs="some")


def test_cell_diagnostics_with_an_interval_batch_equals_one_bootstrap_per_row():
    """score_vsi_analyses takes the cells' bootstrap intervals in batches (issue 25): every row of
    cell_diagnostics with an IntervalBatch, flushed, equals the row of one bootstrap() per
    statistic, every field bit for bit, small cells (NaN and note-carrying rows) included."""
    from perceptbench.metrics.bootstrap import IntervalBatch
    from perceptbench.vsi.cells import _cells

    cells = _cells(_grid(n=60, models=("m1", "m2", "m3")) + _grid(n=4, models=("tiny",), seed=2))
    batch = IntervalBatch(size=7)  # flushes part-way as well as at the end
    got = [r for key in sorted(cells) for r in va.cell_diagnostics(key[0], key[2], cells[key], 5, batch)]
    batch.flush()
    want = [r for key in sorted(cells) for r in va.cell_diagnostics(key[0], key[2], cells[key], 5)]
    assert [repr(r) for r in got] == [repr(r) for r in want]
    assert sum(r.n_draws == 1000 and r.ci_low is not None and np.isfinite(r.ci_low) for r in got) > 50


def _every_pair_rho_by_pair(by_model):
    """The list form _every_pair_rho had before issue 25: (a, b, rho) per pair in combinations
    order, from one matrix when the models share their samples, else pair by pair."""
    from itertools import combinations

    names = sorted(by_model)
    ids = [s.sample_id for s in by_model[names[0]]]
    if all([s.sample_id for s in by_model[m]] == ids for m in names):
        rho = pm.spearman_matrix(np.array([[s.vsi for s in by_model[m]] for m in names], float))
        return [(names[i], names[j], float(rho[i, j])) for i, j in combinations(range(len(names)), 2)]
    out = []
    for ma, mb in combinations(names, 2):
        a, b = va._pairs_by_sample(by_model[ma], by_model[mb])
        out.append((ma, mb, float(pm.spearman_matrix(np.array([[s.vsi for s in a], [s.vsi for s in b]],
                                                              float).reshape(2, len(a)))[0, 1])))
    return out


def test_every_pair_rho_arrays_equal_the_pair_by_pair_rhos():
    """_every_pair_rho gives every pair's rho as arrays (issue 25): pair k is (names[i[k]],
    names[j[k]]) in combinations order and rho[k] equals the pair's own rank correlation, bit for
    bit, when the models share their samples (one matrix) and when they do not (pair by pair)."""
    from perceptbench.vsi.cells import _cells

    cells = _cells(_grid(n=30, models=tuple(f"m{i:02d}" for i in range(23)), perts=("region",)))
    by_model = {k[2]: c for k, c in cells.items()}
    uneven = dict(by_model, m05=by_model["m05"][:-4])  # one model lacks four samples: pair by pair
    constant = dict(by_model, m07=[s.__class__(**{**vars(s), "vsi": 0.5}) for s in by_model["m07"]])  # NaN rho
    for case in (by_model, uneven, constant):
        names, i, j, rho = va._every_pair_rho(case)
        got = [(names[a], names[b], r) for a, b, r in zip(i.tolist(), j.tolist(), rho.tolist())]
        want = _every_pair_rho_by_pair(case)
        assert [g[:2] for g in got] == [w[:2] for w in want]
        assert np.array_equal(np.array([g[2] for g in got]), np.array([w[2] for w in want]), equal_nan=True)
    assert np.isnan(va._every_pair_rho(constant)[3]).sum() == 22


def test_cross_model_means_over_every_pair_equal_the_pair_by_pair_means():
    """Above 20 models the rho means take every pair's rho from _every_pair_rho's arrays (issue
    25): the mean, same-family and cross-family means and their counts equal those of the pair by
    pair form (finite rhos, in combinations order), bit for bit, per task and over tasks."""
    from perceptbench.vsi.cells import _cells

    models = tuple(f"m{i:02d}" for i in range(22))
    samples = _grid(n=30, models=models, perts=("region",))
    samples += [s.__class__(**{**vars(s), "task_id": "vsi.other@sigma=20", "vsi": s.vsi * (1 + int(s.sample_id[1:]) % 7)})
                for s in samples if s.model != "m03"]
    samples = [s.__class__(**{**vars(s), "vsi": 0.5}) if s.model == "m04" else s for s in samples]  # NaN rhos
    cells = _cells(samples)
    rows = _by(va.cross_model_rows(cells, families=None, n_perm=50, perm_seed=42))
    fam = {s.model: s.model_family for s in samples}
    pooled = {}
    for task in ("vsi.bench@sigma=20", "vsi.other@sigma=20"):
        by_model = {k[2]: c for k, c in cells.items() if k[0] == task}
        vals = [(r, fam[a] == fam[b]) for a, b, r in _every_pair_rho_by_pair(by_model) if np.isfinite(r)]
        pooled[task] = vals
    pooled["vsi.bench@sigma=20,vsi.other@sigma=20"] = pooled["vsi.bench@sigma=20"] + pooled["vsi.other@sigma=20"]
    for tid, vals in pooled.items():
        stem = "vsi_rho_grand_mean" if "," in tid else "vsi_rho_mean"
        rho, same = np.array([v for v, _ in vals]), np.array([s for _, s in vals])
        for label, want in (("", rho), ("_same_family", rho[same]), ("_cross_family", rho[~same])):
            r = rows[(tid, "all-pairs", f"{stem}{label}[region,sigma=20]")]
            assert (r.value, r.n) == (float(want.mean()), want.size)


def test_pooled_enrichment_from_the_cells_kept_counts_equals_counting_afresh():
    """pooled_rows counts each cell's threshold enrichment once (issue 25): the pooled rows from
    the counts cell_rows kept (seeded, with their intervals) equal those counted afresh."""
    from perceptbench.vsi import pooled
    from perceptbench.vsi.cells import _cells

    cells = _cells(_grid(n=60, models=("m1", "m2", "m3"), sigmas=(10.0, 20.0)))
    found: dict = {}
    for key in sorted(cells):
        pooled.cell_rows(key[0], key[2], cells[key], 4, found)
    assert len(found) == 2 * len(cells) and all("ci" in c for c in found.values())
    assert [repr(r) for r in pooled.pooled_enrichment_rows(cells, 4, found)] == \
        [repr(r) for r in pooled.pooled_enrichment_rows(cells, 4)]
