"""Average ranks in numpy: what ``scipy.stats.rankdata`` (method ``average``, ``nan_policy``
``propagate``) returns, without importing scipy.stats (about 2 s of CPU at start-up on a shared
machine, most of a ``perceptbench score`` of a small VSI run; issue 25)."""

from __future__ import annotations

import numpy as np


def rankdata(x, axis: int = -1) -> np.ndarray:
    """Average ranks of ``x`` along ``axis``: ranks 1..n, ties sharing the mean of the ranks they
    span (1, 2.5, 2.5, 4); a slice holding NaN is NaN throughout.  ``x``: array-like of numbers,
    any shape (a scalar as shape (1,)); returns float64 of that shape.  Values equal ``scipy.stats.rankdata(x,
    axis=axis)`` bit for bit (every rank is an integer or a half, exact in float64 below 2**52;
    tests/unit/metrics/test_ranks.py checks it against scipy).  Method: Kendall & Gibbons, *Rank
    Correlation Methods* (1990), ch. 3 (mid-ranks for ties); the same sort-then-group scheme as
    scipy's ``_rankdata``."""
    x = np.atleast_1d(np.asarray(x))  # a scalar ranks as one value, shape (1,), as scipy's
    a = np.moveaxis(x, axis, -1)
    out = np.empty(a.shape, np.float64)
    n = a.shape[-1]
    if a.size:
        order = np.argsort(a, axis=-1, kind="stable")
        y = np.take_along_axis(a, order, axis=-1)
        pos = np.broadcast_to(np.arange(1, n + 1), a.shape)
        starts = np.ones(a.shape, bool)
        starts[..., 1:] = y[..., 1:] != y[..., :-1]
        ends = np.ones(a.shape, bool)
        ends[..., :-1] = starts[..., 1:]
        first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)  # rank where each tie group starts
        last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, pos, n + 1), -1), axis=-1), -1)
        mid = first + (last - first) / 2.0
        np.put_along_axis(out, order, mid, axis=-1)
        if a.dtype.kind in "fc":
            out[np.isnan(a).any(axis=-1)] = np.nan
    return np.moveaxis(out, -1, axis)
