"""Helpers the tests share: :func:`helpers.cli.cli` (the one way tests run the command line),
:func:`helpers.records.plant_record` / :func:`helpers.records.plant_records` (records planted
for tests that need them in memory or on disk), :mod:`helpers.servers` (real local server
processes) and :mod:`helpers.browser` (headless Chromium).  ``pyproject.toml`` puts ``tests/``
on pytest's ``pythonpath``, so test modules import them as ``from helpers.cli import cli``."""
