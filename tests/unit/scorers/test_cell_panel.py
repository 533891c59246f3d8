"""scorers/cell_panel.py: the category-mean ratio and percentage statistics over resampled cells."""

import math

import numpy as np
import pytest

from helpers.score_rows import SEED


def test_category_ratio_boot_is_a_ratio_of_sums_undefined_at_zero():
    from perceptbench.scorers.cell_panel import ratio_boot as _ratio_boot

    def est(num, den, mask=None):
        return _ratio_boot(np.array(num, float), np.array(den, float), 50, SEED,
                           mask=None if mask is None else np.array(mask, float)).estimate

    assert est([1, 2], [2, 2]) == 0.75                   # (1 + 2) / (2 + 2)
    assert est([1], [1]) == 1.0                          # one trial is enough
    assert est([0.25], [0.5]) == 0.5                     # a fractional denominator is not floored at 1
    assert est([1, 2], [2, 2], mask=[0, 1]) == 1.0       # only the masked-in stimulus: 2/2
    assert math.isnan(est([0, 0], [0, 0]))               # nothing to divide: undefined, not 0
    assert math.isnan(est([1, 2], [2, 2], mask=[0, 0]))


def test_category_pct_mean_and_interval_of_resampled_values():
    from perceptbench.metrics.bootstrap import BootstrapResult
    from perceptbench.scorers.cell_panel import pct_boot as _pct

    v = np.array([0.1, 0.35, np.nan, 0.2, 0.9, 0.55, 0.05, 0.7])
    got = _pct(v, 400, SEED, "pairs@x")
    from perceptbench.seeding import rng_for

    ok = v[np.isfinite(v)]
    idx = rng_for(SEED, "bootstrap-units", "pairs@x", ok.size, 400).integers(0, ok.size, size=(400, ok.size))
    lo, hi = np.percentile(ok[idx].mean(1), [2.5, 97.5])
    # mean of the 7 defined values = 2.85 / 7; NaN left out; draws keyed by the key, the count and the draws
    assert got == BootstrapResult(pytest.approx(2.85 / 7), float(lo), float(hi), 400, 0, SEED)
    assert _pct(v, 400, SEED, "loo@x").low != got.low or _pct(v, 400, SEED, "loo@x").high != got.high
    one = _pct(np.array([0.4, np.nan]), 400, SEED, "k")
    assert (one.estimate, one.low, one.high, one.n_dropped) == (0.4, 0.4, 0.4, 0)
    none = _pct(np.array([np.nan, np.nan]), 400, SEED, "k")
    assert all(math.isnan(x) for x in (none.estimate, none.low, none.high))
    assert (none.n_draws, none.n_dropped, none.seed) == (400, 400, SEED)
    assert all(isinstance(x, float) for x in (none.estimate, none.low, none.high))


def test_observer_matrix_kappa_equals_kappa_on_each_participants_common_stimuli():
    """kappa(model, participant) for every participant at once equals the loop over participants
    on the stimuli both answered (a later record of a stimulus wins; participants sharing none
    left out), bit for bit."""
    from perceptbench.metrics.error_consistency import kappa
    from perceptbench.scorers.cell_panel import _ObserverMatrix

    rng = np.random.default_rng(2)
    stim = [f"s{i}" for i in range(30)]
    col = {s: i for i, s in enumerate(stim)}
    humans = {f"human:o{j}": {s: float(rng.random() < 0.7) for s in rng.permutation(stim)[:rng.integers(1, 12)]}
              for j in range(25)}
    cols = rng.integers(0, 20, 40)  # stimuli 20..29 never answered; repeats: the last record stands
    correct = (rng.random(40) < 0.5).astype(float)
    valid = rng.random(40) < 0.8
    resp = {}
    for k, c, v in zip(cols, correct, valid):
        resp[stim[k]] = (c, v)
    want = []
    for o, d in sorted(humans.items()):
        common = [s for s in d if s in resp and resp[s][1]]
        if common:
            want.append(float(kappa(np.array([resp[s][0] for s in common]), np.array([d[s] for s in common]))))
    got = _ObserverMatrix(humans, col).kappa_per_observer(cols, correct, valid)
    assert len(want) < len(humans) and np.array_equal(got, np.array(want), equal_nan=True)
