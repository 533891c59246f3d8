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
