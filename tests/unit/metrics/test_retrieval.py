"""Retrieval chance two ways (seed 001 §4.2, Table 2) and the retrieval scorer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptbench.metrics import retrieval as rm, retrieval as rt
from perceptbench.metrics.bootstrap import resample_indices

from helpers.by_hand import TIE_PATTERN

NAT7 = ("Orientation", "Color", "Focus", "Shape", "Size", "Location", "Pattern")


def multilabel_truth(n=300, seed=0):
    """7 categories, label sets of size 1 or 2, skewed towards Color (like O3)."""
    rng = np.random.default_rng(seed)
    p = np.array([0.06, 0.40, 0.05, 0.17, 0.12, 0.05, 0.15])
    truths = []
    for _ in range(n):
        m = 1 + int(rng.random() < 0.45)
        truths.append(set(np.array(NAT7)[rng.choice(7, size=m, replace=False, p=p)].tolist()))
    return truths


def test_analytic_closed_forms():
    t1 = rt.truth_matrix([{"Color"}, {"Size"}, {"Orientation"}], ("Orientation", "Color", "Size"))
    assert rt.analytic_chance(t1, 1) == pytest.approx(1 / 3)
    assert rt.analytic_chance(t1, 3) == pytest.approx(1.0)
    t2 = rt.truth_matrix([{"Color", "Shape"}], NAT7)
    assert rt.analytic_chance(t2, 3) == pytest.approx(1 - math.comb(5, 3) / math.comb(7, 3))  # 5/7
    assert rt.analytic_chance(t2, 1) == pytest.approx(2 / 7)
    assert rt.analytic_chance(rt.truth_matrix([{"Color"}], NAT7), 3) == pytest.approx(3 / 7)


@pytest.mark.parametrize("k", [1, 3])
def test_analytic_and_empirical_chance_agree(k):
    truths = multilabel_truth()
    t = rt.truth_matrix(truths, NAT7)
    analytic = rt.analytic_chance(t, k)
    if k == 3:
        assert analytic < 1.0  # a distribution where top-3 chance is informative
    emp = rt.empirical_chance(t, k, n_seeds=400, dim=32, seed=1)
    lo, hi = emp.ci
    assert lo <= analytic <= hi, (analytic, emp.mean, emp.ci)
    assert hi - lo < 0.02  # the interval is tight enough for the comparison to mean something
    # and the interval excludes clearly different values (e.g. the single-label formula)
    single = 1 - math.comb(6, k) / math.comb(7, k)
    assert not (lo <= single <= hi)


def test_empirical_chance_is_seeded():
    t = rt.truth_matrix(multilabel_truth(50), NAT7)
    a = rt.empirical_chance(t, 1, n_seeds=20, seed=3)
    b = rt.empirical_chance(t, 1, n_seeds=20, seed=3)
    c = rt.empirical_chance(t, 1, n_seeds=20, seed=4)
    assert np.array_equal(a.per_seed, b.per_seed)
    assert not np.array_equal(a.per_seed, c.per_seed)


def test_topk_hits_any_of_topk_in_truth_and_ties():
    truth = rt.truth_matrix([{"Color"}, {"Shape", "Size"}], NAT7)
    scores = np.array(
        [
            [0.9, 0.8, 0.1, 0.0, 0.0, 0.0, 0.0],  # Color ranked 2nd
            [0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.9],  # Pattern 1st, Shape 2nd
        ]
    )
    assert rt.topk_hits(scores, truth, 1).tolist() == [False, False]
    assert rt.topk_hits(scores, truth, 2).tolist() == [True, True]
    # ties go to the earlier category
    tied = np.zeros((1, 7))
    assert rt.topk_hits(tied, rt.truth_matrix([{"Orientation"}], NAT7), 1).tolist() == [True]
    assert rt.topk_hits(tied, rt.truth_matrix([{"Pattern"}], NAT7), 1).tolist() == [False]
    with pytest.raises(ValueError, match="8"):
        rt.topk_hits(scores, truth, 8)


def test_zero_shot_retrieval_perfect_and_random_encoders():
    rng = np.random.default_rng(0)
    cats = ("Orientation", "Color", "Size")
    truths = [{cats[i % 3]} for i in range(90)]
    text = np.eye(3, 8)
    perfect = np.stack([text[cats.index(next(iter(t)))] + 0.01 * rng.standard_normal(8) for t in truths])
    res = rt.zero_shot_retrieval(perfect, text, truths, cats, ks=(1, 3), n_boot=200, seed=0)
    assert res.hit_rate[1] == 1.0 and res.hit_rate[3] == 1.0
    assert res.chance[1] == pytest.approx(1 / 3) and res.chance[3] == 1.0
    anti = -perfect  # the true category is ranked last
    res2 = rt.zero_shot_retrieval(anti, text, truths, cats, ks=(1, 2), n_boot=200, seed=0)
    assert res2.hit_rate[1] == 0.0 and res2.hit_rate[2] == 0.0
    r = rt.zero_shot_retrieval(rng.standard_normal((90, 8)), text, truths, cats, ks=(1,), n_boot=500, seed=1).ci[1]
    assert 0 <= r.low < r.estimate < r.high <= 1 and r.n_draws == 500


def test_sentences_verbatim():
    assert rt.retrieval_sentences(["Color"]) == ["One object is different in color compared to the others"]
    with pytest.raises(ValueError):
        rt.retrieval_sentences("Color")


def test_input_validation():
    with pytest.raises(ValueError, match="'Texture'"):
        rt.truth_matrix([{"Texture"}], NAT7)
    with pytest.raises(ValueError, match="zero norm"):
        rt.cosine_scores(np.zeros((1, 3)), np.ones((2, 3)))
    with pytest.raises(ValueError, match="dimensions"):
        rt.cosine_scores(np.ones((1, 3)), np.ones((2, 4)))
    t = rt.truth_matrix([{"Color"}], NAT7)
    with pytest.raises(ValueError, match="n_seeds"):
        rt.empirical_chance(t, 1, n_seeds=1)
    with pytest.raises(ValueError, match="image_emb"):
        rt.zero_shot_retrieval(np.ones((2, 4)), np.ones((7, 4)), [{"Color"}], NAT7)


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
