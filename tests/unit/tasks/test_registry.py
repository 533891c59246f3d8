

def test_every_task_has_a_short_human_readable_title_for_figures():
    from perceptbench.tasks.registry import TASKS, task_label, task_title

    assert all(cls.title and len(cls.title) <= 45 and cls.title != cls.base_id for cls in TASKS.values())
    assert len({cls.title for cls in TASKS.values()}) == len(TASKS)  # no two tasks share a name
    assert task_label("similarity.chart.mark_color") == "Mark colour odd-one-out (similarity.chart.mark_color)"
    assert task_title("salbench.detection.syn@n=60,n_probe=60") == "SalBench detection, search arrays"
    assert task_label("all-tasks~x") == "all-tasks~x" and task_title("nope.task") == ""
