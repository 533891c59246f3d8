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


def test_a_model_answer_the_task_cannot_give_is_a_problem_and_human_answers_are_left_alone(tmp_path, mirror):
    """A hand-edited response 7 on a 3-position odd-one-out with a consistent ``correct: false``
    passed validate and score and moved the scores.  Every readout and parser answers with one of the
    task's options, so validate names it; observers' own answers (``na``, ``other``) are not judged."""
    run = tmp_path / "run"
    from perceptbench.tasks import get_task

    task = get_task("similarity.chart.mark_color")
    kernels = task.human_records(0, "planted", task.stimuli(0))[:3]
    p = plant_records(run, plant_answers("similarity.chart.mark_color", "a", {0: "right", 1: "wrong", 2: "right"})
                      + kernels)
    lines = p.read_text().splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if json.loads(ln)["model"] == "a")
    o = json.loads(lines[k])
    o.update(response=7, correct=False)
    lines[k] = json.dumps(o) + "\n"
    h = next(i for i, ln in enumerate(lines) if json.loads(ln)["model_family"] == "human")
    o = json.loads(lines[h])
    o.update(response=9, correct=o["ground_truth"] == 9)  # a kernel-derived answer: not judged here
    lines[h] = json.dumps(o) + "\n"
    p.write_text("".join(lines))
    v = cli("validate", run, in_process=True, columns=1000)
    problems = [ln for ln in v.stdout.splitlines() if ln.startswith(f"{p}:") and not ln.startswith(f"{p}: ")]
    assert v.returncode == 2 and problems == [
        f"{p}:{k + 1}: field response: 7 is not one of the task's answers (1, 2, 3); a model's response always is"], v.stdout
