"""Shape bias on cue-conflict images (Geirhos et al. 2019, §3 and Fig. 4).

On an image whose shape is one class and whose texture another, a decision is a *shape*
decision when it names the shape class and a *texture* decision when it names the texture class.
Shape bias = shape decisions / (shape + texture decisions); decisions that name neither cue do not
enter it (their share is reported apart).  model-vs-human computes the same ratio from fractions of
all trials (``modelvshuman/plotting/analyses.py``, ``ShapeBias.analysis``), which is equal.

The functions take count weights ``w`` (k, n): row d says how often each of the n trials is in
resample d (a row of ones is the sample itself), as :func:`perceptbench.metrics.bootstrap.bootstrap_counts`
and the scorers' ``with_estimate`` give, so every bootstrap draw recomputes the whole ratio.
"""

from __future__ import annotations

import numpy as np


def _sums(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(k, M) weighted sums of x (M, n) under w (k, n), float64."""
    return np.asarray(w, np.float64) @ np.asarray(x, np.float64).T


def shape_bias_counts(w: np.ndarray, shape_hit: np.ndarray, texture_hit: np.ndarray) -> np.ndarray:
    """Shape bias of M respondents under k weightings.

    ``shape_hit``, ``texture_hit``: 0/1 (M, n), 1 where the decision names the shape / the texture
    class (never both: the two classes differ on a cue-conflict trial).  Returns float64 (k, M):
    sum(w * shape) / sum(w * (shape + texture)); NaN where no decision names either cue."""
    s = _sums(w, shape_hit)
    t = _sums(w, texture_hit)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s + t > 0, s / np.where(s + t > 0, s + t, 1.0), np.nan)


def fraction_counts(w: np.ndarray, hit: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Share of the valid trials (bool (M, n)) that are hits (0/1 (M, n)), float64 (k, M); NaN
    where no trial is valid.  With ``hit`` = neither cue named, this is the share of cue-conflict
    trials answered by neither cue."""
    v = np.asarray(valid, np.float64)
    num = _sums(w, np.asarray(hit, np.float64) * v)
    den = _sums(w, v)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def shape_bias(shape_hit, texture_hit) -> float:
    """Shape bias of one respondent's trials (1-D 0/1 arrays of equal length); NaN when no decision
    names either cue."""
    return float(shape_bias_counts(np.ones((1, len(shape_hit))), np.asarray(shape_hit)[None],
                                   np.asarray(texture_hit)[None])[0, 0])
