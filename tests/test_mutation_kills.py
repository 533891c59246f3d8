"""Known-answer tests written to kill mutants that survived `scripts/mutation_report.py`
(issue 14).  Each answer is derived by hand in the comment above its assertion."""

from __future__ import annotations

import numpy as np
import pytest

from perceptbench.metrics import bootstrap as bootstrap_mod
from perceptbench.metrics.agreement import masked_mean, position_floor
from perceptbench.metrics.bootstrap import bootstrap, resample_indices
from perceptbench.metrics.capacity import accuracy_by_k, capacity_k
from perceptbench.metrics.error_consistency import kappa, kappa_pairwise_mean
from perceptbench.seeding import rng_for


# ---- agreement ----------------------------------------------------------------------

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


# ---- capacity -----------------------------------------------------------------------

def test_accuracy_by_k_int_valid_mask():
    # valid as ints [2, 1]: both trials valid once; k=1 -> (1 + 0)/2 = 0.5
    a = accuracy_by_k(np.array([1.0, 0.0]), np.array([2, 1]), np.array([1, 1]), np.array([1]))
    assert a == pytest.approx([0.5])


def test_capacity_k_batched_rows_use_their_own_baseline():
    levels = np.array([1, 2, 4, 6, 8])
    a = np.array([
        [1.0, 1.0, 1.0, 0.4, 0.2],  # base 1.0, thresh 0.5 -> first below at k=6
        [0.4, 0.4, 0.4, 0.3, 0.1],  # base 0.4, thresh 0.2 -> first below at k=8
        [0.5, 0.5, 0.5, 0.5, 0.5],  # never below 0.25 -> NaN
    ])
    out = capacity_k(a, levels)
    np.testing.assert_array_equal(out[:2], [6.0, 8.0])
    assert np.isnan(out[2])


# ---- error consistency --------------------------------------------------------------

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


# ---- bootstrap ----------------------------------------------------------------------

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
