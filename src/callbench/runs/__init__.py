"""Run directories, the per-sample SQLite store, and the shared async runner."""

from callbench.runs.store import RunStore

__all__ = ["RunStore"]
