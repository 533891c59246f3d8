"""The benchmark-native rows (:mod:`perceptbench.vsi.native`) on the columns: a file of each external
VSI task's records scores from its columns, no record object built, exactly as from its records
(:func:`~perceptbench.scoring.score_records`), under every parser mode.  The records hold every
shape the rows read: lettered answers whose options only the record's ``run_meta.vsi_answer``
holds, unparseable answers, skipped trials, image-withheld answers with and without their text,
questions asked without an image, a base LLM, label corrections and visual patterns.  (The
formulas are pinned by tests/known_answers/test_vsi_native.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from helpers.records import plant_records, plant_vsi_record
from perceptbench.records import score_correct
from perceptbench.tasks import get_task

YES_NO = ("yes", "No.", "Yes, there is.", "not sure", "", "I think so", None)
LETTERS = ("A", "(b)", "The answer is C.", "B) a dog", "d", "maybe", "**A**", None)


def _external(bench: str, i: int, rng) -> tuple[dict, dict, bool]:
    """(run_meta.external, run_meta.vsi_answer, asked without an image) of question ``i``."""
    if bench == "pope":
        return {"split": "adversarial", "question_id": i}, {"type": "yes_no", "options": []}, False
    if bench == "hallusionbench":
        cat = "VS" if i % 3 == 0 else "VD"
        fig = str(i % 2) if cat == "VS" else str(i % 3)
        ext = {"category": cat, "subcategory": ("chart", "illusion")[i % 2], "set_id": str(i // 6),
               "figure_id": fig, "question_id": str(i % 4)}
        return ext, {"type": "yes_no", "options": []}, cat == "VS" and fig == "0"
    if bench == "mmvp":
        ext = {"pair": i // 2 + 1, "pattern": ("color", "orientation", None)[i // 2 % 3],
               "label_corrected": i in (3, 8)}
        return ext, {"type": "letter", "options": [f"option {i}", f"other {i}"]}, False
    cats = ("math", "coarse perception", "logical reasoning")
    ext = {"category": cats[i % 3], "l2_category": ("geometry", "image emotion", "diagram reasoning")[i % 3]}
    return ext, {"type": "letter", "options": [f"o{k}" for k in range(4)]}, False


def _answer_record(task, cond: str, sid: str, model: str, raw, truth, meta: dict, rng, **kw):
    """A VSI record of ``model`` under ``cond`` carrying the answer ``raw`` (parsed as the task
    parses it at run time) and a random first-token distribution."""
    lps = np.sort(np.log(rng.dirichlet(np.ones(5))))[::-1].tolist()
    ids = rng.permutation(30)[:5].tolist()
    r = plant_vsi_record(task, cond, sid, ids, lps, raw_output=raw, model=model, conf=None,
                         benchmark=task.benchmark, sigma_px=0.0 if cond in ("clean", "image_withheld") else 20.0,
                         image_sha256=None if cond == "image_withheld" else f"sha-{sid}-{cond}", **meta, **kw)
    response = task.parse_clean(raw, meta)[0] if raw is not None or cond == "clean" else None
    if cond == "whole_blur":
        response = None
    return r.model_copy(update={"response": response, "ground_truth": truth,
                                "correct": score_correct(response, truth)})


def _task_records(spec: str, seed: int) -> list:
    task = get_task(spec)
    bench = task.base_id.split(".")[1]
    rng = np.random.default_rng(seed)
    raws = YES_NO if bench in ("pope", "hallusionbench") else LETTERS
    recs = []
    for i in range(18):
        sid = f"{bench}-{i:02d}"
        ext, answer, blind = _external(bench, i, rng)
        truth = ("yes", "no")[i % 2] if answer["type"] == "yes_no" else "AB"[i % 2]
        meta = {"external": ext, "vsi_answer": answer, **({"no_image": True} if blind else {})}
        text = lambda: raws[int(rng.integers(len(raws)))]  # noqa: E731
        skip = {"skipped": "provider error", "skip_scope": "trial"} if i == 5 else {}
        if not blind:
            recs.append(_answer_record(task, "clean", sid, "a", text(), truth, meta, rng, **skip))
            recs.append(_answer_record(task, "whole_blur", sid, "a", text(), truth, meta, rng))
        # without the image: an answer, or (i % 7 == 3) a record written before answers were kept
        recs.append(_answer_record(task, "image_withheld", sid, "a[image_withheld]",
                                   None if i % 7 == 3 else text(), truth, meta, rng))
        if bench == "mmstar":  # the base LLM, asked without the image
            recs.append(_answer_record(task, "image_withheld", sid, "base[image_withheld]", text(), truth, meta, rng))
    rng.shuffle(recs)
    return recs


SPECS = ("vsi.pope@perturbation=whole", "vsi.hallusionbench@perturbation=whole", "vsi.mmvp@perturbation=whole",
         "vsi.mmstar@base_llm=base")
NATIVE = {"vsi.pope": "pope.f1@nulls_as_wrong", "vsi.hallusionbench": "hallusionbench.qAcc",
          "vsi.mmvp": "mmvp.pair_accuracy[color]", "vsi.mmstar": "mmstar.multimodal_leakage"}


def _same_rows(a, b) -> bool:
    return [repr(vars(r)) for r in a] == [repr(vars(r)) for r in b]


@pytest.mark.parametrize("mode", ["default", "strict", "seed"])
def test_native_rows_score_on_the_columns_like_the_records(tmp_path, monkeypatch, mode):
    """All four external VSI tasks in one file: ``score`` takes each from its columns (reading a task back
    as records fails the test) and gives, row for row, what :func:`score_records` gives on the same
    records, the benchmark-native rows included (lettered answers re-parsed with the options of
    their own records)."""
    from perceptbench.record_table import ColumnarRecords, read_columns
    from perceptbench.scoring import score_file, score_records
    from perceptbench.vsi.samples import read_vsi_columns

    recs = [r for i, spec in enumerate(SPECS) for r in _task_records(spec, i)]
    p = plant_records(tmp_path / "run", recs)
    columns = read_columns(p)
    assert all(read_vsi_columns(columns, t) is not None for t in columns)

    def refuse(*a, **k):
        raise AssertionError("an external VSI task was read back as records")

    monkeypatch.setattr(ColumnarRecords, "records", refuse)
    monkeypatch.setattr(ColumnarRecords, "iter_records", refuse)
    rows = score_file(p, tmp_path / "scores.csv", parser_mode=mode)
    want = score_records(recs, parser_mode=mode, features_dir=p.parent / "features")
    assert _same_rows(rows, want)
    got = {(r.task_id.split("@")[0], r.model, r.metric): r for r in rows}
    for base, metric in NATIVE.items():
        assert np.isfinite(got[(base, "a", metric)].value), (base, metric)
    assert got[("vsi.mmstar", "a[image_withheld]", "mmstar.accuracy")].n == 15  # 18 less 3 without their text
    assert got[("vsi.mmvp", "a", "mmvp.pair_accuracy")].n > 0


def test_lettered_answers_parse_with_their_own_options_on_the_columns(tmp_path):
    """An answer that names an option by its text reads as that option's letter only with the
    options of its own record: two records with one answer text and different options parse to
    different letters on the columns, as on the records."""
    from perceptbench.record_table import read_columns
    from perceptbench.scoring import apply_parser_mode, reparse_columns
    from perceptbench.vsi.samples import read_vsi_columns

    task = get_task("vsi.mmvp@perturbation=whole")
    rng = np.random.default_rng(0)
    recs = [_answer_record(task, "clean", f"q{i}", "a", "It is the red one.", "A",
                           {"external": {"pair": 1}, "vsi_answer": {"type": "letter", "options": opts}}, rng)
            for i, opts in enumerate((["the red one", "the blue one"], ["the blue one", "the red one"]))]
    p = plant_records(tmp_path / "run", recs)
    c, _ = reparse_columns(read_vsi_columns(read_columns(p), task.task_id), task, "default")
    got = [c.values[k] for k in c.response]
    assert got == [r.response for r in apply_parser_mode(recs, "default")] == ["A", "B"]


@pytest.mark.parametrize("mode, want", [("default", "B"), ("strict", None), ("seed", "B")])
def test_answers_given_without_the_image_are_re_parsed_under_the_parser_mode(tmp_path, mode, want):
    """An image-withheld answer is re-parsed under ``--parser`` like the clean answer it is compared
    with (MMStar's S_wv against S_v): "Option B, or maybe option C." reads B, null when strict, on
    the records and on the columns alike, and is counted among the respondent's parse rows."""
    from perceptbench.scoring import score_file, score_records

    task = get_task("vsi.mmstar@base_llm=base")
    rng = np.random.default_rng(1)
    meta = {"external": {"category": "math", "l2_category": "geometry"},
            "vsi_answer": {"type": "letter", "options": ["o0", "o1", "o2", "o3"]}}
    recs = []
    for i in range(6):
        recs.append(_answer_record(task, "clean", f"q{i}", "a", "B", "B", meta, rng))
        recs.append(_answer_record(task, "whole_blur", f"q{i}", "a", None, "B", meta, rng))
        recs.append(_answer_record(task, "image_withheld", f"q{i}", "a[image_withheld]",
                                   "Option B, or maybe option C.", "B", meta, rng))
    p = plant_records(tmp_path / "run", recs)
    for rows in (score_file(p, tmp_path / "s.csv", parser_mode=mode), score_records(recs, parser_mode=mode)):
        got = {r.metric: r for r in rows if r.model == "a[image_withheld]"}
        acc = got["mmstar.accuracy"]
        assert (acc.value, acc.n_null) == ((1.0, 0) if want == "B" else (0.0, 6))
        changed = got["n_reparsed_changed"]  # recorded at run time under the default parser
        assert (changed.value, changed.n, changed.n_null) == ((0.0, 6, 0) if want else (6.0, 6, 6))
        assert got["n_ambiguous"].value == 6 and got["n_ambiguous"].n == 6  # B and C both named
        gain = next(r for r in rows if r.model == "a" and r.metric == "mmstar.multimodal_gain")
        assert gain.value == (0.0 if want else 1.0)


@pytest.mark.parametrize("external, what", [(None, "missing or null"), ("oops", "a str, not an object"),
                                            ([1, 2], "a list, not an object")])
def test_an_answer_without_its_benchmark_ids_is_refused_naming_the_trial(tmp_path, external, what):
    """An answer whose ``run_meta.external`` is gone or not an object stops scoring with one message
    naming the trial, the same on the columns and the records, instead of a traceback (a string) or a
    question scored in a made-up group "None" (a missing key)."""
    import json
    import re

    from perceptbench.records import read_records
    from perceptbench.scoring import score_file, score_records

    p = plant_records(tmp_path / "run", _task_records("vsi.mmstar@base_llm=base", 0))
    lines = p.read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if '"vlm_vsi_clean"' in ln and '"skipped"' not in ln)
    o = json.loads(lines[i])
    del o["run_meta"]["external"]
    if external is not None:
        o["run_meta"]["external"] = external
    lines[i] = json.dumps(o) + "\n"
    p.write_text("".join(lines))
    want = "^" + re.escape(f"record {o['trial_id']}: run_meta.external is {what};")
    with pytest.raises(ValueError, match=want):
        score_file(p, tmp_path / "s.csv")
    with pytest.raises(ValueError, match=want):
        score_records(read_records(p))
    # validate refuses the line by the same rule and words, so a file it passes scores
    from helpers.cli import cli

    v = cli("validate", p, in_process=True, columns=1000)
    assert v.returncode == 2 and f"{p}:{i + 1}: run_meta.external is {what}; the benchmark's own rows" in v.stdout
    assert v.stdout.rstrip().endswith("1 problem(s)"), v.stdout
