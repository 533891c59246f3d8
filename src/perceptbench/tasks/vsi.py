"""Visual Sensitivity Index tasks (seed 002 §2, appendix A, D.1).

A VSI task turns each (image, question) *sample* of a benchmark into one stimulus per
condition: ``clean``, ``region_blur`` (Gaussian blur of the question-relevant region, mask
dilated 4 px) and/or ``whole_blur`` (whole image), at one sigma in pixels.  Each condition is
its own trial record (format: :mod:`perceptbench.metrics.vsi`); the stimulus id is
``{sample_id}~{condition}``.  VSI = KL(p_clean || p_perturbed) over the top-50 first-answer
-token distributions is computed at scoring time from the records alone.

Tasks (settings as ``@key=value``; defaults in brackets):

* ``vsi.salbench.syn`` -- P3-style search arrays (:mod:`perceptbench.stimuli.search_arrays`),
  the lettered question "which feature makes the odd object differ? A. Orientation B. Color
  C. Size"; the exact region is the target's bounding box.  ``n`` [300] samples.
* ``vsi.closure.nat.silhouette``, ``vsi.similarity.chart.mark_color``,
  ``vsi.similarity.chart.series_count`` -- the battery stimuli with their own verbatim prompt
  and parser; the task declares the whole image as the question-relevant region (the object
  fills the silhouette image; the marks / scatter points are spread over the whole chart), so
  only ``perturbation=whole`` is offered.  ``n`` [all]: the first n test stimuli.

Common settings: ``perturbation`` [both | region | whole], ``sigma`` [20] (pixels; 10 and 40
for the robustness check of seed 002 C.2), ``answer_prefix`` [""] (declared answer-prefix
string appended after the chat template's assistant prefix, recorded), ``verbal_conf`` [1]
(elicit verbalised confidence 0-100 in a follow-up turn, :data:`CONFIDENCE_PROMPT`), ``top_k`` [50] (seed 002 D.1).
"""

from __future__ import annotations

import abc
import json
from collections import defaultdict
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from ..metrics.bootstrap import N_BOOT_B
from ..models.base import FOLLOW_UP_TURN
from ..metrics.vsi import HIST_EDGES, INSENSITIVE_THRESHOLDS, cell_summary, vsi_samples
from ..records import TrialRecord
from ..core.rows import ScoreRow
from ..core.settings import Setting
from .base import Stimulus, Task

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

SALBENCH_LETTERS = ("A", "B", "C")
SALBENCH_OPTIONS = ("Orientation", "Color", "Size")
SALBENCH_PROMPT = ("This image shows a grid of {object_category}. One of them differs from all the others in "
                   "one low-level visual feature. In which feature does it differ?\n"
                   "A. Orientation\nB. Color\nC. Size\nAnswer with the option's letter.")


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

    def options(self) -> tuple:
        return ()

    # -- stimuli
    @abc.abstractmethod
    def samples(self, seed: int) -> list[dict]:
        """The (image, question) samples of this benchmark cell, before perturbation."""

    def stimuli(self, seed: int) -> list[Stimulus]:
        """One stimulus per (sample, condition), ids ``{sample_id}~{condition}``; the clean image
        is rendered once per sample and reused (small LRU cache).

        A sample's region is either a fixed ``region_box`` (exclusive ends; None = the whole
        image as declared by the task) or, for benchmarks that need the grounding step, a
        ``region`` callable ``image -> external.base.Region`` evaluated when the region-blur
        stimulus is first rendered; rendering then writes the region's source, box and fallback
        flag into the stimulus's ``meta["vsi"]`` (the record is built after rendering)."""
        cache = self.__dict__.setdefault("_stimuli_cache", {})
        if seed in cache:
            return cache[seed]
        from ..stimuli import perturb

        out = []
        for smp in self.samples(seed):
            clean = lru_cache(maxsize=1)(smp["render"])
            box, region_fn = smp.get("region_box"), smp.get("region")
            region_fn = lru_cache(maxsize=1)(region_fn) if region_fn is not None else None
            for cond in self.conditions:
                sigma = 0.0 if cond == "clean" else self.sigma
                source = smp["region_source"]
                vsi = {"sample_id": smp["sample_id"], "image_id": smp["image_id"], "benchmark": self.benchmark,
                       "condition": cond, "sigma_px": sigma, "dilate_px": perturb.DILATE_PX,
                       "region_source": source, "region_bbox": None if box is None else list(box),
                       "fallback": cond == "region_blur" and source == "fallback_whole",
                       "answer_prefix": self.answer_prefix, "top_k": self.top_k}

                def render(clean=clean, cond=cond, box=box, sigma=sigma, vsi=vsi, region_fn=region_fn):
                    img = clean()
                    if cond == "clean":
                        return img
                    if cond == "whole_blur":
                        return perturb.whole_blur(img, sigma)
                    mask = None if box is None else perturb.box_mask(img.size, box)
                    if region_fn is not None:
                        reg = region_fn()
                        vsi.update(region_source=reg.source, region_bbox=None if reg.box is None else list(reg.box),
                                   fallback=reg.source == "fallback_whole", region=reg.to_json())
                        mask = None if reg.source == "fallback_whole" else reg.to_mask(img.size)
                    if mask is None:
                        return perturb.whole_blur(img, sigma)
                    return perturb.region_blur(img, mask, sigma, perturb.DILATE_PX)

                mv = "clean" if cond == "clean" else f"{cond}:sigma={sigma:g}"
                out.append(Stimulus(f"{smp['sample_id']}~{cond}", "test", render=render,
                                    ground_truth=smp["ground_truth"], manipulated_value=mv,
                                    meta={"vsi": vsi, "vsi_prompt": smp["prompt"], **smp.get("meta", {})}))
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
        §2.4, §3), plus clean-answer accuracy, parse-null and verbal-confidence-missing counts.
        Metric names carry ``[condition,sigma=S]``; see docs/metrics.md.  The clean answers'
        parse counts (``n_ambiguous``, ``n_unclosed_reasoning``, ...) are added by scoring for
        every task with VLM answers (:func:`perceptbench.scoring._parse_rows`), as for battery rows."""
        tid = self.task_id
        by_model: dict[str, list[TrialRecord]] = defaultdict(list)
        for r in records:
            by_model[r.model].append(r)
        rows: list[ScoreRow] = []
        for m, rs in sorted(by_model.items()):
            skipped = {(r.run_meta.model_extra or {}).get("skipped") for r in rs} - {None}
            if skipped:
                rows.append(ScoreRow(tid, m, "skipped", float("nan"), None, None, len(rs), None,
                                     "; ".join(sorted(skipped))))
                continue
            clean = sorted((r for r in rs if r.readout == "vlm_vsi_clean"), key=lambda r: r.stimulus_id)
            n_null = sum(r.response is None for r in clean)
            ok = [r for r in clean if r.correct is not None]
            if clean:
                from ..metrics.bootstrap import bootstrap

                c = np.array([float(r.correct) for r in ok])
                if c.size:
                    b = bootstrap(lambda i: c[i].mean(1), c.size, n_draws=N_BOOT_B, seed=seed)
                    rows.append(ScoreRow.from_boot(tid, m, "accuracy", b, int(c.size), n_null,
                                                   "clean greedy answers, parseable only"))
                rows.append(ScoreRow(tid, m, "n_parse_null", float(n_null), None, None, len(clean), n_null,
                                     "clean greedy answers the parser could not read (excluded from accuracy)"))
                vc = [(r.run_meta.model_extra or {}).get("vsi", {}).get("verbal_conf") for r in clean]
                if self.verbal_conf:
                    rows.append(ScoreRow(tid, m, "n_verbal_conf_missing", float(sum(v is None for v in vc)), None,
                                         None, len(clean), n_null,
                                         "clean samples whose confidence answer holds no integer 0-100 "
                                         "(dropped from confidence analyses, seed 002 appendix A)"))
            samples = vsi_samples(rs)
            fb = defaultdict(int)
            for r in rs:
                v = (r.run_meta.model_extra or {}).get("vsi") or {}
                if v.get("fallback"):
                    fb[v["condition"]] += 1
            for cond, pert in (("region_blur", "region"), ("whole_blur", "whole")):
                if cond not in self.conditions:
                    continue
                cell = [s for s in samples if s.perturbation == pert]
                tag = f"[{cond},sigma={self.sigma:g}]"
                if cond == "region_blur":
                    rows.append(ScoreRow(tid, m, "n_fallback" + tag, float(fb[cond]), None, None, len(cell), None,
                                         "region blur fell back to the whole image (no region / no box above "
                                         "threshold; seed 002 appendix A)"))
                if not cell:
                    continue
                cs = cell_summary(np.array([s.vsi for s in cell]), np.array([s.argmax_changed for s in cell]),
                                  seed=seed)
                n = cs.n
                rows.append(ScoreRow(tid, m, "vsi_median" + tag, cs.median, cs.q25, cs.q75, n, None,
                                     "nats; ci_low/ci_high hold the 25th/75th percentiles (quartiles), not a CI"))
                rows.append(ScoreRow(tid, m, "vsi_q25" + tag, cs.q25, None, None, n, None, "nats"))
                rows.append(ScoreRow(tid, m, "vsi_q75" + tag, cs.q75, None, None, n, None, "nats"))
                for t in INSENSITIVE_THRESHOLDS:
                    rows.append(ScoreRow.from_boot(tid, m, f"insensitive_frac@{t:g}" + tag, cs.insensitive[t], n, None,
                                                   f"fraction of samples with VSI < {t:g} nats (seed 002 §2.2)"))
                rows.append(ScoreRow.from_boot(tid, m, "argmax_change_rate" + tag, cs.argmax_change_rate, n, None,
                                               "first-answer-token argmax differs clean vs perturbed (seed 002 §2.4)"))
                edges = [e if np.isfinite(e) else None for e in HIST_EDGES]
                rows.append(ScoreRow(tid, m, "vsi_histogram" + tag, float(n), None, None, n, None,
                                     json.dumps({"edges_nats": edges, "counts": list(cs.hist_counts),
                                                 "bins": "[lo, hi); last edge null = infinity"})))
        return rows


class VSISalBenchSyn(VSITask):
    """``vsi.salbench.syn``: VSI on P3-style search arrays; region = the target's exact box."""

    base_id = "vsi.salbench.syn"
    benchmark = "salbench.syn"
    principle = "saliency"
    track = "syn"
    response_space = "choice"
    description = "VSI on P3-style search arrays; exact region = the odd target's bounding box (seed 002)"
    prompt_text = SALBENCH_PROMPT
    human_ref_id = "salbench.p3-generated"
    defaults = {**VSITask.base_defaults, "n": "300"}
    settings = {**VSITask.settings, "n": Setting("int", 1)}

    def options(self) -> tuple:
        return SALBENCH_LETTERS

    def samples(self, seed: int) -> list[dict]:
        from ..seeding import rng_for
        from ..stimuli import search_arrays as sa
        from .salbench import P3_COUNTS

        try:
            n = int(self.params["n"])
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"{self.base_id}: n must be an integer >= 1, got {self.params['n']!r}")
        # largest-remainder apportionment of n over the P3 composition (810 / 864 / 840 of 2,514)
        exact = {f: c * n / 2514 for f, c in P3_COUNTS.items()}
        counts = {f: int(x) for f, x in exact.items()}
        for f in sorted(exact, key=lambda f: -(exact[f] - counts[f]))[:n - sum(counts.values())]:
            counts[f] += 1
        gseed = int(rng_for(seed, "vsi.salbench.syn", "test_seed").integers(2**31 - 1))
        out = []
        for i, (feat, diff) in enumerate(sa.plan_p3(counts)):
            def make(i=i, feat=feat, diff=diff):
                return sa.make_search_stimulus(gseed, i, feat, diff).image
            st = sa.make_search_stimulus(gseed, i, feat, diff)
            x0, y0, x1, y1 = st.target_bbox  # inclusive -> exclusive ends
            sid = f"p3syn-{i:05d}"
            letter = SALBENCH_LETTERS[SALBENCH_OPTIONS.index(sa.FEATURE_LABEL[feat])]
            out.append({"sample_id": sid, "image_id": sid, "render": make,
                        "prompt": SALBENCH_PROMPT.format(object_category=st.object_category),
                        "ground_truth": letter, "region_box": (x0, y0, x1 + 1, y1 + 1), "region_source": "exact",
                        "meta": {"feature": feat, "difficulty": diff, "generator_seed": gseed, "generator_index": i}})
        return out

    def parse_answer(self, text: str | None, mode: str = "default"):
        from ..readouts.answers import parse_letter

        pr = parse_letter(text, SALBENCH_LETTERS, SALBENCH_OPTIONS, mode=mode)
        return pr.response, pr.record_meta(mode)


def _battery_vsi(base_cls: type[Task]) -> type[VSITask]:
    """A VSI task over a battery task's test stimuli, prompt and parser; whole image declared."""

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
            if self.params["n"] != "all":
                try:
                    n = int(self.params["n"])
                except ValueError:
                    n = 0
                if n < 1:
                    raise ValueError(f"{self.base_id}: n must be 'all' or an integer >= 1, got {self.params['n']!r}")
                test = test[:n]
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
        "prompt_text": base_cls.prompt_text, "human_ref_id": property(lambda self: self._base().human_ref_id),
        "__doc__": f"``vsi.{name}``: VSI on the {name} test stimuli, whole-image blur only."})


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
    prompt_text = "{question}\n[A. option ...]\n" + LETTER_SUFFIX + " | {question}\n" + YES_NO_SUFFIX
    grounding_defaults: ClassVar[dict[str, str]] = {"limit": "all", "detector": "IDEA-Research/grounding-dino-tiny",
                                                    "segmenter": "facebook/sam-vit-base", "box_threshold": "0.3"}
    settings = {**VSITask.settings, "limit": _N_ALL, "box_threshold": Setting("float", 0, 1),
                "detector": Setting("text", text="Grounding DINO: a hub id or a local directory"),
                "segmenter": Setting("text", text="SAM: a hub id or a local directory"),
                "images": Setting("text", text="the benchmark's image directory"),
                "questions": Setting("text", text="question file; default: the release in PERCEPTBENCH_MIRROR"),
                "source": Setting("text", text="a local copy of the dataset; default: the datasets library")}

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

        thr = _positive_float(self.base_id, "box_threshold", self.params["box_threshold"]) \
            if self.params["box_threshold"] != "0" else 0.0
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
                        "prompt": vqa_prompt(vs.question, vs.answer_type, vs.options), "ground_truth": vs.answer,
                        "region_box": None, "region": region_fn, "region_source": source,
                        "meta": {"vsi_answer": {"type": vs.answer_type, "options": list(vs.options or ())},
                                 "object_phrase": vs.object_phrase, "external": vs.meta}})
        return out

    def parse_clean(self, text: str | None, meta: dict, mode: str = "default"):
        """Yes/no questions: :func:`~perceptbench.readouts.answers.parse_yes_no` (POPE's rule);
        lettered questions: :func:`~perceptbench.readouts.answers.parse_letter` over the
        question's letters and option texts (``meta["vsi_answer"]``)."""
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
    description = "VSI on POPE (yes/no object existence; images=DIR of COCO val2014; grounding regions)"
    defaults = {**VSITask.base_defaults, **VSIExternalTask.grounding_defaults, "split": "adversarial",
                "dataset": "coco", "images": "", "questions": ""}
    allowed = {**VSITask.allowed, "split": ("random", "popular", "adversarial"), "dataset": ("coco", "aokvqa", "gqa")}

    @property
    def benchmark(self) -> str:  # type: ignore[override]
        d = self.params["dataset"]
        return f"pope.{self.params['split']}" if d == "coco" else f"pope.{d}.{self.params['split']}"

    def load(self, seed: int) -> list:
        from ..external.pope import load_pope

        return load_pope(self.params["split"], self.params["images"] or None, dataset=self.params["dataset"],
                         limit=self._limit(), seed=seed, questions=self.params["questions"] or None)


class VSIHallusionBench(VSIExternalTask):
    """``vsi.hallusionbench``: HallusionBench yes/no questions with an image (``images=DIR``)."""

    base_id = "vsi.hallusionbench"
    benchmark = "hallusionbench"
    max_new_tokens = 64  # seed 002 D.1
    description = "VSI on HallusionBench (yes/no; images=DIR of the unzipped hallusion_bench folder)"
    defaults = {**VSITask.base_defaults, **VSIExternalTask.grounding_defaults, "images": "", "questions": ""}

    def load(self, seed: int) -> list:
        from ..external.hallusionbench import load_hallusionbench

        return load_hallusionbench(self.params["images"] or None, limit=self._limit(), seed=seed,
                                   questions=self.params["questions"] or None)


class VSIMMVP(VSIExternalTask):
    """``vsi.mmvp``: MMVP two-option questions (hub dataset, or ``source=DIR`` for a local copy)."""

    base_id = "vsi.mmvp"
    benchmark = "mmvp"
    description = "VSI on MMVP (two options; datasets library or source=DIR; grounding regions)"
    defaults = {**VSITask.base_defaults, **VSIExternalTask.grounding_defaults, "source": ""}

    def load(self, seed: int) -> list:
        from ..external.mmvp import load_mmvp

        return load_mmvp(self.params["source"] or None, limit=self._limit(), seed=seed)


class VSIMMStar(VSIExternalTask):
    """``vsi.mmstar``: MMStar multiple choice, whole-image perturbation only (seed 002 §3: diagram and
    chart layouts make localized region detection unreliable)."""

    base_id = "vsi.mmstar"
    benchmark = "mmstar"
    region_perturbation = False
    allowed = VSITask.whole_only
    description = "VSI on MMStar (lettered options; whole-image blur only, as seed 002 does)"
    defaults = {**VSITask.base_defaults, "perturbation": "whole", "limit": "all", "source": ""}

    def load(self, seed: int) -> list:
        from ..external.mmstar import load_mmstar

        return load_mmstar(self.params["source"] or None, limit=self._limit(), seed=seed)


def _vsi_tasks() -> tuple[type[Task], ...]:
    from .gestalt import MarkColorTask, SeriesCountTask, SilhouetteTask

    return (VSISalBenchSyn,) + tuple(_battery_vsi(c) for c in (SilhouetteTask, MarkColorTask, SeriesCountTask)) + (
        VSIPope, VSIHallusionBench, VSIMMVP, VSIMMStar)


VSI_TASKS = _vsi_tasks()
