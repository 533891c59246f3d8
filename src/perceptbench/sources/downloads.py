"""Download a set of files that a release pins by commit only (no sha256 published), with a
manifest of the hashes computed at download.

Used for the Geirhos et al. (2019) cue-conflict images (:mod:`perceptbench.stimuli.cue_conflict`),
which the data mirror does not hold and whose release publishes no per-file checksum: a first
download cannot be checked against anything known in advance.  What it can do, and does:

* every file is fetched from its canonical URL (a raw URL at the pinned commit) with ``httpx``;
  transient failures (connection errors, timeouts, HTTP 429 and 5xx) are retried with
  ``tenacity`` (exponential wait), a 404 or another 4xx is not;
* a file is written to ``<name>.part`` and renamed into place only when complete (the
  ``Content-Length`` it announced, when it announced one, and the ``check`` of its first bytes,
  e.g. the PNG signature): a crash mid-download never leaves a half file under the final name;
* after the rename, its sha256 and size are appended to the manifest :data:`MANIFEST_NAME` in
  the download directory (one line per file, flushed and fsynced; a torn last line is ignored);
* a rerun skips the files the manifest lists and that are present (resume), downloads again a file
  that is present but not in the manifest (a crash between rename and manifest line), and checks
  every listed file against its recorded sha256, so a file changed after download is caught
  (:func:`verify_set`).

Errors are one line: :class:`DownloadError` (URL, file, why, what to do) and
:class:`~perceptbench.sources.fetch.ChecksumError` (file, recorded and actual sha256).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from ..seeding import file_sha256
from .fetch import ChecksumError, MissingSourceError, SourceFile, verify

__all__ = ["MANIFEST_NAME", "PinnedFile", "DownloadError", "DownloadSummary", "read_manifest", "verify_set",
           "download_set"]

MANIFEST_NAME = "perceptbench-manifest.tsv"
"""The manifest written beside downloaded files: ``path  sha256  bytes  url`` per line (tab-separated,
``path`` relative to the download directory), after ``#`` comment lines and a header."""

_HEADER = "path\tsha256\tbytes\turl"


@dataclass(frozen=True)
class PinnedFile:
    """One file to download: ``relpath`` under the download directory (``/``-separated) and its
    canonical ``url`` (at a pinned commit)."""

    relpath: str
    url: str


class DownloadError(MissingSourceError):
    """A file could not be downloaded (message: the file, the URL, why, and what to do)."""


@dataclass
class DownloadSummary:
    """What :func:`download_set` did: files ``downloaded`` now, files ``present`` already (listed in
    the manifest and matching their recorded sha256), the ``manifest`` path."""

    downloaded: int = 0
    present: int = 0
    manifest: Path | None = None
    paths: dict[str, Path] = field(default_factory=dict)


def _hex64(s: str) -> bool:
    return len(s) == 64 and all(c in "0123456789abcdef" for c in s)


def read_manifest(root: str | Path) -> dict[str, tuple[str, int, str]]:
    """``{relpath: (sha256, bytes, url)}`` from ``root/``:data:`MANIFEST_NAME` (empty when there is
    none).  A later line for the same path wins (a file downloaded again); a malformed line (a
    line torn by a crash while it was appended) is ignored."""
    p = Path(root) / MANIFEST_NAME
    out: dict[str, tuple[str, int, str]] = {}
    if not p.is_file():
        return out
    for line in p.read_text("utf-8", errors="replace").splitlines():
        if not line or line.startswith("#") or line == _HEADER:
            continue
        parts = line.split("\t")
        if len(parts) != 4 or not _hex64(parts[1]) or not parts[2].isdigit():
            continue
        out[parts[0]] = (parts[1], int(parts[2]), parts[3])
    return out


def _source_file(root: Path, rel: str, sha: str, size: int, url: str) -> SourceFile:
    return SourceFile(f"{root.name}/{rel}", sha, size, "", url)


def verify_set(root: str | Path, relpaths: Sequence[str], *, fetch_command: str) -> tuple[list[str], list[str]]:
    """Check the files ``relpaths`` under ``root`` against the sha256 recorded in its manifest at
    download.  Returns ``(verified, missing)``: missing = not present or not in the manifest.
    Raises :class:`ChecksumError` (one line: the file, the recorded and the actual sha256, and
    ``fetch_command`` to download it again after deleting it) for a file whose bytes changed."""
    root = Path(root)
    man = read_manifest(root)
    ok, missing = [], []
    for rel in relpaths:
        p = root / rel
        if rel not in man or not p.is_file():
            missing.append(rel)
            continue
        sha, size, url = man[rel]
        try:
            verify(_source_file(root, rel, sha, size, url), p)
        except ChecksumError as e:
            raise ChecksumError(f"{e.args[0].split('. ')[0]} (sha256 recorded at download in "
                                f"{root / MANIFEST_NAME}): the file changed after download. Delete it and run "
                                f"`{fetch_command}` to download it again.") from None
        ok.append(rel)
    return ok, missing


def _transient(e: BaseException) -> bool:
    import httpx

    if isinstance(e, httpx.HTTPStatusError):
        return e.response.status_code == 429 or e.response.status_code >= 500
    return isinstance(e, (httpx.TransportError, _Incomplete))


def _why(e: BaseException, timeout: float) -> str:
    import httpx

    if isinstance(e, httpx.HTTPStatusError):
        return f"HTTP {e.response.status_code} {e.response.reason_phrase}".strip()
    if isinstance(e, httpx.TimeoutException):
        return f"timed out (timeout {timeout:g} s)"
    if isinstance(e, (_Incomplete, _WrongType)):
        return str(e)
    first = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


class _Incomplete(OSError):
    """A body shorter than its Content-Length (retried)."""


class _WrongType(OSError):
    """Bytes that fail the file-type check (an error page served as 200: not retried)."""


def _get(client, f: PinnedFile, dest: Path, check: Callable[[bytes], bool] | None) -> int:
    """Stream ``f.url`` into ``dest.part``, check it, rename it to ``dest``; returns its size."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    try:
        with client.stream("GET", f.url) as r:
            r.raise_for_status()
            want = r.headers.get("content-length")
            n = 0
            head = b""
            with open(tmp, "wb") as fh:
                for chunk in r.iter_bytes():
                    if len(head) < 16:
                        head += chunk[:16]
                    fh.write(chunk)
                    n += len(chunk)
                fh.flush()
                os.fsync(fh.fileno())
        if want is not None and want.isdigit() and int(want) != n:
            raise _Incomplete(f"incomplete body: {n} of {want} bytes")
        if check is not None and not check(head):
            raise _WrongType(f"not the expected file type (first bytes {head[:8]!r})")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, dest)
    return n


def download_set(root: str | Path, files: Sequence[PinnedFile], *, what: str, hint: str, fetch_command: str,
                 timeout: float = 60.0, attempts: int = 4, wait_s: float = 1.0,
                 check: Callable[[bytes], bool] | None = None,
                 progress: Callable[[int], None] | None = None) -> DownloadSummary:
    """Download every file of ``files`` under ``root`` that is not there yet, resuming a partial
    download (module docstring).

    ``what``: the set in words (start of every error); ``hint``: what to do without internet (end
    of a download error); ``fetch_command``: the command that runs this (named in a checksum
    error).  ``timeout``: seconds per connect/read; ``attempts``: tries per file (transient errors
    only); ``wait_s``: first wait between tries (exponential, at most 30 s); ``check``: a test of a
    file's first 16 bytes (e.g. the PNG signature); ``progress(k)``: called after each file.

    Raises :class:`DownloadError` (one line) when a file cannot be downloaded after its tries or
    gets a non-transient HTTP error (404 ...), :class:`ChecksumError` when a file listed in the
    manifest changed after download, OSError when ``root`` cannot be written.  Files finished
    before an error stay (with their manifest lines): a rerun resumes."""
    import httpx
    import tenacity

    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rels = [f.relpath for f in files]
    ok, missing = verify_set(root, rels, fetch_command=fetch_command)
    summary = DownloadSummary(present=len(ok), manifest=root / MANIFEST_NAME)
    summary.paths = {r: root / r for r in ok}
    if progress is not None and ok:
        progress(len(ok))
    todo = [f for f in files if f.relpath in set(missing)]
    if not todo:
        return summary
    man = root / MANIFEST_NAME
    new_manifest = not man.exists()
    retrying = tenacity.Retrying(retry=tenacity.retry_if_exception(_transient),
                                 stop=tenacity.stop_after_attempt(max(1, attempts)),
                                 wait=tenacity.wait_exponential(multiplier=wait_s, max=30), reraise=True)
    with httpx.Client(follow_redirects=True, timeout=httpx.Timeout(timeout)) as client, \
            open(man, "a", encoding="utf-8") as log:
        if new_manifest:
            log.write(f"# perceptbench download manifest: {what}\n"
                      "# sha256 computed from the bytes downloaded (the release publishes none); a later run "
                      "checks each file against it\n" + _HEADER + "\n")
        for f in todo:
            dest = root / f.relpath
            try:
                retrying(_get, client, f, dest, check)
            except (httpx.HTTPError, _Incomplete, _WrongType) as e:
                raise DownloadError(f"{what}: could not download {f.relpath} from {f.url}: {_why(e, timeout)}"
                                    f"{'' if not _transient(e) else f' (after {attempts} tries)'}; "
                                    f"{summary.present + summary.downloaded} of {len(files)} files are in {root} "
                                    f"(rerun to resume); {hint}") from None
            log.write(f"{f.relpath}\t{file_sha256(dest)}\t{dest.stat().st_size}\t{f.url}\n")
            log.flush()
            os.fsync(log.fileno())
            summary.downloaded += 1
            summary.paths[f.relpath] = dest
            if progress is not None:
                progress(1)
    return summary
