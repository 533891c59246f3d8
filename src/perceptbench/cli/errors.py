"""The command line's consoles and its error exit: a one-line ``error: ...`` on standard error and
exit status 2."""

from __future__ import annotations

import os
import sys

import typer
from rich.console import Console
from rich.markup import escape

console = Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 150, emoji=False)
"""Every command prints through this console (150 columns when not a terminal and COLUMNS is unset).
No emoji codes: ``records.jsonl:100:`` is a file and line, not ``:100:`` (rich's emoji)."""

err_console = Console(stderr=True, width=None if sys.stderr.isatty() or os.environ.get("COLUMNS") else 150,
                      emoji=False)
"""Errors, warnings and interruption lines go to standard error through this console (so a command's
output redirected to a file, e.g. ``perceptbench tasks > tasks.txt``, holds no error, and an error is
seen on the terminal); what a command reports as its result goes to :data:`console`."""


def fail(msg) -> None:
    """Print ``error: MSG`` on standard error (a KeyError's message without its quotes; credentials
    in a URL redacted, :func:`perceptbench.core.urls.redact_urls_in`) and exit with status 2."""
    if isinstance(msg, KeyError) and msg.args:
        msg = msg.args[0]
    from ..core.urls import redact_urls_in

    # soft_wrap: one line whatever the width (a log's 150 columns would split a long message in two)
    err_console.print(f"[red]error:[/red] {escape(redact_urls_in(str(msg)))}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def os_error_line(e: OSError, default_file=None, *, resumes: bool = False) -> str:
    """One line for an OSError while writing: the file (``e.filename``, else ``default_file``),
    what went wrong in words, and for a full disk that nothing written before is lost (with
    ``resumes``: that rerunning the same command resumes)."""
    import errno

    where = e.filename or default_file or "a file"
    why = e.strerror or str(e)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return (f"{where}: {why} (disk full); everything written before is kept"
                + ("; free some space and rerun the same command: it resumes where it stopped" if resumes
                   else "; free some space and rerun the same command"))
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"{where}: {why} (cannot write here); give a writable location, e.g. --out"
    return f"{where}: {why}"


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, a scheduler's stop) raised as an interrupt, so that clean-up runs; exit 143."""


def signals_as_interrupts() -> None:
    """From here on Ctrl-C raises KeyboardInterrupt and SIGTERM :class:`Terminated` (in the main
    thread; elsewhere nothing changes), for a command that says itself what an interruption
    left (``run``: the records written; ``merge``: nothing).  Before, the command line's
    start-up handler answers both with one line."""
    import signal

    def _on_term(signum, frame):
        raise Terminated()

    try:
        signal.signal(signal.SIGTERM, _on_term)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread (e.g. called from a test runner's worker)
        pass


class TornTailsAsWarnings:
    """Context printing each torn final line the record reader left out
    (:class:`perceptbench.records.TornTailWarning`) as ``warning: FILE:LINE: ...``, the
    message `validate` reports for it, once, also when the block fails, on standard error.  Used by ``score``,
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
            err_console.print(f"[yellow]warning:[/yellow] {escape(m)}", highlight=False, soft_wrap=True)
            err_console.print("  (a crash's leftover, not a complete record: left out; a rerun of `perceptbench run` "
                          "removes it)", highlight=False)
