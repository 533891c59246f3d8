"""One experiment of Geirhos et al. (2019): its 160 stimuli (16 classes x 10), the raw trials of
its observers and, where the release has them, the paper's own CNN trials.

Source: rgeirhos/texture-vs-shape@ccd0c01 (a registered :mod:`perceptbench.sources` source).
Stimulus files are ``stimuli/<folder>/<class>/<class><n>.png`` (n = 1..10, as in the release);
trial files are ``raw-data/<experiment>[-trained-CNNs]/<experiment>_<subj>_session[_-]1.csv`` with
the columns ``subj,session,trial,rt,object_response,category,condition,imagename``, the image
being the last ``_`` field of ``imagename`` (the release's README and ``data-analysis.R``).
A silhouette and an edge experiment are two :class:`GeirhosExperiment` values
(:mod:`perceptbench.stimuli.silhouettes`, :mod:`perceptbench.stimuli.edges`).
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

_OBSERVER_FILE = re.compile(r"_subject-\d+_session_1\.csv$")


@dataclass(frozen=True)
class ReleaseImage:
    """One stimulus file of an experiment: ``index`` 1..10 as in the file name."""

    stimulus_id: str
    label: str
    index: int
    path: Path
    source_sha256: str


@dataclass(frozen=True)
class ObserverTrial:
    """One row of a raw trial CSV (an observer's or a published model's): ``subject`` is its
    ``subj`` field, ``rt_s`` its reaction time in seconds (NaN where the release writes
    ``NaN``, as for every model), ``source_path`` the mirror-relative file and
    ``source_sha256`` its pinned sha256."""

    subject: str
    stimulus_id: str
    response: str
    category: str
    trial: int
    rt_s: float
    source_path: str
    source_sha256: str


@dataclass(frozen=True)
class PublishedModel:
    """A model whose trials the paper published: ``name`` (records' model is
    ``published:<name>``), the mirror-relative trial ``file`` and in words what it is."""

    name: str
    file: str
    description: str


@dataclass(frozen=True)
class GeirhosExperiment:
    """One experiment of the release: ``source_id`` (registered source), the stimulus
    ``folder`` under ``stimuli/``, the ``experiment`` name of its raw-data files, the
    stimulus-id ``prefix`` (``silh_``, ``edge_``) and the ``published`` models whose trials
    the paper released for it (empty: none imported)."""

    source_id: str
    folder: str
    experiment: str
    prefix: str
    published: tuple[PublishedModel, ...] = ()

    def stimulus_id_for(self, label: str, index: int) -> str:
        """``<prefix><label><index>``, e.g. ``silh_airplane1``."""
        return f"{self.prefix}{label}{index}"

    def stimulus_id_for_file(self, fname: str) -> str | None:
        """The stimulus id of a release image file name (the last ``_`` field of a raw trial's
        ``imagename``): ``<class><n>.png`` -> :meth:`stimulus_id_for`; None when the name is not
        of that form.  An experiment with another naming overrides it."""
        m = re.fullmatch(r"([a-z]+?)(\d+)\.png", fname)
        return None if m is None else self.stimulus_id_for(m.group(1), int(m.group(2)))

    def images(self) -> list[ReleaseImage]:
        """The 160 stimuli, sorted by (class, index); files resolved and sha256-verified.
        Raises RuntimeError when the source does not hold 160."""
        rx = re.compile(rf"stimuli/{re.escape(self.folder)}/([a-z]+)/([a-z]+)(\d+)\.png$")
        out = []
        for sf in get_source(self.source_id).files:
            m = rx.search(sf.path)
            if m:
                label, _, n = m.groups()
                out.append(ReleaseImage(self.stimulus_id_for(label, int(n)), label, int(n), resolve(sf), sf.sha256))
        out.sort(key=lambda s: (s.label, s.index))
        if len(out) != 160:
            raise RuntimeError(f"expected 160 {self.folder} images in the source, found {len(out)}")
        return out

    def observer_trials(self) -> list[ObserverTrial]:
        """All raw trials of the observers (files ``<experiment>_subject-NN_session_1.csv``),
        in the source's file order.  Raises ValueError naming file and line for a bad row."""
        return [t for sf in get_source(self.source_id).files
                if f"/raw-data/{self.experiment}/" in sf.path and _OBSERVER_FILE.search(sf.path)
                for t in self._read(sf)]

    def published_trials(self) -> dict[str, list[ObserverTrial]]:
        """{published model name: its trials} for every model in :attr:`published`, in that
        order.  Raises KeyError when a declared file is not in the source."""
        files = {sf.path: sf for sf in get_source(self.source_id).files}
        return {p.name: self._read(files[p.file]) for p in self.published}

    def _read(self, sf) -> list[ObserverTrial]:
        path = resolve(sf)
        out = []
        with open(path, newline="") as f:
            for lineno, row in enumerate(csv.DictReader(f), start=2):
                try:
                    sid = self.stimulus_id_for_file(row["imagename"].rsplit("_", 1)[-1])
                    if sid is None:
                        raise ValueError(f"imagename {row['imagename']!r}")
                    out.append(ObserverTrial(
                        subject=row["subj"], stimulus_id=sid,
                        response=row["object_response"], category=row["category"],
                        trial=int(row["trial"]), rt_s=float(row["rt"]),
                        source_path=sf.path, source_sha256=sf.sha256))
                except (KeyError, ValueError) as e:
                    raise ValueError(f"{path}:{lineno}: bad raw trial row ({e})") from None
        return out


def load_image(path: Path) -> Image.Image:
    """Open a stimulus as RGB through the project's one external-image loader
    (:func:`perceptbench.stimuli.images.load_image`: EXIF orientation, transparency onto
    white, colour modes); raises ImageLoadError (a ValueError) naming the file if it cannot
    be decoded."""
    from .images import load_image as _load

    return _load(path)
