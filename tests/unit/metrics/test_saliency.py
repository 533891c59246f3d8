"""Hand-computed checks of the SalBench metrics (seed 001 §4 "Setting", Tables 1, 3, 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptbench.metrics import saliency as sm
from perceptbench.metrics.bootstrap import resample_indices

CATS = ("Color", "Shape", "Size")
TRUTHS = [{"Color"}, {"Color", "Shape"}, {"Size"}, {"Shape"}]
PREDS = [{"Color"}, {"Color"}, None, {"Shape", "Pattern"}]  # Pattern is outside CATS


def test_hand_computed_nulls_excluded():
    s = sm.score_multilabel(PREDS, TRUTHS, CATS, null="exclude", n_boot=0)
    assert s.n == 3 and s.n_null == 1
    # row 0 exact; row 1 misses Shape; row 3 has the extra label Pattern
    assert s.exact_match == pytest.approx(1 / 3)
    assert s.category_counts == {"Color": (2, 0, 0), "Shape": (1, 0, 1), "Size": (0, 0, 0)}
    assert s.category_f1["Color"] == pytest.approx(1.0)
    assert s.category_f1["Shape"] == pytest.approx(2 / 3)
    assert math.isnan(s.category_f1["Size"])
    # seed 001 §4: mean over all categories, the undefined Size F1 counted as 0 (was (1 + 2/3) / 2
    # before issue 7 item 6; that value is now the named variant mean_f1_defined)
    assert s.mean_f1 == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert s.mean_f1_defined == pytest.approx((1 + 2 / 3) / 2)
    assert s.sample_f1 == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
    assert any("Size undefined" in n for n in s.notes)


def test_hand_computed_nulls_as_empty():
    s = sm.score_multilabel(PREDS, TRUTHS, CATS, null="empty", n_boot=0)
    assert s.n == 4 and s.n_null == 1
    assert s.exact_match == pytest.approx(1 / 4)
    assert s.category_counts["Size"] == (0, 0, 1)
    assert s.category_f1["Size"] == 0.0
    assert s.mean_f1 == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert s.sample_f1 == pytest.approx((1 + 2 / 3 + 0 + 2 / 3) / 4)


def test_undefined_f1_zero_matches_lmms_eval_style_mean():
    s = sm.score_multilabel(PREDS, TRUTHS, CATS, null="exclude", n_boot=0, undefined_f1="zero")
    assert s.mean_f1 == pytest.approx((1 + 2 / 3 + 0) / 3)


def test_both_conventions_side_by_side():
    both = sm.score_both_conventions(PREDS, TRUTHS, CATS, n_boot=0)
    assert set(both) == {"nulls_excluded", "nulls_as_empty"}
    assert both["nulls_excluded"].exact_match == pytest.approx(1 / 3)
    assert both["nulls_as_empty"].exact_match == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match="null"):
        sm.score_both_conventions(PREDS, TRUTHS, CATS, null="exclude")


def test_pooled_f1_differs_from_averaged_per_stimulus_f1():
    # F1 pooled over stimuli (TP/FP/FN summed), not averaged per stimulus
    truths = [{"Color"}] * 3 + [{"Size"}]
    preds = [{"Color"}, {"Color"}, {"Size"}, {"Size"}]
    s = sm.score_multilabel(preds, truths, CATS, n_boot=0)
    # Color: TP 2, FN 1 -> 4/5 ; Size: TP 1, FP 1 -> 2/3 ; Shape undefined
    assert s.category_f1["Color"] == pytest.approx(0.8)
    assert s.category_f1["Size"] == pytest.approx(2 / 3)
    assert s.mean_f1 == pytest.approx((0.8 + 2 / 3 + 0) / 3)  # all categories (seed 001 §4)
    assert s.mean_f1_defined == pytest.approx((0.8 + 2 / 3) / 2)
    assert s.exact_match == pytest.approx(0.75)


def test_mean_f1_averages_all_categories_like_the_seed():
    """Issue 7 item 6: three stimuli, all Color and answered Color, on the synthetic split:
    seed 001 and lmms-eval give 1/3; the defined-only mean (the old headline) gives 1."""
    s = sm.score_multilabel([{"Color"}] * 3, [{"Color"}] * 3, ("Orientation", "Color", "Size"), n_boot=200)
    assert s.mean_f1 == pytest.approx(1 / 3) and s.mean_f1_defined == 1.0
    assert s.ci["mean_f1"].n_dropped == 0 and s.ci["mean_f1"].low == pytest.approx(1 / 3)


def _naive_bootstrap(preds, truths, cats, n_boot, seed):
    """Per-draw python loop, for comparison with the vectorised version."""
    n = len(truths)
    idx = resample_indices(n, n_boot, seed)
    em, mf1, mf1_all = [], [], []
    for row in idx:
        p = [preds[i] for i in row]
        t = [truths[i] for i in row]
        em.append(np.mean([set(a) == set(b) for a, b in zip(p, t)]))
        f1s = []
        for c in cats:
            tp = sum(c in a and c in b for a, b in zip(p, t))
            fp = sum(c in a and c not in b for a, b in zip(p, t))
            fn = sum(c not in a and c in b for a, b in zip(p, t))
            if 2 * tp + fp + fn:
                f1s.append(2 * tp / (2 * tp + fp + fn))
        mf1.append(np.mean(f1s))
        mf1_all.append(np.sum(f1s) / len(cats))
    return (np.percentile(em, [2.5, 97.5]), np.percentile(mf1, [2.5, 97.5]),
            np.percentile(mf1_all, [2.5, 97.5]))


def _random_trials(n, seed):
    rng = np.random.default_rng(seed)
    truths, preds = [], []
    for _ in range(n):
        t = {CATS[int(rng.integers(3))]}
        truths.append(t)
        preds.append(set(t) if rng.random() < 0.6 else {CATS[int(rng.integers(3))], "Size"})
    return preds, truths


def test_vectorised_bootstrap_equals_naive_loop():
    preds, truths = _random_trials(60, 1)
    s = sm.score_multilabel(preds, truths, CATS, n_boot=300, seed=7)
    em_ci, mf1_ci, mf1_all_ci = _naive_bootstrap(preds, truths, CATS, 300, 7)
    ci = lambda key: (s.ci[key].low, s.ci[key].high)  # noqa: E731
    assert ci("exact_match") == pytest.approx(tuple(em_ci))
    assert ci("mean_f1_defined") == pytest.approx(tuple(mf1_ci))
    assert ci("mean_f1") == pytest.approx(tuple(mf1_all_ci))
    assert s.ci["exact_match"].estimate == s.exact_match and s.ci["exact_match"].n_draws == 300


def test_bootstrap_seeded_and_sensible_width():
    preds, truths = _random_trials(200, 2)
    a = sm.score_multilabel(preds, truths, CATS, n_boot=2000, seed=3)
    b = sm.score_multilabel(preds, truths, CATS, n_boot=2000, seed=3)
    c = sm.score_multilabel(preds, truths, CATS, n_boot=2000, seed=4)
    assert a.ci == b.ci
    assert a.ci != c.ci
    lo, hi = a.ci["exact_match"].low, a.ci["exact_match"].high
    assert lo < a.exact_match < hi
    p = a.exact_match
    expected_half = 1.96 * math.sqrt(p * (1 - p) / 200)
    assert (hi - lo) / 2 == pytest.approx(expected_half, rel=0.15)
    for c_ in CATS:
        r = a.ci[f"f1:{c_}"]
        assert r.low <= a.category_f1[c_] <= r.high and r.estimate == a.category_f1[c_]


def test_undefined_draws_are_dropped_and_counted():
    # Size is true in 1 of 40 stimuli and never predicted: its F1 is 0 on the full set but
    # undefined in draws that miss that stimulus (about (39/40)^40 = 36 % of draws)
    truths = [{"Color"}] * 39 + [{"Size"}]
    preds = [{"Color"}] * 40
    s = sm.score_multilabel(preds, truths, CATS, n_boot=1000, seed=0)
    r = s.ci["f1:Size"]
    assert s.category_f1["Size"] == 0.0
    assert 250 < r.n_dropped < 470 and r.n_draws == 1000
    assert any("f1:Size undefined in" in n for n in s.notes)


def test_no_ci_for_single_trial_and_empty_input():
    s = sm.score_multilabel([{"Color"}], [{"Color"}], CATS, n_boot=100)
    assert s.exact_match == 1.0 and math.isnan(s.ci["exact_match"].low)
    assert any("n=1" in n for n in s.notes)
    e = sm.score_multilabel([None, None], [{"Color"}, {"Size"}], CATS, null="exclude")
    assert e.n == 0 and math.isnan(e.exact_match) and e.n_null == 2


@pytest.mark.parametrize(
    "n,expected",
    [(0, "<7"), (2, "<7"), (6, "<7"), (7, "7-15"), (15, "7-15"), (16, "15-25"), (25, "15-25"), (26, ">25"), (80, ">25")],
)
def test_distractor_bins(n, expected):
    assert sm.distractor_bin(n) == expected


def test_distractor_bin_rejects_bad_counts():
    with pytest.raises(ValueError, match="-1"):
        sm.distractor_bin(-1)
    with pytest.raises(ValueError, match="2.5"):
        sm.distractor_bin(2.5)


def test_breakdown_by_group_hand_computed():
    truths = [{"Color"}, {"Color"}, {"Size"}, {"Size"}, {"Color"}]
    preds = [{"Color"}, {"Size"}, {"Size"}, None, {"Color"}]
    groups = ["easy", "hard", "easy", "hard", "medium"]
    out = sm.score_by_group(preds, truths, groups, CATS, group_order=["easy", "medium", "hard", "none"], n_boot=0)
    assert list(out) == ["easy", "medium", "hard", "none"]
    assert out["easy"].exact_match == 1.0
    assert out["medium"].exact_match == 1.0
    assert out["hard"].exact_match == 0.0 and out["hard"].n == 1 and out["hard"].n_null == 1
    assert out["none"].n == 0 and math.isnan(out["none"].mean_f1)
    bins = [sm.distractor_bin(k) for k in (3, 10, 20, 30, 5)]
    by_bin = sm.score_by_group(preds, truths, bins, CATS, group_order=sm.DISTRACTOR_BINS, n_boot=0)
    assert by_bin["<7"].n == 2 and by_bin["<7"].exact_match == 1.0
    assert by_bin["7-15"].exact_match == 0.0


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"null": "skip"}, "'skip'"),
        ({"undefined_f1": "one"}, "'one'"),
        ({"n_boot": -5}, "-5"),
        ({"ci_level": 1.5}, "1.5"),
    ],
)
def test_bad_arguments(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        sm.score_multilabel(PREDS, TRUTHS, CATS, **kwargs)


def test_bad_truths():
    with pytest.raises(ValueError, match="Pattern"):
        sm.score_multilabel([{"Color"}], [{"Pattern"}], CATS)
    with pytest.raises(ValueError, match="non-empty"):
        sm.score_multilabel([{"Color"}], [set()], CATS)
    with pytest.raises(ValueError, match="length"):
        sm.score_multilabel([{"Color"}], [{"Color"}, {"Size"}], CATS)
    with pytest.raises(ValueError, match="string"):
        sm.score_multilabel(["Color"], [{"Color"}], CATS)


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
    P = np.zeros((1, 1, 3), bool)  # one respondent, one stimulus, three categories
    *_, sf1 = sm._per_stimulus(P, P[0].copy(), np.zeros((1, 1), np.int64))
    assert sf1.tolist() == [[0.0]]


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


# ------------------------------------------------- respondents vectorised (issue 25): vs a per-draw loop

def _per_draw_reference(pred, truth, cats, null, n_boot, seed, ci_level=0.95):
    """One respondent's intervals by a plain loop over the draws of the shared index matrix:
    each draw gathers its stimuli and recomputes every statistic (seed 001 §4; D.5)."""
    if null == "exclude":
        keep = [i for i, p in enumerate(pred) if p is not None]
        pred, truth = [pred[i] for i in keep], [truth[i] for i in keep]
    P, T, extra, _ = sm.encode_sets(pred, truth, cats)
    n = len(truth)
    if n < 2 or n_boot == 0:
        return None
    idx = resample_indices(n, n_boot, seed)
    em = (np.all(P == T, axis=1) & (extra == 0)).astype(float)
    inter = (P & T).sum(1)
    den = P.sum(1) + extra + T.sum(1)
    sf1 = np.where(den > 0, 2.0 * inter / np.maximum(den, 1), 0.0)
    draws = {k: [] for k in ["exact_match", "mean_f1", "mean_f1_defined", "sample_f1"] + [f"f1:{c}" for c in cats]}
    for d in range(n_boot):
        i = idx[d]
        tp, fp, fn = (P[i] & T[i]).sum(0), (P[i] & ~T[i]).sum(0), (~P[i] & T[i]).sum(0)
        with np.errstate(invalid="ignore", divide="ignore"):
            f1 = np.where(2 * tp + fp + fn > 0, 2.0 * tp / np.maximum(2 * tp + fp + fn, 1), np.nan)
        draws["exact_match"].append(em[i].mean())
        draws["sample_f1"].append(sf1[i].mean())
        draws["mean_f1"].append(np.nan_to_num(f1, nan=0.0).mean())
        draws["mean_f1_defined"].append(f1[~np.isnan(f1)].mean() if (~np.isnan(f1)).any() else np.nan)
        for j, c in enumerate(cats):
            draws[f"f1:{c}"].append(f1[j])
    a = 100 * (1 - ci_level) / 2
    out = {}
    for k, x in draws.items():
        x = np.array(x)
        ok = ~np.isnan(x)
        lo, hi = np.percentile(x[ok], (a, 100 - a)) if ok.any() else (np.nan, np.nan)
        out[k] = (float(lo), float(hi), int((~ok).sum()))
    return out


def _random_respondents(M, n, cats, seed, p_null=0.1):
    rng = np.random.default_rng(seed)
    truths = [{cats[int(rng.integers(len(cats)))]} | ({cats[0]} if rng.random() < 0.2 else set()) for _ in range(n)]
    preds = []
    for _ in range(M):
        row = []
        for t in truths:
            u = rng.random()
            row.append(None if u < p_null else set(t) if u < 0.6 else
                       {cats[int(rng.integers(len(cats)))], "Pattern"} if u < 0.7 else set())
        preds.append(row)
    return preds, truths


def _same(a, b):
    return a == b or (math.isnan(a) and math.isnan(b))


@pytest.mark.parametrize("M,n,null", [(5, 30, "empty"), (5, 30, "exclude"), (1, 12, "exclude"), (4, 2, "empty"),
                                      (3, 1, "empty"), (3, 0, "exclude")])
def test_score_encoded_equals_a_per_draw_loop_for_every_respondent(M, n, null):
    # M respondents on shared draws (one count product) = each respondent's own per-draw loop, to the
    # last bit: intervals, dropped draws (undefined F1), estimates; nulls, extra labels, n < 2, empty
    preds, truths = _random_respondents(M, n, CATS, seed=M * 100 + n)
    enc = [sm.encode_sets(p, truths, CATS) for p in preds]
    P, T = np.stack([e[0] for e in enc]).reshape(M, n, len(CATS)), enc[0][1]
    extra, isnull = np.stack([e[2] for e in enc]).reshape(M, n), np.stack([e[3] for e in enc]).reshape(M, n)
    got = sm.score_encoded(P, T, extra, isnull, CATS, null=null, n_boot=300, seed=5)
    assert len(got) == M
    for m in range(M):
        ref = _per_draw_reference(preds[m], truths, CATS, null, 300, 5)
        alone = sm.score_multilabel(preds[m], truths, CATS, null=null, n_boot=300, seed=5)
        assert repr(got[m]) == repr(alone)
        if ref is None:
            assert all(math.isnan(r.low) for r in got[m].ci.values())
            continue
        for k, (lo, hi, dropped) in ref.items():
            r = got[m].ci[k]
            assert _same(r.low, lo) and _same(r.high, hi) and r.n_dropped == dropped, k


def test_score_encoded_with_every_answer_null_excluded_scores_nothing():
    preds = [[None, None, None], [{"Color"}, None, {"Size"}]]
    truths = [{"Color"}, {"Shape"}, {"Size"}]
    enc = [sm.encode_sets(p, truths, CATS) for p in preds]
    got = sm.score_encoded(np.stack([e[0] for e in enc]), enc[0][1], np.stack([e[2] for e in enc]),
                           np.stack([e[3] for e in enc]), CATS, null="exclude", n_boot=50, seed=1)
    assert got[0].n == 0 and math.isnan(got[0].exact_match) and got[0].n_null == 3
    assert got[1].n == 2 and got[1].exact_match == 1.0 and got[1].n_null == 1


def test_score_groups_encoded_equals_score_by_group_per_respondent():
    preds, truths = _random_respondents(3, 40, CATS, seed=2)
    groups = [("a", "b", "c")[i % 3] for i in range(40)]
    enc = [sm.encode_sets(p, truths, CATS) for p in preds]
    got = sm.score_groups_encoded(np.stack([e[0] for e in enc]), enc[0][1], np.stack([e[2] for e in enc]),
                                  np.stack([e[3] for e in enc]), groups, CATS, group_order=["c", "a", "b", "none"],
                                  null="empty", n_boot=200, seed=3)
    assert list(got) == ["c", "a", "b", "none"] and got["none"][0].n == 0
    for m in range(3):
        alone = sm.score_by_group(preds[m], truths, groups, CATS, group_order=["c", "a", "b", "none"], null="empty",
                                  n_boot=200, seed=3)
        assert {g: repr(v[m]) for g, v in got.items()} == {g: repr(v) for g, v in alone.items()}


def test_score_encoded_rejects_disagreeing_shapes():
    with pytest.raises(ValueError, match="shapes disagree"):
        sm.score_encoded(np.zeros((2, 3, 3), bool), np.zeros((4, 3), bool), np.zeros((2, 3)), np.zeros((2, 3), bool),
                         CATS)
