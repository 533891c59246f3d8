"""The cell-panel scorer (seed 000 appendix D.1-D.5): a human panel whose observers each saw one
cell of the design (one batch in one palette: Tseng et al. 2023's highest-mean judgements), so
observers share stimuli only within a cell.  The metric and its ceilings on one object: per
model accuracy, B against the strict-majority human answer, kappa aggregate (against the
per-stimulus human accuracy) and pairwise (per participant, on the stimuli both answered),
a(k); per panel the pooled accuracy, a(k), and the within-cell pairwise and leave-one-out
kappa ceilings (:meth:`~perceptbench.scorers.human_panel.HumanPanelScorer.ceilings` per cell)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..core.rows import ScoreRow
from ..metrics.agreement import _wsum, masked_mean_counts, position_floor
from ..metrics.bootstrap import (N_BOOT_B, N_BOOT_KAPPA, BootstrapResult, bootstrap, percentile_intervals,
                                 resample_indices)
from ..metrics.error_consistency import UNDEFINED_REASON, kappa, kappa_resampled
from ..record_table import TaskColumns
from ..records import TrialRecord
from ..seeding import rng_for
from .capacity import CapacityScorer
from .common import MODEL_BLOCK, intervals, null_rows, respondent_positions, with_estimate
from .human_panel import HumanPanelScorer


def ratio_boot(num: np.ndarray, den: np.ndarray, n_draws: int, seed: int, strata=None, mask=None):
    """Bootstrap of sum(num)/sum(den) over stimuli (ratio of sums = trial-weighted mean): ``num``,
    ``den`` float (n,) per stimulus, ``mask`` float (n,) weights (default ones), ``strata`` as in
    :func:`~perceptbench.metrics.bootstrap.bootstrap`; NaN where the resampled ``den`` sums to 0.
    :func:`ratio_boots` of one mask."""
    return ratio_boots(num, den, np.ones((1, len(num))) if mask is None else np.asarray(mask, float)[None],
                       n_draws, seed, strata)[0]


def ratio_boots(num: np.ndarray, den: np.ndarray, masks: np.ndarray, n_draws: int, seed: int,
                strata=None) -> list[BootstrapResult]:
    """:func:`ratio_boot` of each row of ``masks`` (float (L, n)) on the same draws
    (:func:`~perceptbench.metrics.bootstrap.resample_indices` of (n, n_draws, seed, strata)):
    one :class:`BootstrapResult` per mask, each equal to the per-draw form
    ``bootstrap(lambda i: sum(num[i] mask[i]) / sum(den[i] mask[i]), ...)`` bit for bit.  With
    integer-valued weighted ``num`` and ``den`` (counts: the panel's correct and observed
    trials) every resample sum is an exact integer, taken as one product of the resample
    counts; other values are summed per draw in the gathering order."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    masks = np.asarray(masks, float)
    a, b = num[None] * masks, den[None] * masks  # (L, n)
    n = len(num)

    def ratio(sa, sb):
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(sb > 0, sa / np.maximum(sb, 1e-300), np.nan)

    if not (np.array_equal(a, np.round(a)) and np.array_equal(b, np.round(b))
            and n * max(float(np.abs(a).max(initial=0)), float(np.abs(b).max(initial=0))) < 2 ** 52):
        return [bootstrap(lambda i, j=j: ratio((num[i] * masks[j][i]).sum(-1), (den[i] * masks[j][i]).sum(-1)), n,
                          n_draws=n_draws, seed=seed, strata=strata) for j in range(len(masks))]
    w = with_estimate(n, n_draws, seed, strata)
    values = ratio(_wsum(w, a), _wsum(w, b))  # (1 + draws, L)
    return intervals(values, n_draws, seed)


def pct_boot(values: np.ndarray, n_draws: int, seed: int, key: str):
    """Mean of ``values`` (float (k,), NaN dropped) with a 95% percentile interval from
    resampling the values themselves (``n_draws`` draws of ``rng_for(seed, "bootstrap-units",
    key, k, n_draws)``): the interval of a mean over units (observer pairs, participants), not
    over stimuli."""
    v = values[np.isfinite(values)]
    if v.size == 0:
        return BootstrapResult(float("nan"), float("nan"), float("nan"), n_draws, n_draws, seed)
    idx = rng_for(seed, "bootstrap-units", key, v.size, n_draws).integers(0, v.size, size=(n_draws, v.size))
    draws = v[idx].mean(1)
    lo, hi = np.percentile(draws, [2.5, 97.5])
    return BootstrapResult(float(v.mean()), float(lo), float(hi), n_draws, 0, seed)



class CellPanelScorer:
    """Scores trial records (objects: the task's scoring reads ``run_meta.split``) against a
    panel of observers who each saw one cell.  ``task_id``: the rows' task id; ``levels``:
    the design's k levels (a(k) rows for those present).  A record's ``manipulated_value`` is
    its k, ``correct`` its correctness; ``ground_truth`` the answer position (floor)."""

    def __init__(self, task_id: str, levels: tuple[int, ...]):
        self.task_id = task_id
        self.levels = tuple(levels)

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """:meth:`score_columns` of the records' columns."""
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Panel rows on the test split and on all stimuli, then every model (sorted by name),
        from the task's records as columns (:class:`TaskColumns`, records in file order).  A
        human record's split is its ``run_meta.split`` (absent: ``test``); a stimulus's k the
        ``manipulated_value`` of its last record.  Raises ValueError without human records or
        when a model answered a stimulus no human saw."""
        tid = self.task_id
        human = np.array([f == "human" for f in c.families], bool)[c.family]
        humans: dict[str, dict[str, float]] = defaultdict(dict)
        split: dict[str, str] = {}
        for m, st, corr, sp in zip(c.model[human].tolist(), c.stimulus[human].tolist(), c.correct[human].tolist(),
                                   c.split[human].tolist()):
            humans[c.models[m]][c.stimuli[st]] = float(corr == 1)
            split[c.stimuli[st]] = "test" if c.splits[sp] is None else c.splits[sp]
        if not humans:
            raise ValueError(f"{tid}: no human trial records to score against")
        mv = _ints_of(c, c.manipulated_value)  # k of each record
        last = len(c.stimulus) - 1 - np.unique(c.stimulus[::-1], return_index=True)[1]
        kval = {c.stimuli[st]: int(mv[i]) for st, i in zip(c.stimulus[last].tolist(), last.tolist())}
        stim = sorted(split)
        col = {s: j for j, s in enumerate(stim)}
        n_obs = np.zeros(len(stim))
        n_cor = np.zeros(len(stim))
        for m, d in humans.items():
            for s, v in d.items():
                n_obs[col[s]] += 1
                n_cor[col[s]] += v
        rows: list[ScoreRow] = []
        for name, sel in (("test", np.array([split[s] == "test" for s in stim])),
                          ("all", np.ones(len(stim), bool))):
            if sel.any():
                rows += self._panel_rows(humans, stim, n_obs, n_cor, sel, kval, name, seed)
        panel = _ObserverMatrix(humans, col)
        groups = {c.models[k]: pos for k, pos in respondent_positions(c) if not human[pos[0]]}  # by (stimulus, rep)
        # per stimulus code its human column (-1: none); per value code: null
        per_code = (np.array([col.get(s, -1) for s in c.stimuli], np.int64),
                    np.array([v is None for v in c.values], bool))
        blocks: dict[bytes, list[str]] = {}  # models with the same trials (human column, k, answer per position)
        for m in sorted(groups):
            cols = per_code[0][c.stimulus[groups[m]]]
            if (cols < 0).any():
                raise ValueError(f"{tid}: {m} answered {c.stimuli[c.stimulus[groups[m]][np.argmax(cols < 0)]]}, "
                                 "which has no human trial")
            blocks.setdefault(b"|".join((cols.tobytes(), mv[groups[m]].tobytes(),
                                      c.ground_truth[groups[m]].tobytes())), []).append(m)
        by_model: dict[str, list[ScoreRow]] = {}
        for names in blocks.values():
            for i in range(0, len(names), MODEL_BLOCK):
                part = names[i:i + MODEL_BLOCK]
                by_model.update(zip(part, self._model_rows(part, c, np.stack([groups[m] for m in part]), per_code,
                                                           panel, n_obs, n_cor, mv, seed)))
        for m in sorted(groups):
            rows += by_model[m]
        return rows

    def _cells(self, humans, sel_stim: set[str]) -> dict[frozenset, list[str]]:
        """Observers grouped by the exact stimulus set they saw (one batch in one palette)."""
        cells: dict[frozenset, list[str]] = defaultdict(list)
        for m, d in humans.items():
            seen = frozenset(s for s in d if s in sel_stim)
            if seen:
                cells[seen].append(m)
        return cells

    def _ceilings(self, humans, sel_stim: set[str]) -> tuple[np.ndarray, np.ndarray]:
        """(kappa of every within-cell observer pair, kappa of every observer in a cell of
        >= 3 against the mean of the others in its cell)."""
        pw, loo = [], []
        for seen, obs in sorted(self._cells(humans, sel_stim).items(), key=lambda kv: sorted(kv[1])):
            ss = sorted(seen)
            mat = np.array([[humans[o][s] for s in ss] for o in sorted(obs)])
            cell_pw, cell_loo = HumanPanelScorer.ceilings(mat)
            pw += cell_pw.tolist()
            if len(obs) >= 3:
                loo += cell_loo.tolist()
        return np.array(pw), np.array(loo)

    def _panel_rows(self, humans, stim, n_obs, n_cor, sel, kval, name, seed) -> list[ScoreRow]:
        tid, m, s = self.task_id, "human:panel", f"@{name}"
        idx = np.flatnonzero(sel)
        num, den = n_cor[idx], n_obs[idx]
        kk = np.array([kval[stim[i]] for i in idx])
        sel_stim = {stim[i] for i in idx}
        acc_obs = np.array([np.mean([c for st, c in d.items() if st in sel_stim])
                            for d in humans.values() if any(st in sel_stim for st in d)])
        n_trials = int(den.sum())
        rows = [
            ScoreRow.from_boot(tid, m, "accuracy" + s, ratio_boot(num, den, N_BOOT_B, seed), n_trials, 0,
                               f"all human trials pooled; bootstrap over {len(idx)} stimuli"),
            ScoreRow(tid, m, "observer_accuracy_mean" + s, float(acc_obs.mean()), None, None, len(acc_obs), 0,
                     f"{len(acc_obs)} participants"),
            ScoreRow(tid, m, "observer_accuracy_min" + s, float(acc_obs.min()), None, None, len(acc_obs), 0),
            ScoreRow(tid, m, "observer_accuracy_max" + s, float(acc_obs.max()), None, None, len(acc_obs), 0),
        ]
        present = [lev for lev in self.levels if (kk == lev).any()]
        a_k = ratio_boots(num, den, np.array([kk == lev for lev in present], float).reshape(len(present), -1),
                          N_BOOT_B, seed, strata=kk) if present else []
        for lev, b in zip(present, a_k):
            mask = kk == lev
            rows.append(ScoreRow.from_boot(
                tid, m, f"a_k[{lev}]" + s, b, int(den[mask].sum()), 0,
                "human accuracy at k categories (Tseng et al. 2023 highest-mean judgement: a different task "
                "from series counting's a(k), not the same measurement); bootstrap over stimuli by k"))
        pw, loo = self._ceilings(humans, sel_stim)
        pw_b = pct_boot(pw, N_BOOT_KAPPA, seed, "pairs" + s)
        loo_b = pct_boot(loo, N_BOOT_KAPPA, seed, "loo" + s)
        ok_pw, ok_loo = pw[np.isfinite(pw)], loo[np.isfinite(loo)]
        rows += [
            ScoreRow.from_boot(tid, m, "ceiling_kappa_pairwise_mean" + s, pw_b, len(ok_pw), len(pw) - len(ok_pw),
                               f"mean over {len(ok_pw)} pairs of participants who saw the same batch in the same "
                               f"palette ({len(pw) - len(ok_pw)} undefined pairs left out); CI resamples pairs"),
            ScoreRow(tid, m, "ceiling_kappa_pairwise_min" + s, float(ok_pw.min()) if ok_pw.size else float("nan"),
                     None, None, len(ok_pw), 0),
            ScoreRow(tid, m, "ceiling_kappa_pairwise_max" + s, float(ok_pw.max()) if ok_pw.size else float("nan"),
                     None, None, len(ok_pw), 0),
            ScoreRow.from_boot(tid, m, "ceiling_kappa_loo_mean" + s, loo_b, len(ok_loo), len(loo) - len(ok_loo),
                               "each participant in a batch x palette cell of >= 3 vs the mean of the others "
                               "in the cell; CI resamples participants"),
        ]
        multi = den >= 2
        maj_ok = multi & (num * 2 > den)
        maj_wrong = multi & (num * 2 < den)
        rows += [
            ScoreRow(tid, m, "n_stimuli_multi_observer" + s, float(multi.sum()), None, None, len(idx), 0,
                     "stimuli seen by >= 2 participants: B is defined on these"),
            ScoreRow(tid, m, "n_mode_correct" + s, float(maj_ok.sum()), None, None, int(multi.sum()), 0,
                     "strict majority correct: modal answer = the answer"),
            ScoreRow(tid, m, "n_mode_unknown" + s, float(maj_wrong.sum()), None, None, int(multi.sum()), 0,
                     "strict majority wrong: modal answer not released (chosen category not in the data)"),
            ScoreRow(tid, m, "n_mode_tied" + s, float((multi & (num * 2 == den)).sum()), None, None,
                     int(multi.sum()), 0),
        ]
        return rows

    def _model_rows(self, names: list[str], c: TaskColumns, P: np.ndarray, per_code, panel: "_ObserverMatrix",
                    n_obs, n_cor, mv, seed) -> list[list[ScoreRow]]:
        """Rows of the models ``names`` (M) from their records at positions ``P`` (int (M, n) of
        ``c``, each row in (stimulus id, rep) order), models whose records fall on the same human
        columns and k at every position: every bootstrap runs on draws shared by the M models
        (count products for the integer sums, :func:`kappa_resampled` for kappa), each row
        equal to scoring the model alone."""
        tid = self.task_id
        col_of, is_null = per_code
        cols = col_of[c.stimulus[P[0]]]
        n = P.shape[1]
        correct = (c.correct[P] == 1).astype(float)  # (M, n)
        valid = ~is_null[c.response[P]]
        k = mv[P[0]]
        p = n_cor[cols] / n_obs[cols]
        multi = n_obs[cols] >= 2
        known = multi & (n_cor[cols] * 2 > n_obs[cols])
        M = len(names)
        # accuracy and B (match with the modal answer) on the same count draws (seed 000 D.1, D.5)
        acc_b = intervals(masked_mean_counts(with_estimate(n, N_BOOT_B, seed), np.concatenate([correct, correct]),
                                             np.concatenate([valid, valid & known[None]])), N_BOOT_B, seed)
        # kappa aggregate against the panel's per-stimulus accuracy (seed 000 Eq. 2, D.2)
        ka_all = percentile_intervals(kappa_resampled(correct, p, valid, np.arange(n)[None])[0],
                                      kappa_resampled(correct, p, valid, resample_indices(n, N_BOOT_KAPPA, seed)),
                                      N_BOOT_KAPPA, seed)
        a_k = CapacityScorer.accuracy_by_level(with_estimate(n, N_BOOT_B, seed, k), correct, valid, k,
                                               np.array(self.levels))  # (1 + draws, M, L), stratified by k
        a_k_res = {j: intervals(a_k[:, :, j], N_BOOT_B, seed) for j, lev in enumerate(self.levels) if (k == lev).any()}
        gt = _ints_of(c, c.ground_truth[P[0]])
        chance = float(np.mean(1.0 / k))
        floor = position_floor(gt, int(gt.max()))
        out = []
        for i, m in enumerate(names):
            v = valid[i]
            n_null = int((~v).sum())
            rows = [ScoreRow.from_boot(tid, m, "accuracy", acc_b[i], int(v.sum()), n_null)]
            rows.append(ScoreRow.from_boot(
                tid, m, "B", acc_b[M + i], int((v & known).sum()), n_null,
                f"match with the human modal answer on stimuli seen by >= 2 participants whose strict majority "
                f"was correct; {int((multi & ~known).sum())} multi-observer stimuli with a tied or unreleased "
                f"(wrong) mode and {int((~multi).sum())} single-observer stimuli excluded"))
            ka = ka_all[i]
            rows.append(ScoreRow.from_boot(tid, m, "kappa_aggregate", ka, int(v.sum()), n_null,
                                           "" if np.isfinite(ka.estimate) else UNDEFINED_REASON))
            # pairwise: each participant against the model on the stimuli both answered
            per_obs = panel.kappa_per_observer(cols, correct[i], v)
            kp = pct_boot(per_obs, N_BOOT_KAPPA, seed, f"pairwise|{m}")
            n_def = int(np.isfinite(per_obs).sum())  # 0 for no participant
            rows.append(ScoreRow.from_boot(tid, m, "kappa_pairwise", kp, n_def, n_null,
                                           f"mean over {n_def} participants of kappa(model, participant) on the "
                                           f"stimuli both answered ({len(per_obs) - n_def} undefined left out); "
                                           "CI resamples participants"))
            for j, lev in enumerate(self.levels):
                if j in a_k_res:
                    rows.append(ScoreRow.from_boot(tid, m, f"a_k[{lev}]", a_k_res[j][i],
                                                   int(((k == lev) & v).sum()), int((~v[k == lev]).sum())))
            rows.append(ScoreRow(tid, m, "chance", chance, None, None, n, 0,
                                 "mean of 1/k over the answered stimuli (uniform guessing)"))
            rows.append(ScoreRow(tid, m, "position_floor", floor,
                                 None, None, n, 0, "accuracy of always naming the most frequent answer position "
                                 "(seed 000 D.3 floor; the release's answers are not uniform over positions)"))
            rows += null_rows(tid, m, n, n_null, None)
            out.append(rows)
        return out


def _ints_of(c: TaskColumns, codes: np.ndarray) -> np.ndarray:
    """``int(value)`` of each value code in ``codes`` (int64 (n,)), converted once per distinct code."""
    u, inv = np.unique(codes, return_inverse=True)
    return np.array([int(c.values[k]) for k in u.tolist()], np.int64)[inv].reshape(codes.shape)


class _ObserverMatrix:
    """The panel's trials as a padded matrix for kappa(model, participant) of every
    participant at once: participants in sorted name order, each row the participant's
    stimuli (human column indices) in trial order and their 0/1 correctness."""

    def __init__(self, humans: dict[str, dict[str, float]], col: dict[str, int]):
        obs = [humans[o] for o in sorted(humans)]
        width = max(len(d) for d in obs)
        self.cols = np.zeros((len(obs), width), np.int64)
        self.h = np.zeros((len(obs), width))
        self.present = np.zeros((len(obs), width), bool)
        for j, d in enumerate(obs):
            self.cols[j, :len(d)] = [col[s] for s in d]
            self.h[j, :len(d)] = list(d.values())
            self.present[j, :len(d)] = True
        self.n_cols = len(col)

    def kappa_per_observer(self, cols: np.ndarray, correct: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """float (J',): kappa of the model (its records at human columns ``cols`` with
        ``correct`` 0/1 and ``valid``; a later record of a column wins) against each
        participant on the stimuli both answered, for the J' participants sharing at least one
        such stimulus.  Every sum is an integer count (0/1 sides), so each value equals
        :func:`~perceptbench.metrics.error_consistency.kappa` on the participant's common
        stimuli bit for bit."""
        m_c = np.zeros(self.n_cols)
        m_v = np.zeros(self.n_cols, bool)
        m_c[cols] = correct  # repeated columns: numpy assigns in order, the last one stays
        m_v[cols] = valid
        both = self.present & m_v[self.cols]
        keep = both.any(1)
        return kappa(m_c[self.cols][keep], self.h[keep], both[keep])
