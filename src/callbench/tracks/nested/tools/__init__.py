"""Tool libraries for the nested track, kept as source text.

Tools run only inside the sandbox process (:mod:`callbench.sandbox.python`): the harness reads the
files and lists their top-level functions with :mod:`ast`, but never imports or executes user code.

**Your own tools** (``--functions DIR``): every top-level public function of every ``*.py`` in
``DIR`` is a tool, called with the task's arguments (``arg_i`` binds to the i-th parameter, other
names by keyword). What a call returns is stored as a dict of named *output fields*, and a later
call reaches a field with a reference ``$var_1.FIELD$``. The names come from what the tool
returns and from the ``output_parameters`` of the tool's spec in the task row:

* a dict is kept as it is -- when the spec lists output parameters, only if it has every one of
  them; without ``output_parameters``, only the MathQA shape ``{"result": value}``;
* anything else is wrapped: a tuple as ``output_0``, ``output_1``, ...; any other value (a number,
  a string, a list, a dict that does not fit) as ``output_0``.

So a tool written ``return a + b`` answers ``{"output_0": 5}``, and ``$var_1.result$`` -- the
NESTFUL math convention -- cannot resolve: write ``return {"result": a + b}`` for data that
references ``.result``. The final answer is the last call's output with a single ``result`` or
``output_0`` field unwrapped, so a one-call task scores either way; only references between calls
depend on the names. :func:`check_tool_outputs` reads each tool's ``return`` statements and refuses
a run, in one line naming the tool file, the tool, the field and the task, when the gold calls
reference a field the tool cannot produce (a tool whose returns it cannot read, e.g. ``return d``,
is left to run time).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from callbench import pyast
from callbench.errors import DataError
from callbench.files import read_text
from callbench.tools import ToolModule

_MATHQA = Path(__file__).with_name("mathqa.py")


def _module(path: Path) -> ToolModule:
    source = read_text(path)
    try:
        tree = pyast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise DataError(f"{path}:{exc.lineno}: syntax error ({exc.msg})") from exc
    names = tuple(
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")
    )
    return ToolModule(str(path), source, names)


def builtin_tools() -> list[ToolModule]:
    """The MathQA operation library."""
    return [_module(_MATHQA)]


@functools.lru_cache(maxsize=1)
def mathqa_names() -> frozenset[str]:
    """Cached: loading a task file asks once per call, and each ask would re-parse the library."""
    return frozenset(builtin_tools()[0].functions)


def load_tools(directory: str | Path) -> list[ToolModule]:
    """Every top-level public function of every ``*.py`` in ``directory`` (sorted by file name;
    a later file's function overrides an earlier one of the same name)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(f"{directory}: not a directory of tool files")
    return [_module(p) for p in sorted(directory.glob("*.py"))]


# -- output fields, read from the source -------------------------------------------------------------

# Calls whose result is never a dict or a tuple (so it is stored as output_0).
_PLAIN_CALLS = frozenset(
    {"int", "float", "str", "bool", "round", "abs", "len", "sum", "sorted", "list", "set", "frozenset",
     "pow", "repr", "format", "chr", "ord", "bin", "hex", "oct", "any", "all", "complex"}
)
_PLAIN_MODULES = frozenset({"math", "cmath", "statistics"})


class _Returns(ast.NodeVisitor):
    """The ``return`` statements of one function (not of functions or classes nested in it), and
    what its local names are bound to: ``assigned`` holds the values of plain ``name = value``
    (and ``name += value``) bindings, ``opaque`` the names bound any other way (loops, unpacking,
    ``with ... as``, walrus, imports) or changed in place (``d["k"] = v``, ``d.update(...)``), whose
    values only run time knows."""

    def __init__(self) -> None:
        self.values: list[ast.expr | None] = []
        self.generator = False
        self.assigned: dict[str, list[ast.AST]] = {}
        self.opaque: set[str] = set()

    def visit_Return(self, node: ast.Return) -> None:
        self.values.append(node.value)
        if node.value is not None:
            self.visit(node.value)

    def visit_Yield(self, node: ast.AST) -> None:
        self.generator = True

    visit_YieldFrom = visit_Yield  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        if all(isinstance(t, ast.Name) for t in node.targets):
            for t in node.targets:
                self.assigned.setdefault(t.id, []).append(node.value)  # type: ignore[attr-defined]
            self.visit(node.value)
        else:
            self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if isinstance(node.target, ast.Name) and node.value is not None:
            self.assigned.setdefault(node.target.id, []).append(node.value)
            self.visit(node.value)
        else:
            self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            self.assigned.setdefault(node.target.id, []).append(node)
            self.visit(node.value)
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.opaque.add(node.id)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name):
            self.opaque.add(node.value.id)  # d["result"] = x: the value is changed in place
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.value, ast.Name):
            self.opaque.add(node.value.id)  # d.update(...), d.setdefault(...), ...
        self.generic_visit(node)

    def visit_alias(self, node: ast.alias) -> None:
        self.opaque.add((node.asname or node.name).split(".")[0])

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.opaque.add(node.name)
        self.generic_visit(node)

    def visit_Global(self, node: ast.AST) -> None:
        self.opaque.update(node.names)  # type: ignore[attr-defined]

    visit_Nonlocal = visit_Global  # type: ignore[assignment]

    def visit_FunctionDef(self, node: ast.AST) -> None:  # nested scopes return for themselves
        self.opaque.add(getattr(node, "name", ""))

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.AST) -> None:
        pass

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda  # own scopes


def _shape(value: ast.expr | None) -> tuple[str, Any]:
    """How one returned expression is stored: ``("dict", keys)``, ``("tuple", n)``,
    ``("plain", None)`` or ``("unknown", None)`` (decided only at run time)."""
    if value is None or isinstance(
        value,
        (ast.Constant, ast.List, ast.ListComp, ast.Set, ast.SetComp, ast.GeneratorExp, ast.JoinedStr, ast.Compare),
    ):
        return "plain", None
    if isinstance(value, ast.UnaryOp):
        return "plain", None
    if isinstance(value, ast.BinOp):
        return ("unknown", None) if isinstance(value.op, ast.BitOr) else ("plain", None)  # d1 | d2 is a dict
    if isinstance(value, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in value.keys]
        return ("dict", frozenset(keys)) if None not in keys else ("unknown", None)  # None: **spread or computed
    if isinstance(value, ast.Tuple):
        if any(isinstance(e, ast.Starred) for e in value.elts):
            return "unknown", None
        return "tuple", len(value.elts)
    if isinstance(value, ast.Call):
        func = value.func
        if isinstance(func, ast.Name) and func.id in _PLAIN_CALLS:
            return "plain", None
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in _PLAIN_MODULES:
            return "plain", None
    return "unknown", None


@dataclass(frozen=True)
class ToolOutputs:
    """What a tool's ``return`` statements store, as far as the source tells: ``shapes`` is one
    ``(kind, detail)`` per return (see :func:`_shape`); ``known`` is False when any return is
    decided only at run time."""

    module: str
    name: str
    shapes: tuple[tuple[str, Any], ...]

    @property
    def known(self) -> bool:
        return all(kind != "unknown" for kind, _ in self.shapes)

    def fields(self, spec_fields: Iterable[str] | None) -> frozenset[str] | None:
        """The output fields the tool can produce when its spec lists ``spec_fields`` (the rule of
        the module docstring), or None when that is decided only at run time."""
        if not self.known:
            return None
        wanted = frozenset(spec_fields or ())
        out: set[str] = set()
        for kind, detail in self.shapes:
            if kind == "dict" and (detail >= wanted if wanted else detail == {"result"}):
                out |= detail
            elif kind == "tuple":
                out |= {f"output_{i}" for i in range(detail)}
            else:
                out.add("output_0")
        return frozenset(out)

    def describe(self) -> str:
        """How the tool's returns are stored, in words (for error messages)."""
        kinds = []
        for kind, detail in self.shapes:
            if kind == "dict":
                kinds.append("a dict with keys " + ", ".join(f"'{k}'" for k in sorted(detail)))
            elif kind == "tuple":
                kinds.append(f"a {detail}-tuple (stored as output_0..output_{detail - 1})")
            else:
                kinds.append("a plain value (stored as 'output_0')")
        return " or ".join(dict.fromkeys(kinds))


def _ends(body: list[ast.stmt]) -> bool:
    """Does every path through ``body`` end in ``return`` or ``raise``? (False when unsure)"""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _ends(last.body)
    if isinstance(last, ast.Try):
        return (_ends(last.body) or _ends(last.orelse)) and all(_ends(h.body) for h in last.handlers) or _ends(last.finalbody)
    if isinstance(last, ast.While) and isinstance(last.test, ast.Constant) and last.test.value is True:
        return not any(isinstance(n, ast.Break) for n in ast.walk(last))
    return False


@functools.lru_cache(maxsize=64)
def _outputs_of(path: str, source: str) -> dict[str, ToolOutputs]:
    tree = pyast.parse(source, filename=path)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    memo: dict[str, tuple[tuple[str, Any], ...]] = {}

    def shapes_of(name: str, active: frozenset[str]) -> tuple[tuple[str, Any], ...]:
        """The shapes a function's returns store. A returned local name takes the shapes of the
        values bound to it; a returned call of another function of the same module
        (``return _r(x)``, MathQA's helper) takes that function's shapes."""
        if name in memo:
            return memo[name]
        node = defs[name]
        visitor = _Returns()
        for stmt in node.body:
            visitor.visit(stmt)
        a = node.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} | {p.arg for p in (a.vararg, a.kwarg) if p}

        def expr_shapes(value: ast.AST | None, depth: int) -> list[tuple[str, Any]]:
            if depth > 8:
                return [("unknown", None)]
            if isinstance(value, ast.AugAssign):
                return [("unknown", None) if isinstance(value.op, ast.BitOr) else ("plain", None)]
            if isinstance(value, ast.IfExp):
                return expr_shapes(value.body, depth + 1) + expr_shapes(value.orelse, depth + 1)
            if isinstance(value, ast.Name):
                bound = visitor.assigned.get(value.id)
                if value.id in params or value.id in visitor.opaque or not bound:
                    return [("unknown", None)]
                return [s for v in bound for s in expr_shapes(v, depth + 1)]
            func = value.func if isinstance(value, ast.Call) else None
            if isinstance(func, ast.Name) and func.id in defs and func.id not in visitor.assigned:
                return list(shapes_of(func.id, active | {name})) if func.id not in active else [("unknown", None)]
            return [_shape(value)]  # type: ignore[arg-type]

        shapes: list[tuple[str, Any]] = []
        if visitor.generator:
            shapes.append(("unknown", None))
        else:
            for value in visitor.values:
                shapes.extend(expr_shapes(value, 0))
            if not _ends(node.body):
                shapes.append(("plain", None))  # reaching the end returns None
        memo[name] = tuple(dict.fromkeys(shapes))
        return memo[name]

    return {
        name: ToolOutputs(path, name, shapes_of(name, frozenset()))
        for name in defs
        if not name.startswith("_")
    }


def tool_outputs(modules: list[ToolModule]) -> dict[str, ToolOutputs]:
    """Tool name -> its :class:`ToolOutputs`, a later module's function overriding an earlier one
    (as in the sandbox)."""
    out: dict[str, ToolOutputs] = {}
    for m in modules:
        outputs = _outputs_of(m.path, m.source)
        for name in m.functions:
            if name in outputs:
                out[name] = outputs[name]
    return out


def check_tool_outputs(tasks: Iterable[Any], modules: list[ToolModule], *, data_file: str | Path | None = None) -> None:
    """Refuse (one-line :class:`DataError`) a task set whose gold calls reference an output field
    a tool cannot produce: ``$var_1.result$`` where ``var_1`` is a call of a tool that returns a
    plain value (stored as ``output_0``), so the gold self-check itself would fail. Names the tool
    file, the tool, the field and the first task. Tools whose returns are decided only at run time
    (``return d``) are not judged; nor are references to labels that no gold call defines."""
    from callbench.tracks.nested.references import find_references
    from callbench.tracks.nested.schema import canonical_label

    outputs = tool_outputs(modules)
    where = f" in {data_file}" if data_file else ""
    for task in tasks:
        made: dict[str, str] = {}  # label -> tool name of the call that made it (so far)
        for call in task.output:
            for ref in find_references(call.arguments):
                tool = made.get(ref.label)
                info = outputs.get(tool) if tool is not None else None
                if info is None or not ref.path:
                    continue
                spec = task.tool(tool)
                spec_fields = list(spec.output_parameters) if spec is not None and spec.output_parameters else None
                fields = info.fields(spec_fields)
                field = ref.path[0]
                if fields is None or field in fields:
                    continue
                declared = f"; its spec lists {', '.join(spec_fields)}" if spec_fields else ""
                if spec_fields and any(k == "dict" for k, _ in info.shapes):
                    fix = f"return a dict with every field the spec lists ({', '.join(spec_fields)})"
                else:
                    fix = f"return {{'{field}': value}}"
                raise DataError(
                    f"{info.module}: tool '{tool}': task {task.id}{where} references '{ref}', but '{tool}' "
                    f"returns {info.describe()}, which has no field '{field}'{declared}; {fix} "
                    "(output naming: see callbench.tracks.nested.tools)"
                )
            if call.label:
                made[canonical_label(call.label)] = call.name
