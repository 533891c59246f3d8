"""Fixtures of the metric tests."""

import numpy as np
import pytest

from perceptbench.metrics import bootstrap as bs

from helpers.by_hand import D, N


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
