"""Known-answer tests: small inputs whose right answer is derived by hand in a comment.

Each test pins a value that a plausible fault in the code under test would change
(issue 14): the boundary of every threshold (at it, one step either side) and every tie rule.
"""

import json

import numpy as np
import pytest

from perceptbench.metrics.agreement import agreement_b, masked_mean, null_bracket, position_floor
from perceptbench.metrics.bootstrap import bootstrap, resample_indices
from perceptbench.metrics.capacity import BASELINE_MAX_K, HUMAN_BAND, accuracy_by_k, capacity_k
from perceptbench.metrics.error_consistency import (
    kappa, kappa_pairwise_mean, leave_one_out_ceiling, pairwise_ceiling)
from perceptbench.readouts.encoder import (
    LinearProbeReadout, PrototypeReadout, RidgeCountReadout, odd_one_out, retrieval_readout)


def unit(*v):
    v = np.asarray(v, np.float32)
    return v / np.linalg.norm(v)


# ---------------------------------------------------------------- readouts

def test_odd_one_out_is_outside_the_most_similar_pair():
    # cos12 = 0.0, cos13 = 0.6, cos23 = 0.8 -> most similar pair (2,3) -> odd one out is 1;
    # the *least* similar pair (1,2) would answer 3.
    e = np.stack([unit(1, 0), unit(0, 1), unit(0.6, 0.8)])
    pos, raw = odd_one_out(e)
    assert pos == 1
    assert json.loads(raw) == {"cos12": 0.0, "cos13": 0.6, "cos23": 0.8}


@pytest.mark.parametrize("emb, expected", [
    # most similar pair (1,2) -> 3
    ([(1, 0), (0.96, 0.28), (0, 1)], 3),
    # most similar pair (1,3) -> 2
    ([(1, 0), (0, 1), (0.96, 0.28)], 2),
    # all three pairs tie (identical vectors): first pair (1,2) wins -> 3
    ([(1, 0), (1, 0), (1, 0)], 3),
    # (1,3) and (2,3) tie at 0.6, (1,2) = -0.28 (lower): first of the tied pairs, (1,3) -> 2
    ([(0.8, 0.6), (-0.8, 0.6), (0, 1)], 2),
])
def test_odd_one_out_positions_and_ties(emb, expected):
    assert odd_one_out(np.stack([unit(*v) for v in emb]))[0] == expected


def test_prototype_readout_normalises_prototypes():
    # class A = {(1,0), (0,1)}: mean (0.5, 0.5), unit prototype (0.707, 0.707);
    # class B = {(1,0), (1,0)}: prototype (1, 0).  Query q = (0.8, 0.6):
    # cos(q, A) = 0.707*1.4 = 0.990 > cos(q, B) = 0.8 -> "A".  With the unnormalised mean of A
    # q.(0.5,0.5) = 0.7 < 0.8 -> "B": so "A" proves the prototypes are normalised.
    emb = np.stack([unit(1, 0), unit(0, 1), unit(1, 0), unit(1, 0)])
    ro = PrototypeReadout(("A", "B")).fit(emb, ["A", "A", "B", "B"])
    np.testing.assert_allclose(np.linalg.norm(ro.prototypes, axis=1), 1.0, rtol=1e-6)
    labels, raws = ro.predict(unit(0.8, 0.6)[None])
    assert labels == ["A"]
    assert json.loads(raws[0])["cosine_top3"] == {"A": pytest.approx(0.98995, abs=1e-5), "B": pytest.approx(0.8, abs=1e-6)}


def test_prototype_readout_tie_goes_to_first_class_and_missing_class_raises():
    # query (0.6, 0.8)... at equal cosine to both prototypes: (1,1)/sqrt2 is equidistant from (1,0) and (0,1)
    ro = PrototypeReadout(("B", "A")).fit(np.stack([unit(1, 0), unit(0, 1)]), ["A", "B"])
    assert ro.predict(unit(1, 1)[None])[0] == ["B"]  # first class in option order
    with pytest.raises(ValueError, match="'C'"):
        PrototypeReadout(("A", "C")).fit(np.stack([unit(1, 0)]), ["A"])


def test_ridge_count_readout_rounds_and_clips_to_rendered_range():
    # embeddings e = (count, 1) with count 2..6 repeated: ridge (tiny alpha) recovers count;
    # queries 3.4 -> 3, 3.6 -> 4 (round half away at .5 is not needed here), 9 -> clipped 6, 0 -> 2
    counts = np.tile(np.arange(2, 7), 4)
    emb = np.stack([counts, np.ones_like(counts)], 1).astype(np.float32)
    ro = RidgeCountReadout(2, 6, alphas=(1e-6, 1e-5)).fit(emb, counts)
    q = np.array([[3.4, 1], [3.6, 1], [9, 1], [0, 1]], np.float32)
    out, raws = ro.predict(q)
    assert out == [3, 4, 6, 2]
    assert json.loads(raws[2])["ridge"] == pytest.approx(9.0, abs=1e-3)


def test_linear_probe_single_and_multilabel():
    # two separable clusters -> the probe answers the cluster's label, as a one-element list
    x = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9]] * 3, np.float32) * 5
    y = [["Color"], ["Color"], ["Size"], ["Size"]] * 3
    ro = LinearProbeReadout().fit(x, y)
    assert ro.predict(np.array([[5, 0], [0, 5]], np.float32))[0] == [["Color"], ["Size"]]
    with pytest.raises(ValueError, match="two classes"):
        LinearProbeReadout().fit(x[:2], [["Color"], ["Color"]])
    # multi-label: a stimulus on both axes carries both labels; threshold 0.5, at least the top class
    xm = np.array([[1, 0], [0, 1], [1, 1], [0, 0]] * 4, np.float32) * 6
    ym = [["Color"], ["Size"], ["Color", "Size"], []] * 4
    rm = LinearProbeReadout().fit(xm, ym)
    assert rm.multilabel
    pred = rm.predict(np.array([[6, 6], [0, 0]], np.float32))[0]
    assert pred[0] == ["Color", "Size"]
    assert len(pred[1]) == 1  # nothing above 0.5: the single most probable label is kept


def test_retrieval_readout_top1_and_tie():
    text = np.stack([unit(1, 0), unit(0, 1), unit(1, 1)])
    out, raws = retrieval_readout(np.stack([unit(0.1, 1), unit(1, 0.9)]), text, ("Color", "Size", "Orientation"))
    # (0.1,1): cos to Size 0.995 is the largest; (1,0.9): cos to (1,1)/sqrt2 = 0.9986 is the largest
    assert out == [["Size"], ["Orientation"]]
    assert set(json.loads(raws[0])["cosine"]) == {"Color", "Size", "Orientation"}
    # a tie between the first two categories goes to the first
    assert retrieval_readout(unit(1, 1)[None], text[:2], ("Color", "Size"))[0] == [["Color"]]


# ---------------------------------------------------------------- agreement, floor, bracket

def test_b_counts_only_valid_trials():
    # matches 1,0,1,1 with the last invalid -> 2/3; nothing valid -> NaN (never 0)
    assert agreement_b(np.array([1, 0, 1, 1]), np.array([1, 1, 1, 0])) == pytest.approx(2 / 3)
    assert np.isnan(agreement_b(np.array([1, 1]), np.array([0, 0])))
    np.testing.assert_allclose(masked_mean(np.array([[1, 0], [1, 1]]), np.ones((2, 2), bool)), [0.5, 1.0])


@pytest.mark.parametrize("targets, floor", [
    ([3, 3, 3, 1], 0.75),        # position 3 must be counted
    ([1, 2, 3], 1 / 3),          # perfectly balanced: 1/k
    ([2, 2, 1, 3, 3, 3], 0.5),   # the last position wins
    ([1], 1.0),
])
def test_position_floor_counts_every_position(targets, floor):
    assert position_floor(np.array(targets)) == pytest.approx(floor)


def test_position_floor_k_and_empty():
    # k = 4: position 4 holds 2 of 3 targets -> 2/3; a k=3 call would ignore it (1/3)
    assert position_floor(np.array([4, 4, 1]), k=4) == pytest.approx(2 / 3)
    assert position_floor(np.array([4, 4, 1]), k=3) == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        position_floor(np.array([]))


def test_null_bracket_edges():
    # nu = 0: a point; nu = 1: the whole [0, 1]; B = 0.8, nu = 0.25 -> [0.6, 0.85]
    assert null_bracket(0.7, 0.0) == (0.7, 0.7)
    assert null_bracket(0.3, 1.0) == (0.0, 1.0)
    assert null_bracket(0.8, 0.25) == pytest.approx((0.6, 0.85))


# ---------------------------------------------------------------- kappa

def test_kappa_aggregate_form_by_hand():
    # m = (1,1,0,0), panel p = (1, .5, .5, 0): c_obs = mean(1, .5, .5, 1) = 0.75;
    # p_m = 0.5, p_h = 0.5 -> c_exp = 0.5 -> kappa = (0.75-0.5)/0.5 = 0.5
    assert kappa(np.array([1, 1, 0, 0]), np.array([1, 0.5, 0.5, 0])) == pytest.approx(0.5)


def test_kappa_perfect_and_opposite_and_valid_mask():
    m = np.array([1, 0, 1, 0])
    assert kappa(m, m) == pytest.approx(1.0)
    assert kappa(m, 1 - m) == pytest.approx(-1.0)
    # masking out trials 3 and 4 leaves (1,0) vs (1,0): kappa 1
    assert kappa(m, np.array([1, 0, 0, 1]), np.array([1, 1, 0, 0], bool)) == pytest.approx(1.0)


def test_pairwise_mean_skips_undefined_observers():
    # observer A = m exactly (kappa 1), observer B always correct (c_exp = p_m = 0.5, c_obs = 0.5 -> 0),
    # observer C always correct AND model always correct on... use a model never all-correct:
    m = np.array([1, 0, 1, 0])
    obs = np.array([[1, 0, 1, 0], [1, 1, 1, 1]])
    assert kappa_pairwise_mean(m, obs) == pytest.approx(0.5)  # mean(1, 0)
    # a model always correct makes the always-correct observer undefined: mean over the rest only
    m1 = np.ones(4)
    obs2 = np.array([[1, 1, 1, 1], [1, 1, 1, 0]])
    # kappa(m1, obs2[1]): c_obs = 0.75, p_m = 1, p_h = .75 -> c_exp = .75 -> 0; obs2[0] undefined -> skipped
    assert kappa_pairwise_mean(m1, obs2) == pytest.approx(0.0)
    assert np.isnan(kappa_pairwise_mean(m1, obs2[:1]))


def test_ceilings_by_hand():
    # three observers over 4 stimuli
    obs = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0]], float)
    pw = pairwise_ceiling(obs)
    # (1,2) identical -> 1; (1,3) and (2,3): c_obs = .5, p = .5/.5 -> c_exp .5 -> 0
    np.testing.assert_allclose(pw, [1.0, 0.0, 0.0])
    loo = leave_one_out_ceiling(obs)
    # observer 1 vs mean(obs2, obs3) = (1, .5, .5, 0): equals the aggregate example above: 0.5
    assert loo[0] == pytest.approx(0.5)


# ---------------------------------------------------------------- capacity

LEVELS = np.arange(2, 9)


def _cap(a):
    return float(capacity_k(np.asarray(a, float), LEVELS))


def test_capacity_threshold_is_strictly_below_half_baseline():
    # baseline = mean a(k<=4) = mean(1, 1, 1) = 1 -> threshold 0.5
    assert _cap([1, 1, 1, 0.6, 0.5, 0.49, 0]) == 7     # 0.5 is not below 0.5; 0.49 is
    assert _cap([1, 1, 1, 0.6, 0.5000001, 0.5, 0.5]) != _cap([1, 1, 1, 0.6, 0.4999999, 0.5, 0.5])
    assert _cap([1, 1, 1, 0.6, 0.4999999, 0.5, 0.5]) == 6


def test_capacity_baseline_uses_k_up_to_4_inclusive():
    assert BASELINE_MAX_K == 4 and HUMAN_BAND == (6, 12)
    # a(2..4) = (1, 1, 0.4): baseline 0.8, threshold 0.4 -> k=4 itself (0.4) is not below; k=6 (0.3) is.
    # Were k=4 excluded from the baseline, threshold 0.5 -> k=4 (0.4) would be the answer.
    # Were k=5 included, baseline = mean(1,1,.4,.9) = .825 -> threshold .4125 -> k=4.
    assert _cap([1, 1, 0.4, 0.9, 0.3, 0.1, 0.0]) == 6


def test_capacity_undefined_cases():
    assert np.isnan(_cap([1, 1, 1, 1, 1, 1, 1]))            # never falls below
    assert np.isnan(_cap([0, 0, 0, 0, 0, 0, 0]))            # baseline 0
    assert np.isnan(_cap([np.nan, np.nan, np.nan, 1, 0, 0, 0]))  # no baseline level observed


def test_accuracy_by_k_by_hand():
    k = np.array([2, 2, 3, 3, 3, 5])
    correct = np.array([1, 0, 1, 1, 0, 1])
    valid = np.array([1, 1, 1, 1, 0, 1], bool)
    # k=2: 1/2; k=3: 2/2 (one invalid); k=4: none -> NaN; k=5: 1
    a = accuracy_by_k(correct, valid, k, np.array([2, 3, 4, 5]))
    np.testing.assert_allclose(a, [0.5, 1.0, np.nan, 1.0])


# ---------------------------------------------------------------- bootstrap

def test_bootstrap_interval_is_the_2_5_and_97_5_percentiles_of_the_same_draws():
    x = np.random.default_rng(5).normal(size=60)
    r = bootstrap(lambda i: x[i].mean(1), 60, n_draws=1000, seed=11)
    draws = x[resample_indices(60, 1000, 11)].mean(1)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    assert (r.low, r.high) == (pytest.approx(lo, abs=0), pytest.approx(hi, abs=0))
    # a 90% interval is strictly inside the 95% one
    r90 = bootstrap(lambda i: x[i].mean(1), 60, n_draws=1000, seed=11, alpha=0.10)
    assert r.low < r90.low < r90.high < r.high
    assert r.estimate == pytest.approx(x.mean())
