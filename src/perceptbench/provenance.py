"""What a resumed run must share with the trials it already finished, and how scoring keeps
prompt versions apart.

A run directory is resumed trial by trial (``records.jsonl`` is append-only).  Records
written under one prompt, package version, task setting, model version or generation
setting must not be pooled silently with records written under another: :func:`compare`
lists every such difference between finished records and what the current run would
write (the runner refuses on it, or records it under ``--allow-mixed``), and
:func:`split_prompt_versions` makes scoring treat two prompt versions of one task as two
respondents, never one.

Pure Python; no torch.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .records import TrialRecord

__all__ = ["Difference", "compare", "prompt_version", "split_prompt_versions"]


@dataclass(frozen=True)
class Difference:
    """One setting on which ``n`` finished trials of (task_id, model) differ from the current run.

    ``what`` names the setting (``prompt``, ``package version``, ``task settings``,
    ``model_version``, ``generation settings``); ``old`` is one finished value, ``new`` the
    current one; ``allowable`` is False where ``--allow-mixed`` cannot help (other weights
    under one short name are a different model)."""

    what: str
    task_id: str
    model: str
    old: Any
    new: Any
    n: int
    allowable: bool = True

    def message(self, out: str) -> str:
        """One line: what changed, for how many trials, and how to proceed."""
        old, new = _changed_keys(self.old, self.new)
        head = (f"{out}: cannot resume: {self.what} changed for {self.n} finished trial(s) of {self.task_id} "
                f"({self.model}): {_short(old)} -> {_short(new)}")
        if not self.allowable:
            return head + ("; resume with the same weights, or give this model another short name (SHORT=SPEC) "
                           "or another --out")
        return head + "; use a new --out, or pass --allow-mixed to continue and record the mix"

    def as_json(self) -> dict:
        return {"what": self.what, "task_id": self.task_id, "model": self.model, "old": self.old, "new": self.new,
                "n": self.n}


def _changed_keys(old: Any, new: Any) -> tuple[Any, Any]:
    """Two dicts cut to the keys whose values differ (a settings dict says what changed, e.g.
    ``{'dtype': 'float32'} -> {'dtype': 'bfloat16'}``); anything else as given."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]
        if keys:
            return {k: old.get(k) for k in keys}, {k: new.get(k) for k in keys}
    return old, new


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 80 else s[:77] + "..."


def compare(records: Iterable[TrialRecord], current: dict[str, Any],
            get: Callable[[TrialRecord], dict[str, Any]], task_id: str, model: str,
            not_allowable: frozenset[str] = frozenset()) -> list[Difference]:
    """Differences between finished ``records`` and ``current`` values.

    ``get(record)`` returns the record's values under the keys of ``current`` (a key it
    leaves out, or maps to ``None``, was not recorded then and is not compared).  One
    :class:`Difference` per key that differs, naming the first differing old value (in
    file order) and how many records differ."""
    seen: dict[str, list] = defaultdict(list)
    for r in records:
        vals = get(r)
        for k, new in current.items():
            old = vals.get(k)
            if old is not None and old != new:
                seen[k].append(old)
    return [Difference(k, task_id, model, olds[0], current[k], len(olds), k not in not_allowable)
            for k, olds in seen.items()]


def prompt_version(r: TrialRecord) -> str | None:
    """The prompt version of a model trial: ``run_meta.prompt_template_hash`` (the task's
    prompt template, few-shot format included) when recorded, else ``prompt_id`` for a VLM
    readout (``vlm_prompt``, ``vlm_vsi_*``) and ``prompt_hash`` (the readout spec) for an
    encoder readout; None for human records."""
    if r.model_family == "human":
        return None
    extra = r.run_meta.model_extra or {}
    if extra.get("prompt_template_hash"):
        return extra["prompt_template_hash"]
    if r.readout.startswith("vlm_"):  # vlm_prompt and the VSI readouts: per-stimulus prompts share one id
        return r.prompt_id
    return r.prompt_hash


def split_prompt_versions(records: list[TrialRecord]) -> tuple[list[TrialRecord], list[str]]:
    """Keep two prompt versions of one (task, model) apart for scoring.

    Where the records of one ``task_id`` and ``model`` carry more than one
    :func:`prompt_version` (a resume under ``--allow-mixed``, or merged runs), each version
    is scored as its own respondent: ``model`` becomes ``"{model}[prompt={version}]"``
    (records are copied, the file is unchanged).  Returns (records, one note per split)."""
    versions: dict[tuple[str, str], set] = defaultdict(set)
    for r in records:
        v = prompt_version(r)
        if v is not None:
            versions[(r.task_id, r.model)].add(v)
    mixed = {k: vs for k, vs in versions.items() if len(vs) > 1}
    if not mixed:
        return records, []
    out = []
    for r in records:
        if (r.task_id, r.model) in mixed:
            r = r.model_copy(update={"model": f"{r.model}[prompt={prompt_version(r)}]"})
        out.append(r)
    notes = [f"{t} ({m}): {len(vs)} prompt versions {sorted(vs)} scored separately, never pooled"
             for (t, m), vs in sorted(mixed.items())]
    return out, notes
