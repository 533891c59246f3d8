"""The command line's console and its error exit: a one-line ``error: ...`` and exit status 2."""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console
from rich.markup import escape

console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 150)
"""Every command prints through this console (150 columns when not a terminal and COLUMNS is unset)."""


def fail(msg) -> None:
    """Print ``error: MSG`` (a KeyError's message without its quotes) and exit with status 2."""
    if isinstance(msg, KeyError) and msg.args:
        msg = msg.args[0]
    console.print(f"[red]error:[/red] {escape(str(msg))}", highlight=False)
    raise typer.Exit(2)
