"""Resolve a pinned source file to a verified local path.

Order: ``PERCEPTBENCH_MIRROR`` (a local directory laid out like the data mirror) if set;
else the per-user cache (``PERCEPTBENCH_CACHE`` or ``~/.cache/perceptbench``), downloading
from the canonical URL on a miss.  Every file is checked against its pinned sha256 before
it is used; a download goes to a temporary file and is renamed only once verified.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..seeding import file_sha256 as sha256_file
from .registry import Source, SourceFile

MIRROR_ENV = "PERCEPTBENCH_MIRROR"
CACHE_ENV = "PERCEPTBENCH_CACHE"


class SourceError(RuntimeError):
    """A source file could not be made available."""


class ChecksumError(SourceError):
    """A file's sha256 differs from the pinned one (message: file, expected, actual)."""


class MissingSourceError(SourceError):
    """A source file is neither in the mirror/cache nor downloadable."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "perceptbench")




_verified: dict[tuple[str, float, int], str] = {}


def verify(sf: SourceFile, path: Path, *, in_mirror: bool = False) -> Path:
    """Check ``path`` against ``sf.sha256``; raises :class:`ChecksumError` naming both hashes.

    The remedy in the message depends on where the file is: a file in the read-only
    mirror (``in_mirror``) must be replaced there (perceptbench never downloads into a
    mirror); a cached file can be deleted so that the next fetch downloads it again."""
    st = path.stat()
    key = (str(path), st.st_mtime, st.st_size)
    actual = _verified.get(key) or sha256_file(path)
    if actual != sf.sha256:
        fix = (f"The mirror ({MIRROR_ENV}) is used as is and nothing is downloaded into it: replace the file with "
               f"a good copy from {sf.url}, or unset {MIRROR_ENV} to use the download cache."
               if in_mirror else
               "Delete the file and run `perceptbench sources fetch` to download it again.")
        raise ChecksumError(
            f"checksum mismatch for {path} (source file {sf.path}): expected sha256 {sf.sha256}, "
            f"got {actual}. {fix}")
    _verified[key] = actual
    return path


def _download(sf: SourceFile, dest: Path, progress=None) -> None:
    import httpx

    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with httpx.stream("GET", sf.url, follow_redirects=True, timeout=60) as r:
            r.raise_for_status()
            with open(tmp, "wb") as f:
                for chunk in r.iter_bytes():
                    f.write(chunk)
                    if progress is not None:
                        progress(len(chunk))
    except (httpx.HTTPError, OSError) as e:
        tmp.unlink(missing_ok=True)
        raise MissingSourceError(
            f"could not download {sf.path} from {sf.url}: {e}. Without internet, set "
            f"{MIRROR_ENV}=DIR to a local copy laid out like the data mirror.") from e
    try:
        verify(sf, tmp)
    except ChecksumError:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, dest)


def resolve(sf: SourceFile, *, download: bool = True) -> Path:
    """Local, verified path of a source file.

    Raises :class:`MissingSourceError` (with how to fetch it or set the mirror) or
    :class:`ChecksumError`.
    """
    mirror = os.environ.get(MIRROR_ENV)
    if mirror:
        if not Path(mirror).is_dir():
            raise MissingSourceError(
                f"{MIRROR_ENV}={mirror}: the mirror directory does not exist. Point {MIRROR_ENV} at the "
                f"data mirror, or unset it to download into the cache {cache_dir()}.")
        p = Path(mirror) / sf.path
        if not p.exists():
            raise MissingSourceError(
                f"{sf.path} is not in the mirror {mirror} ({MIRROR_ENV}); expected it at {p}. "
                f"Unset {MIRROR_ENV} to download it from {sf.url}.")
        return verify(sf, p, in_mirror=True)
    p = cache_dir() / sf.path
    if p.exists():
        return verify(sf, p)
    if not download:
        raise MissingSourceError(
            f"{sf.path} is not cached at {p}; run `perceptbench sources fetch` or set {MIRROR_ENV}.")
    _download(sf, p)
    return p


def fetch_source(source: Source, *, progress: bool = True) -> list[Path]:
    """Fetch (or verify) every file of a source, with a rich progress bar."""
    from rich.progress import Progress

    paths = []
    with Progress(disable=not progress) as bar:
        task = bar.add_task(f"{source.id}", total=sum(f.size for f in source.files))
        for sf in source.files:
            paths.append(resolve(sf))
            bar.advance(task, sf.size)
    return paths
