"""The kernel odd-one-out scorer (seed 000 §2.1 "Construction", D.1, D.3, D.4): a triplet task
whose human answer comes from a perceptual kernel, a symmetric dissimilarity matrix
(Demiralp et al. 2014): the odd one out is the item outside the least dissimilar pair.  One
object owns the metric and its reference points: B against the reference kernel's answer
per respondent, the position floor (max_k f_k of the target positions), and the human
spread, how many answers differ between the other kernels (``human:kernel-<name>``
respondents).  Where the task also carries the study's per-subject raw odd-one-out judgments
(``human:subject-NN`` respondents, issue 23 item 1), the human-panel scorer of the silhouette
task scores the models against those subjects too (:meth:`KernelOddOneOutScorer.panel_rows`)."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..core.rows import ScoreRow
from ..metrics.agreement import masked_mean_counts, pairwise_agreement, position_floor
from ..metrics.bootstrap import N_BOOT_B, BootstrapResult
from ..record_table import TaskColumns
from .common import batches, intervals, null_rows, respondent_positions, with_estimate
from .human_panel import HumanPanelScorer

SUBJECT_PREFIX = "human:subject-"
"""Respondent names of the per-subject raw judgments (one record per subject and triplet)."""
CATCH_SPLIT = "catch"
"""``run_meta.split`` of a subject's answers to the study's catch triplets (a mark shown twice
beside another, Demiralp et al. 2014 release, ``d1`` of the experiment pages): scored only as
the subject's ``catch_accuracy`` and for screening (``min_catch``)."""

PANEL_RENAME = {"B": "B_subject_mode", "B_over_ceiling": "B_subject_mode_over_ceiling",
                "kappa_aggregate": "kappa_aggregate", "kappa_pairwise": "kappa_pairwise",
                "kappa_over_ceiling": "kappa_over_ceiling"}
"""The human-panel rows a model keeps on a kernel task, renamed where the kernel rows use the
name: ``B`` there is agreement with the kernel, so the panel's modal-match B is
``B_subject_mode``; its ``accuracy`` (= the kernel B on the same triplets) and null rows (the
kernel rows') are not repeated."""


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


class KernelOddOneOutScorer:
    """Scores a kernel odd-one-out task's records (:class:`TaskColumns`).

    ``task_id``: the rows' task id; ``reference``: the respondent whose answers are the
    human reference (``human:kernel-<name>``: it is not scored itself).  Respondents named
    ``human:kernel-<name>`` are the other kernels: their B is scored and their pairwise
    answer differences give the human spread.  A record's ``correct`` is its match with the
    reference; ``ground_truth`` null marks a triplet without a reference answer (tied
    minimum pair: excluded from B, counted)."""

    def __init__(self, task_id: str, reference: str, min_catch: int = 0):
        self.task_id = task_id
        self.reference = reference
        self.min_catch = min_catch
        self.panel = HumanPanelScorer(task_id)

    def score(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns: B against the kernel's odd-one-out
        per respondent (respondents with as many trials scored together on the shared
        draws), floors and null rates per model, agreement between the kernels; then, when
        ``human:subject-NN`` records are present, :meth:`panel_rows`."""
        catch = np.array([s == CATCH_SPLIT for s in c.splits], bool)[c.split] if c.n else None
        catch_rows: list[ScoreRow] = []
        if catch is not None and catch.any():
            catch_rows, screened = self.catch_rows(c.subset(catch))
            keep = ~catch & ~np.isin(c.model, [c.models.index(m) for m in screened])
            c = c.subset(keep)
        subject = np.array([str(m).startswith(SUBJECT_PREFIX) for m in c.models], bool)[c.model] if c.n else None
        if subject is None or not subject.any():
            return self.kernel_rows(c, seed) + catch_rows
        kernel = np.array([str(m).startswith("human:kernel-") for m in c.models], bool)[c.model]
        return (self.kernel_rows(c.subset(~subject), seed)
                + self.panel_rows(c.subset(~kernel & (c.ground_truth != 0)), seed) + catch_rows)

    def catch_rows(self, c: TaskColumns) -> tuple[list[ScoreRow], list[str]]:
        """Rows from the subjects' catch-trial records (``c``: those only) and the subjects
        screened out: ``human:subject-NN`` ``catch_accuracy`` (correct / catch trials, n = its
        catch trials), ``human:panel`` ``catch_accuracy_min``, ``catch_accuracy_mean`` and
        ``n_subjects_screened_out`` (subjects with fewer than ``min_catch`` correct catch answers:
        left out of every subject-panel row)."""
        tid = self.task_id
        rows, screened, accs = [], [], []
        why = "catch triplets answered correctly (a mark shown twice: the other is the odd one out)"
        for m, pos in respondent_positions(c):
            name = c.models[m]
            n_ok = int((c.correct[pos] == 1).sum())
            accs.append(n_ok / len(pos))
            rows.append(ScoreRow(tid, name, "catch_accuracy", n_ok / len(pos), None, None, len(pos), 0, why))
            if n_ok < self.min_catch:
                screened.append(name)
        rows += [ScoreRow(tid, "human:panel", "catch_accuracy_min", float(min(accs)), None, None, len(accs), 0,
                          "lowest subject catch accuracy"),
                 ScoreRow(tid, "human:panel", "catch_accuracy_mean", float(np.mean(accs)), None, None, len(accs), 0,
                          "mean subject catch accuracy"),
                 ScoreRow(tid, "human:panel", "n_subjects_screened_out", float(len(screened)), None, None, len(accs),
                          0, f"subjects with fewer than min_catch={self.min_catch} correct catch answers, left out "
                             "of the subject panel" + (f": {', '.join(screened)}" if screened else ""))]
        return rows, screened

    def panel_rows(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Rows against the subjects' raw odd-one-out judgments, on the triplets with a kernel
        answer (``c``: subject and model records only).  A subject's ``correct`` is agreement
        with the kernel, so the :class:`HumanPanelScorer` rows read: ``human:panel``
        ``observer_accuracy_*`` (subjects' agreement with the kernel), the pairwise and
        leave-one-out kappa ceilings computed like the silhouette panel's, per-subject rows
        (``human:subject-NN`` ``accuracy``, ``B``, ``kappa_loo`` ``@all``/``@test``) and per model
        the error consistency with the subjects (``kappa_aggregate``, ``kappa_pairwise``,
        ``kappa_over_ceiling``) and the match with the subjects' modal answer
        (:data:`PANEL_RENAME`).  Added on ``human:panel``: ``triplet_agreement_mean/min/max``,
        the fraction of subject pairs giving the same answer on a triplet (human–human
        agreement per triplet, :func:`~perceptbench.metrics.agreement.pairwise_agreement`), and
        ``triplet_accuracy_min/max``, the extremes over triplets of the fraction of subjects
        agreeing with the kernel (its mean is ``observer_accuracy_mean``)."""
        tid = self.task_id
        rows = []
        for r in self.panel.score(c, seed):
            if r.model.startswith("human:"):
                rows.append(r)
            elif r.metric in PANEL_RENAME:
                rows.append(dataclasses.replace(r, metric=PANEL_RENAME[r.metric]))
        groups = [(c.models[m], pos) for m, pos in respondent_positions(c)]
        subjects = [pos for m, pos in groups if str(m).startswith(SUBJECT_PREFIX)]
        answers = np.stack([c.response[pos] for pos in subjects])  # (J, n), positions sorted by stimulus
        agree = pairwise_agreement(answers)
        acc = np.stack([c.correct[pos] == 1 for pos in subjects]).mean(0)
        n = answers.shape[1]
        why_agree = "fraction of subject pairs giving the same odd one out on a triplet (human-human agreement)"
        why_acc = "fraction of subjects whose odd one out is the kernel's, on a triplet"
        for metric, value, why in (("triplet_agreement_mean", agree.mean(), why_agree),
                                   ("triplet_agreement_min", agree.min(), why_agree),
                                   ("triplet_agreement_max", agree.max(), why_agree),
                                   ("triplet_accuracy_min", acc.min(), why_acc),
                                   ("triplet_accuracy_max", acc.max(), why_acc)):
            rows.append(ScoreRow(tid, "human:panel", metric, float(value), None, None, n, 0, why))
        return rows

    def kernel_rows(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """The kernel rows of :meth:`score` (the records of kernels and models only)."""
        tid = self.task_id
        rows: list[ScoreRow] = []
        groups = [(c.models[m], pos) for m, pos in respondent_positions(c)]
        ref = self.reference
        scored = [(m, pos) for m, pos in groups if m != ref]  # the reference itself is not scored
        b_of = self.agreement(c, scored, seed)
        floors: dict[bytes, list[ScoreRow]] = {}
        for m, pos in scored:
            b, n_valid = b_of[m]
            n, n_null = len(pos), int((c.response[pos] == 0).sum())
            rows.append(ScoreRow.from_boot(tid, m, "B", b, n_valid, n_null, "agreement with the kernel's odd-one-out"))
            if not m.startswith("human:"):
                gt = c.ground_truth[pos]
                key = gt.tobytes()
                if key not in floors:
                    floors[key] = self.floor_rows("", [c.values[g] for g in gt.tolist()], n)
                rows += [dataclasses.replace(r, model=m) for r in floors[key]]
                rows += null_rows(tid, m, n, n_null, b.estimate)
        if groups:
            rows += self.floor_rows("human:kernels", [c.values[g] for g in c.ground_truth[groups[0][1]].tolist()],
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


    @staticmethod
    def agreement(c: TaskColumns, respondents: list[tuple[str, np.ndarray]],
                  seed: int) -> dict[str, tuple[BootstrapResult, int]]:
        """B per respondent (seed 000 D.1): the fraction of its trials whose answer matches the
        reference (``correct``), over the trials with an answer and a reference answer
        (``ground_truth`` not null), with its percentile interval (D.5, N_BOOT_B draws).
        ``respondents``: (name, positions in ``c`` in scoring order); those with as many
        trials are scored together on the shared draws (each equal to its own bootstrap).
        Returns name -> (interval, number of trials scored)."""
        b_of: dict[str, tuple[BootstrapResult, int]] = {}
        for batch in batches(respondents, lambda x: len(x[1]).to_bytes(8, "little")):
            P = np.stack([pos for _, pos in batch])
            valid = (c.response[P] != 0) & (c.ground_truth[P] != 0)
            match = c.correct[P] == 1
            res = intervals(masked_mean_counts(with_estimate(P.shape[1], N_BOOT_B, seed), match, valid),
                            N_BOOT_B, seed)
            b_of.update({m: (r, int(v.sum())) for (m, _), r, v in zip(batch, res, valid)})
        return b_of

    def floor_rows(self, model: str, targets: list, n: int) -> list[ScoreRow]:
        """Position floor of the non-null targets and the count of null ones (of ``n``)."""
        tid = self.task_id
        t = np.array([x for x in targets if x is not None])
        n_none = sum(x is None for x in targets)
        return [ScoreRow(tid, model, "position_floor", position_floor(t), None, None, len(t), 0,
                         "max_k target-position frequency (seed 000 D.3)"),
                ScoreRow(tid, model, "n_no_human_ref", float(n_none), None, None, n, 0,
                         "triplets with a tied minimum pair under this kernel: excluded")]
