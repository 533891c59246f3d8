"""Readouts: turn a model's raw output (free text, embeddings) into one response per trial."""
