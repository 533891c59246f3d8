"""Task settings are validated (type and range) and normalised before anything is written
(issue 7 item 7; issue 11: one setting, one task id)."""

import pytest

from perceptbench.core.settings import Setting
from perceptbench.tasks import get_task
from perceptbench.tasks.base import Stimulus, require_test_stimuli
from perceptbench.tasks.registry import TASKS

from helpers.cli import cli
from helpers.paths import FIXTURES

FIXTURE = FIXTURES / "salbench" / "local_annotations.json"
SC = "similarity.chart.series_count"
CM = "similarity.chart.category_mean"
THINGS = "similarity.nat.things_ooo"

BAD = [
    (f"{SC}@n_test=0", "n_test='0'", "an integer in [1, 100000]"),
    (f"{SC}@n_test=-5", "n_test='-5'", "an integer in [1, 100000]"),
    (f"{SC}@n_test=abc", "n_test='abc'", "an integer in [1, 100000]"),
    (f"{SC}@n_test=2.5", "n_test='2.5'", "an integer"),
    (f"{SC}@n_test=4_0", "n_test='4_0'", "an integer"),  # int() would accept it
    (f"{SC}@n_test=١٢", "n_test='١٢'", "an integer"),  # and this
    (f"{SC}@n_test=100001", "n_test='100001'", "[1, 100000]"),
    (f"{SC}@n_probe=-1", "n_probe='-1'", "an integer in [0, 100000]"),
    ("salbench.detection.syn@n=0", "n='0'", "an integer in [3, 1000000]"),
    ("salbench.detection.syn@n=2", "n='2'", "[3, "),
    ("salbench.detection.syn@n_probe=x", "n_probe='x'", "an integer"),
    ("salbench.detection.syn@shots=4", "shots='4'", "one of 0, 3, 5"),
    ("salbench.detection.syn@shots=3,n_probe=2", "shots=3 needs n_probe >= 3", "n_probe=2"),
    ("salbench.detection.nat@probe_fraction=1", "probe_fraction='1'", "a number in [0, 1)"),
    ("salbench.detection.nat@probe_fraction=-0.1", "probe_fraction='-0.1'", "[0, 1)"),
    ("salbench.detection.nat@probe_fraction=nan", "probe_fraction='nan'", "[0, 1)"),
    ("salbench.detection.nat@probe_fraction=half", "probe_fraction='half'", "[0, 1)"),
    ("similarity.chart.mark_color@kernel=l7", "kernel='l7'", "one of l5, l9, sa, td, tm"),
    (f"{CM}@n_test=0", "n_test='0'", "an integer in [1, inf) or all"),
    (f"{CM}@n_test=some", "n_test='some'", "an integer in [1, inf) or all"),
    (f"{CM}@n_probe=-3", "n_probe='-3'", "an integer in [1, inf) or all"),
    (f"{CM}@n_probe=ALL", "n_probe='ALL'", "or all"),
    (f"{CM}@probe_batches=10", "probe_batches='10'", "an integer in [1, 9]"),
    (f"{CM}@probe_batches=0", "probe_batches='0'", "an integer in [1, 9]"),
    (f"{THINGS}@n=0", "n='0'", "an integer in [1, inf)"),
    (f"{THINGS}@n=1.5", "n='1.5'", "an integer in [1, inf)"),
]


@pytest.mark.parametrize("task_id,names,allowed", BAD)
def test_bad_setting_is_one_line_naming_setting_value_and_range(task_id, names, allowed):
    with pytest.raises(ValueError) as e:
        get_task(task_id)
    msg = str(e.value)
    assert names in msg and allowed in msg and "\n" not in msg, msg


@pytest.mark.parametrize("a,b", [
    (f"{SC}@n_test=040", f"{SC}@n_test=40"),
    (f"{SC}@n_test=+40", f"{SC}@n_test= 40"),
    (f"{SC}@n_test=041,n_probe=0150", f"{SC}@n_test=41"),
    ("salbench.detection.nat@probe_fraction=0.50", "salbench.detection.nat@probe_fraction=.5"),
    ("salbench.detection.nat@probe_fraction=5e-1", "salbench.detection.nat@probe_fraction=0.5"),
    ("salbench.detection.syn@n=0030,shots=3", "salbench.detection.syn@shots=3,n=30"),
    (f"{CM}@n_test=040", f"{CM}@n_test=40"),
    (f"{CM}@probe_batches=+04,n_probe=0100", f"{CM}@n_probe=100,probe_batches=4"),
    (f"{THINGS}@n=040", f"{THINGS}@n=40"),
    (f"salbench.detection.nat@source= {FIXTURE}", f"salbench.detection.nat@source={FIXTURE}"),
    # whitespace around the separators, keys and values, as typed in a shell
    ("salbench.detection.syn@n=60, n_probe=60", "salbench.detection.syn@n=60,n_probe=60"),
    ("salbench.detection.syn @ n = 60 , shots=3", "salbench.detection.syn@shots=3,n=60"),
    (f" {SC}@ n_test=41", f"{SC}@n_test=41"),
])
def test_one_setting_one_task_id(a, b):
    assert get_task(a).task_id == get_task(b).task_id
    assert get_task(a).params == get_task(b).params


def test_normalised_ids():
    assert get_task(f"{SC}@n_test=0150").task_id == SC  # 150 is the default (issue 24; 40 before)
    assert get_task(f"{SC}@n_test=040").task_id == f"{SC}@n_test=40"
    assert get_task(f"{SC}@n_test=041").task_id == f"{SC}@n_test=41"
    assert get_task("salbench.detection.nat@probe_fraction=0.0").task_id == "salbench.detection.nat"
    assert get_task("salbench.detection.nat@probe_fraction=0.50").task_id == "salbench.detection.nat@probe_fraction=0.5"
    assert get_task(f"{CM}@n_test=040").task_id == f"{CM}@n_test=40"
    assert get_task(f"{CM}@n_test=all,probe_batches=03").task_id == CM  # both defaults
    assert get_task(f"{THINGS}@n=0500").task_id == THINGS


def test_number_setting_with_words():
    s = Setting("int", 1, choices=("all",))
    assert [s.normalise(v) for v in ("all", " all", "007")] == ["all", "all", "7"]
    assert s.describe() == "an integer in [1, inf) or all"
    for bad in ("All", "0", "none", ""):
        with pytest.raises(ValueError, match=r"^an integer in \[1, inf\) or all$"):
            s.normalise(bad)
    t = Setting("text", text="hf or the path of a local annotation file")
    assert t.normalise(" a/b.json ") == "a/b.json" and t.describe() == "hf or the path of a local annotation file"


def _listed_settings() -> dict[str, str]:
    """``perceptbench tasks`` in its list layout -> {task id: settings text, wrapping undone}."""
    p = cli("tasks", columns=100)
    assert p.returncode == 0, p.stderr
    blocks: dict[str, list[str]] = {}
    for line in p.stdout.splitlines():
        if line and not line[0].isspace() and line.split()[0] in TASKS:
            cur = blocks.setdefault(line.split()[0], [])
        elif line.startswith("Variants:"):
            break
        elif blocks:
            cur.append(line.strip())
    out = {}
    for tid, lines in blocks.items():
        text = " ".join(lines)
        start = text.index("settings (default):") + len("settings (default):")
        out[tid] = " ".join(text[start:text.index("human data:")].split())
    return out


def test_tasks_lists_a_range_for_every_setting():
    """Every setting of every task (vsi.* included) shows its type and range in
    `perceptbench tasks`, never "any"."""
    listed = _listed_settings()
    assert set(listed) == set(TASKS)
    checked = 0
    for tid, cls in TASKS.items():
        text = listed[tid]
        assert "(any)" not in text, (tid, text)
        for key, default in cls.defaults.items():
            spec = cls.setting_spec(cls, key)
            assert spec is not None, (tid, key)
            assert f"{key}={default} ({spec.describe()})" in text, (tid, key, text)
            checked += 1
    assert checked >= 12
    assert "n_test=all (an integer in [1, inf) or all)" in listed[CM]
    assert "probe_batches=3 (an integer in [1, 9])" in listed[CM]
    assert listed[THINGS] == "n=500 (an integer in [1, inf))"


def test_setting_normalise_and_describe():
    s = Setting("float", 0, 1, maximum_open=True)
    assert [s.normalise(v) for v in ("0", "0.25", "2.5e-1", ".25")] == ["0", "0.25", "0.25", "0.25"]
    assert s.describe() == "a number in [0, 1)"
    with pytest.raises(ValueError):
        s.normalise("inf")
    assert Setting("int", 1).describe() == "an integer in [1, inf)"


def test_zero_test_stimuli_is_an_error():
    task = get_task(SC)
    probe_only = [Stimulus("p0", "probe_train", render=lambda: None, ground_truth=2)]
    with pytest.raises(ValueError, match="no test stimuli"):
        require_test_stimuli(task, probe_only)
    require_test_stimuli(task, probe_only + [Stimulus("t0", "test", render=lambda: None, ground_truth=2)])


def test_probe_fraction_leaving_no_test_stimulus_is_an_error():
    t = get_task(f"salbench.detection.nat@source={FIXTURE},probe_fraction=0.99")
    with pytest.raises(ValueError, match="probe_fraction=0.99 leaves no test stimulus"):
        t.stimuli(0)


@pytest.mark.parametrize("task_id,needle", [
    (f"{SC}@n_test=0", "n_test='0' is invalid; allowed: an integer in [1, 100000]"),
    (f"{SC}@n_test=abc", "n_test='abc' is invalid"),
    (f"salbench.detection.nat@source={FIXTURE},probe_fraction=0.99", "leaves no test stimulus"),
])
def test_cli_run_refuses_before_writing(tmp_path, task_id, needle):
    out = tmp_path / "run"
    p = cli("run", "--out", str(out), "--task", task_id, "--model", "x=hf:/nonexistent", "--no-progress", columns=300)
    assert p.returncode == 2, p.stdout + p.stderr
    assert needle in p.stderr and "wrote" not in p.stdout, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert not (out / "records.jsonl").exists() and not (out / "run.json").exists()


def test_benchmark_task_id_names_its_data_by_content_not_location(tmp_path):
    """Issue 20 item 3: a benchmark task's id held the absolute paths of its images and question
    file, so moving the images (or another machine) made a second task with every metric twice."""
    import shutil

    from perceptbench.seeding import file_sha256
    from helpers.paths import FIXTURES

    q = FIXTURES / "pope" / "coco_pope_adversarial.json"
    (tmp_path / "m2").mkdir()
    q2 = shutil.copy(q, tmp_path / "m2" / "questions.json")
    a = get_task(f"vsi.pope@images={tmp_path / 'imgs'},questions={q},limit=4")
    b = get_task(f"vsi.pope@images=/elsewhere/val2014,questions={q2},limit=4")
    assert a.task_id == b.task_id == f"vsi.pope@limit=4,questions=sha256:{file_sha256(q)[:16]}"
    assert str(tmp_path) not in a.task_id
    assert a.identity_params == b.identity_params and "images" not in a.identity_params
    assert a.data_location == {"images": str(tmp_path / "imgs"), "questions": str(q)}
    assert get_task(a.spec).params == a.params  # the spec rebuilds the very task (paths included)
    assert get_task(a.task_id).task_id == a.task_id  # a task id read back from a record is stable
    with open(q2, "a") as f:
        f.write("\n")
    assert get_task(f"vsi.pope@images=/x,questions={q2},limit=4").task_id != a.task_id  # other content, other task
    assert get_task("vsi.pope").task_id == "vsi.pope"  # the registered question file, any images folder
    assert get_task(f"vsi.pope@images={tmp_path}").task_id == "vsi.pope"


def test_battery_task_ids_and_params_are_unchanged():
    """Tasks without data-location settings: the id, the spec and the recorded params are what
    they always were (pinned records and scores)."""
    from perceptbench.tasks.registry import DEFAULT_BATTERY

    for tid in DEFAULT_BATTERY + ("salbench.detection.syn@n=60,n_probe=60", f"{SC}@n_test=41"):
        t = get_task(tid)
        # late settings (added after the task's records were pinned) stay out of the record at their default
        assert t.task_id == t.spec == tid and t.data_location == {}
        assert t.identity_params == {k: v for k, v in t.params.items() if k not in t.late_settings}
    assert get_task("similarity.chart.mark_color").identity_params == {"kernel": "tm"}
