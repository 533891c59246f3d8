"""Loaders of external benchmarks and the one loader for images from outside the project.

One small module per release: :mod:`.salbench_natural` (SalBench / P3 / O3), :mod:`.pope`,
:mod:`.hallusionbench`, :mod:`.mmvp`, :mod:`.mmstar`; :mod:`.images` decodes every image
that comes from outside the project (EXIF orientation, transparency, colour modes);
:mod:`.base` defines the :class:`VQAStimulus` / :class:`Region` records; :mod:`.grounding`
(imports torch and transformers when called) turns an object phrase into a region.
Importing this package imports neither torch nor ``datasets``.
"""

from .base import Region, VQAStimulus
from .images import ImageLoadError, load_image, load_mask

__all__ = ["ImageLoadError", "Region", "VQAStimulus", "load_image", "load_mask"]
