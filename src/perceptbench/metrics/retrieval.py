"""Zero-shot retrieval baseline of SalBench (seed 001 §4.2, Table 2) and its chance level.

Seed 001 §4.2 "Visual representations retrieval": "We compute the cosine similarity between
the image embedding and the seven sentences for natural images and three sentences for the
synthetic images, with embeddings of the form: 'One object is different in {category}
compared to the others'.  We take the top-k highest cosine similarity and count it as a
match if any category in the top-k is present in the ground truth."

Chance.  The seed's "Random" row (SYN 24.6 / 53.2, NAT 14.6 / 36.3) cannot be derived
from its description (with 3 single-label synthetic categories, a uniformly random ranking
hits 1/3 at top-1 and 1 at top-3).  This module reports chance for the label
distribution actually scored, two ways:

* analytically: for a uniformly random ranking of C categories and a stimulus with m true
  labels, P(hit@k) = 1 - C(C - m, k) / C(C, k); chance = mean over stimuli;
* empirically: random Gaussian image and text embeddings, cosine ranking, hit rate
  averaged over stimuli, repeated over independent seeds; interval = mean over seeds
  +- z * sd / sqrt(n_seeds) (normal approximation over i.i.d. seeds).

Ranking ties (equal cosines) are broken toward the earlier category in ``categories``
(stable sort); real-valued embeddings make ties measure-zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np
from scipy.stats import norm

from ..seeding import rng_for
from .bootstrap import BootstrapResult, resample_indices

__all__ = [
    "EmpiricalChance",
    "RETRIEVAL_TEMPLATE",
    "RetrievalScore",
    "analytic_chance",
    "cosine_scores",
    "empirical_chance",
    "retrieval_sentences",
    "topk_hits",
    "truth_matrix",
    "zero_shot_retrieval",
]

#: seed 001 §4.2, verbatim
RETRIEVAL_TEMPLATE = "One object is different in {category} compared to the others"


def retrieval_sentences(categories: Sequence[str]) -> list[str]:
    """One sentence per category, category word lower-cased ("... different in color ...")."""
    if isinstance(categories, str) or not categories:
        raise ValueError(f"categories must be a non-empty sequence of names, got {categories!r}")
    return [RETRIEVAL_TEMPLATE.format(category=str(c).lower()) for c in categories]


def truth_matrix(truths: Sequence[Iterable[str]], categories: Sequence[str]) -> np.ndarray:
    """Bool array (n, C): entry [i, c] = category c is in stimulus i's truth set.

    Raises ValueError for a label outside ``categories`` or an empty truth set.
    """
    col = {c: j for j, c in enumerate(categories)}
    out = np.zeros((len(truths), len(col)), dtype=bool)
    for i, t in enumerate(truths):
        if isinstance(t, str):
            raise ValueError(f"truths[{i}] must be a collection of labels, not the string {t!r}")
        t = set(t)
        if not t:
            raise ValueError(f"truths[{i}] is empty")
        for lab in t:
            if lab not in col:
                raise ValueError(f"truths[{i}] label {lab!r} not in categories {tuple(categories)}")
            out[i, col[lab]] = True
    return out


def cosine_scores(image_emb: np.ndarray, text_emb: np.ndarray) -> np.ndarray:
    """Cosine similarities, float64 (n, C), between image rows (n, d) and text rows (C, d).

    Works on stacked inputs too: (..., n, d) x (..., C, d) -> (..., n, C).
    Raises ValueError on mismatched dimensions or a zero-norm row.
    """
    a = np.asarray(image_emb, dtype=np.float64)
    b = np.asarray(text_emb, dtype=np.float64)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"embedding dimensions differ: images {a.shape} vs texts {b.shape}")
    na = np.linalg.norm(a, axis=-1, keepdims=True)
    nb = np.linalg.norm(b, axis=-1, keepdims=True)
    if np.any(na == 0) or np.any(nb == 0):
        raise ValueError("an embedding row has zero norm; cosine similarity undefined")
    return (a / na) @ np.swapaxes(b / nb, -1, -2)


def topk_hits(scores: np.ndarray, truth: np.ndarray, k: int) -> np.ndarray:
    """Bool (..., n): any of the k highest-scoring categories is in the truth.

    scores: float (..., n, C); truth: bool (n, C) (broadcast over leading axes).
    Raises ValueError unless 1 <= k <= C or when shapes disagree.
    """
    s = np.asarray(scores, dtype=np.float64)
    t = np.asarray(truth, dtype=bool)
    C = s.shape[-1]
    if int(k) != k or not (1 <= k <= C):
        raise ValueError(f"k must be an integer in [1, {C}], got {k!r}")
    if t.shape[-2:] != s.shape[-2:]:
        raise ValueError(f"truth shape {t.shape} does not match scores {s.shape}")
    order = np.argsort(-s, axis=-1, kind="stable")[..., : int(k)]
    picked = np.take_along_axis(np.broadcast_to(t, s.shape), order, axis=-1)
    return picked.any(axis=-1)


def analytic_chance(truth: np.ndarray, k: int) -> float:
    """Expected top-k hit rate of a uniformly random ranking: mean_i 1 - C(C-m_i,k)/C(C,k).

    truth: bool (n, C), m_i = truth[i].sum().  Raises ValueError for an empty array or k
    outside [1, C].
    """
    t = np.asarray(truth, dtype=bool)
    if t.ndim != 2 or t.shape[0] == 0:
        raise ValueError(f"truth must be a non-empty (n, C) bool array, got shape {t.shape}")
    C = t.shape[1]
    if int(k) != k or not (1 <= k <= C):
        raise ValueError(f"k must be an integer in [1, {C}], got {k!r}")
    m = t.sum(axis=1)
    miss = np.array([math.comb(C - int(mi), int(k)) for mi in m], dtype=np.float64) / math.comb(C, int(k))
    return float(np.mean(1.0 - miss))


@dataclass(frozen=True)
class EmpiricalChance:
    """Hit rate of random embeddings.

    mean: mean over seeds of the per-seed hit rate; ci: (low, high) normal-approximation
    interval of that mean; per_seed: float64 (n_seeds,); k, dim, n_seeds, seed, ci_level.
    """

    mean: float
    ci: tuple[float, float]
    per_seed: np.ndarray
    k: int
    dim: int
    n_seeds: int
    seed: int
    ci_level: float


def empirical_chance(
    truth: np.ndarray,
    k: int,
    n_seeds: int = 200,
    dim: int = 64,
    seed: int = 0,
    ci_level: float = 0.95,
) -> EmpiricalChance:
    """Top-k hit rate with random Gaussian image (n, dim) and text (C, dim) embeddings.

    Seed s uses ``rng_for(seed, "retrieval.empirical_chance", s)``; each seed draws fresh image and
    text embeddings, ranks categories by cosine (vectorised over stimuli) and records the
    mean hit rate.  Raises ValueError for n_seeds < 2, dim < 1 or ci_level outside (0, 1).
    """
    t = np.asarray(truth, dtype=bool)
    if t.ndim != 2 or t.shape[0] == 0:
        raise ValueError(f"truth must be a non-empty (n, C) bool array, got shape {t.shape}")
    if int(n_seeds) != n_seeds or n_seeds < 2:
        raise ValueError(f"n_seeds must be an integer >= 2, got {n_seeds!r}")
    if int(dim) != dim or dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    if not (0 < ci_level < 1):
        raise ValueError(f"ci_level must lie in (0, 1), got {ci_level!r}")
    n, C = t.shape
    rates = np.empty(int(n_seeds), dtype=np.float64)
    for s in range(int(n_seeds)):
        rng = rng_for(int(seed), "retrieval.empirical_chance", s)
        img = rng.standard_normal((n, int(dim)))
        txt = rng.standard_normal((C, int(dim)))
        rates[s] = topk_hits(cosine_scores(img, txt), t, k).mean()
    mean = float(rates.mean())
    half = float(norm.ppf(0.5 + ci_level / 2) * rates.std(ddof=1) / math.sqrt(len(rates)))
    return EmpiricalChance(
        mean=mean, ci=(mean - half, mean + half), per_seed=rates, k=int(k), dim=int(dim),
        n_seeds=int(n_seeds), seed=int(seed), ci_level=float(ci_level),
    )


@dataclass(frozen=True)
class RetrievalScore:
    """Top-k retrieval results for one encoder on one split.

    hit_rate[k]: mean hit; ci[k]: percentile bootstrap over stimuli as a
    :class:`~perceptbench.metrics.bootstrap.BootstrapResult` (low/high NaN when n < 2);
    chance[k]: :func:`analytic_chance` for the same truths; hits[k]: bool (n,) per stimulus;
    n, n_boot, seed, ci_level.
    """

    categories: tuple[str, ...]
    hit_rate: dict[int, float]
    ci: dict[int, BootstrapResult]
    chance: dict[int, float]
    hits: dict[int, np.ndarray]
    n: int
    n_boot: int
    seed: int
    ci_level: float


def zero_shot_retrieval(
    image_emb: np.ndarray,
    text_emb: np.ndarray,
    truths: Sequence[Iterable[str]],
    categories: Sequence[str],
    ks: Sequence[int] = (1, 3),
    n_boot: int = 1000,
    seed: int = 0,
    ci_level: float = 0.95,
) -> RetrievalScore:
    """Score the seed 001 §4.2 retrieval baseline.

    image_emb: (n, d) image embeddings; text_emb: (C, d) embeddings of
    :func:`retrieval_sentences` (categories), same order as ``categories``; truths: n
    label sets.  Returns top-k hit rates with percentile bootstrap CIs over stimuli
    (index matrix ``metrics.bootstrap.resample_indices(n, n_boot, seed)``, paired across
    encoders) and the analytic chance for the same truths.
    Raises ValueError on shape mismatches or bad k.
    """
    cats = tuple(categories)
    t = truth_matrix(truths, cats)
    img = np.asarray(image_emb)
    txt = np.asarray(text_emb)
    if img.ndim != 2 or img.shape[0] != t.shape[0]:
        raise ValueError(f"image_emb must be (n={t.shape[0]}, d), got {img.shape}")
    if txt.ndim != 2 or txt.shape[0] != len(cats):
        raise ValueError(f"text_emb must be (C={len(cats)}, d), got {txt.shape}")
    if int(n_boot) != n_boot or n_boot < 0:
        raise ValueError(f"n_boot must be a non-negative integer, got {n_boot!r}")
    scores = cosine_scores(img, txt)
    n = t.shape[0]
    idx = resample_indices(n, int(n_boot), int(seed)) if n_boot and n >= 2 else None
    a = 100 * (1 - ci_level) / 2
    hit_rate, ci, chance, hits = {}, {}, {}, {}
    for k in ks:
        h = topk_hits(scores, t, k)
        hits[int(k)] = h
        hit_rate[int(k)] = float(h.mean())
        chance[int(k)] = analytic_chance(t, k)
        if idx is None:
            ci[int(k)] = BootstrapResult(hit_rate[int(k)], math.nan, math.nan, int(n_boot), int(n_boot), int(seed))
        else:
            lo, hi = np.percentile(h[idx].mean(axis=1), (a, 100 - a))
            ci[int(k)] = BootstrapResult(hit_rate[int(k)], float(lo), float(hi), int(n_boot), 0, int(seed))
    return RetrievalScore(
        categories=cats, hit_rate=hit_rate, ci=ci, chance=chance, hits=hits, n=n,
        n_boot=int(n_boot), seed=int(seed), ci_level=float(ci_level),
    )
