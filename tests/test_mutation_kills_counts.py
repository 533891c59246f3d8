"""Kill tests for the count-matrix forms of the metrics (issue 12's vectorised scoring; issue 14).

Every ``*_counts`` function promises to equal its gathering form (the
statistic recomputed on ``x[idx[d]]`` for each draw d) bit for bit, and the gathering forms
promise Seed 000 Eq. 2 / D.1.  Each is checked here against a per-draw loop over the plain
definitions, on small random panels whose valid masks cover every case (all valid, some
invalid, nothing valid) and whose draws are the package's own seeded resamples.
"""

from __future__ import annotations


import numpy as np
import pytest

from perceptbench.metrics import agreement as ag
from perceptbench.metrics import bootstrap as bs
from perceptbench.metrics import error_consistency as ec

N, D = 17, 40  # stimuli, draws


def kappa_by_hand(m, h, valid=None) -> float:
    """Seed 000 Eq. 2 by plain loops: c_obs, p_m, p_h over the valid trials; NaN when none
    is valid or c_exp == 1 (to 1e-12)."""
    rows = [(float(a), float(b)) for a, b, ok in zip(m, h, [True] * len(m) if valid is None else valid) if ok]
    if not rows:
        return float("nan")
    n = len(rows)
    c_obs = sum(a * b + (1 - a) * (1 - b) for a, b in rows) / n
    p_m = sum(a for a, _ in rows) / n
    p_h = sum(b for _, b in rows) / n
    c_exp = p_m * p_h + (1 - p_m) * (1 - p_h)
    return float("nan") if abs(c_exp - 1) <= 1e-12 else (c_obs - c_exp) / (1 - c_exp)


def pairwise_mean_by_hand(m, observers, valid=None) -> float:
    ks = [kappa_by_hand(m, o, valid) for o in observers]
    ks = [k for k in ks if not np.isnan(k)]
    return float(np.mean(ks)) if ks else float("nan")


@pytest.fixture()
def panel():
    rng = np.random.default_rng(14)
    m = (rng.random((3, N)) < 0.6).astype(float)  # three respondents
    obs = (rng.random((4, N)) < 0.7).astype(float)  # four observers
    valid = np.ones((3, N), bool)
    valid[1, [0, 3, 4, 9]] = False  # some trials null
    valid[2] = False  # nothing parseable
    idx = bs.resample_indices(N, D, seed=5)
    return m, obs, valid, idx


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a, float), np.asarray(b, float))


def test_masked_mean_counts_equal_the_gathering_form(panel):
    m, _, valid, idx = panel
    w = bs.resample_counts(idx)
    got = ag.masked_mean_counts(w, m, valid)
    assert got.shape == (D, 3)
    for r in range(3):
        _same(got[:, r], ag.masked_mean(m[r][idx], valid[r][idx]))
        _same(ag.masked_mean_counts(w, m[r][None] > 0, valid[r][None])[:, 0], ag.agreement_b(m[r][idx] > 0, valid[r][idx]))
    assert np.isnan(got[:, 2]).all()  # nothing valid: NaN, never 0
    # by hand for one draw: the mean of the valid picked values
    pick = [i for i in idx[0] if valid[1][i]]
    assert got[0, 1] == pytest.approx(np.mean([m[1][i] for i in pick]), abs=1e-15)


def test_wsum_float32_path_only_where_exact():
    w = bs.resample_counts(bs.resample_indices(5, 3, seed=0))
    x = np.array([[0.1, 0.2, 0.3, 0.7, 1.1]])  # not integers: the float64 product, exactly
    _same(ag._wsum(w, x), (x @ w.astype(float).T).T)
    big = np.full((1, 5), 2.0 ** 24 + 1)  # integers beyond float32's exact range: float64
    _same(ag._wsum(w, big), (big @ w.astype(float).T).T)
    ints = np.array([[0.0, 1.0, 1.0, 0.0, 1.0]])
    _same(ag._wsum(w, ints), (ints @ w.astype(float).T).T)
    # float64 weights (not counts) always take the float64 product
    wf = np.array([[0.5, 0.25, 0.0, 1.0, 2.0]])
    _same(ag._wsum(wf, ints), (ints @ wf.T).T)


def test_patterns_group_identical_masks():
    v = np.array([[1, 0, 1], [1, 0, 1], [0, 1, 1]], float)
    u, inv = ag._patterns(v)
    assert u.shape == (2, 3) and (u[inv] == v).all()
    u1, inv1 = ag._patterns(v[:2])
    assert inv1 is None and (u1 == v[:1]).all()
    w = np.array([[1.0, 2.0, 3.0]], np.float32)
    _same(ag._wsum_by_pattern(w, v), [[4.0, 4.0, 5.0]])  # 1+3, 1+3, 2+3


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
            _same(kp[d, r], ec.kappa_pairwise_mean(m[r][g], obs[:, g], valid[r][g]))
        _same(pc[:, d], ec.pairwise_ceiling(obs[:, g]))
    assert np.isnan(kp[:, 2]).all()
    for r, v in ((0, None), (1, valid[1]), (2, valid[2])):  # every draw at once, also without a mask
        got = ec.kappa_pairwise_counts(w, m[r][None], obs, (np.ones(N, bool) if v is None else v)[None])[:, 0]
        _same(got, ec.kappa_pairwise_mean(m[r][idx], obs[:, idx], None if v is None else v[idx]))
    # batched gathering forms (leading draw axis) equal one draw at a time
    _same(ec.pairwise_ceiling(obs[:, idx])[:, 3], ec.pairwise_ceiling(obs[:, idx[3]]))


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
            _same(pw[d, r], ec.kappa(m[r][g], obs[0][g], valid[r][g]))
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


def test_resample_counts_by_hand_and_shared():
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    c = bs.resample_counts(idx)
    _same(c, [[2, 0, 1], [0, 1, 2]])  # draw 0 picks stimulus 0 twice and 2 once
    assert c.dtype == np.float32 and not c.flags.writeable
    drawn = bs.resample_indices(9, 4, seed=1)
    assert bs.resample_counts(drawn) is bs.resample_counts(drawn)  # kept beside a cached matrix
    assert bs.resample_counts(idx) is not bs.resample_counts(idx)  # any other matrix: afresh


def test_index_cache_is_lru_of_32(monkeypatch):
    monkeypatch.setattr(bs, "DRAWS", bs.Resampler())
    first = bs.resample_indices(3, 2, seed=0)
    assert not first.flags.writeable
    for s in range(1, 32):  # 31 others: 32 matrices, all kept
        bs.resample_indices(3, 2, seed=s)
    assert bs.resample_indices(3, 2, seed=0) is first  # (and now the most recently used)
    for s in range(100, 132):  # 32 more: the first is the oldest again and is dropped
        bs.resample_indices(3, 2, seed=s)
    again = bs.resample_indices(3, 2, seed=0)
    assert again is not first and (again == first).all()  # re-drawn: the same values
    # strata are part of the key: other labels, another matrix
    a = bs.resample_indices(4, 3, seed=2, strata=np.array([0, 0, 1, 1]))
    b = bs.resample_indices(4, 3, seed=2, strata=np.array([0, 1, 1, 1]))
    assert a is not b
    assert set(a[:, :2].ravel()) <= {0, 1} and set(a[:, 2:].ravel()) <= {2, 3}
    assert set(b[:, :1].ravel()) == {0} and set(b[:, 1:].ravel()) <= {1, 2, 3}


def test_percentile_intervals_equal_bootstrap_per_column():
    rng = np.random.default_rng(3)
    x = rng.random((2, N))
    x[1, 0] = np.nan  # the draws of column 1 that pick stimulus 0 are undefined (about 64%)

    for alpha in (0.05, 0.2):
        draws = np.stack([x[0][bs.resample_indices(N, D, 9)].mean(-1), x[1][bs.resample_indices(N, D, 9)].mean(-1),
                          np.full(D, np.nan)], 1)
        res = bs.percentile_intervals([0.5, 0.4, 0.3], draws, D, 9, alpha)
        for col, r in enumerate(res[:2]):
            ref = bs.bootstrap(lambda i, c=col: x[c][i].mean(-1), N, n_draws=D, seed=9, alpha=alpha)
            assert (r.low, r.high, r.n_dropped) == (ref.low, ref.high, ref.n_dropped)
            assert r.n_draws == D and r.seed == 9
        assert res[1].n_dropped > 0 and res[0].n_dropped == 0
        assert np.isnan(res[2].low) and np.isnan(res[2].high) and res[2].n_dropped == D
        assert [r.estimate for r in res] == [0.5, 0.4, 0.3]


def test_bootstrap_counts_equals_bootstrap_per_respondent(panel):
    m, _, valid, _ = panel
    for strata in (None, np.arange(N) % 2):
        res = bs.bootstrap_counts(lambda w: ag.masked_mean_counts(w, m, valid), N, n_draws=D, seed=11, alpha=0.1,
                                  strata=strata)
        for r in range(2):
            ref = bs.bootstrap(lambda i, r=r: ag.masked_mean(m[r][i], valid[r][i]), N, n_draws=D, seed=11, alpha=0.1,
                               strata=strata)
            assert (res[r].estimate, res[r].low, res[r].high, res[r].n_dropped) == \
                (ref.estimate, ref.low, ref.high, ref.n_dropped)
        assert res[2].n_dropped == D and np.isnan(res[2].estimate)


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


def test_bootstrap_counts_default_seed_is_0(panel):
    m, _, valid, _ = panel
    got = bs.bootstrap_counts(lambda w: ag.masked_mean_counts(w, m[:1], valid[:1]), N, n_draws=D)[0]
    ref = bs.bootstrap(lambda i: ag.masked_mean(m[0][i], valid[0][i]), N, n_draws=D, seed=0)
    assert (got.low, got.high, got.seed) == (ref.low, ref.high, 0)


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


def test_wsum_integers_past_float32_range():
    # 2**24 + 1 is not a float32: one stimulus weighted once must give it back exactly (float64 path)
    x = np.array([[2.0 ** 24 + 1]])
    assert ag._wsum(np.ones((1, 1), np.float32), x)[0, 0] == 2.0 ** 24 + 1
