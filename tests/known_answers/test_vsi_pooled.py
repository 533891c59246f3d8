"""Known answers of seed 002's pooled and threshold analyses (§3, §4, appendices A, B.2, C.2;
:mod:`perceptbench.vsi.pooled`, the shared low-VSI probe subset of :mod:`perceptbench.vsi.probe`)
on planted VSI records: each value is derived by hand in the comment above its assertion.

Planting a VSI: the clean first-token distribution lists tokens 1, 2, 3 with probabilities
(p, x, x), x = (1 - p) / 2, so max_prob = p; the blurred one lists (p, x (1 + d), x (1 - d)).
KL(clean || blurred) = x ln(1/(1+d)) + x ln(1/(1-d)) = -x ln(1 - d^2), so d = sqrt(1 - exp(-v / x))
plants VSI = v exactly (up to float rounding; v = 0 gives two identical lists, VSI 0), and the
most probable token stays token 1 (p > 1/2 > x (1 + d)): no argmax change."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from helpers.records import plant_vsi_record
from perceptbench.tasks import get_task
from perceptbench.vsi.analysis import score_vsi_analyses
from perceptbench.vsi.samples import vsi_samples

LN = np.log


def planted(task, model: str, sample: str, v: float, p: float, correct: bool, *, sigma: float = 20.0,
            benchmark: str = "salbench.syn", conf: float | None = 80.0) -> list:
    """Clean and region-blur records of one sample with VSI = ``v`` nats and max_prob ``p`` (module
    docstring); the clean answer is right ('B', the planted truth) or wrong ('A')."""
    x = (1.0 - p) / 2.0
    d = math.sqrt(1.0 - math.exp(-v / x))
    assert x * (1 - d) > 1e-11, "VSI too large to plant at this max_prob"
    clean = [float(LN(p)), float(LN(x)), float(LN(x))]
    blurred = [float(LN(p)), float(LN(x * (1 + d))), float(LN(x * (1 - d)))]
    kw = dict(model=model, benchmark=benchmark)
    return [plant_vsi_record(task, "clean", sample, [1, 2, 3], clean, response="B" if correct else "A", conf=conf,
                             **kw),
            plant_vsi_record(task, "region_blur", sample, [1, 2, 3], blurred, sigma_px=sigma, **kw)]


def rows_of(records, **kw) -> dict:
    rows = score_vsi_analyses(vsi_samples(records), seed=0, n_perm=10, **kw)
    keys = [(r.task_id, r.model, r.metric) for r in rows]
    assert len(keys) == len(set(keys))
    return {k: r for k, r in zip(keys, rows)}


def test_planting_gives_the_intended_vsi_and_max_prob():
    task = get_task("vsi.salbench.syn")
    recs = planted(task, "m", "s0", 0.02, 0.9, True) + planted(task, "m", "s1", 0.0, 0.6, False)
    s = {x.sample_id: x for x in vsi_samples(recs)}
    assert s["s0"].vsi == pytest.approx(0.02, abs=1e-9) and s["s0"].max_prob == pytest.approx(0.9)
    assert s["s1"].vsi == 0.0 and not s["s0"].argmax_changed and s["s1"].correct is False


# ------------------------------------------------------------------ threshold enrichment (§3)
# model m1: (VSI, max_prob, correct) per sample
M1 = [(0.0, .9, False), (0.0, .6, False), (0.02, .9, False), (0.04, .9, True), (0.1, .6, True),
      (0.2, .6, True), (0.3, .6, False), (0.5, .9, True), (1.0, .9, False), (2.0, .6, True)]
M2 = [(0.0, .9, False), (0.03, .9, False), (0.1, .9, True), (0.2, .9, True), (0.3, .9, True),
      (0.4, .6, False), (0.5, .6, True), (0.6, .6, True), (0.8, .6, True), (1.5, .6, True)]


def _enrichment_records():
    task = get_task("vsi.salbench.syn")
    recs = []
    for m, spec in (("m1", M1), ("m2", M2)):
        for i, (v, p, ok) in enumerate(spec):
            recs += planted(task, m, f"s{i}", v, p, ok)
    return task, recs


def test_confidently_wrong_enrichment_at_the_seed_thresholds_per_cell_and_pooled():
    task, recs = _enrichment_records()
    by = rows_of(recs)
    tid, sfx = task.task_id, "[region,sigma=20]"
    # m1: five samples at max_prob .9, five at .6 -> median .75; high confidence = .9.
    # Confidently wrong (wrong and .9): s0, s2, s8.
    # VSI < 0.05: s0..s3 (4); CW among them s0, s2 -> 2/4.  Size-matched top population: the 4
    # highest VSI outside: s9 (2.0), s8 (1.0), s7 (.5), s6 (.3); CW among them s8 -> 1/4.
    # Enrichment = (2/4) / (1/4) = 2.0.
    r = by[(tid, "m1", "cw_enrichment@0.05" + sfx)]
    assert r.value == pytest.approx(2.0) and r.n == 4 and "(2/4)" in r.note and "(1/4)" in r.note
    # interval: the two populations resampled separately (draws with no CW in the reference dropped)
    assert r.ci_low <= r.value <= r.ci_high and r.n_draws == 1000 and 0 < r.n_dropped < 1000
    # VSI < 0.01: s0, s1 (VSI 0); CW s0 -> 1/2.  Top 2: s9, s8; CW s8 -> 1/2.  Enrichment 1.0.
    assert by[(tid, "m1", "cw_enrichment@0.01" + sfx)].value == pytest.approx(1.0)
    # m2: high = .9 (s0..s4).  VSI < 0.05: s0, s1, both CW -> 2/2; top 2: s9, s8, both .6 and right
    # -> 0/2: the ratio is undefined (reference rate 0), with the reason.
    r = by[(tid, "m2", "cw_enrichment@0.05" + sfx)]
    assert math.isnan(r.value) and "no confidently-wrong sample in the top-VSI population" in r.note
    # pooled over the benchmark's two models (counts summed): (2 + 2) / (4 + 2) over (1 + 0) / (4 + 2) = 4.0
    r = by[(tid, "all-models", "cw_enrichment_pooled@0.05" + sfx)]
    assert r.value == pytest.approx(4.0) and r.n == 6 and r.ci_low <= r.value <= r.ci_high and r.n_draws == 1000
    # VSI < 0.01 pooled: m1 1/2 + m2 1/1 (s0) = 2/3; top: m1 1/2 + m2 0/1 (s9) = 1/3 -> 2.0
    assert by[(tid, "all-models", "cw_enrichment_pooled@0.01" + sfx)].value == pytest.approx(2.0)
    # share of the grid's 20 samples below 0.05: 4 + 2 = 6 -> 0.3; below 0.01: 2 + 1 = 3 -> 0.15
    assert by[(tid, "all-models", "insensitive_frac_pooled@0.05" + sfx)].value == pytest.approx(0.3)
    assert by[(tid, "all-models", "insensitive_frac_pooled@0.01" + sfx)].value == pytest.approx(0.15)
    # the quintile variant stays, under its own name (10 samples < 25: undefined, saying why)
    q = by[(tid, "m1", "cw_enrichment" + sfx)]
    assert math.isnan(q.value) and "< 25" in q.note


# ------------------------------------------------------------------ pooled ratios and joint quintiles (§3, B.2)
def _ratio_records():
    """25 samples per cell, VSI 0.1 (i + 1) for sample i (quintile floor(i / 5)), max_prob .6.
    Task a (benchmark a): model A wrong on s00, s01, s02 (bottom 3/5) and s20 (top 1/5); model B's VSI
    follows i for i < 15 and 39 - i above, so its quintile 3 holds s20..s24 and 4 holds s15..s19;
    B wrong on s00, s03 (bottom 2/5) and s15, s16 (its top 2/5).  Task b (benchmark b): both in
    sample order; A wrong on s00 and s24 (1/5, 1/5), B on s00..s03 (4/5, 0/5)."""
    ta, tb = get_task("vsi.salbench.syn@n=25"), get_task("vsi.salbench.syn@n=26")
    wrong = {("a", "A"): {0, 1, 2, 20}, ("a", "B"): {0, 3, 15, 16}, ("b", "A"): {0, 24}, ("b", "B"): {0, 1, 2, 3}}
    recs = []
    for (bench, m), errs in wrong.items():
        task = ta if bench == "a" else tb
        for i in range(25):
            rank = 39 - i if (bench, m) == ("a", "B") and i >= 15 else i
            recs += planted(task, m, f"s{i:02d}", 0.1 * (rank + 1), 0.6, i not in errs, benchmark=f"bench.{bench}")
    return ta.task_id, tb.task_id, recs


def test_error_rate_ratios_pooled_across_models_benchmarks_and_per_benchmark_means():
    ta, tb, recs = _ratio_records()
    by = rows_of(recs)
    sfx = "[region,sigma=20]"
    both = ",".join(sorted([ta, tb]))
    # per cell (the existing row): A on a: (3/5) / (1/5) = 3.0
    assert by[(ta, "A", "error_rate_ratio" + sfx)].value == pytest.approx(3.0)
    # benchmark a pooled over models: (3 + 2)/10 over (1 + 2)/10 = 5/3; mean of own ratios (3 + 1)/2 = 2
    r = by[(ta, "all-models", "error_rate_ratio_pooled_models" + sfx)]
    assert r.value == pytest.approx(5 / 3) and r.n == 20
    assert r.ci_low <= r.value <= r.ci_high and r.n_draws == 1000  # each cell's quintiles resampled within it
    assert by[(ta, "all-models", "error_rate_ratio_model_mean" + sfx)].value == pytest.approx(2.0)
    # benchmark b: (1 + 4)/10 over (1 + 0)/10 = 5; B's own ratio is undefined (top rate 0), so the
    # mean is A's alone, 1.0, n = 1, and the note says one model was undefined
    assert by[(tb, "all-models", "error_rate_ratio_pooled_models" + sfx)].value == pytest.approx(5.0)
    r = by[(tb, "all-models", "error_rate_ratio_model_mean" + sfx)]
    assert r.value == pytest.approx(1.0) and r.n == 1 and "undefined for 1" in r.note
    # pooled over each model's benchmarks: A (3 + 1)/10 over (1 + 1)/10 = 2; B (2 + 4)/10 over (2 + 0)/10 = 3
    assert by[(both, "A", "error_rate_ratio_pooled_benchmarks" + sfx)].value == pytest.approx(2.0)
    assert by[(both, "B", "error_rate_ratio_pooled_benchmarks" + sfx)].value == pytest.approx(3.0)
    # every cell: (3 + 2 + 1 + 4)/20 over (1 + 2 + 1 + 0)/20 = 2.5
    assert by[(both, "all-models", "error_rate_ratio_pooled_all" + sfx)].value == pytest.approx(2.5)


def test_joint_quintile_error_structure_of_a_model_pair():
    ta, tb, recs = _ratio_records()
    by = rows_of(recs)
    sfx = "[region,sigma=20]"
    # task a: quintile pairs (q_A, q_B): s00-04 (0,0), s05-09 (1,1), s10-14 (2,2), s15-19 (3,4),
    # s20-24 (4,3).  Both wrong only on s00 (A: 0, 1, 2, 20; B: 0, 3, 15, 16), in (0, 0).
    # low-low: 1/5; diagonal (0,0), (1,1), (2,2): 1/15; off-diagonal (3,4), (4,3): 0/10.
    g = {k: by[(ta, "A~B", f"joint_error_rate_{k}" + sfx)] for k in ("low_low", "diagonal", "off_diagonal")}
    assert (g["low_low"].value, g["low_low"].n) == (pytest.approx(0.2), 5)
    assert (g["diagonal"].value, g["diagonal"].n) == (pytest.approx(1 / 15), 15)
    assert (g["off_diagonal"].value, g["off_diagonal"].n) == (0.0, 10)
    grid = json.loads(by[(ta, "A~B", "joint_error_grid" + sfx)].note)
    assert grid["count"] == [[5, 0, 0, 0, 0], [0, 5, 0, 0, 0], [0, 0, 5, 0, 0], [0, 0, 0, 0, 5], [0, 0, 0, 5, 0]]
    assert grid["both_wrong"][0][0] == 1 and sum(map(sum, grid["both_wrong"])) == 1
    # task b: both in sample order, so every sample is on the diagonal; both wrong on s00 (A: 0,
    # 24; B: 0..3) -> low-low 1/5, off-diagonal empty (undefined, said)
    assert by[(tb, "A~B", "joint_error_rate_low_low" + sfx)].value == pytest.approx(0.2)
    r = by[(tb, "A~B", "joint_error_rate_off_diagonal" + sfx)]
    assert math.isnan(r.value) and r.n == 0 and r.note


# ------------------------------------------------------------------ win tally (§4) and sigma swing (C.2)
def _signal_records():
    """10 samples per cell, VSI = 0.05 r for VSI rank r (1 = lowest), errors at the ranks listed below.
    m1: max_prob .8 for all (AUROC 0.5); m2: errors at max_prob .55..59, right answers .9..94
    (AUROC of -max_prob 1.0).  Error VSI ranks: m1 sigma 20: 1-5; m1 sigma 10: 1, 2, 3, 4, 6;
    m2 sigma 20: 1, 2, 3, 4, 10; m2 sigma 10: 1, 2, 3, 9, 10.  m3 (sigma 20): 2 errors only."""
    # a task id with a comma in its settings (n=10,sigma=10) names the rows whole
    t20, t10 = get_task("vsi.salbench.syn"), get_task("vsi.salbench.syn@n=10,sigma=10")
    err_ranks = {("m1", 20): {1, 2, 3, 4, 5}, ("m1", 10): {1, 2, 3, 4, 6}, ("m2", 20): {1, 2, 3, 4, 10},
                 ("m2", 10): {1, 2, 3, 9, 10}, ("m3", 20): {1, 2}}
    recs = []
    for (m, sg), errs in err_ranks.items():
        task = t20 if sg == 20 else t10
        for j, rank in enumerate(range(1, 11)):
            wrong = rank in errs
            p = (0.55 + 0.01 * (j % 5) if wrong else 0.9 + 0.01 * (j % 5)) if m == "m2" else 0.8
            recs += planted(task, m, f"s{j}", 0.05 * rank, p, not wrong, sigma=float(sg))
    return t20.task_id, t10.task_id, recs


def test_win_tally_of_signals_across_cells():
    t20, t10, recs = _signal_records()
    by = rows_of(recs)
    # region-only cells: candidates max_prob and vsi (no hybrid).  AUROC of -VSI = share of
    # (error, right) pairs with the error at lower VSI: m1 sigma 20: 25/25 = 1; m2 sigma 20:
    # errors at ranks 1-4 beat all 5 right answers (20), rank 10 none -> 20/25 = 0.8.
    # -max_prob: m1 0.5 (all tied), m2 1.0.  Winners at sigma 20: m1 vsi, m2 max_prob; m3 has 2
    # errors < 5: no winner.
    k20 = {s: by[(t20, "all-models", f"signal_wins[{s},sigma=20]")] for s in ("max_prob", "vsi", "hybrid")}
    assert {s: r.value for s, r in k20.items()} == {"max_prob": 1.0, "vsi": 1.0, "hybrid": 0.0}
    assert k20["vsi"].n == 2 and "1 cell without a winner" in k20["vsi"].note
    # sigma 10: m1 vsi (0.96 > 0.5), m2 max_prob (1.0 > 0.6)
    assert by[(t10, "all-models", "signal_wins[max_prob,sigma=10]")].value == 1.0
    assert by[(t10, "all-models", "signal_wins[vsi,sigma=10]")].value == 1.0


def test_sigma_auroc_swing():
    t20, t10, recs = _signal_records()
    by = rows_of(recs)
    both = ",".join(sorted([t10, t20]))
    # m1: sigma 20 AUROC 1.0; sigma 10: error ranks 1-4 beat all 5 (20), rank 6 beats ranks 7-10 (4)
    # -> 24/25 = 0.96.  Swing 0.04, lowest at sigma 10, highest at sigma 20.
    r = by[(both, "m1", "auroc_vsi_sigma_swing[region]")]
    assert r.value == pytest.approx(0.04) and r.n == 2 and "min at sigma=10, max at sigma=20" in r.note
    # m2: sigma 20: 0.8; sigma 10: ranks 1-3 beat all (15), 9 and 10 none -> 0.6.  Swing 0.2.
    assert by[(both, "m2", "auroc_vsi_sigma_swing[region]")].value == pytest.approx(0.2)
    # largest swing over (benchmark, model): m2's 0.2
    r = by[(both, "all-models", "auroc_vsi_sigma_swing_max[region]")]
    assert r.value == pytest.approx(0.2) and "m2" in r.note and r.n == 2
    # range across cells at one sigma: sigma 20: m1 1.0, m2 0.8 (m3 undefined) -> 0.2;
    # sigma 10: 0.96 - 0.6 = 0.36
    assert by[(t20, "all-models", "auroc_vsi_cell_range[region,sigma=20]")].value == pytest.approx(0.2)
    assert by[(t10, "all-models", "auroc_vsi_cell_range[region,sigma=10]")].value == pytest.approx(0.36)


# ------------------------------------------------------------------ reliability diagrams (B.2)
def test_reliability_diagram_rows_per_signal():
    task = get_task("vsi.salbench.syn")
    # (VSI, max_prob, correct, verbal confidence)
    spec = [(0.0, .55, True, 80), (0.0, .58, False, 80), (0.2, .62, True, 95), (0.4, .91, True, 100),
            (0.6, .93, False, 35), (0.5, .95, True, 80)]
    recs = []
    for i, (v, p, ok, c) in enumerate(spec):
        recs += planted(task, "m", f"s{i}", v, p, ok, conf=c)
    by = rows_of(recs)
    tid, sfx = task.task_id, "[region,sigma=20]"
    rel = json.loads(by[(tid, "m", "reliability_max_prob" + sfx)].note)
    # max_prob bins of width .1: [.5, .6): .55 (right), .58 (wrong) -> 2, mean .565, accuracy .5;
    # [.6, .7): .62 (right) -> 1, 1.0; [.9, 1]: .91 (right), .93 (wrong), .95 (right) -> 3, mean .93, 2/3
    assert rel["count"] == [0, 0, 0, 0, 0, 2, 1, 0, 0, 3]
    assert rel["mean_conf"][5] == pytest.approx(0.565) and rel["accuracy"][5] == pytest.approx(0.5)
    assert rel["mean_conf"][9] == pytest.approx(0.93) and rel["accuracy"][9] == pytest.approx(2 / 3, abs=1e-6)
    assert rel["accuracy"][0] is None and rel["edges"][0] == 0.0 and rel["edges"][-1] == 1.0
    assert rel["thin_below"] == 5
    # normalised VSI 1 - exp(-v): 0, 0 -> bin 0 (1 of 2 right); .181 -> 1; .330, .393 -> 3; .451 -> 4
    nv = json.loads(by[(tid, "m", "reliability_norm_vsi" + sfx)].note)
    assert nv["count"] == [2, 1, 0, 2, 1, 0, 0, 0, 0, 0] and nv["accuracy"][0] == pytest.approx(0.5)
    # verbal confidence / 100: .8, .8, .8 -> bin 8 (2 right of 3); .95, 1.0 -> bin 9 (both right); .35 -> bin 3 (wrong)
    vc = json.loads(by[(tid, "m", "reliability_verbal_conf" + sfx)].note)
    assert vc["count"] == [0, 0, 0, 1, 0, 0, 0, 0, 3, 2]
    assert vc["accuracy"][8] == pytest.approx(2 / 3, abs=1e-6) and vc["accuracy"][3] == 0.0
    assert by[(tid, "m", "reliability_max_prob" + sfx)].value == 6


# ------------------------------------------------------------------ shared low-VSI probe subset (A)
def test_probe_gap_on_the_low_vsi_subset_shared_across_models(tmp_path):
    from perceptbench.vsi.features import slug, store_key

    task = get_task("vsi.salbench.syn")
    near = [float(x) for x in LN([0.34, 0.33, 0.33])]
    # low (VSI < 0.05) per model and where the argmax changes (a near-tie swapped: VSI
    # .01 ln(34/33) = 0.0003, tokens 2 and 1 exchange first place)
    low = {"m1": set(range(0, 6)), "m2": set(range(3, 8))}
    changes = {"m1": {0, 1, 3}, "m2": {7}}
    recs = []
    for m in ("m1", "m2"):
        for i in range(10):
            sid = f"s{i}"
            if i in changes[m]:
                recs += [plant_vsi_record(task, "clean", sid, [1, 2, 3], near, model=m),
                         plant_vsi_record(task, "region_blur", sid, [2, 1, 3], near, model=m)]
            else:
                recs += planted(task, m, sid, 0.0 if i in low[m] else 0.5 + 0.1 * i, 0.8, True)
        # features: clean (0, u), blurred (1, u): the probe separates every view -> probe accuracy 1
        u = np.random.default_rng(0).random(10)
        np.savez(tmp_path / (slug(store_key(m, task.task_id)) + ".npz"),
                 sample_id=np.array([f"s{i}" for i in range(10)]), image_id=np.array([f"s{i}" for i in range(10)]),
                 perturbation=np.array(["region"] * 10), sigma=np.full(10, 20.0),
                 clean=np.c_[np.zeros(10), u].astype(np.float32), perturbed=np.c_[np.ones(10), u].astype(np.float32))
        (tmp_path / (slug(store_key(m, task.task_id)) + ".json")).write_text(json.dumps({"key": m}))
    from perceptbench.vsi.features import ProbeFeatures

    by = rows_of(recs, probe=ProbeFeatures(tmp_path))
    tid, sfx = task.task_id, "[region,sigma=20]"
    # own subsets: m1 low s0..s5, argmax changes s0, s1, s3 -> 3/6; m2 low s3..s7, change s7 -> 1/5
    assert by[(tid, "m1", "argmax_change_low_vsi" + sfx)].value == pytest.approx(0.5)
    assert by[(tid, "m2", "argmax_change_low_vsi" + sfx)].value == pytest.approx(0.2)
    # shared: low under both = s3, s4, s5.  m1 changes on s3 -> 1/3, gap 1 - 1/3 = 2/3;
    # m2 changes on none of them -> 0, gap 1.0; n = 3 for both
    r1 = {k: by[(tid, "m1", f"{k}_shared_low_vsi" + sfx)] for k in ("probe_acc", "argmax_change", "gap")}
    r2 = {k: by[(tid, "m2", f"{k}_shared_low_vsi" + sfx)] for k in ("probe_acc", "argmax_change", "gap")}
    assert r1["probe_acc"].value == 1.0 and r1["argmax_change"].value == pytest.approx(1 / 3)
    assert r1["gap"].value == pytest.approx(2 / 3) and r1["gap"].n == 3
    assert r2["argmax_change"].value == 0.0 and r2["gap"].value == pytest.approx(1.0) and r2["gap"].n == 3
    assert "3 samples shared" in r1["gap"].note
