"""Test helpers: tiny, seeded, fully offline model builders (no hub downloads)."""
