"""Known-answer tests written to kill mutants that survived `scripts/mutation_report.py`
(issue 14) in the SalBench, retrieval, encoder-readout, VSI, difficulty, record and
response-cache modules.  Each answer is derived by hand in the comment above its assertion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptbench.metrics import saliency as sm

# ---- metrics/saliency.py ------------------------------------------------------------

SAL_CATS = ("Color", "Shape", "Size")


def test_encode_sets_counts_every_extra_label_and_keeps_int64():
    # two labels outside the categories -> extra = 2 (not 1); dtype int64 as documented
    P, T, extra, null = sm.encode_sets([{"Color", "Pattern", "Stripe"}, None], [{"Color"}, {"Size"}], SAL_CATS)
    assert extra.tolist() == [2, 0] and extra.dtype == np.int64
    assert null.tolist() == [False, True]
    assert P.tolist() == [[True, False, False], [False, False, False]]
    assert T.tolist() == [[True, False, False], [False, False, True]]


def test_sample_f1_counts_extra_labels_in_the_denominator():
    # P = {Color, Pattern, Stripe}, T = {Color}: 2*|P&T| / (|P| + |T|) = 2*1 / (3 + 1) = 0.5
    s = sm.score_multilabel([{"Color", "Pattern", "Stripe"}], [{"Color"}], SAL_CATS, n_boot=0)
    assert s.sample_f1 == pytest.approx(0.5)


@pytest.mark.parametrize("cats", [(), ("Color", "Color")])
def test_encode_sets_rejects_empty_or_duplicate_categories(cats):
    # either condition alone is an error (the rule is "or")
    with pytest.raises(ValueError, match=r"^categories must be non-empty and unique, got "):
        sm.encode_sets([{"Color"}], [{"Color"}], cats)


def test_encode_sets_names_the_offending_position():
    with pytest.raises(ValueError, match=r"^truths\[1\] must be a collection of labels, not the string 'Size'$"):
        sm.encode_sets([{"Color"}, {"Size"}], [{"Color"}, "Size"], SAL_CATS)
    with pytest.raises(ValueError, match=r"^preds\[1\] must be a collection of labels, not the string 'Size'$"):
        sm.encode_sets([{"Color"}, "Size"], [{"Color"}, {"Size"}], SAL_CATS)


def test_per_stimulus_empty_row_scores_zero_sample_f1():
    # a row with nothing predicted and nothing true: denominator 0 -> sample F1 0 (not 1)
    P = np.zeros((1, 3), bool)
    *_, sf1 = sm._per_stimulus(P, P.copy(), np.zeros(1, np.int64))
    assert sf1.tolist() == [0.0]


def test_mean_f1_defined_is_nan_when_no_category_is_defined():
    # no defined F1 -> k = 0 -> NaN (not 0/1 = 0)
    assert math.isnan(float(sm._mean_f1(np.array([np.nan, np.nan]))))
    assert float(sm._mean_f1(np.array([np.nan, 0.5]))) == pytest.approx(0.5)


def test_undefined_f1_zero_reports_zero_and_keeps_every_draw():
    # Size never true nor predicted: F1 undefined -> reported 0 under "zero"; every draw also 0, none dropped
    preds, truths = [{"Color"}, {"Shape"}, {"Color"}], [{"Color"}, {"Shape"}, {"Shape"}]
    s = sm.score_multilabel(preds, truths, SAL_CATS, n_boot=50, seed=3, undefined_f1="zero")
    assert s.category_f1["Size"] == 0.0
    r = s.ci["f1:Size"]
    assert (r.low, r.high, r.n_dropped) == (0.0, 0.0, 0)
    # the NaN convention drops all 50 draws
    assert s.ci["mean_f1_defined"].n_dropped == 0
    n = sm.score_multilabel(preds, truths, SAL_CATS, n_boot=50, seed=3)
    assert math.isnan(n.category_f1["Size"]) and n.ci["f1:Size"].n_dropped == 50


def test_ci_level_bounds_are_open():
    # ci_level must lie in the open interval (0, 1): both ends are errors
    for bad in (0, 1):
        with pytest.raises(ValueError, match=rf"^ci_level must lie in \(0, 1\), got {bad}$"):
            sm.score_multilabel([{"Color"}], [{"Color"}], SAL_CATS, ci_level=bad)


def test_defaults_and_settings_are_recorded():
    s = sm.score_multilabel([{"Color"}, {"Size"}], [{"Color"}, {"Shape"}], SAL_CATS)
    # documented defaults: n_boot 1000, seed 0, ci_level 0.95, null "exclude"
    assert (s.n_boot, s.seed, s.ci_level, s.null_convention, s.categories) == (1000, 0, 0.95, "exclude", SAL_CATS)
    assert s.ci["exact_match"].seed == 0 and s.ci["exact_match"].n_draws == 1000
    t = sm.score_multilabel([{"Color"}, {"Size"}], [{"Color"}, {"Shape"}], SAL_CATS, null="empty", n_boot=20,
                            seed=7, ci_level=0.5)
    assert (t.n_boot, t.seed, t.ci_level, t.null_convention) == (20, 7, 0.5, "empty")
    assert {r.seed for r in t.ci.values()} == {7}


def test_no_scorable_trials_result_fields():
    s = sm.score_multilabel([None], [{"Color"}], SAL_CATS, null="exclude", n_boot=5, seed=2, ci_level=0.9)
    assert s.categories == SAL_CATS and s.null_convention == "exclude"
    assert (s.n, s.n_null, s.n_boot, s.seed, s.ci_level) == (0, 1, 5, 2, 0.9)
    assert all(math.isnan(x) for x in (s.exact_match, s.mean_f1, s.sample_f1, s.mean_f1_defined))
    assert list(s.category_f1) == list(SAL_CATS) and all(math.isnan(v) for v in s.category_f1.values())
    assert s.category_counts == {c: (0, 0, 0) for c in SAL_CATS}
    assert s.notes == ("no scorable trials (all responses null or no trials)",)
    r = s.ci["f1:Size"]
    assert math.isnan(r.estimate) and math.isnan(r.low) and math.isnan(r.high)
    assert (r.n_draws, r.n_dropped, r.seed) == (5, 5, 2)


def test_no_interval_without_draws_has_nan_bounds_and_counts():
    # n_boot = 0: estimate kept, low/high NaN, n_draws = n_dropped = 0; no note
    s = sm.score_multilabel([{"Color"}, {"Size"}], [{"Color"}, {"Size"}], SAL_CATS, n_boot=0, seed=4)
    r = s.ci["exact_match"]
    assert r.estimate == 1.0 and math.isnan(r.low) and math.isnan(r.high)
    assert (r.n_draws, r.n_dropped, r.seed) == (0, 0, 4)
    assert s.notes == ("F1 of Shape undefined: category neither true nor predicted in these trials "
                       "(counted as 0 in mean_f1, skipped in mean_f1_defined)",)


@pytest.mark.parametrize("n_boot,expect_note", [(0, False), (1, True), (2, True)])
def test_single_trial_note_only_when_draws_were_asked(n_boot, expect_note):
    # n = 1 < 2: no interval; the note is written iff n_boot > 0 (boundary n_boot = 0, 1)
    s = sm.score_multilabel([{"Color"}], [{"Color"}], ("Color",), n_boot=n_boot)
    assert s.notes == ((f"no bootstrap interval: only n=1 scorable trial(s)",) if expect_note else ())


@pytest.mark.parametrize("n_boot", [1, 2])
def test_two_trials_and_one_draw_give_an_interval(n_boot):
    # boundaries n = 2 and n_boot = 1: an interval is computed (finite low/high, no note)
    s = sm.score_multilabel([{"Color"}, {"Color"}], [{"Color"}, {"Color"}], ("Color",), n_boot=n_boot, seed=0)
    r = s.ci["exact_match"]
    assert (r.low, r.high, r.n_draws, r.n_dropped) == (1.0, 1.0, n_boot, 0)
    assert s.notes == ()


def test_sample_f1_interval_is_per_draw():
    # per-stimulus sample F1 is 1 or 0; 200 draws over 4 stimuli: the 95 % interval must spread (low < high)
    s = sm.score_multilabel([{"Color"}, {"Size"}, {"Color"}, {"Size"}], [{"Color"}] * 4, ("Color", "Size"),
                            n_boot=200, seed=1)
    r = s.ci["sample_f1"]
    assert r.estimate == 0.5 and r.low < 0.5 < r.high


def test_score_both_conventions_passes_settings_and_fixes_null():
    both = sm.score_both_conventions([{"Color"}, None], [{"Color"}, {"Size"}], SAL_CATS, n_boot=0, seed=9)
    ex, em = both["nulls_excluded"], both["nulls_as_empty"]
    assert (ex.null_convention, ex.n, ex.n_boot, ex.seed) == ("exclude", 1, 0, 9)
    assert (em.null_convention, em.n, em.n_boot, em.seed) == ("empty", 2, 0, 9)
    with pytest.raises(ValueError, match=r"^score_both_conventions sets `null` itself; do not pass it$"):
        sm.score_both_conventions([{"Color"}], [{"Color"}], SAL_CATS, null="empty")


def test_score_by_group_length_message():
    with pytest.raises(ValueError, match=r"^groups and preds differ in length: 1 != 2$"):
        sm.score_by_group([{"Color"}, {"Size"}], [{"Color"}, {"Size"}], ["a"], SAL_CATS)


# ---- stimuli/search_arrays.py: difficulty bins ----------------------------------------

from perceptbench.stimuli.search_arrays import difficulty_of, folded_angle_difference


@pytest.mark.parametrize("feature,value,expected", [
    # color: hard d <= 50 < medium <= 100 < easy (value exactly at each edge, one step either side)
    ("color", 0.0, "hard"), ("color", 49.999, "hard"), ("color", 50.0, "hard"), ("color", 50.001, "medium"),
    ("color", 99.999, "medium"), ("color", 100.0, "medium"), ("color", 100.001, "easy"), ("color", 441.7, "easy"),
    # orientation: hard [0, 30], medium (30, 60], easy (60, 90], above 90 no bin
    ("orientation", 0.0, "hard"), ("orientation", 30.0, "hard"), ("orientation", 30.001, "medium"),
    ("orientation", 60.0, "medium"), ("orientation", 60.001, "easy"), ("orientation", 90.0, "easy"),
    ("orientation", 90.001, None),
    # size: 0 no bin; easy < 0.3 <= medium < 0.5 <= hard <= 1.5 < medium <= 3.0 < easy
    ("size", 0.0, None), ("size", 0.001, "easy"), ("size", 0.299, "easy"), ("size", 0.3, "medium"),
    ("size", 0.499, "medium"), ("size", 0.5, "hard"), ("size", 1.0, "hard"), ("size", 1.5, "hard"),
    ("size", 1.501, "medium"), ("size", 3.0, "medium"), ("size", 3.001, "easy"), ("size", 10.0, "easy"),
])
def test_difficulty_of_bin_edges(feature, value, expected):
    assert difficulty_of(feature, value) == expected


@pytest.mark.parametrize("value", [-0.001, math.inf, math.nan])
def test_difficulty_of_rejects_negative_or_non_finite(value):
    with pytest.raises(ValueError, match=r"^difference must be finite and >= 0, got .+ for 'size'$"):
        difficulty_of("size", value)


def test_difficulty_of_rejects_unknown_feature():
    with pytest.raises(ValueError, match=r"^unknown feature 'shape'; expected one of \('color', 'orientation', 'size'\)$"):
        difficulty_of("shape", 1.0)


@pytest.mark.parametrize("a,b,period,expected", [
    (10.0, 350.0, 360.0, 20.0),   # (10 - 350) mod 360 = 20; min(20, 340) = 20
    (350.0, 10.0, 360.0, 20.0),   # (350 - 10) mod 360 = 340; min(340, 20) = 20
    (0.0, 100.0, 180.0, 80.0),    # -100 mod 180 = 80; min(80, 100) = 80
    (100.0, 0.0, 180.0, 80.0),    # 100 mod 180 = 100; min(100, 80) = 80
    (45.0, 0.0, 90.0, 45.0),      # 45 mod 90 = 45; min(45, 45) = 45 (largest folded value)
    (30.0, 30.0, 90.0, 0.0),      # identical orientations
    (95.0, 0.0, 90.0, 5.0),       # 95 mod 90 = 5
])
def test_folded_angle_difference_known_answers(a, b, period, expected):
    d = folded_angle_difference(a, b, period)
    assert isinstance(d, float) and d == pytest.approx(expected)


@pytest.mark.parametrize("period", [0, -90.0, None])
def test_folded_angle_difference_rejects_non_positive_period(period):
    with pytest.raises(ValueError, match=rf"^symmetry period must be > 0 degrees, got {period!r}$"):
        folded_angle_difference(10.0, 0.0, period)


# ---- metrics/topk_kl.py, vsi/samples.py, vsi/cells.py (were metrics/vsi.py) ----------

from perceptbench.metrics import topk_kl as vm_kl
from perceptbench.vsi import cells as vm_cells
from perceptbench.vsi import samples as vm

LN_HALF = math.log(0.5)


@pytest.mark.parametrize("side", ["p", "q"])
def test_support_distributions_names_the_bad_side(side):
    good, bad = (["a"], [0.0]), ([], [])
    args = (*bad, *good) if side == "p" else (*good, *bad)
    with pytest.raises(ValueError, match=rf"^{side}: empty distribution$"):
        vm_kl.support_distributions(*args)


def test_complete_side_gives_missing_tokens_only_the_floor():
    # P = {a: .5} complete: b gets 0 -> floor, rest bucket .5 -> p = [.5, 1e-12, .5] / (1 + 1e-12)
    p, q, support = vm_kl.support_distributions(["a"], [LN_HALF], ["b"], [LN_HALF], p_complete=True)
    assert support == ["a", "b", "<rest>"]
    np.testing.assert_allclose(p, np.array([0.5, 1e-12, 0.5]) / (1 + 1e-12), rtol=1e-12, atol=0)
    # Q = {b: .5} truncated: a gets min(.5, .5 / (1 + 1)) = .25, rest .5 - .25 = .25 -> [.25, .5, .25]
    np.testing.assert_allclose(q, [0.25, 0.5, 0.25], rtol=1e-12, atol=0)
    # the same with q complete: q = [1e-12, .5, .5] / (1 + 1e-12)
    _, q2, _ = vm_kl.support_distributions(["a"], [LN_HALF], ["b"], [LN_HALF], q_complete=True)
    np.testing.assert_allclose(q2, np.array([1e-12, 0.5, 0.5]) / (1 + 1e-12), rtol=1e-12, atol=0)


def test_slightly_positive_logprob_is_clipped_to_probability_one():
    # lp 1e-7 (allowed rounding) -> p = 1 exactly; with .5: [1, .5, floor] normalised by 1.5 + 1e-12
    p, _, _ = vm_kl.support_distributions(["a", "b"], [1e-7, LN_HALF], ["a"], [0.0])
    np.testing.assert_allclose(p, np.array([1.0, 0.5, 1e-12]) / (1.5 + 1e-12), rtol=1e-13, atol=0)


def _kl(p, q):
    p, q = np.asarray(p, float), np.asarray(q, float)
    return float(np.sum(p * np.log(p / q)))


def test_kl_topk_passes_completeness_and_floor():
    f = 1e-12
    # p complete [.5, f, .5]/(1+f) vs q truncated [.25, .5, .25]: ~ ln 2
    exp = _kl(np.array([0.5, f, 0.5]) / (1 + f), [0.25, 0.5, 0.25])
    assert vm_kl.kl_topk(["a"], [LN_HALF], ["b"], [LN_HALF], p_complete=True) == pytest.approx(exp, rel=1e-12)
    assert exp == pytest.approx(math.log(2), rel=1e-9)
    # both truncated: p = [.5, .25, .25] vs q = [.25, .5, .25]: .5 ln 2 + .25 ln .5 = .25 ln 2
    assert vm_kl.kl_topk(["a"], [LN_HALF], ["b"], [LN_HALF]) == pytest.approx(0.25 * math.log(2), rel=1e-12)
    # q complete: q = [f, .5, .5]/(1+f): .5 ln(.5 (1+f)/f) + 2 * .25 ln(.25 (1+f)/.5)
    exp_q = _kl([0.5, 0.25, 0.25], np.array([f, 0.5, 0.5]) / (1 + f))
    assert vm_kl.kl_topk(["a"], [LN_HALF], ["b"], [LN_HALF], q_complete=True) == pytest.approx(exp_q, rel=1e-12)
    # floor 1e-6 instead of 1e-12 (q complete): q = [1e-6, .5, .5] / (1 + 1e-6)
    exp_f = _kl([0.5, 0.25, 0.25], np.array([1e-6, 0.5, 0.5]) / (1 + 1e-6))
    assert vm_kl.kl_topk(["a"], [LN_HALF], ["b"], [LN_HALF], q_complete=True, floor=1e-6) == pytest.approx(exp_f, rel=1e-12)


def test_dist_keys_prefers_token_ids():
    assert vm.dist_keys({"token_ids": [5, 7], "tokens": ["a", "b"]}) == [5, 7]
    assert vm.dist_keys({"token_ids": None, "tokens": ["a", "b"]}) == ["a", "b"]
    assert vm.dist_keys({"tokens": ("a", "b")}) == ["a", "b"]


def test_vsi_of_records_reads_each_side_completeness():
    clean = {"token_ids": None, "tokens": ["a"], "logprobs": [LN_HALF], "complete": True}
    pert = {"token_ids": None, "tokens": ["b"], "logprobs": [LN_HALF], "complete": False}
    v, changed = vm.vsi_of_records(clean, pert)
    # as test_kl_topk_passes_completeness_and_floor: clean complete -> ~ ln 2; first tokens a != b
    assert v == pytest.approx(math.log(2), rel=1e-9) and changed is True
    v2, _ = vm.vsi_of_records(dict(clean, complete=False), dict(pert, complete=True))
    exp_q = _kl([0.5, 0.25, 0.25], np.array([1e-12, 0.5, 0.5]) / (1 + 1e-12))
    assert v2 == pytest.approx(exp_q, rel=1e-12)


def test_cell_summary_known_answers():
    v = np.array([0.0, 0.01, 0.05, 1.0, 2.0])
    s = vm_cells.cell_summary(v, np.array([True, False, False, False, True]), seed=5, n_draws=40)
    # quartiles by linear interpolation over 5 values: positions 1, 2, 3 -> 0.01, 0.05, 1.0
    assert (s.n, s.q25, s.median, s.q75) == (5, 0.01, 0.05, 1.0)
    # VSI < 0.05 is strict: 0.0 and 0.01 -> 2/5 (0.05 itself is not insensitive); < 0.01 -> 1/5
    assert s.insensitive[0.05].estimate == pytest.approx(0.4)
    assert s.insensitive[0.01].estimate == pytest.approx(0.2)
    assert s.argmax_change_rate.estimate == pytest.approx(0.4)
    for r in (*s.insensitive.values(), s.argmax_change_rate):
        assert (r.n_draws, r.seed) == (40, 5)
    assert vm_cells.cell_summary(v, np.zeros(5, bool), seed=0).argmax_change_rate.n_draws == 1000


def test_cell_summary_histogram_clips_into_the_outer_bins():
    # a -1e-15 rounding residue counts in the first bin [0, 1e-4); 1e305 (past the 1e300 edge) in the last [10, inf)
    s = vm_cells.cell_summary(np.array([-1e-15, 1e305]), np.zeros(2, bool), seed=0, n_draws=10)
    assert s.hist_counts[0] == 1 and s.hist_counts[-1] == 1 and sum(s.hist_counts) == 2
    with pytest.raises(ValueError, match="^no VSI samples in this cell$"):
        vm_cells.cell_summary(np.array([]), np.array([], bool), seed=0)


# ---- metrics/retrieval.py -----------------------------------------------------------

from perceptbench.metrics import retrieval as rm
from perceptbench.metrics.bootstrap import resample_indices

RET_CATS = ("Color", "Size", "Orientation")
# image i points at category i (text rows = unit axes): top-1 hits where truth[i] holds category i
RET_TXT = np.eye(3)
RET_IMG = np.array([[1.0, 0.2, 0.1], [0.1, 1.0, 0.3], [0.3, 0.1, 1.0], [1.0, 0.5, 0.2]])
RET_TRUTHS = [{"Color"}, {"Orientation"}, {"Orientation"}, {"Size"}]  # top-1 hits: yes, no, yes, no


def test_retrieval_sentences_rejects_empty():
    with pytest.raises(ValueError, match=r"^categories must be a non-empty sequence of names, got \[\]$"):
        rm.retrieval_sentences([])


def test_analytic_chance_reads_truth_as_bool():
    # a nonzero entry is one true label: m = 1, C = 3, k = 1 -> 1 - C(2,1)/C(3,1) = 1/3
    assert rm.analytic_chance(np.array([[2, 0, 0]]), 1) == pytest.approx(1 / 3)


@pytest.mark.parametrize("truth", [np.array([True, False]), np.zeros((0, 3), bool)])
def test_analytic_chance_rejects_bad_shapes(truth):
    with pytest.raises(ValueError, match=r"^truth must be a non-empty \(n, C\) bool array, got shape "):
        rm.analytic_chance(truth, 1)


@pytest.mark.parametrize("k", [0, 4, 1.5])
def test_analytic_chance_k_outside_range(k):
    # k must be an integer in [1, C] (C = 3): 0 and 4 are one step outside, 1.5 is no integer
    with pytest.raises(ValueError, match=rf"^k must be an integer in \[1, 3\], got {k!r}$"):
        rm.analytic_chance(np.eye(3, dtype=bool), k)


def test_empirical_chance_defaults():
    r = rm.empirical_chance(np.eye(3, dtype=bool), 1)
    assert (r.n_seeds, r.dim, r.seed, r.ci_level, r.k) == (200, 64, 0, 0.95, 1)
    assert r.per_seed.shape == (200,)


def test_zero_shot_retrieval_known_answers_and_fields():
    s = rm.zero_shot_retrieval(RET_IMG, RET_TXT, RET_TRUTHS, RET_CATS, ks=(1,), n_boot=200, seed=3, ci_level=0.8)
    # top-1 categories: Color, Size, Orientation, Color -> hits [1, 0, 1, 0]
    assert s.hits[1].tolist() == [True, False, True, False] and s.hit_rate[1] == 0.5
    assert s.chance[1] == pytest.approx(1 / 3)
    assert (s.categories, s.n, s.n_boot, s.seed, s.ci_level) == (RET_CATS, 4, 200, 3, 0.8)
    # interval: percentiles 10 and 90 (= 100 (1 - 0.8) / 2 and 100 - that) of the draw means
    idx = resample_indices(4, 200, 3)
    lo, hi = np.percentile(np.array([1.0, 0, 1, 0])[idx].mean(axis=1), (10, 90))
    r = s.ci[1]
    assert (r.estimate, r.low, r.high, r.n_draws, r.n_dropped, r.seed) == (0.5, lo, hi, 200, 0, 3)
    assert lo < 0.5 < hi


def test_zero_shot_retrieval_defaults():
    s = rm.zero_shot_retrieval(RET_IMG, RET_TXT, RET_TRUTHS, RET_CATS)
    assert (s.n_boot, s.seed, s.ci_level) == (1000, 0, 0.95) and set(s.ci) == {1, 3}
    idx = resample_indices(4, 1000, 0)
    lo, hi = np.percentile(np.array([1.0, 0, 1, 0])[idx].mean(axis=1), (2.5, 97.5))
    assert (s.ci[1].low, s.ci[1].high, s.ci[1].seed) == (lo, hi, 0)


@pytest.mark.parametrize("n,n_boot", [(1, 10), (4, 0)])
def test_zero_shot_retrieval_without_interval(n, n_boot):
    # n < 2 or n_boot = 0: estimate kept, low/high NaN, n_draws = n_dropped = n_boot
    s = rm.zero_shot_retrieval(RET_IMG[:n], RET_TXT, RET_TRUTHS[:n], RET_CATS, ks=(1,), n_boot=n_boot, seed=2)
    r = s.ci[1]
    assert r.estimate == s.hit_rate[1] and math.isnan(r.low) and math.isnan(r.high)
    assert (r.n_draws, r.n_dropped, r.seed) == (n_boot, n_boot, 2)


def test_zero_shot_retrieval_two_stimuli_get_an_interval():
    # boundary n = 2: interval computed (both hit -> every draw 1.0)
    s = rm.zero_shot_retrieval(RET_IMG[:1].repeat(2, 0), RET_TXT, [{"Color"}, {"Color"}], RET_CATS, ks=(1,),
                               n_boot=5, seed=0)
    assert (s.ci[1].low, s.ci[1].high, s.ci[1].n_dropped) == (1.0, 1.0, 0)


def test_zero_shot_retrieval_input_messages():
    with pytest.raises(ValueError, match=r"^image_emb must be \(n=4, d\), got \(3, 3\)$"):
        rm.zero_shot_retrieval(RET_IMG[:3], RET_TXT, RET_TRUTHS, RET_CATS)
    with pytest.raises(ValueError, match=r"^text_emb must be \(C=3, d\), got \(3,\)$"):
        rm.zero_shot_retrieval(RET_IMG, np.ones(3), RET_TRUTHS, RET_CATS)
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match=rf"^n_boot must be a non-negative integer, got {bad!r}$"):
            rm.zero_shot_retrieval(RET_IMG, RET_TXT, RET_TRUTHS, RET_CATS, n_boot=bad)


# ---- readouts/encoder.py ------------------------------------------------------------

import json

from perceptbench.readouts.encoder import (
    ClassProbeReadout, PrototypeReadout, RetrievalReadout, odd_one_out, retrieval_readout)

# 56 cosines with many exact ties, a pattern on which numpy's default (unstable) sort
# does not return tied entries in index order; digits d -> cosine -d / 10
TIE_PATTERN = "11000000212112211120220121022200201001110000211012112221"


def test_prototype_predict_top3_is_stable_descending_and_rounded():
    classes = tuple(f"c{i:02d}" for i in range(len(TIE_PATTERN)))
    ro = PrototypeReadout(classes).fit(np.eye(len(classes), dtype=np.float32), list(classes))
    assert ro.prototypes.dtype == np.float32
    q = np.array([[-int(d) / 10 for d in TIE_PATTERN]], dtype=np.float32)
    labels, raws = ro.predict(q)
    # best cosine 0.0 at c02, c03, c04, ... : first max -> c02; top 3 in class order c02, c03, c04
    assert labels == ["c02"]
    assert list(json.loads(raws[0])["cosine_top3"]) == ["c02", "c03", "c04"]
    # descending order, exactly three entries, 6 decimals: cosines .9, .8, .1234567, .1 -> top 3
    ro4 = PrototypeReadout(("a", "b", "c", "d")).fit(np.eye(4, dtype=np.float32), ["a", "b", "c", "d"])
    _, raws4 = ro4.predict(np.array([[0.1, 0.8, 0.1234567, 0.9]], dtype=np.float32))
    top = json.loads(raws4[0])["cosine_top3"]
    assert list(top) == ["d", "b", "c"] and top["c"] == 0.123457
    assert top["d"] == round(float(np.float32(0.9)), 6)


def test_odd_one_out_raw_cosines_have_six_decimals():
    # cos12 = 0.1234567, cos13 = 0.7654321, cos23 = 0.1234567 * 0.7654321 = 0.0944980 -> odd = 2 (outside 1-3)
    e = np.array([[1.0, 0.0, 0.0], [0.1234567, 0.0, 1.0], [0.7654321, 1.0, 0.0]])
    pos, raw = odd_one_out(e)
    assert pos == 2
    assert json.loads(raw) == {"cos12": 0.123457, "cos13": 0.765432, "cos23": 0.094498}
    # cos23 above six decimals as well: cos23 = 0.3333333 -> 0.333333
    e2 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.3333333]])
    assert json.loads(odd_one_out(e2)[1]) == {"cos12": 0.0, "cos13": 0.0, "cos23": 0.333333}


def test_retrieval_readout_rounds_to_six_decimals_and_class_wraps_it():
    txt = np.eye(2, dtype=np.float32)
    img = np.array([[0.1234567, 0.7654321]])
    out, raws = retrieval_readout(img, txt, ("Color", "Size"))
    # top-1: Size (0.765 > 0.123); cosines rounded to 6 decimals
    assert out == [["Size"]]
    assert json.loads(raws[0]) == {"cosine": {"Color": 0.123457, "Size": 0.765432}}
    assert RetrievalReadout(txt, ("Color", "Size")).predict(img) == (out, raws)


def _probe_data():
    # two well-separated 1-D clusters: class 0 around -2, class 1 around +2
    x = np.array([[-2.5], [-2.0], [-1.5], [1.5], [2.0], [2.5]], dtype=np.float32)
    return x, [0, 0, 0, 1, 1, 1]


def test_class_probe_known_answers_and_python_labels():
    from sklearn.linear_model import LogisticRegression

    x, y = _probe_data()
    ro = ClassProbeReadout().fit(x, y)
    labels, raws = ro.predict(np.array([[-3.0], [3.0]], dtype=np.float32))
    # -3 lies in class 0's cluster, +3 in class 1's; labels come back as Python ints
    assert labels == [0, 1] and all(type(v) is int for v in labels)
    # the documented spec (C=1.0, lbfgs): probabilities equal a LogisticRegression(C=1.0) fit, 6 decimals
    ref = LogisticRegression(C=1.0).fit(x.astype(np.float64), y).predict_proba(np.array([[-3.0], [3.0]]))
    for raw, row in zip(raws, ref):
        assert json.loads(raw) == {"probability": {"0": round(float(row[0]), 6), "1": round(float(row[1]), 6)}}


def test_class_probe_object_labels_and_two_class_boundary():
    x, _ = _probe_data()
    # labels stored as Python objects (no .item()): returned as they are
    ro = ClassProbeReadout().fit(x, np.array(["a", "a", "a", "b", "b", "b"], dtype=object))
    assert ro.predict(np.array([[3.0]], dtype=np.float32))[0] == ["b"]
    # exactly one class -> error; two classes (boundary) fit
    with pytest.raises(ValueError, match="^class probe needs probe-train stimuli of at least two classes$"):
        ClassProbeReadout().fit(x[:3], [0, 0, 0])


from perceptbench.records import TrialRecord, make_trial_id


def _vsi_rec(cond, sample, tokens, probs, *, skipped=None, drop=None, model="m", family="vlm", **over):
    meta = {"sample_id": sample, "image_id": f"img-{sample}", "benchmark": "bm.x", "condition": cond,
            "sigma_px": 0 if cond == "clean" else 12, "dilate_px": 4,
            "region_source": "exact" if cond == "clean" else "grounding", "region_bbox": None, "fallback": False,
            "answer_prefix": "", "top_k": 2, "token_ids": None, "tokens": tokens,
            "logprobs": [math.log(p) for p in probs], "complete": False, "distribution_source": "api_top_logprobs",
            "image_sha256": "h", "max_prob": probs[0] if cond == "clean" else None,
            "verbal_conf": 70 if cond == "clean" else None, "verbal_raw": None, **over}
    if drop:
        del meta[drop]
    run_meta = {"model_version": "v", "seed": 0, "run_id": "r", "vsi": meta}
    if skipped:
        run_meta["skipped"] = skipped
    clean = cond == "clean"
    resp = "yes" if clean else None
    sid = f"{sample}~{cond}"
    return TrialRecord(
        trial_id=make_trial_id("vsi.t", sid, model, 0), task_id="vsi.t", principle="saliency", track="syn",
        stimulus_id=sid, manipulated_value=cond, model=model, model_family=family, readout="vlm_vsi",
        owner="perceptbench", response_space="choice", response=resp, ground_truth="yes" if clean else None,
        correct=True if clean else None, human_ref_id=None, raw_output=resp, rep=0, n_reps=1, prompt_id=None,
        prompt_hash=None, run_meta=run_meta)


def test_vsi_samples_fields_and_skips():
    recs = [
        _vsi_rec("clean", "s9", ["yes", "no"], [0.8, 0.2], skipped="no logprobs"),  # skipped: ignored, not the end
        _vsi_rec("region_blur", "s8", ["yes", "no"], [0.5, 0.5]),  # no clean record: ignored, not the end
        _vsi_rec("whole_blur", "s1", ["no"], [0.9], family="api", skipped="no logprobs"),  # skipped: no sample
        _vsi_rec("clean", "s1", ["yes", "no"], [0.75, 0.25], family="api"),
        _vsi_rec("region_blur", "s1", ["no", "yes"], [0.75, 0.25], family="api"),
    ]
    (s,) = vm.vsi_samples(recs)
    # p = [.75, .25, floor], q = [.25, .75, floor] (rest 0): KL = .75 ln 3 + .25 ln(1/3) = .5 ln 3
    assert s.vsi == pytest.approx(0.5 * math.log(3), rel=1e-9) and s.argmax_changed is True
    assert (s.task_id, s.benchmark, s.model, s.model_family, s.sample_id, s.image_id) == (
        "vsi.t", "bm.x", "m", "api", "s1", "img-s1")
    assert (s.perturbation, s.sigma, s.correct, s.max_prob, s.verbal_conf, s.region_source) == (
        "region", 12.0, True, 0.75, 70.0, "grounding")
    assert isinstance(s.sigma, float) and isinstance(s.verbal_conf, float)


def test_vsi_samples_error_messages():
    bad = _vsi_rec("clean", "s1", ["a"], [1.0], drop="verbal_raw")
    with pytest.raises(ValueError, match=r"^record vsi\.t\|s1~clean\|m\|rep0: run_meta\.vsi lacks \['verbal_raw'\]$"):
        vm.vsi_samples([bad])
    odd = _vsi_rec("fog", "s1", ["a"], [1.0])
    with pytest.raises(ValueError, match=r"^record vsi\.t\|s1~fog\|m\|rep0: unknown VSI condition 'fog'$"):
        vm.vsi_samples([odd])


def test_check_side_logprob_bounds_and_missing_values():
    # 1e-6 (rounding) is the largest accepted log-probability; one step above is an error
    assert vm_kl.kl_topk(["a"], [1e-6], ["a"], [0.0]) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match=r"^p: log-probabilities must be finite and <= 0$"):
        vm_kl.kl_topk(["a"], [1.1e-6], ["a"], [0.0])
    # a missing log-probability (JSON null) is the same clear error, not a TypeError
    with pytest.raises(ValueError, match=r"^q: log-probabilities must be finite and <= 0$"):
        vm_kl.kl_topk(["a"], [0.0], ["a"], [None])


# ---- records.py ---------------------------------------------------------------------

import os

from perceptbench.records import RecordError, RecordStore, check_file, has_torn_tail, read_records, validate_file


def _trial(stim, seed=0, task="t"):
    return TrialRecord(
        trial_id=make_trial_id(task, stim, "m", 0), task_id=task, principle="closure", track="nat",
        stimulus_id=stim, manipulated_value=None, model="m", model_family="encoder", readout="prototype_cosine",
        owner="perceptbench", response_space="choice", response="a", ground_truth="a", correct=True,
        human_ref_id=None, raw_output=None, rep=0, n_reps=1, prompt_id=None, prompt_hash=None,
        run_meta={"model_version": "v", "seed": seed, "run_id": "r"})


def test_check_file_lists_every_problem_in_order(tmp_path):
    p = tmp_path / "r.jsonl"
    a, b, c = (_trial(s, seed=k).to_json_line() for k, s in enumerate(("a", "b", "c")))
    # lines: 1 a | 2 blank | 3 bad JSON | 4 duplicate of a | 5 invalid UTF-8 | 6 b (seed 1) | 7 c (seed 2) | 8 torn
    p.write_bytes("\n".join([a, "", "{oops", a]).encode() + b"\n\xff\xfe\n" + f"{b}\n{c}\n".encode() + b'{"trial')
    n_ok, errors, total = check_file(p)
    assert n_ok == 3 and total == 5
    assert errors[0].startswith(f"{p}:3: not valid JSON")
    assert errors[1] == f"{p}:4: duplicate trial_id 't|a|m|rep0' (first at line 1)"
    assert errors[2].startswith(f"{p}:5: not valid JSON")
    assert errors[3] == f"{p}:8: incomplete final line (torn write)"
    assert errors[4] == f"{p}: task t mixes run_meta.seed values [0, 1, 2]"
    # max_errors keeps the first messages; the total still counts all
    assert check_file(p, max_errors=2) == (3, errors[:2], 5)
    assert validate_file(p, 1) == (3, errors[:1])


def test_check_file_two_seeds_and_empty_file(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text(_trial("a", seed=0).to_json_line() + "\n" + _trial("b", seed=1).to_json_line() + "\n")
    # two distinct seeds are already a mix (boundary of "more than one")
    assert check_file(p) == (2, [f"{p}: task t mixes run_meta.seed values [0, 1]"], 1)
    p.write_text(_trial("a").to_json_line() + "\n")
    # one valid record, no problem -> no "empty file" message
    assert check_file(p) == (1, [], 0)
    p.write_text("")
    assert check_file(p) == (0, [f"{p}: holds no trial records (empty file)"], 1)
    p.write_text("{bad\n")
    # only a bad line: that problem, not also "empty file"
    n_ok, errors, total = check_file(p)
    assert (n_ok, total) == (0, 1) and errors[0].startswith(f"{p}:1: not valid JSON")


def test_has_torn_tail(tmp_path):
    p = tmp_path / "r.jsonl"
    for data, torn in ((b"", False), (b"x\n", False), (b"x", True), (b"x\ny", True)):
        p.write_bytes(data)
        assert has_torn_tail(p) is torn


def test_record_store_file_mode_parents_and_repair(tmp_path):
    p = tmp_path / "a" / "b" / "r.jsonl"  # parent folders are created
    umask = os.umask(0)
    os.umask(umask)
    with RecordStore(p) as s:
        assert s.truncated_bytes == 0  # a new, empty file
    assert os.stat(p).st_mode & 0o777 == 0o644 & ~umask
    p.write_text(_trial("a").to_json_line() + "\n")
    with RecordStore(p) as s:
        assert s.truncated_bytes == 0 and s.done == {"t|a|m|rep0"}  # healthy file: nothing cut
    p.write_bytes(b"{")
    with RecordStore(p) as s:  # a one-byte torn line is cut away
        assert s.truncated_bytes == 1
    assert p.read_bytes() == b""


def test_record_store_append_validates_dicts_and_iterates(tmp_path):
    p = tmp_path / "r.jsonl"
    a = _trial("a")
    s = RecordStore(p)
    assert s.append([a.model_dump(mode="json")]) == 1  # a dict is validated into a record
    assert s.append([a]) == 0  # already stored: nothing written
    assert list(s) == [a]
    s.close()
    s.close()  # a second close is a no-op and touches no other descriptor
    os.fstat(1)
    os.fstat(2)


# ---- models/response_cache.py -------------------------------------------------------

from PIL import Image

from perceptbench.models.base import VLMRequest
from perceptbench.models.response_cache import CachedVLM, ResponseCache, StaleCacheError


class _ScriptedVLM:
    """Answers ``answer(prompt)``; records every generate call's (prompts, batch_size)."""

    name = "scripted"
    family = "api"
    supports_multi_image = False

    def __init__(self, answer=lambda p: f"ans:{p}", verify=False):
        self.model_version = "scripted@1"
        self.generation_settings = {"temperature": 0}
        self.answer = answer
        self.verify_cache_hits = verify
        self.batches: list[tuple[list[str], int]] = []

    def generate(self, requests, batch_size=8):
        self.batches.append(([r.prompt for r in requests], batch_size))
        out = self.answer(requests[0].prompt) if len(requests) == 1 else None
        return out if isinstance(out, list) else [self.answer(r.prompt) for r in requests]

    def next_token_distribution(self, image, prompt, top_k=None):
        return ("dist", image, prompt, top_k)


def _req(i):
    return VLMRequest(images=(Image.new("RGB", (4, 4), (i, 0, 0)),), prompt=f"p{i}")


def test_cache_repr_mode_check_and_passthrough(tmp_path):
    cache = ResponseCache(tmp_path)
    assert repr(cache) == f"ResponseCache({str(tmp_path)!r})"
    with pytest.raises(ValueError, match=r"^cache mode 'x' not in \('use', 'refresh', 'off'\)$"):
        CachedVLM(_ScriptedVLM(), cache, mode="x")
    c = CachedVLM(_ScriptedVLM(), cache)
    assert (c.calls, c.hits, c.verified) == (0, 0, 0)
    from perceptbench.models.base import FirstTokenDistribution

    assert isinstance(c, FirstTokenDistribution)  # declared by the inner model, so by the wrapper


@pytest.mark.parametrize("chunk_size", [0, 1])
def test_chunk_size_floor_is_one(tmp_path, chunk_size):
    # chunk_size 0 or 1 -> one request per inner call; 3 misses -> 3 calls, default batch size 8 passed on
    inner = _ScriptedVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path), chunk_size=chunk_size)
    assert c.generate([_req(1), _req(2), _req(3)]) == ["ans:p1", "ans:p2", "ans:p3"]
    assert inner.batches == [(["p1"], 8), (["p2"], 8), (["p3"], 8)]


def test_key_for_request_uses_given_hashes(tmp_path):
    c = CachedVLM(_ScriptedVLM(), ResponseCache(tmp_path))
    r = _req(1)
    given = ["ab" * 32]
    assert c.key_for_request(r, given) == c.cache.key_for("scripted@1", "p1", given, c.request_settings(r))
    assert c.key_for_request(r, given) != c.key_for_request(r)
    with pytest.raises(ValueError, match="^one sha256 per attached image is required$"):
        c.key_for_request(r, [])


def test_verify_first_hit_once(tmp_path):
    CachedVLM(_ScriptedVLM(), ResponseCache(tmp_path)).generate([_req(1), _req(2)])
    inner = _ScriptedVLM(verify=True)
    c = CachedVLM(inner, ResponseCache(tmp_path))
    # both answers from the cache; the first hit (p1) is re-asked live once, alone, batch size 1
    assert c.generate([_req(1), _req(2)]) == ["ans:p1", "ans:p2"]
    assert (c.hits, c.calls, c.verified) == (2, 1, 1) and inner.batches == [(["p1"], 1)]
    c.generate([_req(2)])
    assert (c.hits, c.calls, c.verified) == (3, 1, 1)  # verified already: no second live call


LONG = "x" * 45


@pytest.mark.parametrize("live,now", [
    (lambda p: "y" * 45, "y" * 40),   # a different answer
    (lambda p: [], ""),               # no answer at all
    (lambda p: [LONG, LONG], LONG[:40]),  # two answers for one request
])
def test_verify_mismatch_raises_stale(tmp_path, live, now):
    CachedVLM(_ScriptedVLM(answer=lambda p: LONG), ResponseCache(tmp_path)).generate([_req(1)])
    c = CachedVLM(_ScriptedVLM(answer=live, verify=True), ResponseCache(tmp_path))
    msg = (f"scripted: a cached answer differs from what scripted@1 answers now (cached {LONG[:40]!r}, "
           f"now {now!r}): the model behind this name changed (or it is not deterministic); rerun with "
           "--refresh-cache, or pin the version (URL#MODEL@VERSION)")
    with pytest.raises(StaleCacheError) as e:
        c.generate([_req(1)])
    assert str(e.value) == msg


from perceptbench.readouts.encoder import LinearProbeReadout, RidgeCountReadout

RIDGE_X = np.array([[-1.74, -1.34, -1.36], [-0.35, -2.31, -0.19], [-0.96, 0.89, 0.96], [1.39, 0.77, -0.05],
                    [0.86, 1.51, -0.65], [0.61, -0.04, 1.44], [-0.84, -0.3, 0.36], [0.26, -1.64, 0.36],
                    [-0.12, -0.24, -0.16], [0.22, -1.82, 1.55], [-0.86, -2.24, -0.08], [1.46, -0.52, 1.55]])
RIDGE_Y = [6, 11, -6, 5, 6, 0, 1, 9, 8, -1, 6, 1]


def test_ridge_alpha_is_chosen_by_five_fold_cv():
    from sklearn.linear_model import Ridge

    alphas = tuple(np.logspace(-3, 3, 13))
    # 5 contiguous folds (sizes 3,3,2,2,2), mean R^2 on the held-out fold, best alpha (first on ties)
    folds = np.array_split(np.arange(12), 5)
    y = np.asarray(RIDGE_Y, float)
    means = []
    for a in alphas:
        r2 = []
        for f in folds:
            tr = np.setdiff1d(np.arange(12), f)
            r2.append(Ridge(alpha=a).fit(RIDGE_X[tr], y[tr]).score(RIDGE_X[f], y[f]))
        means.append(np.mean(r2))
    best = alphas[int(np.argmax(means))]
    ro = RidgeCountReadout(-5, 10).fit(RIDGE_X.astype(np.float32), RIDGE_Y)
    counts, raws = ro.predict(RIDGE_X[:2].astype(np.float32))
    raw = json.loads(raws[0])
    assert raw["alpha"] == pytest.approx(best, rel=1e-12) and list(raw) == ["ridge", "alpha"]
    # on these data leave-one-out (cv=None) and 6-fold CV pick other alphas, so the fold count matters
    assert best == pytest.approx(1.0)
    pred = ro.model.predict(RIDGE_X[:2].astype(np.float32).astype(np.float64))
    assert raw["ridge"] == round(float(pred[0]), 6) and raw["ridge"] != round(float(pred[0]), 7)
    assert counts == [int(np.clip(np.rint(p), -5, 10)) for p in pred]


class _FixedProba:
    """A fitted-model stand-in whose predict_proba returns fixed rows (to test the selection rule)."""

    def __init__(self, rows):
        self.rows = np.asarray(rows, float)

    def predict_proba(self, x):
        return self.rows[: len(x)]


@pytest.mark.parametrize("row,expected", [
    ([0.5, 0.7, 0.1], ["A", "B"]),     # exactly 0.5 is selected (threshold is >=)
    ([0.4999999, 0.2, 0.1], ["A"]),    # nothing >= 0.5 -> the most probable label alone
    ([0.2, 0.45, 0.3], ["B"]),         # fallback picks the argmax, not the first class
    ([0.9, 0.2, 0.6], ["A", "C"]),     # every label >= 0.5, sorted
])
def test_linear_probe_multilabel_selection_rule(row, expected):
    ro = LinearProbeReadout(model=_FixedProba([row]), classes=("A", "B", "C"), multilabel=True)
    out, raws = ro.predict(np.zeros((1, 2), np.float32))
    assert out == [expected]
    assert json.loads(raws[0]) == {"probability": {c: round(q, 6) for c, q in zip("ABC", row)}}


def test_linear_probe_raw_probabilities_six_decimals_and_single_class_error():
    ro = LinearProbeReadout(model=_FixedProba([[0.1234567, 0.8765433]]), classes=("A", "B"), multilabel=False)
    out, raws = ro.predict(np.zeros((1, 2), np.float32))
    assert out == [["B"]] and raws[0] == '{"probability": {"A": 0.123457, "B": 0.876543}}'
    with pytest.raises(ValueError, match="^linear probe needs probe-train stimuli of at least two classes$"):
        LinearProbeReadout().fit(np.zeros((2, 2), np.float32), [["A"], ["A"]])


H20 = [1, 0, 1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 0]


def test_zero_shot_retrieval_percentile_level():
    # every image points at Color; truth Color where H20 is 1, else Size -> top-1 hits = H20
    img = np.tile([1.0, 0.1, 0.2], (20, 1))
    truths = [{"Color"} if h else {"Size"} for h in H20]
    s = rm.zero_shot_retrieval(img, RET_TXT, truths, RET_CATS, ks=(1,), n_boot=37, seed=0, ci_level=0.8)
    # 80 % interval = percentiles 10 and 90 of the 37 draw means (interpolated: 0.33 and 0.67 here)
    m = np.asarray(H20, float)[resample_indices(20, 37, 0)].mean(axis=1)
    assert (s.ci[1].low, s.ci[1].high) == tuple(np.percentile(m, (10, 90)))
    assert (s.ci[1].low, s.ci[1].high) == pytest.approx((0.33, 0.67))


def test_cosine_scores_known_answers_rows_and_stacks():
    # |(3, 4)| = 5: cos with (1, 0) = .6, with (0, 2) = .8; (1, 0) -> 1 and 0; per row, per text row
    cs = rm.cosine_scores(np.array([[3.0, 4.0], [1.0, 0.0]]), np.array([[1.0, 0.0], [0.0, 2.0], [-5.0, 0.0]]))
    np.testing.assert_allclose(cs, [[0.6, 0.8, -0.6], [1.0, 0.0, -1.0]], atol=1e-15)
    # stacked (2, 3, 4) x (2, 5, 4) -> (2, 3, 5), each slice as its own 2-D product
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 5, 4))
    st = rm.cosine_scores(a, b)
    assert st.shape == (2, 3, 5)
    for j in range(2):
        np.testing.assert_allclose(st[j], rm.cosine_scores(a[j], b[j]), rtol=1e-12)
    with pytest.raises(ValueError, match=r"^embedding dimensions differ: images \(1, 2\) vs texts \(1, 3\)$"):
        rm.cosine_scores(np.ones((1, 2)), np.ones((1, 3)))
    for img, txt in ((np.zeros((1, 2)), np.ones((1, 2))), (np.ones((1, 2)), np.zeros((1, 2)))):
        with pytest.raises(ValueError, match="^an embedding row has zero norm; cosine similarity undefined$"):
            rm.cosine_scores(img, txt)


def test_topk_hits_k_range_stacks_and_stable_ties():
    # one stimulus, three categories: k = 3 = C is allowed even though n = 1 < C
    assert rm.topk_hits(np.array([[0.1, 0.9, 0.5]]), np.array([[True, False, False]]), 3).tolist() == [True]
    # stacked scores (2, 1, 3) over one truth row; draw 0 ranks Color first, draw 1 Size first
    s = np.array([[[0.9, 0.1, 0.0]], [[0.1, 0.9, 0.0]]])
    t = np.array([[True, False, False]])
    assert rm.topk_hits(s, t, 1).tolist() == [[True], [False]]
    assert rm.topk_hits(s, t[None], 1).tolist() == [[True], [False]]  # truth with a leading axis too
    assert rm.topk_hits(s, t, 3).tolist() == [[True], [True]]  # k = C with n = 1 < C
    # 56 tied-heavy cosines: the stable order puts category 2 (first of the maxima) on top
    row = np.array([[-int(d) / 10 for d in TIE_PATTERN]])
    truth = np.zeros((1, len(TIE_PATTERN)), bool)
    truth[0, 2] = True
    assert rm.topk_hits(row, truth, 1).tolist() == [True]
    with pytest.raises(ValueError, match=r"^truth shape \(1, 2\) does not match scores \(1, 3\)$"):
        rm.topk_hits(np.zeros((1, 3)), np.zeros((1, 2), bool), 1)


def test_empirical_chance_recomputed_by_hand():
    from scipy.stats import norm

    from perceptbench.seeding import rng_for

    t = np.array([[True, False, False], [False, True, True]])
    r = rm.empirical_chance(t, 1, n_seeds=3, dim=1, seed=4, ci_level=0.9)
    # seed s: image (2, 1) and text (3, 1) Gaussian draws from rng_for(4, "retrieval.empirical_chance", s)
    exp = []
    for s in range(3):
        g = rng_for(4, "retrieval.empirical_chance", s)
        img, txt = g.standard_normal((2, 1)), g.standard_normal((3, 1))
        exp.append(rm.topk_hits(rm.cosine_scores(img, txt), t, 1).mean())
    np.testing.assert_array_equal(r.per_seed, exp)
    half = norm.ppf(0.95) * np.std(exp, ddof=1) / math.sqrt(3)
    assert r.mean == pytest.approx(np.mean(exp)) and r.ci == pytest.approx((np.mean(exp) - half, np.mean(exp) + half))
    assert (r.n_seeds, r.dim, r.seed, r.ci_level) == (3, 1, 4, 0.9)


@pytest.mark.parametrize("kwargs,msg", [
    ({"n_seeds": 1}, r"^n_seeds must be an integer >= 2, got 1$"),
    ({"n_seeds": 2.5}, r"^n_seeds must be an integer >= 2, got 2.5$"),
    ({"dim": 0}, r"^dim must be a positive integer, got 0$"),
    ({"dim": 1.5}, r"^dim must be a positive integer, got 1.5$"),
    ({"ci_level": 0}, r"^ci_level must lie in \(0, 1\), got 0$"),
    ({"ci_level": 1}, r"^ci_level must lie in \(0, 1\), got 1$"),
])
def test_empirical_chance_argument_checks(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        rm.empirical_chance(np.eye(2, dtype=bool), 1, **kwargs)


@pytest.mark.parametrize("truth", [np.array([True, False]), np.zeros((0, 3), bool)])
def test_empirical_chance_rejects_bad_shapes(truth):
    with pytest.raises(ValueError, match=r"^truth must be a non-empty \(n, C\) bool array, got shape "):
        rm.empirical_chance(truth, 1)


def test_empirical_chance_boundaries_accepted():
    # n_seeds = 2 and dim = 1 are the smallest accepted values
    r = rm.empirical_chance(np.eye(2, dtype=bool), 1, n_seeds=2, dim=1)
    assert r.per_seed.shape == (2,)


def test_truth_matrix_messages_and_dtype():
    m = rm.truth_matrix([{"Size"}], RET_CATS)
    assert m.dtype == bool and m.tolist() == [[False, True, False]]
    with pytest.raises(ValueError, match=r"^truths\[0\] must be a collection of labels, not the string 'Size'$"):
        rm.truth_matrix(["Size"], RET_CATS)
    with pytest.raises(ValueError, match=r"^truths\[1\] is empty$"):
        rm.truth_matrix([{"Size"}, set()], RET_CATS)


def test_topk_hits_accepts_boolean_scores():
    # 0/1 scores given as booleans rank the True category first
    assert rm.topk_hits(np.array([[False, True, False]]), np.array([[False, True, False]]), 1).tolist() == [True]


def test_folded_angle_difference_small_positive_period():
    # any period > 0 is valid, also 1 degree: 0.75 mod 1 = 0.75; min(0.75, 0.25) = 0.25
    assert folded_angle_difference(0.75, 0.0, 1.0) == pytest.approx(0.25)


def test_record_store_failed_open_releases_the_lock(tmp_path):
    # bug found by mutation testing: a corrupt file left the descriptor locked, so a retry in the
    # same process was refused as "being written by another perceptbench process"
    p = tmp_path / "r.jsonl"
    p.write_bytes(b"junkXX\nXX")
    with pytest.raises(RecordError, match=r":1: not valid JSON"):
        RecordStore(p)
    # the torn tail "XX" was cut before the corrupt first line was met
    assert p.read_bytes() == b"junkXX\n"
    p.write_text(_trial("a").to_json_line() + "\n")
    with RecordStore(p) as s:
        assert s.done == {"t|a|m|rep0"}


def test_record_store_append_survives_short_writes(tmp_path, monkeypatch):
    # os.write may write fewer bytes than asked; append loops until every byte is written
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
    with RecordStore(tmp_path / "r.jsonl") as s:
        assert s.append([_trial("a"), _trial("b")]) == 2
    monkeypatch.undo()
    assert [r.stimulus_id for r in read_records(tmp_path / "r.jsonl")] == ["a", "b"]


def test_check_file_default_max_errors_is_50(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text("{bad\n" * 51)
    n_ok, errors, total = check_file(p)
    assert (n_ok, len(errors), total) == (0, 50, 51)
    assert len(validate_file(p)[1]) == 50


import hashlib

from perceptbench.models.response_cache import canonical_json, image_sha256


def test_canonical_json_exact_form():
    # sorted keys, no spaces, non-ASCII kept, NaN refused
    assert canonical_json({"b": 1, "a": "é", "c": [1, 2.5]}) == '{"a":"é","b":1,"c":[1,2.5]}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


def test_image_sha256_by_hand():
    im = Image.new("RGB", (2, 1), (1, 2, 3))
    # sha256(b"RGB:2x1:" + raw pixel bytes), perceptbench.seeding.image_sha256
    assert image_sha256(im) == hashlib.sha256(b"RGB:2x1:" + bytes([1, 2, 3, 1, 2, 3])).hexdigest()
    assert image_sha256(im.convert("RGBA")) != image_sha256(im)  # the mode is hashed


def test_key_and_path_by_hand(tmp_path):
    cache = ResponseCache(tmp_path / "a" / "b")  # nested folders are created
    payload = {"schema": 1, "model_version": "v", "prompt_sha256": hashlib.sha256(b"p").hexdigest(),
               "image_sha256s": ["s"], "generation_settings": {"t": 0}}
    key = hashlib.sha256(canonical_json(payload).encode()).hexdigest()
    assert ResponseCache.key_for("v", "p", ["s"], {"t": 0}) == key
    assert cache.path_for(key) == tmp_path / "a" / "b" / key[:2] / f"{key}.json"
    for bad in (key[:63], "X" * 64, key[:63] + "g"):
        with pytest.raises(ValueError, match=rf"^not a cache key \(64 lowercase hex chars\): {bad!r}$"):
            cache.path_for(bad)
    with pytest.raises(TypeError, match="^text must be str, got int$"):
        cache.put(key, 5)


def test_put_recreates_a_removed_directory_and_replaces_from_a_hidden_sibling(tmp_path, monkeypatch):
    import shutil

    cache = ResponseCache(tmp_path / "c")
    shutil.rmtree(tmp_path / "c")  # removed after construction: put creates it again
    key = "ab" * 32
    real_replace = os.replace
    seen = []

    def replace(src, dst):
        # atomic publish: the temporary file is a hidden sibling of the entry
        seen.append((os.path.dirname(src) == os.path.dirname(dst), os.path.basename(src).startswith(".")))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    cache.put(key, "hello")
    assert seen == [(True, True)] and cache.get(key) == "hello"


def test_put_failure_removes_the_temporary_file(tmp_path, monkeypatch):
    cache = ResponseCache(tmp_path)

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="^disk full$"):
        cache.put("cd" * 32, "x")
    monkeypatch.undo()
    assert list((tmp_path / "cd").iterdir()) == []


def test_generate_modes_meta_and_given_hashes(tmp_path):
    from perceptbench.models.response_cache import StaleCacheError  # noqa: F401  (module import check)

    inner = _ScriptedVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path))
    # two distinct misses in one chunk each get their own answer; batch size passed on
    assert c.generate([_req(1), _req(2)], batch_size=3) == ["ans:p1", "ans:p2"]
    assert inner.batches == [(["p1", "p2"], 3)]
    e = c.cache.get_entry(c.key_for_request(_req(1)))
    assert e["meta"] == {"model": "scripted", "model_version": "scripted@1",
                         "prompt_sha256": hashlib.sha256(b"p1").hexdigest(),
                         "generation_settings": {"temperature": 0, "request_max_new_tokens": 40}}
    # given stimulus hashes are the key
    c.generate([_req(3)], image_sha256s=[["ef" * 32]])
    assert c.key_for_request(_req(3), ["ef" * 32]) in c.cache
    assert c.key_for_request(_req(3)) not in c.cache
    with pytest.raises(ValueError, match="^image_sha256s must have one entry per request$"):
        c.generate([_req(3)], image_sha256s=[])
    # refresh: the cached answer is not read, the new one overwrites it
    r = CachedVLM(_ScriptedVLM(answer=lambda p: "new"), ResponseCache(tmp_path), mode="refresh")
    assert r.generate([_req(1)]) == ["new"] and r.hits == 0 and c.cache.get(c.key_for_request(_req(1))) == "new"


def test_generate_off_mode_writes_nothing(tmp_path):
    inner = _ScriptedVLM()
    c = CachedVLM(inner, ResponseCache(tmp_path / "off"), mode="off")
    # the same request twice: asked once, both slots filled; nothing stored
    assert c.generate([_req(1), _req(1), _req(2)]) == ["ans:p1", "ans:p1", "ans:p2"]
    assert inner.batches == [(["p1", "p2"], 8)] and c.calls == 2
    assert list((tmp_path / "off").iterdir()) == []


def test_generate_counts_and_verification_edge_cases(tmp_path):
    inner = _ScriptedVLM(verify=True)
    c = CachedVLM(inner, ResponseCache(tmp_path))
    # verification wanted but nothing cached yet: no live re-ask
    assert c.generate([_req(1)]) == ["ans:p1"] and (c.calls, c.verified) == (1, 0)
    # now a hit: re-asked live once; calls counts on from 1 to 2
    assert c.generate([_req(1)]) == ["ans:p1"] and (c.calls, c.hits, c.verified) == (2, 1, 1)
    bad = CachedVLM(_ScriptedVLM(answer=lambda p: ["a", "b"]), ResponseCache(tmp_path / "b"))
    with pytest.raises(RuntimeError, match="^inner model returned 2 answers for 1 requests$"):
        bad.generate([_req(5)])


from perceptbench.records import parse_record_line, score_correct


def test_score_correct_lists_are_sets_only_against_lists():
    # two lists compare as sets; a list never equals a string even with the same letters
    assert score_correct(["b", "a"], ["a", "b"]) is True
    assert score_correct(["a", "b"], "ab") is False
    assert score_correct(["a"], ["a", "b"]) is False


def test_record_line_form_and_parse_messages(tmp_path):
    r = _trial("é")
    line = r.to_json_line()
    # schema order, no spaces after separators, non-ASCII kept
    assert line.startswith('{"trial_id":"t|é|m|rep0","task_id":"t",') and '"stimulus_id":"é"' in line
    with pytest.raises(RecordError, match=r"^f:3: a record must be a JSON object$"):
        parse_record_line("[1]", "f:3")
    bad = json.loads(line)
    bad["trial_id"] = "x"
    # a record-level (not field) validation error is reported as "field record"
    with pytest.raises(RecordError, match=r"^<string>: field record: Value error, trial_id 'x' != "):
        parse_record_line(json.dumps(bad))


def test_read_records_blank_lines_duplicates_and_missing_file(tmp_path):
    p = tmp_path / "r.jsonl"
    a, b = _trial("a").to_json_line(), _trial("b").to_json_line()
    p.write_text(f"{a}\n\n{b}\n")
    assert [x.stimulus_id for x in read_records(p)] == ["a", "b"]  # a blank line is skipped, not the end
    p.write_text(f"{a}\n{b}\n{a}\n")
    with pytest.raises(RecordError, match=rf"^{p}:3: duplicate trial_id 't\|a\|m\|rep0' \(first at line 1\)$"):
        read_records(p)
    with pytest.raises(RecordError, match=rf"^{tmp_path / 'no.jsonl'}: no such records file$"):
        read_records(tmp_path / "no.jsonl")


def test_record_store_refuses_a_second_writer_with_a_clear_message(tmp_path):
    p = tmp_path / "r.jsonl"
    with RecordStore(p) as s:
        s.append([_trial("a")])
        with pytest.raises(RuntimeError, match=rf"^{p} is being written by another perceptbench process$"):
            RecordStore(p)
        assert s.done == {"t|a|m|rep0"} and s.truncated_bytes == 0
    with RecordStore(p) as s2:  # the refused open released nothing of the first; reopening works
        assert s2.done == {"t|a|m|rep0"}


def test_default_chunk_is_64_requests(tmp_path):
    # 65 distinct misses with the default chunk size 64 -> two inner calls of 64 and 1
    inner = _ScriptedVLM()
    CachedVLM(inner, ResponseCache(tmp_path), mode="off").generate([_req(i) for i in range(65)])
    assert [len(p) for p, _ in inner.batches] == [64, 1]
