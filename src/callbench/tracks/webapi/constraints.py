"""Constrained decoding for the web API track: one grammar per spec/setup/operation, shared by
all samples that need it, and a per-sample view that remembers what the constraint did."""

from __future__ import annotations

import statistics
from typing import Any

from callbench.specs import ApiSpec
from callbench.tracks.webapi.dataset import WebApiTask


class SampleConstraint:
    """Delegates the backend hooks to a shared :class:`GrammarConstraint` and keeps the sessions
    of this sample's generation (in-process backends generate one sample at a time)."""

    def __init__(self, shared: Any):
        self.shared = shared
        self._sessions: list[Any] | None = None

    def llamacpp_logits_processor(self, llama: Any) -> Any:
        proc = self.shared.llamacpp_logits_processor(llama)
        self._sessions = self.shared.last_sessions
        return proc

    def hf_logits_processor(self, tokenizer: Any) -> Any:
        proc = self.shared.hf_logits_processor(tokenizer)
        self._sessions = None  # created lazily per batch row; read after generation
        return proc

    def vllm_extra_body(self) -> dict[str, Any]:
        self._sessions = []
        return self.shared.vllm_extra_body()

    def stats(self) -> dict[str, Any]:
        sessions = self._sessions if self._sessions is not None else self.shared.last_sessions
        if not sessions:
            return {"server_side": self._sessions == []}
        return sessions[0].summary()


def in_scope(starter: str) -> set[str]:
    """Variables the starter code declares (usable as values in the call), except axios itself."""
    if not starter:
        return set()
    from callbench.sandbox import prepare_code

    try:
        _, declared = prepare_code(starter)
    except Exception:  # noqa: BLE001 - a starter we cannot parse just contributes no names
        return set()
    return {name for name in declared if name != "axios"}


class ConstraintFactory:
    """Builds (and caches) the constraint for a task."""

    def __init__(self, setup: str, options: Any = None):
        self.setup = setup
        self.options = options
        self._shared: dict[tuple[Any, ...], Any] = {}

    def for_task(self, task: WebApiTask, spec: ApiSpec, starter: str = "") -> SampleConstraint:
        from callbench.constrain.engine import GrammarConstraint
        from callbench.constrain.key_tracker import make_key_tracker
        from callbench.constrain.webapi_grammar import GrammarOptions, build_webapi_grammar

        idents = tuple(sorted(set(task.definitions or {}) | in_scope(starter)))
        options = self.options or GrammarOptions()
        if self.setup == "args":
            key = (id(spec), "args", task.config.method, task.config.url, idents)
            method, url = task.config.method, task.config.url
        else:
            key = (id(spec), "full", None, None, idents)
            method = url = None
        shared = self._shared.get(key)
        if shared is None:
            grammar = build_webapi_grammar(spec, setup=self.setup, method=method, url=url, identifiers=idents, options=options)
            shared = GrammarConstraint(
                grammar.lark, lambda g=grammar: make_key_tracker(g, spec), name=f"{task.api}/{self.setup}"
            )
            self._shared[key] = shared
        return SampleConstraint(shared)


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
