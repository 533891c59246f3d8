"""``perceptbench models``."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from .errors import console


def models() -> None:
    """List the model adapters and how to name a model."""
    from ..models.registry import MODEL_KINDS

    t = Table(title="models: --model [SHORT=]SPEC")
    for c in ("syntax", "kind", "what", "example"):
        t.add_column(c, overflow="fold")
    for k in MODEL_KINDS:
        t.add_row(*(escape(x) for x in (k.syntax, k.kind, k.description, k.example)))  # '[@FILE]' is not markup
    console.print(t)
    console.print("SHORT is the stable name written to records (default: derived from SPEC); "
                  "the exact weights/revision go to run_meta.model_version.")
