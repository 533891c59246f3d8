"""Helpers for tests and examples: tiny, randomly initialised, seeded models built offline from config objects (encoders and VLMs)."""
