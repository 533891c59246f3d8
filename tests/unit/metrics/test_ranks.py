"""metrics/ranks.rankdata: scipy.stats.rankdata's average ranks without importing scipy.stats."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import rankdata as scipy_rankdata

from perceptbench.metrics.ranks import rankdata


def test_ties_share_their_mean_rank_by_hand():
    assert rankdata([3.0, 1.0, 3.0, 2.0]).tolist() == [3.5, 1.0, 3.5, 2.0]
    assert rankdata([[2, 2, 2], [9, 1, 5]], axis=1).tolist() == [[2.0, 2.0, 2.0], [3.0, 1.0, 2.0]]
    assert rankdata([[1.0, 4.0], [1.0, 0.0]], axis=0).tolist() == [[1.5, 2.0], [1.5, 1.0]]


def test_a_slice_with_nan_is_nan_throughout_and_the_others_are_ranked():
    r = rankdata(np.array([[1.0, np.nan, 2.0], [3.0, 3.0, 1.0]]), axis=1)
    assert np.isnan(r[0]).all() and r[1].tolist() == [2.5, 2.5, 1.0]


@pytest.mark.parametrize("seed", range(4))
def test_equals_scipy_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    for t in range(300):
        shape = tuple(int(k) for k in rng.integers(0, 7, size=rng.integers(1, 4)))
        x = rng.integers(0, 4, size=shape).astype(float) if t % 2 else rng.normal(size=shape)
        if x.size and t % 5 == 0:
            x.flat[rng.integers(x.size)] = np.nan
        if x.size and t % 7 == 0:
            x.flat[rng.integers(x.size)] = -np.inf
        axis = int(rng.integers(-x.ndim, x.ndim))
        want, got = scipy_rankdata(x, axis=axis), rankdata(x, axis=axis)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes(), (x, axis)
    for x in ([True, False, True], [5], 7.0, np.array([], float)):
        assert rankdata(x).tobytes() == scipy_rankdata(x).tobytes()
