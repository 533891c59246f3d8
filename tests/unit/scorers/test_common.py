"""scorers/common.py: blocks of respondents, NaN helpers, null rows and the kappa note."""

import numpy as np

from perceptbench.core.rows import ScoreRow

from helpers.score_rows import assert_rows


def test_gestalt_batches_group_by_key_in_first_order_and_cut_blocks(monkeypatch):
    import perceptbench.scorers.common as g

    parity = lambda x: bytes([x % 2])  # noqa: E731
    assert g.batches([1, 0, 3, 2, 4], parity) == [[1, 3], [0, 2, 4]]
    monkeypatch.setattr(g, "MODEL_BLOCK", 2)
    assert g.batches([1, 0, 3, 2, 4, 5], parity) == [[1, 3], [5], [0, 2], [4]]
    assert g.batches([], parity) == []


def test_gestalt_nan_helpers():
    from perceptbench.scorers.common import nan_extreme as _nan_extreme, nanmean as _nanmean, ratio as _ratio

    x = np.array([[1.0, np.nan, 4.0], [3.0, np.nan, np.nan]])
    out = _nanmean(x, 0)  # column means over the defined entries: 2, undefined, 4
    assert out[0] == 2.0 and np.isnan(out[1]) and out[2] == 4.0
    assert list(_nanmean(x, 1)) == [2.5, 3.0]
    assert _nan_extreme(np.array([np.nan, 2.0, -1.0]), np.min) == -1.0
    assert _nan_extreme(np.array([np.nan, 2.0, -1.0]), np.max) == 2.0
    assert np.isnan(_nan_extreme(np.array([np.nan, np.nan]), np.min))
    r = _ratio(np.array([1.0, 2.0, 3.0, 4.0, np.nan]), np.array([2.0, 0.0, np.nan, -4.0, 1.0]))
    # 1/2, den 0 -> undefined, den NaN -> undefined, -1 (never clipped), NaN numerator stays NaN
    assert r[0] == 0.5 and r[3] == -1.0 and np.isnan(r[[1, 2, 4]]).all()
    assert list(_ratio(np.array([[3.0], [6.0]]), np.array([1.5, 3.0])).ravel()) == [2.0, 1.0, 4.0, 2.0]


def test_gestalt_null_rows_and_kappa_note():
    from perceptbench.metrics.error_consistency import UNDEFINED_REASON
    from perceptbench.scorers.common import kappa_note as _kappa_note, null_rows as _null_rows

    assert _kappa_note(0.25) == "" and _kappa_note(float("nan")) == UNDEFINED_REASON
    assert_rows(_null_rows("t", "m", 4, 1, None), [ScoreRow("t", "m", "null_rate", 0.25, None, None, 4, 1)])
    assert_rows(_null_rows("t", "m", 4, 1, float("nan")), [ScoreRow("t", "m", "null_rate", 0.25, None, None, 4, 1)])
    assert_rows(_null_rows("t", "m", 0, 0, None), [ScoreRow("t", "m", "null_rate", float("nan"), None, None, 0, 0)])
    # nu = 1/4, B = 0.6: (1 - 1/4) 0.6 = 0.45 and 0.45 + 0.25 = 0.7 (seed 000 D.4)
    assert_rows(_null_rows("t", "m", 4, 1, 0.6), [
        ScoreRow("t", "m", "null_rate", 0.25, None, None, 4, 1),
        ScoreRow("t", "m", "B_full_low", 0.75 * 0.6, None, None, 4, 1, "null bracket (1-nu)B <= B_full (seed 000 D.4)"),
        ScoreRow("t", "m", "B_full_high", 0.75 * 0.6 + 0.25, None, None, 4, 1,
                 "null bracket B_full <= (1-nu)B + nu (seed 000 D.4)")])
