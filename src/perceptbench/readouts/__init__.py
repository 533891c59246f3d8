"""Readouts: how a model's output becomes one response per trial (encoder probes and
cosine readouts; prompt + rule parser for VLMs)."""
