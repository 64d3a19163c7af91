"""What the starter's string variables hold, read without running it: URL patterns for the grammar.

Real code names its URL in a variable (``const url = "https://api.openai.com/v1/chat/completions"``,
``const urlLink = "https://api.nasa.gov/planetary/apod?api_key="``, ``const path =
`/users/${USERNAME}/repos```) and calls ``axios.get(url)``, ``axios.get(urlLink + key)``. The
web API grammar (:mod:`callbench.constrain.webapi_grammar`) can take such a name where its value
fits the spec, and the key tracker reads the operation from it, if the value is known when the
grammar is built. :func:`url_values` gives, for each name the starter binds to a string literal,
a template literal or a ``+`` concatenation of those and of other names, its value as a pattern:
the text the code fixes, with :data:`HOLE` for every part it does not (a ``${expr}``, a name
of unknown value, ``process.env.X``, a call).

Static on purpose (the starter is not run): a value is taken only where the code states it.
A name bound more than once to different patterns, or bound to anything else as well
(``let url; if (a) url = ...``), is left out, as is a pattern that is only holes: what it holds
at the call cannot be read off the code. Scopes are not told apart (a name declared in two
functions with different values is left out by the same rule). Hand-written on the tree-sitter
parse of :mod:`callbench.sandbox.js_extract`: no library evaluates JavaScript constants
statically in Python.
"""

from __future__ import annotations

from typing import Any

from callbench.sandbox.js_extract import _parser, _walk

__all__ = ["HOLE", "url_values"]

#: A part of a value the code does not fix (one character, never in a URL the grammar writes).
HOLE = "\x01"
#: Stand-in for "not a string pattern" while evaluating.
_NOT = None
_MAX_CHARS = 4096  # a value longer than this is no URL a call names
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _text(node: Any, data: bytes) -> str:
    return data[node.start_byte : node.end_byte].decode("utf-8", "surrogatepass")


def _escape(seq: str) -> str:
    """A string escape sequence's character (the common ones; anything else stands for itself)."""
    body = seq[1:]
    if body[:1] in ("u", "x") and len(body) > 1:
        digits = body[1:].strip("{}")
        try:
            return chr(int(digits, 16))
        except ValueError:
            return body
    return _ESCAPES.get(body, body)


class _Eval:
    def __init__(self, data: bytes):
        self.data = data
        self.values: dict[str, str | None] = {}  # name -> pattern, None: bound to differing values

    def value(self, node: Any) -> str | None:
        """The pattern of an expression, or None when it is not a string-valued one."""
        t = node.type
        if t in ("string", "template_string"):
            out = []
            for c in node.named_children:
                if c.type == "string_fragment":
                    out.append(_text(c, self.data))
                elif c.type == "escape_sequence":
                    out.append(_escape(_text(c, self.data)))
                elif c.type == "template_substitution":  # only in a template
                    inner = c.named_children[0] if c.named_children else None
                    known = self.value(inner) if inner is not None and _bound_name(inner, self.data) else None
                    out.append(known if known is not None else HOLE)
            return "".join(out)
        if t == "parenthesized_expression" and node.named_child_count == 1:
            return self.value(node.named_children[0])
        name = _bound_name(node, self.data)
        if name is not None:  # a name (or this.name) bound earlier
            return self.values.get(name) or None
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op is None or _text(op, self.data) != "+" or left is None or right is None:
                return None
            a, b = self.value(left), self.value(right)
            if a is None and b is None:
                return None  # no string in sight: perhaps a number
            return (HOLE if a is None else a) + (HOLE if b is None else b)
        return None

    def bind(self, name: str, node: Any | None) -> None:
        v = self.value(node) if node is not None else None
        if v is not None and (len(v) > _MAX_CHARS or not v.replace(HOLE, "")):
            v = None
        if name in self.values and self.values[name] != v:
            v = None  # bound twice to different values (or once to something else)
        self.values[name] = v


def _bound_name(node: Any, data: bytes) -> str | None:
    """The name ``node`` binds or reads: an identifier, or ``this.name`` for a member expression
    ``this.name`` (a class's own property); else None."""
    if node.type == "identifier":
        return _text(node, data)
    if node.type != "member_expression":
        return None
    obj, prop = node.child_by_field_name("object"), node.child_by_field_name("property")
    if obj is None or prop is None or obj.type != "this" or prop.type != "property_identifier":
        return None
    return "this." + _text(prop, data)


def url_values(code: str) -> dict[str, str]:
    """Each name the code binds (``const``/``let``/``var`` declarators and plain ``name = ...``
    assignments, anywhere in the code, in source order) to a string pattern: the text the code
    fixes, :data:`HOLE` for each part it does not. A class's own properties count as the names
    ``this.<name>``: a field (``baseUrl = '...'``, not ``static``) and an assignment
    ``this.root = '...'`` (in its constructor or any method; classes are not told apart, so two
    classes giving one property different values leave it out by the rule above). Names of
    unknown or differing value are left out; code that does not parse gives what its parsed part
    says."""
    if not code:
        return {}
    data = code.encode("utf-8", "surrogatepass")
    ev = _Eval(data)
    for node in _walk(_parser().parse(data).root_node):
        if node.type == "variable_declarator":
            name = node.child_by_field_name("name")
            if name is not None and name.type == "identifier":
                ev.bind(_text(name, data), node.child_by_field_name("value"))
        elif node.type == "field_definition":
            prop = node.child_by_field_name("property")
            static = any(c.type == "static" for c in node.children)
            if prop is not None and prop.type == "property_identifier" and not static:
                ev.bind("this." + _text(prop, data), node.child_by_field_name("value"))
        elif node.type in ("assignment_expression", "augmented_assignment_expression"):
            left = node.child_by_field_name("left")
            name = _bound_name(left, data) if left is not None else None
            if name is None:
                continue
            if node.type == "assignment_expression":
                ev.bind(name, node.child_by_field_name("right"))
            else:
                ev.values[name] = None  # url += ...: changed after its declaration
    return {k: v for k, v in ev.values.items() if v is not None}


#: axios config options that shape the transport or the response, never the request the spec
#: judges: a config object may set them to any expression (``maxBodyLength: Infinity``). Left out on
#: purpose (a config with them is not offered): ``transformRequest``, ``paramsSerializer`` and
#: ``adapter`` rewrite or replace what is sent, ``proxy``, the agents and ``beforeRedirect`` where.
TRANSPORT_OPTIONS = frozenset({
    "maxBodyLength", "maxContentLength", "maxRedirects", "timeout", "responseType", "responseEncoding",
    "decompress", "withCredentials", "validateStatus", "signal", "transitional", "xsrfCookieName",
    "xsrfHeaderName", "maxRate", "onUploadProgress", "onDownloadProgress", "transformResponse",
})
_LITERALS = {"true": True, "false": False, "null": None}
#: The config keys that state the request a spec judges (the data check reads exactly these).
_REQUEST_KEYS = frozenset({"method", "url", "params", "headers", "data"})


def request_configs(code: str) -> dict[str, dict[str, Any]]:
    """Each name the code declares (``const``/``let``/``var``) to an object literal that is a
    whole axios request config of literal values (``let config = { method: 'get', url: '...',
    headers: {...} }``; ``axios.request(config)``): the config as a dict. Only a name that
    occurs once in the code (its declaration: nothing reads it, changes it or declares it
    again before the cut) and whose members are all literal (strings without ``${...}``,
    numbers, ``true``/``false``/``null``, objects and arrays of those; any expression only in a
    transport option, :data:`TRANSPORT_OPTIONS`, which is left out of the dict) and whose keys
    are ``method``, ``url``, ``params``, ``headers``, ``data`` and transport options (``auth``
    or ``baseURL`` change the request in ways the dict would not show): what the request sends
    is then exactly what the code states."""
    if not code or "{" not in code:
        return {}
    data = code.encode("utf-8", "surrogatepass")
    seen: dict[str, int] = {}
    found: dict[str, Any] = {}
    for node in _walk(_parser().parse(data).root_node):
        if node.type in ("identifier", "shorthand_property_identifier"):
            name = _text(node, data)
            seen[name] = seen.get(name, 0) + 1
        elif node.type == "variable_declarator":
            name_node, value = node.child_by_field_name("name"), node.child_by_field_name("value")
            if name_node is not None and name_node.type == "identifier" and value is not None and value.type == "object":
                config = _literal(value, data, top=True)
                if isinstance(config, dict) and isinstance(config.get("url"), str):
                    found[_text(name_node, data)] = config
    return {k: v for k, v in found.items() if seen.get(k) == 1}


class _NotLiteral(Exception):
    pass


def _literal(node: Any, data: bytes, *, top: bool = False) -> Any:
    """The JSON value of a literal expression; raises :class:`_NotLiteral` (caught at the top:
    None) for anything else. ``top``: the config object itself (its transport options may be
    any expression, and are left out)."""
    try:
        return _literal_value(node, data, top)
    except _NotLiteral:
        return None


def _literal_value(node: Any, data: bytes, top: bool) -> Any:
    t = node.type
    if t == "parenthesized_expression" and node.named_child_count == 1:
        return _literal_value(node.named_children[0], data, False)
    if t == "string" or (t == "template_string" and not any(c.type == "template_substitution" for c in node.named_children)):
        out = []
        for c in node.named_children:
            if c.type == "string_fragment":
                out.append(_text(c, data))
            elif c.type == "escape_sequence":
                out.append(_escape(_text(c, data)))
        return "".join(out)
    if t == "number":
        text = _text(node, data).replace("_", "")
        try:
            return int(text, 0) if text.isdigit() or text[:2].lower() in ("0x", "0o", "0b") else float(text)
        except ValueError as exc:
            raise _NotLiteral from exc
    if t in _LITERALS:
        return _LITERALS[t]
    if t == "array":
        return [_literal_value(c, data, False) for c in node.named_children if c.type != "comment"]
    if t == "object":
        out_obj: dict[str, Any] = {}
        for pair in node.named_children:
            if pair.type == "comment":
                continue
            if pair.type != "pair":
                raise _NotLiteral  # a spread, a method, a shorthand name
            key_node, value = pair.child_by_field_name("key"), pair.child_by_field_name("value")
            if key_node is None or value is None:
                raise _NotLiteral
            if key_node.type == "property_identifier":
                key = _text(key_node, data)
            elif key_node.type == "string":
                key = _literal_value(key_node, data, False)
            else:
                raise _NotLiteral  # a computed key
            if top and key in TRANSPORT_OPTIONS:
                continue
            if top and key not in _REQUEST_KEYS:
                raise _NotLiteral  # auth, baseURL, ...: parts of the request the dict would not show
            if key in out_obj:
                raise _NotLiteral  # a key given twice: the last wins in JavaScript; not worth reading
            out_obj[key] = _literal_value(value, data, False)
        return out_obj
    raise _NotLiteral
