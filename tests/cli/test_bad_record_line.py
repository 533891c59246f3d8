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


def _wrong_type(lines):
    k = 7
    o = json.loads(lines[k - 1])
    o["correct"] = "perhaps"
    return lines[:k - 1] + [json.dumps(o) + "\n"] + lines[k:], k, "field correct"


def _not_json(lines):
    k = 12
    return lines[:k - 1] + ['{"trial_id": "x", oops\n'] + lines[k:], k, "not valid JSON"


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


@pytest.mark.parametrize("spoil", [_wrong_type, _not_json, _truncated], ids=["wrong_type", "not_json", "truncated"])
def test_bad_record_line_gets_one_message_from_every_command(tmp_path, spoil):
    lines, lineno, what = spoil(_mark_color_lines())
    run = tmp_path / "run"
    run.mkdir()
    records = run / "records.jsonl"
    records.write_text("".join(lines))
    where = f"{records}:{lineno}:"
    out = {
        "score": cli("score", str(run), columns=400),
        "validate": cli("validate", str(run), columns=400),
        "merge": cli("merge", str(run), "--out", str(tmp_path / "merged"), columns=400),
        "report": cli("report", str(run), "--out", str(tmp_path / "report.html"), columns=400),
        "export": cli("export", str(run), "--out", str(tmp_path / "export"), columns=400),
    }
    messages = {c: _message(p, where) for c, p in out.items()}
    assert len(set(messages.values())) == 1, messages
    msg = messages["validate"]
    assert msg.startswith(where) and what in msg, msg
    assert all("Traceback" not in p.stderr for p in out.values())
    torn = spoil is _truncated
    for c, p in out.items():
        # a torn final line is a crash's leftover: every command but validate leaves it out and goes on
        assert p.returncode == (0 if torn and c != "validate" else 2), (c, p.stdout + p.stderr)
