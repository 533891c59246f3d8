"""The cue-conflict task (issue 23 item 3): images from a user-given directory in the release's
layout, a one-line refusal naming what to download without them, the same-class images left out,
opt-in, listed."""

import sys
from pathlib import Path

import pytest

from helpers.cli import cli
from perceptbench.sources.fetch import MissingSourceError
from perceptbench.stimuli import cue_conflict
from perceptbench.tasks import get_task
from perceptbench.tasks.registry import DEFAULT_BATTERY

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures"))
from make_cue_conflict_fixture import release_names, write_cue_conflict_images  # noqa: E402

TASK = "shape_bias.nat.cue_conflict"


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    return write_cue_conflict_images(tmp_path_factory.mktemp("cue") / "style-transfer-preprocessed-512",
                                     release_names())


def test_file_names_parse_as_the_release_names_them():
    i = cue_conflict.parse_file_name("airplane10-bear3.png")
    assert (i.shape, i.shape_index, i.texture, i.texture_index) == ("airplane", 10, "bear", 3)
    assert i.stimulus_id == "cue_airplane10-bear3" and i.relpath == "airplane/airplane10-bear3.png"
    assert cue_conflict.parse_stimulus_id(i.stimulus_id) == i
    assert not cue_conflict.parse_file_name("bird3-bird2.png").conflict
    assert cue_conflict.parse_file_name("airplane1.png") is None


def test_the_release_has_1280_images_of_which_1200_are_cue_conflicts():
    imgs = cue_conflict.EXPERIMENT.release_images()
    assert len(imgs) == 1280 and sum(i.conflict for i in imgs) == 1200
    assert {i.shape for i in imgs} == set(get_task(TASK).options())


@pytest.mark.parametrize("setting", ["", "/nonexistent/cue-conflict"])
def test_without_the_images_the_task_refuses_in_one_line_naming_what_to_download(setting):
    t = get_task(f"{TASK}@images={setting}" if setting else TASK)
    with pytest.raises(MissingSourceError) as e:
        t.stimuli(0)
    msg = str(e.value)
    assert "\n" not in msg
    assert cue_conflict.STIMULI_FOLDER in msg and cue_conflict.RELEASE_COMMIT in msg and "images=DIR" in msg


def test_a_missing_image_is_named(tmp_path):
    names = release_names()
    write_cue_conflict_images(tmp_path, names[1:])
    with pytest.raises(MissingSourceError, match=f"1 of 1280 images missing .*{names[0]}"):
        get_task(f"{TASK}@images={tmp_path}").check_images(0)


def test_the_fixture_gives_1200_stimuli_with_shape_as_ground_truth(images):
    t = get_task(f"{TASK}@images={images}")
    st = t.stimuli(0)
    assert len(st) == 1200 and all(cue_conflict.parse_stimulus_id(s.stimulus_id).conflict for s in st)
    s = next(s for s in st if s.stimulus_id == "cue_airplane1-bicycle2")
    assert s.ground_truth == "airplane" and s.meta["texture"] == "bicycle"
    assert s.render().size == (8, 8)
    # the split halves each shape class; deterministic in the seed
    assert sum(x.split == "test" for x in st) == sum(len(v) - len(v) // 2 for v in _by_class(st).values())
    assert [x.split for x in t.stimuli(0)] == [x.split for x in st]


def _by_class(st):
    out = {}
    for s in st:
        out.setdefault(s.ground_truth, []).append(s)
    return out


def test_the_checkout_root_is_accepted_too(images):
    root = images.parent / "checkout"
    (root / "stimuli").mkdir(parents=True)
    (root / cue_conflict.STIMULI_FOLDER).symlink_to(images)
    assert len(get_task(f"{TASK}@images={root}").stimuli(0)) == 1200


def test_the_image_folder_is_a_location_not_part_of_the_task_id(images):
    t = get_task(f"{TASK}@images={images}")
    assert t.task_id == TASK and t.data_location == {"images": str(images)}


def test_human_records_leave_out_the_same_class_images(images):
    t = get_task(f"{TASK}@images={images}")
    st = t.stimuli(0)
    hr = t.human_records(0, "r", st)
    assert len(hr) == 12000 and len({r.model for r in hr}) == 10
    pr = t.published_records(0, "r", st)
    assert {r.model for r in pr} == {"published:alexnet", "published:googlenet", "published:vgg16"}
    assert all(r.run_meta.split == "test" for r in pr) and len(pr) == 3 * 608


def test_the_task_is_opt_in_and_listed():
    assert TASK not in DEFAULT_BATTERY
    p = cli("tasks", columns=100)
    assert p.returncode == 0, p.stderr
    block = p.stdout[p.stdout.index(TASK + "\n"):]
    block = block[:block.index("description:")]
    assert "human data: yes: each of 10 observers' answer to every cue-conflict image" in " ".join(block.split())
    assert "default run" not in block
