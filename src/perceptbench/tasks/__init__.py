"""Tasks: a stimulus set, a split, a human reference, a prompt, a response space and a
scorer.  Importing this package imports no model code (no torch)."""

from .registry import get_task, list_tasks, parse_task_id

__all__ = ["get_task", "list_tasks", "parse_task_id"]
