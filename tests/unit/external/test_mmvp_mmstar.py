"""MMVP and MMStar through the `datasets` library, on fixtures in each release's own format
(tests/fixtures/make_external_fixtures.py wrote them: tiny synthetic images)."""

from __future__ import annotations


import numpy as np
import pytest

from perceptbench.external import mmstar, mmvp
from perceptbench.external._common import MissingExternalDataError
from helpers.paths import FIXTURES

FIX = FIXTURES


def _check_mmvp(stim):
    assert [s.stimulus_id for s in stim] == ["mmvp-001", "mmvp-002", "mmvp-003", "mmvp-004"]
    s = stim[0]
    assert s.options == ("Left", "Right") and s.answer == "A" and s.answer_type == "letter"
    assert [x.answer for x in stim] == ["A", "B", "B", "A"]
    assert s.question == "Is the red square on the left or the right of the picture?"
    assert s.object_phrase == "red square" and s.region is None
    assert [x.meta["pair"] for x in stim] == [1, 1, 2, 2]
    img = np.asarray(s.load()).astype(int)
    assert img.shape == (24, 24, 3)
    assert img[12, 5, 0] > 200 and img[12, 5, 1] < 60  # red square on the left
    assert img[12, 18].min() > 200  # white on the right


def test_mmvp_release_folder(tmp_path):
    _check_mmvp(mmvp.load_mmvp(FIX / "mmvp" / "release", cache_dir=tmp_path))


def test_mmvp_hub_parquet_format(tmp_path):
    stim = mmvp.load_mmvp(FIX / "mmvp" / "hub", cache_dir=tmp_path)
    _check_mmvp(stim)
    assert stim[0].meta["origin"].startswith("file:")


def test_mmvp_parsers():
    assert mmvp.parse_options("(a) Open (b) Closed") == ("Open", "Closed")
    assert mmvp.parse_answer("(b)", 2) == "B" and mmvp.parse_answer("a", 2) == "A"
    with pytest.raises(ValueError, match="options must read"):
        mmvp.parse_options("Open or Closed")
    with pytest.raises(ValueError, match="correct answer"):
        mmvp.parse_answer("(c)", 2)


def test_mmvp_missing_images_and_data_are_one_line_errors(tmp_path):
    import shutil

    rel = tmp_path / "rel"
    shutil.copytree(FIX / "mmvp" / "release", rel)
    (rel / "MMVP Images" / "3.jpg").unlink()
    with pytest.raises(MissingExternalDataError, match=r"1 of 4 images missing .*3.jpg"):
        mmvp.load_mmvp(rel, cache_dir=tmp_path / "c")
    with pytest.raises(MissingExternalDataError) as e:
        mmvp.load_mmvp(tmp_path / "nowhere", cache_dir=tmp_path / "c")
    assert "tsb0601/MMVP" in str(e.value) and "\n" not in str(e.value)


def test_hub_unreachable_is_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(MissingExternalDataError) as e:
        mmstar.load_mmstar(cache_dir=tmp_path)
    msg = str(e.value)
    assert "Lin-Chen/MMStar" in msg and "mmstar.parquet" in msg and "\n" not in msg


def test_mmstar_parquet(tmp_path):
    stim = mmstar.load_mmstar(FIX / "mmstar" / "mmstar.parquet", cache_dir=tmp_path)
    assert [s.stimulus_id for s in stim] == ["mmstar-0000", "mmstar-0001", "mmstar-0002"]
    s = stim[0]
    assert s.question == "Which side of the picture shows the square?"
    assert s.options == ("The left side", "The right side", "Both, left and right", "Neither")
    assert s.answer == "A" and s.answer_type == "letter"
    assert all(x.region is None and x.object_phrase is None and x.meta["whole_image_only"] for x in stim)
    assert s.meta["category"] == "coarse perception" and s.meta["meta_info"]["source"] == "fixture"
    img = np.asarray(s.load()).astype(int)
    assert img.shape == (24, 24, 3) and img[0, 0].min() == 255  # transparent PNG on white
    assert stim[2].options == ("0", "1", "2", "3")
    math = mmstar.load_mmstar(FIX / "mmstar" / "mmstar.parquet", cache_dir=tmp_path, categories=("math",))
    assert [x.stimulus_id for x in math] == ["mmstar-0002"]


def test_mmstar_split_question():
    stem, opts = mmstar.split_question("Q?\nOptions: A: a cat, sitting, B: two dogs, C: 3, 4, and 5, D: none")
    assert stem == "Q?" and opts == ("a cat, sitting", "two dogs", "3, 4, and 5", "none")
    with pytest.raises(ValueError, match="no 'Options:'"):
        mmstar.split_question("Q? A: x, B: y")


def test_without_datasets_the_error_says_what_to_install(monkeypatch, tmp_path):
    import sys

    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ImportError, match=r"perceptbench\[external\]"):
        mmstar.load_mmstar(FIX / "mmstar" / "mmstar.parquet", cache_dir=tmp_path)


def _duplicate_first_row(src, dst, column):
    import pyarrow.parquet as pq
    import pyarrow as pa

    t = pq.read_table(src)
    pq.write_table(pa.concat_tables([t, t.slice(0, 1)]), dst)
    return t.column(column)[0].as_py()


def test_mmstar_two_stimuli_under_one_index_are_refused_naming_it(tmp_path):
    """Issue 20 item 3: MMStar loaded two stimuli under one id."""
    idx = _duplicate_first_row(FIX / "mmstar" / "mmstar.parquet", tmp_path / "mmstar.parquet", "index")
    with pytest.raises(ValueError) as e:
        mmstar.load_mmstar(tmp_path / "mmstar.parquet", cache_dir=tmp_path / "c", limit=1)
    msg = str(e.value)
    assert f"duplicate index {str(idx)!r}" in msg and "mmstar.parquet" in msg and "\n" not in msg


def test_mmvp_repeated_index_is_refused_naming_it(tmp_path):
    import shutil

    rel = tmp_path / "release"
    shutil.copytree(FIX / "mmvp" / "release", rel)
    lines = (rel / "Questions.csv").read_text().splitlines(keepends=True)
    (rel / "Questions.csv").write_text("".join(lines + [lines[1]]))
    with pytest.raises(ValueError) as e:
        mmvp.load_mmvp(rel, cache_dir=tmp_path / "c")
    assert "duplicate Index '1'" in str(e.value) and "\n" not in str(e.value)


def _pattern_map(tmp_path, rows, header="Index,Type"):
    p = tmp_path / "patterns.csv"
    p.write_text(header + "\n" + "\n".join(rows) + "\n")
    return p


def test_mmvp_pattern_map_file_labels_the_questions(tmp_path):
    """``patterns=FILE``: a user's Index -> pattern map (no public one exists; a made-up test map here)."""
    pytest.importorskip("datasets")
    m = _pattern_map(tmp_path, ["1,Orientation and Direction", "2,Orientation and Direction", "3,Color and Appearance",
                                "4,Color and Appearance"])
    stim = mmvp.load_mmvp(FIX / "mmvp" / "release", cache_dir=tmp_path, patterns=m)
    assert [s.meta["pattern"] for s in stim] == ["Orientation and Direction"] * 2 + ["Color and Appearance"] * 2
    assert stim[0].meta["pattern_map"] == str(m)
    # a map that leaves a pair out: those questions have no pattern
    stim = mmvp.load_mmvp(FIX / "mmvp" / "release", cache_dir=tmp_path, patterns=_pattern_map(tmp_path, ["1,Texts"]))
    assert [s.meta.get("pattern") for s in stim] == ["Texts", None, None, None]
    assert "pattern" not in mmvp.load_mmvp(FIX / "mmvp" / "release", cache_dir=tmp_path)[0].meta


@pytest.mark.parametrize("rows, header, match", [
    (["1,Texts"], "Index,Category", r"needs an Index column and a Type \(or pattern\) column"),
    (["301,Texts"], "Index,Type", r"patterns.csv:2: Index must be an MMVP Index 1..300, got '301'"),
    (["x,Texts"], "Index,Type", r"patterns.csv:2: Index must be an MMVP Index 1..300, got 'x'"),
    (["1,Texts", "1,Texts"], "Index,Type", r"patterns.csv:3: Index 1 appears twice"),
    (["1,Colour"], "Index,Type", r"patterns.csv:2: Type must be one of MMVP's nine patterns .*, got 'Colour'"),
    (["3,Texts", "4,Quantity and Count"], "Index,Type", r"pair 2 \(Index 3, 4\) is mapped to two patterns"),
])
def test_a_bad_pattern_map_is_a_one_line_error_naming_file_line_and_value(tmp_path, rows, header, match):
    with pytest.raises(ValueError, match=match):
        mmvp.read_pattern_map(_pattern_map(tmp_path, rows, header))
