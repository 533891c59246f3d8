"""metrics/topk_kl.py: the KL of many top-k pairs at once equals the one-pair formula bit for bit
(issue 25: VSI samples computed on arrays)."""

from __future__ import annotations

import numpy as np
import pytest

from perceptbench.metrics.topk_kl import distribution_problem, invalid_rows, kl_topk, kl_topk_batch


def _dist(rng, k, vocab, mass):
    """k distinct token ids from ``vocab`` and descending log-probabilities summing to <= ``mass``."""
    ids = rng.choice(vocab, size=k, replace=False)
    p = np.sort(rng.dirichlet(np.full(k, 0.3)))[::-1] * mass
    return ids, np.log(np.maximum(p, 1e-300))


@pytest.mark.parametrize("kp,kq", [(1, 1), (1, 5), (5, 1), (7, 7), (20, 13), (50, 50)])
def test_batch_equals_the_per_pair_formula_bit_for_bit(kp, kq):
    rng = np.random.default_rng(kp * 100 + kq)
    m = 400
    P, Q = [], []
    for i in range(m):
        vocab = int(rng.choice([kp + kq, 2 * (kp + kq), 1000]))  # from identical key sets to disjoint ones
        P.append(_dist(rng, kp, max(vocab, kp), rng.choice([1.0, rng.uniform(0.3, 1.0)])))
        Q.append(_dist(rng, kq, max(vocab, kq), rng.choice([1.0, rng.uniform(0.3, 1.0)])))
        if kp == kq and i % 17 == 0:  # identical lists: KL exactly 0
            Q[-1] = P[-1]
    pc, qc = rng.random(m) < 0.2, rng.random(m) < 0.2
    got = kl_topk_batch(np.stack([k for k, _ in P]), np.stack([v for _, v in P]),
                        np.stack([k for k, _ in Q]), np.stack([v for _, v in Q]), p_complete=pc, q_complete=qc)
    want = np.array([kl_topk(P[i][0].tolist(), P[i][1].tolist(), Q[i][0].tolist(), Q[i][1].tolist(),
                             p_complete=bool(pc[i]), q_complete=bool(qc[i])) for i in range(m)])
    assert np.array_equal(got, want)  # no ulp of tolerance: scores.csv must not move
    assert (got >= 0).all()
    if kp == kq:
        assert (got[::17] == 0.0).all()


def test_floor_and_chunks_do_not_change_values():
    rng = np.random.default_rng(2)
    P = [_dist(rng, 6, 12, 0.9) for _ in range(50)]
    Q = [_dist(rng, 4, 12, 0.8) for _ in range(50)]
    args = (np.stack([k for k, _ in P]), np.stack([v for _, v in P]), np.stack([k for k, _ in Q]),
            np.stack([v for _, v in Q]))
    a = kl_topk_batch(*args, floor=1e-6, chunk=7)
    b = [kl_topk(*(x[i].tolist() for x in args), floor=1e-6) for i in range(50)]
    assert np.array_equal(a, b)


def test_invalid_rows_agree_with_distribution_problem_and_batch_refuses_them():
    keys = np.array([[1, 2, 3], [1, 1, 3], [1, 2, 3], [1, 2, 3], [1, 2, 3], [4, 5, 6]])
    lp = np.log(np.array([[0.5, 0.3, 0.1], [0.5, 0.3, 0.1], [0.7, 0.3, 0.1], [0.5, 0.3, 0.1], [0.5, 0.3, 0.1],
                          [0.2, 0.2, 0.2]]))
    lp[3, 1] = np.nan
    lp[4, 0] = 1e-3
    bad = invalid_rows(keys, lp)
    assert bad.tolist() == [distribution_problem(k.tolist(), v.tolist()) is not None for k, v in zip(keys, lp)]
    assert bad.tolist() == [False, True, True, True, True, False]
    with pytest.raises(ValueError, match="pair 1, p: not a distribution .duplicate token keys"):
        kl_topk_batch(keys, lp, keys[[0] * 6], lp[[0] * 6])
