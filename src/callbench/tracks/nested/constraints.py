"""Reference-aware constrained decoding for the nested track: one grammar per tool catalog.

The grammar (``callbench.constrain.nested_grammar``) fixes the JSON shape, tool names, argument
keys and value types; the label tracker adds what changes while the answer is written: labels are
unique and a reference names an earlier call's label with a key that call's tool outputs.
"""

from __future__ import annotations

from typing import Any

from callbench.constrain.per_sample import SampleConstraint
from callbench.tracks.nested.schema import NestedTask


def label_style_of(task: NestedTask) -> str:
    """The label style the gold uses (``$var_1``, ``$var1`` or ``var1``), so prompts and grammar agree."""
    raw = next((c.raw_label for c in task.output if c.raw_label), None) or "$var_1"
    prefix = "$" if raw.startswith("$") else ""
    sep = "_" if "var_" in raw else ""
    return f"{prefix}var{sep}{{i}}"


class NestedConstraintFactory:
    def __init__(self, max_calls: int | None = None):
        self.max_calls = max_calls
        self._shared: dict[tuple[Any, ...], Any] = {}

    def for_task(self, task: NestedTask) -> SampleConstraint:
        from callbench.constrain.engine import GrammarConstraint
        from callbench.constrain.label_tracker import make_label_tracker
        from callbench.constrain.nested_grammar import build_nested_grammar

        style = label_style_of(task)
        key = (tuple(t.name for t in task.tools), style, self.max_calls)
        shared = self._shared.get(key)
        if shared is None:
            grammar = build_nested_grammar(list(task.tools), label_style=style, max_calls=self.max_calls)
            shared = GrammarConstraint(grammar.lark, lambda g=grammar: make_label_tracker(g), name=f"nested/{len(task.tools)} tools")
            self._shared[key] = shared
        return SampleConstraint(shared)
