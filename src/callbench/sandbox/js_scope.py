"""The names JavaScript code can read at its end (the starter's cut, right after ``axios.``).

Real-world starters end deep inside code: in an Express handler, a class method, a promise
executor inside a factory's method.  What a completion may use there is what the language makes
visible at that point, found here with the tree-sitter-javascript parser the sandbox uses
(`callbench.sandbox.js_extract`):

* the parameters of every enclosing function (destructured and defaulted ones included: ``async
  (chat_id, text) =>``, ``function ({ q, page = 1 })``; an Express/Koa handler's ``req``, ``res``,
  ``ctx`` are parameters like any other), and a named function or class expression's own name;
* in every enclosing block (and at top level), the ``let``/``const``/``class`` declarations before
  the cut -- not those of a sibling block or function, and not a declaration the cut is inside
  (``const r = await axios.``: ``r`` is not initialised there) unless the cut is in a function
  the declaration's value holds as it is (``const handler = async (req) => { axios.``, a method
  of ``const api = { ... }``: called once the name is set; not a callback, a promise executor or
  an IIFE in the value, which may run before); the function declarations of those blocks
  (hoisted);
* in every enclosing function (and at top level), the ``var`` declarations before the cut in any
  block of it, nested functions excluded (``var`` hoists to the function); the names of
  ``for``/``for...of`` loops and ``catch`` clauses the cut is inside;
* at top level, imports (``import axios, { foo } from ...``; ``const { a } = require(...)`` is a
  plain declaration) and, unless the code is strict (an ES module or a ``'use strict'``
  directive), the names it assigns without declaring them (Node's sloppy mode makes them global:
  `js_extract.implicit_globals`);
* ``this`` when an enclosing non-arrow function, method or class body holds the cut (arrow
  functions inherit it; top-level ``this`` is not listed);
* ``process``: the Node global real code reads (``process.env.KEY``; the sandbox answers
  ``process.env`` from the variables in scope).  It is always returned: the caller decides whether
  a global counts (`callbench.tracks.webapi.constraints.in_scope` drops ``process`` and ``this``
  for the paper profile).

``axios`` itself is never listed.

How the cut is found: the code is cut mid-statement, and tree-sitter's error recovery flattens
unclosed functions into one ERROR node.  So a placeholder identifier is put after the code (on a
line of its own) and every bracket still open there is closed (`js_extract._closers`: a ``try {``
gets ``} catch (_e) {}``); the scopes are read off the ancestors of the placeholder in that
completed program.  When the completed program still has errors around the cut, an ERROR node on
the way is read leniently: every declaration and parameter list among its children before the cut
counts (sibling functions flattened into it may then contribute names).

Budget: code over `js_extract.budget_error`'s limits (size, bracket nesting) gets an empty tuple,
unread -- the sandbox rejects such code unread as well.  The walk is iterative and visits each
node at most once per enclosing function, so its cost stays linear in the text.
"""

from __future__ import annotations

from tree_sitter import Node

from callbench.sandbox.js_extract import (
    _FUNCTION_TYPES,
    _closers,
    _declared,
    _directive_strict,
    _parser,
    _pattern_names,
    _Src,
    _unwrap_export,
    budget_error,
    implicit_globals,
)

__all__ = ["NODE_GLOBALS", "visible_names"]

#: Node globals real code reads that `visible_names` always lists.
NODE_GLOBALS: tuple[str, ...] = ("process",)

# A name no real code uses: where the cut is, once the open brackets are closed.
_CUT = "__callbench_cut_7f3a"

# Where let/const/class/function declarations are scoped (ERROR: see the module docstring).
_BLOCKS = frozenset({"program", "statement_block", "class_static_block", "switch_body", "ERROR"})
# Function-like nodes that bind their own `this` (arrow functions inherit it).
_THIS_BINDERS = frozenset(_FUNCTION_TYPES - {"arrow_function"}) | {"class_body", "class_static_block"}
_FUNCTION_DECLS = frozenset({"function_declaration", "generator_function_declaration"})
# What may lie between a declaration and a function its value holds as it is.
_HELD_AS_IS = frozenset({"parenthesized_expression", "object", "pair", "class", "class_body", "field_definition"})


def visible_names(code: str) -> tuple[str, ...]:
    """The names visible at the end of `code` (see the module docstring), sorted, ``axios``
    excluded, ``process`` always included; () when `code` is over the parsing budget."""
    if budget_error(code) is not None:
        return ()
    # the placeholder on a line of its own: it ends a line comment and never glues to a token
    head = code + "\n" + _CUT
    src = _Src(head)
    cut = len(src.data) - len(_CUT)
    tree = _parser().parse(src.data)
    completed = head + _closers(tree.root_node, len(src.data), src)
    if completed != head:
        src = _Src(completed)
        tree = _parser().parse(src.data)
    root = tree.root_node
    node = root.descendant_for_byte_range(cut, cut + len(_CUT))
    names: dict[str, None] = dict.fromkeys(NODE_GLOBALS)
    if node is None:  # cannot happen: the placeholder lies inside the root
        node = root
    _collect(node, cut, src, names)
    if not _strict(root, src):
        names.update(dict.fromkeys(implicit_globals(code)))
    names.pop("axios", None)
    names.pop(_CUT, None)
    return tuple(sorted(names))


def _strict(root: Node, src: _Src) -> bool:
    """Does Node run this file strict: an ES module, or a 'use strict' directive at its top?"""
    return _directive_strict(root, src) or any(
        c.type in ("import_statement", "export_statement") for c in root.children
    )


def _collect(node: Node, cut: int, src: _Src, names: dict[str, None]) -> None:
    """Walk from `node` (at byte `cut`) up through its ancestors, adding what each scope binds."""
    child: Node | None = None
    cur: Node | None = node
    # Is the walk in a function that a declaration's value holds as it is (directly, in parentheses,
    # as a method of an object or class): called later, once the declared name is set?
    deferred = False
    while cur is not None:
        t = cur.type
        if t in _FUNCTION_TYPES and child is not None and _in_body(cur, child):
            deferred = True
        elif t == "variable_declarator":
            if deferred and child is not None and child.id == getattr(cur.child_by_field_name("value"), "id", None):
                name = cur.child_by_field_name("name")
                if name is not None:
                    _add_pattern(name, src, names)
            deferred = False
        elif t not in _HELD_AS_IS:
            deferred = False  # called here (a callback, an executor, an IIFE): maybe before the name is set
        if t in _BLOCKS:
            _block_names(cur, cut, src, names)
        if t in _FUNCTION_TYPES or t == "program":
            _function_names(cur, child, cut, src, names)
        elif t == "catch_clause":
            param = cur.child_by_field_name("parameter")
            if param is not None and param.end_byte <= cut:
                _add_pattern(param, src, names)
        elif t == "for_statement":
            init = cur.child_by_field_name("initializer")
            if init is not None and init.end_byte <= cut:
                _add_declarators(init, cut, src, names)
        elif t == "for_in_statement":
            left = cur.child_by_field_name("left")
            right = cur.child_by_field_name("right")
            if left is not None and right is not None and right.end_byte <= cut:
                _add_pattern(left, src, names)
        elif t in ("class_declaration", "class"):
            name = cur.child_by_field_name("name")
            body = cur.child_by_field_name("body")
            if name is not None and body is not None and body.start_byte < cut:
                names[src.node(name)] = None
        if t in _THIS_BINDERS and child is not None and _in_body(cur, child):
            names["this"] = None
        child, cur = cur, cur.parent


def _in_body(fn: Node, child: Node) -> bool:
    """Is `child` (on the way to the cut) the body of `fn` (not its name or parameters)?"""
    if fn.type in ("class_body", "class_static_block"):
        return True
    body = fn.child_by_field_name("body")
    return body is not None and body.id == child.id


def _block_names(block: Node, cut: int, src: _Src, names: dict[str, None]) -> None:
    """let/const/class/function declarations and imports among `block`'s statements before the cut."""
    stmts: list[Node] = []
    for c in block.named_children:
        if c.start_byte >= cut:
            break
        if c.type == "switch_case" or c.type == "switch_default":
            stmts.extend(c.named_children)  # a switch's cases share one block
        else:
            stmts.append(c)
    for c in stmts:
        if c.start_byte >= cut:
            break
        d = _unwrap_export(c)
        if d.type == "lexical_declaration":
            _add_declarators(d, cut, src, names)
        elif d.type in _FUNCTION_DECLS or d.type == "class_declaration":
            if d.type == "class_declaration" and d.end_byte > cut:
                continue  # its name inside it is added where the walk passes the class
            names.update(dict.fromkeys(_declared(d, src, lexical_only=False)))
        elif d.type == "import_statement":
            _import_names(d, src, names)
        elif block.type == "ERROR" and d.end_byte <= cut:
            # a flattened, unrepaired function: its parameter lists and var declarations
            if d.type == "formal_parameters":
                _add_pattern(d, src, names)
            elif d.type == "variable_declaration":
                _add_declarators(d, cut, src, names)


def _function_names(fn: Node, child: Node | None, cut: int, src: _Src, names: dict[str, None]) -> None:
    """A function's parameters and own name, and the `var`s (and, as sloppy code hoists them, the
    function declarations) of its blocks before the cut; the program's likewise."""
    if fn.type != "program":
        if fn.type in ("function_expression", "function", "generator_function"):
            name = fn.child_by_field_name("name")
            if name is not None:
                names[src.node(name)] = None
        single = fn.child_by_field_name("parameter")  # `x => ...`
        params = fn.child_by_field_name("parameters")
        for p in [single] if single is not None else ([] if params is None else params.named_children):
            if p.end_byte <= cut:
                _add_pattern(p, src, names)
        body = fn.child_by_field_name("body")
        if body is None or child is None or body.id != child.id:
            return
        start: Node = body
    else:
        start = fn
    stack = [start]
    while stack:
        n = stack.pop()
        if n.start_byte >= cut:
            continue
        if n is not start and (n.type in _FUNCTION_TYPES or n.type in ("class_body", "class_static_block")):
            if n.type in _FUNCTION_DECLS and n.end_byte <= cut and n.parent is not None and n.parent.id != start.id:
                names.update(dict.fromkeys(_declared(n, src, lexical_only=False)))  # sloppy: hoisted
            continue  # a nested function's vars are its own
        if n.type == "variable_declaration":
            _add_declarators(n, cut, src, names)
        elif n.type == "for_in_statement" and any(c.type == "var" for c in n.children):
            left = n.child_by_field_name("left")
            if left is not None and left.end_byte <= cut:
                _add_pattern(left, src, names)
        stack.extend(n.named_children)


def _add_declarators(decl: Node, cut: int, src: _Src, names: dict[str, None]) -> None:
    """The names of `decl`'s declarators that end before the cut (`const a = 1, b = axios.`: a)."""
    if decl.type not in ("lexical_declaration", "variable_declaration"):
        return
    for d in decl.named_children:
        if d.type != "variable_declarator" or d.end_byte > cut:
            continue
        name = d.child_by_field_name("name")
        if name is not None:
            _add_pattern(name, src, names)


def _add_pattern(n: Node, src: _Src, names: dict[str, None]) -> None:
    out: list[str] = []
    _pattern_names(n, src, out)
    names.update(dict.fromkeys(out))


def _import_names(n: Node, src: _Src, names: dict[str, None]) -> None:
    """The local names an import statement binds: default, namespace and named (aliased) imports."""
    for clause in n.named_children:
        if clause.type != "import_clause":
            continue
        for c in clause.named_children:
            if c.type == "identifier":
                names[src.node(c)] = None
            elif c.type == "namespace_import":
                for ident in c.named_children:
                    if ident.type == "identifier":
                        names[src.node(ident)] = None
            elif c.type == "named_imports":
                for spec in c.named_children:
                    if spec.type != "import_specifier":
                        continue
                    local = spec.child_by_field_name("alias") or spec.child_by_field_name("name")
                    if local is not None:
                        names[src.node(local)] = None
