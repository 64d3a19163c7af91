"""Stateful API program track (StateGen/StateEval)."""
