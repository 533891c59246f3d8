"""One validating record reader: a bad line of records.jsonl gets the same one-line message
(file, line number, field) from `score`, `validate`, `merge`, `report` and `export`."""

import gzip
import json
import subprocess

import pytest

from helpers.cli import cli
from helpers.paths import FIXTURES

FIX = FIXTURES / "scale" / "default_multi.jsonl.gz"
TASK = "similarity.chart.mark_color"
COMMANDS = ("score", "validate", "merge", "report", "export")


def _mark_color_lines() -> list[str]:
    lines = gzip.decompress(FIX.read_bytes()).decode().splitlines(keepends=True)
    return [ln for ln in lines if json.loads(ln)["task_id"] == TASK]


def _with_fields(lines, k, **fields):
    """``lines`` with line ``k`` (1-based) changed: ``fields`` set on its record."""
    o = json.loads(lines[k - 1])
    o.update(fields)
    return lines[:k - 1] + [json.dumps(o) + "\n"] + lines[k:]


def _wrong_type(lines):
    return _with_fields(lines, 7, correct="perhaps"), 7, "field correct"


def _not_json(lines):
    k = 12
    return lines[:k - 1] + ['{"trial_id": "x", oops\n'] + lines[k:], k, "not valid JSON"


def _not_json_on_line_100(lines):
    """rich printed ``records.jsonl:100:`` with the emoji of ``:100:`` in place of the line number."""
    k = 100
    assert len(lines) > k
    return lines[:k - 1] + ['{"trial_id": "x", oops\n'] + lines[k:], k, "not valid JSON"


def _rep_string(lines):
    return _with_fields(lines, 9, rep="0"), 9, "field rep"


def _response_object(lines):
    """`export` accepted a response that is a JSON object and `score` tracebacked on it."""
    return _with_fields(lines, 5, response={"a": 1}, correct=None), 5, "field response"


def _response_list_of_numbers(lines):
    return _with_fields(lines, 5, response=[1, 2], correct=None), 5, "field response"


def _invalid_utf8(lines):
    """Invalid UTF-8 in a raw answer passed `validate` (silently replaced) and crashed the others.
    The byte 0xff is written through the surrogateescape error handler (U+DCFF -> 0xff)."""
    bad = _with_fields(lines, 3, raw_output="XXBADXX")
    return bad[:2] + [bad[2].replace("XXBADXX", "ab\udcffcd")] + bad[3:], 3, "not valid UTF-8"


def _byte_order_mark(lines):
    """A UTF-8 byte-order mark before the first record: `score` and `export` (duckdb's reader skips
    it) read the file while the other three refused line 1."""
    return ["\ufeff" + lines[0]] + lines[1:], 1, "not valid JSON (Unexpected UTF-8 BOM"


def _correct_disagrees(lines):
    """A hand-edited response that no longer matches its ``correct`` (7 where the truth is 1, still
    ``correct: true``): `score` read it on the columns and scored ``correct`` as given while the other
    commands refused the line."""
    k = next(i for i, ln in enumerate(lines, 1) if json.loads(ln)["correct"] is True and i > 3)
    return _with_fields(lines, k, response=7), k, "correct=True disagrees with response 7"


def _truncated(lines):
    last = lines[-1]
    return lines[:-1] + [last[:len(last) // 2]], len(lines), "incomplete final line"


def _message(p: subprocess.CompletedProcess, where: str) -> str:
    """The output line naming ``where`` (file:line:), without its error/warning label."""
    hits = [ln.strip() for ln in (p.stdout + p.stderr).splitlines() if where in ln]
    assert len(hits) == 1, p.stdout + p.stderr
    msg = hits[0]
    for label in ("error: ", "warning: "):
        msg = msg.removeprefix(label)
    return msg


@pytest.mark.parametrize("spoil", [_wrong_type, _not_json, _not_json_on_line_100, _truncated, _rep_string, _response_object,
                                   _response_list_of_numbers, _invalid_utf8, _byte_order_mark, _correct_disagrees],
                         ids=["wrong_type", "not_json", "not_json_on_line_100", "truncated", "rep_string", "response_object",
                              "response_list_of_numbers", "invalid_utf8", "byte_order_mark", "correct_disagrees"])
def test_bad_record_line_gets_one_message_from_every_command(tmp_path, spoil):
    lines, lineno, what = spoil(_mark_color_lines())
    _every_command_says_one_message(tmp_path, lines, lineno, what, torn=spoil is _truncated)


def _every_command_says_one_message(tmp_path, lines: list[str], lineno: int, what: str, torn: bool = False) -> None:
    """``score``, ``validate``, ``merge``, ``report``, ``export`` and ``show`` of a run whose records are
    ``lines`` each print one line naming ``records.jsonl:LINENO:``, the same line, containing
    ``what``, with no traceback, and exit 2 (a torn final line: every command but validate goes on;
    before, ``show`` printed it as a raw Python warning with its source line)."""
    run = tmp_path / "run"
    run.mkdir()
    records = run / "records.jsonl"
    records.write_bytes("".join(lines).encode("utf-8", "surrogateescape"))
    where = f"{records}:{lineno}:"
    out = {
        "score": cli("score", str(run), columns=400),
        "validate": cli("validate", str(run), columns=400),
        "merge": cli("merge", str(run), "--out", str(tmp_path / "merged"), columns=400),
        "report": cli("report", str(run), "--out", str(tmp_path / "report.html"), columns=400),
        "export": cli("export", str(run), "--out", str(tmp_path / "export"), columns=400),
        "show": cli("show", str(run), columns=400),
    }
    messages = {c: _message(p, where) for c, p in out.items()}
    assert len(set(messages.values())) == 1, messages
    msg = messages["validate"]
    assert msg.startswith(where) and what in msg, msg
    assert all("Traceback" not in p.stdout + p.stderr for p in out.values())
    for c, p in out.items():
        # a torn final line is a crash's leftover: every command but validate leaves it out and goes on
        assert p.returncode == (0 if torn and c != "validate" else 2), (c, p.stdout + p.stderr)


VSI_TASK = "vsi.salbench.syn@n=4"


def _vsi_lines() -> list[str]:
    """A VSI task's records as a run writes them: 4 samples x (clean, region blur, whole blur) of
    one model, top-3 first-token distributions."""
    import tempfile
    from pathlib import Path

    from perceptbench.tasks import get_task

    from helpers.records import plant_records, plant_vsi_record

    task = get_task(VSI_TASK)
    lps = {"clean": [-0.3, -1.6, -3.0], "region_blur": [-0.6, -1.1, -2.5], "whole_blur": [-0.9, -0.8, -2.0]}
    recs = [plant_vsi_record(task, cond, f"s{i}", [5, 7, 9], lp, image_sha256=f"{i}{cond}")
            for i in range(4) for cond, lp in lps.items()]
    with tempfile.TemporaryDirectory() as d:
        return plant_records(Path(d) / "run", recs).read_text().splitlines(keepends=True)


VSI_LINE = 5
"""The damaged line: sample s1 under region blur."""


def _vsi_text(old: str, new: str):
    """A spoiler of line :data:`VSI_LINE`'s text: ``old`` (once in it) replaced by ``new``."""
    def spoil(lines):
        line = lines[VSI_LINE - 1]
        assert line.count(old) == 1, (old, line)
        return lines[:VSI_LINE - 1] + [line.replace(old, new)] + lines[VSI_LINE:]
    return spoil


def _vsi_meta(**fields):
    """A spoiler setting ``fields`` on line :data:`VSI_LINE`'s ``run_meta.vsi`` (None for ``vsi``
    itself: ``run_meta.vsi`` null; ``vsi="delete"``: the key removed)."""
    def spoil(lines):
        o = json.loads(lines[VSI_LINE - 1])
        if fields.get("vsi", 0) is None:
            o["run_meta"]["vsi"] = None
        elif fields.get("vsi") == "delete":
            del o["run_meta"]["vsi"]
        else:
            o["run_meta"]["vsi"].update(fields)
        return lines[:VSI_LINE - 1] + [json.dumps(o, separators=(",", ":")) + "\n"] + lines[VSI_LINE:]
    return spoil


#: damaged VSI lines (found by a fresh user: each left its sample out of the cell silently, or ended in
#: a traceback or a message without file and line) -> the field the one-line message names
VSI_DAMAGE = {
    "logprob_string": (_vsi_meta(logprobs=[-0.6, "x", -2.5]), "field run_meta.vsi.logprobs"),
    "logprobs_one_short": (_vsi_meta(logprobs=[-0.6, -1.1]), "field run_meta.vsi.logprobs"),
    "vsi_null": (_vsi_meta(vsi=None), "field run_meta.vsi:"),
    "logprob_1e400": (_vsi_text("-1.1,", "1e400,"), "field run_meta.vsi.logprobs"),
    "logprob_nan": (_vsi_text("-1.1,", "NaN,"), "field run_meta.vsi.logprobs"),
    "condition_twice": (_vsi_text('"condition":"region_blur"', '"condition":"region_blur","condition":"clean"'),
                        "field run_meta.vsi.condition"),
    "sigma_string": (_vsi_meta(sigma_px="x"), "field run_meta.vsi.sigma_px"),
    # a second fresh user: these two passed every command while the sample left its cell (or, with a
    # negative sigma, opened a cell of its own)
    "vsi_key_deleted": (_vsi_meta(vsi="delete"), "field run_meta.vsi: missing on a vlm_vsi_perturbed record"),
    "sigma_negative": (_vsi_meta(sigma_px=-20.0), "field run_meta.vsi.sigma_px"),
}


@pytest.mark.parametrize("damage", list(VSI_DAMAGE))
def test_damaged_vsi_line_gets_one_message_from_every_command(tmp_path, damage):
    """A VSI line whose ``run_meta.vsi`` is damaged is refused by the one VSI line rule
    (:func:`perceptbench.records.vsi_meta_problem`, or a key given twice): the same one-line message
    (file, line, field) from the five commands, never a sample silently left out of its cell."""
    spoil, what = VSI_DAMAGE[damage]
    _every_command_says_one_message(tmp_path, spoil(_vsi_lines()), VSI_LINE, what)


def test_a_long_error_stays_one_line_when_output_is_not_a_terminal(tmp_path):
    """Output to a file or a pipe is 150 columns wide (COLUMNS unset): an error message longer than
    that was wrapped onto two lines, so a log's line no longer held the whole message."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("".join(VSI_DAMAGE["logprob_string"][0](_vsi_lines())))
    where = f"{run / 'records.jsonl'}:{VSI_LINE}:"
    for command in ("score", "validate"):  # an error, a problem listed
        p = cli(command, str(run), columns=None, env={"COLUMNS": None})
        hits = [ln for ln in (p.stdout + p.stderr).splitlines() if where in ln]
        assert p.returncode == 2 and len(hits) == 1, p.stdout + p.stderr
        assert len(hits[0]) > 150 and hits[0].rstrip().endswith("NaN or infinite)"), (command, hits[0])


def test_the_undamaged_vsi_lines_pass_every_command(tmp_path):
    """The VSI run the damage tests spoil is read by every command without complaint (its clean
    answers, unparsed, are recorded nulls: no error)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").write_text("".join(_vsi_lines()))
    assert json.loads(_vsi_lines()[VSI_LINE - 1])["stimulus_id"] == "s1~region_blur"
    for args in (("score", run), ("validate", run), ("merge", run, "--out", tmp_path / "merged"),
                 ("report", run, "--out", tmp_path / "report.html"), ("export", run, "--out", tmp_path / "export")):
        p = cli(*map(str, args), columns=400)
        out = p.stdout + p.stderr
        assert p.returncode == 0 and "error:" not in out and "Traceback" not in out, out


@pytest.fixture(scope="module")
def seed0_run(tmp_path_factory, mirror):
    from perceptbench.runner import RunConfig, run

    d = tmp_path_factory.mktemp("seeds") / "run"
    run(RunConfig(out=d, tasks=[TASK], models=[]), progress=False)
    return d


@pytest.mark.parametrize("mixed", [True, False], ids=["one_foreign_record", "every_record_of_another_seed"])
def test_resume_over_records_of_another_seed_refuses_before_appending(tmp_path, seed0_run, mixed):
    """Issue 20 item 5: resuming a run whose file held a record of another seed appended 20
    records before anything complained, then named no file or line and advised --seed."""
    import shutil

    from helpers.records import plant_record, plant_records

    run = tmp_path / "run"
    shutil.copytree(seed0_run, run)
    records = run / "records.jsonl"
    n = records.read_bytes().count(b"\n")
    if mixed:
        plant_records(records, [plant_record(TASK, stimulus_id="x", response="a", ground_truth="a", seed=1)])
    seed = 0 if mixed else 1
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    p = cli("run", "--out", run, "--seed", seed, "--task", TASK, "--task", "similarity.chart.series_count",
            "--no-progress", columns=400)
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    msg = " ".join(p.stderr.split())
    line = n + 1 if mixed else 1
    assert msg.startswith(f"error: {records}:{line}: a record of seed {1 if mixed else 0}"), msg
    if mixed:
        assert "no --seed resumes it" in msg and "new --out" in msg
    else:
        assert "rerun with --seed 0" in msg
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before  # nothing appended, run.json untouched
