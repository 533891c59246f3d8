"""Encoder readouts (seed 000 §2.2 "Readouts"): zero-shot cosine odd-one-out, nearest
class prototype and rounded ridge regression.  numpy / scikit-learn only.

Embeddings are float32 arrays of shape (n, d) with L2-normalised rows, so cosine
similarity is a dot product.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np

READOUT_SPECS = {
    "prototype_cosine": "nearest class prototype: argmax_c cos(e, mean_c(probe-train e)); ties -> first class in option order",
    "odd_one_out_cosine": "odd-one-out = item outside the most cosine-similar pair; exact ties -> first pair in order (1,2),(1,3),(2,3)",
    "ridge_round": "ridge regression on embeddings, alpha by 5-fold CV on probe-train (RidgeCV, alphas 10^-3..10^3), rounded, clipped to the rendered range",
}
"""Readout id -> its specification text; ``prompt_hash`` of an encoder trial hashes this text."""


def readout_prompt_id(readout: str) -> str:
    return f"readout.{readout}.v1"


@dataclass
class PrototypeReadout:
    """Nearest class prototype.  ``fit(emb (n,d) float32, labels (n,))`` then ``predict``."""

    classes: tuple[str, ...]
    prototypes: np.ndarray | None = None

    def fit(self, emb: np.ndarray, labels: Sequence[str]) -> "PrototypeReadout":
        labels = np.asarray(labels)
        protos = []
        for c in self.classes:
            sel = emb[labels == c]
            if len(sel) == 0:
                raise ValueError(f"prototype readout: no probe-train embedding for class {c!r}")
            p = sel.mean(0)
            protos.append(p / np.linalg.norm(p))
        self.prototypes = np.stack(protos).astype(np.float32)
        return self

    def predict(self, emb: np.ndarray) -> tuple[list[str], list[str]]:
        """Returns (labels, raw_outputs); raw output = JSON of the top-3 cosines."""
        sims = emb @ self.prototypes.T  # (n, C)
        best = np.argmax(sims, axis=1)  # first max on ties
        raws = []
        for row in sims:
            top = np.argsort(-row, kind="stable")[:3]
            raws.append(json.dumps({"cosine_top3": {self.classes[t]: round(float(row[t]), 6) for t in top}}))
        return [self.classes[b] for b in best], raws


PAIRS = ((0, 1), (0, 2), (1, 2))


def odd_one_out(emb3: np.ndarray) -> tuple[int, str]:
    """Odd-one-out among three embeddings (3, d) in shown order -> (position 1..3, raw JSON)."""
    sims = [float(emb3[a] @ emb3[b]) for a, b in PAIRS]
    best = int(np.argmax(sims))  # first max on exact ties
    odd = ({0, 1, 2} - set(PAIRS[best])).pop() + 1
    raw = json.dumps({"cos12": round(sims[0], 6), "cos13": round(sims[1], 6), "cos23": round(sims[2], 6)})
    return odd, raw


RIDGE_CV_FOLDS = 5
"""Folds of the ridge readout's alpha search (``KFold(5)``, contiguous, unshuffled: ``RidgeCV(cv=5)``)."""
RIDGE_NEAR_TIE = 1e-6
"""Mean CV R^2 gap below which :func:`ridge_cv_alpha` hands the choice to ``RidgeCV`` itself."""


def ridge_cv_alpha(x: np.ndarray, y: np.ndarray, alphas: Sequence[float]) -> tuple[float, np.ndarray]:
    """The alpha ``RidgeCV(alphas, cv=5)`` selects, from 5 ridge fits instead of 5 x len(alphas).

    ``x`` (n, d) float64, ``y`` (n,) float64, ``alphas`` > 0.  Returns ``(alpha, mean_r2)``,
    ``mean_r2`` (len(alphas),) float64 the mean held-out R^2 per alpha.  The rule is RidgeCV's
    (scikit-learn ``_BaseRidgeCV.fit`` with ``cv=5``: ``GridSearchCV(Ridge(), {"alpha": alphas},
    cv=5)`` scored by ``Ridge.score`` = R^2, best mean over the folds, first on ties); each fold
    is fitted once for every alpha with scikit-learn's per-target ``Ridge(alpha=array)`` (y
    repeated once per alpha: one Gram matrix per fold, one small solve per alpha) on one BLAS
    thread (OpenBLAS's idle threads otherwise spin on these small solves: ~7x the CPU time).
    The per-alpha scores equal the grid search's to float rounding (1e-16 on the default run);
    where the best two are closer than :data:`RIDGE_NEAR_TIE` the selection could differ by
    rounding, so it is left to ``RidgeCV`` itself.  Issue 25, item 5."""
    from sklearn.linear_model import Ridge, RidgeCV
    from sklearn.metrics import r2_score
    from sklearn.model_selection import check_cv
    from threadpoolctl import threadpool_limits

    a = np.asarray(alphas, dtype=np.float64)
    scores = []
    with threadpool_limits(limits=1, user_api="blas"):
        for train, test in check_cv(RIDGE_CV_FOLDS).split(x, y):
            fit = Ridge(alpha=a).fit(x[train], np.repeat(y[train, None], len(a), axis=1))
            scores.append(r2_score(np.repeat(y[test, None], len(a), axis=1), fit.predict(x[test]),
                                   multioutput="raw_values"))
    mean = np.mean(scores, axis=0)
    best = int(np.argmax(mean))
    if len(a) > 1 and mean[best] - np.max(np.delete(mean, best)) < RIDGE_NEAR_TIE:
        return float(RidgeCV(alphas=tuple(alphas), cv=RIDGE_CV_FOLDS).fit(x, y).alpha_), mean
    return float(a[best]), mean


@dataclass
class RidgeCountReadout:
    """Rounded ridge regression for counts.  ``lo``/``hi``: the rendered range for clipping.

    ``fit(emb (n, d), counts (n,))``: alpha by 5-fold CV (:func:`ridge_cv_alpha`, RidgeCV's
    selection), then ``Ridge(alpha)`` refitted on all of probe-train: the estimator
    ``RidgeCV(alphas, cv=5)`` refits, so ``model`` and every prediction are bit-identical to it."""

    lo: int
    hi: int
    alphas: tuple[float, ...] = tuple(np.logspace(-3, 3, 13))
    model: object = None
    alpha: float | None = None

    def fit(self, emb: np.ndarray, counts: Sequence[int]) -> "RidgeCountReadout":
        from sklearn.linear_model import Ridge

        x, y = emb.astype(np.float64), np.asarray(counts, float)
        self.alpha, _ = ridge_cv_alpha(x, y, self.alphas)
        self.model = Ridge(alpha=self.alpha).fit(x, y)
        return self

    def predict(self, emb: np.ndarray) -> tuple[list[int], list[str]]:
        pred = self.model.predict(emb.astype(np.float64))
        counts = np.clip(np.rint(pred), self.lo, self.hi).astype(int)
        return [int(c) for c in counts], [json.dumps({"ridge": round(float(p), 6), "alpha": self.alpha}) for p in pred]


READOUT_SPECS.update({
    "linear_probe": "multinomial logistic regression on embeddings fit on a disjoint probe-train split "
                    "(one-vs-rest with threshold 0.5, at least the top class, when probe truths are multi-label); "
                    "C=1.0, lbfgs, max_iter 2000",
    "zero_shot_retrieval": "zero-shot retrieval: cosine of the image embedding to the embeddings of "
                           "'One object is different in {category} compared to the others.' for every category; "
                           "response = top-1 category; raw_output holds every cosine (top-k read from it)",
})


@dataclass
class LinearProbeReadout:
    """Label-set probe on embeddings.  ``fit(emb (n,d), truths: list[list[str]])``.

    Single-label probe data -> multinomial logistic regression, prediction = {argmax};
    multi-label -> one-vs-rest logistic regression, prediction = labels with p >= 0.5
    (at least the most probable one)."""

    model: object = None
    classes: tuple[str, ...] = ()
    multilabel: bool = False

    def fit(self, emb: np.ndarray, truths: Sequence[Sequence[str]]) -> "LinearProbeReadout":
        from sklearn.linear_model import LogisticRegression

        self.multilabel = any(len(t) != 1 for t in truths)
        x = emb.astype(np.float64)
        if not self.multilabel:
            y = np.array([t[0] for t in truths])
            if len(set(y)) < 2:
                raise ValueError("linear probe needs probe-train stimuli of at least two classes")
            self.model = LogisticRegression(max_iter=2000).fit(x, y)
            self.classes = tuple(str(c) for c in self.model.classes_)
        else:
            from sklearn.multiclass import OneVsRestClassifier
            from sklearn.preprocessing import MultiLabelBinarizer

            mlb = MultiLabelBinarizer()
            y = mlb.fit_transform(truths)
            self.classes = tuple(str(c) for c in mlb.classes_)
            self.model = OneVsRestClassifier(LogisticRegression(max_iter=2000)).fit(x, y)
        return self

    def predict(self, emb: np.ndarray) -> tuple[list[list[str]], list[str]]:
        p = self.model.predict_proba(emb.astype(np.float64))
        out, raws = [], []
        for row in p:
            if self.multilabel:
                sel = [c for c, q in zip(self.classes, row) if q >= 0.5] or [self.classes[int(np.argmax(row))]]
            else:
                sel = [self.classes[int(np.argmax(row))]]
            out.append(sorted(sel))
            raws.append(json.dumps({"probability": {c: round(float(q), 6) for c, q in zip(self.classes, row)}}))
        return out, raws


READOUT_SPECS["class_probe"] = (
    "single-label probe: multinomial logistic regression on embeddings (C=1.0, lbfgs, max_iter 2000) fit on a "
    "disjoint probe-train split; response = the most probable class seen in probe-train")


@dataclass
class ClassProbeReadout:
    """Single-label probe.  ``fit(emb (n, d) float32, labels (n,) int or str)``; ``predict``
    returns (labels of the probe's classes, raw JSON of every class probability).
    Raises ValueError when probe-train holds fewer than two classes.

    Fit and prediction run on one BLAS thread: the matrices are small (the default
    ``similarity.chart.category_mean`` fit, 1,260 x 1,280 and 10 classes, converges in 54 lbfgs
    iterations, 0.6 s of CPU), and OpenBLAS's second thread spins while waiting: on a loaded
    2-core machine the same fit took 7.9 s of CPU and 23-32 s of wall time on two threads.  One
    thread also makes the fit independent of the machine's core count (two threads sum in
    another order: coefficients within 1e-11).  Issue 25, item 3; docs/performance.md."""

    model: object = None

    def fit(self, emb: np.ndarray, labels: Sequence) -> "ClassProbeReadout":
        from sklearn.linear_model import LogisticRegression
        from threadpoolctl import threadpool_limits

        y = np.asarray(labels)
        if len(set(y.tolist())) < 2:
            raise ValueError("class probe needs probe-train stimuli of at least two classes")
        with threadpool_limits(limits=1, user_api="blas"):
            self.model = LogisticRegression(C=1.0, max_iter=2000).fit(emb.astype(np.float64), y)
        return self

    def predict(self, emb: np.ndarray) -> tuple[list, list[str]]:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            p = self.model.predict_proba(emb.astype(np.float64))
        cls = [c.item() if hasattr(c, "item") else c for c in self.model.classes_]
        out = [cls[int(np.argmax(row))] for row in p]
        raws = [json.dumps({"probability": {str(c): round(float(q), 6) for c, q in zip(cls, row)}}) for row in p]
        return out, raws


@dataclass
class RetrievalReadout:
    """Zero-shot retrieval against fixed category-sentence embeddings ``text_emb`` (C, d)."""

    text_emb: np.ndarray
    categories: tuple[str, ...]

    def predict(self, emb: np.ndarray) -> tuple[list[list[str]], list[str]]:
        return retrieval_readout(emb, self.text_emb, self.categories)


def retrieval_readout(image_emb: np.ndarray, text_emb: np.ndarray, categories: Sequence[str]
                      ) -> tuple[list[list[str]], list[str]]:
    """Top-1 category per image (as a one-element label list) and the JSON of all cosines.

    ``image_emb`` (n, d) and ``text_emb`` (C, d), L2-normalised float32; ties -> first category."""
    sims = image_emb @ text_emb.T
    out, raws = [], []
    for row in sims:
        out.append([categories[int(np.argmax(row))]])
        raws.append(json.dumps({"cosine": {c: round(float(v), 6) for c, v in zip(categories, row)}}))
    return out, raws
