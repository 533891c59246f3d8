"""Model vs model: paired-bootstrap differences on the headline metrics (issue 10, item 8).

A difference a - b is computed on the stimuli *both* models answered (a null answer of
either drops the stimulus for both; SalBench's headline scores a null as an empty
prediction, seed 001 §4, so there every shared stimulus counts): both statistics are
recomputed on that common set and every bootstrap draw resamples the same common stimuli
for both (:func:`perceptbench.metrics.bootstrap.resample_indices` on the common set, seed of
the task), so ``stat_a(draw) - stat_b(draw)`` is the paired bootstrap of the difference
(seed 000 D.5).  The interval is the 2.5th-97.5th percentile of the defined differences; a
difference "excludes 0" when both bounds lie on the same side of 0 (unadjusted).  Each
difference also has its two-sided bootstrap p-value (:func:`bootstrap_p`) and that p-value
adjusted for the multiple comparisons of the whole report, Holm (family-wise) and
Benjamini-Hochberg (false discovery rate) (:func:`adjust_p_values`), the family being every
difference the report computes.  Which pairs: every pair of models of a task and metric up to
:data:`ALL_PAIRS_MAX` models, the neighbours in the models' ranking above (``pairs``,
:data:`PAIR_MODES`; issue 25).  With fewer than
:data:`MIN_COMMON` common stimuli no number is given, only a note.  (Subtracting each
model's own score row would compare B on different stimulus sets.)

:func:`model_draws` gives each model's own draws on its own trials, exactly the scorer's
(its interval in scores.csv).  Records are
first re-parsed and split by prompt version exactly as for scoring
(:func:`perceptbench.scoring.prepare_records`).

Statistics (the same formulas as the scorers, recomputed from the records):
accuracy / B = masked mean of ``correct`` over non-null trials (seed 000 D.1); SalBench
exact match = mean over every stimulus, a null counting as the empty set (seed 001 §4);
silhouette and edge B = match with the observers' modal response (tied modes
excluded); kappa_pairwise = mean over observers of Cohen-style error consistency (seed
000 Eq. 2, D.2)."""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass, replace

import numpy as np

from ..metrics.bootstrap import N_BOOT_B, N_BOOT_KAPPA, resample_indices
from ..records import TrialRecord
from ..scorers.pairs import ALL_PAIRS_MAX, PAIR_MODES, ranking
from ..scorers.pairs import select_pairs as _select_pairs
from ..tasks.gestalt import MARK_KERNEL_IDS, PANEL_CLASSIFICATION_TASKS


@dataclass(frozen=True)
class PairedDiff:
    """``a`` minus ``b`` on ``metric`` of ``task_id``, both on the same ``n`` common stimuli:
    point difference, 95% percentile interval over ``n_draws`` paired draws, and ``basis``
    (which stimuli, how nulls are handled)."""

    task_id: str
    metric: str
    a: str
    b: str
    diff: float
    low: float
    high: float
    n: int
    n_draws: int
    basis: str = ""  # which stimuli and how nulls are handled, e.g. "on the 4 stimuli both answered (nulls excluded)"
    p: float = float("nan")
    """Two-sided paired-bootstrap p-value of ``diff`` (:func:`bootstrap_p`)."""
    p_holm: float = float("nan")
    """``p`` Holm-adjusted over every difference of the report (:func:`adjust_p_values`)."""
    p_bh: float = float("nan")
    """``p`` Benjamini-Hochberg-adjusted (false discovery rate) over every difference of the report."""

    @property
    def excludes_zero(self) -> bool:
        return bool(np.isfinite(self.low) and (self.low > 0 or self.high < 0))

    @property
    def significant(self) -> bool:
        """Holm-adjusted p below :data:`ALPHA`: what the report's figure draws as blue diamonds and its
        table marks."""
        return bool(np.isfinite(self.p_holm) and self.p_holm < ALPHA)


ALPHA = 0.05
"""Significance level of the report's model-vs-model marks (Holm-adjusted p-values)."""


def bootstrap_p(draws: np.ndarray) -> float:
    """Two-sided p-value of "the difference is 0" from paired-bootstrap draws of a difference
    (shape ``(n_draws,)``, float; NaN draws, undefined on a resample, are left out):
    ``min(1, 2 (min(#{d <= 0}, #{d >= 0}) + 1) / (B + 1))`` over the B defined draws, the
    percentile-bootstrap test that matches the percentile interval (Davison & Hinkley 1997,
    *Bootstrap Methods and their Application*, §4.4-4.5; the +1 keeps a p-value of a finite
    resample from being 0: its smallest value is 2 / (B + 1)).  NaN when no draw is defined."""
    d = np.asarray(draws, float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return float("nan")
    k = min(int(np.sum(d <= 0)), int(np.sum(d >= 0)))
    return float(min(1.0, 2.0 * (k + 1) / (d.size + 1)))


def adjust_p_values(p: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """(Holm, Benjamini-Hochberg) adjusted p-values of ``p`` (one family: every paired difference
    of a report), by ``statsmodels.stats.multitest.multipletests`` (``holm``: Holm 1979,
    family-wise error; ``fdr_bh``: Benjamini & Hochberg 1995, false discovery rate).  NaN
    entries stay NaN and do not count in the family."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(p, float)
    holm, bh = np.full(p.shape, np.nan), np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        holm[ok] = multipletests(p[ok], method="holm")[1]
        bh[ok] = multipletests(p[ok], method="fdr_bh")[1]
    return holm, bh


def _mode(responses):
    from ..scorers.human_panel import modal_response  # the scorer's own tie rule
    from ..stimuli.geirhos import NO_ANSWER

    return modal_response(responses, NO_ANSWER)


def _model_groups(records: list[TrialRecord]):
    by_task: dict[str, dict[str, list[TrialRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        by_task[r.task_id][r.model].append(r)
    for models in by_task.values():
        for rs in models.values():
            rs.sort(key=lambda r: (r.stimulus_id, r.rep))
    return by_task


COUNTS_KEPT = 8
"""How many resample count matrices :func:`paired_differences` keeps per task (least recently
used dropped): each is (draws x common stimuli) float64, 2.6 MB at 2,000 draws and 160 stimuli."""


def _counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each stimulus occurs in each draw: index matrix (d, n) -> counts (d, n) float64.
    Every statistic here is a function of these counts, so one matrix product per model
    evaluates it on all draws at once (the same values as indexing, in a fraction of the time)."""
    d = idx.shape[0]
    flat = (np.arange(d)[:, None] * n + idx).ravel()
    return np.bincount(flat, minlength=d * n).reshape(d, n).astype(float)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _masked_mean_c(x: np.ndarray, valid: np.ndarray):
    xv = np.where(valid, x, 0.0)
    v = valid.astype(float)
    return lambda C: _ratio(C @ xv, C @ v)


def _kappa_pairwise_c(m: np.ndarray, obs: np.ndarray, valid: np.ndarray):
    """Mean over observers of kappa(model, observer) on counts C (seed 000 Eq. 2; the same
    definition as :func:`perceptbench.metrics.error_consistency.kappa_pairwise_mean`)."""
    v = valid.astype(float)
    agree = (m[None] * obs + (1 - m[None]) * (1 - obs)) * v[None]  # (J, n)

    obs_v = obs * v[None]

    def cols(C, rows):  # C @ rows.T as one matrix-vector product per observer (BLAS gemm threads
        return np.stack([C @ r for r in rows], axis=1)  # spin on a busy machine; gemv does not)

    def stat(C):
        den = C @ v
        p_m = _ratio(C @ (m * v), den)
        p_h = _ratio(cols(C, obs_v), den[:, None])
        c_obs = _ratio(cols(C, agree), den[:, None])
        c_exp = p_m[:, None] * p_h + (1 - p_m[:, None]) * (1 - p_h)
        with np.errstate(invalid="ignore", divide="ignore"):
            k = (c_obs - c_exp) / (1 - c_exp)
        k = np.where(np.isclose(c_exp, 1.0, rtol=0, atol=1e-12), np.nan, k)
        ok = np.isfinite(k)
        return _ratio(np.where(ok, k, 0).sum(1), ok.sum(1).astype(float))
    return stat


@dataclass
class _Stat:
    """One model's per-trial inputs to a headline statistic, in its trials' (stimulus, rep) order.

    ``x`` (n,) float64: the per-trial value averaged (``correct``, modal match, exact match)
    or, with ``obs``, the model's correctness; ``valid`` (n,) bool: the trial enters the
    statistic (a null answer does not, except SalBench's, where it is an empty prediction);
    ``obs`` (J, n) float64: the observers' correctness for kappa_pairwise."""

    x: np.ndarray
    valid: np.ndarray
    n_draws: int
    obs: np.ndarray | None = None
    nulls_count: bool = False  # SalBench: a null answer is scored (empty prediction), seed 001 §4

    def fn(self, sel: np.ndarray | None = None):
        """The statistic as a function of a counts matrix (d, len(sel)) -> (d,), on trials ``sel``."""
        x, valid = (self.x, self.valid) if sel is None else (self.x[sel], self.valid[sel])
        if self.obs is None:
            return _masked_mean_c(x, valid)
        return _kappa_pairwise_c(x, self.obs if sel is None else self.obs[:, sel], valid)


def _stats(base: str, rs: list[TrialRecord], humans: dict[str, list[TrialRecord]]) -> dict[str, _Stat]:
    """metric -> :class:`_Stat` of model trials ``rs`` (sorted by stimulus, rep)."""
    correct = np.array([bool(r.correct) for r in rs], float)
    valid = np.array([r.response is not None and r.ground_truth is not None for r in rs])
    acc = _Stat(correct, valid, N_BOOT_B)
    if base in PANEL_CLASSIFICATION_TASKS:
        obs_models = sorted(m for m in humans if m.startswith("human:subject"))
        if not obs_models:
            return {"accuracy": acc}
        per = {m: {r.stimulus_id: r for r in humans[m]} for m in obs_models}
        sids = [r.stimulus_id for r in rs]
        if any(s not in per[m] for m in obs_models for s in sids):
            return {"accuracy": acc}
        obs = np.array([[float(bool(per[m][s].correct)) for s in sids] for m in obs_models])
        modal = [_mode([per[m][s].response for m in obs_models]) for s in sids]
        has = np.array([h is not None for h in modal])
        match = np.array([r.response is not None and r.response == h for r, h in zip(rs, modal)], float)
        return {"accuracy": acc,
                "B": _Stat(match, valid & has, N_BOOT_B),
                "kappa_pairwise": _Stat(correct, valid, N_BOOT_KAPPA, obs)}
    if base in MARK_KERNEL_IDS:
        return {"B": acc}
    if base == "similarity.chart.series_count":
        return {"accuracy": acc}
    if base.startswith("salbench."):
        if any((r.run_meta.model_extra or {}).get("skipped") for r in rs):
            return {}
        if rs and rs[0].readout != "vlm_prompt":  # encoder trials an older run recorded before they were
            from ..tasks import get_task         # skipped: the scorer gives a `skipped` row, so no number here

            if get_task(rs[0].task_id).encoder_not_applicable(rs[0].readout):
                return {}
        # seed 001 §4 headline: every stimulus counts, a null answer is an empty prediction
        em = np.array([bool(r.correct) if r.response is not None else len(r.ground_truth or ()) == 0
                       for r in rs], float)
        return {"exact_match": _Stat(em, np.array([r.ground_truth is not None for r in rs]), N_BOOT_B,
                                     nulls_count=True)}
    return {}


def _prepared_groups(records: list[TrialRecord]):
    """task_id -> (seed, {model: (trials, {metric: _Stat})}) for the non-human models."""
    from ..scoring import prepare_records

    records = prepare_records(records)  # re-parsed and split exactly as the scores were
    out = {}
    for tid, models in sorted(_model_groups(records).items()):
        base = tid.split("@", 1)[0]
        humans = {m: rs for m, rs in models.items() if m.startswith("human:")}
        names = sorted(m for m in models if not m.startswith("human:"))
        if not names:
            continue
        seed = min(r.run_meta.seed for m in names for r in models[m])
        out[tid] = (seed, {m: (models[m], _stats(base, models[m], humans)) for m in names})
    return out


def _strata(base: str, rs: list[TrialRecord]):
    # as the scorers' rows: series counting resamples within each rendered k (the design fixes
    # the count per k), every other headline unstratified
    return np.array([r.manipulated_value for r in rs]) if base == "similarity.chart.series_count" else None


def model_draws(records: list[TrialRecord]) -> dict[tuple[str, str, str], tuple[float, np.ndarray, tuple]]:
    """(task_id, model, metric) -> (point estimate, bootstrap draws (n_draws,), stimulus key)
    for every non-human model and headline metric, each on the model's own trials (nulls
    excluded as in its score row); draws use the scorers' resamples, so they reproduce the
    model's own interval in scores.csv.  Differences between models are not taken from
    these (they rest on different answered stimuli): see :func:`paired_differences`."""
    out = {}
    for tid, (seed, models) in _prepared_groups(records).items():
        base = tid.split("@", 1)[0]
        # resample counts per common stimulus set: a few kept (pairs with the same set share them);
        # keeping every set's (draws x stimuli) matrix held 1.2 GiB at 400 models.  The counts are a
        # function of the key (and the task's seed), so evicting one changes no number.
        counts: OrderedDict[tuple, np.ndarray] = OrderedDict()
        for m, (rs, stats) in models.items():
            key = tuple((r.stimulus_id, r.rep) for r in rs)
            n = len(rs)
            for metric, st in stats.items():
                ck = (key, st.n_draws)
                if ck not in counts:
                    counts[ck] = _counts(resample_indices(n, st.n_draws, seed, _strata(base, rs)), n)
                fn = st.fn()
                out[(tid, m, metric)] = (float(fn(np.ones((1, n)))[0]), np.asarray(fn(counts[ck]), float), key)
    return out


MIN_COMMON = 5
"""Fewest stimuli both models must have answered for a paired difference; below it the
report says so instead of giving a number (the same floor of 5 as the VSI analyses' cells)."""


def _ranking(models: dict, metric: str, names: list[str]) -> list[str]:
    """``names`` ranked by each model's own point estimate of ``metric`` on its own trials
    (best first; undefined last; ties by name: :func:`perceptbench.scorers.pairs.ranking`)."""
    return ranking(names, lambda m: _own_score(models, metric, m))


def _own_score(models: dict, metric: str, m: str) -> float:
    st = models[m][1][metric]
    return float(st.fn()(np.ones((1, len(st.x))))[0])


def select_pairs(models: dict, metric: str, names: list[str], mode: str) -> tuple[list[tuple[str, str]], bool]:
    """The (a, b) pairs to compare among ``names`` (sorted) under ``mode`` (:data:`PAIR_MODES`),
    and whether they are the ranking neighbours: :func:`perceptbench.scorers.pairs.select_pairs`
    (the rule the VSI cross-model analyses share) with the ranking of :func:`_ranking`.
    ``all``: every pair, a before b by name; ``neighbours``: consecutive models of the ranking,
    the better-ranked one as ``a``."""
    return _select_pairs(names, mode, lambda m: _own_score(models, metric, m))


def paired_differences(records: list[TrialRecord], pairs: str = "auto") -> tuple[list[PairedDiff], list[str]]:
    """Paired differences for the pairs of non-human models that ``pairs`` selects
    (:data:`PAIR_MODES`, :func:`select_pairs`; default ``auto``: every pair up to
    :data:`ALL_PAIRS_MAX` models of a task and metric, the ranking neighbours above) within
    each task and headline metric, each on the stimuli *both* models answered.  The Holm and
    Benjamini-Hochberg adjustments run over the family of every difference computed (all
    tasks, metrics and selected pairs of the call); a note says where only neighbours were
    compared.

    For a pair (a, b) the common set is the (stimulus, rep) trials both models have with a
    scorable answer (a null answer of either model drops the stimulus for both, except on
    SalBench, whose headline scores a null as an empty prediction, seed 001 §4, so every
    shared stimulus counts); both statistics are recomputed on that set, and every bootstrap
    draw resamples the same common stimuli for both (seed 000 D.5; series counting within
    each rendered k).  ``n`` is the common count.  Returns (differences, notes); a note
    names each pair with fewer than :data:`MIN_COMMON` common stimuli (no number is given)."""
    out: list[PairedDiff] = []
    notes: list[str] = []
    for tid, (seed, models) in _prepared_groups(records).items():
        base = tid.split("@", 1)[0]
        # resample counts per common stimulus set: a few kept (pairs with the same set share them);
        # keeping every set's (draws x stimuli) matrix held 1.2 GiB at 400 models.  The counts are a
        # function of the key (and the task's seed), so evicting one changes no number.
        counts: OrderedDict[tuple, np.ndarray] = OrderedDict()
        metrics = sorted({mt for _, stats in models.values() for mt in stats})
        for metric in metrics:
            names = [m for m in sorted(models) if metric in models[m][1]]
            chosen, neighbours = select_pairs(models, metric, names, pairs)
            if neighbours:
                notes.append(f"{tid} {metric}: {len(names)} models, more than {ALL_PAIRS_MAX}: only the "
                             f"{len(chosen)} neighbours in the ranking by each model's own score are compared "
                             f"(not all {len(names) * (len(names) - 1) // 2} pairs); report --pairs all "
                             f"compares every pair.")
            for a, b in chosen:
                (ra, sa), (rb, sb) = models[a], models[b]
                A, B = sa[metric], sb[metric]
                ib = {(r.stimulus_id, r.rep): i for i, r in enumerate(rb)}
                common = [(i, ib[(r.stimulus_id, r.rep)]) for i, r in enumerate(ra)
                          if (r.stimulus_id, r.rep) in ib]
                common = [(i, j) for i, j in common if A.valid[i] and B.valid[j]]
                n = len(common)
                what = ("stimuli both were shown (null = empty prediction)" if A.nulls_count
                        else "stimuli both answered (nulls excluded)")
                if n < MIN_COMMON:
                    notes.append(f"{tid} {metric} {a} - {b}: no paired difference: only {n} {what}, "
                                 f"fewer than {MIN_COMMON}.")
                    continue
                ia = np.array([i for i, _ in common])
                jb = np.array([j for _, j in common])
                key = (tuple(ra[i].stimulus_id for i in ia), A.n_draws)
                if key in counts:
                    counts.move_to_end(key)
                else:
                    strata = _strata(base, [ra[i] for i in ia])
                    counts[key] = _counts(resample_indices(n, A.n_draws, seed, strata), n)
                    if len(counts) > COUNTS_KEPT:
                        counts.popitem(last=False)
                C = counts[key]
                fa, fb = A.fn(ia), B.fn(jb)
                one = np.ones((1, n))
                point = float(fa(one)[0] - fb(one)[0])
                d = np.asarray(fa(C) - fb(C), float)  # the same resampled stimuli for both: paired
                ok = np.isfinite(d)
                lo, hi = np.percentile(d[ok], [2.5, 97.5]) if ok.any() else (np.nan, np.nan)
                out.append(PairedDiff(tid, metric, a, b, point, float(lo), float(hi), n, d.shape[0],
                                      f"on the {n} {what}", bootstrap_p(d)))
    holm, bh = adjust_p_values([x.p for x in out])
    out = [replace(x, p_holm=float(h), p_bh=float(f)) for x, h, f in zip(out, holm, bh)]
    return out, notes
