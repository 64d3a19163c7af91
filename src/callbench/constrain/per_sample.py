"""Per-sample view of a shared constraint, and the run-level summary of what CD did.

A grammar is compiled once and shared by every sample that needs it; each sample gets a thin view
that hands the backend hooks through and remembers its own decoding sessions, so the track can
store per-sample statistics (steps, interventions, mask time, unsatisfiable).
"""

from __future__ import annotations

import statistics
from typing import Any


class SampleConstraint:
    """Delegates the backend hooks to a shared :class:`GrammarConstraint` and keeps the sessions
    of this sample's generation (in-process backends generate one sample at a time)."""

    def __init__(self, shared: Any):
        self.shared = shared
        self._used = shared
        self._sessions: list[Any] | None = None

    def _target(self, heal: str) -> Any:
        """The shared constraint, or its healed variant when the backend gave back ``heal``."""
        if not heal:
            return self.shared
        from callbench.constrain.healing import healed_constraint

        return healed_constraint(self.shared, heal)

    def llamacpp_logits_processor(self, llama: Any, *, heal: str = "", max_tokens: int | None = None) -> Any:
        self._used = self._target(heal)
        proc = self._used.llamacpp_logits_processor(llama, max_tokens=max_tokens)
        self._sessions = self._used.last_sessions
        return proc

    def hf_logits_processor(self, tokenizer: Any, *, heal: str = "", max_tokens: int | None = None) -> Any:
        self._used = self._target(heal)
        proc = self._used.hf_logits_processor(tokenizer, max_tokens=max_tokens)
        self._sessions = None  # created lazily per batch row; read after generation
        return proc

    def vllm_extra_body(self, *, heal: str = "") -> dict[str, Any]:
        self._used = self._target(heal)
        self._sessions = []
        return self._used.vllm_extra_body()

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
