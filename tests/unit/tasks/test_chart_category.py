"""similarity.chart.category_mean (Tseng et al., CHI 2023): trial -> stimulus mapping on
hand-checked rows, the study rendering, human trials as records, ceilings, and a run."""

import csv
from collections import Counter, defaultdict

import numpy as np
import pytest

from perceptbench.records import TrialRecord
from perceptbench.stimuli import tseng_scatterplots as ts
from perceptbench.stimuli.render import hex_to_rgb
from perceptbench.tasks import get_task
from perceptbench.tasks.base import make_record
from perceptbench.tasks.chart_category import WRONG, CategoryMeanTask, stimulus_id_for

TASK = "similarity.chart.category_mean"


@pytest.fixture(scope="module")
def trials():
    return {t.row: t for t in ts.human_trials()}


# Rows of public/dataset/user response.csv checked by hand against the batches' info.csv
# (grep for the delta): (row, participant, batch, index, k, ans, correct)
HAND_CHECKED = [
    (0, "0uCqodzmQcMa7PSJ624O", "GGHS73HTQE", 0, 3, 2, True),
    # the release prints this delta as 2.081497483263586, info.csv as 2.0814974832635866
    (14, "0uCqodzmQcMa7PSJ624O", "GGHS73HTQE", 16, 10, 5, True),
    (19, "0uCqodzmQcMa7PSJ624O", "GGHS73HTQE", 21, 6, 2, False),
    (48, "14FQGehev0fgSXeFdfQm", "QT513F3WQS", 6, 6, 0, True),
    # 2.3734631108018918 in the responses, 2.3734631108018913 in info.csv
    (49, "14FQGehev0fgSXeFdfQm", "QT513F3WQS", 7, 6, 1, False),
]


@pytest.mark.parametrize("row,pid,batch,index,k,ans,correct", HAND_CHECKED)
def test_hand_checked_rows_map_to_their_plot(trials, row, pid, batch, index, k, ans, correct):
    t = trials[row]
    assert (t.participant, t.batch, t.index, t.correct) == (pid, batch, index, correct)
    p = ts.load_plots()[(batch, index)]
    assert (p.category_num, p.answer) == (k, ans)


def test_every_trial_maps_and_each_participant_lacks_the_shared_plots():
    tr = ts.human_trials()
    assert len(tr) == 3822
    by_p = defaultdict(list)
    for t in tr:
        by_p[t.participant].append(t)
    assert len(by_p) == 91
    shared = ts.shared_plots()
    assert len(shared) == 30 and len({i for b, i in shared if b == ts.batches()[0]}) == 3
    for pid, ts_ in by_p.items():
        assert len({t.batch for t in ts_}) == 1 and len({t.palette for t in ts_}) == 1
        b = ts_[0].batch
        seen = {t.index for t in ts_}
        assert len(seen) == 42
        assert set(range(45)) - seen == {i for bb, i in shared if bb == b}


def test_answers_are_the_highest_mean_category():
    for p in ts.load_plots().values():
        means = [p.xy[p.ca == c, 1].mean() for c in range(p.category_num)]
        assert int(np.argmax(means)) == p.answer


def test_unmappable_trial_is_a_one_line_error(monkeypatch):
    real = ts._read_csv

    def edited(rel):
        rows, path, sha = real(rel)
        if rel.endswith("user response.csv"):
            rows = [dict(r) for r in rows]
            rows[0]["number_points"] = "99"  # hand-made mismatch with GGHS73HTQE/0 (12 points)
        return rows, path, sha

    monkeypatch.setattr(ts, "_read_csv", edited)
    ts.human_trials.cache_clear()
    try:
        with pytest.raises(ValueError, match=r"row 0 \(0uCqodzmQcMa7PSJ624O_Q_0\).*GGHS73HTQE/0.csv") as e:
            ts.human_trials()
        assert "\n" not in str(e.value)
    finally:
        ts.human_trials.cache_clear()


def test_render_follows_the_study_geometry():
    p = ts.load_plots()[("GGHS73HTQE", 7)]
    colors = ts.palettes()["Tab10"]
    img = ts.render_plot(p, colors)
    assert img.size == (460, 400 + ts.ANSWER_ROW_PX)
    assert ts.render_plot(p, colors, answer_row=False).size == (460, 400)
    a = np.asarray(img)
    # a point's centre: x, y in [-1, 11] onto the 370 x 360 plot area offset (60, 10)
    x, y = p.xy[0]
    px = 60 + (x + 1) / 12 * 370
    py = 10 + 360 - (y + 1) / 12 * 360
    assert tuple(a[int(round(py)), int(round(px))]) == pytest.approx(hex_to_rgb(colors[p.ca[0]]), abs=40)
    # x axis line at y = 370 (dark), white far from the data
    assert a[370, 200].max() < 120 and a[5, 455].min() == 255
    # the swatches: one per category, in category order
    for c in range(p.category_num):
        cx = int((460 / p.category_num) * (c + 0.5))
        assert tuple(a[418, cx]) == pytest.approx(hex_to_rgb(colors[c]), abs=3)


def test_stimuli_split_is_disjoint_by_batch_and_seeded():
    t = get_task(TASK)
    st = t.stimuli(0)
    test_b = {s.meta["batch"] for s in st if s.split == "test"}
    probe_b = {s.meta["batch"] for s in st if s.split == "probe_train"}
    assert test_b.isdisjoint(probe_b) and len(probe_b) == 3 and len(test_b) == 7
    assert t.probe_batches(0) == t.probe_batches(0) and t.probe_batches(0) != t.probe_batches(1)
    assert all(s.ground_truth == ts.load_plots()[(s.meta["batch"], s.meta["plot_index"])].answer + 1 for s in st)
    sub = get_task(TASK + "@n_probe=20,n_test=10").stimuli(0)
    assert Counter(s.split for s in sub) == {"test": 10, "probe_train": 20}
    with pytest.raises(ValueError, match="n_test"):
        get_task(TASK + "@n_test=zero")


def test_human_records_and_accuracy_by_k_from_the_raw_csv(mirror):
    t = get_task(TASK)
    st = t.stimuli(0)
    hr = t.human_records(0, "r", st)
    assert len(hr) == 3822
    r0 = next(r for r in hr if r.run_meta.model_extra["source_row"] == 19)
    assert r0.model == "human:0uCqodzmQcMa7PSJ624O" and r0.response == WRONG and r0.correct is False
    assert r0.stimulus_id == stimulus_id_for("GGHS73HTQE", 21, "StataS2") and r0.ground_truth == 3
    rows = {(r.model, r.metric): r for r in t.score(hr, 0)}
    # independent count from the raw CSV
    with open(mirror / "tseng2023-categorical-scatterplots/public/dataset/user response.csv") as f:
        raw = list(csv.DictReader(f))
    for k in (2, 5, 10):
        sel = [int(r["correct_answer"]) for r in raw if int(r["category_number"]) == k]
        assert rows[("human:panel", f"a_k[{k}]@all")].value == pytest.approx(np.mean(sel))
        assert rows[("human:panel", f"a_k[{k}]@all")].n == len(sel)
    assert rows[("human:panel", "accuracy@all")].value == pytest.approx(
        np.mean([int(r["correct_answer"]) for r in raw]))
    assert rows[("human:panel", "a_k[2]@all")].value > rows[("human:panel", "a_k[9]@all")].value
    for m in ("ceiling_kappa_pairwise_mean@all", "ceiling_kappa_loo_mean@all"):
        assert np.isfinite(rows[("human:panel", m)].value)


def _rec(task, model, sid, correct, gt=2, k=3, family="human", split="test"):
    resp = gt if correct else (WRONG if family == "human" else 1)
    return make_record(task, stimulus_id=sid, model=model, model_family=family,
                       readout="human_trial" if family == "human" else "class_probe", response=resp,
                       ground_truth=gt, manipulated_value=k, raw_output=None, prompt_id=None, prompt_hash=None,
                       model_version="v", seed=0, run_id="r", split=split)


def test_ceilings_and_b_on_a_hand_computed_panel():
    """Cell A (3 observers, 4 stimuli) and cell B (1 observer): pairwise kappa over the three
    within-cell pairs, leave-one-out in cell A, B on the majority-correct stimuli."""
    t = CategoryMeanTask()
    A = [stimulus_id_for("AAAAAAAAAA", i, "Tab10") for i in range(4)]
    Bs = [stimulus_id_for("BBBBBBBBBB", i, "Tab10") for i in range(4)]
    obs = {"human:o1": [1, 1, 0, 0], "human:o2": [1, 0, 0, 1], "human:o3": [1, 1, 1, 0]}
    recs: list[TrialRecord] = []
    for m, cs in obs.items():
        recs += [_rec(t, m, s, c) for s, c in zip(A, cs)]
    recs += [_rec(t, "human:o4", s, c) for s, c in zip(Bs, [1, 1, 1, 0])]
    model = [1, 0, 0, 1]
    recs += [_rec(t, "m", s, c, family="encoder") for s, c in zip(A, model)]
    rows = {(r.model, r.metric): r for r in t.score(recs, 0)}

    def kap(a, b):
        a, b = np.array(a, float), np.array(b, float)
        c_obs = np.mean(a * b + (1 - a) * (1 - b))
        c_exp = a.mean() * b.mean() + (1 - a.mean()) * (1 - b.mean())
        return (c_obs - c_exp) / (1 - c_exp)

    # o1-o2: c_obs 0.5, c_exp 0.5 -> 0;  o1-o3: c_obs 0.75, p 0.5/0.75 -> c_exp 0.5 -> 0.5
    # o2-o3: c_obs 0.25, c_exp 0.5 -> -0.5
    assert kap(obs["human:o1"], obs["human:o2"]) == pytest.approx(0.0)
    assert kap(obs["human:o1"], obs["human:o3"]) == pytest.approx(0.5)
    assert kap(obs["human:o2"], obs["human:o3"]) == pytest.approx(-0.5)
    assert rows[("human:panel", "ceiling_kappa_pairwise_mean@all")].value == pytest.approx(0.0)
    assert rows[("human:panel", "ceiling_kappa_pairwise_mean@all")].n == 3
    o = np.array(list(obs.values()), float)
    loo = [kap(o[j], (o.sum(0) - o[j]) / 2) for j in range(3)]
    assert rows[("human:panel", "ceiling_kappa_loo_mean@all")].value == pytest.approx(np.mean(loo))
    # majority correct on A[0] (3/3), A[1] (2/3); wrong on A[2] (1/3) and A[3] (1/3): B on 2 stimuli
    assert rows[("human:panel", "n_mode_correct@all")].value == 2
    assert rows[("human:panel", "n_mode_unknown@all")].value == 2
    assert rows[("m", "B")].n == 2 and rows[("m", "B")].value == pytest.approx(0.5)
    p = o.mean(0)
    m = np.array(model, float)
    c_obs = np.mean(m * p + (1 - m) * (1 - p))
    c_exp = m.mean() * p.mean() + (1 - m.mean()) * (1 - p.mean())
    assert rows[("m", "kappa_aggregate")].value == pytest.approx((c_obs - c_exp) / (1 - c_exp))
    assert rows[("m", "kappa_pairwise")].value == pytest.approx(
        np.nanmean([kap(model, obs[k]) for k in obs]))


def test_run_tiny_encoder_end_to_end(tmp_path):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import score_file
    from perceptbench.testing.tiny_encoders import build_tiny_clip

    d = build_tiny_clip(tmp_path / "tiny-clip")
    task = TASK + "@n_probe=60,n_test=12"
    run(RunConfig(out=tmp_path / "run", tasks=(task,), models=(f"tiny=hf:{d}",)), progress=False)
    rows = {(r.model, r.metric): r for r in score_file(tmp_path / "run" / "records.jsonl")}
    assert rows[("tiny", "accuracy")].n + rows[("tiny", "accuracy")].n_null == 12
    for m in ("B", "kappa_aggregate", "kappa_pairwise", "chance", "position_floor"):
        assert ("tiny", m) in rows
    assert ("human:panel", "ceiling_kappa_pairwise_mean@test") in rows


def test_tiny_vlm_gets_the_study_question_with_k(tmp_path, monkeypatch):
    pytest.importorskip("transformers", reason="model extra not installed")
    from perceptbench.records import read_records
    from perceptbench.runner import RunConfig, run
    from perceptbench.scoring import score_file
    from perceptbench.seeding import text_hash
    from perceptbench.testing.tiny_vlm import build_tiny_vlm

    monkeypatch.setenv("PERCEPTBENCH_RESPONSE_CACHE", str(tmp_path / "cache"))
    d = build_tiny_vlm("llava", tmp_path / "tiny-llava")
    task = TASK + "@n_probe=1,n_test=4"
    run(RunConfig(out=tmp_path / "run", tasks=(task,), models=(f"vlm=hf:{d}",), batch_size=4), progress=False)
    recs = [r for r in read_records(tmp_path / "run" / "records.jsonl") if r.model == "vlm"]
    assert len(recs) == 4
    t = get_task(task)
    for r in recs:
        prompt = t.prompt_text.format(k=r.manipulated_value)
        assert f"numbered 1 to {r.manipulated_value} under the plot" in prompt
        assert r.prompt_hash == text_hash(prompt) and r.readout == "vlm_prompt"
        assert r.response is None or r.response in range(1, 11)
    rows = {(r.model, r.metric): r for r in score_file(tmp_path / "run" / "records.jsonl")}
    assert ("vlm", "kappa_aggregate") in rows and ("human:panel", "ceiling_kappa_pairwise_mean@test") in rows
