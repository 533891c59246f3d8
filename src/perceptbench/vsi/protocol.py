"""The VSI protocol: any task asked under clean and perturbed conditions (seed 002 §2, appendix
A, D.1).

A VSI task turns each (image, question) *sample* of a benchmark into one stimulus per
condition: ``clean``, ``region_blur`` (Gaussian blur of the question-relevant region, mask
dilated 4 px) and/or ``whole_blur`` (whole image), at one sigma in pixels.  Each condition is
its own trial record (format: :mod:`perceptbench.vsi.samples`); the stimulus id is
``{sample_id}~{condition}``.  VSI = KL(p_clean || p_perturbed) over the top-50 first-answer
-token distributions is computed at scoring time from the records alone
(:mod:`perceptbench.vsi.scoring`).

:class:`VSITask` is the protocol; :func:`battery_vsi` wraps a battery task into it; the
benchmark definitions (SalBench syn, the wrapped battery tasks, POPE, HallusionBench, MMVP,
MMStar) are in :mod:`perceptbench.vsi.benchmarks`.

Common settings: ``perturbation`` [both | region | whole], ``sigma`` [20] (pixels; 10 and 40
for the robustness check of seed 002 C.2), ``answer_prefix`` [""] (declared answer-prefix
string appended after the chat template's assistant prefix, recorded), ``verbal_conf`` [1]
(elicit verbalised confidence 0-100 in a follow-up turn, :data:`CONFIDENCE_PROMPT`), ``top_k`` [50] (seed 002 D.1).
"""

from __future__ import annotations

import abc
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from ..core.rows import ScoreRow
from ..core.settings import Setting
from ..models.base import FOLLOW_UP_TURN
from ..records import TrialRecord
from ..tasks.base import Stimulus, Task
from .samples import vsi_columns
from .scoring import score_columns, score_task

CONFIDENCE_PROMPT = "How confident are you that your answer is correct? Reply with a single integer from 0 to 100."
"""Verbalised-confidence question, asked as a follow-up user turn after the clean question and the
model's own greedy answer (seed 002 appendix A: "elicited in a second forward pass", parsed as the
first integer).  Recorded verbatim per clean record (``confidence_prompt``, ``confidence_turn``)."""

CONFIDENCE_TURN = FOLLOW_UP_TURN
"""How the confidence question is posed: ``follow_up`` = the conversation ``user: [image] question``,
``assistant: answer_prefix + answer``, ``user: CONFIDENCE_PROMPT``.  (Releases before this
constant asked a single-turn prompt repeating question and answer; a resume over such records stops
with a ``confidence prompt`` difference.)"""

MAX_NEW_TOKENS = 8
"""Greedy answer budget (seed 002 D.1: 8 new tokens for POPE, MMVP and MMStar)."""

CONF_MAX_NEW_TOKENS = 8


class _PositiveNumber(Setting):
    """A number strictly above 0 (``what`` names the unit)."""

    def describe(self) -> str:
        return f"a number > 0, in {self.text}" if self.text else "a number > 0"

    def normalise(self, value: str) -> str:
        v = Setting("float").normalise(value)
        if float(v) <= 0:
            raise ValueError(self.describe())
        return v


class _VerbatimText(Setting):
    """Free text kept exactly as given (leading/trailing spaces matter: an answer prefix)."""

    def normalise(self, value: str) -> str:
        return str(value)


_N_ALL = Setting("int", 1, choices=("all",))


def _positive_float(task_id: str, key: str, v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not np.isfinite(x) or x <= 0:
        raise ValueError(f"{task_id}: {key} must be a positive number (pixels), got {v!r}")
    return x


class VSITask(Task):
    """Base of the VSI tasks.  Subclasses implement :meth:`samples` (one dict per sample with
    ``sample_id, image_id, render, prompt, ground_truth, region_box, region_source, meta``) and
    :meth:`parse_answer`.  ``region_box`` (x0, y0, x1, y1, exclusive ends) or None for the
    whole image; ``region_source`` ``exact`` / ``annotation`` / ``grounding`` or ``fallback_whole``
    (a region was wanted but none was found: counted as a fallback)."""

    is_vsi: ClassVar[bool] = True
    max_new_tokens: ClassVar[int] = MAX_NEW_TOKENS
    encoder_readout = "none (VSI needs a VLM's next-token distribution)"
    benchmark: ClassVar[str]
    region_perturbation: ClassVar[bool] = True
    base_defaults: ClassVar[dict[str, str]] = {"perturbation": "both", "sigma": "20", "answer_prefix": "",
                                                "verbal_conf": "1", "top_k": "50"}
    allowed = {"perturbation": ("both", "region", "whole"), "verbal_conf": ("0", "1")}
    whole_only: ClassVar[dict] = {"perturbation": ("whole",), "verbal_conf": ("0", "1")}
    settings = {"sigma": _PositiveNumber("float", text="pixels"), "top_k": Setting("int", 1),
                "answer_prefix": _VerbatimText("text", text="any text, appended after the assistant prefix")}

    def __init__(self, **params: str):
        super().__init__(**params)
        allowed = ("both", "region", "whole") if self.region_perturbation else ("whole",)
        if self.params["perturbation"] not in allowed:
            raise ValueError(f"{self.base_id}: perturbation={self.params['perturbation']!r} not in {list(allowed)}"
                             + ("" if self.region_perturbation else
                                " (this task declares the whole image as the question-relevant region)"))
        self.sigma = _positive_float(self.base_id, "sigma", self.params["sigma"])
        if self.params["verbal_conf"] not in ("0", "1"):
            raise ValueError(f"{self.base_id}: verbal_conf must be 0 or 1, got {self.params['verbal_conf']!r}")
        try:
            self.top_k = int(self.params["top_k"])
        except ValueError:
            self.top_k = 0
        if self.top_k < 1:
            raise ValueError(f"{self.base_id}: top_k must be an integer >= 1, got {self.params['top_k']!r}")

    # -- settings
    @property
    def answer_prefix(self) -> str:
        return self.params["answer_prefix"]

    @property
    def verbal_conf(self) -> bool:
        return self.params["verbal_conf"] == "1"

    @property
    def conditions(self) -> tuple[str, ...]:
        p = self.params["perturbation"]
        return ("clean",) + {"both": ("region_blur", "whole_blur"), "region": ("region_blur",),
                             "whole": ("whole_blur",)}[p]

    def record_problem(self, r) -> str | None:
        """None: a VSI answer's options are the question's own (lettered options, yes/no), not
        :meth:`options`; the benchmark tasks add their rule (:class:`perceptbench.vsi.benchmarks.VSIExternalTask`)."""
        return None

    def options(self) -> tuple:
        return ()

    # -- stimuli
    @abc.abstractmethod
    def samples(self, seed: int) -> list[dict]:
        """The (image, question) samples of this benchmark cell, before perturbation."""

    def stimuli(self, seed: int) -> list[Stimulus]:
        """One stimulus per (sample, condition), ids ``{sample_id}~{condition}``; the clean image
        is rendered once per sample and reused (small LRU cache).  With both blurs, a sample's
        region blur takes its pixels from the sample's whole blur (the same bytes as blurring a
        crop, :func:`perceptbench.stimuli.perturb.region_blur`): the whole blur rendered for the
        region stimulus waits in a one-sample slot until the whole-blur stimulus is rendered (the
        VSI run and the probe features render a sample's conditions in turn), so it is computed
        once and at most one such image is held.

        A sample's region is either a fixed ``region_box`` (exclusive ends; None = the whole
        image as declared by the task) or, for benchmarks that need the grounding step, a
        ``region`` callable ``image -> external.base.Region`` evaluated when the region-blur
        stimulus is first rendered; rendering then writes the region's source, box and fallback
        flag into the stimulus's ``meta["vsi"]`` (the record is built after rendering).

        A sample marked ``no_image`` (a question the benchmark asks without an image:
        HallusionBench's ``visual_input`` 0) has one clean stimulus with ``meta["no_image"]``;
        only the image-withheld condition asks it
        (:meth:`perceptbench.respond.base.Respondent.trial_stimuli`)."""
        cache = self.__dict__.setdefault("_stimuli_cache", {})
        if seed in cache:
            return cache[seed]
        from ..stimuli import perturb

        out = []
        share = "whole_blur" in self.conditions
        slot: dict = {}  # {(sample_id, sigma): whole blur} of the last region blur rendered, until taken

        def whole(key, img, sigma, keep: bool):
            """The whole blur of sample ``key[0]``: from the slot (taken out unless ``keep``) or computed
            (kept in the slot, alone, when ``keep``)."""
            got = slot.get(key) if keep else slot.pop(key, None)
            if got is None:
                got = perturb.whole_blur(img, sigma)
                if keep:
                    slot.clear()
                    slot[key] = got
            return got

        for smp in self.samples(seed):
            clean = lru_cache(maxsize=1)(smp["render"])
            box, region_fn = smp.get("region_box"), smp.get("region")
            region_fn = lru_cache(maxsize=1)(region_fn) if region_fn is not None else None
            for cond in ("clean",) if smp.get("no_image") else self.conditions:
                sigma = 0.0 if cond == "clean" else self.sigma
                source = smp["region_source"]
                vsi = {"sample_id": smp["sample_id"], "image_id": smp["image_id"], "benchmark": self.benchmark,
                       "condition": cond, "sigma_px": sigma, "dilate_px": perturb.DILATE_PX,
                       "region_source": source, "region_bbox": None if box is None else list(box),
                       "fallback": cond == "region_blur" and source == "fallback_whole",
                       "answer_prefix": self.answer_prefix, "top_k": self.top_k}

                def render(clean=clean, cond=cond, box=box, sigma=sigma, vsi=vsi, region_fn=region_fn,
                           key=(smp["sample_id"], sigma)):
                    img = clean()
                    if cond == "clean":
                        return img
                    if cond == "whole_blur":
                        return whole(key, img, sigma, keep=False) if share else perturb.whole_blur(img, sigma)
                    mask = None if box is None else perturb.box_mask(img.size, box)
                    if region_fn is not None:
                        reg = region_fn()
                        vsi.update(region_source=reg.source, region_bbox=None if reg.box is None else list(reg.box),
                                   fallback=reg.source == "fallback_whole", region=reg.to_json())
                        mask = None if reg.source == "fallback_whole" else reg.to_mask(img.size)
                    if mask is None:
                        return perturb.whole_blur(img, sigma)
                    return perturb.region_blur(img, mask, sigma, perturb.DILATE_PX,
                                               blurred=whole(key, img, sigma, keep=True) if share else None)

                mv = "clean" if cond == "clean" else f"{cond}:sigma={sigma:g}"
                out.append(Stimulus(f"{smp['sample_id']}~{cond}", "test", render=render,
                                    ground_truth=smp["ground_truth"], manipulated_value=mv,
                                    meta={"vsi": vsi, "vsi_prompt": smp["prompt"], **smp.get("meta", {}),
                                          **({"no_image": True} if smp.get("no_image") else {})}))
        cache[seed] = out
        return out

    def parse_for(self, s: Stimulus, text: str | None, mode: str = "default") -> tuple[Any, dict]:
        """Parse one clean greedy answer of stimulus ``s`` under parser ``mode`` (run time)."""
        return self.parse_clean(text, s.meta, mode)

    def parse_clean(self, text: str | None, meta: dict, mode: str = "default") -> tuple[Any, dict]:
        """Parse a clean greedy answer -> (response or None, ``run_meta.parse``), given the
        stimulus meta as it is stored in the record's ``run_meta`` (``meta``); default: the
        task's :meth:`parse_answer`.  Run time (:meth:`parse_for`) and re-scoring
        (:meth:`parse_record`) both come here, so ``--parser MODE`` reaches VSI answers."""
        return self.parse_answer(text, mode)

    def parse_record(self, r: TrialRecord, mode: str = "default") -> tuple[Any, dict]:
        """Re-parse a clean record's ``raw_output`` under ``mode`` (:meth:`parse_clean`)."""
        return self.parse_clean(r.raw_output, r.run_meta.model_extra or {}, mode)

    @property
    def parses_raw_output(self) -> bool:
        """True when :meth:`parse_clean` ignores the stimulus meta (this class's own): a clean
        answer's parse is then :meth:`parse_answer` of its ``raw_output`` alone (each distinct
        text parsed once, :meth:`Task.parse_key`; on columns, :func:`perceptbench.scoring.reparse_columns`)."""
        cls = type(self)
        return cls.parse_record is VSITask.parse_record and cls.parse_clean is VSITask.parse_clean

    parse_meta_keys: ClassVar[tuple[str, ...]] = ()
    """The ``run_meta`` keys (of :data:`perceptbench.records.VSI_EXTRA_KEYS`) that a task's own
    :meth:`parse_clean` reads besides the answer text; declared by a task whose parse reads them
    and nothing else of the meta (:class:`perceptbench.vsi.benchmarks.VSIExternalTask`: the
    options of a lettered answer), so its answers are re-parsed on the columns, once per distinct
    (text, values) (:func:`perceptbench.scoring.reparse_columns`)."""

    @property
    def parses_columns(self) -> bool:
        """Whether a clean answer's parse needs nothing but columns: :attr:`parses_raw_output`, or
        :meth:`parse_clean` of the text and the :attr:`parse_meta_keys` (``parse_record`` not overridden)."""
        return self.parses_raw_output or (bool(self.parse_meta_keys) and type(self).parse_record is VSITask.parse_record)

    @property
    def scores_columns(self) -> bool:
        """Whether :meth:`score_columns` gives this task's rows: :meth:`score` not overridden (the
        VSI rows, then :meth:`native_rows`) and its clean answers parse from columns
        (:attr:`parses_columns`)."""
        return type(self).score is VSITask.score and self.parses_columns

    def native_rows(self, cols, samples: list, seed: int) -> list[ScoreRow]:
        """The benchmark's own rows after the VSI rows (:func:`perceptbench.vsi.scoring.score_columns`),
        from the task's records as :class:`~perceptbench.vsi.samples.VSIColumns` (``cols``) and its VSI
        samples (``samples``, the unflagged pairs); none by default
        (:class:`perceptbench.vsi.benchmarks.VSIExternalTask`'s tasks add POPE's, HallusionBench's,
        MMVP's and MMStar's: :mod:`perceptbench.vsi.native`)."""
        return []

    def vlm_request(self, s: Stimulus, seed: int):
        return (s.render(),), s.meta["vsi_prompt"], {}

    @property
    def confidence_prompt_hash(self) -> str | None:
        """Hash of the confidence turn as recorded (``{turn}:{prompt}``), None without ``verbal_conf``."""
        from ..seeding import text_hash

        return text_hash(f"{CONFIDENCE_TURN}:{CONFIDENCE_PROMPT}") if self.verbal_conf else None

    # -- scoring
    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """Per model: skipped row, or per perturbed condition the VSI cell summary (seed 002 §2.2,
        §2.4, §3), plus clean-answer accuracy, parse-null and verbal-confidence-missing counts:
        :func:`perceptbench.vsi.scoring.score_task`.  Metric names carry ``[condition,sigma=S]``;
        see docs/metrics.md."""
        return score_task(self, records, seed)

    def score_columns(self, columns, seed: int) -> list[ScoreRow]:
        """:meth:`score` from the task's records as columns: a
        :class:`perceptbench.record_table.TaskColumns` (responses re-parsed) whose ``vsi`` holds the
        :class:`~perceptbench.vsi.samples.VSIReader` of the same records
        (:func:`perceptbench.vsi.samples.read_vsi_columns`); for tasks whose :attr:`scores_columns`."""
        return score_columns(self, vsi_columns(columns), seed)


def battery_vsi(base_cls: type[Task]) -> type[VSITask]:
    """The protocol wrapped around a battery task: a :class:`VSITask` class over ``base_cls``'s
    test stimuli, verbatim prompt and parser, with the whole image declared as the
    question-relevant region (so only ``perturbation=whole``); ``base_id`` ``vsi.{base_id}``,
    benchmark ``battery.{last part of base_id}``; setting ``n`` [all]: the first n test stimuli.
    The wrapped task's stimuli, human reference and options are read from one lazily built
    instance of ``base_cls``."""

    class _BatteryVSI(VSITask):
        region_perturbation = False
        allowed = VSITask.whole_only
        defaults = {**VSITask.base_defaults, "perturbation": "whole", "n": "all"}
        settings = {**VSITask.settings, "n": _N_ALL}

        def _base(self) -> Task:
            b = self.__dict__.get("_base_task")
            if b is None:
                b = self.__dict__["_base_task"] = base_cls()
            return b

        def options(self) -> tuple:
            return self._base().options()

        def samples(self, seed: int) -> list[dict]:
            base = self._base()
            test = [s for s in base.stimuli(seed) if s.split == "test"]
            if self.params["n"] != "all":  # else an integer >= 1: checked when the task is made
                test = test[:int(self.params["n"])]
            out = []
            for s in test:
                # the task declares the whole image as the region: region_box None, source "exact"
                out.append({"sample_id": s.stimulus_id, "image_id": s.stimulus_id, "render": s.render,
                            "prompt": base.prompt_text, "ground_truth": s.ground_truth,
                            "region_box": None, "region_source": "exact", "meta": {}})
            return out

        def parse_answer(self, text: str | None, mode: str = "default"):
            return self._base().parse_answer(text, mode)

    name = base_cls.base_id
    return type(f"VSI_{name.replace('.', '_')}", (_BatteryVSI,), {
        "base_id": f"vsi.{name}", "benchmark": f"battery.{name.split('.')[-1]}", "principle": base_cls.principle,
        "track": base_cls.track, "response_space": base_cls.response_space,
        "description": f"VSI on the {name} stimuli (whole image declared as the question-relevant region)",
        "title": f"VSI on {base_cls.title[0].lower()}{base_cls.title[1:]}" if base_cls.title else f"VSI on {name}",
        "prompt_text": base_cls.prompt_text, "human_ref_id": property(lambda self: self._base().human_ref_id),
        "human_data": property(lambda self: f"{self._base().human_data} (clean answers); VSI itself compares the "
                                            "model's answers with and without blur"),
        "__doc__": f"``vsi.{name}``: VSI on the {name} test stimuli, whole-image blur only."})
