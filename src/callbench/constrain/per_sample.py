"""Per-sample view of a shared constraint, and the run-level summary of what CD did.

A grammar is compiled once and shared by every sample that needs it; each sample gets a thin view
that hands the backend hooks through and remembers its own decoding sessions, so the track can
store per-sample statistics (steps, interventions, mask time, unsatisfiable).
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any

from callbench.constrain.protocol import GrammarHooks, Served

if TYPE_CHECKING:  # the engine (numpy, llguidance) loads only once a grammar is built
    from callbench.constrain.engine import ConstraintSession, GrammarConstraint


class SampleConstraint(GrammarHooks):
    """A :class:`~callbench.constrain.protocol.Constraint` served by a shared
    :class:`GrammarConstraint` (or its healed variant), keeping the sessions of this sample's
    generation (in-process backends generate one sample at a time)."""

    def __init__(self, shared: GrammarConstraint):
        self.shared = shared
        self._used = shared
        self._sessions: list[ConstraintSession] | None = None

    def __repr__(self) -> str:
        return f"SampleConstraint({self.shared!r})"

    def _grammar_for(self, heal: str) -> GrammarConstraint:
        """The shared constraint, or its healed variant when the backend gave back ``heal``."""
        self._used = self.shared.healed(heal)
        return self._used

    def _served(self, kind: Served) -> None:
        if kind == "llamacpp":
            self._sessions = self._used.last_sessions
        elif kind == "hf":
            self._sessions = None  # created lazily per batch row; read after generation
        else:
            self._sessions = []  # decoded by the server: no session here

    def stats(self) -> dict[str, Any]:
        sessions = self._sessions if self._sessions is not None else self._used.last_sessions
        if not sessions:
            return {"server_side": self._sessions == []}
        return sessions[0].summary()


def summarize_constraint_stats(stats: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Run-level view of what constrained decoding did (None when no sample was constrained)."""
    local = [s for s in stats if s and "steps" in s]
    if not local:
        return None
    steps = sum(s["steps"] for s in local)
    return {
        "samples": len(local),
        "steps": steps,
        "changed_top": sum(s["changed_top"] for s in local),
        "changed_top_per_sample_mean": statistics.fmean(s["changed_top"] for s in local),
        "mask_ms_median_of_samples": statistics.median(s["mask_ms_median"] for s in local),
        "mask_ms_p99_max": max(s["mask_ms_p99"] for s in local),
        "unsatisfiable": sum(1 for s in local if s.get("unsatisfiable")),
    }
