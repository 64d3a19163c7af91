"""Key uniqueness and required keys for the axios call the web API grammar constrains.

The grammar (:mod:`callbench.constrain.webapi_grammar`) lets every object take its legal keys
in any order, repeated. "Each key at most once" and "required keys before ``}``" are not
compactly context-free, so this tracker follows the generated JavaScript byte by byte and
vetoes exactly the continuations that would break them; the engine intersects its verdicts with
the grammar's token mask.

Hand-written: an incremental scanner for the small JavaScript subset the grammar admits
(strings in all three quote styles with escapes, template literals with ``${name}`` holes,
numbers/identifiers, nested ``{``/``[``), keeping a stack of open objects, each knowing its
:class:`~callbench.specs.call_model.ObjShape` (the same shapes the grammar was built
from, so both agree on every object's keys). State is a few small frames, so ``clone`` is cheap
and ``feed``/``allows`` never rescan from the start.

Exactness: :meth:`KeyTracker.allows` refuses a byte string iff feeding it would (a) complete a
key already present in the same object (headers: case-insensitively), (b) close an object while
one of its required keys is missing, (c) leave a partial key that can only grow into keys
already present (so the model is never steered into a dead end), or (d) when an operation
accepts credentials in different places (:attr:`OpArgs.cred_any`): close ``config`` with no
alternative's credentials given, or close its ``headers``/``params`` so that no alternative can
still be completed (again no dead end). A ``headers``/``params`` value written as an identifier
is taken to hold whatever credential belongs there (its content cannot be seen).

Speed (the engine calls ``allows`` per candidate token, in Python): ``sensitive`` names only the
tokens that can break a rule in the current state, as :class:`~callbench.constrain.engine.TokenClass`
tables built once per vocabulary (e.g. inside a string value: a closing quote followed by code that
closes an object or starts a key, about 100 of Qwen's 152k tokens); verdicts are memoised per
state on whole tokens and on normalised forms that provably share a verdict, and the memo survives
tokens that leave the state unchanged (the middle of a string value); tokens that only write a key
are judged on the prefix table without simulation; simulations copy only the top frame.
Every shortcut is checked against the plain simulation (``_scan``) in
``tests/constrain/test_key_tracker_cache.py``.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import unquote_plus

import numpy as np

from callbench.constrain.engine import TokenClass
from callbench.constrain.webapi_grammar import AXIOS_METHODS, WebApiGrammar, query_values_held
from callbench.specs import ApiSpec
from callbench.specs.call_model import BODY_METHODS, NO, ObjShape, OpArgs, fixed_query_names, url_plan
from callbench.specs.credentials import CredentialValue
from callbench.specs.openapi import request_query

__all__ = ["KeyTracker", "TokenFilter", "config_needs", "make_key_tracker"]


# One protocol for every filter the engine accepts; defined next to the engine that relies on it.
from callbench.constrain.engine import TokenFilter  # noqa: E402, F401 - re-exported

# byte constants
_LBRACE, _RBRACE, _LBRACK, _RBRACK = ord("{"), ord("}"), ord("["), ord("]")
_LPAR, _RPAR, _COMMA, _COLON = ord("("), ord(")"), ord(","), ord(":")
_PLUS, _DOT = ord("+"), ord(".")
_QMARK, _EQ, _AMP = ord("?"), ord("="), ord("&")
_SQ, _DQ, _BQ, _BSL, _DOLLAR = ord("'"), ord('"'), ord("`"), ord("\\"), ord("$")
_PLAIN_ESCAPES = frozenset(b"'\"\\/`$")  # escapes that stand for the character itself
_WS = frozenset(b" \t\r\n")
_QUOTES = frozenset((_SQ, _DQ, _BQ))
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_$")
_SCALAR = _IDENT | frozenset(b".+-")
_STRUCT = frozenset(b"{}[](),:'\"`\\ \t\r\n")
_JS_IDENT = re.compile(rb"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_NOTHING: frozenset[int] = frozenset()

# -- which tokens can matter (the engine asks the tracker about no other token) ---------------------
# From code (outside keys and strings), a token can only break a rule if, read as code, it closes
# an object (`}`) or starts a key: a `,` (next pair) or `{` (new object) followed, after blanks and
# further `,`/`{`, by a byte that starts a key (a quote, a name byte). Read as the tracker reads it: string literals are
# skipped (escapes included), a template literal with a `${` hole counts as dangerous (its code is
# not followed here). Anything that can break a rule is in the class; members are then judged
# exactly, one by one.
_BLANK = frozenset(b" \t\r\n")
_KEY_START = _IDENT | _QUOTES - {_BQ}  # where a key is expected, these bytes start one


def _code_danger_from(data: bytes, i: int) -> bool:
    """Can ``data[i:]``, read from code (not inside a string or key), close an object or start a key?"""
    n = len(data)
    pending = False  # a `,` or `{` was read outside strings: the next non-blank byte may start a key
    while i < n:
        c = data[i]
        if c == _RBRACE:
            return True
        if c == _COMMA or c == _LBRACE:
            pending = True
        elif c in _BLANK:
            pass
        elif pending and (c in _KEY_START or c >= 0x80):
            return True
        elif c == _SQ or c == _DQ or c == _BQ:
            pending = False
            i += 1
            while i < n:
                d = data[i]
                if d == _BSL:
                    i += 2
                    continue
                if d == c:
                    break
                if c == _BQ and d == _DOLLAR and i + 1 < n and data[i + 1] == _LBRACE:
                    return True  # code inside a template hole: not followed, so counted
                i += 1
            else:
                return False  # the token ends inside the string
        else:
            pending = False  # `[`, `]`, `)`, `:` ...: no key can start here
        i += 1
    return False


def _code_danger(data: bytes) -> bool:
    return _code_danger_from(data, 0)


# What is pending inside a string when a token starts: nothing, an escape (`\` read), a `${` hole
# (backticks: until `}`) or a `$` (backticks: a `{` next opens a hole). Never two at once.
_P_NONE, _P_ESC, _P_HOLE, _P_DOLLAR = range(4)


def _string_end(data: bytes, q: int, pending: int = _P_NONE) -> int:
    """Where the string quoted with ``q`` that ``data`` continues ends: the index just after its
    closing quote, or -1 if it stays open. Read exactly like :meth:`KeyTracker._string_byte`
    (escapes, and in backticks `${...}` holes), starting with ``pending``."""
    i = data.find(q)
    if i < 0:
        return -1  # no quote at all: the string stays open whatever is pending
    if pending == _P_NONE:
        head = data[:i]
        if _BSL not in head and (q != _BQ or b"${" not in head):
            return i + 1  # nothing before the first quote can hide it: it is the real close
    esc, hole, dollar = pending == _P_ESC, pending == _P_HOLE, pending == _P_DOLLAR
    for i, b in enumerate(data):
        if esc:
            esc = False
        elif hole:
            if b == _RBRACE:
                hole = False
        elif q == _BQ and dollar and b == _LBRACE:
            dollar, hole = False, True
        else:
            dollar = b == _DOLLAR
            if b == _BSL:
                esc = True
            elif b == q:
                return i + 1
    return -1


def _string_danger(q: int, *, escapes: bool = False, pending: int = _P_NONE) -> TokenClass:
    """Inside a string (value, URL or, with ``escapes``, a quoted key) quoted with ``q``, with
    ``pending`` left by the bytes before: only code after the real closing quote can break a
    rule. The real close is found as the scanner finds it (:func:`_string_end`): the first ``q``
    is not it when an escape or a `${` hole is pending or comes before it in the token, and
    reading code from a too-early quote would take the real close for an opening quote and skip
    the code after it as string content. In a key, a backslash counts too (an escape can spell
    any key)."""

    def predicate(data: bytes) -> bool:
        if escapes and _BSL in data:
            return True
        end = _string_end(data, q, pending)
        return end >= 0 and _code_danger_from(data, end)

    what = "quoted key" if escapes else "string"
    state = ("", " after an escape", " in a ${ hole", " after $")[pending]
    prefilter = b",{}\\" if escapes else b",{}"
    return TokenClass(
        f"key tracker: {what} {chr(q)}{state} closed, then code danger", predicate, prefilter=prefilter
    )


_CODE_DANGER = TokenClass("key tracker: code danger", _code_danger, prefilter=b",{}")


def _url_query_danger(q: int, pending: int) -> TokenClass:
    """Inside a URL string's query: closing it, or a ``=``/``&`` that ends a key (judged then)."""

    def predicate(data: bytes) -> bool:
        return _EQ in data or _AMP in data or _string_end(data, q, pending) >= 0

    state = ("", " after an escape", " in a ${ hole", " after $")[pending]
    return TokenClass(f"key tracker: URL query {chr(q)}{state}: a key's end", predicate, prefilter=bytes((q, _EQ, _AMP)))


def _url_string_end(q: int, pending: int) -> TokenClass:
    """Inside a URL string: closing it (the operation and its query keys are judged at the
    closing quote, or at the ``,``/``)`` after it when ``+`` may go on)."""

    def predicate(data: bytes) -> bool:
        return _string_end(data, q, pending) >= 0

    state = ("", " after an escape", " in a ${ hole", " after $")[pending]
    return TokenClass(f"key tracker: URL {chr(q)}{state} closed", predicate, prefilter=bytes((q,)))


# In a URL string, per quote and pending state; after a URL piece or expression (real-world
# profile: `+` may go on), and after the URL: code danger or the `,`/`)` that ends the URL or call.
_URL_STRING_END = {
    (q, p): _url_string_end(q, p)
    for q in (_SQ, _DQ, _BQ)
    for p in ((_P_NONE, _P_ESC, _P_HOLE, _P_DOLLAR) if q == _BQ else (_P_NONE, _P_ESC))
}
def _url_query_open(q: int, pending: int) -> TokenClass:
    """Inside a URL string before its query: closing it, or a ``?`` (its keys are judged byte by byte)."""

    def predicate(data: bytes) -> bool:
        return _QMARK in data or _string_end(data, q, pending) >= 0

    state = ("", " after an escape", " in a ${ hole", " after $")[pending]
    return TokenClass(f"key tracker: URL {chr(q)}{state}: its end or its query", predicate, prefilter=bytes((q, _QMARK)))


_URL_QUERY_OPEN = {
    (q, p): _url_query_open(q, p)
    for q in (_SQ, _DQ, _BQ)
    for p in ((_P_NONE, _P_ESC, _P_HOLE, _P_DOLLAR) if q == _BQ else (_P_NONE, _P_ESC))
}
_URL_QUERY_DANGER = {
    (q, p): _url_query_danger(q, p)
    for q in (_SQ, _DQ, _BQ)
    for p in ((_P_NONE, _P_ESC, _P_HOLE, _P_DOLLAR) if q == _BQ else (_P_NONE, _P_ESC))
}
_ANY_TOKEN = TokenClass("key tracker: every token (the request form's method, judged byte by byte)", lambda data: True)
_URL_END = TokenClass(
    "key tracker: code danger, or the , or ) that ends a URL or the call",
    lambda data: _code_danger(data) or _COMMA in data or _RPAR in data,
    prefilter=b",{})",
)
# Inside a string value or URL, per quote and pending state (holes and `$` matter in backticks only).
_STRING_DANGER = {
    (q, p): _string_danger(q, pending=p)
    for q in (_SQ, _DQ, _BQ)
    for p in ((_P_NONE, _P_ESC, _P_HOLE, _P_DOLLAR) if q == _BQ else (_P_NONE, _P_ESC))
}
# Writing a key that can no longer become a key already given: only an escape or code after the
# key's end can lead to a violation (the key itself cannot repeat one, see _partial_is_safe).
_KEYQ_SAFE = {q: _string_danger(q, escapes=True) for q in (_SQ, _DQ)}
# ... the same in a free-form object with keys given: ending the key may repeat one.
_KEYQ_END = {q: frozenset((q, _BSL)) for q in (_SQ, _DQ)}
_KEYU_END = frozenset(b": \t\r\n")


def _request_literal_end(q: int, pending: int) -> TokenClass:
    """Inside ``axios.request``'s method or URL literal: closing it (the operation may be named
    there, and a ``+`` after the URL is refused)."""
    state = ("", " after an escape", " in a ${ hole", " after $")[pending]
    return TokenClass(
        f"key tracker: request literal {chr(q)}{state} closed",
        lambda data: _string_end(data, q, pending) >= 0,
        prefilter=bytes((q,)),
    )


_REQUEST_LITERAL_END = {
    (q, p): _request_literal_end(q, p)
    for q in (_SQ, _DQ, _BQ)
    for p in ((_P_NONE, _P_ESC, _P_HOLE, _P_DOLLAR) if q == _BQ else (_P_NONE, _P_ESC))
}
# after a Content-Type that is no form type: code danger, or the `(` of a form body
_CALL_DANGER = TokenClass(
    "key tracker: code danger or (",
    lambda data: _code_danger(data) or _LPAR in data,
    prefilter=b",{}(",
)
# after axios.request's URL literal: code danger, or a `+` (refused: see KeyTracker._code_byte)
_REQUEST_URL_AFTER = TokenClass(
    "key tracker: code danger or + after axios.request's URL",
    lambda data: _code_danger(data) or _PLUS in data,
    prefilter=b",{}+",
)


# Where a key is expected after keys were given, a token can also break a rule by starting a key
# that can only become (or is) a given one: its first key byte (after blanks and the quote) is
# then the first byte of a given key. One class per byte, from one vectorised pass per vocabulary.
_FIRST_KEY_BYTES: weakref.WeakKeyDictionary[Any, np.ndarray] = weakref.WeakKeyDictionary()


def _first_key_byte(data: bytes) -> int:
    """The byte a key written by ``data`` from a key position starts with (-1: none)."""
    rest = data.lstrip(b" \t\r\n")
    if not rest:
        return -1
    if rest[0] in (_SQ, _DQ):
        return rest[1] if len(rest) > 1 else -1
    return rest[0]


def _first_key_bytes(vocab: Any) -> np.ndarray:
    """:func:`_first_key_byte` of every token of ``vocab`` (int16, cached per vocabulary)."""
    hit = _FIRST_KEY_BYTES.get(vocab)
    if hit is not None:
        return hit
    tb = vocab.token_bytes
    lengths = np.fromiter(map(len, tb), dtype=np.int64, count=len(tb))
    flat = np.frombuffer(b"".join(tb), dtype=np.uint8)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    blank = np.zeros(256, dtype=bool)
    blank[list(_BLANK)] = True
    pos = np.where(blank[flat], flat.size, np.arange(flat.size))  # non-blank bytes: their position
    out = np.full(len(tb), -1, dtype=np.int16)
    nonempty = np.flatnonzero(lengths)
    if nonempty.size:
        first = np.minimum.reduceat(pos, starts[nonempty])  # first non-blank position per token
        ok = first < ends[nonempty]
        ids, first = nonempty[ok], first[ok]
        b0 = flat[first].astype(np.int16)
        quoted = (b0 == _SQ) | (b0 == _DQ)
        has_next = first + 1 < ends[ids]
        nxt = np.where(has_next, flat[np.minimum(first + 1, flat.size - 1)].astype(np.int16), np.int16(-1))
        out[ids] = np.where(quoted, nxt, b0)
    out.flags.writeable = False
    _FIRST_KEY_BYTES[vocab] = out
    return out


_KEY_FIRST: dict[int, TokenClass] = {}


def _key_firsts(key_bytes: frozenset[int]) -> tuple[int, ...]:
    out = {_BSL}
    for c in key_bytes:
        out.add(c)
        if 65 <= c <= 90 or 97 <= c <= 122:
            out.add(c ^ 0x20)
    return tuple(sorted(out))


def _key_first(c: int) -> TokenClass:
    cls = _KEY_FIRST.get(c)
    if cls is None:
        cls = _KEY_FIRST[c] = TokenClass(
            f"key tracker: a key starting with {bytes((c,))!r}",
            lambda data, c=c: _first_key_byte(data) == c,
            build=lambda vocab, c=c: _first_key_bytes(vocab) == c,
        )
    return cls


# modes (what the scanner is inside of)
M_CODE, M_STR, M_KEYQ, M_KEYU, M_SCALAR, M_METHOD, M_DONE, M_LOST, M_URLEXPR = range(9)
# call-frame states
C_METHOD, C_URL, C_AFTER, C_ARG = range(4)
# a URL written by concatenation (real-world profile): after a piece, where ``+`` may go on; after ``+``
C_URLEND, C_URLPLUS = 4, 5
#: A hole of the URL (``${name}``, ``' + name + '``): its value is unknown; "1" when the URL is matched
_HOLE = 1
# object-frame states
O_KEY, O_COLON, O_VALUE, O_AFTER = range(4)
# array-frame states
A_ITEM, A_AFTER = range(2)
# axios.request({...}) (see KeyTracker._req)
R_NONE, R_HEAD, R_DONE = range(3)
#: the request form's object until its ``method``/``url`` name the operation
_REQUEST_HEAD = ObjShape("config", {"method": None, "url": None}, frozenset({"url"}))
_FREE = ObjShape("object", {}, extra=None)
# where credentials go: the object path -> the location name credentials use
_CRED_PLACES = {"config.headers": "headers", "config.params": "params"}
_NO_CRED: tuple[frozenset[tuple[str, str]], frozenset[str], frozenset[str]] = (
    frozenset(),
    frozenset(),
    frozenset(),
)


def _shown_value(desc: Any) -> str:
    """How a required credential's value must look, for messages."""
    if isinstance(desc, CredentialValue) and desc.values:
        return "value " + " or ".join(repr(v) for v in desc.values)
    return "any string value"


# what a partial key can still break (see KeyTracker._partial_is_safe)
_UNSAFE, _SAFE_UNTIL_END, _SAFE_ALL = range(3)
_ESCAPES = {
    ord("n"): "\n",
    ord("t"): "\t",
    ord("r"): "\r",
    ord("b"): "\b",
    ord("f"): "\f",
    ord("v"): "\v",
    ord("0"): "\0",
}


class _Frame:
    """One open construct: the call itself, an object literal or an array literal."""

    __slots__ = ("kind", "state", "shape", "item", "used", "path", "child", "key", "argi")

    def __init__(self, kind: str, state: int, path: str, shape: ObjShape | None = None, item: Any = None):
        self.kind = kind  # "call" | "obj" | "arr"
        self.state = state
        self.shape = shape
        self.item = item  # arrays: descriptor of the items
        self.used: frozenset[str] = frozenset()  # normalized keys already given (objects)
        self.path = path
        self.child: Any = None  # objects: descriptor of the value of the current key
        self.key: str | None = None  # objects: the current key
        self.argi = 0  # call: index of the current positional argument (0 = URL)

    def copy(self) -> _Frame:
        f = _Frame.__new__(_Frame)
        f.kind, f.state, f.shape, f.item = self.kind, self.state, self.shape, self.item
        f.used, f.path, f.child, f.key, f.argi = self.used, self.path, self.child, self.key, self.argi
        return f


class _Prefixes:
    """Declared keys of one closed shape by prefix, to answer "can this partial key still
    become a key not yet given?" in O(1)."""

    __slots__ = ("quoted", "bare", "declared")

    def __init__(self, shape: ObjShape):
        self.quoted: dict[bytes, frozenset[str]] = {}
        self.bare: dict[bytes, frozenset[str]] = {}
        self.declared = frozenset(shape.norm(name) for name in shape.props)
        q: dict[bytes, set[str]] = {}
        b: dict[bytes, set[str]] = {}
        for name in shape.props:
            norm = shape.norm(name)
            raw = norm.encode()
            ident = _JS_IDENT.match(name.encode()) is not None
            for i in range(len(raw) + 1):
                q.setdefault(raw[:i], set()).add(norm)
                if ident:
                    b.setdefault(raw[:i], set()).add(norm)
        self.quoted = {k: frozenset(v) for k, v in q.items()}
        self.bare = {k: frozenset(v) for k, v in b.items()}


_PREFIX_CACHE: dict[int, tuple[ObjShape, _Prefixes]] = {}


def _prefixes(shape: ObjShape) -> _Prefixes:
    hit = _PREFIX_CACHE.get(id(shape))
    if hit is not None and hit[0] is shape:
        return hit[1]
    p = _Prefixes(shape)
    if len(_PREFIX_CACHE) > 4096:
        _PREFIX_CACHE.clear()
    _PREFIX_CACHE[id(shape)] = (shape, p)
    return p


def _decode_key(raw: bytes) -> str:
    """A quoted key's value (common escapes; anything else stands for itself)."""
    if b"\\" not in raw:
        return raw.decode("utf-8", "replace")
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == _BSL and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt == ord("u") and i + 5 < len(raw) and re.fullmatch(rb"[0-9a-fA-F]{4}", raw[i + 2 : i + 6]):
                out += chr(int(raw[i + 2 : i + 6], 16)).encode("utf-8", "surrogatepass")
                i += 6
                continue
            esc = _ESCAPES.get(nxt)
            out += esc.encode() if esc is not None else bytes([nxt])
            i += 2
            continue
        out.append(c)
        i += 1
    return out.decode("utf-8", "replace")


def config_needs(args: OpArgs) -> str:
    """What a call must put in its config (for messages): each object's required keys and, where
    credentials have alternatives, one of them (``params: q; a credential (headers.authorization
    or params.api_key)``)."""
    need = [
        f"{k}: {', '.join(sorted(s.declared(n) or n for n in s.required))}"
        for k, s in args.config.props.items()
        if isinstance(s, ObjShape) and s.required
    ]
    if args.cred_any:
        alts = " or ".join(" + ".join(f"{loc}.{n}" for loc, n in sorted(a)) for a in args.cred_any)
        need.append(f"a credential ({alts})")
    return "; ".join(need) or "its required arguments"


class KeyTracker:
    """Follows one axios call (the text after the starter) and vetoes duplicate keys, objects
    closed before their required keys, and partial keys that can only repeat a given key.

    After the call's closing ``)`` it is inactive for good. If the text leaves the JavaScript
    subset the grammar admits (which the grammar prevents), it gives up and allows everything.
    ``violation`` holds the first rule a fed text broke (the checker feeds unchecked text).
    """

    __slots__ = (
        "grammar",
        "_model",
        "_spec",
        "_keyset",
        "_frames",
        "_mode",
        "_q",
        "_esc",
        "_hole",
        "_dollar",
        "_buf",
        "_url",
        "_method",
        "_args",
        "violation",
        "_memo",
        "_sens",
        "_shared",
        "_key_firsts",
        "_cred",
        "_req",
        "_cap",
        "_req_url",
        "_wrapped",
        "_ct",
        "_cat",
        "_values",
        "_qenum",
    )

    def __init__(self, grammar: WebApiGrammar, spec: ApiSpec):
        self.grammar = grammar
        self._spec = spec
        self._model = grammar.model
        self._keyset: frozenset[int] = frozenset(_STRUCT | grammar.key_bytes)
        # bytes a given key can start with (every byte of a declared name, both cases, escapes)
        self._key_firsts = _key_firsts(grammar.key_bytes)
        self._mode = M_CODE
        self._q = 0
        self._esc = False
        self._hole = False
        self._dollar = False
        self._buf = bytearray()  # current key, method name or scalar
        self._url: bytearray | None = None
        self._method: str | None = None
        self._args: OpArgs | None = None
        # credential choice (only when the operation's cred_any is set): atoms given, config
        # keys given (headers/params), and places given as identifiers; see _cred_key
        self._cred: tuple[frozenset[tuple[str, str]], frozenset[str], frozenset[str]] = _NO_CRED
        # axios.request({...}): R_NONE (positional form), R_HEAD (its object before the operation
        # is known), R_DONE; the key whose literal value is captured ("method"/"url"); the URL read
        self._req = R_NONE
        self._cap: str | None = None
        self._req_url: str | None = None
        # a form body written as new URLSearchParams(...)/qs.stringify(...), and the config's
        # Content-Type (None: not given; "form", "other", or "opaque": not a plain literal)
        self._wrapped = False
        self._ct: str | None = None
        # the URL read so far while it may go on by concatenation ('...' + name + '...')
        self._cat: bytearray | None = None
        # names whose value the starter fixes (WebApiGrammar.url_values), read in their place
        self._values: dict[str, str] = dict(grammar.url_values)
        # the values the current URL query value may take (its operation's enum, where the
        # grammar's regex for the key is wider: several operations declare the name), else None
        self._qenum: tuple[str, ...] | None = None
        self.violation: str | None = None
        # allows() verdicts for the current state: "feeding exactly these bytes now is fine",
        # keyed on whole tokens and on the normalised forms that share a verdict (see allows).
        # Cleared whenever the state changes (see feed).
        self._memo: dict[bytes, bool] = {}
        self._sens: frozenset[int] | TokenClass | None = None  # sensitive, for the current state
        call = _Frame("call", C_METHOD, "")
        if grammar.setup == "args":
            self._method = grammar.method
            self._args = grammar.args
            call.state, call.argi = C_ARG, 1
        else:
            self._mode = M_METHOD
        self._frames = [call]
        self._shared = 0  # frames below this index are shared with another tracker (see _probe)

    # -- TokenFilter -------------------------------------------------------------------
    @property
    def sensitive(self) -> frozenset[int] | TokenClass:
        """The tokens that can matter *now* (the engine reads this at every step).

        Inside a string (value or URL), the real closing quote (found as the scanner finds it,
        from the escape or `${` hole left pending, see :func:`_string_end`) followed by code that
        closes an object or starts a key; outside keys, such code itself (:data:`_CODE_DANGER`);
        while a key is being written that could still become a key already given (or a key is
        expected after one was given), every byte of a declared key name and the structural bytes;
        while writing a key that cannot, only its end (or an escape). A bounded number of distinct
        values (:attr:`all_sensitive`, plus one class per key-start byte), so the engine's
        per-vocabulary tables stay few.
        """
        sens = self._sens
        if sens is None:
            sens = self._sens = self._sensitive_now()
        return sens

    @property
    def all_sensitive(self) -> tuple[frozenset[int] | TokenClass, ...]:
        """Every value :attr:`sensitive` can take (the engine builds their tables up front)."""
        return (
            _NOTHING,
            _CODE_DANGER,
            *_STRING_DANGER.values(),
            *_URL_STRING_END.values(),
            *_URL_QUERY_DANGER.values(),
            *_URL_QUERY_OPEN.values(),
            _ANY_TOKEN,
            _URL_END,
            self._keyset,
            *_KEYQ_SAFE.values(),
            *_KEYQ_END.values(),
            _KEYU_END,
            *_REQUEST_LITERAL_END.values(),
            _REQUEST_URL_AFTER,
            _CALL_DANGER,
            *(_key_first(c) for c in self._key_firsts),
        )

    def _sensitive_now(self) -> frozenset[int] | TokenClass:
        mode = self._mode
        if mode == M_STR and (self._qenum is not None or self._in_query_key()):
            # a query key (or a value held to its operation's enum): judged byte by byte; the
            # engine checks only the grammar's tokens, the few that go on with the spec's keys
            return _ANY_TOKEN
        if mode == M_STR and self._cap == "method" and self._method_keys_pending():
            return _ANY_TOKEN  # a method whose operation lacks the URL's query keys: refused at once
        if mode == M_STR and self._cap is not None and not (self._cap == "url" and self.grammar.options.allow_url_query):
            # axios.request's method or URL literal (a URL's query keys: below)
            q, p = self._q, _P_NONE
            if self._esc:
                p = _P_ESC
            elif q == _BQ and self._hole:
                p = _P_HOLE
            elif q == _BQ and self._dollar:
                p = _P_DOLLAR
            return _REQUEST_LITERAL_END[q, p]
        if mode == M_STR:
            q = self._q
            table = _URL_STRING_END if self._url is not None else _STRING_DANGER
            if self._reads_query(self._url):
                table = _URL_QUERY_DANGER
            elif self._url is not None and self.grammar.options.allow_url_query and self._cap in (None, "url"):
                table = _URL_QUERY_OPEN
            if self._esc:
                return table[q, _P_ESC]
            if q == _BQ and self._hole:
                return table[q, _P_HOLE]
            if q == _BQ and self._dollar:
                return table[q, _P_DOLLAR]
            return table[q, _P_NONE]
        if mode in (M_DONE, M_LOST) or self.violation is not None:
            return _NOTHING
        top = self._frames[-1]
        if top.kind == "call" and (mode == M_URLEXPR or top.state in (C_URLEND, C_URLPLUS, C_AFTER, C_ARG)):
            return _URL_END  # the URL or the call may end here (judged by _resolve_url, _end_call)
        if mode in (M_KEYQ, M_KEYU):
            safe = self._partial_is_safe(top)
            if safe == _SAFE_ALL:
                return _KEYQ_SAFE[self._q] if mode == M_KEYQ else _CODE_DANGER
            if safe == _SAFE_UNTIL_END:
                return _KEYQ_END[self._q] if mode == M_KEYQ else _KEYU_END
            return self._keyset
        if top.kind == "obj" and top.state == O_KEY and top.used:
            return self._key_start_sensitive(top)
        if self._after_request_url(top):
            return _REQUEST_URL_AFTER
        if self._ct == "other" and not self._wrapped:  # a form body's `(` would break the rule
            return _CALL_DANGER
        if self._cap == "ct" and self._wrapped:  # beside a form body: its Content-Type literal
            return self._keyset
        # Elsewhere, also at an object's first key: no key is given yet, so no partial or
        # complete key can repeat one until a `,` or `{` has started another key.
        return _CODE_DANGER

    def _key_start_sensitive(self, top: _Frame) -> Any:
        """Where a key is expected after keys were given: code danger, and tokens whose key
        starts with the first byte of a given key (both cases in a case-insensitive object) or
        an escape. If every declared key was given (or the empty key), any key start can fail."""
        used = top.used
        shape = top.shape
        if "" in used:
            return self._keyset
        if shape is not None and shape.closed:
            every = _prefixes(shape).quoted.get(b"")
            if every is not None and every <= used:
                return self._keyset
        firsts = {_BSL}
        for key in used:
            c = key.encode()[0]
            firsts.add(c)
            if 65 <= c <= 90 or 97 <= c <= 122:
                firsts.add(c ^ 0x20)
        return (_CODE_DANGER, *(_key_first(c) for c in sorted(firsts)))

    def _partial_is_safe(self, top: _Frame) -> int:
        """While writing a key: which continuations can fail?

        ``_SAFE_ALL``: none that only extend or end the key. In a closed object whose given keys
        are all declared, when the partial key (no escapes) can become no given key: a longer
        partial can become a subset of those keys (or none), so :meth:`_check_partial` cannot
        fail, and the finished key is either one of them or undeclared, so not given. Also in a
        free-form object with no key given yet.
        ``_SAFE_UNTIL_END``: only the key's end can fail (a free-form object: any partial can
        still become a new key, but the finished one may repeat a given one).
        ``_UNSAFE``: any key byte can fail.
        """
        shape = top.shape
        used = top.used
        if shape is None or not shape.closed:
            return _SAFE_ALL if not used else _SAFE_UNTIL_END
        partial = bytes(self._buf)
        if _BSL in partial:
            return _UNSAFE
        if shape.ci:
            partial = partial.lower()
        pre = _prefixes(shape)
        if not used <= pre.declared:
            return _UNSAFE
        cands = (pre.quoted if self._mode == M_KEYQ else pre.bare).get(partial)
        return _SAFE_ALL if cands is None or cands.isdisjoint(used) else _UNSAFE

    def clone(self) -> KeyTracker:
        return self._copy_with([f.copy() for f in self._frames], 0)

    def _probe(self) -> KeyTracker:
        """A throw-away copy for :meth:`_scan`: it copies only the top frame and shares the others
        with this tracker, copying each when a pop makes it the top (the scanner changes no other
        frame). Valid while this tracker does not change, i.e. within one allows() call."""
        frames = self._frames
        return self._copy_with([*frames[:-1], frames[-1].copy()], len(frames) - 1)

    def _copy_with(self, frames: list[_Frame], shared: int) -> KeyTracker:
        """A tracker in this one's scanner state over ``frames`` (the first ``shared`` not owned)."""
        t = KeyTracker.__new__(KeyTracker)
        t.grammar, t._spec, t._model, t._keyset = self.grammar, self._spec, self._model, self._keyset
        t._key_firsts = self._key_firsts
        t._frames = frames
        t._shared = shared
        t._mode, t._q, t._esc, t._hole, t._dollar = self._mode, self._q, self._esc, self._hole, self._dollar
        t._buf = bytearray(self._buf)
        t._url = bytearray(self._url) if self._url is not None else None
        t._method, t._args, t.violation = self._method, self._args, self.violation
        t._cred = self._cred
        t._req, t._cap, t._req_url = self._req, self._cap, self._req_url
        t._wrapped, t._ct = self._wrapped, self._ct
        t._cat = bytearray(self._cat) if self._cat is not None else None
        t._values = self._values
        t._qenum = self._qenum
        t._memo = {}
        t._sens = None
        return t

    def active(self) -> bool:
        return self._mode not in (M_DONE, M_LOST) and self.violation is None

    def feed(self, data: bytes) -> None:
        if not data:
            return
        if not self._keeps_state(data):
            self._memo = {}
            self._sens = None
        for b in data:
            if self._mode in (M_DONE, M_LOST):
                return
            self._step(b)

    def _keeps_state(self, data: bytes) -> bool:
        """Does feeding ``data`` leave the whole state as it is? (then verdicts stay valid)

        Inside a string value with no escape or ``${`` pending, bytes other than the quote, a
        backslash and ``$`` change nothing (a value's text is not kept). Tokens in the middle of
        a long string are the common case: their steps reuse the previous step's verdicts.
        """
        if self._mode != M_STR or self._url is not None or self._esc or self._hole or self._dollar:
            return False
        return self._q not in data and _BSL not in data and _DOLLAR not in data

    def allows(self, data: bytes) -> bool:
        mode = self._mode
        if mode in (M_DONE, M_LOST) or self.violation is not None:
            return True
        memo = self._memo
        verdict = memo.get(data)
        if verdict is None:
            verdict = self._judge(data, mode)
            memo[data] = verdict
        return verdict

    def _judge(self, data: bytes, mode: int) -> bool:
        """allows() without the whole-token memo (the memo holds the verdicts of normalised forms)."""
        if mode == M_STR:
            q = self._q
            idx = data.find(q)
            if idx < 0 and self._url is None:
                return True  # the string stays open: nothing can break
            if idx >= 0 and self._url is None and not (self._esc or self._hole or self._dollar):
                # Inside a string value, bytes before the closing quote change no state unless
                # they are a backslash (or, in backticks, part of `${`). Then the verdict depends
                # only on the bytes from the quote on, which many tokens share (`",`, `"}` ...).
                head = data[:idx]
                if _BSL not in head and (q != _BQ or (_DOLLAR not in head and _LBRACE not in head)):
                    return self._memo_scan(data[idx:]) if idx else self._scan(data)
            return self._scan(data)
        if mode == M_CODE:
            # Between tokens of the call, whitespace changes no state (`_code_byte` ignores it), so
            # tokens that differ only in leading whitespace (" ,", "\n    }") share a verdict.
            key = data.lstrip(b" \t\r\n")
            if not key:
                return True
            top = self._frames[-1]
            if top.state == O_KEY and top.kind == "obj":
                # Where a key is expected, a token that only starts one (`"na`, ` name`) is judged
                # on the prefix table alone, like _check_partial would byte by byte.
                first = key[0]
                if first == _SQ or first == _DQ:
                    if first not in key[1:] and _BSL not in key:
                        return self._key_ok(top, key[1:], 0, quoted=True)
                elif (first in _IDENT or first >= 0x80) and all(b in _IDENT or b >= 0x80 for b in key):
                    return self._key_ok(top, key, 1, quoted=False)
            return self._memo_scan(key) if len(key) != len(data) else self._scan(data)
        if mode == M_SCALAR:
            # A number/identifier's bytes change no state (but for `new`, which a blank does not
            # end, see _step); the first other byte ends it.
            if b"new".startswith(self._buf) or self._ct == "other":
                return self._scan(data)
            for i, b in enumerate(data):
                if b not in _SCALAR:
                    return self._memo_scan(data[i:]) if i else self._scan(data)
            return True
        if mode == M_KEYQ:
            if not self._esc and self._q not in data and _BSL not in data:
                return self._key_ok(
                    self._frames[-1], bytes(self._buf) + data, len(self._buf) + 1, quoted=True
                )
        elif mode == M_KEYU:
            if all(b in _IDENT or b >= 0x80 for b in data):
                return self._key_ok(
                    self._frames[-1], bytes(self._buf) + data, len(self._buf) + 1, quoted=False
                )
        return self._scan(data)

    def _memo_scan(self, key: bytes) -> bool:
        verdict = self._memo.get(key)
        if verdict is None:
            verdict = self._memo[key] = self._scan(key)
        return verdict

    @staticmethod
    def _key_ok(top: _Frame, partial: bytes, start: int, *, quoted: bool) -> bool:
        """Would writing the key ``partial`` (no escapes, no end) pass :meth:`_check_partial` at
        every length from ``start`` on? The first partial key that can only become keys already
        given fails; one that no declared key starts with ends the check (nor does any longer)."""
        shape = top.shape
        if shape is None or not shape.closed:
            return True
        pre = _prefixes(shape)
        table = pre.quoted if quoted else pre.bare
        if shape.ci:
            partial = partial.lower()
        used = top.used
        for end in range(start, len(partial) + 1):
            cands = table.get(partial[:end])
            if cands is None:
                return True
            if cands <= used:
                return False
        return True

    def _scan(self, data: bytes) -> bool:
        """Would appending ``data`` keep the rules satisfiable? (simulation on a probe)"""
        t = self._probe()
        for b in data:
            if t._mode in (M_DONE, M_LOST):
                return True
            t._step(b)
            if t.violation is not None:
                return False
        return True

    # -- introspection (used by the checker) -------------------------------------------
    @property
    def method(self) -> str | None:
        return self._method

    @property
    def operation_label(self) -> str | None:
        return self._args.label if self._args is not None else None

    @property
    def args(self) -> OpArgs | None:
        """The operation's arguments once the URL has been read (setup args: from the start)."""
        return self._args

    @property
    def request_form(self) -> str | None:
        """``"head"`` inside ``axios.request({...})`` before its method and URL name the
        operation, ``"named"`` after, None in the positional form."""
        return {R_HEAD: "head", R_DONE: "named"}.get(self._req)

    @property
    def request_url(self) -> str | None:
        """The URL literal of ``axios.request({...})`` once read (holes written as ``1``)."""
        return self._req_url

    def url_resolved(self) -> KeyTracker:
        """A copy whose URL, read up to where a ``+`` could still continue it (a URL written by
        concatenation), is taken as complete and resolved (the checker's explanations)."""
        t = self.clone()
        top = t._frames[-1]
        if top.kind == "call" and top.state == C_URLEND and t._mode == M_CODE:
            t._url, t._cat = t._cat, None
            t._resolve_url()
            top.state = C_AFTER
        return t

    @property
    def key_quote(self) -> str | None:
        """While a key is being written: its quote character, or "" for an unquoted key."""
        if self._mode == M_KEYQ:
            return chr(self._q)
        return "" if self._mode == M_KEYU else None

    def closing_hint(self) -> bytes | None:
        """Text that brings the call closer to its end, for the token-budget planner
        (:mod:`callbench.constrain.budget`): at a key position in an object that still lacks a
        required key, that key written as ``'name': ``. Without it the planner, which tries
        bytes in a fixed order, could list every optional key before reaching the required one
        and need more tokens than are left. None when there is nothing to suggest."""
        if self._mode != M_CODE or not self._frames:
            return None
        top = self._frames[-1]
        if top.kind != "obj" or top.state != O_KEY or top.shape is None:
            return None
        missing = top.shape.required - top.used
        if not missing:
            return None
        shape = top.shape
        name = sorted(missing)[0]
        if shape.ci:
            name = next((k for k in shape.props if k.lower() == name), name)
        if "'" in name or "\\" in name:
            return None
        return f"'{name}': ".encode()

    @property
    def done(self) -> bool:
        return self._mode == M_DONE

    @property
    def lost(self) -> bool:
        """The text left what the tracker can follow (e.g. a URL that names no operation)."""
        return self._mode == M_LOST

    def context(self) -> dict[str, Any]:
        """Where the scanner is: state name, open object's label/shape, current key."""
        top = self._frames[-1]
        mode = self._mode
        out: dict[str, Any] = {"op": self.operation_label, "method": self._method}
        if mode == M_METHOD or (top.kind == "call" and top.state == C_METHOD):
            out["state"] = "method"
        elif mode == M_DONE:
            out["state"] = "done"
        elif mode == M_LOST:
            out["state"] = "lost"
        elif top.kind == "call":
            if top.state in (C_URL, C_URLEND, C_URLPLUS) or self._url is not None or mode == M_URLEXPR:
                out["state"] = "url"
                out["url_done"] = top.state == C_URLEND and mode == M_CODE
            else:
                out["state"] = "args"
                out["argi"] = top.argi
        elif top.kind == "obj":
            out["object"] = self._label(top.path)
            out["shape"] = top.shape
            out["used"] = sorted(top.used)
            if mode in (M_KEYQ, M_KEYU) or top.state == O_KEY:
                out["state"] = "key"
                out["partial"] = _decode_key(bytes(self._buf)) if mode in (M_KEYQ, M_KEYU) else ""
            elif top.state == O_COLON:
                out["state"] = "colon"
            elif top.state == O_VALUE or mode in (M_STR, M_SCALAR):
                out["state"] = "value"
                out["key"] = top.key
                out["desc"] = top.child
            else:
                out["state"] = "after_value"
        else:
            out["object"] = self._label(top.path)
            out["state"] = "value" if top.state == A_ITEM or mode in (M_STR, M_SCALAR) else "after_value"
            out["desc"] = top.item
        return out

    def _label(self, path: str) -> str:
        op = self.operation_label or "the call"
        names = {
            "config": "config",
            "config.params": "params",
            "config.headers": "headers",
            "config.data": "data",
        }
        return f"{names.get(path, path)} of {op}"

    # -- the scanner -------------------------------------------------------------------
    def _fail(self, message: str) -> None:
        if self.violation is None:
            self.violation = message

    def _lost(self) -> None:
        self._mode = M_LOST

    def _step(self, b: int) -> None:
        mode = self._mode
        if mode == M_STR:
            self._string_byte(b)
            return
        if mode == M_KEYQ:
            if self._esc:
                self._esc = False
                self._buf.append(b)
                self._check_partial(quoted=True)
            elif b == _BSL:
                self._esc = True
                self._buf.append(b)
            elif b == self._q:
                self._mode = M_CODE
                self._key_done(_decode_key(bytes(self._buf)))
            else:
                self._buf.append(b)
                self._check_partial(quoted=True)
            return
        if mode == M_KEYU:
            if b in _IDENT or b >= 0x80:
                self._buf.append(b)
                self._check_partial(quoted=False)
                return
            if b != _COLON and b not in _WS and b != _COMMA and b != _RBRACE:
                self._lost()  # the grammar ends an unquoted key with ':', whitespace, or ',' / '}' (shorthand)
                return
            self._mode = M_CODE
            self._key_done(bytes(self._buf).decode("utf-8", "replace"))
            if self.violation is not None:
                return
        elif mode == M_SCALAR:
            if b in _SCALAR:
                self._buf.append(b)
                return
            # a value expression goes on: an index in a member chain (`a.b[0].c`), or `new X`
            if b == _LBRACK and not self._hole:
                self._hole = True
                return
            if self._hole and b == _RBRACK:
                self._hole = False
                return
            if b in _WS and self._buf == b"new":
                return
            self._mode = M_CODE
            self._hole = False
            self._value_done()
        elif mode == M_URLEXPR:
            if b in _IDENT or b == _DOT:
                self._buf.append(b)
                return
            self._mode = M_CODE
            self._frames[-1].state = C_URLEND
            value = self._values.get(bytes(self._buf).decode("utf-8", "replace"))  # a known name: its text
            if self._cat is not None and value is None and not self._cat:
                self._cat += b"\0"  # at the URL's start a name of unknown value holds the server
            elif self._cat is not None:
                self._cat += value.encode("utf-8", "surrogatepass") if value is not None else bytes((_HOLE,))
            self._buf.clear()
        elif mode == M_METHOD:
            if b in _IDENT:
                self._buf.append(b)
                return
            self._method = bytes(self._buf).decode("ascii", "replace").lower()
            self._buf.clear()
            self._mode = M_CODE
        self._code_byte(b)

    def _string_byte(self, b: int) -> None:
        url = self._url
        if self._esc:
            self._esc = False
            if url is not None:  # the URL as JavaScript reads it: \' is ' (azure's /indexers('{x}'))
                if b not in _PLAIN_ESCAPES:
                    url.append(_BSL)
                _url_text(url, b)
            return
        if self._hole:
            if b == _RBRACE:
                self._hole = False
                if url is not None and self._values:  # a name whose value the starter fixes: its text
                    value = self._values.get(bytes(self._buf).strip().decode("utf-8", "replace"))
                    if value is not None:
                        url[-1:] = value.encode("utf-8", "surrogatepass")
                    self._buf.clear()
            elif url is not None and self._values:
                self._buf.append(b)
            return
        if self._q == _BQ and self._dollar and b == _LBRACE:
            self._dollar = False
            self._hole = True
            if url is not None:  # "1" stands for the identifier's value when matching the URL;
                # at its start the hole holds the server (`${BASE}/gifs`): \0 marks it
                url[-1:] = b"\0" if len(url) == 1 else bytes((_HOLE,))
                self._buf.clear()
            return
        self._dollar = b == _DOLLAR
        if b == _BSL:
            self._esc = True
            return
        if b == self._q:
            if self._qenum is not None:
                assert url is not None
                self._query_value(url, end=True)
                self._qenum = None
                if self.violation is not None:
                    return
            if self._reads_query(url):
                self._query_key(url, end=True)
                if self.violation is not None:
                    return
            self._mode = M_CODE
            self._value_done()
            return
        if url is not None:
            if (b == _EQ or b == _AMP) and self._reads_query(url):
                if self._qenum is not None and b == _AMP:
                    self._query_value(url, end=True)
                self._qenum = None
                self._query_key(url, end=b == _AMP)
                if self.violation is not None:
                    return
            _url_text(url, b)
            if self._qenum is not None:
                self._query_value(url, end=False)
            elif b != _QMARK and self._in_query_key():
                self._query_key_prefix(url)
            if self._cap == "method" and self._method_keys_pending():
                self._method_prefix(bytes(url).decode("utf-8", "replace").lower())

    def _reads_query(self, url: bytearray | None) -> bool:
        """Is ``url`` a URL literal (the call's, or the request form's) into its query, whose keys
        are judged as they are written (``allow_url_query``)?"""
        return (
            url is not None
            and _QMARK in url
            and self.grammar.options.allow_url_query
            and (self._cap is None or self._cap == "url")
        )

    def _in_query_key(self) -> bool:
        """Is the URL literal being read inside a key of its query (after ``?`` or ``&``, before
        ``=``), with the operation (or, URL first, the path) known enough to judge it?"""
        url = self._url
        if not self._reads_query(url) or (self._method is None and self._cap != "url"):
            return False
        assert url is not None
        return _EQ not in _last_pair(url)

    def _query_key_prefix(self, url: bytearray) -> None:
        """A query key written so far must start a key some operation of the URL takes (else no
        ``=``, ``&`` or closing quote could follow it: the grammar's keys are the spec's)."""
        text = _last_pair(url).decode("utf-8", "replace")
        if not text.strip(" ") or self._unfinished(text) or chr(_HOLE) in text or "\0" in text:
            return  # (spaces alone: the ones before the closing quote, which the grammar allows)
        prefix = unquote_plus(text)
        raw = bytes(url[: url.find(b"?")]).decode("utf-8", "replace")
        if raw.startswith("\0"):
            return
        methods = (self._method,) if self._method is not None else AXIOS_METHODS
        fixed = fixed_query_names(self._spec)
        if any(n.startswith(prefix) for n in fixed):
            return  # judged at the URL's end
        matched = None
        for _, args in self._path_args(raw, methods):
            params = args.config.props["params"]
            if params.extra is not NO or any(n.startswith(prefix) for n in params.props):
                return
            if any(p.startswith(prefix) or prefix.startswith(p) for p, _ in params.patterns):
                return
            matched = matched or args
        if matched is not None:
            self._fail(f"query parameter '{prefix}...' in the URL is no argument of {matched.label}")

    def _unfinished(self, text: str) -> bool:
        """Does a URL query key or value written so far end where its next bytes decide what it
        is: a half-written escape (``%2``), or in backticks a ``$`` that may start ``${``?"""
        return re.search(r"%[0-9A-Fa-f]?$", text) is not None or (self._q == _BQ and text.endswith("$"))

    def _path_args(self, raw: str, methods: Iterable[str]) -> list[tuple[str, OpArgs]]:
        """Of ``methods``, those for which ``raw`` (a URL up to its query, holes marked) names an
        operation, with that operation's arguments (query keys allowed in the URL)."""
        out = []
        real = self.grammar.options.real_world
        for m in methods:
            match = next(
                (hit for u in _hole_readings(raw, real) if (hit := self._spec.match(m, u, real_world=real)) is not None),
                None,
            )
            if match is not None:
                out.append((m, self._model.op_args(match.operation, self.grammar.options.credentials, True)))
        return out

    def _method_keys_pending(self) -> bool:
        """Does the request form's method follow a URL with a query (URL first: the method's
        operation must take its keys)?"""
        return self._req_url is not None and "?" in self._req_url and self.grammar.options.allow_url_query

    def _query_methods(self, url: str, methods: Iterable[str]) -> tuple[list[str], str | None]:
        """Of ``methods``, those whose operation for ``url``'s path takes every key its query has
        so far (a name a path key fixes, S3's ``?cors``, is left to the URL's end), and the refusal
        of the first that does not ("" when no method names an operation: judged at the end)."""
        raw, _, query = url.partition("?")
        if raw.startswith("\0"):
            return [], None
        ok: list[str] = []
        refusal: str | None = None
        for m, args in self._path_args(raw, methods):
            bad, _ = _query_keys("?" + query, args, url_plan(self._spec, args.operation).in_url)
            if bad is None or bad in fixed_query_names(self._spec):
                ok.append(m)
            elif refusal is None:
                refusal = f"query parameter '{bad}' in the URL is not an argument of {args.label}"
        return ok, refusal

    def _method_prefix(self, prefix: str) -> None:
        """The request form's method literal so far (URL first): it must start a method whose
        operation takes the URL's query keys."""
        assert self._req_url is not None
        ok, refusal = self._query_methods(self._req_url, AXIOS_METHODS)
        if refusal is not None and not any(m.startswith(prefix) for m in ok):
            self._fail(refusal.replace("query parameter", f"method '{prefix}...': query parameter", 1))

    def _query_key(self, url: bytearray, end: bool) -> None:
        """A key of the URL's query was just written (``=`` follows; ``end``: ``&`` or the closing
        quote follows, the key then the whole pair unless it had a ``=``): it must be one of the
        operation's query parameters (the grammar allows any key of the spec: one set for every
        path). The operation is the one the URL's path names; where that is not known yet (a
        path key's fixed query, a base of unknown value) the key is judged at the URL's end."""
        pair = _last_pair(url)
        if end and b"=" in pair:
            return  # judged at its '='
        if not pair.strip(b" "):
            return  # the spaces before the closing quote, which the URL parser drops
        key = unquote_plus(pair.decode("utf-8", "replace"))
        if not key or chr(_HOLE) in key or "\0" in key:
            return
        # the request form's URL written before its method: some method of the path must take the keys
        methods = (self._method,) if self._method is not None else AXIOS_METHODS if self._cap == "url" else ()
        ok, refusal = self._query_methods(bytes(url).decode("utf-8", "replace"), methods)
        if not ok and refusal is not None:
            self._fail(refusal)
            return
        if key in query_values_held(self._spec, self._model):
            enum = self._enum_of(bytes(url).decode("utf-8", "replace"), ok, key)
            if end and enum is not None:  # a bare key: axios sends `true`
                self._fail(f"query parameter '{key}' in the URL needs a value (one of {', '.join(enum[:8])})")
            elif not end:
                self._qenum = enum

    def _enum_of(self, url: str, methods: list[str], key: str) -> tuple[str, ...] | None:
        """The values ``key``'s parameter allows in the operations of ``methods`` for ``url``'s
        path (their union; None where any of them leaves the value free)."""
        found = self._path_args(url.partition("?")[0], methods)
        if len(found) < len(methods):
            return None
        out: dict[str, None] = {}
        for _, args in found:
            desc = args.config.props["params"].child(key)
            scal = self._model.scalars(desc) if isinstance(desc, Mapping) else None
            enums = scal[0] if scal is not None else None
            vals = [v if isinstance(v, str) else json.dumps(v) for v in enums or () if v is not None]
            if not vals:
                return None
            out.update(dict.fromkeys(vals))
        return tuple(out) or None

    def _query_value(self, url: bytearray, end: bool) -> None:
        """The value of a query key held to its operation's enum (:attr:`_qenum`; :func:`~callbench.constrain.webapi_grammar.query_values_held`): written so far,
        a prefix of one of its values (decoded; an escape half written is judged when complete,
        a hole leaves it unseen); at its end (``&``, the closing quote), one of them."""
        assert self._qenum is not None
        text = bytes(url[url.rfind(b"=") + 1 :]).decode("utf-8", "replace")
        if chr(_HOLE) in text or "\0" in text:
            self._qenum = None
            return
        if not end and self._unfinished(text):
            return
        if end and not text:
            return  # `key=' + name`: the grammar lets an empty value end only where + follows
        value = unquote_plus(text)
        if end and value not in self._qenum or not any(v.startswith(value) for v in self._qenum):
            shown = ", ".join(self._qenum[:8])
            self._fail(f"query value {value!r} in the URL is not one of the allowed values [{shown}]")

    def _code_byte(self, b: int) -> None:
        top = self._frames[-1]
        if b in _WS:
            return
        kind = top.kind
        if kind == "obj":
            st = top.state
            if st == O_KEY:
                if b == _RBRACE:
                    self._close_obj(top)
                elif b in (_SQ, _DQ):
                    self._mode, self._q, self._esc = M_KEYQ, b, False
                    self._buf.clear()
                    self._check_partial(quoted=True)
                elif b in _IDENT or b >= 0x80:
                    self._mode = M_KEYU
                    self._buf.clear()
                    self._buf.append(b)
                    self._check_partial(quoted=False)
                else:
                    self._lost()
            elif st == O_COLON:
                if b == _COLON:
                    top.state = O_VALUE
                elif b == _COMMA or b == _RBRACE:  # a shorthand property `{ limit }`: its own value
                    path = f"{top.path}.{top.key}"
                    if path in _CRED_PLACES and self._args is not None and self._args.cred_any:
                        atoms, given, opaque = self._cred  # `{ headers }`: an identifier, unseen
                        self._cred = (atoms, given, opaque | {_CRED_PLACES[path]})
                    top.state = O_AFTER
                    self._code_byte(b)
                else:
                    self._lost()
            elif st == O_VALUE:
                self._start_value(b, top.child, f"{top.path}.{top.key}")
            else:  # O_AFTER
                if b == _COMMA:
                    top.state = O_KEY
                elif b == _RBRACE:
                    self._close_obj(top)
                elif b == _PLUS and self._after_request_url(top):
                    self._fail(
                        "axios.request's url is one string or template literal: a URL built with + "
                        "names its operation only once complete (write `...${name}...`)"
                    )
                elif b == _PLUS:  # a concatenation goes on (a credential: 'Bearer ' + token)
                    top.state = O_VALUE
                elif not self._expr_goes_on(b, top.child, f"{top.path}.{top.key}"):
                    self._lost()
        elif kind == "arr":
            if top.state == A_ITEM:
                if b == _RBRACK:
                    self._pop()
                else:
                    self._start_value(b, top.item, top.path + "[]")
            else:
                if b == _COMMA:
                    top.state = A_ITEM
                elif b == _RBRACK:
                    self._pop()
                elif b == _PLUS:
                    top.state = A_ITEM
                elif not self._expr_goes_on(b, top.item, top.path + "[]"):
                    self._lost()
        elif kind == "paren":  # the arguments of a call inside a value (`new URLSearchParams({...})`)
            if top.state == A_ITEM and b == _RPAR:
                self._pop()
            elif top.state == A_ITEM:
                self._start_value(b, top.item, top.path)
            elif b == _COMMA:
                top.state, top.item = A_ITEM, None
            elif b == _RPAR:
                self._pop()
            elif b == _PLUS:
                top.state = A_ITEM
            elif not self._expr_goes_on(b, top.item, top.path):
                self._lost()
        else:
            self._call_byte(top, b)

    def _expr_goes_on(self, b: int, desc: Any, path: str) -> bool:
        """After a value: does ``b`` continue it as an expression? ``(`` calls it (its first
        argument is read with the value's descriptor: ``new URLSearchParams({...})`` and
        ``qs.stringify({...})`` carry a form body's object), ``.`` reads a member of the result
        (``.toString()``). The grammar admits these only where it says so."""
        if b == _LPAR:
            if path in ("data", "config.data") and (self._buf == b"newURLSearchParams" or self._buf.endswith(b".stringify")):
                self._wrapped = True
                self._form_content_type()
            self._frames.append(_Frame("paren", A_ITEM, path, item=desc))
            return True
        if b == ord("."):
            self._mode, self._hole = M_SCALAR, False
            self._buf.clear()
            return True
        return False

    def _arg_desc(self, argi: int) -> tuple[Any, str] | None:
        """The descriptor and path of the call's positional argument ``argi`` (1 = after the URL)."""
        args = self._args
        if args is None:
            return None
        has_data = args.operation.method in BODY_METHODS
        if has_data and argi == 1:
            return args.data, "data"
        if argi == (2 if has_data else 1):
            return args.config, "config"
        return None

    def _call_byte(self, top: _Frame, b: int) -> None:
        st = top.state
        if st == C_METHOD:
            if b == _LPAR:
                top.state = C_URL
            else:
                self._lost()
        elif st == C_URL:
            if b == _LBRACE and self._method == "request" and self.grammar.options.real_world:
                # axios.request({ method, url, ...config }): the config is the only argument
                self._method = None
                self._req = R_HEAD
                top.state, top.argi = C_AFTER, 2
                self._frames.append(_Frame("obj", O_KEY, "config", shape=_REQUEST_HEAD))
            elif b in _QUOTES:
                self._mode, self._q, self._esc, self._hole, self._dollar = M_STR, b, False, False, False
                self._url = bytearray()
            elif b in _IDENT and (self._values or self.grammar.options.real_world):  # a name: its value or a server
                self._cat = bytearray()
                self._mode = M_URLEXPR
                self._buf.clear()
                self._buf.append(b)
            else:
                self._lost()  # e.g. a URL built from an identifier: nothing to check against
        elif st == C_URLEND:  # a URL piece was read: `+` goes on, `,` or `)` ends the URL
            if b == _PLUS:
                top.state = C_URLPLUS
                return
            self._url, self._cat = self._cat, None
            self._resolve_url()
            top.state = C_AFTER
            if self._mode != M_LOST:
                self._call_byte(top, b)
        elif st == C_URLPLUS:
            cat = self._cat if self._cat is not None else bytearray()
            if b in _QUOTES:  # the URL goes on in another string
                self._mode, self._q, self._esc, self._hole, self._dollar = M_STR, b, False, False, False
                self._url, self._cat = cat, None
                top.state = C_URL
            elif b in _IDENT:  # an expression: a hole (the grammar allows one where a hole may be)
                self._cat = cat
                self._mode = M_URLEXPR
                self._buf.clear()
                self._buf.append(b)
            else:
                self._lost()
        elif st == C_AFTER:
            if b == _COMMA:
                top.argi += 1
                top.state = C_ARG
            elif b == _RPAR:
                self._end_call(top)
            elif b == _PLUS:  # a concatenation goes on
                top.state = C_ARG
            else:
                at = self._arg_desc(top.argi)
                if at is None or not self._expr_goes_on(b, *at):
                    self._lost()
        else:  # C_ARG
            if b == _RPAR:
                self._end_call(top)
                return
            args = self._args
            if args is None:
                self._lost()
                return
            has_data = args.operation.method in BODY_METHODS
            if has_data and top.argi == 1:
                desc, path = args.data, "data"
            elif top.argi == (2 if has_data else 1):
                desc, path = args.config, "config"
            else:
                self._lost()
                return
            self._start_value(b, desc, path)

    def _end_call(self, top: _Frame) -> None:
        """The call's ``)``. Under ``allow_url_query`` the grammar cannot tell whether required
        query parameters came in the URL, so a config it left optional may be needed here."""
        args = self._args
        if args is not None and self.grammar.options.allow_url_query and args.config_mandatory:
            at = 2 if args.operation.method in BODY_METHODS else 1
            given = top.argi >= at if top.state == C_AFTER else top.argi > at  # C_ARG: after a trailing ','
            if not given:
                self._fail(f"{args.label} needs a config with {config_needs(args)}")
                return
        self._mode = M_DONE

    def _start_value(self, b: int, desc: Any, path: str) -> None:
        if self._cap == "ct" and b not in _QUOTES:  # a Content-Type that is no literal: unseen
            self._cap, self._ct = None, "opaque"
        if b != _LBRACE and path in _CRED_PLACES and self._args is not None and self._args.cred_any:
            atoms, given, opaque = self._cred
            self._cred = (atoms, given, opaque | {_CRED_PLACES[path]})  # an identifier: unseen
        if b == _LBRACE:
            self._frames.append(_Frame("obj", O_KEY, path, shape=self._shape_of(desc)))
        elif b == _LBRACK:
            item = self._model.items(desc) if isinstance(desc, Mapping) else None
            self._frames.append(_Frame("arr", A_ITEM, path, item=item))
        elif b in _QUOTES:
            self._mode, self._q, self._esc, self._hole, self._dollar = M_STR, b, False, False, False
            if self._cap is not None:
                self._url = bytearray()  # the request form's method or URL literal, read as a URL
        elif self._cap is not None:
            self._lost()  # a method or URL that is not a literal: nothing to check against
        elif b in _SCALAR:
            self._mode, self._hole = M_SCALAR, False
            self._buf.clear()
            self._buf.append(b)
        else:
            self._lost()

    def _shape_of(self, desc: Any) -> ObjShape:
        if isinstance(desc, ObjShape):
            return desc
        if isinstance(desc, Mapping):
            return self._model.shape(desc)
        return _FREE

    def _value_done(self) -> None:
        top = self._frames[-1]
        if top.kind == "obj":
            top.state = O_AFTER
            if self._cap is not None:
                self._request_value()
        elif top.kind in ("arr", "paren"):
            top.state = A_AFTER
        else:
            if top.state == C_URL and self._url is not None and self.grammar.options.real_world:
                self._cat, self._url = self._url, None  # `+` may go on (`'...?key=' + key`)
                top.state = C_URLEND
                return
            if top.state == C_URL:
                self._resolve_url()
            top.state = C_AFTER

    def _pop(self) -> None:
        frames = self._frames
        frames.pop()
        if len(frames) <= self._shared:  # a probe's new top is still its parent's frame: copy it
            frames[-1] = frames[-1].copy()
            self._shared = len(frames) - 1
        self._value_done()

    def _close_obj(self, top: _Frame) -> None:
        if self._req == R_HEAD and len(self._frames) == 2:
            self._lost()  # the grammar writes both the method and the URL before any '}'
            return
        shape = top.shape
        assert shape is not None
        missing = shape.required - top.used
        if missing:
            name = sorted(missing)[0]
            if shape.ci:
                name = next((k for k in shape.props if k.lower() == name), name)
            args = self._args
            place = _CRED_PLACES.get(top.path)
            if (
                args is not None
                and place
                and any(c.atom == (place, shape.norm(name)) for alt in args.credentials for c in alt)
            ):
                what = f"credential '{name}' ({_shown_value(shape.props.get(name))})"
            else:
                what = f"argument '{name}'"
            self._fail(f"required {what} missing before '}}' in {self._label(top.path)}")
            return
        args = self._args
        if args is not None and args.cred_any and (top.path == "config" or top.path in _CRED_PLACES):
            problem = self._cred_problem(args, _CRED_PLACES.get(top.path))
            if problem:
                self._fail(f"{problem} before '}}' in {self._label(top.path)}")
                return
        self._pop()

    def _cred_problem(self, args: OpArgs, closing: str | None) -> str | None:
        """Closing ``config`` (``closing`` None): some alternative must be complete. Closing its
        ``headers``/``params``: some alternative must still be completable, i.e. each of its atoms
        given, or in a place given as an identifier, or in a place not written yet."""
        atoms, given, opaque = self._cred
        for alt in args.cred_any:
            if all(
                a in atoms
                or a[0] in opaque
                or (closing is not None and a[0] != closing and a[0] not in given)
                for a in alt
            ):
                return None
        need = " or ".join(" + ".join(f"{loc}.{n}" for loc, n in sorted(alt)) for alt in args.cred_any)
        if closing is None:
            return f"credential missing (needs {need})"
        return f"no credential left possible (needs {need})"

    def _request_value(self) -> None:
        """The request form's ``method`` or ``url`` literal was read: the operation is known once
        both are (at the closing quote of the second)."""
        text = bytes(self._url or b"").decode("utf-8", "replace")
        cap, self._cap, self._url = self._cap, None, None
        if cap == "ct":
            bare = text.split(";", 1)[0].strip().lower()
            # a template's ${...} hides what it holds; in '...'/"..." it is two characters
            if any(c in text for c in "\0\x01") or (self._q == _BQ and "${" in text):
                self._ct = "opaque"
            else:
                self._ct = "form" if bare == "application/x-www-form-urlencoded" else "other"
            self._form_content_type()
            return
        if cap == "method":
            self._method = text.lower()
        else:
            self._req_url = text
        if self._method is not None and self._req_url is not None:
            self._request_resolve(self._frames[-1], self._method)

    def _form_content_type(self) -> None:
        """A form body (``new URLSearchParams(...)``, ``qs.stringify(...)``) travels as a form
        only under a form ``Content-Type`` (or axios' own): any other literal sends text the
        operation cannot read."""
        if self._wrapped and self._ct == "other":
            self._fail(
                "a form body (new URLSearchParams(...), qs.stringify(...)) needs a form Content-Type "
                "(application/x-www-form-urlencoded) or none"
            )

    def _after_request_url(self, top: _Frame) -> bool:
        """Is ``top`` axios.request's object right after its URL literal?"""
        return (
            self._req != R_NONE
            and top.kind == "obj"
            and top.state == O_AFTER
            and top.key == "url"
            and len(self._frames) == 2
            and self._mode == M_CODE
        )

    def _request_resolve(self, top: _Frame, method: str) -> None:
        if self._req_url is None:
            self._lost()
            return
        self._method = method
        self._resolve_url(self._req_url)
        if self._args is None:
            # No operation: the first piece of a URL built with `+` (refused at the `+`, see
            # _code_byte), or text the grammar does not admit (lost at the next key or `}`).
            self._mode = M_CODE
            return
        self._req = R_DONE
        top.shape = self._model.request_tracked(self._args)

    def _resolve_url(self, text: str | None = None) -> None:
        url = bytes(self._url or b"").decode("utf-8", "replace") if text is None else text
        url = url.rstrip(" ")  # spaces before the closing quote: the URL parser drops them
        self._url = None
        raw = url
        method = self._method or ""
        real = self.grammar.options.real_world  # hosts of the server's registrable domain, a trailing /
        if raw.startswith("\0"):  # the server as a variable: whichever of the spec's servers
            rest = raw[1:].lstrip(chr(_HOLE))  # `${API}${TOKEN}/...`: one
            readings = _hole_readings(rest, real)
            servers = _server_prefixes(self._spec.servers)
            # each reading of the path (a hole as one segment, then as two) after every server
            by_server = [[srv + r for srv in servers] for r in readings]
            first = [next((u for u in urls if self._spec.match(method, u) is not None), r) for urls, r in zip(by_server, readings, strict=True)]
        else:
            first = _hole_readings(raw, real)
        match = None
        for url in first:
            match = self._spec.match(method, url, real_world=real)
            if match is None:  # a path key fixing a query name the params will carry (#ResourceArn)
                match = self._spec.match(method, url, names_later=True, real_world=real)
            if match is not None:
                break
        if match is None:
            self._lost()
            return
        opt = self.grammar.options
        args = self._model.op_args(match.operation, opt.credentials, opt.allow_url_query, transport=opt.real_world)
        if opt.allow_url_query:  # required query parameters the URL carries are given
            names = set(request_query(url))
            bad, opaque = _query_keys(raw, args, url_plan(self._spec, match.operation).in_url)
            if bad is not None:
                self._fail(f"query parameter '{bad}' in the URL is not an argument of {args.label}")
                return
            if opaque:  # `?${params}`: pairs whose keys cannot be seen, as a params identifier
                names |= args.config.props["params"].required
                atoms, given, hidden = self._cred
                self._cred = (atoms, given, hidden | {"params"})
            args = self._model.given_in_url(args, frozenset(names))
            if opaque and args.cred_any:  # the hidden pairs may hold the credential
                args = replace(args, cred_any=(), config_mandatory=bool(args.config.required))
        self._args = args
        if self.grammar.staged:  # the head grammar has no keys: the operation's stage has them
            key_bytes = self.grammar.tail_key_bytes(match.operation)
            self._keyset = frozenset(_STRUCT | key_bytes)
            self._key_firsts = _key_firsts(key_bytes)

    def _key_done(self, key: str) -> None:
        top = self._frames[-1]
        if top.path == "config.headers" and key.lower() == "content-type":
            self._cap = "ct"  # its literal is read (a form body needs a form type)
        if self._req == R_HEAD and len(self._frames) == 2:
            if key not in ("method", "url"):
                self._lost()  # the grammar starts the object with the method and the URL
                return
            self._cap = key
        shape = top.shape
        assert shape is not None
        norm = shape.norm(key)
        if norm in top.used:
            self._fail(f"key '{key}' given twice in {self._label(top.path)}")
            return
        top.used = top.used | {norm}
        if self._args is not None and self._args.cred_any:
            self._cred_key(top.path, norm)
        child = shape.child(key)
        top.child = None if child is NO else child
        top.key = key
        top.state = O_COLON

    def _cred_key(self, path: str, norm: str) -> None:
        """Record a key that matters for the credential choice (the grammar fixes its value)."""
        atoms, given, opaque = self._cred
        if path == "config" and norm in ("headers", "params"):
            self._cred = (atoms, given | {norm}, opaque)
        elif path == "config" and norm == "auth":  # axios' Basic credentials (a config atom)
            self._cred = (atoms | {("config", "auth")}, given, opaque)
        elif path in _CRED_PLACES:
            self._cred = (atoms | {(_CRED_PLACES[path], norm)}, given, opaque)

    def _check_partial(self, quoted: bool) -> None:
        """Fail if the partial key can only become keys already given."""
        top = self._frames[-1]
        shape = top.shape
        if shape is None or not shape.closed:
            return  # free keys: any partial key can still become a new one
        pre = _prefixes(shape)
        partial = bytes(self._buf)
        if shape.ci:
            partial = partial.lower()
        cands = (pre.quoted if quoted else pre.bare).get(partial)
        if cands is None:
            return  # not a declared key at all: the grammar rules on that
        if cands <= top.used:
            shown = partial.decode("utf-8", "replace")
            given = ", ".join(sorted(cands))
            self._fail(
                f"key '{shown}…' can only become keys already given ({given}) in {self._label(top.path)}"
            )


def _hole_readings(url: str, real_world: bool) -> list[str]:
    """The ways to read a URL whose holes (expressions: ``\x01``) stand for path segments: each
    hole one segment (``1``), then, in the real-world profile, each hole of the path in turn as
    two (a name holding ``owner/repo``: ``/repos/${GITHUB_REPO}/issues``; the grammar offers one
    such hole per URL, only where two path parameters are whole segments side by side). Holes of
    the query are values (``1``)."""
    hole = chr(_HOLE)
    out = [url.replace(hole, "1")]
    path, sep, query = url.partition("?")
    n = path.count(hole)
    if real_world and n:
        parts = path.split(hole)
        rest = sep + query.replace(hole, "1")
        for k in range(n):
            out.append("".join(p + ("" if i == n else "1/1" if i == k else "1") for i, p in enumerate(parts)) + rest)
    return out


def _last_pair(url: bytearray) -> bytes:
    """The URL's query pair being written: what follows its last ``&``, or its ``?``."""
    return bytes(url[max(url.rfind(b"&"), url.find(b"?")) + 1 :])


def _url_text(url: bytearray, b: int) -> None:
    """Append a byte the URL literal holds as text. ``\0`` and ``\x01`` mark a server variable
    and a hole in ``url``: a literal one is written as axios sends it, percent-encoded."""
    if b > 1:
        url.append(b)
    else:
        url += b"%%%02X" % b


def _server_prefixes(servers: tuple[str, ...]) -> list[str]:
    """What a leading ``${BASE}`` may hold (see ``url_lexemes.server_words``): each server, then
    each with fewer of its path's segments, down to its scheme and host (the full server first)."""
    out: list[str] = []
    for srv in servers:
        srv = srv.rstrip("/")
        start = srv.find("/", srv.find("//") + 2) if "//" in srv else 0
        if start < 0:
            out.append(srv)
            continue
        segs = srv[start:].split("/")[1:]
        out += [srv[:start] + "".join("/" + x for x in segs[:i]) for i in range(len(segs), -1, -1)]
    return list(dict.fromkeys(out))


def _query_keys(raw: str, args: OpArgs, fixed: frozenset[str]) -> tuple[str | None, bool]:
    """The URL's query keys against ``args``' params (``allow_url_query``): the first key that is
    neither a declared parameter (nor a member of a deepObject one) nor a path key's fixed name,
    and whether a pair is a hole (``?${params}``: its keys cannot be seen)."""
    query = raw.split("#", 1)[0].partition("?")[2]
    params = args.config.props["params"]
    opaque = False
    for pair in query.split("&"):
        key = unquote_plus(pair.partition("=")[0])
        if not key:
            continue
        if chr(_HOLE) in key:
            opaque = True
        elif key not in fixed and params.child(key) is NO:
            return key, opaque
    return None, opaque


def make_key_tracker(grammar: WebApiGrammar, spec: ApiSpec) -> KeyTracker:
    """A fresh tracker for one generation under ``grammar`` (a :class:`TokenFilter`)."""
    if grammar.spec is not spec:
        raise ValueError("the grammar was built for another spec")
    return KeyTracker(grammar, spec)
