"""The report's benchmark-native tables (issue 21): POPE, HallusionBench, MMVP and MMStar scored as
their authors score them (:mod:`perceptbench.vsi.native`), one table per benchmark, one row per
(task, metric) and one column per model, so the models compare side by side next to the VSI rows."""

from __future__ import annotations

from dataclasses import dataclass, field

BENCHMARKS = (
    ("pope", "POPE", "vsi.pope",
     "Li et al. 2023 (AoiDragon/POPE evaluate.py): yes = positive; yes_ratio = the fraction of predicted yes. "
     "One task per split (random / popular / adversarial) and set (COCO, A-OKVQA, GQA). @nulls_excluded leaves "
     "unparseable answers out; @nulls_as_wrong counts each as the wrong answer."),
    ("hallusionbench", "HallusionBench", "vsi.hallusionbench",
     "Guan et al. 2024 (tianyi-lab/HallusionBench utils.py), rule-based reading: aAcc per question, fAcc per figure "
     "(all its questions right), qAcc per question across its figures; [VD]/[VS] and per subcategory. aAcc and qAcc "
     "include the questions asked without an image (answered under --condition image_withheld); @image_questions "
     "leaves them out, as lmms-eval and VLMEvalKit do. 95% CI over question sets. As the benchmark's own code "
     "does, an unparseable answer to a VS question asked without an image counts as right (\"uncertain\"), so a "
     "model whose answers are all unparseable still scores on those questions: read n_parse_null beside it. "
     "This table is the rule-based reading (the default); a judge model's reading (run --judge) is a table of "
     "its own, never mixed into this one."),
    ("mmvp", "MMVP", "vsi.mmvp",
     "Tong et al. 2024: pair_accuracy = both questions of a CLIP-blind pair right (the paper's headline); "
     "question_accuracy; per visual pattern when the questions carry one (a Type column, or patterns=FILE: no public "
     "map of the 300 questions exists). Labels of Index 99, 100, 279, 280 "
     "corrected unless corrections=0. 95% CI over pairs."),
    ("mmstar", "MMStar", "vsi.mmstar",
     "Chen et al. 2024: accuracy overall, per core capability and per axis (an unparseable answer is wrong); "
     "multimodal_gain = S_v - S_wv, multimodal_leakage = max(0, S_wv - S_t) (Eq. 1, 2; S_wv from "
     "M[image_withheld], S_t from the base LLM named by base_llm=). auroc_vsi[category,...]: seed 002's MMStar "
     "columns, AUROC of -VSI for errors."),
)
"""(metric prefix, title, task id prefix, caption) per benchmark, in report order."""


@dataclass
class NativeTable:
    """One benchmark's table: ``rows`` (task_id, metric) in score order, ``models`` in first-seen
    order, ``cells[(task_id, metric, model)]`` the score row."""

    key: str
    title: str
    caption: str
    rows: list = field(default_factory=list)
    models: list = field(default_factory=list)
    cells: dict = field(default_factory=dict)


JUDGE_SUFFIX = "@judge"
"""The metric suffix of a judge model's reading (:func:`perceptbench.vsi.native.hallusionbench_judge_rows`)."""

JUDGE_CAPTION = ("Judge reading: a judge model read every answer against HallusionBench's reference answer with the "
                 "benchmark's own GPT-4 prompt (utils.py evaluate_by_chatgpt; verdicts in judgments.jsonl); \"unclear\" "
                 "or no reply counts as uncertain, right only on a VS question asked without an image. Judge: {judges}. "
                 "Same definitions and intervals as the rule-based table above; no row mixes the two readings.")


def _fill(t: NativeTable, rows) -> NativeTable:
    for r in rows:
        if (r.task_id, r.metric) not in t.rows:
            t.rows.append((r.task_id, r.metric))
        if r.model not in t.models:
            t.models.append(r.model)
        t.cells[(r.task_id, r.metric, r.model)] = r
    return t


def native_tables(scores) -> list[NativeTable]:
    """The benchmark-native tables of ``scores`` (score rows), benchmarks without rows left out.
    Rows of a judge model's reading (metric ending in :data:`JUDGE_SUFFIX`) make a table of their
    own after their benchmark's, whose caption names the judge (from the rows' notes)."""
    out = []
    for prefix, title, task, caption in BENCHMARKS:
        mine = [r for r in scores if r.task_id.split("@", 1)[0] == task and r.metric.startswith(prefix + ".")]
        t = _fill(NativeTable(prefix, title, caption), [r for r in mine if not r.metric.endswith(JUDGE_SUFFIX)])
        if t.rows:
            out.append(t)
        judged = [r for r in mine if r.metric.endswith(JUDGE_SUFFIX)]
        if judged:
            judges = sorted({(r.note or "").partition("judge reading: ")[2].partition(", HallusionBench")[0]
                             for r in judged} - {""}) or ["see the rows' notes"]
            out.append(_fill(NativeTable(f"{prefix}-judge", f"{title} (judge reading)",
                                         JUDGE_CAPTION.format(judges="; ".join(judges))), judged))
    return out
