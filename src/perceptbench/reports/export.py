"""``perceptbench export RUN_DIR --format parquet``: a run's records and scores as typed
parquet tables (pyarrow), for pandas, polars and duckdb users.  Reads records one task at
a time (:func:`perceptbench.record_table.iter_task_records`), so memory is bounded by the
largest task; scores are read from ``scores.json`` (run ``perceptbench score`` first)."""

from __future__ import annotations

import json
import os
from pathlib import Path

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
    out = Path(out_dir) if out_dir is not None else run_dir
    out.mkdir(parents=True, exist_ok=True)
    rec_path = out / "records.parquet"
    tmp = rec_path.with_name(rec_path.name + ".tmp")
    writer = None
    try:
        for _, recs in iter_task_records(run_dir / "records.jsonl"):
            t = records_to_arrow(recs)
            if writer is None:
                writer = pq.ParquetWriter(tmp, t.schema)
            writer.write_table(t)
        if writer is not None:
            writer.close()
            writer = None
            os.replace(tmp, rec_path)
    finally:
        if writer is not None:
            writer.close()
        tmp.unlink(missing_ok=True)
    scores_json = run_dir / "scores.json"
    if not scores_json.exists():
        return rec_path, None
    rows = json.loads(scores_json.read_text())
    schema = pa.schema([(c, pa.string() if t == "string" else pa.float64() if t == "float64" else pa.int64())
                        for c, t in SCORE_COLUMNS])
    table = pa.table({c: pa.array([r.get(c) for r in rows], schema.field(c).type) for c, _ in SCORE_COLUMNS},
                     schema=schema)
    sc_path = out / "scores.parquet"
    tmps = sc_path.with_name(sc_path.name + ".tmp")
    pq.write_table(table, tmps)
    os.replace(tmps, sc_path)
    return rec_path, sc_path
