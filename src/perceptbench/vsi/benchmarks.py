"""The VSI benchmark definitions: which samples, question, region and parser each VSI task has.
The dataset loaders stay in :mod:`perceptbench.external` (every loader of an external benchmark
sits there); the protocol (conditions, stimuli, settings, scoring) is
:class:`perceptbench.vsi.protocol.VSITask`.

Tasks (settings as ``@key=value``; defaults in brackets):

* ``vsi.salbench.syn`` -- P3-style search arrays (:mod:`perceptbench.stimuli.search_arrays`),
  the lettered question "which feature makes the odd object differ? A. Orientation B. Color
  C. Size"; the exact region is the target's bounding box.  ``n`` [300] samples.
* ``vsi.closure.nat.silhouette``, ``vsi.similarity.chart.mark_color``,
  ``vsi.similarity.chart.series_count`` -- the battery stimuli with their own verbatim prompt
  and parser; the task declares the whole image as the question-relevant region (the object
  fills the silhouette image; the marks / scatter points are spread over the whole chart), so
  only ``perturbation=whole`` is offered.  ``n`` [all]: the first n test stimuli.
* ``vsi.pope``, ``vsi.hallusionbench``, ``vsi.mmvp``, ``vsi.mmstar`` -- external benchmarks
  (:class:`VSIExternalTask`); regions from the benchmark's annotation or the grounding step.

:data:`VSI_TASKS` lists them for :mod:`perceptbench.tasks.registry`.
"""

from __future__ import annotations

import abc
from typing import ClassVar

from ..core.settings import Setting
from ..tasks.base import Task
from .protocol import _N_ALL, VSITask, _positive_float, battery_vsi

SALBENCH_LETTERS = ("A", "B", "C")

SALBENCH_OPTIONS = ("Orientation", "Color", "Size")

SALBENCH_PROMPT = ("This image shows a grid of {object_category}. One of them differs from all the others in "
                   "one low-level visual feature. In which feature does it differ?\n"
                   "A. Orientation\nB. Color\nC. Size\nAnswer with the option's letter.")


class VSISalBenchSyn(VSITask):
    """``vsi.salbench.syn``: VSI on P3-style search arrays; region = the target's exact box."""

    base_id = "vsi.salbench.syn"
    title = "VSI on SalBench search arrays"
    benchmark = "salbench.syn"
    principle = "saliency"
    track = "syn"
    response_space = "choice"
    description = "VSI on P3-style search arrays; exact region = the odd target's bounding box (seed 002)"
    prompt_text = SALBENCH_PROMPT
    human_ref_id = "salbench.p3-generated"
    human_data = ("no human answers: the odd target is known by construction; VSI compares the model's answers "
                  "with and without blur")
    defaults = {**VSITask.base_defaults, "n": "300"}
    settings = {**VSITask.settings, "n": Setting("int", 1)}

    def options(self) -> tuple:
        return SALBENCH_LETTERS

    def samples(self, seed: int) -> list[dict]:
        from ..seeding import rng_for
        from ..stimuli import search_arrays as sa
        from ..tasks.salbench import P3_COUNTS

        n = int(self.params["n"])  # an integer >= 1: checked when the task is made (``settings``)
        # largest-remainder apportionment of n over the P3 composition (810 / 864 / 840 of 2,514)
        exact = {f: c * n / 2514 for f, c in P3_COUNTS.items()}
        counts = {f: int(x) for f, x in exact.items()}
        for f in sorted(exact, key=lambda f: -(exact[f] - counts[f]))[:n - sum(counts.values())]:
            counts[f] += 1
        gseed = int(rng_for(seed, "vsi.salbench.syn", "test_seed").integers(2**31 - 1))
        out = []
        for i, (feat, diff) in enumerate(sa.plan_p3(counts)):
            # the layout (~10 KB) is kept and drawn at render time: the array is laid out once
            st = sa.search_layout(gseed, i, feat, diff)
            x0, y0, x1, y1 = st.target_bbox  # inclusive -> exclusive ends
            sid = f"p3syn-{i:05d}"
            letter = SALBENCH_LETTERS[SALBENCH_OPTIONS.index(sa.FEATURE_LABEL[feat])]
            out.append({"sample_id": sid, "image_id": sid, "render": st.draw,
                        "prompt": SALBENCH_PROMPT.format(object_category=st.object_category),
                        "ground_truth": letter, "region_box": (x0, y0, x1 + 1, y1 + 1), "region_source": "exact",
                        "meta": {"feature": feat, "difficulty": diff, "generator_seed": gseed, "generator_index": i}})
        return out

    def parse_answer(self, text: str | None, mode: str = "default"):
        from ..readouts.answers import parse_letter

        pr = parse_letter(text, SALBENCH_LETTERS, SALBENCH_OPTIONS, mode=mode)
        return pr.response, pr.record_meta(mode)


YES_NO_SUFFIX = "Answer with yes or no."

LETTER_SUFFIX = "Answer with the option's letter from the given choices directly."
"""Answer instructions appended to external benchmarks' verbatim questions (the LLaVA
evaluation's wording for lettered options); recorded through the prompt hash."""


def vqa_prompt(question: str, answer_type: str, options: tuple[str, ...] | None) -> str:
    """The prompt for one external VQA stimulus: the verbatim question, then (letter questions)
    one ``"A. option"`` line per option, then the answer instruction."""
    if answer_type == "yes_no":
        return f"{question}\n{YES_NO_SUFFIX}"
    from ..external.base import option_letters

    lines = [f"{l}. {o}" for l, o in zip(option_letters(len(options or ())), options or ())]
    return "\n".join([question, *lines, LETTER_SUFFIX])


class VSIExternalTask(VSITask):
    """Base of the VSI tasks on external benchmarks (loaders: :mod:`perceptbench.external`).

    Region per sample: the benchmark's own annotation when it has one (``annotation``), else
    the grounding step on the loader's object phrase (Grounding DINO box above
    ``box_threshold`` -> SAM mask; settings ``detector`` / ``segmenter``: hub ids or local
    directories), else the whole image (``fallback_whole``, counted).  Loaders raise a
    one-line error naming what to get and where before any model is loaded."""

    principle = "vsi"
    track = "nat"
    response_space = "choice"
    human_ref_id = "none:vsi"
    human_data = ("no human answers: the benchmark's ground-truth labels; VSI compares the model's answers with "
                  "and without blur")
    prompt_text = "{question}\n[A. option ...]\n" + LETTER_SUFFIX + " | {question}\n" + YES_NO_SUFFIX
    location_settings = ("images",)  # where the images lie: run_meta.data_location, not the task id
    content_settings = ("questions", "source")  # named in the task id by the hash of their content
    grounding_defaults: ClassVar[dict[str, str]] = {"limit": "all", "detector": "IDEA-Research/grounding-dino-tiny",
                                                    "segmenter": "facebook/sam-vit-base", "box_threshold": "0.3"}
    settings = {**VSITask.settings, "limit": _N_ALL, "box_threshold": Setting("float", 0, 1),
                "detector": Setting("text", text="Grounding DINO: a hub id or a local directory"),
                "segmenter": Setting("text", text="SAM: a hub id or a local directory"),
                "images": Setting("text", text="the benchmark's image directory"),
                "questions": Setting("text", text="question file; default: the release in PERCEPTBENCH_MIRROR"),
                "source": Setting("text", text="a local copy of the dataset; default: the datasets library")}

    def record_problem(self, r) -> str | None:
        """An answer without the benchmark's ids (:func:`perceptbench.vsi.native.external_problem`)."""
        from .native import external_problem

        return external_problem(r)

    def _limit(self) -> int | None:
        v = self.params["limit"]
        if v == "all":
            return None
        try:
            n = int(v)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{self.base_id}: limit must be 'all' or an integer >= 1, got {v!r}")
        return n

    def _box_threshold(self) -> float:
        """The ``box_threshold`` setting as a float (0 allowed); only tasks that ground regions have it."""
        v = self.params["box_threshold"]
        return _positive_float(self.base_id, "box_threshold", v) if v != "0" else 0.0

    @abc.abstractmethod
    def load(self, seed: int) -> list:
        """The benchmark's :class:`~perceptbench.external.base.VQAStimulus` list (its loader)."""

    def _grounder(self):
        g = self.__dict__.get("_grounder_models")
        if g is None:
            from ..external.grounding import Detector, Segmenter
            from ..models.base import ModelLoadError

            loaded = []
            for key, cls in (("detector", Detector), ("segmenter", Segmenter)):
                try:
                    loaded.append(cls.from_pretrained(self.params[key]))
                except (OSError, ValueError, KeyError, ImportError, RuntimeError, TypeError) as e:
                    why = (str(e).strip().splitlines() or [""])[0][:200]
                    raise ModelLoadError(f"{self.base_id}: {key}={self.params[key]!r} cannot be loaded "
                                         f"({type(e).__name__}: {why}); give a local directory or a hub id "
                                         "reachable from here") from None
            g = self.__dict__["_grounder_models"] = tuple(loaded)
        return g

    def check_images(self, seed: int) -> None:
        """Decode every image of the benchmark's selected questions once (a corrupt or
        oversized file is an ImageLoadError naming it and the question, before anything is written).
        Questions the benchmark asks without an image (``meta["no_image"]``) have none to decode."""
        for vs in self.load(seed):
            if not vs.meta.get("no_image"):
                vs.load()

    def prepare_models(self, seed: int) -> None:
        """Load the grounding models (Grounding DINO + SAM) when some region-blur stimulus needs
        them, so that an unloadable ``detector`` / ``segmenter`` fails (one-line
        ``ModelLoadError`` naming the setting) before the VLM is loaded and before anything is
        written.  The runner calls this for every task first."""
        if "region_blur" in self.conditions and any(
                s.meta["vsi"]["condition"] == "region_blur" and s.meta["vsi"]["region_source"] == "grounding"
                for s in self.stimuli(seed)):
            self._grounder()

    def samples(self, seed: int) -> list[dict]:
        from ..external.base import Region

        thr = self._box_threshold() if self.region_perturbation else None  # MMStar: no grounding, no threshold
        out = []
        for vs in self.load(seed):
            if not self.region_perturbation:
                region_fn, source = None, "exact"  # the whole image, declared (MMStar, seed 002 §3)
            elif vs.region is not None:
                region_fn, source = (lambda r=vs.region: r), vs.region.source
            elif vs.object_phrase:
                def region_fn(vs=vs):
                    from ..external.grounding import ground_region

                    det, seg = self._grounder()
                    return ground_region(vs.load(), vs.object_phrase, detector=det, segmenter=seg, box_threshold=thr)
                source = "grounding"
            else:
                region_fn, source = (lambda: Region.whole("no object phrase")), "fallback_whole"
            out.append({"sample_id": vs.stimulus_id, "image_id": vs.image_id, "render": vs.load,
                        "no_image": bool(vs.meta.get("no_image")),
                        "prompt": vqa_prompt(vs.question, vs.answer_type, vs.options), "ground_truth": vs.answer,
                        "region_box": None, "region": region_fn, "region_source": source,
                        "meta": {"vsi_answer": {"type": vs.answer_type, "options": list(vs.options or ())},
                                 "object_phrase": vs.object_phrase, "external": vs.meta}})
        return out

    parse_meta_keys = ("vsi_answer",)  # parse_clean reads this key alone

    def parse_clean(self, text: str | None, meta: dict, mode: str = "default"):
        """Yes/no questions: :func:`~perceptbench.readouts.answers.parse_yes_no` (POPE's rule);
        lettered questions: :func:`~perceptbench.readouts.answers.parse_letter` over the
        question's letters and option texts (``meta["vsi_answer"]``, the one key of the meta it
        reads: :attr:`parse_meta_keys`)."""
        from ..external.base import option_letters
        from ..readouts.answers import parse_letter

        a = meta.get("vsi_answer") or {"type": "yes_no"}
        if a["type"] == "yes_no":
            return self.parse_answer(text, mode)
        pr = parse_letter(text, option_letters(len(a["options"])), a["options"], mode=mode)
        return pr.response, pr.record_meta(mode)

    def parse_answer(self, text: str | None, mode: str = "default"):
        from ..readouts.answers import parse_yes_no

        pr = parse_yes_no(text, mode=mode)
        return pr.response, pr.record_meta(mode)


class VSIPope(VSIExternalTask):
    """``vsi.pope``: POPE yes/no questions (COCO val2014 images from ``images=DIR``); regions by grounding
    the question's object (POPE's template)."""

    base_id = "vsi.pope"
    title = "VSI on POPE"
    description = "VSI on POPE (yes/no object existence; images=DIR of COCO val2014; grounding regions)"
    defaults = {**VSITask.base_defaults, **VSIExternalTask.grounding_defaults, "split": "adversarial",
                "dataset": "coco", "images": "", "questions": ""}
    allowed = {**VSITask.allowed, "split": ("random", "popular", "adversarial"), "dataset": ("coco", "aokvqa", "gqa")}

    @property
    def benchmark(self) -> str:  # type: ignore[override]
        d = self.params["dataset"]
        return f"pope.{self.params['split']}" if d == "coco" else f"pope.{d}.{self.params['split']}"

    def native_rows(self, cols, samples: list, seed: int) -> list:
        """POPE's own rows (:func:`perceptbench.vsi.native.pope_rows`)."""
        from .native import answers, pope_rows

        return pope_rows(self.task_id, answers(cols), seed)

    def load(self, seed: int) -> list:
        from ..external.pope import load_pope

        return load_pope(self.params["split"], self.params["images"] or None, dataset=self.params["dataset"],
                         limit=self._limit(), seed=seed, questions=self.params["questions"] or None)


class VSIHallusionBench(VSIExternalTask):
    """``vsi.hallusionbench``: HallusionBench yes/no questions with an image (``images=DIR``), and
    (setting ``no_image`` [1]) the questions the benchmark asks without one, asked only under
    ``--condition image_withheld`` (they belong to aAcc and qAcc, :mod:`perceptbench.vsi.native`)."""

    base_id = "vsi.hallusionbench"
    title = "VSI on HallusionBench"
    benchmark = "hallusionbench"
    max_new_tokens = 64  # seed 002 D.1
    description = ("VSI on HallusionBench (yes/no; images=DIR of the unzipped hallusion_bench folder; the no-image "
                   "questions under --condition image_withheld)")
    defaults = {**VSITask.base_defaults, **VSIExternalTask.grounding_defaults, "images": "", "questions": "",
                "no_image": "1"}
    allowed = {**VSIExternalTask.allowed, "no_image": ("0", "1")}

    def native_rows(self, cols, samples: list, seed: int) -> list:
        """HallusionBench's aAcc / fAcc / qAcc (:func:`perceptbench.vsi.native.hallusionbench_rows`)."""
        from .native import answers, hallusionbench_rows

        return hallusionbench_rows(self.task_id, answers(cols), seed, self.params["no_image"] == "1")

    def score_judged(self, records: list, seed: int, judgments: dict) -> list:
        """A judge model's reading (``perceptbench run --judge``): the ``hallusionbench.*@judge``
        rows (:func:`perceptbench.vsi.native.hallusionbench_judge_rows`) from ``judgments``
        (``{trial_id: judgment}``, :func:`perceptbench.vsi.judge.read_judgments`)."""
        from .native import answers_of_records, hallusionbench_judge_rows

        return hallusionbench_judge_rows(self.task_id, answers_of_records(records), seed,
                                         self.params["no_image"] == "1", judgments)

    def load(self, seed: int) -> list:
        from ..external.hallusionbench import load_hallusionbench

        return load_hallusionbench(self.params["images"] or None, limit=self._limit(), seed=seed,
                                   questions=self.params["questions"] or None, no_image=self.params["no_image"] == "1")


class VSIMMVP(VSIExternalTask):
    """``vsi.mmvp``: MMVP two-option questions (hub dataset ``lmms-lab-eval/MMVP``, or ``source=DIR``
    for a local copy); setting ``corrections`` [1]: the four known label corrections
    (:data:`perceptbench.external.mmvp.LABEL_CORRECTIONS`), 0 = the answers as released; setting
    ``patterns`` [""]: a CSV map Index -> visual pattern for the per-pattern rows
    (:func:`perceptbench.external.mmvp.read_pattern_map`; no public map exists)."""

    base_id = "vsi.mmvp"
    title = "VSI on MMVP"
    benchmark = "mmvp"
    description = ("VSI on MMVP (two options; datasets library or source=DIR; grounding regions; corrections=1: "
                   "the four known label fixes)")
    defaults = {**VSITask.base_defaults, **VSIExternalTask.grounding_defaults, "source": "", "corrections": "1",
                "patterns": ""}
    allowed = {**VSIExternalTask.allowed, "corrections": ("0", "1")}
    content_settings = VSIExternalTask.content_settings + ("patterns",)
    late_settings = ("patterns",)  # added after runs existed: at its default it is not recorded, so they resume
    settings = {**VSIExternalTask.settings,
                "patterns": Setting("text", text="a CSV map Index -> visual pattern (no public one exists: "
                                                 "docs/metrics.md)")}

    def native_rows(self, cols, samples: list, seed: int) -> list:
        """MMVP's pair, question and per-pattern accuracy (:func:`perceptbench.vsi.native.mmvp_rows`)."""
        from .native import answers, mmvp_rows

        return mmvp_rows(self.task_id, answers(cols), seed)

    def load(self, seed: int) -> list:
        from ..external.mmvp import load_mmvp

        return load_mmvp(self.params["source"] or None, limit=self._limit(), seed=seed,
                         corrections=self.params["corrections"] == "1", patterns=self.params["patterns"] or None)


class VSIMMStar(VSIExternalTask):
    """``vsi.mmstar``: MMStar multiple choice, whole-image perturbation only (seed 002 §3: diagram and
    chart layouts make localized region detection unreliable).  Setting ``base_llm`` [""]: the
    name (``--model NAME=...``) of the LVLM's base language model in the same run, asked under
    ``--condition image_withheld``, for the multi-modal leakage (Chen et al. 2024 Eq. 2)."""

    base_id = "vsi.mmstar"
    title = "VSI on MMStar"
    benchmark = "mmstar"
    region_perturbation = False
    allowed = VSITask.whole_only
    description = "VSI on MMStar (lettered options; whole-image blur only, as seed 002 does)"
    defaults = {**VSITask.base_defaults, "perturbation": "whole", "limit": "all", "source": "", "base_llm": ""}
    settings = {**VSIExternalTask.settings,
                "base_llm": Setting("text", text="the --model name of the base LLM (its image_withheld answers)")}

    def native_rows(self, cols, samples: list, seed: int) -> list:
        """MMStar's accuracies, multi-modal gain and leakage and seed 002's per-category AUROC of
        -VSI (:func:`perceptbench.vsi.native.mmstar_rows`)."""
        from .native import answers, mmstar_rows

        return mmstar_rows(self.task_id, answers(cols), samples, seed, self.params["base_llm"], self.sigma)

    def load(self, seed: int) -> list:
        from ..external.mmstar import load_mmstar

        return load_mmstar(self.params["source"] or None, limit=self._limit(), seed=seed)


ANSWER_PREFIXES: dict[str, str] = {
    "vsi.salbench.syn": "", "vsi.closure.nat.silhouette": "", "vsi.similarity.chart.mark_color": "",
    "vsi.similarity.chart.series_count": "", "vsi.pope": "", "vsi.hallusionbench": "", "vsi.mmvp": "",
    "vsi.mmstar": ""}
"""The declared answer prefix of each VSI benchmark (the default of its ``answer_prefix`` setting).

Seed 002 D.1: "VSI uses the top-50 next-token distribution after answer-prefix tokens".  The
distribution is read at the position after the chat template's generation prompt, the tokens
that open the model's answer turn (``apply_chat_template(..., add_generation_prompt=True)``:
LLaVA-1.5 ``ASSISTANT:``, Qwen2-VL ``<|im_start|>assistant\n``, Idefics3 ``Assistant:``), followed
by the declared text (:meth:`perceptbench.models.vlm_hf.HFVLM.next_token_distributions`).  The
declared text is empty for every benchmark: each prompt ends with an instruction that the answer
come first and bare (``Answer with the option's letter ...``, ``Answer with yes or no.``, the LLaVA
evaluation wording; the battery prompts' ``Answer 1, 2, or 3.``, ``Answer with a single integer.``),
so the position after the generation prompt is the first answer token.  The silhouette prompt is
seed 000's verbatim ``Choose exactly one: ...``, which does not forbid an opening word before the
class name ("The object is a cat"); its VSI is then measured on that opening token.  Whether a
distribution sits at an answer token is checked per record: a most probable token
that is whitespace or a reasoning tag is flagged ``non_answer_position`` and left out of VSI
(:mod:`perceptbench.vsi.samples`), and an API answer that does not begin with that token is
counted in ``n_answer_token_mismatch``.  Every record keeps the prefix it was measured after
(``run_meta.vsi.answer_prefix``); ``@answer_prefix=TEXT`` declares another (docs/metrics.md)."""


def _declare_answer_prefix(cls: type) -> type:
    """``cls`` with its ``answer_prefix`` default taken from :data:`ANSWER_PREFIXES` (KeyError
    for a benchmark that declares none)."""
    cls.defaults = {**cls.defaults, "answer_prefix": ANSWER_PREFIXES[cls.base_id]}
    return cls


def _vsi_tasks() -> tuple[type[Task], ...]:
    from ..tasks.gestalt import MarkColorTask, SeriesCountTask, SilhouetteTask

    return tuple(_declare_answer_prefix(c) for c in (VSISalBenchSyn,) + tuple(
        battery_vsi(c) for c in (SilhouetteTask, MarkColorTask, SeriesCountTask)) + (
        VSIPope, VSIHallusionBench, VSIMMVP, VSIMMStar))


VSI_TASKS = _vsi_tasks()
