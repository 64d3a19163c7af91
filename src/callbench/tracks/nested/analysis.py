"""Structure of a gold call sequence, for the NESTFUL paper's analyses (accuracy by sequence length,
by number of nested references and by dependency-graph shape).

Definitions (also in docs/nested-scoring.md, "Breakdowns"):

* **length**: the number of calls (a v1 ``var_result`` pseudo-call counts, as in ``gold_length``).
* **references**: every ``$label[.key...]$`` in a call's arguments (whole values, inside lists and
  objects, or embedded in a longer string; found by :func:`~callbench.tracks.nested.references.find_references`)
  whose label was defined by an *earlier* call. Each occurrence counts: ``[$var_1.x$, $var_1.x$]``
  is two. A reference to an unknown or later label is not a nested reference (it cannot be executed).
  ``referencing_calls`` counts the calls with at least one.
* **dependency graph**: one node per call, an edge j -> i when call i references call j's output
  (several references between the same pair are one edge). A label defined twice resolves to its
  latest definition before the reference, as sequential execution does.
* **shape**, from the largest number of parents (distinct calls a call consumes) and of children
  (distinct calls an output feeds):

  - ``independent``: no edges (a single call is independent);
  - ``chain``: edges, every call has at most one parent and at most one child, so each value flows
    along a path (several disjoint paths, or paths plus unrelated calls, are still ``chain``: no
    call combines outputs and no output is reused);
  - ``fan-in``: some call consumes the outputs of >= 2 calls, and no output feeds >= 2 calls;
  - ``fan-out``: some output feeds >= 2 calls, and no call consumes >= 2 outputs;
  - ``mixed``: both fan-in and fan-out occur (a diamond a -> b, a -> c, b -> d, c -> d is mixed).

  Exactly one shape applies, so the breakdown's n sums to the run's n.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from callbench.tracks.nested.references import find_references
from callbench.tracks.nested.schema import canonical_label

SHAPES: tuple[str, ...] = ("independent", "chain", "fan-in", "fan-out", "mixed")
REFERENCE_BINS: tuple[str, ...] = ("0", "1", "2", "3", "4", "5", "6+")


@dataclass(frozen=True)
class SequenceShape:
    length: int
    references: int  # nested references (occurrences), see the module docstring
    referencing_calls: int  # calls with at least one nested reference
    edges: tuple[tuple[int, int], ...]  # (producer index, consumer index), sorted, no duplicates
    shape: str  # one of SHAPES

    @property
    def reference_bin(self) -> str:
        return reference_bin(self.references)


def reference_bin(n: int) -> str:
    """The :data:`REFERENCE_BINS` entry for ``n`` references: one bin per count up to 5, then 6 and
    more together (in the built-in set 6-9 references are a third of the tasks, and each count
    beyond 5 alone would be too small a group to compare)."""
    return REFERENCE_BINS[min(n, len(REFERENCE_BINS) - 1)]


def _field(call: Any, key: str) -> Any:
    return call.get(key) if isinstance(call, dict) else getattr(call, key, None)


def analyse(calls: list[Any]) -> SequenceShape:
    """Length, references and shape of ``calls`` (dicts or :class:`ToolCall`, each with ``label``
    and ``arguments``)."""
    defined: dict[str, int] = {}
    edges: set[tuple[int, int]] = set()
    references = referencing = 0
    for i, call in enumerate(calls):
        args = _field(call, "arguments")
        found = [r for r in find_references(args if isinstance(args, dict) else {}) if r.label in defined]
        references += len(found)
        referencing += bool(found)
        edges.update((defined[r.label], i) for r in found)
        label = _field(call, "raw_label") or _field(call, "label")
        if isinstance(label, str) and canonical_label(label):
            defined[canonical_label(label)] = i
    return SequenceShape(
        len(calls), references, referencing, tuple(sorted(edges)), classify(len(calls), edges)
    )


def classify(n_calls: int, edges: set[tuple[int, int]] | list[tuple[int, int]]) -> str:
    """The shape of a dependency graph on ``n_calls`` nodes (see the module docstring)."""
    parents = [0] * n_calls
    children = [0] * n_calls
    for j, i in set(edges):
        children[j] += 1
        parents[i] += 1
    if not edges:
        return "independent"
    fan_in, fan_out = max(parents) >= 2, max(children) >= 2
    if fan_in and fan_out:
        return "mixed"
    return "fan-in" if fan_in else "fan-out" if fan_out else "chain"
