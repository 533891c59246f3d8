"""``perceptbench models``."""

from __future__ import annotations

from typing import Optional

import typer
from rich.markup import escape
from rich.table import Table

from .errors import console, fail


def models(
    roster: Optional[str] = typer.Option(None, "--roster", help="Show this roster's models with their declared "
                                         "metadata: a packaged roster's name or a roster file (.toml)."),
) -> None:
    """List the model adapters, the rosters and how to name a model."""
    from ..models.roster import RosterError, load_roster

    if roster is not None:
        try:
            r = load_roster(roster)
        except RosterError as e:
            fail(e)
        _print_roster(r)
        return
    from ..models.registry import MODEL_KINDS

    t = Table(title="models: --model [SHORT=]SPEC")
    for c in ("syntax", "kind", "what", "example"):
        t.add_column(c, overflow="fold")
    for k in MODEL_KINDS:
        t.add_row(*(escape(x) for x in (k.syntax, k.kind, k.description, k.example)))  # '[@FILE]' is not markup
    console.print(t)
    console.print("SHORT is the stable name written to records (default: derived from SPEC); "
                  "the exact weights/revision go to run_meta.model_version.")
    console.print(escape("SHORT[KEY=VALUE,...]=SPEC declares the model's metadata (keys: family, objective, params, "
                         "vision_tower, access, architecture), written to run.json and models.csv."), highlight=False)
    _print_rosters()


def _print_rosters() -> None:
    from ..models.metadata import FAMILIES
    from ..models.roster import load_roster, packaged_rosters

    t = Table(title="rosters: run --roster NAME (or --roster FILE.toml); models --roster NAME lists one")
    for c in ("roster", "models", "source reports", "source"):
        t.add_column(c, overflow="fold")
    for name in packaged_rosters():
        r = load_roster(name)
        t.add_row(escape(name), str(len(r.entries)), "" if r.seed_total is None else str(r.seed_total),
                  escape(r.source))
    console.print(t)
    console.print("families: " + "; ".join(f"{k} ({escape(v)})" for k, v in FAMILIES.items()), highlight=False)


def _print_roster(r) -> None:
    from ..models.metadata import format_params

    t = Table(title=f"roster {escape(r.name)}: {len(r.entries)} models"
              + (f" (the source reports {r.seed_total})" if r.seed_total is not None else ""))
    for c in ("name", "source's name", "spec", "revision", "basis", "family", "objective", "params",
              "vision tower", "access", "architecture"):
        t.add_column(c, overflow="fold")
    for e in r.entries:
        m = e.meta
        t.add_row(*(escape(x or "") for x in (e.name, e.seed_name, e.spec, e.revision, e.spec_basis, m.family,
                                               m.objective, format_params(m.params), m.vision_tower,
                                               m.access_or_implied, m.architecture)))
    console.print(t)
    console.print(f"file: {escape(str(r.path))}\nsource: {escape(r.source)}", highlight=False)
    if r.note:
        console.print(f"note: {escape(r.note)}", highlight=False)
