"""analyses/crossmodel.py on hand-made per-task rows: which rows take part and how they are read."""

import pytest

from perceptbench.analyses.crossmodel import crossmodel_rows
from perceptbench.core.rows import ScoreRow
from perceptbench.tasks.gestalt import EdgeTask

EDGES = EdgeTask.base_id


def _edges_rows(acc, kappa, high):
    rows = [ScoreRow(EDGES, "human:panel", "observer_accuracy_mean@test", 0.70, None, None, 160, 0),
            ScoreRow(EDGES, "human:panel", "ceiling_kappa_pairwise_mean@test", 0.50, 0.4, 0.6, 160, 0)]
    for i, (a, k, h) in enumerate(zip(acc, kappa, high)):
        m = f"m{i}"
        rows += [ScoreRow(EDGES, m, "accuracy", a, a - 0.1, a + 0.1, 160, 0, seed=5),
                 ScoreRow(EDGES, m, "kappa_aggregate", k, k - 0.1, h, 160, 0, seed=5),
                 ScoreRow(EDGES, m, "null_rate", 0.0, None, None, 160, 0)]
    return rows


def test_edges_take_part_in_the_accuracy_kappa_analyses():
    # accuracy order m0 < m1 < m2 < m3; kappa order m1 < m0 < m3 < m2: pairs (0,1) and (2,3) discordant
    rows = crossmodel_rows(_edges_rows([0.6, 0.75, 0.8, 0.9], [0.2, 0.1, 0.45, 0.3], [0.3, 0.2, 0.55, 0.4]))
    got = {r.metric: r for r in rows if r.task_id == EDGES}
    assert got["accuracy_kappa_discordance"].value == pytest.approx(2 / 6)
    assert got["accuracy_kappa_rho"].value == pytest.approx(1 - 6 * (1 + 1 + 1 + 1) / (4 * 15))  # ranks 1234 vs 2143
    assert got["accuracy_kappa_rho"].seed == 5  # the per-task rows' bootstrap seed
    # above 0.70: m1, m2, m3; m2's interval reaches 0.50; m1 at 0.2, m3 at 0.6 of the ceiling
    assert [got[k].value for k in ("n_above_human_accuracy", "n_at_kappa_ceiling", "n_below_kappa_ceiling")] == [3, 1, 2]
    assert got["median_fraction_of_kappa_ceiling"].value == pytest.approx((0.2 + 0.6) / 2)
    # headline metric without B: accuracy; the bound at n = 160
    assert got["ci_halfwidth_bound"].value == pytest.approx(1.96 / (2 * 160 ** 0.5)) and got["ci_halfwidth_bound"].n == 160
    assert all(r.model == "all-models" for r in rows)


def test_an_explicit_seed_wins_and_one_model_gives_nothing():
    rows = crossmodel_rows(_edges_rows([0.6, 0.75, 0.8], [0.2, 0.1, 0.45], [0.3, 0.2, 0.55]), seed=9)
    assert {r.seed for r in rows if r.metric == "accuracy_kappa_rho"} == {9}
    assert crossmodel_rows(_edges_rows([0.6], [0.2], [0.3])) == []
