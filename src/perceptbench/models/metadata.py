"""A model's declared taxonomy: family, training objective, parameter count, vision tower,
open or closed, architecture line (issue 22 item 1).

The metadata is *declared*, never inferred: it comes from a roster file
(:mod:`perceptbench.models.roster`) or from the ``SHORT[KEY=VALUE,...]=SPEC`` form of
``--model``, is written into ``run.json`` under ``models`` and into the run's ``models.csv``,
and is read back by scoring for the VSI same- vs cross-family means
(:func:`declared_families`).  A record's own ``model_family`` stays ``encoder`` / ``vlm`` /
``api`` / ``human`` (the back-end kind, seed 000 appendix C); nothing here changes a record or
a score row.

Vocabulary of ``family`` (:data:`FAMILIES`), the training families of seed 000 §2.2 / Table A2
(supervised, self-supervised, contrastive vision-language, open VLM, closed), with masked-image
modelling split from the other self-supervised objectives as seed 000 §3 reads it ("masked-image
training holds the two lowest shape consistencies (BEiT, MAE)").

``architecture`` is the architecture line in seed 002's sense ("six VLMs spanning three
architecture families", "Same-family pairs average rho=0.51 versus 0.37 for cross-family",
seed 002 A, B.2): e.g. ``qwen-vl``, ``llava``.  Every seed 002 model is an open VLM, so the
training family alone would make every pair a same-family pair; the VSI means therefore read
``architecture`` where it is declared and ``family`` otherwise.

Imports nothing heavy (pydantic only): ``perceptbench models`` and ``score`` read it without torch.
"""

from __future__ import annotations

import re
from typing import Literal, Mapping, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

__all__ = ["FAMILIES", "META_FIELDS", "MODELS_TABLE_COLUMNS", "ModelMeta", "parse_params", "format_params",
           "split_inline_meta", "models_table_rows",
           "declared_families", "meta_error_line"]

FAMILIES: dict[str, str] = {
    "supervised": "supervised image classification (seed 000 Table A2: supervised)",
    "ssl": "self-supervised, non-masked objectives: self-distillation, joint-embedding prediction "
           "(seed 000: self-supervised)",
    "mim": "masked-image modelling (seed 000 §3: BEiT, MAE)",
    "clip-like": "contrastive vision-language encoders (seed 000: contrastive V-L; CLIP, SigLIP)",
    "open-vlm": "open-weight vision-language models answering in text (seed 000: open VLM)",
    "closed-vlm": "closed (API-only) foundation models (seed 000: closed)",
    "other": "none of the above (say which in `objective`)",
}
"""The declared ``family`` vocabulary, with what each means and its source."""

META_FIELDS = ("family", "objective", "params", "vision_tower", "access", "architecture")
"""The metadata fields, in the order tables show them."""

_SUFFIX = {"K": 10 ** 3, "M": 10 ** 6, "B": 10 ** 9, "T": 10 ** 12}


def parse_params(value) -> Optional[int]:
    """A parameter count from an int (``86000000``) or a string with a suffix (``"86M"``,
    ``"7B"``, ``"1.5B"``, ``"256M"``; K, M, B, T = 1e3, 1e6, 1e9, 1e12), or None for ``None``.
    Raises ValueError for anything else (a negative or zero count, an unknown suffix)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a parameter count: {value!r}")
    if isinstance(value, int):
        n = value
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    elif isinstance(value, str):
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMBT]?)\s*", value.upper())
        if not m:
            raise ValueError(f"not a parameter count: {value!r} (write e.g. 86M, 7B or 86000000)")
        n = round(float(m.group(1)) * _SUFFIX.get(m.group(2), 1))
    else:
        raise ValueError(f"not a parameter count: {value!r} (write e.g. 86M, 7B or 86000000)")
    if n <= 0:
        raise ValueError(f"not a parameter count: {value!r} (must be positive)")
    return n


def format_params(n: Optional[int]) -> str:
    """``7000000000`` -> ``"7B"``, ``86000000`` -> ``"86M"``, ``1500000000`` -> ``"1.5B"``; None -> ``""``."""
    if n is None:
        return ""
    for suffix in ("T", "B", "M", "K"):
        if n >= _SUFFIX[suffix]:
            return f"{n / _SUFFIX[suffix]:.4g}{suffix}"
    return str(n)


class ModelMeta(BaseModel):
    """One model's declared taxonomy.  Every field is optional (None: not declared).

    - ``family``: one of :data:`FAMILIES`.
    - ``objective``: the training objective in words (e.g. ``"contrastive image-text"``).
    - ``params``: parameter count (int; strings such as ``"7B"`` are read by :func:`parse_params`).
    - ``vision_tower``: the image encoder a VLM reads through (or an encoder's backbone).
    - ``access``: ``"open"`` (weights published) or ``"closed"`` (API only); must agree with
      ``family`` ``open-vlm`` / ``closed-vlm``.
    - ``architecture``: the architecture line (seed 002's "architecture family"), lower case.

    Raises pydantic's ValidationError for an unknown field or a bad value; see
    :func:`meta_error_line` for the one-line form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    family: Optional[Literal["supervised", "ssl", "mim", "clip-like", "open-vlm", "closed-vlm", "other"]] = None
    objective: Optional[str] = None
    params: Optional[int] = None
    vision_tower: Optional[str] = None
    access: Optional[Literal["open", "closed"]] = None
    architecture: Optional[str] = None

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v):
        return parse_params(v)

    @field_validator("objective", "vision_tower", "architecture")
    @classmethod
    def _text(cls, v):
        if v is not None and not v.strip():
            raise ValueError("empty text (leave the field out when it is not declared)")
        return v

    @field_validator("architecture")
    @classmethod
    def _arch(cls, v):
        if v is not None and not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", v):
            raise ValueError(f"{v!r}: lower-case letters, digits, '.', '_' and '-' only (e.g. qwen-vl, llava)")
        return v

    @model_validator(mode="after")
    def _access_agrees(self):
        want = {"open-vlm": "open", "closed-vlm": "closed"}.get(self.family or "")
        if want and self.access is not None and self.access != want:
            raise ValueError(f"access {self.access!r} contradicts family {self.family!r}")
        return self

    @property
    def declared(self) -> bool:
        """Whether any field is declared."""
        return any(getattr(self, f) is not None for f in META_FIELDS)

    @property
    def access_or_implied(self) -> Optional[str]:
        """``access``, or the one ``family`` implies (open-vlm: open, closed-vlm: closed)."""
        return self.access or {"open-vlm": "open", "closed-vlm": "closed"}.get(self.family or "")

    def as_json(self) -> dict:
        """The fields as a JSON object (every field, None where not declared)."""
        return {f: getattr(self, f) for f in META_FIELDS}

    def vsi_family(self) -> Optional[str]:
        """The family the VSI same- vs cross-family means use: ``architecture`` when declared
        (seed 002's architecture families), else ``family``."""
        return self.architecture or self.family


def meta_error_line(e: ValidationError, where: str, sep: str = ".") -> str:
    """One line from a ValidationError: ``WHERE<sep>FIELD: message`` for its first error."""
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()) if x != "__root__")
    msg = err.get("msg", "invalid").removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = f"unknown field (fields: {', '.join(META_FIELDS)})"
    elif err.get("type") == "literal_error" and loc == "family":
        msg = f"{err.get('input')!r} is not a family; one of {', '.join(FAMILIES)}"
    return f"{where}{sep + loc if loc else ''}: {msg}"


_INLINE = re.compile(r"^([^=:\[\]]+)\[([^\]]*)\]=(.+)$", re.S)


def split_inline_meta(arg: str) -> tuple[str, Optional[ModelMeta]]:
    """``SHORT[KEY=VALUE,...]=SPEC`` -> (``SHORT=SPEC``, its :class:`ModelMeta`); any other
    argument -> (argument, None).  Keys are :data:`META_FIELDS`; a value cannot hold ``,`` or ``]``.

    Raises ValueError (one line naming the argument and the field) for a malformed pair, an
    unknown key, a repeated key or a bad value."""
    m = _INLINE.match(arg)
    if not m:
        return arg, None
    short, body, spec = m.groups()
    fields: dict[str, str] = {}
    for part in (p.strip() for p in body.split(",")):
        if not part:
            continue
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ValueError(f"--model {arg!r}: {part!r} is not KEY=VALUE (keys: {', '.join(META_FIELDS)})")
        if key in fields:
            raise ValueError(f"--model {arg!r}: {key} given twice")
        fields[key] = value
    try:
        meta = ModelMeta(**fields)
    except ValidationError as e:
        raise ValueError(meta_error_line(e, f"--model {arg!r}", sep=": ")) from None
    return f"{short.strip()}={spec}", meta


def declared_families(models: Mapping[str, Mapping] | None) -> dict[str, str]:
    """``{model: family}`` for the VSI same- vs cross-family means from ``run.json``'s ``models``
    object (``{name: {"family": ..., "architecture": ..., ...}}``): each model's
    :meth:`ModelMeta.vsi_family`, models with neither field left out.  Entries that are not
    objects are skipped (a hand-edited run.json cannot stop scoring)."""
    out: dict[str, str] = {}
    for name, entry in (models or {}).items():
        if not isinstance(entry, Mapping):
            continue
        fam = entry.get("architecture") or entry.get("family")
        if isinstance(fam, str) and fam:
            out[name] = fam
    return out


MODELS_TABLE_COLUMNS = ("model", "spec", "revision", "roster", "seed_name") + META_FIELDS
"""The columns of a run's ``models.csv`` (:func:`models_table_rows`)."""


def models_table_rows(models: Mapping[str, Mapping] | None) -> list[list[str]]:
    """``run.json``'s ``models`` object as rows of :data:`MODELS_TABLE_COLUMNS` (sorted by model;
    an undeclared field is an empty cell, ``params`` an integer count)."""
    rows = []
    for name, entry in sorted((models or {}).items()):
        if isinstance(entry, Mapping):
            rows.append([name] + ["" if entry.get(c) is None else str(entry.get(c))
                                  for c in MODELS_TABLE_COLUMNS[1:]])
    return rows
