"""Columnar reading of a records file for scoring and export at scale (issue 12).

:func:`read_records` validates every line into a pydantic object and keeps them all: right
for ``validate`` and resume, too heavy for scoring 10^6 records.  Two readers here:

* :func:`read_columns` (``score``): one streaming pass of duckdb's JSON reader over the
  file; per task, integer-coded numpy columns (:class:`TaskColumns`: model, stimulus,
  response, ground truth, correctness, split, ...), no Python object per record.  The
  fields whose JSON type differs between tasks (``response``, ``ground_truth``,
  ``manipulated_value``) are read as JSON text by duckdb (pyarrow's JSON reader needs one
  type per column) and decoded once per distinct value.
  VLM prompt answers (and encoders' retrieval cosines) are kept as dictionary-coded
  ``raw_output`` text, so scoring re-parses each distinct answer once, on the columns.
  VSI lines are read whole in the same pass: their ``run_meta.vsi`` fields (the distributions as
  typed lists, the rest as JSON text decoded once per distinct value;
  :attr:`TaskColumns.vsi_fields`), checked against the whole record schema, so a VSI task whose
  rows are the VSI rows alone is scored without parsing a line again
  (:func:`perceptbench.vsi.samples.read_vsi_columns`).  Tasks that need more than these columns
  (skipped trials, repeated trials to vote on, VSI fields of a type the record path reads
  otherwise) are read back line by line (:meth:`ColumnarRecords.iter_records`): a VSI task one
  record at a time into columns of its VSI fields (no record kept), any other as a record list
  (:meth:`ColumnarRecords.records`).
* :func:`read_index` + :func:`task_records` (``export``): pyarrow reads the fixed-type index columns
  (``task_id``, ``model``, ``trial_id``, ``run_meta.seed``); the records of **one task at a
  time** are read back by byte offset and validated line by line
  (:func:`~perceptbench.records.parse_record_line`, the validating reader's parser).

Both check every line as a JSON object with exactly the schema's fields and refuse a
duplicated ``trial_id`` naming both lines; any file they cannot take (a torn final line,
blank or malformed lines) falls back to :func:`read_records`, so every error still names
the file and line (:class:`~perceptbench.records.RecordError`).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from .records import (RESPONSE_SPACES, VSI_EXTRA_KEYS, VSI_META_KEYS, VSI_READOUTS, RecordError, TrialRecord,
                      columnar_readable, parse_record_line, read_records, score_correct)

__all__ = ["RecordIndex", "read_index", "iter_task_records", "records_to_arrow", "TaskColumns",
           "read_columns", "canonical_answer"]

INDEX_COLUMNS = ("trial_id", "task_id", "model")

#: readouts whose ``raw_output`` scoring reads (:attr:`TaskColumns.raw`): a VLM prompt's answer, a
#: VSI greedy answer (clean, or given without the image; a blurred record's is null) (re-parsed under
#: the parser mode) and an encoder's zero-shot retrieval cosines (SalBench)
RAW_READOUTS = ("vlm_prompt", "vlm_vsi_clean", "vlm_vsi_perturbed", "zero_shot_retrieval")


@dataclass
class RecordIndex:
    """Where each task's records lie in a records file.

    ``offsets``: int64 array (n_records,) of line start byte offsets; ``lengths``: int64
    (n_records,) line lengths in bytes without the newline; ``by_task``: task_id -> int64
    array of row numbers (file order); ``seeds``: task_id -> sorted distinct
    ``run_meta.seed`` values; ``n``: record count."""

    path: Path
    offsets: np.ndarray
    lengths: np.ndarray
    by_task: dict[str, np.ndarray]
    seeds: dict[str, list[int]]
    n: int


def _line_offsets(path: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """Line start offsets and lengths; None when a line is blank (the fast path then defers
    to :func:`read_records`, which skips blank lines and names bad ones)."""
    starts: list[int] = []
    lens: list[int] = []
    pos = 0
    with open(path, "rb") as f:
        for line in f:
            n = len(line)
            body = n - 1 if line.endswith(b"\n") else n
            if not line[:body].strip():
                return None
            starts.append(pos)
            lens.append(body)
            pos += n
    return np.asarray(starts, np.int64), np.asarray(lens, np.int64)


def read_index(path: str | os.PathLike) -> RecordIndex | None:
    """Index a records file with pyarrow; None when the file needs the validating reader
    (torn final line, blank line, or a line pyarrow cannot parse).  Raises
    :class:`RecordError` for a missing file or a duplicated ``trial_id`` (naming both lines)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    path = Path(path)
    if not path.exists():
        raise RecordError(f"{path}: no such records file")
    if not columnar_readable(path):
        return None
    ol = _line_offsets(path)
    if ol is None:
        return None
    offsets, lengths = ol
    schema = pa.schema([(c, pa.string()) for c in INDEX_COLUMNS]
                       + [("run_meta", pa.struct([("seed", pa.int64())]))])
    try:
        table = pj.read_json(path, parse_options=pj.ParseOptions(
            explicit_schema=schema, unexpected_field_behavior="ignore"))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    if table.num_rows != len(offsets) or any(table[c].null_count for c in INDEX_COLUMNS):
        return None
    trial = table["trial_id"].combine_chunks()
    if pc.count_distinct(trial).as_py() != table.num_rows:
        seen: dict[str, int] = {}
        for i, t in enumerate(trial.to_pylist()):
            if t in seen:
                raise RecordError(f"{path}:{i + 1}: duplicate trial_id {t!r} (first at line {seen[t] + 1})")
            seen[t] = i
    task = table["task_id"].combine_chunks().dictionary_encode()
    codes = task.indices.to_numpy(zero_copy_only=False)
    seed = pc.struct_field(table["run_meta"].combine_chunks(), [0]).to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(task.dictionary) + 1))
    by_task, seeds = {}, {}
    for k, name in enumerate(task.dictionary.to_pylist()):
        rows = order[bounds[k]:bounds[k + 1]]
        by_task[name] = rows
        s = seed[rows]
        seeds[name] = sorted(int(x) for x in np.unique(s[~np.isnan(s)] if s.dtype.kind == "f" else s))
    return RecordIndex(path, offsets, lengths, by_task, seeds, table.num_rows)


def task_records(index: RecordIndex, task_id: str) -> list[TrialRecord]:
    """The records of one task, in file order (read back by byte offset), each line
    validated by the validating reader's line parser
    (:func:`~perceptbench.records.parse_record_line`).  Raises :class:`RecordError` with
    the message :func:`~perceptbench.records.check_file` gives for the line (file, line,
    field)."""
    from .records import parse_record_line

    out = []
    with open(index.path, "rb") as f:
        for row in index.by_task[task_id]:
            f.seek(int(index.offsets[row]))
            raw = f.read(int(index.lengths[row]))
            out.append(parse_record_line(raw, f"{index.path}:{row + 1}"))
    return out


def iter_task_records(path: str | os.PathLike) -> Iterator[tuple[str, list[TrialRecord]]]:
    """(task_id, records) for every task of a records file, tasks in sorted order, records
    in file order; one task's records are in memory at a time.  Files the columnar index
    cannot take are read (and validated) whole by :func:`read_records`.  Raises
    :class:`RecordError` as :func:`read_records` does."""
    index = read_index(path)
    if index is None:
        by: dict[str, list[TrialRecord]] = {}
        for r in read_records(path):
            by.setdefault(r.task_id, []).append(r)
        for t in sorted(by):
            yield t, by.pop(t)
        return
    for t in sorted(index.by_task):
        yield t, task_records(index, t)


def _json_or_none(v) -> str | None:
    return None if v is None else json.dumps(v, ensure_ascii=False)


def records_to_arrow(records: list[TrialRecord]):
    """A typed pyarrow Table of trial records: string/int64/bool columns for the fixed
    fields, ``seed`` (int64), ``model_version`` and ``run_id`` (string) out of run_meta, and
    the fields whose type varies by task (``response``, ``ground_truth``,
    ``manipulated_value``, the rest of ``run_meta``) as JSON text columns ``*_json``."""
    import pyarrow as pa

    str_cols = ("trial_id", "task_id", "principle", "track", "stimulus_id", "model", "model_family",
                "readout", "owner", "response_space", "human_ref_id", "raw_output", "prompt_id", "prompt_hash")
    cols: dict[str, pa.Array] = {c: pa.array([getattr(r, c) for r in records], pa.string()) for c in str_cols}
    cols["correct"] = pa.array([r.correct for r in records], pa.bool_())
    cols["rep"] = pa.array([r.rep for r in records], pa.int64())
    cols["n_reps"] = pa.array([r.n_reps for r in records], pa.int64())
    cols["seed"] = pa.array([r.run_meta.seed for r in records], pa.int64())
    cols["model_version"] = pa.array([r.run_meta.model_version for r in records], pa.string())
    cols["run_id"] = pa.array([r.run_meta.run_id for r in records], pa.string())
    for c in ("response", "ground_truth", "manipulated_value"):
        cols[f"{c}_json"] = pa.array([_json_or_none(getattr(r, c)) for r in records], pa.string())
    cols["run_meta_json"] = pa.array([json.dumps(r.run_meta.model_extra or {}, ensure_ascii=False, sort_keys=True)
                                      for r in records], pa.string())
    return pa.table(cols)


# --------------------------------------------------------------------------- columns per task


def canonical_answer(v):
    """Hashable key under which equal answers (``==``) share one code: lists as tuples."""
    return (type(v).__name__, tuple(v)) if isinstance(v, list) else (type(v).__name__, v)


class _Vocab:
    """Values -> int32 codes in order of first appearance (``values[code]``)."""

    def __init__(self, key=lambda v: v):
        self.key, self.codes, self.values = key, {}, []

    def code(self, v) -> int:
        k = self.key(v)
        c = self.codes.get(k)
        if c is None:
            c = self.codes[k] = len(self.values)
            self.values.append(v)
        return c

    def encode(self, items) -> np.ndarray:
        return np.fromiter((self.code(v) for v in items), np.int32)


@dataclass
class TaskColumns:
    """The trial records of one task as integer-coded columns (issue 12): one entry per
    record, no Python object per record.

    ``row`` int64 (n,): 0-based line of the record in its file (position in the list when
    built from records).  ``model``, ``family``, ``stimulus``, ``readout``, ``split``,
    ``version``: int32 (n,) codes into ``models``, ``families``, ``stimuli``, ``readouts``,
    ``splits`` (``run_meta.split``, None when absent) and ``versions``
    (:func:`perceptbench.provenance.prompt_version`, None for human records).
    ``response``, ``ground_truth``, ``manipulated_value``: int32 (n,) codes into ``values``
    (decoded JSON; equal answers share one code).  ``correct`` int8 (n,): 1, 0, or -1 for
    null.  ``rep``, ``seed`` (``run_meta.seed``): int64 (n,).  ``raw``: int32 (n,) codes into
    ``raws`` of the ``raw_output`` text of the records whose readout is in
    :data:`RAW_READOUTS` (a VLM's answer, re-parsed by scoring; an encoder's retrieval
    cosines), the code of None for every other record (``raws[0]`` is None); None when the
    columns were built without it.  ``skipped``: bool (n,), ``run_meta.skipped`` set (true), or
    None when unknown (a task with no skipped record); ``vsi``: the VSI fields of the same
    records (:class:`perceptbench.vsi.samples.VSIReader`) or None.  ``source``: ``row`` -> the
    record itself (:meth:`record_at`), or None: the validated line of the file for columns read by
    :func:`read_columns`, the list's record for :meth:`from_records`."""

    task_id: str
    row: np.ndarray
    model: np.ndarray
    family: np.ndarray
    stimulus: np.ndarray
    readout: np.ndarray
    split: np.ndarray
    version: np.ndarray
    response: np.ndarray
    ground_truth: np.ndarray
    manipulated_value: np.ndarray
    correct: np.ndarray
    rep: np.ndarray
    seed: np.ndarray
    models: list
    families: list
    stimuli: list
    readouts: list
    splits: list
    versions: list
    values: list
    raw: np.ndarray | None = None
    raws: list = dataclasses.field(default_factory=lambda: [None])
    skipped: np.ndarray | None = None
    vsi: object = None
    vsi_fields: dict | None = None
    source: Callable[[int], TrialRecord] | None = None

    @property
    def n(self) -> int:
        return len(self.row)

    def record_at(self, i: int) -> TrialRecord:
        """The record behind entry ``i`` (0 <= i < n) as an object (its ``run_meta`` extras, say,
        which the columns do not hold).  Raises ValueError when the columns have no ``source``, and
        the validating reader's :class:`RecordError` (file, line, field) for a bad line."""
        if self.source is None:
            raise ValueError(f"{self.task_id}: these columns keep no source of their records")
        return self.source(int(self.row[i]))

    @classmethod
    def from_records(cls, task_id: str, records: list[TrialRecord]) -> "TaskColumns":
        """Columns of ``records`` (one task; any order)."""
        from .provenance import prompt_version

        vocab = {k: _Vocab() for k in ("model", "family", "stimulus", "readout", "split", "version")}
        values = _Vocab(canonical_answer)
        values.code(None)
        extra = [r.run_meta.model_extra or {} for r in records]
        raws = _Vocab()
        raws.code(None)
        return cls(
            task_id, np.arange(len(records), dtype=np.int64),
            vocab["model"].encode(r.model for r in records),
            vocab["family"].encode(r.model_family for r in records),
            vocab["stimulus"].encode(r.stimulus_id for r in records),
            vocab["readout"].encode(r.readout for r in records),
            vocab["split"].encode(e.get("split") for e in extra),
            vocab["version"].encode(prompt_version(r) for r in records),
            values.encode(r.response for r in records), values.encode(r.ground_truth for r in records),
            values.encode(r.manipulated_value for r in records),
            np.array([-1 if r.correct is None else int(r.correct) for r in records], np.int8),
            np.array([r.rep for r in records], np.int64), np.array([r.run_meta.seed for r in records], np.int64),
            vocab["model"].values, vocab["family"].values, vocab["stimulus"].values, vocab["readout"].values,
            vocab["split"].values, vocab["version"].values, values.values,
            raws.encode(r.raw_output if r.readout in RAW_READOUTS else None for r in records), raws.values,
            source=records.__getitem__)

    def subset(self, keep: np.ndarray) -> "TaskColumns":
        """The records where ``keep`` (bool (n,)) is True, with the same code vocabularies (and
        no ``vsi`` or ``vsi_fields``)."""
        per_record = ("row", "model", "family", "stimulus", "readout", "split", "version", "response",
                      "ground_truth", "manipulated_value", "correct", "rep", "seed") + tuple(
                      f for f in ("raw", "skipped") if getattr(self, f) is not None)
        return dataclasses.replace(self, vsi=None, vsi_fields=None, **{f: getattr(self, f)[keep] for f in per_record})

    def take(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The per-record arrays at positions ``rows`` (a dict by field name)."""
        return {f: getattr(self, f)[rows] for f in ("model", "stimulus", "response", "ground_truth",
                                                    "manipulated_value", "correct", "rep", "split")}


class _TaskBuilder:
    def __init__(self):
        self.parts: dict[str, list[np.ndarray]] = {}

    def add(self, **cols: np.ndarray) -> None:
        for k, v in cols.items():
            self.parts.setdefault(k, []).append(v)

    def get(self, k: str) -> np.ndarray:
        return np.concatenate(self.parts[k])

    def vsi(self, values: dict) -> dict | None:
        """The VSI fields added (:func:`_vsi_take`) as arrays, with ``values`` (the code vocabularies);
        None when some record had none (not every record a VSI line)."""
        if "vsi" not in self.parts or any(p is None for p in self.parts["vsi"]):
            return None
        parts = self.parts.pop("vsi")
        out = {k: np.concatenate([p.pop(k) for p in parts]) for k in list(parts[0])}  # each part let go
        out["values"] = values
        return out


#: from_json structure of the columns scoring reads (JSON: types differ between tasks)
_STRUCT = {"trial_id": "VARCHAR", "task_id": "VARCHAR", "stimulus_id": "VARCHAR", "model": "VARCHAR",
           "model_family": "VARCHAR", "readout": "VARCHAR", "response": "JSON", "ground_truth": "JSON",
           "manipulated_value": "JSON", "correct": "JSON", "rep": "JSON", "n_reps": "JSON", "raw_output": "JSON",
           "prompt_id": "JSON", "prompt_hash": "JSON", "run_meta": "JSON", "principle": "JSON", "track": "JSON",
           "owner": "JSON", "response_space": "JSON", "human_ref_id": "JSON"}
_META = {"seed": "JSON", "split": "VARCHAR", "prompt_template_hash": "VARCHAR", "skipped": "JSON", "vsi": "JSON",
         "skip_scope": "JSON", "model_version": "JSON", "run_id": "JSON",
         **{k: "JSON" for k in VSI_EXTRA_KEYS}}

#: readouts of VSI records (:mod:`perceptbench.vsi.samples`): their lines are read with their
#: ``run_meta.vsi`` fields (:data:`_VSI_TEXT`, :data:`_VSI_COLUMNS`) and checked against the whole
#: record schema (:data:`_RECORD_TEXT`), so that no VSI line is parsed again

#: keys every ``run_meta.vsi`` read as columns must have (the VSI record format)
VSI_KEYS = VSI_META_KEYS

#: ``run_meta.vsi`` fields read as JSON text (one value per line, few distinct values), decoded by
#: ``json.loads`` once per distinct text (:class:`perceptbench.vsi.samples.VSIReader`), so each is the
#: very value (and type) the record path reads: ``first`` is ``tokens[0]``, ``skipped`` and
#: ``skip_scope`` are ``run_meta``'s, and so are the keys of :data:`VSI_EXTRA_KEYS` (the benchmark ids and the
#: answer's options, :class:`perceptbench.vsi.samples.VSIReader`)
_VSI_TEXT = ("sample_id", "image_id", "benchmark", "condition", "region_source", "image_sha256", "sigma_px",
             "max_prob", "verbal_conf", "complete", "fallback", "flags", "first", "skipped", "skip_scope",
             *VSI_EXTRA_KEYS)
_VSI_STRUCT = {k: "JSON" for k in _VSI_TEXT[:12] + ("token_ids", "logprobs", "tokens")}

#: SQL: the lists of a line's distribution as ``json_structure`` types them (an array of integers, or
#: of numbers; empty: ``["NULL"]``; nulls among them are caught by ``list_count``)
_INT_LISTS = "('[\"UBIGINT\"]', '[\"BIGINT\"]', '[\"HUGEINT\"]', '[\"NULL\"]')"
_NUM_LISTS = "('[\"UBIGINT\"]', '[\"BIGINT\"]', '[\"HUGEINT\"]', '[\"DOUBLE\"]', '[\"NULL\"]')"

#: SQL (over ``v`` = ``run_meta.vsi`` as :data:`_VSI_STRUCT`, ``vk`` its keys, ``ids`` / ``lp`` its
#: lists as BIGINT[] / DOUBLE[]): the parts of a VSI line's ``run_meta.vsi`` checked in duckdb: an
#: object (absent on a VSI readout, the VSI line rule refuses the line) with every key of :data:`VSI_KEYS` (each once), ``tokens`` null or an array, ``token_ids``
#: an array of 64-bit integers and ``logprobs`` an array of numbers as long (no null; empty lists are
#: read: not a distribution, :meth:`perceptbench.vsi.samples.VSIReader.add` flags them invalid;
#: lists of unequal lengths are refused by the VSI line rule,
#: :func:`perceptbench.records.vsi_meta_problem`).  A
#: line that fails (or whose JSON text fields fail :meth:`perceptbench.vsi.samples.VSIReader.from_fields`)
#: sends its task to the record path, which reads, judges or refuses it as it always did.
_VSI_OK = f"""((json_type(rm.vsi) = 'OBJECT' AND len(vk) = len(list_distinct(vk))
      AND list_has_all(vk, {list(VSI_KEYS)}) AND coalesce(json_type(v.tokens), 'NULL') IN ('NULL', 'ARRAY')
      AND json_structure(v.token_ids) IN {_INT_LISTS} AND json_structure(v.logprobs) IN {_NUM_LISTS}
      AND list_count(ids) = len(ids) AND list_count(lp) = len(lp) AND len(ids) = len(lp)))"""

#: SQL (over ``mk``, the keys of a line's ``run_meta``, and ``rm``, it as :data:`_META`): ``vsi``, where
#: present, is given once and is not null (the VSI line rule refuses both,
#: :func:`perceptbench.records.parse_record_line`: a line on any task that fails here is parsed by it)
_META_KEYS_OK = ("NOT (list_contains(mk, 'vsi') AND rm.vsi IS NULL) "
                 "AND NOT coalesce(list_contains(mk[list_position(mk, 'vsi') + 1:], 'vsi'), false)")

#: SQL (over ``mk``): no key of :data:`VSI_EXTRA_KEYS` given twice in a VSI line's ``run_meta`` (json.loads keeps
#: the last: such a line, legal, sends the file to the validating reader, which reads it so)
_EXTRA_KEYS_ONCE = " AND ".join(f"NOT coalesce(list_contains(mk[list_position(mk, '{k}') + 1:], '{k}'), false)"
                                for k in VSI_EXTRA_KEYS)

#: SQL: the columns of a VSI line (NULL on other lines), read by :func:`_vsi_batch` (``run_meta`` is
#: JSON text duckdb wrote, keys unescaped: a line without ``"vote"`` in it has no such key)
_VSI_COLUMNS = f"""CASE WHEN vrow THEN coalesce({_VSI_OK}, false) END AS v_ok,
               json_type(rm.vsi) = 'OBJECT' AS v_obj, ids AS v_ids, lp AS v_lp,
               {", ".join(f"CAST(v.{k} AS VARCHAR) AS v_{k}" for k in _VSI_TEXT[:12])},
               CAST(json_extract(v.tokens, '$[0]') AS VARCHAR) AS v_first,
               CASE WHEN vrow THEN CAST(rm.skipped AS VARCHAR) END AS v_skipped,
               CASE WHEN vrow THEN CAST(rm.skip_scope AS VARCHAR) END AS v_skip_scope,
               {", ".join(f"CASE WHEN vrow THEN CAST(rm.{k} AS VARCHAR) END AS v_{k}" for k in VSI_EXTRA_KEYS)},
               CASE WHEN vrow THEN coalesce(json_type(s.raw_output), 'NULL') <> 'NULL' END AS v_raw,
               CASE WHEN vrow THEN contains(CAST(s.run_meta AS VARCHAR), '"vote"')
                                   AND list_contains(json_keys(s.run_meta), 'vote') END AS v_vote"""""

#: the fields of the schema (:class:`~perceptbench.records.TrialRecord`) that :func:`read_columns`
#: reads as JSON text to check their types once per distinct value (:func:`_record_text_ok`):
#: field (``run_meta.`` ones by their key) -> (Python types allowed, null allowed[, the values
#: allowed]); ``seed`` is
#: checked on every line (its values are the ``seed`` column), the others on VSI lines, which are
#: not parsed again
_RECORD_TEXT = {"seed": ((int,), False), "principle": ((str,), False), "track": ((str,), False),
                "owner": ((str,), False), "response_space": ((str,), False, RESPONSE_SPACES), "human_ref_id": ((str,), True),
                "prompt_id": ((str,), True), "prompt_hash": ((str,), True), "model_version": ((str,), False),
                "run_id": ((str,), False)}

#: SQL: the schema checks of the validating reader that :func:`read_columns` makes in duckdb on VSI
#: lines only (their other fields' types: :data:`_RECORD_TEXT`)
#: duckdb's memory for :func:`read_columns`, on one thread: with two, the chunks held to keep the
#: file's order (VSI lines carry their distributions) overflow 256 MiB, and a larger limit raised
#: the 10^6 score's peak RSS by ~70 MiB; one thread costs the same CPU time (docs/performance.md)
_MEMORY_LIMIT = "256MB"

_VSI_RECORD_OK = """(TRY_CAST(s.rep AS BIGINT) >= 0
      AND NOT contains(s.task_id, '|') AND NOT contains(s.stimulus_id, '|') AND NOT contains(s.model, '|')
      AND (s.correct IS NULL OR (json_type(s.response) IN ('VARCHAR', 'UBIGINT', 'BIGINT')
           AND json_type(s.ground_truth) IN ('VARCHAR', 'UBIGINT', 'BIGINT')
           AND (s.response = s.ground_truth) = (CAST(s.correct AS VARCHAR) = 'true'))))"""


def _count_lines(path: Path) -> int:
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            n += chunk.count(b"\n")
    return n


def _record_at_line(path: Path, row: int) -> TrialRecord:
    """The record on line ``row`` (0-based) of ``path``, read by the validating reader's line parser
    (:func:`~perceptbench.records.parse_record_line`); :func:`read_columns` takes only files without
    blank lines, so its rows are line numbers."""
    from .records import parse_record_line

    line = _line(path, row)
    if line is None:
        raise RecordError(f"{path}:{row + 1}: no record on this line")
    return parse_record_line(line, f"{path}:{row + 1}")


def _line(path: Path, row: int) -> bytes | None:
    """Line ``row`` (0-based) of the file, or None when a blank line comes before it (duckdb
    skips blank lines, so its row numbers are then not line numbers)."""
    with open(path, "rb") as f:
        for i, line in enumerate(f):
            if i == row:
                return line.rstrip(b"\n")
            if not line.strip():
                return None
    return None


class ColumnarRecords(dict):
    """task_id -> :class:`TaskColumns` of a records file, plus ``simple``: task_id -> True
    when the task's records can be scored from the columns alone (no VSI or skipped record,
    no repeated VLM trial to vote on, one prompt version per model; VLM prompt answers are
    re-parsed from the ``raw`` column)."""

    def __init__(self, path: Path):
        super().__init__()
        self.path = path
        self.simple: dict[str, bool] = {}

    def records(self, task_id: str) -> list[TrialRecord]:
        """The records of one task as objects, in file order (:meth:`iter_records`)."""
        return list(self.iter_records(task_id))

    def iter_records(self, task_id: str) -> Iterator[TrialRecord]:
        """The records of one task, one at a time in file order (the order of
        :attr:`TaskColumns.row`): one pass over the file's lines picking the task's lines
        (:func:`read_columns` takes only files without blank lines, so rows are line numbers),
        each validated by the validating reader's line parser
        (:func:`~perceptbench.records.parse_record_line`; a bad line raises its
        :class:`RecordError` naming file, line and field)."""
        from .records import parse_record_line

        rows = iter(np.sort(self[task_id].row).tolist())
        want = next(rows, None)
        if want is None:
            return
        with open(self.path, "rb") as f:
            for i, line in enumerate(f):
                if i == want:
                    yield parse_record_line(line.rstrip(b"\n"), f"{self.path}:{i + 1}")
                    want = next(rows, None)
                    if want is None:
                        break


#: JSON types of an answer (``response``, ``ground_truth``: a string, an integer, a list of strings
#: or null) and of ``manipulated_value`` (a JSON scalar), as the record schema types them
_ANSWER_TYPES = "('NULL', 'VARCHAR', 'UBIGINT', 'BIGINT', 'ARRAY')"
_SCALAR_TYPES = "('NULL', 'VARCHAR', 'UBIGINT', 'BIGINT', 'DOUBLE', 'BOOLEAN')"


def _answer_ok(col: str) -> str:
    """SQL: the JSON column ``col`` holds an answer of the schema's types (lists: of strings)."""
    return (f"coalesce(json_type({col}), 'NULL') IN {_ANSWER_TYPES} AND "
            f"coalesce(list_bool_and([t = 'VARCHAR' for t in json_type({col}, '$[*]')]), true)")


def in_arrow_pool(fn: Callable) -> Callable:
    """Run ``fn`` with pyarrow's jemalloc memory pool as the default (the system allocator's where
    pyarrow lacks jemalloc), the previous default restored after; unchanged when the user chose a
    pool (``ARROW_DEFAULT_MEMORY_POOL`` set).  pyarrow 26's default, mimalloc, hands the large
    buffers of a columnar read back to the kernel and faults them in again: on the 10^5 mixed
    records file, ``export`` spent 1.5-2.0 s of system time under it against 0.7 s under
    jemalloc or the system allocator, of ~4.4 s CPU in all (docs/performance.md).  Results
    are the same bytes.

    The default pool is process-wide: calls that overlap (nested, or in threads of one process)
    share one switch, made by the first to enter and undone by the last to leave, so the user's
    default is back once none runs (meanwhile pyarrow work elsewhere in the process allocates from
    jemalloc too)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        import pyarrow as pa

        if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
            return fn(*args, **kwargs)
        with _POOL_LOCK:
            if _POOL_SWITCH["depth"] == 0:
                backends = pa.supported_memory_backends()
                _POOL_SWITCH["prev"] = pa.default_memory_pool()
                pa.set_memory_pool(pa.jemalloc_memory_pool() if "jemalloc" in backends else pa.system_memory_pool())
            _POOL_SWITCH["depth"] += 1
        try:
            return fn(*args, **kwargs)
        finally:
            with _POOL_LOCK:
                _POOL_SWITCH["depth"] -= 1
                if _POOL_SWITCH["depth"] == 0:
                    pa.set_memory_pool(_POOL_SWITCH.pop("prev"))

    return wrapper


_POOL_LOCK = threading.Lock()
_POOL_SWITCH: dict = {"depth": 0}
"""How many :func:`in_arrow_pool` calls run now, and the default pool the first one replaced."""


@in_arrow_pool
def read_columns(path: str | os.PathLike, batch_rows: int = 100_000) -> ColumnarRecords | None:
    """Read a records file into :class:`TaskColumns` per task with duckdb's JSON reader
    (one streaming pass, C++; a few hundred MiB whatever the file size: strings are
    dictionary-coded batch by batch and only int32 codes are kept).

    Every line is checked as the byte-offset reader checks it: a JSON object with exactly
    the fields of :data:`~perceptbench.records.SCHEMA_FIELDS`, ``run_meta`` an object; here
    also the types duckdb reads (answers: a string, an integer, a list of strings or null;
    ``manipulated_value`` a JSON scalar; ``raw_output`` a string or null; ``rep`` and
    ``n_reps`` integers, ``rep < n_reps``), ``model_family`` one of
    :data:`~perceptbench.records.MODEL_FAMILIES`, ``correct`` null exactly when the response
    or the ground truth is, ``trial_id == task_id|stimulus_id|model|rep{rep}``, ``run_meta.seed``
    an integer; on VSI lines (:data:`VSI_READOUTS` or a ``run_meta.vsi``), which are not parsed
    again, also the rest of the schema (:data:`_RECORD_TEXT`, :data:`_VSI_RECORD_OK`), and their
    ``run_meta.vsi`` fields are read (:attr:`TaskColumns.vsi_fields`, :data:`_VSI_COLUMNS`).  The
    first line that fails is parsed by the validating reader
    (:func:`~perceptbench.records.parse_record_line`), whose :class:`RecordError` names the
    file, line and field; a duplicated ``trial_id`` raises naming both lines.  Returns None
    when the file needs the validating reader (torn final line, blank lines, a line duckdb
    cannot parse or a check the validating reader passes)."""
    import duckdb

    from .records import MODEL_FAMILIES, SCHEMA_FIELDS

    path = Path(path)
    if not path.exists():
        raise RecordError(f"{path}: no such records file")
    if not columnar_readable(path):
        return None
    keys = "[" + ", ".join(f"'{k}'" for k in SCHEMA_FIELDS) + "]"
    sorted_keys = "[" + ", ".join(f"'{k}'" for k in sorted(SCHEMA_FIELDS)) + "]"
    # the fields in the schema's order (as the store writes them), else in any order
    sql = f"""
        WITH r AS (SELECT CASE WHEN json_keys(j) = {keys} THEN true
                               ELSE list_sort(json_keys(j)) = {sorted_keys} END AS keys_ok,
                          from_json(j, '{json.dumps(_STRUCT)}') AS s
                   FROM read_json_objects(?, format = 'newline_delimited') AS t(j)),
             m AS (SELECT keys_ok, s, json_type(s.run_meta) = 'OBJECT' AS meta_ok,
                          from_json(s.run_meta, '{json.dumps(_META)}') AS rm,
                          CASE WHEN json_type(s.run_meta) = 'OBJECT' THEN json_keys(s.run_meta) END AS mk FROM r),
             w0 AS (SELECT *, coalesce(s.readout IN {VSI_READOUTS} OR rm.vsi IS NOT NULL, false) AS vrow,
                          CASE WHEN json_type(rm.vsi) = 'OBJECT' THEN from_json(rm.vsi, '{json.dumps(_VSI_STRUCT)}')
                               END AS v,
                          CASE WHEN json_type(rm.vsi) = 'OBJECT' THEN json_keys(rm.vsi) END AS vk FROM m),
             w AS (SELECT *, from_json(v.token_ids, '["BIGINT"]') AS ids, from_json(v.logprobs, '["DOUBLE"]') AS lp
                   FROM w0)
        SELECT coalesce(keys_ok AND meta_ok AND {_META_KEYS_OK} AND s.trial_id = s.task_id || '|' || s.stimulus_id || '|'
                        || s.model || '|rep' || CAST(s.rep AS VARCHAR)
                        AND (s.correct IS NULL OR json_type(s.correct) = 'BOOLEAN')
                        AND json_type(s.rep) IN ('UBIGINT', 'BIGINT') AND json_type(s.n_reps) IN ('UBIGINT', 'BIGINT')
                        AND TRY_CAST(s.rep AS BIGINT) < TRY_CAST(s.n_reps AS BIGINT)
                        AND coalesce(json_type(s.raw_output), 'NULL') IN ('NULL', 'VARCHAR')
                        AND s.model_family IN {MODEL_FAMILIES} AND s.readout IS NOT NULL
                        AND ((s.correct IS NULL) = (coalesce(json_type(s.response), 'NULL') = 'NULL'
                                                    OR coalesce(json_type(s.ground_truth), 'NULL') = 'NULL'))
                        AND {_answer_ok("s.response")} AND {_answer_ok("s.ground_truth")}
                        AND coalesce(json_type(s.manipulated_value), 'NULL') IN {_SCALAR_TYPES}
                        AND (NOT vrow OR ({_VSI_RECORD_OK} AND {_EXTRA_KEYS_ONCE})), false) AS ok,
               s.task_id, s.model, s.stimulus_id, s.model_family AS family, s.readout, s.response,
               s.ground_truth, s.manipulated_value, CAST(s.correct AS VARCHAR) = 'true' AS correct,
               TRY_CAST(s.rep AS BIGINT) AS rep, rm.split,
               {", ".join(f"CAST({'rm' if k in _META else 's'}.{k} AS VARCHAR) AS t_{k}" if k == "seed" else
                          f"CASE WHEN vrow THEN CAST({'rm' if k in _META else 's'}.{k} AS VARCHAR) END AS t_{k}"
                          for k in _RECORD_TEXT)},
               CASE WHEN s.model_family = 'human' THEN NULL
                    WHEN rm.prompt_template_hash IS NOT NULL AND rm.prompt_template_hash <> ''
                         THEN rm.prompt_template_hash
                    WHEN starts_with(s.readout, 'vlm_') THEN json_extract_string(s.prompt_id, '$')
                    ELSE json_extract_string(s.prompt_hash, '$') END AS version,
               CASE WHEN s.readout IN {RAW_READOUTS} THEN json_extract_string(s.raw_output, '$') END AS raw,
               ((starts_with(s.readout, 'vlm_') AND s.readout <> 'vlm_prompt') OR rm.vsi IS NOT NULL
                OR coalesce(rm.skipped NOT IN ('false', 'null', '0', '""'), false)
                OR (s.readout = 'vlm_prompt' AND coalesce(TRY_CAST(s.n_reps AS BIGINT), 1) > 1)) AS special,
               vrow, {_VSI_COLUMNS}
        FROM w"""
    con = duckdb.connect(config={"threads": 1, "memory_limit": _MEMORY_LIMIT})
    con.execute("SET enable_progress_bar = false")
    strings = {k: _Vocab() for k in ("task_id", "model", "stimulus_id", "family", "readout", "split", "version",
                                     "raw")}
    strings["raw"].code(None)  # raws[0] is None
    values = _Vocab()  # JSON text -> code; decoded (and equal answers merged) at the end
    values.code(None)
    vsi_vocabs = {k: _Vocab() for k in _VSI_TEXT}
    texts = {k: _TextCheck(*t) for k, t in _RECORD_TEXT.items()}
    for v in vsi_vocabs.values():
        v.code(None)
    tasks: dict[int, _TaskBuilder] = {}
    special: set[int] = set()
    row0 = 0
    try:
        # con.sql streams (execute() would materialise the whole result first)
        reader = con.sql(sql.replace("?", "'" + str(path).replace("'", "''") + "'")).to_arrow_reader(batch_rows)
        for batch in reader:
            n = batch.num_rows
            vrow = _bools(batch.column("vrow"))
            text = {k: t.good(_dict_codes(batch.column("t_" + k), t.vocab)) for k, t in texts.items()}
            ok = _bools(batch.column("ok")) & text.pop("seed") & (~vrow | np.logical_and.reduce(list(text.values())))
            if not batch_checked(path, ok, row0):
                return None
            cols = {k: _dict_codes(batch.column(k), strings[k]) for k in strings}
            codes = {k: _dict_codes(batch.column(k), values) for k in ("response", "ground_truth",
                                                                       "manipulated_value")}
            corr = batch.column("correct")
            correct = np.where(_valid(corr), _bools(corr), -1).astype(np.int8)
            rep = _ints(batch.column("rep"))
            seed = texts["seed"].values()[texts["seed"].codes]
            spec = _bools(batch.column("special"))
            vsi = _vsi_batch(batch) if vrow.any() else None
            rows = np.arange(row0, row0 + n, dtype=np.int64)
            for t in np.unique(cols["task_id"]):
                sel = np.flatnonzero(cols["task_id"] == t)
                if spec[sel].any():
                    special.add(int(t))
                b = tasks.setdefault(int(t), _TaskBuilder())
                b.add(vsi=_vsi_take(vsi, sel, vsi_vocabs) if vsi is not None and vrow[sel].all() else None)
                b.add(
                    row=rows[sel], model=cols["model"][sel], family=cols["family"][sel],
                    stimulus=cols["stimulus_id"][sel], readout=cols["readout"][sel], split=cols["split"][sel],
                    version=cols["version"][sel], response=codes["response"][sel],
                    ground_truth=codes["ground_truth"][sel], manipulated_value=codes["manipulated_value"][sel],
                    correct=correct[sel], rep=rep[sel], seed=seed[sel], raw=cols["raw"][sel])
            row0 += n
    except duckdb.Error:
        return None
    finally:
        con.close()
    if row0 != _count_lines(path):  # blank lines: the validating reader skips or names them
        return None
    # decode answers; equal answers (e.g. 1 and 1.0) share one code
    decoded = _Vocab(canonical_answer)
    lut = np.array([decoded.code(None if v is None else json.loads(v)) for v in values.values], np.int32)
    out = ColumnarRecords(path)
    dups: list = []
    for t, b in tasks.items():
        name = strings["task_id"].values[t]
        c = TaskColumns(name, b.get("row"), b.get("model"), b.get("family"), b.get("stimulus"), b.get("readout"),
                        b.get("split"), b.get("version"), lut[b.get("response")], lut[b.get("ground_truth")],
                        lut[b.get("manipulated_value")], b.get("correct"), b.get("rep"), b.get("seed"),
                        strings["model"].values, strings["family"].values, strings["stimulus_id"].values,
                        strings["readout"].values, strings["split"].values, strings["version"].values,
                        decoded.values, b.get("raw"), strings["raw"].values,
                        vsi_fields=b.vsi({k: v.values for k, v in vsi_vocabs.items()}),
                        source=functools.partial(_record_at_line, path))
        dups.append(_first_duplicate(c))
        out[name] = c
        out.simple[name] = t not in special and one_version_per_model(c)
    wrong = [w for w in (_first_correct_mismatch(c) for c in out.values()) if w is not None]
    if wrong:  # the validating reader's parser names the line and the field; else read with it
        line = _line(path, min(wrong))
        if line is not None:
            parse_record_line(line, f"{path}:{min(wrong) + 1}")
        return None
    dups = [d for d in dups if d is not None]
    if dups:
        second, first, tid = min(dups)
        raise RecordError(f"{path}:{second + 1}: duplicate trial_id {tid!r} (first at line {first + 1})")
    return out


def _first_correct_mismatch(c: TaskColumns) -> int | None:
    """The 0-based line of the first record of ``c`` whose ``correct`` disagrees with its response and
    ground truth (the schema's rule, :func:`perceptbench.records.score_correct`: equality, lists as
    sets), or None.  Each distinct (response, ground truth) pair is compared once."""
    has = np.flatnonzero(c.correct >= 0)
    if not has.size:
        return None
    key = c.response[has].astype(np.int64) * (len(c.values) + 1) + c.ground_truth[has]
    pairs, inverse = np.unique(key, return_inverse=True)
    n = len(c.values) + 1
    same = np.array([score_correct(c.values[int(k // n)], c.values[int(k % n)]) for k in pairs], np.int8)
    bad = same[inverse.ravel()] != c.correct[has]
    return int(c.row[has[bad]].min()) if bad.any() else None


def batch_checked(path: Path, ok: np.ndarray, row0: int) -> bool:
    """True when every line of a batch read by duckdb passed the columnar checks (``ok``: bool
    (n,), the batch's first line is line ``row0 + 1`` of ``path``).  Otherwise the first failing
    line goes to the validating reader's parser, which raises
    :class:`~perceptbench.records.RecordError` naming file, line and field; False when it passes
    there (blank lines before it, or a value only the validating reader takes): the caller then
    reads the file with the validating reader."""
    from .records import parse_record_line

    if ok.all():
        return True
    bad = row0 + int(np.argmin(ok))
    line = _line(path, bad)
    if line is not None:
        parse_record_line(line, f"{path}:{bad + 1}")
    return False


def _bits(buf, offset: int, n: int) -> np.ndarray:
    return np.unpackbits(np.frombuffer(buf, np.uint8), bitorder="little")[offset:offset + n].astype(bool)


def _valid(arr) -> np.ndarray:
    """Non-null mask of a pyarrow array, read from its validity bitmap."""
    buf = arr.buffers()[0]
    return np.ones(len(arr), bool) if buf is None else _bits(buf, arr.offset, len(arr))


def _bools(arr) -> np.ndarray:
    """A pyarrow boolean array as numpy bool, nulls False, read from its bitmaps (pyarrow's
    own conversions of Python scalars import pandas: 0.5 s of a 1 s small-file score)."""
    return _bits(arr.buffers()[1], arr.offset, len(arr)) & _valid(arr)


def _ints(arr) -> np.ndarray:
    """A pyarrow integer array without nulls as a numpy int64 array."""
    return np.frombuffer(arr.buffers()[1], _NP[str(arr.type)],
                         count=len(arr) + arr.offset)[arr.offset:].astype(np.int64)


_NP = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "uint8": np.uint8,
       "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}


def _dict_codes(arr, vocab: _Vocab) -> np.ndarray:
    """Global int32 codes of a pyarrow string column (nulls -> the code of None)."""
    import pyarrow.compute as pc

    enc = pc.dictionary_encode(arr)
    lut = np.array([vocab.code(v) for v in enc.dictionary.to_pylist()] + [vocab.code(None)], np.int32)
    idx = np.where(_valid(enc.indices), _ints(enc.indices), len(enc.dictionary))
    return lut[idx]


def _vsi_batch(batch) -> dict:
    """The VSI columns of a batch read by :func:`read_columns` (:data:`_VSI_COLUMNS`): bool (n,)
    ``ok``, ``obj``, ``vote``; the lists ``ids`` (int64) and ``lp`` (float64) as (starts, lengths,
    values) into the batch's flat values (no Python object per line); the JSON text fields of
    :data:`_VSI_TEXT` as pyarrow arrays (coded by :func:`_vsi_take`)."""
    out: dict = {k: batch.column("v_" + k) for k in _VSI_TEXT}
    for k in ("ok", "obj", "vote", "raw"):
        out[k] = _bools(batch.column("v_" + k))
    for k, dt in (("ids", np.int64), ("lp", np.float64)):
        a = batch.column("v_" + k)
        off = a.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
        vals = a.values
        flat = np.frombuffer(vals.buffers()[1], dt, count=len(vals) + vals.offset)[vals.offset:]
        out[k] = (off[:-1], np.where(_valid(a), np.diff(off), 0), flat)
    return out


def _vsi_take(fields: dict, sel: np.ndarray, vocabs: dict) -> dict[str, np.ndarray]:
    """Rows ``sel`` (int (m,)) of :func:`_vsi_batch`'s fields: JSON text fields as int32 codes of
    ``vocabs`` (code 0: None, a field absent), lists as ``{k}_len`` int64 (m,) and ``{k}`` their values in row
    order (no Python object per row)."""
    import pyarrow as pa

    out = {}
    idx = pa.array(sel)
    for k in _VSI_TEXT:
        out[k] = _dict_codes(fields[k].take(idx), vocabs[k])
    for k, v in fields.items():
        if isinstance(v, tuple):
            starts, lens, flat = v
            n = lens[sel]
            pos = np.arange(int(n.sum()), dtype=np.int64) + np.repeat(starts[sel] - (np.cumsum(n) - n), n)
            out[k + "_len"], out[k] = n, flat[pos]
        elif k not in _VSI_TEXT:
            out[k] = v[sel]
    return out


class _TextCheck:
    """A field read as JSON text (:data:`_RECORD_TEXT`), checked once per distinct text: ``vocab``
    codes the texts (None: null, or absent: every field of the schema is present, so only a
    ``run_meta`` key can be, and those are not nullable), :meth:`good` the codes of one batch -> bool (n,) whether
    the value is of one of ``types`` (exactly: a bool is no int; one of ``allowed`` if given) or null
    where ``nullable``;
    :meth:`values` the decoded values as int64 (``seed``; 0 where not an int64)."""

    def __init__(self, types: tuple, nullable: bool, allowed: tuple | None = None):
        self.types, self.nullable, self.allowed, self.vocab, self._good = types, nullable, allowed, _Vocab(), []
        self.codes = np.zeros(0, np.int32)

    def good(self, codes: np.ndarray) -> np.ndarray:
        for t in self.vocab.values[len(self._good):]:
            v = None if t is None else json.loads(t)  # None: null, or a run_meta key absent
            ok = (v is None and self.nullable) or (type(v) in self.types and (self.allowed is None or v in self.allowed))
            self._good.append(ok and not (type(v) is int and not -2**63 <= v < 2**63))
        self.codes = codes
        return np.array(self._good, bool)[codes]

    def values(self) -> np.ndarray:
        return np.array([json.loads(t) if g else 0 for t, g in zip(self.vocab.values, self._good)], np.int64)


def one_version_per_model(c: TaskColumns) -> bool:
    """Whether every model of the task wrote one prompt version (nothing to split into respondents)."""
    if len(c.versions) <= 1:
        return True
    key = np.unique(c.model.astype(np.int64) * len(c.versions) + c.version)
    return len(np.unique(key // len(c.versions))) == len(key)


def _first_duplicate(c: TaskColumns) -> tuple[int, int, str] | None:
    """(row, row of its first occurrence, trial_id) of the earliest record of the task that
    repeats a trial_id (task, stimulus, model, rep: the trial_id was checked to be made of
    them); None when there is none."""
    key = np.stack([c.model.astype(np.int64), c.stimulus.astype(np.int64), c.rep])
    order = np.lexsort((c.row, key[2], key[1], key[0]))
    k = key[:, order]
    same = np.flatnonzero((k[:, 1:] == k[:, :-1]).all(0))
    if not same.size:
        return None
    second = c.row[order[same + 1]]
    j = int(np.argmin(second))
    pos = same[j]
    while pos > 0 and (k[:, pos - 1] == k[:, pos]).all():
        pos -= 1
    first = int(c.row[order[pos]])
    i = order[same[j] + 1]
    tid = f"{c.task_id}|{c.stimuli[c.stimulus[i]]}|{c.models[c.model[i]]}|rep{int(c.rep[i])}"
    return int(second[j]), first, tid
