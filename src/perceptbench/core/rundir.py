"""The run directory: every path in it, ``run.json``, the records lock and atomic writes.

A run directory (``perceptbench run --out DIR``) holds::

    run.json            the settings a rerun must match (seed, package version, created;
                        what an --allow-mixed resume allowed; the inputs of a merge)
    records.jsonl       the trial records, append-only (perceptbench.records.RecordStore)
    scores.csv/.json    the scores under the default parser; scores.MODE.csv/.json under another
    models.csv          the models' declared metadata (family, objective, ...), when a run declares any
    features/           VSI encoder-LLM probe features (seed 002 §2.4), read with numpy at scoring
    stimuli/            rendered stimulus images written by ``perceptbench show``
    report.html/.md     the default place of ``perceptbench report``
    records.parquet, scores.parquet   ``perceptbench export``

:class:`RunDir` is the one place these names are spelled.  ``run.json`` is read and
written only through it, and every write happens under the *records lock*: an exclusive
``flock`` on ``records.jsonl``, the lock :class:`perceptbench.records.RecordStore` holds for
as long as it is open (:class:`RecordsLock`).  A process that holds the store writes
``run.json`` inside it; one that does not takes the lock for the write, so two processes
never write one run directory at once.  Every file is written through :func:`atomic_write`
(a temporary file beside the target, then ``os.replace``: a reader sees the old file or the
new one, never half of one).

Imports nothing of perceptbench but the package version (the bottom layer).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator

from .version import __version__

__all__ = ["RunDir", "RecordsLock", "atomic_write", "write_atomic", "RUN_DIR_MARKERS", "OS_JUNK_FILES"]

RUN_JSON = "run.json"
RECORDS = "records.jsonl"
SCORES_CSV = "scores.csv"
MODELS_CSV = "models.csv"
FEATURES = "features"
STIMULI = "stimuli"
REPORT_HTML = "report.html"
RECORDS_PARQUET = "records.parquet"
SCORES_PARQUET = "scores.parquet"

RUN_DIR_MARKERS: tuple[str, ...] = (RUN_JSON, RECORDS)
"""A directory holding one of these is a run directory (``perceptbench run`` wrote it)."""

OS_JUNK_FILES: frozenset[str] = frozenset({".ds_store", "thumbs.db", "ehthumbs.db", "desktop.ini", ".directory",
                                           ".localized"})
"""Names (compared case-insensitively) that file managers drop into any folder they show
(macOS Finder, Windows Explorer, KDE Dolphin): a directory holding only these counts as empty."""


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *, fsync: bool = False,
                 encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO]:
    """Open a temporary file beside ``path`` for writing; on a clean exit move it onto
    ``path`` with ``os.replace`` (atomic on POSIX and Windows), on an exception delete it.

    ``mode``: ``"w"`` (text, ``encoding``/``newline`` as for :func:`open`) or ``"wb"``.
    ``fsync``: flush the data to disk before the rename (survives a power loss, not only a
    crash).  The temporary name is ``.NAME.PID-THREAD.tmp`` (hidden, unique per writer), created
    with the default permissions (``0o666`` less the umask, as ``open`` would).  Creates the
    parent directory.  Raises what ``open``/``os.replace`` raise (OSError), its ``filename``
    always ``path`` (a full disk or a read-only folder then names the file meant)."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode {mode!r}: must be 'w' or 'wb'")
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        kw = {} if mode == "wb" else {"encoding": encoding, "newline": newline}
        with open(tmp, mode, **kw) as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), str(path)) from e
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, data: str | bytes, *, fsync: bool = False) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` through :func:`atomic_write`;
    returns ``path``."""
    with atomic_write(path, "wb" if isinstance(data, bytes) else "w", fsync=fsync) as f:
        f.write(data)
    return Path(path)


_HELD: dict[str, "RecordsLock"] = {}
"""The records locks this process holds, by resolved path (so that :meth:`RunDir.locked`
does not ask again for a lock this process already holds: a second ``flock`` on another
descriptor of the same file would be refused)."""
_HELD_GUARD = threading.Lock()


class RecordsLock:
    """An exclusive ``flock`` on a records file, held until :meth:`release`.

    Opens ``path`` (creating it, mode ``0o644``, ``O_RDWR | O_APPEND``) and locks it without
    waiting; :attr:`fd` is the descriptor (the record store appends through it).  Raises
    ``RuntimeError`` naming the file when another process (or another open store in this
    one) holds the lock, OSError when the file cannot be opened."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            self.fd = -1
            raise RuntimeError(f"{self.path} is being written by another perceptbench process") from None
        self._key = str(self.path.resolve())
        with _HELD_GUARD:
            _HELD[self._key] = self

    @property
    def held(self) -> bool:
        """True until :meth:`release`."""
        return self.fd >= 0

    def release(self) -> None:
        """Unlock and close (idempotent)."""
        if self.fd >= 0:
            with _HELD_GUARD:
                if _HELD.get(self._key) is self:
                    del _HELD[self._key]
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = -1


@dataclass(frozen=True)
class RunDir:
    """The files of one run directory ``root`` (see the module docstring for the layout).

    Paths are attributes; nothing is created until something is written.  ``run.json`` is
    read with :meth:`read_run_json` and written with :meth:`write_run_json`,
    :meth:`update_run_json` or :meth:`start`, always under the records lock."""

    root: Path

    def __init__(self, root: str | os.PathLike):
        object.__setattr__(self, "root", Path(root))

    @classmethod
    def beside(cls, records_file: str | os.PathLike) -> "RunDir":
        """The run directory a records file lies in (its scores, features ... are beside it)."""
        return cls(Path(records_file).parent)

    @property
    def run_json(self) -> Path:
        return self.root / RUN_JSON

    @property
    def records(self) -> Path:
        return self.root / RECORDS

    @property
    def scores_csv(self) -> Path:
        """``scores.csv``: the scores under the default parser (``scores.json`` beside it)."""
        return self.root / SCORES_CSV

    @property
    def scores_json(self) -> Path:
        return scores_json_for(self.scores_csv)

    def scores_for(self, parser_mode: str = "default") -> Path:
        """``scores.csv`` for the default parser, ``scores.MODE.csv`` for another (so a
        non-default parser never overwrites the default table)."""
        return self.scores_csv if parser_mode == "default" else self.root / f"scores.{parser_mode}.csv"

    @property
    def models_csv(self) -> Path:
        """``models.csv``: the declared model metadata of ``run.json``'s ``models``, one row per model."""
        return self.root / MODELS_CSV

    @property
    def features(self) -> Path:
        return self.root / FEATURES

    @property
    def stimuli(self) -> Path:
        return self.root / STIMULI

    @property
    def report_html(self) -> Path:
        return self.root / REPORT_HTML

    @property
    def records_parquet(self) -> Path:
        return self.root / RECORDS_PARQUET

    @property
    def scores_parquet(self) -> Path:
        return self.root / SCORES_PARQUET

    def has_records(self) -> bool:
        """True when ``records.jsonl`` exists and is not empty (a run to resume)."""
        try:
            return self.records.stat().st_size > 0
        except OSError:
            return False

    def count_records(self) -> int:
        """Lines in ``records.jsonl`` (0 when there is none): records written so far."""
        try:
            return self.records.read_bytes().count(b"\n")
        except OSError:
            return 0

    def foreign_reason(self) -> str | None:
        """Why ``root`` must not become a run directory, or None when it may.

        ``root`` may be new, an empty directory, or a run directory (to resume).  An existing
        non-empty directory holding neither ``run.json`` nor ``records.jsonl`` was not written
        by perceptbench: writing run files beside the user's own files is refused (the reason
        names one of them).  File-manager junk (:data:`OS_JUNK_FILES`, e.g. ``.DS_Store``) does
        not count: a directory holding only such files is empty.  A file is refused too, and so
        is a ``run.json`` or ``records.jsonl`` that is a symbolic link leaving ``root``.
        Raises OSError when the directory cannot be listed."""
        p = self.root
        if not p.exists():
            return None
        if not p.is_dir():
            return f"{p} is a file; a run directory must be a directory (a new one, or one this command wrote before)"
        for m in RUN_DIR_MARKERS:  # never write through a link to a file outside the run directory
            f = p / m
            if f.is_symlink() and not f.resolve().is_relative_to(p.resolve()):
                return (f"{f} is a symbolic link to {f.resolve()}, outside {p}: perceptbench writes only inside its "
                        "run directory (copy the file in, or give a new --out)")
        if any((p / m).exists() for m in RUN_DIR_MARKERS):
            return None
        content = sorted(x.name for x in p.iterdir() if x.name.lower() not in OS_JUNK_FILES)
        if not content:
            return None
        more = f" and {len(content) - 1} more" if len(content) > 1 else ""
        return (f"{p} is a directory that perceptbench did not write (it holds {content[0]!r}{more} but no "
                "run.json or records.jsonl); give a new or empty directory, or a run directory to resume")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the records lock for the block (``records.jsonl`` is created if missing).

        Re-entrant within a process: when this process already holds it (an open
        :class:`~perceptbench.records.RecordStore`), nothing more is taken.  Raises
        ``RuntimeError`` when another process holds it."""
        with _HELD_GUARD:
            held = str(self.records.resolve()) in _HELD
        if held:
            yield
            return
        lock = RecordsLock(self.records)
        try:
            yield
        finally:
            lock.release()

    def read_run_json(self) -> dict[str, Any] | None:
        """The contents of ``run.json``, or None when there is none.  Raises ValueError naming
        the file when it is not a JSON object."""
        try:
            text = self.run_json.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{self.run_json}: not valid JSON ({e.msg}, line {e.lineno}); "
                             "it is not a run.json perceptbench wrote") from None
        if not isinstance(data, dict):
            raise ValueError(f"{self.run_json}: not a JSON object; it is not a run.json perceptbench wrote")
        return data

    def declared_models(self) -> dict[str, Any]:
        """``run.json``'s ``models`` object (the declared model metadata), ``{}`` when there is none
        or run.json cannot be read (the metadata is optional to scoring and reports, which read
        records alone)."""
        try:
            data = self.read_run_json() or {}
        except (ValueError, OSError):  # not JSON, not UTF-8, unreadable: go on from the records
            return {}
        models = data.get("models")
        return models if isinstance(models, dict) else {}

    def write_run_json(self, data: dict[str, Any]) -> Path:
        """Replace ``run.json`` with ``data`` (indented JSON; values JSON cannot hold as
        ``str``), atomically and under the records lock."""
        with self.locked():
            return write_atomic(self.run_json, json.dumps(data, indent=1, default=str))

    def update_run_json(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Read ``run.json`` (``{}`` when absent), let ``change`` modify the dict in place and
        write it back; the read and the write under one hold of the records lock.  Returns
        the new contents."""
        with self.locked():
            data = self.read_run_json() or {}
            change(data)
            self.write_run_json(data)
            return data

    def start(self, seed: int, **fields: Any) -> None:
        """Begin (or resume) a run of ``seed`` here, under the records lock.

        A directory that already holds records and a ``run.json`` is resumed: ValueError
        (naming the directory and both seeds) when its seed differs.  Otherwise a fresh
        ``run.json`` is written: ``seed``, ``package_version``, ``created`` (UTC, ISO 8601)
        and ``fields`` (e.g. ``merged_from``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self.locked():
            prev = self.read_run_json()
            if prev is not None and self.has_records():
                if prev.get("seed") != seed:
                    raise ValueError(f"{self.root} holds a run with seed {prev.get('seed')}; rerun with --seed "
                                     f"{prev.get('seed')} to resume it, or choose a new --out for seed {seed}")
                return
            self.write_run_json({"seed": seed, "package_version": __version__,
                                 "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields})


def scores_json_for(csv_path: str | os.PathLike) -> Path:
    """The ``.json`` table written beside a scores CSV (same name, suffix ``.json``)."""
    return Path(csv_path).with_suffix(".json")
