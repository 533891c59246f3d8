"""Seed 002's pooled and threshold analyses of per-sample VSI (§3, §4, appendices A, B.2, C.2),
from records alone: the rows that read several cells together, or a cell at a VSI threshold.
The statistics are :mod:`perceptbench.metrics.error_structure` (one formula each); this module
only groups VSI samples into what they are computed over.  Pinned definitions (docs/metrics.md,
"VSI pooled and threshold analyses", repeats them):

* **Cell**, **answer-parseable subset**, **error**, **quintiles** and **high confidence**
  (``max_prob`` above the median ``max_prob`` of the cell's parseable samples) as in
  :mod:`perceptbench.vsi.analysis`.  A cell takes part in the quintile rows here with >= 25
  parseable samples (5 per quintile), the rule of ``error_rate_ratio``.
* **Joint-quintile error structure** (B.2): for a model pair (A, B) of one (task, perturbation,
  sigma), the samples both answered parseably; each model's VSI quintile *within those shared
  samples*; per joint cell (q_A, q_B) the share of samples on which both models are wrong.
* **Pooled error-rate ratio** (§3): bottom- over top-quintile error rate, the errors and
  samples of each quintile summed over the cells pooled (quintiles are each cell's own):
  over the benchmarks of one model, over the models of one benchmark, and over every cell;
  beside it the mean of the per-model ratios of a benchmark (the seed's "six-model averages").
* **Threshold confidently-wrong enrichment** (§3, the seed's definition): the confidently-wrong
  (CW: wrong and high confidence) share among the samples with VSI < t (t = 0.05, 0.01) over
  the CW share in the size-matched top-VSI population (the ``#{VSI < t}`` samples with the
  highest VSI outside the subset, fewer when the rest is smaller; ties by sample id), per cell
  and pooled over a benchmark's models.  ``cw_enrichment[...]`` (bottom over top quintile) is
  the quintile variant, kept.
* **Win tally** (§4): per sigma, how many signal-table cells each signal wins.
* **sigma AUROC swing** (C.2): per (benchmark, model, perturbation), max - min of the AUROC of
  -VSI over the sigmas scored; the largest such swing; and the AUROC range across cells at one
  sigma.
* **Reliability diagrams** (B.2): 10 equal-width confidence bins per cell and signal.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Sequence

import numpy as np

from ..core.rows import ScoreRow
from ..core.text import counted
from ..metrics.bootstrap import N_BOOT_B
from ..metrics.error_detection import MIN_CLASS, N_BINS, auroc
from ..metrics.error_structure import (enrichment, joint_grid, pooled_ratio, pooled_ratio_interval, ratio_interval,
                                       reliability_bins, size_matched_top, swing)
from ..seeding import rng_for
from .cells import INSENSITIVE_THRESHOLDS, _suffix, model_pairs, neighbours_only_note, normalised_vsi, quintiles
from .samples import VSISample

MIN_QUINTILE_N = 5 * MIN_CLASS
"""Parseable samples a cell needs for the quintile rows (5 per quintile; as ``error_rate_ratio``)."""

THIN_BIN = MIN_CLASS
"""A reliability bin with fewer samples than this is thin evidence (drawn hollow, its count beside it)."""

ALL = "all-models"


def _join(ids) -> str:
    return ",".join(sorted(set(ids)))


def _nan(task_id: str, model: str, metric: str, why: str, n: int = 0, n_null: int | None = None) -> ScoreRow:
    return ScoreRow(task_id, model, metric, math.nan, None, None, n, n_null, why)


def _parsed(cell: Sequence[VSISample]):
    """(parseable samples, error bool (n,), VSI (n,), max_prob (n,), n_null) of a cell."""
    p = [s for s in cell if s.correct is not None]
    return (p, np.array([not s.correct for s in p], bool), np.array([s.vsi for s in p], float),
            np.array([s.max_prob for s in p], float), len(cell) - len(p))


def _confidently_wrong(err: np.ndarray, mp: np.ndarray) -> np.ndarray:
    """Wrong and high confidence: ``max_prob`` above the cell's median (seed 002 appendix A)."""
    return err & (mp > np.median(mp)) if mp.size else err


# ------------------------------------------------------------------ per cell
def threshold_enrichment(cell: Sequence[VSISample], t: float, seed: int | None = None) -> dict:
    """Counts of the threshold CW enrichment of one cell (seed 002 §3): ``n_low`` samples with
    VSI < t and ``cw_low`` of them confidently wrong, ``n_ref``/``cw_ref`` in the size-matched
    top-VSI population (:func:`~perceptbench.metrics.error_structure.size_matched_top`), the
    ``value`` (:func:`~perceptbench.metrics.error_structure.enrichment`), ``n``/``n_null``; with
    ``seed``, ``ci`` = (low, high, draws dropped) of a percentile bootstrap resampling the two
    populations separately (1,000 draws, ``rng_for(seed, "threshold-bootstrap", n_low, n_ref)``;
    :func:`~perceptbench.metrics.error_structure.ratio_interval`)."""
    p, err, vsi, mp, n_null = _parsed(cell)
    low = vsi < t
    ref = size_matched_top(vsi, low, [s.sample_id for s in p])
    cw = _confidently_wrong(err, mp)
    out = {"n_low": int(low.sum()), "cw_low": int(cw[low].sum()), "n_ref": int(ref.sum()),
           "cw_ref": int(cw[ref].sum()), "value": enrichment(cw, low, ref), "n": len(p), "n_null": n_null,
           "a": cw[low], "b": cw[ref]}
    if seed is not None and out["n_low"] and out["n_ref"]:
        rng = rng_for(seed, "threshold-bootstrap", out["n_low"], out["n_ref"])
        il = rng.integers(0, out["n_low"], (N_BOOT_B, out["n_low"]))
        ir = rng.integers(0, out["n_ref"], (N_BOOT_B, out["n_ref"]))
        out["ci"] = ratio_interval(cw[low], cw[ref], il, ir) + (seed,)
    return out


def _enrichment_row(task_id: str, model: str, metric: str, c: dict, t: float) -> ScoreRow:
    what = (f"confidently-wrong share at VSI < {t:g} ({c['cw_low']}/{c['n_low']}) over the size-matched top-VSI "
            f"population ({c['cw_ref']}/{c['n_ref']}); high confidence = max_prob above the cell median")
    if not c["n_low"]:
        why = f"no parseable sample with VSI < {t:g}"
    elif not c["n_ref"]:
        why = f"every parseable sample has VSI < {t:g} (no top-VSI population)"
    elif not c["cw_ref"]:
        why = f"no confidently-wrong sample in the top-VSI population ({what})"
    else:
        if "ci" in c:
            lo, hi, dropped, seed = c["ci"]
            return ScoreRow(task_id, model, metric, c["value"], lo, hi, c["n_low"], c.get("n_null"),
                            what + "; the two populations resampled separately", N_BOOT_B, dropped, seed)
        return ScoreRow(task_id, model, metric, c["value"], None, None, c["n_low"], c.get("n_null"), what)
    return ScoreRow(task_id, model, metric, math.nan, None, None, c["n_low"], c.get("n_null"), why)


def reliability_row(task_id: str, model: str, metric: str, conf: np.ndarray, correct: np.ndarray,
                    n_null: int, what: str) -> ScoreRow:
    """``reliability_{signal}[...]``: value = n; note = JSON ``{"edges", "count", "mean_conf",
    "accuracy", "thin_below", "confidence"}`` of the 10-bin reliability diagram (seed 002 B.2),
    null for an empty bin's means."""
    rel = reliability_bins(conf, correct, N_BINS)

    def clean(xs):
        return [None if not math.isfinite(x) else round(x, 6) for x in xs]

    note = json.dumps({"edges": list(rel.edges), "count": list(rel.count), "mean_conf": clean(rel.mean_conf),
                       "accuracy": clean(rel.accuracy), "thin_below": THIN_BIN, "confidence": what})
    return ScoreRow(task_id, model, metric, float(len(conf)), None, None, len(conf), n_null, note)


def cell_rows(task_id: str, model: str, cell: Sequence[VSISample], seed: int,
              found: dict | None = None) -> list[ScoreRow]:
    """The per-cell rows: ``cw_enrichment@{0.05,0.01}[...]`` and
    ``reliability_{max_prob,norm_vsi,verbal_conf}[...]`` (seed 002 §3, B.2); ``found``: a dict
    that keeps each threshold's :func:`threshold_enrichment` under ``(id(cell), t)``."""
    sfx = _suffix(cell[0].perturbation, float(cell[0].sigma))
    p, err, vsi, mp, n_null = _parsed(cell)
    rows = []
    for t in INSENSITIVE_THRESHOLDS:
        c = threshold_enrichment(cell, t, seed)
        if found is not None:
            found[(id(cell), t)] = c
        rows.append(_enrichment_row(task_id, model, f"cw_enrichment@{t:g}{sfx}", c, t))
    if not p:
        return rows + [_nan(task_id, model, f"reliability_{k}{sfx}", "no parseable answers (all null)", 0, n_null)
                       for k in ("max_prob", "norm_vsi", "verbal_conf")]
    rows.append(reliability_row(task_id, model, f"reliability_max_prob{sfx}", mp, ~err, n_null,
                                "max_prob (first answer token)"))
    rows.append(reliability_row(task_id, model, f"reliability_norm_vsi{sfx}", normalised_vsi(vsi), ~err, n_null,
                                "1 - exp(-VSI)"))
    vs = [(s.verbal_conf, s.correct) for s in p if s.verbal_conf is not None]
    if vs:
        rows.append(reliability_row(task_id, model, f"reliability_verbal_conf{sfx}",
                                    np.array([v for v, _ in vs]) / 100.0, np.array([c for _, c in vs], bool),
                                    n_null + len(p) - len(vs), "verbal_conf / 100"))
    else:
        rows.append(_nan(task_id, model, f"reliability_verbal_conf{sfx}", "no verbalised confidence", 0, len(cell)))
    return rows


# ------------------------------------------------------------------ model pairs
def joint_quintile_rows(cells: dict[tuple, list[VSISample]], pairs: str = "auto") -> list[ScoreRow]:
    """Seed 002 B.2, joint error structure: per (task, perturbation, sigma) and model pair A~B
    that ``pairs`` selects (:func:`~.cells.model_pairs`: every pair up to 20 models under
    ``auto``, the neighbours in the ranking by median VSI above, their notes saying so), over the samples both answered parseably, each model's VSI quintile within them and the
    share of samples both get wrong per joint quintile: ``joint_error_rate_low_low`` (both in
    the bottom quintile), ``_diagonal`` (q_A = q_B), ``_off_diagonal``, and ``joint_error_grid``
    (value = shared samples; note = JSON 5 x 5 ``count`` and ``both_wrong``, rows = A's
    quintile, 0 = lowest VSI)."""
    groups: dict[tuple, dict[str, list[VSISample]]] = defaultdict(dict)
    for (task_id, bench, model, pert, sigma), cell in cells.items():
        groups[(task_id, pert, sigma)][model] = cell
    rows: list[ScoreRow] = []
    for (task_id, pert, sigma), by_model in sorted(groups.items()):
        sfx = _suffix(pert, sigma)
        chosen, neighbours = model_pairs(by_model, pairs)
        tail = "; " + neighbours_only_note(len(by_model)) if neighbours else ""
        for ma, mb in chosen:
            b = {s.sample_id: s for s in by_model[mb] if s.correct is not None}
            shared = [(s, b[s.sample_id]) for s in by_model[ma] if s.correct is not None and s.sample_id in b]
            pair = f"{ma}~{mb}"
            names = [f"joint_error_rate_{k}{sfx}" for k in ("low_low", "diagonal", "off_diagonal")]
            if len(shared) < MIN_QUINTILE_N:
                why = f"{len(shared)} samples both models answered parseably < {MIN_QUINTILE_N} (5 per quintile)"
                rows += [_nan(task_id, pair, m, why + tail, len(shared)) for m in names + [f"joint_error_grid{sfx}"]]
                continue
            ids = [x.sample_id for x, _ in shared]
            qa = quintiles(np.array([x.vsi for x, _ in shared]), ids)
            qb = quintiles(np.array([y.vsi for _, y in shared]), ids)
            count, both = joint_grid(qa, qb, np.array([not x.correct for x, _ in shared]),
                                     np.array([not y.correct for _, y in shared]))
            diag = np.eye(5, dtype=bool)
            low_low = np.zeros((5, 5), bool)
            low_low[0, 0] = True
            for m, sel in zip(names, (low_low, diag, ~diag)):
                k, w = int(count[sel].sum()), int(both[sel].sum())
                rows.append(ScoreRow(task_id, pair, m, w / k if k else math.nan, None, None, k, None,
                                     (f"both wrong on {w} of {k} samples; VSI quintiles within the {len(shared)} "
                                      "samples both answered parseably" if k else "no sample in these joint quintiles")
                                     + tail))
            rows.append(ScoreRow(task_id, pair, f"joint_error_grid{sfx}", float(len(shared)), None, None, len(shared),
                                 None, json.dumps({"count": count.tolist(), "both_wrong": both.tolist(),
                                                   "rows": f"VSI quintile of {ma} (0 = lowest)",
                                                   "cols": f"VSI quintile of {mb} (0 = lowest)"}
                                                  | ({"pairs": tail[2:]} if tail else {}))))
    return rows


# ------------------------------------------------------------------ pooled over cells
def _quintile_counts(cell: Sequence[VSISample]) -> dict | None:
    """Errors and samples of a cell's bottom and top VSI quintiles (None under 25 parseable)."""
    p, err, vsi, mp, n_null = _parsed(cell)
    if len(p) < MIN_QUINTILE_N:
        return None
    q = quintiles(vsi, [s.sample_id for s in p])
    bot, top = q == 0, q == 4
    return {"eb": int(err[bot].sum()), "nb": int(bot.sum()), "et": int(err[top].sum()), "nt": int(top.sum()),
            "a": err[bot], "b": err[top]}


def _ratio_row(task_id: str, model: str, metric: str, parts: list[tuple[str, dict | None]], scope: str,
               seed: int) -> ScoreRow:
    """A pooled bottom/top ratio row over ``parts`` (name, :func:`_quintile_counts`), with the
    stratified bootstrap interval of :func:`~perceptbench.metrics.error_structure.pooled_ratio_interval`."""
    used = [(k, c) for k, c in parts if c is not None]
    left = [k for k, c in parts if c is None]
    tail = f"; left out (< {MIN_QUINTILE_N} parseable samples): {', '.join(left)}" if left else ""
    if not used:
        return _nan(task_id, model, metric, f"no cell with >= {MIN_QUINTILE_N} parseable samples{tail}")
    eb, nb, et, nt = (sum(c[k] for _, c in used) for k in ("eb", "nb", "et", "nt"))
    v = pooled_ratio([eb], [nb], [et], [nt])
    why = "" if math.isfinite(v) else "top-quintile error rate is 0; "
    note = (f"{why}pooled over {scope} ({len(used)} cells): bottom-quintile errors {eb}/{nb} over top {et}/{nt}"
            f"{tail}")
    if why:
        return ScoreRow(task_id, model, metric, v, None, None, nb + nt, None, note)
    lo, hi, dropped = pooled_ratio_interval([c["a"] for _, c in used], [c["b"] for _, c in used], seed,
                                            f"{task_id}|{model}|{metric}", N_BOOT_B)
    return ScoreRow(task_id, model, metric, v, lo, hi, nb + nt, None,
                    note + "; each cell's quintiles resampled within it", N_BOOT_B, dropped, seed)


def pooled_ratio_rows(cells: dict[tuple, list[VSISample]], seed: int = 0) -> list[ScoreRow]:
    """Seed 002 §3: bottom- / top-quintile error-rate ratio pooled over cells, per (perturbation,
    sigma): ``error_rate_ratio_pooled_benchmarks`` per model (over its benchmarks),
    ``error_rate_ratio_pooled_models`` per benchmark (over its models; model ``all-models``),
    ``error_rate_ratio_model_mean`` per benchmark (mean of the models' own ratios), and
    ``error_rate_ratio_pooled_all`` over every cell."""
    counts = {k: _quintile_counts(c) for k, c in sorted(cells.items())}
    rows: list[ScoreRow] = []
    by_model: dict[tuple, list] = defaultdict(list)
    by_bench: dict[tuple, list] = defaultdict(list)
    by_all: dict[tuple, list] = defaultdict(list)
    for (task_id, bench, model, pert, sigma), c in counts.items():
        by_model[(model, pert, sigma)].append((task_id, bench, model, c))
        by_bench[(bench, pert, sigma)].append((task_id, bench, model, c))
        by_all[(pert, sigma)].append((task_id, bench, model, c))
    for (model, pert, sigma), parts in sorted(by_model.items()):
        rows.append(_ratio_row(_join(t for t, *_ in parts), model,
                               f"error_rate_ratio_pooled_benchmarks{_suffix(pert, sigma)}",
                               [(f"{t} ({b})", c) for t, b, _, c in parts], "the model's benchmarks", seed))
    for (bench, pert, sigma), parts in sorted(by_bench.items()):
        tid, sfx = _join(t for t, *_ in parts), _suffix(pert, sigma)
        rows.append(_ratio_row(tid, ALL, f"error_rate_ratio_pooled_models{sfx}",
                               [(f"{m} on {t}", c) for t, _, m, c in parts], f"the models of benchmark {bench}",
                               seed))
        ratios = [(m, pooled_ratio([c["eb"]], [c["nb"]], [c["et"]], [c["nt"]])) for _, _, m, c in parts if c]
        fin = [(m, r) for m, r in ratios if math.isfinite(r)]
        if fin:
            rows.append(ScoreRow(tid, ALL, f"error_rate_ratio_model_mean{sfx}", float(np.mean([r for _, r in fin])),
                                 None, None, len(fin), None,
                                 f"mean of {len(fin)} models' own ratios on benchmark {bench}: "
                                 + ", ".join(f"{m} {r:.3g}" for m, r in fin)
                                 + (f"; undefined for {len(ratios) - len(fin)} (top-quintile rate 0)"
                                    if len(fin) < len(ratios) else "")))
        else:
            rows.append(_nan(tid, ALL, f"error_rate_ratio_model_mean{sfx}",
                             f"no model with a defined ratio on benchmark {bench} (>= {MIN_QUINTILE_N} parseable "
                             "samples and a non-zero top-quintile error rate)"))
    for (pert, sigma), parts in sorted(by_all.items()):
        rows.append(_ratio_row(_join(t for t, *_ in parts), ALL, f"error_rate_ratio_pooled_all{_suffix(pert, sigma)}",
                               [(f"{m} on {t}", c) for t, _, m, c in parts], "every cell", seed))
    return rows


def pooled_enrichment_rows(cells: dict[tuple, list[VSISample]], seed: int = 0,
                           found: dict | None = None) -> list[ScoreRow]:
    """Seed 002 §3 ("42% of samples on the six-model POPE grid fall below VSI = 0.05, where the
    confidently wrong quadrant is 2.1x denser than in a matched top-VSI population"): per
    (benchmark, perturbation, sigma) and threshold, the CW counts of each model's cell
    (:func:`threshold_enrichment`; confidence median and matched population per cell) summed over
    the models: ``cw_enrichment_pooled@t`` (model ``all-models``), and
    ``insensitive_frac_pooled@t``, the share of the grid's samples below t.  ``found``: the
    cells' counts :func:`cell_rows` kept (its bootstrap interval is not used here), else each is
    counted afresh."""
    by_bench: dict[tuple, list] = defaultdict(list)
    for (task_id, bench, model, pert, sigma), cell in sorted(cells.items()):
        by_bench[(bench, pert, sigma)].append((task_id, model, cell))
    rows: list[ScoreRow] = []
    for (bench, pert, sigma), parts in sorted(by_bench.items()):
        tid, sfx = _join(t for t, *_ in parts), _suffix(pert, sigma)
        for t in INSENSITIVE_THRESHOLDS:
            cs = [(found or {}).get((id(cell), t)) or threshold_enrichment(cell, t) for _, _, cell in parts]
            tot = {k: sum(c[k] for c in cs) for k in ("n_low", "cw_low", "n_ref", "cw_ref", "n", "n_null")}
            tot["value"] = pooled_ratio([tot["cw_low"]], [tot["n_low"]], [tot["cw_ref"]], [tot["n_ref"]]) \
                if tot["n_low"] else math.nan
            metric = f"cw_enrichment_pooled@{t:g}{sfx}"
            if tot["n_low"] and tot["n_ref"] and math.isfinite(tot["value"]):
                tot["ci"] = pooled_ratio_interval([c["a"] for c in cs], [c["b"] for c in cs], seed,
                                                  f"{tid}|{metric}", N_BOOT_B) + (seed,)
            r = _enrichment_row(tid, ALL, metric, tot, t)
            r.note += f"; summed over {len(parts)} models of benchmark {bench}"
            if "ci" in tot:
                r.note = r.note.replace("; the two populations resampled separately", "") + \
                    "; each model's two populations resampled within it"
            rows.append(r)
            n_all = sum(len(cell) for _, _, cell in parts)
            below = sum(int(s.vsi < t) for _, _, cell in parts for s in cell)
            rows.append(ScoreRow(tid, ALL, f"insensitive_frac_pooled@{t:g}{sfx}", below / n_all if n_all else math.nan,
                                 None, None, n_all, None,
                                 f"{below} of the {n_all} samples of the {len(parts)} models of benchmark {bench} "
                                 f"have VSI < {t:g}"))
    return rows


# ------------------------------------------------------------------ signals and sigmas
def win_tally_rows(signal_cells: Sequence, signals: Sequence[str]) -> list[ScoreRow]:
    """Seed 002 §4 ("max-probability wins on 10/18, VSI-containing hybrids win on 7/18, and VSI
    alone wins on 1/18"): per sigma, ``signal_wins[signal,sigma=S]`` = the signal-table cells
    (:func:`perceptbench.vsi.analysis.signal_cells`) the signal wins, n = cells with a winner;
    model ``all-models``, task = the tasks of those cells; ``signals``: the candidates
    (:data:`perceptbench.vsi.analysis.SIGNALS`)."""
    by_sigma: dict[float, list] = defaultdict(list)
    for sc in signal_cells:
        by_sigma[float(sc.sigma)].append(sc)
    rows: list[ScoreRow] = []
    for sigma, scs in sorted(by_sigma.items()):
        won = [sc for sc in scs if sc.winner]
        tid = _join(sc.task_id for sc in scs)  # task ids hold commas (@n=40,sigma=10): never split them
        none = len(scs) - len(won)
        tail = f"; {counted(none, 'cell')} without a winner (too few errors or correct answers)" if none else ""
        for sig in signals:
            k = sum(sc.winner == sig for sc in won)
            rows.append(ScoreRow(tid, ALL, f"signal_wins[{sig},sigma={sigma:g}]", float(k), None, None, len(won), None,
                                 f"{sig} wins {k} of the {len(won)} cells with a winner{tail}"))
    return rows


def sigma_swing_rows(cells: dict[tuple, list[VSISample]]) -> list[ScoreRow]:
    """Seed 002 C.2: the AUROC of -VSI per cell (error = positive class, >= 5 per class),
    ``auroc_vsi_sigma_swing[p]`` per (benchmark, model, perturbation) scored at >= 2 sigmas
    (max - min over sigma; note: where), ``auroc_vsi_sigma_swing_max[p]`` the largest of those
    (model ``all-models``), and ``auroc_vsi_cell_range[p,sigma=S]``, max - min over the cells of
    one sigma (the seed's "more-than-0.17 AUROC range across the four audited cells at fixed sigma")."""
    au: dict[tuple, float] = {}
    tasks: dict[tuple, str] = {}
    for (task_id, bench, model, pert, sigma), cell in sorted(cells.items()):
        p, err, vsi, mp, n_null = _parsed(cell)
        au[(bench, model, pert, sigma)] = auroc(err, -vsi).value if p else math.nan
        tasks[(bench, model, pert, sigma)] = task_id
    rows: list[ScoreRow] = []
    swings: dict[str, list] = defaultdict(list)
    by_cell: dict[tuple, dict[float, float]] = defaultdict(dict)  # (benchmark, model, perturbation) -> {sigma: AUROC}
    for (b, m, p, s), v in au.items():
        by_cell[(b, m, p)][s] = v
    for bench, model, pert in sorted(by_cell):
        vals = by_cell[(bench, model, pert)]
        if len(vals) < 2:
            continue
        tid = _join(tasks[(bench, model, pert, s)] for s in vals)
        w, lo, hi = swing(vals)
        listed = ", ".join(f"sigma={s:g}: {v:.4g}" for s, v in sorted(vals.items()))
        if math.isfinite(w):
            rows.append(ScoreRow(tid, model, f"auroc_vsi_sigma_swing[{pert}]", w, None, None,
                                 sum(math.isfinite(v) for v in vals.values()), None,
                                 f"AUROC of -VSI on {bench}: min at sigma={lo:g}, max at sigma={hi:g} ({listed})"))
            swings[pert].append((w, tid, model, bench))
        else:
            rows.append(_nan(tid, model, f"auroc_vsi_sigma_swing[{pert}]",
                             f"AUROC of -VSI defined at < 2 sigmas on {bench} ({listed})"))
    for pert, ws in sorted(swings.items()):
        w, tid, model, bench = max(ws, key=lambda x: (x[0], x[1], x[2]))
        rows.append(ScoreRow(_join(ts for _, ts, _, _ in ws), ALL,
                             f"auroc_vsi_sigma_swing_max[{pert}]", w, None, None, len(ws), None,
                             f"largest over {len(ws)} (benchmark, model) cells: {model} on {bench}"))
    for pert, sigma in sorted({(p, s) for _, _, p, s in au}):
        vals = {(b, m): v for (b, m, p, s), v in au.items() if (p, s) == (pert, sigma)}
        if len(vals) < 2:
            continue
        w, lo, hi = swing(vals)
        tid = _join(tasks[(b, m, pert, sigma)] for b, m in vals)
        if math.isfinite(w):
            rows.append(ScoreRow(tid, ALL, f"auroc_vsi_cell_range{_suffix(pert, sigma)}", w, None, None,
                                 sum(math.isfinite(v) for v in vals.values()), None,
                                 f"AUROC of -VSI across cells: min {lo[1]} on {lo[0]}, max {hi[1]} on {hi[0]}"))
        else:
            rows.append(_nan(tid, ALL, f"auroc_vsi_cell_range{_suffix(pert, sigma)}",
                             "AUROC of -VSI defined in < 2 cells (>= 5 errors and 5 correct answers each)"))
    return rows


def pooled_rows(cells: dict[tuple, list[VSISample]], signal_cells: Sequence, signals: Sequence[str],
                seed: int = 0, pairs: str = "auto") -> list[ScoreRow]:
    """Every row of this module (module docstring), in a fixed order: per cell, model pairs,
    pooled ratios, pooled enrichment, win tally, sigma swing; ``seed``: the bootstrap seed of the
    per-cell threshold enrichment; ``pairs``: the model pairs of the joint-quintile rows
    (:func:`joint_quintile_rows`)."""
    rows: list[ScoreRow] = []
    found: dict = {}  # each cell's threshold counts, found once for the per-cell and the pooled rows
    for key in sorted(cells):
        rows += cell_rows(key[0], key[2], cells[key], seed, found)
    rows += joint_quintile_rows(cells, pairs)
    rows += pooled_ratio_rows(cells, seed)
    rows += pooled_enrichment_rows(cells, seed, found)
    rows += win_tally_rows(signal_cells, signals)
    rows += sigma_swing_rows(cells)
    return rows
