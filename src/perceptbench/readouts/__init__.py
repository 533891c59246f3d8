"""Readouts: how a model's output becomes one response per trial (encoder probes and
cosine readouts; prompt + rule parser for VLMs)."""

from .extract import extract_answer  # noqa: E402  (pure Python; the shared answer-extraction step)

__all__ = ["extract_answer"]
