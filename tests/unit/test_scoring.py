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
