"""Headline rows: each model's value beside its own reference, on one line.

One implementation feeds both the terminal table printed after ``run``/``score`` and the
per-model human-likeness card of the HTML report (issue 10, item 7).  A headline row
puts a model's value (with its bootstrap CI) next to the task's floor or chance level,
the human ceiling, value / ceiling and the position of the value between floor and
ceiling, and carries flags a reader must not miss:

* ``at or below floor`` / ``at or below chance``: value <= floor (a model at the position
  floor of an odd-one-out task has learned nothing beyond where the target tends to sit);
* ``CI reaches floor``: the lower CI bound is at or below the floor;
* ``above ceiling``: the CI's lower bound exceeds the ceiling (value / ceiling > 1 is shown
  unclipped either way); a value above the ceiling whose CI still includes it is flagged
  ``at ceiling (CI includes it)``;
* ``small n``: fewer than :data:`MIN_N` scored trials (the CI half-width bound
  1.96 / (2 sqrt n) exceeds 0.18 below n = 30; seed 000 D.1);
* ``high null rate``: null fraction nu above :data:`MAX_NULL_RATE`; for proportions the
  null bracket (1 - nu) v <= v_full <= (1 - nu) v + nu (seed 000 D.4) is given;
* ``no parseable answers``: every answer of the model on the task was null (n = 0, or on
  SalBench, where a null scores as an empty prediction, n_null = n of the null_rate row):
  the row's value, if any, rests on no answer (matrix cell: ``all null``);
* ``every sample insensitive`` (VSI): blurring the question's region moved the next-token
  distribution by less than 0.05 nats on every sample, i.e. the answer ignores the image
  region (seed 002 §2.2: 40-97% for real VLMs); a high insensitive fraction is bad, not good.

perceptbench cannot tell random weights from trained ones; these flags are what a
random-weight test model's rows show (README, report example).

``replicates`` (series counting) is never shown on its own: it appears inside the
``capacity_k`` row together with ``capacity_in_band_prob``; it is yes only when the point
estimate is in the band and at least 95% of the bootstrap draws are
(:func:`perceptbench.scorers.capacity.replicates`).

Reads nothing but score rows (no torch, no records).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from ..core.rows import ScoreRow, is_aggregate_model
from ..core.text import counted
from ..scorers.capacity import REPLICATES_MIN_PROB
from ..tasks.gestalt import MARK_KERNEL_IDS, PANEL_CLASSIFICATION_TASKS

MIN_N = 30
"""Rows scored on fewer trials are flagged ``small n`` (CI half-width bound 1.96/(2 sqrt 30) = 0.179, seed 000 D.1)."""

MAX_NULL_RATE = 0.10
"""Rows whose respondent left more than this fraction of trials null are flagged with the null bracket (seed 000 D.4)."""

CAPACITY_BAND = (6, 12)
"""Human categorical-colour capacity band (Healey 1996; Ware 2013; seed 000 §2.1)."""


@dataclass(frozen=True)
class HeadlineRow:
    """One model x task x metric line of the headline table / human-likeness card.

    ``floor``/``ceiling`` are in the metric's own units (proportions for accuracy, B and
    exact match; unitless kappa; k series for capacity) or None when the task declares
    none.  ``ratio`` = value / ceiling (None without a positive ceiling); ``position`` =
    (value - floor) / (ceiling - floor), 0 at the floor and 1 at the ceiling, unclipped.
    ``bracket``: the null bracket (low, high) when the null rate is high and the metric is
    a proportion.  ``flags``: short warnings (see the module docstring)."""

    task_id: str
    model: str
    metric: str
    label: str
    value: float
    ci_low: float | None
    ci_high: float | None
    n: int | None
    n_null: int | None
    null_rate: float | None
    floor: float | None = None
    floor_label: str = ""
    ceiling: float | None = None
    ceiling_ci: tuple[float, float] | None = None
    ceiling_label: str = ""
    ratio: float | None = None
    position: float | None = None
    bracket: tuple[float, float] | None = None
    extra: str = ""
    source: str = ""
    flags: tuple[str, ...] = field(default_factory=tuple)
    trials: tuple[int, int] | None = None
    """(null trials, all trials) of the respondent on the task, from its ``null_rate`` row."""

    @property
    def base_task(self) -> str:
        return self.task_id.split("@", 1)[0]


def given_order_key(order: list[str]):
    """A sort key: the position of a name in ``order`` (the order a run was given its tasks or
    models), names not in it after, by name.  Used by the report's tables and figures and by the
    tables ``run`` prints, so both list tasks in one order."""
    pos = {x: i for i, x in enumerate(order)}
    return lambda x: (pos.get(x, len(pos)), x)


def _finite(x) -> bool:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


class _Index:
    """(task_id, model, metric) -> ScoreRow, plus per-task lookups: ``models_by_task`` (the
    non-human respondents of each task in order of first appearance), ``by_respondent``
    ((task_id, model) -> its rows in order) and ``by_task_metric`` ((task_id, metric) -> the
    rows of every respondent), so that a rule never scans every row (linear in rows)."""

    def __init__(self, rows: Iterable[ScoreRow]):
        self.rows = list(rows)
        self.by_key = {(r.task_id, r.model, r.metric): r for r in self.rows}
        self.by_respondent: dict[tuple[str, str], list[ScoreRow]] = defaultdict(list)
        self.by_task_metric: dict[tuple[str, str], list[ScoreRow]] = defaultdict(list)
        for r in self.rows:
            self.by_respondent[(r.task_id, r.model)].append(r)
            self.by_task_metric[(r.task_id, r.metric)].append(r)
        self.models_by_task: dict[str, list[str]] = defaultdict(list)
        for tid, m in self.by_respondent:  # dicts keep the order of first appearance
            if not m.startswith("human:") and not is_aggregate_model(m):
                self.models_by_task[tid].append(m)

    def get(self, task_id, model, metric) -> ScoreRow | None:
        return self.by_key.get((task_id, model, metric))

    def value(self, task_id, model, metric) -> float | None:
        r = self.get(task_id, model, metric)
        return r.value if r is not None and _finite(r.value) else None


def _split_suffix(ix: _Index, task_id: str, model: str) -> str:
    """The human panel split a model's trials correspond to: ``@test`` when the model
    answered no more stimuli than the declared test split has (the default run), else ``@all``."""
    trials = ix.get(task_id, model, "null_rate")
    test = ix.get(task_id, "human:panel", "observer_accuracy_mean@test")
    if test is not None and (trials is None or trials.n is None or trials.n <= test.n):
        return "@test"
    return "@all"


def _make(ix: _Index, task_id: str, model: str, metric: str, label: str, *, floor=None, floor_label="",
          ceiling_row: ScoreRow | None = None, ceiling=None, ceiling_label="", proportion=True, extra="",
          source="") -> HeadlineRow | None:
    r = ix.get(task_id, model, metric)
    if r is None:
        return None
    nu = ix.value(task_id, model, "null_rate")
    nr = ix.get(task_id, model, "null_rate")
    trials = (int(nr.n_null or 0), int(nr.n)) if nr is not None and nr.n else None
    if ceiling_row is not None and _finite(ceiling_row.value):
        ceiling = ceiling_row.value
        ceiling_ci = (ceiling_row.ci_low, ceiling_row.ci_high) if _finite(ceiling_row.ci_low) else None
    else:
        ceiling_ci = None
    v = r.value
    flags: list[str] = []
    ratio = position = None
    bracket = None
    if not _finite(v):
        flags.append("undefined")
    else:
        if _finite(floor):
            word = "chance" if "chance" in floor_label else "floor"
            if v <= floor + 1e-12:
                flags.append(f"≤ {word}")
            elif _finite(r.ci_low) and r.ci_low <= floor:
                flags.append(f"CI reaches {word}")
        if _finite(ceiling) and ceiling > 0:
            ratio = v / ceiling
            if ratio > 1:
                if _finite(r.ci_low) and r.ci_low <= ceiling:
                    flags.append("at ceiling (CI includes it)")
                else:
                    flags.append("above ceiling")
            if _finite(floor) and ceiling > floor:
                position = (v - floor) / (ceiling - floor)
    # every trial null: n = 0 where nulls are excluded, or (SalBench, where a null scores as an
    # empty prediction and n counts every stimulus) the null_rate row's n_null = n
    if thin_evidence(r.n, r.n_null, trials) == "all null":
        flags.append("no parseable answers")
    elif r.n is not None and r.n < MIN_N:
        flags.append(f"small n={r.n}")
    if _finite(nu) and nu > MAX_NULL_RATE:
        if proportion and _finite(v):
            bracket = ((1 - nu) * v, (1 - nu) * v + nu)
            flags.append(f"nulls {nu:.0%}: all-trials value in [{fmt(bracket[0])}, {fmt(bracket[1])}]")
        else:
            flags.append(f"nulls {nu:.0%}")
    return HeadlineRow(task_id, model, metric, label, v, r.ci_low if _finite(r.ci_low) else None,
                       r.ci_high if _finite(r.ci_high) else None, r.n, r.n_null, nu, floor, floor_label,
                       ceiling, ceiling_ci, ceiling_label, ratio, position, bracket, extra, source, tuple(flags),
                       trials)


def _b_stimuli_note(ix: _Index, tid: str, m: str, split: str) -> str:
    """Why a model's B rests on fewer stimuli than it answered (closure: B on 79 of 80): the
    stimuli whose observers' modal answer is tied have no modal reference and are left out of B
    (the panel's ``n_tied_mode`` row of the same split; seed 000 D.1), and a null answer has
    nothing to compare.  '' when B counts every trial."""
    r, nr = ix.get(tid, m, "B"), ix.get(tid, m, "null_rate")
    tied = ix.value(tid, "human:panel", f"n_tied_mode{split}")
    if r is None or nr is None or r.n is None or not nr.n or r.n >= nr.n or not tied:
        return ""
    why = f"{counted(tied, 'stimulus', 'stimuli')} with a tied human modal answer (no modal reference)"
    if nr.n_null:
        why += f" and {counted(nr.n_null, 'null answer')}"
    return f"B on {r.n} of {nr.n} stimuli: {why} left out"


def _panel_classification(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    s = _split_suffix(ix, tid, m)
    chance = 1 / 16
    return [
        _make(ix, tid, m, "accuracy", "accuracy", floor=chance, floor_label="chance 1/16",
              ceiling_row=ix.get(tid, "human:panel", f"observer_accuracy_mean{s}"),
              ceiling_label=f"observers' mean accuracy{s}", source="seed 000 §2.1, D.1"),
        _make(ix, tid, m, "B", "B (modal agreement)", floor=chance, floor_label="chance 1/16",
              ceiling_row=ix.get(tid, "human:panel", f"observer_B_mean{s}"),
              ceiling_label=f"observers' B vs the others' mode{s}", extra=_b_stimuli_note(ix, tid, m, s),
              source="seed 000 D.1"),
        _make(ix, tid, m, "kappa_pairwise", "error consistency kappa", floor=0.0, floor_label="chance 0",
              ceiling_row=ix.get(tid, "human:panel", f"ceiling_kappa_pairwise_mean{s}"),
              ceiling_label=f"mean pairwise observer kappa{s}", proportion=False, source="seed 000 Eq. 2, D.2"),
    ]


def _cue_conflict(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    """``shape_bias.nat.cue_conflict``: the shape bias (shape decisions among shape + texture
    decisions) beside the observers' pooled shape bias on the test split as its human reference
    (Geirhos et al. 2019 §3, Fig. 4: humans near 0.96), then the human-panel rows of the
    classification tasks (accuracy = shape decisions, B, kappa) where the scorer wrote them."""
    return [_make(ix, tid, m, "shape_bias", "shape bias (shape / (shape + texture) decisions)",
                  ceiling_row=ix.get(tid, "human:panel", "shape_bias_pooled@test"),
                  ceiling_label="human shape bias@test (the observers' decisions pooled)",
                  source="Geirhos et al. 2019 §3, Fig. 4")] + _panel_classification(ix, tid, m)


def _mark_color(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    kernels = [r for r in ix.by_task_metric.get((tid, "B"), ()) if r.model.startswith("human:kernel-")
               and _finite(r.value)]
    ceiling = sum(r.value for r in kernels) / len(kernels) if kernels else None
    extra = ""
    if kernels:
        lo, hi = min(r.value for r in kernels), max(r.value for r in kernels)
        extra = f"other kernels' B {fmt(lo)}-{fmt(hi)} (their mean is the ceiling)"
    return [_make(ix, tid, m, "B", "B (odd-one-out agreement)", floor=ix.value(tid, m, "position_floor"),
                  floor_label="position floor", ceiling=ceiling,
                  ceiling_label=f"mean B of the other {len(kernels)} kernels", extra=extra,
                  source="seed 000 D.1, D.3"),
            # with the study's per-subject raw judgments (issue 23): error consistency with the subjects
            _make(ix, tid, m, "kappa_pairwise", "error consistency kappa (vs the subjects)", floor=0.0,
                  floor_label="chance 0", ceiling_row=ix.get(tid, "human:panel", "ceiling_kappa_pairwise_mean@test"),
                  ceiling_label="mean pairwise subject kappa", proportion=False, source="seed 000 Eq. 2, D.2")]


SERIES_COUNT_CHANCE = 1 / 20
"""Chance accuracy of series counting: uniform over the 20 allowed answers 1-20 (seed 000 §2.3);
the headline floor and the dotted line of the a(k) figure."""


def _series(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    chance = ("chance 1/20 (uniform over the 20 allowed answers 1-20; k is rendered 2-16, so a guesser "
              "who knew that range would get 1/15)")
    out = [_make(ix, tid, m, "accuracy", "accuracy", floor=SERIES_COUNT_CHANCE, floor_label=chance,
                 source="seed 000 §2.3")]
    cap = ix.get(tid, m, "capacity_k")
    prob = ix.value(tid, m, "capacity_in_band_prob")
    rep = ix.value(tid, m, "replicates")
    if cap is not None:
        lo, hi = CAPACITY_BAND
        extra = ""
        if rep is not None:  # the rule: point estimate in the band and P(in band) >= 0.95 (scorers/capacity.py)
            inside = _finite(cap.value) and lo <= cap.value <= hi
            where = (f"k={cap.value:.0f} {'inside' if inside else 'outside'} the human band {lo}-{hi}"
                     if _finite(cap.value) else "k undefined")
            if inside and not rep and prob is not None:
                where += f", but in the band in only {prob:.0%} of draws (< {REPLICATES_MIN_PROB:.0%}: not shown)"
            extra = f"replicates: {'yes' if rep else 'no'} ({where})"
        if prob is not None:
            extra += (f"{'; ' if extra else ''}P(in band)={fmt(prob)}, the share of bootstrap draws whose k is "
                      "in the band")
        row = _make(ix, tid, m, "capacity_k", "capacity k (series)", proportion=False, extra=extra,
                    source="seed 000 §2.3")
        if row is not None and prob is not None and prob < 0.5:
            flag = f"k in the band in {'only ' if prob > 0 else ''}{prob:.0%} of draws"
            row = HeadlineRow(**{**row.__dict__, "flags": row.flags + (flag,)})
        out.append(row)
    return out


CATEGORY_MEAN_TASK = "similarity.chart.category_mean"


def _category_mean(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    """``similarity.chart.category_mean`` (Tseng et al. 2023 highest-mean judgement): accuracy
    against chance (mean 1/k over the model's stimuli, the ``chance`` row) with the human
    accuracy on the test split as its ceiling (every released human trial pooled,
    ``human:panel accuracy@test``, with its CI; models answer test stimuli only), and the
    pairwise error consistency kappa against the human-human ceiling (mean kappa of the
    participant pairs who saw the same batch in the same palette,
    ``ceiling_kappa_pairwise_mean@test``; seed 000 Eq. 2, D.2).  The position floor (always
    naming the most frequent answer position, seed 000 D.3) is given beside the accuracy."""
    pos = ix.value(tid, m, "position_floor")
    return [
        _make(ix, tid, m, "accuracy", "accuracy", floor=ix.value(tid, m, "chance"),
              floor_label="chance (mean 1/k over the model's stimuli)",
              ceiling_row=ix.get(tid, "human:panel", "accuracy@test"),
              ceiling_label="human accuracy@test (all trials pooled)",
              extra=f"position floor {fmt(pos)}" if pos is not None else "", source="Tseng et al. 2023; seed 000 D.1, D.3"),
        _make(ix, tid, m, "kappa_pairwise", "error consistency kappa (vs each participant)", floor=0.0,
              floor_label="chance 0", ceiling_row=ix.get(tid, "human:panel", "ceiling_kappa_pairwise_mean@test"),
              ceiling_label="human-human ceiling: mean kappa of participant pairs in one batch x palette@test",
              proportion=False, source="seed 000 Eq. 2, D.2"),
    ]


def _things(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    """``similarity.nat.things_ooo``: B (agreement with the modal human choice) against the
    position floor (max_k f_k, seed 000 D.3) and the release's test-retest agreement as the
    ceiling (``human:panel ceiling_test_retest``, Hebart et al. 2023; seed 000 D.1, D.3)."""
    return [_make(ix, tid, m, "B", "B (odd-one-out agreement with the modal human choice)",
                  floor=ix.value(tid, m, "position_floor"), floor_label="position floor",
                  ceiling_row=ix.get(tid, "human:panel", "ceiling_test_retest"),
                  ceiling_label="human test-retest agreement (release)", source="seed 000 D.1, D.3")]


def _salbench(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    sk = ix.get(tid, m, "skipped")
    if sk is not None:
        return [HeadlineRow(tid, m, "skipped", "skipped", float("nan"), None, None, sk.n, sk.n_null, None,
                            source="seed 001", flags=(f"skipped: {sk.note}",))]
    # seed 001 §4 headline: every stimulus counts, a null answer is the empty set (no null bracket
    # needed: nulls are already in the value); the nulls-excluded variant is printed beside it
    excl = ix.get(tid, m, "exact_match@nulls_excluded")
    extra = (f"nulls excluded: {fmt(excl.value)}" if excl is not None and _finite(excl.value)
             and excl.n_null else "")
    out = [_make(ix, tid, m, "exact_match", "exact match (every stimulus)", extra=extra, source="seed 001 §4",
                 floor=ix.value(tid, m, "exact_match_floor"),
                 floor_label="majority-answer floor (best constant answer on these stimuli)", proportion=False),
           _make(ix, tid, m, "mean_f1", "mean F1 (all categories)", source="seed 001 §4", proportion=False)]
    for k in (1, 3):
        out.append(_make(ix, tid, m, f"retrieval_top{k}", f"retrieval top-{k}",
                         floor=ix.value(tid, m, f"retrieval_chance_top{k}"),
                         floor_label="chance (this label distribution)", source="seed 001 §5"))
    return out


def _vsi(ix: _Index, tid: str, m: str) -> list[HeadlineRow | None]:
    """VSI task rows (branch ``vsi`` names): per region-blur cell (whole-image cells when the
    task has no region cell; the ``[image_withheld]`` cell for a respondent asked without the
    image, ``M[image_withheld]``) the insensitive fraction at
    0.05 nats, the median VSI (its ci columns are quartiles, shown as IQR, not as a CI), the
    argmax-change rate, and the AUROC of -VSI for errors against chance 0.5 (seed 002 §2-§4)."""
    sk = ix.get(tid, m, "skipped")
    if sk is not None:
        return [HeadlineRow(tid, m, "skipped", "skipped", float("nan"), None, None, sk.n, sk.n_null, None,
                            source="seed 002", flags=(f"skipped: {sk.note}",))]
    out: list[HeadlineRow | None] = []
    mine = ix.by_respondent.get((tid, m), [])
    # the region-blur cells where the task has them; else (a whole-image-only task: vsi.mmstar, or
    # perturbation=whole) the whole-image cells; a respondent asked without the image
    # (M[image_withheld]) has only its [image_withheld] cell: so that every VSI respondent has headline rows
    cell = next((c for c in ("[region", "[whole", "[image_withheld") if any(c in r.metric for r in mine)), "[region")
    for r in mine:
        met = r.metric
        if cell not in met:
            continue
        if met.startswith("insensitive_frac@0.05["):
            h = _make(ix, tid, m, met, "insensitive fraction (VSI < 0.05 nats; lower = more use of the image)",
                      source="seed 002 §2.2")
            if h is not None and _finite(h.value) and h.value >= 1.0:
                h = HeadlineRow(**{**h.__dict__, "flags": h.flags + ("every sample insensitive",)})
            out.append(h)
        elif met.startswith("vsi_median["):
            h = _make(ix, tid, m, met, "median VSI (nats)", proportion=False, source="seed 002 §2.2")
            if h is not None:
                # undefined: the row's note says why (e.g. no clean record to pair with), not an empty IQR
                extra = (f"IQR [{fmt(r.ci_low)}, {fmt(r.ci_high)}] nats (quartiles, not a CI)" if _finite(h.value)
                         else r.note or "no sample to compute it on")
                out.append(HeadlineRow(**{**h.__dict__, "ci_low": None, "ci_high": None, "extra": extra}))
        elif met.startswith("argmax_change_rate["):
            out.append(_make(ix, tid, m, met, "argmax change rate", source="seed 002 §2.4"))
        elif met.startswith("auroc_vsi["):
            h = _make(ix, tid, m, met, "AUROC of -VSI for errors", floor=0.5, floor_label="chance 0.5",
                      proportion=False, source="seed 002 §4")
            if h is not None and h.n_null:  # why its n (null) differs from vsi_median's (docs/metrics.md)
                h = HeadlineRow(**{**h.__dict__, "extra": "n: samples with a parsed clean answer; null: "
                                                          "unparsed (VSI rows need no parsed answer)"})
            out.append(h)
    return out


TASK_RULES = {
    **{base: _panel_classification for base in PANEL_CLASSIFICATION_TASKS},
    **{base: _mark_color for base in MARK_KERNEL_IDS},  # every kernel odd-one-out task, one rule
    "similarity.chart.series_count": _series,
    CATEGORY_MEAN_TASK: _category_mean,
    "similarity.nat.things_ooo": _things,
    "shape_bias.nat.cue_conflict": _cue_conflict,
}


def headline_rows(rows: Iterable[ScoreRow]) -> list[HeadlineRow]:
    """Headline rows for every non-human respondent in ``rows``, in task then model order
    of first appearance.  Tasks without a declared rule contribute nothing (their rows
    stay in scores.csv)."""
    ix = _Index(rows)
    out: list[HeadlineRow] = []
    for tid, models in ix.models_by_task.items():
        base = tid.split("@", 1)[0]
        if base in TASK_RULES:
            rule = TASK_RULES[base]
        elif base.startswith("salbench."):
            rule = _salbench
        elif base.startswith("vsi."):
            rule = _vsi
        else:
            continue
        for m in models:
            out += [h for h in rule(ix, tid, m) if h is not None]
    return out


def reference_notes(heads: Iterable[HeadlineRow]) -> dict[tuple[str, str], str]:
    """``{(base task, metric): "floor = ...; ceiling = ..."}``: what each headline row's floor (or
    chance level) and ceiling are, in the words of the rule that set them (its ``floor_label`` and
    ``ceiling_label``), once per base task and metric in the rows' order; a metric whose rule
    declares no floor says so (``floor: none declared``).  The one source of these definitions for
    the terminal table, the report's cards and its Markdown summary (SalBench exact match: the
    majority-answer floor, from :func:`_salbench`)."""
    out: dict[tuple[str, str], str] = {}
    for h in heads:
        if h.metric == "skipped" or (h.base_task, h.metric) in out:
            continue
        floor = f"floor = {h.floor_label}" if h.floor_label else "floor: none declared"
        out[(h.base_task, h.metric)] = floor + (f"; ceiling = {h.ceiling_label}" if h.ceiling_label else "")
    return out


def absent_cell_text(ran: set[tuple[str, str]], task_id: str, model: str) -> str:
    """What the model x task matrix prints where ``model`` has no headline row for a column of
    ``task_id`` (``ran``: the (task_id, model) pairs with a headline row, :func:`tasks_run`):
    ``"n/a"`` when the model has other headline rows for the task (it ran the task without that
    cell: a respondent asked without the image, ``M[image_withheld]``, has only its
    ``[image_withheld]`` cell), ``"not run"`` when it has none."""
    return "n/a" if (task_id, model) in ran else "not run"


def tasks_run(heads) -> set[tuple[str, str]]:
    """The (task_id, model) pairs of headline rows ``heads`` (:class:`HeadlineRow` s), built once
    per matrix, for :func:`absent_cell_text` (a lookup per absent cell, not a scan of every row)."""
    return {(h.task_id, h.model) for h in heads}


def fmt(x, digits: int = 3, sign: bool = False) -> str:
    """A number for the table with ``digits`` decimals: '-' for None, 'nan' for NaN; ``sign``:
    always a sign ('+0.120').  A value that rounds to zero prints without a minus ('0.000',
    never '-0.000': a bootstrap bound of -1e-17 is zero to the shown precision)."""
    if x is None:
        return "-"
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    s = f"{x:{'+' if sign else ''}.{digits}f}"
    if s.startswith("-") and not s.strip("-0."):  # rounds to zero
        s = ("+" if sign else "") + s[1:]
    return s


def fmt_p(p) -> str:
    """A p-value for a table: '-' for None or NaN, '< 0.001' below 0.001, else three decimals."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "-"
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def value_text(h: HeadlineRow) -> str:
    """'0.684 [0.577, 0.787]' (value and its 95% bootstrap CI)."""
    if h.metric == "skipped":
        return "skipped"
    if not _finite(h.value):
        return "undefined"
    d = 0 if h.metric == "capacity_k" and _finite(h.value) and float(h.value).is_integer() else 3
    s = fmt(h.value, d)
    if h.ci_low is not None:
        s += f" [{fmt(h.ci_low, d)}, {fmt(h.ci_high, d)}]"
    return s


def cell_mark(h: HeadlineRow) -> str:
    """What a matrix cell must show beside its value so that a number resting on few answers
    is not read as a full result: '76/80 null' when more than :data:`MAX_NULL_RATE` of the
    respondent's trials were null (the value rests on the others; SalBench counts a null as
    an empty answer), else 'n=12' under :data:`MIN_N` scored trials, else ''; 'all null'
    when no trial gave a parseable answer (every task family)."""
    if h.metric == "skipped":
        return ""
    return thin_evidence(h.n, h.n_null, h.trials)


def thin_evidence(n: int | None, n_null: int | None, trials: tuple[int, int] | None) -> str:
    """The one rule that marks a value resting on few answers, in the matrix (:func:`cell_mark`)
    and in every figure (hollow marker, this text beside it, the ``evidence`` column of the
    figure's tidy data): 'all null' when no trial gave a parseable answer (``n`` = 0 with nulls,
    or every one of the respondent's ``trials`` null); '76/80 null' when more than
    :data:`MAX_NULL_RATE` of the respondent's trials on the task were null; 'n=12' when the
    value rests on fewer than :data:`MIN_N` scored trials; '' otherwise.

    ``n``, ``n_null``: the row's scored and null trials; ``trials``: (null trials, all trials) of
    the respondent on the task, from its ``null_rate`` row, or None where there is none."""
    if (n == 0 and n_null) or (trials is not None and trials[1] and trials[0] == trials[1]):
        return "all null"
    if trials is not None and trials[1] and trials[0] / trials[1] > MAX_NULL_RATE:
        return f"{trials[0]}/{trials[1]} null"
    if n is not None and n < MIN_N:
        return f"n={n}"
    return ""


MARK_LEGEND = (f"'· 76/80 null': 76 of the model's 80 trials gave no parseable answer (more than "
               f"{MAX_NULL_RATE:.0%}): the value rests on the parsed answers only (SalBench: counts the nulls as "
               f"empty, wrong answers); "
               f"'· n=12': fewer than {MIN_N} scored trials")
"""The legend of :func:`cell_mark`, printed under the matrix (HTML) and the table (Markdown)."""


def cell_text(h: HeadlineRow) -> str:
    """:func:`value_text` and, when there is one, the :func:`cell_mark`: '0.000 [0.000, 0.000] · 76/80 null'."""
    mark = cell_mark(h)
    return value_text(h) + (f" · {mark}" if mark else "")


def ratio_text(h: HeadlineRow) -> str:
    if h.ratio is None:
        return "-"
    return fmt(h.ratio, 2) + (" (above ceiling)" if "above ceiling" in h.flags else
                               " (CI includes the ceiling)" if h.ratio > 1 else "")
