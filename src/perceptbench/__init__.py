"""perceptbench: do vision models see the way people do?

Pipeline (one direction): sources -> stimuli -> tasks -> models + readouts ->
trial records -> metrics -> reports, with the CLI on top.  The core (everything
but ``perceptbench.models`` back-ends) imports without torch.

Python API (see :mod:`perceptbench.python_api`; tables are pandas DataFrames):
:func:`run`, :func:`score`, :func:`load_records`, :func:`scores_frame`,
:func:`list_tasks`, :func:`list_models`.  They are loaded on first use, so importing any
part of the package (``perceptbench.core``, ``perceptbench.metrics`` ...) never imports the
orchestration layer above it.
"""

from .core.version import __version__

__all__ = ["__version__", "run", "score", "load_records", "scores_frame", "list_tasks", "list_models"]

_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str):
    if name in _API:
        from . import python_api

        return getattr(python_api, name)
    raise AttributeError(f"module 'perceptbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _API)
