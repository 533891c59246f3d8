"""The report's tables as data (``report --figures DIR`` writes each as CSV and LaTeX).

Each :class:`Table` holds raw cells (numbers as numbers, None for a missing value); the
CSV writer prints them as ``scores.csv`` does (:func:`perceptbench.scoring.csv_cell`) and
:func:`to_latex` as a booktabs ``tabular`` with three decimals.  The tables are built from
the same objects the HTML page renders (headline rows, paired differences, VSI rows,
provenance), one builder per table.  No torch."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .headline import HeadlineRow, absent_cell_text, cell_text, tasks_run

__all__ = ["Table", "report_tables", "to_latex"]


@dataclass
class Table:
    """``name``: file stem (what the table holds); ``caption``: one sentence for the paper;
    ``columns``: header; ``rows``: tuples of cells (str, int, float or None), one per row."""

    name: str
    caption: str
    columns: tuple[str, ...]
    rows: list[tuple] = field(default_factory=list)


def _headline(heads: list[HeadlineRow]) -> Table:
    t = Table("table_headline_metrics",
              "Headline metrics per model and task: value with 95% bootstrap CI, floor or chance, human ceiling "
              "(with its CI), value / ceiling and the position between floor (0) and ceiling (1).",
              ("task_id", "model", "metric", "value", "ci_low", "ci_high", "floor", "ceiling", "ceiling_ci_low",
               "ceiling_ci_high", "value_over_ceiling", "position", "n", "n_null", "flags", "floor_is",
               "ceiling_is"))
    for h in heads:
        cci = h.ceiling_ci or (None, None)
        t.rows.append((h.task_id, h.model, h.metric, h.value, h.ci_low, h.ci_high, h.floor, h.ceiling, cci[0], cci[1],
                       h.ratio, h.position, h.n, h.n_null, "; ".join(h.flags), h.floor_label, h.ceiling_label))
    return t


def _matrix(heads: list[HeadlineRow], models: list[str], cols: list[tuple[str, str]],
            model_score: dict[str, float]) -> Table:
    h = {(x.task_id, x.metric, x.model): x for x in heads}
    ran = tasks_run(heads)
    t = Table("table_model_by_task_matrix",
              "Model x task matrix: headline value [95% CI] per model (rows) and task metric (columns); "
              "mean_position: mean position between floor (0) and human ceiling (1) over the columns.",
              ("model",) + tuple(f"{tid} {metric}" for tid, metric in cols) + ("mean_position",))
    for m in models:
        cells = []
        for tid, metric in cols:
            x = h.get((tid, metric, m)) or h.get((tid, "skipped", m))
            cells.append(cell_text(x) if x is not None else absent_cell_text(ran, tid, m))
        t.rows.append((m, *cells, model_score.get(m)))
    return t


def _paired(diffs) -> Table:
    t = Table("table_model_vs_model_paired_differences",
              "Paired bootstrap differences a - b on the headline metrics with 95% CI, two-sided paired-bootstrap "
              "p and its Holm and Benjamini-Hochberg adjustments over the report's comparisons.",
              ("task_id", "metric", "a", "b", "diff", "ci_low", "ci_high", "n", "stimuli", "draws",
               "ci_excludes_0", "p", "p_holm", "p_bh"))
    for d in diffs:
        t.rows.append((d.task_id, d.metric, d.a, d.b, d.diff, d.low, d.high, d.n, d.basis, d.n_draws,
                       "yes" if d.excludes_zero else "no", d.p, d.p_holm, d.p_bh))
    return t


VSI_TABLE_PREFIXES = ("insensitive_frac", "vsi_median", "argmax_change_rate", "accuracy", "skipped", "n_fallback")
"""The VSI rows the report's VSI table lists (the same filter as the HTML page)."""


def _vsi(vsi_rows) -> Table:
    t = Table("table_vsi_insensitive_fractions_and_summaries",
              "VSI rows: insensitive fractions and VSI summaries per task, model and cell (vsi_median: ci_low/ci_high "
              "are the quartiles, not a CI).", ("task_id", "model", "metric", "value", "ci_low", "ci_high", "n", "note"))
    for r in vsi_rows:
        if r.metric.startswith(VSI_TABLE_PREFIXES):
            t.rows.append((r.task_id, r.model, r.metric, r.value, r.ci_low, r.ci_high, r.n, r.note or ""))
    return t


VSI_POOLED_PREFIXES = ("cw_enrichment@", "cw_enrichment_pooled@", "insensitive_frac_pooled@", "error_rate_ratio_pooled",
                       "error_rate_ratio_model_mean", "joint_error_rate_", "signal_wins[", "auroc_vsi_sigma_swing",
                       "auroc_vsi_cell_range", "gap_shared_low_vsi", "gap_low_vsi")
"""The rows of the report's table of seed 002's pooled and threshold analyses (:mod:`perceptbench.vsi.pooled`;
the same filter as the HTML page), with the per-model low-VSI gap beside the shared one."""


def vsi_pooled_rows(vsi_rows) -> list:
    """The VSI rows of the pooled-and-threshold table (:data:`VSI_POOLED_PREFIXES`), in their order."""
    return [r for r in vsi_rows if r.metric.startswith(VSI_POOLED_PREFIXES)]


def _vsi_pooled(vsi_rows) -> Table:
    t = Table("table_vsi_pooled_and_threshold_analyses",
              "Seed 002's pooled and threshold analyses (§3, §4, A, B.2, C.2): confidently-wrong enrichment at VSI "
              "< 0.05 / 0.01 against a size-matched top-VSI population, error-rate ratios pooled over models and "
              "benchmarks, joint-quintile errors of model pairs, the signal win tally, the sigma AUROC swing and the "
              "encoder-LLM gap on the per-model and the shared low-VSI subsets.",
              ("task_id", "model", "metric", "value", "ci_low", "ci_high", "n", "note"))
    for r in vsi_pooled_rows(vsi_rows):
        t.rows.append((r.task_id, r.model, r.metric, r.value, r.ci_low, r.ci_high, r.n, r.note or ""))
    return t


def _signal(signal, names) -> Table:
    t = Table("table_vsi_signal_auroc", "AUROC for errors per candidate signal (error as the positive class; 0.5 is "
              "chance; seed 002 §4).", ("task_id", "model", "cell") + tuple(names))
    for (tid, m, cell), vals in signal:
        t.rows.append((tid, m, cell, *(vals.get(k) for k in names)))
    return t


def _native(nt) -> Table:
    t = Table(f"table_benchmark_native_{nt.key}".replace(".", "_"), f"{nt.title}, scored as its authors score it. {nt.caption}",
              ("task_id", "metric", "model", "value", "ci_low", "ci_high", "n", "note"))
    for tid, metric in nt.rows:
        for m in nt.models:
            r = nt.cells.get((tid, metric, m))
            if r is not None:
                t.rows.append((tid, metric, m, r.value, r.ci_low, r.ci_high, r.n, r.note or ""))
    return t


def _provenance(prov: dict) -> list[Table]:
    out = [Table("table_provenance_models", "Models: family, model version (weights), readouts and number of records.",
                 ("model", "family", "model_version", "readouts", "records"),
                 [(p["model"], p["family"], ", ".join(p["versions"]), ", ".join(p["readouts"]), p["n"])
                  for p in prov["model_prov"]]),
           Table("table_provenance_trials_per_task_and_model",
                 "Trials per task and model: prompt, records, null and ambiguous answers, task settings.",
                 ("task_id", "model", "prompt_id", "prompt_hash", "records", "null", "ambiguous", "task_settings"),
                 [(p["task_id"], p["model"], ", ".join(p["prompt_ids"]), ", ".join(p["prompt_hashes"]), p["n"],
                   p["n_null"], p["n_amb"], p["settings"]) for p in prov["trial_prov"]]),
           Table("table_provenance_human_references", "Human references: respondents, reference ids and source files "
                 "(sha256 prefix).", ("task_id", "respondents", "human_ref_id", "source_sha256", "records"),
                 [(p["task_id"], p["who"], ", ".join(p["refs"]), ", ".join(p["shas"]), p["n"])
                  for p in prov["human_prov"]]),
           Table("table_skipped_or_undefined_rows", "Score rows that are skipped or undefined, with the reason.",
                 ("task_id", "model", "metric", "reason"),
                 [(r.task_id, r.model, r.metric, r.note or "undefined") for r in prov["skipped"]]),
           Table("table_vlm_answers_as_given", "The first answers of each VLM per task as given: raw output, parsed "
                 "response (empty: null) and ground truth.",
                 ("task_id", "model", "stimulus_id", "raw_output", "parsed_response", "ground_truth"),
                 [(r.task_id, r.model, r.stimulus_id, r.raw_output, r.response if r.response is not None else None,
                   None if r.ground_truth is None else str(r.ground_truth)) for r in prov["examples"]])]
    return [t for t in out if t.rows]


def report_tables(*, heads, models, cols, model_score, diffs, vsi_rows, signal, signal_names, native,
                  prov) -> list[Table]:
    """Every table of the HTML report, from the objects :func:`~.html.render_report`
    computes; a table without rows is left out.  Cards per model are one table
    (``headline_metrics``, a ``model`` column)."""
    out = [_headline(heads)]
    if cols:
        out.append(_matrix(heads, models, cols, model_score))
    if diffs:
        out.append(_paired(diffs))
    if vsi_rows:
        out.append(_vsi(vsi_rows))
    if signal:
        out.append(_signal(signal, signal_names))
    if vsi_rows:
        out.append(_vsi_pooled(vsi_rows))
    out += [_native(nt) for nt in native]
    out += _provenance(prov)
    return [t for t in out if t.rows]


# ------------------------------------------------------------------ LaTeX

_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "\n": " ", "\r": " ", "|": r"\textbar{}"}


def latex_escape(s: str) -> str:
    """``s`` as LaTeX text: the ten special characters (and ``<``, ``>``, ``|``, which the
    default OT1 encoding prints as other glyphs) as commands, line breaks as spaces."""
    return "".join(_LATEX_ESCAPES.get(c, c) for c in str(s))


def _is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def latex_cell(x, digits: int = 3) -> str:
    """A cell for LaTeX: None as ``--``, NaN as ``n/a``, integers as such, other floats with
    ``digits`` decimals (minus sign in math mode), text escaped."""
    if x is None:
        return "--"
    if _is_num(x):
        if isinstance(x, float) and math.isnan(x):
            return "n/a"
        if isinstance(x, int):
            s = str(x)
        else:
            s = f"{x:.{digits}f}"
            if float(s) == 0:
                s = s.lstrip("-")
        return s.replace("-", "$-$", 1) if s.startswith("-") else s
    return latex_escape(x)


def to_latex(t: Table) -> str:
    """``t`` as a LaTeX ``table`` (``tabular`` with booktabs rules; needs
    ``\\usepackage{booktabs}``): header, one line per row (numbers right-aligned), caption and
    label ``tab:<name>``."""
    numeric = [all(_is_num(r[j]) or r[j] is None for r in t.rows) and any(_is_num(r[j]) for r in t.rows)
               for j in range(len(t.columns))]
    spec = "".join("r" if n else "l" for n in numeric)
    lines = [f"% perceptbench report table {t.name}; needs \\usepackage{{booktabs}}",
             "\\begin{table}[htbp]", "\\centering", "\\scriptsize",
             f"\\caption{{{latex_escape(t.caption)}}}", f"\\label{{tab:{t.name}}}",
             f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
             " & ".join(latex_escape(c) for c in t.columns) + " \\\\", "\\midrule"]
    lines += [" & ".join(latex_cell(c) for c in r) + " \\\\" for r in t.rows]
    lines += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(lines)
