"""Suite analyses (analyses over the records of several tasks), registered in
:data:`SUITE_ANALYSES` and run by :mod:`perceptbench.scoring`; see :mod:`.base`."""

from .base import SUITE_ANALYSES, SuiteAnalysis

# the registered suite analyses, in the order scoring runs them
from ..vsi import suite as _vsi_suite  # noqa: E402,F401  (isort: skip)
from . import crossmodel as _crossmodel  # noqa: E402,F401  (isort: skip)

__all__ = ["SUITE_ANALYSES", "SuiteAnalysis"]
