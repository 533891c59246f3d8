"""perceptbench show: listing and suggesting model trials."""

from perceptbench.tasks import get_task

from helpers.cli import cli
from helpers.records import plant_answers, plant_records


def test_show_without_trial_id_lists_model_trials(tmp_path, mirror):
    """Before: `show DIR TRIAL_ID` gave no way to find a trial id."""
    from perceptbench.testing.synthetic_runs import write_synthetic_run

    d = write_synthetic_run(tmp_path / "run", ["model-a"], tasks=("similarity.chart.mark_color",))
    p = cli("show", str(d), columns=250)
    assert p.returncode == 0, p.stdout + p.stderr
    ids = [ln for ln in p.stdout.splitlines() if ln.startswith("similarity.chart.mark_color" + "|")]
    assert ids and all("|model-a|" in t for t in ids) and f"{len(ids)} model trials" in p.stdout
    assert cli("show", str(d), ids[0], columns=250).returncode == 0


def test_show_suggests_model_trials_not_human_records(tmp_path):
    d = tmp_path / "run"
    task = get_task("similarity.chart.mark_color")
    humans = task.human_records(0, "planted", task.stimuli(0))
    # human records first, as a run writes them
    plant_records(d, humans + plant_answers("similarity.chart.mark_color", "a", {0: "right", 1: "wrong"}))
    p = cli("show", d, "nope|x", in_process=True)
    rc, text = p.returncode, " ".join(p.stdout.split())  # the console wraps long paths
    # the two model trials are suggested (the listing's ids), no human kernel record
    assert rc == 2 and "no trial 'nope|x'" in text and "|a|rep0" in text and "human:" not in text, text
    assert "2 model trials" in text
