"""The Gestalt battery of seed 000 (§2.1, appendix D): closure on silhouettes, similarity
on mark colours and series counting.  THINGS odd-one-out is not runnable offline (its
triplets are on OSF only) and is not registered."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections import Counter, OrderedDict
from functools import lru_cache

import numpy as np

from ..metrics.agreement import masked_mean, masked_mean_counts, null_bracket, position_floor
from ..metrics.bootstrap import (
    N_BOOT_B, N_BOOT_KAPPA, percentile_intervals, resample_counts, resample_indices)
from ..metrics.capacity import HUMAN_BAND, capacity_k
from ..metrics.error_consistency import (
    UNDEFINED_REASON, kappa_counts, kappa_pairwise_counts, leave_one_out_ceiling, pairwise_ceiling,
    pairwise_ceiling_counts)
from ..record_table import TaskColumns, canonical_answer
from ..records import TrialRecord
from ..seeding import rng_for, text_hash
from ..sources import get_source, resolve
from ..stimuli import render, silhouettes
from ..core.rows import ScoreRow
from ..core.settings import Setting
from .base import Stimulus, Task, make_record

# --------------------------------------------------------------------------- helpers


def _null_rows(task_id: str, model: str, n: int, n_null: int, b: float | None) -> list[ScoreRow]:
    """``null_rate`` of a respondent's n trials (n_null null responses) and, with a finite
    B, the null bracket of seed 000 D.4."""
    nu = n_null / n if n else float("nan")
    rows = [ScoreRow(task_id, model, "null_rate", nu, None, None, n, n_null)]
    if b is not None and np.isfinite(b):
        lo, hi = null_bracket(b, nu)
        rows += [ScoreRow(task_id, model, "B_full_low", lo, None, None, n, n_null,
                          "null bracket (1-nu)B <= B_full (seed 000 D.4)"),
                 ScoreRow(task_id, model, "B_full_high", hi, None, None, n, n_null,
                          "null bracket B_full <= (1-nu)B + nu (seed 000 D.4)")]
    return rows


def _kappa_note(value: float) -> str:
    return "" if np.isfinite(value) else UNDEFINED_REASON


def _nanmean(x: np.ndarray, axis: int) -> np.ndarray:
    """np.nanmean without the all-NaN RuntimeWarning (NaN stays NaN, reported by the row)."""
    x = np.asarray(x, float)
    ok = ~np.isnan(x)
    k = ok.sum(axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(k > 0, np.where(ok, x, 0.0).sum(axis) / np.maximum(k, 1), np.nan)


def _nan_extreme(x: np.ndarray, fn) -> float:
    """np.nanmin / np.nanmax, NaN (no warning) when every value is NaN."""
    x = np.asarray(x, float)
    return float(fn(x[~np.isnan(x)])) if (~np.isnan(x)).any() else float("nan")


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN where den is 0 or either side NaN; never clipped."""
    num, den = np.broadcast_arrays(np.asarray(num, float), np.asarray(den, float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((den != 0) & np.isfinite(den), num / np.where(den != 0, den, 1.0), np.nan)


# --------------------------------------------------------------------------- columns (issue 12)

MODEL_BLOCK = 128
"""Respondents scored together on the shared draws: bounds the (draws, block) arrays
(about 100 MiB for the pairwise kappa of 10 observers at 2000 draws)."""


def _model_rows(c: TaskColumns) -> list[tuple[int, np.ndarray]]:
    """(model code, positions of its records sorted by (stimulus_id, rep), ties in record
    order) per model, models in order of first appearance (the order of a dict filled
    record by record)."""
    if not c.n:
        return []
    stim_rank = np.empty(len(c.stimuli), np.int64)
    stim_rank[sorted(range(len(c.stimuli)), key=lambda i: (c.stimuli[i] is not None, c.stimuli[i] or ""))] = \
        np.arange(len(c.stimuli))
    uniq, first = np.unique(c.model, return_index=True)
    app = np.empty(len(c.models), np.int64)
    app[uniq[np.argsort(first)]] = np.arange(len(uniq))
    key = app[c.model]
    order = np.lexsort((c.rep, stim_rank[c.stimulus], key))
    bounds = np.searchsorted(key[order], np.arange(len(uniq) + 1))
    models = uniq[np.argsort(first)]
    return [(int(m), order[bounds[i]:bounds[i + 1]]) for i, m in enumerate(models)]


def _batches(items: list, key) -> list[list]:
    """Items grouped by ``key(item)`` (bytes), groups in order of first item, cut into
    :data:`MODEL_BLOCK`-sized blocks."""
    groups: dict = {}
    for it in items:
        groups.setdefault(key(it), []).append(it)
    return [g[i:i + MODEL_BLOCK] for g in groups.values() for i in range(0, len(g), MODEL_BLOCK)]


def _with_estimate(n: int, n_draws: int, seed: int, strata=None) -> np.ndarray:
    """Weights (1 + n_draws, n): a row of ones (the sample itself: the estimate) over the
    resample counts of :func:`resample_indices` (the draws every bootstrap here uses)."""
    return np.vstack([np.ones((1, n), np.float32), resample_counts(resample_indices(n, n_draws, seed, strata))])


def _intervals(values: np.ndarray, n_draws: int, seed: int):
    """BootstrapResults per column of ``values`` (1 + n_draws, M): row 0 the estimate."""
    return percentile_intervals(values[0], values[1:], n_draws, seed)


# --------------------------------------------------------------------------- human-side cache


def _loo_sides(observers: np.ndarray, resp: list, cols: list[int]) -> dict:
    """Each observer's match with the leave-one-out modal response on ``cols``: bool arrays
    ``loo_match``, ``loo_valid`` of shape (J, len(cols))."""
    J = observers.shape[0]
    loo_modal = [[_mode(resp[c][:j] + resp[c][j + 1:]) for c in cols] for j in range(J)]
    return {"loo_match": np.array([[resp[c][j] is not None and resp[c][j] == h for c, h in zip(cols, loo_modal[j])]
                                   for j in range(J)]),
            "loo_valid": np.array([[h is not None for h in loo_modal[j]] for j in range(J)])}


class _HumanSide(dict):
    """Human-side values of one (task, seed, human data, stimulus columns): computed once and
    shared by every model scored on those stimuli (issue 12).  :meth:`memo` keys a value by
    a name and the bootstrap index matrix it was computed on (by content)."""

    def memo(self, key: tuple, compute):
        name, idx = key
        k = (name, idx.shape, hashlib.sha1(np.ascontiguousarray(idx)).hexdigest())
        if k not in self:
            self[k] = compute()
        return self[k]


class _HumanSideCache:
    """In-process cache of :class:`_HumanSide` entries keyed by (task_id, seed, sha1 of the
    observers' correctness matrix and responses, stimulus columns): a change of human data
    changes the key, so a stale entry is never used.  Holds the 8 most recent entries."""

    def __init__(self, size: int = 8):
        self.size, self.entries = size, OrderedDict()

    def get(self, task_id: str, seed: int, obs: np.ndarray, resp: list, cols: list[int], make) -> _HumanSide:
        h = hashlib.sha1(np.ascontiguousarray(obs, float).tobytes())
        h.update(json.dumps(resp, sort_keys=True, default=str).encode())
        key = (task_id, seed, h.hexdigest(), tuple(cols))
        if key in self.entries:
            self.entries.move_to_end(key)
            return self.entries[key]
        side = _HumanSide(make())
        self.entries[key] = side
        if len(self.entries) > self.size:
            self.entries.popitem(last=False)
        return side


_HUMAN_SIDE = _HumanSideCache()


class _RowCache:
    """Human-side score rows by (task_id, seed, sha1 of the human data): a rescoring with
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


_HUMAN_ROWS = _RowCache()


def _human_hash(*parts) -> str:
    """sha1 over the human data a task's human rows are computed from (observer names,
    stimulus ids, correctness matrix, responses, splits)."""
    h = hashlib.sha1()
    for p in parts:
        h.update(p.tobytes() if isinstance(p, np.ndarray) else json.dumps(p, sort_keys=True, default=str).encode())
    return h.hexdigest()


# --------------------------------------------------------------------------- closure


def _mode(responses: list) -> str | None:
    """Modal response, ``na``/null excluded from the vote; None when the mode is tied."""
    c = Counter(x for x in responses if x != silhouettes.NO_ANSWER and x is not None).most_common()
    return None if not c or (len(c) > 1 and c[0][1] == c[1][1]) else c[0][0]


class SilhouetteTask(Task):
    """``closure.nat.silhouette``: 16-way shape-only recognition of Geirhos et al.'s filled
    silhouettes (seed 000 §2.1).

    Split: per class, a seeded permutation (``rng_for(seed, base_id, "split", class)``) of
    the 10 images; the first 5 are probe-train, the other 5 test (80/80).
    Human reference: the modal response of the 10 observers per image, ``na`` excluded
    from the vote; an image whose mode is tied has no modal reference (excluded from B,
    counted as ``n_tied_mode``; 4 of 160 images).  ``na`` counts as incorrect.
    Encoder readout: nearest class prototype (cosine to the mean probe-train embedding).
    """

    base_id = "closure.nat.silhouette"
    principle = "closure"
    track = "nat"
    response_space = "choice"
    encoder_readout = "prototype_cosine"
    description = "16-way forced choice on Geirhos et al. filled silhouettes vs 10 observers"
    prompt_text = ("What object is shown in this black silhouette? Choose exactly one: "
                   + ", ".join(silhouettes.CLASSES) + ".")
    human_ref_id = "geirhos2019.silhouette.modal"

    def options(self) -> tuple:
        return silhouettes.CLASSES

    def split(self, seed: int) -> dict[str, str]:
        """stimulus_id -> ``"probe_train"`` | ``"test"``."""
        out = {}
        for label in silhouettes.CLASSES:
            perm = rng_for(seed, self.base_id, "split", label).permutation(10) + 1
            for pos, idx in enumerate(perm):
                out[silhouettes.stimulus_id_for(label, int(idx))] = "probe_train" if pos < 5 else "test"
        return out

    def stimuli(self, seed: int) -> list[Stimulus]:
        split = self.split(seed)
        out = []
        for s in silhouettes.silhouette_images():
            out.append(Stimulus(
                s.stimulus_id, split[s.stimulus_id],
                render=(lambda p=s.path: silhouettes.load_image(p)),
                ground_truth=s.label, meta={"source_sha256": s.source_sha256}))
        return out

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        split = {s.stimulus_id: s.split for s in stimuli}
        out = []
        for t in silhouettes.observer_trials():
            out.append(make_record(
                self, stimulus_id=t.stimulus_id, model=f"human:{t.subject}", model_family="human",
                readout="human_trial", response=t.response, ground_truth=t.category,
                manipulated_value=None, raw_output=t.response,
                prompt_id="geirhos2019.silhouette-filled-experiment",
                prompt_hash=text_hash(t.source_path), model_version=f"sha256:{t.source_sha256}",
                seed=seed, run_id=run_id, human_ref_id="geirhos2019.silhouette.raw",
                split=split[t.stimulus_id], source_file=t.source_path, trial=t.trial, rt_s=t.rt_s))
        return out

    # -- scoring
    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns (:class:`TaskColumns`): the human
        panel and observer rows (computed once per task, seed and human data, see
        :data:`_HUMAN_ROWS`), then every model, models on the same stimuli scored together
        on the shared bootstrap draws."""
        tid = self.task_id
        groups = _model_rows(c)
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
        modal = [_mode(rs) for rs in resp]
        rows = _HUMAN_ROWS.get((tid, seed, _human_hash(humans, stim_all, obs, resp, split)),
                               lambda: self._human_rows(humans, stim_all, obs, resp, split, modal, seed))
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
        for batch in _batches(models, lambda x: x[2].tobytes()):
            out.update(self._model_block(c, batch, obs, resp, modal, seed))
        for m, _, _ in models:
            rows += out[m]
        return rows

    def _human_rows(self, humans, stim_all, obs, resp, split, modal, seed) -> list[ScoreRow]:
        """Panel ceilings and per-observer rows, on the declared test split and on all images."""
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
        P = np.stack([pos for _, pos, _ in batch])  # (M, n)
        correct = (c.correct[P] == 1).astype(float)
        valid = c.response[P] != 0
        codes = {canonical_answer(v): i for i, v in enumerate(c.values)}
        modal_c = np.array([-1 if modal[k] is None else codes.get(canonical_answer(modal[k]), -1) for k in cols])
        has_mode = np.array([modal[k] is not None for k in cols])
        match = valid & (c.response[P] == modal_c[None])
        vb = valid & has_mode[None]
        observers = obs[:, cols]
        panel_p = observers.mean(0)
        w_b = _with_estimate(n, N_BOOT_B, seed)
        w_k = _with_estimate(n, N_BOOT_KAPPA, seed)
        acc = _intervals(masked_mean_counts(w_b, correct, valid), N_BOOT_B, seed)
        b_vals = masked_mean_counts(w_b, match, vb)
        b_res = _intervals(b_vals, N_BOOT_B, seed)
        k_vals = kappa_counts(w_k, correct, panel_p, valid)
        ka = _intervals(k_vals, N_BOOT_KAPPA, seed)
        kp = _intervals(kappa_pairwise_counts(w_k, correct, observers, valid), N_BOOT_KAPPA, seed)
        # human ceilings on the same draws, computed once per (task, seed, human data, stimuli)
        col_list = [int(k) for k in cols]
        human = _HUMAN_SIDE.get(tid, seed, obs, resp, col_list, lambda: _loo_sides(observers, resp, col_list))
        loo_match, loo_valid = human["loo_match"], human["loo_valid"]
        ceil_k, ceil_b = [], []
        for i in (np.arange(n)[None, :], resample_indices(n, N_BOOT_KAPPA, seed)):
            ceil_k.append(human.memo(("k", i), lambda: _nanmean(pairwise_ceiling(observers[:, i]), 0)))
        for i in (np.arange(n)[None, :], resample_indices(n, N_BOOT_B, seed)):
            ceil_b.append(human.memo(("b", i), lambda: _nanmean(masked_mean(loo_match[:, i], loo_valid[:, i]), 0)))
        k_ratio = _intervals(_ratio(k_vals, np.concatenate(ceil_k)[:, None]), N_BOOT_KAPPA, seed)
        b_ratio = _intervals(_ratio(b_vals, np.concatenate(ceil_b)[:, None]), N_BOOT_B, seed)
        n_valid, n_null, n_b = valid.sum(1), (~valid).sum(1), vb.sum(1)
        b_note = f"modal match; {int((~has_mode).sum())} tied-mode images excluded"
        out = {}
        for j, (m, _, _) in enumerate(batch):
            nv, nn = int(n_valid[j]), int(n_null[j])
            rows = [ScoreRow.from_boot(tid, m, "accuracy", acc[j], nv, nn),
                    ScoreRow.from_boot(tid, m, "B", b_res[j], int(n_b[j]), nn, note=b_note),
                    ScoreRow.from_boot(tid, m, "kappa_aggregate", ka[j], nv, nn, _kappa_note(ka[j].estimate)),
                    ScoreRow.from_boot(tid, m, "kappa_pairwise", kp[j], nv, nn, _kappa_note(kp[j].estimate))]
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
            rows += _null_rows(tid, m, n, nn, b_res[j].estimate)
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
        loo_modal = [[_mode([responses[o][k] for o in range(J) if o != j]) for k in range(n)] for j in range(J)]
        has_mode = np.array([[h is not None for h in row] for row in loo_modal])
        match = np.array([[r is not None and r == h for r, h in zip(responses[j], loo_modal[j])] for j in range(J)])
        valid = np.ones((J, n), bool)
        acc = _intervals(masked_mean_counts(_with_estimate(n, N_BOOT_B, seed), obs, valid), N_BOOT_B, seed)
        b = _intervals(masked_mean_counts(_with_estimate(n, N_BOOT_B, seed), match, has_mode), N_BOOT_B, seed)
        kl = _intervals(kappa_counts(_with_estimate(n, N_BOOT_KAPPA, seed), obs, loo, valid), N_BOOT_KAPPA, seed)
        rows = []
        for j, m in enumerate(humans):
            rows += [ScoreRow.from_boot(tid, m, "accuracy" + suffix, acc[j], n, 0),
                     ScoreRow.from_boot(tid, m, "B" + suffix, b[j], int(has_mode[j].sum()), 0,
                                        note=f"modal match; {int((~has_mode[j]).sum())} tied-mode images excluded"),
                     ScoreRow.from_boot(tid, m, "kappa_loo" + suffix, kl[j], n, 0,
                                        _kappa_note(kl[j].estimate) or "vs leave-one-out panel mean")]
        return rows

    def _panel_rows(self, obs, modal, name, seed) -> list[ScoreRow]:
        tid, m, n = self.task_id, "human:panel", obs.shape[1]
        acc = obs.mean(1)
        pw = pairwise_ceiling(obs)
        loo = leave_one_out_ceiling(obs)
        w = _with_estimate(n, N_BOOT_KAPPA, seed)
        pw_b = _intervals(_nanmean(pairwise_ceiling_counts(w, obs), 0)[:, None], N_BOOT_KAPPA, seed)[0]
        with np.errstate(invalid="ignore", divide="ignore"):  # one observer: no others, NaN (undefined) rows
            others = (obs.sum(0)[None] - obs) / (obs.shape[0] - 1)
        loo_k = np.ascontiguousarray(kappa_counts(w, obs, others, np.ones(obs.shape, bool)).T)  # (J, 1 + draws)
        loo_b = _intervals(_nanmean(loo_k, 0)[:, None], N_BOOT_KAPPA, seed)[0]
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
        for metric, vals, fn, note in (("ceiling_kappa_pairwise_min", pw, np.min, ""),
                                       ("ceiling_kappa_pairwise_max", pw, np.max, "")):
            v = _nan_extreme(vals, fn)
            rows.append(ScoreRow(tid, m, metric + s, v, None, None, n, 0, why(v, note)))
        rows.append(ScoreRow.from_boot(tid, m, "ceiling_kappa_loo_mean" + s, loo_b, n, 0,
                                       why(loo_b.estimate, loo_note)))
        for metric, fn in (("ceiling_kappa_loo_min", np.min), ("ceiling_kappa_loo_max", np.max)):
            v = _nan_extreme(loo, fn)
            rows.append(ScoreRow(tid, m, metric + s, v, None, None, n, 0, why(v)))
        rows.append(ScoreRow(tid, m, "n_tied_mode" + s, float((~has_mode).sum()), None, None, n, 0,
                             "images whose modal response is tied: no modal reference"))
        return rows


# --------------------------------------------------------------------------- mark colour

TABLEAU10: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
"""Tableau-10 / d3.category10 in the kernel study's stimulus order (uwdata/perceptual-kernels
shared/palettes.js, transcribed in the data mirror's ``palettes_used.json``)."""

KERNELS = ("l5", "l9", "sa", "td", "tm")


@lru_cache(maxsize=8)
def load_color_kernel(name: str) -> np.ndarray:
    """The 10x10 symmetric normalised dissimilarity matrix ``color-<name>.txt`` (float64)."""
    src = get_source("demiralp2014-kernels")
    sf = next(f for f in src.files if f.path.endswith(f"color-{name}.txt"))
    path = resolve(sf)
    try:
        k = np.loadtxt(path, delimiter=",")
    except ValueError as e:
        raise ValueError(f"{path}: cannot parse kernel ({e})") from None
    if k.shape != (10, 10) or not np.allclose(k, k.T):
        raise ValueError(f"{path}: expected a symmetric 10x10 matrix, got shape {k.shape}")
    return k


def kernel_odd_one_out(kernel: np.ndarray, triplet: tuple[int, int, int]) -> int | None:
    """Palette index of the human odd-one-out: the item outside the minimum-dissimilarity
    pair (seed 000 §2.1 "Construction").  None when the minimum is tied (no answer)."""
    i, j, k = triplet
    d = {(i, j): kernel[i, j], (i, k): kernel[i, k], (j, k): kernel[j, k]}
    lo = min(d.values())
    pairs = [p for p, v in d.items() if v == lo]
    if len(pairs) > 1:
        return None
    return ({i, j, k} - set(pairs[0])).pop()


class MarkColorTask(Task):
    """``similarity.chart.mark_color``: odd-one-out over all C(10,3) = 120 Tableau-10
    triplets, human answer from a perceptual kernel (Demiralp et al. 2014).

    Setting ``kernel`` (default ``tm``, triplet matching, the kernel collected with a
    triplet judgement like the task's): one of l5, l9, sa, td, tm.  ``response``/
    ``ground_truth`` are positions 1..3 in the shown order.  A triplet whose minimum pair
    is tied under the kernel has ``ground_truth`` null (excluded, counted).

    Shown order, counterbalanced (issue 7 item 6; seed 000 D.3 reads scores against the
    position floor max_k f_k, so the design keeps it as low as it can): the m triplets
    that have a human answer under the task's kernel get target positions 1, 2, 3 in
    equal numbers, floor(m/3) each, the m mod 3 extra ones at distinct positions drawn by
    ``rng_for(seed, base_id, "position_extra", kernel)``; which triplet gets which
    position is a permutation drawn by ``rng_for(seed, base_id, "positions", kernel)``.
    The two other chips of a triplet, and all three of a tied triplet, are in the order
    of ``rng_for(seed, base_id, "order", triplet)``.  The floor is then ceil(m/3)/m
    (0.333 for the 120 triplets of ``tm``, 0.336 for the 119 of ``l5``/``l9``).  The
    order depends on the kernel, so the image of one stimulus id can differ between
    kernel variants (their task ids differ).
    Encoder readout: embed the three chips; the odd one is outside the most
    cosine-similar pair (exact float ties: the first pair in the order (1,2), (1,3), (2,3)).
    The other four kernels are written as ``human:kernel-<name>`` records so their
    agreement with the task's kernel is scored from records.
    """

    base_id = "similarity.chart.mark_color"
    principle = "similarity"
    track = "chart"
    response_space = "position"
    encoder_readout = "odd_one_out_cosine"
    description = "odd-one-out over Tableau-10 mark colours vs the perceptual kernel"
    prompt_text = ("Three colored chart marks are shown, numbered 1, 2 and 3. Which one is the odd "
                   "one out (least similar in color to the other two)? Answer 1, 2, or 3.")
    defaults = {"kernel": "tm"}
    allowed = {"kernel": KERNELS}

    @property
    def human_ref_id(self) -> str:
        return f"demiralp2014.color-{self.params['kernel']}"

    def options(self) -> tuple:
        return (1, 2, 3)

    def target_positions(self, seed: int) -> dict[tuple[int, int, int], int]:
        """Counterbalanced 0-based target position per triplet that has a human answer
        (class docstring)."""
        kernel = self.params["kernel"]
        kern = load_color_kernel(kernel)
        answered = [t for t in itertools.combinations(range(10), 3) if kernel_odd_one_out(kern, t) is not None]
        m = len(answered)
        extra = rng_for(seed, self.base_id, "position_extra", kernel).choice(3, size=m % 3, replace=False)
        pos = np.concatenate([np.repeat(np.arange(3), m // 3), np.sort(extra)])
        pos = pos[rng_for(seed, self.base_id, "positions", kernel).permutation(m)]
        return {t: int(p) for t, p in zip(answered, pos)}

    def stimuli(self, seed: int) -> list[Stimulus]:
        kern = load_color_kernel(self.params["kernel"])
        positions = self.target_positions(seed)
        out = []
        for trip in itertools.combinations(range(10), 3):
            odd = kernel_odd_one_out(kern, trip)
            if odd is None:
                order = [trip[int(p)] for p in rng_for(seed, self.base_id, "order", trip).permutation(3)]
            else:
                others = [c for c in trip if c != odd]
                order = [others[int(p)] for p in rng_for(seed, self.base_id, "order", trip).permutation(2)]
                order.insert(positions[trip], odd)
            gt = None if odd is None else order.index(odd) + 1
            comps = (lambda o=tuple(order): [render.color_chip(TABLEAU10[c]) for c in o])
            out.append(Stimulus(
                f"mark_{trip[0]}-{trip[1]}-{trip[2]}", "test",
                render=(lambda c=comps: render.numbered_montage(c())),
                ground_truth=gt, components=comps,
                meta={"order": order, "colors": [TABLEAU10[c] for c in order]}))
        return out

    def _floor_rows(self, model: str, targets: list, n: int) -> list[ScoreRow]:
        """Position floor of the non-null targets and the count of null ones (of ``n``)."""
        tid = self.task_id
        t = np.array([x for x in targets if x is not None])
        n_none = sum(x is None for x in targets)
        return [ScoreRow(tid, model, "position_floor", position_floor(t), None, None, len(t), 0,
                         "max_k target-position frequency (seed 000 D.3)"),
                ScoreRow(tid, model, "n_no_human_ref", float(n_none), None, None, n, 0,
                         "triplets with a tied minimum pair under this kernel: excluded")]

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        src = get_source("demiralp2014-kernels")
        out = []
        for name in KERNELS:
            kern = load_color_kernel(name)
            sha = next(f.sha256 for f in src.files if f.path.endswith(f"color-{name}.txt"))
            for s in stimuli:
                order = s.meta["order"]
                odd = kernel_odd_one_out(kern, tuple(sorted(order)))
                resp = None if odd is None else order.index(odd) + 1
                out.append(make_record(
                    self, stimulus_id=s.stimulus_id, model=f"human:kernel-{name}", model_family="human",
                    readout="human_kernel", response=resp, ground_truth=s.ground_truth,
                    manipulated_value=None,
                    raw_output=json.dumps({"odd_palette_index": odd, "order": order}),
                    prompt_id=f"demiralp2014.color-{name}", prompt_hash=text_hash(sha),
                    model_version=f"sha256:{sha}", seed=seed, run_id=run_id,
                    split=s.split, order=order))
        return out

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns: B against the kernel's odd-one-out
        per respondent (respondents with as many trials scored together on the shared
        draws), floors and null rates per model, agreement between the kernels."""
        tid = self.task_id
        rows: list[ScoreRow] = []
        groups = [(c.models[m], pos) for m, pos in _model_rows(c)]
        ref = f"human:kernel-{self.params['kernel']}"
        scored = [(m, pos) for m, pos in groups if m != ref]  # the reference itself is not scored
        b_of: dict[str, object] = {}
        for batch in _batches(scored, lambda x: len(x[1]).to_bytes(8, "little")):
            P = np.stack([pos for _, pos in batch])
            valid = (c.response[P] != 0) & (c.ground_truth[P] != 0)
            match = c.correct[P] == 1
            res = _intervals(masked_mean_counts(_with_estimate(P.shape[1], N_BOOT_B, seed), match, valid),
                             N_BOOT_B, seed)
            b_of.update({m: (r, int(v.sum())) for (m, _), r, v in zip(batch, res, valid)})
        floors: dict[bytes, list[ScoreRow]] = {}
        for m, pos in scored:
            b, n_valid = b_of[m]
            n, n_null = len(pos), int((c.response[pos] == 0).sum())
            rows.append(ScoreRow.from_boot(tid, m, "B", b, n_valid, n_null, "agreement with the kernel's odd-one-out"))
            if not m.startswith("human:"):
                gt = c.ground_truth[pos]
                key = gt.tobytes()
                if key not in floors:
                    floors[key] = self._floor_rows("", [c.values[g] for g in gt.tolist()], n)
                rows += [dataclasses.replace(r, model=m) for r in floors[key]]
                rows += _null_rows(tid, m, n, n_null, b.estimate)
        if groups:
            rows += self._floor_rows("human:kernels", [c.values[g] for g in c.ground_truth[groups[0][1]].tolist()],
                                     len(groups[0][1]))
        # agreement between kernels, from the kernel records (uses the last group's n)
        kern = {m.split("-", 1)[1]: {c.stimuli[s]: c.values[r] for s, r in zip(c.stimulus[pos].tolist(),
                                                                                c.response[pos].tolist())}
                for m, pos in groups if m.startswith("human:kernel-")}
        if len(kern) > 1:
            diffs = []
            for a, b_ in itertools.combinations(sorted(kern), 2):
                common = sorted(set(kern[a]) & set(kern[b_]))
                nd = sum(kern[a][s] != kern[b_][s] for s in common)
                diffs.append(nd)
                rows.append(ScoreRow(tid, "human:kernels", f"n_differ[{a}~{b_}]", float(nd), None, None,
                                     len(common), 0, "triplets whose human answer differs between kernels"))
            rows.append(ScoreRow(tid, "human:kernels", "n_differ_min", float(min(diffs)), None, None,
                                 len(common), 0))
            rows.append(ScoreRow(tid, "human:kernels", "n_differ_max", float(max(diffs)), None, None,
                                 len(common), 0))
        return rows


# --------------------------------------------------------------------------- series count

TAB20: tuple[str, ...] = (
    "#1f77b4", "#aec7e8", "#ff7f0e", "#ffbb78", "#2ca02c", "#98df8a", "#d62728", "#ff9896",
    "#9467bd", "#c5b0d5", "#8c564b", "#c49c94", "#e377c2", "#f7b6d2", "#7f7f7f", "#c7c7c7",
    "#bcbd22", "#dbdb8d", "#17becf", "#9edae5")
"""Tableau-20 (d3.category20 / matplotlib tab20): the categorical palette for series."""

SERIES_K = tuple(range(2, 17))
SERIES_IMAGE_PX = 384
SERIES_RADIUS_PX = 6
SERIES_POINTS_PER_SERIES = 10
SERIES_FIELD = (0.15, 0.85)
"""Points lie in the central 70% of the image (fractions of its side), so a centre crop
of 87.5% (timm's default) keeps every point."""


def render_series_stimulus(seed: int, split: str, index: int) -> tuple[int, callable, dict]:
    """k, a renderer and metadata for one scatterplot.

    k = 2 + (index mod 15) (so k = 2..16 cycle); k colours drawn without replacement from
    Tableau-20; 10 points per series, uniform in the central field; drawing order
    shuffled across series.  Deterministic in (seed, split, index)."""
    k = SERIES_K[index % len(SERIES_K)]
    rng = rng_for(seed, "similarity.chart.series_count", split, index)
    colors = [TAB20[c] for c in rng.choice(len(TAB20), size=k, replace=False)]
    n = k * SERIES_POINTS_PER_SERIES
    lo, hi = (f * SERIES_IMAGE_PX for f in SERIES_FIELD)
    xy = rng.uniform(lo, hi, size=(n, 2))
    series = rng.permutation(np.repeat(np.arange(k), SERIES_POINTS_PER_SERIES))
    return k, (lambda: render.scatterplot(xy, colors, series, SERIES_IMAGE_PX, SERIES_RADIUS_PX)), {
        "colors": colors, "points_per_series": SERIES_POINTS_PER_SERIES}


class SeriesCountTask(Task):
    """``similarity.chart.series_count``: how many colour series in a bare scatterplot.

    40 test stimuli and a disjoint probe-train split (``n_probe`` stimuli, default 150 = 10
    per k); k = 2..16 series.  No per-trial human data exist: scored against the human
    categorical-colour capacity band 6-12 through a(k) (seed 000 §2.1, §2.3).  Encoder
    readout: ridge regression on embeddings (alpha by 5-fold CV on probe-train only),
    rounded and clipped to 2..16.  A VLM's count answer must be an integer 1..20.
    """

    base_id = "similarity.chart.series_count"
    principle = "similarity"
    track = "chart"
    response_space = "count"
    encoder_readout = "ridge_round"
    description = "count colour series in scatterplots; a(k) vs the 6-12 capacity band"
    prompt_text = ("How many distinct color series (groups of same-colored points) are in this "
                   "scatterplot? Answer with a single integer.")
    human_ref_id = "capacity-band.healey1996-ware2013"
    defaults = {"n_test": "40", "n_probe": "150"}
    settings = {"n_test": Setting("int", 1, 100_000), "n_probe": Setting("int", 0, 100_000)}

    def options(self) -> tuple:
        return tuple(range(1, 21))

    def stimuli(self, seed: int) -> list[Stimulus]:
        out = []
        for split, n in (("probe_train", int(self.params["n_probe"])), ("test", int(self.params["n_test"]))):
            for i in range(n):
                k, rend, meta = render_series_stimulus(seed, split, i)
                sid = f"series_{'p' if split == 'probe_train' else 't'}{i:03d}_k{k}"
                out.append(Stimulus(sid, split, render=rend, ground_truth=k, manipulated_value=k, meta=meta))
        return out

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns: per model accuracy, mean absolute
        error, a(k) per rendered k, capacity_k and its in-band probability (seed 000 §2.3),
        every bootstrap stratified by k; models with the same trials (n and k per position)
        are scored together on the shared draws."""
        tid = self.task_id
        rows: list[ScoreRow] = []
        levels = np.array(SERIES_K)
        num = np.array([float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                        for v in c.values])
        models = []
        for m, pos in _model_rows(c):
            k = np.array([int(c.values[x]) for x in c.manipulated_value[pos].tolist()])
            models.append((c.models[m], pos, k))
        out: dict[str, list[ScoreRow]] = {}
        for batch in _batches(models, lambda x: x[2].tobytes()):
            out.update(self._model_block(c, batch, num, levels, seed))
        for m, _, _ in models:
            rows += out[m]
        return rows

    def _model_block(self, c: TaskColumns, batch, num: np.ndarray, levels: np.ndarray,
                     seed: int) -> dict[str, list[ScoreRow]]:
        tid = self.task_id
        k = batch[0][2]
        n = len(k)
        P = np.stack([pos for _, pos, _ in batch])  # (M, n)
        M = len(batch)
        correct = (c.correct[P] == 1).astype(float)
        valid = c.response[P] != 0
        err = np.where(valid, np.abs(num[c.response[P]] - num[c.ground_truth[P]]), 0.0)
        # the draws every row bootstraps on (stratified by k), row 0 the sample itself
        w = _with_estimate(n, N_BOOT_B, seed, k)
        acc = _intervals(masked_mean_counts(w, correct, valid), N_BOOT_B, seed)
        mae = _intervals(masked_mean_counts(w, err, valid), N_BOOT_B, seed)
        # a(k) per model (1 + draws, M, L): the mean over the stimuli rendered with k only
        # (stratified draws keep them in their stratum), NaN for a level with none valid
        a_all = np.full((w.shape[0], M, len(levels)), np.nan)
        for j, lev in enumerate(levels):
            at = np.flatnonzero(k == lev)
            if at.size:
                a_all[:, :, j] = masked_mean_counts(np.ascontiguousarray(w[:, at]), correct[:, at], valid[:, at])
        cap = capacity_k(a_all, levels)  # (1 + draws, M)
        cap_res = _intervals(cap, N_BOOT_B, seed)
        a_res = {j: _intervals(a_all[:, :, j], N_BOOT_B, seed) for j, lev in enumerate(levels) if (k == lev).any()}
        out = {}
        for i, (m, _, _) in enumerate(batch):
            v = valid[i]
            n_null = int((~v).sum())
            rows = [ScoreRow.from_boot(tid, m, "accuracy", acc[i], int(v.sum()), n_null, "bootstrap stratified by k"),
                    ScoreRow.from_boot(tid, m, "mean_abs_error", mae[i], int(v.sum()), n_null,
                                       "|response - k| over parseable answers; bootstrap stratified by k")]
            for j, res in a_res.items():
                lev = levels[j]
                rows.append(ScoreRow.from_boot(tid, m, f"a_k[{lev}]", res[i], int(((k == lev) & v).sum()),
                                               int((~v[k == lev]).sum())))
            cr = cap_res[i]
            note = ("" if np.isfinite(cr.estimate) else
                    "a(k) never fell below half of mean a(k<=4) within k=2..16, or baseline is 0")
            rows.append(ScoreRow.from_boot(tid, m, "capacity_k", cr, n, n_null,
                                           note or "smallest k with a(k) < 0.5 mean a(k<=4); "
                                           "bootstrap stratified by k"))
            rep = float(np.isfinite(cr.estimate) and HUMAN_BAND[0] <= cr.estimate <= HUMAN_BAND[1])
            rows.append(ScoreRow(tid, m, "replicates", rep, None, None, n, n_null,
                                 f"1 if the capacity_k point estimate lies in the human band "
                                 f"{HUMAN_BAND[0]}-{HUMAN_BAND[1]}; read with capacity_in_band_prob"))
            draws = cap[1:, i]  # the same draws as capacity_k's interval
            in_band = np.isfinite(draws) & (draws >= HUMAN_BAND[0]) & (draws <= HUMAN_BAND[1])
            rows.append(ScoreRow(tid, m, "capacity_in_band_prob", float(in_band.mean()), None, None, n, n_null,
                                 "fraction of the capacity_k bootstrap draws (stratified by k) inside the human "
                                 "band; undefined draws count as outside", N_BOOT_B, 0, seed))
            rows += _null_rows(tid, m, n, n_null, None)
            out[m] = rows
        return out
