"""Issue 12, part 1: the count forms of the bootstrap statistics (all draws x models at once)
equal the per-draw and per-model forms they replace, and the columnar reader refuses what
the byte-offset reader refused, naming the file and line."""

import gzip
import json

import numpy as np
import pytest

from perceptbench.metrics.agreement import agreement_b, masked_mean, masked_mean_counts
from perceptbench.metrics.bootstrap import (
    bootstrap, bootstrap_counts, percentile_intervals, resample_counts, resample_indices)
from perceptbench.metrics.error_consistency import (
    kappa, kappa_counts, kappa_pairwise_counts, kappa_pairwise_mean)
from perceptbench.record_table import TaskColumns, read_columns
from perceptbench.records import RecordError, read_records
from perceptbench.scoring import score_file, score_records
from perceptbench.tasks import get_task
from helpers.paths import FIXTURES

FIX = FIXTURES / "scale"


def _data(M=7, J=10, n=60, seed=3):
    rng = np.random.default_rng(seed)
    observers = (rng.random((J, n)) < 0.7).astype(float)
    correct = (rng.random((M, n)) < 0.6).astype(float)
    valid = rng.random((M, n)) < 0.9
    valid[0] = True  # one respondent without nulls, one with every trial null
    valid[1] = False
    return observers, correct, valid


def test_resample_counts_and_weights_sum_like_gathering():
    idx = resample_indices(50, 300, 0)
    c = resample_counts(idx)
    assert c.shape == (300, 50) and (c.sum(1) == 50).all()
    assert resample_counts(idx) is c  # kept beside the cached index matrix
    x = np.arange(50.0) % 7
    assert np.array_equal(c.astype(float) @ x, x[idx].sum(1))


def test_count_forms_equal_the_gathering_forms():
    observers, correct, valid = _data()
    n = correct.shape[1]
    idx = resample_indices(n, 500, 1)
    w = resample_counts(idx)
    # 0/1 sums are integers: bit for bit
    assert np.array_equal(masked_mean_counts(w, correct, valid), masked_mean(correct[:, idx], valid[:, idx]).T,
                          equal_nan=True)
    kp = kappa_pairwise_counts(w, correct, observers, valid)
    for m in range(correct.shape[0]):
        ref = kappa_pairwise_mean(correct[m, idx], observers[:, idx], valid[m, idx])
        assert np.array_equal(kp[:, m], ref, equal_nan=True)
    # the panel's accuracy is fractional: equal to rounding
    panel = observers.mean(0)
    ka = kappa_counts(w, correct, panel, valid)
    ref = np.stack([kappa(correct[m, idx], panel[idx], valid[m, idx]) for m in range(correct.shape[0])], 1)
    assert np.array_equal(np.isnan(ka), np.isnan(ref))
    assert np.nanmax(np.abs(ka - ref)) < 1e-12


def test_bootstrap_of_all_models_at_once_equals_bootstrap_per_model():
    observers, correct, valid = _data()
    n = correct.shape[1]
    many = bootstrap_counts(lambda w: kappa_pairwise_counts(w, correct, observers, valid), n, n_draws=2000, seed=5)
    for m, res in enumerate(many):
        one = bootstrap(lambda i: kappa_pairwise_mean(correct[m, i], observers[:, i], valid[m, i]), n,
                        n_draws=2000, seed=5)
        assert (res.n_draws, res.n_dropped, res.seed) == (one.n_draws, one.n_dropped, one.seed)
        for a, b in ((res.estimate, one.estimate), (res.low, one.low), (res.high, one.high)):
            assert (np.isnan(a) and np.isnan(b)) or abs(a - b) <= 1e-12
    assert many[1].n_dropped == 2000 and np.isnan(many[1].low)  # every trial null: every draw undefined


def test_percentile_intervals_per_column_equal_numpy_on_finite_draws():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(1000, 6))
    draws[rng.random((1000, 6)) < 0.1 * np.arange(6)] = np.nan
    draws[:, 5] = np.nan
    res = percentile_intervals(np.zeros(6), draws, 1000, 0)
    for m, r in enumerate(res):
        ok = np.isfinite(draws[:, m])
        assert r.n_dropped == int((~ok).sum())
        if ok.any():
            assert (r.low, r.high) == tuple(np.percentile(draws[ok, m], [2.5, 97.5]))
        else:
            assert np.isnan(r.low) and np.isnan(r.high)


@pytest.mark.parametrize("stat", ["B", "kappa_pairwise"])
def test_vectorised_bootstrap_equals_the_per_draw_loop(stat):
    """The benchmark's pair (benchmarks/bench_scoring.py): the vectorised count form and the
    natural per-draw loop on one gathered resample give the same interval to 1e-12."""
    observers, correct, valid = _data(M=3)
    c, v = correct[2], valid[2]
    match = c > 0
    n = len(c)
    if stat == "B":
        vec = lambda i: masked_mean_counts(resample_counts(i), match[None], v[None])[:, 0]  # noqa: E731
        one = lambda i: agreement_b(match[i], v[i])  # noqa: E731
        draws = 1000
    else:
        vec = lambda i: kappa_pairwise_counts(resample_counts(i), c[None], observers, v[None])[:, 0]  # noqa: E731
        one = lambda i: kappa_pairwise_mean(c[i], observers[:, i], v[i])  # noqa: E731
        draws = 2000
    res = bootstrap(vec, n, n_draws=draws, seed=2)
    idx = resample_indices(n, draws, 2)
    loop = np.array([float(one(i)) for i in idx])
    both = vec(idx)
    assert np.array_equal(np.isnan(both), np.isnan(loop))
    assert np.nanmax(np.abs(both - loop)) <= 1e-12  # the mean over observers sums in another order
    low, high = np.percentile(loop[np.isfinite(loop)], [2.5, 97.5])
    assert abs(low - res.low) <= 1e-12 and abs(high - res.high) <= 1e-12


# --------------------------------------------------------------------------- the columnar reader


@pytest.fixture
def lines(tmp_path):
    return gzip.decompress((FIX / "default_multi.jsonl.gz").read_bytes()).decode().splitlines(keepends=True)[:2440]


def _write(tmp_path, lines, name="records.jsonl"):
    p = tmp_path / name
    p.write_text("".join(lines))
    return p


def test_columns_from_file_equal_columns_from_records(tmp_path, lines):
    p = _write(tmp_path, lines)
    cols = read_columns(p)
    recs = read_records(p)
    assert sorted(cols) == sorted({r.task_id for r in recs}) and all(cols.simple.values())
    for t, c in cols.items():
        rs = [r for r in recs if r.task_id == t]
        ref = TaskColumns.from_records(t, rs)
        assert c.n == ref.n == len(rs)
        for f, v in (("model", "models"), ("stimulus", "stimuli"), ("family", "families"),
                     ("readout", "readouts"), ("split", "splits"), ("version", "versions")):
            vocab, ref_vocab = getattr(c, v), getattr(ref, v)
            assert [vocab[x] for x in getattr(c, f)] == [ref_vocab[x] for x in getattr(ref, f)], f
        for f in ("response", "ground_truth", "manipulated_value"):
            assert [c.values[x] for x in getattr(c, f)] == [ref.values[x] for x in getattr(ref, f)], f
        assert np.array_equal(c.correct, ref.correct) and np.array_equal(c.rep, ref.rep)
        assert np.array_equal(c.row, np.array([i for i, ln in enumerate(lines) if f'"task_id":"{t}"' in ln]))


@pytest.mark.parametrize("edit, message", [
    (lambda o: o.pop("response"), "missing fields"),
    (lambda o: o.update(extra=1), "unknown fields"),
    (lambda o: o.update(run_meta="x"), "run_meta"),
    (lambda o: o.update(trial_id=o["trial_id"] + "x"), "trial_id"),
    (lambda o: o.update(correct="yes"), "correct"),
    (lambda o: o.update(raw_output=3), "raw_output"),
    (lambda o: o.update(n_reps="1"), "n_reps"),
    (lambda o: o.update(rep=1, trial_id=o["trial_id"][:-1] + "1"), "rep 1 outside"),
    (lambda o: o.update(model_family="robot"), "model_family"),
    (lambda o: o.update(correct=None), "correct is null"),
])
def test_bad_record_refused_naming_file_line_and_field(tmp_path, lines, edit, message):
    obj = json.loads(lines[7])
    edit(obj)
    p = _write(tmp_path, lines[:7] + [json.dumps(obj) + "\n"] + lines[8:])
    with pytest.raises(RecordError, match=rf"records.jsonl:8: .*{message}"):
        score_file(p, tmp_path / "scores.csv")
    assert not (tmp_path / "scores.csv").exists()


def test_fields_in_another_order_are_read(tmp_path, lines):
    obj = json.loads(lines[7])
    shuffled = json.dumps(dict(reversed(list(obj.items())))) + "\n"
    p = _write(tmp_path, lines[:7] + [shuffled] + lines[8:])
    cols = read_columns(p)
    assert cols is not None and sum(c.n for c in cols.values()) == len(lines)
    ref = [vars(r) for r in score_records(read_records(p))]
    assert [vars(r) for r in score_file(p, tmp_path / "scores.csv")] == ref


def test_bad_record_after_a_blank_line_named_by_its_line(tmp_path, lines):
    obj = json.loads(lines[9])
    obj.pop("correct")
    p = _write(tmp_path, lines[:4] + ["\n"] + lines[4:9] + [json.dumps(obj) + "\n"] + lines[10:])
    with pytest.raises(RecordError, match=r"records.jsonl:11: missing fields"):
        score_file(p, tmp_path / "scores.csv")


def test_duplicate_trial_refused_naming_both_lines(tmp_path, lines):
    p = _write(tmp_path, lines + [lines[3]])
    with pytest.raises(RecordError, match=rf"records.jsonl:{len(lines) + 1}: duplicate trial_id .*first at line 4"):
        read_columns(p)


def test_blank_line_and_torn_tail_go_to_the_validating_reader(tmp_path, lines):
    blank = _write(tmp_path, lines[:5] + ["\n"] + lines[5:], "blank.jsonl")
    assert read_columns(blank) is None
    torn = _write(tmp_path, lines + [lines[0][:40]], "torn.jsonl")
    assert read_columns(torn) is None
    ref = [vars(r) for r in score_records(read_records(_write(tmp_path, lines, "ok.jsonl")))]
    assert [vars(r) for r in score_file(torn, tmp_path / "torn.csv")] == ref


def _with_vlm(lines, answer=lambda o: f"It is a {o['response']}.", n_reps=1):
    """``lines`` plus the encoder's closure answers again as VLM ``vlm-x`` (raw text ``answer(o)``;
    ``n_reps`` > 1: every answer twice, as repetitions 0 and 1)."""
    vlm = []
    for ln in lines:
        o = json.loads(ln)
        if o["model"] == "efficientnet-lite0" and o["task_id"] == "closure.nat.silhouette":
            o.update(model="vlm-x", model_family="vlm", readout="vlm_prompt", raw_output=answer(o),
                     prompt_id="closure.nat.silhouette.v1", n_reps=n_reps)
            o["trial_id"] = o["trial_id"].replace("|efficientnet-lite0|", "|vlm-x|")
            for rep in range(n_reps):
                o.update(rep=rep, trial_id=o["trial_id"].rsplit("|rep", 1)[0] + f"|rep{rep}")
                vlm.append(json.dumps(o) + "\n")
    return lines + vlm


def _ambiguous_or_plain(o):
    """Raw answers of every parse kind: plain, naming two options, null, with a closed and an
    unclosed reasoning block, several answer markers."""
    k = int(o["trial_id"].split("|")[1].encode().hex(), 16) % 6
    return [f"It is a {o['response']}.", f"{o['response']} or {o['ground_truth']}", None,
            f"<think>hmm</think> {o['response']}", "<think>a cat or a dog", 
            f"Answer: cat. Answer: {o['response']}"][k]


@pytest.mark.parametrize("mode", ["default", "strict", "seed"])
@pytest.mark.parametrize("answer", [lambda o: f"It is a {o['response']}.", _ambiguous_or_plain])
def test_vlm_answers_reparsed_on_the_columns_score_like_score_records(tmp_path, lines, mode, answer):
    """A task with VLM answers stays columnar: each distinct raw text is re-parsed once on the
    columns under the parser mode; responses, correctness and the parse-count rows equal the
    record path's (every record re-parsed and copied)."""
    p = _write(tmp_path, _with_vlm(lines, answer))
    cols = read_columns(p)
    assert all(cols.simple.values())
    rows = score_file(p, tmp_path / "scores.csv", parser_mode=mode)
    ref = score_records(read_records(p), parser_mode=mode)
    assert [vars(r) for r in rows] == [vars(r) for r in ref]
    assert any(r.model == "vlm-x" and r.metric == "n_ambiguous" for r in rows)


def test_reparsed_columns_equal_the_reparsed_records(tmp_path, lines):
    from perceptbench.scoring import apply_parser_mode, reparse_columns
    from perceptbench.tasks import get_task

    tid = "closure.nat.silhouette"
    p = _write(tmp_path, _with_vlm(lines, _ambiguous_or_plain))
    c, _ = reparse_columns(read_columns(p)[tid], get_task(tid), "strict")
    recs = apply_parser_mode([r for r in read_records(p) if r.task_id == tid], "strict")
    assert [c.values[x] for x in c.response] == [r.response for r in recs]
    assert c.correct.tolist() == [-1 if r.correct is None else int(r.correct) for r in recs]
    assert any(r.response != r2.response for r, r2 in zip(recs, read_records(p)) if r.readout == "vlm_prompt")


def test_repeated_vlm_trials_take_the_record_path(tmp_path, lines):
    """Repetitions are voted on record objects: the task is read back as records (and scores
    like score_records)."""
    p = _write(tmp_path, _with_vlm(lines, n_reps=2))
    assert read_columns(p).simple["closure.nat.silhouette"] is False
    rows = score_file(p, tmp_path / "scores.csv")
    assert [vars(r) for r in rows] == [vars(r) for r in score_records(read_records(p))]
    assert any(r.metric == "n_repetitions" for r in rows)


def test_human_rows_cached_by_the_task_instance_per_seed_and_human_data(tmp_path, lines):
    from perceptbench.tasks import get_task

    p = _write(tmp_path, lines)
    tid = "closure.nat.silhouette"
    task = get_task(tid)
    cols = read_columns(p)[tid]
    first = task.score_columns(cols, 0)
    cache = task.scorer._row_cache.entries
    assert len(cache) == 1
    assert [vars(r) for r in task.score_columns(cols, 0)] == [vars(r) for r in first]
    assert len(cache) == 1  # reused
    assert get_task(tid).scorer._row_cache.entries == {}  # a new task instance starts empty: nothing to clear
    i = next(i for i, ln in enumerate(lines) if '"model":"human:subject-01"' in ln and '"correct":true' in ln)
    o = json.loads(lines[i])
    o.update(response="na", raw_output="na", correct=False)
    p2 = _write(tmp_path, lines[:i] + [json.dumps(o) + "\n"] + lines[i + 1:], "changed.jsonl")
    changed = task.score_columns(read_columns(p2)[tid], 0)
    assert len(cache) == 2  # other human data, other key
    assert [vars(r) for r in changed] != [vars(r) for r in first]
    assert [vars(r) for r in score_file(p, tmp_path / "a.csv") if r.task_id == tid] == [vars(r) for r in first]


def test_chart_category_and_salbench_score_on_the_columns_like_score_records(tmp_path, monkeypatch):
    """The chart-category panel and SalBench label sets (VLM answers re-parsed) score from the
    columns, no record read back, and give exactly the rows of the record path."""
    import perceptbench.record_table as rt
    from perceptbench.testing.synthetic_runs import synthetic_records
    from helpers.records import plant_records

    tasks = ("similarity.chart.category_mean@n_test=60", "salbench.detection.syn@n=60,n_probe=0")
    recs = synthetic_records(["m0", "m1", "m2"], tasks=tasks, raw_output="I think")
    p = plant_records(tmp_path / "run", recs)

    def refuse(*a, **k):
        raise AssertionError("a columnar task was read back as records")

    monkeypatch.setattr(rt, "task_records", refuse)
    for mode in ("default", "strict"):
        rows = score_file(p, tmp_path / f"{mode}.csv", parser_mode=mode)
        assert [vars(r) for r in rows] == [vars(r) for r in score_records(recs, parser_mode=mode)]
    assert {r.task_id for r in rows} == {get_task(t).task_id for t in tasks}
    assert any(r.metric == "kappa_pairwise" and r.model == "m1" for r in rows)
    assert any(r.metric == "mean_f1" and r.model == "m1" for r in rows)


def test_tasks_read_back_as_records_are_the_validated_lines_and_a_bad_one_is_named(tmp_path, lines):
    """A task scored from record objects (here: repeated VLM trials) is read back line by line from
    its rows: the same records the validating reader gives; a line the columnar checks pass but the
    schema refuses (``principle`` not a string) raises naming the file, line and field."""
    all_lines = _with_vlm(lines, n_reps=2)
    p = _write(tmp_path, all_lines)
    tid = "closure.nat.silhouette"
    assert read_columns(p).records(tid) == [r for r in read_records(p) if r.task_id == tid]
    i = next(i for i, ln in enumerate(all_lines) if '"model": "vlm-x"' in ln)
    o = json.loads(all_lines[i])
    o["principle"] = 3
    bad = _write(tmp_path, all_lines[:i] + [json.dumps(o) + "\n"] + all_lines[i + 1:], "bad.jsonl")
    with pytest.raises(RecordError, match=rf"^{bad}:{i + 1}: field principle"):
        score_file(bad, tmp_path / "bad.csv")
