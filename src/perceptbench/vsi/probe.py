"""The encoder-LLM gap rows (seed 002 §2.4, appendix A).

A linear probe on a model's own vision-tower features (clean vs perturbed view of each
image) against the same model's argmax-change rate, on the same samples:

* features: final-layer vision-tower output, mean-pooled, L2-normalised
  (:meth:`perceptbench.models.vlm_hf.HFVLM.vision_features`); the frozen witness is image-only and
  shared by all models: a CLIP model when one was in the local hub cache at run time (the seed's
  choice), else the embedded efficientnet-lite0 (:func:`perceptbench.vsi.features.default_witness`);
  the witness rows' notes name the one used (and its version);
* probe: :func:`perceptbench.metrics.probe.probe_oof_correct` (``StandardScaler`` +
  ``LogisticRegression(C=1.0)``, ``GroupKFold(5)`` by ``image_id``), per-sample probe accuracy
  = mean correctness of its two views' out-of-fold predictions;
* subsets: low-VSI = ``VSI < 0.05``; the size-matched high-VSI control = a seeded random subset,
  of size min(n_low, n_top), of the top VSI quintile samples not in the low subset; the
  *shared* low-VSI subset (seed 002 appendix A, "on the shared low-VSI subset ... the same 83
  images support both"): the samples with VSI < 0.05 under every model that has VSI samples in
  the (task, perturbation, sigma) group, so every model's gap is read on the same samples
  (:func:`shared_low_ids`; rows ``*_shared_low_vsi``, beside the per-model ``*_low_vsi``);
* gap = probe accuracy - argmax-change rate on the same subset; 95% CIs from a bootstrap over
  images (:func:`perceptbench.metrics.probe.gap_on_subset`).

Features: read from the feature store (:class:`perceptbench.vsi.features.ProbeFeatures`,
numpy only), written at run time by :func:`perceptbench.vsi.features.cache_probe_features`.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..core.rows import ScoreRow
from ..core.text import counted
from ..metrics.bootstrap import N_BOOT_B
from ..metrics.probe import N_FOLDS, gap_on_subset, probe_oof_correct
from ..seeding import rng_for
from .cells import LOW_VSI, _cells, _suffix, quintiles
from .features import WITNESS, ProbeFeatures, store_key
from .samples import VSISample


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


_SUBSETS = ("low_vsi", "high_vsi")


def _names(prefix: str) -> list[str]:
    return [f"{prefix}probe_acc", f"{prefix}argmax_change", f"{prefix}gap"]


def shared_low_ids(samples: Sequence[VSISample]) -> dict[tuple, set[str]]:
    """Per (task_id, perturbation, sigma): the sample ids with VSI < :data:`~.cells.LOW_VSI`
    under every model that has VSI samples there (a sample a model lacks is not shared).  Seed 002
    appendix A: the encoder-LLM gap read on one low-VSI subset shared across models."""
    low: dict[tuple, dict[str, set[str]]] = {}
    for s in samples:
        by_model = low.setdefault((s.task_id, s.perturbation, float(s.sigma)), {})
        ids = by_model.setdefault(s.model, set())
        if s.vsi < LOW_VSI:
            ids.add(s.sample_id)
    return {k: set.intersection(*v.values()) for k, v in low.items()}


_SHARED = "shared_low_vsi"


def _absent_rows(task_id: str, model: str, sfx: str, prefix: str, store: ProbeFeatures, key: str,
                 n: int) -> tuple[list[ScoreRow], list[ScoreRow]]:
    """Every row of :func:`_gap_rows` (and its shared rows) as undefined (NaN, n = 0, all ``n`` samples missing), the
    note naming the feature file it needs: a records file scored without its ``features/``."""
    why = (f"needs {store.path(key)}, the probe features `perceptbench run` writes in features/ beside "
           "records.jsonl; this records file was scored without that folder (score the run directory, or copy "
           "features/ with it)")
    return [ScoreRow(task_id, model, f"{prefix}probe_acc_all{sfx}", math.nan, None, None, 0, n, why)] + [
        ScoreRow(task_id, model, f"{nm}_{sub}{sfx}", math.nan, None, None, 0, n, why)
        for nm in _names(prefix) for sub in _SUBSETS], [
        ScoreRow(task_id, model, f"{nm}_{_SHARED}{sfx}", math.nan, None, None, 0, n, why) for nm in _names(prefix)]


def _gap_rows(task_id, model, sfx, prefix, feats, cell, seed, note,
              shared: set[str]) -> tuple[list[ScoreRow], list[ScoreRow]]:
    """(rows, shared rows): the gap rows of one cell on the full, low-VSI and control subsets,
    and on the ``shared`` low-VSI sample ids (:func:`shared_low_ids`), which come after every
    other probe row (added later, so the rows before them keep their order)."""
    keyed = [(s, feats.get((s.sample_id, s.perturbation, float(s.sigma)))) for s in cell]
    have = [(s, f) for s, f in keyed if f is not None]
    missing = len(cell) - len(have)
    names = _names(prefix)
    subsets_ = _SUBSETS

    def nan_rows(why, subs=subsets_):
        return [ScoreRow(task_id, model, f"{nm}_{sub}{sfx}", math.nan, None, None, len(have), missing, why)
                for nm in names for sub in subs]

    if len(have) < 2 * N_FOLDS:
        why = f"features for {len(have)} samples (< {2 * N_FOLDS}); {missing} missing"
        return nan_rows(why), nan_rows(why, (_SHARED,))
    ss = [s for s, _ in have]
    image_ids = np.array([s.image_id for s in ss])
    try:
        ok, folds = probe_oof_correct(np.stack([f[1] for _, f in have]), np.stack([f[2] for _, f in have]), image_ids)
    except ValueError as e:
        return nan_rows(str(e)), nan_rows(str(e), (_SHARED,))
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
                                 f"{note}; {what}; {counted(g.n_images, 'image')}; CI over images", N_BOOT_B, 0, seed))
    mask = np.isin([s.sample_id for s in ss], sorted(shared))
    if not mask.any():
        why = (f"no sample with VSI < {LOW_VSI:g} under every model of the task ({len(shared)} shared, "
               "none with features here)")
        return rows, [ScoreRow(task_id, model, f"{nm}_{_SHARED}{sfx}", math.nan, None, None, 0, missing, why)
                      for nm in names]
    g = gap_on_subset(ok, changed, image_ids, mask, seed)
    extra = [ScoreRow(task_id, model, f"{nm}_{_SHARED}{sfx}", v, lo, hi, g.n_samples, missing,
                      f"{note}; VSI < {LOW_VSI:g} under every model of the task ({len(shared)} samples shared); "
                      f"{counted(g.n_images, 'image')}; CI over images", N_BOOT_B, 0, seed)
             for nm, (v, lo, hi) in zip(names, (g.probe_acc, g.argmax_change, g.gap))]
    return rows, extra


def _witness_note(store: ProbeFeatures, wkey: str, task_id: str) -> str:
    """``frozen external witness (NAME)``, plus its version when it is not the embedded default."""
    name = wkey[len("witness:"):-len("@" + task_id)]
    version = store.meta(wkey).get("model_version", "")
    return f"frozen external witness ({name})" if wkey == store_key(WITNESS, task_id) or not version else \
        f"frozen external witness ({name}, {version})"


def probe_rows(samples: Sequence[VSISample], store: ProbeFeatures, *, seed: int = 0) -> list[ScoreRow]:
    """Encoder-LLM gap rows (own tower, and the external witness where cached) for every
    (task, model, perturbation, sigma) cell of ``samples``; a ``skipped`` row (note: why) for
    a model whose features were not extractable or are not in the store, ``witness_skipped``
    when the witness could not run.  When the store's folder does not exist (a records file
    scored on its own), every probe row (own tower and witness) is written as undefined with a
    note naming the feature file it needs."""
    rows: list[ScoreRow] = []
    extra: list[ScoreRow] = []  # the shared-subset rows, after every other probe row
    shared = shared_low_ids(samples)
    for (task_id, bench, model, pert, sigma), cell in sorted(_cells(samples).items()):
        sfx = _suffix(pert, sigma)
        common = shared.get((task_id, pert, float(sigma)), set())
        if not store.present:
            for prefix, who in (("", model), ("witness_", WITNESS)):
                a, b = _absent_rows(task_id, model, sfx, prefix, store, store_key(who, task_id), len(cell))
                rows += a
                extra += b
            continue
        wkey = store.witness_key(task_id) or store_key(WITNESS, task_id)
        witness = store.get(wkey)
        why = store.skipped(store_key(model, task_id))
        if why:
            rows.append(ScoreRow(task_id, model, f"skipped{sfx}", math.nan, None, None, 0, None,
                                 f"encoder-LLM probe: {why}"))
        else:
            feats = store.get(store_key(model, task_id))
            if feats is not None:
                a, b = _gap_rows(task_id, model, sfx, "", feats, cell, seed, "own vision tower", common)
                rows += a
                extra += b
            else:
                rows.append(ScoreRow(task_id, model, f"skipped{sfx}", math.nan, None, None, 0, None,
                                     f"encoder-LLM probe: no cached features for {model} on {task_id} in "
                                     f"{store.directory} (rerun `perceptbench run` to extract them)"))
        wwhy = store.skipped(wkey)
        if witness is not None:
            a, b = _gap_rows(task_id, model, sfx, "witness_", witness, cell, seed,
                             _witness_note(store, wkey, task_id), common)
            rows += a
            extra += b
        elif wwhy:
            rows.append(ScoreRow(task_id, model, f"witness_skipped{sfx}", math.nan, None, None, 0, None,
                                 f"witness probe: {wwhy}"))
    return rows + extra
