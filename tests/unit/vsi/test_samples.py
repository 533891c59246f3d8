"""vsi/samples.py: the VSI samples of many records computed on arrays equal the per-pair
definition (one ``kl_topk`` and one set of guards per record pair) value for value (issue 25)."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from perceptbench.tasks import get_task
from perceptbench.vsi.samples import (FLAG_REASONS, PERTURBATIONS, distribution_flags, dist_keys, trial_skipped,
                                      vsi_flagged, vsi_of_records, vsi_samples)

from helpers.records import plant_vsi_record


def _reference(records):
    """(task, model, sample, perturbation) -> VSI (nats, argmax changed, correct) or the flag reason,
    pair by pair as the module docstring defines them."""
    clean = {(r.task_id, r.model, r.run_meta.model_extra["vsi"]["sample_id"]): r for r in records
             if r.run_meta.model_extra["vsi"]["condition"] == "clean"}
    out = {}
    for r in records:
        m = r.run_meta.model_extra["vsi"]
        cr = clean.get((r.task_id, r.model, m["sample_id"]))
        if m["condition"] == "clean" or cr is None:
            continue
        cm = cr.run_meta.model_extra["vsi"]
        key = (r.task_id, r.model, m["sample_id"], PERTURBATIONS[m["condition"]])
        if trial_skipped(cr) or trial_skipped(r):
            out[key] = "skipped_trial"
            continue
        found = set(distribution_flags(cm)) | set(distribution_flags(m))
        reason = next((x for x in FLAG_REASONS[1:4] if x in found), None)
        if reason is None and not (cm["image_sha256"] is not None and cm["image_sha256"] == m["image_sha256"]):
            ck, pk = dist_keys(cm), dist_keys(m)
            if len(ck) >= 2 and ck == pk and [float(x) for x in cm["logprobs"]] == [float(x) for x in m["logprobs"]]:
                reason = "identical_across_conditions"
        out[key] = reason or vsi_of_records(cm, m) + (cr.correct,)
    return out


def _random_records(seed, n_samples=60, models=("a", "b", "c"), strings=False):
    """Records of every condition with distributions of lengths 1-50 over a small vocabulary (so
    the top-k sets overlap, coincide or miss), some complete, and every guard planted somewhere."""
    task = get_task("vsi.salbench.syn@n=4")
    rng = np.random.default_rng(seed)
    recs = []
    for model in models:
        for i in range(n_samples):
            sid = f"s{i:03d}"
            base = None
            for cond in ("clean", "region_blur", "whole_blur"):
                k = int(rng.choice([1, 2, 3, 5, 20, 50]))
                ids = rng.choice(60, size=k, replace=False).tolist()
                p = np.sort(rng.dirichlet(np.full(k, 0.5)))[::-1] * rng.choice([1.0, rng.uniform(0.2, 1.0)])
                lps = np.log(np.maximum(p, 1e-200)).tolist()
                sha, extra = f"{sid}{cond}", {}
                kind = rng.integers(0, 40)  # 0-10: a guard or a special case
                if cond == "clean":
                    base = (ids, lps)
                elif kind == 0:  # identical lists on another image: flagged
                    ids, lps = base
                elif kind == 1:  # identical lists on the same image: a VSI of 0
                    ids, lps = base
                    sha = f"{sid}clean"
                if kind == 2:
                    lps = [0.5] + lps[1:]  # a positive log-probability
                elif kind == 3 and k > 1:
                    ids = [ids[0]] + ids[:-1]  # a duplicate key
                elif kind == 4 and k > 1:
                    lps = [lps[0]] * k  # no ranking
                elif kind == 5:
                    ids, lps = [ids[0]], [0.0]  # one-hot
                elif kind == 6:
                    extra = {"skipped": "invalid", "skip_scope": "trial"}
                elif kind == 7 and k > 1:
                    lps = lps[:-1] + [None]  # null as JSON stores NaN
                elif kind == 8 and k > 1:
                    lps = lps[:-1]  # fewer log-probabilities than keys
                tokens = [" " if kind == 9 and j == 0 else f"t{x}" for j, x in enumerate(ids)]
                r = plant_vsi_record(task, cond, sid, None if strings else ids, lps, model=model, image_sha256=sha,
                                     tokens=tokens, response="B" if rng.random() < 0.7 else "C", **extra)
                r.run_meta.model_extra["vsi"]["complete"] = bool(kind == 10)
                recs.append(r)
    return recs


@pytest.mark.parametrize("seed, strings", [(0, False), (1, False), (2, True)])
def test_samples_on_arrays_equal_the_per_pair_definition(seed, strings):
    recs = _random_records(seed, strings=strings)
    want = _reference(recs)
    got = {(s.task_id, s.model, s.sample_id, s.perturbation): (s.vsi, s.argmax_changed, s.correct)
           for s in vsi_samples(recs)}
    got.update({(f.task_id, f.model, f.sample_id, f.perturbation): f.reason for f in vsi_flagged(recs)})
    assert got == want  # VSI bit for bit (floats compared with ==)
    reasons = {v for v in want.values() if isinstance(v, str)}
    assert reasons == set(FLAG_REASONS)  # every guard was exercised
    assert any(isinstance(v, tuple) and v[0] == 0.0 for v in want.values())  # same image, same lists
    assert sum(isinstance(v, tuple) for v in want.values()) > 150
    assert not any(isinstance(v, tuple) and math.isnan(v[0]) for v in got.values())


# ---------------------------------------------------------------- the columnar path (issue 25)

def _same_rows(a, b) -> bool:
    """Rows equal field for field (NaN equal to NaN)."""
    return [repr(vars(r)) for r in a] == [repr(vars(r)) for r in b]


RAWS = ("B", "b", "C", "Option B, or maybe option C.", "<think>C or B", "no idea", None)


def _file_records(seed=0):
    """One task's records with every irregular shape: the guards of :func:`_random_records`
    (flags, trial skips, invalid lists), clean answers to re-parse, region-blur fallbacks, a model
    skipped as a whole, and an image-withheld respondent paired with a model's clean records.  Fewer
    log-probabilities than keys is a damaged line, refused by the reader
    (:func:`test_a_damaged_vsi_line_is_refused_by_the_columns_and_the_records_alike`): such a record's keys are
    cut to its log-probabilities here."""
    task = get_task("vsi.salbench.syn@n=4")
    rng = np.random.default_rng(seed)
    recs = []
    for r in _random_records(seed, n_samples=25):
        upd = {}
        vsi = r.run_meta.model_extra["vsi"]
        if len(vsi["logprobs"]) != len(vsi["tokens"]):
            k = len(vsi["logprobs"])
            r = r.model_copy(update={"run_meta": r.run_meta.model_copy(update={"vsi": dict(
                vsi, token_ids=vsi["token_ids"][:k], tokens=vsi["tokens"][:k])})})
        if r.readout == "vlm_vsi_clean":
            upd["raw_output"] = RAWS[int(rng.integers(len(RAWS)))]
        if r.stimulus_id.endswith("~region_blur") and rng.random() < 0.2:
            vsi = dict(r.run_meta.model_extra["vsi"], fallback=True, region_source="fallback_whole")
            upd["run_meta"] = r.run_meta.model_copy(update={"vsi": vsi})
        recs.append(r.model_copy(update=upd))
    for i in range(4):
        recs.append(plant_vsi_record(task, "clean", f"s{i:03d}", [1, 2], [-0.5, -1.5], model="d",
                                     skipped="provider gives no logprobs"))
        recs.append(plant_vsi_record(task, "image_withheld", f"s{i:03d}", [1, 2, 3], [-0.4, -1.6, -3.0],
                                     model="a[image_withheld]", sigma_px=0.0, image_sha256=None))
    return recs


@pytest.mark.parametrize("mode", ["default", "strict"])
@pytest.mark.parametrize("seed, strings", [(0, False), (1, True)])
def test_vsi_task_read_as_columns_scores_like_its_records(tmp_path, monkeypatch, seed, strings, mode):
    """``score`` reads a VSI task's records into columns one at a time (no record list, no record
    kept) and gives exactly the rows of :func:`~perceptbench.scoring.score_records` on the same
    records: VSI cells with every guard, re-parsed clean answers and their counts, fallbacks, a
    skipped model, the image-withheld cell and the cross-task analyses."""
    from perceptbench.record_table import ColumnarRecords, read_columns
    from perceptbench.scoring import score_file, score_records
    from perceptbench.vsi.samples import read_vsi_columns

    from helpers.records import plant_records

    recs = _file_records(seed)
    if strings:  # keys by token string (API providers)
        recs = [r.model_copy(update={"run_meta": r.run_meta.model_copy(update={"vsi": dict(
            r.run_meta.model_extra["vsi"], token_ids=None)})}) if "vsi" in (r.run_meta.model_extra or {}) else r
            for r in recs]
    p = plant_records(tmp_path / "run", recs)
    tid = recs[0].task_id
    assert read_vsi_columns(read_columns(p), tid) is not None

    def refuse(*a, **k):
        raise AssertionError("a VSI task was read back as a record list")

    monkeypatch.setattr(ColumnarRecords, "records", refuse)
    rows = score_file(p, tmp_path / "scores.csv", parser_mode=mode)
    want = score_records(recs, parser_mode=mode, features_dir=p.parent / "features")
    assert _same_rows(rows, want)
    metrics = {r.metric for r in rows}
    assert {"n_flagged[region_blur,sigma=20]", "n_fallback[region_blur,sigma=20]", "skipped", "n_ambiguous",
            "vsi_median[image_withheld]", "accuracy"} <= metrics
    assert any(r.metric == "n_fallback[region_blur,sigma=20]" and r.value > 0 for r in rows)
    assert any(r.metric.startswith("vsi_rho[") for r in rows)  # the suite analysis ran on the kept samples


def test_vsi_columns_equal_the_records_column_for_column(tmp_path):
    """The columns read off the file (re-parsed on them) hold, record for record, what the record path
    reads: the same pairs, and the same VSI fields."""
    from perceptbench.record_table import read_columns
    from perceptbench.scoring import apply_parser_mode, reparse_columns
    from perceptbench.vsi.samples import VSIColumns, read_vsi_columns, vsi_columns

    from helpers.records import plant_records

    recs = _file_records(2)
    p = plant_records(tmp_path / "run", recs)
    task = get_task(recs[0].task_id)
    c, _ = reparse_columns(read_vsi_columns(read_columns(p), task.task_id), task, "default")
    got, want = vsi_columns(c), VSIColumns.from_records(apply_parser_mode(recs, "default"))
    assert vsi_columns(c) is got  # built once for the same responses
    assert got.pairs() == want.pairs() and len(got.pairs()) > 100
    assert [got.models[m] for m in got.model] == [want.models[m] for m in want.model]
    assert np.array_equal(got.correct, want.correct) and np.array_equal(got.response_null, want.response_null)
    for k in ("pairs_in", "trial_skip", "dist_row"):
        assert np.array_equal(getattr(got.side, k), getattr(want.side, k))
    for k in ("sigma", "max_prob", "verbal_conf", "mismatch", "fallback"):
        assert getattr(got.side, k) == getattr(want.side, k)


def test_bad_vsi_line_refused_naming_file_line_and_field(tmp_path):
    """A VSI line the columnar checks pass but the schema refuses stops ``score`` with the validating
    reader's one-line error (file, line, field); so does a VSI record that lacks a key of
    ``run_meta.vsi``, as the record path does."""
    from perceptbench.records import RecordError
    from perceptbench.scoring import score_file, score_records

    from helpers.records import plant_records

    recs = _file_records(3)
    p = plant_records(tmp_path / "run", recs)
    lines = p.read_text().splitlines(keepends=True)
    i = 7
    o = json.loads(lines[i])
    o["principle"] = 3
    bad = tmp_path / "bad" / "records.jsonl"
    bad.parent.mkdir()
    bad.write_text("".join(lines[:i] + [json.dumps(o) + "\n"] + lines[i + 1:]))
    with pytest.raises(RecordError, match=rf"^{bad}:{i + 1}: field principle"):
        score_file(bad, tmp_path / "bad.csv")
    o = json.loads(lines[i])
    del o["run_meta"]["vsi"]["image_id"]
    bad.write_text("".join(lines[:i] + [json.dumps(o) + "\n"] + lines[i + 1:]))
    with pytest.raises(RecordError, match=rf"^{bad}:{i + 1}: field run_meta.vsi: lacks \['image_id'\]") as got:
        score_file(bad, tmp_path / "bad.csv")
    with pytest.raises(ValueError) as want:
        score_records(read_records_of(bad))
    assert str(got.value) == str(want.value)


def read_records_of(path):
    from perceptbench.records import read_records

    return read_records(path)


def test_vsi_tasks_the_columns_cannot_take_score_from_records(tmp_path):
    """Two prompt versions of one model (split into respondents) take the record path, with the same
    rows as :func:`score_records`; every VSI task, those with benchmark-native rows included, scores
    on the columns otherwise."""
    from perceptbench.record_table import read_columns
    from perceptbench.scoring import score_file, score_records
    from perceptbench.vsi.samples import read_vsi_columns

    from helpers.records import plant_records

    recs = _file_records(4)
    recs = [r.model_copy(update={"run_meta": r.run_meta.model_copy(update={"prompt_template_hash": "v2"})})
            if r.model == "b" and r.stimulus_id.startswith("s00") else r for r in recs]
    p = plant_records(tmp_path / "run", recs)
    assert read_vsi_columns(read_columns(p), recs[0].task_id) is None
    assert _same_rows(score_file(p, tmp_path / "s.csv"), score_records(recs, features_dir=p.parent / "features"))
    assert get_task("vsi.salbench.syn").scores_columns and get_task("vsi.closure.nat.silhouette").scores_columns
    assert all(get_task(t).scores_columns for t in ("vsi.pope", "vsi.hallusionbench", "vsi.mmvp", "vsi.mmstar"))


@pytest.mark.parametrize("strings", [False, True])
def test_distributions_read_in_blocks_equal_one_block(monkeypatch, strings):
    """Distributions turned into arrays a few records at a time (then copied into place) give the
    pairs of one block, bit for bit."""
    from perceptbench.vsi import samples

    recs = _random_records(5, n_samples=30, strings=strings)
    whole = samples._pairs(recs)
    monkeypatch.setattr(samples._Distributions, "BLOCK", 3)
    assert len(whole) > 150
    assert samples._pairs(recs) == whole


# ------------------------------------------- VSI fields read in read_columns' duckdb pass (issue 25)

def _regular_file_records(seed: int):
    """:func:`_file_records` with every log-probability a number (a null sends a task to the record
    path), plus the shapes the record path reads without judging them: integers where floats are
    written (sigma, max_prob, verbal confidence), a null verbal confidence, an answer-token mismatch
    flag, a ``vote`` key, tokens absent, and tricky doubles among the log-probabilities."""
    recs = []
    for j, r in enumerate(_file_records(seed)):
        vsi = dict(r.run_meta.model_extra["vsi"])
        vsi["logprobs"] = [-30.0 if x is None else x for x in vsi["logprobs"]]
        if vsi["condition"] == "clean":
            if j % 7 == 0:
                vsi["verbal_conf"] = None
            elif j % 7 == 1:
                vsi["verbal_conf"] = 80
            elif j % 7 == 2:
                vsi["flags"] = ["answer_token_mismatch"]
            elif j % 7 == 3 and vsi["logprobs"] == [0.0]:
                vsi["max_prob"] = 1
        elif j % 5 == 0:
            vsi["sigma_px"] = 20
        if j % 11 == 0:
            vsi["logprobs"] = [x if i else -5e-324 if x == 0 else x for i, x in enumerate(vsi["logprobs"])]
            vsi["logprobs"] = vsi["logprobs"][:1] + [x / 3 for x in vsi["logprobs"][1:]]
        if j % 13 == 0:
            vsi["tokens"] = None
        update = {"vsi": vsi}
        if j == 5:
            update["vote"] = None
        recs.append(r.model_copy(update={"run_meta": r.run_meta.model_copy(update=update)}))
    return recs


def _assert_same_reader(a, b):
    """Two :class:`VSIReader` hold the same values for every record (floats bit for bit)."""
    for k in ("pairs_in", "trial_skip", "vote", "dist_row"):
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    for k in ("sample", "image", "benchmark", "condition", "region", "sha"):
        assert [a.values[k][i] for i in getattr(a, k)] == [b.values[k][i] for i in getattr(b, k)], k
    assert [a.skips[i] for i in a.skip] == [b.skips[i] for i in b.skip]
    for k in ("sigma", "max_prob", "verbal_conf_of_pair", "verbal_conf", "mismatch", "fallback"):
        x, y = getattr(a, k), getattr(b, k)
        assert [(type(v), v) for v in x] == [(type(v), v) for v in y], k  # the record's own values
    assert np.array_equal(a.dist.flags, b.dist.flags) and np.array_equal(a.dist.complete, b.dist.complete)
    assert np.array_equal(a.dist.where, b.dist.where) and a.dist.lp.keys() == b.dist.lp.keys()
    for k in b.dist.lp:
        assert np.array_equal(a.dist.lp[k].view(np.uint64), b.dist.lp[k].view(np.uint64)), k
        assert np.array_equal(a.dist.keys[k], b.dist.keys[k]), k


@pytest.mark.parametrize("seed", [0, 1])
def test_vsi_fields_read_with_the_columns_equal_the_record_path(tmp_path, seed):
    """The VSI reader built from the fields duckdb read in ``read_columns``' pass holds, record for
    record, what the record path reads of the same lines: skips (trial and model), votes, every
    guard, fallbacks, mismatch flags, integers and nulls where floats are expected, and the
    distributions bit for bit."""
    from perceptbench.record_table import read_columns
    from perceptbench.vsi.samples import VSIReader

    from helpers.records import plant_records

    recs = _regular_file_records(seed)
    p = plant_records(tmp_path / "run", recs)
    cols = read_columns(p)
    tid = recs[0].task_id
    c = cols[tid]
    assert c.vsi_fields is not None
    clean = c.readout == c.readouts.index("vlm_vsi_clean")
    got = VSIReader.from_fields(c.vsi_fields, clean)
    want = VSIReader()
    for r in cols.iter_records(tid):
        want.add(r)
    want.finish()
    assert got is not None
    _assert_same_reader(got, want)
    assert got.vote.sum() == 1 and got.trial_skip.any() and (~got.pairs_in).any()
    assert any(m for m in got.mismatch if m) and None in got.verbal_conf and 80 in got.verbal_conf


def test_vsi_task_scored_from_the_columns_parses_no_line_again(tmp_path, monkeypatch):
    """``score`` of a VSI task whose lines the columns take reads no line back (no record built) and
    gives exactly the rows of :func:`~perceptbench.scoring.score_records`."""
    from perceptbench.record_table import ColumnarRecords
    from perceptbench.scoring import score_file, score_records

    from helpers.records import plant_records

    recs = [r for r in _regular_file_records(2) if "vote" not in r.run_meta.model_extra]
    p = plant_records(tmp_path / "run", recs)

    def refuse(*a, **k):
        raise AssertionError("a VSI line was parsed again")

    monkeypatch.setattr(ColumnarRecords, "iter_records", refuse)
    rows = score_file(p, tmp_path / "scores.csv")
    monkeypatch.undo()
    assert _same_rows(rows, score_records(recs, features_dir=p.parent / "features"))
    assert any(r.metric == "skipped" for r in rows) and any(r.metric.startswith("vsi_median[") for r in rows)


@pytest.mark.parametrize("edit, taken", [
    (lambda v: v.update(logprobs=v["logprobs"][:-1] + [None]), False),
    (lambda v: v.update(token_ids=None, tokens=[str(i) for i in v["token_ids"]]), False),
    (lambda v: v.update(tokens=[None]), False), (lambda v: v.update(skipped=["a"]), False),
    (lambda v: v.update(flags="answer_token_mismatch"), True),
    (lambda v: v.update(sample_id=7), True), (lambda v: v.update(complete="yes"), True),
    (lambda v: v.update(token_ids=[], logprobs=[]), True)])
def test_vsi_fields_the_columns_do_not_take_go_to_the_record_path(tmp_path, edit, taken):
    """A VSI line with a field of a type the record path reads otherwise (or judges) is not read from
    the columns: its task takes the record path and scores (or fails) exactly as it.  Values the
    columns read as the record path does (an integer sample id, a truthy ``complete``, ``flags`` a
    string, lists that are not a distribution) are taken, with the same rows.  (Lines the reader
    refuses: :func:`test_a_damaged_vsi_line_is_refused_by_the_columns_and_the_records_alike`.)"""
    from perceptbench.record_table import read_columns
    from perceptbench.scoring import score_file, score_records
    from perceptbench.vsi.samples import VSIReader

    from helpers.records import plant_records

    recs = [r for r in _regular_file_records(3) if "vote" not in r.run_meta.model_extra]
    i = next(j for j, r in enumerate(recs) if r.readout == "vlm_vsi_clean" and len(
        r.run_meta.model_extra["vsi"]["logprobs"]) > 2 and "skipped" not in r.run_meta.model_extra)
    vsi = dict(recs[i].run_meta.model_extra["vsi"])
    edit(vsi)
    meta = {"vsi": vsi}
    if "skipped" in vsi:  # run_meta.skipped, an unhashable value
        meta["skipped"] = vsi.pop("skipped")
    recs[i] = recs[i].model_copy(update={"run_meta": recs[i].run_meta.model_copy(update=meta)})
    p = plant_records(tmp_path / "run", recs)
    c = read_columns(p)[recs[0].task_id]
    got = VSIReader.from_fields(c.vsi_fields, c.readout == c.readouts.index("vlm_vsi_clean"))
    assert (got is not None) == taken
    try:
        want = score_records(recs, features_dir=p.parent / "features")
    except Exception as e:  # noqa: BLE001 - the same error either way
        with pytest.raises(type(e), match="^" + re.escape(str(e)) + "$"):
            score_file(p, tmp_path / "s.csv")
        return
    assert _same_rows(score_file(p, tmp_path / "s.csv"), want)


def _edit_vsi(**fields):
    """An edit of a line's ``run_meta.vsi`` (the parsed line ``o``): ``fields`` set on it."""
    return lambda o: o["run_meta"]["vsi"].update(fields)


def _logprob_text(text: str):
    """An edit writing the literal ``text`` as the line's second log-probability (``1e400``, ``NaN``)."""
    def edit(o):
        o["run_meta"]["vsi"]["logprobs"][1] = 0.125  # a marker, replaced in the text
    return edit, ("0.125", text)


def _twice(first: str, again: str):
    """A key given twice: the text ``first`` (a key and its value, once in the line) followed by
    ``again`` (the same key, another value)."""
    return (lambda o: None), (first, f"{first}, {again}")


#: damaged VSI lines (an edit of the parsed line, or of its text) -> the field the message names
DAMAGED = {
    "logprob_string": ((_edit_vsi(logprobs=[-0.5, "x", -2.0]), None), "run_meta.vsi.logprobs"),
    "logprobs_one_short": ((lambda o: o["run_meta"]["vsi"]["logprobs"].pop(), None), "run_meta.vsi.logprobs"),
    "vsi_null": ((lambda o: o["run_meta"].update(vsi=None), None), "run_meta.vsi"),
    "vsi_a_list": ((lambda o: o["run_meta"].update(vsi=[1]), None), "run_meta.vsi"),
    "logprob_1e400": (_logprob_text("1e400"), "run_meta.vsi.logprobs"),
    "logprob_nan": (_logprob_text("NaN"), "run_meta.vsi.logprobs"),
    "logprob_minus_infinity": (_logprob_text("-Infinity"), "run_meta.vsi.logprobs"),
    "condition_twice": (_twice('"condition": "region_blur"', '"condition": "clean"'), "run_meta.vsi.condition"),
    "vsi_twice_in_run_meta": ((lambda o: None, ('"vsi": {', '"vsi": {"condition": "clean"}, "vsi": {')),
                              "run_meta.vsi"),
    "sigma_string": ((_edit_vsi(sigma_px="x"), None), "run_meta.vsi.sigma_px"),
    "sigma_null": ((_edit_vsi(sigma_px=None), None), "run_meta.vsi.sigma_px"),
    "sigma_negative": ((_edit_vsi(sigma_px=-20.0), None), "run_meta.vsi.sigma_px"),
    "vsi_key_deleted": ((lambda o: o["run_meta"].pop("vsi"), None), "run_meta.vsi"),
    "max_prob_beyond_doubles": ((_edit_vsi(max_prob=10 ** 400), None), "run_meta.vsi.max_prob"),
    "verbal_conf_string": ((_edit_vsi(verbal_conf="80"), None), "run_meta.vsi.verbal_conf"),
    "token_id_float": ((_edit_vsi(token_ids=[1.0, 2, 3]), None), "run_meta.vsi.token_ids"),
    "tokens_a_string": ((_edit_vsi(token_ids=None, tokens="abc"), None), "run_meta.vsi.tokens"),
    "no_keys_at_all": ((_edit_vsi(token_ids=None, tokens=None), None), "run_meta.vsi.tokens"),
    "key_missing": ((lambda o: o["run_meta"]["vsi"].pop("verbal_raw"), None), "run_meta.vsi"),
    "unknown_condition": ((_edit_vsi(condition="zoom"), None), "run_meta.vsi.condition"),
    "max_prob_null_on_clean": ((_edit_vsi(max_prob=None), None), "run_meta.vsi.max_prob"),
}
CLEAN_ONLY = ("max_prob_null_on_clean",)  # a perturbed record's max_prob is null


@pytest.mark.parametrize("damage, clean", [(d, c) for d in DAMAGED for c in (False, True) if c or d not in CLEAN_ONLY],
                         ids=[f"{'clean' if c else 'perturbed'}_line-{d}" for d in DAMAGED for c in (False, True)
                              if c or d not in CLEAN_ONLY])
def test_a_damaged_vsi_line_is_refused_by_the_columns_and_the_records_alike(tmp_path, damage, clean):
    """A damaged VSI line (a log-probability that is a string, a number beyond the doubles or NaN; lists
    of unequal lengths; ``run_meta.vsi`` null; a key given twice; a sigma that is no number; ...) is
    refused by the one VSI line rule (:func:`perceptbench.records.vsi_meta_problem`) with one message
    naming file, line and field, whichever reader meets it: ``score``'s columnar read (which takes no
    such line from its columns), ``export``'s (:func:`records_arrow`: it refuses the line, or hands
    the file to :func:`iter_task_records`) and the record path (``validate``, ``merge``:
    :func:`read_records`)."""
    from perceptbench.record_table import iter_task_records, read_columns
    from perceptbench.records import RecordError, read_records
    from perceptbench.reports.export import records_arrow
    from perceptbench.scoring import score_file
    from perceptbench.vsi.samples import VSIReader

    from helpers.records import plant_records

    (edit, text), field = DAMAGED[damage]
    recs = [r for r in _regular_file_records(3) if "vote" not in r.run_meta.model_extra]
    cond = "clean" if clean else "region_blur"
    i = next(j for j, r in enumerate(recs) if r.run_meta.model_extra["vsi"]["condition"] == cond
             and len(r.run_meta.model_extra["vsi"]["logprobs"]) > 2 and "skipped" not in r.run_meta.model_extra)
    if damage == "condition_twice" and clean:
        text = ('"condition": "clean"', '"condition": "clean", "condition": "region_blur"')
    p = plant_records(tmp_path / "run", recs)
    lines = p.read_text().splitlines(keepends=True)
    o = json.loads(lines[i])
    edit(o)
    line = json.dumps(o) + "\n"
    if text is not None:
        assert line.count(text[0]) == 1
        line = line.replace(text[0], text[1])
    p.write_text("".join(lines[:i] + [line] + lines[i + 1:]))
    where = f"{p}:{i + 1}: field {field}: "
    with pytest.raises(RecordError) as columns:
        score_file(p, tmp_path / "s.csv")
    with pytest.raises(RecordError) as records:
        read_records(p)
    with pytest.raises(RecordError) as by_task:
        list(iter_task_records(p))
    assert str(columns.value).startswith(where), str(columns.value)
    assert str(columns.value) == str(records.value) == str(by_task.value)
    try:
        assert records_arrow(p) is None  # export reads the file with iter_task_records
    except RecordError as e:
        assert str(e) == str(records.value)
    try:  # the columns take no damaged line: the read refuses it, or hands its task to the record path
        c = read_columns(p)[recs[0].task_id]
    except RecordError as e:
        assert str(e) == str(records.value)
    else:
        assert c.vsi_fields is None or VSIReader.from_fields(
            c.vsi_fields, c.readout == c.readouts.index("vlm_vsi_clean")) is None


def test_vsi_lines_legal_by_design_are_read_and_scored(tmp_path):
    """What the VSI line rule leaves alone, as perceptbench writes (or once wrote) it: a log-probability
    null (NaN or an infinity, as the writer stores them; the pair is flagged invalid, not refused),
    with a null ``max_prob`` on its clean record; trial-level and model-level skips (empty lists, no
    ``max_prob``); an API distribution (``token_ids`` null); a clean answer that did not parse (a null
    response); the image-withheld condition (``image_sha256`` and ``max_prob`` null).  Every reader
    takes them, and ``score`` gives the record path's rows.  (A VSI record without ``run_meta.vsi``
    is no longer among them: perceptbench has written it on every VSI record since the first VSI
    release, so a file's record without it lost its distribution, and is refused.)"""
    from perceptbench.record_table import iter_task_records
    from perceptbench.records import read_records
    from perceptbench.reports.export import records_arrow
    from perceptbench.scoring import score_file, score_records
    from perceptbench.vsi.respondent import EMPTY_DIST

    from helpers.records import plant_records, plant_vsi_record

    task = get_task("vsi.salbench.syn@n=4")
    lp = [-0.6, -1.6, -2.6]
    recs = []
    for i in range(4):
        recs += [plant_vsi_record(task, "clean", f"s{i}", [1, 2, 3], lp, image_sha256=f"{i}c", response=None,
                                  raw_output="I cannot tell"),
                 plant_vsi_record(task, "region_blur", f"s{i}", [1, 2, 3], [-0.7, -1.2, -2.4], image_sha256=f"{i}r"),
                 plant_vsi_record(task, "clean", f"s{i}", None, lp, model="api", tokens=["B", "C", "A"],
                                  image_sha256=f"{i}c"),
                 plant_vsi_record(task, "whole_blur", f"s{i}", None, [-1.2, -0.9, -2.0], model="api",
                                  tokens=["B", "C", "A"], image_sha256=f"{i}w"),
                 plant_vsi_record(task, "image_withheld", f"s{i}", [1, 2, 3], [-1.0, -1.1, -1.3],
                                  model="m[image_withheld]", sigma_px=0.0, image_sha256=None)]
    nan = plant_vsi_record(task, "clean", "s4", [1, 2, 3], [float("nan"), -1.6, -2.6], image_sha256="4c")
    recs += [nan, plant_vsi_record(task, "region_blur", "s4", [1, 2, 3], [-0.7, float("-inf"), -2.4],
                                   image_sha256="4r")]
    for cond, extra in (("clean", {"skip_scope": "trial"}), ("region_blur", {"skip_scope": "trial"})):
        r = plant_vsi_record(task, cond, "s5", [1], [0.0], skipped="invalid next-token distribution", **extra)
        vsi = dict(r.run_meta.model_extra["vsi"], **EMPTY_DIST, distribution_source="hf_logits")
        recs.append(r.model_copy(update={"run_meta": r.run_meta.model_copy(update={"vsi": vsi})}))
    skip = plant_vsi_record(task, "clean", "s0", [1], [0.0], model="gone", skipped="no logprobs")
    recs.append(skip.model_copy(update={"run_meta": skip.run_meta.model_copy(update={"vsi": dict(
        skip.run_meta.model_extra["vsi"], **EMPTY_DIST, distribution_source="api_top_logprobs")})}))
    p = plant_records(tmp_path / "run", recs)
    assert '"logprobs":[null,' in p.read_text() and '"max_prob":null' in p.read_text()  # NaN as written
    back = read_records(p)
    assert len(back) == len(recs) == sum(len(rs) for _, rs in iter_task_records(p)) == records_arrow(p).num_rows
    rows = score_file(p, tmp_path / "s.csv")
    assert _same_rows(rows, score_records(back, features_dir=p.parent / "features"))
    value = {(r.model, r.metric): r.value for r in rows}
    assert value[("m", "n_flagged[region_blur,sigma=20]")] == 2  # s4 (a NaN, an infinity) and s5 (skipped)
    assert value[("m", "n_parse_null")] == 5  # s0-s3 unparsed, s4 without a raw answer
    assert "gone" in {r.model for r in rows if r.metric == "skipped"}
    assert ("api", "vsi_median[whole_blur,sigma=20]") in value
    assert value[("m[image_withheld]", "vsi_median[image_withheld]")] >= 0


def test_the_line_rule_knows_the_conditions_scoring_reads():
    """The VSI line rule (perceptbench.records) and the VSI scoring (perceptbench.vsi.samples) name the
    same conditions."""
    from perceptbench.records import VSI_CONDITIONS
    from perceptbench.vsi.samples import CONDITIONS, PERTURBATIONS

    assert set(VSI_CONDITIONS) == {"clean", *PERTURBATIONS} == {*CONDITIONS, "image_withheld"}
