"""Loaders of external benchmarks.

One small module per release: :mod:`.salbench_natural` (SalBench / P3 / O3), :mod:`.pope`,
:mod:`.hallusionbench`, :mod:`.mmvp`, :mod:`.mmstar`; every image they read is decoded by
:mod:`perceptbench.stimuli.images` (EXIF orientation, transparency, colour modes);
:mod:`.base` defines the :class:`VQAStimulus` / :class:`Region` records; :mod:`.grounding`
(imports torch and transformers when called) turns an object phrase into a region.
Importing this package imports neither torch nor ``datasets``.
"""

from ._common import MissingExternalDataError
from .base import Region, VQAStimulus

__all__ = ["MissingExternalDataError", "Region", "VQAStimulus"]
