"""The shape-bias scorer (Geirhos et al. 2019, cue-conflict experiment): shape bias, the shares
of shape / texture / neither decisions and per-category shape bias of every respondent (models,
published CNNs, each observer), and the observers' mean and range.  Error consistency and the
human ceilings of the same trials come from :class:`~perceptbench.scorers.human_panel.HumanPanelScorer`
(correct = a shape decision); this scorer adds the rows that need the texture class.

Which trials count: cue-conflict trials only, i.e. images whose shape class differs from their
texture class.  The release's 80 images with equal classes are left out, as model-vs-human does
("remove those rows where shape = texture, i.e. no cue conflict present",
``modelvshuman/plotting/analyses.py``, ``ShapeBias.analysis``); the count left out is in each
row's note.  Per category = per *shape* class (the trial CSVs' ``category``, as model-vs-human's
per-category shape-bias plot groups them).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..core.rows import ScoreRow
from ..core.text import counted
from ..metrics.bootstrap import N_BOOT_B
from ..metrics.shape_bias import fraction_counts, shape_bias_counts
from ..record_table import TaskColumns
from .common import intervals, respondent_positions, with_estimate

PANEL = "human:panel"


class ShapeBiasScorer:
    """Shape-bias rows of a cue-conflict task's records.

    ``task_id``: the rows' task id.  ``cues``: stimulus id -> (shape class, texture class), None
    for an id that is not a release image (ValueError naming it).  ``categories``: the classes, in
    the order of the per-category rows.  Rows per respondent (its answered stimuli; observers on
    all cue-conflict images, metric suffix ``@all``, and on the test split, ``@test``):
    ``shape_bias`` (percentile bootstrap over trials, :data:`N_BOOT_B` draws), ``fraction_shape``,
    ``fraction_texture``, ``neither_share`` (shares of the answered trials; a null answer is
    left out and counted in ``n_null``; an observer's ``na`` counts as neither), and
    ``shape_bias.<class>`` per shape class (no interval; n = shape + texture decisions).
    ``human:panel``: ``shape_bias_mean``, ``shape_bias_min``, ``shape_bias_max`` over the
    observers, ``shape_bias_pooled`` (all observers' decisions pooled: the paper's human value,
    95.9% in Fig. 4), ``neither_share_mean`` and ``shape_bias_mean.<class>``, each ``@all`` and
    ``@test``."""

    def __init__(self, task_id: str, cues: Callable[[str], tuple[str, str] | None], categories: tuple[str, ...]):
        self.task_id = task_id
        self.cues = cues
        self.categories = categories

    def _trials(self, c: TaskColumns, pos: np.ndarray):
        """(test-split flag, shape_hit, texture_hit, valid, shape class per trial, n same-class left out)."""
        test, sh, tx, va, cat = [], [], [], [], []
        n_same = 0
        for s, r, sp in zip(c.stimulus[pos].tolist(), c.response[pos].tolist(), c.split[pos].tolist()):
            sid = c.stimuli[s]
            cue = self.cues(sid)
            if cue is None:
                raise ValueError(f"{self.task_id}: stimulus {sid!r} is not a cue-conflict image of the release")
            shape, texture = cue
            if shape == texture:
                n_same += 1
                continue
            ans = c.values[r]
            test.append(c.splits[sp] in (None, "test"))
            sh.append(ans == shape)
            tx.append(ans == texture)
            va.append(ans is not None)
            cat.append(shape)
        return (np.array(test, bool), np.array(sh, float), np.array(tx, float), np.array(va, bool), np.array(cat, object), n_same)

    def _rows(self, model: str, suffix: str, sh, tx, va, cat, n_same: int, seed: int) -> list[ScoreRow]:
        tid, n = self.task_id, len(sh)
        if n == 0:
            return []
        sh, tx = sh * va, tx * va
        w = with_estimate(n, N_BOOT_B, seed)
        sb = intervals(shape_bias_counts(w, sh[None], tx[None]), N_BOOT_B, seed)[0]
        fr = [intervals(fraction_counts(w, x[None], va[None]), N_BOOT_B, seed)[0]
              for x in (sh, tx, (1 - sh - tx))]
        nv, nn = int(va.sum()), int((~va).sum())
        same = f"; {counted(n_same, 'same-class image')} left out" if n_same else ""
        decided = int(sh.sum() + tx.sum())
        rows = [ScoreRow.from_boot(tid, model, "shape_bias" + suffix, sb, decided, nn,
                                   "shape / (shape + texture decisions)" + same),
                ScoreRow.from_boot(tid, model, "fraction_shape" + suffix, fr[0], nv, nn, "share of answered trials" + same),
                ScoreRow.from_boot(tid, model, "fraction_texture" + suffix, fr[1], nv, nn,
                                   "share of answered trials" + same),
                ScoreRow.from_boot(tid, model, "neither_share" + suffix, fr[2], nv, nn,
                                   "share of answered trials naming neither cue" + same)]
        for k in self.categories:
            m = cat == k
            s, t = float(sh[m].sum()), float(tx[m].sum())
            v = s / (s + t) if s + t > 0 else float("nan")
            rows.append(ScoreRow(tid, model, f"shape_bias.{k}{suffix}", v, None, None, int(s + t), int((~va[m]).sum()),
                                 "shape / (shape + texture decisions) on this shape class" if s + t else "undefined: "
                                 "no shape or texture decision on this shape class"))
        return rows

    def score(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Observer rows, then the panel's, then every other respondent's (order of first record).
        ``run_meta.split`` of the observers' records picks the ``@test`` trials."""
        out, panel_src = [], {"all": [], "test": []}
        models = []
        for m, pos in respondent_positions(c):
            name = c.models[m]
            if c.families[c.family[pos[0]]] != "human":
                models.append((name, pos))
                continue
            test, sh, tx, va, cat, n_same = self._trials(c, pos)
            for name_split, keep in (("all", np.ones(len(sh), bool)), ("test", test)):
                rows = self._rows(name, f"@{name_split}", sh[keep], tx[keep], va[keep], cat[keep], n_same, seed)
                out += rows
                panel_src[name_split].append((rows, sh[keep] * va[keep], tx[keep] * va[keep]))
        for name_split, per_obs in panel_src.items():
            if not per_obs:
                continue
            out += self._panel(per_obs, f"@{name_split}", seed)
        for name, pos in models:
            _, sh, tx, va, cat, n_same = self._trials(c, pos)
            out += self._rows(name, "", sh, tx, va, cat, n_same, seed)
        return out

    def _panel(self, per_obs: list, suffix: str, seed: int) -> list[ScoreRow]:
        """Panel rows from each observer's (rows, shape hits, texture hits); ``shape_bias_pooled``:
        all observers' shape decisions over all their shape + texture decisions (the paper's
        human figure, Fig. 4), with a bootstrap over images when every observer has the same
        trials (sorted by stimulus id, so the sums per image are sums over observers)."""
        tid, j = self.task_id, len(per_obs)
        get = [{r.metric: r for r in rows} for rows, _, _ in per_obs]
        sb = np.array([g[f"shape_bias{suffix}"].value for g in get])
        what = f"over {j} observers' shape bias"
        sh = [x for _, x, _ in per_obs]
        tx = [x for _, _, x in per_obs]
        n_dec = int(sum(a.sum() + b.sum() for a, b in zip(sh, tx)))
        pooled_note = f"sum over {j} observers of shape decisions / (shape + texture decisions)"
        if len({len(a) for a in sh}) == 1:
            n = len(sh[0])
            pooled = intervals(shape_bias_counts(with_estimate(n, N_BOOT_B, seed), np.sum(sh, 0)[None],
                                                 np.sum(tx, 0)[None]), N_BOOT_B, seed)[0]
            rows = [ScoreRow.from_boot(tid, PANEL, f"shape_bias_pooled{suffix}", pooled, n_dec, 0,
                                       pooled_note + "; interval: bootstrap over images")]
        else:
            s_all = float(sum(a.sum() for a in sh))
            rows = [ScoreRow(tid, PANEL, f"shape_bias_pooled{suffix}", s_all / n_dec if n_dec else float("nan"),
                             None, None, n_dec, 0, pooled_note + "; no interval: observers saw different images")]
        rows += [ScoreRow(tid, PANEL, f"shape_bias_mean{suffix}", float(np.nanmean(sb)), None, None, j, 0, "mean " + what),
                ScoreRow(tid, PANEL, f"shape_bias_min{suffix}", float(np.nanmin(sb)), None, None, j, 0, "lowest " + what),
                ScoreRow(tid, PANEL, f"shape_bias_max{suffix}", float(np.nanmax(sb)), None, None, j, 0, "highest " + what),
                ScoreRow(tid, PANEL, f"neither_share_mean{suffix}",
                         float(np.nanmean([g[f"neither_share{suffix}"].value for g in get])), None, None, j, 0,
                         "mean over observers of the share of trials naming neither cue")]
        for k in self.categories:
            v = np.array([g[f"shape_bias.{k}{suffix}"].value for g in get])
            rows.append(ScoreRow(tid, PANEL, f"shape_bias_mean.{k}{suffix}",
                                 float(np.nanmean(v)) if np.isfinite(v).any() else float("nan"), None, None,
                                 int(np.isfinite(v).sum()), 0, f"mean over observers of shape_bias.{k}{suffix}"))
        return rows
