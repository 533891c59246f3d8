"""VSI pieces that need no model: KL over truncated distributions, the blur perturbations,
the answer parsers, and the per-sample table / cell scores from hand-made records."""

import math

import numpy as np
import pytest
from PIL import Image

from perceptbench.metrics import topk_kl as vm_kl
from perceptbench.vsi import cells as vm_cells
from perceptbench.vsi import samples as vm
from perceptbench.metrics.topk_kl import kl_topk, support_distributions
from perceptbench.vsi.cells import HIST_EDGES, cell_summary
from perceptbench.vsi.samples import VSISample, vsi_samples
from perceptbench.readouts.answers import parse_confidence, parse_letter, parse_yes_no
from perceptbench.stimuli.perturb import box_mask, dilate_mask, region_blur, whole_blur

from helpers.records import plant_record, plant_vsi_record

L = np.log


# ----------------------------------------------------------------------------- KL


def test_kl_identical_is_zero():
    assert kl_topk([5, 7, 9], L([0.5, 0.2, 0.1]), [5, 7, 9], L([0.5, 0.2, 0.1])) == 0.0
    assert kl_topk(["a", "b"], L([0.7, 0.3]), ["a", "b"], L([0.7, 0.3]), p_complete=True, q_complete=True) == 0.0


def test_kl_three_token_hand_computed():
    # complete 3-token distributions: 0.5 ln(0.5/0.2) + 0.3 ln(0.3/0.5) + 0.2 ln(0.2/0.3)
    want = 0.5 * math.log(2.5) + 0.3 * math.log(0.6) + 0.2 * math.log(2 / 3)
    got = kl_topk(["a", "b", "c"], L([0.5, 0.3, 0.2]), ["a", "b", "c"], L([0.2, 0.5, 0.3]),
                  p_complete=True, q_complete=True)
    assert got == pytest.approx(want, abs=1e-9)
    assert want == pytest.approx(0.223805, abs=1e-6)


def test_kl_truncated_support_rule_hand_computed():
    # P top-2 {a .6, b .3}, rest .1; Q top-2 {a .5, c .4}, rest .1.  Support {a, b, c, <rest>}.
    # P misses c: share = min(.3, .1/2) = .05, rest bucket .05 -> P = (.6, .3, .05, .05)
    # Q misses b: share = min(.4, .1/2) = .05, rest bucket .05 -> Q = (.5, .05, .4, .05)
    p, q, support = support_distributions(["a", "b"], L([0.6, 0.3]), ["a", "c"], L([0.5, 0.4]))
    assert support == ["a", "b", "c", "<rest>"]
    np.testing.assert_allclose(p, [0.6, 0.3, 0.05, 0.05], atol=1e-12)
    np.testing.assert_allclose(q, [0.5, 0.05, 0.4, 0.05], atol=1e-12)
    want = 0.6 * math.log(0.6 / 0.5) + 0.3 * math.log(0.3 / 0.05) + 0.05 * math.log(0.05 / 0.4)
    assert kl_topk(["a", "b"], L([0.6, 0.3]), ["a", "c"], L([0.5, 0.4])) == pytest.approx(want, abs=1e-12)
    assert want == pytest.approx(0.542949, abs=1e-6)


def test_kl_share_capped_by_kth_probability():
    # rest mass .5 split over 1 missing token + bucket would give .25 > p_min .1 -> capped at .1
    p, _, _ = support_distributions(["a", "b", "c"], L([0.3, 0.1, 0.1]), ["d"], [0.0])
    np.testing.assert_allclose(p, [0.3, 0.1, 0.1, 0.1, 0.4], atol=1e-12)


def test_kl_rejects_bad_input():
    with pytest.raises(ValueError, match="duplicate"):
        kl_topk([1, 1], L([0.5, 0.4]), [1], [0.0])
    with pytest.raises(ValueError, match="<= 0"):
        kl_topk([1], [0.5], [1], [0.0])
    with pytest.raises(ValueError, match="keys but"):
        kl_topk([1, 2], [0.0], [1], [0.0])


# ----------------------------------------------------------------------------- blur


def _noise(w=96, h=64, seed=0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))


def test_region_blur_touches_only_dilated_mask():
    im = _noise()
    mask = box_mask(im.size, (30, 20, 50, 40))
    out = np.asarray(region_blur(im, mask, 20, dilate_px=4))
    src = np.asarray(im)
    d = dilate_mask(mask, 4)
    assert np.array_equal(out[~d], src[~d])  # outside: byte-identical
    assert (out[d] != src[d]).any(axis=-1).mean() > 0.9  # inside: blurred
    # the dilation is a 4 px disk: the box grows by exactly 4 px along rows and columns
    ys, xs = np.nonzero(d)
    assert (xs.min(), xs.max(), ys.min(), ys.max()) == (26, 53, 16, 43)
    assert not d[16, 26]  # the disk rounds the corners


def test_sigma_zero_is_identity_and_whole_blur():
    im = _noise()
    mask = box_mask(im.size, (0, 0, 10, 10))
    assert np.array_equal(np.asarray(region_blur(im, mask, 0)), np.asarray(im))
    assert np.array_equal(np.asarray(whole_blur(im, 0)), np.asarray(im))
    assert np.asarray(whole_blur(im, 10)).std() < np.asarray(im).std() / 3


def test_blur_errors():
    im = _noise()
    with pytest.raises(ValueError, match="does not match"):
        region_blur(im, np.ones((3, 3), bool), 5)
    with pytest.raises(ValueError, match="empty"):
        region_blur(im, np.zeros((64, 96), bool), 5)
    with pytest.raises(ValueError, match="sigma_px"):
        whole_blur(im, -1)
    with pytest.raises(ValueError, match="empty"):
        box_mask((10, 10), (5, 5, 5, 8))


# ----------------------------------------------------------------------------- parsers


@pytest.mark.parametrize("text,want", [("Yes", "yes"), ("no.", "no"), ("**No**, it is not", "no"),
                                       ("Yesterday", None), ("", None), (None, None), ("I cannot tell", None)])
def test_parse_yes_no(text, want):
    assert parse_yes_no(text).response == want


def test_parse_yes_no_seed_mode_ambiguous_first_counts():
    pr = parse_yes_no("No... yes", mode="seed")
    assert pr.response == "no" and pr.ambiguous


@pytest.mark.parametrize("text,want", [("B", "B"), ("(C)", "C"), ("A. Orientation", "A"), ("The answer is b", "B"),
                                       ("answer: (A)", "A"), ("Color", "B"), ("size.", "C"), ("E", None),
                                       ("blah", None), (None, None), ("orientation or color", None)])
def test_parse_letter(text, want):
    assert parse_letter(text, ("A", "B", "C"), ("Orientation", "Color", "Size")).response == want


@pytest.mark.parametrize("text,want", [("85", 85.0), ("I'd say 70%.", 70.0), ("100", 100.0), ("0", 0.0),
                                       ("0.9", None), ("very sure", None), ("250", None), (None, None)])
def test_parse_confidence(text, want):
    assert parse_confidence(text) == want


# ----------------------------------------------------------------------------- records -> samples -> scores


def _rec(task, cond, sample, ids, lps, *, correct=True, conf=80.0, model="m"):
    from perceptbench.tasks import get_task

    resp = ("B" if correct else "A") if cond == "clean" else None
    return plant_vsi_record(get_task(task), cond, sample, ids, lps, response=resp, raw_output=resp, model=model,
                            conf=conf)


def test_vsi_samples_pairs_records_and_scores():
    task = "vsi.salbench.syn@n=3"
    a, b = [1, 2, 3], [float(x) for x in L([0.6, 0.3, 0.05])]
    recs = [_rec(task, "clean", "s0", a, b), _rec(task, "region_blur", "s0", a, b),
            _rec(task, "whole_blur", "s0", [2, 1, 3], [float(x) for x in L([0.6, 0.3, 0.05])]),
            _rec(task, "clean", "s1", a, b, correct=False, conf=None), _rec(task, "region_blur", "s1", [2, 1], b[:2]),
            _rec(task, "region_blur", "s2", a, b)]  # no clean record: ignored
    ss = vsi_samples(recs)
    assert [(s.sample_id, s.perturbation) for s in ss] == [("s0", "region"), ("s0", "whole"), ("s1", "region")]
    s0r, s0w, s1r = ss
    assert isinstance(s0r, VSISample) and s0r.vsi == 0.0 and not s0r.argmax_changed and s0r.correct is True
    assert s0w.vsi == pytest.approx(0.6 * L(2) + 0.3 * L(0.5)) and s0w.argmax_changed and s0w.max_prob == pytest.approx(0.6)
    assert s1r.correct is False and s1r.verbal_conf is None and s0r.verbal_conf == 80.0
    from perceptbench.tasks import get_task

    rows = {r.metric: r for r in get_task(task).score(recs, 0)}
    assert rows["argmax_change_rate[region_blur,sigma=20]"].value == 1 / 2
    assert rows["insensitive_frac@0.05[region_blur,sigma=20]"].value == 1 / 2
    assert rows["n_verbal_conf_missing"].value == 1
    assert rows["accuracy"].value == 0.5 and rows["n_parse_null"].value == 0


def test_cell_summary_histogram_and_quartiles():
    v = np.array([0.0, 5e-5, 0.002, 0.02, 0.2, 2.0, 50.0])
    cs = cell_summary(v, v > 0.01, seed=3)
    assert sum(cs.hist_counts) == v.size and len(cs.hist_counts) == len(HIST_EDGES) - 1
    assert cs.hist_counts[0] == 2 and cs.hist_counts[-1] == 1
    assert cs.median == 0.02 and cs.q25 == pytest.approx(np.percentile(v, 25))
    assert cs.insensitive[0.05].estimate == pytest.approx(4 / 7)
    assert cs.insensitive[0.01].estimate == pytest.approx(3 / 7)
    assert cs.insensitive[0.05].low <= 4 / 7 <= cs.insensitive[0.05].high
    assert cs.argmax_change_rate.estimate == pytest.approx(4 / 7)


@pytest.mark.parametrize("sigma", [10, 20, 40])
@pytest.mark.parametrize("box", [(181, 239, 199, 271), (0, 0, 30, 30), (400, 480, 512, 512)])
def test_region_blur_equals_whole_image_blur_inside_mask(sigma, box):
    from PIL import ImageFilter

    im = _noise(512, 512, seed=1)
    m = box_mask(im.size, box)
    d = dilate_mask(m, 4)
    full = np.asarray(im.filter(ImageFilter.GaussianBlur(radius=sigma)))
    assert np.array_equal(np.asarray(region_blur(im, m, sigma))[d], full[d])


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
    # lp 1e-7 (allowed rounding) -> p = 1 exactly; with 1e-4 (total 1.0001, within MASS_TOL):
    # [1, 1e-4, floor] normalised by 1.0001 + 1e-12
    p, _, _ = vm_kl.support_distributions(["a", "b"], [1e-7, math.log(1e-4)], ["a"], [0.0])
    np.testing.assert_allclose(p, np.array([1.0, 1e-4, 1e-12]) / (1.0001 + 1e-12), rtol=1e-12, atol=0)


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
    run_meta = {"vsi": meta}
    if skipped:
        run_meta["skipped"] = skipped
    clean = cond == "clean"
    resp = "yes" if clean else None
    sid = f"{sample}~{cond}"
    return plant_record("vsi.t", stimulus_id=sid, model=model, model_family=family, readout="vlm_vsi",
                        principle="saliency", track="syn", response=resp, ground_truth="yes" if clean else None,
                        manipulated_value=cond, raw_output=resp, run_meta=run_meta)


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
    with pytest.raises(ValueError, match=r"^p: log-probability \+1\.1e-06 at token 'a': log-probabilities must be finite and <= 0$"):
        vm_kl.kl_topk(["a"], [1.1e-6], ["a"], [0.0])
    # a missing log-probability (JSON null) is the same clear error, not a TypeError
    with pytest.raises(ValueError, match=r"^q: log-probability \+nan at token 'a': log-probabilities must be finite and <= 0$"):
        vm_kl.kl_topk(["a"], [0.0], ["a"], [None])
