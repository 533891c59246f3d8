"""Spearman rank correlation with a two-sided permutation p-value (numpy/scipy only).

**Permutation Spearman** (seed 002 B.2, D.1: 10^5 shuffles, seed 42): rho = Pearson of the
average ranks; the null permutes one rank vector; two-sided
``p = (#{|rho_perm| >= |rho_obs|} + 1) / (N + 1)``.  The generator is re-seeded for every pair
(``rng_for(seed, "vsi-permutation", n)``: the stream name is kept from the VSI analyses that
introduced it, so their numbers stay pinned), so a pair's p-value does not depend on which other
pairs are tested; pairs with the same n share the permutations (computed once).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ..seeding import rng_for
from .ranks import rankdata  # scipy.stats.rankdata's values without importing scipy.stats (issue 25)

N_PERM = 100_000
"""Permutation shuffles (seed 002 B.2, D.1)."""

PERM_SEED = 42
"""Permutation seed (seed 002 D.1)."""


# --------------------------------------------------------------- permutation Spearman
def _standardised_ranks(x: np.ndarray) -> np.ndarray:
    return standardised_ranks(np.asarray(x, float)[None])[0]


def standardised_ranks(x: np.ndarray) -> np.ndarray:
    """Each row of ``x`` (float (m, n)) as its average ranks (ties share the mean rank), centred
    and scaled to unit norm, float (m, n): Spearman's rho of two rows is the dot product of
    theirs.  A constant row (or a row holding NaN) is all NaN.  One ``rankdata`` call for every
    row; each row's values equal ranking that row alone (row sums of one length are summed as
    a lone vector is)."""
    r = rankdata(np.asarray(x, float), axis=1)
    r = r - r.mean(1, keepdims=True)
    s = np.sqrt((r * r).sum(1, keepdims=True))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(s > 0, r / s, np.nan)


def spearman_matrix(x: np.ndarray) -> np.ndarray:
    """Spearman's rho of every pair of rows of ``x`` (float (m, n), e.g. one row per model over
    the same n samples): float (m, m), ``rho[i, j]`` = Pearson's r of the average ranks of rows i
    and j (seed 002 B.2), from one ranking of each row and one matrix product.  NaN in the rows
    and columns of a constant row, and everywhere when n < 3 (the rule of
    :func:`permutation_spearman_many`).  Equals the per-pair rho to float rounding (the dot
    products are summed in another order)."""
    x = np.asarray(x, float)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-d (models, samples), got shape {x.shape}")
    if x.shape[1] < 3:
        return np.full((x.shape[0], x.shape[0]), np.nan)
    z = standardised_ranks(x)
    return z @ z.T


@dataclass(frozen=True)
class PermutationRho:
    """Spearman rho with its two-sided permutation p-value ((count + 1) / (N + 1))."""

    rho: float
    p: float
    n: int
    n_perm: int
    seed: int
    note: str = ""


def permutation_spearman_many(pairs: Sequence[tuple[np.ndarray, np.ndarray]], *, n_perm: int = N_PERM,
                              seed: int = PERM_SEED, chunk: int = 10_000) -> list[PermutationRho]:
    """Spearman rho and two-sided permutation p for many (x, y) pairs of float arrays (n_i,).

    The null permutes x's ranks; p = (#{|rho_perm| >= |rho_obs| - 1e-12} + 1) / (n_perm + 1)
    (seed 002 B.2, D.1).  The permutations for length n come from
    ``rng_for(seed, "vsi-permutation", n)``, generated in chunks of ``chunk`` rows and shared by
    every pair of that length, so each pair's result equals testing it alone.  Pairs without
    ties: rho_perm = sum_i f(r_x[pi(i)]) f(r_y(i)) has the distribution of
    sum_j f(pi(j)) f(j) (f = standardised ranks 1..n) whatever the data, so one sorted null of
    n_perm values per n serves every such pair (a lookup per pair).  Pairs with ties permute
    their own rank vectors (one gather and one matrix-vector product per chunk and pair).
    Pairs with n < 3 or a constant vector give NaN with a note."""
    out: list[PermutationRho | None] = [None] * len(pairs)
    by_n: dict[int, list[int]] = defaultdict(list)
    untied: dict[int, list[int]] = defaultdict(list)
    prepared: dict[int, tuple[np.ndarray, np.ndarray, float]] = {}
    by_len: dict[int, list[tuple[int, np.ndarray, np.ndarray]]] = defaultdict(list)
    for i, (x, y) in enumerate(pairs):
        x, y = np.asarray(x, float), np.asarray(y, float)
        if x.shape != y.shape or x.ndim != 1:
            raise ValueError(f"pair {i}: x and y must be 1-d arrays of equal length, got {x.shape} and {y.shape}")
        n = x.size
        if n < 3:
            out[i] = PermutationRho(math.nan, math.nan, n, n_perm, seed, f"{n} shared samples < 3")
            continue
        by_len[n].append((i, x, y))
    for n, items in by_len.items():  # every pair of one length ranked at once (no per-pair rankdata)
        xs = np.stack([x for _, x, _ in items])
        ys = np.stack([y for _, _, y in items])
        zxs, zys = standardised_ranks(xs), standardised_ranks(ys)
        ok = np.isfinite(zxs).all(1) & np.isfinite(zys).all(1)
        sx, sy = np.sort(xs, 1), np.sort(ys, 1)
        tied = (np.diff(sx, axis=1) == 0).any(1) | (np.diff(sy, axis=1) == 0).any(1)
        for k, (i, _, _) in enumerate(items):
            if not ok[k]:
                out[i] = PermutationRho(math.nan, math.nan, n, n_perm, seed, "constant VSI in one model")
                continue
            zx, zy = zxs[k].copy(), zys[k].copy()
            prepared[i] = (zx, zy, float(zx @ zy))
            (by_n if tied[k] else untied)[n].append(i)
    for n, members in untied.items():  # null of rho depends on n only: one sorted null per n
        rng = rng_for(seed, "vsi-permutation", n)
        f = _standardised_ranks(np.arange(n, dtype=float))
        base = np.broadcast_to(np.arange(n), (min(chunk, n_perm), n))
        null = np.empty(n_perm)
        done = 0
        while done < n_perm:
            c = min(chunk, n_perm - done)
            null[done:done + c] = np.abs(f[rng.permuted(base[:c], axis=1)] @ f)
            done += c
        null.sort()
        for i in members:
            count = n_perm - np.searchsorted(null, abs(prepared[i][2]) - 1e-12, side="left")
            out[i] = PermutationRho(prepared[i][2], float((count + 1) / (n_perm + 1)), n, n_perm, seed)
    for n, members in by_n.items():
        rng = rng_for(seed, "vsi-permutation", n)
        counts = np.zeros(len(members), np.int64)
        zx = np.stack([prepared[i][0] for i in members])  # (m, n)
        zy = np.stack([prepared[i][1] for i in members])
        obs = np.abs(np.array([prepared[i][2] for i in members])) - 1e-12
        base = np.broadcast_to(np.arange(n), (min(chunk, n_perm), n))
        done = 0
        while done < n_perm:
            c = min(chunk, n_perm - done)
            perm = rng.permuted(base[:c], axis=1)  # (c, n) independent permutations
            for k in range(len(members)):
                rho = zx[k][perm] @ zy[k]  # (c,)
                counts[k] += int(np.count_nonzero(np.abs(rho) >= obs[k]))
            done += c
        for k, i in enumerate(members):
            out[i] = PermutationRho(prepared[i][2], float((counts[k] + 1) / (n_perm + 1)), n, n_perm, seed)
    return out  # type: ignore[return-value]


def permutation_spearman(x: np.ndarray, y: np.ndarray, *, n_perm: int = N_PERM, seed: int = PERM_SEED) -> PermutationRho:
    """Spearman rho of two float arrays (n,) with its permutation p (see
    :func:`permutation_spearman_many`)."""
    return permutation_spearman_many([(x, y)], n_perm=n_perm, seed=seed)[0]
