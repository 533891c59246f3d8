"""Known answers of the cue-conflict task (Geirhos et al. 2019 style-transfer experiment, issue 23
item 3): every observer's shape bias, the human mean and range and the per-category human shape
bias recomputed by plain loops from the release's raw CSVs (read here with the csv module, not the
package's loader), the full-data values pinned, and the paper's CNNs' shape bias counted from their
trial files.  The images are stand-ins written by code (tests/fixtures/make_cue_conflict_fixture.py):
no score depends on their pixels."""

import csv
import sys
from pathlib import Path

import pytest

from perceptbench.tasks import get_task

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
from make_cue_conflict_fixture import release_names, write_cue_conflict_images  # noqa: E402

RAW = "texture-vs-shape/raw-data/style-transfer-512-nomask-experiment"
EXP = "style-transfer-512-nomask-experiment"


def cues(imagename):
    """(shape class, texture class) from the raw ``imagename`` (its last ``_`` field, e.g. bird3-bird2.png)."""
    shape, texture = imagename.rsplit("_", 1)[-1][:-4].split("-")
    return shape.rstrip("0123456789"), texture.rstrip("0123456789")


def by_hand(path, keep=None):
    """(shape bias, neither share, {shape class: shape bias}) of one trial file, cue-conflict trials only."""
    n_shape = n_texture = n = 0
    per = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            shape, texture = cues(row["imagename"])
            assert shape == row["category"]
            if shape == texture or (keep is not None and row["imagename"].rsplit("_", 1)[-1] not in keep):
                continue
            n += 1
            s, t = row["object_response"] == shape, row["object_response"] == texture
            n_shape += s
            n_texture += t
            c = per.setdefault(shape, [0, 0])
            c[0] += s
            c[1] += t
    return n_shape / (n_shape + n_texture), (n - n_shape - n_texture) / n, {k: a / (a + b) for k, (a, b) in per.items()}


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    images = write_cue_conflict_images(tmp_path_factory.mktemp("cue"), release_names())
    t = get_task(f"shape_bias.nat.cue_conflict@images={images}")
    st = t.stimuli(0)
    rows = t.score(t.human_records(0, "r", st) + t.published_records(0, "r", st), 0)
    test_files = {s.stimulus_id[len("cue_"):] + ".png" for s in st if s.split == "test"}
    return {(r.model, r.metric): r for r in rows}, test_files


@pytest.fixture(scope="module")
def observers(mirror):
    return {f"human:subject-{i:02d}": by_hand(mirror / RAW / f"{EXP}_subject-{i:02d}_session_1.csv")
            for i in range(1, 11)}


def test_every_observers_shape_bias_equals_the_count_from_the_raw_csv(scored, observers):
    rows, _ = scored
    for subj, (sb, neither, per) in observers.items():
        assert rows[subj, "shape_bias@all"].value == pytest.approx(sb, abs=1e-12), subj
        assert rows[subj, "neither_share@all"].value == pytest.approx(neither, abs=1e-12), subj
        for k, v in per.items():
            assert rows[subj, f"shape_bias.{k}@all"].value == pytest.approx(v, abs=1e-12), (subj, k)


def test_human_shape_bias_mean_and_range(scored, observers):
    rows, _ = scored
    sbs = [v[0] for v in observers.values()]
    assert rows["human:panel", "shape_bias_mean@all"].value == pytest.approx(sum(sbs) / 10, abs=1e-12)
    assert rows["human:panel", "shape_bias_min@all"].value == pytest.approx(min(sbs), abs=1e-12)
    assert rows["human:panel", "shape_bias_max@all"].value == pytest.approx(max(sbs), abs=1e-12)
    # pinned from the full data (10 observers x 1,200 cue-conflict trials)
    assert round(rows["human:panel", "shape_bias_mean@all"].value, 4) == 0.9576
    assert round(rows["human:panel", "shape_bias_min@all"].value, 4) == 0.9191
    assert round(rows["human:panel", "shape_bias_max@all"].value, 4) == 0.9866


def test_per_category_human_shape_bias_is_the_mean_over_observers(scored, observers):
    rows, _ = scored
    for k in ("airplane", "knife", "truck"):
        assert rows["human:panel", f"shape_bias_mean.{k}@all"].value == pytest.approx(
            sum(v[2][k] for v in observers.values()) / 10, abs=1e-12)


@pytest.mark.parametrize("model, file", [("published:alexnet", "alexnet"), ("published:googlenet", "googlenet"),
                                         ("published:vgg16", "vgg")])
def test_published_cnn_shape_bias_equals_the_count_from_its_trial_file(scored, mirror, model, file):
    rows, test_files = scored
    sb, neither, _ = by_hand(mirror / RAW / f"{EXP}_{file}_session_1.csv", keep=test_files)
    assert rows[model, "shape_bias"].value == pytest.approx(sb, abs=1e-12)
    assert rows[model, "neither_share"].value == pytest.approx(neither, abs=1e-12)
    assert rows[model, "shape_bias"].value < rows["human:panel", "shape_bias_min@test"].value  # the paper's texture bias


def test_pooled_human_shape_bias_is_the_papers_959_percent(scored, observers):
    rows, _ = scored
    r = rows["human:panel", "shape_bias_pooled@all"]
    assert r.n == 9236 + 398  # shape + texture decisions of the 10 observers, counted from the CSVs
    assert r.value == pytest.approx(9236 / 9634, abs=1e-12)
    assert round(100 * r.value, 1) == 95.9  # Geirhos et al. 2019, Fig. 4: humans 95.9% shape
    assert r.ci_low < r.value < r.ci_high


def test_published_cnns_on_every_image_give_the_papers_shape_bias(mirror):
    """Geirhos et al. 2019, Fig. 4 (fraction of shape decisions): AlexNet 42.9%, GoogLeNet 31.2%,
    VGG-16 17.2%, each CNN's release trials on all 1,200 cue-conflict images scored by the scorer."""
    from perceptbench.record_table import TaskColumns

    t = get_task("shape_bias.nat.cue_conflict")
    recs = [t._trial_record(tr, "test", 0, "r", model=f"published:{name}", family="published",
                            readout="published_trial", human_ref_id=t.human_ref_id)
            for name, trials in t.experiment.published_trials().items() for tr in trials]
    rows = {(r.model, r.metric): r for r in t.shape_scorer.score(TaskColumns.from_records(t.task_id, recs), 0)}
    got = {m: round(100 * rows[f"published:{m}", "shape_bias"].value, 1) for m in ("alexnet", "googlenet", "vgg16")}
    assert got == {"alexnet": 42.9, "googlenet": 31.2, "vgg16": 17.2}
    assert rows["published:alexnet", "shape_bias"].n == 283 + 376  # counted from the CSV by hand
