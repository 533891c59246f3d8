"""The encoder-LLM gap probe (seed 002 §2.4, appendix A).

A linear probe on a model's own vision-tower features (clean vs perturbed view of each
image) against the same model's argmax-change rate, on the same samples:

* features: final-layer vision-tower output, mean-pooled, L2-normalised
  (:meth:`perceptbench.models.vlm_hf.HFVLM.vision_features`); the frozen witness uses the
  embedded default encoder (efficientnet-lite0, ``embed``), image-only and shared by all models;
* probe: ``StandardScaler`` + L2-regularised ``LogisticRegression(C=1.0, lbfgs)`` (scikit-learn),
  out-of-fold predictions from ``GroupKFold(5)`` with groups = ``image_id``, so both views of an
  image (and every question on it) sit in one fold;
* per-sample probe accuracy = mean correctness of its two views' out-of-fold predictions;
* subsets: low-VSI = ``VSI < 0.05``; the size-matched high-VSI control = a seeded random subset,
  of size min(n_low, n_top), of the top VSI quintile samples not in the low subset;
* gap = probe accuracy - argmax-change rate on the same subset; 95% CIs from a bootstrap over
  images (``resample_indices`` over the subset's images; each draw sums per-image totals).

Caching (so that ``perceptbench score`` re-scores without torch): features are computed at run
time by :func:`perceptbench.vsi_features.cache_probe_features` and written to
``<run>/features/<slug(model@task_id)>.npz`` (arrays
``sample_id, image_id, perturbation, sigma, clean, perturbed``, float32 features) with a
``<slug>.json`` sidecar (model, model_version, hook, feature dim, sha256 of the npz).  A model
without an accessible vision tower gets ``<slug>.json`` with ``"skipped": reason`` and no npz.
Scoring reads these with numpy only and refits the probe (deterministic), so re-scoring gives
identical numbers.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..seeding import rng_for
from ..core.rows import ScoreRow
from .bootstrap import N_BOOT_B, resample_indices
from .vsi import VSISample
from .vsi_cells import LOW_VSI, _cells, _suffix, quintiles

N_FOLDS = 5
"""Grouped cross-validation folds (seed 002 appendix A)."""
PROBE_C = 1.0
"""Inverse L2 strength of the logistic probe (scikit-learn's default)."""
WITNESS = "witness:efficientnet-lite0"
"""Model part of the store key of the frozen external image-only witness probe's features."""


def store_key(model: str, task_id: str) -> str:
    """Key of one (model, task) feature file: ``model@task_id``."""
    return f"{model}@{task_id}"


def slug(name: str, max_len: int = 120) -> str:
    """File-name-safe form of a store key: other characters become ``_``; a key longer than
    ``max_len`` (task ids can hold paths) keeps its first ``max_len - 17`` characters plus ``-``
    and the first 16 hex digits of its sha256, so names stay unique and under file-system limits."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    if len(s) > max_len:
        s = s[: max_len - 17] + "-" + hashlib.sha256(name.encode()).hexdigest()[:16]
    return s


def probe_folds(image_ids: np.ndarray, n_folds: int = N_FOLDS) -> list[tuple[np.ndarray, np.ndarray]]:
    """GroupKFold splits of the stacked design ``[clean views; perturbed views]``.

    ``image_ids``: (n,) labels of the n samples; the design has 2n rows (row i and n + i are
    the two views of sample i).  Returns ``n_folds`` (train, test) index arrays over 2n rows.
    Raises ValueError when there are fewer than ``n_folds`` distinct images."""
    from sklearn.model_selection import GroupKFold

    groups = np.concatenate([np.asarray(image_ids), np.asarray(image_ids)])
    n_img = len(set(groups.tolist()))
    if n_img < n_folds:
        raise ValueError(f"{n_img} distinct images < {n_folds} folds")
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


def subsets(vsi: np.ndarray, sample_ids: Sequence[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(low, control) bool masks (n,): VSI < 0.05, and a seeded size-matched random subset of
    the top VSI quintile outside the low subset."""
    vsi = np.asarray(vsi, float)
    low = vsi < LOW_VSI
    top = (quintiles(vsi, sample_ids) == 4) & ~low
    cand = np.flatnonzero(top)
    k = min(int(low.sum()), cand.size)
    ctrl = np.zeros(vsi.size, bool)
    if k:
        ctrl[rng_for(seed, "vsi-probe-control", vsi.size).choice(cand, size=k, replace=False)] = True
    return low, ctrl


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


class ProbeFeatures:
    """Read-only store of cached probe features in a directory (numpy only, no torch).

    ``get(key)`` -> dict {(sample_id, perturbation, sigma): (image_id, clean (d,), perturbed
    (d,))}, or None when nothing is cached; ``skipped(key)`` -> the reason or None.  Raises
    ValueError naming the file when an npz does not match its sidecar's sha256."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self._cache: dict[str, dict | None] = {}

    def _meta(self, key: str) -> dict | None:
        p = self.directory / (slug(key) + ".json")
        return json.loads(p.read_text()) if p.exists() else None

    def skipped(self, key: str) -> str | None:
        m = self._meta(key)
        return m.get("skipped") if m else None

    def get(self, key: str) -> dict | None:
        if key in self._cache:
            return self._cache[key]
        m = self._meta(key)
        p = self.directory / (slug(key) + ".npz")
        out = None
        if m and not m.get("skipped") and p.exists():
            data = p.read_bytes()
            if m.get("sha256") and hashlib.sha256(data).hexdigest() != m["sha256"]:
                raise ValueError(f"{p}: contents do not match the sha256 in {p.with_suffix('.json').name}")
            with np.load(p) as z:
                out = {(s, pt, float(sg)): (im, c, q) for s, im, pt, sg, c, q in
                       zip(z["sample_id"].tolist(), z["image_id"].tolist(), z["perturbation"].tolist(),
                           z["sigma"].tolist(), z["clean"], z["perturbed"])}
        self._cache[key] = out
        return out


def _gap_rows(task_id, model, sfx, prefix, feats, cell, seed, note) -> list[ScoreRow]:
    keyed = [(s, feats.get((s.sample_id, s.perturbation, float(s.sigma)))) for s in cell]
    have = [(s, f) for s, f in keyed if f is not None]
    missing = len(cell) - len(have)
    names = [f"{prefix}probe_acc", f"{prefix}argmax_change", f"{prefix}gap"]
    subsets_ = ("low_vsi", "high_vsi")

    def nan_rows(why):
        return [ScoreRow(task_id, model, f"{nm}_{sub}{sfx}", math.nan, None, None, len(have), missing, why)
                for nm in names for sub in subsets_]

    if len(have) < 2 * N_FOLDS:
        return nan_rows(f"features for {len(have)} samples (< {2 * N_FOLDS}); {missing} missing")
    ss = [s for s, _ in have]
    image_ids = np.array([s.image_id for s in ss])
    try:
        ok, folds = probe_oof_correct(np.stack([f[1] for _, f in have]), np.stack([f[2] for _, f in have]), image_ids)
    except ValueError as e:
        return nan_rows(str(e))
    vsi = np.array([s.vsi for s in ss])
    changed = np.array([s.argmax_changed for s in ss])
    low, ctrl = subsets(vsi, [s.sample_id for s in ss], seed)
    rows = [ScoreRow(task_id, model, f"{prefix}probe_acc_all{sfx}", float(ok.mean()), None, None, len(ss), missing,
                     f"{note}; {N_FOLDS}-fold GroupKFold by image, fold accuracy {folds.mean():.3f} "
                     f"+- {folds.std():.3f}")]
    for sub, mask in zip(subsets_, (low, ctrl)):
        if not mask.any():
            why = "no sample with VSI < 0.05" if sub == "low_vsi" else "no top-quintile sample outside the low subset"
            rows += [ScoreRow(task_id, model, f"{nm}_{sub}{sfx}", math.nan, None, None, 0, missing, why)
                     for nm in names]
            continue
        g = gap_on_subset(ok, changed, image_ids, mask, seed)
        what = "VSI < 0.05" if sub == "low_vsi" else "size-matched top VSI quintile"
        for nm, (v, lo, hi) in zip(names, (g.probe_acc, g.argmax_change, g.gap)):
            rows.append(ScoreRow(task_id, model, f"{nm}_{sub}{sfx}", v, lo, hi, g.n_samples, missing,
                                 f"{note}; {what}; {g.n_images} images; CI over images", N_BOOT_B, 0, seed))
    return rows


def probe_rows(samples: Sequence[VSISample], store: ProbeFeatures, *, seed: int = 0) -> list[ScoreRow]:
    """Encoder-LLM gap rows (own tower, and the external witness where cached) for every
    (task, model, perturbation, sigma) cell of ``samples``; a ``skipped`` row (note: why) for
    a model whose features were not extractable or are not in the store, ``witness_skipped``
    when the witness could not run.  Without a features folder no probe row is written."""
    rows: list[ScoreRow] = []
    for (task_id, bench, model, pert, sigma), cell in sorted(_cells(samples).items()):
        sfx = _suffix(pert, sigma)
        witness = store.get(store_key(WITNESS, task_id))
        why = store.skipped(store_key(model, task_id))
        if why:
            rows.append(ScoreRow(task_id, model, f"skipped{sfx}", math.nan, None, None, 0, None,
                                 f"encoder-LLM probe: {why}"))
        else:
            feats = store.get(store_key(model, task_id))
            if feats is not None:
                rows += _gap_rows(task_id, model, sfx, "", feats, cell, seed, "own vision tower")
            else:
                rows.append(ScoreRow(task_id, model, f"skipped{sfx}", math.nan, None, None, 0, None,
                                     f"encoder-LLM probe: no cached features for {model} on {task_id} in "
                                     f"{store.directory} (rerun `perceptbench run` to extract them)"))
        wwhy = store.skipped(store_key(WITNESS, task_id))
        if witness is not None:
            rows += _gap_rows(task_id, model, sfx, "witness_", witness, cell, seed,
                              "frozen external witness (efficientnet-lite0)")
        elif wwhy:
            rows.append(ScoreRow(task_id, model, f"witness_skipped{sfx}", math.nan, None, None, 0, None,
                                 f"witness probe: {wwhy}"))
    return rows
