"""Rosters: named lists of models with their declared metadata, in TOML (issue 22 item 2).

``perceptbench run --roster NAME`` takes the models of a roster packaged in
``perceptbench/models/rosters/NAME.toml`` (:func:`packaged_rosters`); ``--roster PATH.toml``
takes a user's own file of the same format::

    [roster]
    name = "mine"                      # required: letters, digits, '.', '_', '-'
    source = "where the list comes from"   # required: a paper and its table, or "my lab"
    title = "one line"                 # optional
    seed_total = 6                     # optional: how many models the source reports
    note = "..."                       # optional

    [[model]]                          # one table per model
    name = "qwen25-vl-7b"              # required: the SHORT name written to every record
    spec = "hf:Qwen/Qwen2.5-VL-7B-Instruct"   # required: what --model takes (no @revision here)
    revision = "unpinned"              # a hub revision (commit sha, tag, branch) for hf: hub ids, or
                                       # "unpinned" (default) where none is given by the source
    revision_note = "..."              # optional: where the revision comes from, or why unpinned
    seed_name = "Qwen2.5-VL-7B"        # optional: the name as the source prints it
    spec_basis = "inferred"            # seed | inferred | choice (see SPEC_BASES)
    note = "..."                       # optional
    family = "open-vlm"                # the metadata of perceptbench.models.metadata.ModelMeta:
    objective = "..."                  #   family, objective, params, vision_tower, access,
    params = "7B"                      #   architecture (every one optional)
    vision_tower = "..."
    access = "open"
    architecture = "qwen-vl"

Every error in a roster file is one line naming the file, the entry and the field
(:class:`RosterError`).  :func:`check_available` says, before anything is written, which
entries cannot load on this machine (weights not in the Hugging Face cache while the hub is
unreachable, an API key not set, an API host not reachable), all of them in one line.

Imports no torch (tomllib, pydantic, huggingface_hub only where a cache is looked up).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from .base import ModelLoadError
from .metadata import META_FIELDS, ModelMeta, meta_error_line

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10: the tomli backport (a dependency there, see pyproject.toml)
    import tomli as tomllib

__all__ = ["ROSTER_DIR", "SPEC_BASES", "UNPINNED", "Roster", "RosterEntry", "RosterError", "declared_models", "packaged_rosters",
           "load_roster", "check_available"]

ROSTER_DIR = Path(__file__).with_name("rosters")
"""Where the packaged rosters lie (``NAME.toml``)."""

UNPINNED = "unpinned"
"""The ``revision`` of an entry whose source gives no hub revision."""

SPEC_BASES = {
    "seed": "the source names this exact checkpoint",
    "inferred": "the source's name matches one public checkpoint (the instruction-tuned release where that "
                "is the only one, or the size the source names)",
    "choice": "the source's name fits several checkpoints; this one is perceptbench's choice (see note)",
}
"""How an entry's ``spec`` follows from its source (``spec_basis``)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]*")

#: API kinds: the variable holding the key and the host asked (perceptbench.models.api defaults)
_API = {"openai": ("OPENAI_API_KEY", "https://api.openai.com"),
        "anthropic": ("ANTHROPIC_API_KEY", "https://api.anthropic.com"),
        "gemini": ("GEMINI_API_KEY", "https://generativelanguage.googleapis.com")}


class RosterError(ValueError):
    """A roster that cannot be read: one line naming the file, the entry and the field."""


class _Header(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    source: str
    title: Optional[str] = None
    seed_total: Optional[int] = None
    note: Optional[str] = None

    @field_validator("name")
    @classmethod
    def _name(cls, v):
        if not _NAME.fullmatch(v):
            raise ValueError(f"{v!r}: letters, digits, '.', '_' and '-' only")
        return v

    @field_validator("seed_total")
    @classmethod
    def _total(cls, v):
        if v is not None and v < 1:
            raise ValueError(f"{v}: must be a positive count")
        return v


class RosterEntry(BaseModel):
    """One model of a roster: its short ``name``, ``spec`` (what ``--model`` takes, without a
    revision), ``revision`` (a hub revision or :data:`UNPINNED`), where both come from, and its
    declared :class:`~perceptbench.models.metadata.ModelMeta` (``meta``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    spec: str
    revision: str = UNPINNED
    revision_note: Optional[str] = None
    seed_name: Optional[str] = None
    spec_basis: Optional[Literal["seed", "inferred", "choice"]] = None
    note: Optional[str] = None
    meta: ModelMeta = ModelMeta()

    @property
    def pinned(self) -> bool:
        """Whether the entry names a hub revision."""
        return self.revision != UNPINNED

    def model_arg(self) -> str:
        """The ``--model`` argument this entry resolves to: ``NAME=SPEC`` or, pinned,
        ``NAME=SPEC@REVISION`` (``hf:`` hub ids only)."""
        return f"{self.name}={self.spec}" + (f"@{self.revision}" if self.pinned else "")

    def run_json(self, roster: str) -> dict:
        """What ``run.json`` records of this entry under ``models``: spec, revision, roster,
        the source's name for it and the metadata fields."""
        return {"spec": self.spec, "revision": self.revision, "roster": roster, "seed_name": self.seed_name,
                **self.meta.as_json()}


@dataclass(frozen=True)
class Roster:
    """A parsed roster file: ``name``, ``source``, ``title``, ``seed_total`` (the count the source
    reports, None if not given), ``note``, ``path`` and its ``entries`` in file order."""

    name: str
    source: str
    title: Optional[str]
    seed_total: Optional[int]
    note: Optional[str]
    path: Path
    entries: tuple[RosterEntry, ...]

    def model_args(self) -> list[str]:
        """The ``--model`` arguments, one per entry (:meth:`RosterEntry.model_arg`)."""
        return [e.model_arg() for e in self.entries]


def packaged_rosters() -> dict[str, Path]:
    """``{name: path}`` of the rosters shipped in the package, sorted by name."""
    return {p.stem: p for p in sorted(ROSTER_DIR.glob("*.toml"))}


def load_roster(name_or_path: str | os.PathLike) -> Roster:
    """A packaged roster by name (``seed002``) or a roster file by path (``my/list.toml``).

    Raises :class:`RosterError` (one line) for an unknown name, an unreadable file, TOML that
    does not parse, and every bad field (naming the file, ``model[i]`` with its name, and the
    field)."""
    key = str(name_or_path)
    packaged = packaged_rosters()
    if key in packaged:
        path = packaged[key]
    else:
        path = Path(key).expanduser()
        if not path.is_file():
            raise RosterError(f"--roster {key!r}: no packaged roster of that name ({', '.join(packaged)}) and no "
                              "such file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise RosterError(f"{path}: cannot read ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise RosterError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise RosterError(f"{path}: not valid TOML ({e})") from None
    return parse_roster(data, path)


def parse_roster(data: dict, path: Path) -> Roster:
    """Validate a roster's parsed TOML ``data`` (read from ``path``, named in errors); raises
    :class:`RosterError` as :func:`load_roster`."""
    from .registry import parse_model_arg

    extra = sorted(set(data) - {"roster", "model"})
    if extra:
        raise RosterError(f"{path}: {extra[0]}: unknown table (a roster has [roster] and [[model]])")
    head = data.get("roster")
    if not isinstance(head, dict):
        raise RosterError(f"{path}: roster: missing [roster] table (name, source)")
    try:
        header = _Header(**head)
    except ValidationError as e:
        raise RosterError(_line(e, f"{path}: roster")) from None
    models = data.get("model")
    if not isinstance(models, list) or not models:
        raise RosterError(f"{path}: model: no [[model]] entries")
    entries: list[RosterEntry] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(models):
        label = f"{path}: model[{i}]" + (f" ({raw['name']})" if isinstance(raw, dict) and isinstance(
            raw.get("name"), str) else "")
        if not isinstance(raw, dict):
            raise RosterError(f"{label}: not a table")
        fields = {k: v for k, v in raw.items() if k not in META_FIELDS}
        try:
            meta = ModelMeta(**{k: v for k, v in raw.items() if k in META_FIELDS})
        except ValidationError as e:
            raise RosterError(meta_error_line(e, label)) from None
        try:
            entry = RosterEntry(**fields, meta=meta)
        except ValidationError as e:
            raise RosterError(_line(e, label)) from None
        if entry.name in seen:
            raise RosterError(f"{label}.name: {entry.name!r} is also model[{seen[entry.name]}]")
        seen[entry.name] = i
        _check_spec(entry, label, parse_model_arg)
        entries.append(entry)
    return Roster(header.name, header.source, header.title, header.seed_total, header.note, path, tuple(entries))


def _line(e: ValidationError, where: str) -> str:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ()))
    msg = err.get("msg", "invalid").removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown field"
    elif err.get("type") == "missing":
        msg = "required field missing"
    elif err.get("type") == "literal_error" and loc == "spec_basis":
        msg = f"{err.get('input')!r} is not one of {', '.join(SPEC_BASES)}"
    return f"{where}.{loc}: {msg}"


def _check_spec(entry: RosterEntry, label: str, parse_model_arg) -> None:
    if not _NAME.fullmatch(entry.name):
        raise RosterError(f"{label}.name: {entry.name!r}: letters, digits, '.', '_' and '-' only")
    try:
        _, spec = parse_model_arg(f"{entry.name}={entry.spec}")
    except ValueError as e:
        raise RosterError(f"{label}.spec: {e}") from None
    hub_id = spec.kind == "hf" and not spec.ref.startswith(("/", ".", "~"))
    if hub_id and "@" in spec.ref:
        raise RosterError(f"{label}.spec: {entry.spec!r} holds a revision; write it in the revision field")
    if entry.pinned:
        if not hub_id:
            raise RosterError(f"{label}.revision: {entry.revision!r}: only an hf: hub id takes a hub revision "
                              f"(write revision = \"{UNPINNED}\" or leave it out)")
        if not _REVISION.fullmatch(entry.revision):
            raise RosterError(f"{label}.revision: {entry.revision!r} is not a revision (a commit sha, tag or "
                              f"branch) nor \"{UNPINNED}\"")


def _hf_cached(repo: str, revision: str | None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - a core install: the loader names the extra
        return False
    try:
        return isinstance(try_to_load_from_cache(repo, "config.json", revision=revision), str)
    except Exception:
        return False


def _unavailable(entry: RosterEntry, hub_reason, host_reason) -> str | None:
    """What ``entry`` needs before it can load here (one phrase), or None when nothing is missing
    that can be seen without loading it."""
    from .registry import parse_model_arg

    _, spec = parse_model_arg(entry.model_arg())
    if spec.kind == "hf":
        repo, _, rev = spec.ref.partition("@")
        if repo.startswith(("/", ".", "~")):
            return None if os.path.isdir(os.path.expanduser(repo)) else f"no such model directory {repo}"
        if _hf_cached(repo, rev or None) or hub_reason() is None:
            return None
        return f"download hf:{spec.ref} (huggingface-cli download {repo}" + (f" --revision {rev}" if rev else "") + ")"
    if spec.kind in _API:
        env, url = _API[spec.kind]
        if not os.environ.get(env):
            return f"set {env}"
        why = host_reason(url)
        return None if why is None else why
    if spec.kind in ("timm", "open_clip"):
        try:
            if spec.kind == "timm":
                arch, sep, weights = spec.ref.partition("@")
                if sep:
                    return None if os.path.isfile(os.path.expanduser(weights)) else f"no such weights file {weights}"
                from .encoders_timm import check_pretrained_reachable

                check_pretrained_reachable(arch)
            else:
                from .encoders_openclip import check_pretrained_reachable

                arch, _, pretrained = spec.ref.partition("@")
                check_pretrained_reachable(arch, pretrained or None)
        except ModelLoadError as e:
            return str(e)
        except ImportError:
            return "pip install 'perceptbench[models]'"
    return None


def check_available(roster: Roster) -> None:
    """Fail before anything is written when entries of ``roster`` cannot load on this machine.

    Looks, without loading any model, for what each entry needs: ``hf:`` weights in the
    Hugging Face cache (``config.json`` at the entry's revision) or a reachable hub
    (:func:`~perceptbench.models.hub.hub_unreachable_reason`, asked once); for an API model its
    key variable and one connection to its host; for ``timm:``/``open_clip:`` the back-ends'
    own offline checks.  Raises :class:`~perceptbench.models.base.ModelLoadError` with one
    line naming the roster, how many entries cannot load, and for each its name and what to
    download or set.  Returns None when every entry may load (loading can still fail later for
    other reasons, e.g. an unsupported architecture, before anything is written)."""
    from .hub import host_unreachable_reason, hub_unreachable_reason

    memo: dict[str, str | None] = {}

    def hub_reason():
        if "hub" not in memo:
            memo["hub"] = hub_unreachable_reason()
        return memo["hub"]

    def host_reason(url):
        if url not in memo:
            memo[url] = host_unreachable_reason(url)
        return memo[url]

    missing = [(e.name, why) for e in roster.entries if (why := _unavailable(e, hub_reason, host_reason))]
    if not missing:
        return
    hub = f" ({memo['hub']}: the Hugging Face weights cannot be downloaded now)" if memo.get("hub") else ""
    items = "; ".join(f"{name}: {why}" for name, why in missing)
    raise ModelLoadError(f"roster {roster.name} ({roster.path}): {len(missing)} of {len(roster.entries)} models "
                         f"cannot load here{hub}, nothing was written; {items}")


def declared_models(args, roster: Roster | None = None) -> dict[str, dict]:
    """``{short name: what run.json records under models}`` for the ``--model`` arguments
    ``args`` that declare metadata: every entry of ``roster`` (:meth:`RosterEntry.run_json`) and
    each ``SHORT[KEY=VALUE,...]=SPEC`` argument (spec, revision from ``@``, the fields).  Other
    models are left out.  Credentials in a spec's URL are redacted.  Raises ValueError (one
    line) for a bad argument."""
    from ..core.urls import redact_urls_in
    from .metadata import split_inline_meta
    from .registry import parse_model_arg

    out: dict[str, dict] = {}
    by_arg = {e.model_arg(): e for e in roster.entries} if roster is not None else {}
    for arg in args:
        if arg in by_arg:
            out[by_arg[arg].name] = by_arg[arg].run_json(roster.name)
            continue
        plain, meta = split_inline_meta(arg)
        if meta is None:
            continue
        name, spec = parse_model_arg(plain)
        ref = spec.ref if spec.kind == "efficientnet" else f"{spec.kind}:{spec.ref}"
        rev = spec.ref.rpartition("@")[2] if spec.kind == "hf" and "@" in spec.ref else UNPINNED
        out[name] = {"spec": redact_urls_in(ref), "revision": rev, "roster": None, "seed_name": None,
                     **meta.as_json()}
    return out
