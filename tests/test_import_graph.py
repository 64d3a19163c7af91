"""callbench's own modules import each other without circles, and only downwards.

Why: a circle means neither module can be read (or loaded) first, and it becomes a "partially
initialized module" error the day one of its lazy imports moves to the top of a file. An arrow up
(a lower layer importing a higher one) is a circle in the making and ties the lower layer to what
is built on it. The graph is built with ``ast`` from the files under src/callbench, importing
nothing.

The layers, bottom to top (:data:`LAYERS`; a module may import its own layer and any below it):

1. ``errors``, ``version``, ``untrusted``, ``pyast`` -- exceptions, limits on hostile values, the
   version, a guarded ``ast.parse``;
2. ``files`` (reading a user's file, writing JSON atomically), ``data`` (where data sets live, fetching them);
3. ``specs`` (OpenAPI), ``tools`` (a tool's catalog entry and source file);
4. ``statemodel`` (state-model inference from a spec), ``services`` (the JSON HTTP service base and
   the process each service instance runs in);
5. ``sandbox`` (running generated code);
6. ``constrain`` (grammars and constrained decoding);
7. ``models`` (model backends);
8. ``mock`` (a stateful mock API from a spec and its state model);
9. ``tracks.base`` (the track interface), ``tracks.templates``, ``tracks`` (its ``__init__``);
10. ``tracks.stateful``;
11. ``tracks.nested``, ``tracks.webapi`` (both build on the stateful track's sampler and writer);
12. ``runs`` (the runner and the run store: tracks only through ``tracks.base``);
13. ``results``, ``report`` (reading runs);
14. ``api`` (``callbench.run``/``report``);
15. ``sweep`` (grids of runs, each cell one ``callbench.run``);
16. ``callbench`` (the package ``__init__``, lazily the API);
17. ``cli``, ``__main__``;
18. ``testing`` (test support: tiny models, a fake OpenAI server; nothing shipped imports it).

Every module must sit in a layer: a new top-level module or package is added to :data:`LAYERS`
(the test says so). The rules of the graph:

* Nodes are modules: ``callbench.x.y`` for ``x/y.py``, ``callbench.x`` for ``x/__init__.py``.
* Every ``import`` and ``from ... import`` counts, wherever it is: at the top, inside a function
  (a lazy import is still a dependency), under ``try`` or ``if TYPE_CHECKING``. Relative imports are
  resolved against the importing module's package. Only callbench's modules are nodes; imports by
  string (``importlib.import_module``, registries of dotted names) are not followed.
* ``from P import n`` is an edge to ``P.n`` when that is a module, else to ``P`` (a name that
  ``P/__init__.py`` defines or provides lazily).
* Importing ``a.b.c`` also runs the ``__init__`` of ``a`` and of ``a.b``, so those are edges too,
  except for the packages that contain the importing module: their ``__init__`` has already run by
  the time the module does. Hence a package's ``__init__`` may import its own submodules without
  forming a circle, while a submodule that takes a *name* from its own package's ``__init__``
  (``from callbench.constrain import X``) depends on that ``__init__``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "callbench"

Edge = tuple[str, str]

#: The layers, bottom first (see the module docstring). Each names modules and packages relative
#: to ``callbench`` ("" is the package ``__init__`` alone); a module belongs to the layer of its
#: longest matching name (``tracks.stateful.x`` to ``tracks.stateful``, not ``tracks``).
LAYERS: list[tuple[str, ...]] = [
    ("errors", "version", "untrusted", "pyast"),
    ("files", "data"),
    ("specs", "tools"),
    ("statemodel", "services"),
    ("sandbox",),
    ("constrain",),
    ("models",),
    ("mock",),
    ("tracks.base", "tracks.templates", "tracks"),
    ("tracks.stateful",),
    ("tracks.nested", "tracks.webapi"),
    ("runs",),
    ("results", "report"),
    ("api",),
    ("sweep",),
    ("",),
    ("cli", "__main__"),
    ("testing",),
]


def _module_name(src: Path, path: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((src.name, *parts))


def _modules(src: Path) -> dict[str, Path]:
    return {_module_name(src, p): p for p in sorted(src.rglob("*.py"))}


def _package_of(module: str, path: Path) -> str:
    """The package that relative imports in ``module`` are resolved against."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(node: ast.Import | ast.ImportFrom, package: str, modules: dict[str, Path]) -> list[str]:
    """The modules an import statement names, not counting the package inits that it also runs."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        source = ".".join([*base, node.module] if node.module else base)
    else:
        source = node.module or ""
    out = []
    for alias in node.names:
        sub = f"{source}.{alias.name}"
        out.append(sub if sub in modules else source)
    return out


def import_graph(src: Path = SRC) -> dict[Edge, tuple[Path, int]]:
    """Every edge between the modules of package directory ``src``, with the first place (file,
    line) that makes it."""
    root = src.name
    modules = _modules(src)
    edges: dict[Edge, tuple[Path, int]] = {}
    for module, path in modules.items():
        package = _package_of(module, path)
        own = set(_ancestors(module))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _imported(node, package, modules):
                if target != root and not target.startswith(root + "."):
                    continue
                implied = [a for a in _ancestors(target) if a not in own]
                for dep in (*implied, target):
                    if dep in modules and dep != module:
                        edges.setdefault((module, dep), (path, node.lineno))
    return edges


def _strongly_connected(nodes: set[str], succ: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative): the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, iter(succ.get(start, [])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(succ.get(child, []))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _shortest_cycle(start: str, members: set[str], succ: dict[str, list[str]]) -> list[str]:
    """A shortest circle from ``start`` back to it inside ``members`` (breadth-first), closed."""
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in succ.get(node, []):
                if child not in members:
                    continue
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{start}: no circle in its component")  # pragma: no cover


def find_cycles(src: Path = SRC) -> list[str]:
    """One entry per knot (strongly connected set of modules): the shortest circle through each of
    its modules (duplicates dropped), each import written ``a -> b (file:line)``."""
    edges = import_graph(src)
    succ: dict[str, list[str]] = {}
    for a, b in sorted(edges):
        succ.setdefault(a, []).append(b)
    nodes = {m for edge in edges for m in edge}
    out = []
    for component in _strongly_connected(nodes, succ):
        members = set(component)
        seen: set[frozenset[Edge]] = set()
        circles = []
        for start in component:
            cycle = _shortest_cycle(start, members, succ)
            key = frozenset(zip(cycle, cycle[1:], strict=False))
            if key in seen:
                continue
            seen.add(key)
            hops = []
            for a, b in zip(cycle, cycle[1:], strict=False):
                path, line = edges[(a, b)]
                hops.append(f"{a} -> {b} ({path.relative_to(src.parent)}:{line})")
            circles.append("\n      ".join(hops))
        out.append(f"{len(component)} modules in a knot:\n    * " + "\n    * ".join(circles))
    return out


def layer_of(module: str, layers: list[tuple[str, ...]], root: str) -> tuple[int, str] | None:
    """``(index, name)`` of the layer ``module`` belongs to (its longest matching name), or None."""
    best: tuple[int, str] | None = None
    for i, names in enumerate(layers):
        for name in names:
            full = f"{root}.{name}" if name else root
            inside = module == full or (name != "" and module.startswith(full + "."))  # "": the __init__ alone
            if inside and (best is None or len(name) > len(best[1])):
                best = (i, name)
    return best


def find_arrows_up(src: Path = SRC, layers: list[tuple[str, ...]] = LAYERS) -> list[str]:
    """Every import from a lower layer to a higher one, ``a -> b (file:line)`` with the two layers,
    and every module that sits in no layer."""
    root = src.name
    out = []
    for module in sorted(_modules(src)):
        if layer_of(module, layers, root) is None:
            out.append(f"{module}: in no layer (add it to LAYERS in tests/test_import_graph.py)")
    for (a, b), (path, line) in sorted(import_graph(src).items()):
        la, lb = layer_of(a, layers, root), layer_of(b, layers, root)
        if la is not None and lb is not None and lb[0] > la[0]:
            out.append(
                f"{a} -> {b} ({path.relative_to(src.parent)}:{line}): layer {la[0] + 1} "
                f"({la[1] or root}) imports layer {lb[0] + 1} ({lb[1] or root})"
            )
    return out


def _package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_rules_on_a_small_package(tmp_path):
    """The rules of the module docstring, on a package made for them."""
    src = _package(
        tmp_path / "pkg",
        {
            "__init__.py": "from pkg.sub import helper\n",  # a package init importing its own submodule
            "sub/__init__.py": "from .helper import f\n",  # relative, to a submodule
            "sub/helper.py": "import pkg.sub.other\n",  # a sibling by full name: no edge to pkg.sub
            "sub/other.py": "def g():\n    from pkg.low import x\n",  # inside a function
            "low.py": "from pkg.sub import NAME\n",  # a name from pkg.sub's __init__
            "leaf.py": "import json\n",
        },
    )
    assert set(import_graph(src)) == {
        ("pkg", "pkg.sub"),
        ("pkg", "pkg.sub.helper"),
        ("pkg.sub", "pkg.sub.helper"),
        ("pkg.sub.helper", "pkg.sub.other"),
        ("pkg.sub.other", "pkg.low"),
        ("pkg.low", "pkg.sub"),
    }
    cycles = find_cycles(src)
    assert len(cycles) == 1 and cycles[0].startswith("4 modules in a knot:")
    assert "pkg.low -> pkg.sub (pkg/low.py:1)" in cycles[0]
    assert "pkg.sub.other -> pkg.low (pkg/sub/other.py:2)" in cycles[0]
    # A submodule from its own package: pkg's __init__ (which leads back here) is not an edge.
    (src / "low.py").write_text("from pkg import leaf\n")
    assert ("pkg.low", "pkg.leaf") in import_graph(src) and find_cycles(src) == []


def test_graph_sees_callbench_lazy_and_package_imports():
    edges = import_graph()
    assert ("callbench", "callbench.errors") in edges  # top of callbench/__init__.py
    assert ("callbench", "callbench.data.fetch") in edges  # inside __getattr__
    assert ("callbench", "callbench.data") in edges  # the __init__ that import runs
    # A submodule does not depend on the __init__ of its own package merely by importing a sibling.
    assert not any(a.startswith("callbench.data.") and b == "callbench.data" for a, b in edges)


def test_no_import_cycles():
    cycles = find_cycles()
    if cycles:
        pytest.fail(f"{len(cycles)} knot(s) of imports in callbench:\n" + "\n".join(cycles), pytrace=False)


def test_layer_rule_on_a_small_package(tmp_path):
    """An arrow up is found wherever the import is (here inside a function); the longest name
    decides a module's layer; a module in no layer is named."""
    src = _package(
        tmp_path / "pkg",
        {
            "__init__.py": "",
            "low.py": "import json\n",
            "mid/__init__.py": "from pkg import low\n",
            "mid/inner.py": "def f():\n    from pkg.top import g\n",  # mid.inner sits above mid
            "top.py": "from pkg.mid import inner\n",
        },
    )
    layers = [("low",), ("mid",), ("mid.inner", "top"), ("",)]
    assert layer_of("pkg.mid.inner", layers, "pkg") == (2, "mid.inner")
    assert layer_of("pkg.mid", layers, "pkg") == (1, "mid")
    assert find_arrows_up(src, layers) == []  # down and sideways only
    (src / "low.py").write_text("import json\n\n\ndef f():\n    import pkg.mid\n")
    assert find_arrows_up(src, layers) == [
        "pkg.low -> pkg.mid (pkg/low.py:5): layer 1 (low) imports layer 2 (mid)"
    ]
    (src / "stray.py").write_text("")
    assert find_arrows_up(src, layers)[0] == "pkg.stray: in no layer (add it to LAYERS in tests/test_import_graph.py)"


def test_imports_only_point_down():
    problems = find_arrows_up()
    if problems:
        pytest.fail(f"{len(problems)} import(s) against the layer order in callbench:\n  " + "\n  ".join(problems), pytrace=False)
