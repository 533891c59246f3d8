"""SalBench (seed 001): which low-level feature makes one object stand out?

Six task families ``salbench.{detection,referring,visual_referring}.{syn,nat}``, each at
0, 3 or 5 shots (setting ``shots``).  Synthetic stimuli are P3-style search arrays rendered
by :mod:`perceptbench.stimuli.search_arrays` (default: the P3 composition, 2,514 arrays);
natural stimuli come from the published SalBench/O3 data (setting ``source``: ``hf`` for the
Hugging Face dataset ``salbench-vlm/salbench``, or a local annotation file in the schema of
:func:`perceptbench.external.salbench_natural.load_local`).

Prompts are verbatim from seed 001 §4 "Setting" (all seven features on both splits).
Few-shot format (designed here; the seed defers it to its supplement): the example images
come first, each with its own task prompt and answer, then the query::

    You will see {k+1} images. The first {k} are solved examples; answer the same question for the last image.
    Example {i} (image {i}): {task prompt for example i}
    Answer: {comma-separated truth}
    ...
    Question (image {k+1}): {task prompt for the query}

Examples are drawn once per run (seeded) from the probe-train split (synthetic) or the
non-test items (natural), covering the features in turn.  Every trial records the full
prompt's hash.  A model without multi-image support gets no few-shot trials: its records
are written with a null response and ``run_meta.skipped`` giving the reason, and the
scores carry a ``skipped`` row instead of numbers.

Encoder readouts: image-text encoders (with ``embed_text``) answer by zero-shot retrieval
of "One object is different in {category} compared to the others" over the seven
categories (top-1 is the response; top-1/top-3 hit rates are scored from the cosines in
``raw_output``); image-only encoders by a linear probe fit on a disjoint probe-train split.
Neither readout reads a prompt, so two settings do not apply to encoders
(:meth:`SalBenchTask.encoder_not_applicable`): ``shots`` (the examples are text and images in
a prompt; a probe is fit on probe-train whatever ``shots`` says) and the ``referring`` task
(its box is given only in the prompt text; the encoder sees the detection task's very images).
Encoder trials of such variants are recorded as skipped with the reason, and the scores carry
a ``skipped`` row, as for a VLM without multi-image support.  ``visual_referring`` draws the
box into the image, so an encoder does see it (at ``shots=0``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from ..metrics.bootstrap import N_BOOT_B, bootstrap
from ..record_table import TaskColumns
from ..records import TrialRecord
from ..scorers.common import respondent_positions
from ..seeding import rng_for
from ..core.rows import ScoreRow
from ..core.settings import Setting
from .base import Stimulus, Task

SEVEN = ("Orientation", "Color", "Focus", "Shape", "Size", "Location", "Pattern")
SYN_LABELS = ("Orientation", "Color", "Size")
P3_COUNTS = {"color": 810, "orientation": 864, "size": 840}
FEATURE_LIST = ", ".join(SEVEN)

PROMPTS = {
    "detection": ("Context: Given this list of low-level visual features defined according to feature "
                  f"integration theory: {FEATURE_LIST}. Task: Examine the provided image and identify the "
                  "feature(s) in which one object notably differs from the others. Write out all applicable "
                  "features separated by comma."),
    "referring": ("Context: This image depicts a scene with {num_distractors} {object_category}. Among those, one "
                  "object category at location given by this bounding box {bbox}, is different from the others. "
                  "Given this list of low-level visual features defined according to feature integration theory: "
                  f"{FEATURE_LIST}. Task: In which way does the special object differ from the rest. Write out all "
                  "applicable features separated by comma."),
    "visual_referring": ("Context: This image depicts a scene with {num_distractors} {object_category}. Among those, "
                         "one {object_category} highlighted in a red box is different from the others. "
                         "Task: Given this list of low-level visual features defined according to feature "
                         f"integration theory: {FEATURE_LIST}. In which way does the special object differ from the "
                         "rest. Write out all applicable feature(s) separated by comma."),
}
"""Seed 001 §4 "Setting", verbatim; {placeholders} are filled per stimulus: the distractor
count, the object category as the source names it (plural noun, used in both places of the
visual-referring text exactly as the seed writes it) and the box as ``(x_min, y_min, x_max,
y_max)`` in pixels."""

FEWSHOT_HEAD = ("You will see {n} images. The first {k} are solved examples; answer the same question "
                "for the last image.")
FEWSHOT_EXAMPLE = "Example {i} (image {i}): {prompt}\nAnswer: {answer}"
FEWSHOT_QUESTION = "Question (image {n}): {prompt}"


def majority_answer_floor(truths) -> tuple[float, list[str]]:
    """Exact-match floor of a SalBench cell: the exact match a *constant* answerer reaches
    at best on these stimuli, i.e. the share of the most frequent ground-truth label set
    (a constant answer S matches exactly the stimuli whose truth set equals S; ties broken by
    the sorted labels).  ``truths``: one label list per scored stimulus (the exact-match
    headline's stimuli, seed 001 §4).  Returns (floor in [0, 1], that answer); (nan, [])
    without stimuli.  Project definition (SalBench, seed 001, gives no floor), docs/metrics.md."""
    counts: dict[tuple[str, ...], int] = defaultdict(int)
    for t in truths:
        counts[tuple(sorted(set(t)))] += 1
    if not counts:
        return float("nan"), []
    best = min(counts, key=lambda k: (-counts[k], k))
    return counts[best] / sum(counts.values()), list(best)


def distractor_group(n: int | None) -> str:
    from ..metrics.saliency import distractor_bin

    return "unknown" if n is None else distractor_bin(int(n))


class LazySearchMeta(Mapping):
    """``Stimulus.meta`` of a synthetic search array, computed on first use.

    Holds the plan's fields (feature, difficulty, generator seed and index) from the
    start; the fields that need the rendered array (``bbox`` as [x_min, y_min, x_max,
    y_max] inclusive pixels, ``bbox_text``, ``n_distractors``, ``object_category``,
    ``shape``, ``difference``) are filled by :meth:`fill` from a rendered
    :class:`~perceptbench.stimuli.search_arrays.SearchStimulus`, or by rendering once
    (``make()``) on the first look-up of a missing key.  The image itself is never kept."""

    KEYS = ("feature", "difficulty", "bbox", "bbox_text", "n_distractors", "object_category", "shape",
            "difference", "generator_seed", "generator_index")

    def __init__(self, make, static: dict):
        self._make = make
        self._d = dict(static)
        self._filled = False

    def fill(self, st) -> None:
        """Take the rendered array's metadata (not its image)."""
        from ..stimuli import search_arrays as sa

        if not self._filled:
            self._d.update({"bbox": list(st.target_bbox), "bbox_text": sa.format_box_text(st.target_bbox),
                            "n_distractors": st.n_distractors, "object_category": st.object_category,
                            "shape": st.shape, "difference": round(float(st.difference), 4)})
            self._filled = True

    def _full(self) -> dict:
        if not self._filled:
            self.fill(self._make())
        return self._d

    def __getitem__(self, key):
        if key in self._d:
            return self._d[key]
        return self._full()[key]

    def __iter__(self):
        return iter([k for k in self.KEYS if k in self._full()])

    def __len__(self) -> int:
        return len(self._full())

    def __repr__(self) -> str:
        return f"LazySearchMeta({self._d!r}{'' if self._filled else ', not rendered yet'})"


class SalBenchTask(Task):
    """Base of the six SalBench tasks (see the module docstring)."""

    kind: str = "detection"
    split_name: str = "syn"
    principle = "saliency"
    response_space = "multilabel"
    encoder_readout = "linear_probe | zero_shot_retrieval"  # chosen per encoder: encoder_readout_for
    allowed = {"shots": ("0", "3", "5")}
    settings = {"n": Setting("int", 3, 1_000_000), "n_probe": Setting("int", 0, 1_000_000),
                "probe_fraction": Setting("float", 0, 1, maximum_open=True),
                "source": Setting("text", text="hf or the path of a local annotation file")}
    """``n`` >= 3 keeps at least one test stimulus per feature in the P3 composition
    (round(810 * 3 / 2514) = 1); ``source`` (``hf`` or an annotation file) is checked when
    the stimuli are loaded."""

    def check_settings(self) -> None:
        if self.split_name == "syn" and int(self.params["n_probe"]) < self.shots:
            raise ValueError(f"task {self.task_id}: setting shots={self.shots} needs n_probe >= {self.shots} "
                             f"(few-shot examples come from the probe-train split), got n_probe="
                             f"{self.params['n_probe']}")

    human_data = ("no human answers: each stimulus's ground truth (the odd items, known by construction in "
                  "P3, annotated in O3)")

    @property
    def human_ref_id(self) -> str:
        return "salbench.p3-generated" if self.split_name == "syn" else "salbench.o3"

    @property
    def shots(self) -> int:
        return int(self.params["shots"])

    @property
    def prompt_id(self) -> str:
        return f"salbench.{self.kind}.{'zeroshot' if not self.shots else f'fewshot{self.shots}'}.v1"

    @property
    def prompt_text(self) -> str:  # the template; filled per stimulus
        return PROMPTS[self.kind]

    @property
    def prompt_template(self) -> str:
        """The prompt before it is filled per stimulus, few-shot format included: its hash
        (``run_meta.prompt_template_hash``) is the prompt version a resume and scoring compare."""
        if not self.shots:
            return PROMPTS[self.kind]
        return "\n".join((FEWSHOT_HEAD, FEWSHOT_EXAMPLE, FEWSHOT_QUESTION, PROMPTS[self.kind]))

    @property
    def categories(self) -> tuple[str, ...]:
        return SYN_LABELS if self.split_name == "syn" else SEVEN

    def options(self) -> tuple:
        return SEVEN

    def encoder_readout_for(self, model) -> str:
        from ..models.base import TextEncoder

        return "zero_shot_retrieval" if isinstance(model, TextEncoder) else "linear_probe"

    def encoder_not_applicable(self, readout: str) -> str | None:
        """The reason an encoder's ``readout`` (``linear_probe`` or ``zero_shot_retrieval``,
        neither of which reads a prompt) cannot answer this variant, or None: few-shot
        examples (``shots`` > 0) and the referring prompt's box (seed 001 §4 "Setting": the
        box is given in the text only) never reach it, so its score would repeat the zero-shot
        / detection variant's."""
        base = f"salbench.detection.{self.split_name}" if self.kind == "referring" else self.base_id
        if self.kind == "referring":
            return (f"the referring prompt's box never reaches an encoder ({readout} reads no prompt; it sees "
                    f"the images of {base}, whose score it would repeat)")
        if self.shots:
            return (f"shots={self.shots} does not apply to an encoder ({readout} reads no prompt and no examples; "
                    f"its score would repeat {base} at shots=0)")
        return None

    # -- VLM side
    def parse_answer(self, text: str | None, mode: str = "default"):
        from ..readouts.multilabel import parse_features

        pr = parse_features(text, self.categories, mode=mode)  # "all of them" = this split's labels
        resp = None if pr.labels is None else sorted(pr.labels)
        return resp, pr.record_meta(mode, rule="multilabel" if pr.rule == "features" else None,
                                    unknown=list(pr.unknown)[:20])

    def _filled_prompt(self, meta: dict, stimulus_id: str = "") -> str:
        if self.kind != "detection":
            need = ["n_distractors", "object_category"] + (["bbox_text"] if self.kind == "referring" else [])
            missing = [k for k in need if meta.get(k) in (None, "")]
            if missing:
                raise ValueError(f"{self.task_id}: stimulus {stimulus_id} lacks {missing} needed by the "
                                 f"{self.kind} prompt (give them in the annotation file)")
        return PROMPTS[self.kind].format(num_distractors=meta.get("n_distractors"),
                                         object_category=meta.get("object_category"),
                                         bbox=meta.get("bbox_text", ""))

    def vlm_request(self, s: Stimulus, seed: int):
        """(images, prompt text, extra run_meta) for one trial, few-shot examples first."""
        img = s.render()
        query = self._filled_prompt(s.meta, s.stimulus_id)
        if not self.shots:
            return (img,), query, {}
        ex = self.fewshot_examples(seed, s.stimulus_id)
        lines = [FEWSHOT_HEAD.format(n=len(ex) + 1, k=len(ex))]
        for i, e in enumerate(ex, 1):
            lines.append(FEWSHOT_EXAMPLE.format(i=i, prompt=self._filled_prompt(e.meta, e.stimulus_id),
                                                answer=", ".join(e.ground_truth)))
        lines.append(FEWSHOT_QUESTION.format(n=len(ex) + 1, prompt=query))
        return tuple(e.render() for e in ex) + (img,), "\n".join(lines), {
            "fewshot_stimulus_ids": [e.stimulus_id for e in ex]}

    def fewshot_examples(self, seed: int, stimulus_id: str) -> list[Stimulus]:
        """The k solved examples shown before one trial's query.

        The pool is the non-test split minus the query itself, by stimulus id *and* by image
        content (:meth:`_content_sha256`, the image before any box is drawn), with repeated
        images kept once, so a release that holds one image under two ids never shows the
        query as its own solved example.  Raises ValueError when fewer than k remain.

        Drawn per trial (``rng_for(seed, base_id, "fewshot", stimulus_id)``) from the non-test
        pool: truth sets are visited in a random order, one random example each, cycling
        until k are picked (so labels are as balanced as k allows and no label is always
        last); the examples are then shuffled."""
        everything = self.stimuli(seed)
        query = next((s for s in everything if s.stimulus_id == stimulus_id), None)
        pool = [s for s in everything if s.split == "probe_train" and s.stimulus_id != stimulus_id]
        # the same image can come under two ids (it happens in real releases): exclude by content too,
        # and never show one image as two examples (the first id, in pool order, stands)
        if query is not None:
            qsha = self._content_sha256(query)
            pool = [s for s in pool if self._content_sha256(s) != qsha]
        seen_sha: set[str] = set()
        unique = []
        for s in pool:
            h = self._content_sha256(s)
            if h not in seen_sha:
                seen_sha.add(h)
                unique.append(s)
        pool = unique
        if len(pool) < self.shots:
            hint = " (set probe_fraction > 0 on the natural split)" if self.split_name == "nat" else ""
            raise ValueError(f"{self.task_id}: {self.shots} shots need {self.shots} non-test stimuli, "
                             f"have {len(pool)}{hint}")
        rng = rng_for(seed, self.base_id, "fewshot", stimulus_id)
        by_label: dict[str, list[Stimulus]] = defaultdict(list)
        for s in pool:
            by_label[",".join(s.ground_truth)].append(s)
        keys = sorted(by_label)
        keys = [keys[j] for j in rng.permutation(len(keys))]
        picked: list[Stimulus] = []
        while len(picked) < self.shots:
            for k in keys:
                cands = [s for s in by_label[k] if s not in picked]
                if cands and len(picked) < self.shots:
                    picked.append(cands[int(rng.integers(len(cands)))])
        return [picked[j] for j in rng.permutation(len(picked))]

    def _content_sha256(self, s: Stimulus) -> str:
        """sha256 (hex, :func:`perceptbench.seeding.image_sha256`) of a stimulus's image content
        before any overlay (the red box of visual referring), computed once per stimulus."""
        from ..seeding import image_sha256

        sha = getattr(s, "_content_sha256", None)
        if sha is None:
            source = getattr(s, "_source_image", None)
            sha = image_sha256(source() if source is not None else s.render())
            s._content_sha256 = sha  # type: ignore[attr-defined]
        return sha

    # -- stimuli
    def _syn_stimuli(self, seed: int) -> list[Stimulus]:
        from ..stimuli import search_arrays as sa

        n, n_probe = self._int_param("n", 3), self._int_param("n_probe", 0)
        counts = {f: int(round(c * n / 2514)) for f, c in P3_COUNTS.items()}
        probe_counts = {f: n_probe // 3 + (1 if i < n_probe % 3 else 0) for i, f in enumerate(P3_COUNTS)}
        probe_seed = int(rng_for(seed, "salbench.syn", "probe_seed").integers(2**31 - 1))
        test_seed = int(rng_for(seed, "salbench.syn", "test_seed").integers(2**31 - 1))
        out = []
        for split, gseed, cnt in (("probe_train", probe_seed, probe_counts), ("test", test_seed, counts)):
            for i, (feat, diff) in enumerate(sa.plan_p3(cnt)):
                def make(gseed=gseed, i=i, feat=feat, diff=diff):
                    return sa.make_search_stimulus(gseed, i, feat, diff)
                out.append(self._stimulus_from_search(make, split, feat, diff, gseed, i))
        return out

    def _stimulus_from_search(self, make, split, feat, diff, gseed, i) -> Stimulus:
        """A synthetic stimulus that renders nothing until it is used.

        Its metadata (target box, distractor count, shape ...) comes from the rendered
        array, so it is filled by the first ``render()`` or the first metadata look-up
        (:class:`LazySearchMeta`); only the metadata is kept, never the image, so memory
        does not grow with the number of stimuli."""
        from ..stimuli import search_arrays as sa

        meta = LazySearchMeta(make, {"feature": feat, "difficulty": diff, "generator_seed": gseed,
                                     "generator_index": i})
        kind = self.kind

        def render():
            st = make()
            meta.fill(st)
            return sa.draw_red_box(st.image, st.target_bbox) if kind == "visual_referring" else st.image

        sid = f"{'probe-' if split == 'probe_train' else ''}p3syn-{i:05d}"
        stim = Stimulus(sid, split, render=render, ground_truth=[sa.FEATURE_LABEL[feat]],
                        manipulated_value=f"{feat}/{diff}", meta=meta)
        stim._source_image = lambda: make().image  # type: ignore[attr-defined]  # content before the box
        return stim

    def _nat_stimuli(self, seed: int) -> list[Stimulus]:
        from ..external import salbench_natural as sn
        from ..stimuli import search_arrays as sa

        src = self.params["source"]
        items = sn.load_hf(config="O3") if src == "hf" else sn.load_local(src, default_split="nat")
        items = [it for it in items if it.split == "nat"]
        from ..external._common import refuse_duplicate_ids

        refuse_duplicate_ids([it.stimulus_id for it in items], f"{self.base_id} source {src}", "stimulus id")
        from ..seeding import file_sha256

        source_sha = "hf:salbench-vlm/salbench" if src == "hf" else f"sha256:{file_sha256(src)}"
        if not items:
            raise ValueError(f"{self.task_id}: no natural-split stimuli in source {src!r}")
        try:
            frac = float(self.params["probe_fraction"])
        except ValueError:
            frac = -1.0
        if not 0 <= frac < 1:
            raise ValueError(f"{self.task_id}: probe_fraction must be a number in [0, 1), got "
                             f"{self.params['probe_fraction']!r}")
        perm = rng_for(seed, self.base_id, "probe_split").permutation(len(items))
        n_probe = int(round(len(items) * frac))
        if n_probe >= len(items):
            raise ValueError(f"{self.task_id}: setting probe_fraction={self.params['probe_fraction']} leaves no "
                             f"test stimulus ({n_probe} of {len(items)} natural stimuli go to probe-train); "
                             f"allowed: a fraction below {(len(items) - 0.5) / len(items):.4g}")
        probe_ids = {items[j].stimulus_id for j in perm[:n_probe]}
        out = []
        for it in items:
            def render(it=it):
                img = it.load_image()
                if self.kind == "visual_referring":
                    if it.target_bbox is None:
                        raise ValueError(f"{it.stimulus_id}: visual referring needs a target box")
                    return sa.draw_red_box(img, it.target_bbox)
                return img
            meta = {"n_distractors": it.n_distractors, "object_category": it.object_category,
                    "bbox": list(it.target_bbox) if it.target_bbox else None,
                    "bbox_text": sa.format_box_text(it.target_bbox) if it.target_bbox else "",
                    "source": it.source, "annotations": source_sha,
                    "distractor_bin": distractor_group(it.n_distractors)}
            stim = Stimulus(it.stimulus_id, "probe_train" if it.stimulus_id in probe_ids else "test",
                            render=render, ground_truth=sorted(it.labels),
                            manipulated_value=it.n_distractors, meta=meta)
            stim._source_image = it.load_image  # type: ignore[attr-defined]  # content before the box
            out.append(stim)
        return out

    def check_images(self, seed: int) -> None:
        """Natural split: decode every image of the annotation source once (ImageLoadError naming
        the file before anything is written); the synthetic split draws its own."""
        if self.split_name == "nat":
            for st in self.stimuli(seed):
                st._source_image()  # type: ignore[attr-defined]

    def _int_param(self, key: str, minimum: int) -> int:
        try:
            v = int(self.params[key])
        except ValueError:
            v = minimum - 1
        if v < minimum:
            raise ValueError(f"{self.task_id}: {key} must be an integer >= {minimum}, got {self.params[key]!r}")
        return v

    def stimuli(self, seed: int) -> list[Stimulus]:
        cache = self.__dict__.setdefault("_stimuli_cache", {})
        if seed not in cache:
            cache[seed] = self._syn_stimuli(seed) if self.split_name == "syn" else self._nat_stimuli(seed)
        return cache[seed]

    # -- scoring
    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """Score rows per model (sorted by name): :meth:`score_columns` of the records' columns, a
        model with a skipped trial (``run_meta.skipped``) scored as one ``skipped`` row."""
        skipped: dict[str, set] = defaultdict(set)
        for r in records:
            reason = (r.run_meta.model_extra or {}).get("skipped")
            if reason is not None:
                skipped[r.model].add(reason)
        return self._score(TaskColumns.from_records(self.task_id, records), seed, skipped)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns (:class:`TaskColumns`; no skipped
        trial): per model (sorted by name) its records in stimulus-id order, exact match and
        F1 (every stimulus and nulls excluded), floors and the breakdowns; zero-shot retrieval
        rows from the ``raw`` column's cosines."""
        return self._score(c, seed, {})

    def _score(self, c: TaskColumns, seed: int, skipped_of: Mapping[str, set]) -> list[ScoreRow]:
        """Rows per model (sorted by name).  Models with the same truth sets and manipulated values at
        every position are scored together (:func:`~perceptbench.metrics.saliency.score_encoded`:
        one resample index matrix per stimulus set, vectorised over the models), each equal to
        scoring it alone."""
        from ..metrics.saliency import encode_sets

        cats = self.categories
        models = []  # (model, positions, skipped reasons)
        for m, pos in sorted(((c.models[k], pos) for k, pos in respondent_positions(c)), key=lambda x: x[0]):
            readout = c.readouts[c.readout[pos[0]]]
            skipped = set(skipped_of.get(m, ()))
            if not skipped and readout != "vlm_prompt":  # encoder trials recorded before they were skipped
                skipped = {self.encoder_not_applicable(readout)} - {None}
            models.append((m, pos, skipped))
        blocks: dict[bytes, list] = {}
        for m, pos, skipped in models:
            if not skipped:
                key = c.ground_truth[pos].tobytes() + b"|" + c.manipulated_value[pos].tobytes()
                blocks.setdefault(key, []).append((m, pos))
        scored: dict[str, list[ScoreRow]] = {}
        for block in blocks.values():
            pos0 = block[0][1]
            truths = [list(c.values[v]) for v in c.ground_truth[pos0].tolist()]
            enc = [encode_sets([None if c.values[v] is None else list(c.values[v]) for v in c.response[pos].tolist()],
                               truths, cats) for _, pos in block]
            arrays = (np.stack([e[0] for e in enc]), enc[0][1], np.stack([e[2] for e in enc]),
                      np.stack([e[3] for e in enc]))
            manipulated = [c.values[v] for v in c.manipulated_value[pos0].tolist()]
            for (m, pos), rows in zip(block, self._block_rows([m for m, _ in block], arrays, truths, manipulated,
                                                              seed)):
                if c.readouts[c.readout[pos[0]]] == "zero_shot_retrieval":
                    rows += self._retrieval_rows(m, [c.raws[k] for k in c.raw[pos].tolist()], truths, seed)
                scored[m] = rows
        rows: list[ScoreRow] = []
        for m, pos, skipped in models:
            if skipped:
                rows.append(ScoreRow(self.task_id, m, "skipped", float("nan"), None, None, len(pos), len(pos),
                                     "; ".join(sorted(skipped))))
            else:
                rows += scored[m]
        return rows

    def _block_rows(self, names: list[str], arrays, truths, manipulated, seed: int) -> list[list[ScoreRow]]:
        """Rows of the models ``names`` that answered the same stimuli: ``arrays`` their encoded
        answers (:func:`~perceptbench.metrics.saliency.encode_sets` stacked: P (M, n, C), T (n, C),
        extra (M, n), null (M, n)), ``truths`` the truth label lists and ``manipulated`` the
        manipulated values of the n stimuli."""
        from ..metrics.saliency import score_encoded, score_groups_encoded

        tid, cats = self.task_id, self.categories
        # headline: every stimulus counts (a null is an empty prediction) and mean_f1 averages
        # all categories, an undefined F1 counting 0 (seed 001 §4, as lmms-eval); variants named
        both = {"all": score_encoded(*arrays, cats, null="empty", n_boot=N_BOOT_B, seed=seed),
                "nulls_excluded": score_encoded(*arrays, cats, null="exclude", n_boot=N_BOOT_B, seed=seed)}
        floor, answer = majority_answer_floor(truths)
        # breakdowns (every stimulus counts, like the headline)
        if self.split_name == "syn":
            by = {"difficulty": [v.split("/")[1] for v in manipulated],
                  "feature": [v.split("/")[0] for v in manipulated], "feature_difficulty": manipulated}
        else:
            by = {"distractors": [distractor_group(v) for v in manipulated]}
        groups = {gname: score_groups_encoded(*arrays, g, cats, null="empty", n_boot=N_BOOT_B, seed=seed)
                  for gname, g in by.items()}
        out = []
        for i, m in enumerate(names):
            rows: list[ScoreRow] = []
            n_null = int(arrays[3][i].sum())
            n_all = len(truths)
            for conv, suffix in (("all", ""), ("nulls_excluded", "@nulls_excluded")):
                sc = both[conv][i]
                for key, metric in [("exact_match", "exact_match"), ("mean_f1", "mean_f1")] + \
                        [(f"f1:{c}", f"f1[{c}]") for c in cats]:
                    note = ""
                    if key == "exact_match":
                        note = "; ".join(sc.notes)
                    elif key == "mean_f1":
                        note = f"mean over all {len(cats)} categories, an undefined F1 counted as 0 (seed 001 §4)"
                    elif np.isnan(sc.category_f1[key[3:]]):
                        note = "undefined: category neither true nor predicted; counted as 0 in mean_f1"
                    rows.append(ScoreRow.from_boot(tid, m, metric + suffix, sc.ci[key], sc.n, n_null, note))
            sc = both["all"][i]
            rows.append(ScoreRow.from_boot(tid, m, "mean_f1@defined_categories", sc.ci["mean_f1_defined"], sc.n,
                                           n_null, "mean over the categories whose F1 is defined only (the "
                                           "project's headline before issue 7); nulls as empty predictions"))
            rows.append(ScoreRow(tid, m, "null_rate", n_null / n_all, None, None, n_all, n_null))
            rows.append(ScoreRow(tid, m, "exact_match_floor", floor, None, None, len(truths), 0,
                                 f"majority-answer floor: a constant answer {answer} matches exactly "
                                 f"{floor:.3f} of these {len(truths)} stimuli"))
            for gname, per_group in groups.items():
                for key, scs in per_group.items():
                    sc = scs[i]
                    if sc.n == 0:
                        continue
                    rows.append(ScoreRow.from_boot(tid, m, f"exact_match[{gname}={key}]", sc.ci["exact_match"],
                                                   sc.n, sc.n_null))
            out.append(rows)
        return out

    def _retrieval_rows(self, m, raw_outputs: list[str], truths, seed) -> list[ScoreRow]:
        from ..metrics.retrieval import analytic_chance, truth_matrix

        tid = self.task_id
        n = len(raw_outputs)
        scores = np.array([[json.loads(raw)["cosine"][c] for c in SEVEN] for raw in raw_outputs])
        t = truth_matrix(truths, SEVEN)
        order = np.argsort(-scores, axis=1, kind="stable")
        rows = []
        for k in (1, 3):
            hit = t[np.arange(n)[:, None], order[:, :k]].any(1).astype(float)
            b = bootstrap(lambda i: hit[i].mean(1), n, n_draws=N_BOOT_B, seed=seed)
            rows.append(ScoreRow.from_boot(tid, m, f"retrieval_top{k}", b, n, 0,
                                           "hit if any of the top-k categories is in the truth set"))
            rows.append(ScoreRow(tid, m, f"retrieval_chance_top{k}", analytic_chance(t, k), None, None, n, 0,
                                 "uniformly random ranking of the 7 categories, for this label distribution"))
        return rows


def _make(kind: str, split: str) -> type[SalBenchTask]:
    defaults = {"shots": "0"}
    if split == "syn":
        defaults.update({"n": "2514", "n_probe": "300"})
        desc = f"SalBench {kind.replace('_', ' ')} on P3-style search arrays (exact match, F1, by difficulty)"
    else:
        defaults.update({"source": "hf", "probe_fraction": "0"})
        desc = f"SalBench {kind.replace('_', ' ')} on O3 photographs (exact match, F1, by distractor count)"
    return type(f"SalBench_{kind}_{split}", (SalBenchTask,), {
        "base_id": f"salbench.{kind}.{split}", "kind": kind, "split_name": split, "track": split,
        "defaults": defaults,
        "description": desc,
        "title": f"SalBench {kind.replace('_', ' ')}, {'search arrays' if split == 'syn' else 'photographs'}",
        "__doc__": f"``salbench.{kind}.{split}``: {desc}."})


SALBENCH_TASKS = tuple(_make(k, s) for k in ("detection", "referring", "visual_referring") for s in ("syn", "nat"))
