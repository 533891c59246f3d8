"""Per-task VSI scoring: the rows of one VSI task from its records alone (numpy only).

Called by :meth:`perceptbench.vsi.protocol.VSITask.score`; sits below the task definitions in
the import layers (with ``scorers/``), so the tasks import it and it imports no task.

Per model ``M``: the clean-answer rows and one VSI cell per blur condition of the task
(``[region_blur,sigma=S]``, ``[whole_blur,sigma=S]``).  A condition respondent
``M[image_withheld]`` (:mod:`perceptbench.respond.withheld`) gets the cell of its condition,
``[image_withheld]`` (no sigma): KL(p_clean of ``M`` || p of ``M[image_withheld]``), its
records paired with ``M``'s clean records of the same samples, with the same rows a blur cell
has (median and quartiles, insensitive fractions, argmax-change rate, histogram).  ``M``'s own
rows are the same whether or not the withheld condition was run."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

import numpy as np

import math

from ..core.conditions import DEFAULT_CONDITION, parse_respondent_label
from ..core.rows import ScoreRow
from ..metrics.bootstrap import N_BOOT_B
from ..records import TrialRecord
from .cells import HIST_EDGES, INSENSITIVE_THRESHOLDS, cell_summary
from .samples import FLAG_REASONS, PERTURBATIONS, VSIColumns, VSIFlagged, VSISample, _Deferred, _split


def score_task(task, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
    """The score rows of one VSI task (:meth:`perceptbench.vsi.protocol.VSITask.score`) from its
    trial records: :func:`score_columns` of their :class:`~perceptbench.vsi.samples.VSIColumns`.

    ``task``: the :class:`~perceptbench.vsi.protocol.VSITask` (its id, conditions, sigma and
    ``verbal_conf``); ``records``: its trial records; ``seed``: the bootstrap seed.
    Per model: skipped row, or per perturbed condition the VSI cell summary (seed 002 §2.2,
    §2.4, §3), plus clean-answer accuracy, parse-null and verbal-confidence-missing counts.
    Metric names carry ``[condition,sigma=S]``; a condition respondent ``M[image_withheld]``
    gets the ``[image_withheld]`` cell against ``M``'s clean records (module docstring); see
    docs/metrics.md.  The clean answers' parse counts (``n_ambiguous``, ``n_unclosed_reasoning``, ...) are added by scoring for
    every task with VLM answers (:func:`perceptbench.scoring._parse_rows`), as for battery rows."""
    return score_columns(task, VSIColumns.from_records(records), seed)


def _value(x):
    """A value read for a row (:func:`perceptbench.vsi.samples._row_meta`), raising what reading it raised."""
    if isinstance(x, _Deferred):
        raise x.exc
    return x


def score_columns(task, cols: VSIColumns, seed: int) -> list[ScoreRow]:
    """:func:`score_task`'s rows from the task's records as columns (``cols``: one task, responses
    and correctness as re-parsed; :class:`~perceptbench.vsi.samples.VSIColumns`), the pairs of every
    model computed once (:meth:`~perceptbench.vsi.samples.VSIColumns.pairs`); then the task's
    benchmark-native rows (:meth:`~perceptbench.vsi.protocol.VSITask.native_rows`) from the same
    columns and samples."""
    tid = task.task_id
    sd = cols.side
    rows: list[ScoreRow] = []
    all_samples, flagged_all = _split(cols.pairs())  # every model's pairs at once, computed on arrays
    samples_of: dict[str, list] = defaultdict(list)
    flagged_of: dict[str, list] = defaultdict(list)
    for s in all_samples:
        samples_of[s.model].append(s)
    for f in flagged_all:
        flagged_of[f.model].append(f)
    clean_code = cols.readouts.index("vlm_vsi_clean") if "vlm_vsi_clean" in cols.readouts else -1
    is_clean = cols.readout == clean_code
    rows_of = {cols.models[k]: np.flatnonzero(cols.model == k) for k in np.unique(cols.model).tolist()}
    for m, rs in sorted(rows_of.items()):
        skipped = {sd.skips[k] for k in sd.skip[rs[~sd.trial_skip[rs]]].tolist()} - {None}
        if skipped:
            rows.append(ScoreRow(tid, m, "skipped", float("nan"), None, None, len(rs), None,
                                 "; ".join(sorted(skipped))))
            continue
        flagged = flagged_of[m]
        clean = sorted(rs[is_clean[rs] & ~sd.trial_skip[rs]].tolist(), key=lambda i: cols.stimuli[cols.stimulus[i]])
        n_null = int(cols.response_null[clean].sum()) if clean else 0
        if clean:
            from ..metrics.bootstrap import bootstrap

            corr = cols.correct[clean]
            c = corr[corr >= 0].astype(float)
            if c.size:
                b = bootstrap(lambda i: c[i].mean(1), c.size, n_draws=N_BOOT_B, seed=seed)
                rows.append(ScoreRow.from_boot(tid, m, "accuracy", b, int(c.size), n_null,
                                               "clean greedy answers, parseable only"))
            rows.append(ScoreRow(tid, m, "n_parse_null", float(n_null), None, None, len(clean), n_null,
                                 "clean greedy answers the parser could not read (excluded from accuracy)"))
            vc = [_value(sd.verbal_conf[i]) for i in clean]
            if task.verbal_conf:
                rows.append(ScoreRow(tid, m, "n_verbal_conf_missing", float(sum(v is None for v in vc)), None,
                                     None, len(clean), n_null,
                                     "clean samples whose confidence answer holds no integer 0-100 "
                                     "(dropped from confidence analyses, seed 002 appendix A)"))
            mismatch = sum(_value(sd.mismatch[i]) for i in clean)
            if mismatch:
                rows.append(ScoreRow(tid, m, "n_answer_token_mismatch", float(mismatch), None, None, len(clean),
                                     n_null, "clean records whose greedy answer does not begin with the most "
                                     "probable first token of their distribution (two API requests disagreed)"))
        model, condition = parse_respondent_label(m)
        if condition != DEFAULT_CONDITION:
            if condition in PERTURBATIONS:
                clean_of_model = np.zeros(cols.n, bool)
                if model in rows_of:
                    clean_of_model[rows_of[model]] = is_clean[rows_of[model]]
                rows += _condition_cell_rows(tid, m, model, condition, cols, clean_of_model, rs, seed)
                rows += _flagged_rows(tid, m, f"[{condition}]", [f for f in flagged
                                                                 if f.perturbation == PERTURBATIONS[condition]])
            continue
        samples = samples_of[m]  # = vsi_samples(rs): a model's blurs pair with its own clean records
        fb = defaultdict(int)
        for i in rs.tolist():
            cond = _value(sd.fallback[i])
            if cond is not None:
                fb[cond] += 1
        for cond, pert in (("region_blur", "region"), ("whole_blur", "whole")):
            if cond not in task.conditions:
                continue
            cell = [s for s in samples if s.perturbation == pert]
            tag = f"[{cond},sigma={task.sigma:g}]"
            if cond == "region_blur":
                rows.append(ScoreRow(tid, m, "n_fallback" + tag, float(fb[cond]), None, None, len(cell), None,
                                     "region blur fell back to the whole image (no region / no box above "
                                     "threshold; seed 002 appendix A)"))
            if cell:
                rows += _cell_rows(tid, m, tag, cell, seed)
            rows += _flagged_rows(tid, m, tag, [f for f in flagged if f.perturbation == pert
                                               and f.sigma == task.sigma])
    return rows + task.native_rows(cols, all_samples, seed)


def _flagged_rows(tid: str, m: str, tag: str, flagged: list[VSIFlagged]) -> list[ScoreRow]:
    """``n_flagged{tag}``: the samples of a cell left out of its VSI, by reason
    (:data:`~perceptbench.vsi.samples.FLAG_REASONS`); no row when there is none."""
    if not flagged:
        return []
    counts = Counter(f.reason for f in flagged)
    by = ", ".join(f"{counts[r]} {r}" for r in FLAG_REASONS if counts[r])
    return [ScoreRow(tid, m, "n_flagged" + tag, float(len(flagged)), None, None, len(flagged), None,
                     f"samples left out of this cell's VSI: {by} (docs/metrics.md, what is never scored as a VSI)")]


def _condition_cell_rows(tid: str, label: str, model: str, condition: str, cols: VSIColumns,
                         clean_of_model: np.ndarray, rows: np.ndarray, seed: int) -> list[ScoreRow]:
    """The VSI cell of condition respondent ``label`` (``model[condition]``, e.g. the image
    withheld): its records (``rows`` of ``cols``) paired by sample with the clean records of
    ``model`` (``clean_of_model``, bool (n,)); a NaN ``vsi_median`` row saying why when no sample pairs."""
    tag = f"[{condition}]"
    pert = PERTURBATIONS[condition]
    within = clean_of_model.copy()
    within[rows] = True
    cell = [s for s in _split(cols.pairs_within(within))[0] if s.model == label and s.perturbation == pert]
    if not cell:
        return [ScoreRow(tid, label, "vsi_median" + tag, math.nan, None, None, 0, None,
                         f"no clean record of {model} for the samples of its {len(rows)} {condition} records "
                         f"(run {model} under the image condition too)")]
    return _cell_rows(tid, label, tag, cell, seed, pair=f"KL(p_clean of {model} || p of {label}); ")


def _cell_rows(tid: str, m: str, tag: str, cell: list[VSISample], seed: int, pair: str = "") -> list[ScoreRow]:
    """The rows of one VSI cell (``tag``: ``[condition,sigma=S]`` or ``[condition]``): median
    with quartiles, quartiles, insensitive fractions, argmax-change rate (seed 002 §2.2, §2.4)
    and histogram counts; ``pair`` (the notes' prefix) says which distributions the KL compares
    when it is not the model's own clean and perturbed ones."""
    cs = cell_summary(np.array([s.vsi for s in cell]), np.array([s.argmax_changed for s in cell]), seed=seed)
    n = cs.n
    rows = [ScoreRow(tid, m, "vsi_median" + tag, cs.median, cs.q25, cs.q75, n, None,
                     pair + "nats; ci_low/ci_high hold the 25th/75th percentiles (quartiles), not a CI"),
            ScoreRow(tid, m, "vsi_q25" + tag, cs.q25, None, None, n, None, pair + "nats"),
            ScoreRow(tid, m, "vsi_q75" + tag, cs.q75, None, None, n, None, pair + "nats")]
    for t in INSENSITIVE_THRESHOLDS:
        rows.append(ScoreRow.from_boot(tid, m, f"insensitive_frac@{t:g}" + tag, cs.insensitive[t], n, None,
                                       pair + f"fraction of samples with VSI < {t:g} nats (seed 002 §2.2)"))
    rows.append(ScoreRow.from_boot(tid, m, "argmax_change_rate" + tag, cs.argmax_change_rate, n, None,
                                   pair + "first-answer-token argmax differs clean vs perturbed (seed 002 §2.4)"))
    edges = [e if np.isfinite(e) else None for e in HIST_EDGES]
    rows.append(ScoreRow(tid, m, "vsi_histogram" + tag, float(n), None, None, n, None,
                         json.dumps({"edges_nats": edges, "counts": list(cs.hist_counts),
                                     "bins": "[lo, hi); last edge null = infinity"})))
    return rows
