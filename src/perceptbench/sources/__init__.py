"""Where human data comes from: a registry of public releases (URL pinned to a commit,
sha256, license, citation) and a fetcher with a per-user cache and a local mirror.

``PERCEPTBENCH_MIRROR=DIR`` makes every source read from ``DIR`` laid out like the
project's shared data mirror (``<source folder>/<path inside the release>``)."""

from .registry import SOURCES, Source, SourceFile, get_source, source_file
from .fetch import SourceError, ChecksumError, MissingSourceError, resolve, verify, fetch_source

__all__ = [
    "SOURCES", "Source", "SourceFile", "get_source", "source_file",
    "SourceError", "ChecksumError", "MissingSourceError", "resolve", "verify", "fetch_source",
]
