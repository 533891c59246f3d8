"""Hand-checked formulas of :mod:`perceptbench.metrics.error_structure` (seed 002 §3, B.2, C.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptbench.metrics import error_structure as es
from perceptbench.metrics.error_detection import ece_rows


def test_joint_grid_counts_samples_and_joint_errors():
    # samples: (label_a, label_b, wrong_a, wrong_b): (0,0,T,T) (0,0,T,F) (1,2,T,T) (2,1,F,F)
    count, both = es.joint_grid([0, 0, 1, 2], [0, 0, 2, 1], [1, 1, 1, 0], [1, 0, 1, 0], n_groups=3)
    assert count.tolist() == [[2, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert both.tolist() == [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
    with pytest.raises(ValueError, match="labels must lie"):
        es.joint_grid([0, 5], [0, 0], [0, 0], [0, 0])
    with pytest.raises(ValueError, match="one length"):
        es.joint_grid([0], [0, 0], [0], [0])


def test_pooled_ratio_weights_groups_by_their_samples():
    # (3 + 1) / (5 + 15) = 0.2 over (1 + 1) / (5 + 15) = 0.1 -> 2.0 (the mean of the group
    # ratios would be (3 + 1) / 2 = 2 too here, but not with 1/5 vs 1/15: see below)
    assert es.pooled_ratio([3, 1], [5, 15], [1, 1], [5, 15]) == pytest.approx(2.0)
    # (1 + 0) / 10 over (0 + 1) / 10 = 1, whereas one group's own ratio is undefined (0 top)
    assert es.pooled_ratio([1, 0], [5, 5], [0, 1], [5, 5]) == pytest.approx(1.0)
    assert math.isnan(es.pooled_ratio([1], [5], [0], [5]))


def test_size_matched_top_takes_the_highest_outside_the_subset_ties_by_id():
    score = np.array([0.0, 0.01, 0.5, 0.9, 0.9, 0.2])
    below = score < 0.05  # 2 samples
    m = es.size_matched_top(score, below, ["a", "b", "c", "e", "d", "f"])
    # the two highest outside: 0.9 (ids e, d): both
    assert m.tolist() == [False, False, False, True, True, False]
    # tie at the cut: one place, ids d < e -> d (index 4)
    m = es.size_matched_top(np.array([0.0, 0.9, 0.9]), np.array([1, 0, 0], bool), ["a", "e", "d"])
    assert m.tolist() == [False, False, True]
    # more below than outside: k = the rest
    assert es.size_matched_top(np.array([0, 0, 0, 1.0]), np.array([1, 1, 1, 0], bool), "abcd").sum() == 1


def test_enrichment_and_its_undefined_cases():
    flag = np.array([1, 1, 0, 1, 0, 0], bool)
    g = np.array([1, 1, 1, 0, 0, 0], bool)
    assert es.enrichment(flag, g, ~g) == pytest.approx((2 / 3) / (1 / 3))
    assert math.isnan(es.enrichment(flag, g, np.array([0, 0, 0, 0, 1, 1], bool)))  # reference rate 0
    assert math.isnan(es.enrichment(flag, np.zeros(6, bool), ~g))


def test_reliability_bins_by_hand_and_consistent_with_ece():
    conf = np.array([0.95, 0.85, 0.82, 0.55, 0.51, 0.15, 0.05, 1.0])
    corr = np.array([1, 0, 1, 1, 0, 0, 0, 1], bool)
    r = es.reliability_bins(conf, corr)
    # bins (as in test_ece_and_brier_by_hand): 0 {.05}, 1 {.15}, 5 {.55, .51}, 8 {.85, .82}, 9 {.95, 1.0}
    assert r.count == (1, 1, 0, 0, 0, 2, 0, 0, 2, 2)
    assert r.mean_conf[8] == pytest.approx(0.835) and r.accuracy[8] == 0.5 and r.accuracy[9] == 1.0
    assert math.isnan(r.accuracy[2]) and len(r.edges) == 11
    n = np.array(r.count)
    ece = sum(c / 8 * abs(a - m) for c, a, m in zip(n, r.accuracy, r.mean_conf) if c)
    assert ece == pytest.approx(ece_rows(conf, corr)[0])
    with pytest.raises(ValueError, match="confidences must lie"):
        es.reliability_bins(np.array([1.5]), np.array([True]))


def test_swing_over_settings():
    assert es.swing({10: 0.543, 20: 0.591, 40: 0.56}) == (pytest.approx(0.048), 10, 20)
    assert math.isnan(es.swing({10: 0.5, 20: float("nan")})[0])  # one finite value: no swing
    assert es.swing({10: 0.5})[1] is None


def test_ratio_interval_resamples_the_groups_separately_and_drops_zero_references():
    a, b = np.array([1.0, 0.0]), np.array([1.0, 0.0])
    # two draws: a resampled as [1, 1] and [0, 1] (means 1, .5); b as [1, 0] and [0, 0] (means .5, 0)
    lo, hi, dropped = es.ratio_interval(a, b, np.array([[0, 0], [1, 0]]), np.array([[0, 1], [1, 1]]))
    # draw 1: 1 / .5 = 2; draw 2: .5 / 0 dropped -> one draw left, 2
    assert (lo, hi, dropped) == (2.0, 2.0, 1)
    assert all(math.isnan(x) for x in es.ratio_interval(a, np.zeros(2), np.zeros((3, 2), int),
                                                         np.zeros((3, 2), int))[:2])


def test_pooled_ratio_interval_is_stratified_by_group():
    # every flag 1 in both groups of both sides: each draw is (3/3) / (4/4) = 1
    lo, hi, dropped = es.pooled_ratio_interval([np.ones(2), np.ones(1)], [np.ones(3), np.ones(1)], 0, "k")
    assert (lo, hi, dropped) == (1.0, 1.0, 0)
    # a b side of zeros: every draw undefined
    lo, hi, dropped = es.pooled_ratio_interval([np.ones(2)], [np.zeros(3)], 0, "k", n_draws=50)
    assert math.isnan(lo) and dropped == 50
    # group a1 = [1, 0] resampled within itself: draws of its mean are 0, .5 or 1; b fixed at rate 1
    lo, hi, _ = es.pooled_ratio_interval([np.array([1.0, 0.0])], [np.ones(2)], 3, "k", n_draws=2000)
    assert (lo, hi) == (0.0, 1.0)
