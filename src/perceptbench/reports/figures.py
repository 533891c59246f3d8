"""The report's figures: one function per figure draws it with matplotlib and returns a
:class:`Drawn` (the Figure, its file name and its tidy data rows); the HTML page inlines it
as SVG (:func:`to_svg`) and ``report --figures DIR`` writes the same object as PDF, SVG,
PNG and CSV (:mod:`.files`), so a figure has one place in the code.

Size and type are those of a two-column journal page: figures are
:data:`DOUBLE_COLUMN_IN` (7.16 in) wide, or :data:`SINGLE_COLUMN_IN` (3.5 in) for
single-panel scatter plots; text is 7-8 pt (IEEE, "Preparing graphics for IEEE
publications": column 3.5 in, text width 7.16 in, type 8-10 pt at print size, nothing
under 6 pt; Elsevier's 90 mm / 190 mm and 7 pt minimum are within a few percent).
Layout is matplotlib's constrained layout, so legends and labels stay inside that width.

Colours: the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), readable
for the common colour-vision deficiencies, cycled with marker shapes so that more models
than colours stay distinguishable; heatmaps use ``cividis`` (Nuñez, Anderton & Renslow
2018), designed to be perceptually uniform for deuteranomalous readers.

Text is kept as SVG ``<text>`` (``svg.fonttype = "none"``) and escaped by matplotlib's
SVG writer; mathtext is switched off so a ``$`` in a model name is printed as is.
Every function takes score rows (and, for the human points, nothing else) and returns
``None`` when the run holds nothing to draw."""

from __future__ import annotations

import io
import math
from collections import defaultdict
from dataclasses import dataclass, field

import matplotlib
import matplotlib.ticker
import matplotlib.transforms

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
import numpy as np  # noqa: E402

from ..core.rows import ScoreRow, is_aggregate_model  # noqa: E402
from ..metrics.capacity import CAPACITY_RULE, capacity_threshold  # noqa: E402
from .headline import (CAPACITY_BAND, MAX_NULL_RATE, MIN_N, SERIES_COUNT_CHANCE, HeadlineRow,  # noqa: E402
                       absent_cell_text, cell_mark, fmt, tasks_run, thin_evidence)
from ..tasks.gestalt import KERNEL_NAMES, MARK_KERNEL_IDS  # noqa: E402
from ..tasks.registry import task_label, task_title  # noqa: E402

OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
"""Okabe-Ito colours, most distinguishable first (yellow last: weak on white)."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h")
HUMAN_GREY = "#7f7f7f"

SINGLE_COLUMN_IN = 3.5
"""Single-column figure width, inches (IEEE two-column template; see the module docstring)."""
DOUBLE_COLUMN_IN = 7.16
"""Double-column (full text width) figure width, inches (IEEE two-column template)."""
MIN_FONT_PT = 7
"""Smallest type on a figure at print size, points (module docstring)."""

RC = {"svg.fonttype": "none", "svg.hashsalt": "perceptbench", "text.parse_math": False, "font.size": 8,
      "axes.titlesize": 8, "axes.labelsize": 8, "legend.fontsize": 7, "xtick.labelsize": 7,
      "ytick.labelsize": 7, "axes.spines.top": False, "axes.spines.right": False, "font.family": "DejaVu Sans",
      "pdf.fonttype": 42, "axes.linewidth": 0.6, "lines.linewidth": 1.0, "legend.handlelength": 1.5}
"""Matplotlib settings of every figure (drawing and saving): 7-8 pt DejaVu Sans, TrueType
(Type 42) fonts in the PDF (editable text, accepted by journals that refuse Type 3), SVG
text as ``<text>``, a fixed SVG id salt so two runs write identical files."""

DATA_COLUMNS = ("figure", "panel", "task_id", "model", "role", "metric", "plotted_as", "x", "value", "ci_low",
                "ci_high", "n", "n_null", "value_source", "evidence", "note")
"""Columns of a figure's tidy data (one row per plotted point, bar, line, band or cell):
``panel`` the panel title or key; ``role`` model / human observer / human ceiling / floor /
kernel / ...; ``plotted_as`` how the number is drawn (x, y, cell, line, band, bin);
``x`` the x category or value a y number is drawn at; ``value``/``ci_low``/``ci_high``/
``n``/``n_null`` the numbers (95% CI); ``value_source`` ``scores.csv`` when they are the
score row's own (task_id, model, metric), else how they were derived; ``evidence`` the
mark of a model's value resting on few answers (:func:`~.headline.thin_evidence`: 'all null',
'76/80 null', 'n=12'; empty for a full result and for human and reference rows), drawn as a
hollow marker with that text beside it."""

THIN_NOTE = (f"hollow: few answers (> {MAX_NULL_RATE:.0%} of the model's trials null,\n"
             f"or < {MIN_N} scored trials; the count beside it)")
"""The line a figure with a hollow (thin-evidence) marker prints under its legend."""

FROM_SCORES = "scores.csv"


@dataclass
class Drawn:
    """One figure: ``name`` (file stem, says what it shows), ``fig`` (matplotlib Figure, open
    until :func:`close`), ``rows`` (tidy data, dicts keyed by :data:`DATA_COLUMNS`)."""

    name: str
    fig: object
    rows: list[dict] = field(default_factory=list)
    trials: dict = field(default_factory=dict)
    """(task_id, model) -> (null trials, all trials) from the ``null_rate`` score rows
    (:func:`drawn`), for the ``evidence`` column."""

    def done(self, fig) -> "Drawn":
        """Take ``fig`` as the finished figure: lay it out once (constrained layout, under
        :data:`RC`) and fix that layout, so the page's SVG and every file show the same
        positions (a layout engine left on moves artists by fractions of a point on each
        draw, which changes the SVG clip-path ids)."""
        with plt.rc_context(RC):
            fig.canvas.draw()
        fig.set_layout_engine("none")
        self.fig = fig
        return self

    def add(self, r: ScoreRow | None = None, **kw) -> str:
        """Append a data row: from score row ``r`` (its numbers, value_source scores.csv) and/or
        keyword fields (a derived number gives ``value`` and ``value_source``).  A model's row
        (not ``human:``) gets its ``evidence`` mark (:func:`~.headline.thin_evidence`, from its
        n and the model's null trials on the task), which is returned ('' when none)."""
        d = dict.fromkeys(DATA_COLUMNS, None)
        d["figure"] = self.name
        d["evidence"] = ""
        if r is not None:
            d.update(task_id=r.task_id, model=r.model, metric=r.metric, value=r.value, ci_low=r.ci_low,
                     ci_high=r.ci_high, n=r.n, n_null=r.n_null, value_source=FROM_SCORES)
            if not r.model.startswith("human:") and r.metric != "skipped":
                trials = getattr(r, "trials", None) or self.trials.get((r.task_id, r.model))
                d["evidence"] = thin_evidence(r.n, r.n_null, trials)
        d.update(kw)
        self.rows.append(d)
        return d["evidence"]


def drawn(name: str, rows) -> Drawn:
    """A new :class:`Drawn` named ``name`` that knows each model's null trials on each task
    from the ``null_rate`` rows among ``rows`` (score rows), for the ``evidence`` column."""
    trials = {(r.task_id, r.model): (int(r.n_null or 0), int(r.n)) for r in rows
              if r.metric == "null_rate" and r.n}
    return Drawn(name, None, trials=trials)


def hollow(mark: str) -> dict:
    """Marker keywords for a point: a white face (hollow) when ``mark`` (its evidence) is set."""
    return {"mfc": "white"} if mark else {}


def annotate_thin(ax, x, y, mark: str, color) -> None:
    """Print ``mark`` (:func:`~.headline.thin_evidence`) beside the point (x, y), in its colour."""
    if mark:
        lo, hi = ax.get_xlim()
        right = x > lo + 0.7 * (hi - lo)  # near the right edge: the text goes to the point's left
        ylo, yhi = ax.get_ylim()
        top = y > ylo + 0.85 * (yhi - ylo)  # near the top (the title): below the point
        ax.annotate(mark, (x, y), xytext=(-4 if right else 4, -4 if top else 4), textcoords="offset points",
                    fontsize=MIN_FONT_PT, color=color, ha="right" if right else "left", va="top" if top else "bottom")


def note_thin(ax, d: Drawn, text: str = THIN_NOTE) -> None:
    """When one of ``d``'s points is marked, give ``ax`` a legend entry (a hollow black marker)
    that says what a hollow marker means (``text``, default :data:`THIN_NOTE`: the count beside
    the point; a figure that prints the counts elsewhere says where); call it before the legend
    is made."""
    if any(r["evidence"] for r in d.rows):
        ax.plot([], [], "o", color="black", mfc="white", ls="none", ms=5, label=text)


def style(i: int) -> dict:
    """Colour and marker of the i-th model (Okabe-Ito colour, marker cycles after 8)."""
    return {"color": OKABE_ITO[i % len(OKABE_ITO)], "marker": MARKERS[(i // len(OKABE_ITO)) % len(MARKERS)]}


def legend_label(text: str | None) -> str | None:
    """``text`` as a legend label that matplotlib shows: it leaves out every artist whose label
    starts with ``_`` (its "no legend" convention), so a model named ``_hidden`` would vanish
    from the legend; such a label gets a zero-width space (U+200B) in front, invisible on the page."""
    return "\u200b" + text if text and text.startswith("_") else text


def to_svg(fig, close: bool = True) -> str:
    """The figure as an ``<svg>`` element (XML prologue and DOCTYPE stripped); closed unless
    ``close`` is False."""
    buf = io.StringIO()
    with plt.rc_context(RC):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    if close:
        plt.close(fig)
    s = buf.getvalue()
    s = s[s.index("<svg"):]
    a, b = s.find("<metadata>"), s.find("</metadata>")
    if a >= 0 and b > a:  # RDF creator block: namespaces only, nothing a reader needs
        s = s[:a] + s[b + len("</metadata>"):]
    return s


def svg_of(d: Drawn | None) -> str | None:
    """``d``'s figure as inline SVG (closed), or None."""
    return None if d is None else to_svg(d.fig)


def close(d: Drawn | None) -> None:
    """Release ``d``'s figure (matplotlib keeps open figures alive)."""
    if d is not None:
        plt.close(d.fig)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _err(r: ScoreRow):
    if r is None or not _finite(r.ci_low):
        return None
    return [[max(r.value - r.ci_low, 0)], [max(r.ci_high - r.value, 0)]]


def _model_mark(d: Drawn, tid: str, m: str) -> str:
    """Model ``m``'s null-heavy mark on task ``tid`` (:func:`~.headline.thin_evidence` of its
    null trials alone), for a legend label ('76/80 null'); '' when none."""
    return thin_evidence(None, None, d.trials.get((tid, m)))


def _wrap_task(tid: str) -> str:
    """A task id broken over lines at '.', '@' and ',' so matrix column labels stay narrow."""
    base, _, params = tid.partition("@")
    parts = base.split(".")
    out = ".".join(parts[:2]) + ".\n" + ".".join(parts[2:])
    if params:
        out += "\n@" + ",\n".join(params.split(","))
    return out


def _index(rows):
    return {(r.task_id, r.model, r.metric): r for r in rows}


def _models(rows, task_pred, only: list[str] | None = None) -> list[str]:
    """Non-human models with rows on the tasks ``task_pred`` accepts (not the rows about several
    models, :func:`perceptbench.core.rows.is_aggregate_model`); in the order of ``only`` and
    limited to it when given (figures show at most a declared few models)."""
    seen = []
    for r in rows:
        if (task_pred(r.task_id) and not r.model.startswith("human:") and not is_aggregate_model(r.model)
                and r.model not in seen):
            seen.append(r.model)
    if only is not None:
        seen = [m for m in only if m in seen]
    return seen


# ------------------------------------------------------------------ 1. model x task matrix

def matrix(heads: list[HeadlineRow], models: list[str], cols: list[tuple[str, str]],
           families: dict[str, str] | None = None):
    """:func:`draw_matrix` as inline SVG (None without headline columns)."""
    return svg_of(draw_matrix(heads, models, cols, families))


def family_colours(families: dict[str, str]) -> dict[str, str]:
    """One Okabe-Ito colour per declared family, in order of first appearance (the matrix's
    grouped order); the ``undeclared`` group grey."""
    out: dict[str, str] = {}
    for f in families.values():
        if f not in out:
            out[f] = "#777777" if f == "undeclared" else OKABE_ITO[len([k for k in out if k != "undeclared"])
                                                                     % len(OKABE_ITO)]
    return out


LOWER_IS_BETTER = ("insensitive_frac",)
"""Matrix metrics (name prefixes) where a lower value is the better outcome: the VSI
insensitive fraction (1.00: the answer ignores the image region, seed 002 §2.2).  Their cells
are coloured by 1 - value, so that in every column the dark end of the scale is the worse
outcome (floor, chance, image ignored) and the light end the better one."""


def colour_value(metric: str, value: float) -> float:
    """The number a matrix cell's colour shows: ``value``, or 1 - ``value`` for a metric of
    :data:`LOWER_IS_BETTER` (both proportions)."""
    return 1.0 - value if metric.startswith(LOWER_IS_BETTER) else value


REFERENCE_FACE, REFERENCE_HATCH = "#f2f2f2", "#c8c8c8"
"""The matrix's reference rows (floor/chance, human ceiling): light grey, hatched, so that a
reference never reads as a respondent on the colour scale."""
REFERENCE_CELL = "reference cell (grey, hatched; not on the colour scale)"
"""``plotted_as`` of a reference row's cell in the matrix's tidy data."""


def draw_matrix(heads: list[HeadlineRow], models: list[str], cols: list[tuple[str, str]],
                families: dict[str, str] | None = None) -> Drawn | None:
    """Heatmap: models (rows, in the given order) x (task, metric) columns; cell = value and
    CI; two extra rows on top give the floor/chance and the human ceiling of each column: they are
    references, not respondents, so they are drawn light grey and hatched, off the colour scale
    (:data:`REFERENCE_FACE`; the title says so).  Colour of the model rows
    runs one way in every column, dark = worse (:func:`colour_value`: a VSI insensitive
    fraction is coloured by 1 - value; the cell's text is the value itself).  Double column
    wide up to 7 columns, wider beyond (the table then suits a paper better).

    ``families`` ({model: declared family}, seed 000's matrix figure grouped by family; the
    caller orders ``models`` by group, :func:`perceptbench.reports.html.group_by_family`): each
    model's name is coloured by its family (:func:`family_colours`, legend beside the matrix), a
    white line separates consecutive families, and each model's data row says its family in
    ``role`` (``model (family: F)``).  None or ``{}``: the matrix as without families."""
    if not models or not cols:
        return None
    d = Drawn("model_by_task_headline_matrix", None)
    h = {(x.task_id, x.metric, x.model): x for x in heads}
    ran, col_set = tasks_run(heads), set(cols)
    ref_rows = ["floor / chance", "human ceiling"]
    if not any(x.floor is not None or x.ceiling is not None for x in heads
               if (x.task_id, x.metric) in col_set):  # no column has a reference (VSI only): no empty rows
        ref_rows = []
    labels = ref_rows + models
    vals = np.full((len(labels), len(cols)), np.nan)
    text = [["" for _ in cols] for _ in labels]
    for j, (tid, metric) in enumerate(cols):
        any_h = next((x for x in heads if x.task_id == tid and x.metric == metric), None)
        if any_h is not None and ref_rows:
            for i, ref in enumerate((any_h.floor, any_h.ceiling)):
                if ref is not None:  # a reference, not a respondent: printed, never coloured
                    text[i][j] = fmt(ref, 2)
                    d.add(task_id=tid, model=ref_rows[i], role="floor" if i == 0 else "human ceiling",
                          metric=metric, plotted_as=REFERENCE_CELL, value=ref,
                          ci_low=any_h.ceiling_ci[0] if i == 1 and any_h.ceiling_ci else None,
                          ci_high=any_h.ceiling_ci[1] if i == 1 and any_h.ceiling_ci else None,
                          value_source="headline " + ("floor: " + any_h.floor_label if i == 0
                                                      else "ceiling: " + any_h.ceiling_label))
                else:
                    text[i][j] = "-"
        for i, m in enumerate(models, start=len(ref_rows)):
            x = h.get((tid, metric, m)) or h.get((tid, "skipped", m))  # skipped: the setting does not apply
            if x is None:
                text[i][j] = absent_cell_text(ran, tid, m)
                continue
            flipped = x.metric.startswith(LOWER_IS_BETTER)
            d.add(x, role=f"model (family: {families[m]})" if families else "model", plotted_as="cell, coloured by 1 - value (lower is better)" if flipped else "cell",
                  note="; ".join(x.flags))
            if _finite(x.value):
                vals[i, j] = colour_value(x.metric, x.value)
                text[i][j] = fmt(x.value, 2) + (f"\n[{fmt(x.ci_low, 2)}, {fmt(x.ci_high, 2)}]" if x.ci_low is not None else "")
                if any(f.startswith("≤") for f in x.flags):
                    text[i][j] += " ≤fl"
                if "every sample insensitive" in x.flags:  # high is bad here: the image region is ignored
                    text[i][j] += "\nignores image"
                if "no parseable answers" in x.flags:
                    text[i][j] += "\nall null"
                elif cell_mark(x):  # a value resting on few answers (legend under the figure)
                    text[i][j] += f"\n{cell_mark(x)}"
            else:
                text[i][j] = "skipped" if x.metric == "skipped" else "undefined"
    with plt.rc_context(RC):
        w = max(DOUBLE_COLUMN_IN, min(1.6 + 0.8 * len(cols), 22))
        lines = max(t.count("\n") + 1 for row in text for t in row)  # a cell's text stays inside its row
        fig, ax = plt.subplots(figsize=(w, 1.2 + max(0.34, 0.12 * lines + 0.06) * len(labels)), layout="constrained")
        im = ax.imshow(vals, cmap="cividis", vmin=min(0.0, np.nanmin(vals) if np.isfinite(vals).any() else 0),
                       vmax=1.0, aspect="auto")
        for i in range(len(labels)):
            for j in range(len(cols)):
                v = vals[i, j]
                dark = np.isfinite(v) and v < 0.55  # reference rows (NaN here) are light grey: black text
                ax.text(j, i, text[i][j], ha="center", va="center", fontsize=7,
                        color="white" if dark else "black",
                        **({"bbox": {"facecolor": REFERENCE_FACE, "edgecolor": "none", "pad": 1.5}}
                           if i < len(ref_rows) and text[i][j] else {}))
        if ref_rows:
            from matplotlib.patches import Rectangle

            for i in range(len(ref_rows)):  # reference rows: light grey, hatched, off the colour scale
                ax.add_patch(Rectangle((-0.5, i - 0.5), len(cols), 1, facecolor=REFERENCE_FACE, hatch="////",
                                       edgecolor=REFERENCE_HATCH, lw=0, zorder=0.5))
            ax.axhline(1.5, color="white", lw=3)
        ax.set_yticks(range(len(labels)), labels)
        if families:
            colours = family_colours({m: families[m] for m in models})
            for i, (lab, m) in enumerate(zip(ax.get_yticklabels()[len(ref_rows):], models)):
                lab.set_color(colours[families[m]])
                lab.set_fontweight("bold")
                if i and families[models[i - 1]] != families[m]:
                    ax.axhline(len(ref_rows) + i - 0.5, color="white", lw=2.5)
            from matplotlib.patches import Patch

            ax.legend(handles=[Patch(color=c, label=f) for f, c in colours.items()], title="declared family",
                      loc="upper left", bbox_to_anchor=(1.12, 1.0), fontsize=7, title_fontsize=7, frameon=False)
        flip = [m.startswith(LOWER_IS_BETTER) for _, m in cols]
        ax.set_xticks(range(len(cols)), [_wrap_task(t) + f"\n{m}" + ("\n(lower is better;\ncolour: 1 - value)" if f else "")
                                         for (t, m), f in zip(cols, flip)], fontsize=7)
        for lab in ax.get_yticklabels()[:len(ref_rows)]:
            lab.set_fontstyle("italic")
        ax.tick_params(length=0)
        if len(labels) > 12:  # tall matrix: column labels on top as well
            ax.tick_params(labeltop=True)
        cb = fig.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
        # short lines: a matrix of one or two model rows is short, and a long label ran off its top
        cb.set_label("metric value\n(proportion; kappa\nunitless); dark = worse" +
                     ("\n(VSI: 1 - value)" if any(flip) else ""))
        ax.set_title("Model x task: headline value [95% CI]" + (
            "\nfirst two rows (grey, hatched): the references, floor/chance and human ceiling, not on the colour scale"
            if ref_rows else ""))
        return d.done(fig)


# ------------------------------------------------------------------ 2. accuracy vs kappa

PANEL_STIMULI = {"closure.nat.silhouette": "silhouettes", "closure.nat.edges": "line drawings"}
"""What the x axis of :func:`dissociation` names, per human-panel classification task."""


def dissociation(rows: list[ScoreRow], labelled: list[str] | None = None, task: str = "closure.nat.silhouette"):
    """:func:`draw_dissociation` as inline SVG (None without rows of ``task``)."""
    return svg_of(draw_dissociation(rows, labelled, task))


def draw_dissociation(rows: list[ScoreRow], labelled: list[str] | None = None,
                      task: str = "closure.nat.silhouette") -> Drawn | None:
    """Accuracy (x) vs error consistency kappa (y) on a human-panel classification ``task``
    (a base id of :data:`PANEL_STIMULI`; default the silhouettes), 95% CIs both ways; the
    observers as grey points (accuracy@test, kappa_loo@test); the pairwise human ceiling
    as a band (its bootstrap CI) and a line (its mean).  None when no rows of ``task``.
    Single column wide, legend below; file name ``accuracy_vs_error_consistency_<stimuli>``."""
    tids = sorted({r.task_id for r in rows if r.task_id.split("@")[0] == task})
    if not tids:
        return None
    tid = tids[0]
    ix = _index(rows)
    models = _models(rows, lambda t: t == tid)
    d = drawn("accuracy_vs_error_consistency_" + PANEL_STIMULI[task].replace(" ", "_"), rows)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(SINGLE_COLUMN_IN, 4.6), layout="constrained")
        ceil = ix.get((tid, "human:panel", "ceiling_kappa_pairwise_mean@test"))
        if ceil is not None:
            d.add(ceil, role="human ceiling", plotted_as="y line and band (CI)")
            if _finite(ceil.ci_low):
                ax.axhspan(ceil.ci_low, ceil.ci_high, color=HUMAN_GREY, alpha=0.18, lw=0,
                           label="human-human ceiling, 95% CI")
            ax.axhline(ceil.value, color=HUMAN_GREY, lw=1, ls="--",
                       label=f"mean pairwise observer kappa {ceil.value:.3f}")
        ax.axhline(0, color="black", lw=0.6, ls=":")
        ax.axvline(1 / 16, color="black", lw=0.6, ls=":")
        ax.text(1 / 16, 0.01, " chance 1/16", transform=ax.get_xaxis_transform(), fontsize=MIN_FONT_PT, va="bottom")
        hx, hy = [], []
        for (t, m, met), r in ix.items():
            if t == tid and m.startswith("human:subject") and met == "accuracy@test":
                k = ix.get((t, m, "kappa_loo@test"))
                if k is not None:
                    hx.append(r.value)
                    hy.append(k.value)
                    d.add(r, role="human observer", plotted_as="x")
                    d.add(k, role="human observer", plotted_as="y")
        if hx:
            ax.scatter(hx, hy, s=18, color=HUMAN_GREY, marker="o", alpha=0.7, lw=0,  # filled: hollow means few answers
                       label=f"human observers (n={len(hx)}; kappa vs the others)")
        ax.set_xlim(-0.02, 1.02)
        labelled = models if labelled is None else [m for m in labelled if m in models]
        others = [m for m in models if m not in labelled]
        ox, oy = [], []
        for m in others:
            a, k = ix.get((tid, m, "accuracy")), ix.get((tid, m, "kappa_pairwise"))
            if a is not None and k is not None and _finite(a.value) and _finite(k.value):
                ox.append(a.value)
                oy.append(k.value)
                d.add(a, role="model (unlabelled point)", plotted_as="x")
                d.add(k, role="model (unlabelled point)", plotted_as="y")
        if ox:
            ax.scatter(ox, oy, s=12, color=OKABE_ITO[5], marker=".",
                       label=f"{len(ox)} further models (point estimates)")
        for i, m in enumerate(labelled):
            a, k = ix.get((tid, m, "accuracy")), ix.get((tid, m, "kappa_pairwise"))
            if a is None or k is None or not (_finite(a.value) and _finite(k.value)):
                continue
            st = style(i)
            marks = (d.add(a, role="model", plotted_as="x"), d.add(k, role="model", plotted_as="y"))
            mark = marks[0] or marks[1]
            ax.errorbar(a.value, k.value, xerr=_err(a), yerr=_err(k), fmt=st["marker"], color=st["color"],
                        ms=5, capsize=2, lw=1, label=legend_label(m + (f" ({mark})" if mark else "")), **hollow(mark))
            annotate_thin(ax, a.value, k.value, mark, st["color"])
        note_thin(ax, d)
        ax.set_xlim(-0.02, 1.02)
        ax.set_xlabel(f"accuracy on {PANEL_STIMULI[task]} (proportion correct, 16-way)")
        ax.set_ylabel("error consistency kappa (unitless)")
        ax.set_title(f"Accuracy vs error consistency\n{task_title(task)}\n({task}, test split)")
        ax.legend(loc="upper left", bbox_to_anchor=(-0.2, -0.16), frameon=False, ncols=1)
        return d.done(fig)


SHAPE_BIAS_TASK = "shape_bias.nat.cue_conflict"


def shape_bias_by_category(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_shape_bias_by_category` as inline SVG (None without cue-conflict rows)."""
    return svg_of(draw_shape_bias_by_category(rows, only))


def draw_shape_bias_by_category(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """Per-category shape bias on the cue-conflict images, the layout model-vs-human made the
    field's standard (Geirhos et al. 2019 Fig. 4; ``modelvshuman/plotting/plot.py``,
    ``plot_shape_bias_matrixplot``): the 16 shape classes on the y axis, the fraction of shape
    decisions among shape + texture decisions on the x axis (bottom; the fraction of texture
    decisions, its complement, on the top axis), one marker per class and respondent and a
    vertical line at each respondent's overall shape bias.  Humans: the observers' mean per class
    (``shape_bias_mean.<class>@test``, the models' test images) as grey diamonds and the pooled
    human shape bias as a grey line; models (published CNNs included) in Okabe-Ito colours.
    None without rows of ``shape_bias.nat.cue_conflict``; file name ``shape_bias_by_category``."""
    tids = sorted({r.task_id for r in rows if r.task_id.split("@")[0] == SHAPE_BIAS_TASK})
    if not tids:
        return None
    tid = tids[0]
    ix = _index(rows)
    cats = sorted({met.split(".", 1)[1].split("@")[0] for (t, m, met) in ix
                   if t == tid and m == "human:panel" and met.startswith("shape_bias_mean.")})
    if not cats:
        cats = sorted({met.split(".", 1)[1] for (t, m, met) in ix if t == tid and met.startswith("shape_bias.")})
    models = [m for m in _models(rows, lambda t: t == tid, only) if (tid, m, "shape_bias") in ix]
    d = drawn("shape_bias_by_category", rows)
    y = {c: i for i, c in enumerate(cats)}
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(SINGLE_COLUMN_IN, 4.8), layout="constrained")
        pooled = ix.get((tid, "human:panel", "shape_bias_pooled@test"))
        if pooled is not None and _finite(pooled.value):
            d.add(pooled, role="human panel (pooled)", plotted_as="x line")
            ax.axvline(pooled.value, color=HUMAN_GREY, lw=1, ls="--")
        hx, hy = [], []
        for c in cats:
            r = ix.get((tid, "human:panel", f"shape_bias_mean.{c}@test"))
            if r is not None and _finite(r.value):
                hx.append(r.value)
                hy.append(y[c])
                d.add(r, role="human observers (mean)", plotted_as="x", x=c)
        if hx:
            label = "humans (mean of 10 observers)" + (f"; pooled {pooled.value:.2f}" if pooled is not None else "")
            ax.scatter(hx, hy, s=28, marker="D", color=HUMAN_GREY, label=label, zorder=3)
        for i, m in enumerate(models):
            st = style(i)
            overall = ix[(tid, m, "shape_bias")]
            mark = d.add(overall, role="model", plotted_as="x line")  # few answers: hollow markers, said
            if _finite(overall.value):
                ax.axvline(overall.value, color=st["color"], lw=0.8)
            mx, my = [], []
            for c in cats:
                r = ix.get((tid, m, f"shape_bias.{c}"))
                if r is not None and _finite(r.value):
                    mx.append(r.value)
                    my.append(y[c])
                    d.add(r, role="model", plotted_as="x", x=c)
            name = f"{m} ({overall.value:.2f})" if _finite(overall.value) else m
            ax.scatter(mx, my, s=18, marker=st["marker"], zorder=4, edgecolors=st["color"],
                       facecolors="white" if mark else st["color"],
                       label=legend_label(f"{name}, {mark}" if mark else name))
        ax.set_yticks(range(len(cats)), cats)
        ax.set_ylim(len(cats) - 0.5, -0.5)
        ax.set_xlim(1.02, -0.02)  # shape on the left, as in model-vs-human
        ax.set_xlabel("fraction of 'shape' decisions\n(of shape + texture decisions)")
        top = ax.secondary_xaxis("top", functions=(lambda v: 1 - v, lambda v: 1 - v))
        top.set_xlabel("fraction of 'texture' decisions")
        ax.grid(axis="y", color="#dddddd", lw=0.5)
        ax.set_title(f"Shape bias per category\n{task_title(tid)}\n({tid}, test split)")
        note_thin(ax, d)
        fig.legend(loc="outside lower center", frameon=False, ncols=1)
        return d.done(fig)


# ------------------------------------------------------------------ 3. a(k)

def _level_curve(ax, d: Drawn, tid: str, m: str, i: int, n_models: int, pts: list, panel: str) -> None:
    """Model ``m`` (the i-th of ``n_models``) as a line over levels k: ``pts`` (k, score row)
    sorted by k, each point with its 95% CI (faint), dodged by 0.1 k per model; a point on few
    answers is hollow (:func:`~.headline.thin_evidence`); every row appended to ``d``'s data."""
    if not pts:
        return
    st = style(i)
    thin = [bool(d.add(r, role="model", plotted_as="y", x=k, panel=panel)) for k, r in pts]
    ks = np.array([k for k, _ in pts]) + (i - (n_models - 1) / 2) * 0.1
    v = np.array([r.value for _, r in pts], float)
    lo = np.array([r.ci_low if _finite(r.ci_low) else np.nan for _, r in pts])
    hi = np.array([r.ci_high if _finite(r.ci_high) else np.nan for _, r in pts])
    mm = _model_mark(d, tid, m)
    eb = ax.errorbar(ks, v, yerr=[np.nan_to_num(v - lo), np.nan_to_num(hi - v)], color=st["color"],
                     marker=st["marker"], ms=4, lw=1.4, capsize=2, elinewidth=0.8,
                     label=legend_label(m + (f" ({mm})" if mm else "")))
    for c in eb[2]:
        c.set_alpha(0.45)
    if any(thin):  # points on few answers: hollow
        ax.plot(ks[thin], v[thin], st["marker"], color=st["color"], mfc="white", ms=4, ls="none", zorder=3)


def ak_curves(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_ak_curves` as inline SVG (None without series-count rows)."""
    return svg_of(draw_ak_curves(rows, only))


AK_THIN_NOTE = (f"hollow: few answers: < {MIN_N} trials at that k\n(n above each k), or > {MAX_NULL_RATE:.0%} "
                "of the model's\ntrials null (said after its name)")
"""The a(k) figure's legend line for hollow points: the per-k counts are printed once per k along
the top of the panel (beside each of up to 15 x 7 points they would cover the curves)."""


def draw_ak_curves(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """a(k) with 95% CIs per model, the 6-12 capacity band shaded, chance 1/20 dotted
    (:data:`~.headline.SERIES_COUNT_CHANCE`), each model's capacity threshold (half its mean
    a(k <= 4), :func:`~perceptbench.metrics.capacity.capacity_threshold`) dashed in its colour,
    and the trials per k printed along the top (a point on fewer than 30 is hollow); below it,
    one line per model with capacity_k (:data:`~perceptbench.metrics.capacity.CAPACITY_RULE`,
    stated on the x axis) and its 95% interval, P(in band) printed beside it.  Double column."""
    tids = sorted({r.task_id for r in rows if r.task_id.split("@")[0] == "similarity.chart.series_count"})
    if not tids:
        return None
    ix = _index(rows)
    d = drawn("series_count_accuracy_by_k_and_capacity", rows)
    with plt.rc_context(RC):
        sizes = [len(_models(rows, lambda t, tid=tid: t == tid, only)) for tid in tids]
        ratios = []
        for n in sizes:
            ratios += [2.6, 0.35 + 0.42 * max(n, 1)]
        fig, axes = plt.subplots(2 * len(tids), 1, figsize=(DOUBLE_COLUMN_IN, sum(ratios) + 0.5 * len(tids)),
                                 gridspec_kw={"height_ratios": ratios}, squeeze=False, layout="constrained")
        for q, tid in enumerate(tids):
            ax, axc = axes[2 * q, 0], axes[2 * q + 1, 0]
            axc.sharex(ax)
            models = _models(rows, lambda t: t == tid, only)
            d.add(task_id=tid, model="human:capacity-band", role="human capacity band", metric="capacity_k",
                  plotted_as="x band", value=None, ci_low=CAPACITY_BAND[0], ci_high=CAPACITY_BAND[1], panel=tid,
                  value_source="constant CAPACITY_BAND (Healey 1996; Ware 2013; seed 000 §2.1)")
            for a_ in (ax, axc):
                a_.axvspan(CAPACITY_BAND[0], CAPACITY_BAND[1], color=HUMAN_GREY, alpha=0.15, lw=0,
                           label=f"human capacity band {CAPACITY_BAND[0]}-{CAPACITY_BAND[1]} series"
                           if a_ is ax else None)
            ax.axhline(SERIES_COUNT_CHANCE, color="black", lw=0.7, ls=":",
                       label=f"chance {SERIES_COUNT_CHANCE:g} (1/20: 20 allowed answers)" if q == 0 else None)
            d.add(task_id=tid, model="chance", role="chance", metric="a_k", plotted_as="y line",
                  value=SERIES_COUNT_CHANCE, panel=tid, value_source="constant SERIES_COUNT_CHANCE (1/20)")
            for i, m in enumerate(models):
                pts = sorted((int(r.metric[4:-1]), r) for (t, mm, met), r in ix.items()
                             if t == tid and mm == m and met.startswith("a_k["))
                st = style(i)
                _level_curve(ax, d, tid, m, i, len(models), pts, panel=tid)
                thr = capacity_threshold({k: r.value for k, r in pts if _finite(r.value)})
                if _finite(thr):
                    ax.axhline(thr, color=st["color"], lw=0.8, ls="--", alpha=0.8,
                               label="dashed: capacity threshold, half the mean a(k \u2264 4)"
                               if q == 0 and i == 0 else None)
                    d.add(task_id=tid, model=m, role="capacity threshold", metric="a_k", plotted_as="y line",
                          value=thr, panel=tid,
                          value_source="0.5 x mean of the a_k[k] rows for k <= 4 (metrics/capacity.py)")
                cap = ix.get((tid, m, "capacity_k"))
                prob = ix.get((tid, m, "capacity_in_band_prob"))
                y = len(models) - 1 - i
                cmark = ""
                for r in (cap, prob):
                    if r is not None:
                        cmark = d.add(r, role="model", plotted_as="x (lower panel)" if r is cap else "text",
                                      panel=tid) or cmark
                txt = "capacity_k undefined"
                if cap is not None and _finite(cap.value):
                    if _finite(cap.ci_low):
                        axc.plot([cap.ci_low, cap.ci_high], [y, y], color=st["color"], lw=2)
                    axc.plot([cap.value], [y], marker=st["marker"], color=st["color"], ms=6, **hollow(cmark))
                    txt = f"capacity_k {cap.value:.0f} [{cap.ci_low:.0f}, {cap.ci_high:.0f}]"
                name = m + (f" ({cmark})" if cmark else "")
                if prob is not None:
                    txt += f", P(in band) {prob.value:.2f}"
                # the label sits above its line, inside the panel: labels beside the axes squeezed it
                # and were clipped at the figure's edge with long model names (issue 24)
                axc.annotate(f"{name}: {txt}", (1.4, y), xytext=(0, 4), textcoords="offset points",
                             fontsize=MIN_FONT_PT, va="bottom", ha="left", color="#222222")
            ax.set_ylim(-0.03, 1.03)
            ax.set_yticks(np.linspace(0, 1, 6))  # fixed: a locator would choose by the font size at each draw
            ax.set_ylabel("a(k): accuracy (proportion)")
            ns = [r.n for (t, mm, met), r in ix.items() if t == tid and met.startswith("a_k[") and r.n is not None
                  and mm in models]
            count = f"{min(ns)}" if ns and min(ns) == max(ns) else f"{min(ns) if ns else 0}-{max(ns) if ns else 0}"
            small = f"; small n: {count} trials per k (< {MIN_N}), CIs wide or degenerate" \
                if ns and min(ns) < MIN_N else ""
            by_k: dict[int, list[int]] = defaultdict(list)
            for (t, mm, met), r in ix.items():
                if t == tid and mm in models and met.startswith("a_k[") and r.n is not None:
                    by_k[int(met[4:-1])].append(int(r.n))
            if small:  # the counts the hollow points rest on, once per k along the top
                top = matplotlib.transforms.blended_transform_factory(ax.transData, ax.transAxes)
                for k, kn in sorted(by_k.items()):
                    ax.text(k, 1.0, f"n={min(kn)}" if min(kn) == max(kn) else f"n={min(kn)}-{max(kn)}",
                            transform=top, fontsize=MIN_FONT_PT, ha="center", va="bottom", color="#444444",
                            in_layout=False)  # inside the axes' width, under the title's pad: no room to make
            ax.set_title(f"{task_label(tid)}: a(k), 95% CI per k" + (f"\n{small[2:]}" if small else ""), loc="left",
                         pad=12 if small else 6)
            ax.tick_params(labelbottom=False)
            axc.set_yticks([])  # each line is named by the text above it
            axc.set_ylim(-0.5, len(models) - 0.1)
            axc.spines["left"].set_visible(False)
            axc.set_xlabel("rendered series count k (number of colour series)\n"
                           f"lower panel: {CAPACITY_RULE}; 95% CI")
            axc.set_xlim(1.3, 16.7)
        note_thin(axes[0, 0], d, AK_THIN_NOTE)
        legend = {}
        for a_ in axes[::2, 0]:  # one legend under the figure: models and the band, once each
            for h, lab in zip(*a_.get_legend_handles_labels()):
                legend.setdefault(lab, h)
        widest = max(len(line) for lab in legend for line in lab.split("\n"))
        ncols = 2 if widest <= 52 else 1  # two columns of long labels run off a 7.16 in page
        if ncols == 1:  # the legend's extra rows get their own height, the panels keep theirs
            fig.set_figheight(fig.get_figheight() + 0.13 * sum(lab.count("\n") + 1 for lab in legend) / 2)
        fig.legend(list(legend.values()), list(legend), loc="outside lower center", frameon=False, ncols=ncols)
        return d.done(fig)


# ------------------------------------------------------------------ 3b. chart category mean

CATEGORY_MEAN_TASK = "similarity.chart.category_mean"


def category_mean(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_category_mean` as inline SVG (None without category-mean rows)."""
    return svg_of(draw_category_mean(rows, only))


def draw_category_mean(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """``similarity.chart.category_mean`` (Tseng et al. 2023): left, accuracy by number of
    categories k (2-10) per model with 95% CIs, beside the human curve (every released human
    trial on the test split pooled, ``human:panel a_k[k]@test``, its 95% CI as a band) and the
    chance level 1/k; right, each model's pairwise error consistency kappa (95% CI) against the
    human-human ceiling (mean kappa of participant pairs who saw the same batch in the same
    palette, ``ceiling_kappa_pairwise_mean@test``, line and CI band; seed 000 Eq. 2, D.2).
    Double column; one legend under both panels.  None without rows of the task; file name
    ``category_mean_accuracy_by_k_and_error_consistency``."""
    tids = sorted({r.task_id for r in rows if r.task_id.split("@")[0] == CATEGORY_MEAN_TASK})
    if not tids:
        return None
    tid = tids[0]
    ix = _index(rows)
    models = _models(rows, lambda t: t == tid, only)
    d = drawn("category_mean_accuracy_by_k_and_error_consistency", rows)

    def level(met: str) -> int:
        return int(met[4:].split("]")[0])

    with plt.rc_context(RC):
        fig, (ax, axk) = plt.subplots(1, 2, figsize=(DOUBLE_COLUMN_IN, 3.3), layout="constrained",
                                      gridspec_kw={"width_ratios": [2.2, 1]})
        hum = sorted((level(met), r) for (t, m, met), r in ix.items()
                     if t == tid and m == "human:panel" and met.startswith("a_k[") and met.endswith("]@test"))
        if hum:
            ks = np.array([k for k, _ in hum])
            for k, r in hum:
                d.add(r, role="human (all trials pooled)", plotted_as="y line and band (CI)", x=k, panel="accuracy by k")
            ax.fill_between(ks, [r.ci_low for _, r in hum], [r.ci_high for _, r in hum], color=HUMAN_GREY, alpha=0.2,
                            lw=0)
            ax.plot(ks, [r.value for _, r in hum], color=HUMAN_GREY, lw=1.6, marker="D", ms=3.5,
                    label=f"humans: {sum(int(r.n or 0) for _, r in hum):,} trials on the test split pooled, "
                          "95% CI band")
        kk = np.arange(2, 11)
        ax.plot(kk, 1 / kk, color="black", ls=":", lw=0.8, label="chance 1/k")
        for i, m in enumerate(models):
            pts = sorted((level(met), r) for (t, mm, met), r in ix.items()
                         if t == tid and mm == m and met.startswith("a_k[") and met.endswith("]"))
            _level_curve(ax, d, tid, m, i, len(models), pts, panel="accuracy by k")
        ax.set_xticks(kk)
        ax.set_xlim(1.5, 10.5)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("number of categories k in the scatterplot")
        ax.set_ylabel("accuracy (proportion correct)")
        ax.set_title("Accuracy by k, 95% CI", loc="left")
        fig.suptitle(task_label(tid), fontsize=RC["axes.titlesize"])
        ceil = ix.get((tid, "human:panel", "ceiling_kappa_pairwise_mean@test"))
        if ceil is not None and _finite(ceil.value):
            d.add(ceil, role="human-human ceiling", plotted_as="y line and band (CI)", panel="error consistency")
            if _finite(ceil.ci_low):
                axk.axhspan(ceil.ci_low, ceil.ci_high, color=HUMAN_GREY, alpha=0.2, lw=0)
            axk.axhline(ceil.value, color=HUMAN_GREY, lw=1.2, ls="--",
                        label=f"human-human ceiling: mean kappa of participant pairs\n"
                              f"(same batch and palette) {ceil.value:.2f}, 95% CI band")
        axk.axhline(0, color="black", lw=0.6, ls=":")
        names = []
        for i, m in enumerate(models):
            r = ix.get((tid, m, "kappa_pairwise"))
            if r is None:
                continue
            st = style(i)
            mark = d.add(r, role="model", plotted_as="y", x=m, panel="error consistency")
            x = len(names)
            names.append(m)
            if _finite(r.value):
                axk.errorbar([x], [r.value], yerr=_err(r), fmt=st["marker"], color=st["color"], capsize=2, ms=5,
                             **hollow(mark))
                annotate_thin(axk, x, r.value, mark, st["color"])
        axk.set_xticks(range(len(names)), names, rotation=30 if len(names) > 1 else 0,
                       ha="right" if len(names) > 1 else "center")
        axk.set_xlim(-0.6, max(len(names), 1) - 0.4)
        lo_y = min([0.0] + [ix[(tid, m, "kappa_pairwise")].ci_low for m in names
                            if _finite(ix[(tid, m, "kappa_pairwise")].ci_low)])
        hi_y = max([1.0 if ceil is None or not _finite(ceil.value) else
                    (ceil.ci_high if _finite(ceil.ci_high) else ceil.value)] +
                   [ix[(tid, m, "kappa_pairwise")].ci_high for m in names
                    if _finite(ix[(tid, m, "kappa_pairwise")].ci_high)])
        axk.set_ylim(lo_y - 0.05, hi_y + 0.05)
        axk.set_ylabel("error consistency kappa (unitless)")
        axk.set_title("Error consistency vs humans", loc="left")
        note_thin(ax, d)
        legend = {}
        for a_ in (ax, axk):
            for h, lab in zip(*a_.get_legend_handles_labels()):
                legend.setdefault(lab, h)
        fig.legend(list(legend.values()), list(legend), loc="outside lower center", frameon=False, ncols=2)
        return d.done(fig)


# ------------------------------------------------------------------ 4. mark kernels (colour, shape, size, ...)

KERNEL_LABEL_GAP = 0.035
"""Kernels whose B against the task's kernel differ by less than this (B units) share one label
('l5, l9' for 0.870 and 0.874), so that close kernels never print over each other."""


def _kernel_groups(kern: list[tuple[str, ScoreRow]]) -> list[tuple[float, str]]:
    """(x, label) per group of kernels (name, B row) sorted by B, a new group wherever the gap to
    the previous kernel is at least :data:`KERNEL_LABEL_GAP`; x is the group's mean B."""
    groups: list[list[tuple[str, float]]] = []
    for m, r in sorted(kern, key=lambda x: x[1].value):
        name = m.removeprefix("human:kernel-")
        if groups and r.value - groups[-1][-1][1] < KERNEL_LABEL_GAP:
            groups[-1].append((name, r.value))
        else:
            groups.append([(name, r.value)])
    return [(float(np.mean([v for _, v in g])), ", ".join(n for n, _ in g)) for g in groups]


def _place_labels(groups: list[tuple[float, str]], x_per_pt: float) -> list[int]:
    """A level per label (0: above the band, 1: below it, 2: above, one line higher ...): the
    lowest level where the label's estimated extent (0.6 em per character at
    :data:`MIN_FONT_PT`, ``x_per_pt`` data units per point, plus 3 pt) clears the labels already
    on that level."""
    right: dict[int, float] = {}
    levels = []
    for x, text in groups:
        half = (0.6 * MIN_FONT_PT * len(text) / 2 + 3) * x_per_pt
        lev = 0
        while lev in right and x - half < right[lev]:
            lev += 1
        right[lev] = x + half
        levels.append(lev)
    return levels


def _kernel_panel(ax, ix, tids: list[str], models: list[str], d: Drawn, width_in: float) -> None:
    """One channel's panel, one horizontal strip per task variant (the first on top), B on x
    (0-1, never clipped): the range of the other kernels' B against the task's kernel as a grey
    band with a tick and a label per kernel (close kernels share a label), the position floor
    as a dashed line, and each model as a point with its 95% CI (hollow on few answers); every
    plotted number appended to ``d``'s data.  ``width_in``: the axes' width in inches, for the
    label placement."""
    ax.set_xlim(-0.03, 1.05)  # B = 1.0 sits inside the axes
    ax.set_ylim(-0.5, len(tids) - 0.5)
    x_per_pt = 1.08 / (width_in * 72)
    half_band = 0.2
    for j, tid in enumerate(tids):
        y0 = len(tids) - 1 - j
        kern = [(m, r) for (t, m, met), r in ix.items() if t == tid and m.startswith("human:kernel-") and met == "B"
                and _finite(r.value)]
        if kern:
            vals = [r.value for _, r in kern]
            ax.fill_betweenx([y0 - half_band, y0 + half_band], min(vals), max(vals), color=HUMAN_GREY, alpha=0.22,
                             lw=0, label="range of the other kernels' B against the reference kernel\n"
                                         "(the human reference's own spread)" if j == 0 else None)
            for m, r in kern:
                d.add(r, role="kernel", plotted_as="x tick in the band", x=tid)
                ax.plot([r.value] * 2, [y0 - half_band, y0 + half_band], color="#555555", lw=1,
                        label="one other kernel (label: its name)" if j == 0 and m == kern[0][0] else None)
            groups = _kernel_groups(kern)
            for (x, text), lev in zip(groups, _place_labels(groups, x_per_pt)):
                below = lev % 2 == 1
                y = y0 - half_band if below else y0 + half_band
                ax.annotate(text, (x, y), xytext=(0, (2 + 8 * (lev // 2)) * (-1 if below else 1)),
                            textcoords="offset points", fontsize=MIN_FONT_PT, color="#444444", ha="center",
                            va="top" if below else "bottom")
        fl = next((r for (t, m, met), r in ix.items() if t == tid and met == "position_floor"), None)
        if fl is not None:
            d.add(fl, role="floor", plotted_as="x line", x=tid)
            ax.plot([fl.value] * 2, [y0 - 0.45, y0 + 0.45], color="black", ls="--", lw=1,
                    label="position floor" if j == 0 else None)
        shown = [m for m in models if ix.get((tid, m, "B")) is not None]
        for i, m in enumerate(models):
            r = ix.get((tid, m, "B"))
            if r is None:
                continue
            mark = d.add(r, role="model", plotted_as="x", x=tid)
            st = style(i)
            q = shown.index(m)
            y = y0 + (0.0 if len(shown) == 1 else 0.15 - 0.3 * q / (len(shown) - 1))  # inside the band's height
            err = None if not _finite(r.ci_low) else [[max(r.value - r.ci_low, 0)], [max(r.ci_high - r.value, 0)]]
            eb = ax.errorbar([r.value], [y], xerr=err, fmt=st["marker"], color=st["color"], capsize=2, ms=5,
                             zorder=4, label=legend_label(m) if j == 0 and len(models) <= 12 else None, **hollow(mark))
            for art in (eb.lines[0], *eb.lines[1], *eb.lines[2]):
                art.set_clip_on(False)
            annotate_thin(ax, r.value, y, mark, st["color"])
    ax.set_yticks(range(len(tids)), [f"{_wrap_task(t)}\nreference: {reference_kernel(t)}" for t in tids][::-1])
    ax.tick_params(axis="y", length=0)
    ax.spines["left"].set_visible(False)
    ax.grid(axis="x", color="#eeeeee", lw=0.5)
    ax.set_axisbelow(True)


def reference_kernel(task_id: str) -> str:
    """The kernel a kernel odd-one-out task's B is scored against (its ``kernel`` setting, default
    ``tm``; :class:`~perceptbench.tasks.gestalt.MarkKernelTask`)."""
    from ..tasks import get_task

    return get_task(task_id).params["kernel"]


def kernel_codes_text(codes) -> str:
    """The legend lines that say what the kernel codes ``codes`` on the mark figure mean
    (:data:`~perceptbench.tasks.gestalt.KERNEL_NAMES`, Demiralp et al. 2014 §3), two per line."""
    items = [f"{c} = {KERNEL_NAMES[c]}" for c in sorted(codes) if c in KERNEL_NAMES]
    lines = ["; ".join(items[i:i + 2]) for i in range(0, len(items), 2)]
    return "kernel codes (elicitation method, Demiralp et al. 2014):\n" + "\n".join(lines)


def mark_color(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_mark_color` as inline SVG (None without kernel-task rows)."""
    d = draw_mark_color(rows, only)
    return None if d is None else to_svg(d.fig)


def draw_mark_color(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """The kernel odd-one-out tasks (mark colour, and shape, size and the bivariate sets where
    the rows hold them), one panel per channel, stacked, one horizontal strip per task variant:
    B on the x axis (0-1), the other kernels' B against the task's kernel as a grey band (their
    range: the spread of the human reference itself) with a labelled tick per kernel, the
    position floor dashed, and each model as a point with its 95% CI, so the model's place
    among the kernels reads at a glance.  Each strip names its reference kernel (the task's
    ``kernel`` setting, :func:`reference_kernel`), and the legend says what every kernel code
    means (:func:`kernel_codes_text`).  None without kernel-task rows.  Double column wide
    (one column for a single task variant); one legend under the panels."""
    tids = sorted({r.task_id for r in rows if r.task_id.split("@")[0] in MARK_KERNEL_IDS})
    if not tids:
        return None
    ix = _index(rows)
    models = _models(rows, lambda t: t in tids, only)
    d = drawn("mark_odd_one_out_agreement_vs_kernels", rows)
    channels = [b for b in MARK_KERNEL_IDS if any(t.split("@")[0] == b for t in tids)]
    width = SINGLE_COLUMN_IN if len(tids) == 1 else DOUBLE_COLUMN_IN
    with plt.rc_context(RC):
        per = [[t for t in tids if t.split("@")[0] == b] for b in channels]
        strip_in = 0.55 + 0.12 * max(len(models), 1)
        heights = [len(p) * strip_in + 0.3 for p in per]
        fig, axes = plt.subplots(len(channels), 1, figsize=(width, sum(heights) + 2.2 + 0.14 * len(models)),
                                 sharex=True, squeeze=False, gridspec_kw={"height_ratios": heights},
                                 layout="constrained")
        for ax, base, mine in zip(axes[:, 0], channels, per):
            _kernel_panel(ax, ix, mine, models, d, width_in=width - 1.4)
            if len(channels) > 1:
                ax.set_title(task_label(base))
        axes[-1, 0].set_xlabel("B (proportion): agreement with\nthe reference kernel's odd one out")
        if len(channels) == 1:
            axes[0, 0].set_title(f"{task_title(channels[0])}\n({channels[0]})\nB vs the position floor "
                                 "and the kernels' spread")
        else:
            fig.suptitle("Mark odd-one-out per channel: B vs the position floor and the kernels' spread",
                         fontsize=RC["axes.titlesize"])
        codes = {reference_kernel(t) for t in tids} | {
            m.removeprefix("human:kernel-") for (t, m, met) in ix if t in tids and m.startswith("human:kernel-")}
        axes[0, 0].plot([], [], ls="none", label=kernel_codes_text(codes))
        note_thin(axes[0, 0], d)
        legend = {}  # every panel's labelled artists, each label once (a model may answer one channel only)
        for ax in axes[:, 0]:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(lab, h)
        fig.legend(list(legend.values()), list(legend), loc="outside lower center", frameon=False, ncols=1)
        return d.done(fig)


# ------------------------------------------------------------------ 5. SalBench

def _sal_key(tid: str):
    base, _, params = tid.partition("@")
    p = dict(x.split("=", 1) for x in params.split(",") if "=" in x)
    kind, split = base.split(".")[1:3]
    return kind, split, int(p.get("shots", 0)), {k: v for k, v in p.items() if k != "shots"}


def salbench_shots(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_salbench_shots` as inline SVG (None without SalBench rows)."""
    return svg_of(draw_salbench_shots(rows, only))


def draw_salbench_shots(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """Exact match and mean F1 by shots (0/3/5) per SalBench task and model: every stimulus
    counted, a null as the empty set (filled markers, 95% CI; seed 001 §4 and lmms-eval) and
    nulls excluded (small faint markers, the ``@nulls_excluded`` variant).  A hollow marker is a
    value on few answers (:func:`~.headline.thin_evidence`), as in every figure."""
    tids = sorted({r.task_id for r in rows if r.task_id.startswith("salbench.")})
    if not tids:
        return None
    ix = _index(rows)
    kinds = sorted({_sal_key(t)[:2] for t in tids})
    models = _models(rows, lambda t: t in tids, only)
    d = drawn("salbench_exact_match_and_f1_by_shots", rows)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(kinds), 2, figsize=(DOUBLE_COLUMN_IN, 0.8 + 2.3 * len(kinds)), squeeze=False,
                                 layout="constrained")
        for row_i, (kind, split) in enumerate(kinds):
            mine = [t for t in tids if _sal_key(t)[:2] == (kind, split)]
            for col, metric in enumerate(("exact_match", "mean_f1")):
                ax = axes[row_i, col]
                ax.set_xlim(-0.8, 5.8)  # before the points: their count labels go right of them
                for i, m in enumerate(models):
                    st = style(i)
                    pts = sorted((_sal_key(t)[2], ix.get((t, m, metric)), ix.get((t, m, metric + "@nulls_excluded")))
                                 for t in mine if ix.get((t, m, metric)) is not None)
                    if not pts:
                        continue
                    thin = []
                    for shots, r, r_ex in pts:
                        thin.append(d.add(r, role="model", plotted_as="y", x=shots,
                                          panel=f"salbench.{kind}.{split}: {metric}"))
                        if r_ex is not None:
                            d.add(r_ex, role="model", plotted_as="y", x=shots, panel=f"salbench.{kind}.{split}: {metric}")
                    off = (i - (len(models) - 1) / 2) * 0.18
                    xs = np.array([p[0] for p in pts]) + off
                    ys = [p[1].value for p in pts]
                    err = [[max(p[1].value - p[1].ci_low, 0) if _finite(p[1].ci_low) else 0 for p in pts],
                           [max(p[1].ci_high - p[1].value, 0) if _finite(p[1].ci_high) else 0 for p in pts]]
                    first = row_i == 0 and col == 0
                    ax.errorbar(xs, ys, yerr=err, fmt=st["marker"] + "-", color=st["color"], capsize=2, ms=5,
                                lw=1, label=legend_label(f"{m} (every stimulus; null = empty set)") if first else None)
                    for x_, y_, mark in zip(xs, ys, thin):
                        if mark:
                            ax.plot([x_], [y_], st["marker"], color=st["color"], mfc="white", ms=5, zorder=3)
                            annotate_thin(ax, x_, y_, mark, st["color"])
                    ye = [p[2].value if p[2] is not None else np.nan for p in pts]
                    ax.plot(xs + 0.06, ye, st["marker"], color=st["color"], ms=3.5, alpha=0.45, ls="none",
                            label=legend_label(f"{m} (nulls excluded)") if first else None)
                ax.set_xticks([0, 3, 5])
                ax.set_ylim(-0.03, 1.05)
                ax.set_xlabel("few-shot examples (shots)")
                ax.set_ylabel(("exact match" if metric == "exact_match" else "mean F1") + " (proportion)")
                ax.set_title(f"{task_title(f'salbench.{kind}.{split}')}\n(salbench.{kind}.{split}): {metric}")
        note_thin(axes[0, 0], d)
        fig.legend(loc="outside lower center", frameon=False, ncols=2)
        return d.done(fig)


def _dodged_points(ax, i: int, n_models: int, rs: list, label: str | None, marks: list[str] | None = None) -> None:
    """Model ``i`` of ``n_models``: one point per category slot (score rows ``rs``, None or
    NaN skipped) with its 95% CI, dodged by 0.15 x-units per model so models do not overlap;
    a point whose ``marks`` entry (:func:`~.headline.thin_evidence`) is set is hollow."""
    st = style(i)
    xs = np.arange(len(rs)) + (i - (n_models - 1) / 2) * 0.15
    ok = [j for j, r in enumerate(rs) if r is not None and _finite(r.value)]
    if not ok:
        return
    ax.errorbar(xs[ok], [rs[j].value for j in ok],
                yerr=[[max(rs[j].value - rs[j].ci_low, 0) if _finite(rs[j].ci_low) else 0 for j in ok],
                      [max(rs[j].ci_high - rs[j].value, 0) if _finite(rs[j].ci_high) else 0 for j in ok]],
                fmt=st["marker"], color=st["color"], capsize=2, ms=5, label=legend_label(label))
    thin = [j for j in ok if marks and marks[j]]
    if thin:
        ax.plot(xs[thin], [rs[j].value for j in thin], st["marker"], color=st["color"], mfc="white", ms=5, ls="none",
                zorder=3)


def _dodged_marks(d: Drawn, rs: list, **kw) -> list[str]:
    """Add each score row of ``rs`` (None skipped) to ``d``'s data with ``kw`` and ``x`` from
    ``kw['xs']``; return their evidence marks, '' for a missing row."""
    xs = kw.pop("xs")
    return [d.add(r, x=x, **kw) if r is not None else "" for r, x in zip(rs, xs)]


def salbench_categories(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_salbench_categories` as inline SVG (None without SalBench rows)."""
    return svg_of(draw_salbench_categories(rows, only))


def draw_salbench_categories(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """Per-category F1 (every stimulus, a null as the empty set; 95% CI) per SalBench task
    variant and model."""
    tids = sorted({r.task_id for r in rows if r.task_id.startswith("salbench.")})
    if not tids:
        return None
    ix = _index(rows)
    models = _models(rows, lambda t: t in tids, only)
    d = drawn("salbench_f1_by_category", rows)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(tids), 1, figsize=(DOUBLE_COLUMN_IN, 0.6 + 1.9 * len(tids)), squeeze=False,
                                 layout="constrained")
        for ax, tid in zip(axes[:, 0], tids):
            cats = sorted({met[3:-1] for (t, m, met) in ix if t == tid and met.startswith("f1[") and met.endswith("]")})
            for i, m in enumerate(models):
                rs = [ix.get((tid, m, f"f1[{c}]")) for c in cats]
                marks = _dodged_marks(d, rs, role="model", plotted_as="y", xs=cats, panel=tid)
                mm = _model_mark(d, tid, m)
                _dodged_points(ax, i, len(models), rs, (m + (f" ({mm})" if mm else "")) if tid == tids[0] else None,
                               marks)
            ax.set_xticks(range(len(cats)), cats)
            ax.set_ylim(-0.03, 1.05)
            ax.set_ylabel("F1 (proportion)")
            ax.set_title(f"{task_label(tid)}: per-category F1 (every stimulus)")
        note_thin(axes[0, 0], d)
        fig.legend(loc="outside lower center", frameon=False, ncols=3)
        return d.done(fig)


def salbench_breakdowns(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_salbench_breakdowns` as inline SVG (None without breakdown rows)."""
    return svg_of(draw_salbench_breakdowns(rows, only))


def draw_salbench_breakdowns(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """Exact match by difficulty, by feature x difficulty (synthetic) and by distractor
    count (natural), every stimulus counted (a null as the empty set), 95% CI; one panel per
    task variant and grouping."""
    tids = sorted({r.task_id for r in rows if r.task_id.startswith("salbench.")})
    ix = _index(rows)
    panels = []
    order = {"easy": 0, "medium": 1, "hard": 2, "<7": 0, "7-15": 1, "15-25": 2, ">25": 3}
    for tid in tids:
        for g in ("difficulty", "feature_difficulty", "distractors"):
            keys = sorted({met.split("=", 1)[1][:-1] for (t, m, met) in ix
                           if t == tid and met.startswith(f"exact_match[{g}=")},
                          key=lambda k: (k.split("/")[0] if "/" in k else "", order.get(k.split("/")[-1], 9), k))
            if keys:
                panels.append((tid, g, keys))
    if not panels:
        return None
    models = _models(rows, lambda t: t in tids, only)
    d = drawn("salbench_exact_match_by_difficulty_and_distractors", rows)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(panels), 1, figsize=(DOUBLE_COLUMN_IN, 0.6 + 2.0 * len(panels)), squeeze=False,
                                 layout="constrained")
        for ax, (tid, g, keys) in zip(axes[:, 0], panels):
            for i, m in enumerate(models):
                rs = [ix.get((tid, m, f"exact_match[{g}={k}]")) for k in keys]
                marks = _dodged_marks(d, rs, role="model", plotted_as="y", xs=keys, panel=f"{tid}: {g}")
                mm = _model_mark(d, tid, m)
                _dodged_points(ax, i, len(models), rs,
                               (m + (f" ({mm})" if mm else "")) if (tid, g) == panels[0][:2] else None, marks)
            ax.set_xticks(range(len(keys)), keys, rotation=20 if g == "feature_difficulty" else 0,
                          ha="right" if g == "feature_difficulty" else "center")
            ax.set_ylim(-0.03, 1.05)
            ax.set_ylabel("exact match (proportion)")
            unit = {"difficulty": "difficulty bin (seed 001 §3.2)", "feature_difficulty": "feature / difficulty bin",
                    "distractors": "number of distractors"}[g]
            ax.set_xlabel(unit)
            ax.set_title(f"{task_label(tid)}\nexact match by {g.replace('_', ' x ')} (every stimulus)")
        note_thin(axes[0, 0], d)
        fig.legend(loc="outside lower center", frameon=False, ncols=3)
        return d.done(fig)


# ------------------------------------------------------------------ 6. VSI

def vsi_histograms(rows: list[ScoreRow], only: list[str] | None = None, threshold: float = 0.05):
    """:func:`draw_vsi_histograms` as inline SVG (None without histogram rows)."""
    return svg_of(draw_vsi_histograms(rows, only, threshold))


def vsi_histogram_figure(rows: list[ScoreRow], only: list[str] | None = None, threshold: float = 0.05):
    """The Figure of :func:`draw_vsi_histograms` (None without histogram rows)."""
    d = draw_vsi_histograms(rows, only, threshold)
    return None if d is None else d.fig


def draw_vsi_histograms(rows: list[ScoreRow], only: list[str] | None = None,
                        threshold: float = 0.05) -> Drawn | None:
    """Histograms of per-sample VSI from the ``vsi_histogram[condition,sigma=S]`` score rows
    (their note holds bin edges in nats and counts; branch ``vsi``), one panel per task and
    condition, one step line per model, the 0.05-nat insensitivity threshold dashed (seed 002
    §2.2).  Log x axis; the [0, 1e-4) bin is drawn at its upper edge's left, the open last bin
    to the right of the last finite edge."""
    import json

    hist = [r for r in rows if r.task_id.startswith("vsi.") and r.metric.startswith("vsi_histogram[")]
    panels: dict[tuple[str, str], list[ScoreRow]] = defaultdict(list)
    for r in hist:
        panels[(r.task_id, r.metric[len("vsi_histogram"):])].append(r)
    if not panels:
        return None
    d = Drawn("vsi_per_sample_histograms", None)
    with plt.rc_context(RC):
        # constrained layout: a panel's x label never runs into the next panel's title
        fig, axes = plt.subplots(len(panels), 1, figsize=(DOUBLE_COLUMN_IN, 2.4 * len(panels)), squeeze=False,
                                 layout="constrained")
        for ax, ((tid, cell), rs) in zip(axes[:, 0], sorted(panels.items())):
            models = [m for m in (only or [r.model for r in rs]) if any(r.model == m for r in rs)]
            for i, m in enumerate(models):
                r = next(x for x in rs if x.model == m)
                try:
                    h = json.loads(r.note)
                    edges = [e for e in h["edges_nats"]]
                    counts = np.asarray(h["counts"], float)
                except (ValueError, KeyError, TypeError):
                    continue
                fin = [e for e in edges if e is not None and e > 0]
                lo_edge, hi_edge = fin[0] / 10 ** 0.5, fin[-1] * 10 ** 0.5
                xs = [lo_edge if (e is None or e <= 0) and j == 0 else (hi_edge if e is None else e)
                      for j, e in enumerate(edges)]
                frac = counts / max(counts.sum(), 1)
                ins = next((x for x in rows if x.task_id == tid and x.model == m
                            and x.metric == f"insensitive_frac@{threshold:g}{cell}"), None)
                # VSI needs no parsed answer: only the number of samples can make it thin
                mark = thin_evidence(r.n, None, None)
                lab = m + (f": {ins.value:.0%} below {threshold:g} nats" if ins is not None and _finite(ins.value) else "")
                lab += f" ({mark} samples)" if mark else ""
                for j, share in enumerate(frac):
                    d.add(task_id=tid, model=m, role="model", metric=r.metric, plotted_as="bin", panel=f"{tid} {cell}",
                          x=f"[{edges[j] or 0:g}, "
                            f"{format(edges[j + 1], 'g') if j + 1 < len(edges) and edges[j + 1] is not None else 'inf'})",
                          value=float(share), n=int(counts[j]), n_null=r.n_null, evidence=mark,
                          value_source="share of samples in the bin, from the row's note (edges_nats, counts)")
                if ins is not None:
                    d.add(ins, role="model", plotted_as="legend text", panel=f"{tid} {cell}", evidence=mark)
                ax.stairs(frac, xs, color=style(i)["color"], lw=1.6, label=legend_label(lab))
            ax.axvline(threshold, color="black", ls="--", lw=1)
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # mathtext is off: plain labels
            ax.set_xlabel("VSI = KL(p_clean || p_blurred) (nats, log scale; outer bins open)")
            ax.set_ylabel("share of samples (proportion)")
            ax.set_title(f"{task_label(tid)}\n{cell}: VSI per sample; dashed: {threshold:g} nats", loc="left")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
        return d.done(fig)


RELIABILITY_SIGNALS = (("max_prob", "max-probability"), ("norm_vsi", "1 - exp(-VSI)"),
                       ("verbal_conf", "verbal confidence / 100"))
"""The signals of the reliability diagrams (``reliability_{signal}[...]`` score rows) and their axis names."""


def vsi_reliability(rows: list[ScoreRow], only: list[str] | None = None):
    """:func:`draw_vsi_reliability` as inline SVG (None without reliability rows)."""
    return svg_of(draw_vsi_reliability(rows, only))


def draw_vsi_reliability(rows: list[ScoreRow], only: list[str] | None = None) -> Drawn | None:
    """Reliability diagrams (seed 002 B.2: empirical accuracy against predicted confidence in 10
    equal-width bins) from the ``reliability_{signal}[perturbation,sigma=S]`` score rows (their
    note holds per bin the count, mean confidence and accuracy; :mod:`perceptbench.vsi.pooled`):
    one panel row per task and cell, one panel per signal (:data:`RELIABILITY_SIGNALS`), one line
    per model through its bins at (mean confidence, accuracy), the diagonal dashed.  A bin with
    fewer samples than the row's ``thin_below`` is thin evidence: a hollow marker with its count
    beside it (:func:`annotate_thin`), left out of the line; an empty bin is not drawn."""
    import json

    panels: dict[tuple[str, str], dict[str, list[ScoreRow]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        for sig, _ in RELIABILITY_SIGNALS:
            stem = f"reliability_{sig}["
            if r.task_id.startswith("vsi.") and r.metric.startswith(stem) and _finite(r.value):
                panels[(r.task_id, r.metric[len(stem) - 1:])][sig].append(r)
    if not panels:
        return None
    d = Drawn("vsi_reliability_diagrams", None)
    keys = sorted(panels)
    seen = [r.model for k in keys for rs in panels[k].values() for r in rs]
    models = [m for m in (only or list(dict.fromkeys(seen))) if m in seen]
    thin_below: set[int] = set()
    with plt.rc_context(RC):
        fig, axes = plt.subplots(len(keys), len(RELIABILITY_SIGNALS), squeeze=False, layout="constrained",
                                 figsize=(DOUBLE_COLUMN_IN, 2.6 * len(keys) + 0.5))
        for i, m in enumerate(models):  # one legend entry per model
            axes[0][0].plot([], [], color=style(i)["color"], marker=style(i)["marker"], ms=3.5, label=legend_label(m))
        for row_axes, (tid, cell) in zip(axes, keys):
            for ax, (sig, label) in zip(row_axes, RELIABILITY_SIGNALS):
                ax.plot([0, 1], [0, 1], color=HUMAN_GREY, ls="--", lw=0.8)
                ax.set_xlim(0, 1)
                ax.set_ylim(-0.05, 1.05)
                for i, m in enumerate(models):
                    r = next((x for x in panels[(tid, cell)][sig] if x.model == m), None)
                    try:
                        h = json.loads(r.note) if r is not None else None
                        bins = list(zip(h["count"], h["mean_conf"], h["accuracy"], h["edges"], h["edges"][1:]))
                        thin = int(h.get("thin_below", 0))
                    except (ValueError, KeyError, TypeError):
                        continue
                    st = style(i)
                    full = [(c, a) for n, c, a, _, _ in bins if n and n >= thin]
                    if full:
                        ax.plot(*zip(*full), color=st["color"], marker=st["marker"], ms=3.5, lw=1.0)
                    for n, c, a, lo, hi in bins:
                        if not n:
                            continue
                        mark = f"n={n}" if n < thin else ""
                        d.add(task_id=tid, model=m, role="model", metric=r.metric, plotted_as="bin",
                              panel=f"{tid} {cell} {sig}", x=c, value=a, n=int(n), n_null=r.n_null, evidence=mark,
                              note=f"bin [{lo:g}, {hi:g})",
                              value_source="accuracy in the bin, from the row's note (count, mean_conf, accuracy)")
                        if mark:
                            thin_below.add(thin)
                            ax.plot([c], [a], color=st["color"], marker=st["marker"], ms=3.5, ls="none", mfc="white")
                            annotate_thin(ax, c, a, mark, st["color"])
                ax.set_xlabel(f"{label}, bin mean")
                ax.set_ylabel("accuracy in the bin")
                ax.set_title(f"{task_title(tid)}\n{tid}\n{cell} {sig}" if task_title(tid) else
                             f"{tid}\n{cell} {sig}", loc="left")
        if thin_below:
            axes[0][0].plot([], [], "o", color="black", mfc="white", ls="none", ms=3.5,
                            label=f"hollow: a bin of fewer than {min(thin_below)} samples (count beside it; "
                                  "not on the line)")
        handles, labels = axes[0][0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="outside lower center", ncols=min(4, len(handles)), frameon=False)
        return d.done(fig)


MAX_JOINT_PANELS = 6
"""The joint-quintile figure draws at most this many (task, cell, model pair) panels; the
``joint_error_grid`` rows in scores.json hold every pair scoring compared (every pair up to 20
models, the ranking neighbours above: ``score --pairs``, docs/metrics.md "VSI model pairs")."""


def draw_vsi_joint_quintiles(rows: list[ScoreRow], max_panels: int = MAX_JOINT_PANELS) -> Drawn | None:
    """Joint error structure of model pairs (seed 002 B.2): one heatmap per ``joint_error_grid``
    row (model ``A~B``; its note holds the 5 x 5 ``count`` and ``both_wrong`` over the two
    models' VSI quintiles, :mod:`perceptbench.vsi.pooled`): the share of samples both models get
    wrong in each joint quintile (cividis; empty cells blank), ``wrong/count`` printed in each
    cell; rows: A's quintile, columns: B's, 0 = lowest VSI.  At most ``max_panels`` panels, in
    the rows' order."""
    import json

    grids = []
    for r in rows:
        if r.task_id.startswith("vsi.") and r.metric.startswith("joint_error_grid[") and _finite(r.value):
            try:
                h = json.loads(r.note)
                grids.append((r, np.asarray(h["count"], float), np.asarray(h["both_wrong"], float)))
            except (ValueError, KeyError, TypeError):
                continue
    if not grids:
        return None
    grids = grids[:max_panels]
    d = Drawn("vsi_joint_quintile_errors", None)
    ncol = min(3, len(grids))
    nrow = -(-len(grids) // ncol)
    with plt.rc_context(RC):
        fig, axes = plt.subplots(nrow, ncol, squeeze=False, layout="constrained",
                                 figsize=(DOUBLE_COLUMN_IN, 2.5 * nrow + 0.4))
        im = None
        for ax, (r, count, both) in zip(axes.ravel(), grids):
            a, _, b = r.model.partition("~")
            with np.errstate(invalid="ignore", divide="ignore"):
                rate = np.where(count > 0, both / np.maximum(count, 1), np.nan)
            im = ax.imshow(rate, cmap="cividis", vmin=0, vmax=1, origin="lower")
            k = len(count)
            for i in range(k):
                for j in range(k):
                    if count[i, j]:
                        ax.text(j, i, f"{both[i, j]:.0f}/{count[i, j]:.0f}", ha="center", va="center",
                                fontsize=MIN_FONT_PT, color="white" if rate[i, j] < 0.5 else "black")
                        d.add(task_id=r.task_id, model=r.model, role="model pair", metric=r.metric, plotted_as="cell",
                              panel=f"{r.task_id} {r.metric[len('joint_error_grid'):]} {r.model}",
                              x=f"q_{a}={i}, q_{b}={j}", value=float(rate[i, j]), n=int(count[i, j]),
                              value_source="both wrong / samples in the joint quintile, from the row's note")
            ax.set_xticks(range(k))
            ax.set_yticks(range(k))
            ax.set_xlabel(f"VSI quintile of {b} (0 = lowest)")
            ax.set_ylabel(f"VSI quintile of {a}")
            ax.set_title((f"{task_title(r.task_id)}\n" if task_title(r.task_id) else "")
                         + f"{r.task_id}\n{r.metric[len('joint_error_grid'):]} {r.model}", loc="left")
        for ax in axes.ravel()[len(grids):]:
            ax.set_visible(False)
        fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="share both wrong")
        return d.done(fig)


# ------------------------------------------------------------------ 8. model vs model

PAIRED_SIGNIFICANT = "blue diamond: Holm-adjusted p < 0.05"
PAIRED_NOT_SIGNIFICANT = "grey circle: Holm-adjusted p >= 0.05"
"""The paired-differences figure's legend entries: significance by marker shape and colour,
never by a hollow face (hollow means few answers on the page, :data:`THIN_NOTE`)."""


def paired_forest(diffs, max_rows: int = 40):
    """:func:`draw_paired_forest` as inline SVG (None without differences)."""
    return svg_of(draw_paired_forest(diffs, max_rows))


def draw_paired_forest(diffs, max_rows: int = 40) -> Drawn | None:
    """Forest plot of paired differences (a - b) with 95% CIs; differences with a Holm-adjusted
    p below 0.05 (:attr:`~perceptbench.reports.paired.PairedDiff.significant`) are blue diamonds,
    the others grey circles, every marker filled (a hollow marker means "few answers" on every
    figure of the page, :data:`THIN_NOTE`, and nowhere else); a legend says which is which.  At
    most ``max_rows`` rows (the largest |difference| first); returns None without differences."""
    if not diffs:
        return None
    ds = sorted(diffs, key=lambda d: -abs(d.diff) if _finite(d.diff) else 0)[:max_rows]
    ds = sorted(ds, key=lambda d: (d.task_id, d.metric, d.a, d.b))
    out = Drawn("model_vs_model_paired_differences", None)
    with plt.rc_context(RC):
        fig, ax = plt.subplots(figsize=(DOUBLE_COLUMN_IN, 0.9 + 0.2 * len(ds)), layout="constrained")
        for y, d in enumerate(ds):
            ex = d.significant
            out.add(task_id=d.task_id, model=f"{d.a} - {d.b}", role="paired difference a - b", metric=d.metric,
                    plotted_as="x", value=d.diff, ci_low=d.low, ci_high=d.high, n=d.n,
                    value_source="paired bootstrap (report; seed 000 D.5)",
                    note=f"p={d.p:.4g}; p_holm={d.p_holm:.4g}; p_bh={d.p_bh:.4g}; draws={d.n_draws}; "
                         f"{PAIRED_SIGNIFICANT if ex else PAIRED_NOT_SIGNIFICANT}; {d.basis}")
            c = OKABE_ITO[0] if ex else HUMAN_GREY
            if _finite(d.low):
                ax.plot([d.low, d.high], [y, y], color=c, lw=1.5)
            ax.plot([d.diff], [y], "D" if ex else "o", color=c, ms=5)  # filled either way: shape says it
        ax.axvline(0, color="black", lw=0.8)
        shown = {bool(d.significant) for d in ds}
        fig.legend(handles=[Line2D([], [], marker=m, color=c, lw=1.5, ms=5, label=t)
                            for ex, m, c, t in ((True, "D", OKABE_ITO[0], PAIRED_SIGNIFICANT),
                                                (False, "o", HUMAN_GREY, PAIRED_NOT_SIGNIFICANT)) if ex in shown],
                   loc="outside lower center", frameon=False, fontsize=MIN_FONT_PT, ncol=2)
        ax.set_yticks(range(len(ds)), [f"{d.task_id.split('@')[0]} {d.metric}: {d.a} - {d.b}" for d in ds],
                      fontsize=MIN_FONT_PT)
        ax.invert_yaxis()
        ax.set_xlabel("paired difference a - b\n(metric units: proportion or kappa)")
        fig.suptitle("Model vs model, paired bootstrap 95% CI (blue diamond: Holm-adjusted p < 0.05)",
                     fontsize=RC["axes.titlesize"])  # over the figure: the axes sit right of long labels
        return out.done(fig)
