"""The self-contained HTML report and its Markdown summary (issue 10).

``write_report(run_dirs, out)`` reads the records and score rows of the run directories
(:mod:`.data`), draws the figures (:mod:`.figures`, inline SVG), computes the paired
model differences (:mod:`.paired`) and renders ``templates/report.html.j2`` with Jinja2
(autoescape on: every string from a record or model is escaped; only the SVG that
matplotlib wrote, whose text matplotlib escapes itself, is inserted as markup).  The page
loads nothing from any network address.  A Markdown summary (headline table, differences
that exclude 0, provenance line) is written beside it as ``<out>.md``.  No torch."""

from __future__ import annotations

import functools
import html as _html
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from ..core.rundir import write_atomic
from ..core.urls import redact_urls_in
from ..scoring import COUNT_METRIC_PREFIXES, holds_given_answer
from ..tasks.gestalt import KERNEL_NAMES, MARK_KERNEL_IDS, PANEL_CLASSIFICATION_TASKS
from .data import ReportData, finite, load_report_data
from .headline import (MARK_LEGEND, HeadlineRow, absent_cell_text, cell_text, fmt, fmt_p, given_order_key, headline_rows,
                       reference_notes, tasks_run, value_text)

PRIMARY = {**{base: ("B", "kappa_pairwise") for base in PANEL_CLASSIFICATION_TASKS},
           **{base: ("B",) for base in MARK_KERNEL_IDS},
           "similarity.chart.series_count": ("accuracy",),
           "similarity.chart.category_mean": ("accuracy", "kappa_pairwise"),
           "similarity.nat.things_ooo": ("B",), "shape_bias.nat.cue_conflict": ("shape_bias",)}
"""Headline metrics shown in the model x task matrix (SalBench: exact_match; VSI: its first headline metric)."""

N_EXAMPLES = 3
"""The provenance lists the first this many answers as given per model and task: the records that
:func:`~perceptbench.scoring.holds_given_answer` (battery prompts; a VSI task's greedy answers, to the
clean images and, for a respondent asked without the image, those; a blurred trial records a
distribution, no answer), by stimulus and repetition."""
MAX_FIGURE_MODELS = 7
"""Point and curve figures draw at most this many models (the first in the matrix order; one
Okabe-Ito colour each); the matrix, the cards and the tables show every model."""
MAX_DIFF_ROWS = 200


@dataclass
class ReportResult:
    html_path: Path
    md_path: Path
    n_models: int
    n_tasks: int
    n_figures: int
    figure_files: list[Path] = field(default_factory=list)
    """The files ``report --figures DIR`` wrote (empty without it)."""


def given_order(records) -> tuple[list[str], list[str]]:
    """(task ids, model names) in the order the run was given them: the order of their first
    record in ``records.jsonl`` (``perceptbench run`` writes the tasks in ``--task`` order and each
    task's models in ``--model`` order, a resumed run's new ones after; several runs: in the order
    of the run directories).  Humans are not models here."""
    tasks = list(dict.fromkeys(r.task_id for r in records))
    models = list(dict.fromkeys(r.model for r in records if r.model_family != "human"))
    return tasks, models


def _matrix_cols(heads: list[HeadlineRow], task_order: list[str] | None = None) -> list[tuple[str, str]]:
    """The matrix's (task id, metric) columns: the tasks in ``task_order`` (the order the run was
    given them, :func:`given_order`; others after, by id), each task's headline metrics in
    :data:`PRIMARY` order."""
    cols: list[tuple[str, str]] = []
    for h in heads:
        want = PRIMARY.get(h.base_task, ("exact_match",) if h.base_task.startswith("salbench.") else
                           ("insensitive_frac@0.05[",) if h.base_task.startswith("vsi.") else ())
        hit = h.metric in want or (h.base_task.startswith("vsi.") and h.metric.startswith(want))
        metric = h.metric
        if h.metric == "skipped" and h.base_task.startswith("salbench."):  # a column even if every model skipped
            hit, metric = True, "exact_match"
        if hit and (h.task_id, metric) not in cols:
            cols.append((h.task_id, metric))
    task_key = given_order_key(task_order or [])
    return sorted(cols, key=lambda c: (task_key(c[0]), PRIMARY.get(c[0].split("@")[0], (c[1],)).index(c[1])
                                       if c[1] in PRIMARY.get(c[0].split("@")[0], ()) else 0))


def _order_models(heads: list[HeadlineRow], models: list[str], cols) -> tuple[list[str], dict[str, float]]:
    """Declared rule: descending mean position between floor (0) and ceiling (1) over the
    matrix columns that have both; models without any such column last; ties in the order of
    ``models`` (the order the run was given them)."""
    pos: dict[str, list[float]] = defaultdict(list)
    colset = set(cols)
    for h in heads:
        if (h.task_id, h.metric) in colset and h.position is not None and finite(h.position):
            pos[h.model].append(h.position)
    score = {m: sum(v) / len(v) for m, v in pos.items()}
    return sorted(models, key=lambda m: (m not in score, -score.get(m, 0.0))), score


UNDECLARED = "undeclared"
"""The matrix group of models without a declared family, when other models declare one."""


def model_families(models: list[str], declared: dict) -> dict[str, str]:
    """``{model: declared family}`` for the matrix (run.json ``models``, issue 22 item 3), every
    model without one as :data:`UNDECLARED`; ``{}`` when no model of ``models`` declares a family
    (the matrix then stays ungrouped)."""
    fams = {m: e.get("family") for m, e in declared.items() if isinstance(e, dict) and isinstance(e.get("family"), str)}
    if not any(m in fams for m in models):
        return {}
    return {m: fams.get(m) or UNDECLARED for m in models}


def group_by_family(models: list[str], families: dict[str, str]) -> list[str]:
    """``models`` grouped by declared family, the groups in the order of the family vocabulary
    (:data:`perceptbench.models.metadata.FAMILIES`: supervised, ssl, mim, clip-like, open-vlm,
    closed-vlm, other), then any other family name alphabetically, :data:`UNDECLARED` last; within
    a group the given order (the matrix's ranking rule) is kept.  ``{}`` leaves the order as it is."""
    if not families:
        return list(models)
    from ..models.metadata import FAMILIES

    vocab = list(FAMILIES)

    def rank(f):
        return (f == UNDECLARED, vocab.index(f) if f in vocab else len(vocab), f)

    pos = {m: i for i, m in enumerate(models)}
    return sorted(models, key=lambda m: (rank(families[m]), pos[m]))


def _provenance(data: ReportData):
    """The provenance tables' rows; tasks and models in the order the run was given them
    (:func:`given_order`)."""
    recs = data.records
    task_key, model_key = (given_order_key(o) for o in given_order(recs))
    run_ids = Counter(r.run_meta.run_id for r in recs).most_common()
    pkg = sorted({str((r.run_meta.model_extra or {}).get("package_version", "?")) for r in recs})
    seeds = sorted(((t, sorted({r.run_meta.seed for r in recs if r.task_id == t})) for t in {r.task_id for r in recs}),
                   key=lambda ts: task_key(ts[0]))
    by_model: dict[str, list] = defaultdict(list)
    by_tm: dict[tuple[str, str], list] = defaultdict(list)
    for r in recs:
        by_model[r.model].append(r)
        by_tm[(r.task_id, r.model)].append(r)
    amb = {(s.task_id, s.model): int(s.value) for s in data.scores if s.metric == "n_ambiguous" and finite(s.value)}
    model_prov = [dict(model=m, family=rs[0].model_family, versions=sorted({r.run_meta.model_version for r in rs}),
                       readouts=sorted({r.readout for r in rs}), n=len(rs))
                  for m, rs in sorted(by_model.items(), key=lambda kv: model_key(kv[0])) if not m.startswith("human:")]
    trial_prov, human_groups, model_refs = [], defaultdict(list), defaultdict(set)
    by_tm_given = sorted(by_tm.items(), key=lambda kv: (task_key(kv[0][0]), model_key(kv[0][1])))
    for (t, m), rs in by_tm_given:
        if m.startswith("human:"):
            human_groups[t] += rs
            continue
        model_refs[t] |= {str(r.human_ref_id) for r in rs if r.human_ref_id is not None}
        settings = {k: v for k, v in ((rs[0].run_meta.model_extra or {}).get("task_params") or {}).items()}
        trial_prov.append(dict(task_id=t, model=m, prompt_ids=sorted({str(r.prompt_id) for r in rs}),
                               prompt_hashes=sorted({str(r.prompt_hash) for r in rs}), n=len(rs),
                               # a perturbed VSI trial records a distribution, no answer: not a null
                               n_null=sum(r.response is None and r.readout != "vlm_vsi_perturbed" for r in rs),
                               n_amb=amb.get((t, m)),
                               settings=", ".join(f"{k}={v}" for k, v in sorted(settings.items())) or "-"))
    human_prov = []
    for t in sorted({r.task_id for r in recs}, key=task_key):
        rs = human_groups.get(t)
        if rs:
            shas = sorted({r.run_meta.model_version.removeprefix("sha256:")[:16] + "..." for r in rs})
            refs = sorted({str(r.human_ref_id) for r in rs})
            # the id the task's model trials carry where it is none of these (the Geirhos tasks'
            # .modal: the modal answer of the observers' .raw trials), so the page names both
            refs += [f"{x} (the id the model trials carry: their reference, derived from these records)" for x in
                     sorted(model_refs.get(t, set()) - set(refs))]
            human_prov.append(dict(task_id=t, who=_respondents(t, rs), refs=refs, shas=shas, n=len(rs)))
        elif (lit := _literature_reference(t)) is not None:
            human_prov.append(dict(task_id=t, who=f"none: a literature reference ({lit[1]}), not a data file",
                                   refs=[lit[0]], shas=["- (no data file)"], n=0))
    skipped = [s for s in data.scores if not s.model.startswith("human:")
               and (s.metric == "skipped" or (not finite(s.value) and s.value is not None))]
    examples = []
    for (t, m), rs in by_tm_given:
        answers = [r for r in rs if holds_given_answer(r)]
        examples += sorted(answers, key=lambda r: (r.stimulus_id, r.rep))[:N_EXAMPLES]
    return dict(run_ids=run_ids, package_versions=pkg, seeds=seeds, model_prov=model_prov, trial_prov=trial_prov,
                human_prov=human_prov, skipped=skipped, examples=examples)


def _respondents(task_id: str, rs) -> str:
    """The provenance table's respondents cell of a task's human records ``rs``: the human
    respondents, and apart from them the answers derived from perceptual kernels (readout
    ``human_kernel``: each kernel's odd one out, Demiralp et al. 2014, no human trial), the task's
    reference kernel (its ground truth, :func:`~perceptbench.reports.figures.reference_kernel`) named."""
    def names(who: list[str]) -> str:
        return f"{who[0]} ... {who[-1]}" if len(who) > 3 else ", ".join(who)

    people = sorted({r.model for r in rs if r.readout != "human_kernel"})
    kernels = sorted({r.model for r in rs if r.readout == "human_kernel"})
    parts = [f"{len(people)} human respondent{'s' if len(people) != 1 else ''} ({names(people)})"] if people else []
    if kernels:
        from .figures import reference_kernel

        try:
            ref = f"; reference kernel {reference_kernel(task_id)} = the ground truth"
        except (KeyError, ValueError):
            ref = ""
        parts.append(f"{len(kernels)} perceptual kernel{'s' if len(kernels) != 1 else ''}' derived answers, not "
                     f"human trials ({names(kernels)}{ref})")
    return "; ".join(parts)


def _literature_reference(task_id: str) -> tuple[str, str] | None:
    """(``human_ref_id``, citation) of a task whose human reference is a published figure rather
    than a data file (:attr:`~perceptbench.tasks.base.Task.human_ref_literature`, e.g. the 6-12
    capacity band of ``similarity.chart.series_count``), None otherwise or for an unknown task."""
    from ..tasks import get_task

    try:
        task = get_task(task_id)
    except (KeyError, ValueError):
        return None
    return (task.human_ref_id, task.human_ref_literature) if task.human_ref_literature else None


_MD_TAG = re.compile(r"<[A-Za-z/!?][^<>]*>?")
_MD_ENTITY = re.compile(r"&(#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);")


def breakable(task_id) -> Markup:
    """``task_id`` escaped for HTML, with a line-break opportunity (``<wbr>``) after each ``.``,
    ``@`` and ``,``: a narrow table column wraps ``closure.nat.silhouette`` as
    ``closure.nat.`` / ``silhouette``, never inside a word."""
    return Markup(re.sub(r"([.@,])", r"\1<wbr>", str(escape(str(task_id)))))


def _md_cell(s) -> str:
    """A table cell for Markdown: only what a renderer would take as raw HTML (a ``<`` that
    opens a tag, comment or autolink; a character reference) is escaped, so text such as
    ``P(in band) < 0.5`` reads as written and a model's ``<img ...>`` shows as text."""
    s = _MD_ENTITY.sub(lambda m: "&amp;" + m.group(0)[1:], str(s))
    s = _MD_TAG.sub(lambda m: _html.escape(m.group(0), quote=False), s)
    return s.replace("|", "\\|").replace("\n", " ")


def markdown_summary(data: ReportData, heads: list[HeadlineRow], diffs, title: str) -> str:
    """The Markdown summary: headline table (every string escaped for Markdown/HTML),
    paired differences that exclude 0, one provenance line."""
    lines = [f"# perceptbench report: {_md_cell(title)}", "",
             "Each value [95% bootstrap CI] beside its floor/chance and human ceiling "
             "(definitions: docs/metrics.md).", "",
             "| task | model | metric | value [CI] | floor | ceiling | value/ceiling | n (null) | flags |",
             "|---|---|---|---|---|---|---|---|---|"]
    for h in heads:
        ratio = fmt(h.ratio, 2)
        flags = "; ".join(h.flags + ((h.extra,) if h.extra else ()))
        lines.append("| " + " | ".join(_md_cell(x) for x in (
            h.task_id, h.model, h.metric, cell_text(h), fmt(h.floor), fmt(h.ceiling), ratio,
            f"{h.n if h.n is not None else '-'} ({h.n_null or 0})", flags)) + " |")
    if any("·" in cell_text(h) for h in heads):
        lines += ["", f"Marks: {_md_cell(MARK_LEGEND)}."]
    lines += [""] + [f"- {_md_cell(t)} {_md_cell(m)}: {_md_cell(r)}" for (t, m), r in reference_notes(heads).items()]
    excl = [d for d in diffs if d.excludes_zero]
    if diffs:
        lines += ["", f"Paired differences: {len(excl)} of {len(diffs)} have a 95% interval that excludes 0 "
                      f"(unadjusted); {sum(d.significant for d in diffs)} have a Holm-adjusted p < 0.05 and "
                      f"{sum(d.p_bh < 0.05 for d in diffs)} a Benjamini-Hochberg-adjusted "
                      f"p < 0.05 (family: these {len(diffs)} differences)."]
    else:  # never "0 of 0"
        per_task = defaultdict(set)
        for r in data.records:
            if r.model_family != "human":
                per_task[r.task_id].add(r.model)
        lines += ["", "Paired differences: none; " + (
            "no headline metric with a paired statistic (see the HTML report's notes)."
            if any(len(ms) > 1 for ms in per_task.values()) else
            "fewer than two models on any task, nothing to compare.")]
    for d in excl[:30]:
        lines.append(f"- {_md_cell(d.task_id)} {_md_cell(d.metric)}: {_md_cell(d.a)} - {_md_cell(d.b)} = "
                     f"{fmt(d.diff, sign=True)} [{fmt(d.low, sign=True)}, {fmt(d.high, sign=True)}], p = {fmt_p(d.p)}, "
                     f"Holm {fmt_p(d.p_holm)}, BH {fmt_p(d.p_bh)} {_md_cell(d.basis)}")
    if len(excl) > 30:
        lines.append(f"- ... {len(excl) - 30} more in the HTML report")
    recs = data.records
    lines += ["", f"{len(recs)} records from {len({r.run_meta.run_id for r in recs})} run(s); "
              f"{len({r.model for r in recs if r.model_family != 'human'})} model(s); scores: {_md_cell(data.scores_source)}.", ""]
    return "\n".join(lines)


COUNT_METRICS = COUNT_METRIC_PREFIXES
"""Score rows whose value is a count: printed as integers (the rows ``scores.csv`` writes as integers)."""


def row_text(r) -> str:
    """A score row's value for the report tables: counts as integers; ``vsi_median`` with its
    quartiles labelled as the IQR (its ci columns are the 25th/75th percentiles, not a CI);
    every other row as 'value [95% CI]'."""
    if r.metric.startswith(COUNT_METRICS) and finite(r.value) and float(r.value).is_integer():
        return f"{r.value:.0f}"
    s = fmt(r.value)
    if not finite(r.ci_low):
        return s
    if r.metric.startswith("vsi_median"):
        return f"{s} (IQR {fmt(r.ci_low)}-{fmt(r.ci_high)}: quartiles, not a CI)"
    return s + f" [{fmt(r.ci_low)}, {fmt(r.ci_high)}]"


def unpaired_task_notes(records, diffs) -> list[str]:
    """One note per task that has two or more non-human models but no paired difference:
    why section 8 does not compare them (VSI: no paired statistic is defined here; the VSI
    section gives each model's rows and the cross-model rank agreement ``vsi_rho``)."""
    models: dict[str, set] = defaultdict(set)
    for r in records:
        if r.model_family != "human":
            models[r.task_id].add(r.model)
    compared = {d.task_id for d in diffs}
    notes = []
    for tid, ms in sorted(models.items()):
        if len(ms) < 2 or tid in compared:
            continue
        if tid.startswith("vsi."):
            why = ("no paired-bootstrap difference is defined for VSI metrics here; compare the models' "
                   "insensitive fractions and AUROCs with their CIs in the VSI section and the rank agreement "
                   "rows vsi_rho in scores.csv")
        else:
            why = "no headline metric with a paired statistic (skipped or undefined for these models)"
        notes.append(f"{tid}: {len(ms)} models ({', '.join(sorted(ms))}) are not compared here: {why}.")
    return notes


def render_report(data: ReportData, title: str, pairs: str = "auto") -> tuple[str, str, int]:
    """(html, markdown, number of figures) for ``data``; ``pairs``: which model pairs the paired
    differences compare (:data:`~.paired.PAIR_MODES`)."""
    from . import figures as F

    html, md, drawn, _ = build_report(data, title, pairs)
    for d in drawn:
        F.close(d)
    return html, md, len(drawn)


def build_report(data: ReportData, title: str, pairs: str = "auto"):
    """(html, markdown, drawn figures, tables) for ``data``: the page and the objects it was
    made from, for ``report --figures`` (:mod:`.files`).  ``pairs``: which model pairs the
    paired differences compare (:data:`~.paired.PAIR_MODES`; default: every pair up to
    :data:`~.paired.ALL_PAIRS_MAX` models, the ranking neighbours above).  The figures
    (:class:`~.figures.Drawn`) are still open: close them with :func:`.figures.close`."""
    from . import figures as F
    from .native import native_tables
    from .paired import paired_differences
    from .tables import report_tables, vsi_pooled_rows

    task_order, models = given_order(data.records)
    for h in headline_rows(data.scores):  # score rows without records (a scores.json alone): after, in their order
        if h.model not in models:
            models.append(h.model)
    in_given = (given_order_key(task_order), given_order_key(models))
    heads = sorted(headline_rows(data.scores), key=lambda h: (in_given[0](h.task_id), in_given[1](h.model)))
    cols = _matrix_cols(heads, task_order)
    models, model_score = _order_models(heads, models, cols)
    families = model_families(models, data.models)
    models = group_by_family(models, families)
    diffs, diff_notes = paired_differences(data.records, pairs)
    diff_notes = diff_notes + unpaired_task_notes(data.records, diffs)
    excl = [d for d in diffs if d.excludes_zero]
    shown = diffs if len(diffs) <= MAX_DIFF_ROWS else (
        sorted(excl, key=lambda d: -abs(d.diff))[:MAX_DIFF_ROWS])
    vsi_rows = [r for r in data.scores if r.task_id.startswith("vsi.") and not r.metric.startswith("vsi_histogram")]
    signal = defaultdict(dict)  # (task, model, cell) -> signal -> AUROC (branch vsi-analyses names)
    for r in vsi_rows:
        if r.metric.startswith("signal_auroc["):
            sig, _, rest = r.metric[len("signal_auroc["):].partition(",")
            signal[(r.task_id, r.model, rest.rstrip("]"))][sig] = r.value
    signal_names = sorted({k for v in signal.values() for k in v})
    native = native_tables(vsi_rows)
    few = models[:MAX_FIGURE_MODELS]
    drawn = dict(
        fig_matrix=F.draw_matrix(heads, models, cols, families), fig_dissociation=F.draw_dissociation(data.scores, few),
        fig_dissociation_edges=F.draw_dissociation(data.scores, few, task="closure.nat.edges"),
        fig_shape_bias=F.draw_shape_bias_by_category(data.scores, few),
        fig_ak=F.draw_ak_curves(data.scores, few), fig_category=F.draw_category_mean(data.scores, few),
        fig_mark=F.draw_mark_color(data.scores, few),
        fig_sal_shots=F.draw_salbench_shots(data.scores, few),
        fig_sal_cats=F.draw_salbench_categories(data.scores, few),
        fig_sal_break=F.draw_salbench_breakdowns(data.scores, few), fig_forest=F.draw_paired_forest(diffs),
        fig_vsi=F.draw_vsi_histograms(data.scores, few) if vsi_rows else None,
        fig_vsi_reliability=F.draw_vsi_reliability(data.scores, few) if vsi_rows else None,
        fig_vsi_joint=F.draw_vsi_joint_quintiles(data.scores) if vsi_rows else None)
    # matplotlib-escaped SVG; the figures stay open for the files
    figs = {k: (Markup(F.to_svg(d.fig, close=False)) if d is not None else None) for k, d in drawn.items()}
    # the cards: every headline row but the VSI ones, which the VSI section gives (no human data there)
    cards = {m: [h for h in heads if h.model == m and not h.base_task.startswith("vsi.")] for m in models}
    env = Environment(loader=PackageLoader("perceptbench.reports", "templates"),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    env.filters["breakable"] = breakable
    cards = {m: c for m, c in cards.items() if c}
    # only the sections the records support (a VSI-only run: no empty battery sections)
    present = {"matrix": drawn["fig_matrix"] is not None,
             "dissociation": any(drawn[k] is not None for k in ("fig_dissociation", "fig_dissociation_edges",
                                                                 "fig_shape_bias")),
             "ak": drawn["fig_ak"] is not None, "category": drawn["fig_category"] is not None,
             "markcolor": drawn["fig_mark"] is not None,
             "salbench": drawn["fig_sal_shots"] is not None, "vsi": bool(vsi_rows), "cards": bool(cards),
             "paired": bool(diffs or diff_notes or len(models) > 1), "provenance": True}
    sections = [(sid, name) for sid, name in (
        ("matrix", "matrix"), ("dissociation", "accuracy vs kappa"), ("ak", "a(k)"), ("category", "category mean"), ("markcolor", "mark colour"),
        ("salbench", "SalBench"), ("vsi", "VSI"), ("cards", "cards"), ("paired", "model vs model"),
        ("provenance", "provenance")) if present[sid]]
    prov = _provenance(data)
    tables = report_tables(heads=heads, models=models, cols=cols, model_score=model_score, diffs=diffs,
                           vsi_rows=vsi_rows, signal=sorted(signal.items()), signal_names=signal_names,
                           native=native, prov=prov)
    secno = {sid: i + 1 for i, (sid, _) in enumerate(sections)}  # no gap when a section (VSI) is absent
    html = env.get_template("report.html.j2").render(
        title=title, sections=sections, secno=secno, models=models, tasks=task_order,
        n_records=len(data.records), n_model_records=sum(r.model_family != "human" for r in data.records),
        n_human_records=sum(r.model_family == "human" for r in data.records), scores_source=data.scores_source,
        families=families, matrix_cols=cols, head_by={(h.task_id, h.metric, h.model): h for h in heads}, model_score=model_score,
        order_rule=("grouped by declared family (run.json models; in the family vocabulary's order, "
                    "undeclared last), and within a family: " if families else "") +
                   "descending mean position between floor (0) and human ceiling (1) over the matrix columns "
                   "that declare both; models without such a column last; ties in the order the run was given them",
        signal=sorted(signal.items()), signal_names=signal_names,
        vsi_pooled=vsi_pooled_rows(vsi_rows), max_joint=F.MAX_JOINT_PANELS, cards=cards, diffs=diffs, diffs_shown=shown, n_excl=len(excl), diff_notes=diff_notes, vsi_rows=vsi_rows,
        n_holm=sum(d.significant for d in diffs), n_bh=sum(d.p_bh < 0.05 for d in diffs),
        fmt_p=fmt_p,
        native=native,
        run_dirs=[str(d) for d in data.run_dirs], n_examples=N_EXAMPLES,
        few_note=(f"Figures 2-5 draw the first {len(few)} of the {len(models)} models in the matrix order "
                  "(one Okabe-Ito colour each, yellow left out: weak on white); the matrix, the cards and the tables give every model."
                  if len(models) > len(few) else ""),
        refs=reference_notes(h for c in cards.values() for h in c), kernel_names=KERNEL_NAMES,
        vtext=value_text, ctext=cell_text, absent=functools.partial(absent_cell_text, tasks_run(heads)), mark_legend=MARK_LEGEND, fmt=fmt, rtext=row_text,
        bar_left=lambda p: f"{25 + 50 * max(-0.5, min(1.5, p)):.1f}", **figs, **prov)
    return html, markdown_summary(data, heads, diffs, title), [d for d in drawn.values() if d is not None], tables


def write_report(run_dirs: list[str | os.PathLike], out: str | os.PathLike,
                 figures_dir: str | os.PathLike | None = None, pairs: str = "auto") -> ReportResult:
    """Write the HTML report to ``out`` and the Markdown summary to ``out`` with suffix
    ``.md``; both through a temporary file and a rename (a crash leaves no half page).
    With ``figures_dir`` (created with its missing parents), also every figure
    of the page as PDF, SVG, 300-dpi PNG and tidy CSV and every table as CSV and LaTeX
    (:func:`perceptbench.reports.files.write_figure_files`), written before the page.
    Credentials in URLs (``http://user:secret@host``, e.g. in the ``model_version`` of records
    written before they were redacted) are redacted on the page
    (:func:`perceptbench.core.urls.redact_urls_in`).  ``pairs``: which model pairs the paired
    differences compare (:data:`~.paired.PAIR_MODES`).

    Raises RecordError / ValueError (from :func:`load_report_data`) for unreadable or
    unmergeable run directories, ValueError for a ``figures_dir`` that cannot be made or
    written (:func:`~perceptbench.reports.files.check_figures_dir`), before writing anything."""
    from . import figures as F
    from .files import check_figures_dir, write_figure_files

    if figures_dir is not None:
        figures_dir = check_figures_dir(figures_dir)
    data = load_report_data(run_dirs)
    out = Path(out)
    title = ", ".join(str(Path(d)) for d in run_dirs)
    html, md, drawn, tables = build_report(data, title, pairs)
    n_fig = len(drawn)
    files = []
    try:
        if figures_dir is not None:
            files = write_figure_files(figures_dir, drawn, tables)
    finally:
        for d in drawn:
            F.close(d)
    md_path = out.with_suffix(".md")
    for path, text in ((out, html), (md_path, md)):
        write_atomic(path, redact_urls_in(text))  # URL credentials of older records too
    models = {r.model for r in data.records if r.model_family != "human"}
    return ReportResult(out, md_path, len(models), len({r.task_id for r in data.records}), n_fig, files)
