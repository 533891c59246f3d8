"""Task settings (``BASE@key=value``): their type, range and canonical spelling."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass


_INT_RE = re.compile(r"[+-]?[0-9]+")
_FLOAT_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Setting:
    """Type and range of one task setting (``BASE@key=value``).

    ``kind``: ``"int"`` (ASCII digits, optional sign), ``"float"`` (a finite decimal
    number), ``"choice"`` (one of ``choices``, exact) or ``"text"`` (free text, e.g. a
    path, checked where it is used; ``text`` says what it must be).  ``minimum``/``maximum``
    bound numbers (inclusive; ``maximum_open`` makes the upper bound exclusive); a number
    setting also accepts the exact words in ``choices`` (e.g. ``("all",)``).

    :meth:`normalise` returns the canonical spelling (``"040"`` -> ``"40"``, ``"0.50"`` ->
    ``"0.5"``, ``"1e-1"`` -> ``"0.1"``, text stripped), so one setting has one task id."""

    kind: str
    minimum: float | None = None
    maximum: float | None = None
    maximum_open: bool = False
    choices: tuple[str, ...] = ()
    text: str = ""

    def describe(self) -> str:
        """The allowed values in words, e.g. ``"an integer in [1, 100000]"``."""
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind == "text":
            return self.text or "text"
        noun = "an integer" if self.kind == "int" else "a number"
        def num(v: float) -> str:
            return str(int(v)) if float(v).is_integer() else f"{v:g}"

        lo = "-inf" if self.minimum is None else num(self.minimum)
        hi = "inf" if self.maximum is None else num(self.maximum)
        words = "".join(f" or {w}" for w in self.choices)
        return f"{noun} in [{lo}, {hi}{')' if self.maximum_open or self.maximum is None else ']'}{words}"

    def normalise(self, value: str) -> str:
        """The canonical string of ``value``; ValueError (message: the allowed values) if
        it has the wrong type or lies outside the range."""
        v = str(value).strip()
        if self.kind == "choice":
            if v not in self.choices:
                raise ValueError(self.describe())
            return v
        if self.kind == "text":
            return v
        if v in self.choices:
            return v
        if self.kind == "int":
            if not _INT_RE.fullmatch(v):
                raise ValueError(self.describe())
            x: float = int(v)
        elif self.kind == "float":
            if not _FLOAT_RE.fullmatch(v) or not math.isfinite(float(v)):
                raise ValueError(self.describe())
            x = float(v)
        else:  # pragma: no cover - programming error
            raise ValueError(f"unknown setting kind {self.kind!r}")
        if self.minimum is not None and x < self.minimum:
            raise ValueError(self.describe())
        if self.maximum is not None and (x >= self.maximum if self.maximum_open else x > self.maximum):
            raise ValueError(self.describe())
        if self.kind == "int":
            return str(int(x))
        r = repr(float(x)) if x != 0 else "0"
        return r[:-2] if r.endswith(".0") else r
