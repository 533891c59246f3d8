"""``perceptbench export RUN --format parquet``: a run's records and scores as typed
parquet tables (pyarrow), for pandas, polars and duckdb users.  RUN is a run directory or a
records file, resolved as ``score`` resolves it (:func:`perceptbench.runs.records_path`; the
folder a records file lies in is its run directory, :meth:`perceptbench.core.rundir.RunDir.beside`).

Records are read column by column with duckdb's JSON reader (:func:`records_arrow`: one
streaming pass, no Python object per record), every line checked as the validating reader
checks it; a file it cannot take (a torn final line, blank lines, a line only the validating
reader accepts, a duplicated trial id) is read one task at a time by the validating reader
(:func:`perceptbench.record_table.iter_task_records`) and converted by
:func:`perceptbench.record_table.records_to_arrow`.  Both give the same table.  Scores are
read from ``scores.json`` (run ``perceptbench score`` first)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from ..core.rundir import RunDir, atomic_write
from ..record_table import in_arrow_pool

__all__ = ["export_parquet", "records_arrow"]

SCORE_COLUMNS = (("task_id", "string"), ("model", "string"), ("metric", "string"), ("value", "float64"),
                 ("ci_low", "float64"), ("ci_high", "float64"), ("n", "int64"), ("n_null", "int64"),
                 ("note", "string"), ("n_draws", "int64"), ("n_dropped", "int64"), ("seed", "int64"))

#: string fields of a record that may not be null, and those that may (records.TrialRecord)
_STR = ("trial_id", "task_id", "principle", "track", "stimulus_id", "model", "model_family", "readout", "owner",
        "response_space")
_OPT_STR = ("human_ref_id", "raw_output", "prompt_id", "prompt_hash")
#: the fields written as JSON text (their type varies by task), as records_to_arrow writes them
_JSON = ("response", "ground_truth", "manipulated_value")
_RUN_META_KEYS = ("model_version", "seed", "run_id")


def _records_sql(path: Path) -> str:
    """duckdb SQL over ``path``: per line (file order) ``ok`` (every check below passed) and
    the columns of :func:`perceptbench.record_table.records_to_arrow`, the JSON-typed ones as
    duckdb's JSON text (``run_meta_json``: run_meta less its three fixed keys).

    ``ok`` is true when the line is a JSON object with exactly the schema's fields; each
    field has the JSON type :class:`~perceptbench.records.TrialRecord` (strict) takes:
    strings (nullable where the schema allows), ``rep``/``n_reps`` integers within int64,
    ``correct`` a boolean or null, answers a string, an integer, a list of strings or null,
    ``manipulated_value`` a JSON scalar, ``run_meta`` an object with ``model_version`` and
    ``run_id`` strings and an integer ``seed`` and no key twice (the VSI line rule:
    :func:`records_arrow`, on ``run_meta_json``); and the model validator's
    checks: ``trial_id == task_id|stimulus_id|model|rep{rep}`` with no ``|`` in those parts,
    a known model family and response space, ``0 <= rep < n_reps``.  (``correct`` against
    the answers is checked in Python, on each distinct combination.)"""
    from ..record_table import _SCALAR_TYPES, _answer_ok
    from ..records import MODEL_FAMILIES, RESPONSE_SPACES, SCHEMA_FIELDS, VSI_READOUTS

    def q(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"

    def sql_list(xs) -> str:
        return "[" + ", ".join(q(x) for x in xs) + "]"

    def sql_tuple(xs) -> str:
        return "(" + ", ".join(q(x) for x in xs) + ")"

    struct = json.dumps({f: "JSON" for f in SCHEMA_FIELDS})
    meta = json.dumps({k: "JSON" for k in _RUN_META_KEYS})
    int_ok = "coalesce(json_type(s.{0}) IN ('UBIGINT', 'BIGINT') AND TRY_CAST(s.{0} AS BIGINT) IS NOT NULL, false)"
    checks = ([f"coalesce(json_type(s.{f}) = 'VARCHAR', false)" for f in _STR]
              + [f"coalesce(json_type(s.{f}), 'NULL') IN ('VARCHAR', 'NULL')" for f in _OPT_STR]
              + [int_ok.format(f) for f in ("rep", "n_reps")]
              + ["coalesce(json_type(s.correct), 'NULL') IN ('BOOLEAN', 'NULL')",
                 _answer_ok("s.response"), _answer_ok("s.ground_truth"),
                 f"coalesce(json_type(s.manipulated_value), 'NULL') IN {_SCALAR_TYPES}",
                 "meta_ok", "coalesce(json_type(rm.model_version) = 'VARCHAR', false)",
                 "coalesce(json_type(rm.run_id) = 'VARCHAR', false)", int_ok.format("seed").replace("s.seed", "rm.seed"),
                 # each fixed run_meta key once (duckdb reads a repeated key's first value, json.loads
                 # its last): the quoted name occurs once in the line (inside a JSON string a quote
                 # is escaped, so only a key or a value equal to the name matches)
                 *(f"strlen(j) - strlen(replace(j, {q(json.dumps(k))}, '')) = {len(json.dumps(k))}"
                   for k in _RUN_META_KEYS),
                 # a VSI record carries run_meta.vsi (the VSI line rule, records.vsi_meta_problem)
                 f"CASE WHEN s.readout ->> '$' IN {sql_tuple(VSI_READOUTS)} "
                 "THEN coalesce(list_contains(json_keys(s.run_meta), 'vsi'), false) ELSE true END"])
    model = ["trial_id = task_id || '|' || stimulus_id || '|' || model || '|rep' || CAST(rep AS VARCHAR)",
             "NOT contains(task_id, '|') AND NOT contains(stimulus_id, '|') AND NOT contains(model, '|')",
             f"model_family IN {sql_tuple(MODEL_FAMILIES)}", f"response_space IN {sql_tuple(RESPONSE_SPACES)}",
             "0 <= rep AND rep < n_reps"]
    drop = json.dumps({k: None for k in _RUN_META_KEYS})
    cols = ([f"s.{f} ->> '$' AS {f}" for f in _STR + _OPT_STR]
            + ["CASE WHEN json_type(s.correct) = 'BOOLEAN' THEN s.correct::BOOLEAN END AS correct",
               "TRY_CAST(s.rep AS BIGINT) AS rep", "TRY_CAST(s.n_reps AS BIGINT) AS n_reps",
               "TRY_CAST(rm.seed AS BIGINT) AS seed", "rm.model_version ->> '$' AS model_version",
               "rm.run_id ->> '$' AS run_id"]
            + [f"s.{f} AS {f}_json" for f in _JSON]
            + [f"CASE WHEN meta_ok THEN json_merge_patch(s.run_meta, {q(drop)}) END AS run_meta_json"])
    keys, sorted_keys = sql_list(SCHEMA_FIELDS), sql_list(sorted(SCHEMA_FIELDS))
    return f"""
        WITH r AS (SELECT CASE WHEN json_keys(j) = {keys} THEN true
                               ELSE list_sort(json_keys(j)) = {sorted_keys} END AS keys_ok,
                          from_json(j, {q(struct)}) AS s, j
                   FROM read_json_objects({q(str(path))}, format = 'newline_delimited') AS t(j)),
             m AS (SELECT j, keys_ok, s, coalesce(json_type(s.run_meta) = 'OBJECT', false) AS meta_ok,
                          from_json(s.run_meta, {q(meta)}) AS rm FROM r),
             c AS (SELECT coalesce(keys_ok AND {" AND ".join(checks)}, false) AS types_ok, {", ".join(cols)} FROM m)
        SELECT coalesce(types_ok AND {" AND ".join(model)}, false) AS ok, * EXCLUDE (types_ok) FROM c"""


class _Canonical:
    """duckdb's JSON text of a value -> the text :func:`~perceptbench.record_table.records_to_arrow`
    writes for it (``json.dumps`` of the parsed value, ``ensure_ascii=False``; ``sort_keys``
    for run_meta), computed once per distinct text.  Exact: duckdb rewrites numbers only in
    ways ``json.loads`` reads back as the same value (``1e-05`` as ``0.00001``, ``1E2`` as
    ``100.0``; integers beyond 64 bits, ``NaN`` and ``1e400`` kept as written), so the value
    is the one ``json.loads`` gives on the line itself (tests/unit/reports/test_export.py).
    ``decode``: text -> (value, verdict: True when fine), :func:`json.loads` (always fine) unless
    given; the verdict is kept per distinct text too."""

    def __init__(self, sort_keys: bool = False, decode=None):
        self.sort_keys, self.decode, self.cache = sort_keys, decode or (lambda t: (json.loads(t), True)), {}

    def text(self, text: str | None) -> tuple[str | None, bool]:
        if text is None:
            return None, True
        out = self.cache.get(text)
        if out is None:
            v, good = self.decode(text)
            out = self.cache[text] = (json.dumps(v, ensure_ascii=False, sort_keys=self.sort_keys), good)
        return out

    def column(self, arr):
        """A pyarrow string array of JSON texts -> (the canonical texts of its distinct values
        (pa.string, m), int64 (n,): each row's index into them, -1 for a null, bool (n,): the
        verdict of each row).  The caller takes the rows (:func:`_take_coded`), once, in the
        order it writes them."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from ..record_table import _ints, _valid

        enc = pc.dictionary_encode(arr)
        texts = [self.text(t) for t in enc.dictionary.to_pylist()]
        good = np.array([g for _, g in texts] + [True], bool)
        valid = _valid(enc.indices)
        codes = np.where(valid, _ints(enc.indices), -1)
        return _strings([t for t, _ in texts]), codes, good[np.where(valid, codes, len(texts))]


def _strings(texts: list):
    """A pyarrow string array of ``texts`` (str or None), built from its buffers (``pa.array`` would
    import pandas, ~0.25 s of an export's CPU time, to look for its types)."""
    import pyarrow as pa

    data = [t.encode() if t is not None else b"" for t in texts]
    offsets = np.zeros(len(data) + 1, np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    valid = np.array([t is not None for t in texts], bool)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(data), [bitmap, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))])


def _values(values: list, kind: str):
    """A pyarrow column of ``values`` (None: null) of ``kind`` ``"string"``, ``"float64"`` (NaN kept
    as NaN) or ``"int64"``, as ``pa.array(values, type)`` gives it (see :func:`_strings`)."""
    import pyarrow as pa

    if kind == "string":
        return _strings(values)
    valid = np.array([v is not None for v in values], bool)
    dtype, typ = (np.float64, pa.float64()) if kind == "float64" else (np.int64, pa.int64())
    data = np.array([v if v is not None else 0 for v in values], dtype)
    bitmap = None if valid.all() else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(typ, len(values), [bitmap, pa.py_buffer(data)])


def _indices(order: np.ndarray):
    """int64 (n,) -> a pyarrow int64 array, -1 as null (without ``pa.array``: see :func:`_strings`)."""
    import pyarrow as pa

    order = np.ascontiguousarray(order, np.int64)
    bad = order < 0
    bitmap = pa.py_buffer(np.packbits(~bad, bitorder="little")) if bad.any() else None
    return pa.Array.from_buffers(pa.int64(), len(order), [bitmap, pa.py_buffer(order)])


def _take(src, order: np.ndarray, cuts: np.ndarray):
    """``src`` (a pyarrow ChunkedArray) taken at ``order`` (int64 (n,), -1: null), as a ChunkedArray
    with one chunk per piece between ``cuts`` (int64: 0, the piece boundaries, n; pieces keep each
    array under pyarrow's 2 GiB string limit, and one chunk per task writes the Parquet pages
    ``export`` always wrote)."""
    import pyarrow as pa

    chunks = []
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        g = order[a:b]
        chunks += src.take(_indices(g)).chunks
    return pa.chunked_array(chunks, src.type)


def _take_coded(dicts: list, codes: list, order: np.ndarray | None, cuts: np.ndarray):
    """One string column from per-batch (distinct texts, row codes into them, -1 null) pairs of
    :meth:`_Canonical.column`, its rows in ``order`` (int64 indices into the concatenated rows;
    None: as read) cut at ``cuts`` (:func:`_take`): the texts are copied once, straight into the
    order written."""
    import pyarrow as pa

    offsets = np.cumsum([0] + [len(d) for d in dicts[:-1]])
    glob = np.concatenate([np.where(c < 0, -1, c + o) for c, o in zip(codes, offsets)])
    return _take(pa.chunked_array(dicts, pa.string()), glob if order is None else glob[order], cuts)


def _run_meta_checked(text: str) -> tuple[object, bool]:
    """(``run_meta`` from duckdb's text of it, less its three fixed keys; whether the VSI line rule
    passes it, :func:`~perceptbench.records.run_meta_problem`: duckdb keeps a repeated key in the
    text, so repeated keys are judged as the validating reader judges them)."""
    from ..records import run_meta_problem

    meta, problem = run_meta_problem(text)
    return meta, problem is None


def _correct_ok(batch) -> np.ndarray:
    """Per row: ``correct`` is what :func:`~perceptbench.records.score_correct` gives for the
    row's answers (the record model's check: null when an answer is null, else whether they
    are equal, lists as sets), evaluated once per distinct (response, ground truth, correct)."""
    import pyarrow.compute as pc

    from ..record_table import _bools, _ints, _valid
    from ..records import score_correct

    codes, answers = [], []
    for col in ("response_json", "ground_truth_json"):
        enc = pc.dictionary_encode(batch.column(col))
        texts = enc.dictionary.to_pylist()
        codes.append(np.where(_valid(enc.indices), _ints(enc.indices), len(texts)))
        answers.append([json.loads(t) for t in texts] + [None])
    corr = batch.column("correct")
    codes.append(np.where(_valid(corr), _bools(corr), 2))  # 0 false, 1 true, 2 null
    n_g = len(answers[1])
    uniq, inv = np.unique((codes[0] * n_g + codes[1]) * 3 + codes[2], return_inverse=True)

    def agrees(r: int, g: int, c: int) -> bool:
        try:
            return score_correct(answers[0][r], answers[1][g]) == (False, True, None)[c]
        except TypeError:  # answers of other types (lines that fail the SQL checks anyway)
            return False

    ok = np.array([agrees(k // 3 // n_g, k // 3 % n_g, k % 3) for k in uniq.tolist()], bool)
    return ok[inv.ravel()]


def records_arrow(path: str | os.PathLike, batch_rows: int = 8_192, *, by_task: bool = False):
    """The records of ``path`` as the pyarrow Table :func:`~perceptbench.record_table.records_to_arrow`
    gives for them (same columns, types and values, rows in file order; ``by_task``: grouped by
    ``task_id`` in sorted order, each task's rows in file order), read with duckdb's JSON reader
    in one streaming pass: no Python object per record; JSON-typed values are re-encoded once per
    distinct text and copied once, into the order returned.

    Every line is checked as :func:`~perceptbench.records.parse_record_line` checks it (see
    :func:`_records_sql`; ``run_meta`` under the VSI line rule,
    :func:`~perceptbench.records.run_meta_problem`, once per distinct text); the first line that
    fails is handed to it, and its
    :class:`~perceptbench.records.RecordError` names the file, line and field.  Returns None
    when the file needs the validating reader: missing or empty, a torn final line, blank
    lines, a line duckdb cannot parse, a check only the validating reader passes (e.g. an
    integer beyond int64), or a duplicated ``trial_id`` (the validating path names both
    lines)."""
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..record_table import _bools, _count_lines, _ints, batch_checked
    from ..records import columnar_readable

    path = Path(path)
    if not path.exists() or not columnar_readable(path):
        return None
    con = duckdb.connect(config={"threads": min(2, os.cpu_count() or 1), "memory_limit": "1GB"})
    con.execute("SET enable_progress_bar = false")
    canon = {"response_json": _Canonical(), "ground_truth_json": _Canonical(),
             "manipulated_value_json": _Canonical(),
             "run_meta_json": _Canonical(sort_keys=True, decode=_run_meta_checked)}
    names: list[str] = []
    plain: dict[str, list] = {}  # column -> its batches' arrays
    coded: dict[str, tuple[list, list]] = {c: ([], []) for c in canon}  # column -> (texts, codes) per batch
    row0 = 0
    try:
        for batch in con.sql(_records_sql(path)).to_arrow_reader(batch_rows):
            names = batch.schema.names[1:]
            ok = _bools(batch.column("ok")) & _correct_ok(batch)
            for name in names:
                arr = batch.column(name)
                if name in canon:
                    texts, codes, good = canon[name].column(arr)
                    coded[name][0].append(texts)
                    coded[name][1].append(codes)
                    ok &= good
                else:
                    plain.setdefault(name, []).append(arr)
            if not batch_checked(path, ok, row0):
                return None
            row0 += batch.num_rows
    except (duckdb.Error, OSError):  # duckdb's errors arrive through pyarrow's reader as OSError
        return None
    finally:
        con.close()
    if row0 != _count_lines(path):  # blank lines: the validating reader skips or names them
        return None
    if not row0:
        return None
    trial_ids = pa.chunked_array(plain["trial_id"])
    if pc.count_distinct(trial_ids).as_py() != row0:
        return None
    order = None
    cuts = np.append(np.arange(0, row0, batch_rows), row0)  # as read: the batches
    if by_task:  # tasks in sorted order, each in file order, one piece each
        enc = pc.dictionary_encode(pa.chunked_array(plain["task_id"]).combine_chunks())
        rank = np.argsort(np.argsort(np.array(enc.dictionary.to_pylist(), dtype=object), kind="stable"))
        task_rank = rank[_ints(enc.indices)]
        order = np.argsort(task_rank, kind="stable")
        cuts = np.searchsorted(task_rank[order], np.arange(len(rank) + 1))
    cols = {}
    for name in names:
        if name in canon:
            cols[name] = _take_coded(*coded[name], order, cuts)
        else:
            arr = pa.chunked_array(plain[name])
            cols[name] = arr if order is None else _take(arr, order, cuts)
    return pa.table(cols)


def _write_records(records: Path, path: Path) -> None:
    """``records.parquet`` at ``path`` from the records file ``records``: tasks in sorted order, one
    ``write_table`` per task, each task's records in file order (as before the columnar reader).
    Raises :class:`~perceptbench.records.RecordError` for a file without a record (nothing written)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from ..record_table import _ints, iter_task_records, records_to_arrow
    from ..records import RecordError

    table = records_arrow(records, by_task=True)
    if table is None:
        tasks = ((t, records_to_arrow(recs)) for t, recs in iter_task_records(records))
    else:  # grouped by task already: each task one slice
        ends = _ints(pc.run_end_encode(table["task_id"].combine_chunks()).run_ends).tolist()
        tasks = ((None, table.slice(a, b - a)) for a, b in zip([0] + ends[:-1], ends))
    first = next(tasks, None)
    if first is None:  # no records: refused as score refuses it, nothing written
        raise RecordError(f"{records}: holds no trial records (empty file); nothing to export")
    with atomic_write(path, "wb") as f:
        with pq.ParquetWriter(f, first[1].schema) as writer:
            writer.write_table(first[1])
            for _, t in tasks:
                writer.write_table(t)


@in_arrow_pool
def export_parquet(run: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> tuple[Path, Path | None]:
    """Write ``records.parquet`` (one row per trial; columns of
    :func:`perceptbench.record_table.records_to_arrow`, tasks in sorted order, each task's
    records in file order) and, when the run directory holds ``scores.json``,
    ``scores.parquet`` (task_id, model, metric: string; value, ci_low, ci_high: float64,
    NaN/None as null; n, n_null, n_draws, n_dropped, seed: int64; note: string) into
    ``out_dir`` (default: the run directory).

    ``run`` is a run directory (its ``records.jsonl``) or a records file, whose run directory
    is the folder it lies in (:func:`perceptbench.runs.records_path`, then
    :meth:`~perceptbench.core.rundir.RunDir.beside`, as ``score`` resolves it).  Files are
    written to a temporary name and renamed: a failure leaves no partial file.  Returns
    (records path, scores path or None).  Raises :class:`~perceptbench.records.RecordError`
    for a missing path, a directory without ``records.jsonl``, an invalid records file
    (file, line and field) or one without a record (nothing is written)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..runs import records_path

    records = records_path(run)
    run_dir = RunDir.beside(records)
    out = RunDir(out_dir) if out_dir is not None else run_dir
    made = [d for d in (out.root, *out.root.parents) if not d.exists()]  # deepest first
    out.root.mkdir(parents=True, exist_ok=True)
    rec_path = out.records_parquet
    try:
        _write_records(records, rec_path)
    except BaseException:  # a bad records file: the folders made for the export go again (when empty)
        for d in made:
            try:
                d.rmdir()
            except OSError:
                break
        raise
    scores_json = run_dir.scores_json
    if not scores_json.exists():
        return rec_path, None
    rows = json.loads(scores_json.read_text())
    schema = pa.schema([(c, pa.string() if t == "string" else pa.float64() if t == "float64" else pa.int64())
                        for c, t in SCORE_COLUMNS])
    table = pa.table({c: _values([r.get(c) for r in rows], t) for c, t in SCORE_COLUMNS}, schema=schema)
    sc_path = out.scores_parquet
    with atomic_write(sc_path, "wb") as f:
        pq.write_table(table, f)
    return rec_path, sc_path
