"""perceptbench: do vision models see the way people do?

Pipeline (one direction): sources -> stimuli -> tasks -> models + readouts ->
trial records -> metrics -> reports, with the CLI on top.  The core (everything
but ``perceptbench.models`` back-ends) imports without torch.

Python API (see :mod:`perceptbench.python_api`; tables are pandas DataFrames):
:func:`run`, :func:`score`, :func:`load_records`, :func:`scores_frame`,
:func:`list_tasks`, :func:`list_models`.
"""

__version__ = "0.1.0"

from .python_api import list_models, list_tasks, load_records, run, score, scores_frame  # noqa: E402

__all__ = ["__version__", "run", "score", "load_records", "scores_frame", "list_tasks", "list_models"]
