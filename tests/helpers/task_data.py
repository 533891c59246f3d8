"""Stand-ins for the external data some tasks need, written by code at test time (nothing
binary committed): the THINGS images of the fixture's concepts."""

from pathlib import Path

from PIL import Image

from helpers.paths import FIXTURES

THINGS_TRIPLETS = FIXTURES / "things" / "triplet_dataset"
"""The THINGS odd-one-out fixture in the release's own format (testset2{,_repeat}.txt)."""


def write_things_images(root: Path) -> Path:
    """One flat-colour image per fixture concept that the triplets use (``<uid>_01b.jpg``, the
    one the image rule picks, two of them nearly the same red) and a black ``_02s.jpg`` beside
    it that the rule must not pick; concept 3 has none.  Returns ``root``."""
    from perceptbench.sources.things_release import concepts

    cons = concepts()
    colors = {0: (200, 30, 30), 1: (210, 40, 35), 2: (30, 30, 200), 4: (30, 200, 30)}
    for c, rgb in colors.items():
        d = Path(root) / cons[c].unique_id
        d.mkdir(parents=True)
        Image.new("RGB", (300, 240), rgb).save(d / f"{cons[c].unique_id}_01b.jpg")
        Image.new("RGB", (300, 240), (0, 0, 0)).save(d / f"{cons[c].unique_id}_02s.jpg")
    return Path(root)


def write_pope_images(folder: Path, questions: Path) -> Path:
    """A random 64 x 48 JPEG per image that the POPE question file ``questions`` (JSON lines) names."""
    import json

    import numpy as np

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name in sorted({json.loads(line)["image"] for line in Path(questions).read_text().splitlines() if line.strip()}):
        Image.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(folder / name, "JPEG")
    return folder


def write_hallusionbench_images(root: Path, questions: Path) -> Path:
    """A flat red 64 x 48 PNG at each ``filename`` of the HallusionBench question file ``questions``
    (the questions asked without an image have none)."""
    import json

    root = Path(root)
    for r in json.loads(Path(questions).read_text()):
        if r["filename"]:
            p = root / r["filename"].removeprefix("./")
            p.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (64, 48), (200, 30, 30)).save(p)
    return root
