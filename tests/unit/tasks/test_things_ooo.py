"""similarity.nat.things_ooo on a fixture written in the release's own format
(tests/fixtures/things/triplet_dataset/testset2{,_repeat}.txt), with the human reference
and ceiling computed by hand, and the one-line refusal without the release."""

import numpy as np
import pytest

from perceptbench.core.rows import ScoreRow
from perceptbench.metrics.bootstrap import N_BOOT_B, bootstrap
from perceptbench.sources import MissingSourceError
from perceptbench.sources.things_release import IMAGES_ENV, TRIPLETS_ENV, concepts
from perceptbench.stimuli.things_triplets import concept_image_path, read_triplet_file
from perceptbench.tasks import get_task

from helpers.cli import cli
from helpers.paths import FIXTURES
from helpers.records import plant_record
from helpers.score_rows import SEED, assert_rows, boot_row
from helpers.task_data import write_things_images

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
# modal test-retest (each file's own mode of a type; types in both files):
#   {0,1,2}: test 2,2 -> 2; repeat 0,2 -> tied        -> left out
#   {3,4,5}: test 5,3 -> tied (line 6 is "4 5 3")     -> left out
#   {0,3,5}: test 5; repeat 0                          -> disagree
#   {1,2,4}: test 1; repeat 1                          -> agree
#   ({0,1,5} is only in the repeat file)  -> 1 / 2 = 0.5 over 2 types, 2 tied left out


@pytest.fixture
def things_env(tmp_path, monkeypatch):
    root = write_things_images(tmp_path / "images")
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
    modal = rows[("human:panel", "ceiling_test_retest_modal")]
    assert (modal.value, modal.n) == (0.5, 2) and "(2 tied left out)" in modal.note
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
    env = {TRIPLETS_ENV: str(tmp_path / "none"), IMAGES_ENV: str(tmp_path / "none")}
    out = tmp_path / "r"
    p = cli("run", "--out", str(out), "--task", TASK, "--no-progress", env=env, columns=400)
    assert p.returncode == 2
    msg = " ".join(p.stderr.split())  # the console may wrap the line
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


def _ooo_rec(task, model, sid, response, gt, **meta):
    human = model.startswith("human:")
    return plant_record(task, stimulus_id=sid, model=model, model_family="human" if human else "vlm",
                        readout="human_trial" if human else "vlm_prompt", response=response,
                        ground_truth=gt, manipulated_value=None, raw_output=None, prompt_id=None, prompt_hash=None,
                        model_version="v", seed=0, run_id="r", **meta)


def _agree_boot(match, valid):
    from perceptbench.metrics.agreement import agreement_b

    return bootstrap(lambda i: agreement_b(match[i], valid[i]), len(match), n_draws=N_BOOT_B, seed=SEED)


def test_things_ooo_score_rows_by_hand():
    from perceptbench.tasks.things_ooo import RETEST, TEST

    task = get_task("similarity.nat.things_ooo")
    tid = task.task_id
    summary = {"release_pairs": 5, "release_agree": 2, "release_misaligned": 1, "release_types": 7,
               "release_tied_types": 2, "release_modal_agree": 3, "release_modal_types": 4, "release_modal_tied": 1}
    gt = {"s0": 1, "s1": 2, "s2": 1, "s3": 3, "s9": 2}
    recs = [_ooo_rec(task, "vlm", s, r, gt[s]) for s, r in (("s3", 3), ("s0", 1), ("s1", None), ("s2", 3))]
    recs += [_ooo_rec(task, TEST, s, r, gt[s], **summary) for s, r in (("s2", 2), ("s0", 1), ("s1", 2), ("s3", 3))]
    recs += [_ooo_rec(task, RETEST, s, r, gt[s], **summary) for s, r in (("s0", 1), ("s1", 3), ("s3", 3), ("s9", 1))]
    ceiling = 2 / 5
    want = [ScoreRow(tid, "human:panel", "ceiling_test_retest", ceiling, None, None, 5, 0,
                     "agreement of first and repeated choices over all 5 aligned line pairs of "
                     "testset2/testset2_repeat (1 misaligned left out)"),
            # modal positions 1 2 1 3: f = .5 .25 .25, floor .5
            ScoreRow(tid, "human:panel", "position_floor", 0.5, None, None, 4, 0,
                     "max_k f_k of the modal choice's shown position, f = 0.50/0.25/0.25 (seed 000 D.3)"),
            ScoreRow(tid, "human:panel", "n_tied_types_excluded", 2.0, None, None, 7, 0,
                     "triplet types whose modal choice is tied: never sampled"),
            ScoreRow(tid, "human:panel", "ceiling_test_retest_modal", 0.75, None, None, 4, 0,
                     "agreement of each type's modal choice in testset2 with its modal choice in testset2_repeat, "
                     "over the 4 types with an untied mode in both files (1 tied left out); seed 000 D.3's "
                     "'test-retest consistency of the human modal choice' read as the mode's own consistency "
                     "(ceiling_test_retest: individual first-vs-repeat agreement)")]
    # retest vs test on the stimuli both have (s9 has no test line): s0 1=1, s1 3!=2, s3 3=3 -> 2/3
    ttr = _agree_boot(np.array([True, False, True]), np.ones(3, bool))
    assert ttr.estimate == pytest.approx(2 / 3)
    want.append(boot_row(tid, "human:panel", "test_retest_on_sample", ttr, 3, 0,
                          "first vs repeated choice on the sampled triplets"))
    both = " (this response is one of those the mode is taken over)"
    for m, match, valid, want_b in (
            (TEST, [1, 1, 0, 1], [1, 1, 1, 1], 0.75),        # s0..s3: 1=1 2=2 2!=1 3=3
            (RETEST, [1, 0, 1, 0], [1, 1, 1, 1], 0.5),       # s0 s1 s3 s9: 1=1 3!=2 3=3 1!=2
            ("vlm", [1, 0, 0, 1], [1, 0, 1, 1], 2 / 3)):     # s0..s3: 1=1 null 3!=1 3=3
        v = np.array(valid, bool)
        b = _agree_boot(np.array(match, bool), v)
        assert b.estimate == pytest.approx(want_b)
        n_null = int((~v).sum())
        want.append(boot_row(tid, m, "B", b, int(v.sum()), n_null,
                              "agreement with the modal human choice" + (both if m.startswith("human:") else "")))
        want.append(ScoreRow(tid, m, "B_over_ceiling", b.estimate / ceiling, b.low / ceiling, b.high / ceiling,
                             int(v.sum()), n_null,
                             "B / test-retest ceiling 0.4000 (seed 000 D.3); CI = B's CI / ceiling",
                             b.n_draws, b.n_dropped, b.seed))
        if m == "vlm":
            want += [ScoreRow(tid, m, "position_floor", 0.5, None, None, 4, 0,
                              "max_k target-position frequency (seed 000 D.3)"),
                     ScoreRow(tid, m, "null_rate", 0.25, None, None, 4, 1)]
    assert_rows(task.score(recs, SEED), want)


def test_things_ooo_score_without_release_counts_or_retest():
    from perceptbench.tasks.things_ooo import TEST

    task = get_task("similarity.nat.things_ooo")
    tid = task.task_id
    recs = [_ooo_rec(task, TEST, "s0", 2, 2, release_pairs=0, release_agree=0), _ooo_rec(task, "vlm", "s0", 3, 2)]
    b_t = _agree_boot(np.array([True]), np.array([True]))
    b_m = _agree_boot(np.array([False]), np.array([True]))
    # no aligned pairs: the ceiling is undefined and no B_over_ceiling row is written; no retest row
    assert_rows(task.score(recs, SEED), [
        ScoreRow(tid, "human:panel", "ceiling_test_retest", float("nan"), None, None, 0, 0,
                 "agreement of first and repeated choices over all 0 aligned line pairs of "
                 "testset2/testset2_repeat (None misaligned left out)"),
        ScoreRow(tid, "human:panel", "position_floor", 1.0, None, None, 1, 0,
                 "max_k f_k of the modal choice's shown position, f = 0.00/1.00/0.00 (seed 000 D.3)"),
        ScoreRow(tid, "human:panel", "n_tied_types_excluded", 0.0, None, None, None, 0,
                 "triplet types whose modal choice is tied: never sampled"),
        ScoreRow(tid, "human:panel", "ceiling_test_retest_modal", float("nan"), None, None, 0, 0,
                 "the human records predate the modal test-retest count: run the task again"),
        boot_row(tid, TEST, "B", b_t, 1, 0, "agreement with the modal human choice (this response is one of "
                  "those the mode is taken over)"),
        boot_row(tid, "vlm", "B", b_m, 1, 0, "agreement with the modal human choice"),
        ScoreRow(tid, "vlm", "position_floor", 1.0, None, None, 1, 0, "max_k target-position frequency (seed 000 D.3)"),
        ScoreRow(tid, "vlm", "null_rate", 0.0, None, None, 1, 0)])
    with pytest.raises(ValueError, match=r"similarity.nat.things_ooo: no human:testset2 records: the human "
                                         r"reference is missing"):
        task.score(recs[1:], SEED)


def test_things_ooo_zero_ceiling_writes_no_ratio():
    from perceptbench.tasks.things_ooo import TEST

    task = get_task("similarity.nat.things_ooo")
    recs = [_ooo_rec(task, TEST, "s0", 2, 2, release_pairs=3, release_agree=0), _ooo_rec(task, "vlm", "s0", 2, 2)]
    rows = task.score(recs, SEED)
    # 0 of 3 aligned pairs agree: ceiling 0, a ratio to it is undefined and not written
    assert [r.value for r in rows if r.metric == "ceiling_test_retest"] == [0.0]
    assert not [r for r in rows if r.metric == "B_over_ceiling"]


def test_things_ooo_scores_on_the_columns_like_score_records(tmp_path, monkeypatch):
    """From a records file the task scores on the columns: no record is read back but the one
    human:testset2 record whose run_meta holds the release's counts, and the rows are exactly the
    record path's (models answering different stimuli, nulls, a retest line without a test line,
    records in shuffled file order, VLM answers re-parsed from their raw output)."""
    import perceptbench.record_table as rt
    from perceptbench.records import read_records
    from perceptbench.scoring import score_file, score_records
    from perceptbench.tasks.things_ooo import RETEST, TEST
    from helpers.records import plant_records

    task = get_task(TASK)
    summary = {"release_pairs": 9, "release_agree": 4, "release_misaligned": 1, "release_types": 40,
               "release_tied_types": 3, "release_modal_agree": 5, "release_modal_types": 8, "release_modal_tied": 2}
    rng = np.random.default_rng(7)
    stimuli = [f"s{i:02d}" for i in range(40)]
    gt = {s: int(rng.integers(1, 4)) for s in stimuli}
    recs = []
    for model, some in ((TEST, stimuli), (RETEST, stimuli[5:] + ["s99"]), ("vlm-a", stimuli), ("vlm-b", stimuli[:30]),
                        ("vlm-c", stimuli[10:])):
        for s in some:
            answer = int(rng.integers(1, 4))
            if model.startswith("human:"):
                recs.append(_ooo_rec(task, model, s, answer, gt.get(s, 1), **summary))
            else:
                raw = "no idea" if rng.random() < 0.15 else f"The odd one out is {answer}."
                rec = _ooo_rec(task, model, s, None, gt[s])
                recs.append(rec.model_copy(update={"raw_output": raw}))
    recs = [recs[i] for i in rng.permutation(len(recs))]
    p = plant_records(tmp_path / "run", recs)
    read_back = []
    real = rt._record_at_line

    def one_line(path, row):
        read_back.append(row)
        return real(path, row)

    def refuse(*a, **k):
        raise AssertionError("the task was read back as records")

    monkeypatch.setattr(rt, "_record_at_line", one_line)
    monkeypatch.setattr(rt.ColumnarRecords, "iter_records", refuse)
    rows = [vars(r) for r in score_file(p, tmp_path / "scores.csv")]
    monkeypatch.undo()
    assert len(read_back) == 1 and recs[read_back[0]].model == TEST
    assert rows == [vars(r) for r in score_records(read_records(p))]
    got = {(r["model"], r["metric"]): r for r in rows}
    assert got[("human:panel", "ceiling_test_retest")]["value"] == pytest.approx(4 / 9)
    assert got[("vlm-b", "null_rate")]["n"] == 30 and got[("human:panel", "test_retest_on_sample")]["n"] == 35
