"""The ``perceptbench`` command line: one module per command, registered on :data:`app`.

Shared parts: :mod:`.errors` (the console and the one-line error exit), :mod:`.out_checks`
(the ``--out`` checks), :mod:`.tables` (terminal tables), :mod:`.options` (options several
commands take).  ``run`` and ``score`` go through the orchestration layer
:mod:`perceptbench.api`, as the Python API does.

Light commands (``tasks``, ``models``, ``score``, ``sources``, ``validate``, ``report``,
``show``, ``export``, ``merge``, ``paper``) import no torch; only ``run`` loads model back-ends, and only
for models it needs.  Each command imports what it needs inside its function."""

from __future__ import annotations

import os
import signal
import sys


def _interrupted(signum, frame) -> None:
    """Ctrl-C or SIGTERM before a command handles them itself: one line, no traceback.  Commands
    write every file whole or not at all (atomic replace), so nothing half-written is left."""
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    cmd = next((a for a in sys.argv[1:] if not a.startswith("-")), "")
    sys.stderr.write(f"perceptbench {cmd}: interrupted ({name}) before it finished; nothing half-written is left: "
                     "rerun the same command\n".replace(" :", ":"))
    raise StartUpInterrupt(143 if signum == signal.SIGTERM else 130)


class StartUpInterrupt(SystemExit):
    """The exit :func:`_interrupted` raises (code 130 or 143).  Raised from a signal handler, it
    lands in whatever code runs: where that is a class body's ``__set_name__`` (an import),
    Python wraps it in a RuntimeError; :func:`main` finds it in the chain and exits with its code."""


def _interrupt_in(e: BaseException | None) -> StartUpInterrupt | None:
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, StartUpInterrupt):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


# installed before the slow imports below when perceptbench runs as a command (its console script,
# `python -m perceptbench.cli`, `python -c`), never inside another program that imports it
if sys.argv and (sys.argv[0] in ("-m", "-c") or os.path.basename(sys.argv[0]) == "perceptbench"):
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, _interrupted)

import typer  # noqa: E402
from typer.core import TyperGroup  # noqa: E402

from . import export, merge, models, paper, render, report, run, score, show, sources, tasks, validate  # noqa: E402
from .out_checks import REPORT_MARKER, check_out  # noqa: E402
from .tables import format_ci, format_value  # noqa: E402

__all__ = ["app", "main", "REPORT_MARKER", "check_out", "format_ci", "format_value"]

_check_out = check_out  # the name tests and scripts used before the CLI became a package


# click's UsageError as this typer raises it: typer >= 0.25 vendors click (typer._click), older ones use click
_UsageError = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError")


class _OneLineUsageErrors(TyperGroup):
    """The root command group: a usage error (an unknown command or option, a missing argument, a
    value of the wrong type), at any level (``perceptbench sources ...`` included), is one line
    ``error: MESSAGE (see 'perceptbench CMD --help')`` on standard error with exit status 2, as
    every other error of perceptbench is (:func:`.errors.fail`), instead of click's usage lines
    and a boxed message.  ``no_args_is_help`` still prints the help."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except _UsageError as e:
            _usage_error(e)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except _UsageError as e:
            _usage_error(e)


def _usage_error(e) -> None:
    if type(e).__name__ == "NoArgsIsHelpError":  # not an error: the help it asks for
        raise e
    from .errors import fail

    fail(e.format_message().rstrip(".") + (f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""))


app = typer.Typer(add_completion=False, no_args_is_help=True, cls=_OneLineUsageErrors,
                  help="Do vision models see the way people do? Run the battery, score trial records.")


def _print_version(value: bool) -> None:
    if value:
        from ..core.version import __version__
        from .errors import console

        console.print(f"perceptbench {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                          help="Print perceptbench's version and exit.")) -> None:
    pass


app.add_typer(sources.app, name="sources")
for _module in (run, score, merge, report, export, validate, render, show, tasks, models, paper):
    app.command()(getattr(_module, _module.__name__.rsplit(".", 1)[1]))


def main() -> None:
    """The console script (``[project.scripts]``) and ``python -m perceptbench.cli``: :data:`app`,
    with an interruption during start-up ended by its exit code (130 SIGINT, 143 SIGTERM) and the
    one line :func:`_interrupted` wrote, also where Python wrapped it in another exception."""
    try:
        app()
    except BaseException as e:
        hit = _interrupt_in(e)
        if hit is None or hit is e:
            raise
        raise SystemExit(hit.code) from None


if __name__ == "__main__":  # pragma: no cover
    main()
