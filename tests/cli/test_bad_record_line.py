"""One validating record reader: a bad line of records.jsonl gets the same one-line message
(file, line number, field) from `score`, `validate`, `merge`, `report` and `export`."""

import gzip
import json
import os
import subprocess
import sys

import pytest
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


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "perceptbench.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "400"})


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
        "score": _cli("score", str(run)),
        "validate": _cli("validate", str(run)),
        "merge": _cli("merge", str(run), "--out", str(tmp_path / "merged")),
        "report": _cli("report", str(run), "--out", str(tmp_path / "report.html")),
        "export": _cli("export", str(run), "--out", str(tmp_path / "export")),
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
