"""stimuli/kernel_triplets.py: the kernel study's raw triplet-discrimination file read as the release's
experiment page wrote it (training triplets first, comb order, [x, y, odd], indices offset)."""

import itertools

import pytest

from perceptbench.stimuli import kernel_triplets
from perceptbench.stimuli.kernel_triplets import read_td_judgments


def test_first_subjects_answers_read_by_hand(mirror):
    line = (mirror / "perceptual-kernels/data/raw/shape-td.txt").read_text().splitlines()[0]
    v = [int(x) for x in line.split(",")]
    assert len(v) == 3 * (8 + 120 + 10)
    got = read_td_judgments("shape", 10)
    assert len(got) == 20 * 120 and {j.subject for j in got} == set(range(1, 21))
    first = [j for j in got if j.subject == 1]
    for t, trip in enumerate(itertools.combinations(range(10), 3)):
        g = [x - 4 for x in v[24 + 3 * t:24 + 3 * t + 3]]  # after 8 training triplets; offset 4 training marks
        assert first[t].triplet == trip == tuple(sorted(g)) and first[t].odd == g[2] and first[t].trial == t
    assert first[0].odd == 0  # "6,5,4": circle chosen against plus and cross


def test_bivariate_file_has_24_training_triplets_and_offset_6(mirror):
    got = read_td_judgments("shapesize", 16)
    assert len(got) == 20 * 560
    lines = (mirror / "perceptual-kernels/data/raw/shapesize-td.txt").read_text().splitlines()
    v = [int(x) for x in lines[19].split(",")]
    last = [j for j in got if j.subject == 20][-1]
    g = [x - 6 for x in v[3 * (24 + 559):3 * (24 + 559) + 3]]
    assert last.triplet == (13, 14, 15) == tuple(sorted(g)) and last.odd == g[2]


def _fake(tmp_path, monkeypatch, text):
    p = tmp_path / "shape-td.txt"
    p.write_text(text)
    monkeypatch.setattr(kernel_triplets, "resolve", lambda sf: p)
    return p


def test_a_short_line_is_refused_naming_file_and_line(tmp_path, monkeypatch, mirror):
    lines = (mirror / "perceptual-kernels/data/raw/shape-td.txt").read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 3)[0]
    p = _fake(tmp_path, monkeypatch, "\n".join(lines))
    with pytest.raises(ValueError, match=rf"{p}: line 4: expected 414 integers"):
        read_td_judgments("shape", 10)


def test_a_group_that_is_not_the_expected_triplet_is_refused(tmp_path, monkeypatch, mirror):
    lines = (mirror / "perceptual-kernels/data/raw/shape-td.txt").read_text().splitlines()
    v = lines[0].split(",")
    v[24], v[27] = v[27], v[24]  # swap marks between test triplets 0 and 1
    lines[0] = ",".join(v)
    _fake(tmp_path, monkeypatch, "\n".join(lines))
    with pytest.raises(ValueError, match="line 1, test triplet 0"):
        read_td_judgments("shape", 10)
    _fake(tmp_path, monkeypatch, "\n".join(lines[:5]))
    with pytest.raises(ValueError, match="expected 20 subject lines, got 5"):
        read_td_judgments("shape", 10)
    with pytest.raises(ValueError, match="10 or 16"):
        read_td_judgments("shape", 12)


def test_catch_triplets_read_by_hand(mirror):
    from perceptbench.stimuli.kernel_triplets import CATCH_TRIPLETS, read_catch_judgments

    line = (mirror / "perceptual-kernels/data/raw/shape-td.txt").read_text().splitlines()[8]  # subject 9
    v = [int(x) - 4 for x in line.split(",")]
    groups = [v[3 * (8 + 120 + k):3 * (8 + 120 + k) + 3] for k in range(10)]
    by_hand = sum(g[2] == other for g, (_, other) in zip(groups, CATCH_TRIPLETS))
    got = [j for j in read_catch_judgments("shape", 10) if j.subject == 9]
    assert [j.chosen for j in got] == [g[2] for g in groups] and sum(j.correct for j in got) == by_hand == 3
    size = read_catch_judgments("size", 10)
    assert len(size) == 200 and sum(j.correct for j in size if j.subject == 5) == 1
    assert len(read_catch_judgments("shapecolor", 16)) == 200


def test_a_catch_group_that_is_not_the_pages_triplet_is_named(tmp_path, monkeypatch, mirror):
    lines = (mirror / "perceptual-kernels/data/raw/shape-td.txt").read_text().splitlines()
    v = lines[2].split(",")
    at = 3 * (8 + 120 + 4)  # catch triplet 4: mark 4 twice and mark 1 (offset 4 in the file)
    v[at:at + 3] = ["5", "6", "7"]
    lines[2] = ",".join(v)
    _fake(tmp_path, monkeypatch, "\n".join(lines))
    with pytest.raises(ValueError, match=r"line 3, catch triplet 4: got marks \[1, 2, 3\], expected 4 twice and 1"):
        kernel_triplets.read_catch_judgments("shape", 10)
