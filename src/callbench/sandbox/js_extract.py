"""Find the axios call in model output by parsing it (tree-sitter-javascript).

Model output is messy: markdown fences, prose around the code, a second example
after the first, or code cut off at the token limit.  Marker heuristics ("the line
that starts with axios.") get these wrong, so the output is parsed and the first
call expression whose callee is axios (or an axios instance) decides what runs:

* everything at top level before the statement holding that call is kept (minus
  prose that did not parse), the statement itself is kept, everything after it is
  dropped;
* if that statement only *declares* the call (a function, class or object method),
  statements are kept up to the first one that invokes the declaration; when none
  does, an invocation is appended;
* if the call itself is unfinished at the end of the text, the result is
  ``incomplete``; if only code after the call is cut off, the statement is cut
  right after the call and its open brackets are closed;
* ES ``import``/``export`` syntax is rewritten to what a function body accepts.

Real-world starter code ends at ``axios.`` *inside* something: a function, a class
method, a promise executor, a callback handed to another library (an express route, a
ws handler, setTimeout).  So:

* the program is completed first: when brackets are still open at the call, the text is
  cut after the largest finished piece of code around the call and every bracket still
  open there is closed (a ``try {`` gets ``} catch (_e) {}``); when that is not valid
  JavaScript either, the result is ``incomplete_program`` (one status, `error` says why);
* every function on the way from the top-level statement to the call is made to run:
  function expressions are wrapped in place as ``__callbench_rt.defer(fn, spec, values)``
  (the sandbox calls them at the end of the run, after timers, if nothing else did -- a
  callback given to an inert ``express``/``ws`` stand-in never is), nested function
  declarations get the same right after them, and a top-level declaration is invoked as
  above;
* arguments nobody passes are filled (``spec``, one letter per parameter): the value of
  the same name in scope (a definition, a starter constant), else an inert stand-in;
  ``err``-like names get null, defaulted parameters keep their default.  A top-level class
  gets its constructor's and the called method's arguments filled the same way
  (``fillClass``/``fillMethod``), so ``this.baseUrl`` set in the constructor is there.

* a method of an object literal on the way that no top-level name holds (what a factory
  returns: ``module.exports = function (apiKey) { return { balance(address) { ... } } }``)
  is reached by wrapping the literal in place as ``__callbench_rt.deferMethod(obj, name, ...)``:
  the method is called on the object at the end of the run if nothing did, its arguments
  filled the same way.

The code is returned as Node would run it (`with_mode`): an ES module gets a 'use strict'
directive in front; sloppy code gets a ``var`` (at the end, hoisted) for every name it assigns
without declaring it.  ``call_from`` (where a model's answer starts after a task's starter)
makes the picked call the first that ends after it, so a request the starter's own code sends
first is not taken for the answer's; ``alone`` returns the completed statement holding the call
run alone (`_call_alone`), the sandbox's second route when the whole program cannot reach it.

tree-sitter is error tolerant, so ERROR/MISSING nodes tell where the text stops
being JavaScript, and errors after the kept code do not matter.

What is enforced: text over MAX_CODE_CHARS characters or with brackets nested deeper
than MAX_NESTING is rejected unread (status "rejected", with the reason), and the
analysis walks the tree top-down, so its cost stays linear in the text; a recursion
limit hit on some other deep construct is rejected the same way.  Identifiers are
compared after decoding ``\\uXXXX`` escapes, as V8 does, and ``const a = axios``
makes ``a`` an alias.

Modules other than axios that the kept code requires by a literal name are listed in
`Extraction.stubbed_modules` (the sandbox gives each an inert stand-in).  Calls into such a
stand-in return stand-ins, which are truthy: a guard on one (``if (_.has(cache, k)) return``)
takes its "true" branch.

Not guaranteed: static analysis cannot see every way code reaches axios
(``require(name)``, destructuring, calls through other functions).  `mark` tells the
sandbox where to add a per-run marker argument to the chosen call, so that it can
check that the first request V8 records really came from that call and reject the
sample when it did not.  A tagged-template call (axios.get`...`) cannot carry the
marker and goes unchecked.
"""

from __future__ import annotations

import bisect
import re
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass

import tree_sitter_javascript as _tsjs
from tree_sitter import Language, Node, Parser, Query, QueryCursor

__all__ = [
    "MAX_CODE_CHARS",
    "answer_offset",
    "MAX_NESTING",
    "Extraction",
    "budget_error",
    "extract_invocation",
    "implicit_globals",
    "prepare_code",
    "script_problem",
    "strip_fences",
]

# Model answers are a few kB; these only stop hostile input before any parsing.
MAX_CODE_CHARS = 100_000
MAX_NESTING = 256
# Brackets outside comments and string/template literals (their text is data: a URL may hold any
# number of "(" or "["); regex literals are not recognised, so a "/'/" can only hide brackets
# from this cheap count, never add any -- the parser's own recursion guard still stands behind it.
_BRACKETS = re.compile(
    r"""//[^\n]*|/\*.*?(?:\*/|\Z)|'(?:\\.|[^'\\\n])*'?|"(?:\\.|[^"\\\n])*"?|`(?:\\.|[^`\\])*`?|([(){}\[\]])""",
    re.S,
)
_OPENERS = frozenset("({[")
_ESCAPE = re.compile(r"\\u(?:([0-9a-fA-F]{4})|\{([0-9a-fA-F]{1,6})\})")

REQUEST_METHODS = frozenset(
    {
        "request",
        "get",
        "delete",
        "head",
        "options",
        "post",
        "put",
        "patch",
        "query",
        "postForm",
        "putForm",
        "patchForm",
    }
)
_FUNCTION_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_expression",
        "function",
        "generator_function",
        "arrow_function",
        "method_definition",
    }
)
_DECL_TYPES = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "class_declaration",
        "lexical_declaration",
        "variable_declaration",
    }
)
_FENCE_RE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[ \t]*([^\n`]*)$", re.M)

_LANGUAGE = Language(_tsjs.language())
_QUERY = Query(
    _LANGUAGE,
    """
    (call_expression) @call
    (ERROR) @error
    (variable_declarator) @decl
    (assignment_expression) @assign
    (import_statement) @import
    """,
)
_local = threading.local()


def _parser() -> Parser:
    # tree-sitter parsers are not thread safe; one per thread.
    p = getattr(_local, "parser", None)
    if p is None:
        p = _local.parser = Parser(_LANGUAGE)
    return p


@dataclass(frozen=True)
class Extraction:
    """What `extract_invocation` found.

    status: "ok" (code is runnable), "no_request" (no axios call in the text), "incomplete"
    (the first axios call is cut off), "incomplete_program" (the call is complete but the
    code around it cannot be completed into a runnable program; `error` says why) or
    "rejected" (over the size or nesting budget; `error` says which). code: the JavaScript
    that will run (after fence stripping, dropping and rewriting). call_text / call_start /
    call_end: the first axios call expression as a slice of the *input* string (character
    offsets), None when there is none. declared: names the code declares with
    let/const/class at top level (the sandbox must not pre-bind them). mark: (offset in
    `code`, text to put before the marker name, offsets in `code` where V8's stack traces may
    place the chosen call) where a last argument can be added to the chosen call,
    None when it cannot (see the module docstring). stubbed_modules: the
    modules other than axios that `code` requires by a literal name (the sandbox gives each
    an inert stand-in; fs and child_process are modelled or refused and not listed).
    starter_calls: axios calls of the starter (before `call_from`) that the call picked follows.
    starter_marks: (offset in `code`, text to put before the name) where each of those calls can get
    the starter's token as an extra last argument (see `JsSandbox.run`'s ``call_from``): only
    requests the starter's own calls make may come before the answer's call.
    """

    status: str
    code: str
    call_text: str | None = None
    call_start: int | None = None
    call_end: int | None = None
    declared: tuple[str, ...] = ()
    mark: tuple[int, str, tuple[int, ...]] | None = None
    error: str | None = None
    stubbed_modules: tuple[str, ...] = ()
    starter_calls: int = 0
    starter_marks: tuple[tuple[int, str], ...] = ()


# --------------------------------------------------------------------------- fences


def _segments(text: str) -> list[tuple[int, str]]:
    """Split on markdown fences; code-looking pieces first, in order."""
    fences = list(_FENCE_RE.finditer(text))
    if not fences:
        return [(0, text)]
    pieces: list[tuple[int, str]] = []
    pos = 0
    for m in fences:
        pieces.append((pos, text[pos : m.start()]))
        pos = min(len(text), m.end() + 1)
    pieces.append((pos, text[pos:]))
    first = fences[0]
    opener = bool(first.group(1).strip()) or not pieces[0][1].strip()
    inside = [p for i, p in enumerate(pieces) if (i % 2 == 1) == opener]
    outside = [p for i, p in enumerate(pieces) if (i % 2 == 1) != opener]
    return [p for p in inside + outside if p[1].strip()]


def strip_fences(text: str) -> str:
    """The first code-looking piece of a markdown answer (the text itself if unfenced)."""
    segs = _segments(text)
    return segs[0][1] if segs else ""


# --------------------------------------------------------------------------- analysis helpers


class _Src:
    """Source bytes plus byte->char offset conversion.

    Insertions (`add_insert`): text that every slice spanning the offset gets at that point
    (how the chosen call receives its marker placeholder, and the functions on the way to it
    their `__callbench_rt.defer(...)` wrapper, whichever way the statement holding them is
    later cut or rewritten).  A "before" insertion belongs to what starts at the offset, an
    "after" one to what ends there.  `node` is a node's own text, `text` the same with the
    insertions.
    """

    def __init__(self, text: str):
        self.text = text
        # surrogatepass: model output can contain lone surrogates
        self.data = text.encode("utf-8", errors="surrogatepass")
        self.ascii = len(self.data) == len(text)
        # (byte offset, 0 = after / 1 = before, order among equals, text), sorted
        self.inserts: list[tuple[int, int, int, str]] = []

    def add_insert(self, offset: int, text: str, side: str = "after", depth: int = 0) -> None:
        """At one offset, "after" texts come first (the innermost node's first), then "before"
        texts (the outermost node's first)."""
        before = side == "before"
        self.inserts.append((offset, int(before), depth if before else -depth, text))
        self.inserts.sort(key=lambda i: i[:3])

    def chars(self, byte_off: int) -> int:
        if self.ascii:
            return byte_off
        return len(self.data[:byte_off].decode("utf-8", errors="surrogatepass"))

    def raw(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", errors="surrogatepass")

    def slice(self, start: int, end: int) -> str:
        if not self.inserts:
            return self.raw(start, end)
        parts: list[str] = []
        pos = start
        for off, before, _, text in self.inserts:
            if (start <= off < end) if before else (start < off <= end):
                parts.append(self.raw(pos, off))
                parts.append(text)
                pos = off
        parts.append(self.raw(pos, end))
        return "".join(parts)

    def node(self, n: Node) -> str:
        return self.raw(n.start_byte, n.end_byte)

    def text_of(self, n: Node) -> str:
        return self.slice(n.start_byte, n.end_byte)

    def name(self, n: Node) -> str:
        """An identifier as V8 reads it: ``\\u0061xios`` is ``axios``."""
        return _unescape(self.node(n))


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code <= 0x10FFFF else m.group(0)

    return _ESCAPE.sub(one, text)


def _string_value(n: Node | None, src: _Src) -> str | None:
    if n is None or n.type != "string":
        return None
    return src.node(n)[1:-1]


def _is_require_axios(n: Node | None, src: _Src) -> bool:
    """require('axios') or require('axios').default"""
    if n is None:
        return False
    if n.type == "member_expression":
        prop = n.child_by_field_name("property")
        return (
            prop is not None
            and src.name(prop) == "default"
            and _is_require_axios(n.child_by_field_name("object"), src)
        )
    if n.type != "call_expression":
        return False
    fn = n.child_by_field_name("function")
    args = n.child_by_field_name("arguments")
    if fn is None or args is None or fn.type != "identifier" or args.named_child_count != 1:
        return False
    if src.name(fn) != "require":
        return False
    return _string_value(args.named_children[0], src) == "axios"


def _simple_path(n: Node | None, src: _Src) -> str | None:
    """`a.b.c` or `this.x` as a dotted name (no whitespace, escapes decoded); None otherwise."""
    parts: list[str] = []
    while n is not None and n.type == "member_expression":
        prop = n.child_by_field_name("property")
        if prop is None:
            return None
        parts.append(src.name(prop))
        n = n.child_by_field_name("object")
    if n is None or n.type not in ("identifier", "this"):
        return None
    parts.append(src.name(n))
    return ".".join(reversed(parts))


class _Names:
    """Which expressions denote axios itself and which an axios.create() instance.

    Everything here loops instead of recursing and remembers create() chains it has
    decided, so long chains (`axios.create().create()...`) cost linear time.
    """

    def __init__(self) -> None:
        self.aliases = {"axios"}
        self.instances: set[str] = set()
        self._creates: dict[int, bool] = {}  # node id -> is_create_call, valid until a name is added

    def add_alias(self, name: str) -> None:
        self.aliases.add(name)
        self._creates.clear()

    def add_instance(self, name: str) -> None:
        self.instances.add(name)
        self._creates.clear()

    def is_alias(self, n: Node | None, src: _Src) -> bool:
        while n is not None:  # a loop, not recursion: `axios.default.default...` may be long
            if n.type == "identifier":
                return src.name(n) in self.aliases
            if n.type == "member_expression":
                prop = n.child_by_field_name("property")
                if prop is not None and src.name(prop) == "default":
                    n = n.child_by_field_name("object")
                    continue
            elif n.type == "parenthesized_expression" and n.named_child_count == 1:
                n = n.named_children[0]
                continue
            return _is_require_axios(n, src)
        return False

    def is_create_call(self, n: Node | None, src: _Src) -> bool:
        """`<axios or instance>.create(...)`, possibly awaited; every call walked down the
        chain gets the same answer, which is remembered."""
        visited: list[int] = []
        result = False
        while True:
            if n is not None and n.type == "await_expression" and n.named_child_count:
                n = n.named_children[0]
            if n is None or n.type != "call_expression":
                break
            known = self._creates.get(n.id)
            if known is not None:
                result = known
                break
            visited.append(n.id)
            fn = n.child_by_field_name("function")
            if fn is None or fn.type != "member_expression":
                break
            prop = fn.child_by_field_name("property")
            obj = fn.child_by_field_name("object")
            if prop is None or src.name(prop) != "create":
                break
            if self.is_alias(obj, src) or self._named_instance(obj, src):
                result = True
                break
            n = obj  # `x.create().create()`: the object may itself be a create() call
        for node_id in visited:
            self._creates[node_id] = result
        return result

    def _named_instance(self, n: Node | None, src: _Src) -> bool:
        if not self.instances or n is None or n.type not in ("identifier", "member_expression", "this"):
            return False
        return _simple_path(n, src) in self.instances

    def is_instance(self, n: Node | None, src: _Src) -> bool:
        return self._named_instance(n, src) or self.is_create_call(n, src)

    def is_request_callee(self, n: Node | None, src: _Src) -> bool:
        if n is None:
            return False
        if n.type == "call_expression":  # axios.create(...)(config)
            return self.is_create_call(n, src)
        if n.type == "identifier":
            return self.is_alias(n, src) or self.is_instance(n, src)
        if n.type == "member_expression":
            obj = n.child_by_field_name("object")
            prop = n.child_by_field_name("property")
            if prop is None:
                return False
            name = src.name(prop)
            if name == "default":
                return self.is_alias(obj, src)
            if name not in REQUEST_METHODS:
                return self.is_instance(n, src)
            return self.is_alias(obj, src) or self.is_instance(obj, src)
        if n.type == "subscript_expression":
            obj = n.child_by_field_name("object")
            index = n.child_by_field_name("index")
            lit = _string_value(index, src)
            if lit is not None and lit not in REQUEST_METHODS:
                return False
            return self.is_alias(obj, src) or self.is_instance(obj, src)
        return False


def _collect_names(captures: dict[str, list[Node]], src: _Src) -> _Names:
    names = _Names()
    for imp in captures.get("import", []):
        if _string_value(imp.child_by_field_name("source"), src) != "axios":
            continue
        for clause in imp.named_children:
            if clause.type != "import_clause":
                continue
            for c in clause.named_children:
                if c.type == "identifier":
                    names.add_alias(src.name(c))
                elif c.type == "namespace_import":
                    for ident in c.named_children:
                        if ident.type == "identifier":
                            names.add_alias(src.name(ident))
    bindings: list[tuple[int, Node, Node]] = []
    for d in captures.get("decl", []):
        name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
        if name is not None and value is not None and name.type == "identifier":
            bindings.append((d.start_byte, name, value))
    for a in captures.get("assign", []):
        left, right = a.child_by_field_name("left"), a.child_by_field_name("right")
        if left is not None and right is not None and left.type in ("identifier", "member_expression"):
            bindings.append((a.start_byte, left, right))
    bindings.sort(key=lambda b: b[0])
    for _, name, value in bindings:  # require('axios'), and plain aliases (`const a = axios`)
        if name.type == "identifier" and names.is_alias(value, src):
            names.add_alias(src.name(name))
    for _ in range(2):  # instance.create() chains
        for _, name, value in bindings:
            if names.is_create_call(value, src):
                key = _simple_path(name, src)
                if key is not None and key not in names.instances:
                    names.add_instance(key)
    return names


def _has_error(n: Node) -> bool:
    return n.has_error or n.is_error or n.is_missing


# Node.parent costs O(depth) in tree-sitter (it searches down from the root), so walking
# up from a deep node is quadratic; these helpers walk down from the top instead.


def _top_level(n: Node, root: Node) -> Node:
    top = root.child_with_descendant(n)
    return top if top is not None else n


def _path(top: Node, n: Node) -> list[Node]:
    """The nodes from `top` down to its descendant `n`, both included."""
    out = [top]
    cur: Node | None = top
    while cur is not None and cur.id != n.id:
        cur = cur.child_with_descendant(n)
        if cur is not None:
            out.append(cur)
    return out


def _enclosing_function(n: Node, top: Node) -> Node | None:
    """Outermost function-like node between the call and its top-level statement."""
    for p in _path(top, n)[1:-1]:
        if p.type in _FUNCTION_TYPES or p.type == "class_body":
            return p
    return top if top.type in _FUNCTION_TYPES else None


def _pattern_names(n: Node, src: _Src, out: list[str]) -> None:
    if n.type in ("identifier", "shorthand_property_identifier_pattern"):
        out.append(src.node(n))
        return
    if n.type == "pair_pattern":
        v = n.child_by_field_name("value")
        if v is not None:
            _pattern_names(v, src, out)
        return
    if n.type == "assignment_pattern":
        left = n.child_by_field_name("left")
        if left is not None:
            _pattern_names(left, src, out)
        return
    for c in n.named_children:
        if c.type in (
            "object_pattern",
            "array_pattern",
            "pair_pattern",
            "assignment_pattern",
            "rest_pattern",
            "identifier",
            "shorthand_property_identifier_pattern",
            "object_assignment_pattern",
        ):
            _pattern_names(c, src, out)


def _unwrap_export(n: Node) -> Node:
    if n.type == "export_statement":
        d = n.child_by_field_name("declaration")
        if d is not None:
            return d
    return n


def _declared(n: Node, src: _Src, lexical_only: bool) -> list[str]:
    """Names a top-level statement binds (lexical_only: let/const/class only)."""
    n = _unwrap_export(n)
    out: list[str] = []
    if n.type in ("function_declaration", "generator_function_declaration", "class_declaration"):
        if n.type != "class_declaration" and lexical_only:
            return out
        name = n.child_by_field_name("name")
        if name is not None:
            out.append(src.node(name))
    elif n.type == "lexical_declaration" or (n.type == "variable_declaration" and not lexical_only):
        for d in n.named_children:
            if d.type == "variable_declarator":
                name = d.child_by_field_name("name")
                if name is not None:
                    _pattern_names(name, src, out)
    return out


def _walk(n: Node) -> Iterable[Node]:
    stack = [n]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children))


def _root_identifier(n: Node | None, src: _Src, memo: dict[int, str | None]) -> str | None:
    """The identifier a callee chain starts from (`a` in `a.b(1).c`).  Every node walked
    through has the same root, so `memo` keeps long call chains linear overall."""
    visited: list[int] = []
    root: str | None = None
    while n is not None:
        if n.id in memo:
            root = memo[n.id]
            break
        visited.append(n.id)
        if n.type == "identifier":
            root = src.node(n)
            break
        if n.type in ("member_expression", "subscript_expression"):
            n = n.child_by_field_name("object")
        elif n.type == "call_expression":
            n = n.child_by_field_name("function")
        elif n.type == "new_expression":
            n = n.child_by_field_name("constructor")
        elif n.type in ("parenthesized_expression", "await_expression") and n.named_child_count:
            n = n.named_children[0]
        else:
            break
    for node_id in visited:
        memo[node_id] = root
    return root


def _invokes(stmt: Node, names: set[str], src: _Src, memo: dict[int, str | None]) -> bool:
    """Does the statement call (or hand as a callback) one of `names`?"""
    for n in _walk(stmt):
        if n.type == "call_expression":
            if _root_identifier(n.child_by_field_name("function"), src, memo) in names:
                return True
            args = n.child_by_field_name("arguments")
            if args is not None and any(
                a.type == "identifier" and src.node(a) in names for a in args.named_children
            ):
                return True
    return False


def _references(stmt: Node, names: set[str], src: _Src) -> bool:
    return any(n.type == "identifier" and src.node(n) in names for n in _walk(stmt))


def _calls_within(stmt: Node, calls: list[Node], starts: list[int]) -> list[Node]:
    """The calls (sorted by start, `starts` their start bytes) inside `stmt`, by bisection."""
    lo = bisect.bisect_left(starts, stmt.start_byte)
    hi = bisect.bisect_left(starts, stmt.end_byte, lo)
    return [c for c in calls[lo:hi] if c.end_byte <= stmt.end_byte]


def _invocation_for(top: Node, call: Node, src: _Src) -> str | None:
    """Source text that invokes the declaration `top` so that `call` runs."""
    decl = _unwrap_export(top)
    if decl.type in ("function_declaration", "generator_function_declaration"):
        name = decl.child_by_field_name("name")
        return f"{src.node(name)}();" if name is not None else None
    if decl.type == "class_declaration":
        name = decl.child_by_field_name("name")
        return _class_invocation(src.node(name), call, decl, src) if name is not None else None
    if decl.type in ("lexical_declaration", "variable_declaration"):
        for d in decl.named_children:
            if d.type != "variable_declarator" or not (d.start_byte <= call.start_byte < d.end_byte):
                continue
            name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
            if name is None or value is None or name.type != "identifier":
                return None
            ident = src.node(name)
            if value.type in ("arrow_function", "function_expression", "function", "generator_function"):
                return f"{ident}();"
            return _value_invocation(ident, value, call, src)
    if decl.type == "expression_statement" and decl.named_child_count == 1:
        # `module.exports = { async handler(event) { ... } }`, `exports.Client = class { ... }`
        assign = decl.named_children[0]
        if assign.type == "assignment_expression":
            left, value = assign.child_by_field_name("left"), assign.child_by_field_name("right")
            target = _simple_path(left, src)
            if target is not None and value is not None and value.type in ("class", "object"):
                return _value_invocation(target, value, call, src)
    return None


def _value_invocation(ident: str, value: Node, call: Node, src: _Src) -> str | None:
    """How to invoke `call` inside `value` (a class or an object literal) held by `ident`."""
    if value.type == "class":
        return _class_invocation(ident, call, value, src)
    if value.type == "object":
        for member in value.named_children:
            if not (member.start_byte <= call.start_byte < member.end_byte):
                continue
            key = member.child_by_field_name("name" if member.type == "method_definition" else "key")
            if key is not None and key.type == "property_identifier":
                return f"{ident}.{src.node(key)}();"
    return None


def _class_invocation(cls: str, call: Node, decl: Node, src: _Src) -> str | None:
    path = _path(decl, call)
    # the member of this class (not of a class nested in it) that holds the call
    body = next((i for i, p in enumerate(path) if p.type == "class_body"), None)
    if body is None or body + 1 >= len(path) - 1:
        return None
    p = path[body + 1]
    static = any(c.type == "static" for c in p.children)
    if p.type == "method_definition":
        name = p.child_by_field_name("name")
        if name is None:
            return None
        method = src.node(name)
        if method == "constructor":
            return f"new {cls}();"
        return f"{cls}.{method}();" if static else f"new {cls}().{method}();"
    if p.type == "field_definition":
        # `handler = async () => { ... }`: constructing runs the initializer (the function
        # itself is deferred); a static field's runs with the class definition
        return None if static else f"new {cls}();"
    return None


def _leaves(n: Node, start: int, end: int) -> Iterable[Node]:
    stack = [n]
    while stack:
        cur = stack.pop()
        if cur.end_byte <= start or cur.start_byte >= end:
            continue
        if cur.child_count == 0:
            yield cur
        else:
            stack.extend(reversed(cur.children))


_CLOSER = {"(": ")", "[": "]", "{": "}", "${": "}"}


def _closers(top: Node, cut: int, src: _Src) -> str:
    """Close every bracket still open at byte `cut` inside `top`."""
    stack: list[str] = []
    prev = ""
    for leaf in _leaves(top, top.start_byte, cut):
        if leaf.end_byte > cut or leaf.is_missing:
            break
        t = leaf.type
        text = src.node(leaf)
        if t in _CLOSER and text == t:
            closer = _CLOSER[t]
            if t == "{" and prev == "try":
                closer = "} catch (_e) {}"
            elif t == "{" and prev == "do":
                closer = "} while (false)"
            stack.append(closer)
        elif t == "`":
            if stack and stack[-1] == "`":
                stack.pop()
            else:
                stack.append("`")
        elif t in (")", "]", "}") and text == t:
            if stack and stack[-1][0] == t:
                stack.pop()
        prev = text
    return "".join(reversed(stack))


def _largest_clean(top: Node, anchor: Node) -> Node:
    """The largest error-free node around `anchor` below `top`."""
    cut_node = anchor
    for p in reversed(_path(top, anchor)[1:-1]):
        if _has_error(p):
            break
        cut_node = p
    return cut_node


# --------------------------------------------------------------------------- invoking the way to the call

RUNTIME = "__callbench_rt"  # the sandbox binding the rewrites below call (axios_standin.js, makeStubs)
_ERROR_PARAMS = frozenset({"err", "error", "e", "er", "ex"})
_REQUEST_PARAMS = frozenset({"req", "request", "ctx"})
_NO_FILL = '"", null'
_FUNCTION_EXPRESSIONS = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_FUNCTION_DECLARATIONS = frozenset({"function_declaration", "generator_function_declaration"})


def _in_scope(name: str) -> str:
    """The value of `name` in scope, undefined when there is none (no ReferenceError); an object
    built by `_object_from_scope` as it is."""
    if name.startswith("({"):
        return name
    return f"typeof {name} === 'undefined' ? undefined : {name}"


def _object_from_scope(pattern: Node, src: _Src) -> str | None:
    """For a destructured object parameter (`{ apiKey, base: url, limit = 10 }`), an object
    literal whose properties are the variables in scope of the same names (the local name, else
    the property's); None when it names nothing."""
    props: list[str] = []
    for c in pattern.named_children:
        key = local = None
        if c.type == "shorthand_property_identifier_pattern":
            key = local = src.node(c)
        elif c.type == "object_assignment_pattern":
            left = c.child_by_field_name("left")
            if left is not None and left.type == "shorthand_property_identifier_pattern":
                key = local = src.node(left)
        elif c.type == "pair_pattern":
            k, v = c.child_by_field_name("key"), c.child_by_field_name("value")
            if k is not None and k.type == "property_identifier":
                key = src.node(k)
                if v is not None and v.type == "assignment_pattern":
                    v = v.child_by_field_name("left")
                local = src.node(v) if v is not None and v.type == "identifier" else key
        if key is None or not _IDENT_RE.match(key) or local is None or not _IDENT_RE.match(local):
            continue
        value = _in_scope(local) if local == key else f"typeof {local} !== 'undefined' ? {local} : ({_in_scope(key)})"
        props.append(f"{key}: ({value})")
    return f"({{ {', '.join(props)} }})" if props else None


def _param_fill(fn: Node, src: _Src, stand_ins: bool) -> str | None:
    """`spec, values` arguments for the runtime: per parameter, how a missing argument is filled
    ('v': the value of the same name in scope, else an inert stand-in; 'r': the same, else a request
    stand-in whose params/query/body/headers answer from scope (`req`, `ctx`); 'd': the same name in
    scope, else undefined (so a default applies; a destructured object parameter of a function the
    sandbox calls gets an object of the variables in scope named in it); 's': a stand-in
    (destructured, for a callback); 'n': null for an
    error-first callback's error; 'u': undefined), and a function returning the in-scope values.
    None when nothing would be filled.

    stand_ins: the function is a callback some library would call with its own objects (a
    request, a message): what is not in scope becomes an inert stand-in.  Otherwise (a declared
    function, method or constructor that the sandbox calls) it stays undefined, as a call
    without arguments leaves it."""
    single = fn.child_by_field_name("parameter")
    params = fn.child_by_field_name("parameters")
    items = [single] if single is not None else ([] if params is None else list(params.named_children))
    spec, names = "", []
    for c in items:
        if c.type == "comment":
            continue
        if c.type == "identifier":
            name = src.node(c)
            if name in _ERROR_PARAMS and stand_ins:
                spec += "n"
                names.append(None)
            elif name in _REQUEST_PARAMS and stand_ins:
                spec += "r"  # an Express/Koa request: its params/query/body/headers from scope
                names.append(name)
            else:
                spec += "v" if stand_ins else "d"
                names.append(name)
        elif c.type == "assignment_pattern":
            left = c.child_by_field_name("left")
            if left is not None and left.type == "identifier":
                spec += "d"
                names.append(src.node(left))
            else:
                spec += "u"
                names.append(None)
        elif c.type == "rest_pattern":
            break
        elif c.type == "object_pattern" and not stand_ins and (built := _object_from_scope(c, src)):
            # `constructor({ bearerToken })`: an object of the variables in scope by those names
            spec += "d"
            names.append(built)
        else:
            spec += "s" if stand_ins else "u"
            names.append(None)
    if not any(names):
        return f'"{spec}", null' if stand_ins and spec.strip("u") else None
    values = ", ".join(_in_scope(n) if n else "undefined" for n in names)
    return f'"{spec}", () => [{values}]'


def _wrap_path(top: Node, call: Node, src: _Src) -> list[str]:
    """Make every function between the top-level statement `top` and `call` run.

    Function expressions (callbacks, executors, IIFEs, `const f = () => ...`) are wrapped in
    place with ``__callbench_rt.defer(fn, ...)``: the sandbox calls them at the end of the run
    (after timers) if nothing else did, e.g. a route handler given to an inert express.
    Nested function declarations get the same after their declaration.  Missing arguments are
    filled (see `_param_fill`), also for the method and constructor of a top-level class or the
    method of a top-level object that `_invocation_for` calls.  Returns the statements to put
    right after `top`."""
    after: list[str] = []
    decl = _unwrap_export(top)
    path = _path(top, call)
    for depth, p in enumerate(path[:-1]):
        if p.type in _FUNCTION_EXPRESSIONS:
            if _invoked_in_place(path, depth):
                continue
            declared_value = _declared_value(p, decl)  # `const f = (a) => ...` at top level
            fill = _param_fill(p, src, stand_ins=not declared_value)
            if fill is None and declared_value:
                continue  # invoked below, and nothing to fill
            src.add_insert(p.start_byte, f"{RUNTIME}.defer(", "before", depth)
            src.add_insert(p.end_byte, f", {fill or _NO_FILL})", "after", depth)
        elif p.type in _FUNCTION_DECLARATIONS:
            name_node = p.child_by_field_name("name")
            if name_node is None:
                continue
            name = src.node(name_node)
            fill = _param_fill(p, src, stand_ins=False)
            stmt = f"{name} = {RUNTIME}.defer({name}, {fill or _NO_FILL});"
            if p.id == decl.id:
                if fill is not None:  # invoked below anyway: only its arguments matter
                    after.append(stmt)
            else:
                src.add_insert(p.end_byte, "\n" + stmt, "after", depth)
        elif p.type == "method_definition" and depth >= 2:
            owner = _method_owner(path[depth - 1], path[depth - 2], decl, src)
            holder = path[depth - 2]
            if owner is None and holder.type == "class_declaration" and holder.id != decl.id:
                # a class declared inside a function on the way (e.g. a chat answer that repeats
                # the starter's class inside the starter's open method): invoke it after its
                # declaration, at the end of the run
                after_class = _nested_class_invocation(holder, call, src)
                if after_class:
                    src.add_insert(holder.end_byte, after_class, "after", depth)
                continue
            if owner is None and path[depth - 1].type == "object":
                # a method of an object literal no top-level name holds (a factory's
                # `return { balance(address) { ... } }`): the literal is wrapped in place, so the
                # method is called on the object at the end of the run if nothing did
                name_node = p.child_by_field_name("name")
                kinds = {c.type for c in p.children}
                if name_node is None or name_node.type != "property_identifier" or kinds & {"get", "set"}:
                    continue
                fill = _param_fill(p, src, stand_ins=False)
                obj = path[depth - 1]
                src.add_insert(obj.start_byte, f"{RUNTIME}.deferMethod(", "before", depth - 1)
                src.add_insert(obj.end_byte, f", {src.node(name_node)!r}, {fill or _NO_FILL})", "after", depth - 1)
                continue
            if owner is None:
                continue
            name_node = p.child_by_field_name("name")
            kinds = {c.type for c in p.children}
            if name_node is None or name_node.type != "property_identifier" or kinds & {"get", "set"}:
                continue
            name = src.node(name_node)
            if name == "constructor":
                continue  # the class gets its constructor's arguments filled below
            if "static" not in kinds and path[depth - 1].type == "class_body":
                owner += ".prototype"
            fill = _param_fill(p, src, stand_ins=False)
            if fill is not None:
                after.append(f"{RUNTIME}.fillMethod({owner}, {name!r}, {fill});")
    if decl.type == "class_declaration":
        name_node = decl.child_by_field_name("name")
        body = decl.child_by_field_name("body")
        ctor = None
        for m in body.named_children if body is not None else []:
            key = m.child_by_field_name("name") if m.type == "method_definition" else None
            if key is not None and src.node(key) == "constructor":
                ctor = m
        fill = _param_fill(ctor, src, stand_ins=False) if ctor is not None else None
        if name_node is not None and fill is not None:
            name = src.node(name_node)
            after.insert(0, f"{name} = {RUNTIME}.fillClass({name}, {fill});")
    return after


def _nested_class_invocation(cls_decl: Node, call: Node, src: _Src) -> str:
    """Statements after a nested class declaration that run `call` inside it (deferred)."""
    name_node = cls_decl.child_by_field_name("name")
    if name_node is None:
        return ""
    name = src.node(name_node)
    invocation = _class_invocation(name, call, cls_decl, src)
    if invocation is None:
        return ""
    out = ""
    body = cls_decl.child_by_field_name("body")
    for m in body.named_children if body is not None else []:
        key = m.child_by_field_name("name") if m.type == "method_definition" else None
        if key is not None and src.node(key) == "constructor":
            fill = _param_fill(m, src, stand_ins=False)
            if fill is not None:
                out += f"\n{name} = {RUNTIME}.fillClass({name}, {fill});"
    return out + f"\n{RUNTIME}.defer(() => {{ {invocation} }}, {_NO_FILL});"


def _invoked_in_place(path: list[Node], depth: int) -> bool:
    """Is the function at `path[depth]` called right where it stands (`(async () => {...})()`)?"""
    node = path[depth]
    i = depth - 1
    while i >= 0 and path[i].type == "parenthesized_expression":
        node = path[i]
        i -= 1
    if i < 0 or path[i].type != "call_expression":
        return False
    fn = path[i].child_by_field_name("function")
    return fn is not None and fn.id == node.id


def _declared_value(fn: Node, decl: Node) -> bool:
    """Is `fn` the value of a variable the top-level declaration `decl` declares?"""
    if decl.type not in ("lexical_declaration", "variable_declaration"):
        return False
    for d in decl.named_children:
        value = d.child_by_field_name("value") if d.type == "variable_declarator" else None
        if value is not None and value.id == fn.id:
            return True
    return False


def _method_owner(container: Node, holder: Node, decl: Node, src: _Src) -> str | None:
    """The name of the top-level class or object a method belongs to (`container` is the class
    body or object literal, `holder` the node around it); None for anything else."""
    if container.type == "class_body" and holder.type in ("class_declaration", "class"):
        if holder.id == decl.id:
            name = holder.child_by_field_name("name")
            return src.node(name) if name is not None else None
        owner_node = holder
    elif container.type == "object":
        owner_node = container
    else:
        return None
    if decl.type not in ("lexical_declaration", "variable_declaration"):
        return None
    for d in decl.named_children:
        if d.type != "variable_declarator":
            continue
        name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
        if value is not None and value.id == owner_node.id and name is not None and name.type == "identifier":
            return src.node(name)
    return None


def _parses_cleanly(code: str) -> bool:
    return not _parser().parse(code.encode("utf-8", errors="surrogatepass")).root_node.has_error


def _repair(top: Node, anchor: Node, src: _Src) -> str | None:
    """Cut `top` after the largest error-free expression around `anchor`; close brackets."""
    cut_node = anchor
    for p in reversed(_path(top, anchor)[1:-1]):
        if _has_error(p):
            break
        cut_node = p
    text = src.slice(top.start_byte, cut_node.end_byte) + _closers(top, cut_node.end_byte, src)
    text = text.rstrip()
    if not text.endswith(";"):
        text += ";"
    if _parses_cleanly(text):
        return text
    return None


def _import_replacement(n: Node, src: _Src, declared: list[str]) -> str:
    source = n.child_by_field_name("source")
    if source is None:
        return ""
    mod = src.node(source)
    req = f"require({mod})"
    parts: list[str] = []
    for clause in n.named_children:
        if clause.type != "import_clause":
            continue
        for c in clause.named_children:
            if c.type == "identifier":
                parts.append(f"const {src.node(c)} = {req};")
                declared.append(src.node(c))
            elif c.type == "namespace_import":
                for ident in c.named_children:
                    if ident.type == "identifier":
                        parts.append(f"const {src.node(ident)} = {req};")
                        declared.append(src.node(ident))
            elif c.type == "named_imports":
                specs = []
                for spec in c.named_children:
                    if spec.type != "import_specifier":
                        continue
                    name = spec.child_by_field_name("name")
                    alias = spec.child_by_field_name("alias")
                    if name is None:
                        continue
                    local = src.node(alias) if alias is not None else src.node(name)
                    specs.append(f"{src.node(name)}: {local}" if alias is not None else local)
                    declared.append(local)
                if specs:
                    parts.append(f"const {{ {', '.join(specs)} }} = {req};")
    return " ".join(parts) if parts else f"{req};"


def _statement_text(n: Node, src: _Src, declared: list[str], unlabel: bool = False) -> str:
    """Top-level statement rewritten for a function body; '' drops it."""
    t = n.type
    if t == "hash_bang_line":
        return ""
    if t == "import_statement":
        return _import_replacement(n, src, declared)
    if t == "export_statement":
        decl = n.child_by_field_name("declaration")
        if decl is not None:
            declared.extend(_declared(decl, src, lexical_only=True))
            return src.text_of(decl)
        value = n.child_by_field_name("value")
        if value is not None:
            text = src.text_of(value)
            if value.type in (
                "function_expression",
                "function",
                "class",
                "arrow_function",
                "generator_function",
            ):
                return f"({text});"
            return text if text.rstrip().endswith(";") else text + ";"
        return ""  # export { a, b }; export * from 'x';
    if unlabel and t == "labeled_statement":
        body = n.child_by_field_name("body")
        if body is not None and body.type in _DECL_TYPES:
            return _statement_text(body, src, declared)
    declared.extend(_declared(n, src, lexical_only=True))
    return src.text_of(n)


def _join(pieces: list[str]) -> str:
    # Always terminate statements: dropping text in between must not let ASI glue
    # `const o = {...}` to a following `(async () => ...)()`.
    out = []
    for p in pieces:
        p = p.rstrip()
        if not p:
            continue
        if not p.startswith(("//", "/*")) and not p.endswith(";"):
            p += ";"
        out.append(p)
    return "\n".join(out) + ("\n" if out else "")


# --------------------------------------------------------------------------- sloppy mode

# The sandbox runs code as Node runs a CommonJS file: in sloppy mode unless the file opens with a
# 'use strict' directive (an ES module is strict: its imports are rewritten, so the directive is
# added).  Sloppy code may assign a variable it never declared, which in Node makes a global; the
# sandbox's global object is frozen (such a write would vanish), so these names get a `var` of the
# sample's own function instead (`_sloppy_prologue`): a per-sample home that dies with the sample.
# Standard globals are left out: `var JSON;` would hide the builtin from the sample.
_STANDARD_GLOBALS = frozenset(
    "globalThis Infinity NaN undefined eval isFinite isNaN parseFloat parseInt decodeURI decodeURIComponent "
    "encodeURI encodeURIComponent escape unescape AggregateError Array ArrayBuffer BigInt BigInt64Array "
    "BigUint64Array Boolean DataView Date Error EvalError FinalizationRegistry Float32Array Float64Array "
    "Function Int8Array Int16Array Int32Array Intl Iterator JSON Map Math Number Object Promise Proxy "
    "RangeError ReferenceError Reflect RegExp Set SharedArrayBuffer String Symbol SyntaxError TypeError "
    "Uint8Array Uint8ClampedArray Uint16Array Uint32Array URIError WeakMap WeakRef WeakSet Atomics "
    "WebAssembly arguments".split()
)


def _directive_strict(root: Node, src: _Src) -> bool:
    """Does the program open with a 'use strict' directive (its directive prologue)?"""
    for c in root.children:
        if c.type in ("comment", "hash_bang_line"):
            continue
        if c.type != "expression_statement" or c.named_child_count != 1 or c.named_children[0].type != "string":
            return False
        if src.node(c.named_children[0])[1:-1] == "use strict":
            return True
    return False


def _assigned_names(root: Node, src: _Src) -> list[str]:
    """Identifiers a plain assignment (or a destructuring one, or a `for (x in/of ...)` without a
    declaration) writes, in text order, once each."""
    out: dict[str, None] = {}
    for n in _walk(root):
        target = None
        if n.type == "assignment_expression":
            target = n.child_by_field_name("left")
        elif n.type == "for_in_statement" and not any(c.type in ("var", "let", "const") for c in n.children):
            target = n.child_by_field_name("left")
        if target is None:
            continue
        if target.type == "identifier":
            out[src.name(target)] = None
        elif target.type in ("object_pattern", "array_pattern"):
            names: list[str] = []
            _pattern_names(target, src, names)
            out.update((_unescape(x), None) for x in names)
    return list(out)


def _is_module(code: str) -> bool:
    """Is `code` an ES module (an import or export statement at top level)?  Node runs those strict."""
    if "import" not in code and "export" not in code:
        return False
    root = _parser().parse(code.encode("utf-8", errors="surrogatepass")).root_node
    return any(c.type in ("import_statement", "export_statement") for c in root.children)


def with_mode(code: str, module: bool) -> str:
    """`code` as the sandbox runs it in Node's mode: an ES module (`module`) gets a 'use strict'
    directive in front (on the first line, so lines keep their numbers); sloppy code gets a `var`
    for the names it assigns undeclared, at the end (hoisted: no position in the code moves)."""
    if module:
        return "'use strict'; " + code
    prologue = _sloppy_prologue(code)
    return code + ("\n" if prologue and not code.endswith("\n") else "") + prologue


def _sloppy_prologue(code: str) -> str:
    """For sloppy code, `var a, b;` for every name it assigns that no top-level let/const/class
    declares and that is no standard global (see above); '' for strict code."""
    src = _Src(code)
    root = _parser().parse(src.data).root_node
    if _directive_strict(root, src):
        return ""
    lexical: set[str] = set()  # and every other top-level declaration: it has its binding already
    for c in root.children:
        lexical.update(_declared(c, src, lexical_only=False))
    names = [
        n for n in _assigned_names(root, src)
        if n not in lexical and n not in _STANDARD_GLOBALS and _IDENT_RE.match(n)
    ]
    return f"var {', '.join(names)};\n" if names else ""


_IDENT_RE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")


# --------------------------------------------------------------------------- public API


@dataclass
class _Analysis:
    status: str
    code: str
    call: tuple[int, int] | None = None  # char offsets within the segment
    declared: tuple[str, ...] = ()
    error: str | None = None
    starter_calls: int = 0  # complete axios calls that end before `call_from` (the starter's own)


def _marker_insert(call: Node, placeholder: str) -> tuple[int, str] | None:
    """Where and what to insert so that `call` gets `placeholder` as an extra last argument."""
    args = call.child_by_field_name("arguments")
    if args is None or args.type != "arguments":  # a tagged template has no argument list
        return None
    real = [a for a in args.named_children if a.type != "comment"]
    if not real:
        return args.start_byte + 1, placeholder
    return real[-1].end_byte, ", " + placeholder


def _call_positions(call: Node) -> list[int]:
    """Where V8's stack traces may place `call`: the property of a method call (``a.b.get(``,
    ``a?.get(``) or the name of a plain call (``get(``), else (and for a property named by a
    reserved word, ``a.delete(``) its argument list.  Both are tokens of this call alone, so
    allowing either lets no other call pass for it."""
    out = []
    fn = call.child_by_field_name("function")
    if fn is not None and fn.type == "member_expression":
        prop = fn.child_by_field_name("property")
        if prop is not None:
            out.append(prop.start_byte)
    elif fn is not None and fn.type == "identifier":
        out.append(fn.start_byte)
    args = call.child_by_field_name("arguments")
    if args is not None:
        out.append(args.start_byte)
    return out


def _analyze(
    text: str, allow_repair: bool = True, placeholder: str | None = None, call_from: int = 0,
    starter_placeholder: str | None = None,
) -> _Analysis:
    """`call_from`: a byte offset; the call picked is the first that ends after it (the text
    before it is a starter whose own calls are not the answer's).  `starter_placeholder`: given
    to each complete starter call as an extra last argument (where the sandbox puts the starter's
    token: only requests those calls make may come before the answer's call)."""
    src = _Src(text)
    tree = _parser().parse(src.data)
    root = tree.root_node
    captures = QueryCursor(_QUERY).captures(root)
    names = _collect_names(captures, src)

    all_calls = sorted(captures.get("call", []), key=lambda c: c.start_byte)
    all_starts = [c.start_byte for c in all_calls]
    calls = [c for c in all_calls if names.is_request_callee(c.child_by_field_name("function"), src)]
    starter = [c for c in calls if c.end_byte <= call_from and not _has_error(c)]
    starter_calls = len(starter)
    sub_from = call_from  # `call_from` in a text re-analysed with these inserts
    if starter_placeholder is not None:
        for c in starter:
            marker = _marker_insert(c, starter_placeholder)
            if marker is not None:
                src.add_insert(*marker)
                # every such insert lies before `call_from`: a re-analysed text sees it moved on
                sub_from += len(marker[1].encode("utf-8"))
    calls = [c for c in calls if c.end_byte > call_from]
    starts = [c.start_byte for c in calls]
    # A call cut off at the token limit often never becomes a call_expression:
    # look for "<axios callee> (" inside ERROR nodes.
    broken: list[tuple[Node, Node]] = []
    for err in captures.get("error", []):
        kids = err.children
        for i, kid in enumerate(kids[:-1]):
            if kids[i + 1].type == "(" and err.end_byte > call_from and names.is_request_callee(kid, src):
                broken.append((kid, err))
                break
    first_call = calls[0] if calls else None
    first_broken = min(broken, key=lambda b: b[0].start_byte) if broken else None
    if first_call is None and first_broken is None:
        return _Analysis("no_request", text)

    end_of_text = len(src.data.rstrip())
    if first_broken is not None and (
        first_call is None or first_broken[0].start_byte < first_call.start_byte
    ):
        callee, err = first_broken
        call_range = (src.chars(callee.start_byte), src.chars(err.end_byte))
        if err.end_byte >= end_of_text:
            return _Analysis("incomplete", src.slice(0, err.end_byte), call_range)
        anchor: Node = err
        call_complete = False
    else:
        assert first_call is not None
        anchor = first_call
        call_range = (src.chars(first_call.start_byte), src.chars(first_call.end_byte))
        call_complete = not _has_error(first_call)
        if not call_complete and first_call.end_byte >= end_of_text:
            return _Analysis("incomplete", src.slice(0, first_call.end_byte), call_range)
        if call_complete and placeholder is not None:
            marker = _marker_insert(first_call, placeholder)
            if marker is not None:
                src.add_insert(*marker)
                for k, at in enumerate(_call_positions(first_call)):
                    src.add_insert(at, f"/*{placeholder}@{k}*/", "before")

    # 0. the call sits in scopes the text leaves open (a function, method, promise executor
    #    or callback the starter opened): cut after the largest finished piece of code around
    #    the call, close every bracket still open there, and analyse that program instead.
    open_scopes = ""
    if call_complete and root.has_error:
        cut_node = _largest_clean(root, anchor)
        open_scopes = _closers(root, cut_node.end_byte, src)
        if open_scopes and allow_repair:
            completed = src.slice(0, cut_node.end_byte) + open_scopes + ";\n"
            if _parses_cleanly(completed):
                sub = _analyze(completed, allow_repair=False, call_from=sub_from)
                if sub.status == "ok":
                    return _Analysis("ok", sub.code, call_range, sub.declared, starter_calls=starter_calls)

    top = _top_level(anchor, root)
    children = [c for c in root.children]
    s_index = next(i for i, c in enumerate(children) if c.id == top.id)
    declared: list[str] = []
    pieces: list[str] = []

    # 1. statements before the call: drop prose (anything with parse errors)
    for c in children[:s_index]:
        if c.type == "comment":
            pieces.append(src.node(c))
        elif not _has_error(c):
            pieces.append(_statement_text(c, src, declared, unlabel=True))
        elif c.type == "labeled_statement":
            body = c.child_by_field_name("body")
            if body is not None and body.type in _DECL_TYPES and not _has_error(body):
                pieces.append(_statement_text(body, src, declared))

    # 2. the statement holding the call (repaired when what follows the call is cut off);
    #    the functions on the way to the call get invoked even when nothing else calls them
    after_top: list[str] = []
    if call_complete and not _has_error(top):
        after_top = _wrap_path(top, anchor, src)
    if _has_error(top) and call_complete:
        repaired = _repair(top, anchor, src) if allow_repair else None
        if repaired is not None:
            # Re-analyse with the statement repaired: the text up to the call is
            # unchanged, so the call keeps its offsets.
            fixed = src.slice(0, top.start_byte) + repaired + "\n" + src.slice(top.end_byte, len(src.data))
            sub = _analyze(fixed, allow_repair=False, call_from=sub_from)
            if sub.status == "ok":
                return _Analysis("ok", sub.code, call_range, sub.declared, starter_calls=starter_calls)
        if top.end_byte >= end_of_text:
            return _Analysis(
                "incomplete_program",
                src.slice(0, top.end_byte),
                call_range,
                error=(
                    "the code around the first axios call cannot be completed into a runnable program: "
                    "the statement holding the call is unfinished and cutting it after the call does not "
                    "give valid JavaScript"
                ),
            )
        pieces.append(src.text_of(top))
    else:
        pieces.append(_statement_text(top, src, declared))
    pieces.extend(after_top)

    # 3. a declaration that only defines the call: keep up to its invocation
    invocation = _invocation_for(top, anchor, src) if call_complete else None
    if invocation is not None and _enclosing_function(anchor, top) is not None:
        targets = set(_declared(top, src, lexical_only=False))
        roots: dict[int, str | None] = {}
        invoked = False
        gap: list[tuple[Node, bool]] = []
        for c in children[s_index + 1 :]:
            if c.type in ("comment", "hash_bang_line"):
                continue
            if _has_error(c):
                # an invocation cut off at the end, e.g. `main().then(r => {`
                inner = [
                    k
                    for k in _calls_within(c, all_calls, all_starts)
                    if not _has_error(k)
                    and _root_identifier(k.child_by_field_name("function"), src, roots) in targets
                ]
                repaired = _repair(c, min(inner, key=lambda k: k.start_byte), src) if inner else None
                if repaired is not None:
                    pieces.extend(_statement_text(g, src, declared) for g, _ in gap)
                    pieces.append(repaired)
                    invoked = True
                    break
                continue
            if _invokes(c, targets, src, roots):
                pieces.extend(_statement_text(g, src, declared) for g, _ in gap)
                pieces.append(_statement_text(c, src, declared))
                invoked = True
                break
            if _calls_within(c, calls, starts):
                continue  # a second, independent example
            is_decl = _unwrap_export(c).type in _DECL_TYPES
            if is_decl and _references(c, targets, src):
                targets.update(_declared(c, src, lexical_only=False))
            gap.append((c, is_decl))
        if not invoked:
            # keep later declarations (functions may use them), then call it ourselves
            pieces.extend(_statement_text(g, src, declared) for g, is_decl in gap if is_decl)
            pieces.append(invocation)

    code = _join(pieces)
    if open_scopes and allow_repair and not _parses_cleanly(code):
        return _Analysis(
            "incomplete_program",
            code,
            call_range,
            error=(
                "the code around the first axios call cannot be completed into a runnable program: "
                f"closing what is still open at the call ({' '.join(open_scopes)}) does not give valid JavaScript"
            ),
        )
    return _Analysis("ok", code, call_range, tuple(dict.fromkeys(declared)), starter_calls=starter_calls)


# tree-sitter stops reading at a NUL byte, although JavaScript allows one inside a string literal.
# Parse with a 1-byte stand-in (same offsets) and put the NULs back in what is returned.
_NUL_STANDIN = "\x01"


def answer_offset(starter: str, program: str) -> int | None:
    """Where the answer starts in `program`, built from a task's `starter` and a model's answer
    (see `extract_invocation`'s ``call_from``): after the starter when the program continues it;
    else (a chat answer that repeats the code) where the program has the starter's open last line
    again, after the starter's lines before it; None when neither is found."""
    if not starter or not program:
        return None
    if program.startswith(starter):
        return len(starter)
    cut = starter.rfind("\n") + 1
    header, last = starter[:cut], starter[cut:].strip()
    if not program.startswith(header):
        return None
    # a line that is more than `axios.` (`const res = await axios.`) is looked for; a bare
    # `axios.` would match whatever axios use the answer has first, not necessarily its call
    if last and last.rstrip(".") not in ("axios", "await axios", "return axios", "return await axios"):
        at = program.find(last, len(header))
        if at >= 0:
            return at
    return len(header)


def budget_error(code: str) -> str | None:
    """Why `code` is too big or too deeply nested to analyse or run; None when it is not.

    Brackets are counted outside comments and string literals: a cheap, linear bound that
    real answers stay far below.
    """
    if len(code) > MAX_CODE_CHARS:
        return f"the code is {len(code):,} characters long; the limit is {MAX_CODE_CHARS:,}"
    depth = 0
    for ch in _BRACKETS.findall(code):
        if not ch:
            continue  # a comment or a string
        if ch in _OPENERS:
            depth += 1
            if depth > MAX_NESTING:
                return f"brackets in the code are nested more than {MAX_NESTING} deep"
        elif depth:
            depth -= 1
    return None


def extract_invocation(code: str, call_from: int | None = None, *, alone: bool = False) -> Extraction:
    """Locate the first axios call in `code` and return what should run (see module doc).

    call_from: a character offset in `code` where the answer starts (what comes before is the
    task's starter): the call picked is the first that ends after it, so a request the starter's
    own code sends before the completed call is not taken for the answer's
    (`Extraction.starter_calls` counts those calls).  alone: the completed statement holding the
    call, run alone after the program's top-level definitions (see `_call_alone`): the sandbox's
    second route to the call when the whole program cannot reach it."""
    problem = budget_error(code)
    if problem is not None:
        return Extraction("rejected", "", error=problem)
    try:
        if "\x00" in code and _NUL_STANDIN not in code:
            ex = _extract(code.replace("\x00", _NUL_STANDIN), call_from, alone)

            def back(t: str) -> str:
                return t.replace(_NUL_STANDIN, "\x00")

            return Extraction(
                ex.status,
                back(ex.code),
                back(ex.call_text) if ex.call_text else ex.call_text,
                ex.call_start,
                ex.call_end,
                ex.declared,
                ex.mark,
                ex.error,
                tuple(back(m) for m in ex.stubbed_modules),
                ex.starter_calls,
                ex.starter_marks,
            )
        return _extract(code, call_from, alone)
    except RecursionError:
        return Extraction("rejected", "", error="the code is nested too deeply to analyse")


# --------------------------------------------------------------------------- the call alone

_SIMPLE_STATEMENTS = frozenset(
    {"expression_statement", "lexical_declaration", "variable_declaration", "return_statement"}
)


def _guarded_declaration(n: Node, src: _Src) -> str:
    """`const a = f(), {b} = g();` as `var a, b; try { a = f(); } catch (_e) {} try { ({b} = g()); }
    catch (_e) {}`: every name is declared, and a value that throws leaves it undefined instead of
    ending the run (a function's body or a config file that is not there)."""
    names: list[str] = []
    assigns: list[str] = []
    for d in n.named_children:
        if d.type != "variable_declarator":
            continue
        name, value = d.child_by_field_name("name"), d.child_by_field_name("value")
        if name is None:
            continue
        _pattern_names(name, src, names)
        if value is not None:
            target = src.text_of(name)
            assign = f"{target} = {src.text_of(value)}"
            assigns.append(f"try {{ {assign if name.type == 'identifier' else '(' + assign + ')'}; }} catch (_e) {{}}")
    if not names:
        return ""
    return f"var {', '.join(dict.fromkeys(names))}; " + " ".join(assigns)


def _definition_text(n: Node, src: _Src, declared: list[str]) -> str:
    """A statement before the call as the call-alone program keeps it: declarations (values
    guarded), assignments (guarded: `axios.defaults.baseURL = ...`); '' for anything else."""
    t = n.type
    if t in ("function_declaration", "generator_function_declaration"):
        return src.text_of(n)
    if t == "class_declaration":
        name = n.child_by_field_name("name")
        if name is not None:
            declared.append(src.node(name))
        return src.text_of(n)
    if t in ("lexical_declaration", "variable_declaration"):
        return _guarded_declaration(n, src)
    if t == "expression_statement" and n.named_child_count == 1 and n.named_children[0].type in (
        "assignment_expression", "augmented_assignment_expression"
    ):
        return f"try {{ {src.text_of(n.named_children[0])}; }} catch (_e) {{}}"
    return ""


def _rescoped(decl: Node, src: _Src) -> str:
    """After a declaration on the way to the call: a variable in scope of a name it declares wins."""
    if decl.type not in ("lexical_declaration", "variable_declaration"):
        return ""
    names: list[str] = []
    for d in decl.named_children:
        name = d.child_by_field_name("name") if d.type == "variable_declarator" else None
        if name is not None:
            _pattern_names(name, src, names)
    return "".join(
        f" if ({RUNTIME}.inScope('{n}')) {n} = this.{n};" for n in dict.fromkeys(names) if _IDENT_RE.match(n)
    )


def _call_alone(text: str, placeholder: str) -> tuple[str, tuple[str, ...]] | None:
    """The completed call statement of `text` (the program as extracted, the picked call still
    carrying `placeholder`) run alone: the program's top-level definitions before it, then, in an
    async function called with a `this` that answers from the variables in scope, the
    declarations that precede the statement in each block on the way to it and the statement
    itself.  Returns (code, names it declares lexically), or None when there is no such
    statement or the result is not valid JavaScript."""
    src = _Src(text)
    root = _parser().parse(src.data).root_node
    target = next(
        (n for n in _walk(root) if n.type == "identifier" and src.node(n) == placeholder), None
    )
    if target is None:
        return None
    path = _path(_top_level(target, root), target)
    stmt_at = max((i for i, p in enumerate(path) if p.type in _SIMPLE_STATEMENTS), default=None)
    if stmt_at is None:
        return None
    declared: list[str] = []
    pieces = []
    for c in root.children:
        if c.id == path[0].id:
            break
        piece = _definition_text(c, src, declared)
        if piece:
            pieces.append(piece)
    inner: list[str] = []
    # the parameters of the functions on the way and loop variables: from scope (`this`), else a
    # stand-in; the declarations on the way are computed, but a variable in scope of the same
    # name wins (the variables in scope are what the code sees at the call)
    params: list[str] = []
    for p in path[:stmt_at]:
        if p.type in _FUNCTION_TYPES:
            single = p.child_by_field_name("parameter")
            plist = p.child_by_field_name("parameters")
            for c in [single] if single is not None else ([] if plist is None else plist.named_children):
                _pattern_names(c, src, params)
        elif p.type == "for_in_statement":
            left = p.child_by_field_name("left")
            if left is not None:
                _pattern_names(left, src, params)
    if params:
        names = [n for n in dict.fromkeys(params) if _IDENT_RE.match(n)]
        inner.append(f"var {', '.join(names)}; " + " ".join(f"{n} = this.{n};" for n in names))
    for i, p in enumerate(path[:stmt_at]):
        if p.type not in ("statement_block", "class_static_block", "switch_case", "program"):
            continue
        nxt = path[i + 1]
        for c in p.named_children:
            if c.id == nxt.id:
                break
            if c.type in ("lexical_declaration", "variable_declaration", "function_declaration"):
                piece = _definition_text(c, src, [])
                if piece:
                    inner.append(piece + _rescoped(c, src))
    stmt = src.text_of(path[stmt_at]).rstrip()
    if not stmt.endswith(";"):
        stmt += ";"
    body = "\n".join(inner + [stmt])
    code = "\n".join(pieces + [f"await (async function () {{\n{body}\n}}).call({RUNTIME}.scope());"]) + "\n"
    if not _parses_cleanly(code):
        return None
    return code, tuple(dict.fromkeys(declared))


def _extract(code: str, call_from: int | None = None, alone: bool = False) -> Extraction:
    best: tuple[int, _Analysis] | None = None
    # A random name cannot occur in the text, so finding it again in the output is unambiguous.
    placeholder = "__callbench_mark_" + secrets.token_hex(8)
    starter_placeholder = "__callbench_starter_" + secrets.token_hex(8)
    for offset, segment in _segments(code):
        rel = 0
        if call_from is not None and call_from > offset:
            rel = len(segment[: call_from - offset].encode("utf-8", errors="surrogatepass"))
        analysis = _analyze(segment, placeholder=placeholder, call_from=rel, starter_placeholder=starter_placeholder)
        if analysis.status != "no_request":
            best = (offset, analysis)
            break
    if best is None:
        return Extraction("no_request", strip_fences(code))
    offset, a = best
    assert a.call is not None
    start, end = offset + a.call[0], offset + a.call[1]
    out, mark = a.code, None
    declared = a.declared
    if a.status == "ok" and alone:
        found = _call_alone(out, placeholder)
        if found is None:
            return Extraction(
                "incomplete_program", out, code[start:end], start, end,
                error="the statement holding the first axios call cannot run alone",
            )
        out, declared = found
    if a.status == "ok":
        out = with_mode(out, _is_module(code[offset:]))
    # the starter's calls: where each gets the starter's token (they all lie before the call's mark)
    starter_marks: list[tuple[int, str]] = []
    while (s_at := out.find(starter_placeholder)) >= 0:
        s_prefix = ", " if out.startswith(", ", s_at - 2) else ""
        out = out[: s_at - len(s_prefix)] + out[s_at + len(starter_placeholder) :]
        starter_marks.append((s_at - len(s_prefix), s_prefix))
    calls_at = []
    for k in range(2):
        call_mark = f"/*{placeholder}@{k}*/"
        call_at = out.find(call_mark)
        if call_at >= 0:
            out = out.replace(call_mark, "")
            calls_at.append(call_at)
    at = out.find(placeholder)
    if at >= 0:
        prefix = ", " if out.startswith(", ", at - 2) else ""
        out = out[: at - len(prefix)] + out[at + len(placeholder) :]
        # without a position of the call the sandbox never matches it (fails closed)
        mark = (at - len(prefix), prefix, tuple(c for c in calls_at if c < at))
    return Extraction(
        a.status, out, code[start:end], start, end, declared, mark, a.error, required_modules(out),
        a.starter_calls, tuple(starter_marks),
    )


# Node builtins the sandbox refuses instead of standing in for (axios_standin.js, REFUSED_MODULES),
# and those it models itself (an empty, read-only file system): neither is an inert stand-in.
REFUSED_MODULES = frozenset({"child_process"})
MODELLED_MODULES = frozenset({"fs", "fs/promises"})
_REQUIRE_QUERY = Query(
    _LANGUAGE, "(call_expression function: (identifier) @fn arguments: (arguments . (string) @name .)) @call"
)


_OTHER_REQUIRE = re.compile(r"""\brequire\s*\(\s*['"](?!axios['"/]|form-data['"])""")


def required_modules(code: str) -> tuple[str, ...]:
    """Modules other than axios that `code` requires with a literal name, in order, once each
    (those the sandbox gives an inert stand-in)."""
    if not _OTHER_REQUIRE.search(code):  # the common case: axios only, no parse needed
        return ()
    src = _Src(code)
    root = _parser().parse(src.data).root_node
    found: dict[str, None] = {}
    for _, caps in QueryCursor(_REQUIRE_QUERY).matches(root):
        fn, name = caps.get("fn", [None])[0], caps.get("name", [None])[0]
        if fn is None or name is None or src.name(fn) != "require":
            continue
        mod = _string_value(name, src)
        if mod is None or mod == "axios" or mod.startswith("axios/") or mod == "form-data":
            continue  # axios and form-data are modelled by the stand-in, not inert
        if (mod[5:] if mod.startswith("node:") else mod) in REFUSED_MODULES | MODELLED_MODULES:
            continue
        found[mod] = None
    return tuple(found)


def prepare_code(code: str) -> tuple[str, tuple[str, ...]]:
    """Rewrite import/export syntax without dropping anything; returns (code, declared).

    Used when the caller runs code as-is (`JsSandbox.run(..., extract=False)`).
    """
    src = _Src(code)
    root = _parser().parse(src.data).root_node
    declared: list[str] = []
    needs_rewrite = any(
        c.type in ("import_statement", "export_statement", "hash_bang_line") for c in root.children
    )
    for c in root.children:
        if c.type in ("lexical_declaration", "class_declaration"):
            declared.extend(_declared(c, src, lexical_only=True))
    if not needs_rewrite:
        return with_mode(code, False), tuple(dict.fromkeys(declared))
    out: list[str] = []
    pos = 0
    declared = []
    for c in root.children:
        out.append(src.slice(pos, c.start_byte))
        if c.type in ("import_statement", "export_statement", "hash_bang_line"):
            out.append(_statement_text(c, src, declared))
        else:
            declared.extend(_declared(c, src, lexical_only=True))
            out.append(src.node(c))
        pos = c.end_byte
    out.append(src.slice(pos, len(src.data)))
    module = any(c.type in ("import_statement", "export_statement") for c in root.children)
    return with_mode("".join(out), module), tuple(dict.fromkeys(declared))


def script_problem(code: str, predeclared: Iterable[str] = ()) -> str | None:
    """Why Node would not even start ``code`` as a CommonJS script (the sandbox runs code as the
    body of an async function, which accepts more), or None: ``import``/``export`` statements,
    ``await`` outside any function, or a top-level declaration of a name the script's prelude
    already declares (``predeclared``). Used by compat scoring, whose published scorer runs the
    model's call that way (see tracks/webapi/upstream_call.py)."""
    if budget_error(code) is not None:
        return None  # the sandbox rejects it anyway
    src = _Src(code)
    root = _parser().parse(src.data).root_node
    taken = set(predeclared)
    for c in root.children:
        if c.type in ("import_statement", "export_statement"):
            return "SyntaxError: Cannot use import statement outside a module"
        for name in _declared(c, src, lexical_only=False):
            if name in taken:
                return f"SyntaxError: Identifier '{name}' has already been declared"
    for n in _walk(root):
        top_level_await = n.type == "await_expression" or (
            n.type == "for_in_statement" and any(ch.type == "await" for ch in n.children)
        )
        if top_level_await and not _inside_function(n):
            return "SyntaxError: await is only valid in async functions and the top level bodies of modules"
    return None


def _inside_function(n: Node) -> bool:
    cur = n.parent
    while cur is not None:
        if cur.type in _FUNCTION_TYPES or cur.type in ("class_static_block", "class_body"):
            return True
        cur = cur.parent
    return False


_SCOPE_DECLARATORS = frozenset(
    {"variable_declarator", "function_declaration", "generator_function_declaration", "class_declaration"}
)


def implicit_globals(code: str) -> list[str]:
    """Names ``code`` creates by assigning to them undeclared -- the global variables Node makes
    of them in sloppy mode, where the sandbox's strict mode throws ReferenceError. A name counts
    when its first use is the target of a plain ``=`` and nothing in the code declares it (a
    parameter, a ``var``/``let``/``const``, a function, class or catch name). In text order."""
    if budget_error(code) is not None:
        return []
    src = _Src(code)
    root = _parser().parse(src.data).root_node
    declared: set[str] = set()
    first_use: dict[str, bool] = {}  # name -> is its first use the target of a plain '='?
    for n in _walk(root):
        if n.type in _SCOPE_DECLARATORS:
            name = n.child_by_field_name("name")
            if name is not None:
                names: list[str] = []
                _pattern_names(name, src, names)
                declared.update(names)
        elif n.type in ("formal_parameters", "catch_clause"):
            names = []
            target = n if n.type == "formal_parameters" else n.child_by_field_name("parameter")
            if target is not None:
                _pattern_names(target, src, names)
                declared.update(names)
        elif n.type == "arrow_function":
            param = n.child_by_field_name("parameter")
            if param is not None and param.type == "identifier":
                declared.add(src.node(param))
        elif n.type == "identifier":
            name = src.node(n)
            if name not in first_use:
                parent = n.parent
                first_use[name] = (
                    parent is not None
                    and parent.type == "assignment_expression"
                    and parent.child_by_field_name("left") == n
                )
    return [name for name, assigned in first_use.items() if assigned and name not in declared]
