"""Geirhos et al. (2019) cue-conflict (style-transfer) experiment: 1,280 images whose shape comes
from one of 16 classes and whose texture from another (or, for 80 of them, the same class), the
raw trials of its 10 observers and the paper's own AlexNet, GoogLeNet and VGG-16 trials.

Source: ``geirhos2019-cue-conflict`` (rgeirhos/texture-vs-shape@ccd0c01, the paper §2 and Fig. 4;
raw trials ``raw-data/style-transfer-512-nomask-experiment/``, pinned by sha256 in the manifest).
The images (``stimuli/style-transfer-preprocessed-512/<shape>/<shape><i>-<texture><j>.png``,
133 MB) are **not** mirrored and no per-file sha256 is declared for them (the release publishes
none and none is known offline): they are pinned by the release commit :data:`RELEASE_COMMIT`.
``perceptbench sources fetch geirhos2019-cue-conflict`` (:func:`fetch_images`) downloads them from
their raw URLs at that commit into :func:`default_images_dir`, which the task then reads by default,
and records each file's sha256 in a manifest beside them (:mod:`perceptbench.sources.downloads`):
later runs check the files against it, so a file changed after download is caught.  A user-given
directory (task setting ``images=DIR``) is read as it is (checked against such a manifest when it
holds one).  Every record states the sha256 of the image it showed (``stimulus_sha256``), so two
runs can be checked to have seen the same bytes.
The set of images is the one the observers saw (the ``imagename`` of their trials, whose last
``_`` field is the file name, as in the release's ``data-analysis.R``).

Stimulus ids are ``cue_<shape><i>-<texture><j>`` (the file's stem).  Shape class = the folder and
the trial CSVs' ``category``; texture class = the second part of the name (model-vs-human's
``ShapeBias.get_texture_category``, ``modelvshuman/plotting/analyses.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import os

from ..sources.downloads import MANIFEST_NAME, PinnedFile, download_set, read_manifest, verify_set
from ..sources.fetch import MIRROR_ENV, MissingSourceError, cache_dir
from .geirhos import GeirhosExperiment, PublishedModel

RELEASE_COMMIT = "ccd0c01d42c0a8a834e90ec141e7f24fa915dc23"
"""The texture-vs-shape commit the images are pinned to (the same as the raw trials')."""
STIMULI_FOLDER = "stimuli/style-transfer-preprocessed-512"
"""The images' folder in the release."""
FETCH_COMMAND = "perceptbench sources fetch geirhos2019-cue-conflict"
"""The command that downloads the images into :func:`default_images_dir`."""
DOWNLOAD_HINT = (f"run `{FETCH_COMMAND}` (with internet: the 1,280 PNGs, 133 MB, of {STIMULI_FOLDER}/ of "
                 f"https://github.com/rgeirhos/texture-vs-shape at commit {RELEASE_COMMIT}, into the default image "
                 "directory), or download that folder yourself and give its path as the task setting images=DIR "
                 "(DIR/<shape class>/<shape><i>-<texture><j>.png)")
"""What to get when the images are missing (the one-line refusal's advice)."""
BASE_URL_ENV = "PERCEPTBENCH_CUE_CONFLICT_URL"
"""Environment variable: another base URL for the release (a copy of the repository served at
``BASE/stimuli/style-transfer-preprocessed-512/...``); default :data:`RELEASE_URL`."""
RELEASE_URL = f"https://raw.githubusercontent.com/rgeirhos/texture-vs-shape/{RELEASE_COMMIT}"
"""The images' canonical base URL: raw files of the release at the pinned commit."""
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PREFIX = "cue_"

_NAME = re.compile(r"([a-z]+)(\d+)-([a-z]+)(\d+)\.png")
_RAW = "texture-vs-shape/raw-data/style-transfer-512-nomask-experiment"


@dataclass(frozen=True)
class CueConflictImage:
    """One image of the release, from its file name ``<shape><i>-<texture><j>.png``:
    ``shape``/``texture`` class names, ``shape_index``/``texture_index`` the source images'
    numbers.  :attr:`conflict` is False for the 80 images whose two classes are equal (no cue
    conflict; left out of shape bias, as model-vs-human does)."""

    shape: str
    shape_index: int
    texture: str
    texture_index: int

    @property
    def file_name(self) -> str:
        return f"{self.shape}{self.shape_index}-{self.texture}{self.texture_index}.png"

    @property
    def stimulus_id(self) -> str:
        return PREFIX + self.file_name[:-4]

    @property
    def relpath(self) -> str:
        """Path under the images folder: ``<shape>/<file name>``."""
        return f"{self.shape}/{self.file_name}"

    @property
    def conflict(self) -> bool:
        return self.shape != self.texture


def parse_file_name(fname: str) -> CueConflictImage | None:
    """The image named ``fname`` (``airplane1-bicycle2.png``), or None when not of that form."""
    m = _NAME.fullmatch(fname)
    return None if m is None else CueConflictImage(m.group(1), int(m.group(2)), m.group(3), int(m.group(4)))


def parse_stimulus_id(stimulus_id: str) -> CueConflictImage | None:
    """The inverse of :attr:`CueConflictImage.stimulus_id`; None for another id."""
    if not stimulus_id.startswith(PREFIX):
        return None
    return parse_file_name(stimulus_id[len(PREFIX):] + ".png")


@dataclass(frozen=True)
class CueConflictExperiment(GeirhosExperiment):
    """The cue-conflict experiment: raw trials as for every :class:`GeirhosExperiment`, images
    from a directory (:meth:`images_in`) instead of the manifest."""

    def stimulus_id_for_file(self, fname: str) -> str | None:
        img = parse_file_name(fname)
        return None if img is None else img.stimulus_id

    def images(self):
        raise RuntimeError("the cue-conflict images are not a manifest source: use images_in(DIR)")

    def release_images(self) -> list[CueConflictImage]:
        """Every image an observer saw (1,280 in the release), sorted by stimulus id."""
        ids = sorted({t.stimulus_id for t in self.observer_trials()})
        return [parse_stimulus_id(s) for s in ids]  # type: ignore[misc]

    def images_in(self, directory: str | Path | None) -> dict[str, Path]:
        """{stimulus id: file} for every release image under ``directory`` (the release's
        ``stimuli/style-transfer-preprocessed-512`` folder, or a checkout containing it); no
        directory (None or empty): :func:`default_images_dir`, where ``sources fetch`` puts them.
        Raises MissingSourceError (one line, naming what to download) when the directory does
        not exist or any image is missing, and ChecksumError (one line) when the directory holds a
        download manifest and a file's bytes differ from the sha256 recorded in it."""
        what = "cue-conflict images (Geirhos et al. 2019 style transfer)"
        given = directory is not None and str(directory).strip()
        root = Path(directory).expanduser() if given else default_images_dir()
        if not given and not root.is_dir():
            raise MissingSourceError(f"{what}: not downloaded (no images=DIR given and none in the default "
                                     f"directory {root}); {DOWNLOAD_HINT}")
        if (root / STIMULI_FOLDER).is_dir():
            root = root / STIMULI_FOLDER
        if not root.is_dir():
            raise MissingSourceError(f"{what}: image directory not found: {root}; {DOWNLOAD_HINT}")
        images = self.release_images()
        paths = {i.stimulus_id: root / i.relpath for i in images}
        missing = [p for p in paths.values() if not p.is_file()]
        if missing:
            raise MissingSourceError(f"{what}: {len(missing)} of {len(paths)} images missing under {root} "
                                     f"(first: {missing[0]}); {DOWNLOAD_HINT}")
        if (root / MANIFEST_NAME).is_file():
            _, unlisted = verify_set(root, [i.relpath for i in images], fetch_command=FETCH_COMMAND)
            if unlisted:
                raise MissingSourceError(f"{what}: {len(unlisted)} of {len(paths)} images under {root} are not in "
                                         f"its download manifest {MANIFEST_NAME} (first: {unlisted[0]}): an "
                                         f"interrupted download; run `{FETCH_COMMAND}` to finish it")
        return paths

    def fetch_images(self, directory: str | Path | None = None, *, progress=None, **kw):
        """Download every release image not yet in ``directory`` (default :func:`default_images_dir`)
        from :func:`release_url` and record its sha256 in the manifest beside them
        (:func:`perceptbench.sources.downloads.download_set`, whose keyword arguments ``kw``
        passes on: ``timeout``, ``attempts``, ``wait_s``).  Refuses to write into the read-only
        data mirror.  Returns the :class:`~perceptbench.sources.downloads.DownloadSummary`.
        Raises DownloadError / ChecksumError (one line each)."""
        root = Path(directory).expanduser() if directory else default_images_dir()
        mirror = os.environ.get(MIRROR_ENV)
        if mirror and Path(mirror).resolve() in (root.resolve(), *root.resolve().parents):
            raise MissingSourceError(f"{root} is inside the data mirror {mirror} ({MIRROR_ENV}), which perceptbench "
                                     "never writes: put the cue-conflict images there yourself, or unset "
                                     f"{MIRROR_ENV} to download them into the cache {cache_dir()}")
        base = release_url()
        files = [PinnedFile(i.relpath, f"{base}/{STIMULI_FOLDER}/{i.relpath}") for i in self.release_images()]
        return download_set(root, files, what=f"cue-conflict images of rgeirhos/texture-vs-shape@{RELEASE_COMMIT[:7]}",
                            hint=f"without internet, download {STIMULI_FOLDER}/ of that commit elsewhere and give "
                                 "it as images=DIR", fetch_command=FETCH_COMMAND,
                            check=lambda head: head.startswith(PNG_SIGNATURE), progress=progress, **kw)

    def fetched(self, directory: str | Path | None = None) -> tuple[Path, int, int]:
        """(directory, images listed in its download manifest and present, release images): what
        ``sources verify`` reports without hashing anything."""
        root = Path(directory).expanduser() if directory else default_images_dir()
        man = read_manifest(root)
        imgs = self.release_images()
        return root, sum(i.relpath in man and (root / i.relpath).is_file() for i in imgs), len(imgs)


def release_url() -> str:
    """Base URL of the release: :data:`BASE_URL_ENV` if set, else :data:`RELEASE_URL`."""
    return (os.environ.get(BASE_URL_ENV) or RELEASE_URL).rstrip("/")


def default_images_dir() -> Path:
    """Where the task looks for the images when no ``images=DIR`` is given: the mirror's
    ``texture-vs-shape/stimuli/style-transfer-preprocessed-512`` when ``PERCEPTBENCH_MIRROR`` is set
    and holds that folder, else the per-user cache's (``PERCEPTBENCH_CACHE`` or
    ``~/.cache/perceptbench``), where ``perceptbench sources fetch geirhos2019-cue-conflict`` puts them."""
    mirror = os.environ.get(MIRROR_ENV)
    if mirror and (Path(mirror) / "texture-vs-shape" / STIMULI_FOLDER).is_dir():
        return Path(mirror) / "texture-vs-shape" / STIMULI_FOLDER
    return cache_dir() / "texture-vs-shape" / STIMULI_FOLDER


EXPERIMENT = CueConflictExperiment(
    "geirhos2019-cue-conflict", "style-transfer-preprocessed-512", "style-transfer-512-nomask-experiment",
    PREFIX, published=(
        PublishedModel("alexnet", f"{_RAW}/style-transfer-512-nomask-experiment_alexnet_session_1.csv",
                       "AlexNet, ImageNet-trained (caffe)"),
        PublishedModel("googlenet", f"{_RAW}/style-transfer-512-nomask-experiment_googlenet_session_1.csv",
                       "GoogLeNet, ImageNet-trained (caffe)"),
        PublishedModel("vgg16", f"{_RAW}/style-transfer-512-nomask-experiment_vgg_session_1.csv",
                       "VGG-16, ImageNet-trained (caffe)"),
    ))
"""The cue-conflict experiment and the three CNNs whose trials the release holds beside the
observers' (the release's ResNet-50 cue-conflict trials are not in the mirror)."""
