"""Reading a benchmark through the Hugging Face ``datasets`` library (imported lazily):
from the hub, or from a local copy in the release's own format.  Not public API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._common import MissingExternalDataError

INSTALL_HINT = "pip install 'perceptbench[external]' (the Hugging Face `datasets` library)"


def _datasets(benchmark: str):
    try:
        import datasets  # noqa: PLC0415 - optional dependency
    except ImportError as e:
        raise ImportError(f"{benchmark} is read with the `datasets` library: {INSTALL_HINT}") from e
    return datasets


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"[:300]


def load_rows(
    source: str | Path | None,
    *,
    hub_id: str,
    split: str,
    revision: str | None,
    cache_dir: str | Path | None,
    benchmark: str,
    how_to_get: str,
) -> tuple[Any, str]:
    """A ``datasets.Dataset`` and a description of where it came from.

    ``source``: None -> the hub dataset ``hub_id`` (``split``, ``revision``); a ``.parquet`` /
    ``.csv`` / ``.json(l)`` file or a folder of such files -> that local copy (``datasets``'
    packaged builders); a folder written by ``Dataset.save_to_disk`` -> ``load_from_disk``.
    Raises ImportError (install hint) without ``datasets``; MissingExternalDataError (one
    line: what to get and where) when the local copy is missing or the hub cannot be reached.
    """
    ds_lib = _datasets(benchmark)
    if source is None:
        try:
            ds = ds_lib.load_dataset(hub_id, split=split, revision=revision,
                                     cache_dir=str(cache_dir) if cache_dir else None)
        except Exception as e:  # noqa: BLE001 - offline, gated, renamed: all the same to the user
            raise MissingExternalDataError(
                f"{benchmark}: could not load the hub dataset {hub_id} (split {split!r}"
                f"{', revision ' + revision if revision else ''}): {_one_line(e)}; {how_to_get}") from e
        return ds, f"hub:{hub_id}@{revision or 'main'}/{split}"
    p = Path(source).expanduser()
    if not p.exists():
        raise MissingExternalDataError(f"{benchmark}: dataset not found at {p}; {how_to_get}")
    kw = {"cache_dir": str(cache_dir)} if cache_dir else {}
    if p.is_dir() and ((p / "state.json").is_file() or (p / "dataset_dict.json").is_file()):
        ds = ds_lib.load_from_disk(str(p))
        if isinstance(ds, ds_lib.DatasetDict):
            if split not in ds:
                raise ValueError(f"{benchmark}: {p} has splits {sorted(ds)}, not {split!r}")
            ds = ds[split]
        return ds, f"disk:{p}"
    files = [p] if p.is_file() else sorted(
        f for ext in ("parquet", "csv", "jsonl", "json") for f in p.rglob(f"*.{ext}"))
    if not files:
        raise MissingExternalDataError(f"{benchmark}: no .parquet/.csv/.json files under {p}; {how_to_get}")
    builder = {"parquet": "parquet", "csv": "csv", "json": "json", "jsonl": "json"}
    kinds = {builder.get(f.suffix.lower().lstrip(".")) for f in files}
    if len(kinds) != 1 or None in kinds:
        raise ValueError(f"{benchmark}: {p} mixes file types {sorted(map(str, kinds))}; point source= at one file")
    kind = kinds.pop()
    ds = ds_lib.load_dataset(kind, data_files=[str(f) for f in files], split="train", **kw)
    return ds, f"file:{p}"
