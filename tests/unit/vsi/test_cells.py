"""vsi/cells.py: the per-cell VSI summary."""

import numpy as np

from perceptbench.metrics.bootstrap import bootstrap
from perceptbench.vsi.cells import INSENSITIVE_THRESHOLDS, cell_summary


def _bootstrap_per_flag(vsi, argmax_changed, seed, n_draws):
    """The form cell_summary had before issue 25: one bootstrap() of each fraction's gathered mean."""
    v = np.asarray(vsi, np.float64)
    a = np.asarray(argmax_changed, np.float64)
    ins = {t: bootstrap(lambda i, b=(v < t).astype(np.float64): b[i].mean(1), v.size, n_draws=n_draws, seed=seed)
           for t in INSENSITIVE_THRESHOLDS}
    return ins, bootstrap(lambda i: a[i].mean(1), v.size, n_draws=n_draws, seed=seed)


def test_cell_summary_fractions_on_count_draws_equal_one_bootstrap_per_fraction():
    """cell_summary takes its three fractions' draws from one count matrix and their intervals in
    one call (issue 25): each BootstrapResult equals bootstrap() of that fraction's gathered mean,
    every field bit for bit, for cells of 1 to 300 samples, VSI tied at and around the thresholds,
    all or none below them, several seeds and draw counts."""
    rng = np.random.default_rng(3)
    for k in range(60):
        n = int(rng.integers(1, 300)) if k > 2 else k + 1
        v = np.exp(rng.normal(-4, 2, n))
        v[rng.random(n) < 0.2] = rng.choice([0.0, 0.01, 0.05, 0.0099999, 1e-3])  # ties at and near the thresholds
        if k % 11 == 4:
            v[:] = 0.0  # every sample below both thresholds
        if k % 11 == 7:
            v[:] = 3.0  # none below
        a = rng.random(n) < [0.0, 0.3, 1.0][k % 3]
        seed, nd = [0, 5][k % 2], [1000, 37][k % 4 == 1]
        got = cell_summary(v, a, seed=seed, n_draws=nd)
        ins, arg = _bootstrap_per_flag(v, a, seed, nd)
        assert repr(got.argmax_change_rate) == repr(arg)
        assert {t: repr(b) for t, b in got.insensitive.items()} == {t: repr(b) for t, b in ins.items()}


def test_cell_medians_stacked_by_size_equal_one_percentile_per_cell():
    """cell_medians (the ranking of model_pairs) takes the medians of equal-sized cells in one
    percentile call (issue 25): each equals np.percentile of that cell alone, bit for bit, for
    odd and even sizes, one-sample cells and ties."""
    from types import SimpleNamespace

    from perceptbench.vsi.cells import cell_medians

    rng = np.random.default_rng(8)
    by_model = {}
    for k in range(90):
        n = [40, 39, 1, 2, int(rng.integers(1, 80))][k % 5]
        v = np.exp(rng.normal(-3, 2, n))
        if k % 7 == 0:
            v[: n // 2] = 0.02  # ties
        by_model[f"m{k:02d}"] = [SimpleNamespace(vsi=float(x)) for x in v]
    got = cell_medians(by_model)
    want = {m: float(np.percentile(np.array([s.vsi for s in c], float), 50)) for m, c in by_model.items()}
    assert list(got) != [] and {m: repr(x) for m, x in got.items()} == {m: repr(x) for m, x in want.items()}
