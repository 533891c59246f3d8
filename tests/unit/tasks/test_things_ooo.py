"""similarity.nat.things_ooo on a fixture written in the release's own format
(tests/fixtures/things/triplet_dataset/testset2{,_repeat}.txt), with the human reference
and ceiling computed by hand, and the one-line refusal without the release."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from perceptbench.sources import MissingSourceError
from perceptbench.sources.things_release import IMAGES_ENV, TRIPLETS_ENV, concepts
from perceptbench.stimuli.things_triplets import concept_image_path, read_triplet_file
from perceptbench.tasks import get_task
from helpers.paths import FIXTURES

FIXTURE = FIXTURES / "things" / "triplet_dataset"
TASK = "similarity.nat.things_ooo"

# The fixture, by hand (0-based concept indices, choice last; line i of both files = one pair):
#   line  testset2  repeat   type     aligned  agree
#   1     0 1 2     2 1 0    {0,1,2}  yes      no  (2 vs 0)
#   2     3 4 5     5 3 4    {3,4,5}  yes      no  (5 vs 4)
#   3     1 0 2     0 1 2    {0,1,2}  yes      yes (2)
#   4     0 3 5     3 5 0    {0,3,5}  yes      no  (5 vs 0)
#   5     2 4 1     4 2 1    {1,2,4}  yes      yes (1)
#   6     4 5 3     0 1 5    -        no (misaligned)
# test-retest ceiling = 2 agreeing / 5 aligned pairs = 0.4
# responses: {0,1,2}: 2,2,0,2 -> mode 2;  {1,2,4}: 1,1 -> mode 1;  {3,4,5}: 5,3,4 tied;
#            {0,3,5}: 5,0 tied  -> 2 sampleable types, 2 tied types excluded
# first lines: {0,1,2} line 1 (test 2, retest 0); {1,2,4} line 5 (test 1, retest 1)
# B(testset2) = 2/2 = 1.0, B(testset2_repeat) = 1/2 = 0.5, test-retest on the sample 1/2


@pytest.fixture
def things_env(tmp_path, monkeypatch):
    cons = concepts()
    root = tmp_path / "images"
    colors = {0: (200, 30, 30), 1: (210, 40, 35), 2: (30, 30, 200), 4: (30, 200, 30)}
    for c, rgb in colors.items():
        d = root / cons[c].unique_id
        d.mkdir(parents=True)
        Image.new("RGB", (300, 240), rgb).save(d / f"{cons[c].unique_id}_01b.jpg")
        Image.new("RGB", (300, 240), (0, 0, 0)).save(d / f"{cons[c].unique_id}_02s.jpg")
    monkeypatch.setenv(TRIPLETS_ENV, str(FIXTURE))
    monkeypatch.setenv(IMAGES_ENV, str(root))
    return root


def test_fixture_is_in_the_release_format():
    rows = read_triplet_file(FIXTURE / "testset2.txt")
    assert rows[0] == (0, 1, 2) and len(rows) == 6
    # the release's files load with numpy as public code reads them
    assert np.loadtxt(FIXTURE / "testset2_repeat.txt").astype(int).shape == (6, 3)


def test_bad_line_is_a_one_line_error(tmp_path):
    p = tmp_path / "testset2.txt"
    p.write_text("0 1 2\n0 1 1\n")
    with pytest.raises(ValueError, match=r"testset2.txt: line 2: expected three distinct"):
        read_triplet_file(p)


def test_image_rule_is_the_first_file(things_env):
    uid = concepts()[0].unique_id
    assert concept_image_path(things_env, uid).name == f"{uid}_01b.jpg"
    with pytest.raises(FileNotFoundError, match="no THINGS image for concept"):
        concept_image_path(things_env, concepts()[3].unique_id)


def test_reference_and_ceiling_by_hand(things_env):
    t = get_task(TASK + "@n=2")
    st = t.stimuli(0)
    assert sorted(s.stimulus_id for s in st) == ["things_0000-0001-0002", "things_0001-0002-0004"]
    for s in st:
        modal = 2 if s.stimulus_id == "things_0000-0001-0002" else 1
        assert s.meta["order"][s.ground_truth - 1] == modal
        assert s.render().size == (3 * 224, 224 + 64)
    with pytest.raises(ValueError, match="only 2 test triplets with a modal choice"):
        get_task(TASK + "@n=3").stimuli(0)
    hr = t.human_records(0, "r", st)
    assert len(hr) == 4
    rows = {(r.model, r.metric): r for r in t.score(hr, 0)}
    assert rows[("human:panel", "ceiling_test_retest")].value == pytest.approx(0.4)
    assert rows[("human:panel", "ceiling_test_retest")].n == 5
    assert rows[("human:panel", "n_tied_types_excluded")].value == 2
    assert rows[("human:panel", "test_retest_on_sample")].value == pytest.approx(0.5)
    assert rows[("human:testset2", "B")].value == pytest.approx(1.0)
    assert rows[("human:testset2_repeat", "B")].value == pytest.approx(0.5)
    assert rows[("human:testset2_repeat", "B_over_ceiling")].value == pytest.approx(0.5 / 0.4)
    pos = [s.ground_truth for s in st]
    assert rows[("human:panel", "position_floor")].value == pytest.approx(max(pos.count(k) for k in (1, 2, 3)) / 2)


def test_runs_on_the_fixture_with_a_tiny_encoder(things_env, tmp_path):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import score_file
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "tiny-clip")
    run(RunConfig(out=tmp_path / "run", tasks=(TASK + "@n=2",), models=(f"tiny=hf:{d}",)), progress=False)
    rows = {(r.model, r.metric): r for r in score_file(tmp_path / "run" / "records.jsonl")}
    assert rows[("tiny", "B")].n == 2 and ("tiny", "B_over_ceiling") in rows
    assert rows[("human:panel", "ceiling_test_retest")].value == pytest.approx(0.4)


def test_refuses_without_the_release_before_writing(tmp_path):
    env = {**os.environ, TRIPLETS_ENV: str(tmp_path / "none"), IMAGES_ENV: str(tmp_path / "none"),
           "COLUMNS": "400"}
    out = tmp_path / "r"
    p = subprocess.run([sys.executable, "-m", "perceptbench.cli", "run", "--out", str(out), "--task", TASK,
                        "--no-progress"], capture_output=True, text=True, env=env)
    assert p.returncode == 2
    msg = " ".join(p.stdout.split())  # the console may wrap the line
    assert "testset2.txt, testset2_repeat.txt" in msg and "osf.io/f5rn6" in msg and TRIPLETS_ENV in msg
    assert not out.exists()


def test_refusal_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(TRIPLETS_ENV, str(tmp_path / "none"))
    with pytest.raises(MissingSourceError) as e:
        get_task(TASK).stimuli(0)
    assert "\n" not in str(e.value)


def test_missing_images_refuse_too(monkeypatch, tmp_path):
    monkeypatch.setenv(TRIPLETS_ENV, str(FIXTURE))
    monkeypatch.setenv(IMAGES_ENV, str(tmp_path / "no-images"))
    with pytest.raises(MissingSourceError, match="osf.io/jum2f"):
        get_task(TASK + "@n=2").stimuli(0)
