"""``report --figures DIR``: the report's figures and tables as files for a manuscript.

Per figure (:class:`~.figures.Drawn`, drawn by the same function the HTML page inlines):
``<name>.pdf`` and ``<name>.svg`` (vector, text kept as text: TrueType in the PDF, ``<text>``
in the SVG), ``<name>.png`` (300 dpi, the least journals accept for colour and greyscale
images, e.g. Elsevier's artwork guidelines and IEEE's graphics guidelines; for line art they
ask for more, or the vector files) and ``<name>.csv`` (its tidy data,
:data:`~.figures.DATA_COLUMNS`).  Per table (:class:`~.tables.Table`): ``<name>.csv`` and
``<name>.tex``.  The files are deterministic: no creation date in the PDF or SVG metadata and
a fixed SVG id salt, so two reports of the same run are byte-identical.  Every file is
written through a temporary name and a rename; :data:`MANIFEST` lists them with their
sha256, and a file of DIR is overwritten only when it is still as this command wrote it.
No torch."""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from ..core.rundir import write_atomic
from ..core.urls import redact_urls_in
from .figures import DATA_COLUMNS, RC, Drawn
from .tables import Table, to_latex

__all__ = ["MANIFEST", "PNG_DPI", "check_figures_dir", "figure_file_contents", "write_figure_files"]

PNG_DPI = 300
"""Resolution of the PNG files, dots per inch (module docstring)."""

PDF_METADATA = {"CreationDate": None, "Creator": "perceptbench report"}
SVG_METADATA = {"Date": None, "Creator": "perceptbench report"}


def check_figures_dir(path: str | os.PathLike) -> Path:
    """Check, writing nothing, that ``path`` can take the figure files: an existing writable
    directory, or a new one below a writable directory (:func:`write_figure_files` creates it and
    its missing parents, as ``report --out`` does).  Raises ValueError, one line naming the path
    and the problem."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"--figures {p} is a file; --figures must be a directory (a new one, or an existing one)")
    where = p
    while not where.exists() and where != where.parent:  # the nearest folder that exists
        where = where.parent
    if not where.is_dir():
        raise ValueError(f"--figures {p}: {where} is a file, so nothing can be written below it; "
                         "give another --figures")
    if not os.access(where, os.W_OK | os.X_OK):
        raise ValueError(f"--figures {p}: {'the directory' if where == p else 'its parent ' + str(where)} "
                         "is not writable; give another --figures")
    return p


def _csv_text(columns, rows) -> str:
    """CSV text, cells as in scores.csv (:func:`perceptbench.scoring.csv_cell`; with a
    ``metric`` column, a count metric's value and interval as integers)."""
    from ..scoring import SCORE_VALUE_COLUMNS, csv_cell

    mi = columns.index("metric") if "metric" in columns else None
    by_metric = [c in SCORE_VALUE_COLUMNS and mi is not None for c in columns]
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([csv_cell(x, r[mi] if m else None) for x, m in zip(r, by_metric)])
    return buf.getvalue()


def _figure_bytes(fig, fmt: str) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    with plt.rc_context(RC):
        if fmt == "pdf":
            fig.savefig(buf, format="pdf", metadata=PDF_METADATA)
        elif fmt == "svg":
            fig.savefig(buf, format="svg", metadata=SVG_METADATA)
        else:
            fig.savefig(buf, format="png", dpi=PNG_DPI)
    return buf.getvalue()


MANIFEST = "perceptbench-figures.sha256"
"""The list of files ``--figures`` wrote into DIR, as ``sha256sum`` prints it (``HASH  NAME``;
``sha256sum -c`` checks it).  A file of DIR with one of the names to write is overwritten only
when this list holds it with its current hash: a file someone else wrote, or one edited since
(a hand-tuned ``.tex``), is never replaced."""


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _read_manifest(out: Path) -> dict[str, str]:
    try:
        text = (out / MANIFEST).read_text(encoding="utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return {}
    entries = {}
    for line in text.splitlines():
        digest, sep, name = line.partition("  ")
        if sep and len(digest) == 64:
            entries[name] = digest
    return entries


def figure_file_contents(drawn: list[Drawn], tables: list[Table]) -> dict[str, bytes]:
    """File name -> bytes of every file ``--figures`` writes: per figure ``NAME.pdf``,
    ``.svg``, ``.png``, ``.csv``; per table ``NAME.csv``, ``.tex``.  URL credentials (older
    records' ``model_version``) are redacted in the text files, as on the page.  Raises
    ValueError if two files would share a name."""
    files: dict[str, bytes] = {}

    def put(name: str, data: bytes | str) -> None:
        if name in files:
            raise ValueError(f"two report files named {name}")
        files[name] = data.encode("utf-8") if isinstance(data, str) else data

    for d in drawn:
        for fmt in ("pdf", "svg", "png"):
            put(f"{d.name}.{fmt}", _figure_bytes(d.fig, fmt))
        put(f"{d.name}.csv", redact_urls_in(_csv_text(DATA_COLUMNS, [[r[c] for c in DATA_COLUMNS] for r in d.rows])))
    for t in tables:
        put(f"{t.name}.csv", redact_urls_in(_csv_text(t.columns, t.rows)))
        put(f"{t.name}.tex", redact_urls_in(to_latex(t)))
    return files


def write_figure_files(out_dir: str | os.PathLike, drawn: list[Drawn], tables: list[Table]) -> list[Path]:
    """Write every figure of ``drawn`` as PDF, SVG, PNG and CSV and every table of ``tables``
    as CSV and LaTeX into ``out_dir`` (created with its missing parents), then the
    :data:`MANIFEST`; the figures stay open (the caller closes them).  Returns the paths
    written, in order (the manifest last).

    Raises ValueError, writing nothing, when a file to write exists in ``out_dir`` and the
    manifest does not hold it with its current content (not written by this command, or
    changed since); OSError when a file cannot be written (each file is written through a
    temporary name and a rename, so the files already written stay whole)."""
    out = Path(out_dir)
    files = figure_file_contents(drawn, tables)
    known = _read_manifest(out)
    for name in files:
        p = out / name
        if p.exists() and (not p.is_file() or known.get(name) != _sha256(p.read_bytes())):
            why = "was changed since perceptbench report wrote it" if name in known else \
                "was not written by perceptbench report"
            raise ValueError(f"--figures {out}: {name} exists and {why}; refusing to overwrite it "
                             "(move it away, or give another --figures)")
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_atomic(out / name, data) for name, data in files.items()]
    kept = {n: h for n, h in known.items() if n not in files and (out / n).is_file()}  # earlier runs' other files
    entries = sorted({**kept, **{n: _sha256(b) for n, b in files.items()}}.items())
    paths.append(write_atomic(out / MANIFEST, "".join(f"{h}  {n}\n" for n, h in entries)))
    return paths
