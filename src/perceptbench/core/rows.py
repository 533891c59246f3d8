"""The score row every scorer emits: one row of ``scores.csv`` plus its provenance."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from ..metrics.bootstrap import BootstrapResult


@dataclass
class ScoreRow:
    """One row of ``scores.csv`` (task_id, model, metric, value, ci_low, ci_high, n, n_null)
    plus provenance kept in ``scores.json`` (note, bootstrap draws and drops, seed)."""

    task_id: str
    model: str
    metric: str
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    n: int | None = None
    n_null: int | None = None
    note: str = ""
    n_draws: int | None = None
    n_dropped: int | None = None
    seed: int | None = None

    @classmethod
    def from_boot(cls, task_id: str, model: str, metric: str, b: BootstrapResult,
                  n: int, n_null: int, note: str = "") -> "ScoreRow":
        if not math.isfinite(b.estimate) and not note:
            note = "undefined"
        return cls(task_id, model, metric, b.estimate, b.low, b.high, n, n_null, note,
                   b.n_draws, b.n_dropped, b.seed)

    CSV_COLUMNS: ClassVar[tuple[str, ...]] = (
        "task_id", "model", "metric", "value", "ci_low", "ci_high", "n", "n_null")


AGGREGATE_MODELS = ("all-models", "all-pairs")
"""``model`` values of rows about several models together: ``all-models`` (seed 000's cross-model
analyses, :mod:`perceptbench.analyses.crossmodel`), ``all-pairs`` (the VSI pair means); a model
pair's row is named ``A~B``."""


def is_aggregate_model(model: str) -> bool:
    """Whether a row's ``model`` names several models (:data:`AGGREGATE_MODELS` or a pair ``A~B``)
    rather than one respondent."""
    return model in AGGREGATE_MODELS or "~" in model
