"""Complexity metrics of a program, by static analysis of its Python source (``ast``).

* ``n_calls``: API calls written in the program (a call inside a loop counts once);
* ``path_depth``: the longest chain of API-derived bindings, counted in calls: a call whose
  arguments use a value derived from another call's result extends that call's chain;
* ``binding_count``: the edges of that graph, i.e. (API call, later API call that uses its result)
  pairs, each pair counted once;
* ``code_lines``: non-blank, non-comment lines; ``instruction_words``: words of the task text.

A value is *derived* from a call when it is the call's result or computed from a derived value
(subscripts, loop variables over it, list appends in a loop). Which calls are API calls is the
scenario's ``call_roots`` (``requests``, ``api``, ``torch``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable

from callbench import pyast


def _root(func: ast.AST) -> str | None:
    """``api`` for ``api.x(...)`` / ``torch.nn.functional.f(...)``, ``f`` for a bare ``f(...)``
    (an API of module-level functions names each function as a root); None for calls on results
    (``requests.get(...).json()`` is one API call, not two)."""
    node = func
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def free_function_roots(code: str) -> set[str]:
    """Names called bare in ``code`` (``text_to_speech(...)``) that are neither Python builtins
    nor defined or assigned in ``code``: for a program written against an API of module-level
    functions (upstream StateEval's voice mock), those are its API calls."""
    import builtins

    tree = pyast.parse(code)
    defined = {
        n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    } | {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    defined |= {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return called - defined - set(dir(builtins))


class _Flow(ast.NodeVisitor):
    def __init__(self, roots: Iterable[str]):
        self.roots = set(roots)
        self.taint: dict[str, set[int]] = {}  # variable -> API calls it derives from
        self.calls: list[int] = []
        self.edges: set[tuple[int, int]] = set()

    def _names(self, node: ast.AST) -> set[str]:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    def _expr_taint(self, node: ast.AST) -> set[int]:
        """Taint of an expression: the outermost API calls in it, else the taint of the names it
        reads. Registers every API call inside, innermost first, with an edge from each call
        (or tainted name) its arguments use."""
        if isinstance(node, ast.Call) and _root(node.func) in self.roots:
            used: set[int] = set()
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                used |= self._expr_taint(arg)
            cid = len(self.calls)
            self.calls.append(cid)
            self.edges.update((src, cid) for src in used)
            return {cid}
        if isinstance(node, ast.Name):
            return set(self.taint.get(node.id, set())) if isinstance(node.ctx, ast.Load) else set()
        found: set[int] = set()
        calls: set[int] = set()
        for child in ast.iter_child_nodes(node):
            t = self._expr_taint(child)
            if isinstance(child, ast.Call) and _root(child.func) in self.roots:
                calls |= t
            else:
                found |= t
        return calls or found

    def _assign(self, target: ast.AST, taint: set[int]) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name):
                self.taint[n.id] = set(taint)

    def visit_Assign(self, node: ast.Assign) -> None:
        t = self._expr_taint(node.value)
        for target in node.targets:
            self._assign(target, t)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assign(node.target, self._expr_taint(node.value) | self.taint.get(getattr(node.target, "id", ""), set()))

    def visit_Expr(self, node: ast.Expr) -> None:
        t = self._expr_taint(node.value)
        # lst.append(<derived>) makes lst derived
        v = node.value
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and isinstance(v.func.value, ast.Name):
            name = v.func.value.id
            self.taint[name] = self.taint.get(name, set()) | t

    def visit_For(self, node: ast.For) -> None:
        self._assign(node.target, self._expr_taint(node.iter))
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_If(self, node: ast.If) -> None:
        """Both branches start from the same bindings; afterwards a name may come from either."""
        self._expr_taint(node.test)
        before = {k: set(v) for k, v in self.taint.items()}
        for stmt in node.body:
            self.visit(stmt)
        after_then, self.taint = self.taint, before
        for stmt in node.orelse:
            self.visit(stmt)
        for name, t in after_then.items():
            self.taint[name] = self.taint.get(name, set()) | t


def analyse(code: str, roots: Iterable[str]) -> dict[str, int]:
    tree = pyast.parse(code)
    flow = _Flow(roots)
    for stmt in tree.body:
        flow.visit(stmt)
    depth = dict.fromkeys(flow.calls, 1)
    for cid in flow.calls:  # calls are numbered in program order, so sources come first
        for src, dst in flow.edges:
            if dst == cid:
                depth[cid] = max(depth[cid], depth[src] + 1)
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return {
        "n_calls": len(flow.calls),
        "path_depth": max(depth.values(), default=0),
        "binding_count": len(flow.edges),
        "code_lines": len(lines),
    }


# -- task files (``callbench analyze complexity``) ------------------------------------------------
SUMMARY_KEYS = {"n_calls": "mean_calls", "binding_count": "mean_bindings", "path_depth": "mean_path_depth", "code_lines": "mean_lines"}


DEFINITIONS = ("callbench", "upstream")


def task_metrics(task: dict, definition: str = "callbench") -> dict[str, int]:
    """The four metrics of one task's reference program, recomputed from its source (the stored
    ``complexity`` is not trusted: a task file may come from another generator). The API call
    roots are the scenario's, or the task's own ``call_roots`` list for a scenario callbench does
    not know. ``definition="upstream"`` counts as StateGen's analyzer does
    (:mod:`callbench.tracks.stateful.complexity_upstream`), on the program as published when the
    task has one (``published_program``: without callbench's result line)."""
    from callbench.errors import ConfigError, DataError
    from callbench.tracks.stateful.scenarios import get_scenario

    if definition not in DEFINITIONS:
        raise ValueError(f"unknown complexity definition {definition!r}")
    if definition == "upstream":
        from callbench.tracks.stateful.complexity_upstream import analyse_upstream

        code = task.get("published_program") or task.get("reference")
        if not isinstance(code, str):
            raise DataError(f"task {task.get('id')}: no 'reference' program")
        try:
            return analyse_upstream(code)
        except SyntaxError as exc:
            raise DataError(f"task {task.get('id')}: reference is not Python ({exc.msg}, line {exc.lineno})") from None

    calls = task.get("output")
    if "reference" not in task and isinstance(calls, list) and all(isinstance(c, dict) and "name" in c for c in calls):
        return sequence_metrics(calls)  # a nested task (generate nested --spec): its gold call sequence
    roots = task.get("call_roots")
    if roots is None:
        name = task.get("scenario")
        try:  # a built-in scenario, or one registered from a spec-made benchmark's openapi/
            roots = get_scenario(name).runtime.call_roots if isinstance(name, str) else None
        except ConfigError:
            roots = None
        if roots is None:
            raise DataError(f"task {task.get('id')}: unknown scenario {name!r} and no 'call_roots' list")
    code = task.get("reference")
    if not isinstance(code, str):
        raise DataError(f"task {task.get('id')}: no 'reference' program")
    try:
        return analyse(code, roots)
    except SyntaxError as exc:
        raise DataError(f"task {task.get('id')}: reference is not Python ({exc.msg}, line {exc.lineno})") from None


def summarize(tasks: list[dict], definition: str = "callbench") -> dict:
    """``mean_calls``, ``mean_bindings``, ``mean_path_depth``, ``mean_lines`` over ``tasks`` (and
    ``n_tasks``) under ``definition``; None means when there is no task."""
    rows = [task_metrics(t, definition) for t in tasks]
    out: dict = {"n_tasks": len(rows)}
    for metric, key in SUMMARY_KEYS.items():
        values = [r[metric] for r in rows if r.get(metric) is not None]  # a call sequence has no lines
        out[key] = round(sum(values) / len(values), 4) if values else None
    return out


_REF = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)(?:\.[^$]*)?\$")


def sequence_metrics(calls: list[dict]) -> dict[str, int | None]:
    """The metrics of a nested task's gold call sequence (NESTFUL's format: each call's ``label``,
    later arguments referring to it as ``$label.field$``), in callbench's definition: calls, bindings
    (an earlier call's result used by a later call: one per pair), path depth (the longest chain of
    such uses, in calls) and no code lines (a sequence is not a program)."""
    index = {c.get("label"): i for i, c in enumerate(calls) if isinstance(c.get("label"), str)}
    edges: set[tuple[int, int]] = set()
    for j, c in enumerate(calls):
        for name in _REF.findall(json.dumps(c.get("arguments"), default=str)):
            i = index.get(name)
            if i is not None and i < j:
                edges.add((i, j))
    depth = [1] * len(calls)
    for i, j in sorted(edges, key=lambda e: e[1]):
        depth[j] = max(depth[j], depth[i] + 1)
    return {"n_calls": len(calls), "path_depth": max(depth, default=0), "binding_count": len(edges), "code_lines": None}
