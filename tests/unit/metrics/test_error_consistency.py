"""metrics/error_consistency.py: kappa (seed 000 Eq. 2), its count forms and the observer ceilings (pairwise, leave one out)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra.numpy import arrays

from perceptbench.metrics import bootstrap as bs, error_consistency as ec
from perceptbench.metrics.agreement import agreement_b
from perceptbench.metrics.bootstrap import resample_counts
from perceptbench.metrics.error_consistency import kappa, kappa_pairwise_mean, leave_one_out_ceiling, pairwise_ceiling

from helpers.by_hand import D, N, SETTINGS, assert_same, binary, kappa_by_hand, pairwise_mean_by_hand


def test_kappa_matches_hand_computation():
    m = np.array([1, 1, 0, 0, 1, 0, 1, 1])
    h = np.array([1, 0, 0, 1, 1, 0, 1, 1])
    c_obs = 6 / 8
    pm, ph = 5 / 8, 5 / 8
    c_exp = pm * ph + (1 - pm) * (1 - ph)
    assert kappa(m, h) == pytest.approx((c_obs - c_exp) / (1 - c_exp))


def test_kappa_undefined_is_nan_not_one():
    assert np.isnan(kappa(np.ones(5), np.ones(5)))
    assert np.isnan(kappa(np.zeros(5), np.zeros(5)))


def test_aggregate_cobs_equals_mean_pairwise_cobs():
    rng = np.random.default_rng(1)
    obs = rng.integers(0, 2, (10, 50)).astype(float)
    m = rng.integers(0, 2, 50).astype(float)
    p = obs.mean(0)
    agg_cobs = np.mean(m * p + (1 - m) * (1 - p))
    pw_cobs = np.mean([(m == o).mean() for o in obs])
    assert agg_cobs == pytest.approx(pw_cobs)
    # the two kappa forms differ only through the chance correction (seed 000 D.2)
    assert abs(kappa(m, p) - kappa_pairwise_mean(m, obs)) < 0.05


def test_ceilings_shapes_and_values():
    obs = np.array([[1, 0, 1, 1], [1, 0, 0, 1], [0, 1, 1, 1]], float)
    pw = pairwise_ceiling(obs)
    assert pw.shape == (3,)
    assert pw[0] == pytest.approx(kappa(obs[0], obs[1]))
    loo = leave_one_out_ceiling(obs)
    assert loo[2] == pytest.approx(kappa(obs[2], obs[:2].mean(0)))


def test_binary_count_path_of_pairwise_kappa_equals_the_generic_kappa_bit_for_bit():
    """Issue 12: 0/1 inputs take a count path in kappa_pairwise_mean and pairwise_ceiling;
    it must give kappa()'s float64 values exactly (undefined pairs, all-null draws included)."""
    import itertools
    import warnings

    from perceptbench.metrics import error_consistency as ec

    rng = np.random.default_rng(7)
    obs = (rng.random((6, 50)) < 0.7).astype(float)
    obs[2] = obs[3] = 1.0  # two observers always right: their pair kappa is undefined
    m = (rng.random(50) < 0.6).astype(float)
    valid = rng.random(50) < 0.85
    idx = rng.integers(0, 50, (300, 50))
    idx[0] = 0  # a draw of one repeated stimulus
    pairs = list(itertools.combinations(range(6), 2))
    for o, mm, v in ((obs, m, valid), (obs[:, idx], m[idx], valid[idx]), (obs, m, np.zeros(50, bool))):
        ref_pw = ec.kappa(o[[i for i, _ in pairs]], o[[j for _, j in pairs]])
        assert np.array_equal(ec.pairwise_ceiling(o), ref_pw, equal_nan=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            ref_pm = np.nanmean(ec.kappa(mm[None], o, v[None]), axis=0)
        assert np.array_equal(ec.kappa_pairwise_mean(mm, o, v), ref_pm, equal_nan=True)
    # the count-matrix form the scorer bootstraps with, on the draws and on the identity
    for v in (valid, np.zeros(50, bool), None):
        for i in (idx, np.arange(50)[None]):
            ref = ec.kappa_pairwise_mean(m[i], obs[:, i], None if v is None else v[i])
            mask = np.ones(50, bool) if v is None else v
            got = ec.kappa_pairwise_counts(resample_counts(i), m[None], obs, mask[None])[:, 0]
            assert np.array_equal(got, ref, equal_nan=True)
    assert np.isnan(ec.pairwise_ceiling(obs)).sum() > 0
    # non-binary input (panel accuracy) still goes through kappa()
    p = obs.mean(0)
    assert np.array_equal(ec.kappa_pairwise_mean(m, p[None], valid), ec.kappa(m, p, valid), equal_nan=True)


def test_kappa_just_below_ceiling_is_defined():
    # n = 400000, both sides wrong only on trial 0: p = 1 - 1/n, c_exp = 1 - 2/n + 2/n^2
    # (about 1 - 5e-6, not within 1e-12 of 1), c_obs = 1 -> kappa = 1
    n = 400_000
    m = np.ones(n)
    m[0] = 0
    assert kappa(m, m.copy()) == pytest.approx(1.0)


def test_kappa_undefined_within_atol_1e12():
    # m always right; h = panel accuracy [1 - 1e-12, 1] -> c_exp = p_h = 1 - 5e-13:
    # within atol 1e-12 of 1, so undefined (NaN)
    assert np.isnan(kappa(np.ones(2), np.array([1 - 1e-12, 1.0])))
    # h = [1 - 1e-10, 1] -> c_exp = 1 - 5e-11 (outside atol), c_obs = c_exp -> kappa = 0
    assert kappa(np.ones(2), np.array([1 - 1e-10, 1.0])) == pytest.approx(0.0, abs=1e-6)


def test_kappa_pairwise_mean_honours_valid():
    # valid = first two trials: m=[1,0], each observer [1,0] -> kappa 1 on the valid part;
    # the invalid trials (m=1, obs=0) would pull kappa below 1 if counted
    m = np.array([1, 0, 1, 1])
    obs = np.array([[1, 0, 0, 0], [1, 0, 0, 0]])
    valid = np.array([True, True, False, False])
    assert kappa_pairwise_mean(m, obs, valid) == pytest.approx(1.0)


def test_kappa_gathering_forms_equal_eq2_by_hand(panel):
    m, obs, valid, _ = panel
    for r in range(3):
        assert ec.kappa(m[r], obs[0], valid[r]) == pytest.approx(kappa_by_hand(m[r], obs[0], valid[r]), nan_ok=True)
        want = pairwise_mean_by_hand(m[r], obs, valid[r])
        assert ec.kappa_pairwise_mean(m[r], obs, valid[r]) == pytest.approx(want, abs=1e-12, nan_ok=True)
    pairs = ec.pairwise_ceiling(obs)
    want = [kappa_by_hand(obs[i], obs[j]) for i in range(4) for j in range(i + 1, 4)]
    np.testing.assert_allclose(pairs, want, atol=1e-12)
    loo = ec.leave_one_out_ceiling(obs)
    for j in range(4):
        others = (obs.sum(0) - obs[j]) / 3
        assert loo[j] == pytest.approx(kappa_by_hand(obs[j], others), abs=1e-12)


def test_kappa_count_forms_equal_the_gathering_form_bit_for_bit(panel):
    m, obs, valid, idx = panel
    w = bs.resample_counts(idx)
    kp = ec.kappa_pairwise_counts(w, m, obs, valid)
    assert kp.shape == (D, 3)
    pc = ec.pairwise_ceiling_counts(w, obs)
    assert pc.shape == (6, D)
    for d in (0, 1, D - 1):
        g = idx[d]
        for r in range(3):
            assert_same(kp[d, r], ec.kappa_pairwise_mean(m[r][g], obs[:, g], valid[r][g]))
        assert_same(pc[:, d], ec.pairwise_ceiling(obs[:, g]))
    assert np.isnan(kp[:, 2]).all()
    for r, v in ((0, None), (1, valid[1]), (2, valid[2])):  # every draw at once, also without a mask
        got = ec.kappa_pairwise_counts(w, m[r][None], obs, (np.ones(N, bool) if v is None else v)[None])[:, 0]
        assert_same(got, ec.kappa_pairwise_mean(m[r][idx], obs[:, idx], None if v is None else v[idx]))
    # batched gathering forms (leading draw axis) equal one draw at a time
    assert_same(ec.pairwise_ceiling(obs[:, idx])[:, 3], ec.pairwise_ceiling(obs[:, idx[3]]))


def test_kappa_counts_aggregate_and_pairwise(panel):
    m, obs, valid, idx = panel
    w = bs.resample_counts(idx)
    p = obs.mean(0)  # panel accuracy: the aggregate form's human side, non-integer
    agg = ec.kappa_counts(w, m, p, valid)
    pw = ec.kappa_counts(w, m, np.stack([obs[0]] * 3), valid)  # one observer per respondent
    assert agg.shape == pw.shape == (D, 3)
    for d in (0, 7):
        g = idx[d]
        for r in range(2):
            assert agg[d, r] == pytest.approx(ec.kappa(m[r][g], p[g], valid[r][g]), abs=1e-12)
            assert agg[d, r] == pytest.approx(kappa_by_hand(m[r][g], p[g], valid[r][g]), abs=1e-12)
            assert_same(pw[d, r], ec.kappa(m[r][g], obs[0][g], valid[r][g]))
    assert np.isnan(agg[:, 2]).all() and np.isnan(pw[:, 2]).all()
    # c_exp == 1 (model and human always right): undefined, NaN, never 1.0
    ones = np.ones((1, N))
    assert np.isnan(ec.kappa_counts(w, ones, ones[0], np.ones((1, N), bool))).all()


def test_pairwise_mean_non_binary_input_goes_through_kappa_binary_never_does(panel, monkeypatch):
    m, obs, valid, idx = panel
    calls = []
    real = ec.kappa
    monkeypatch.setattr(ec, "kappa", lambda *a: calls.append(1) or real(*a))
    g = idx[4]
    ec.kappa_pairwise_mean(m[1][g], obs[:, g], valid[1][g])
    assert calls == []  # 0/1 input: the count path (sums then kappa_from_sums), no (J, n) temporaries
    half = obs.copy()
    half[0, :3] = 0.5  # not 0/1: the gathering form, valid mask and all
    got = ec.kappa_pairwise_mean(m[1][g], half[:, g], valid[1][g])
    assert calls == [1]
    mh = m[1].copy()
    mh[2] = 0.5  # a non-0/1 model side alone also does
    ec.kappa_pairwise_mean(mh[g], obs[:, g], None)
    assert calls == [1, 1]
    assert got == pytest.approx(pairwise_mean_by_hand(m[1][g], half[:, g], valid[1][g]), abs=1e-12)


def test_one_observer_leave_one_out_is_nan_without_warnings():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a J = 1 panel has no "others": NaN is the answer, not a warning
        assert np.isnan(ec.leave_one_out_ceiling(np.array([[1.0, 0.0, 1.0]]))).all()


def test_pairwise_mean_count_path_for_0_1_input(panel, monkeypatch):
    m, obs, valid, idx = panel
    calls = []
    real = ec.kappa
    monkeypatch.setattr(ec, "kappa", lambda *a: calls.append(1) or real(*a))
    ec.kappa_pairwise_mean(m[1], obs, valid[1])
    ec.kappa_pairwise_mean(m[0][idx], obs[:, idx], None)  # a leading draw axis: still the count path
    assert calls == []
    half = obs.copy()
    half[1, 0] = 0.5  # not 0/1: kappa itself
    got = ec.kappa_pairwise_mean(m[1], half, valid[1])
    assert calls == [1] and got == pytest.approx(pairwise_mean_by_hand(m[1], half, valid[1]), abs=1e-12)


def test_kappa_counts_c_exp_within_1e_12_of_one_is_undefined():
    # model always right, panel accuracy 1 - 1e-13 everywhere: c_obs = c_exp = 1 - 1e-13, so the
    # formula gives 0 / 1e-13 = 0, but c_exp is within 1e-12 of 1: undefined (Eq. 2 has no meaning)
    n = 6
    w = bs.resample_counts(bs.resample_indices(n, 3, seed=0))
    h = np.full(n, 1 - 1e-13)
    got = ec.kappa_counts(w, np.ones((1, n)), h, np.ones((1, n), bool))
    assert np.isnan(got).all()
    assert np.isnan(ec.kappa(np.ones(n), h))  # the gathering form agrees


def test_one_valid_trial_on_the_count_path():
    # one valid trial, model right, observer wrong: c_obs = 0, p_m = 1, p_h = 0, c_exp = 0 -> kappa 0
    # (a draw can leave a respondent one parseable trial; it is scored, not NaN, and not halved)
    m = np.array([1.0, 0.0, 1.0])
    obs = np.array([[0.0, 1.0, 1.0]])
    valid = np.array([True, False, False])
    assert kappa_by_hand(m, obs[0], valid) == 0.0
    assert ec.kappa_pairwise_mean(m, obs, valid) == 0.0
    w = np.ones((1, 3), np.float32)
    assert ec.kappa_pairwise_counts(w, m[None], obs, valid[None])[0, 0] == 0.0
    assert ec.kappa_counts(w, m[None], obs[0], valid[None])[0, 0] == 0.0


@pytest.mark.parametrize("gap", [1e-6, 1e-10])
def test_c_exp_near_but_not_within_1e_12_of_one_is_defined(gap):
    # model always right, panel accuracy 1 - gap: c_obs = c_exp = 1 - gap -> kappa = 0 / gap = 0;
    # only |c_exp - 1| <= 1e-12 (absolute, no relative tolerance) is undefined
    n = 4
    h = np.full(n, 1 - gap)
    w = np.ones((1, n), np.float32)
    assert ec.kappa_counts(w, np.ones((1, n)), h, np.ones((1, n), bool))[0, 0] == 0.0
    assert ec.kappa(np.ones(n), h) == 0.0


def test_pairwise_ceiling_of_non_0_1_observers_is_kappa_itself(monkeypatch):
    obs = np.array([[1.0, 0.5, 0.0, 1.0], [0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    calls = []
    real = ec.kappa
    monkeypatch.setattr(ec, "kappa", lambda *a: calls.append(1) or real(*a))
    got = ec.pairwise_ceiling(obs)
    assert calls == [1]
    want = [kappa_by_hand(obs[i], obs[j]) for i, j in ((0, 1), (0, 2), (1, 2))]
    np.testing.assert_allclose(got, want, atol=1e-12)
    ec.pairwise_ceiling((obs > 0.6).astype(float))  # 0/1: the count path
    assert calls == [1]


@SETTINGS
@given(binary)
def test_kappa_is_symmetric_in_its_two_respondents(pair):
    a, b = pair
    ka, kb = kappa(a, b), kappa(b, a)
    assert (np.isnan(ka) and np.isnan(kb)) or abs(ka - kb) < 1e-12


@SETTINGS
@given(binary, st.randoms(use_true_random=False))
def test_scores_do_not_depend_on_stimulus_order(pair, rnd):
    a, b = pair
    perm = np.array(rnd.sample(range(len(a)), len(a)))
    k0, k1 = kappa(a, b), kappa(a[perm], b[perm])
    assert (np.isnan(k0) and np.isnan(k1)) or abs(k0 - k1) < 1e-12
    valid = np.ones(len(a), bool)
    assert agreement_b(a == b, valid) == agreement_b((a == b)[perm], valid)


@SETTINGS
@given(st.integers(3, 40).flatmap(lambda n: st.tuples(
    st.integers(0, 2 ** 16), arrays(np.int8, (3, n), elements=st.integers(0, 1)))))
def test_pairwise_ceiling_is_bounded(seed_obs):
    _, obs = seed_obs
    pw = pairwise_ceiling(obs.astype(float))
    finite = pw[np.isfinite(pw)]
    assert ((finite <= 1 + 1e-12) & (finite >= -1 - 1e-12)).all()


def test_gathered_kappa_equals_kappa_of_the_gathered_trials_bit_for_bit():
    from perceptbench.metrics.bootstrap import resample_indices
    from perceptbench.metrics.error_consistency import kappa_gathered

    rng = np.random.default_rng(4)
    n = 70
    m = (rng.random(n) < 0.6).astype(float)
    h = rng.random(n)  # panel accuracy: fractional, so the sums depend on their order
    valid = rng.random(n) < 0.85
    idx = np.concatenate([np.arange(n)[None], resample_indices(n, 300, 9)])
    assert np.array_equal(kappa_gathered(m, h, valid)(idx), kappa(m[idx], h[idx], valid[idx]), equal_nan=True)


def test_kappa_resampled_equals_a_per_draw_loop_for_every_respondent():
    """M respondents on one index matrix (integer sums as count products, the sums with the
    fractional panel accuracy gathered row by row) = kappa of each respondent's gathered trials,
    draw by draw, to the last bit; a respondent with nothing valid is NaN in every draw."""
    from perceptbench.metrics.bootstrap import resample_indices
    from perceptbench.metrics.error_consistency import kappa_resampled

    rng = np.random.default_rng(11)
    n, d = 90, 200
    h = rng.integers(0, 4, n) / rng.integers(1, 4, n).clip(1)  # thirds and halves: order-dependent sums
    h = np.minimum(h, 1.0)
    m = (rng.random((5, n)) < 0.6).astype(float)
    m[3] = 1.0  # always right: kappa 0 (c_obs = c_exp), NaN in draws where h is 1 throughout
    valid = rng.random((5, n)) < 0.85
    valid[1] = valid[0]  # two respondents share a valid mask (their h sums computed once)
    valid[4] = False  # nothing valid: NaN
    idx = resample_indices(n, d, 3)
    got = kappa_resampled(m, h, valid, idx)
    assert got.shape == (d, 5)
    for j in range(5):
        want = np.array([kappa(m[j][idx[r]], h[idx[r]], valid[j][idx[r]]) for r in range(d)])
        assert np.array_equal(got[:, j], want, equal_nan=True), j
    assert np.isnan(got[:, 4]).all()
    one = kappa_resampled(m[:1], h, valid[:1], np.arange(n)[None])  # the estimate: the sample itself
    assert np.array_equal(one[0], kappa(m[:1], h, valid[:1]), equal_nan=True)


def test_kappa_resampled_refuses_non_binary_model_side():
    from perceptbench.metrics.error_consistency import kappa_resampled

    with pytest.raises(ValueError, match="0/1"):
        kappa_resampled(np.full((1, 3), 0.5), np.ones(3), np.ones((1, 3), bool), np.zeros((2, 3), int))
