"""VSI pieces that need no model: KL over truncated distributions, the blur perturbations,
the answer parsers, and the per-sample table / cell scores from hand-made records."""

import math

import numpy as np
import pytest
from PIL import Image

from perceptbench.metrics.topk_kl import kl_topk, support_distributions
from perceptbench.vsi.cells import HIST_EDGES, cell_summary
from perceptbench.vsi.samples import VSISample, vsi_samples
from perceptbench.readouts.answers import parse_confidence, parse_letter, parse_yes_no
from perceptbench.stimuli.perturb import box_mask, dilate_mask, region_blur, whole_blur

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
    from perceptbench.tasks.base import make_record

    t = get_task(task)
    clean = cond == "clean"
    vsi = {"sample_id": sample, "image_id": sample, "benchmark": "salbench.syn", "condition": cond,
           "sigma_px": 0.0 if clean else 20.0, "dilate_px": 4, "region_source": "exact", "region_bbox": [0, 0, 4, 4],
           "fallback": False, "answer_prefix": "", "top_k": 50, "token_ids": ids, "tokens": [str(i) for i in ids],
           "logprobs": lps, "complete": False, "distribution_source": "hf_logits", "image_sha256": "x",
           "max_prob": float(np.exp(lps[0])) if clean else None, "verbal_conf": conf if clean else None,
           "verbal_raw": None}
    resp = ("B" if correct else "A") if clean else None
    return make_record(t, stimulus_id=f"{sample}~{cond}", model=model, model_family="vlm",
                       readout="vlm_vsi_clean" if clean else "vlm_vsi_perturbed", response=resp, ground_truth="B",
                       manipulated_value=cond, raw_output=resp, prompt_id=t.prompt_id, prompt_hash=None,
                       model_version="v", seed=0, run_id="r", vsi=vsi)


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
