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
  only ``perturbation=whole`` is offered.

Common settings: ``perturbation`` [both | region | whole], ``sigma`` [20] (pixels; 10 and 40
for the robustness check of seed 002 C.2), ``answer_prefix`` [""] (declared answer-prefix
string appended after the chat template's assistant prefix, recorded), ``verbal_conf`` [1]
(elicit verbalised confidence 0-100 in a second pass), ``top_k`` [50] (seed 002 D.1).
"""

from __future__ import annotations

import json
from collections import defaultdict
from functools import lru_cache
from typing import Any, Callable, ClassVar

import numpy as np

from ..metrics.bootstrap import N_BOOT_B
from ..metrics.vsi import HIST_EDGES, INSENSITIVE_THRESHOLDS, cell_summary, vsi_samples
from ..records import TrialRecord
from .base import ScoreRow, Stimulus, Task

CONFIDENCE_PROMPT = ("{question}\nYour answer: {answer}\nHow confident are you that your answer is correct? "
                     "Reply with a single integer from 0 to 100.")
"""Second prompt for verbalised confidence (seed 002 appendix A: parsed as the first integer)."""

MAX_NEW_TOKENS = 8
"""Greedy answer budget (seed 002 D.1: 8 new tokens for POPE, MMVP and MMStar)."""
CONF_MAX_NEW_TOKENS = 8

SALBENCH_LETTERS = ("A", "B", "C")
SALBENCH_OPTIONS = ("Orientation", "Color", "Size")
SALBENCH_PROMPT = ("This image shows a grid of {object_category}. One of them differs from all the others in "
                   "one low-level visual feature. In which feature does it differ?\n"
                   "A. Orientation\nB. Color\nC. Size\nAnswer with the option's letter.")


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
    encoder_readout = "none (VSI needs a VLM's next-token distribution)"
    benchmark: ClassVar[str]
    region_perturbation: ClassVar[bool] = True
    base_defaults: ClassVar[dict[str, str]] = {"perturbation": "both", "sigma": "20", "answer_prefix": "",
                                                "verbal_conf": "1", "top_k": "50"}

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
    def samples(self, seed: int) -> list[dict]:
        raise NotImplementedError

    def stimuli(self, seed: int) -> list[Stimulus]:
        """One stimulus per (sample, condition), ids ``{sample_id}~{condition}``; the clean image
        is rendered once per sample and reused (small LRU cache)."""
        cache = self.__dict__.setdefault("_stimuli_cache", {})
        if seed in cache:
            return cache[seed]
        from ..stimuli import perturb

        out = []
        for smp in self.samples(seed):
            clean = lru_cache(maxsize=1)(smp["render"])
            box = smp["region_box"]
            for cond in self.conditions:
                sigma = 0.0 if cond == "clean" else self.sigma

                def render(clean=clean, cond=cond, box=box, sigma=sigma):
                    img = clean()
                    if cond == "clean":
                        return img
                    if cond == "whole_blur" or box is None:
                        return perturb.whole_blur(img, sigma)
                    return perturb.region_blur(img, perturb.box_mask(img.size, box), sigma, perturb.DILATE_PX)

                fallback = cond == "region_blur" and smp["region_source"] == "fallback_whole"
                vsi = {"sample_id": smp["sample_id"], "image_id": smp["image_id"], "benchmark": self.benchmark,
                       "condition": cond, "sigma_px": sigma, "dilate_px": perturb.DILATE_PX,
                       "region_source": smp["region_source"],
                       "region_bbox": None if box is None else list(box), "fallback": fallback,
                       "answer_prefix": self.answer_prefix, "top_k": self.top_k}
                mv = "clean" if cond == "clean" else f"{cond}:sigma={sigma:g}"
                out.append(Stimulus(f"{smp['sample_id']}~{cond}", "test", render=render,
                                    ground_truth=smp["ground_truth"], manipulated_value=mv,
                                    meta={"vsi": vsi, "vsi_prompt": smp["prompt"], **smp.get("meta", {})}))
        cache[seed] = out
        return out

    def vlm_request(self, s: Stimulus, seed: int):
        return (s.render(),), s.meta["vsi_prompt"], {}

    def confidence_prompt(self, question: str, answer: str) -> str:
        return CONFIDENCE_PROMPT.format(question=question, answer=answer.strip())

    # -- scoring
    def score(self, records: list[TrialRecord], seed: int) -> list[ScoreRow]:
        """Per model: skipped row, or per perturbed condition the VSI cell summary (seed 002 §2.2,
        §2.4, §3), plus clean-answer accuracy, parse-null and verbal-confidence-missing counts.
        Metric names carry ``[condition,sigma=S]``; see docs/metrics.md."""
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
        counts = {f: int(round(c * n / 2514)) for f, c in P3_COUNTS.items()}
        short = n - sum(counts.values())
        for f in list(counts)[:max(0, short)]:
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

        pr = parse_letter(text, SALBENCH_LETTERS, SALBENCH_OPTIONS)
        return pr.response, {"rule": pr.rule, "ambiguous": pr.ambiguous, "mode": mode}


def _battery_vsi(base_cls: type[Task]) -> type[VSITask]:
    """A VSI task over a battery task's test stimuli, prompt and parser; whole image declared."""

    class _BatteryVSI(VSITask):
        region_perturbation = False
        defaults = {**VSITask.base_defaults, "perturbation": "whole"}

        def _base(self) -> Task:
            b = self.__dict__.get("_base_task")
            if b is None:
                b = self.__dict__["_base_task"] = base_cls()
            return b

        def options(self) -> tuple:
            return self._base().options()

        def samples(self, seed: int) -> list[dict]:
            base = self._base()
            out = []
            for s in base.stimuli(seed):
                if s.split != "test":
                    continue
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


def _vsi_tasks() -> tuple[type[Task], ...]:
    from .gestalt import MarkColorTask, SeriesCountTask, SilhouetteTask

    return (VSISalBenchSyn,) + tuple(_battery_vsi(c) for c in (SilhouetteTask, MarkColorTask, SeriesCountTask))


VSI_TASKS = _vsi_tasks()
