"""readouts/encoder.py: the encoder readouts (prototype, odd-one-out, retrieval, class probe, ridge count,
linear probe) on small inputs whose answers are derived by hand."""

import json

import numpy as np
import pytest

from perceptbench.readouts.encoder import (
    ClassProbeReadout, LinearProbeReadout, PrototypeReadout, RetrievalReadout, RidgeCountReadout, odd_one_out,
    retrieval_readout, ridge_cv_alpha)

from helpers.by_hand import TIE_PATTERN


def test_prototype_predict_top3_is_stable_descending_and_rounded():
    classes = tuple(f"c{i:02d}" for i in range(len(TIE_PATTERN)))
    ro = PrototypeReadout(classes).fit(np.eye(len(classes), dtype=np.float32), list(classes))
    assert ro.prototypes.dtype == np.float32
    q = np.array([[-int(d) / 10 for d in TIE_PATTERN]], dtype=np.float32)
    labels, raws = ro.predict(q)
    # best cosine 0.0 at c02, c03, c04, ... : first max -> c02; top 3 in class order c02, c03, c04
    assert labels == ["c02"]
    assert list(json.loads(raws[0])["cosine_top3"]) == ["c02", "c03", "c04"]
    # descending order, exactly three entries, 6 decimals: cosines .9, .8, .1234567, .1 -> top 3
    ro4 = PrototypeReadout(("a", "b", "c", "d")).fit(np.eye(4, dtype=np.float32), ["a", "b", "c", "d"])
    _, raws4 = ro4.predict(np.array([[0.1, 0.8, 0.1234567, 0.9]], dtype=np.float32))
    top = json.loads(raws4[0])["cosine_top3"]
    assert list(top) == ["d", "b", "c"] and top["c"] == 0.123457
    assert top["d"] == round(float(np.float32(0.9)), 6)


def test_odd_one_out_raw_cosines_have_six_decimals():
    # cos12 = 0.1234567, cos13 = 0.7654321, cos23 = 0.1234567 * 0.7654321 = 0.0944980 -> odd = 2 (outside 1-3)
    e = np.array([[1.0, 0.0, 0.0], [0.1234567, 0.0, 1.0], [0.7654321, 1.0, 0.0]])
    pos, raw = odd_one_out(e)
    assert pos == 2
    assert json.loads(raw) == {"cos12": 0.123457, "cos13": 0.765432, "cos23": 0.094498}
    # cos23 above six decimals as well: cos23 = 0.3333333 -> 0.333333
    e2 = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.3333333]])
    assert json.loads(odd_one_out(e2)[1]) == {"cos12": 0.0, "cos13": 0.0, "cos23": 0.333333}


def test_retrieval_readout_rounds_to_six_decimals_and_class_wraps_it():
    txt = np.eye(2, dtype=np.float32)
    img = np.array([[0.1234567, 0.7654321]])
    out, raws = retrieval_readout(img, txt, ("Color", "Size"))
    # top-1: Size (0.765 > 0.123); cosines rounded to 6 decimals
    assert out == [["Size"]]
    assert json.loads(raws[0]) == {"cosine": {"Color": 0.123457, "Size": 0.765432}}
    assert RetrievalReadout(txt, ("Color", "Size")).predict(img) == (out, raws)


def _probe_data():
    # two well-separated 1-D clusters: class 0 around -2, class 1 around +2
    x = np.array([[-2.5], [-2.0], [-1.5], [1.5], [2.0], [2.5]], dtype=np.float32)
    return x, [0, 0, 0, 1, 1, 1]


def test_class_probe_known_answers_and_python_labels():
    from sklearn.linear_model import LogisticRegression

    x, y = _probe_data()
    ro = ClassProbeReadout().fit(x, y)
    labels, raws = ro.predict(np.array([[-3.0], [3.0]], dtype=np.float32))
    # -3 lies in class 0's cluster, +3 in class 1's; labels come back as Python ints
    assert labels == [0, 1] and all(type(v) is int for v in labels)
    # the documented spec (C=1.0, lbfgs): probabilities equal a LogisticRegression(C=1.0) fit, 6 decimals
    ref = LogisticRegression(C=1.0).fit(x.astype(np.float64), y).predict_proba(np.array([[-3.0], [3.0]]))
    for raw, row in zip(raws, ref):
        assert json.loads(raw) == {"probability": {"0": round(float(row[0]), 6), "1": round(float(row[1]), 6)}}


def test_class_probe_object_labels_and_two_class_boundary():
    x, _ = _probe_data()
    # labels stored as Python objects (no .item()): returned as they are
    ro = ClassProbeReadout().fit(x, np.array(["a", "a", "a", "b", "b", "b"], dtype=object))
    assert ro.predict(np.array([[3.0]], dtype=np.float32))[0] == ["b"]
    # exactly one class -> error; two classes (boundary) fit
    with pytest.raises(ValueError, match="^class probe needs probe-train stimuli of at least two classes$"):
        ClassProbeReadout().fit(x[:3], [0, 0, 0])


def test_class_probe_fits_and_predicts_on_one_blas_thread_with_the_same_answers(monkeypatch):
    """Issue 25 item 3: OpenBLAS's idle second thread spins on these small fits (7.9 s of CPU instead
    of 0.6 s for the default category_mean probe on a loaded machine); the answers stay those of the
    unlimited fit (labels identical, probabilities to 1e-9) and the fit is deterministic."""
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_info, threadpool_limits

    rng = np.random.default_rng(3)
    y = rng.integers(0, 5, 200)
    x = (rng.normal(size=(200, 64)) + np.eye(64)[y] * 2).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    test = rng.normal(size=(50, 64)).astype(np.float32)
    seen = []
    fit, proba = LogisticRegression.fit, LogisticRegression.predict_proba

    def blas_threads():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    monkeypatch.setattr(LogisticRegression, "fit", lambda self, *a: (seen.append(blas_threads()), fit(self, *a))[1])
    monkeypatch.setattr(LogisticRegression, "predict_proba",
                        lambda self, *a: (seen.append(blas_threads()), proba(self, *a))[1])
    with threadpool_limits(limits=2, user_api="blas"):  # a 2-core machine's default
        ro = ClassProbeReadout().fit(x, y)
        labels, raws = ro.predict(test)
        again = ClassProbeReadout().fit(x, y).predict(test)
        monkeypatch.undo()
        ref = LogisticRegression(C=1.0, max_iter=2000).fit(x.astype(np.float64), y)
        ref_p = ref.predict_proba(test.astype(np.float64))
    assert seen and all(t == [1] * len(t) for t in seen)
    assert (labels, raws) == again
    assert labels == [int(c) for c in ref.classes_[ref_p.argmax(1)]]
    got = np.array([[json.loads(r)["probability"][str(c)] for c in range(5)] for r in raws])
    assert np.abs(got - ref_p).max() <= 5e-7 + 1e-9  # the raw output's 6 decimals


RIDGE_X = np.array([[-1.74, -1.34, -1.36], [-0.35, -2.31, -0.19], [-0.96, 0.89, 0.96], [1.39, 0.77, -0.05],
                    [0.86, 1.51, -0.65], [0.61, -0.04, 1.44], [-0.84, -0.3, 0.36], [0.26, -1.64, 0.36],
                    [-0.12, -0.24, -0.16], [0.22, -1.82, 1.55], [-0.86, -2.24, -0.08], [1.46, -0.52, 1.55]])


RIDGE_Y = [6, 11, -6, 5, 6, 0, 1, 9, 8, -1, 6, 1]


def test_ridge_alpha_is_chosen_by_five_fold_cv():
    from sklearn.linear_model import Ridge

    alphas = tuple(np.logspace(-3, 3, 13))
    # 5 contiguous folds (sizes 3,3,2,2,2), mean R^2 on the held-out fold, best alpha (first on ties)
    folds = np.array_split(np.arange(12), 5)
    y = np.asarray(RIDGE_Y, float)
    means = []
    for a in alphas:
        r2 = []
        for f in folds:
            tr = np.setdiff1d(np.arange(12), f)
            r2.append(Ridge(alpha=a).fit(RIDGE_X[tr], y[tr]).score(RIDGE_X[f], y[f]))
        means.append(np.mean(r2))
    best = alphas[int(np.argmax(means))]
    ro = RidgeCountReadout(-5, 10).fit(RIDGE_X.astype(np.float32), RIDGE_Y)
    counts, raws = ro.predict(RIDGE_X[:2].astype(np.float32))
    raw = json.loads(raws[0])
    assert raw["alpha"] == pytest.approx(best, rel=1e-12) and list(raw) == ["ridge", "alpha"]
    # on these data leave-one-out (cv=None) and 6-fold CV pick other alphas, so the fold count matters
    assert best == pytest.approx(1.0)
    pred = ro.model.predict(RIDGE_X[:2].astype(np.float32).astype(np.float64))
    assert raw["ridge"] == round(float(pred[0]), 6) and raw["ridge"] != round(float(pred[0]), 7)
    assert counts == [int(np.clip(np.rint(p), -5, 10)) for p in pred]


def _ridge_case(n=60, d=200, seed=3):
    """Unit-norm float32 embeddings with n < d (the default run's shape: 150 x 1280) and counts 2..16
    that depend linearly on them plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    w = rng.normal(size=d)
    y = np.clip(np.rint(9 + 3 * (x @ w) / np.std(x @ w) + rng.normal(0, 1, n)), 2, 16).astype(int)
    return x, y


def _count_calls(monkeypatch, cls, name):
    calls = []
    orig = getattr(cls, name)

    def spy(self, *a, **k):
        calls.append(type(self).__name__)
        return orig(self, *a, **k)
    monkeypatch.setattr(cls, name, spy)
    return calls


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_ridge_readout_is_bit_identical_to_ridgecv_from_one_fit_per_fold(monkeypatch, seed):
    from sklearn.linear_model import Ridge, RidgeCV

    x, y = _ridge_case(seed=seed)
    q = _ridge_case(n=20, seed=seed + 10)[0]
    ref = RidgeCV(alphas=tuple(np.logspace(-3, 3, 13)), cv=5).fit(x.astype(np.float64), y.astype(float))
    fits = _count_calls(monkeypatch, Ridge, "fit")
    ro = RidgeCountReadout(2, 16).fit(x, y)
    # 5 folds x 13 alphas (plus the refit) were 66 Ridge fits under RidgeCV; now one per fold plus the refit
    assert fits == ["Ridge"] * 6
    assert ro.alpha == ref.alpha_ and np.array_equal(ro.model.coef_, ref.coef_) and ro.model.intercept_ == ref.intercept_
    counts, raws = ro.predict(q)
    pred = ref.predict(q.astype(np.float64))
    assert raws == [json.dumps({"ridge": round(float(p), 6), "alpha": float(ref.alpha_)}) for p in pred]
    assert counts == [int(np.clip(np.rint(p), 2, 16)) for p in pred]


def test_ridge_cv_scores_are_the_grid_searchs_and_near_ties_go_to_ridgecv(monkeypatch):
    from sklearn.linear_model import Ridge, RidgeCV
    from sklearn.model_selection import GridSearchCV

    x, y = _ridge_case()
    x, y = x.astype(np.float64), y.astype(float)
    alphas = tuple(np.logspace(-3, 3, 13))
    gs = GridSearchCV(Ridge(), {"alpha": np.asarray(alphas)}, cv=5).fit(x, y)
    alpha, mean = ridge_cv_alpha(x, y, alphas)
    np.testing.assert_allclose(mean, gs.cv_results_["mean_test_score"], rtol=0, atol=1e-12)
    assert alpha == gs.best_params_["alpha"]
    # every row the same: every alpha predicts the training mean, the scores tie exactly -> RidgeCV decides
    ridgecv = _count_calls(monkeypatch, RidgeCV, "fit")
    flat = np.ones((20, 4))
    alpha, mean = ridge_cv_alpha(flat, np.arange(20.0), (0.1, 1.0, 10.0))
    assert ridgecv == ["RidgeCV"] and alpha == 0.1 and len(set(mean.tolist())) == 1
    # a clear gap (here 5e-3 between the best two; the default run's is 1.3e-4) is left to the fast path
    ridge_cv_alpha(x, y, alphas)
    assert ridgecv == ["RidgeCV"]


class _FixedProba:
    """A fitted-model stand-in whose predict_proba returns fixed rows (to test the selection rule)."""

    def __init__(self, rows):
        self.rows = np.asarray(rows, float)

    def predict_proba(self, x):
        return self.rows[: len(x)]


@pytest.mark.parametrize("row,expected", [
    ([0.5, 0.7, 0.1], ["A", "B"]),     # exactly 0.5 is selected (threshold is >=)
    ([0.4999999, 0.2, 0.1], ["A"]),    # nothing >= 0.5 -> the most probable label alone
    ([0.2, 0.45, 0.3], ["B"]),         # fallback picks the argmax, not the first class
    ([0.9, 0.2, 0.6], ["A", "C"]),     # every label >= 0.5, sorted
])
def test_linear_probe_multilabel_selection_rule(row, expected):
    ro = LinearProbeReadout(model=_FixedProba([row]), classes=("A", "B", "C"), multilabel=True)
    out, raws = ro.predict(np.zeros((1, 2), np.float32))
    assert out == [expected]
    assert json.loads(raws[0]) == {"probability": {c: round(q, 6) for c, q in zip("ABC", row)}}


def test_linear_probe_raw_probabilities_six_decimals_and_single_class_error():
    ro = LinearProbeReadout(model=_FixedProba([[0.1234567, 0.8765433]]), classes=("A", "B"), multilabel=False)
    out, raws = ro.predict(np.zeros((1, 2), np.float32))
    assert out == [["B"]] and raws[0] == '{"probability": {"A": 0.123457, "B": 0.876543}}'
    with pytest.raises(ValueError, match="^linear probe needs probe-train stimuli of at least two classes$"):
        LinearProbeReadout().fit(np.zeros((2, 2), np.float32), [["A"], ["A"]])
