"""perceptbench show: listing and suggesting model trials."""

from perceptbench.tasks import get_task

from helpers.cli import cli
from helpers.records import plant_answers, plant_record, plant_records


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


def test_show_of_a_withheld_trial_names_no_stimulus_image_and_escapes_control_bytes(tmp_path, mirror):
    task = get_task("similarity.chart.mark_color")
    sid = next(s.stimulus_id for s in task.stimuli(0) if s.split == "test")
    d = tmp_path / "run"
    rec = plant_record(task, stimulus_id=sid, response=None, ground_truth=1, model="m[image_withheld]",
                       raw_output="\x04\x19odd \x1b[31m", prompt_hash=None, condition="image_withheld",
                       image_sha256s=[], stimulus_sha256=None)
    plant_records(d, [rec])
    p = cli("show", d, rec.trial_id, in_process=True)
    text = " ".join(p.stdout.split())
    assert p.returncode == 0, text
    assert 'condition: "image_withheld"' in text
    assert "stimulus image: none (condition image_withheld: the question was asked without an image)" in text
    assert not (d / "stimuli").exists()  # no image written for a trial that showed none
    assert "\\x04\\x19odd \\x1b[31m" in text and "\x1b" not in p.stdout and "\x04" not in p.stdout
    assert task.prompt_text.split()[0] in text  # the prompt it was asked is shown
