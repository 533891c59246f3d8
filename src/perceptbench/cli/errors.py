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
    """Print ``error: MSG`` (a KeyError's message without its quotes; credentials in a URL
    redacted, :func:`perceptbench.core.urls.redact_urls_in`) and exit with status 2."""
    if isinstance(msg, KeyError) and msg.args:
        msg = msg.args[0]
    from ..core.urls import redact_urls_in

    console.print(f"[red]error:[/red] {escape(redact_urls_in(str(msg)))}", highlight=False)
    raise typer.Exit(2)


class TornTailsAsWarnings:
    """Context printing each torn final line the record reader left out
    (:class:`perceptbench.records.TornTailWarning`) as ``warning: FILE:LINE: ...``, the
    message `validate` reports for it, once, also when the block fails.  Used by ``score``,
    ``merge``, ``report`` and ``export``, so one torn line reads the same from each."""

    def __enter__(self):
        import warnings

        from ..records import TornTailWarning

        self._ctx = warnings.catch_warnings(record=True)
        self._caught = self._ctx.__enter__()
        warnings.simplefilter("always", TornTailWarning)
        self._kind = TornTailWarning
        return self

    def __exit__(self, *exc) -> None:
        import warnings

        self._ctx.__exit__(*exc)
        seen: list[str] = []
        for w in self._caught:
            if issubclass(w.category, self._kind):
                if str(w.message) not in seen:
                    seen.append(str(w.message))
            else:
                warnings.showwarning(w.message, w.category, w.filename, w.lineno)
        for m in seen:
            console.print(f"[yellow]warning:[/yellow] {escape(m)}", highlight=False)
            console.print("  (a crash's leftover, not a complete record: left out; a rerun of `perceptbench run` "
                          "removes it)", highlight=False)
