"""The human-panel scorer (seed 000 appendix D.1-D.5): a task whose human data are the trials of
a panel of observers on the same stimuli (Geirhos et al. 2019 silhouettes).  One object owns
the metrics and their ceilings, the way Brain-Score puts a metric and its ceiling on one
benchmark: per model accuracy, B against the modal response, kappa in both forms (aggregate
against the panel's per-stimulus accuracy, pairwise per observer averaged) and their ratios to
the human ceilings; per panel the pairwise and leave-one-out kappa ceilings; per observer
accuracy, B and kappa against the others.  Its caches of human-side values belong to the
scorer (one per task instance), never to the module."""

from __future__ import annotations

import hashlib
import json
from collections import Counter, OrderedDict

import numpy as np

from ..core.rows import ScoreRow
from ..core.text import counted
from ..metrics.agreement import masked_mean_counts
from ..metrics.bootstrap import N_BOOT_B, N_BOOT_KAPPA
from ..metrics.error_consistency import (
    UNDEFINED_REASON, kappa_counts, kappa_pairwise_counts, leave_one_out_ceiling, pairwise_ceiling,
    pairwise_ceiling_counts)
from ..record_table import TaskColumns, canonical_answer
from .common import (batches, block_answers, intervals, kappa_note, nan_extreme, nanmean, null_rows, ratio,
                     respondent_positions, with_estimate)


def tied_mode_note(n_tied: int) -> str:
    """The note of a B row: ``"modal match; 1 tied-mode image excluded"`` (``n_tied`` stimuli
    whose human modal answer is tied have no modal reference and are left out of B)."""
    return f"modal match; {counted(n_tied, 'tied-mode image')} excluded"

def _loo_sides(observers: np.ndarray, resp: list, cols: list[int], mode) -> dict:
    """Each observer's match with the leave-one-out modal response on ``cols``: bool arrays
    ``loo_match``, ``loo_valid`` of shape (J, len(cols))."""
    J = observers.shape[0]
    loo_modal = [[mode(resp[c][:j] + resp[c][j + 1:]) for c in cols] for j in range(J)]
    return {"loo_match": np.array([[resp[c][j] is not None and resp[c][j] == h for c, h in zip(cols, loo_modal[j])]
                                   for j in range(J)]),
            "loo_valid": np.array([[h is not None for h in loo_modal[j]] for j in range(J)])}


class _HumanSide(dict):
    """Human-side values of one (seed, human data, stimulus columns): computed once and
    shared by every model scored on those stimuli (issue 12).  The bootstrap draws are a
    function of the seed and the stimulus count, both in the key, so :meth:`memo` keys a
    value by its name alone."""

    def memo(self, name: str, compute):
        """The value named ``name``, computed by ``compute()`` the first time."""
        if name not in self:
            self[name] = compute()
        return self[name]


class _HumanSideCache:
    """In-process cache of :class:`_HumanSide` entries keyed by (seed, sha1 of the
    observers' correctness matrix and responses, stimulus columns): a change of human data
    changes the key, so a stale entry is never used.  Holds the 8 most recent entries."""

    def __init__(self, size: int = 8):
        self.size, self.entries = size, OrderedDict()

    def get(self, seed: int, obs: np.ndarray, resp: list, cols: list[int], make) -> _HumanSide:
        h = hashlib.sha1(np.ascontiguousarray(obs, float).tobytes())
        h.update(json.dumps(resp, sort_keys=True, default=str).encode())
        key = (seed, h.hexdigest(), tuple(cols))
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        side = _HumanSide(make())
        self.entries[key] = side
        if len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return side




class _RowCache:
    """Human-side score rows by (seed, sha1 of the human data): a rescoring with
    unchanged human data reuses them, a change of human data changes the key.  Holds the
    8 most recent entries; returns a fresh list (the rows themselves are not modified)."""

    def __init__(self, size: int = 8):
        self.size, self.entries = size, OrderedDict()

    def get(self, key: tuple, make) -> list[ScoreRow]:
        if key not in self.entries:
            self.entries[key] = make()
            if len(self.entries) > self.size:
                self.entries.popitem(last=False)
        self.entries.move_to_end(key)
        return list(self.entries[key])




def _human_hash(*parts) -> str:
    """sha1 over the human data a task's human rows are computed from (observer names,
    stimulus ids, correctness matrix, responses, splits)."""
    h = hashlib.sha1()
    for p in parts:
        h.update(p.tobytes() if isinstance(p, np.ndarray) else json.dumps(p, sort_keys=True, default=str).encode())
    return h.hexdigest()


def modal_response(responses: list, no_answer=None):
    """Modal response of ``responses``, ``no_answer`` and null excluded from the vote; None
    when the mode is tied or nothing votes (seed 000 D.1: B against the modal response)."""
    c = Counter(x for x in responses if x != no_answer and x is not None).most_common()
    return None if not c or (len(c) > 1 and c[0][1] == c[1][1]) else c[0][0]


class HumanPanelScorer:
    """Scores a task's records (:class:`TaskColumns`) against a panel of human observers.

    ``task_id``: the rows' task id.  ``no_answer``: the response that means "no answer"
    (``na`` in Geirhos et al.'s data): it never votes for the modal response and counts as
    incorrect.  Human records are those of family ``human``; every observer must have a
    trial on every stimulus of the panel (ValueError otherwise, naming the observer).  The
    human-side rows and draws are computed once per (seed, human data, stimuli) and kept by
    this object (8 entries each), so every model scored by it reuses them."""

    def __init__(self, task_id: str, no_answer: str | None = None):
        self.task_id = task_id
        self.no_answer = no_answer
        self._human_side = _HumanSideCache()
        self._row_cache = _RowCache()

    def mode(self, responses: list):
        """Modal response, :attr:`no_answer`/null excluded from the vote; None when tied."""
        return modal_response(responses, self.no_answer)

    def score(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns (:class:`TaskColumns`): the human
        panel and observer rows (:meth:`ceiling_rows`, computed once per seed and human data
        and kept by the scorer), then every model, models on the same stimuli scored
        together on the shared bootstrap draws."""
        tid = self.task_id
        groups = respondent_positions(c)
        human_pos = {c.models[m]: pos for m, pos in groups if c.families[c.family[pos[0]]] == "human"}
        humans = sorted(human_pos)
        if not humans:
            raise ValueError(f"{tid}: no human observer records to score against")
        stim_all = sorted({c.stimuli[s] for m in humans for s in c.stimulus[human_pos[m]]})
        col = {s: i for i, s in enumerate(stim_all)}
        obs = np.zeros((len(humans), len(stim_all)))
        resp: list[list] = [[] for _ in stim_all]
        split: dict[str, str] = {}
        for j, m in enumerate(humans):
            seen = set()
            pos = human_pos[m]
            for s, corr, r, sp in zip(c.stimulus[pos].tolist(), c.correct[pos].tolist(), c.response[pos].tolist(),
                                      c.split[pos].tolist()):
                s = c.stimuli[s]
                obs[j, col[s]] = float(corr == 1)
                resp[col[s]].append(c.values[r])
                split[s] = "test" if c.splits[sp] is None else c.splits[sp]
                seen.add(s)
            if len(seen) != len(stim_all):
                raise ValueError(f"{tid}: observer {m} lacks trials for {len(stim_all) - len(seen)} stimuli")
        modal = [self.mode(rs) for rs in resp]
        rows = self._row_cache.get((seed, _human_hash(humans, stim_all, obs, resp, split)),
                                   lambda: self.ceiling_rows(humans, stim_all, obs, resp, split, modal, seed))
        # models: scored on the stimuli they answered (the test split)
        col_of = np.array([col.get(s, -1) for s in c.stimuli], np.int64)
        models = []
        for m, pos in groups:
            if c.models[m] in human_pos:
                continue
            cols = col_of[c.stimulus[pos]]
            if (cols < 0).any():
                bad = c.stimuli[c.stimulus[pos][np.argmax(cols < 0)]]
                raise ValueError(f"{tid}: {c.models[m]} answered {bad}, which has no human data")
            models.append((c.models[m], pos, cols))
        out: dict[str, list[ScoreRow]] = {}
        for batch in batches(models, lambda x: x[2].tobytes()):
            out.update(self._model_block(c, batch, obs, resp, modal, seed))
        for m, _, _ in models:
            rows += out[m]
        return rows

    def ceiling_rows(self, humans: list[str], stim_all: list[str], obs: np.ndarray, resp: list[list],
                     split: dict[str, str], modal: list, seed: int) -> list[ScoreRow]:
        """The human side: panel ceilings (``human:panel``: observer accuracy, pairwise and
        leave-one-out kappa ceilings, mean observer B) and per-observer rows, on the declared
        test split and on all stimuli.  ``humans``: J observer names; ``stim_all``: n stimulus
        ids; ``obs``: float (J, n) 0/1 correctness; ``resp``: per stimulus the J responses;
        ``split``: stimulus -> split; ``modal``: per stimulus the modal response or None."""
        tid = self.task_id
        col = {s: i for i, s in enumerate(stim_all)}
        rows: list[ScoreRow] = []
        for name, cols in (("test", [col[s] for s in stim_all if split[s] == "test"]),
                           ("all", list(range(len(stim_all))))):
            if not cols:
                continue
            panel = self._panel_rows(obs[:, cols], [modal[c] for c in cols], name, seed)
            observer_rows = self._observer_rows(humans, obs[:, cols], [[resp[c][j] for c in cols]
                                                                       for j in range(len(humans))], name, seed)
            b_obs = [x.value for x in observer_rows if x.metric == f"B@{name}"]
            panel.append(ScoreRow(tid, "human:panel", f"observer_B_mean@{name}", float(np.mean(b_obs)), None, None,
                                  len(cols), 0, "mean over observers of B against the modal response of the "
                                  "other observers (leave-one-out mode)"))
            rows += panel + observer_rows
        return rows

    def _model_block(self, c: TaskColumns, batch, obs, resp, modal, seed) -> dict[str, list[ScoreRow]]:
        """Rows of models answering the same stimuli (``cols``: human columns, shape (n,)):
        accuracy, B, kappa_aggregate, kappa_pairwise, ``kappa_over_ceiling`` =
        kappa_aggregate / mean pairwise human kappa, ``B_over_ceiling`` = B / mean observer B
        against the leave-one-out mode (seed 000 D.2, the 0.489 pairwise ceiling; D.3, B
        quoted as a fraction of its ceiling; ratios with a paired bootstrap, numerator and
        ceiling on the same draws, never clipped), null rate and bracket (D.4).  Every
        statistic of every model in the block is computed at once from the shared resample
        counts (seed 000 D.5); each equals the per-model bootstrap of the same statistic."""
        tid = self.task_id
        cols = batch[0][2]
        n = len(cols)
        P, correct, valid = block_answers(c, batch)  # (M, n) each
        codes = {canonical_answer(v): i for i, v in enumerate(c.values)}
        modal_c = np.array([-1 if modal[k] is None else codes.get(canonical_answer(modal[k]), -1) for k in cols])
        has_mode = np.array([modal[k] is not None for k in cols])
        match = valid & (c.response[P] == modal_c[None])
        vb = valid & has_mode[None]
        observers = obs[:, cols]
        panel_p = observers.mean(0)
        w_b = with_estimate(n, N_BOOT_B, seed)
        w_k = with_estimate(n, N_BOOT_KAPPA, seed)
        acc = intervals(masked_mean_counts(w_b, correct, valid), N_BOOT_B, seed)
        b_vals = masked_mean_counts(w_b, match, vb)
        b_res = intervals(b_vals, N_BOOT_B, seed)
        k_vals = kappa_counts(w_k, correct, panel_p, valid)
        ka = intervals(k_vals, N_BOOT_KAPPA, seed)
        kp = intervals(kappa_pairwise_counts(w_k, correct, observers, valid), N_BOOT_KAPPA, seed)
        # human ceilings on the same draws, computed once per (task, seed, human data, stimuli)
        col_list = [int(k) for k in cols]
        human = self._human_side.get(seed, obs, resp, col_list, lambda: _loo_sides(observers, resp, col_list, self.mode))
        loo_match, loo_valid = human["loo_match"], human["loo_valid"]
        # the human ceilings on the models' draws (w_k, w_b; row 0 the sample): integer count sums, equal
        # bit for bit to the ceilings recomputed on each gathered resample
        ceil_k = human.memo("k", lambda: nanmean(pairwise_ceiling_counts(w_k, observers), 0))
        ceil_b = human.memo("b", lambda: nanmean(np.ascontiguousarray(
            masked_mean_counts(w_b, loo_match, loo_valid).T), 0))
        k_ratio = intervals(ratio(k_vals, ceil_k[:, None]), N_BOOT_KAPPA, seed)
        b_ratio = intervals(ratio(b_vals, ceil_b[:, None]), N_BOOT_B, seed)
        n_valid, n_null, n_b = valid.sum(1), (~valid).sum(1), vb.sum(1)
        b_note = tied_mode_note(int((~has_mode).sum()))
        out = {}
        for j, (m, _, _) in enumerate(batch):
            nv, nn = int(n_valid[j]), int(n_null[j])
            rows = [ScoreRow.from_boot(tid, m, "accuracy", acc[j], nv, nn),
                    ScoreRow.from_boot(tid, m, "B", b_res[j], int(n_b[j]), nn, note=b_note),
                    ScoreRow.from_boot(tid, m, "kappa_aggregate", ka[j], nv, nn, kappa_note(ka[j].estimate)),
                    ScoreRow.from_boot(tid, m, "kappa_pairwise", kp[j], nv, nn, kappa_note(kp[j].estimate))]
            for metric, res, what in (
                    ("kappa_over_ceiling", k_ratio[j],
                     "kappa_aggregate / ceiling_kappa_pairwise_mean (mean kappa over observer pairs)"),
                    ("B_over_ceiling", b_ratio[j],
                     "B / observer_B_mean (observers vs the leave-one-out modal response)")):
                if not np.isfinite(res.estimate):
                    note = f"undefined: {what.split(' / ')[0]} or its human ceiling is undefined or 0"
                elif res.estimate > 1:
                    note = (f"{what}; above 1: the model agrees with the panel more than the average human "
                            "does (not clipped; read with the interval)")
                else:
                    note = what
                rows.append(ScoreRow.from_boot(tid, m, metric, res, n, nn, note))
            rows += null_rows(tid, m, n, nn, b_res[j].estimate)
            out[m] = rows
        return out

    def _observer_rows(self, humans, obs, responses, name, seed) -> list[ScoreRow]:
        """accuracy, B (against the modal response of the other observers) and kappa_loo
        (against the other observers' mean accuracy) of every observer, all observers at once
        on the shared resample counts; ``obs`` (J, n) 0/1, ``responses`` J lists of n."""
        tid, suffix = self.task_id, f"@{name}"
        J, n = obs.shape
        with np.errstate(invalid="ignore", divide="ignore"):  # J = 1: no other observers, NaN (undefined) rows
            loo = (obs.sum(0)[None] - obs) / (J - 1)
        loo_modal = [[self.mode([responses[o][k] for o in range(J) if o != j]) for k in range(n)] for j in range(J)]
        has_mode = np.array([[h is not None for h in row] for row in loo_modal])
        match = np.array([[r is not None and r == h for r, h in zip(responses[j], loo_modal[j])] for j in range(J)])
        valid = np.ones((J, n), bool)
        acc = intervals(masked_mean_counts(with_estimate(n, N_BOOT_B, seed), obs, valid), N_BOOT_B, seed)
        b = intervals(masked_mean_counts(with_estimate(n, N_BOOT_B, seed), match, has_mode), N_BOOT_B, seed)
        kl = intervals(kappa_counts(with_estimate(n, N_BOOT_KAPPA, seed), obs, loo, valid), N_BOOT_KAPPA, seed)
        rows = []
        for j, m in enumerate(humans):
            rows += [ScoreRow.from_boot(tid, m, "accuracy" + suffix, acc[j], n, 0),
                     ScoreRow.from_boot(tid, m, "B" + suffix, b[j], int(has_mode[j].sum()), 0,
                                        note=tied_mode_note(int((~has_mode[j]).sum()))),
                     ScoreRow.from_boot(tid, m, "kappa_loo" + suffix, kl[j], n, 0,
                                        kappa_note(kl[j].estimate) or "vs leave-one-out panel mean")]
        return rows

    @staticmethod
    def ceilings(obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The panel's two kappa ceilings (seed 000 D.2): kappa of every observer pair
        (float64 (J(J-1)/2,), itertools.combinations order) and of every observer against
        the mean accuracy of the other J-1 (float64 (J,)); ``obs`` float (J, n) 0/1
        correctness of J observers on the same n stimuli.  NaN where undefined."""
        return pairwise_ceiling(obs), leave_one_out_ceiling(obs)

    def _panel_rows(self, obs, modal, name, seed) -> list[ScoreRow]:
        tid, m, n = self.task_id, "human:panel", obs.shape[1]
        acc = obs.mean(1)
        pw, loo = self.ceilings(obs)
        w = with_estimate(n, N_BOOT_KAPPA, seed)
        pw_b = intervals(nanmean(pairwise_ceiling_counts(w, obs), 0)[:, None], N_BOOT_KAPPA, seed)[0]
        with np.errstate(invalid="ignore", divide="ignore"):  # one observer: no others, NaN (undefined) rows
            others = (obs.sum(0)[None] - obs) / (obs.shape[0] - 1)
        loo_k = np.ascontiguousarray(kappa_counts(w, obs, others, np.ones(obs.shape, bool)).T)  # (J, 1 + draws)
        loo_b = intervals(nanmean(loo_k, 0)[:, None], N_BOOT_KAPPA, seed)[0]
        s = f"@{name}"
        has_mode = np.array([h is not None for h in modal])

        def why(value: float, note: str = "") -> str:
            """The note of a ceiling row; an undefined one carries its reason."""
            if np.isfinite(value):
                return note
            return (f"undefined: every observer pair's kappa is undefined ({UNDEFINED_REASON})"
                    + (f"; {note}" if note else ""))

        n_pw_undef = int(np.isnan(pw).sum())
        pw_note = f"mean over {len(pw)} observer pairs" + (
            f"; {n_pw_undef} pair(s) with undefined kappa left out" if n_pw_undef else "")
        loo_note = "each observer vs leave-one-out mean of the others"
        rows = [
            ScoreRow(tid, m, "observer_accuracy_mean" + s, float(acc.mean()), None, None, n, 0),
            ScoreRow(tid, m, "observer_accuracy_min" + s, float(acc.min()), None, None, n, 0),
            ScoreRow(tid, m, "observer_accuracy_max" + s, float(acc.max()), None, None, n, 0),
            ScoreRow.from_boot(tid, m, "ceiling_kappa_pairwise_mean" + s, pw_b, n, 0, why(pw_b.estimate, pw_note)),
        ]
        for metric, fn in (("ceiling_kappa_pairwise_min", np.min), ("ceiling_kappa_pairwise_max", np.max)):
            v = nan_extreme(pw, fn)
            rows.append(ScoreRow(tid, m, metric + s, v, None, None, n, 0, why(v)))
        rows.append(ScoreRow.from_boot(tid, m, "ceiling_kappa_loo_mean" + s, loo_b, n, 0,
                                       why(loo_b.estimate, loo_note)))
        for metric, fn in (("ceiling_kappa_loo_min", np.min), ("ceiling_kappa_loo_max", np.max)):
            v = nan_extreme(loo, fn)
            rows.append(ScoreRow(tid, m, metric + s, v, None, None, n, 0, why(v)))
        rows.append(ScoreRow(tid, m, "n_tied_mode" + s, float((~has_mode).sum()), None, None, n, 0,
                             "images whose modal response is tied: no modal reference"))
        return rows

