"""Help texts: every command on one line, bracketed text kept."""

import pytest

from helpers.cli import cli


def test_help_and_models_listing_keep_bracketed_text():
    """Before: --executor help said pip install "perceptbench" (the [ray] extra eaten as rich
    markup); `perceptbench models` showed timm:NAME for timm:NAME[@WEIGHTS_FILE]."""
    assert 'perceptbench[ray]' in cli("run", "--help", columns=250).stdout
    assert "timm:NAME[@WEIGHTS_FILE]" in cli("models", columns=250).stdout


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize("group", [(), ("sources",)])
def test_top_level_help_lists_each_command_on_one_line(columns, group):
    """Before: at 80 columns `report` and `show` broke mid-sentence ('... a Markdown summary from' /
    'trial records ...'): their docstrings' hard line breaks were kept in the command list."""
    p = cli(*group, "--help", columns=columns)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if "Commands" in ln)
    panel = [ln for ln in lines[start + 1:] if ln.startswith("│")]
    assert len(panel) >= 3
    for ln in panel:  # every row starts with a command name: no continuation line
        assert ln[2:3].isalpha(), f"continuation line in the command list at {columns} columns: {ln!r}"
        assert max(len(x) for x in lines) <= int(columns)


def test_version_option_prints_the_package_version_without_importing_torch():
    from perceptbench import __version__

    p = cli("--version", torch="unimported")
    assert p.returncode == 0 and p.stdout.strip() == f"perceptbench {__version__}" and not p.stderr, p.stdout + p.stderr
