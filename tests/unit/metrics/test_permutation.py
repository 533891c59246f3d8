"""metrics/permutation.py: Spearman rho by one ranking per row (issue 25)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.stats import rankdata, spearmanr

from perceptbench.metrics import permutation as pm


def test_spearman_matrix_known_answer_and_mean_over_pairs():
    # rho(x0, x1) = -1 (reversed); rho(x0, x2) = 1 - 6*2/(4*15) = 0.8; rho(x1, x2) = -0.8
    x = np.array([[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0], [1.0, 3.0, 2.0, 4.0]])
    rho = pm.spearman_matrix(x)
    assert rho[0, 1] == pytest.approx(-1.0) and rho[0, 2] == pytest.approx(0.8) and rho[1, 2] == pytest.approx(-0.8)
    iu = np.triu_indices(3, 1)
    assert rho[iu].mean() == pytest.approx(-1.0 / 3.0, abs=1e-15)
    per_pair = [pm.permutation_spearman(x[i], x[j], n_perm=10).rho for i, j in itertools.combinations(range(3), 2)]
    assert rho[iu].mean() == pytest.approx(np.mean(per_pair), abs=1e-15)


def test_spearman_matrix_equals_per_pair_rho_with_ties_and_a_constant_row():
    rng = np.random.default_rng(4)
    x = np.round(rng.random((12, 40)), 1)  # ties
    x[5] = 0.3  # constant: its row and column are NaN, as per pair
    rho = pm.spearman_matrix(x)
    for i, j in itertools.combinations(range(12), 2):
        want = pm.permutation_spearman(x[i], x[j], n_perm=10).rho
        if i == 5 or j == 5:
            assert np.isnan(rho[i, j]) and np.isnan(want)
        else:
            assert rho[i, j] == pytest.approx(want, abs=1e-14)
            assert rho[i, j] == pytest.approx(spearmanr(x[i], x[j]).statistic, abs=1e-12)
    assert np.isnan(pm.spearman_matrix(x[:, :2])).all()  # n < 3


def test_standardised_ranks_of_many_rows_equal_each_row_ranked_alone():
    rng = np.random.default_rng(9)
    for n in (3, 8, 17, 50, 129):
        x = np.round(rng.standard_normal((30, n)), 1)
        z = pm.standardised_ranks(x)
        for row, zr in zip(x, z):
            r = rankdata(row)
            r = r - r.mean()
            assert np.array_equal(zr, r / np.sqrt((r * r).sum()))  # bit for bit
