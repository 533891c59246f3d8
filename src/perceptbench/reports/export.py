"""``perceptbench export RUN_DIR --format parquet``: a run's records and scores as typed
parquet tables (pyarrow), for pandas, polars and duckdb users.  Reads records one task at
a time (:func:`perceptbench.record_table.iter_task_records`), so memory is bounded by the
largest task; scores are read from ``scores.json`` (run ``perceptbench score`` first)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.rundir import RunDir, atomic_write

__all__ = ["export_parquet"]

SCORE_COLUMNS = (("task_id", "string"), ("model", "string"), ("metric", "string"), ("value", "float64"),
                 ("ci_low", "float64"), ("ci_high", "float64"), ("n", "int64"), ("n_null", "int64"),
                 ("note", "string"), ("n_draws", "int64"), ("n_dropped", "int64"), ("seed", "int64"))


def export_parquet(run_dir: str | os.PathLike, out_dir: str | os.PathLike | None = None) -> tuple[Path, Path | None]:
    """Write ``records.parquet`` (one row per trial; columns of
    :func:`perceptbench.record_table.records_to_arrow`) and, when ``scores.json`` exists,
    ``scores.parquet`` (task_id, model, metric: string; value, ci_low, ci_high: float64,
    NaN/None as null; n, n_null, n_draws, n_dropped, seed: int64; note: string) into
    ``out_dir`` (default: the run directory).  Files are written to a temporary name and
    renamed.  Returns (records path, scores path or None).  Raises
    :class:`~perceptbench.records.RecordError` for a missing or invalid records file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..record_table import iter_task_records, records_to_arrow

    run_dir = Path(run_dir)
    run = RunDir(run_dir)
    out = RunDir(out_dir) if out_dir is not None else run
    out.root.mkdir(parents=True, exist_ok=True)
    rec_path = out.records_parquet
    tasks = iter_task_records(run.records)
    first = next(tasks, None)
    if first is not None:  # no records, no file (as before)
        with atomic_write(rec_path, "wb") as f:
            t = records_to_arrow(first[1])
            with pq.ParquetWriter(f, t.schema) as writer:
                writer.write_table(t)
                for _, recs in tasks:
                    writer.write_table(records_to_arrow(recs))
    scores_json = run.scores_json
    if not scores_json.exists():
        return rec_path, None
    rows = json.loads(scores_json.read_text())
    schema = pa.schema([(c, pa.string() if t == "string" else pa.float64() if t == "float64" else pa.int64())
                        for c, t in SCORE_COLUMNS])
    table = pa.table({c: pa.array([r.get(c) for r in rows], schema.field(c).type) for c, _ in SCORE_COLUMNS},
                     schema=schema)
    sc_path = out.scores_parquet
    with atomic_write(sc_path, "wb") as f:
        pq.write_table(table, f)
    return rec_path, sc_path
