"""The cells of the VSI analyses: samples grouped by (task, benchmark, model, perturbation,
sigma), the insensitive threshold and VSI quintiles; shared by :mod:`.vsi_analysis` and
:mod:`.vsi_probe` (which import it, never each other at import time)."""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from .vsi import VSISample

LOW_VSI = 0.05
"""Insensitive threshold in nats (seed 002 §2.2, appendix A)."""


def quintiles(vsi: np.ndarray, sample_ids: Sequence[str] | None = None) -> np.ndarray:
    """Quintile (0 = lowest VSI ... 4) of each sample, int (n,).  Order by (VSI, sample_id);
    position i of n -> floor(5 i / n)."""
    vsi = np.asarray(vsi, float)
    n = vsi.size
    keys = (np.asarray(sample_ids if sample_ids is not None else np.arange(n)), vsi)
    order = np.lexsort(keys)
    q = np.empty(n, int)
    q[order] = (5 * np.arange(n)) // max(n, 1)
    return q


def _suffix(pert: str | None, sigma: float | None) -> str:
    parts = ([pert] if pert else []) + ([f"sigma={sigma:g}"] if sigma is not None else [])
    return "[" + ",".join(parts) + "]" if parts else ""


def _cells(samples: Sequence[VSISample]) -> dict[tuple, list[VSISample]]:
    cells: dict[tuple, list[VSISample]] = defaultdict(list)
    for s in samples:
        cells[(s.task_id, s.benchmark, s.model, s.perturbation, float(s.sigma))].append(s)
    for k in cells:
        cells[k].sort(key=lambda s: s.sample_id)
        ids = [s.sample_id for s in cells[k]]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"VSI samples: sample_id {dup!r} appears twice in cell {k}")
    return cells
