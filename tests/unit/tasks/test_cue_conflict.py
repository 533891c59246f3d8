"""The cue-conflict task (issue 23 item 3): images from a user-given directory in the release's
layout, a one-line refusal naming what to download without them, the same-class images left out,
opt-in, listed."""

import sys
from pathlib import Path

import pytest

from helpers.cli import cli
from perceptbench.sources.downloads import read_manifest
from perceptbench.sources.fetch import ChecksumError, MissingSourceError
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
def test_without_the_images_the_task_refuses_in_one_line_naming_what_to_download(setting, tmp_path, monkeypatch):
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path))  # nothing fetched there
    t = get_task(f"{TASK}@images={setting}" if setting else TASK)
    with pytest.raises(MissingSourceError) as e:
        t.stimuli(0)
    msg = str(e.value)
    assert "\n" not in msg
    assert cue_conflict.STIMULI_FOLDER in msg and cue_conflict.RELEASE_COMMIT in msg and "images=DIR" in msg
    assert "`perceptbench sources fetch geirhos2019-cue-conflict`" in msg


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
    assert "battery: full" in block


# --------------------------------------------------------------------------- the download (sources fetch)

@pytest.fixture
def release(tmp_path, images, monkeypatch):
    """A copy of the release served over HTTP (its images folder holding the fixture images in the
    release's naming), the base URL pointed at it, and an empty cache."""
    from helpers.servers import FileServer

    (tmp_path / "release" / "stimuli").mkdir(parents=True)
    (tmp_path / "release" / cue_conflict.STIMULI_FOLDER).symlink_to(images)
    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path / "cache"))
    with FileServer(tmp_path / "release") as srv:
        monkeypatch.setenv(cue_conflict.BASE_URL_ENV, srv.url)
        yield srv


def test_sources_fetch_downloads_the_1280_images_and_the_task_reads_them_by_default(release, tmp_path):
    p = cli("sources", "fetch", "geirhos2019-cue-conflict", in_process=True)
    assert p.returncode == 0, p.stdout
    root = tmp_path / "cache" / "texture-vs-shape" / cue_conflict.STIMULI_FOLDER
    assert "1280 of 1280 images present" in _flat(p) and "1280 downloaded now" in _flat(p)
    assert len(release.requests) == 1280 and all(r.startswith(cue_conflict.STIMULI_FOLDER + "/") for r in release.requests)
    assert len(read_manifest(root)) == 1280
    st = get_task(TASK).stimuli(0)  # no images=DIR: the fetched folder
    assert len(st) == 1200 and st[0].render().size == (8, 8)
    release.requests.clear()
    p = cli("sources", "fetch", "geirhos2019-cue-conflict", in_process=True)
    assert p.returncode == 0 and release.requests == [] and "1280 already there and verified" in _flat(p)
    p = cli("sources", "verify", "geirhos2019-cue-conflict", in_process=True)
    assert p.returncode == 0 and "1280/1280 images verified" in _flat(p)


def _flat(p, stream: str = "stdout") -> str:
    """The command's output (``stream``: its standard output, or ``"stderr"``) with rich's line
    wrapping undone."""
    return " ".join(getattr(p, stream).split())


def test_an_image_changed_after_download_is_caught_by_the_task_and_by_verify(release, tmp_path):
    assert cli("sources", "fetch", "geirhos2019-cue-conflict", in_process=True).returncode == 0
    root = tmp_path / "cache" / "texture-vs-shape" / cue_conflict.STIMULI_FOLDER
    victim = root / "airplane" / "airplane1-bicycle2.png"
    victim.write_bytes(victim.read_bytes()[:-1] + b"x")
    with pytest.raises(ChecksumError, match="airplane1-bicycle2.png.*changed after download"):
        get_task(TASK).check_images(0)
    p = cli("sources", "verify", "geirhos2019-cue-conflict", in_process=True)
    assert p.returncode == 1 and "airplane1-bicycle2.png" in _flat(p) and "changed after download" in _flat(p)


def test_an_interrupted_fetch_is_refused_by_the_task_and_resumed_by_a_rerun(release, tmp_path):
    bad = f"{cue_conflict.STIMULI_FOLDER}/bear/bear1-airplane3.png"
    release.faults[bad] = 404
    p = cli("sources", "fetch", "geirhos2019-cue-conflict", in_process=True)
    line = _flat(p, "stderr")[_flat(p, "stderr").index("error:"):]
    assert p.returncode == 2 and "HTTP 404" in line and "bear1-airplane3.png" in line and "rerun to resume" in line
    with pytest.raises(MissingSourceError, match="not in its download manifest|images missing"):
        get_task(TASK).check_images(0)
    release.faults.clear()
    n_before = len(release.requests)
    p = cli("sources", "fetch", "geirhos2019-cue-conflict", in_process=True)
    assert p.returncode == 0, p.stdout
    assert len(release.requests) - n_before == 1280 - (n_before - 1)  # only what was not downloaded yet
    assert len(get_task(TASK).stimuli(0)) == 1200


def test_offline_the_fetch_fails_in_one_line_naming_what_to_download(tmp_path, monkeypatch):
    from helpers.servers import free_port

    monkeypatch.setenv("PERCEPTBENCH_CACHE", str(tmp_path))
    monkeypatch.setenv(cue_conflict.BASE_URL_ENV, f"http://127.0.0.1:{free_port()}")  # nothing listens
    with pytest.raises(MissingSourceError) as e:
        cue_conflict.EXPERIMENT.fetch_images(attempts=1, timeout=2)
    msg = str(e.value)
    assert "\n" not in msg and "could not download" in msg and cue_conflict.STIMULI_FOLDER in msg
    assert "images=DIR" in msg


def test_the_fetch_never_writes_into_the_data_mirror(mirror):
    with pytest.raises(MissingSourceError, match="never writes"):
        cue_conflict.EXPERIMENT.fetch_images(mirror / "texture-vs-shape" / cue_conflict.STIMULI_FOLDER)
