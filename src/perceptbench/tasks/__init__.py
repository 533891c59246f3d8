"""Tasks: a stimulus set, a split, a human reference, a prompt, a response space and a
scorer.  Importing this package imports no model code (no torch).

``get_task``, ``list_tasks`` and ``parse_task_id`` come from :mod:`.registry`, imported on
first use: the registry lists the VSI benchmarks (:mod:`perceptbench.vsi.benchmarks`), which
import :mod:`.base`, and importing ``perceptbench.tasks.base`` runs this ``__init__`` first, so an
eager import of the registry here would make ``import perceptbench.vsi.benchmarks`` meet itself
half-built."""

__all__ = ["get_task", "list_tasks", "parse_task_id"]


def __getattr__(name: str):
    """The registry's functions of :data:`__all__`, imported on first use (PEP 562)."""
    if name in __all__:
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
