"""Columnar reading of a records file for scoring and export at scale (issue 12).

:func:`read_records` validates every line into a pydantic object and keeps them all: right
for ``validate`` and resume, too heavy for scoring 10^6 records.  Here pyarrow
(``pyarrow.json.read_json``) reads only the fixed-type index columns (``task_id``,
``model``, ``trial_id``, ``run_meta.seed``) of the whole file into Arrow arrays; duplicate
trial ids and per-task seeds are checked on those columns; then the records of **one task
at a time** are read back by byte offset and built without re-validation
(``TrialRecord.model_construct``), scored and dropped.  Peak memory is the index columns
plus the largest task, not the file.

The fields whose JSON type differs between tasks (``response``, ``ground_truth``,
``manipulated_value``, ``run_meta``'s extra keys) are not Arrow columns here: Arrow's JSON
reader needs one type per column, and these hold a string for one task and an integer
or list for another.  Any file the fast reader cannot take (a torn final line, blank or
malformed lines, a pyarrow parse error) falls back to :func:`read_records`, so every
error still names the file and line (:class:`~perceptbench.records.RecordError`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from .records import RecordError, RunMeta, TrialRecord, has_torn_tail, read_records

__all__ = ["RecordIndex", "read_index", "iter_task_records", "records_to_arrow"]

INDEX_COLUMNS = ("trial_id", "task_id", "model")


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
    if path.stat().st_size == 0 or has_torn_tail(path):
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


def _construct(obj: dict) -> TrialRecord:
    """A TrialRecord from a parsed line without re-validation (the fields were written by
    :class:`~perceptbench.records.RecordStore`, which validates every record it appends)."""
    obj["run_meta"] = RunMeta.model_construct(**obj["run_meta"])
    return TrialRecord.model_construct(**obj)


def task_records(index: RecordIndex, task_id: str) -> list[TrialRecord]:
    """The records of one task, in file order (read back by byte offset).  Raises
    :class:`RecordError` naming the file and line for a line that is not a JSON object
    with the schema's fields."""
    from .records import SCHEMA_FIELDS

    out = []
    with open(index.path, "rb") as f:
        for row in index.by_task[task_id]:
            f.seek(int(index.offsets[row]))
            raw = f.read(int(index.lengths[row]))
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as e:
                raise RecordError(f"{index.path}:{row + 1}: not valid JSON ({e.msg})") from None
            if not isinstance(obj, dict) or set(obj) != set(SCHEMA_FIELDS) or not isinstance(obj["run_meta"], dict):
                raise RecordError(f"{index.path}:{row + 1}: not a trial record (run `perceptbench validate`)")
            out.append(_construct(obj))
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
