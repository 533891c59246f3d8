"""Checks of the LaTeX tables ``report --figures`` writes, without a TeX installation."""

from __future__ import annotations


def braces_balanced(tex: str) -> bool:
    """True when the unescaped ``{``/``}`` of ``tex`` pair up (``\\{``, ``\\}`` and ``\\\\`` skipped)."""
    depth = 0
    i = 0
    while i < len(tex):
        c = tex[i]
        if c == "\\":
            i += 2
            continue
        depth += {"{": 1, "}": -1}.get(c, 0)
        if depth < 0:
            return False
        i += 1
    return depth == 0


def body_rows(tex: str) -> list[str]:
    """The data lines of a booktabs table: between ``\\midrule`` and ``\\bottomrule``."""
    return tex[tex.index("\\midrule") + len("\\midrule"):tex.index("\\bottomrule")].strip().splitlines()
