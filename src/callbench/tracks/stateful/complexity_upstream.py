"""Complexity of a program as StateGen's own analyzer counts it (``analyze complexity --definition upstream``).

The paper's figures (calls, bindings, path depth per task) come from ``APICallAnalyzer``,
``compute_metrics`` and ``compute_path_depth`` in ``Sgenerator/utils.py`` of StateGen (commit
f85b507). Their counting rules, reimplemented here from what that analyzer does (checked program by
program against it, see tests/tracks/stateful/test_complexity_upstream.py), differ from callbench's
own definition (:mod:`callbench.tracks.stateful.complexity`) in these ways:

* **Which calls are API calls.** Any call, except a Python builtin (``len``, ``list``; also
  ``x[0].sum()``, whose name is taken as ``sum``), a name from ``math``, and a function of the
  standard library. A call's *name* is its dotted function expression (``torch.nn.functional.conv2d``,
  ``response_5.sum``); when the expression does not start at a variable the name is what follows
  (``requests.get(u).json()`` is named ``json``, ``"".join(x)`` ``join``, ``f()()`` ``<unknown>``).
  A name is the standard library's when its first part is a module of Python 3.9's standard
  library that imports here, the rest resolves as attributes, and the object found is defined in
  such a module (or nowhere, as constants): ``json.dumps`` and ``copy.deepcopy`` are excluded,
  ``heapq.heappush`` (defined in ``_heapq``, not in 3.9's list) counts. So method calls on results
  (``t.sum()``, ``out.append(x)``) count as API calls.
* **Where calls are seen.** Only in assignment values (anywhere inside them), as a whole expression
  statement (not calls nested in its arguments), as a ``for`` loop's iterable (the call itself) and
  in a ``with ... as name`` item. Calls in ``if``/``while`` conditions, ``return``, ``+=`` and
  arguments of a statement call are not counted.
* **calls** (``n_calls``): distinct (name, line) pairs: two calls of one function on one line are one.
* **bindings** (``binding_count``): distinct (variable *v*, variable *w*) pairs where a call whose
  whole value is assigned to *w* (the first name of a tuple target) reads *v* (in an argument, or
  as its receiver) and *v* derives from some API call. Derivation is transitive through
  assignments and ``for`` targets, and is judged on each variable's *last* assignment in program
  order (the ``else`` branch after the ``if`` branch).
* **path depth** (``path_depth``): the longest simple path of the directed graph of those pairs,
  in edges (no binding: 0).

Not reproduced: upstream imports whatever module a call's name starts with (third-party packages
included) to decide; here only standard-library modules are imported (never one with import side
effects: ``antigravity``, ``this``, ``__phello__``, ``__main__``, whose calls count), so a
third-party attribute that is a standard-library function (``requests.utils.quote``) counts here and
not upstream. Which standard-library attributes resolve depends on the Python running the analysis,
as upstream's does.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import math
import warnings
from functools import cache

from callbench import pyast

__all__ = ["analyse_upstream"]

# Top-level modules of Python 3.9's standard library, as the ``stdlib-list`` package lists them
# (upstream calls ``stdlib_list("3.9")``); private C modules of later Pythons (``_heapq``, ``_json``)
# are not in it, so functions defined there count as API calls upstream.
_STDLIB_39 = frozenset(
    """
__future__ __main__ __phello__ _abc _aix_support _ast _bootlocale _bootsubprocess _codecs _collections
_collections_abc _compat_pickle _compression _crypt _functools _hashlib _imp _io _locale _lsprof
_markupbase _operator _osx_support _peg_parser _posixsubprocess _py_abc _pydecimal _pyio _random _signal
_sitebuiltins _socket _sre _ssl _stat _string _strptime _symtable
_sysconfigdata_x86_64_conda_cos6_linux_gnu _sysconfigdata_x86_64_conda_linux_gnu _thread
_threading_local _tracemalloc _uuid _warnings _weakref _weakrefset abc aifc antigravity argparse array
ast asynchat asyncio asyncore atexit audioop base64 bdb binascii binhex bisect builtins bz2 cProfile
calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys compileall concurrent
configparser contextlib contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm
decimal difflib dis distutils doctest email encodings ensurepip enum errno faulthandler fcntl filecmp
fileinput fnmatch formatter fractions ftplib functools gc genericpath getopt getpass gettext glob
graphlib grp gzip hashlib heapq hmac html http idlelib imaplib imghdr imp importlib inspect io ipaddress
itertools json keyword lib lib2to3 linecache locale logging lzma mailbox mailcap marshal math mimetypes
mmap modulefinder msilib msvcrt multiprocessing netrc nis nntplib ntpath nturl2path numbers opcode
operator optparse os ossaudiodev parser pathlib pdb pickle pickletools pipes pkgutil platform plistlib
poplib posix posixpath pprint profile pstats pty pwd py_compile pyclbr pydoc pydoc_data queue quopri
random re readline reprlib resource rlcompleter runpy sched secrets select selectors shelve shlex shutil
signal site smtpd smtplib sndhdr socket socketserver spwd sqlite3 sre_compile sre_constants sre_parse
ssl stat statistics string stringprep struct subprocess sunau symbol symtable sys sysconfig syslog
tabnanny tarfile telnetlib tempfile termios test textwrap this threading time timeit tkinter token
tokenize trace traceback tracemalloc tty turtle turtledemo types typing unicodedata unittest urllib uu
uuid venv warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc xxsubtype zipapp
zipfile zipimport zlib zoneinfo
""".split()
)
_NOT_IMPORTED = frozenset({"antigravity", "this", "__phello__", "__main__"})  # importing them does something
_BUILTINS = frozenset(dir(builtins))
_MATH = frozenset(dir(math))

# expression nodes whose children are searched for variable names (others, e.g. comprehensions,
# ``and``/``or``, conditional expressions and slices, hide the names inside them, as upstream)
_SEARCHED = (
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.Subscript,
    ast.Call,
    ast.Attribute,
    ast.List,
    ast.Tuple,
    ast.Dict,
    ast.Starred,
    ast.FormattedValue,
    ast.JoinedStr,
    ast.Lambda,
)


def call_name(func: ast.expr) -> str:
    """The dotted name of a called expression: attributes back to a variable (``a.b.c``); what
    follows when the chain starts elsewhere (``f().json`` -> ``json``); ``<unknown>`` when nothing does."""
    parts = []
    node = func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts)) if parts else "<unknown>"


@cache
def _stdlib_object(name: str) -> bool:
    """Is ``name`` a standard-library object: first part a 3.9 stdlib module that imports, the rest
    attributes that resolve, the object found defined in a 3.9 stdlib module (or in none)?"""
    first, *rest = name.split(".")
    if first not in _STDLIB_39 or first in _NOT_IMPORTED:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated modules (asyncore, imp) still import
            obj = importlib.import_module(first)
        for attr in rest:
            obj = getattr(obj, attr)
    except Exception:  # noqa: BLE001 - not importable, no such attribute: not the standard library's
        return False
    module = inspect.getmodule(obj)
    return module is None or module.__name__.split(".")[0] in _STDLIB_39


def is_api_call(name: str) -> bool:
    return not (name in _BUILTINS or name in _MATH or _stdlib_object(name))


def variable_refs(node: ast.AST | None) -> set[str]:
    """Variable names read by an expression, searching only the node kinds upstream searches."""
    if node is None:
        return set()
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.keyword):
        return variable_refs(node.value)
    if not isinstance(node, _SEARCHED):
        return set()
    out: set[str] = set()
    for child in ast.iter_child_nodes(node):
        out |= variable_refs(child)
    return out


def _arguments(call: ast.Call) -> tuple[str, ...]:
    names = set().union(
        *(variable_refs(a) for a in call.args), *(variable_refs(k.value) for k in call.keywords)
    )
    return tuple(sorted(names | variable_refs(call.func)))


Origin = tuple[str, int]  # (call name, line)


class _Counter(ast.NodeVisitor):
    """Walks the program in upstream's order, recording API calls and where variables come from."""

    def __init__(self) -> None:
        self.origins: dict[str, set[Origin]] = {}  # variable -> API calls it derives from (last assignment)
        self.calls: set[tuple[str | None, tuple[str, ...], str, int]] = (
            set()
        )  # (assigned to, reads, name, line)

    def _record(self, assigned: str | None, call: ast.Call, name: str) -> Origin:
        self.calls.add((assigned, _arguments(call), name, call.lineno))
        return (name, call.lineno)

    def _derived(self, names: set[str]) -> set[Origin]:
        return set().union(*(self.origins.get(n, set()) for n in names))

    def visit_Assign(self, node: ast.Assign) -> None:
        first = node.targets[0]
        if isinstance(first, ast.Tuple):
            targets = [e.id for e in first.elts if isinstance(e, ast.Name)]
        else:
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        origins: set[Origin] = set()
        for sub in ast.walk(node.value):
            if isinstance(sub, ast.Call):
                name = call_name(sub.func)
                if is_api_call(name):
                    whole = targets[0] if targets and sub is node.value else None
                    origins.add(self._record(whole, sub, name))
        origins |= self._derived(variable_refs(node.value))
        for t in targets:
            self.origins[t] = set(origins)
        self.generic_visit(node)

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Call):
            name = call_name(node.value.func)
            if is_api_call(name):
                self._record(None, node.value, name)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        origins = self._derived(variable_refs(node.iter))
        if isinstance(node.iter, ast.Call):
            name = call_name(node.iter.func)
            if is_api_call(name):
                origins.add(self._record(None, node.iter, name))
        target = node.target
        loop_vars = [target.id] if isinstance(target, ast.Name) else []
        if isinstance(target, ast.Tuple):
            loop_vars = [e.id for e in target.elts if isinstance(e, ast.Name)]
        for v in loop_vars:  # joins what the variable held before (upstream unites, not replaces)
            self.origins[v] = self.origins.get(v, set()) | origins
        for stmt in [*node.orelse, *node.body]:  # upstream visits the else block first
            self.visit(stmt)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            if not isinstance(item.optional_vars, ast.Name):
                continue
            var, ctx = item.optional_vars.id, item.context_expr
            origins: set[Origin] = set()
            for sub in ast.walk(ctx):
                if isinstance(sub, ast.Call):
                    name = call_name(sub.func)
                    if is_api_call(name):
                        whole = (
                            isinstance(ctx, ast.Call)
                            and call_name(ctx.func) == name
                            and ctx.lineno == sub.lineno
                        )
                        origins.add(self._record(var if whole else None, sub, name))
            self.origins[var] = origins | self._derived(variable_refs(ctx))
        self.generic_visit(node)


def longest_path(edges: set[tuple[str, str]]) -> int:
    """Edges on the longest simple path of a directed graph (0 without edges).

    Hand-written (networkx, which upstream uses, is not a callbench dependency for one function):
    longest path by memoised depth-first search when the graph has no cycle, else an exhaustive
    search of simple paths like upstream's; self-loops never lengthen a simple path."""
    succ: dict[str, set[str]] = {}
    for a, b in edges:
        if a != b:
            succ.setdefault(a, set()).add(b)
    memo: dict[str, int] = {}
    on_stack: set[str] = set()

    class _Cycle(Exception):
        pass

    def dag_depth(n: str) -> int:
        if n in memo:
            return memo[n]
        if n in on_stack:
            raise _Cycle
        on_stack.add(n)
        memo[n] = max((1 + dag_depth(m) for m in succ.get(n, ())), default=0)
        on_stack.discard(n)
        return memo[n]

    try:
        return max((dag_depth(n) for n in list(succ)), default=0)
    except _Cycle:
        pass

    best = 0

    def walk(n: str, seen: set[str], length: int) -> None:
        nonlocal best
        best = max(best, length)
        for m in succ.get(n, ()):
            if m not in seen:
                seen.add(m)
                walk(m, seen, length + 1)
                seen.discard(m)

    for start in list(succ):
        walk(start, {start}, 0)
    return best


def analyse_upstream(code: str) -> dict[str, int]:
    """``n_calls``, ``binding_count``, ``path_depth`` by upstream's rules, and ``code_lines`` (as
    callbench counts them: non-blank lines that are not comments). SyntaxError when not Python."""
    counter = _Counter()
    counter.visit(pyast.parse(code))
    edges = {
        (arg, assigned)
        for assigned, reads, _name, _line in counter.calls
        if assigned is not None
        for arg in reads
        if counter.origins.get(arg)
    }
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    return {
        "n_calls": len({(name, line) for _a, _r, name, line in counter.calls}),
        "path_depth": longest_path(edges),
        "binding_count": len(edges),
        "code_lines": len(lines),
    }
