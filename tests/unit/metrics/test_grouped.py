"""metrics/grouped.py: all-correct groups and cluster ratios."""

import numpy as np
import pytest

from perceptbench.metrics.grouped import all_correct_by_group, ratio_of_sums


def test_a_group_is_right_only_when_every_question_is():
    groups, ok = all_correct_by_group(np.array([1, 1, 1, 0, 1], bool), ["a", "a", "b", "b", "c"])
    assert groups == ["a", "b", "c"] and ok.tolist() == [True, False, True]


def test_ratio_of_sums_per_weight_row_and_nan_without_denominator():
    num, den = np.array([1.0, 0.0, 2.0]), np.array([1.0, 1.0, 2.0])
    w = np.array([[1, 1, 1], [2, 0, 0], [0, 1, 0], [0, 0, 0]], float)
    # (1+0+2)/(1+1+2) = 3/4; 2/2; 0/1; 0/0 -> NaN
    out = ratio_of_sums(w, num, den)
    assert out[:3] == pytest.approx([0.75, 1.0, 0.0]) and np.isnan(out[3])


def test_lengths_must_agree():
    with pytest.raises(ValueError, match="group labels"):
        all_correct_by_group(np.ones(3, bool), ["a"])
