"""``similarity.nat.things_ooo``: THINGS object odd-one-out (seed 000 §2.1, appendix D.1, D.3)."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from ..metrics.agreement import agreement_b, position_floor
from ..metrics.bootstrap import N_BOOT_B, bootstrap
from ..record_table import TaskColumns
from ..records import TrialRecord
from ..scorers.common import respondent_positions
from ..scorers.kernel import KernelOddOneOutScorer
from ..seeding import rng_for, text_hash
from ..core.rows import ScoreRow
from ..core.settings import Setting
from .base import Stimulus, Task, make_record

TEST, RETEST = "human:testset2", "human:testset2_repeat"


def _modal_ceiling_row(tid: str, meta: dict) -> ScoreRow:
    """``ceiling_test_retest_modal`` (human:panel): the modal test-retest consistency of the
    release (:meth:`perceptbench.stimuli.things_triplets.TripletRelease.modal_consistency`), the
    second reading of seed 000 D.3's 0.863; NaN with a note when the records predate it or no
    type has a mode in both files."""
    n = meta.get("release_modal_types")
    if n is None:
        return ScoreRow(tid, "human:panel", "ceiling_test_retest_modal", float("nan"), None, None, 0, 0,
                        "the human records predate the modal test-retest count: run the task again")
    if not n:
        return ScoreRow(tid, "human:panel", "ceiling_test_retest_modal", float("nan"), None, None, 0, 0,
                        f"no triplet type has an untied modal choice in both files ({meta.get('release_modal_tied')} "
                        "tied)")
    return ScoreRow(tid, "human:panel", "ceiling_test_retest_modal", meta["release_modal_agree"] / n, None, None, n, 0,
                    f"agreement of each type's modal choice in testset2 with its modal choice in testset2_repeat, "
                    f"over the {n} types with an untied mode in both files ({meta.get('release_modal_tied')} tied left "
                    "out); seed 000 D.3's 'test-retest consistency of the human modal choice' read as the mode's "
                    "own consistency (ceiling_test_retest: individual first-vs-repeat agreement)")


class ThingsOddOneOutTask(Task):
    """``similarity.nat.things_ooo``: which of three THINGS object images is the odd one out.

    Stimuli: ``n`` (default 500) triplet types drawn without replacement by a seeded
    permutation (``rng_for(seed, base_id, "sample")``) from the sorted types of the release's
    repeated test set (``testset2.txt``) that have a modal choice; each shown in a seeded
    order (``rng_for(seed, base_id, "order", type)``), one image per concept by the rule in
    :mod:`perceptbench.stimuli.things_triplets`.  ``ground_truth`` = position 1..3 of the
    modal human choice.  Encoders embed the three images (odd-one-out outside the most
    cosine-similar pair); VLMs see the numbered montage with the seed's prompt (appendix B).

    Human records: per sampled triplet, the first testset2 line of its type
    (``human:testset2``) and the aligned repeat line (``human:testset2_repeat``); their
    ``run_meta`` carries the release-wide test-retest counts, so the ceiling is scored from
    records alone.  Scores: B raw and as a fraction of the test-retest ceiling (seed D.3),
    the position floor (max_k f_k) and the test-retest agreement on the sample.
    """

    base_id = "similarity.nat.things_ooo"
    title = "THINGS object odd-one-out"
    principle = "similarity"
    track = "nat"
    response_space = "position"
    encoder_readout = "odd_one_out_cosine"
    description = ("THINGS object odd-one-out, 500 triplets of the release's repeated test set vs the modal "
                   "human choice and its test-retest ceiling (OSF release + images needed)")
    prompt_text = ("Three objects are shown, numbered 1, 2 and 3. Which one is the odd one out (least similar "
                   "to the other two)? Answer 1, 2, or 3.")
    human_ref_id = "hebart2023.things-ooo.testset2.modal"
    human_data = ("yes: the modal human choice on each repeated test triplet and its test-retest ceiling "
                  "(Hebart et al. 2023)")
    defaults = {"n": "500"}
    settings = {"n": Setting("int", 1)}
    """``n``: sampled triplet types; more than the release's types with a modal choice is
    refused (one line) when the release is loaded."""

    def options(self) -> tuple:
        return (1, 2, 3)

    def _release(self):
        from ..sources.things_release import locate_triplet_files
        from ..stimuli.things_triplets import load_release

        return load_release(*locate_triplet_files())

    def sampled_types(self, seed: int) -> tuple[list[tuple[int, int, int]], int, object]:
        """(sampled types, number of tied types excluded, release)."""
        rel = self._release()
        types = sorted(rel.first_line())
        eligible = [t for t in types if rel.modal(t) is not None]
        n = int(self.params["n"])
        if len(eligible) < n:
            raise ValueError(f"{self.base_id}: n={n} but the release has only {len(eligible)} test triplets with a "
                             "modal choice")
        perm = rng_for(seed, self.base_id, "sample").permutation(len(eligible))[:n]
        return [eligible[i] for i in sorted(perm)], len(types) - len(eligible), rel

    def stimuli(self, seed: int) -> list[Stimulus]:
        """Every test stimulus; raises MissingSourceError (one line) without the release or
        the images, before anything is written."""
        from ..sources.things_release import concepts, locate_images
        from ..stimuli import render
        from ..stimuli.things_triplets import concept_image_path, load_concept_image

        sampled, n_tied, rel = self.sampled_types(seed)
        root = locate_images()
        cons = concepts()
        paths = {}
        for t in sampled:
            for c in t:
                if c not in paths:
                    paths[c] = concept_image_path(root, cons[c].unique_id)
        out = []
        for t in sampled:
            order = [t[int(p)] for p in rng_for(seed, self.base_id, "order", t).permutation(3)]
            modal = rel.modal(t)
            comps = (lambda o=tuple(order): [load_concept_image(paths[c]) for c in o])
            out.append(Stimulus(
                f"things_{t[0]:04d}-{t[1]:04d}-{t[2]:04d}", "test",
                render=(lambda c=comps: render.numbered_montage(c())),
                ground_truth=order.index(modal) + 1, components=comps,
                meta={"order": order, "concepts": [cons[c].unique_id for c in order],
                      "images": [str(paths[c].relative_to(root)) for c in order],
                      "n_responses": int(sum(rel.responses[t].values())), "release_sha256": rel.sha256}))
        return out

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        from ..sources.things_release import TRIPLET_FILES

        rel = self._release()
        first = rel.first_line()
        agree = sum(a == b for a, b in rel.pairs.values())
        modal_agree, modal_types, modal_tied = rel.modal_consistency()
        summary = {"release_pairs": len(rel.pairs), "release_agree": int(agree),
                   "release_misaligned": rel.n_misaligned, "release_types": len(first),
                   "release_tied_types": sum(rel.modal(t) is None for t in first),
                   "release_modal_agree": modal_agree, "release_modal_types": modal_types,
                   "release_modal_tied": modal_tied}
        out = []
        for s in stimuli:
            order = s.meta["order"]
            t = tuple(sorted(order))
            line = first[t]
            rows = [(TEST, TRIPLET_FILES[0], rel.test[line])]
            if line in rel.pairs:
                rows.append((RETEST, TRIPLET_FILES[1], rel.retest[line]))
            for model, fname, row in rows:
                out.append(make_record(
                    self, stimulus_id=s.stimulus_id, model=model, model_family="human", readout="human_trial",
                    response=order.index(row[2]) + 1, ground_truth=s.ground_truth, manipulated_value=None,
                    raw_output=" ".join(map(str, row)), prompt_id=f"hebart2023.{fname}",
                    prompt_hash=text_hash(rel.sha256[fname]), model_version=f"sha256:{rel.sha256[fname]}",
                    seed=seed, run_id=run_id, split=s.split, line=line + 1, order=order, **summary))
        return out

    @cached_property
    def scorer(self) -> KernelOddOneOutScorer:
        """The odd-one-out scorer whose B (agreement with the reference answer) this task
        reports; the reference is the modal human choice (``ground_truth``)."""
        return KernelOddOneOutScorer(self.task_id, TEST)

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """:meth:`score_columns` of the records' columns."""
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """B of every respondent against the modal human choice (the scorer's
        :meth:`~perceptbench.scorers.kernel.KernelOddOneOutScorer.agreement`), B over the
        test-retest ceiling, the position floor and null rates; the release's test-retest
        ceiling and the test-retest agreement on the sample (seed 000 D.1, D.3).  ``c``: the task's
        records as columns; the release-wide counts come from the ``run_meta`` of the first
        ``human:testset2`` record (:meth:`TaskColumns.record_at`).  Raises ValueError without
        ``human:testset2`` records."""
        tid = self.task_id
        groups = {c.models[m]: pos for m, pos in respondent_positions(c)}  # positions sorted by stimulus
        if TEST not in groups:
            raise ValueError(f"{tid}: no {TEST} records: the human reference is missing")
        test = groups[TEST]
        meta = c.record_at(test[0]).run_meta.model_extra or {}
        ceiling = meta["release_agree"] / meta["release_pairs"] if meta.get("release_pairs") else float("nan")
        rows: list[ScoreRow] = []
        gts = np.array([c.values[k] for k in c.ground_truth[test].tolist()])
        floor = position_floor(gts)
        freqs = "/".join(f"{(gts == k).mean():.2f}" for k in (1, 2, 3))
        rows += [
            ScoreRow(tid, "human:panel", "ceiling_test_retest", ceiling, None, None, meta.get("release_pairs"), 0,
                     f"agreement of first and repeated choices over all {meta.get('release_pairs')} aligned line "
                     f"pairs of testset2/testset2_repeat ({meta.get('release_misaligned')} misaligned left out)"),
            ScoreRow(tid, "human:panel", "position_floor", floor, None, None, len(gts), 0,
                     f"max_k f_k of the modal choice's shown position, f = {freqs} (seed 000 D.3)"),
            ScoreRow(tid, "human:panel", "n_tied_types_excluded", float(meta.get("release_tied_types", 0)), None, None,
                     meta.get("release_types"), 0, "triplet types whose modal choice is tied: never sampled"),
            _modal_ceiling_row(tid, meta),
        ]
        if RETEST in groups:
            t = dict(zip(c.stimulus[test].tolist(), c.response[test].tolist()))  # stimulus -> answer code
            retest = [(s, r) for s, r in zip(c.stimulus[groups[RETEST]].tolist(), c.response[groups[RETEST]].tolist())
                      if s in t]
            match = np.array([r == t[s] for s, r in retest])  # equal codes: equal answers
            b = bootstrap(lambda i: agreement_b(match[i], np.ones_like(match[i])), len(retest), n_draws=N_BOOT_B,
                          seed=seed)
            rows.append(ScoreRow.from_boot(tid, "human:panel", "test_retest_on_sample", b, len(retest), 0,
                                           "first vs repeated choice on the sampled triplets"))
        b_of = self.scorer.agreement(c, list(groups.items()), seed)
        for m, pos in sorted(groups.items()):
            n = len(pos)
            valid = c.response[pos] != 0  # code 0: no answer
            b = b_of[m][0]
            n_null = int((~valid).sum())
            note = "agreement with the modal human choice"
            if m in (TEST, RETEST):
                note += " (this response is one of those the mode is taken over)"
            rows.append(ScoreRow.from_boot(tid, m, "B", b, int(valid.sum()), n_null, note))
            if np.isfinite(ceiling) and ceiling > 0:
                rows.append(ScoreRow(tid, m, "B_over_ceiling", b.estimate / ceiling, b.low / ceiling,
                                     b.high / ceiling, int(valid.sum()), n_null,
                                     f"B / test-retest ceiling {ceiling:.4f} (seed 000 D.3); CI = B's CI / ceiling",
                                     b.n_draws, b.n_dropped, b.seed))
            if not m.startswith("human:"):
                rows.append(ScoreRow(tid, m, "position_floor", floor, None, None, len(gts), 0,
                                     "max_k target-position frequency (seed 000 D.3)"))
                rows.append(ScoreRow(tid, m, "null_rate", n_null / n, None, None, n, n_null))
        return rows
