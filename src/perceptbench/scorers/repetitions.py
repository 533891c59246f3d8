"""Repetitions at non-zero temperature, aggregated by majority vote (seed 000 appendix D.4).

Seed 000 D.4: "the aggregation rule (majority vote over repetitions for choice and count tasks, mean
for scalar ones) exists for reproduction runs at nonzero temperature and is the identity here.
Unparseable answers are recorded as null and excluded".  A run with ``--repetitions N`` (N > 1)
writes N trial records per (task, stimulus, VLM): ``rep`` 0..N-1, ``n_reps`` N, each a sampled
answer, none ever dropped.  Scoring replaces them by one voted record per stimulus before any
scorer sees them (:func:`aggregate_repetitions`), so every metric is computed on the vote.

The vote (:func:`majority_vote`): every response space of the records is discrete (choice,
position, count, multilabel: :data:`perceptbench.records.RESPONSE_SPACES`; no scalar space, so the
seed's mean never applies); null answers are excluded; the answer given most often wins; a tie is
broken by the repetition order, the tied answer given first (lowest ``rep``) winning.  The seed
states no tie rule: this one is the project's, chosen because it is deterministic and needs no
random draw.  Every repetition null: the vote is null.  Records with ``n_reps`` 1 (every run without
``--repetitions``) pass through unchanged.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Sequence

from ..core.rows import ScoreRow
from ..records import Answer, TrialRecord, score_correct

__all__ = ["majority_vote", "aggregate_repetitions", "repetition_rows", "TIE_RULE"]

TIE_RULE = "ties: the tied answer given first (lowest rep) wins"
"""The tie rule in words, as the score rows' notes say it (the seed states none)."""


def _key(a: Answer):
    return json.dumps(sorted(a) if isinstance(a, list) else a)


def majority_vote(answers: Sequence[Answer]) -> tuple[Answer, bool]:
    """``(winner, tied)`` over ``answers`` in repetition order (rep 0 first): nulls excluded, the
    most frequent answer wins, a tie goes to the tied answer that occurs first (``tied`` True);
    all null (or none): ``(None, False)``.  Multilabel answers (lists) count as sets."""
    counts: dict[str, int] = {}
    first: dict[str, tuple[int, Answer]] = {}
    for i, a in enumerate(answers):
        if a is None:
            continue
        k = _key(a)
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, (i, a))
    if not counts:
        return None, False
    best = max(counts.values())
    tied = [k for k, c in counts.items() if c == best]
    win = min(tied, key=lambda k: first[k][0])
    return first[win][1], len(tied) > 1


def aggregate_repetitions(records: list[TrialRecord]) -> list[TrialRecord]:
    """Records with one voted record in place of each group of repeated VLM trials.

    A group is the records of one (task, stimulus, model) with ``n_reps`` > 1 whose ``readout`` is
    ``vlm_prompt``; it becomes its lowest-``rep`` record with ``response`` = :func:`majority_vote`
    over the group in ``rep`` order, ``correct`` recomputed, and ``run_meta.vote`` = ``{"n_reps",
    "n_votes" (non-null answers), "tied", "responses" (every repetition's answer, in rep order)}``.
    The voted record stands where the group's first record stood; other records are kept as they
    are, in order (no group: ``records`` itself)."""
    groups: dict[tuple, list[TrialRecord]] = defaultdict(list)
    out: list = []
    for r in records:
        if r.n_reps > 1 and r.readout == "vlm_prompt":
            g = (r.task_id, r.stimulus_id, r.model)
            if g not in groups:
                out.append(g)  # the voted record takes the place of the group's first record
            groups[g].append(r)
        else:
            out.append(r)
    if not groups:
        return records
    voted: dict[tuple, TrialRecord] = {}
    for g, rs in groups.items():
        rs = sorted(rs, key=lambda r: r.rep)
        answers = [r.response for r in rs]
        win, tied = majority_vote(answers)
        meta = rs[0].run_meta.model_copy(update={"vote": {
            "n_reps": rs[0].n_reps, "n_votes": sum(a is not None for a in answers), "tied": tied,
            "responses": answers}})
        voted[g] = rs[0].model_copy(update={"response": win, "correct": score_correct(win, rs[0].ground_truth),
                                            "run_meta": meta})
    return [voted[x] if isinstance(x, tuple) else x for x in out]


def repetition_rows(task_id: str, records: list[TrialRecord]) -> list[ScoreRow]:
    """Per model with voted records (:func:`aggregate_repetitions`) of ``task_id``: ``n_repetitions``
    (value: repetitions per stimulus; n: stimuli voted; n_null: stimuli whose every repetition is
    null) and ``n_vote_ties`` (stimuli whose vote was a tie), each note naming the rule, the
    temperature and the tie rule.  No voted record: no row."""
    by_model: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        if (r.run_meta.model_extra or {}).get("vote"):
            by_model[r.model].append(r)
    rows = []
    for m, rs in sorted(by_model.items()):
        votes = [r.run_meta.model_extra["vote"] for r in rs]
        reps = sorted({v["n_reps"] for v in votes})
        temps = sorted({str(((r.run_meta.model_extra or {}).get("settings") or {}).get("temperature", "?"))
                        for r in rs})
        n_null = sum(r.response is None for r in rs)
        note = (f"majority vote over {'/'.join(map(str, reps))} repetitions per stimulus at temperature "
                f"{'/'.join(temps)} (seed 000 D.4); null answers excluded; {TIE_RULE}; every metric of this "
                "model on this task is computed on the votes")
        rows.append(ScoreRow(task_id, m, "n_repetitions", float(max(reps)), None, None, len(rs), n_null, note))
        rows.append(ScoreRow(task_id, m, "n_vote_ties", float(sum(v["tied"] for v in votes)), None, None,
                             len(rs), n_null, note))
    return rows
