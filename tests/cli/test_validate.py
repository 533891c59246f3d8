"""``perceptbench validate``: the schema's problems and the tasks' own rules, so that a file it
passes is one ``score`` scores."""

from __future__ import annotations

import json

from helpers.cli import cli
from helpers.records import plant_answers, plant_records


def test_a_task_id_that_names_no_task_is_one_problem_with_its_first_line_and_count(tmp_path):
    run = tmp_path / "run"
    answers = {i: "right" if i % 2 else "wrong" for i in range(12)}
    p = plant_records(run, plant_answers("similarity.chart.mark_color", "a", answers))
    lines = p.read_text().splitlines(keepends=True)
    bad = [i for i, ln in enumerate(lines) if json.loads(ln)["model"] == "a"][:3]
    for i in bad:
        o = json.loads(lines[i])
        o["task_id"] = "similarity.chart.mark_colour"
        o["trial_id"] = o["trial_id"].replace("similarity.chart.mark_color|", "similarity.chart.mark_colour|")
        lines[i] = json.dumps(o) + "\n"
    p.write_text("".join(lines))
    v = cli("validate", run, columns=1000, torch="unimported")
    assert v.returncode == 2, v.stdout + v.stderr
    problems = [ln for ln in v.stdout.splitlines() if ln.startswith(f"{p}:") and not ln.startswith(f"{p}: ")]
    assert problems == [f"{p}:{bad[0] + 1}: task_id 'similarity.chart.mark_colour' (3 records): unknown task "
                        "'similarity.chart.mark_colour'; did you mean 'similarity.chart.mark_color' or "
                        "'vsi.similarity.chart.mark_color' or 'similarity.chart.mark_size_color'? (score cannot "
                        "score it; perceptbench tasks lists the tasks)"]
    assert v.stdout.rstrip().endswith(f"{p}: {len(lines) - 3} valid records, 1 problem(s)")
    s = cli("score", run, in_process=True, columns=1000)  # what validate foretells
    assert s.returncode == 2 and "unknown task 'similarity.chart.mark_colour'" in s.stderr


def test_settings_a_task_refuses_are_a_problem_and_a_known_task_passes(tmp_path):
    run = tmp_path / "run"
    p = plant_records(run, plant_answers("similarity.chart.mark_color", "a", {0: "right", 1: "wrong"}))
    v = cli("validate", run, in_process=True, columns=1000)
    assert v.returncode == 0 and v.stdout.rstrip().endswith("0 problem(s)"), v.stdout
    text = p.read_text().replace('"similarity.chart.mark_color', '"similarity.chart.mark_color@n=x')
    p.write_text(text)
    v = cli("validate", run, in_process=True, columns=1000)
    assert v.returncode == 2 and "task_id 'similarity.chart.mark_color@n=x'" in v.stdout, v.stdout
    assert "(score cannot score it)" in v.stdout
