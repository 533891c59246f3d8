"""The public releases perceptbench is built on.

Every file is pinned: canonical URL at a fixed commit, sha256 and size, from the
embedded ``manifest.tsv`` (a subset of the project's data-mirror manifest: metadata
only, no data).  Citations follow the releases' own papers.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources


@dataclass(frozen=True)
class SourceFile:
    """One file of a release.  ``path`` is relative to the mirror root (starts with the
    source folder); ``sha256`` is the hex digest of its bytes; ``size`` in bytes."""

    path: str
    sha256: str
    size: int
    license: str
    url: str


@dataclass(frozen=True)
class Source:
    """A public data release."""

    id: str
    folder: str
    title: str
    citation: str
    license: str
    homepage: str
    files: tuple[SourceFile, ...] = field(default=(), repr=False)
    #: Hugging Face hub dataset ``"owner/name"`` for releases read through the ``datasets``
    #: library instead of pinned files (MMVP, MMStar); None for file releases.
    hub_dataset: str | None = None
    #: hub commit the dataset is pinned to (passed as ``revision=``); None = not pinned.
    hub_revision: str | None = None


_GEIRHOS2019 = dict(
    folder="texture-vs-shape",
    citation=("R. Geirhos, P. Rubisch, C. Michaelis, M. Bethge, F. A. Wichmann, W. Brendel. "
              "ImageNet-trained CNNs are biased towards texture; increasing shape bias improves "
              "accuracy and robustness. ICLR 2019. rgeirhos/texture-vs-shape@ccd0c01"),
    license="stimuli CC-BY-4.0; raw CSVs carry no explicit license",
    homepage="https://github.com/rgeirhos/texture-vs-shape",
)
"""What the three Geirhos et al. (2019) sources share: one release, one citation."""

_META = {
    "geirhos2019-silhouettes": dict(
        prefixes=("texture-vs-shape/stimuli/filled-silhouettes/",
                  "texture-vs-shape/raw-data/silhouette-filled-experiment/",
                  "texture-vs-shape/DATASET_LICENSE"),
        title="Filled silhouettes (16 classes x 10) and raw per-trial responses of 10 observers",
        **_GEIRHOS2019,
    ),
    "geirhos2019-edges": dict(
        prefixes=("texture-vs-shape/stimuli/edges/",
                  "texture-vs-shape/raw-data/edge-experiment/",
                  "texture-vs-shape/raw-data/edge-experiment-trained-CNNs/",
                  "texture-vs-shape/DATASET_LICENSE"),
        title=("Edge line drawings (16 classes x 10), raw per-trial responses of 10 observers and the "
               "paper's own CNN trials (AlexNet, GoogLeNet, VGG-16, ResNet-50 on ImageNet and on Stylized-ImageNet)"),
        **_GEIRHOS2019,
    ),
    "geirhos2019-cue-conflict": dict(
        prefixes=("texture-vs-shape/raw-data/style-transfer-512-nomask-experiment/",
                  "texture-vs-shape/DATASET_LICENSE"),
        title=("Cue-conflict (style-transfer) experiment: raw per-trial responses of 10 observers and the "
               "paper's AlexNet, GoogLeNet and VGG-16 trials on 1,280 images; the images "
               "(stimuli/style-transfer-preprocessed-512, 133 MB) are not in the manifest: they are "
               "pinned by the release commit only (no per-file sha256 is published), downloaded by "
               "`perceptbench sources fetch geirhos2019-cue-conflict` with a sha256 manifest written at "
               "download, or read from the task setting images=DIR (see perceptbench.stimuli.cue_conflict)"),
        **_GEIRHOS2019,
    ),
    "demiralp2014-kernels": dict(
        folder="perceptual-kernels",
        prefixes=("perceptual-kernels/data/kernels/", "perceptual-kernels/data/raw/"),
        title=("Perceptual kernels (l5, l9, sa, td, tm) for mark colour, shape, size and the shape x colour, "
               "size x colour and shape x size sets, and 20 subjects' raw triplet judgments (td, tm)"),
        citation=("C. Demiralp, M. S. Bernstein, J. Heer. Learning perceptual kernels for "
                  "visualization design. IEEE TVCG 20(12):1933-1942, 2014. "
                  "uwdata/perceptual-kernels@eda46ab"),
        license="no license file; the release invites use 'for your own purposes, research or otherwise'",
        homepage="https://github.com/uwdata/perceptual-kernels",
    ),
    "kotseruba2019-p3o3": dict(
        folder="kotseruba-p3o3",
        prefixes=("kotseruba-p3o3/",),
        title="P3/O3 examples with target and distractor masks",
        citation=("I. Kotseruba, C. Wloka, A. Rasouli, J. K. Tsotsos. Do saliency models detect "
                  "odd-one-out targets? New datasets and evaluations. BMVC 2019. "
                  "ykotseruba/P3O3_metrics@28a98c0"),
        license="Apache-2.0",
        homepage="https://github.com/ykotseruba/P3O3_metrics",
    ),
    "tseng2023-scatterplots": dict(
        folder="tseng2023-categorical-scatterplots",
        prefixes=("tseng2023-categorical-scatterplots/",),
        title=("Colour-coded multiclass scatterplots (10 batches x 45, 2-10 categories), 10 palettes "
               "and 3,822 per-trial responses of 91 participants"),
        citation=("C. Tseng, G. J. Quadri, Z. Wang, D. A. Szafir. Measuring categorical perception in "
                  "color-coded scatterplots. CHI 2023. doi:10.1145/3544548.3581416. "
                  "chintseng/Categorical-Perception-In-Scatterplots@c0d6818"),
        license="no license file in the repository (license unstated)",
        homepage="https://github.com/chintseng/Categorical-Perception-In-Scatterplots",
    ),
    "things-concepts": dict(
        folder="things",
        prefixes=("things/data/files/item_names.tsv", "things/MRI/data/Categories_final_20200131.tsv",
                  "things/THINGS-data_LICENSE_CC0.txt"),
        title=("THINGS concept metadata: 1,854 concept names in index order and their category labels "
               "(the odd-one-out triplets and images are not mirrored: see sources.things_release)"),
        citation=("M. N. Hebart et al. THINGS: A database of 1,854 object concepts and more than 26,000 "
                  "naturalistic object images. PLoS ONE 14(10):e0223792, 2019; names via LukasMut/VICE@5f80103, "
                  "categories via ViCCo-Group/THINGS-data@5e0ecca"),
        license="item_names.tsv from a GPL-3.0 repository (metadata from the THINGS database); categories CC0-1.0",
        homepage="https://osf.io/jum2f/",
    ),
    "li2023-pope": dict(
        folder="pope",
        prefixes=("pope/output/", "pope/POPE_LICENSE_MIT.txt", "pope/POPEv2/"),
        title="POPE object-probing yes/no questions (COCO random/popular/adversarial, A-OKVQA and GQA "
              "SEEM splits); images are COCO val2014 / GQA, not included",
        citation=("Y. Li, Y. Du, K. Zhou, J. Wang, W. X. Zhao, J.-R. Wen. Evaluating object "
                  "hallucination in large vision-language models. EMNLP 2023. "
                  "AoiDragon/POPE@08d957b"),
        license="MIT (question files); COCO images under the COCO terms of use",
        homepage="https://github.com/AoiDragon/POPE",
    ),
    "guan2024-hallusionbench": dict(
        folder="hallusionbench",
        prefixes=("hallusionbench/",),
        title="HallusionBench yes/no questions (visual dependent / supplement); images distributed "
              "separately as hallusion_bench.zip, not included",
        citation=("T. Guan, F. Liu, X. Wu, R. Xian, Z. Li, X. Liu, X. Wang, L. Chen, F. Huang, "
                  "Y. Yacoob, D. Manocha, T. Zhou. HallusionBench: an advanced diagnostic suite for "
                  "entangled language hallucination and visual illusion in large vision-language "
                  "models. CVPR 2024. tianyi-lab/HallusionBench@744007c"),
        license="BSD-3-Clause",
        homepage="https://github.com/tianyi-lab/HallusionBench",
    ),
    "tong2024-mmvp": dict(
        folder="mmvp",
        prefixes=(),
        title="MMVP: 300 images in 150 CLIP-blind pairs, two-option questions (hub dataset lmms-lab-eval/MMVP)",
        citation=("S. Tong, Z. Liu, Y. Zhai, Y. Ma, Y. LeCun, S. Xie. Eyes wide shut? Exploring the "
                  "visual shortcomings of multimodal LLMs. CVPR 2024. tsb0601/MMVP"),
        license="see the lmms-lab-eval/MMVP dataset card and tsb0601/MMVP (not verified offline)",
        homepage="https://github.com/tsb0601/MMVP",
        hub_dataset="lmms-lab-eval/MMVP",
        hub_revision=None,
    ),
    "chen2024-mmstar": dict(
        folder="mmstar",
        prefixes=(),
        title="MMStar: 1,500 vision-indispensable multiple-choice questions, 6 capabilities x 3 axes "
              "(hub dataset Lin-Chen/MMStar, split val)",
        citation=("L. Chen, J. Li, X. Dong, P. Zhang, Y. Zang, Z. Chen, H. Duan, J. Wang, Y. Qiao, "
                  "D. Lin, F. Zhao. Are we on the right way for evaluating large vision-language "
                  "models? NeurIPS 2024. arXiv:2403.20330"),
        license="see the Lin-Chen/MMStar dataset card (not verified offline)",
        homepage="https://github.com/MMStar-Benchmark/MMStar",
        hub_dataset="Lin-Chen/MMStar",
        hub_revision="bc98d668301da7b14f648724866e57302778ab27",
    ),
}


@lru_cache(maxsize=1)
def _manifest() -> tuple[SourceFile, ...]:
    text = resources.files("perceptbench.sources").joinpath("manifest.tsv").read_text("utf-8")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    rows = csv.DictReader(lines, delimiter="\t")
    return tuple(SourceFile(r["path"], r["sha256"], int(r["bytes"]), r["license"], r["url"]) for r in rows)


def _build() -> dict[str, Source]:
    out = {}
    for sid, meta in _META.items():
        files = tuple(f for f in _manifest() if meta["prefixes"] and f.path.startswith(meta["prefixes"]))
        out[sid] = Source(sid, meta["folder"], meta["title"], meta["citation"], meta["license"],
                          meta["homepage"], files, meta.get("hub_dataset"), meta.get("hub_revision"))
    return out


SOURCES: dict[str, Source] = _build()


def get_source(source_id: str) -> Source:
    """The registered source; raises KeyError listing the known ids."""
    try:
        return SOURCES[source_id]
    except KeyError:
        raise KeyError(f"unknown source {source_id!r}; known: {sorted(SOURCES)}") from None


def source_file(path: str) -> SourceFile:
    """The pinned file with this mirror-relative path; raises KeyError if not registered."""
    for f in _manifest():
        if f.path == path:
            return f
    raise KeyError(f"{path!r} is not a registered source file")
