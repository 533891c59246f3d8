"""metrics/agreement.py: accuracy, B, the position floor, the null bracket and their count forms (seed 000 Eq. 1, D.4)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from perceptbench.metrics import agreement as ag, bootstrap as bs
from perceptbench.metrics.agreement import agreement_b, masked_mean, null_bracket, position_floor

from helpers.by_hand import D, SETTINGS, assert_same


def test_agreement_floor_bracket():
    assert agreement_b(np.array([1, 0, 1, 1]), np.array([1, 1, 1, 0])) == pytest.approx(2 / 3)
    assert position_floor(np.array([1, 2, 2, 3, 2])) == pytest.approx(0.6)
    assert null_bracket(0.5, 0.1) == pytest.approx((0.45, 0.55))


def test_masked_mean_single_valid_trial():
    # one valid trial: mean = 3/1 = 3 (boundary den == 1 of the "den > 0" rule)
    assert masked_mean(np.array([3.0, 7.0]), np.array([True, False])) == pytest.approx(3.0)


def test_masked_mean_valid_mask_is_boolean():
    # valid given as ints: 2 counts as one valid trial, not two -> (1.0)/1 = 1.0
    assert masked_mean(np.array([1.0, 5.0]), np.array([2, 0])) == pytest.approx(1.0)


def test_position_floor_default_is_three_positions_and_ignores_zero():
    # default k=3: positions 1..3 only; [4,4,1] -> f_1 = 1/3 (position 4 is not counted)
    assert position_floor(np.array([4, 4, 1])) == pytest.approx(1 / 3)
    # position 0 is not a position: [0,0,1] -> f_1 = 1/3
    assert position_floor(np.array([0, 0, 1])) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="^no targets$"):
        position_floor(np.array([], dtype=int))


def test_masked_mean_counts_equal_the_gathering_form(panel):
    m, _, valid, idx = panel
    w = bs.resample_counts(idx)
    got = ag.masked_mean_counts(w, m, valid)
    assert got.shape == (D, 3)
    for r in range(3):
        assert_same(got[:, r], ag.masked_mean(m[r][idx], valid[r][idx]))
        assert_same(ag.masked_mean_counts(w, m[r][None] > 0, valid[r][None])[:, 0], ag.agreement_b(m[r][idx] > 0, valid[r][idx]))
    assert np.isnan(got[:, 2]).all()  # nothing valid: NaN, never 0
    # by hand for one draw: the mean of the valid picked values
    pick = [i for i in idx[0] if valid[1][i]]
    assert got[0, 1] == pytest.approx(np.mean([m[1][i] for i in pick]), abs=1e-15)


def test_wsum_float32_path_only_where_exact():
    w = bs.resample_counts(bs.resample_indices(5, 3, seed=0))
    x = np.array([[0.1, 0.2, 0.3, 0.7, 1.1]])  # not integers: the float64 product, exactly
    assert_same(ag._wsum(w, x), (x @ w.astype(float).T).T)
    big = np.full((1, 5), 2.0 ** 24 + 1)  # integers beyond float32's exact range: float64
    assert_same(ag._wsum(w, big), (big @ w.astype(float).T).T)
    ints = np.array([[0.0, 1.0, 1.0, 0.0, 1.0]])
    assert_same(ag._wsum(w, ints), (ints @ w.astype(float).T).T)
    # float64 weights (not counts) always take the float64 product
    wf = np.array([[0.5, 0.25, 0.0, 1.0, 2.0]])
    assert_same(ag._wsum(wf, ints), (ints @ wf.T).T)


def test_patterns_group_identical_masks():
    v = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1]], float)
    u, inv = ag._patterns(v)
    assert u.shape == (2, 3) and (u[inv] == v).all()
    u1, inv1 = ag._patterns(v[:2])
    assert inv1 is None and (u1 == v[:1]).all()
    w = np.array([[1.0, 2.0, 3.0]], np.float32)
    assert_same(ag._wsum_by_pattern(w, v), [[4.0, 4.0, 5.0]])  # 1+3, 1+3, 2+3


def test_wsum_integers_past_float32_range():
    # 2**24 + 1 is not a float32: one stimulus weighted once must give it back exactly (float64 path)
    x = np.array([[2.0 ** 24 + 1]])
    assert ag._wsum(np.ones((1, 1), np.float32), x)[0, 0] == 2.0 ** 24 + 1


@SETTINGS
@given(st.integers(2, 30).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 4), min_size=n, max_size=n), st.lists(st.integers(0, 4), min_size=n, max_size=n))),
    st.permutations(range(5)))
def test_b_is_invariant_under_a_joint_relabelling(pair, relabel):
    r, h = (np.array(x) for x in pair)
    m = np.array(relabel)
    valid = np.ones(len(r), bool)
    assert agreement_b(r == h, valid) == agreement_b(m[r] == m[h], valid)


def test_pairwise_agreement_is_the_share_of_agreeing_observer_pairs_by_hand():
    import itertools

    import pytest

    from perceptbench.metrics.agreement import pairwise_agreement

    answers = np.array([[1, 2, 3, 1], [1, 2, 1, 2], [1, 3, 2, 3], [1, 2, 2, 1]])
    pairs = list(itertools.combinations(range(4), 2))
    by_hand = [sum(answers[a, i] == answers[b, i] for a, b in pairs) / len(pairs) for i in range(4)]
    assert list(pairwise_agreement(answers)) == by_hand  # [6/6, 3/6, 1/6, 1/6]
    assert by_hand == [1.0, 0.5, 1 / 6, 1 / 6]
    with pytest.raises(ValueError, match="two or more"):
        pairwise_agreement(answers[:1])
