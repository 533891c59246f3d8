"""Geirhos et al. (2019) filled silhouettes and the raw trials of their 10 observers.

Source: ``geirhos2019-silhouettes`` (rgeirhos/texture-vs-shape@ccd0c01).  160 images,
16 classes x 10, 224 x 224 px.  Stimulus ids are ``silh_<class><n>`` for the file
``filled-silhouettes/<class>/<class><n>.png`` (n = 1..10, as in the release).  The loader is
:class:`perceptbench.stimuli.geirhos.GeirhosExperiment`, shared with the edge experiment.
"""

from __future__ import annotations

from .geirhos import CLASSES, NO_ANSWER, GeirhosExperiment, ObserverTrial, ReleaseImage, load_image

__all__ = ["CLASSES", "NO_ANSWER", "EXPERIMENT", "ObserverTrial", "SilhouetteImage", "load_image",
           "observer_trials", "silhouette_images", "stimulus_id_for"]

EXPERIMENT = GeirhosExperiment("geirhos2019-silhouettes", "filled-silhouettes", "silhouette-filled-experiment", "silh_")
"""The silhouette experiment.  The release's CNN trials for it are not imported (declaring them
would add rows to the default run's pinned scores)."""

SilhouetteImage = ReleaseImage


def stimulus_id_for(label: str, index: int) -> str:
    return EXPERIMENT.stimulus_id_for(label, index)


def silhouette_images() -> list[ReleaseImage]:
    """The 160 silhouettes, sorted by (class, index); files resolved and sha256-verified."""
    return EXPERIMENT.images()


def observer_trials() -> list[ObserverTrial]:
    """All raw trials of the 10 observers (subject-01..10), 160 each."""
    return EXPERIMENT.observer_trials()
