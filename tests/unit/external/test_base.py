"""Region and VQAStimulus: the records external loaders return (VSI_INTERFACES.md §1)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from perceptbench.external.base import Region, VQAStimulus


def test_region_box_to_mask_exclusive_ends_and_clipping():
    m = Region(box=(2, 1, 5, 3), source="annotation").to_mask((6, 4))
    assert m.shape == (4, 6) and m.dtype == bool and m.sum() == 3 * 2
    assert m[1, 2] and m[2, 4] and not m[3, 4] and not m[1, 5]
    assert Region(box=(4, 2, 10, 10), source="grounding").to_mask((6, 4)).sum() == 2 * 2
    with pytest.raises(ValueError, match="outside"):
        Region(box=(7, 0, 9, 2), source="grounding").to_mask((6, 4))


def test_region_mask_whole_and_validation():
    mask = np.zeros((4, 6), bool)
    mask[0, 0] = True
    r = Region(mask=mask, box=(0, 0, 1, 1), source="grounding")
    assert r.to_mask((6, 4)).sum() == 1
    with pytest.raises(ValueError, match="shape"):
        r.to_mask((5, 4))
    w = Region(source="fallback_whole")
    assert w.is_whole and w.to_mask((6, 4)).all()
    assert Region.from_inclusive_box((2, 1, 4, 2), source="exact").box == (2, 1, 5, 3)
    with pytest.raises(ValueError, match="source"):
        Region(box=(0, 0, 1, 1), source="guess")
    with pytest.raises(ValueError, match="needs a box or a mask"):
        Region(source="annotation")
    with pytest.raises(ValueError, match="x0 < x1"):
        Region(box=(3, 0, 3, 2), source="exact")
    assert Region(mask=mask, source="grounding").to_json()["mask_extent"] == [0, 0, 1, 1]


def test_vqa_stimulus_validates_answers():
    load = lambda: Image.new("RGB", (4, 4))  # noqa: E731
    s = VQAStimulus("s1", "i1", load, "Is there a cat?", "yes", "yes_no")
    assert s.letters is None and s.region is None and s.meta == {}
    L = VQAStimulus("s2", "i1", load, "Which?", "B", "letter", options=["x", "y"])
    assert L.options == ("x", "y") and L.letters == ("A", "B")
    with pytest.raises(ValueError, match="'yes' or 'no'"):
        VQAStimulus("s3", "i1", load, "q", "Yes", "yes_no")
    with pytest.raises(ValueError, match="not one of the option letters"):
        VQAStimulus("s4", "i1", load, "q", "C", "letter", options=("x", "y"))
    with pytest.raises(ValueError, match="answer_type"):
        VQAStimulus("s5", "i1", load, "q", "yes", "free")


def test_loaders_import_neither_torch_nor_datasets():
    import subprocess
    import sys

    code = ("import sys\n"
            "import perceptbench.external as e\n"
            "from perceptbench.external import pope, hallusionbench, mmvp, mmstar, grounding, salbench_natural\n"
            "bad = [m for m in ('torch', 'transformers', 'datasets') if m in sys.modules]\n"
            "assert not bad, bad\nprint('LIGHT_OK')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LIGHT_OK" in out.stdout, out.stderr
