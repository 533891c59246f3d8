"""metrics/confusion.py: the 2x2 table and its rates, on weights (bootstrap count rows)."""

import numpy as np
import pytest

from perceptbench.metrics.bootstrap import resample_counts, resample_indices
from perceptbench.metrics.confusion import RATES, binary_rates, confusion_counts


def test_counts_and_rates_by_hand():
    # pred  y y n n y ; truth y n y n n -> TP 1 (0), FP 2 (1, 4), FN 1 (2), TN 1 (3)
    pred = np.array([1, 1, 0, 0, 1], bool)
    truth = np.array([1, 0, 1, 0, 0], bool)
    c = confusion_counts(np.ones((1, 5)), pred, truth)
    assert c.tolist() == [[1, 2, 1, 1]]
    r = dict(zip(RATES, binary_rates(c)[0]))
    # accuracy 2/5, precision 1/3, recall 1/2, F1 2/(2+2+1), yes-ratio = predicted yes 3/5 (not truth's 2/5)
    assert r == pytest.approx({"accuracy": 0.4, "precision": 1 / 3, "recall": 0.5, "f1": 0.4, "yes_ratio": 0.6})


def test_weights_count_repeated_questions():
    pred = np.array([1, 0], bool)
    truth = np.array([1, 1], bool)
    # question 0 (TP) twice, question 1 (FN) once
    assert confusion_counts(np.array([[2.0, 1.0]]), pred, truth).tolist() == [[2, 0, 0, 1]]


def test_undefined_rates_are_nan_not_zero():
    # no predicted yes: precision 0/0; no true yes: recall 0/0; F1 0/0 -> NaN (lmms-eval/VLMEvalKit: 0)
    r = binary_rates(confusion_counts(np.ones((1, 2)), np.zeros(2, bool), np.zeros(2, bool)))[0]
    assert r[0] == 1.0 and np.isnan(r[1]) and np.isnan(r[2]) and np.isnan(r[3]) and r[4] == 0.0


def test_count_rows_equal_the_rates_of_each_resample():
    rng = np.random.default_rng(3)
    pred, truth = rng.random(23) < 0.5, rng.random(23) < 0.5
    idx = resample_indices(23, 50, 7)
    by_weights = binary_rates(confusion_counts(resample_counts(idx), pred, truth))
    by_index = np.vstack([binary_rates(confusion_counts(np.ones((1, 23)), pred[i], truth[i])) for i in idx])
    np.testing.assert_allclose(by_weights, by_index)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="differ"):
        confusion_counts(np.ones((1, 3)), np.ones(2, bool), np.ones(2, bool))
