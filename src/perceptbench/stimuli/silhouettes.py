"""Geirhos et al. (2019) filled silhouettes and the raw trials of their 10 observers.

Source: ``geirhos2019-silhouettes`` (rgeirhos/texture-vs-shape@ccd0c01).  160 images,
16 classes x 10, 224 x 224 px.  Stimulus ids are ``silh_<class><n>`` for the file
``filled-silhouettes/<class>/<class><n>.png`` (n = 1..10, as in the release).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from ..sources import get_source, resolve

CLASSES: tuple[str, ...] = (
    "airplane", "bear", "bicycle", "bird", "boat", "bottle", "car", "cat", "chair", "clock",
    "dog", "elephant", "keyboard", "knife", "oven", "truck",
)
"""The 16 classes in the order of the seed's prompt (alphabetical)."""

NO_ANSWER = "na"
"""The raw data's value for a trial without a class response.  Declared rule: it is kept
as the response ``"na"`` and counts as incorrect everywhere (it is not a null)."""

_IMG_RE = re.compile(r"filled-silhouettes/([a-z]+)/([a-z]+)(\d+)\.png$")


@dataclass(frozen=True)
class SilhouetteImage:
    stimulus_id: str
    label: str
    index: int  # 1..10 as in the file name
    path: Path
    source_sha256: str


@dataclass(frozen=True)
class ObserverTrial:
    """One row of a raw observer CSV (``subj,session,trial,rt,object_response,category,...``)."""

    subject: str
    stimulus_id: str
    response: str
    category: str
    trial: int
    rt_s: float
    source_path: str
    source_sha256: str


def stimulus_id_for(label: str, index: int) -> str:
    return f"silh_{label}{index}"


def silhouette_images() -> list[SilhouetteImage]:
    """The 160 silhouettes, sorted by (class, index); files resolved and sha256-verified."""
    out = []
    for sf in get_source("geirhos2019-silhouettes").files:
        m = _IMG_RE.search(sf.path)
        if not m:
            continue
        label, _, n = m.groups()
        out.append(SilhouetteImage(stimulus_id_for(label, int(n)), label, int(n), resolve(sf), sf.sha256))
    out.sort(key=lambda s: (s.label, s.index))
    if len(out) != 160:
        raise RuntimeError(f"expected 160 silhouettes in the source, found {len(out)}")
    return out


def load_image(path: Path) -> Image.Image:
    """Open a silhouette as RGB through the project's one external-image loader
    (:func:`perceptbench.stimuli.images.load_image`: EXIF orientation, transparency onto
    white, colour modes); raises ImageLoadError (a ValueError) naming the file if it cannot
    be decoded."""
    from .images import load_image as _load

    return _load(path)


def observer_trials() -> list[ObserverTrial]:
    """All raw trials of the 10 observers (subject-01..10), 160 each."""
    out = []
    for sf in get_source("geirhos2019-silhouettes").files:
        if "/raw-data/" not in sf.path:
            continue
        path = resolve(sf)
        with open(path, newline="") as f:
            for lineno, row in enumerate(csv.DictReader(f), start=2):
                try:
                    fname = row["imagename"].rsplit("_", 1)[-1]
                    m = re.fullmatch(r"([a-z]+?)(\d+)\.png", fname)
                    if not m:
                        raise ValueError(f"imagename {row['imagename']!r}")
                    out.append(ObserverTrial(
                        subject=row["subj"], stimulus_id=stimulus_id_for(m.group(1), int(m.group(2))),
                        response=row["object_response"], category=row["category"],
                        trial=int(row["trial"]), rt_s=float(row["rt"]),
                        source_path=sf.path, source_sha256=sf.sha256))
                except (KeyError, ValueError) as e:
                    raise ValueError(f"{path}:{lineno}: bad raw trial row ({e})") from None
    return out
