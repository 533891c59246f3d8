"""reports/paired.py: which model pairs the paired differences compare (issue 25, item 6)."""

import numpy as np
import pytest

TASK = "salbench.detection.syn@n=60,n_probe=0"


def _records(n_models):
    from perceptbench.testing.synthetic_runs import synthetic_records

    return synthetic_records([f"m{i:02d}" for i in range(n_models)], tasks=(TASK,))


def test_auto_compares_every_pair_up_to_the_limit():
    from perceptbench.reports.paired import ALL_PAIRS_MAX, paired_differences

    recs = _records(ALL_PAIRS_MAX)
    auto, notes = paired_differences(recs)
    every, _ = paired_differences(recs, "all")
    assert len(auto) == ALL_PAIRS_MAX * (ALL_PAIRS_MAX - 1) // 2 and auto == every
    assert not any("neighbours" in n for n in notes)


def test_above_the_limit_auto_compares_ranking_neighbours_and_says_so():
    """25 models: 24 neighbour pairs (not 300), the better-ranked model as a; each difference equals
    the all-pairs one of the same two models (sign by orientation); Holm and BH run over the 24."""
    from statsmodels.stats.multitest import multipletests

    from perceptbench.reports.paired import paired_differences

    recs = _records(25)
    diffs, notes = paired_differences(recs)
    every = {(d.a, d.b): d for d in paired_differences(recs, "all")[0]}
    assert len(every) == 300 and len(diffs) == 24
    assert any("only the 24 neighbours in the ranking" in n and "not all 300 pairs" in n for n in notes)
    models = [diffs[0].a] + [d.b for d in diffs]
    assert sorted(models) == [f"m{i:02d}" for i in range(25)]  # a chain through every model
    for d in diffs:
        ref = every.get((d.a, d.b)) or every[(d.b, d.a)]
        sign = 1 if (d.a, d.b) in every else -1
        assert d.diff == pytest.approx(sign * ref.diff) and d.n == ref.n
    # ranked by each model's own exact match, best first: a's own score >= b's
    own = {}
    for r in recs:
        if r.model_family != "human":
            own.setdefault(r.model, []).append(bool(r.correct) if r.response is not None
                                               else len(r.ground_truth or ()) == 0)
    for d in diffs:
        assert np.mean(own[d.a]) >= np.mean(own[d.b])
    p = np.array([d.p for d in diffs])
    assert np.allclose([d.p_holm for d in diffs], multipletests(p, method="holm")[1])
    assert np.allclose([d.p_bh for d in diffs], multipletests(p, method="fdr_bh")[1])


def test_neighbours_on_request_and_an_unknown_mode_refused():
    from perceptbench.reports.paired import paired_differences

    recs = _records(4)
    assert len(paired_differences(recs, "neighbours")[0]) == 3
    with pytest.raises(ValueError, match="pairs 'every'"):
        paired_differences(recs, "every")


def test_dropping_resample_counts_from_the_cache_changes_no_difference(mirror, monkeypatch):
    """The paired differences keep a few resample count matrices per task (memory: one per common
    stimulus set held 1.2 GiB at 400 models); with one kept, recomputed ones give the same numbers."""
    from perceptbench.reports import paired as P
    from perceptbench.testing.synthetic_runs import synthetic_records

    recs = synthetic_records([f"m{i:02d}" for i in range(6)], tasks=("closure.nat.silhouette", TASK))
    calls = []
    real = P._counts
    monkeypatch.setattr(P, "_counts", lambda idx, n: calls.append(n) or real(idx, n))
    many = P.paired_differences(recs, "all")
    n_many = len(calls)
    monkeypatch.setattr(P, "COUNTS_KEPT", 1)
    one = P.paired_differences(recs, "all")
    assert n_many > 1 and len(calls) - n_many == n_many  # one kept of many: the others were dropped
    assert one == many and len(many[0]) >= 3 * 15  # every field of every difference
