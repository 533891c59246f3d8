"""The Gestalt battery of seed 000 (§2.1, appendix D): closure on silhouettes, similarity
on mark colours and series counting.  THINGS odd-one-out is not runnable offline (its
triplets are on OSF only) and is not registered.  The tasks are definitions (stimuli,
prompt, options, human records); their scoring maths lives in :mod:`perceptbench.scorers`."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, ClassVar

import numpy as np
from PIL import Image

from ..core.rows import ScoreRow
from ..core.settings import Setting
from ..record_table import TaskColumns
from ..records import TrialRecord
from ..scorers.capacity import CapacityScorer
from ..scorers.human_panel import HumanPanelScorer
from ..scorers.kernel import CATCH_SPLIT, KernelOddOneOutScorer, kernel_odd_one_out
from ..scorers.shape_bias import ShapeBiasScorer
from ..seeding import rng_for, text_hash
from ..sources import resolve, source_file
from ..stimuli import cue_conflict, edges, geirhos, kernel_triplets, marks, render, silhouettes
from ..stimuli.geirhos import GeirhosExperiment
from ..stimuli.marks import TABLEAU10
from .base import Stimulus, Task, make_record

__all__ = ["GeirhosClassificationTask", "SilhouetteTask", "EdgeTask", "CueConflictTask", "PANEL_CLASSIFICATION_TASKS",
           "MarkKernelTask", "MarkChannel", "MarkColorTask", "MarkShapeTask", "MarkSizeTask",
           "MarkShapeColorTask", "MarkSizeColorTask", "MarkShapeSizeTask", "MARK_KERNEL_TASKS", "MARK_KERNEL_IDS",
           "SeriesCountTask", "KERNELS", "KERNEL_NAMES", "TABLEAU10", "TAB20", "SERIES_K", "load_kernel", "load_color_kernel",
           "kernel_odd_one_out", "render_series_stimulus"]

# --------------------------------------------------------------------------- closure


class GeirhosClassificationTask(Task):
    """16-way shape-only recognition of one Geirhos et al. (2019) experiment against its 10
    observers (seed 000 §2.1).  A definition sets :attr:`experiment` (a
    :class:`~perceptbench.stimuli.geirhos.GeirhosExperiment`), the ids and the prompt; the
    stimuli, split, human records, published-model records and scoring are this class's.

    Split: per class, a seeded permutation (``rng_for(seed, base_id, "split", class)``) of
    the 10 images; the first 5 are probe-train, the other 5 test (80/80).
    Human reference: the modal response of the 10 observers per image, ``na`` excluded
    from the vote; an image whose mode is tied has no modal reference (excluded from B,
    counted as ``n_tied_mode``).  ``na`` counts as incorrect.
    Encoder readout: nearest class prototype (cosine to the mean probe-train embedding).
    Published models (the experiment's ``published``): the paper's own trials, written by the
    task's release respondent beside the observers' as records of ``model =
    "published:<name>"``, ``model_family = "published"``, on the test split, so that they are
    scored as models on the same stimuli as every model run."""

    principle = "closure"
    track = "nat"
    response_space = "choice"
    encoder_readout = "prototype_cosine"
    experiment: ClassVar[GeirhosExperiment]
    human_prompt_id: ClassVar[str]
    """The ``prompt_id`` of the observers' records (the source experiment)."""
    human_raw_ref_id: ClassVar[str]
    """The ``human_ref_id`` of the observers' records."""

    def options(self) -> tuple:
        return geirhos.CLASSES

    def split(self, seed: int) -> dict[str, str]:
        """stimulus_id -> ``"probe_train"`` | ``"test"``."""
        out = {}
        for label in geirhos.CLASSES:
            perm = rng_for(seed, self.base_id, "split", label).permutation(10) + 1
            for pos, idx in enumerate(perm):
                out[self.experiment.stimulus_id_for(label, int(idx))] = "probe_train" if pos < 5 else "test"
        return out

    def stimuli(self, seed: int) -> list[Stimulus]:
        split = self.split(seed)
        out = []
        for s in self.experiment.images():
            out.append(Stimulus(
                s.stimulus_id, split[s.stimulus_id],
                render=(lambda p=s.path: geirhos.load_image(p)),
                ground_truth=s.label, meta={"source_sha256": s.source_sha256}))
        return out

    def _trial_record(self, t: geirhos.ObserverTrial, split: str, seed: int, run_id: str, *, model: str,
                      family: str, readout: str, human_ref_id: str, **meta) -> TrialRecord:
        """One release trial as a record: provenance is its file (``prompt_hash`` of the path,
        ``run_meta.source_file``) and that file's sha256 (``model_version``)."""
        return make_record(
            self, stimulus_id=t.stimulus_id, model=model, model_family=family,
            readout=readout, response=t.response, ground_truth=t.category,
            manipulated_value=None, raw_output=t.response, prompt_id=self.human_prompt_id,
            prompt_hash=text_hash(t.source_path), model_version=f"sha256:{t.source_sha256}",
            seed=seed, run_id=run_id, human_ref_id=human_ref_id,
            split=split, source_file=t.source_path, trial=t.trial, **meta)

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        split = {s.stimulus_id: s.split for s in stimuli}
        return [self._trial_record(t, split[t.stimulus_id], seed, run_id, model=f"human:{t.subject}",
                                   family="human", readout="human_trial", human_ref_id=self.human_raw_ref_id,
                                   rt_s=t.rt_s)
                for t in self.experiment.observer_trials()]

    def published_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        """The paper's own model trials on the test stimuli among ``stimuli``
        (``readout = "published_trial"``, ``run_meta.published_model`` in words)."""
        split = {s.stimulus_id: s.split for s in stimuli}
        about = {p.name: p.description for p in self.experiment.published}
        return [self._trial_record(t, "test", seed, run_id, model=f"published:{name}", family="published",
                                   readout="published_trial", human_ref_id=self.human_ref_id,
                                   published_model=about[name])
                for name, trials in self.experiment.published_trials().items()
                for t in trials if split.get(t.stimulus_id) == "test"]

    # -- scoring
    @cached_property
    def scorer(self) -> HumanPanelScorer:
        """This task's human-panel scorer (``na`` is no answer); its human-side caches live
        as long as this task instance."""
        return HumanPanelScorer(self.task_id, no_answer=geirhos.NO_ANSWER)

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """:meth:`score_columns` of the records' columns."""
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns (:meth:`HumanPanelScorer.score`)."""
        return self.scorer.score(c, seed)


class SilhouetteTask(GeirhosClassificationTask):
    """``closure.nat.silhouette``: Geirhos et al.'s filled silhouettes (seed 000 §2.1); 4 of
    160 images have a tied modal response."""

    base_id = "closure.nat.silhouette"
    title = "Closure: objects from silhouettes"
    experiment = silhouettes.EXPERIMENT
    description = "16-way forced choice on Geirhos et al. filled silhouettes vs 10 observers"
    prompt_text = ("What object is shown in this black silhouette? Choose exactly one: "
                   + ", ".join(geirhos.CLASSES) + ".")
    human_ref_id = "geirhos2019.silhouette.modal"
    human_data = "yes: each of 10 observers' answer to every silhouette (Geirhos et al. 2019, raw trials)"
    human_prompt_id = "geirhos2019.silhouette-filled-experiment"
    human_raw_ref_id = "geirhos2019.silhouette.raw"


class EdgeTask(GeirhosClassificationTask):
    """``closure.nat.edges``: Geirhos et al.'s edge stimuli, line drawings of the same 16
    classes (Geirhos et al. 2019 §2, Fig. 2 "edges"), with the paper's five CNNs' trials as
    published models (:mod:`perceptbench.stimuli.edges`).  Not in the default run."""

    base_id = "closure.nat.edges"
    title = "Closure: objects from edge drawings"
    experiment = edges.EXPERIMENT
    description = ("16-way forced choice on Geirhos et al. edge line drawings vs 10 observers, "
                   "with the paper's CNN trials as published:* respondents")
    prompt_text = ("What object is shown in this line drawing? Choose exactly one: "
                   + ", ".join(geirhos.CLASSES) + ".")
    human_ref_id = "geirhos2019.edges.modal"
    human_data = ("yes: each of 10 observers' answer to every line drawing (Geirhos et al. 2019, raw trials); "
                  "the paper's AlexNet, GoogLeNet, VGG-16, ResNet-50 (IN and SIN) trials as published:* records")
    human_prompt_id = "geirhos2019.edge-experiment"
    human_raw_ref_id = "geirhos2019.edges.raw"



class CueConflictTask(GeirhosClassificationTask):
    """``shape_bias.nat.cue_conflict``: 16-way choice on Geirhos et al.'s cue-conflict images
    (style transfer: the shape of one class in the texture of another; the paper §3, Fig. 4),
    scored for shape bias against 10 observers (:mod:`perceptbench.stimuli.cue_conflict`).
    Not in the default run.

    Images: the 1,200 of the 1,280 release images whose shape and texture classes differ (the 80
    same-class images are left out, as model-vs-human does, ``modelvshuman/plotting/analyses.py``
    ``ShapeBias.analysis``), read from the setting ``images=DIR`` (a location setting: not part
    of the task id) or, without it, from the directory ``perceptbench sources fetch
    geirhos2019-cue-conflict`` downloads them into (:func:`~perceptbench.stimuli.cue_conflict.default_images_dir`,
    checked against the sha256 manifest written at download); with any image missing, the task
    refuses in one line naming what to download.  Ground truth = the shape class (so ``accuracy`` and the kappas of the
    human panel are about shape decisions); ``run_meta.texture`` the texture class.
    Split: per shape class, a seeded permutation (``rng_for(seed, base_id, "split", class)``) of
    its cue-conflict images sorted by id; the first half (rounded down) probe-train, the rest test.
    Caveat of the encoder readout (nearest class prototype): its prototypes are mean embeddings of
    probe-train cue-conflict images grouped by *shape* class, so the readout is fitted to shape
    and its shape bias is not the encoder's own; a VLM answers zero-shot.
    Scores: the human-panel rows (:class:`~perceptbench.scorers.human_panel.HumanPanelScorer`:
    error consistency against the observers with correct = shape decision) and the shape-bias rows
    (:class:`~perceptbench.scorers.shape_bias.ShapeBiasScorer`)."""

    base_id = "shape_bias.nat.cue_conflict"
    title = "Shape bias on cue-conflict images"
    principle = "shape_bias"
    experiment = cue_conflict.EXPERIMENT
    description = ("16-way choice on Geirhos et al. cue-conflict (style-transfer) images: shape bias vs 10 observers, "
                   "with the paper's CNN trials as published:* respondents; needs the images: "
                   "`perceptbench sources fetch geirhos2019-cue-conflict` or images=DIR")
    prompt_text = ("What object is shown in this image? Choose exactly one: " + ", ".join(geirhos.CLASSES) + ".")
    human_ref_id = "geirhos2019.cue-conflict.modal"
    human_data = ("yes: each of 10 observers' answer to every cue-conflict image (Geirhos et al. 2019, raw trials; "
                  "shape bias per observer, their mean and range); the paper's AlexNet, GoogLeNet and VGG-16 trials as "
                  "published:* records; the images themselves must be downloaded (sources fetch, or images=DIR)")
    human_prompt_id = "geirhos2019.style-transfer-512-nomask-experiment"
    human_raw_ref_id = "geirhos2019.cue-conflict.raw"
    defaults = {"images": ""}
    settings = {"images": Setting("text", text=f"the release's {cue_conflict.STIMULI_FOLDER} directory")}
    location_settings = ("images",)

    def conflict_images(self) -> list[cue_conflict.CueConflictImage]:
        """The release's cue-conflict images (shape class != texture class), sorted by id."""
        return [i for i in self.experiment.release_images() if i.conflict]

    def split(self, seed: int) -> dict[str, str]:
        """stimulus_id -> ``"probe_train"`` | ``"test"`` (class docstring)."""
        by_class: dict[str, list[str]] = {}
        for i in self.conflict_images():
            by_class.setdefault(i.shape, []).append(i.stimulus_id)
        out = {}
        for label in geirhos.CLASSES:
            ids = by_class.get(label, [])
            perm = rng_for(seed, self.base_id, "split", label).permutation(len(ids))
            for pos, k in enumerate(perm):
                out[ids[int(k)]] = "probe_train" if pos < len(ids) // 2 else "test"
        return out

    def check_images(self, seed: int) -> None:
        """Refuse (MissingSourceError, one line naming what to download) without every image."""
        self.experiment.images_in(self.params["images"])

    def stimuli(self, seed: int) -> list[Stimulus]:
        paths = self.experiment.images_in(self.params["images"])
        split = self.split(seed)
        return [Stimulus(i.stimulus_id, split[i.stimulus_id],
                         render=(lambda p=paths[i.stimulus_id]: geirhos.load_image(p)),
                         ground_truth=i.shape, meta={"texture": i.texture, "source_file": i.relpath,
                                                     "release_commit": cue_conflict.RELEASE_COMMIT})
                for i in self.conflict_images()]

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        """The observers' trials on ``stimuli`` (the same-class images' trials are left out)."""
        split = {s.stimulus_id: s.split for s in stimuli}
        return [self._trial_record(t, split[t.stimulus_id], seed, run_id, model=f"human:{t.subject}",
                                   family="human", readout="human_trial", human_ref_id=self.human_raw_ref_id,
                                   rt_s=t.rt_s)
                for t in self.experiment.observer_trials() if t.stimulus_id in split]

    @cached_property
    def shape_scorer(self) -> ShapeBiasScorer:
        """This task's shape-bias scorer (cues from the stimulus ids)."""
        def cues(sid: str):
            i = cue_conflict.parse_stimulus_id(sid)
            return None if i is None else (i.shape, i.texture)
        return ShapeBiasScorer(self.task_id, cues, geirhos.CLASSES)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Human-panel rows (error consistency, ceilings), then the shape-bias rows."""
        return self.scorer.score(c, seed) + self.shape_scorer.score(c, seed)
PANEL_CLASSIFICATION_TASKS: tuple[str, ...] = (SilhouetteTask.base_id, EdgeTask.base_id)
"""Base ids of the :class:`GeirhosClassificationTask` definitions: the tasks whose headline,
report matrix, paired differences and accuracy-vs-kappa figure follow the human-panel rows."""


# --------------------------------------------------------------------------- mark kernels

KERNELS = ("l5", "l9", "sa", "td", "tm")
"""The kernel study's elicitation methods (Demiralp et al. 2014 §3): Likert 5 and 9 points,
spatial arrangement, triplet discrimination (odd one out), triplet matching."""
KERNEL_NAMES = {"l5": "Likert, 5 points", "l9": "Likert, 9 points", "sa": "spatial arrangement",
                "td": "triplet discrimination", "tm": "triplet matching"}
"""What each kernel code of :data:`KERNELS` names (Demiralp et al. 2014 §3), for figures and tables."""

KERNEL_DIR = "perceptual-kernels/data/kernels"


def load_kernel(palette: str, name: str, n: int) -> np.ndarray:
    """The ``n`` x ``n`` symmetric normalised dissimilarity matrix ``<palette>-<name>.txt``
    (float64; palette ``color``, ``shape``, ``size``, ``shapecolor``, ``sizecolor`` or
    ``shapesize``; name one of :data:`KERNELS`), read from the data mirror (Demiralp et al.
    2014, ``data/kernels/``).  Raises KeyError for a file the source does not pin, ValueError
    naming the file for a matrix that is not symmetric ``n`` x ``n``."""
    path = resolve(source_file(f"{KERNEL_DIR}/{palette}-{name}.txt"))
    try:
        k = np.loadtxt(path, delimiter=",")
    except ValueError as e:
        raise ValueError(f"{path}: cannot parse kernel ({e})") from None
    if k.shape != (n, n) or not np.allclose(k, k.T):
        raise ValueError(f"{path}: expected a symmetric {n}x{n} matrix, got shape {k.shape}")
    return k


def load_color_kernel(name: str) -> np.ndarray:
    """:func:`load_kernel` of the 10 Tableau-10 colours (``color-<name>.txt``)."""
    return load_kernel("color", name, 10)


@dataclass(frozen=True)
class MarkChannel:
    """What a kernel odd-one-out task is about: the palette (the release's file prefix), its
    ``n`` marks, ``component(i)`` -> the image of mark ``i`` an encoder embeds and the montage
    shows, ``labels`` (one per mark, written to each stimulus's ``meta[meta_key]`` in the
    shown order) and ``noun`` (the marks in words, plural)."""

    palette: str
    n: int
    component: Callable[[int], Image.Image]
    labels: tuple[str, ...]
    noun: str
    meta_key: str = "marks"


def _drawn(palette: str, noun: str) -> MarkChannel:
    p = marks.get_palette(palette)
    return MarkChannel(palette, p.n, p.image, p.labels, noun)


class MarkKernelTask(Task):
    """Odd-one-out over every C(n,3) triplet of one palette of the kernel study (Demiralp,
    Bernstein & Heer 2014), human answer from its perceptual kernel; the palette is the
    subclass's :attr:`channel` (colour, shape, size or a 4x4 bivariate set).

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
    The two other marks of a triplet, and all three of a tied triplet, are in the order
    of ``rng_for(seed, base_id, "order", triplet)``.  The floor is then ceil(m/3)/m
    (0.333 for the 120 triplets of colour under ``tm``, 0.336 for its 119 under ``l5``/``l9``).
    The order depends on the kernel, so the image of one stimulus id can differ between
    kernel variants (their task ids differ).
    Encoder readout: embed the three marks; the odd one is outside the most
    cosine-similar pair (exact float ties: the first pair in the order (1,2), (1,3), (2,3)).
    The other four kernels are written as ``human:kernel-<name>`` records so their
    agreement with the task's kernel (the inter-kernel spread) is scored from records.

    Setting ``subjects`` (default ``td``; ``none`` leaves them out): the 20 subjects' raw
    triplet-discrimination answers of the release (:mod:`perceptbench.stimuli.kernel_triplets`)
    are written as ``human:subject-NN`` records (response: the position of the subject's odd one
    out in the shown order; correct: it is the kernel's), and the models are also scored against
    them (:meth:`KernelOddOneOutScorer.panel_rows`: human–human agreement and accuracy per
    triplet, error consistency, ceilings computed like the silhouette panel's).  Each subject's
    answers to the study's 10 catch triplets (a mark shown twice beside another: the other is
    the odd one out; :data:`~perceptbench.stimuli.kernel_triplets.CATCH_TRIPLETS`) are written too,
    as records of split ``catch`` (stimulus ``catch_<repeated>-<repeated>-<other>``, response the
    position in that order, ground truth 3), and scored as a per-subject ``catch_accuracy`` row;
    they enter no other row.

    Setting ``min_catch`` (0..10, default 0: nobody screened out): subjects who answered fewer
    catch triplets correctly are left out of the subject panel (the ceilings and the models'
    error consistency); their ``catch_accuracy`` rows stay, and ``human:panel``
    ``n_subjects_screened_out`` counts them.  The default is 0 because the study did not screen:
    the release's own kernel code (``shared/matlab/rawTripletToKernel.m`` with
    ``getTestTriplets.m``) builds every triplet kernel from all 20 subjects' rows, catch triplets
    included, and nothing in the release drops a subject (the paper's text was not available
    offline to check further).  ``min_catch`` is a late setting: at 0 it is not recorded, so the
    records and rows of runs made before it existed are unchanged.
    """

    channel: ClassVar[MarkChannel]
    principle = "similarity"
    track = "chart"
    response_space = "position"
    encoder_readout = "odd_one_out_cosine"
    defaults = {"kernel": "tm", "subjects": "td", "min_catch": "0"}
    allowed = {"kernel": KERNELS, "subjects": ("td", "none")}
    settings = {"min_catch": Setting("int", 0, kernel_triplets.N_CATCH)}
    late_settings = ("min_catch",)

    def check_settings(self) -> None:
        """``min_catch`` screens the subjects: it needs them (``subjects=td``)."""
        if self.params.get("min_catch", "0") != "0" and self.params.get("subjects") != "td":
            raise ValueError(f"task {self.base_id}: min_catch={self.params['min_catch']} screens the subjects' raw "
                             "judgments: it needs subjects=td")

    @property
    def human_data(self) -> str:
        words = (f"yes: a perceptual kernel, the pairwise distances of the {self.channel.n} {self.channel.noun} "
                 "from crowd judgments (Demiralp et al. 2014; setting kernel picks the elicitation method)")
        if self.params.get("subjects", "none") == "td":
            return words + (", and each of 20 subjects' odd-one-out answer to every triplet "
                            "(the release's raw td trials)")
        return words + ", not per-trial answers"

    @property
    def human_ref_id(self) -> str:
        return f"demiralp2014.{self.channel.palette}-{self.params['kernel']}"

    def options(self) -> tuple:
        return (1, 2, 3)

    def triplets(self) -> list[tuple[int, int, int]]:
        """Every triplet of palette indices, in lexicographic order (the release's ``comb``)."""
        return list(itertools.combinations(range(self.channel.n), 3))

    def target_positions(self, seed: int) -> dict[tuple[int, int, int], int]:
        """Counterbalanced 0-based target position per triplet that has a human answer
        (class docstring)."""
        kernel = self.params["kernel"]
        kern = self.kernel(kernel)
        answered = [t for t in self.triplets() if kernel_odd_one_out(kern, t) is not None]
        m = len(answered)
        extra = rng_for(seed, self.base_id, "position_extra", kernel).choice(3, size=m % 3, replace=False)
        pos = np.concatenate([np.repeat(np.arange(3), m // 3), np.sort(extra)])
        pos = pos[rng_for(seed, self.base_id, "positions", kernel).permutation(m)]
        return {t: int(p) for t, p in zip(answered, pos)}

    def stimuli(self, seed: int) -> list[Stimulus]:
        kern = self.kernel(self.params["kernel"])
        positions = self.target_positions(seed)
        ch = self.channel
        out = []
        for trip in self.triplets():
            odd = kernel_odd_one_out(kern, trip)
            if odd is None:
                order = [trip[int(p)] for p in rng_for(seed, self.base_id, "order", trip).permutation(3)]
            else:
                others = [c for c in trip if c != odd]
                order = [others[int(p)] for p in rng_for(seed, self.base_id, "order", trip).permutation(2)]
                order.insert(positions[trip], odd)
            gt = None if odd is None else order.index(odd) + 1
            comps = (lambda o=tuple(order): [ch.component(c) for c in o])
            out.append(Stimulus(
                f"mark_{trip[0]}-{trip[1]}-{trip[2]}", "test",
                render=(lambda c=comps: render.numbered_montage(c())),
                ground_truth=gt, components=comps,
                meta={"order": order, ch.meta_key: [ch.labels[c] for c in order]}))
        return out

    def kernel(self, name: str) -> np.ndarray:
        """:func:`load_kernel` of this palette's kernel ``name``, read once per task instance."""
        cache = self.__dict__.setdefault("_kernels", {})
        if name not in cache:
            cache[name] = load_kernel(self.channel.palette, name, self.channel.n)
        return cache[name]

    def human_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        out = []
        for name in KERNELS:
            kern = self.kernel(name)
            sha = source_file(f"{KERNEL_DIR}/{self.channel.palette}-{name}.txt").sha256
            for s in stimuli:
                order = s.meta["order"]
                odd = kernel_odd_one_out(kern, tuple(sorted(order)))
                resp = None if odd is None else order.index(odd) + 1
                out.append(make_record(
                    self, stimulus_id=s.stimulus_id, model=f"human:kernel-{name}", model_family="human",
                    readout="human_kernel", response=resp, ground_truth=s.ground_truth,
                    manipulated_value=None,
                    raw_output=json.dumps({"odd_palette_index": odd, "order": order}),
                    prompt_id=f"demiralp2014.{self.channel.palette}-{name}", prompt_hash=text_hash(sha),
                    model_version=f"sha256:{sha}", seed=seed, run_id=run_id,
                    split=s.split, order=order))
        if self.params.get("subjects", "none") == "td":
            out += self.subject_records(seed, run_id, stimuli)
        return out

    def subject_records(self, seed: int, run_id: str, stimuli: list[Stimulus]) -> list[TrialRecord]:
        """One ``human:subject-NN`` record per subject and triplet from the release's raw
        triplet-discrimination file (:func:`~perceptbench.stimuli.kernel_triplets.read_td_judgments`):
        response = the 1-based position of the subject's odd one out in the shown order; then one
        per subject and catch triplet (split ``catch``, class docstring)."""
        path = kernel_triplets.raw_td_path(self.channel.palette)
        sha = source_file(path).sha256
        by_id = {s.stimulus_id: s for s in stimuli}
        out = []
        for j in kernel_triplets.read_td_judgments(self.channel.palette, self.channel.n):
            s = by_id[f"mark_{j.triplet[0]}-{j.triplet[1]}-{j.triplet[2]}"]
            order = s.meta["order"]
            out.append(make_record(
                self, stimulus_id=s.stimulus_id, model=f"human:subject-{j.subject:02d}", model_family="human",
                readout="human_trial", response=order.index(j.odd) + 1, ground_truth=s.ground_truth,
                manipulated_value=None, raw_output=json.dumps({"odd_palette_index": j.odd, "order": order}),
                prompt_id=f"demiralp2014.{self.channel.palette}-td-raw", prompt_hash=text_hash(sha),
                model_version=f"sha256:{sha}", seed=seed, run_id=run_id,
                human_ref_id=f"demiralp2014.{self.channel.palette}-td-raw",
                split=s.split, order=order, source_file=path, trial=j.trial))
        for j in kernel_triplets.read_catch_judgments(self.channel.palette, self.channel.n):
            order = [j.repeated, j.repeated, j.other]
            out.append(make_record(
                self, stimulus_id=f"catch_{j.repeated}-{j.repeated}-{j.other}", model=f"human:subject-{j.subject:02d}",
                model_family="human", readout="human_trial", response=order.index(j.chosen) + 1, ground_truth=3,
                manipulated_value=None, raw_output=json.dumps({"odd_palette_index": j.chosen, "order": order}),
                prompt_id=f"demiralp2014.{self.channel.palette}-td-raw", prompt_hash=text_hash(sha),
                model_version=f"sha256:{sha}", seed=seed, run_id=run_id,
                human_ref_id=f"demiralp2014.{self.channel.palette}-td-raw",
                split=CATCH_SPLIT, order=order, source_file=path, trial=len(self.triplets()) + j.catch))
        return out

    @cached_property
    def scorer(self) -> KernelOddOneOutScorer:
        """This task's kernel odd-one-out scorer, the task's kernel as reference."""
        return KernelOddOneOutScorer(self.task_id, f"human:kernel-{self.params['kernel']}",
                                     min_catch=int(self.params.get("min_catch", "0")))

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """:meth:`score_columns` of the records' columns."""
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns (:meth:`KernelOddOneOutScorer.score`)."""
        return self.scorer.score(c, seed)


_ODD_PROMPT = ("Three {what} are shown, numbered 1, 2 and 3. Which one is the odd one out ({which})? "
               "Answer 1, 2, or 3.")
_LOOKS = "the one that looks the most different from the other two"
"""The bivariate prompts' criterion: the study's own triplet-discrimination question ("Which one
looks the most different", ``exp/*/td/*-td.html``), naming neither channel."""


class MarkColorTask(MarkKernelTask):
    """``similarity.chart.mark_color``: the 10 Tableau-10 colours as filled chips
    (``color10``; the chip scale is perceptbench's, :func:`perceptbench.stimuli.render.color_chip`).
    Its subject panel is opt-in (``subjects=td``, default ``none``; ``min_catch`` as on the other
    palettes): both are late settings, so the default task's id, records and the default run's
    pinned scores stay as they were before the other palettes came (issue 23)."""

    base_id = "similarity.chart.mark_color"
    title = "Mark colour odd-one-out"
    defaults = {"kernel": "tm", "subjects": "none", "min_catch": "0"}
    late_settings = ("subjects", "min_catch")
    channel = MarkChannel("color", 10, lambda i: render.color_chip(TABLEAU10[i]), TABLEAU10, "colours", "colors")
    description = "odd-one-out over Tableau-10 mark colours vs the perceptual kernel"
    prompt_text = _ODD_PROMPT.format(what="colored chart marks", which="least similar in color to the other two")


class MarkShapeTask(MarkKernelTask):
    """``similarity.chart.mark_shape``: the 10 Tableau symbols of ``shape10`` as black outlines
    (:mod:`perceptbench.stimuli.marks`)."""

    base_id = "similarity.chart.mark_shape"
    title = "Mark shape odd-one-out"
    channel = _drawn("shape", "shapes")
    description = "odd-one-out over the 10 Tableau mark shapes vs the perceptual kernel"
    prompt_text = _ODD_PROMPT.format(what="chart symbols", which="least similar in shape to the other two")


class MarkSizeTask(MarkKernelTask):
    """``similarity.chart.mark_size``: the 10 circle sizes of ``size10`` (radius sqrt(d/5),
    d = 0.25..2.5) as black outlines."""

    base_id = "similarity.chart.mark_size"
    title = "Mark size odd-one-out"
    channel = _drawn("size", "circle sizes")
    description = "odd-one-out over 10 mark sizes (circles) vs the perceptual kernel"
    prompt_text = _ODD_PROMPT.format(what="circles", which="least similar in size to the other two")


class MarkShapeColorTask(MarkKernelTask):
    """``similarity.chart.mark_shape_color``: the 4x4 ``shapeXcolor4`` set (square, plus, cross,
    diamond x 4 Tableau colours, coloured outlines)."""

    base_id = "similarity.chart.mark_shape_color"
    title = "Mark shape x colour odd-one-out"
    channel = _drawn("shapecolor", "shape x colour marks")
    description = "odd-one-out over 16 marks, 4 shapes x 4 colours, vs the perceptual kernel"
    prompt_text = _ODD_PROMPT.format(what="chart symbols", which=_LOOKS)


class MarkSizeColorTask(MarkKernelTask):
    """``similarity.chart.mark_size_color``: the 4x4 ``sizeXcolor4`` set (4 circle sizes x 4
    Tableau colours, coloured outlines)."""

    base_id = "similarity.chart.mark_size_color"
    title = "Mark size x colour odd-one-out"
    channel = _drawn("sizecolor", "size x colour marks")
    description = "odd-one-out over 16 marks, 4 sizes x 4 colours, vs the perceptual kernel"
    prompt_text = _ODD_PROMPT.format(what="chart symbols", which=_LOOKS)


class MarkShapeSizeTask(MarkKernelTask):
    """``similarity.chart.mark_shape_size``: the 4x4 ``shapeXsize4`` set (4 shapes x 4 sizes,
    black outlines of constant stroke)."""

    base_id = "similarity.chart.mark_shape_size"
    title = "Mark shape x size odd-one-out"
    channel = _drawn("shapesize", "shape x size marks")
    description = "odd-one-out over 16 marks, 4 shapes x 4 sizes, vs the perceptual kernel"
    prompt_text = _ODD_PROMPT.format(what="chart symbols", which=_LOOKS)


MARK_KERNEL_TASKS: tuple[type[MarkKernelTask], ...] = (MarkColorTask, MarkShapeTask, MarkSizeTask,
                                                       MarkShapeColorTask, MarkSizeColorTask, MarkShapeSizeTask)
"""Every kernel odd-one-out task, one per palette of the kernel study (only colour is in the
default run)."""
MARK_KERNEL_IDS: tuple[str, ...] = tuple(t.base_id for t in MARK_KERNEL_TASKS)


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

    ``n_test`` test stimuli (default 150 = 10 per k, so that each a(k) rests on 10 trials and
    ``replicates`` can be shown; 40 gave 2-3 per k and every a(k) interval spanned 0-1) and a
    disjoint probe-train split (``n_probe`` stimuli, default 150 = 10 per k); k = 2..16 series.  No per-trial human data exist: scored against the human
    categorical-colour capacity band 6-12 through a(k) (seed 000 §2.1, §2.3).  Encoder
    readout: ridge regression on embeddings (alpha by 5-fold CV on probe-train only),
    rounded and clipped to 2..16.  A VLM's count answer must be an integer 1..20.
    """

    base_id = "similarity.chart.series_count"
    title = "Counting colour series"
    principle = "similarity"
    track = "chart"
    response_space = "count"
    encoder_readout = "ridge_round"
    description = "count colour series in scatterplots; a(k) vs the 6-12 capacity band"
    prompt_text = ("How many distinct color series (groups of same-colored points) are in this "
                   "scatterplot? Answer with a single integer.")
    human_ref_id = "capacity-band.healey1996-ware2013"
    human_data = ("no per-trial answers: a published capacity band, 6-12 distinguishable colour series "
                  "(Healey 1996; Ware 2013), that the model's a(k) curve is compared with")
    human_ref_literature = ("Healey 1996; Ware 2013: the 6-12 band of distinguishable categorical colours, "
                            "HUMAN_BAND in metrics/capacity.py")
    defaults = {"n_test": "150", "n_probe": "150"}
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


    @cached_property
    def scorer(self) -> CapacityScorer:
        """This task's capacity scorer: levels k = 2..16, the human band 6-12."""
        return CapacityScorer(self.task_id, SERIES_K)

    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """:meth:`score_columns` of the records' columns."""
        return self.score_columns(TaskColumns.from_records(self.task_id, records), seed)

    def score_columns(self, c: TaskColumns, seed: int) -> list[ScoreRow]:
        """Score rows from the task's records as columns (:meth:`CapacityScorer.score`)."""
        return self.scorer.score(c, seed)
