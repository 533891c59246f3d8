"""metrics/bootstrap.py: seeded resamples, their count matrices, percentile intervals."""

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st
from hypothesis.extra.numpy import arrays

from perceptbench.metrics import agreement as ag, bootstrap as bootstrap_mod, bootstrap as bs
from perceptbench.metrics.bootstrap import bootstrap, ci_halfwidth_bound, resample_indices
from perceptbench.metrics.error_consistency import kappa
from perceptbench.seeding import rng_for

from helpers.by_hand import D, N, SETTINGS, assert_same


def test_bootstrap_seeded_paired_and_vectorised():
    x = np.random.default_rng(0).integers(0, 2, 80).astype(float)
    calls = []

    def stat(idx):
        calls.append(idx.shape)
        return x[idx].mean(1)

    a = bootstrap(stat, 80, n_draws=1000, seed=3)
    b = bootstrap(stat, 80, n_draws=1000, seed=3)
    c = bootstrap(stat, 80, n_draws=1000, seed=4)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)
    assert calls == [(1, 80), (1000, 80)] * 3  # one vectorised call per bootstrap
    assert a.low <= a.estimate <= a.high
    assert a.high - a.low <= 2 * ci_halfwidth_bound(80) + 0.02


def test_bootstrap_drops_and_counts_undefined_draws():
    m = np.array([1, 1, 1, 1, 0], float)
    h = np.array([1, 1, 1, 1, 1], float)
    r = bootstrap(lambda i: kappa(m[i], h[i]), 5, n_draws=500, seed=0)
    assert r.estimate == 0.0  # c_exp = p_m < 1: defined
    idx = resample_indices(5, 500, 0)
    assert r.n_dropped == int((m[idx] == 1).all(1).sum()) > 0  # draws without the error: c_exp = 1
    both = bootstrap(lambda i: kappa(h[i], h[i]), 5, n_draws=200, seed=0)
    assert np.isnan(both.estimate) and both.n_dropped == 200 and np.isnan(both.low)


def test_stratified_resampling_keeps_counts():
    strata = np.repeat(np.arange(3), [2, 3, 5])
    idx = resample_indices(10, 50, 0, strata)
    assert all((np.bincount(strata[row], minlength=3) == [2, 3, 5]).all() for row in idx)


@pytest.mark.parametrize("ci_n, bound", [(80, 0.110), (120, 0.089), (40, 0.155), (500, 0.044)])
def test_ci_halfwidth_bounds_of_seed(ci_n, bound):
    assert round(ci_halfwidth_bound(ci_n), 3) == bound


def test_resample_indices_boundary_and_error_message():
    # n = 1: the only index is 0
    np.testing.assert_array_equal(resample_indices(1, 3, 0), np.zeros((3, 1), np.int64))
    with pytest.raises(ValueError, match="^cannot bootstrap an empty stimulus set$"):
        resample_indices(0, 3, 0)


def test_resample_indices_stream_is_the_documented_one():
    # documented derivation: rng_for(seed, "bootstrap", n, n_draws).integers(0, n, (n_draws, n))
    idx = resample_indices(7, 5, 11)
    want = rng_for(11, "bootstrap", 7, 5).integers(0, 7, size=(5, 7))
    np.testing.assert_array_equal(idx, want)
    assert idx.dtype == np.int64


@pytest.mark.parametrize("first", [None, np.array([0, 1, 0, 1, 0, 1])])
def test_resample_indices_strata_stay_within_stratum(first):
    # an earlier call with the same (n, n_draws, seed) but other strata must not be reused
    if first is None:
        resample_indices(6, 60, 3)
    else:
        resample_indices(6, 60, 3, strata=first)
    idx = resample_indices(6, 60, 3, strata=np.array([0, 0, 0, 1, 1, 1]))
    assert idx.dtype == np.int64 and idx.shape == (60, 6)
    # stratum 0 = {0,1,2}, stratum 1 = {3,4,5}; 60 draws of 3 picks cover every member
    assert set(idx[:, :3].ravel()) == {0, 1, 2}
    assert set(idx[:, 3:].ravel()) == {3, 4, 5}
    # and they are resampled, not copied: P(all 60 draws are the identity) = (1/27)^60
    assert (idx != np.arange(6)).any()


def test_resample_indices_cache_shared_read_only_and_lru():
    draws = bootstrap_mod.Resampler()
    first = draws.resample_indices(2, 4, 0)
    # same inputs -> the very same read-only matrix
    assert draws.resample_indices(2, 4, 0) is first
    assert not first.flags.writeable
    assert (first == resample_indices(2, 4, 0)).all()  # the module's resampler draws the same values
    for n in range(3, 34):  # 31 more entries -> 32 in all, the maximum kept
        draws.resample_indices(n, 4, 0)
    assert len(draws.indices) == 32
    last = draws.resample_indices(34, 4, 0)  # 33rd: the least recently used (n=2) is dropped
    assert len(draws.indices) == 32
    assert (2, 4, 0, None) not in draws.indices
    assert draws.resample_indices(34, 4, 0) is last


def test_bootstrap_result_fields():
    x = np.array([0.0, 1.0, 2.0, 3.0])
    res = bootstrap(lambda idx: x[idx].mean(-1), 4, n_draws=50)
    # default seed is 0 and the result records it and the requested draws
    assert res.seed == 0 and res.n_draws == 50 and res.n_dropped == 0
    assert res == bootstrap(lambda idx: x[idx].mean(-1), 4, n_draws=50, seed=0)


def test_resample_counts_by_hand_and_shared():
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    c = bs.resample_counts(idx)
    assert_same(c, [[2, 0, 1], [0, 1, 2]])  # draw 0 picks stimulus 0 twice and 2 once
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


def test_bootstrap_counts_default_seed_is_0(panel):
    m, _, valid, _ = panel
    got = bs.bootstrap_counts(lambda w: ag.masked_mean_counts(w, m[:1], valid[:1]), N, n_draws=D)[0]
    ref = bs.bootstrap(lambda i: ag.masked_mean(m[0][i], valid[0][i]), N, n_draws=D, seed=0)
    assert (got.low, got.high, got.seed) == (ref.low, ref.high, 0)


@SETTINGS
@given(arrays(np.float64, st.integers(5, 60), elements=st.floats(-100, 100)), st.integers(0, 1000))
def test_bootstrap_interval_contains_the_estimate_of_the_mean(x, seed):
    assume(np.ptp(x) > 1e-6)  # non-degenerate data
    r = bootstrap(lambda i: x[i].mean(1), len(x), n_draws=400, seed=seed)
    assert r.low <= r.estimate + 1e-9 and r.estimate - 1e-9 <= r.high


def test_a_count_matrix_leaves_the_memo_with_its_index_matrix():
    """The resampler holds at most ``maxsize`` count matrices: evicting an index matrix from the
    LRU drops the count matrix memoised for it (else they pile up for the whole process)."""
    r = bs.Resampler(maxsize=2)
    for seed in range(5):
        r.resample_counts(r.resample_indices(6, 4, seed))
    assert len(r._counts) == 2 and all(any(idx is m for m in r.indices.values()) for idx, _ in r._counts.values())


def test_strata_with_the_same_bytes_and_another_dtype_are_other_strata():
    """The memo key of stratified draws includes the labels' dtype: float32 [0.0, -0.0] is one
    stratum (the two labels are equal), int32 [0, -2**31] (the same bytes) two."""
    r = bs.Resampler()
    one = r.resample_indices(2, 50, 3, strata=np.array([0.0, -0.0], np.float32))
    two = r.resample_indices(2, 50, 3, strata=np.array([0, -2**31], np.int32))
    assert (np.sort(two, axis=1) == [0, 1]).all()  # each of two strata resampled within itself
    assert not (np.sort(one, axis=1) == [0, 1]).all()  # one stratum of two: some draws repeat an index


def test_interval_batch_equals_bootstrap_statistic_by_statistic():
    """IntervalBatch (issue 25) takes the percentiles of many bootstraps in one call: each result
    equals bootstrap() of that statistic alone, bit for bit, for continuous and tied draws, draws
    with NaNs (dropped and counted), all-NaN draws, several seeds and draw counts in one batch,
    and batches that flush part-way (size 3); a result is handed over only after its own add."""
    rng = np.random.default_rng(11)
    stats = []
    for k in range(40):
        n = int(rng.integers(5, 60))
        x = rng.normal(size=n) if k % 3 else rng.integers(0, 2, n).astype(float)  # continuous or 0/1 (ties)
        if k % 7 == 0:
            x[: n // 3] = np.nan  # some draws NaN
        if k % 13 == 5:
            x[:] = np.nan  # every draw NaN
        stats.append((lambda idx, x=x: x[idx].mean(1), n, [0, 3][k % 2], [1000, 200][k % 5 == 0]))
    for size in (1024, 3):
        batch = bs.IntervalBatch(size=size)
        got = {}
        for k, (stat, n, seed, nd) in enumerate(stats):
            est = batch.add(stat, n, lambda b, k=k: got.__setitem__(k, b), n_draws=nd, seed=seed)
            assert k not in got  # not handed over inside its own add
            assert est == bootstrap(stat, n, n_draws=nd, seed=seed).estimate or np.isnan(est)
        batch.flush()
        for k, (stat, n, seed, nd) in enumerate(stats):
            want = bootstrap(stat, n, n_draws=nd, seed=seed)
            assert repr(got[k]) == repr(want)  # every field, NaN included, bit for bit
    assert any(got[k].n_dropped for k in got) and any(np.isnan(got[k].low) for k in got)
