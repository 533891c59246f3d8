"""Cross-task analyses of per-sample VSI (seed 002 §2.3-§4, appendices B.2, C.2, D.2): the
table-level analyses over :class:`~perceptbench.vsi.samples.VSISample` lists and
:func:`score_vsi_analyses`, which turns them into ``ScoreRow``s.  The statistics they use are
one formula each in :mod:`perceptbench.metrics.error_detection` (AUROC, PRR@80, ECE, Brier,
paired bootstrap difference) and :mod:`perceptbench.metrics.permutation` (permutation
Spearman), which pin their definitions.  numpy/scipy/scikit-learn only: no torch, so re-scoring
from records is light.

Pinned definitions of this module (docs/metrics.md, "VSI analyses", repeats them):

* **Positive class** = per-sample error (``correct is False``) on the *answer-parseable subset*
  (``correct is not None``); unparseable answers leave every accuracy-dependent analysis and are
  counted in ``n_null`` (seed 002 appendix A).
* **Ranking scores** (higher = predicted more likely wrong, seed 002 D.2): ``-VSI``,
  ``-max_prob``, ``-verbal_conf``.
* Confidences for calibration: ``max_prob``; ``verbal_conf / 100``; **normalised VSI**
  ``= 1 - exp(-VSI)``, a fixed monotone map of nats onto [0, 1) (no per-cell fitting, so CIs
  need no re-normalising; it orders samples as VSI does and is *not* a calibrated probability).
* **Quintiles**: samples sorted by (VSI, sample_id); sample at position i (0-based) of n is in
  quintile ``floor(5 i / n)``; bottom = 0, top = 4 (sizes differ by at most one).
* **Quadrants** in the bottom quintile: correct/wrong x high/low confidence, high = ``max_prob``
  above the median ``max_prob`` of the cell's parseable samples (seed 002 appendix A).
  Confidently-wrong enrichment = CW fraction in the bottom quintile / CW fraction in the top
  quintile (the matched top-VSI population: same cell, same size up to one).
* **Hybrid** (region + whole): ``h = (q(-VSI_region) + q(-VSI_whole)) / 2`` with ``q`` the
  average rank divided by n, over the samples that have both perturbations in the cell (seed 002
  §4).  Computed once per cell and then treated as a fixed score (bootstrap resamples samples).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from typing import Iterable, Sequence

import numpy as np

from ..core.rows import ScoreRow
from ..core.text import counted
from ..metrics.bootstrap import N_BOOT_B, BootstrapResult, IntervalBatch, bootstrap
from ..metrics.error_detection import (MIN_CLASS, auroc_draws, auroc_rows, average_rank_fraction, brier_rows,
                                       REJECT_FRACTION, class_check, ece_draws, paired_auroc_diff, prr_rows,
                                       quadrant_counts)
from ..metrics.error_structure import ratio_interval
from ..metrics.permutation import N_PERM, PERM_SEED, permutation_spearman_many, spearman_matrix
from ..scorers.pairs import ALL_PAIRS_MAX, check_pairs
from ..seeding import rng_for
from .cells import _cells, _suffix, model_pairs, neighbours_only_note, normalised_vsi, quintiles
from .samples import VSISample

SIGMAS = (10.0, 20.0, 40.0)
"""Blur strengths of the robustness analysis, pixels (seed 002 C.2)."""

DEFAULT_SIGMA = 20.0
"""Default blur strength, pixels (seed 002 §2)."""


def hybrid_score(vsi_region: np.ndarray, vsi_whole: np.ndarray) -> np.ndarray:
    """Region + whole hybrid ranking score (higher = more likely wrong):
    mean of the rank fractions of -VSI_region and -VSI_whole (seed 002 §4)."""
    return 0.5 * (average_rank_fraction(-np.asarray(vsi_region, float))
                  + average_rank_fraction(-np.asarray(vsi_whole, float)))


# ------------------------------------------------------------------ table analyses
def _join_ids(ids: Iterable[str]) -> str:
    return ",".join(sorted(set(ids)))


def _nan_row(task_id: str, model: str, metric: str, note: str, n: int = 0, n_null: int = 0) -> ScoreRow:
    return ScoreRow(task_id, model, metric, math.nan, None, None, n, n_null, note)


def _boot_row(task_id, model, metric, stat, n, n_null, seed, note="", why="", batch=None) -> ScoreRow:
    """Bootstrap row of a vectorised statistic over n samples, or a NaN row when ``why``.  With
    ``batch`` (:class:`~perceptbench.metrics.bootstrap.IntervalBatch`) the row gets its value now
    and its interval (ci_low, ci_high, n_draws, n_dropped, seed) when the batch is flushed."""
    if why:
        return _nan_row(task_id, model, metric, why, n, n_null)
    if batch is None:
        return ScoreRow.from_boot(task_id, model, metric, bootstrap(stat, n, seed=seed), n, n_null, note)

    def done(b):
        row.ci_low, row.ci_high, row.n_draws, row.n_dropped, row.seed = b.low, b.high, b.n_draws, b.n_dropped, b.seed

    estimate = batch.add(stat, n, done, seed=seed)
    row = ScoreRow.from_boot(task_id, model, metric, BootstrapResult(estimate, math.nan, math.nan, N_BOOT_B, 0, seed),
                             n, n_null, note)
    return row


def _prr_row(task_id, model, metric, error, score, n, n_null, seed, note, batch=None) -> ScoreRow:
    """PRR@80 row of ``error`` bool (n,) ranked by ``score`` (n,) (seed 002 D.2): NaN with "no
    errors" when there is no error (baseline risk 0); under 5 samples floor(0.2 n) = 0 are
    rejected, so the bootstrap row is NaN and its note says so."""
    row = _boot_row(task_id, model, metric, lambda idx: prr_rows(error[idx], score[idx]), n, n_null, seed, note,
                    "" if error.any() else "no errors (baseline risk 0)", batch)
    if error.any() and int(math.floor(REJECT_FRACTION * n + 1e-9)) == 0:
        row.note = (f"{counted(n, 'parseable sample')} < {math.ceil(1 / REJECT_FRACTION)}: rejecting the worst-ranked 20% "
                    "rejects floor(0.2 n) = 0 samples")
    return row


def signal_scores(cell: Sequence[VSISample]) -> dict[str, np.ndarray]:
    """Ranking scores (higher = more likely wrong) of a cell's samples: -VSI and -max_prob."""
    return {"vsi": -np.array([s.vsi for s in cell], float),
            "max_prob": -np.array([s.max_prob for s in cell], float)}


def cell_diagnostics(task_id: str, model: str, cell: Sequence[VSISample], seed: int,
                     batch: IntervalBatch | None = None) -> list[ScoreRow]:
    """Seed 002 §3, D.2, B.2 rows of one (task, model, perturbation, sigma) cell: AUROC and
    PRR@80 of -VSI, -max_prob, -verbal_conf; ECE/Brier of max_prob, normalised VSI and
    verbal_conf/100; quintile error rates and ratio; low-VSI quadrants and confidently-wrong
    enrichment; Pearson r(-VSI, -verbal_conf).  With ``batch`` the bootstrap rows' intervals
    are filled in when the caller flushes it (:func:`_boot_row`)."""
    pert, sigma = cell[0].perturbation, float(cell[0].sigma)
    sfx = _suffix(pert, sigma)
    parse = [s for s in cell if s.correct is not None]
    n, n_null = len(parse), len(cell) - len(parse)
    rows: list[ScoreRow] = []
    if n == 0:
        return [_nan_row(task_id, model, f"auroc_vsi{sfx}", "no parseable answer", 0, n_null)]
    err = np.array([not s.correct for s in parse])
    vsi = np.array([s.vsi for s in parse], float)
    mp = np.array([s.max_prob for s in parse], float)
    why = class_check(err)
    scores = {"vsi": -vsi, "max_prob": -mp}
    for name, sc in scores.items():
        rows.append(_boot_row(task_id, model, f"auroc_{name}{sfx}",
                              lambda idx, sc=sc: auroc_draws(err, sc, idx), n, n_null, seed,
                              "error = positive class", why, batch=batch))
        rows.append(_prr_row(task_id, model, f"prr80_{name}{sfx}", err, sc, n, n_null, seed,
                             "risk reduction rejecting the worst-ranked 20% / baseline risk", batch=batch))
    # verbalised confidence: its own subset (answers with a parsed integer)
    vs = [s for s in parse if s.verbal_conf is not None]
    nv, nv_null = len(vs), n_null + (n - len(vs))
    if nv:
        verr = np.array([not s.correct for s in vs])
        vc = np.array([s.verbal_conf for s in vs], float) / 100.0
        vvsi = np.array([s.vsi for s in vs], float)
        vwhy = class_check(verr)
        rows.append(_boot_row(task_id, model, f"auroc_verbal_conf{sfx}",
                              lambda idx: auroc_draws(verr, -vc, idx), nv, nv_null, seed,
                              "error = positive class", vwhy, batch=batch))
        rows.append(_prr_row(task_id, model, f"prr80_verbal_conf{sfx}", verr, -vc, nv, nv_null, seed, "", batch=batch))
        if np.any((vc < 0) | (vc > 1)):
            raise ValueError(f"{task_id} {model}: verbal_conf outside 0-100")
        rows.append(_boot_row(task_id, model, f"ece_verbal_conf{sfx}",
                              lambda idx: ece_draws(vc, ~verr, idx), nv, nv_null, seed, batch=batch))
        rows.append(_boot_row(task_id, model, f"brier_verbal_conf{sfx}",
                              lambda idx: brier_rows(vc[idx], ~verr[idx]), nv, nv_null, seed, batch=batch))
        pwhy = "" if nv >= MIN_CLASS else f"{counted(nv, 'sample')} with verbalised confidence < {MIN_CLASS}"

        def pearson(idx):
            a, b = -vvsi[idx], -vc[idx]
            a = a - a.mean(1, keepdims=True)
            b = b - b.mean(1, keepdims=True)
            den = np.sqrt((a * a).sum(1) * (b * b).sum(1))
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(den > 0, (a * b).sum(1) / den, np.nan)

        if not pwhy and not np.isfinite(pearson(np.arange(nv)[None])[0]):
            pwhy = "constant VSI or verbalised confidence"
        rows.append(_boot_row(task_id, model, f"pearson_neg_vsi_neg_verbal{sfx}", pearson, nv, nv_null, seed,
                              "Pearson r between -VSI and -verbalised confidence", pwhy, batch=batch))
    else:
        rows.append(_nan_row(task_id, model, f"auroc_verbal_conf{sfx}", "no verbalised confidence", 0, len(cell)))
    if np.any((mp < 0) | (mp > 1)):
        raise ValueError(f"{task_id} {model}: max_prob outside [0, 1]")
    nvsi = normalised_vsi(vsi)
    for name, conf in (("max_prob", mp), ("norm_vsi", nvsi)):
        rows.append(_boot_row(task_id, model, f"ece_{name}{sfx}",
                              lambda idx, c=conf: ece_draws(c, ~err, idx), n, n_null, seed,
                              "10 equal-width bins" + ("; confidence = 1 - exp(-VSI)" if name == "norm_vsi" else ""),
                              batch=batch))
        rows.append(_boot_row(task_id, model, f"brier_{name}{sfx}",
                              lambda idx, c=conf: brier_rows(c[idx], ~err[idx]), n, n_null, seed, batch=batch))
    # quintiles, quadrants (fixed membership; the CI resamples samples within each group)
    q = quintiles(vsi, [s.sample_id for s in parse])
    bottom, top = q == 0, q == 4
    qwhy = "" if n >= 5 * MIN_CLASS else f"{counted(n, 'parseable sample')} < {5 * MIN_CLASS} (5 per quintile)"
    eb, et = err[bottom], err[top]
    rows.append(_boot_row(task_id, model, f"error_rate_bottom_quintile{sfx}",
                          lambda idx: eb[idx].mean(1), int(bottom.sum()), n_null, seed, "", qwhy, batch=batch))
    rows.append(_boot_row(task_id, model, f"error_rate_top_quintile{sfx}",
                          lambda idx: et[idx].mean(1), int(top.sum()), n_null, seed, "", qwhy, batch=batch))
    high = mp > np.median(mp)
    cw = err & high
    cwb, cwt = cw[bottom], cw[top]
    nb, nt = int(bottom.sum()), int(top.sum())
    if qwhy:
        rows.append(_nan_row(task_id, model, f"error_rate_ratio{sfx}", qwhy, n, n_null))
        rows.append(_nan_row(task_id, model, f"cw_enrichment{sfx}", qwhy, n, n_null))
    else:
        rng = rng_for(seed, "quintile-bootstrap", nb, nt)
        ib = rng.integers(0, nb, (N_BOOT_B, nb))
        it = rng.integers(0, nt, (N_BOOT_B, nt))
        for metric, xb, xt, note in (
                ("error_rate_ratio", eb, et, "bottom- / top-quintile error rate"),
                ("cw_enrichment", cwb, cwt, "confidently-wrong fraction, bottom / top VSI quintile")):
            num, den = xb.mean(), xt.mean()
            if den == 0:
                rows.append(_nan_row(task_id, model, f"{metric}{sfx}", f"top-quintile rate is 0 ({note})", n, n_null))
                continue
            lo, hi, dropped = ratio_interval(xb, xt, ib, it)
            rows.append(ScoreRow(task_id, model, f"{metric}{sfx}", float(num / den), lo, hi, n, n_null,
                                 note + "; quintiles resampled separately", N_BOOT_B, dropped, seed))
    counts = quadrant_counts(~err[bottom], high[bottom])
    qnote = f"fraction of the bottom VSI quintile; high = max_prob > cell median {np.median(mp):.4g}"
    if not nb:
        qnote = "no sample in the bottom VSI quintile"
    elif qwhy:  # the quadrant fractions have no minimum count; the quintile error rates do
        qnote += (f"; from {nb} bottom-quintile sample(s): quadrant fractions are given from any count, while the "
                  f"quintile error rates need {5 * MIN_CLASS} parseable samples (docs/metrics.md, minimum counts)")
    for quad, c in counts.items():
        rows.append(ScoreRow(task_id, model, f"quadrant_{quad}_low_vsi{sfx}", c / nb if nb else math.nan,
                             None, None, nb, n_null, qnote))
    return rows


def _pairs_by_sample(a: Sequence[VSISample], b: Sequence[VSISample]) -> tuple[list[VSISample], list[VSISample]]:
    ib = {s.sample_id: s for s in b}
    shared = [s for s in a if s.sample_id in ib]
    return shared, [ib[s.sample_id] for s in shared]


def cross_model_rows(cells: dict[tuple, list[VSISample]], *, families: dict[str, str] | None,
                     n_perm: int, perm_seed: int, pairs: str = "auto") -> list[ScoreRow]:
    """Seed 002 §2.3, B.2: per (task, perturbation, sigma), Spearman rho of VSI for the model
    pairs ``pairs`` selects (:func:`~.cells.model_pairs`: every pair up to 20 models under
    ``auto``, the neighbours in the ranking by median VSI above) over shared samples with its
    permutation p; mean over *every* pair per task, and over every task per (perturbation,
    sigma); same- vs cross-family means when families are tagged.  Where only neighbours get
    per-pair rows, the means take every pair's rho from one rank-correlation matrix
    (:func:`~perceptbench.metrics.permutation.spearman_matrix`; no p-value) and the notes say so."""
    groups: dict[tuple, dict[str, list[VSISample]]] = defaultdict(dict)
    for (task_id, bench, model, pert, sigma), cell in cells.items():
        groups[(task_id, pert, sigma)][model] = cell
    fam = families or {}

    def family(by_model, m):
        return fam.get(m) or by_model[m][0].model_family

    jobs, meta = [], []
    everyone: dict[tuple, tuple] = {}  # groups compared by neighbours: every pair's rho (_every_pair_rho)
    for (task_id, pert, sigma), by_model in sorted(groups.items()):
        chosen, neighbours = model_pairs(by_model, pairs)
        for ma, mb in chosen:
            a, b = _pairs_by_sample(by_model[ma], by_model[mb])
            jobs.append((np.array([s.vsi for s in a]), np.array([s.vsi for s in b])))
            meta.append((task_id, pert, sigma, ma, mb, family(by_model, ma), family(by_model, mb),
                         len(by_model) if neighbours else 0))
        if neighbours:
            everyone[(task_id, pert, sigma)] = _every_pair_rho(by_model)
    res = permutation_spearman_many(jobs, n_perm=n_perm, seed=perm_seed)
    rows: list[ScoreRow] = []
    per_group: dict[tuple, list[tuple[float, bool]]] = defaultdict(list)
    for (task_id, pert, sigma, ma, mb, fa, fb, n_models), r in zip(meta, res):
        sfx = _suffix(pert, sigma)
        tail = "; " + neighbours_only_note(n_models) if n_models else ""
        note = r.note or f"two-sided permutation p = {r.p:.3g} ({r.n_perm} shuffles, seed {r.seed})"
        rows.append(ScoreRow(task_id, f"{ma}~{mb}", f"vsi_rho{sfx}", r.rho, None, None, r.n, None, note + tail))
        rows.append(ScoreRow(task_id, f"{ma}~{mb}", f"vsi_rho_p{sfx}", r.p, None, None, r.n, None,
                             (r.note or f"(count + 1) / ({r.n_perm} + 1), seed {r.seed}") + tail))
        if math.isfinite(r.rho) and not n_models:
            per_group[(task_id, pert, sigma)].append((r.rho, fa == fb))
    # per group: the finite rhos of its pairs and whether each pair is of one family, as arrays
    finite: dict[tuple, tuple[np.ndarray, np.ndarray]] = {
        key: (np.array([v for v, _ in vals], float), np.array([f for _, f in vals], bool))
        for key, vals in per_group.items()}
    for key, (names, i, j, rho) in everyone.items():
        fams = np.array([family(groups[key], m) for m in names], object)  # once per model, not per pair
        ok = np.isfinite(rho)
        finite[key] = (rho[ok], (fams[i] == fams[j])[ok].astype(bool))
    pooled: dict[tuple, list[tuple[np.ndarray, np.ndarray]]] = defaultdict(list)
    for key in sorted(finite):  # groups in order, each group's pairs in combinations order
        if finite[key][0].size:
            pooled[key].append(finite[key])
            pooled[("*",) + key[1:]].append(finite[key])
    fams_tagged = len({family(by_model, m) for by_model in groups.values() if len(by_model) > 1
                       for m in by_model}) > 1
    for (task_id, pert, sigma), parts in sorted(pooled.items(), key=lambda kv: (kv[0][0] == "*", kv[0])):
        sfx = _suffix(pert, sigma)
        tid = task_id if task_id != "*" else _join_ids(t for t, p, s in groups if p == pert and s == sigma)
        rho = np.concatenate([r for r, _ in parts])
        same = np.concatenate([f for _, f in parts])
        grand = task_id == "*"
        scope = "grand mean over every pair of every task" if grand else "mean over model pairs"
        matrix = [k for k in everyone if k[1:] == (pert, sigma)] if grand else \
            [k for k in everyone if k == (task_id, pert, sigma)]
        if matrix and grand:
            scope += (f"; tasks of more than {ALL_PAIRS_MAX} models: every pair's rho from their rank-correlation "
                      "matrix (per-pair rows only for the ranking neighbours; score --pairs all gives every pair's)")
        elif matrix:
            scope += (f"; all {rho.size} pairs, each rho from one rank-correlation matrix (no p-value): more than "
                      f"{ALL_PAIRS_MAX} models, so per-pair rows only for the ranking neighbours (score --pairs all "
                      "gives every pair's)")
        stem = "vsi_rho_grand_mean" if grand else "vsi_rho_mean"
        rows.append(ScoreRow(tid, "all-pairs", f"{stem}{sfx}", float(rho.mean()), None, None, rho.size,
                             None, scope))
        for label, mask in (("same_family", same), ("cross_family", ~same)):
            metric = f"{stem}_{label}{sfx}"
            if not fams_tagged:
                rows.append(_nan_row(tid, "all-pairs", metric, "model families not tagged (one family)", 0))
            elif not mask.any():
                rows.append(_nan_row(tid, "all-pairs", metric, f"no {label.replace('_', '-')} pair", 0))
            else:
                rows.append(ScoreRow(tid, "all-pairs", metric, float(rho[mask].mean()), None, None,
                                     int(mask.sum()), None, scope))
    return rows


def _every_pair_rho(by_model: dict[str, list[VSISample]]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Spearman rho of VSI over their shared samples for every model pair of ``by_model``
    ({model: cell}): (names, i, j, rho), ``names`` the models sorted, pair k = (names[i[k]],
    names[j[k]]) with i[k] < j[k] (int (P,)) in :func:`itertools.combinations` order, ``rho``
    float64 (P,) (NaN for fewer than 3 shared samples or a constant VSI).  Models with the same
    samples (the usual case): one ranking per model and one matrix product
    (:func:`~perceptbench.metrics.permutation.spearman_matrix`); otherwise each pair is ranked
    on its own shared samples."""
    names = sorted(by_model)
    ids = [s.sample_id for s in by_model[names[0]]]
    i, j = np.triu_indices(len(names), 1)  # row by row: combinations order
    if all([s.sample_id for s in by_model[m]] == ids for m in names):
        rho = spearman_matrix(np.array([[s.vsi for s in by_model[m]] for m in names], float))
        return names, i, j, rho[i, j]
    out = []
    for ma, mb in combinations(names, 2):
        a, b = _pairs_by_sample(by_model[ma], by_model[mb])
        r = spearman_matrix(np.array([[s.vsi for s in a], [s.vsi for s in b]], float).reshape(2, len(a)))
        out.append(float(r[0, 1]))
    return names, i, j, np.array(out, float)


def _perturbation_groups(cells: dict[tuple, list[VSISample]]) -> list[tuple[str, str, float, dict[str, list[VSISample]]]]:
    """Cells grouped for region/whole pairing: (benchmark, model, sigma, {perturbation: cell}).
    One task normally holds both perturbations (``perturbation=both``); when region and whole
    cells of one (benchmark, model, sigma) come from several tasks they are paired only if each
    perturbation appears once, else each task stays its own group."""
    by: dict[tuple, list[tuple]] = defaultdict(list)
    for (task_id, bench, model, pert, sigma), cell in cells.items():
        by[(bench, model, sigma)].append((task_id, pert, cell))
    out = []
    for (bench, model, sigma), members in sorted(by.items()):
        perts = [p for _, p, _ in members]
        if len(perts) == len(set(perts)):
            out.append((bench, model, sigma, {p: c for _, p, c in members}))
        else:
            per_task: dict[str, dict] = defaultdict(dict)
            for t, p, c in members:
                per_task[t][p] = c
            out += [(bench, model, sigma, d) for _, d in sorted(per_task.items())]
    return out


def perturbation_and_sigma_rows(cells: dict[tuple, list[VSISample]], *, n_perm: int,
                                perm_seed: int) -> list[ScoreRow]:
    """Seed 002 C.2: region-vs-whole Spearman rho per (benchmark, model, sigma) and
    cross-sigma rho per (benchmark, model, perturbation) for every pair of sigmas present."""
    by: dict[tuple, dict[tuple, list[VSISample]]] = defaultdict(dict)
    for (task_id, bench, model, pert, sigma), cell in cells.items():
        by[(bench, model)][(pert, sigma)] = cell
    jobs, meta = [], []
    for bench, model, sigma, d in _perturbation_groups(cells):
        if "region" in d and "whole" in d:
            a, b = _pairs_by_sample(d["region"], d["whole"])
            meta.append((_join_ids([d["region"][0].task_id, d["whole"][0].task_id]), model,
                         f"rho_region_whole{_suffix(None, sigma)}"))
            jobs.append((np.array([s.vsi for s in a]), np.array([s.vsi for s in b])))
    for (bench, model), d in sorted(by.items()):
        for pert in sorted({p for p, _ in d}):
            sig = sorted(s for p, s in d if p == pert)
            for s1, s2 in combinations(sig, 2):
                a, b = _pairs_by_sample(d[(pert, s1)], d[(pert, s2)])
                meta.append((_join_ids([d[(pert, s1)][0].task_id, d[(pert, s2)][0].task_id]), model,
                             f"rho_sigma[{pert},{s1:g}~{s2:g}]"))
                jobs.append((np.array([s.vsi for s in a]), np.array([s.vsi for s in b])))
    res = permutation_spearman_many(jobs, n_perm=n_perm, seed=perm_seed)
    return [ScoreRow(tid, model, metric, r.rho, None, None, r.n, None,
                     r.note or f"Spearman; permutation p = {r.p:.3g} ({r.n_perm} shuffles, seed {r.seed})")
            for (tid, model, metric), r in zip(meta, res)]


SIGNALS = ("max_prob", "vsi", "hybrid")
"""Candidates of the signal table (seed 002 §4): softmax max-probability, VSI alone (region VSI
where the cell has it, else whole-image VSI) and the region + whole hybrid."""


@dataclass
class SignalCell:
    """One line of the signal table: AUROCs of the candidates, the winner and its margin over
    the runner-up with the paired-bootstrap CI."""

    task_id: str
    benchmark: str
    model: str
    sigma: float
    n: int
    n_null: int
    auroc: dict[str, float] = field(default_factory=dict)
    winner: str = ""
    runner_up: str = ""
    margin: float = math.nan
    low: float = math.nan
    high: float = math.nan
    p: float = math.nan
    note: str = ""


def signal_cells(cells: dict[tuple, list[VSISample]], seed: int) -> tuple[list[SignalCell], list[ScoreRow]]:
    """Seed 002 §4: per (benchmark, model, sigma), AUROC of -max_prob, -VSI and the hybrid on
    the parseable samples shared by the region and whole cells (region alone / whole alone when
    only one exists: no hybrid), the winner, its margin over the runner-up (paired bootstrap,
    1000 draws) and the hybrid - max_prob paired difference with its p-value."""
    out: list[SignalCell] = []
    rows: list[ScoreRow] = []
    for bench, model, sigma, d in _perturbation_groups(cells):
        sfx = _suffix(None, sigma)
        base = d.get("region") or d.get("whole") or next(iter(d.values()))
        tid = _join_ids(c[0].task_id for c in d.values())
        if "region" in d and "whole" in d:
            a, b = _pairs_by_sample(d["region"], d["whole"])
        else:
            a, b = list(base), None
        keep = [i for i, s in enumerate(a) if s.correct is not None]
        n_null = len(a) - len(keep)
        a = [a[i] for i in keep]
        b = [b[i] for i in keep] if b is not None else None
        sc = SignalCell(tid, bench, model, sigma, len(a), n_null)
        err = np.array([not s.correct for s in a], bool)
        scores = {"max_prob": -np.array([s.max_prob for s in a], float),
                  "vsi": -np.array([s.vsi for s in a], float)}
        if b is not None:
            scores["hybrid"] = hybrid_score([s.vsi for s in a], [s.vsi for s in b])
        why = class_check(err)
        if why:
            sc.note = why
            out.append(sc)
            rows.append(_nan_row(tid, model, f"signal_margin{sfx}", why, len(a), n_null))
            rows.append(_nan_row(tid, model, f"auroc_hybrid{sfx}", why if "hybrid" in scores else
                                 "cell lacks region or whole VSI", len(a), n_null))
            continue
        for k, v in scores.items():
            sc.auroc[k] = float(auroc_rows(err, v)[0])
            if k == "hybrid":
                rows.append(_boot_row(tid, model, f"auroc_hybrid{sfx}",
                                      lambda idx, v=v: auroc_draws(err, v, idx), len(a), n_null, seed,
                                      "mean rank fraction of -VSI_region and -VSI_whole"))
        if "hybrid" not in scores:
            rows.append(_nan_row(tid, model, f"auroc_hybrid{sfx}", "cell lacks region or whole VSI", len(a), n_null))
        else:
            pd = paired_auroc_diff(err, scores["hybrid"], scores["max_prob"], seed=seed)
            rows.append(ScoreRow(tid, model, f"auroc_diff_hybrid_max_prob{sfx}", pd.diff, pd.low, pd.high, len(a),
                                 n_null, pd.note or f"paired bootstrap; two-sided p = {pd.p:.3g}", pd.n_draws,
                                 pd.n_dropped, pd.seed))
            rows.append(ScoreRow(tid, model, f"auroc_diff_hybrid_max_prob_p{sfx}", pd.p, None, None, len(a), n_null,
                                 pd.note or "two-sided paired-bootstrap p-value", pd.n_draws, pd.n_dropped, pd.seed))
        ranked = sorted(sc.auroc, key=lambda k: (-sc.auroc[k], SIGNALS.index(k)))
        sc.winner = ranked[0]
        for k in SIGNALS:
            if k in sc.auroc:
                rows.append(ScoreRow(tid, model, f"signal_auroc[{k},sigma={sigma:g}]", sc.auroc[k], None, None,
                                     len(a), n_null, "winner" if k == sc.winner else ""))
        if len(ranked) > 1:
            sc.runner_up = ranked[1]
            pd = paired_auroc_diff(err, scores[sc.winner], scores[sc.runner_up], seed=seed)
            sc.margin, sc.low, sc.high, sc.p = pd.diff, pd.low, pd.high, pd.p
            rows.append(ScoreRow(tid, model, f"signal_margin{sfx}", pd.diff, pd.low, pd.high, len(a), n_null,
                                 f"winner={sc.winner}; runner_up={sc.runner_up}; paired-bootstrap p = {pd.p:.3g}",
                                 pd.n_draws, pd.n_dropped, pd.seed))
        out.append(sc)
    return out, rows


def score_vsi_analyses(samples: Sequence[VSISample], *, seed: int = 0, families: dict[str, str] | None = None,
                       n_perm: int = N_PERM, perm_seed: int = PERM_SEED, probe=None,
                       pairs: str = "auto") -> list[ScoreRow]:
    """Every VSI analysis row of seed 002 §2.3-§4 from per-sample VSI (records only).

    ``samples``: the output of ``vsi_samples(records)``; ``seed``: bootstrap seed;
    ``families``: optional {model: family} overriding ``VSISample.model_family``;
    ``n_perm``/``perm_seed``: permutation null (default 10^5, 42, seed 002 D.1);
    ``probe``: optional :class:`perceptbench.vsi.features.ProbeFeatures` store whose
    encoder-LLM gap rows are appended (seed 002 §2.4), then the pooled and threshold rows of
    :mod:`perceptbench.vsi.pooled` (seed 002 §3, §4, B.2, C.2); ``pairs``: which model pairs
    get per-pair rows (cross-model rho and joint-quintile error structure;
    :data:`perceptbench.scorers.pairs.PAIR_MODES`, :func:`~.cells.model_pairs`: default every
    pair up to 20 models of a task and condition, the ranking neighbours above).  Raises
    ValueError for a sample id that appears twice in one cell or an unknown ``pairs``."""
    check_pairs(pairs)
    cells = _cells(samples)
    rows: list[ScoreRow] = []
    batch = IntervalBatch()  # the cells' bootstrap intervals, taken a batch of statistics at a time
    for key in sorted(cells):
        rows += cell_diagnostics(key[0], key[2], cells[key], seed, batch)
    batch.flush()
    rows += cross_model_rows(cells, families=families, n_perm=n_perm, perm_seed=perm_seed, pairs=pairs)
    rows += perturbation_and_sigma_rows(cells, n_perm=n_perm, perm_seed=perm_seed)
    table, signal_rows = signal_cells(cells, seed)
    rows += signal_rows
    if probe is not None:
        from .probe import probe_rows

        rows += probe_rows(samples, probe, seed=seed)
    from .pooled import pooled_rows

    return rows + pooled_rows(cells, table, SIGNALS, seed, pairs)  # after every earlier row: those keep their order


def signal_table_from_rows(rows: Sequence[ScoreRow]) -> list[dict]:
    """The signal table read back from score rows (``signal_auroc[...]`` and
    ``signal_margin[...]``): one dict per (task_id, model, sigma) with keys task_id, model,
    sigma, auroc {signal: value}, winner, runner_up, margin, low, high, note."""
    table: dict[tuple, dict] = {}
    for r in rows:
        if r.metric.startswith("signal_auroc["):
            sig, s = r.metric[len("signal_auroc["):-1].split(",sigma=")
            t = table.setdefault((r.task_id, r.model, s), {"task_id": r.task_id, "model": r.model, "sigma": s,
                                                             "auroc": {}, "winner": "", "runner_up": "",
                                                             "margin": math.nan, "low": None, "high": None,
                                                             "note": ""})
            t["auroc"][sig] = r.value
            if r.note == "winner":
                t["winner"] = sig
        elif r.metric.startswith("signal_margin[sigma="):
            s = r.metric[len("signal_margin[sigma="):-1]
            t = table.setdefault((r.task_id, r.model, s), {"task_id": r.task_id, "model": r.model, "sigma": s,
                                                             "auroc": {}, "winner": "", "runner_up": "",
                                                             "margin": math.nan, "low": None, "high": None,
                                                             "note": ""})
            t["margin"], t["low"], t["high"] = r.value, r.ci_low, r.ci_high
            if "runner_up=" in r.note:
                t["runner_up"] = r.note.split("runner_up=")[1].split(";")[0]
            elif not math.isfinite(r.value):
                t["note"] = r.note
    return [table[k] for k in sorted(table)]
