"""Helpers shared by the external loaders: checked image folders, lazy image loaders,
resolved question files, seeded subsets.  Not public API."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Callable, Sequence

from PIL import Image

from ..seeding import rng_for
from ..stimuli.images import WHITE, load_image


class MissingExternalDataError(FileNotFoundError):
    """A benchmark's images or dataset are not where the user said; the message says what to
    get and where, in one line."""


def check_images_dir(images_dir: str | Path | None, benchmark: str, how_to_get: str) -> Path:
    """The image folder as a Path; raises MissingExternalDataError (one line) when it is None or
    not a directory."""
    if images_dir is None or str(images_dir).strip() == "":
        raise MissingExternalDataError(f"{benchmark}: no image directory given; {how_to_get}")
    p = Path(images_dir).expanduser()
    if not p.is_dir():
        raise MissingExternalDataError(f"{benchmark}: image directory not found: {p}; {how_to_get}")
    return p


def check_files_exist(paths: Sequence[Path], benchmark: str, images_dir: Path, how_to_get: str) -> None:
    """Raises MissingExternalDataError naming the first missing image and the count."""
    paths = list(dict.fromkeys(paths))  # one entry per image file, in order
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise MissingExternalDataError(
            f"{benchmark}: {len(missing)} of {len(paths)} images missing under {images_dir} "
            f"(first: {missing[0]}); {how_to_get}")


def refuse_duplicate_ids(ids: Sequence[object], where: str, what: str = "id") -> None:
    """Raise ValueError (one line) naming ``where``, the ids that occur more than once (the first
    three) and how many there are; a dataset that holds two questions under one id would
    otherwise lose one (scored as n - 1) or load two stimuli as one."""
    from collections import Counter

    dups = [str(i) for i, n in Counter(ids).items() if n > 1]
    if dups:
        more = f" and {len(dups) - 3} more" if len(dups) > 3 else ""
        raise ValueError(f"{where}: duplicate {what} {', '.join(repr(d) for d in dups[:3])}{more}: every "
                         "stimulus needs its own id (fix or deduplicate the file)")


def lazy_loader(obj, *, source: str, background=WHITE) -> Callable[[], Image.Image]:
    """A zero-argument callable that loads ``obj`` through :func:`load_image`."""
    return partial(load_image, obj, background=background, source=source)


def seeded_subset(n_total: int, limit: int | None, seed: int, *keys: object) -> list[int]:
    """Indices of a seeded subset of size ``limit`` (all when None), in original order.

    Drawn without replacement from ``rng_for(seed, *keys)``.  Raises ValueError for limit < 1.
    """
    if limit is None or limit >= n_total:
        return list(range(n_total))
    if int(limit) < 1:
        raise ValueError(f"limit must be a positive integer or None, got {limit!r}")
    idx = rng_for(seed, *keys).choice(n_total, size=int(limit), replace=False)
    return sorted(int(i) for i in idx)
