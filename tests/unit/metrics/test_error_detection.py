"""metrics/error_detection.py: error-detection and calibration statistics on bootstrap draws."""

import numpy as np
import pytest

from perceptbench.metrics.bootstrap import resample_indices
from perceptbench.metrics.error_detection import ece_draws, ece_rows


def test_ece_draws_equals_ece_rows_of_the_gathered_draws():
    """ece_draws bins each sample once and sums every draw's bins with one weighted bincount
    (issue 25): equal to ece_rows(conf[idx], correct[idx]) bit for bit, with confidences on the
    bin edges (0, 0.1, ..., 1), many samples in one bin, continuous confidences, and one sample."""
    rng = np.random.default_rng(5)
    for k in range(40):
        n = int(rng.integers(1, 200)) if k else 1
        conf = rng.random(n)
        conf[rng.random(n) < 0.3] = rng.choice(np.linspace(0, 1, 11))  # on the edges, the last bin's 1.0
        if k % 5 == 2:
            conf = np.full(n, 0.73) + rng.normal(0, 1e-3, n)  # one bin
        correct = rng.random(n) < rng.random()
        idx = resample_indices(n, [1000, 7][k % 3 == 1], k)
        got, want = ece_draws(conf, correct, idx), ece_rows(conf[idx], correct[idx])
        assert got.dtype == want.dtype and np.array_equal(got, want)
    with pytest.raises(ValueError):
        ece_draws(np.array([0.2, 1.5]), np.array([True, False]), resample_indices(2, 10, 0))
