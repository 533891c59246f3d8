"""scoring.py: the scores table as written (scores.csv, scores.json)."""


def test_scores_csv_writes_counts_as_integers(tmp_path):
    """Before: n_no_human_ref 0.0, n_verbal_conf_missing 23.0, capacity_k 8.0,2.0,8.0."""
    import csv

    from perceptbench.scoring import write_scores
    from perceptbench.core.rows import ScoreRow

    rows = [ScoreRow("t", "m", "capacity_k", 8.0, 2.0, 8.0, 40, 0), ScoreRow("t", "m", "n_verbal_conf_missing", 23.0,
                                                                             None, None, 40, None),
            ScoreRow("t", "m", "accuracy", 0.8625, 0.75, 1.0, 40, 0), ScoreRow("t", "m", "B", 2 / 3, None, None, 3, 0)]
    csv_path, _ = write_scores(rows, tmp_path / "scores.csv")
    got = {r["metric"]: r for r in csv.DictReader(open(csv_path))}
    assert (got["capacity_k"]["value"], got["capacity_k"]["ci_low"], got["capacity_k"]["ci_high"]) == ("8", "2", "8")
    assert got["n_verbal_conf_missing"]["value"] == "23"
    assert got["accuracy"]["value"] == "0.8625" and got["accuracy"]["ci_high"] == "1.0"  # not a count: as before
    assert got["B"]["value"] == "0.666667"


def _reparse_records():
    """Silhouette VLM answers with repeated raw outputs (several models give the same text), some
    ambiguous or naming a negated option, and SalBench label sets (lists as responses)."""
    from perceptbench.tasks import get_task

    from tests.helpers.records import plant_record

    sil = get_task("closure.nat.silhouette")
    sal = get_task("salbench.detection.syn@n=60,n_probe=0")
    texts = ["cat", "Answer: dog", "a cat or a dog", "not a bear, a boat", "I cannot tell", "Answer: cat"]
    sal_texts = ["red, orientation", "Answer: colour", "none of them", "size and orientation"]
    recs = []
    for m in range(4):
        for i, t in enumerate(texts * 2):
            recs.append(plant_record(sil, stimulus_id=f"s{i}", model=f"m{m}", response=None, ground_truth="cat",
                                     raw_output=t, split="test"))
        for i, t in enumerate(sal_texts):
            recs.append(plant_record(sal, stimulus_id=f"p{i}", model=f"m{m}", response=None,
                                     ground_truth=["orientation"], raw_output=t, split="test"))
    return recs


def test_reparsing_each_distinct_answer_once_gives_the_per_record_parse():
    """apply_parser_mode parses each distinct raw output of a task once (issue 25): the records it
    returns equal those of parsing every record on its own (parse_record), in every parser mode,
    and no two records share a response list or parse meta (the cache hands out copies)."""
    from perceptbench.records import score_correct
    from perceptbench.scoring import PARSER_MODES, _same_answer, apply_parser_mode
    from perceptbench.tasks import get_task

    recs = _reparse_records()
    for mode in PARSER_MODES:
        got = apply_parser_mode(recs, mode)
        for r, g in zip(recs, got):
            response, meta = get_task(r.task_id).parse_record(r, mode=mode)
            meta["recorded_response_differs"] = not _same_answer(response, r.response)
            assert g.response == response and g.correct == score_correct(response, r.ground_truth)
            assert g.run_meta.model_extra["parse"] == meta
        metas = [id(g.run_meta.model_extra["parse"]) for g in got]
        lists = [id(g.response) for g in got if isinstance(g.response, list)]
        assert len(set(metas)) == len(metas) and len(set(lists)) == len(lists)


def test_a_task_whose_parse_reads_more_than_the_text_is_parsed_record_by_record():
    """parse_key is None where parse_record reads more than raw_output (an override), so the
    cache never hands one record's parse to another."""
    import copy

    from perceptbench.tasks import get_task

    from tests.helpers.records import plant_record

    sil = get_task("closure.nat.silhouette")
    r = plant_record(sil, stimulus_id="s0", response=None, ground_truth="cat", raw_output="cat", split="test")
    assert sil.parse_key(r) == "cat"

    class ReadsMeta(type(sil)):
        def parse_record(self, r, mode="default"):
            return super().parse_record(r, mode)

    over = copy.copy(sil)
    over.__class__ = ReadsMeta
    assert over.parse_key(r) is None

    vsi = get_task("vsi.salbench.syn@n=40")
    assert vsi.parse_key(r) == "cat"

    class VSIMeta(type(vsi)):
        def parse_clean(self, text, meta, mode="default"):
            return super().parse_clean(text, meta, mode)

    over = copy.copy(vsi)
    over.__class__ = VSIMeta
    assert over.parse_key(r) is None


def test_records_are_out_of_the_cyclic_collectors_view_while_scored_and_back_after(monkeypatch):
    """score_records freezes the prepared records (gc.freeze: the cyclic collector stops
    re-scanning them at every collection, issue 25) while tasks score, and unfreezes them when
    scoring ends, also when a task's scoring raises."""
    import gc

    import pytest

    from perceptbench.scoring import score_records
    from perceptbench.tasks import get_task

    recs = _reparse_records()
    classes = {type(get_task(r.task_id)) for r in recs}
    seen = []

    def score(records, seed):
        seen.append(gc.get_freeze_count())
        return []

    for cls in classes:
        monkeypatch.setattr(cls, "score", lambda self, records, seed: score(records, seed))
    score_records(recs)
    assert seen and min(seen) > 0 and gc.get_freeze_count() == 0

    def boom(self, records, seed):
        raise RuntimeError("task failed")

    for cls in classes:
        monkeypatch.setattr(cls, "score", boom)
    with pytest.raises(RuntimeError, match="task failed"):
        score_records(recs)
    assert gc.get_freeze_count() == 0


def _awkward_rows():
    """Score rows with every kind of cell write_scores meets: str, None, int, bool, float (NaN,
    +-inf, -0.0, integral and not, tiny, huge), numpy floats, count metrics with integral and
    fractional values, notes with quotes, commas, newlines and non-ASCII text, and more rows
    than one chunk of the column-wise writer."""
    import numpy as np

    from perceptbench.core.rows import ScoreRow

    rng = np.random.default_rng(7)
    specials = [None, float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 1.0, 23.0, 2 / 3, 1e-9, -1e300,
                5, True, np.float64(0.25), np.float64(7.0), 0.1234565, 0.1234575]
    metrics = ["accuracy", "n_parse_null", "capacity_k", "skipped", "signal_wins[x]", "joint_error_grid[a]", "B"]
    notes = ["", 'said "no", then yes', "a,b", "two\nlines", "Kanizsa – ŝ ✓", "\\ backslash \x01"]
    rows = []
    for i in range(40_000):
        v = [specials[j] if j < len(specials) else float(x)
             for j, x in zip(rng.integers(0, 2 * len(specials), 3), rng.normal(0, 10, 3))]
        n = [None, 0, 17, 3.0][i % 4]
        rows.append(ScoreRow(f"task{i % 7}", ["m", "m~n", "all-models", "mödel"][i % 4], metrics[i % len(metrics)],
                             *v, n, [None, 2][i % 2], notes[i % len(notes)], [None, 1000][i % 2],
                             [None, 3][i % 3 == 0], [None, 0, 42][i % 3]))
    return rows


def test_write_scores_column_wise_equals_the_cell_by_cell_form(tmp_path):
    """write_scores builds its cells a column at a time (issue 25): scores.csv equals csv.writer over
    csv_cell of each cell (the one rule for a single cell), and scores.json equals json.dumps of
    each row's attributes with NaN as null, byte for byte, for every kind of cell."""
    import csv
    import io
    import json
    import math

    from perceptbench.core.rows import ScoreRow
    from perceptbench.scoring import SCORE_VALUE_COLUMNS, csv_cell, write_scores

    def reference(rows):  # the per-row form write_scores had before
        out = io.StringIO(newline="")
        w = csv.writer(out)
        w.writerow(ScoreRow.CSV_COLUMNS)
        for r in rows:
            w.writerow([csv_cell(getattr(r, c), r.metric if c in SCORE_VALUE_COLUMNS else None)
                        for c in ScoreRow.CSV_COLUMNS])
        js = "[\n" + ",\n".join(json.dumps({k: None if isinstance(v, float) and math.isnan(v) else v
                                             for k, v in vars(r).items()}) for r in rows) + ("\n]" if rows else "]")
        return out.getvalue().encode(), js

    rows = _awkward_rows()
    extra = rows[:3]
    extra[1].origin = "x"  # an attribute beyond the fields: json.dumps of every attribute
    for i, case in enumerate((rows[3:], extra, [])):
        csv_path, json_path = write_scores(case, tmp_path / f"scores{i}.csv")
        want_csv, want_json = reference(case)
        assert csv_path.read_bytes() == want_csv
        assert json_path.read_text() == want_json
