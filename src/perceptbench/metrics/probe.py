"""A linear probe that tells two views of an image apart, with a bootstrap over images
(numpy + scikit-learn; seed 002 §2.4, appendix A).

* probe: ``StandardScaler`` + L2-regularised ``LogisticRegression(C=1.0, lbfgs)``
  (scikit-learn), out-of-fold predictions from ``GroupKFold(5)`` with groups = ``image_id``,
  so both views of an image (and every question on it) sit in one fold;
* per-sample probe accuracy = mean correctness of its two views' out-of-fold predictions;
* :func:`gap_on_subset`: probe accuracy - a per-sample rate on the same subset, 95% CIs from a
  bootstrap over images (``resample_indices`` over the subset's images; each draw sums
  per-image totals).

The VSI encoder-LLM gap (:mod:`perceptbench.vsi.probe`) applies these to vision-tower features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.text import counted
from .bootstrap import N_BOOT_B, resample_indices

N_FOLDS = 5
"""Grouped cross-validation folds (seed 002 appendix A)."""

PROBE_C = 1.0
"""Inverse L2 strength of the logistic probe (scikit-learn's default)."""


def probe_folds(image_ids: np.ndarray, n_folds: int = N_FOLDS) -> list[tuple[np.ndarray, np.ndarray]]:
    """GroupKFold splits of the stacked design ``[clean views; perturbed views]``.

    ``image_ids``: (n,) labels of the n samples; the design has 2n rows (row i and n + i are
    the two views of sample i).  Returns ``n_folds`` (train, test) index arrays over 2n rows.
    Raises ValueError when there are fewer than ``n_folds`` distinct images."""
    from sklearn.model_selection import GroupKFold

    groups = np.concatenate([np.asarray(image_ids), np.asarray(image_ids)])
    n_img = len(set(groups.tolist()))
    if n_img < n_folds:
        raise ValueError(f"{counted(n_img, 'distinct image')} < {n_folds} folds")
    return list(GroupKFold(n_splits=n_folds).split(np.zeros(groups.size), groups=groups))


def probe_oof_correct(clean: np.ndarray, perturbed: np.ndarray, image_ids: np.ndarray,
                      n_folds: int = N_FOLDS) -> tuple[np.ndarray, np.ndarray]:
    """Out-of-fold probe correctness per sample and per-fold accuracy.

    ``clean``, ``perturbed``: float (n, d) features of the two views; ``image_ids`` (n,).
    Returns (float (n,) in {0, 0.5, 1}: mean correctness of the sample's two views,
    float (n_folds,) fold accuracies).  Raises ValueError for mismatched shapes or fewer
    images than folds."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clean, perturbed = np.asarray(clean, np.float64), np.asarray(perturbed, np.float64)
    if clean.shape != perturbed.shape or clean.ndim != 2:
        raise ValueError(f"clean {clean.shape} and perturbed {perturbed.shape} features must be equal (n, d)")
    n = clean.shape[0]
    X = np.vstack([clean, perturbed])
    y = np.r_[np.zeros(n, int), np.ones(n, int)]
    pred = np.empty(2 * n, int)
    fold_acc = []
    for tr, te in probe_folds(image_ids, n_folds):
        clf = make_pipeline(StandardScaler(), LogisticRegression(C=PROBE_C, max_iter=5000))
        clf.fit(X[tr], y[tr])
        pred[te] = clf.predict(X[te])
        fold_acc.append(float((pred[te] == y[te]).mean()))
    ok = (pred == y).astype(float)
    return 0.5 * (ok[:n] + ok[n:]), np.array(fold_acc)


@dataclass(frozen=True)
class GapResult:
    """Probe accuracy, argmax-change rate and their gap on one subset, with CIs over images."""

    probe_acc: tuple[float, float, float]
    argmax_change: tuple[float, float, float]
    gap: tuple[float, float, float]
    n_samples: int
    n_images: int
    n_dropped: int


def gap_on_subset(probe_ok: np.ndarray, changed: np.ndarray, image_ids: np.ndarray, mask: np.ndarray,
                  seed: int, n_draws: int = N_BOOT_B) -> GapResult:
    """Means over ``mask``'s samples and a percentile bootstrap over their images.

    ``probe_ok`` float (n,), ``changed`` bool (n,), ``image_ids`` (n,), ``mask`` bool (n,)."""
    ids = np.asarray(image_ids)[mask]
    po, ch = np.asarray(probe_ok, float)[mask], np.asarray(changed, float)[mask]
    imgs, inv = np.unique(ids, return_inverse=True)
    m = imgs.size
    cnt = np.bincount(inv, minlength=m).astype(float)
    s_po = np.bincount(inv, weights=po, minlength=m)
    s_ch = np.bincount(inv, weights=ch, minlength=m)
    idx = resample_indices(m, n_draws, seed)
    den = cnt[idx].sum(1)
    d_po, d_ch = s_po[idx].sum(1) / den, s_ch[idx].sum(1) / den
    est_po, est_ch = po.mean(), ch.mean()

    def ci(est, draws):
        lo, hi = np.percentile(draws, [2.5, 97.5])
        return float(est), float(lo), float(hi)

    return GapResult(ci(est_po, d_po), ci(est_ch, d_ch), ci(est_po - est_ch, d_po - d_ch), int(mask.sum()), m, 0)
