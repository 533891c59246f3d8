"""Every command of the README, run as written (issue 24, item 5).

The README's bash blocks are executed in order, each as one ``bash -e`` script, in a copy of the
layout a user has: a folder holding ``.venv`` (this interpreter's virtual environment) beside
``../shared/data`` (the mirror).  Only two things are changed, and both are said here: the
tiny models' folder ``/tmp/tiny/`` becomes this test's temporary folder, and the server's port
8000 becomes a free port.  A block that needs what this machine lacks (a hub model ``hf:ORG/NAME``
or a GPU) is run too and must stop the way the README says: non-zero, in one line, before
anything is written.  ``pip install`` lines are not re-run (CI runs the install itself,
``.ci/run``): each extra they name must exist in pyproject.toml, and each package they name must
be importable.  The test suite's own command (``python -m pytest``) is not run from inside it."""

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from helpers.paths import REPO
from helpers.servers import free_port

README = REPO / "README.md"


def bash_blocks(text: str) -> list[str]:
    """The README's ```bash blocks, in order, as written (continuation lines kept)."""
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def _needs_what_is_missing(block: str) -> bool:
    return bool(re.search(r"hf:[A-Za-z]", block) or "--device cuda" in block)


def _runnable(block: str, tiny: Path, port: int) -> str:
    """The block as a script: pip lines and the test command left out (checked apart), the
    tiny-model folder and the port replaced; ``a && b`` chains keep only their perceptbench part."""
    lines = []
    for ln in block.replace("\\\n", " ").splitlines():
        parts = [p.strip() for p in ln.split("&&")]
        parts = [p for p in parts if not re.search(r"(^|/)pip install|-m pytest|-m venv|tiny_gguf fetch-converter", p)]
        if parts:
            lines.append(" && ".join(parts))
    script = "\n".join(lines).replace("/tmp/tiny/", f"{tiny}/").replace("8000", str(port))
    return "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n" + script  # a server left running if a step fails


def test_the_readme_has_the_tour_and_its_pip_lines_name_real_extras():
    text = README.read_text()
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for m in re.finditer(r'pip install -e "\.\[([\w,]+)\]"', text):
        assert set(m.group(1).split(",")) <= extras, m.group(0)
    for heading in ("### 1. One model on one task", "### 2. Several models", "### 3. The report",
                    "### 4. A VLM", "### 5. The Visual Sensitivity Index", "### 6. A real VLM on a GPU"):
        assert heading in text, heading
    assert len(text.splitlines()) < 250, "the README is a user guide: details belong in docs/"


def test_every_readme_command_runs_as_written(tmp_path, mirror):
    if sys.prefix == sys.base_prefix:
        pytest.fail("the README's commands call .venv/bin/...: run the tests from the virtual environment")
    root = tmp_path / "user"
    repo = root / "perceptbench"
    repo.mkdir(parents=True)
    (repo / ".venv").symlink_to(sys.prefix)
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(mirror)
    tiny = tmp_path / "tiny"
    env = {**os.environ, "PERCEPTBENCH_RESPONSE_CACHE": str(tmp_path / "cache"),
           "PERCEPTBENCH_CACHE": str(tmp_path / "pbcache"), "HF_HUB_OFFLINE": "1"}
    env.pop("PERCEPTBENCH_MIRROR", None)  # the commands set it themselves, as the README writes them
    port = free_port()
    blocks = bash_blocks(README.read_text())
    assert len(blocks) >= 7
    for i, block in enumerate(blocks):
        script = _runnable(block, tiny, port)
        if not script.strip():
            continue
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=1800)
        if _needs_what_is_missing(block):
            out_dirs = re.findall(r"--out (\S+)", script)
            assert p.returncode != 0, f"block {i} ran without a hub or GPU:\n{script}"
            said = " ".join((p.stdout + p.stderr).split())  # the terminal width may wrap the one line
            assert p.returncode == 2 and said.startswith("error:") and said.count("error:") == 1 \
                and "Traceback" not in said, f"block {i}: not one error line:\n{p.stdout}{p.stderr}"
            assert out_dirs and not any((repo / d).exists() for d in out_dirs), f"block {i} wrote {out_dirs}"
        else:
            assert p.returncode == 0, f"block {i} failed (rc {p.returncode}):\n{script}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    # what the tour says each step leaves behind
    assert (repo / "runs" / "demo" / "scores.csv").is_file()
    assert (repo / "runs" / "one" / "scores.csv").is_file()
    assert (repo / "runs" / "multi" / "report.html").is_file()
    assert any((repo / "runs" / "multi" / "figures").glob("*.pdf"))
    vlm = (repo / "runs" / "vlm" / "records.jsonl").read_text()
    assert '"model": "myvlm"' in vlm or '"model":"myvlm"' in vlm
    assert (repo / "runs" / "vsi" / "scores.csv").is_file()
