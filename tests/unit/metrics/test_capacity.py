"""metrics/capacity.py: accuracy by k and the capacity threshold (seed 001 §6.1)."""

import numpy as np
import pytest

from perceptbench.metrics.capacity import accuracy_by_k, capacity_k


def test_capacity():
    levels = np.arange(2, 9)
    k = np.repeat(levels, 2)
    correct = np.array([1, 1, 1, 1, 1, 0, 1, 1, 0, 1, 0, 0, 0, 0], float)
    a = accuracy_by_k(correct, np.ones_like(correct, bool), k, levels)
    assert a.tolist() == [1, 1, 0.5, 1, 0.5, 0, 0]
    # baseline mean a(k<=4) = 5/6; threshold 5/12; first k below: 7
    assert capacity_k(a, levels) == 7
    assert np.isnan(capacity_k(np.ones(7), levels))


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
