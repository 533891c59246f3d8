"""The numbers the seed papers publish, as data with their source (issue 22 item 6).

One CSV per paper in this package (``seed000.csv``, ``seed001.csv``, ``seed002.csv``, and
``geirhos2019.csv`` for the human shape bias the cue-conflict task is read against), transcribed
from the seed texts as the project received them (``/work/shared/seeds``; seed 001's numeric
tables by ``scripts/transcribe_seed001.py``, the rest by hand).  They are shown beside a run's
values by ``perceptbench paper`` (:mod:`perceptbench.reports.paper`) and are **never used in any
computation** of a score.

Columns (every row of every file; :data:`COLUMNS`):

- ``seed``: the paper id (``000``, ``001``, ``002``, ``geirhos2019``), the file's own name.
- ``section``: where the paper prints the number (table, section, appendix), never empty.
- ``task_id``: the perceptbench task the number belongs to, without settings; empty where
  perceptbench has no such task (a compute budget, an LLM-only exam) or the number pools several
  tasks.
- ``settings``: ``key=value;...`` task settings the paper's number was measured under (e.g.
  ``shots=3``); a run's task must have each of them (its own or the task's default).
- ``model``: the model as the paper names it (``human`` for a human reference, ``all`` for a
  number about every model of the paper together).
- ``run_model``: the respondent of the run whose row holds the number when it is not a model
  the paper names: ``human:panel``, ``all-models``, ``all-pairs``, or ``*`` (any respondent's
  row: the value is the same on each, e.g. a position floor).
- ``metric``: the run's metric name; ``METRIC#n`` compares with the ``n`` of that row (a
  stimulus count).  Free text where perceptbench computes no such metric.
- ``value``, ``ci_low``, ``ci_high``: as printed (CI empty when not published).
- ``scale``: what turns the printed value into perceptbench's unit (``0.01`` for a percentage).
- ``population``: for a number about many models (a count, a range, a pooled mean), the
  paper's population in words, starting with its size (``45 models``); empty otherwise.
- ``note``: the paper's words (quoted) and anything a reader needs to compare the number.

Imports nothing of perceptbench (data and the standard library only).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COLUMNS", "PUBLISHED_DIR", "PublishedNumber", "available", "load_published"]

PUBLISHED_DIR = Path(__file__).parent
"""Where the packaged files lie (``NAME.csv``)."""

COLUMNS = ("seed", "section", "task_id", "settings", "model", "run_model", "metric", "value", "ci_low",
           "ci_high", "scale", "population", "note")
"""The columns of every published-number file, in order."""

_SETTING = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=[^;=]+")


@dataclass(frozen=True)
class PublishedNumber:
    """One number a paper publishes (see the module docstring for each field).

    ``value``, ``ci_low``, ``ci_high`` are in the paper's unit; :attr:`scaled` is ``value`` x
    ``scale`` (perceptbench's unit).  ``settings`` is ``{key: value}``; ``line`` is the file's line."""

    seed: str
    section: str
    task_id: str
    settings: dict
    model: str
    run_model: str
    metric: str
    value: float
    ci_low: float | None
    ci_high: float | None
    scale: float
    population: str
    note: str
    line: int

    @property
    def scaled(self) -> float:
        """The value in perceptbench's unit (``value * scale``)."""
        return self.value * self.scale

    @property
    def population_size(self) -> int | None:
        """The leading integer of ``population`` (``45 models`` -> 45), None when empty."""
        m = re.match(r"\s*(\d+)", self.population)
        return int(m.group(1)) if m else None


def available() -> list[str]:
    """The packaged paper ids (file stems), sorted."""
    return sorted(p.stem for p in PUBLISHED_DIR.glob("*.csv"))


def _number(text: str, path: Path, line: int, field: str, required: bool) -> float | None:
    text = text.strip()
    if not text:
        if required:
            raise ValueError(f"{path}: line {line}: field {field!r} is empty")
        return None
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"{path}: line {line}: field {field!r}: {text!r} is not a number") from None
    if not math.isfinite(x):
        raise ValueError(f"{path}: line {line}: field {field!r}: {text!r} is not a finite number")
    return x


def _settings(text: str, path: Path, line: int) -> dict:
    out = {}
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        if not _SETTING.fullmatch(part):
            raise ValueError(f"{path}: line {line}: field 'settings': {part!r} is not key=value")
        k, _, v = part.partition("=")
        out[k.strip()] = v.strip()
    return out


def read_published(path: Path) -> list[PublishedNumber]:
    """Every row of one published-number file.  Raises ValueError (one line naming file, line and
    field) for a header that is not :data:`COLUMNS`, a row with the wrong number of fields, an
    empty ``section``/``metric``/``model``/``value``, a ``seed`` other than the file's name, a
    value that is not a finite number, a ``scale`` that is not positive, or a malformed setting."""
    path = Path(path)
    with open(path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if tuple(header or ()) != COLUMNS:
            raise ValueError(f"{path}: line 1: header must be {','.join(COLUMNS)}")
        out = []
        for row in reader:
            line = reader.line_num
            if not row:
                continue
            if len(row) != len(COLUMNS):
                raise ValueError(f"{path}: line {line}: {len(row)} fields, expected {len(COLUMNS)}")
            d = dict(zip(COLUMNS, row))
            if d["seed"] != path.stem:
                raise ValueError(f"{path}: line {line}: field 'seed': {d['seed']!r} is not the file's paper "
                                 f"{path.stem!r}")
            for field in ("section", "model", "metric"):
                if not d[field].strip():
                    raise ValueError(f"{path}: line {line}: field {field!r} is empty")
            scale = _number(d["scale"], path, line, "scale", True)
            if scale <= 0:
                raise ValueError(f"{path}: line {line}: field 'scale': {d['scale']!r} must be positive")
            out.append(PublishedNumber(
                d["seed"], d["section"].strip(), d["task_id"].strip(), _settings(d["settings"], path, line),
                d["model"].strip(), d["run_model"].strip(), d["metric"].strip(),
                _number(d["value"], path, line, "value", True), _number(d["ci_low"], path, line, "ci_low", False),
                _number(d["ci_high"], path, line, "ci_high", False), scale, d["population"].strip(),
                d["note"].strip(), line))
    return out


def load_published(paper: str) -> list[PublishedNumber]:
    """The numbers of a packaged paper: ``000``/``seed000``/``0`` (likewise 001, 002) or another
    packaged id (:func:`available`), or the path of a file of the same format.  Raises ValueError
    (one line) for an unknown paper, naming the packaged ones, and for a malformed file."""
    p = Path(paper)
    if p.suffix == ".csv" and p.exists():
        return read_published(p)
    name = paper.strip().lower()
    if re.fullmatch(r"(seed)?0*\d{1,3}", name):
        name = f"seed{int(re.sub(r'^seed', '', name)):03d}"
    if name not in available():
        raise ValueError(f"no published numbers for {paper!r}; packaged: {', '.join(available())} "
                         "(or give the path of a .csv of the same format)")
    return read_published(PUBLISHED_DIR / f"{name}.csv")
