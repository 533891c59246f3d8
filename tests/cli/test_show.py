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
    rc, text = p.returncode, " ".join(p.stderr.split())  # the console wraps long paths
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


def _silhouette_run(d):
    """The silhouette task's human records (10 observers) and one model answer to silh_boat5."""
    task = get_task("closure.nat.silhouette")
    humans = task.human_records(0, "planted", task.stimuli(0))
    plant_records(d, humans + [plant_record(task, stimulus_id="silh_boat5", model="m", response="boat",
                                            ground_truth="boat", raw_output="boat")])
    return [h for h in humans if h.stimulus_id == "silh_boat5"]


def test_show_names_a_trial_by_task_stimulus_and_model_and_prints_the_human_answers(tmp_path, mirror):
    d = tmp_path / "run"
    boat5 = _silhouette_run(d)
    p = cli("show", d, "closure.nat.silhouette", "silh_boat5", "m", in_process=True)
    text = " ".join(p.stdout.split())
    assert p.returncode == 0, text
    assert "closure.nat.silhouette|silh_boat5|m|rep0" in text
    # each observer's answer, the modal answer and the human accuracy on this stimulus, from the records
    assert f"human answers to this stimulus ({len(boat5)}): " in text and "human:subject-01=boat" in text
    n_boat = sum(h.response == "boat" for h in boat5)
    n_right = sum(bool(h.correct) for h in boat5)
    assert f"modal human answer: boat ({n_boat} of {len(boat5)})" in text
    assert f"human accuracy on this stimulus: {n_right / len(boat5):.2f} ({n_right} of {len(boat5)} correct)" in text
    # the same trial by its number in the listing (the one model trial) and with its rep given
    assert cli("show", d, "1", in_process=True).stdout == p.stdout
    assert cli("show", d, "closure.nat.silhouette", "silh_boat5", "m", "0", in_process=True).stdout == p.stdout


def test_show_refuses_a_trial_number_out_of_range_or_a_wrong_number_of_words(tmp_path, mirror):
    d = tmp_path / "run"
    _silhouette_run(d)
    p = cli("show", d, "2", in_process=True)
    assert p.returncode == 2 and "no trial number 2; the listing has 1 model trials (1 to 1)" in " ".join(p.stdout.split() + p.stderr.split())
    p = cli("show", d, "closure.nat.silhouette", "silh_boat5", in_process=True)
    out = " ".join(p.stdout.split() + p.stderr.split())
    assert p.returncode == 2 and "show takes TRIAL_ID, N, or TASK STIMULUS MODEL [REP]; got 2 words" in out


def test_show_says_first_what_it_could_not_rebuild_and_why(tmp_path, mirror):
    d = tmp_path / "run"
    task = get_task("similarity.chart.mark_color")
    sid = next(s.stimulus_id for s in task.stimuli(0) if s.split == "test")
    rec = plant_record(task, stimulus_id=sid, model="m", response=1, ground_truth=1, raw_output="1",
                       readout="vlm_prompt")
    plant_records(d, [rec])
    empty = tmp_path / "no-mirror"
    empty.mkdir()
    p = cli("show", d, rec.trial_id, in_process=True, env={"PERCEPTBENCH_MIRROR": str(empty)})
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("not rebuilt: the prompt and the stimulus image"))
    assert at < next(i for i, ln in enumerate(lines) if ln.startswith("raw_output:"))  # up front
    assert "cannot rebuild the stimulus" in " ".join(lines[at:at + 4])
    assert "human answers to this stimulus: none in this run" in p.stdout


def test_show_labels_kernel_answers_as_kernel_derived_and_leaves_the_reference_kernel_out(tmp_path, mirror):
    """Before: the perceptual kernels' odd ones out were printed as "human answers" and the reference
    kernel (the task's ground truth) counted in the "human accuracy" (circular: 4 of 5 for 3 of 4)."""
    task = get_task("similarity.chart.mark_color")
    stims = task.stimuli(0)
    kernels = task.human_records(0, "planted", stims)
    ref = f"human:kernel-{task.params['kernel']}"
    # a stimulus where some non-reference kernel disagrees with the reference
    sid = next(s.stimulus_id for s in stims
               if any(k.stimulus_id == s.stimulus_id and k.correct is False for k in kernels))
    mine = [k for k in kernels if k.stimulus_id == sid]
    others = [k for k in mine if k.model != ref]
    d = tmp_path / "run"
    plant_records(d, kernels + [plant_record(task, stimulus_id=sid, model="m", response=1,
                                                  ground_truth=mine[0].ground_truth, raw_output="1")])
    p = cli("show", d, "similarity.chart.mark_color", sid, "m", in_process=True)
    text = " ".join(p.stdout.split())
    assert p.returncode == 0, text
    assert "human accuracy" not in text and "modal human answer" not in text
    assert ("human answers to this stimulus: none in this run (the task's human reference is the perceptual "
            "kernels' answers below, which the run counts among its human records)") in text
    assert f"kernel-derived answers to this stimulus ({len(mine)}; " in text and "not human trials" in text
    assert f"reference kernel {ref} = the ground truth" in text and f"{ref}={mine[-1].response} (reference)" in text
    agree = sum(bool(k.correct) for k in others)
    assert (f"other kernels' agreement with the reference kernel ({task.params['kernel']}): "
            f"{agree / len(others):.2f} ({agree} of {len(others)} agreeing)") in text
    assert f"modal answer of the {len(others)} other kernels: " in text


def test_show_says_whether_the_rebuilt_prompt_matches_the_records_prompt_hash(tmp_path, mirror):
    task = get_task("similarity.chart.mark_color")
    sid = next(s.stimulus_id for s in task.stimuli(0) if s.split == "test")
    said = {}
    for label, h in (("same", task.prompt_hash), ("other", "0000beef"), ("none", None)):
        d = tmp_path / label
        rec = plant_record(task, stimulus_id=sid, response=1, ground_truth=1, raw_output="1", prompt_hash=h)
        plant_records(d, [rec])
        p = cli("show", d, rec.trial_id, in_process=True)
        assert p.returncode == 0, p.stdout
        said[label] = " ".join(p.stdout.split())
    assert f"prompt (re-built now; matches the record's prompt_hash {task.prompt_hash}):" in said["same"]
    assert "its hash differs from the record's prompt_hash" in said["other"] and "matches" not in said["other"]
    assert "the record has no prompt_hash to check it against" in said["none"]


def test_show_of_a_vsi_trial_prints_its_prompt_checked_against_the_record(tmp_path):
    """Before: a VSI trial (clean, blurred, or asked without the image) showed no prompt and said
    nothing about it; now its prompt is re-built and checked against the record's prompt_hash, and
    the image-withheld trial is found among its condition's stimuli ({sample}~image_withheld)."""
    import numpy as np

    from perceptbench.seeding import text_hash

    from helpers.records import plant_vsi_record

    task = get_task("vsi.salbench.syn@n=3")
    clean = next(s for s in task.stimuli(0) if s.meta["vsi"]["condition"] == "clean")
    sample, question = clean.meta["vsi"]["sample_id"], clean.meta["vsi_prompt"]
    lp = [float(x) for x in np.log([0.9, 0.08, 0.02])]
    recs = [plant_vsi_record(task, cond, sample, [1, 2, 3], lp, model=model, raw_output="B", prompt_hash=text_hash(question),
                             **({"condition": "image_withheld"} if cond == "image_withheld" else {}))
            for cond, model in (("clean", "m"), ("region_blur", "m"), ("image_withheld", "m[image_withheld]"))]
    d = tmp_path / "run"
    plant_records(d, recs)
    for rec in recs:
        p = cli("show", d, rec.trial_id, in_process=True)
        text = " ".join(p.stdout.split())
        assert p.returncode == 0, text + p.stderr
        assert f"prompt (re-built now; matches the record's prompt_hash {text_hash(question)}):" in text, text
        assert " ".join(question.split()) in text and "not rebuilt" not in text


def test_show_of_a_vsi_trial_prints_the_vsi_the_scorer_computes_from_it(tmp_path):
    """A VSI value traces back to its trials: ``show`` of a perturbed trial prints KL(clean || it) in
    nats against its model's clean trial (the asked-without-image respondent's against the model's
    own clean trial), of a clean trial each perturbed partner's; with one sample, each equals the
    scorer's median VSI of the cell.  Before: show printed no VSI at all."""
    import csv

    import numpy as np

    from perceptbench.scoring import score_file

    from helpers.records import plant_vsi_record

    task = get_task("vsi.salbench.syn@n=3")
    lp = [float(x) for x in np.log([0.7, 0.2, 0.1])]
    blurred = lp  # the same probabilities on other tokens: token 2 on top (lists sorted by probability)
    withheld = [float(x) for x in np.log([0.5, 0.3, 0.2])]
    recs = [plant_vsi_record(task, "clean", "s0", [1, 2, 3], lp, model="m"),
            plant_vsi_record(task, "region_blur", "s0", [2, 1, 3], blurred, model="m"),
            plant_vsi_record(task, "image_withheld", "s0", [1, 2, 3], withheld, model="m[image_withheld]",
                             sigma_px=0.0, image_sha256=None, condition="image_withheld")]
    d = tmp_path / "run"
    plant_records(d, recs)
    score_file(d / "records.jsonl")
    med = {(r["model"], r["metric"]): float(r["value"]) for r in csv.DictReader(open(d / "scores.csv"))
           if r["metric"].startswith("vsi_median[")}
    region, alone = med[("m", "vsi_median[region_blur,sigma=20]")], med[("m[image_withheld]", "vsi_median[image_withheld]")]
    assert region > 0.1 and alone > 0.01
    said = {}
    for rec in recs:
        p = cli("show", d, rec.trial_id, in_process=True)
        assert p.returncode == 0, p.stdout + p.stderr
        said[rec.stimulus_id] = [ln for ln in " ".join(p.stdout.split()).split("VSI against ")[1:]]
    assert len(said["s0~clean"]) == 2 and len(said["s0~region_blur"]) == 1 and len(said["s0~image_withheld"]) == 1
    assert said["s0~region_blur"][0].startswith(f"{recs[0].trial_id} (region_blur, sigma=20.0): {region:.4f} nats")
    assert "top token changed" in said["s0~region_blur"][0]
    assert said["s0~image_withheld"][0].startswith(f"{recs[0].trial_id} (image_withheld, sigma=0.0): {alone:.4f} nats")
    assert any(x.startswith(f"{recs[1].trial_id} (region_blur, sigma=20.0): {region:.4f}") for x in said["s0~clean"])
