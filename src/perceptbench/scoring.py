"""Records -> score rows.  Reads nothing but trial records (no sources, no models, no
torch): re-scoring never re-runs a model."""

from __future__ import annotations

import csv
import dataclasses
import gc
import itertools
import json
import math
import operator
import os
from collections import defaultdict
from pathlib import Path

import numpy as np

from .readouts.parse import MODES as PARSER_MODES
from .records import RecordError, TrialRecord, score_correct
from .tasks import get_task
from .core.rows import ScoreRow
from .core.rundir import RunDir, atomic_write, scores_json_for, write_atomic

__all__ = ["PARSER_MODES", "apply_parser_mode", "holds_given_answer", "reparse_columns", "score_records", "score_file", "write_scores"]


def _parse_meta(r: TrialRecord) -> dict:
    return (r.run_meta.model_extra or {}).get("parse") or {}


#: readouts whose records hold a model's free-text answer, re-parsed under the parser mode:
#: battery prompts and VSI clean greedy answers; of the perturbed VSI records, the image-withheld
#: ones that recorded their answer (:func:`perceptbench.vsi.samples.holds_answer`), the blurred ones none
ANSWER_READOUTS = ("vlm_prompt", "vlm_vsi_clean")


def holds_given_answer(r: TrialRecord) -> bool:
    """Whether record ``r`` holds a VLM's free-text answer as given, the one scoring re-parses under
    the parser mode and the report lists among its answers: a battery prompt's answer or a VSI
    greedy answer (clean, or given without the image: :func:`perceptbench.vsi.samples.holds_answer`),
    not skipped."""
    from .vsi.samples import holds_answer

    if r.readout == "vlm_vsi_perturbed":
        return holds_answer(r)
    return r.readout in ANSWER_READOUTS and not (r.run_meta.model_extra or {}).get("skipped")


def apply_parser_mode(records: list[TrialRecord], mode: str) -> list[TrialRecord]:
    """Re-parse every VLM answer (:func:`holds_given_answer`: battery prompts and VSI greedy answers,
    clean or given without the image, not skipped) from its ``raw_output`` under parser ``mode`` (one of
    :data:`PARSER_MODES`: ``default``, ``strict``, ``seed``; see :mod:`perceptbench.readouts`)
    with its task's ``parse_record``; ``response``, ``correct`` and ``run_meta.parse`` are replaced, and
    ``run_meta.parse["recorded_response_differs"]`` says whether the new response differs
    from the one in the record.  Other records are returned unchanged.  Reads nothing but
    the records (no model call).  Raises ValueError for an unknown mode."""
    if mode not in PARSER_MODES:
        raise ValueError(f"parser mode {mode!r} not in {PARSER_MODES}")
    tasks: dict = {}
    parsed: dict = {}  # (task_id, parse key) -> (response, meta): each distinct answer parsed once
    out = []
    for r in records:
        if not holds_given_answer(r):
            out.append(r)
            continue
        task = tasks.get(r.task_id) or tasks.setdefault(r.task_id, get_task(r.task_id))
        key = task.parse_key(r)
        if key is None:
            response, meta = task.parse_record(r, mode=mode)
        else:
            hit = parsed.get((r.task_id, key))
            if hit is None:
                hit = parsed[(r.task_id, key)] = task.parse_record(r, mode=mode)
            response, meta = _fresh(hit)  # each record owns its response and meta
        meta["recorded_response_differs"] = not _same_answer(response, r.response)
        run_meta = r.run_meta.model_copy(update={"parse": meta})
        out.append(r.model_copy(update={"response": response, "run_meta": run_meta,
                                        "correct": score_correct(response, r.ground_truth)}))
    return out


def _fresh(v):
    """A copy of ``v`` whose dicts and lists (at any depth, also inside tuples) are new objects,
    everything else shared (parse results hold JSON-like values; copy.deepcopy's memo made it 86%
    of re-parsing)."""
    if isinstance(v, dict):
        return {k: _fresh(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_fresh(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_fresh(x) for x in v)
    return v


def _same_answer(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return sorted(a) == sorted(b)
    return a == b


#: parse counts reported per (task, VLM): metric -> (predicate on run_meta.parse, note)
PARSE_COUNTS = {
    "n_ambiguous": (lambda p: bool(p.get("ambiguous")), "answers naming more than one in-set option"),
    "n_unclosed_reasoning": (lambda p: p.get("null_reason") == "unclosed_reasoning",
                             "reasoning block never closed (token budget): null"),
    "n_multiple_answer_markers": (lambda p: bool(p.get("multiple_answer_markers")),
                                  "several answer markers; the last one stands"),
    "n_reparsed_changed": (lambda p: bool(p.get("recorded_response_differs")),
                           "re-parsed response differs from the one recorded at run time"),
}


def _parse_rows(task_id: str, records: list[TrialRecord], mode: str) -> list[ScoreRow]:
    by_model: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        if holds_given_answer(r):
            by_model[r.model].append(r)
    rows = []
    for m, rs in sorted(by_model.items()):
        n_null = sum(r.response is None for r in rs)
        for metric, (pred, note) in PARSE_COUNTS.items():
            rows.append(ScoreRow(task_id, m, metric, float(sum(pred(_parse_meta(r)) for r in rs)), None, None,
                                 len(rs), n_null, f"{note}; parser mode {mode}"))
    return rows


def reparse_columns(c, task, mode: str):
    """:func:`apply_parser_mode` and the parse-count rows (:data:`PARSE_COUNTS`) on columns
    (:class:`perceptbench.record_table.TaskColumns` of one task whose ``task.parses_raw_output``, or a
    VSI task whose parse reads the ``run_meta`` keys it declares, ``task.parse_meta_keys``, read with
    the columns by :func:`perceptbench.vsi.samples.read_vsi_columns`):
    every answer record's response (readout in :data:`ANSWER_READOUTS`, not skipped: ``c.skipped``; on VSI
    columns the greedy answers, ``c.vsi.answered``, image-withheld ones included)
    is ``task.parse_answer`` of its ``raw_output`` text under ``mode`` (``task.parse_clean`` of the
    text and those keys' values), parsed once per distinct text (and values), ``correct``
    recomputed (:func:`~perceptbench.records.score_correct`) once per distinct (response, ground
    truth) pair.  Returns (columns with the new ``response`` and ``correct``, parse-count rows
    per model sorted by name): the same responses and rows the record path gives.  Raises
    ValueError for an unknown mode, or for meta keys to read on columns without VSI fields."""
    import dataclasses

    from .record_table import canonical_answer

    if mode not in PARSER_MODES:
        raise ValueError(f"parser mode {mode!r} not in {PARSER_MODES}")
    if c.vsi is not None:  # VSI columns: the greedy answers (clean, and given without the image)
        sel = np.flatnonzero(c.vsi.answered)
    else:
        answer = np.isin(c.readout, [c.readouts.index(x) for x in ANSWER_READOUTS if x in c.readouts])
        sel = np.flatnonzero(answer if c.skipped is None else answer & ~c.skipped)
    if not sel.size:
        return c, []
    values = list(c.values)
    codes = {canonical_answer(v): i for i, v in enumerate(values)}

    def code(v) -> int:
        k = canonical_answer(v)
        if k not in codes:
            codes[k] = len(values)
            values.append(v)
        return codes[k]

    keys = () if task.parses_raw_output else tuple(getattr(task, "parse_meta_keys", ()))
    if not keys:
        texts, inv = np.unique(c.raw[sel], return_inverse=True)
        parsed = [task.parse_answer(c.raws[t], mode=mode) for t in texts.tolist()]
    else:  # the text and the values of the meta keys the parse reads, each distinct combination once
        if c.vsi is None:
            raise ValueError(f"{c.task_id}: its parse reads run_meta {list(keys)}, which these columns do not hold")
        extras = [c.vsi.extras[k] for k in keys]
        combos, inv = np.unique(np.stack([c.raw[sel], *(codes[sel] for codes, _ in extras)], 1), axis=0,
                                return_inverse=True)
        inv = inv.reshape(-1)
        parsed = [task.parse_clean(c.raws[t], {k: values[v] for k, (_, values), v in zip(keys, extras, vs)
                                               if values[v] is not None}, mode)
                  for t, *vs in combos.tolist()]
    new = np.array([code(resp) for resp, _ in parsed], np.int32)[inv]
    old = c.response[sel]

    def per_pair(a: np.ndarray, b: np.ndarray, f) -> np.ndarray:
        """f(values[a], values[b]) per record, computed once per distinct (a, b) pair."""
        pairs, back = np.unique(a.astype(np.int64) << 32 | b.astype(np.int64), return_inverse=True)
        return np.array([f(values[int(p >> 32)], values[int(p & 0xFFFFFFFF)]) for p in pairs.tolist()])[back]

    corr = per_pair(new, c.ground_truth[sel], lambda r, g: -1 if score_correct(r, g) is None
                    else int(score_correct(r, g))).astype(np.int8)
    differs = per_pair(new, old, lambda a, b: not _same_answer(a, b)).astype(bool)
    response, correct = c.response.copy(), c.correct.copy()
    response[sel], correct[sel] = new, corr
    out = dataclasses.replace(c, response=response, correct=correct, values=values)
    # parse counts per model over its re-parsed answers: each predicate once per distinct (text, differs)
    kinds, back = np.unique(inv.astype(np.int64) * 2 + differs, return_inverse=True)
    metas = [{**parsed[k // 2][1], "recorded_response_differs": bool(k % 2)} for k in kinds.tolist()]
    flags = {metric: np.array([bool(pred(meta)) for meta in metas])[back] for metric, (pred, _) in PARSE_COUNTS.items()}
    null = np.array([resp is None for resp, _ in parsed])[inv]
    model = c.model[sel]
    k = len(c.models)
    n_of, null_of = np.bincount(model, minlength=k), np.bincount(model, weights=null, minlength=k)
    count_of = {metric: np.bincount(model, weights=f, minlength=k) for metric, f in flags.items()}
    rows = []
    for m in sorted(np.flatnonzero(n_of).tolist(), key=lambda x: c.models[x]):
        for metric, (_, note) in PARSE_COUNTS.items():
            rows.append(ScoreRow(c.task_id, c.models[m], metric, float(count_of[metric][m]), None, None,
                                 int(n_of[m]), int(null_of[m]), f"{note}; parser mode {mode}"))
    return out, rows


def prepare_records(records: list[TrialRecord], parser_mode: str = "default",
                    vote: bool = True) -> list[TrialRecord]:
    """The records every scorer sees (scores, report figures, paired differences): VLM raw
    outputs re-parsed under ``parser_mode`` (:func:`apply_parser_mode`), two prompt
    versions of one task and model split into two respondents
    (:func:`perceptbench.provenance.split_prompt_versions`; never pooled) and, with ``vote``, the
    repetitions of a ``--repetitions`` run replaced by their majority vote
    (:func:`perceptbench.scorers.repetitions.aggregate_repetitions`; a no-op without repetitions)."""
    from .provenance import split_prompt_versions
    from .scorers.repetitions import aggregate_repetitions

    records, _ = split_prompt_versions(apply_parser_mode(records, parser_mode))
    return aggregate_repetitions(records) if vote else records


def score_records(records: list[TrialRecord], seed: int | None = None, parser_mode: str = "default",
                  features_dir: str | os.PathLike | None = None,
                  families: dict[str, str] | None = None,
                  models: dict[str, dict] | None = None, judgments: dict[str, dict] | None = None,
                  pairs: str = "auto") -> list[ScoreRow]:
    """Score every task present in ``records``.

    The bootstrap seed is ``seed`` if given, else the records' ``run_meta.seed`` (which
    must be unique per task; ValueError otherwise).  Every VLM answer is re-parsed from its
    ``raw_output`` under ``parser_mode`` (``default``, ``strict``: ambiguous answers null,
    ``seed``: the seed's literal rule; see :func:`apply_parser_mode`).  Records of one task and
    model written under two prompt versions are scored as two respondents
    (:func:`perceptbench.provenance.split_prompt_versions`).  The suite analyses
    (:data:`perceptbench.analyses.SUITE_ANALYSES`, e.g. the cross-task VSI analyses) follow the
    per-task rows; ``features_dir`` holds the cached probe features (``<run>/features``) for the
    encoder-LLM gap rows; ``families`` ({model: family}) tags model families for the same- vs
    cross-family agreement means; ``models`` ({model: declared metadata}, run.json ``models``)
    feeds the per-family and per-objective cross-model summaries; ``judgments`` ({trial_id:
    judgment}, :func:`perceptbench.vsi.judge.read_judgments`) a judge model's verdicts, scored by
    the tasks that have a judge reading (``score_judged``: HallusionBench's ``@judge`` rows) after
    their own rows; ``pairs`` which model pairs the suite analyses' per-pair rows compare
    (:data:`perceptbench.scorers.pairs.PAIR_MODES`, ``score --pairs``)."""
    by_task: dict[str, list[TrialRecord]] = defaultdict(list)
    for r in records:
        by_task[r.task_id].append(r)
    return _score_tasks(((t, by_task.pop(t)) for t in sorted(by_task)), seed, parser_mode, features_dir,
                        families, models, judgments, pairs)


def _score_tasks(tasks, seed: int | None, parser_mode: str,
                 features_dir: str | os.PathLike | None,
                 families: dict[str, str] | None = None,
                 models: dict[str, dict] | None = None, judgments: dict[str, dict] | None = None,
                 pairs: str = "auto") -> list[ScoreRow]:
    """Score ``(task_id, records)`` pairs (sorted by task_id) one task at a time, then the suite
    analyses (:data:`perceptbench.analyses.SUITE_ANALYSES`, in registration order) over what each
    keeps of the tasks that take part in it (:meth:`~perceptbench.analyses.SuiteAnalysis.keep`:
    the records, or less; nothing else is kept).  A task comes as a record list or as columns."""
    from .analyses import SUITE_ANALYSES
    from .scorers.repetitions import aggregate_repetitions, repetition_rows

    analyses = [(cls(), []) for _, cls in SUITE_ANALYSES]
    rows: list[ScoreRow] = []

    def take_part(recs) -> None:  # each analysis keeps what it needs of a task that takes part
        for analysis, kept in analyses:
            if analysis.takes_part(recs):
                kept += analysis.keep(recs)

    try:
        for task_id, recs in tasks:
            if not isinstance(recs, list):  # columns (score_file): VLM answers re-parsed on them, nothing to split
                s = seed if seed is not None else _task_seed(task_id, np.unique(recs.seed).tolist())
                task = get_task(task_id)
                recs, parse_rows = reparse_columns(recs, task, parser_mode)
                rows += task.score_columns(recs, s) + parse_rows
                take_part(recs)
                continue
            recs = prepare_records(recs, parser_mode, vote=False)  # re-parsed; prompt versions never pooled
            parse_rows = _parse_rows(task_id, recs, parser_mode)  # over every repetition's answer
            recs = aggregate_repetitions(recs)  # repetitions -> their majority vote (none: unchanged)
            # The records just prepared live until scoring ends and hold no reference cycles: moved out
            # of the cyclic garbage collector's view (reference counting still frees them), since
            # every collection scanned all records held, a cost growing with the file (the VSI tasks'
            # scoring grew x5.1 for x3.2 records, issue 25).  Undone below.
            gc.freeze()
            s = seed if seed is not None else _task_seed(task_id, (r.run_meta.seed for r in recs))
            task = get_task(task_id)
            rows += task.score(recs, s)
            rows += parse_rows + repetition_rows(task_id, recs)
            if judgments and hasattr(task, "score_judged"):  # a judge model's reading, after the task's own rows
                rows += task.score_judged(recs, s, judgments)
            take_part(recs)
        task_rows = list(rows)
        for analysis, kept in analyses:
            rows += analysis.rows(kept, seed=seed, features_dir=features_dir, families=families,
                                  task_rows=task_rows, models=models, pairs=pairs)
    finally:
        gc.unfreeze()
    return rows


def _score_columns(columns, seed: int | None, parser_mode: str, features_dir, families,
                   models: dict[str, dict] | None = None, judgments: dict[str, dict] | None = None,
                   pairs: str = "auto") -> list[ScoreRow]:
    """Score a file read by :func:`perceptbench.record_table.read_columns`: a task whose
    records need nothing but their columns (``columns.simple``: no VSI or skipped record, no
    repeated VLM trial, one prompt version per model), whose VLM answers, if any, its parser reads
    from ``raw_output`` alone (``parses_raw_output``; re-parsed on the columns by
    :func:`reparse_columns`), with no judge reading to add, and whose task has ``score_columns``
    is scored from the columns (no record object is built); so is a VSI task whose rows are the VSI
    rows alone (``task.scores_columns``), its records read into columns one at a time
    (:func:`perceptbench.vsi.samples.read_vsi_columns`); any other task is read back as
    records (:meth:`~perceptbench.record_table.ColumnarRecords.records`) and scored as
    :func:`score_records` does."""

    from .vsi.samples import read_vsi_columns

    def tasks():
        for task_id in sorted(columns):
            c = columns[task_id]
            task = get_task(task_id)
            if getattr(task, "scores_columns", False) and not (judgments and hasattr(task, "score_judged")):
                c = read_vsi_columns(columns, task_id)  # VSI records as columns (None: the record path)
                if c is not None:
                    yield task_id, c
                    continue
            elif columns.simple[task_id] and task.score_columns is not None and (
                    task.parses_raw_output or "vlm_prompt" not in c.readouts
                    or not (c.readout == c.readouts.index("vlm_prompt")).any()) and not (
                    judgments and hasattr(task, "score_judged")):
                yield task_id, c
                continue
            yield task_id, columns.records(task_id)

    return _score_tasks(tasks(), seed, parser_mode, features_dir, families, models, judgments, pairs)


def _task_seed(task_id: str, seeds) -> int:
    seeds = set(seeds)
    if len(seeds) != 1:
        raise ValueError(f"{task_id}: records carry several seeds {sorted(seeds)}; pass --seed")
    return seeds.pop()


def csv_cell(x, metric: str | None = None) -> str:
    """A ``scores.csv`` cell: '' for None, 'nan' for NaN, floats rounded to 6 decimals (their
    repr), anything else as ``str``; with ``metric`` a count (:data:`COUNT_METRIC_PREFIXES`),
    an integral float as an integer.  Pass ``metric`` for the value and interval cells only.
    The report's figure and table CSVs use it too, so their numbers read exactly as
    scores.csv's."""
    if metric is not None and metric.startswith(COUNT_METRIC_PREFIXES) and isinstance(x, float) and x.is_integer():
        x = int(x)
    if x is None:
        return ""
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        return repr(round(x, 6))
    return str(x)


COUNT_METRIC_PREFIXES = ("n_", "capacity_k", "replicates", "skipped", "signal_wins[", "reliability_",
                         "joint_error_grid[")
"""Metrics whose value (and interval) is a count: written to scores.csv as integers (``23``,
not ``23.0``) when integral."""

SCORE_VALUE_COLUMNS = ("value", "ci_low", "ci_high")
"""The columns :func:`csv_cell` writes as counts for a count metric."""


def _csv_column(values: list, metrics: list[str] | None = None) -> list[str]:
    """:func:`csv_cell` of every value of one scores.csv column (``metrics``: the rows' metrics,
    for the value and interval columns), with ``str`` and ``float`` cells written inline; any
    other cell, and a count metric's integral float, goes through :func:`csv_cell` itself."""
    if metrics is None:
        return [x if type(x) is str else int.__str__(x) if type(x) is int else "" if x is None else csv_cell(x)
                for x in values]
    counts = [m is not None and m.startswith(COUNT_METRIC_PREFIXES) for m in metrics]
    return [("nan" if x != x else repr(round(x, 6))) if type(x) is float and not (c and x.is_integer()) else
            "" if x is None else csv_cell(x, m) for x, c, m in zip(values, counts, metrics)]


_JSON_STR = json.encoder.encode_basestring_ascii  # what json.dumps writes for a str (ensure_ascii)


def _json_column(values: list) -> list[str]:
    """The JSON text ``json.dumps`` writes for each value of one scores.json field, a NaN float as
    ``null``: ``str``, ``float``, ``int`` and None inline, anything else through ``json.dumps``."""
    return [_JSON_STR(x) if type(x) is str else "null" if x is None else
            ("null" if x != x else float.__repr__(x) if x - x == 0 else json.dumps(x)) if type(x) is float else
            int.__repr__(x) if type(x) is int else
            json.dumps(None if isinstance(x, float) and math.isnan(x) else x) for x in values]


_FIELDS = tuple(f.name for f in dataclasses.fields(ScoreRow))
_JSON_ROW = "{" + ", ".join(f"{json.dumps(k)}: %s" for k in _FIELDS) + "}"  # json.dumps's separators
_GET_FIELDS = operator.attrgetter(*_FIELDS)
_CHUNK = 16384


def write_scores(rows: list[ScoreRow], csv_path: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``scores.csv`` (the tidy table) and ``scores.json`` beside it (the same rows
    plus note, bootstrap draws/drops and seed).  Both are written to a temporary file and
    renamed, so a crash never leaves a half-written table.  Cells are built a column at a
    time: scores.csv's by :func:`csv_cell`'s rule, scores.json's as ``json.dumps`` writes each
    row's fields (NaN as null), one row per line."""
    csv_path = Path(csv_path)
    if csv_path.is_dir():
        raise ValueError(f"--out {csv_path} is a directory; --out must be the path of the scores CSV file "
                         f"(e.g. {csv_path / 'scores.csv'})")
    rows = list(rows)
    plain = all(tuple(vars(r)) == _FIELDS for r in rows)  # no attribute beyond the fields, in their order
    lines = []
    with atomic_write(csv_path, newline="") as f:
        w = csv.writer(f)
        w.writerow(ScoreRow.CSV_COLUMNS)
        for s in range(0, len(rows), _CHUNK):  # a chunk of rows at a time: the cell lists stay small
            fields = dict(zip(_FIELDS, zip(*map(_GET_FIELDS, rows[s:s + _CHUNK]))))
            w.writerows(zip(*[_csv_column(fields[c], fields["metric"] if c in SCORE_VALUE_COLUMNS else None)
                              for c in ScoreRow.CSV_COLUMNS]))
            if plain:
                lines += [_JSON_ROW % t for t in zip(*[_json_column(fields[k]) for k in _FIELDS])]
    if not plain:  # a row carrying other attributes: every row as json.dumps of its attributes
        lines = [json.dumps({k: None if isinstance(v, float) and math.isnan(v) else v for k, v in vars(r).items()})
                 for r in rows]
    # one row per line
    write_atomic(scores_json_for(csv_path), "[\n" + ",\n".join(lines) + ("\n]" if rows else "]"))
    return csv_path, scores_json_for(csv_path)


def score_file(records_path: str | os.PathLike, out_csv: str | os.PathLike | None = None,
               seed: int | None = None, parser_mode: str = "default",
               families: dict[str, str] | None = None,
               models: dict[str, dict] | None = None, pairs: str = "auto") -> list[ScoreRow]:
    """Read, validate and score a records file; write scores.csv/json next to it (or to out_csv).
    VSI probe features are read from the ``features/`` folder beside the records, a judge model's
    verdicts from ``judgments.jsonl`` beside them (:mod:`perceptbench.vsi.judge`); ``models``:
    the declared model metadata (run.json ``models``) for the cross-model summaries; ``pairs``:
    the model pairs of the per-pair rows (:func:`score_records`).

    Raises :class:`~perceptbench.records.RecordError` for an invalid or empty records file
    (an empty file is not a run: it would score to an empty table), ValueError for an
    ``out_csv`` that is a directory."""
    from .record_table import iter_task_records, read_columns

    from .vsi.judge import judgments_path, read_judgments

    records_path = Path(records_path)
    run_dir = RunDir.beside(records_path)
    judgments = read_judgments(judgments_path(run_dir.root))
    columns = read_columns(records_path)
    if columns is None:  # files the columnar reader does not take: the validating reader
        tasks = iter_task_records(records_path)
        first = next(tasks, None)
        if first is None:
            raise RecordError(f"{records_path}: holds no trial records (empty file); nothing to score")
        rows = _score_tasks(itertools.chain([first], tasks), seed, parser_mode, run_dir.features,
                            families, models, judgments, pairs)
    else:
        rows = _score_columns(columns, seed, parser_mode, run_dir.features, families, models, judgments, pairs)
    write_scores(rows, out_csv or run_dir.scores_csv)
    return rows
