"""An llguidance (Lark dialect) grammar for a nested tool-call answer, with reference checking.

The model answers with a JSON list of calls, the format of NESTFUL's published prompts::

    [{"name": "divide", "label": "$var_1", "arguments": {"arg_0": 20, "arg_1": 100}},
     {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$", "arg_1": 3}}]

What the grammar enforces (a fixed context-free language):

* every call object has exactly the keys ``name``, ``label`` and ``arguments`` in any of the six
  orders, JSON whitespace between tokens, bounded: at most ``space_max`` spaces/tabs, or that many,
  one line break and at most ``indent_max`` spaces/tabs of indentation (as the web API grammar:
  enough for pretty-printed JSON, too little to pad an answer with whitespace);
* ``name`` is a catalog tool; ``arguments`` holds only that tool's parameters (one alternative per
  tool, so the argument types follow the tool even when ``arguments`` comes before ``name``);
* each argument value is a JSON literal of the parameter's type (:func:`param_kinds` maps the
  catalog's loose type names) or a reference string ``"$<label>.<key>$"`` whose key is an output
  key of *some* catalog tool; a string-typed (or untyped) parameter also takes plain strings, but
  never one shaped like a reference (``"$<label>.<anything>$"``), so a reference cannot hide as a
  plain string;
* labels follow ``label_style`` (``"$var_{i}"`` gives ``$var_1``, ``$var_2``, ...; ``"var{i}"`` is
  NESTFUL v1's spelling), ``i`` any positive integer without leading zeros.

What the label tracker (:mod:`callbench.constrain.label_tracker`) adds, since it depends on what
was written earlier in the same answer: labels are unique; a reference names a label defined by an
*earlier* call and a key in that call's tool's ``output_parameters``; argument keys are unique per
call and the tool's required parameters are present before ``arguments`` closes.

Design choice: labels are free (any number, any order) and their uniqueness is the tracker's job,
rather than forcing ``$var_1, $var_2, ...`` positionally in the grammar. Forcing the numbering would
make uniqueness structural but needs one copy of the call rules per position (the grammar grows
with ``max_calls`` times the catalog), rejects gold answers that skip or reorder numbers, and the
tracker has to follow the labels anyway to check references. A free label costs the tracker only
one check, at the label's closing quote (any unfinished label can still become a fresh one), so the
engine consults it for very few tokens.

A reference is recognised only as a whole argument value; strings nested inside list or object
values are plain JSON strings. Names, keys and references are matched on their raw bytes: a JSON
escape spelling of a name or key (``"\\u0061rg_0"``) is not accepted, and a reference written with
escapes is a plain string. Output keys that contain ``"``, ``\\``, ``$`` or control characters
cannot be referenced.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from callbench.constrain.lark_text import literal_regex as _rx
from callbench.constrain.webapi_grammar import whitespace_terminal
from callbench.errors import CallbenchError
from callbench.tools import ToolSpec

__all__ = [
    "KINDS",
    "NestedGrammar",
    "NestedGrammarError",
    "build_nested_grammar",
    "param_kinds",
]

#: The value kinds a parameter can take; "any" means any JSON value.
KINDS = ("int", "num", "str", "bool", "list", "dict", "any")

_TYPE_WORDS = {
    "int": "int",
    "integer": "int",
    "float": "num",
    "number": "num",
    "double": "num",
    "str": "str",
    "string": "str",
    "bool": "bool",
    "boolean": "bool",
    "list": "list",
    "array": "list",
    "dict": "dict",
    "object": "dict",
}


def param_kinds(spec: Any) -> frozenset[str]:
    """The value kinds of one parameter spec (``{"type": ...}``); unknown or missing -> ``{"any"}``.

    Loose catalog types: ``"int or float"`` is a union; ``"list of float"`` is a list (its items
    are free); type names are case-insensitive; anything else (``"Enum"``, ``"Date (yyyy-mm-dd)"``,
    none) accepts any JSON value.
    """
    t = spec.get("type") if isinstance(spec, dict) else None
    if isinstance(t, list):
        words = [str(x) for x in t]
    elif isinstance(t, str):
        words = re.split(r"\s+or\s+|\s*[|,]\s*", t.strip().lower())
    else:
        return frozenset({"any"})
    out: set[str] = set()
    for w in words:
        w = w.strip().lower()
        head = w.split(" of ")[0].split("[")[0].strip()
        kind = _TYPE_WORDS.get(head)
        if kind is None:
            return frozenset({"any"})
        out.add(kind)
    if "int" in out and "num" in out:
        out.discard("int")
    return frozenset(out) if out else frozenset({"any"})


class NestedGrammarError(CallbenchError, ValueError):
    """The grammar cannot be built (empty catalog, bad label style, duplicate tool names)."""


@dataclass(frozen=True)
class ToolInfo:
    """What grammar and tracker need of one tool (names and keys as raw JSON string bytes)."""

    name: str
    params: tuple[str, ...]
    kinds: dict[str, frozenset[str]]
    required: frozenset[str]
    outputs: frozenset[str]  # referencable output keys


@dataclass(frozen=True, eq=False)
class NestedGrammar:
    """A built grammar plus what :func:`make_label_tracker` needs.

    ``lark``: the grammar text. ``tools``: name -> :class:`ToolInfo` (catalog order).
    ``label_rx``: regex of a label (str, no anchors); ``ref_label_rx``: the label as written inside
    a reference (without its leading ``$``). ``ref_shape``: bytes regex of a string's *content* that
    counts as a reference (group 1 the label as in a reference, group 2 the key).
    """

    lark: str
    tools: dict[str, ToolInfo]
    label_style: str
    label_rx: str
    ref_label_rx: str
    ref_shape: re.Pattern[bytes]
    max_calls: int | None
    allow_prose_prefix: bool
    space_max: int
    indent_max: int
    name_bytes: frozenset[int] = field(default=frozenset(), repr=False)
    key_bytes: frozenset[int] = field(default=frozenset(), repr=False)
    ref_bytes: frozenset[int] = field(default=frozenset(), repr=False)

    def ref_label(self, label: str) -> str:
        """How a label is written inside a reference: ``$var_1`` -> ``var_1`` (``var1`` stays)."""
        return label[1:] if label.startswith("$") else label




def _jstr(text: str) -> str:
    """The JSON string literal of ``text`` as the grammar spells it (raw UTF-8, JSON escapes)."""
    return json.dumps(text, ensure_ascii=False)


_REFABLE = re.compile(r'[^"\\$\x00-\x1f]+\Z')
_CACHE: dict[tuple[Any, ...], NestedGrammar] = {}
_CACHE_LOCK = threading.Lock()


def tool_infos(tools: Iterable[ToolSpec]) -> dict[str, ToolInfo]:
    out: dict[str, ToolInfo] = {}
    for t in tools:
        if t.name in out:  # the v1 glaive catalog lists some tools twice: the first entry wins
            continue
        params = tuple(t.parameters)
        kinds = {p: param_kinds(s) for p, s in t.parameters.items()}
        # a required name that is not a parameter cannot be written: the grammar would dead-end
        required = frozenset(r for r in t.required if r in t.parameters)
        outputs = frozenset(k for k in t.output_parameters if _REFABLE.match(k))
        out[t.name] = ToolInfo(t.name, params, kinds, required, outputs)
    return out


def build_nested_grammar(
    tools: list[ToolSpec],
    *,
    label_style: str = "$var_{i}",
    max_calls: int | None = None,
    allow_prose_prefix: bool = False,
    space_max: int = 4,
    indent_max: int = 32,
) -> NestedGrammar:
    """Build (or fetch from the cache) the grammar of a nested answer over the catalog ``tools``.

    ``max_calls``: most calls in the list (None: unbounded; at least one call always).
    ``allow_prose_prefix``: accept text without ``[`` before the list (a short preamble).
    ``space_max``/``indent_max``: the whitespace bound (see the module docstring).
    """
    if "{i}" not in label_style or label_style.count("{i}") != 1:
        raise NestedGrammarError(f"label_style must hold '{{i}}' once, not {label_style!r}")
    if max_calls is not None and max_calls < 1:
        raise NestedGrammarError("max_calls must be at least 1")
    infos = tool_infos(tools)
    if not infos:
        raise NestedGrammarError("the catalog has no tools")
    key = (
        tuple((i.name, i.params, tuple(sorted(i.kinds.items())), i.required, i.outputs) for i in infos.values()),
        label_style,
        max_calls,
        allow_prose_prefix,
        space_max,
        indent_max,
    )
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None:
        return hit
    g = _build(infos, label_style, max_calls, allow_prose_prefix, (space_max, indent_max))
    with _CACHE_LOCK:
        if len(_CACHE) >= 256:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = g
    return g


def _build(
    infos: dict[str, ToolInfo],
    label_style: str,
    max_calls: int | None,
    prose: bool,
    ws: tuple[int, int],
) -> NestedGrammar:
    pre, post = label_style.split("{i}")
    num = "[1-9][0-9]*"
    label_rx = _rx(pre) + num + _rx(post)
    ref_pre = pre[1:] if pre.startswith("$") else pre
    ref_label_rx = _rx(ref_pre) + num + _rx(post)
    all_outputs = sorted({k for i in infos.values() for k in i.outputs})

    terms: dict[str, str] = {
        "WS": whitespace_terminal(*ws),
        "STR": r'/\x22(?:[^\x22\x5c\x00-\x1f]|\x5c(?:[\x22\x5c\x2fbfnrt]|u[0-9a-fA-F]{4}))*\x22/',
        "REFSHAPE": rf"/\x22\x24{ref_label_rx}\x2e[^\x22\x5c]*\x24\x22/",
        "PSTR": "STR & ~REFSHAPE",
        "INT": r"/-?(?:0|[1-9][0-9]*)/",
        "NUM": r"/-?(?:0|[1-9][0-9]*)(?:\x2e[0-9]+)?(?:[eE][+-]?[0-9]+)?/",
        "BOOL": "/true|false/",
        "NULL": "/null/",
        "LABEL": rf"/\x22{label_rx}\x22/",
        "KNAME": r"/\x22name\x22/",
        "KLABEL": r"/\x22label\x22/",
        "KARGS": r"/\x22arguments\x22/",
    }
    if all_outputs:
        keys = "|".join(_rx(k) for k in all_outputs)
        terms["REF"] = rf"/\x22\x24{ref_label_rx}\x2e(?:{keys})\x24\x22/"
    if prose:
        terms["PROSE"] = r"/[^\x5b]+/"
    ref = " | REF" if all_outputs else ""
    rules: dict[str, str] = {
        "any": "STR | NUM | BOOL | NULL | aobj | aarr",
        "aobj": '"{" WS? (amem WS? ("," WS? amem WS?)*)? "}"',
        "amem": 'STR WS? ":" WS? any',
        "aarr": '"[" WS? (any WS? ("," WS? any WS?)*)? "]"',
    }
    kind_alts = {
        "int": ["INT"],
        "num": ["NUM"],
        "str": ["PSTR"],
        "bool": ["BOOL"],
        "list": ["aarr"],
        "dict": ["aobj"],
        "any": ["PSTR", "NUM", "BOOL", "NULL", "aobj", "aarr"],
    }
    value_rules: dict[frozenset[str], str] = {}

    def value_rule(kinds: frozenset[str]) -> str:
        hit = value_rules.get(kinds)
        if hit is None:
            alts: list[str] = []
            for k in KINDS:
                if k in kinds:
                    alts += [a for a in kind_alts[k] if a not in alts]
            hit = f"v{len(value_rules)}"
            rules[hit] = " | ".join(alts) + ref
            value_rules[kinds] = hit
        return hit

    name_bytes: set[int] = set()
    key_bytes: set[int] = set()
    calls: list[str] = []
    n_term = 0
    for ti, info in enumerate(infos.values()):
        n_term += 1
        name_t = f"N{n_term}"
        terms[name_t] = "/" + _rx(_jstr(info.name)) + "/"
        name_bytes.update(_jstr(info.name).encode())
        members = []
        for p in info.params:
            n_term += 1
            kt = f"K{n_term}"
            terms[kt] = "/" + _rx(_jstr(p)) + "/"
            key_bytes.update(_jstr(p).encode())
            members.append(f'{kt} WS? ":" WS? {value_rule(info.kinds[p])}')
        if members:
            mem = f"m{ti}"
            rules[mem] = " | ".join(members)
            rules[f"args{ti}"] = f'"{{" WS? ({mem} WS? ("," WS? {mem} WS?)*)? "}}"'
        else:
            rules[f"args{ti}"] = '"{" WS? "}"'
        parts = {
            "n": f'KNAME WS? ":" WS? {name_t}',
            "l": 'KLABEL WS? ":" WS? LABEL',
            "a": f'KARGS WS? ":" WS? args{ti}',
        }
        perms = []
        for order in itertools.permutations("nla"):
            perms.append(' WS? "," WS? '.join(parts[x] for x in order))
        rules[f"call{ti}"] = '"{" WS? (' + " | ".join(perms) + ') WS? "}"'
        calls.append(f"call{ti}")
    rules["call"] = " | ".join(calls)
    more = "*" if max_calls is None else f"{{0,{max_calls - 1}}}"
    start = f'start: {"PROSE? " if prose else ""}"[" WS? call (WS? "," WS? call){more} WS? "]" WS?'
    lines = ["%llguidance {}", start]
    lines += [f"{n}: {b}" for n, b in rules.items()]
    lines += [f"{n}: {d}" for n, d in terms.items()]
    ref_bytes: set[int] = set(b'"$.0123456789') | set(ref_pre.encode()) | set(post.encode())
    for k in all_outputs:
        ref_bytes.update(k.encode())
    ref_shape = re.compile(rb"\$(" + ref_label_rx.encode() + rb")\.([^\"\\]*)\$")
    return NestedGrammar(
        lark="\n".join(lines) + "\n",
        tools=infos,
        label_style=label_style,
        label_rx=label_rx,
        ref_label_rx=ref_label_rx,
        ref_shape=ref_shape,
        max_calls=max_calls,
        allow_prose_prefix=prose,
        space_max=ws[0],
        indent_max=ws[1],
        name_bytes=frozenset(name_bytes),
        key_bytes=frozenset(key_bytes),
        ref_bytes=frozenset(ref_bytes),
    )
