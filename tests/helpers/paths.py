"""Where the tests find the repository and their data files."""

from pathlib import Path

#: The repository root (the folder holding pyproject.toml and README.md).
REPO = Path(__file__).resolve().parents[2]
#: tests/fixtures: data files only (made by fixtures/make_external_fixtures.py or copied from releases).
FIXTURES = REPO / "tests" / "fixtures"
