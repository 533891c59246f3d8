"""Bad arguments fail before anything is written, with messages naming the value."""

import pytest

from perceptbench.tasks import get_task
from helpers.cli import cli, one_line_error


def test_bad_task_or_model_writes_nothing(tmp_path):
    out = tmp_path / "run"
    p = cli("run", "--out", str(out), "--task", "closure.nat.silhouete", "--no-progress")
    assert p.returncode == 2 and "unknown task 'closure.nat.silhouete'" in p.stderr and '"' not in p.stderr
    p = cli("run", "--out", str(out), "--model", "foo:bar", "--no-progress")
    assert p.returncode == 2 and "perceptbench models" in p.stderr
    p = cli("run", "--out", str(out), "--task", "similarity.chart.mark_color@kernel=l7", "--no-progress")
    assert p.returncode == 2 and "kernel='l7'" in p.stderr
    assert not out.exists()


def test_missing_mirror_names_the_file(tmp_path):
    env = {"PERCEPTBENCH_MIRROR": str(tmp_path / "nowhere")}
    p = cli("run", "--out", str(tmp_path / "r"), "--task", "similarity.chart.mark_color", "--no-progress", env=env,
            columns=300)
    assert p.returncode == 2
    assert "nowhere: the mirror directory does not exist" in p.stderr and "unset it" in p.stderr
    assert not (tmp_path / "r").exists()
    (tmp_path / "empty").mkdir()  # the mirror exists but lacks the file: that file is named
    env["PERCEPTBENCH_MIRROR"] = str(tmp_path / "empty")
    p = cli("run", "--out", str(tmp_path / "r"), "--task", "similarity.chart.mark_color", "--no-progress", env=env,
            columns=300)
    assert p.returncode == 2
    assert "color-tm.txt is not in the mirror" in p.stderr and "https://raw.githubusercontent.com" in p.stderr
    assert not (tmp_path / "r").exists()


def test_things_refuses_without_its_release(tmp_path):
    env = {"PERCEPTBENCH_THINGS_TRIPLETS": str(tmp_path / "none")}
    p = cli("run", "--task", "similarity.nat.things_ooo", "--out", str(tmp_path / "r"), "--no-progress", env=env)
    assert p.returncode == 2 and "OSF" in p.stderr and not (tmp_path / "r").exists()


def test_render_writes_pngs_and_index(tmp_path):
    import json

    p = cli("render", "similarity.chart.mark_color", "--out", str(tmp_path), "--limit", "3")
    assert p.returncode == 0, p.stdout + p.stderr
    index = json.loads((tmp_path / "index.json").read_text())
    assert [e["stimulus_id"] for e in index] == ["mark_0-1-2", "mark_0-1-3", "mark_0-1-4"]
    assert all((tmp_path / f"{e['stimulus_id']}.png").exists() for e in index)
    # the prompt the VLM reads, beside each image; no few-shot examples on this task
    assert (tmp_path / "mark_0-1-2.prompt.txt").read_text() == get_task("similarity.chart.mark_color").prompt_text + "\n"
    assert all(e["prompt_file"] == f"{e['stimulus_id']}.prompt.txt" and e["example_images"] == [] for e in index)


def test_render_of_a_few_shot_task_writes_the_whole_input_the_vlm_sees(tmp_path):
    """Issue 24 item 4: render wrote only the query image of a few-shot trial."""
    import json

    from PIL import Image

    task = get_task("salbench.detection.syn@shots=3,n=30,n_probe=10")
    p = cli("render", task.task_id, "--out", str(tmp_path), "--limit", "2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "wrote 2 stimulus PNGs and 6 few-shot example PNGs" in " ".join(p.stdout.split())
    index = json.loads((tmp_path / "index.json").read_text())
    test = [s for s in task.stimuli(0) if s.split == "test"][:2]
    for e, s in zip(index, test):
        images, prompt, extra = task.vlm_request(s, 0)
        assert e["example_images"] == [f"{s.stimulus_id}.example{i}.png" for i in (1, 2, 3)]
        assert e["fewshot_stimulus_ids"] == extra["fewshot_stimulus_ids"]
        # each example image as shown, in order, then the query; the prompt with the examples' answers
        for name, shown in zip(e["example_images"] + [f"{s.stimulus_id}.png"], images):
            assert Image.open(tmp_path / name).convert("RGB").tobytes() == shown.convert("RGB").tobytes()
        assert (tmp_path / e["prompt_file"]).read_text() == prompt + "\n"
        ex = task.fewshot_examples(0, s.stimulus_id)
        assert all(", ".join(x.ground_truth) in prompt for x in ex)


def test_missing_annotation_file_is_a_one_line_error(tmp_path):
    p = cli("run", "--out", str(tmp_path / "r"), "--task", f"salbench.detection.nat@source={tmp_path}/nope.json",
            "--no-progress")
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr
    assert "nope.json" in p.stderr


def test_missing_model_directory(tmp_path):
    p = cli("run", "--out", str(tmp_path / "r"), "--task", "similarity.chart.mark_color",
            "--model", f"hf:{tmp_path}/no-such-model", "--no-progress")
    assert p.returncode == 2 and "no such model directory" in p.stderr
    assert not (tmp_path / "r").exists()  # resolved before the run directory is created


def test_encoder_on_vsi_task_writes_nothing(tmp_path, mirror):
    """Before: a progress bar, then 'is an image encoder', leaving run.json and an empty records.jsonl."""
    pytest.importorskip("torch")
    out = tmp_path / "x3"
    p = cli("run", "--task", "vsi.salbench.syn@n=2", "--out", str(out), "--no-progress", columns=250)
    one_line_error(p, "vsi.salbench.syn", "efficientnet-lite0 is an image encoder")
    assert not out.exists()


def test_unknown_task_says_did_you_mean(tmp_path):
    p = cli("render", "similarity.chart.mark_colour", "--out", str(tmp_path / "r"), columns=250)
    one_line_error(p, "did you mean 'similarity.chart.mark_color'")


# the command path names the program as it was called (perceptbench, or python -m perceptbench.cli here)
@pytest.mark.parametrize("args, needles", [
    (("run", "--bogus"), ("No such option: --bogus", " run --help')")),
    (("score",), ("Missing argument 'RUN' (see '", " score --help')")),
    (("run", "--seed", "abc"), ("Invalid value for '--seed'", " run --help')")),
    (("bogus",), ("No such command 'bogus' (see '", "perceptbench.cli --help')")),
    (("sources", "bogus"), ("No such command 'bogus' (see '", " sources --help')")),
    (("score", "x", "--pairs"), ("Option '--pairs' requires an argument",)),
], ids=["unknown_option", "missing_argument", "bad_value", "unknown_command", "unknown_subcommand", "missing_value"])
def test_a_usage_error_is_one_error_line_naming_the_help_to_read(args, needles):
    """An unknown command or option, a missing argument or a value of the wrong type is refused like
    every other bad input: one ``error:`` line on stderr, exit 2, not click's usage lines and a box."""
    p = cli(*args, columns=80)
    one_line_error(p, *needles)
    assert "Usage:" not in p.stderr and "╭" not in p.stderr and p.stdout == ""


def test_help_and_no_arguments_still_print_the_help():
    p = cli("--help", columns=80)
    assert p.returncode == 0 and "Usage: " in p.stdout and "error:" not in p.stderr
    p = cli("sources", columns=80)  # no_args_is_help: the group's help, not an error line
    assert " sources [OPTIONS] COMMAND" in p.stdout and "error:" not in p.stderr


@pytest.mark.parametrize("size", ["0", "-3"])
def test_a_batch_size_below_one_is_refused_before_anything_is_written(tmp_path, size):
    """``--batch-size -3`` ran no model batch and exited 0 with '0 model trials'; ``0`` crashed with
    'range() arg 3 must not be zero' after writing the run directory."""
    out = tmp_path / "run"
    p = cli("run", "--out", out, "--task", "similarity.chart.mark_color", "--batch-size", size, "--no-progress",
            in_process=True)
    one_line_error(p, f"--batch-size {size}: must be an integer >= 1")
    assert not out.exists()
    from perceptbench.api import RunOptions

    with pytest.raises(ValueError, match="--batch-size"):
        RunOptions(batch_size=int(size)).check()
