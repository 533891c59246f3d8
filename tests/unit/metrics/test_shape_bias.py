"""Shape bias maths (metrics/shape_bias.py) against values worked out by hand."""

import numpy as np
import pytest

from perceptbench.metrics.shape_bias import fraction_counts, shape_bias, shape_bias_counts


def test_shape_bias_is_shape_over_shape_plus_texture_decisions():
    # 3 shape decisions, 1 texture decision, 1 neither: 3 / (3 + 1)
    assert shape_bias([1, 1, 0, 0, 1], [0, 0, 1, 0, 0]) == pytest.approx(0.75)


def test_neither_decisions_do_not_enter_the_ratio():
    # adding trials that name neither cue leaves 1 / (1 + 1)
    assert shape_bias([1, 0, 0, 0, 0], [0, 1, 0, 0, 0]) == pytest.approx(0.5)


def test_shape_bias_is_undefined_without_a_shape_or_texture_decision():
    assert np.isnan(shape_bias([0, 0], [0, 0]))


def test_count_weights_recompute_the_whole_ratio_per_draw():
    sh = np.array([[1, 1, 0, 0, 1], [0, 0, 0, 1, 1]], float)
    tx = np.array([[0, 0, 1, 0, 0], [1, 1, 1, 0, 0]], float)
    w = np.array([[1, 1, 1, 1, 1], [2, 0, 1, 1, 0], [0, 0, 0, 2, 0]], float)
    got = shape_bias_counts(w, sh, tx)
    # by hand: row 1 respondent 0: shape 2 (trial 0 twice), texture 1 -> 2/3; respondent 1: shape 1, texture 3 -> 1/4
    # row 2: respondent 0 has no decision naming a cue (trial 3 twice: neither) -> NaN; respondent 1: 2 / 2
    want = np.array([[3 / 4, 2 / 5], [2 / 3, 1 / 4], [np.nan, 1.0]])
    np.testing.assert_allclose(got, want)
    assert got.shape == (3, 2)


def test_fraction_counts_is_the_share_of_valid_trials():
    hit = np.array([[1, 0, 1, 1]], float)
    valid = np.array([[True, True, False, True]])
    w = np.array([[1, 1, 1, 1], [0, 3, 1, 1], [0, 0, 1, 0]], float)
    # row 0: hits on valid trials 0 and 3 of 3 valid -> 2/3; row 1: (0*3 + 1) / (3 + 1) = 1/4; row 2: no valid -> NaN
    np.testing.assert_allclose(fraction_counts(w, hit, valid), [[2 / 3], [1 / 4], [np.nan]])
