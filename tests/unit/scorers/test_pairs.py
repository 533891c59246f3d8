"""scorers/pairs.py: the one rule for which model pairs a per-pair analysis compares (issue 25)."""

from __future__ import annotations

import itertools
import math

import pytest

from perceptbench.scorers.pairs import ALL_PAIRS_MAX, neighbours_note, ranking, select_pairs


def _names(n):
    return [f"m{i:02d}" for i in range(n)]


def test_auto_up_to_the_limit_is_every_pair_in_name_order():
    names = _names(ALL_PAIRS_MAX)
    called = []
    chosen, neighbours = select_pairs(names, "auto", lambda m: called.append(m) or 0.0)
    assert chosen == list(itertools.combinations(names, 2)) == select_pairs(names, "all", {})[0]
    assert not neighbours and not called  # the ranking is not even computed


def test_above_the_limit_auto_gives_the_ranking_neighbours():
    names = _names(ALL_PAIRS_MAX + 3)
    score = {m: float((7 * i) % 23) for i, m in enumerate(names)}  # a permutation of 0..22
    chosen, neighbours = select_pairs(names, "auto", score)
    assert neighbours and len(chosen) == len(names) - 1
    ranked = sorted(names, key=lambda m: -score[m])
    assert chosen == list(zip(ranked, ranked[1:]))  # best first, the better one as a
    assert select_pairs(names, "neighbours", score) == (chosen, True)
    assert len(select_pairs(names, "all", score)[0]) == len(names) * (len(names) - 1) // 2


def test_ranking_puts_undefined_last_and_breaks_ties_by_name():
    assert ranking(["b", "a", "c", "d"], {"a": 1.0, "b": 1.0, "c": math.nan, "d": 2.0}) == ["d", "a", "b", "c"]
    assert ranking(["x", "y"], lambda m: None if m == "x" else 0.0) == ["y", "x"]


def test_unknown_mode_is_refused_and_the_note_says_how_to_ask_for_all():
    with pytest.raises(ValueError, match="pairs 'every'"):
        select_pairs(["a", "b"], "every", {})
    note = neighbours_note(25, "median VSI", "score --pairs all")
    assert "only the 24 neighbours" in note and "not all 300 pairs" in note and "score --pairs all" in note
