"""The ``--out`` checks: what a command may write to, refusing to overwrite files it did not write."""

from __future__ import annotations

from pathlib import Path

from .errors import fail

REPORT_MARKER = '<meta name="generator" content="perceptbench report">'
"""Written into the head of every HTML report (:mod:`perceptbench.reports`); ``report --out``
overwrites an existing file only when it carries this line."""


def _is_our_report(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return REPORT_MARKER.encode() in f.read(4096)
    except OSError:
        return False


def _is_our_scores(path: Path) -> bool:
    """True when ``path`` is a scores table `score` wrote: ``.csv`` whose first line is the
    ScoreRow header, or ``.json`` holding a list of rows with ``task_id`` (or an empty list)."""
    from ..core.rows import ScoreRow

    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace")
    except OSError:
        return False
    if path.suffix.lower() == ".json":
        body = head.lstrip()
        return body.startswith("[") and (body[1:].lstrip().startswith("]") or '{"task_id"' in body)
    return head.splitlines()[:1] == [",".join(ScoreRow.CSV_COLUMNS)]


def _is_our_parquet(path: Path, columns: tuple[str, ...]) -> bool:
    """True when ``path`` is a parquet file whose schema holds ``columns`` (what `export` writes)."""
    try:
        import pyarrow.parquet as pq

        return set(columns) <= set(pq.read_schema(path).names)
    except Exception:  # not parquet, unreadable: not ours
        return False


def _refuse_foreign(path: Path, ours: bool, what: str, default: bool = False) -> None:
    if path.exists() and (path.is_dir() or not ours):
        fail(f"{'' if default else '--out: '}{path} exists and is not a perceptbench {what}; refusing to "
             f"overwrite it ({'give --out to write elsewhere' if default else 'give another --out'})")


def check_out(out: Path, must_be: str, *, default: bool = False) -> None:
    """One-line error unless ``--out`` can be what the command writes: ``dir`` (any directory),
    ``run`` (a new directory, an empty one, or a run directory: one holding run.json or
    records.jsonl), ``file`` (the scores CSV file: new, or a scores table `score` wrote, and the
    same for the ``.json`` beside it), ``export`` (a directory whose records.parquet /
    scores.parquet, if present, are exports) or ``report`` (a new ``.html`` file, or an HTML
    report this tool wrote before).  ``default``: ``out`` is the command's own default (no
    ``--out`` was given), and the errors name the path and say to give ``--out``, not another one."""
    where = f"{out} (the default output)" if default else f"--out {out}"
    instead = "give --out to write elsewhere" if default else "give another --out"
    if must_be in ("dir", "run", "export") and out.exists() and not out.is_dir():
        fail(f"{where} is a file; it must be a directory (a new one, or one this command wrote before)")
    if must_be == "run":
        from ..runs import foreign_out_dir

        try:
            why = foreign_out_dir(out)
        except OSError as e:
            why = f"{out}: cannot list the directory ({e})"
        if why:
            fail(f"--out {why}")
    if must_be == "file":
        if out.is_dir():
            fail(f"--out {out} is a directory; --out must be the path of the scores CSV file "
                  f"(e.g. {out / 'scores.csv'})")
        for p in (out, out.with_suffix(".json")):  # write_scores writes both
            _refuse_foreign(p, _is_our_scores(p), f"scores table ({p.suffix.lstrip('.')})")
    if must_be == "export" and out.is_dir():
        _refuse_foreign(out / "records.parquet", _is_our_parquet(out / "records.parquet", ("trial_id", "task_id")),
                        "records.parquet export", default)
        _refuse_foreign(out / "scores.parquet", _is_our_parquet(out / "scores.parquet", ("task_id", "metric", "value")),
                        "scores.parquet export", default)
    if must_be == "report":
        if out.is_dir():
            fail(f"--out {out} is a directory; --out must be the path of the report's HTML file "
                  f"(e.g. {out / 'report.html'})")
        if out.suffix.lower() != ".html":  # one rule, as the README says: .htm refused too
            fail(f"--out {out}: the report is an HTML page; --out must end in .html "
                  f"(e.g. {out.with_suffix('.html')})")
        if out.exists() and not _is_our_report(out):
            fail(f"{where} exists and is not a perceptbench report; refusing to overwrite it "
                  f"({'give --out with a new .html path' if default else 'give a new .html path, or the path of a report this command wrote before'})")
        md = out.with_suffix(".md")
        if md.exists() and not md.read_text(encoding="utf-8", errors="replace").startswith("# perceptbench report"):
            fail(f"{where}: the Markdown summary would overwrite {md}, which is not a perceptbench "
                  f"report summary; {instead}")
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if parent.exists() and not parent.is_dir():
        fail(f"--out {out}: {parent} is a file, so nothing can be written below it")
