"""Known answers of the edge task (Geirhos et al. 2019 line drawings, issue 23 item 2): the
human ceilings recomputed by plain loops from the release's raw CSVs (read here with the csv
module, not the package's loader) on a slice of the images, the full-data values pinned, and the
paper's own CNNs' accuracies counted from their trial files."""

import csv
import hashlib
import itertools
from collections import Counter

import numpy as np
import pytest

from helpers.by_hand import kappa_by_hand
from perceptbench.records import TrialRecord
from perceptbench.tasks import get_task

RAW = "texture-vs-shape/raw-data/edge-experiment"
PUBLISHED_FILES = {  # records' model -> the release's trial file
    "published:alexnet": f"{RAW}/edge-experiment_alexnet_session_1.csv",
    "published:googlenet": f"{RAW}/edge-experiment_googlenet_session_1.csv",
    "published:vgg16": f"{RAW}/edge-experiment_vgg_session_1.csv",
    "published:resnet50": f"{RAW}-trained-CNNs/edge-experiment_resnet50_session-1.csv",
    "published:resnet50-sin": f"{RAW}-trained-CNNs/edge-experiment_resnet50_train_60_epochs_session-1.csv",
}


def rows_by(rows, model):
    return {r.metric: r for r in rows if r.model == model}


def read_csv(path):
    """{image file name: (response, category)} of one raw trial file."""
    with open(path, newline="") as f:
        return {row["imagename"].rsplit("_", 1)[-1]: (row["object_response"], row["category"])
                for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def raw_observers(mirror):
    """{subject: {image: (response, category)}} read straight from the 10 observer files."""
    return {f"subject-{i:02d}": read_csv(mirror / RAW / f"edge-experiment_subject-{i:02d}_session_1.csv")
            for i in range(1, 11)}


@pytest.fixture(scope="module")
def edges():
    t = get_task("closure.nat.edges")
    st = t.stimuli(0)
    hr = t.human_records(0, "test-run", st)
    pr = t.published_records(0, "test-run", st)
    return t, st, hr, pr, t.score(hr + pr, 0)


def mode(answers):
    """The modal answer, ``na`` excluded; None when tied or none (seed 000 D.1)."""
    c = Counter(a for a in answers if a != "na").most_common()
    return None if not c or (len(c) > 1 and c[0][1] == c[1][1]) else c[0][0]


def by_hand_panel(raw, images):
    """Observer accuracy, pairwise and leave-one-out kappa ceilings and observer B (vs the others'
    mode) over ``images``, by plain loops."""
    subjects = sorted(raw)
    correct = {s: [float(raw[s][i][0] == raw[s][i][1]) for i in images] for s in subjects}
    pairs = [kappa_by_hand(correct[a], correct[b]) for a, b in itertools.combinations(subjects, 2)]
    pairs = [k for k in pairs if not np.isnan(k)]
    loo = {}
    b = {}
    for s in subjects:
        others = [o for o in subjects if o != s]
        mean_others = [sum(correct[o][k] for o in others) / len(others) for k in range(len(images))]
        loo[s] = kappa_by_hand(correct[s], mean_others)
        modes = [mode([raw[o][i][0] for o in others]) for i in images]
        hits = [raw[s][i][0] == m for i, m in zip(images, modes) if m is not None]
        b[s] = sum(hits) / len(hits)
    acc = {s: sum(correct[s]) / len(images) for s in subjects}
    return dict(acc=acc, pairs=pairs, loo=loo, b=b,
                tied=sum(mode([raw[s][i][0] for s in subjects]) is None for i in images))


def test_edge_human_records_are_the_ten_observers_raw_trials(edges, raw_observers):
    _, st, hr, _, _ = edges
    assert len(st) == 160 and len(hr) == 1600 and all(isinstance(r, TrialRecord) for r in hr)
    assert {r.model for r in hr} == {f"human:{s}" for s in raw_observers}
    assert {r.model_family for r in hr} == {"human"}
    for r in hr:
        response, category = raw_observers[r.model.split(":")[1]][r.stimulus_id[len("edge_"):] + ".png"]
        assert (r.response, r.ground_truth) == (response, category)
    assert sum(r.response == "na" for r in hr) == 34
    assert all(r.correct is False for r in hr if r.response == "na")


def test_edge_ceilings_on_a_slice_equal_plain_loops_over_the_raw_csvs(edges, raw_observers):
    t, st, hr, _, _ = edges
    images = sorted(f"{c}{n}.png" for c in ("airplane", "bear", "bicycle", "bird") for n in range(1, 11))
    ids = {"edge_" + i[:-4] for i in images}
    rows = t.score([r for r in hr if r.stimulus_id in ids], 0)
    p, want = rows_by(rows, "human:panel"), by_hand_panel(raw_observers, images)
    assert p["observer_accuracy_mean@all"].n == 40
    assert p["observer_accuracy_mean@all"].value == pytest.approx(np.mean(list(want["acc"].values())), abs=1e-12)
    assert p["observer_accuracy_min@all"].value == pytest.approx(min(want["acc"].values()), abs=1e-12)
    assert p["ceiling_kappa_pairwise_mean@all"].value == pytest.approx(np.mean(want["pairs"]), abs=1e-12)
    assert p["ceiling_kappa_pairwise_min@all"].value == pytest.approx(min(want["pairs"]), abs=1e-12)
    assert p["ceiling_kappa_pairwise_max@all"].value == pytest.approx(max(want["pairs"]), abs=1e-12)
    assert p["ceiling_kappa_loo_mean@all"].value == pytest.approx(np.mean(list(want["loo"].values())), abs=1e-12)
    assert p["ceiling_kappa_loo_max@all"].value == pytest.approx(max(want["loo"].values()), abs=1e-12)
    assert p["observer_B_mean@all"].value == pytest.approx(np.mean(list(want["b"].values())), abs=1e-12)
    assert p["n_tied_mode@all"].value == want["tied"]
    for s in ("subject-01", "subject-09"):  # per-observer rows, scored like models
        o = rows_by(rows, f"human:{s}")
        assert o["accuracy@all"].value == pytest.approx(want["acc"][s], abs=1e-12)
        assert o["kappa_loo@all"].value == pytest.approx(want["loo"][s], abs=1e-12)


def test_edge_ceilings_on_all_160_equal_plain_loops_and_pinned_values(edges, raw_observers):
    *_, rows = edges
    p = rows_by(rows, "human:panel")
    want = by_hand_panel(raw_observers, sorted(raw_observers["subject-01"]))
    assert p["ceiling_kappa_pairwise_mean@all"].value == pytest.approx(np.mean(want["pairs"]), abs=1e-12)
    assert p["ceiling_kappa_loo_mean@all"].value == pytest.approx(np.mean(list(want["loo"].values())), abs=1e-12)
    pinned = {"observer_accuracy_mean": 0.8713, "observer_accuracy_min": 0.6125, "observer_accuracy_max": 0.9563,
              "ceiling_kappa_pairwise_mean": 0.318, "ceiling_kappa_pairwise_min": 0.103,
              "ceiling_kappa_pairwise_max": 0.610, "ceiling_kappa_loo_mean": 0.296, "ceiling_kappa_loo_min": 0.187,
              "ceiling_kappa_loo_max": 0.382, "n_tied_mode": 6}
    assert {m: round(p[f"{m}@all"].value, 4 if m.startswith("observer") else 3) for m in pinned} == pinned
    c = p["ceiling_kappa_pairwise_mean@all"]
    assert c.ci_low < c.value < c.ci_high and c.n_draws == 2000
    assert p["ceiling_kappa_pairwise_mean@test"].n == p["ceiling_kappa_loo_mean@test"].n == 80


def test_published_cnn_accuracies_equal_their_trial_files(edges, mirror):
    """The paper's Fig. 2 "edges" bars are these files' proportions correct (data-analysis.R)."""
    t, st, _, pr, rows = edges
    loaded = t.experiment.published_trials()
    by_hand = {}
    for model, rel in PUBLISHED_FILES.items():
        raw = read_csv(mirror / rel)
        assert len(raw) == 160
        by_hand[model] = sum(resp == cat for resp, cat in raw.values()) / 160
        trials = loaded[model.split(":")[1]]
        assert sum(x.response == x.category for x in trials) / len(trials) == by_hand[model]
    assert by_hand == {"published:alexnet": 0.4, "published:googlenet": 0.28125, "published:vgg16": 0.24375,
                       "published:resnet50": 0.18125, "published:resnet50-sin": 0.4875}
    # scored as models on the test split, like every model of a run
    test = {s.stimulus_id[len("edge_"):] + ".png" for s in st if s.split == "test"}
    for model, rel in PUBLISHED_FILES.items():
        raw = read_csv(mirror / rel)
        acc = rows_by(rows, model)["accuracy"]
        assert acc.n == 80
        assert acc.value == pytest.approx(sum(raw[i][0] == raw[i][1] for i in test) / 80, abs=1e-12)
        assert {"B", "kappa_aggregate", "kappa_pairwise", "kappa_over_ceiling"} <= set(rows_by(rows, model))


def test_published_records_carry_family_and_provenance(edges, mirror):
    _, st, _, pr, _ = edges
    test = {s.stimulus_id for s in st if s.split == "test"}
    assert len(pr) == 5 * 80 and {r.stimulus_id for r in pr} == test
    assert {r.model for r in pr} == set(PUBLISHED_FILES)
    for r in pr:
        assert r.model_family == "published" and r.readout == "published_trial"
        rel = PUBLISHED_FILES[r.model]
        assert r.run_meta.model_extra["source_file"] == rel
        assert r.run_meta.model_version == "sha256:" + hashlib.sha256((mirror / rel).read_bytes()).hexdigest()
        assert r.run_meta.model_extra["published_model"]
        assert r.human_ref_id == "geirhos2019.edges.modal"


def test_edge_split_is_stratified_and_differs_from_the_silhouettes():
    t = get_task("closure.nat.edges")
    test = sorted(s for s, v in t.split(0).items() if v == "test")
    assert len(test) == 80 and set(Counter(s[5:].rstrip("0123456789") for s in test).values()) == {5}
    silh = sorted(s[5:] for s, v in get_task("closure.nat.silhouette").split(0).items() if v == "test")
    assert [s[5:] for s in test] != silh  # its own seeded stream (the task id), not the silhouettes' split
