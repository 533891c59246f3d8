"""A paper's published numbers beside a run's (issue 22 item 6; ``perceptbench paper``).

For each number of :mod:`perceptbench.published` this finds the run's score row that measures
the same thing and gives both values and their difference (run minus paper, in perceptbench's
unit), or says why the run cannot cover it.  Nothing here changes a score: the published numbers
are only printed beside the run's.

Matching, in order (:func:`compare`):

1. *task*: the run's task ids whose base id (before ``@``) is the number's ``task_id``; none ->
   ``task not run`` (an empty ``task_id`` -> ``no perceptbench task``).
2. *setting*: each of the number's ``settings`` must be the task's own setting (its id's, else
   the task's default); none of the run's instances has them -> ``different setting``.  A run
   setting the number does not name and that is not the task's default (``n=40``: a subsample)
   is kept as a caveat on a compared row.
3. *respondent*: ``run_model`` when the file gives one (``human:panel``, ``all-models``,
   ``all-pairs``; ``*`` = any respondent's row), else the run's models that the paper's ``model``
   names (:func:`paper_names`): a model whose ``run.json`` entry declares that ``seed_name``, a
   model named like an entry of the paper's packaged roster (``models/rosters/seedNNN*.toml``)
   with that ``seed_name``, or a model whose own name is the paper's name (case, spaces,
   ``-``, ``_`` and ``.`` ignored).  None -> ``model not in run``.
4. *metric*: the row of that metric (``METRIC#n``: that row's ``n``); no row, or a NaN value ->
   ``metric not computed`` (with the row's note).
5. *population*: a number about many models (``population`` ``45 models``) is compared only when
   the run has that many of the paper's models; else ``different population`` (the run's value
   is still shown).

Imports no torch (the task registry and the roster loader read no model code).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from ..core.rows import ScoreRow
from ..published import PublishedNumber

__all__ = ["STATUSES", "Comparison", "RunComparison", "compare", "compare_run", "paper_names", "respondent_text",
           "task_settings", "uncovered_groups"]

STATUSES = ("compared", "different population", "different setting", "metric not computed", "model not in run",
            "task not run", "no perceptbench task")
"""The status of a comparison, best first: ``compared`` (both values, and the difference) and
``different population`` (both values, not the same population) have a run value; the others say
why there is none."""


@dataclass
class Comparison:
    """One published number and what the run has for it.

    ``run_model``/``run_task``: the run's respondent and task id compared (empty when none);
    ``run_value``: in perceptbench's unit, None when the run has none; ``difference`` = run value
    minus the published value x scale (None unless both exist); ``reason``: why the status, or a
    caveat on a compared row."""

    published: PublishedNumber
    status: str
    run_task: str = ""
    run_model: str = ""
    run_value: float | None = None
    run_ci: tuple[float | None, float | None] = (None, None)
    reason: str = ""

    @property
    def difference(self) -> float | None:
        if self.run_value is None or not math.isfinite(self.run_value):
            return None
        return round(self.run_value - self.published.scaled, 12)

    @property
    def covered(self) -> bool:
        """Whether the run has a value for the number (``compared`` or ``different population``)."""
        return self.run_value is not None

    def as_dict(self) -> dict:
        """A flat dict (the JSON/CSV output of ``perceptbench paper``)."""
        p = self.published
        return {"paper": p.seed, "section": p.section, "task_id": p.task_id,
                "settings": ";".join(f"{k}={v}" for k, v in p.settings.items()), "paper_model": p.model,
                "metric": p.metric, "paper_value": p.value, "paper_ci_low": p.ci_low, "paper_ci_high": p.ci_high,
                "scale": p.scale, "paper_value_scaled": round(p.scaled, 12), "run_task": self.run_task,
                "run_model": self.run_model, "run_value": self.run_value, "run_ci_low": self.run_ci[0],
                "run_ci_high": self.run_ci[1], "difference": self.difference, "status": self.status,
                "reason": self.reason, "population": p.population, "paper_note": p.note, "line": p.line}


def _norm(name: str) -> str:
    return re.sub(r"[\s._-]+", "", name.lower())


def task_settings(task_id: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """(base id, effective settings, settings the id itself names) of a run's task id: the
    effective ones from the task registry (its defaults filled in), else the id's own."""
    from ..tasks import get_task, parse_task_id

    base, own = parse_task_id(task_id)
    try:
        eff = {k: str(v) for k, v in get_task(task_id).params.items()}
    except (KeyError, ValueError, TypeError):
        eff = dict(own)
    return base, eff, own


def _same_setting(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return a.strip() == b.strip()


def _roster_names(paper: str) -> dict[str, set[str]]:
    """``{roster entry name: {normalised seed_name}}`` over the packaged rosters of ``paper``
    (``seed001`` -> ``seed001.toml``, ``seed001-backbones.toml``)."""
    from ..models.roster import load_roster, packaged_rosters

    out: dict[str, set[str]] = {}
    for rname in packaged_rosters():
        if rname == paper or rname.startswith(paper + "-"):
            for e in load_roster(rname).entries:
                if e.seed_name:
                    out.setdefault(e.name, set()).add(_norm(e.seed_name))
    return out


def paper_names(paper: str, run_models: Iterable[str], declared: Mapping[str, Mapping] | None) -> dict[str, set[str]]:
    """``{run model: normalised names the paper may call it}``: the ``seed_name`` its
    ``run.json`` entry declares, the ``seed_name`` of the packaged roster entries of ``paper``
    (:func:`_roster_names`) that bear its name, and its own name.  Names are compared with case,
    spaces, ``-``, ``_`` and ``.`` ignored."""
    by_name = _roster_names(paper)
    out = {}
    for m in run_models:
        names = {_norm(m)} | by_name.get(m, set())
        entry = (declared or {}).get(m)
        if isinstance(entry, Mapping) and isinstance(entry.get("seed_name"), str) and entry["seed_name"]:
            names.add(_norm(entry["seed_name"]))
        out[m] = names
    return out


@dataclass
class _Run:
    rows: dict = field(default_factory=dict)       # (task, model, metric) -> ScoreRow
    tasks: dict = field(default_factory=dict)      # base -> [task ids]
    models: list = field(default_factory=list)     # the run's model respondents (not human, not aggregate)


def _index(rows: list[ScoreRow]) -> _Run:
    from ..core.rows import is_aggregate_model

    run = _Run()
    models = set()
    for r in rows:
        run.rows[(r.task_id, r.model, r.metric)] = r
        base = r.task_id.partition("@")[0]
        if "~" not in base:
            run.tasks.setdefault(base, [])
            if r.task_id not in run.tasks[base]:
                run.tasks[base].append(r.task_id)
        if not r.model.startswith("human:") and not is_aggregate_model(r.model) and not r.model.startswith(
                "published:"):
            models.add(r.model)
    run.models = sorted(models)
    return run


def _value(row: ScoreRow, count: bool) -> float | None:
    v = row.n if count else row.value
    if v is None:
        return None
    return float(v)


def compare(published: list[PublishedNumber], rows: list[ScoreRow],
            declared: Mapping[str, Mapping] | None = None) -> list[Comparison]:
    """Each published number beside the run's value (rules in the module docstring), in the
    published file's order.  ``rows``: the run's score rows; ``declared``: ``run.json``'s
    ``models`` object (may be None)."""
    run = _index(rows)
    paper = published[0].seed if published else ""
    names = paper_names(paper, run.models, declared)
    # the paper's models: those its numbers name and those its packaged rosters list
    paper_models = {_norm(p.model) for p in published} - {"human", "all"}
    paper_models |= set().union(*_roster_names(paper).values()) if paper else set()
    n_paper_models = sum(1 for m in run.models if names[m] & paper_models)
    settings_cache: dict[str, tuple] = {}
    out = []
    for p in published:
        out.append(_compare_one(p, run, names, n_paper_models, settings_cache))
    return out


def _compare_one(p: PublishedNumber, run: _Run, names, n_paper_models: int, cache) -> Comparison:
    if not p.task_id:
        why = (f"pooled over the paper's {p.population}; the run's rows are per task" if p.population
               else "perceptbench has no task for it")
        return Comparison(p, "no perceptbench task", reason=why)
    tids = run.tasks.get(p.task_id, [])
    if not tids:
        return Comparison(p, "task not run", reason=f"the run has no {p.task_id} task")
    fitting, caveats = [], {}
    for tid in tids:
        if tid not in cache:
            cache[tid] = task_settings(tid)
        _, eff, own = cache[tid]
        if all(k in eff and _same_setting(eff[k], v) for k, v in p.settings.items()):
            fitting.append(tid)
            extra = {k: v for k, v in own.items() if k not in p.settings}
            caveats[tid] = ("run setting " + ",".join(f"{k}={v}" for k, v in extra.items())
                            + " (not the task's default)") if extra else ""
    if not fitting:
        want = ",".join(f"{k}={v}" for k, v in p.settings.items())
        return Comparison(p, "different setting", reason=f"the paper's {p.task_id} is at {want}; the run has "
                                                         + ", ".join(tids))
    metric, count = (p.metric[:-2], True) if p.metric.endswith("#n") else (p.metric, False)
    # respondents
    if p.run_model:
        candidates = [(tid, m) for tid in fitting for (t, m, mm) in run.rows if t == tid and mm == metric
                      and (p.run_model == "*" or m == p.run_model)]
        if p.run_model == "*":
            candidates = candidates[:1]
        if not candidates:
            who = "any respondent" if p.run_model == "*" else p.run_model
            return Comparison(p, "metric not computed", run_task=fitting[0],
                              reason=f"no row of {who}" + _population_reason(p, n_paper_models, "; "))
    else:
        want = _norm(p.model)
        matched = [m for m in run.models if want in names[m]]
        if not matched:
            return Comparison(p, "model not in run",
                              reason=f"no model of the run is declared as (or named) {p.model!r}")
        candidates = [(tid, m) for tid in fitting for m in matched]
        found = [(tid, m) for tid, m in candidates if (tid, m, metric) in run.rows]
        if not found:
            tid, m = candidates[0]
            return Comparison(p, "metric not computed", run_task=tid, run_model=m, reason=f"no row of {m}")
        candidates = found
    tid, m = candidates[0]
    row = run.rows[(tid, m, metric)]
    v = _value(row, count)
    if v is None or not math.isfinite(v):
        return Comparison(p, "metric not computed", run_task=tid, run_model=m,
                          reason=f"undefined in the run: {row.note}" if row.note else "undefined in the run")
    ci = (None, None) if count else (row.ci_low, row.ci_high)
    reason = caveats.get(tid, "")
    if len(candidates) > 1:
        reason = "; ".join(x for x in (reason, f"{len(candidates)} rows fit, the first is shown") if x)
    if _population_reason(p, n_paper_models):
        return Comparison(p, "different population", tid, m, v, ci,
                          _population_reason(p, n_paper_models) + (f"; {reason}" if reason else ""))
    return Comparison(p, "compared", tid, m, v, ci, reason)


def _population_reason(p: PublishedNumber, n_paper_models: int, sep: str = "") -> str:
    """Why a number about many models is not the run's: empty when the number has no population
    or the run has as many of the paper's models."""
    size = p.population_size
    if size is None or n_paper_models >= size:
        return ""
    return f"{sep}the paper's value is over its {p.population}; the run has {n_paper_models} of them"


@dataclass
class RunComparison:
    """:func:`compare_run`'s answer: the comparisons, and the run's task ids and model names (the
    respondents that are neither human nor aggregate), for the header of a printout."""

    comparisons: list[Comparison]
    run_tasks: list[str]
    run_models: list[str]


def compare_run(paper: str, run: str | Path) -> RunComparison:
    """:func:`compare` for a packaged paper (or a published-number file) and a run directory (or
    its ``records.jsonl``): the run's ``scores.json`` when current, else its records scored again,
    and ``run.json``'s ``models``.  Raises ValueError for an unknown paper, RecordError for a
    missing or invalid run."""
    from ..core.rundir import RunDir
    from ..published import load_published
    from ..runs import records_path
    from .data import load_report_data

    published = load_published(paper)
    data = load_report_data([run])
    rj = RunDir.beside(records_path(run)).run_json
    declared = None
    if rj.is_file():
        try:
            declared = json.loads(rj.read_text()).get("models")
        except (json.JSONDecodeError, AttributeError):
            declared = None
    idx = _index(data.scores)
    return RunComparison(compare(published, data.scores, declared if isinstance(declared, Mapping) else None),
                         sorted({t for ts in idx.tasks.values() for t in ts}), idx.models)


def respondent_text(c: Comparison) -> str:
    """Who the paper's number and the run's value are about, for a printed table: ``"GPT-4o ->
    mine"``; a number the file says any respondent's row gives (``run_model`` ``*``: a position
    floor, a property of the task's stimuli) reads ``"any respondent (the row of
    efficientnet-lite0)"``, not the paper's ``human`` beside a model it is not about."""
    if c.published.run_model == "*":
        return f"any respondent (the row of {c.run_model})"
    return f"{c.published.model} -> {c.run_model}"


def uncovered_groups(comparisons: list[Comparison]) -> list[tuple[str, str, int, str]]:
    """The numbers the run has no value for, grouped for reading: ``(status, what, count,
    sections)`` in :data:`STATUSES` order.  ``task not run`` is grouped by task,
    ``no perceptbench task`` by section, ``model not in run`` by task and paper model,
    ``metric not computed`` and ``different setting`` by task, metric and reason (each is specific)."""
    groups: dict[tuple[str, str], list[Comparison]] = {}
    for c in comparisons:
        if c.covered:
            continue
        p = c.published
        if c.status == "task not run":
            what = p.task_id
        elif c.status == "no perceptbench task":
            what = c.reason
        elif c.status == "model not in run":
            what = f"{p.task_id}: {p.model}"
        else:
            what = f"{p.task_id or '-'} {p.metric}: {c.reason}"
        groups.setdefault((c.status, what), []).append(c)
    order = {s: i for i, s in enumerate(STATUSES)}
    out = []
    for (status, what), cs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        sections = list(dict.fromkeys(part.strip() for c in cs for part in c.published.section.split(";")))
        out.append((status, what, len(cs), "; ".join(sections)))
    return out
