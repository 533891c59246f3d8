"""The headline printed by `perceptbench score`: the full table up to HEADLINE_FULL_MODELS models
per task (unchanged), a summary above (issue 25: printing 400 models' rows cost ~1 ms a row and
nobody reads 5,000 lines), `--all-models` for the full table whatever the count."""

from __future__ import annotations

import csv
import math
import statistics

import pytest

from helpers.cli import cli
from helpers.records import plant_answers, plant_records
from perceptbench.cli.tables import HEADLINE_FULL_MODELS, SUMMARY_EXTREMES, flag_kind
from perceptbench.core.rows import ScoreRow

TID = "salbench.detection.syn@n=60,n_probe=0"


def _run(path, n_models: int):
    """``n_models`` VLMs answering 30 SalBench test stimuli, each model right on a different share."""
    recs = []
    for m in range(n_models):
        recs += plant_answers(TID, f"vlm{m:02d}", {i: ("right" if (i * 7 + m) % 10 < 3 + m % 6 else ["Orientation"])
                                                   for i in range(30)})
    return plant_records(path, recs).parent


# what `perceptbench score` printed for _run(3) before the summary rule (main at 5a9dbec), COLUMNS=200
SMALL_RUN_BEFORE = """\
salbench.detection.syn@n=60,n_probe=0: value [95% bootstrap CI] beside its references
┏━━━━━━━┳━━━━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━┳━━━━━━━━━━━━━━━━━━┓
┃ model ┃ metric      ┃ value [CI]           ┃ floor ┃ ceiling ┃ v/ceil ┃ n (null) ┃ flags            ┃
┡━━━━━━━╇━━━━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━╇━━━━━━━━━━━━━━━━━━┩
│ vlm00 │ exact_match │ 0.567 [0.400, 0.733] │ 0.633 │ -       │ -      │ 30 (0)   │ ≤ floor          │
│ vlm00 │ mean_f1     │ 0.370 [0.244, 0.475] │ -     │ -       │ -      │ 30 (0)   │                  │
│ vlm01 │ exact_match │ 0.633 [0.433, 0.800] │ 0.633 │ -       │ -      │ 30 (0)   │ ≤ floor          │
│ vlm01 │ mean_f1     │ 0.420 [0.285, 0.511] │ -     │ -       │ -      │ 30 (0)   │                  │
│ vlm02 │ exact_match │ 0.700 [0.533, 0.833] │ 0.633 │ -       │ -      │ 30 (0)   │ CI reaches floor │
│ vlm02 │ mean_f1     │ 0.466 [0.354, 0.555] │ -     │ -       │ -      │ 30 (0)   │                  │
└───────┴─────────────┴──────────────────────┴───────┴─────────┴────────┴──────────┴──────────────────┘
  exact_match: floor = majority-answer floor (best constant answer on these stimuli)
  mean_f1: floor: none declared
84 score rows in RUN/scores.csv (print them all with --all-rows); metric definitions: docs/metrics.md
scores: RUN/scores.csv
"""


def _out(p, run) -> str:
    assert p.returncode == 0, p.stderr
    return "\n".join(line.rstrip() for line in p.stdout.replace(str(run), "RUN").splitlines()) + "\n"


def test_a_small_run_prints_the_full_headline_table_as_before(tmp_path):
    run = _run(tmp_path / "r", 3)
    assert _out(cli("score", run), run) == SMALL_RUN_BEFORE
    # --all-models changes nothing under the limit
    assert _out(cli("score", run, "--all-models"), run) == SMALL_RUN_BEFORE


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """A run of HEADLINE_FULL_MODELS + 5 models, scored once; its scores.csv rows by (model, metric)."""
    run = _run(tmp_path_factory.mktemp("many") / "r", HEADLINE_FULL_MODELS + 5)
    p = cli("score", run)
    with open(run / "scores.csv", newline="") as f:
        rows = {(r["model"], r["metric"]): r for r in csv.DictReader(f)}
    return run, _out(p, run), rows


def test_many_models_print_the_extremes_of_each_metric_not_every_row(many):
    run, out, rows = many
    n = HEADLINE_FULL_MODELS + 5
    assert f"{TID}: {n} models, summary" in " ".join(out.split())
    body = [line for line in out.splitlines() if line.startswith("│") and line.split("│")[1].strip()]
    assert len(body) == 2 * 2 * SUMMARY_EXTREMES  # two metrics, the extremes at both ends; no ceiling declared
    for metric in ("exact_match", "mean_f1"):
        vals = sorted(((float(r["value"]), m) for (m, mt), r in rows.items() if mt == metric and m.startswith("vlm")),
                      key=lambda x: -x[0])
        assert len(vals) == n
        shown = {(cells[1].strip(), cells[2].strip()): cells[0].strip()
                 for cells in (line.strip("│").split("│")[:3] for line in body)}
        # the values at both ends are shown (ties may pick either model of equal value)
        top = [v for v, m in vals if (m, metric) in shown and shown[(m, metric)].startswith("highest")]
        low = [v for v, m in vals if (m, metric) in shown and shown[(m, metric)].startswith("lowest")]
        assert sorted(top, reverse=True) == [v for v, _ in vals[:SUMMARY_EXTREMES]]
        assert sorted(low) == sorted(v for v, _ in vals[-SUMMARY_EXTREMES:])
        line = next(x for x in out.splitlines() if x.startswith(f"  {metric}: {n} models"))
        assert f"median {statistics.median(v for v, _ in vals):.3f}" in line
        assert f"range {vals[-1][0]:.3f} to {vals[0][0]:.3f}" in line
    # every model is counted by flag: the ≤ floor models of exact match, from scores.csv
    floor = {m: float(r["value"]) for (m, mt), r in rows.items() if mt == "exact_match_floor"}
    at_floor = sum(float(rows[(m, "exact_match")]["value"]) <= f + 1e-12 for m, f in floor.items())
    assert at_floor and f"≤ floor {at_floor}" in out
    assert f"{2 * n} headline rows of {n} models: scores.csv, or all printed with --all-models" in out
    assert "1 of 1 tasks have more than 20 models" in out


def test_all_models_prints_every_model_of_a_large_run(many):
    run, summary, _ = many
    out = _out(cli("score", run, "--all-models"), run)
    n = HEADLINE_FULL_MODELS + 5
    for m in range(n):
        for metric in ("exact_match", "mean_f1"):
            assert f"│ vlm{m:02d} │ {metric}" in out
    assert "summary" not in out and "shown" not in out
    assert out.splitlines()[-2:] == summary.splitlines()[-2:]


@pytest.mark.parametrize("n_models, summarised", [(HEADLINE_FULL_MODELS, False), (HEADLINE_FULL_MODELS + 1, True)])
def test_the_summary_starts_above_the_limit(capsys, n_models, summarised):
    from perceptbench.cli.tables import print_headline

    rows = []
    for m in range(n_models):
        rows += [ScoreRow(TID, f"m{m:02d}", "exact_match", m / 40, m / 40 - 0.1, m / 40 + 0.1, 60, 0),
                 ScoreRow(TID, f"m{m:02d}", "exact_match_floor", 0.2, None, None, 60, 0),
                 ScoreRow(TID, f"m{m:02d}", "null_rate", 0.0, None, None, 60, 0)]
    print_headline(rows)
    out = capsys.readouterr().out
    assert ("summary" in out) is summarised
    assert sum(f"m{m:02d}" in out for m in range(n_models)) == (2 * SUMMARY_EXTREMES if summarised else n_models)


def test_a_flag_few_models_carry_names_them_in_the_summary(capsys):
    from perceptbench.cli.tables import SUMMARY_NAMED, print_headline

    rows = []
    n = HEADLINE_FULL_MODELS + 1
    for m in range(n):  # exact match m/40 against a floor of 0.2: m00-m08 at or below it
        rows += [ScoreRow(TID, f"m{m:02d}", "exact_match", m / 40, m / 40 - 0.1, m / 40 + 0.1, 60, 0),
                 ScoreRow(TID, f"m{m:02d}", "exact_match_floor", 0.2, None, None, 60, 0),
                 ScoreRow(TID, f"m{m:02d}", "null_rate", 0.5 if m == n - 1 else 0.0, None, None, 60,
                          30 if m == n - 1 else 0)]
    print_headline(rows)
    out = " ".join(capsys.readouterr().out.split())  # the summary line may wrap
    line = out.split(f"exact_match: {n} models")[1].split("headline rows")[0]
    assert "≤ floor 9," in line and "m08" not in line  # many: counted only
    assert f"nulls N% 1 (m{n - 1:02d})" in line and SUMMARY_NAMED >= 1


def test_signal_table_of_many_models_counts_winners_and_reasons(capsys):
    from perceptbench.cli.tables import print_signal_table

    tid, rows = "vsi.bench@sigma=20", []
    n = HEADLINE_FULL_MODELS + 4
    for m in range(n):
        model = f"m{m:02d}"
        for sig, v in (("max_prob", 0.6), ("vsi", 0.7 if m % 2 else 0.5)):
            rows.append(ScoreRow(tid, model, f"signal_auroc[{sig},sigma=20]", v, None, None, 40, 0,
                                 "winner" if m < n - 4 and sig == ("vsi" if m % 2 else "max_prob") else ""))
        if m < n - 4:
            low = 0.05 if m % 4 == 1 else -0.02
            rows.append(ScoreRow(tid, model, "signal_margin[sigma=20]", 0.1, low, 0.2, 40, 0,
                                 "runner_up=" + ("max_prob" if m % 2 else "vsi")))
        else:
            rows.append(ScoreRow(tid, model, "signal_margin[sigma=20]", math.nan, None, None, 40, 0,
                                 f"{m - n + 5} errors < 5" if m % 2 else "1 error < 5"))
    print_signal_table(rows)
    out = " ".join(capsys.readouterr().out.split())
    wins_vsi = sum(1 for m in range(n - 4) if m % 2)
    clear_vsi = sum(1 for m in range(n - 4) if m % 4 == 1)
    assert f"│ {tid} │ 20 │ {n} │ {n - 4 - wins_vsi} (0) │ {wins_vsi} ({clear_vsi}) │ 0 (0) │ 4: fewer than 5 errors │" in out
    assert "m00" not in out  # no per-model line
    print_signal_table(rows, all_models=True)
    full = capsys.readouterr().out
    assert sum(f"m{m:02d}" in full for m in range(n)) == n


@pytest.mark.parametrize("flag, kind", [("small n=12", "small n"), ("nulls 14%: all-trials value in [0.1, 0.2]", "nulls N%"),
                                        ("CI reaches chance", "CI reaches chance"),
                                        ("at ceiling (CI includes it)", "at ceiling")])
def test_flags_are_counted_without_their_numbers(flag, kind):
    assert flag_kind(flag) == kind


def test_scoring_imports_no_scipy_stats(tmp_path):
    """Before: `score` imported scipy.stats at start-up (metrics/error_detection.py, permutation.py:
    rankdata at the top), ~2 s of a 10^5-record score, whatever the tasks present; average ranks
    and Spearman's rho now come from metrics/ranks.py (scipy's values, tests/unit/metrics/test_ranks.py)."""
    import subprocess
    import sys

    run = _run(tmp_path / "r", 2)
    code = ("import sys\nfrom perceptbench.cli import app\ntry:\n    app(sys.argv[1:])\nexcept SystemExit as e:\n"
            "    assert not e.code, e.code\nprint(sorted(m for m in sys.modules if m.startswith('scipy.stats')))")
    p = subprocess.run([sys.executable, "-c", code, "score", str(run)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "[]"
