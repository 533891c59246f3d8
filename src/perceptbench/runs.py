"""Several runs -> one list of trial records (merge by ``trial_id``).

Two run directories of the same seed share their human records and may share model
trials (a rerun into a new directory, or one model per machine).  :func:`load_runs`
reads them all and merges by ``trial_id``:

- **Identical duplicates collapse** to the first one read.  Two records are identical
  when every field agrees except ``run_meta.run_id`` (which names the run that wrote
  the record, so it differs between any two runs by construction) and
  ``run_meta.data_location`` (where the images lay on the machine that ran it).  Everything else
  must agree: the response, raw output, ground truth, prompt hash, ``run_meta.seed``,
  ``model_version``, ``stimulus_sha256``, ``settings`` (e.g. the batch size),
  ``package_version`` and every other ``run_meta`` key.  A trial that differs in any of
  these is not the same observation, so keeping either silently would hide a difference.
- **Conflicting duplicates are refused**: :class:`~perceptbench.records.RecordError`
  in one line naming the trial id, both records as ``FILE:LINE``, the first differing field
  by its path (``response``, ``run_meta.vsi.logprobs[3]``) and both values, each cut to
  :data:`SHOWN_CHARS` characters (:func:`conflict_message`).
- **Different seeds are refused**: stimuli, splits and shuffles depend on the seed, so
  records of two seeds do not describe the same trials; the error names both files and
  their seeds.

Reading never writes: the inputs are left as they are (a torn final line, the trace of
a crash, is skipped as in :func:`perceptbench.records.read_records`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from .core.rundir import OS_JUNK_FILES, RUN_DIR_MARKERS, RunDir  # noqa: F401 (re-exported)
from .records import RecordError, TrialRecord, read_numbered_records

IGNORED_RUN_META: tuple[str, ...] = ("run_id", "data_location")
"""``run_meta`` keys that may differ between identical duplicates (see the module docstring):
the run that wrote the record, and where the task's data lay on that machine (an image
folder; the data themselves are named by the task id, :attr:`perceptbench.tasks.base.Task.content_settings`)."""


def records_path(path: str | Path) -> Path:
    """The ``records.jsonl`` of a run directory, or ``path`` itself when it is a file.

    Raises :class:`~perceptbench.records.RecordError` when ``path`` does not exist or is
    a directory without ``records.jsonl``."""
    p = Path(path)
    if p.is_dir():
        f = RunDir(p).records
        if not f.is_file():
            raise RecordError(f"{p}: not a run directory (no records.jsonl in it)")
        return f
    if not p.exists():
        raise RecordError(f"{p}: no such run directory or records file")
    return p


def _comparable(r: TrialRecord) -> dict[str, Any]:
    d = r.model_dump(mode="json")
    for k in IGNORED_RUN_META:
        d["run_meta"].pop(k, None)
    return d


SHOWN_CHARS = 80
"""At most this many characters of each differing value in a conflict message (longer values end
in ``...``): a VSI ``run_meta.vsi`` holds 50 log-probabilities, and a raw output can be a page."""


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()
"""What :func:`first_difference` gives for the side that lacks a key or a list item (shown ``<absent>``)."""


def _shown(v: Any) -> str:
    """``v`` as JSON (as the records file holds it; ``<absent>`` for a missing key or list item), cut
    to :data:`SHOWN_CHARS` characters ending in ``...``."""
    text = repr(v) if v is ABSENT else json.dumps(v, ensure_ascii=False)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def first_difference(a: Any, b: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first place two JSON values differ: ``(dotted path, value in a, value in b)``, or None
    when they are equal.

    Objects are walked key by key (``a``'s keys in order, then those only ``b`` has; a missing key
    is :data:`ABSENT`), lists item by item (``logprobs[3]``; past the end of the shorter list its
    item is :data:`ABSENT`); any other difference is reported where it lies (the root: ``path``,
    empty for two unequal scalars).  Equality is Python's ``==``, the comparison that decides a
    conflict in :func:`load_runs`."""
    if a == b:
        return None
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            found = first_difference(a.get(k, ABSENT), b.get(k, ABSENT), f"{path}.{k}" if path else str(k))
            if found is not None:
                return found
    if isinstance(a, list) and isinstance(b, list):
        for i in range(max(len(a), len(b))):
            found = first_difference(a[i] if i < len(a) else ABSENT, b[i] if i < len(b) else ABSENT,
                                     f"{path}[{i}]")
            if found is not None:
                return found
    return path, a, b


def conflict_message(trial_id: str, first: tuple[Path, int], second: tuple[Path, int], a: dict, b: dict) -> str:
    """The one-line refusal of two records with one ``trial_id`` that differ: the trial id, both
    records as ``FILE:LINE``, the first differing field by its dotted path (:func:`first_difference`
    of their comparable forms ``a`` and ``b``) and both values, each cut to :data:`SHOWN_CHARS`
    characters, then how to resolve it.  Raises ValueError when ``a`` and ``b`` do not differ."""
    found = first_difference(a, b)
    if found is None:
        raise ValueError(f"trial {trial_id!r}: the two records do not differ; there is no conflict to describe")
    where, va, vb = found
    return (f"trial {trial_id!r} differs between {first[0]}:{first[1]} and {second[0]}:{second[1]}, first in "
            f"{where}: {_shown(va)} vs {_shown(vb)}; conflicting trials cannot be merged (keep one run, "
            "or rerun the model under another short name)")


def load_runs(paths: Sequence[str | Path]) -> list[TrialRecord]:
    """Read the records of several runs and merge them by ``trial_id``.

    Parameters
    ----------
    paths:
        Run directories (each holding ``records.jsonl``) or records files, in any mix.
        The same seed throughout.

    Returns
    -------
    list[TrialRecord]
        Every distinct trial once, in the order first read (path by path, line by line).

    Raises
    ------
    RecordError
        No path given; a path that does not exist, is not a run directory, holds an
        invalid record or holds no record at all; two records with one ``trial_id`` that
        differ in a field other than those of :data:`IGNORED_RUN_META` (names the trial id,
        both records' file and line, the first differing field and both values, shortened:
        :func:`conflict_message`); records of different ``run_meta.seed`` values (names both files).
    """
    if not paths:
        raise RecordError("no run directory or records file given")
    merged: dict[str, TrialRecord] = {}
    origin: dict[str, tuple[Path, int]] = {}
    comparable: dict[str, dict] = {}
    first_seed: tuple[int, Path] | None = None
    for p in paths:
        f = records_path(p)
        recs = read_numbered_records(f)
        if not recs:
            raise RecordError(f"{f}: holds no trial records (an empty records file is not a run)")
        for line, r in recs:
            s = r.run_meta.seed
            if first_seed is None:
                first_seed = (s, f)
            elif s != first_seed[0]:
                raise RecordError(
                    f"{f} holds records of seed {s} but {first_seed[1]} of seed {first_seed[0]}: "
                    "runs of different seeds show different stimuli and cannot be merged "
                    "(summarise them over seeds with perceptbench score RUN... --across-seeds)")
            prev = merged.get(r.trial_id)
            if prev is None:
                merged[r.trial_id] = r
                origin[r.trial_id] = (f, line)
                continue
            cur = _comparable(r)
            if r.trial_id not in comparable:
                comparable[r.trial_id] = _comparable(prev)
            if cur != comparable[r.trial_id]:
                raise RecordError(conflict_message(r.trial_id, origin[r.trial_id], (f, line),
                                                   comparable[r.trial_id], cur))
    return list(merged.values())


def merge_features(records_files: Sequence[Path], dest: str | Path) -> tuple[int, list[str]]:
    """Copy the probe features (``features/``: one ``.json`` sidecar per (model, task), with its
    ``.npz`` when features were written; :mod:`perceptbench.vsi.features`) of each run beside
    ``records_files`` into the folder ``dest``, so a merged VSI run keeps its probe rows.

    A (model, task) found in several runs is taken from the first that has it; a later run's files
    under the same name that differ in bytes (e.g. the witness encoder's features of one task,
    computed on two machines) are left out and their names returned, so the caller can say so.
    Returns (files copied, the differing names: ``features/NAME.json`` sorted).  Raises OSError
    when a file cannot be read or written."""
    import shutil

    dest = Path(dest)
    chosen: dict[str, Path] = {}  # sidecar stem -> the features folder it is taken from
    differing: set[str] = set()
    for rec in records_files:
        folder = RunDir.beside(rec).features
        for side in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            first = chosen.setdefault(side.stem, folder)
            if first is folder:
                continue
            for ext in (".json", ".npz"):
                a, b = first / (side.stem + ext), folder / (side.stem + ext)
                if a.exists() != b.exists() or (a.exists() and a.read_bytes() != b.read_bytes()):
                    differing.add(f"features/{side.stem}.json")
    n = 0
    for stem, folder in chosen.items():
        dest.mkdir(parents=True, exist_ok=True)
        for ext in (".json", ".npz"):
            if (folder / (stem + ext)).exists():
                shutil.copyfile(folder / (stem + ext), dest / (stem + ext))
                n += 1
    return n, sorted(differing)


def foreign_out_dir(out: str | Path) -> str | None:
    """Why ``out`` must not become a run directory, or None when it may
    (:meth:`perceptbench.core.rundir.RunDir.foreign_reason`)."""
    return RunDir(out).foreign_reason()
