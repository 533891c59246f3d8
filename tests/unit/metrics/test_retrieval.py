"""Retrieval chance two ways (seed 001 §4.2, Table 2) and the retrieval scorer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perceptbench.metrics import retrieval as rt

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
