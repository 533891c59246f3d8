"""Paths that come from outside the project (an annotation file's stimulus id, an image path
in a benchmark's question file) kept inside the folder they belong to.

Imports nothing of perceptbench (the bottom layer).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

__all__ = ["PathEscapeError", "confine"]


class PathEscapeError(ValueError):
    """A relative path from outside the project would leave the folder it must stay in; the
    message names the path, the folder and ``what`` gave it, in one line."""


def confine(root: str | os.PathLike, relative: str, what: str) -> Path:
    """``root / relative`` when ``relative`` stays inside ``root``; else PathEscapeError.

    ``relative`` is read as a POSIX path (``/`` separates folders, as in the released question
    files) and refused when it is empty, absolute (``/x``, ``C:\\x``, ``\\\\server\\x``) or holds a
    ``..`` part, whatever the file system would make of it: a downloaded file must not pick the
    folder.  ``what`` says where the path came from (e.g. ``"POPE file q.json record 3: image"``).
    Subfolders of ``root`` are allowed; symbolic links inside ``root`` are the owner's and are
    not followed here."""
    rel = str(relative)
    win = PureWindowsPath(rel)
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if not rel.strip() or PurePosixPath(rel).is_absolute() or win.drive or win.root or ".." in parts:
        raise PathEscapeError(
            f"{what}: path {rel!r} would leave {root} (absolute paths and '..' are refused; "
            "paths must be relative to that folder)")
    return Path(root) / rel
