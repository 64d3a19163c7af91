"""Which operations a generated set covers, and how often.

Filters: ``--operations`` (operationIds or ``METHOD /path`` keys), ``--tags`` (an operation with
any of the tags), deprecated operations skipped unless ``include_deprecated``, and methods a task
row cannot hold (``trace``) always skipped.

Order (:class:`OperationPicker`): every operation once, in a seeded shuffle, before any twice; after
that each pick is drawn with probability proportional to :func:`weight` = 1 + the number of
optional arguments the operation has (optional query/header parameters and optional top-level body
properties), capped at 8: an operation with more optional arguments has more distinct requests to
ask for, so it gets more of the repeat picks. An operation the generator gives up on
(:meth:`OperationPicker.exclude`) is never picked again.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from callbench.errors import ConfigError
from callbench.specs import ApiSpec, Operation
from callbench.tracks.webapi.dataset import HTTP_METHODS

MAX_WEIGHT = 8


def operation_key(op: Operation) -> str:
    """``GET /pets/{id}``: how manifests and rows name an operation."""
    return f"{op.method.upper()} {op.path}"


def weight(op: Operation) -> int:
    """1 + optional query/header parameters + optional top-level body properties, at most 8."""
    optional = sum(1 for p in op.parameters if not p.required and p.location in ("query", "header") and not p.deprecated)
    try:
        props = op.body_properties()
        optional += len(set(props) - set(op.body_required()))
    except Exception:  # noqa: BLE001 - an odd body schema counts as none
        pass
    return min(MAX_WEIGHT, 1 + optional)


@dataclass
class Selection:
    operations: list[Operation]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> operations


def select_operations(
    spec: ApiSpec,
    *,
    operations: Iterable[str] | None = None,
    tags: Iterable[str] | None = None,
    include_deprecated: bool = False,
) -> Selection:
    """The operations a set may use, in spec order; an ``--operations`` entry that names no
    operation is an error (a typo would otherwise silently shrink the set)."""
    ops = list(spec.operations)
    skipped: dict[str, int] = {}

    def skip(reason: str) -> None:
        skipped[reason] = skipped.get(reason, 0) + 1

    if operations is not None:
        wanted = [w.strip() for w in operations if w.strip()]
        chosen: list[Operation] = []
        for w in wanted:
            method, _, path = w.partition(" ")
            hits = [
                op for op in ops
                if op.operation_id == w or (path and op.method == method.lower() and op.path == path.strip())
            ]
            if not hits:
                raise ConfigError(f"--operations: '{w}' names no operation of {spec.source} (give an operationId or 'METHOD /path')")
            chosen += [h for h in hits if h not in chosen]
        skipped["not in --operations"] = len(ops) - len(chosen)
        ops = [op for op in ops if op in chosen]
    if tags is not None:
        want = {t.strip().lower() for t in tags if t.strip()}
        keep = [op for op in ops if want & {t.lower() for t in op.tags}]
        if len(keep) < len(ops):
            skipped["no tag of --tags"] = len(ops) - len(keep)
        ops = keep
    out: list[Operation] = []
    for op in ops:
        if op.method not in HTTP_METHODS:
            skip(f"method {op.method.upper()} (a task row cannot hold it)")
        elif op.deprecated and not include_deprecated:
            skip("deprecated")
        else:
            out.append(op)
    return Selection(out, {k: v for k, v in skipped.items() if v})


class OperationPicker:
    """Seeded order of picks (see the module docstring)."""

    def __init__(self, operations: list[Operation], seed: int):
        self.operations = list(operations)
        self.rng = random.Random(f"webapi-select:{seed}")
        self.excluded: set[int] = set()
        self.counts: dict[int, int] = {}
        first = list(range(len(self.operations)))
        self.rng.shuffle(first)
        self._first = first

    def exclude(self, op: Operation) -> None:
        for i, o in enumerate(self.operations):
            if o is op:
                self.excluded.add(i)

    @property
    def exhausted(self) -> bool:
        return len(self.excluded) >= len(self.operations)

    def next(self) -> Operation | None:
        """The next operation, or None when every operation is excluded."""
        while self._first:
            i = self._first.pop(0)
            if i not in self.excluded:
                self.counts[i] = self.counts.get(i, 0) + 1
                return self.operations[i]
        live = [i for i in range(len(self.operations)) if i not in self.excluded]
        if not live:
            return None
        i = self.rng.choices(live, weights=[weight(self.operations[j]) for j in live])[0]
        self.counts[i] = self.counts.get(i, 0) + 1
        return self.operations[i]
