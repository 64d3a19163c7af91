"""NESTFUL's per-model output parsers and its label grounding, as its published scorer applies them.

The published scorer (IBM/NESTFUL ``src/scorer.py``, ``src/output_parsers.py``, ``src/utils.py`` at
commit :data:`UPSTREAM_COMMIT`) reads each model's output with the parser of that model's family,
chosen by model name (:data:`PARSER_MODELS`), and then *grounds* the calls: every reference
``$varN.field$`` to a call labelled ``varN`` becomes ``$<that call's name>.field$``, the v1 pseudo-call
``var_result`` is dropped, and every call is reduced to ``{"name", "arguments"}`` (``parameters`` read
as ``arguments``). A call without ``"name"`` makes grounding fail, and with it the whole sample (a
parse error with no calls). ``--scoring compat`` reproduces this per parser; ``lenient`` is
callbench's own reader (:func:`~callbench.tracks.nested.parsing.read_calls`) followed by the same
grounding. docs/nested-scoring.md describes each parser.

No upstream code is used or copied: each parser is written here from what the published one
accepts and refuses. The scorer's later steps work on the calls as JSON text (``json.dumps`` of each
grounded call: the ``dummy`` call is recognised by that text, ``<|endoftext|>`` is removed from it),
so :class:`CompatParse` carries them as that text.

Bounds (model output is hostile, docs/security.md): an output over ``ParseLimits.max_chars`` or a
decoded value nested deeper than ``ParseLimits.max_depth`` is a parse error here, where the
published scorer would read it; the ToolACE parser does not ``eval`` arithmetic it cannot evaluate
safely (:func:`_arithmetic`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from callbench.errors import ConfigError
from callbench.tracks.nested.parsing import DEFAULT_LIMITS, ParseLimits, bracket_depth, parse_python, too_deep
from callbench.tracks.nested.schema import FINAL_CALL

UPSTREAM_COMMIT = "fc2c4123e73500a56185a5fb354f05d1c8b4890c"
LENIENT = "lenient"

# The model names the published scorer dispatches on, each to the parser it uses (a parser is named
# by the model family it was written for). Names are matched exactly first, then ignoring case.
PARSER_MODELS: dict[str, str] = {
    "Granite-20B-FunctionCalling": "granite-20b",
    "llama-3-70b-instruct": "llama-3-70b",
    "llama-3-1-405b-instruct": "llama-3-70b",
    "Mistral-7B-Instruct-v0.3": "mistral",
    "mixtral_8x7b_instruct_v01": "mistral",
    "Mixtral-8x22B-Instruct-v0.1": "mistral",
    "Hermes-2-Pro-Mistral-7B": "hermes",
    "xLAM-1b-fc-r": "xlam",
    "xLAM-7b-fc-r": "xlam",
    "xLAM-8x7b-r": "xlam",
    "xLAM-8x22b-r": "xlam",
    "Hammer2.0-7b": "hammer",
    "ToolAce-8b": "toolace",
    "granite-3.0-8b-instruct": "granite-3",
    "granite-3.0-8b-instruct-FT": "granite-3",
    "granite-3.1-8b-instruct": "granite-3.1",
    "Llama-3.1-8B-Instruct": "llama-3",
    "llama-3-1-70b-instruct": "llama-3",
    "llama-3-1-405b-instruct-fp8": "llama-3",
    "Llama-3.2-11B-Vision-Instruct": "llama-3",
    "Llama-3.2-90B-Vision-Instruct": "llama-3",
    "DeepSeek-V3": "deepseek",
    "DeepSeek-R1": "deepseek",
}
PARSER_NAMES: tuple[str, ...] = (LENIENT, *PARSER_MODELS)

# PROMPTS.json templates whose name is not a model the scorer knows: the parser of the same model.
# gorilla-openfunctions-v2 and c4ai-command-r-v01 have no parser upstream (the scorer refuses those
# names), so their runs keep callbench's lenient reader.
_TEMPLATE_PARSERS = {"LLaMa-3.1": "Llama-3.1-8B-Instruct"}


def resolve_parser(name: str | None) -> str:
    """The canonical parser name for ``name`` (exact, else case-insensitive); ConfigError naming the
    choices when it is none of them."""
    if name is None or name == LENIENT:
        return LENIENT
    if name in PARSER_MODELS:
        return name
    folded = {n.lower(): n for n in PARSER_NAMES}
    found = folded.get(name.strip().lower())
    if found is None:
        raise ConfigError(
            f"--parser {name}: choose lenient or one of NESTFUL's model names: {', '.join(PARSER_MODELS)}"
        )
    return found


def parser_for_template(template_key: str | None) -> str:
    """The parser of a published template's model (``lenient`` where upstream has none)."""
    if template_key is None:
        return LENIENT
    if template_key in PARSER_MODELS:
        return template_key
    return _TEMPLATE_PARSERS.get(template_key, LENIENT)


@dataclass
class CompatParse:
    """What a parser makes of one model output, as the published scorer continues with it.

    ``calls``: the grounded calls as JSON text (upstream's ``pred_func_calls``; a parser that does not
    ground a label-free answer leaves the decoded items there); ``decoded``: the value the parser
    decoded (upstream's ``pred_dict_list``, which its win rate executes); ``parse_error``: the
    parser's own verdict (the scorer adds its own for calls it cannot read); ``reason``: why.
    """

    calls: list[str] = field(default_factory=list)
    decoded: Any = field(default_factory=list)
    parse_error: bool = False
    reason: str | None = None

    def failed(self, exc: BaseException | str) -> CompatParse:
        self.parse_error = True
        if self.reason is None:
            self.reason = exc if isinstance(exc, str) else _why(exc)
        return self


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:160]}" if text else type(exc).__name__


class _Refused(Exception):
    """A bound of :class:`ParseLimits` refused the output (the message says which)."""


# --------------------------------------------------------------------------------------------
# grounding
# --------------------------------------------------------------------------------------------

# v1's pseudo-call (schema.FINAL_CALL) and a spelling of it: neither defines a label upstream, and
# grounding drops only the first
_NO_LABEL_CALLS = (FINAL_CALL, "varResult")


def _refers_to(label: str, value: str) -> bool:
    """Upstream's test that ``value`` references ``label``: it starts with ``$var``, has a dot, and
    the text before the first dot is the label once every ``$`` is removed."""
    return value.startswith("$var") and "." in value and value.split(".", 1)[0].replace("$", "") == label


def ground(calls: Any) -> list[dict[str, Any]]:
    """``calls`` grounded as the published scorer grounds them; raises where it raises.

    Labels (every ``$`` removed) map to the name of the call carrying them (a later call with the
    same label wins; ``var_result``/``varResult`` define none). In each argument that is a string,
    or a string item of a list, referencing a label (:func:`_refers_to`), every occurrence of the
    label's text is replaced by that name, label after label in the order they were first defined.
    ``var_result`` calls are dropped (``varResult`` calls are kept); arguments come from
    ``arguments``, else ``parameters``, else none. Only ``name`` and ``arguments`` are kept.
    Anything iterable is walked as upstream walks it (a dict's keys, a string's characters), so
    only a call that is an object with a ``name`` passes.
    """
    names: dict[str, Any] = {}
    for call in calls:
        name = call["name"]
        if name in _NO_LABEL_CALLS:
            continue
        if "label" in call:
            names[call["label"].replace("$", "")] = name
    out = []
    for call in calls:
        if call["name"] == FINAL_CALL:
            continue
        if "arguments" in call:
            args = call["arguments"]
        elif "parameters" in call:
            args = call["parameters"]
        else:
            args = {}
        grounded: dict[Any, Any] = {}
        for key, value in args.items():
            for label, name in names.items():
                if type(value) is str and _refers_to(label, value):
                    value = value.replace(label, name)
                elif type(value) is list:
                    value = [_ground_item(item, label, name) for item in value]
            grounded[key] = value
        out.append({"name": call["name"], "arguments": grounded})
    return out


def _ground_item(item: Any, label: str, name: Any) -> Any:
    if type(item) is str and _refers_to(label, item):
        return item.replace(label, name)
    if type(item) is dict:
        # Upstream tests the object's JSON text, which starts with '{' and so never references a
        # label: the object stays as it is. Only writing the text can fail, as upstream's does.
        json.dumps(item)
    return item


def _as_text(calls: Any) -> list[str]:
    """Each item of ``calls`` as JSON text (as upstream writes them: ``json.dumps`` defaults)."""
    return [json.dumps(c) for c in calls]


# --------------------------------------------------------------------------------------------
# bounded decoding
# --------------------------------------------------------------------------------------------


def _loads(text: str, limits: ParseLimits) -> Any:
    """``json.loads`` (which accepts exactly what upstream accepts) within ``limits``."""
    if len(text) > limits.max_chars:
        raise _Refused(f"the output has {len(text):,} characters; at most {limits.max_chars:,} are read")
    value = json.loads(text)
    if too_deep(value, limits.max_depth):
        raise _Refused(f"JSON nested deeper than {limits.max_depth} levels")
    return value


# --------------------------------------------------------------------------------------------
# the parsers
# --------------------------------------------------------------------------------------------


def _grounded(out: CompatParse, decoded: Any) -> CompatParse:
    out.calls = _as_text(ground(decoded))
    return out


def _ground_if_labelled(out: CompatParse, decoded: Any, text: str) -> CompatParse:
    """Several parsers ground only when the text contains ``label`` anywhere; otherwise the decoded
    items go on as they are (var_result, extra keys, ``parameters`` and unnamed calls included)."""
    out.calls = _as_text(ground(decoded)) if "label" in text else _as_text(decoded)
    return out


def _parse_hammer(text: str, limits: ParseLimits) -> CompatParse:
    """Hammer: every triple backtick removed, then the stripped text must be JSON with a length > 0."""
    out = CompatParse()
    try:
        out.decoded = _loads(text.replace("```", "").strip(), limits)
        if not len(out.decoded) > 0:
            return out.failed("the answer is empty")
        return _grounded(out, out.decoded)
    except Exception as exc:  # noqa: BLE001 - upstream turns every failure into a parse error
        return out.failed(exc)


def _parse_plain_json(text: str, limits: ParseLimits) -> CompatParse:
    """Granite 3.0 and DeepSeek: the text itself must be JSON (no stripping beyond JSON's whitespace)."""
    out = CompatParse()
    try:
        out.decoded = _loads(text, limits)
        return _ground_if_labelled(out, out.decoded, text)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


def _parse_granite_31(text: str, limits: ParseLimits) -> CompatParse:
    """Granite 3.1: ``<|tool_call|>`` and ``<tool_call>`` removed, then the text must be JSON."""
    out = CompatParse()
    try:
        text = text.replace("<|tool_call|>", "").replace("<tool_call>", "")
        out.decoded = _loads(text, limits)
        return _ground_if_labelled(out, out.decoded, text)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


def _parse_llama_3(text: str, limits: ParseLimits) -> CompatParse:
    """Llama 3.x: stripped, one trailing ``'`` removed, ``[`` and ``]`` added where missing (so a
    single object, or objects without brackets, read as a list), then JSON."""
    out = CompatParse()
    try:
        body = text.strip()
        if body.endswith("'"):
            body = body[:-1]
        if not body.startswith("["):
            body = "[" + body
        if not body.endswith("]"):
            body = body + "]"
        out.decoded = _loads(body, limits)
        return _ground_if_labelled(out, out.decoded, text)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


def _without_final_calls(decoded: Any) -> list[Any]:
    return [c for c in decoded if not c["name"] == FINAL_CALL]


def _parse_llama_3_70b(text: str, limits: ParseLimits) -> CompatParse:
    """Llama 3 70B / 405B: JSON (var_result calls dropped); failing that, a bracketed list of Python
    style calls ``[f(a=1, b="x"), g(c=2)]`` read by :func:`_python_style_calls`."""
    out = CompatParse()
    body = text.strip()
    try:
        out.decoded = _loads(body, limits)
        out.decoded = _without_final_calls(out.decoded)
        return _ground_if_labelled(out, out.decoded, body)
    except Exception as exc:  # noqa: BLE001
        first = exc
    if not (body.startswith("[") and body.endswith("]")):
        return out.failed(first)
    out.calls = []
    try:
        _python_style_calls(body[1:-1], out.calls)
    except Exception as exc:  # noqa: BLE001 - the calls read before the failure stay (as upstream)
        return out.failed(exc)
    return out


def _python_style_calls(body: str, into: list[str]) -> None:
    """Upstream's fallback reader of ``f(a=1, b="x"), g(c=2)``, appending each call's JSON text to
    ``into`` as it is read (a failure keeps the calls before it). Calls are split at ``),``; a
    call's arguments at commas outside double quotes, each skipping the one character after its
    comma; a value loses one surrounding ``'`` and its ``"`` (inner ``"`` become ``'``), so every
    value is a string."""
    for part in body.split("),"):
        if not part.strip().endswith(")"):
            part = part + ")"
        name = part.split("(", 1)[0]
        inner = part.split("(", 1)[1][:-1]
        arguments: dict[str, str] = {}
        for item in _split_outside_quotes(inner):
            key, value = item.split("=")[0].strip(), item.split("=")[1].strip()
            arguments[key] = _slot_value(value)
        into.append(json.dumps({"name": name, "arguments": arguments}))


def _split_outside_quotes(text: str, sep: str = ",") -> list[str]:
    """Split at each ``sep`` preceded by an even number of ``"``; the character after a separator is
    skipped (upstream assumes ``", "``); pieces are stripped."""
    pieces = []
    start = quotes = 0  # quotes: the number of '"' before position i (a running count, not re-counted)
    for i, ch in enumerate(text):
        if ch == sep and quotes % 2 == 0:
            pieces.append(text[start:i])
            start = i + 2
        elif ch == '"':
            quotes += 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces]


def _slot_value(value: str) -> str:
    if value.startswith("'"):
        value = value[1:]
    if value.endswith("'"):
        value = value[:-1]
    if not value.startswith('"'):
        value = '"' + value
    if not value.endswith('"'):
        value = value + '"'
    return value[1:-1].replace('"', "'")


def _parse_mistral(text: str, limits: ParseLimits) -> CompatParse:
    """Mistral / Mixtral: the stripped text as JSON; failing that (grounding included), again with
    newlines removed and ``\\_`` read as ``_``."""
    out = CompatParse()
    body = text.strip()
    try:
        out.decoded = _loads(body, limits)
        return _grounded(out, out.decoded)
    except Exception:  # noqa: BLE001 - retried below
        pass
    try:
        out.decoded = _loads(body.replace("\n", "").replace("\\_", "_"), limits)
        return _grounded(out, out.decoded)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


_HERMES_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def _parse_hermes(text: str, limits: ParseLimits) -> CompatParse:
    """Hermes 2 Pro: the JSON of each ``<tool_call>...</tool_call>`` (an answer starting with
    ``tool_call`` and a newline gets its tags back); chunks that are not JSON are skipped; at least
    one must be read."""
    out = CompatParse()
    try:
        body = text.strip()
        if len(body) > limits.max_chars:
            raise _Refused(f"the output has {len(body):,} characters; at most {limits.max_chars:,} are read")
        if body.startswith("tool_call\n{"):
            body = body.replace("tool_call\n{", "<tool_call>\n{")
        out.decoded = []
        # A match ends at a closing tag, so text after the last one holds none: cutting it keeps
        # the matches and spares the search a scan to the end from every unclosed opening tag.
        last = body.rfind("</tool_call>")
        tagged = _HERMES_CALL.findall(body[: last + len("</tool_call>")]) if last >= 0 else []
        for chunk in tagged:
            try:
                out.decoded.append(_loads(chunk.strip(), limits))
            except Exception:  # noqa: BLE001 - upstream skips a chunk it cannot read
                continue
        if not out.decoded:
            return out.failed("no <tool_call> holds JSON")
        return _grounded(out, out.decoded)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


_XLAM_MARKERS = (
    "[BEGIN OF ANSWER]",
    "[BEGIN OF FUNCTION CALLS]",
    "[BEGIN OF FUNCTION CALL]",
    "[BEGIN OF ACTIONS]",
    "[BEGIN OF ACTION]",
)


def _parse_xlam(text: str, limits: ParseLimits) -> CompatParse:
    """xLAM: the ``[BEGIN OF ...]`` markers removed, the text must be a JSON object with
    ``tool_calls``, whose value is the list of calls."""
    out = CompatParse()
    try:
        body = text.strip()
        for marker in _XLAM_MARKERS:
            body = body.replace(marker, "")
        wrapper = _loads(body.strip(), limits)
        if "tool_calls" not in wrapper:
            return out.failed('no "tool_calls"')
        out.decoded = wrapper["tool_calls"]
        return _grounded(out, out.decoded)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


def _parse_granite_20b(text: str, limits: ParseLimits) -> CompatParse:
    """Granite 20B function calling: ``ASSISTANT`` removed, the text split at ``<function_call>``,
    each non-empty piece JSON (all must be), var_result calls dropped."""
    out = CompatParse()
    try:
        body = text.strip().replace("ASSISTANT", "").strip()
        if len(body) > limits.max_chars:
            raise _Refused(f"the output has {len(body):,} characters; at most {limits.max_chars:,} are read")
        out.decoded = [_loads(piece, limits) for piece in body.split("<function_call>") if piece]
        out.decoded = _without_final_calls(out.decoded)
        return _ground_if_labelled(out, out.decoded, body)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


def _parse_toolace(text: str, limits: ParseLimits) -> CompatParse:
    """ToolACE: Python call syntax (:func:`_toolace_calls`), at least one call."""
    out = CompatParse()
    try:
        out.decoded = _toolace_calls(text, limits)
        if not out.decoded:
            return out.failed("no calls")
        return _grounded(out, out.decoded)
    except Exception as exc:  # noqa: BLE001
        return out.failed(exc)


def _toolace_calls(text: str, limits: ParseLimits) -> list[dict[str, Any]]:
    """The calls of ``[f(a=1), g(b="x")]`` as upstream's AST reader takes them: the text loses the
    characters ``[``, ``]`` and ``'`` at both ends and must be one Python expression: a call, or a
    tuple/list/set of calls. Only keyword arguments count (positional ones are dropped)."""
    if len(text) > limits.max_chars:
        raise _Refused(f"the output has {len(text):,} characters; at most {limits.max_chars:,} are read")
    source = text.strip("[]'")
    if bracket_depth(source) > limits.max_depth:  # where CPython's parser recurses
        raise _Refused(f"nested deeper than {limits.max_depth} levels")
    tree = parse_python(source).body
    if isinstance(tree, ast.Call):
        return [_toolace_call(tree)]
    calls = []
    for node in tree.elts:  # AttributeError for anything but a tuple, list or set: a parse error
        if not isinstance(node, ast.Call):
            raise ValueError("an item is not a call")
        calls.append(_toolace_call(node))
    return calls


def _toolace_call(node: ast.Call) -> dict[str, Any]:
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    arguments = {kw.arg: _toolace_value(kw.value) for kw in node.keywords}
    return {"name": ".".join(reversed(parts)), "arguments": arguments}


def _toolace_value(node: Any) -> Any:
    """An argument's value as upstream's AST reader makes it: constants as they are (``...`` as the
    string ``"..."``), any unary operator *negates* its constant operand (``+5`` is -5), names and
    calls without keywords as their source text, calls with keywords as nested calls, subscripts
    as source text, arithmetic evaluated (:func:`_arithmetic`); anything else is refused."""
    if isinstance(node, ast.Constant):
        return "..." if node.value is Ellipsis else node.value
    if isinstance(node, ast.UnaryOp):
        return -node.operand.value  # AttributeError unless the operand is a constant, as upstream
    if isinstance(node, ast.List):
        return [_toolace_value(v) for v in node.elts]
    if isinstance(node, ast.Dict):
        return {_toolace_value(k): _toolace_value(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.BinOp):
        return _arithmetic(node)
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return ast.unparse(node) if not node.keywords else _toolace_call(node)
    if isinstance(node, ast.Tuple):
        return tuple(_toolace_value(v) for v in node.elts)
    if isinstance(node, ast.Lambda):
        raise ValueError("a lambda")  # upstream's reader fails on every lambda
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.value) + "[" + ast.unparse(node.slice) + "]"
    raise ValueError(f"unsupported expression: {type(node).__name__}")


# Bounds on evaluated arithmetic: upstream eval()s it (and would hang on 9**9**9)
_MAX_INT_BITS = 100_000
_MAX_SEQUENCE = 1_000_000

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
    ast.BitAnd: lambda a, b: a & b,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: lambda a: -a,
    ast.UAdd: lambda a: +a,
    ast.Not: lambda a: not a,
    ast.Invert: lambda a: ~a,
}


def _arithmetic(node: Any) -> Any:
    """Evaluate literal arithmetic (``3*4``, ``"a" + "b"``, ``-1 + 2``) as Python would.

    Upstream ``eval``s the source of any binary operation. Hand-written because the operands come
    from a model: only constants, containers of them and operators are evaluated (``ast.literal_eval``
    refuses most operators), within size bounds; names, calls and the like are refused (a parse
    error), where upstream would run them."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.List):
        return [_arithmetic(v) for v in node.elts]
    if isinstance(node, ast.Tuple):
        return tuple(_arithmetic(v) for v in node.elts)
    if isinstance(node, ast.Set):
        return {_arithmetic(v) for v in node.elts}
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_arithmetic(k): _arithmetic(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_arithmetic(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _arithmetic(node.left), _arithmetic(node.right)
        _check_size(type(node.op), left, right)
        return _BINARY[type(node.op)](left, right)
    raise ValueError(f"not evaluated: {type(node).__name__} in arithmetic")


def _check_size(op: type, left: Any, right: Any) -> None:
    def bits(v: Any) -> int:
        return abs(int(v)).bit_length() if isinstance(v, int) else 0

    if op is ast.Pow and isinstance(left, int) and isinstance(right, int) and right > 0:
        if bits(left) * right > _MAX_INT_BITS:
            raise _Refused(f"an integer power over {_MAX_INT_BITS} bits")
    if op is ast.LShift and isinstance(right, int) and right > _MAX_INT_BITS:
        raise _Refused(f"a shift over {_MAX_INT_BITS} bits")
    if op is ast.Mult:
        for seq, times in ((left, right), (right, left)):
            if (
                isinstance(seq, (str, bytes, list, tuple))
                and isinstance(times, int)
                and len(seq) * times > _MAX_SEQUENCE
            ):
                raise _Refused(f"a repeated sequence over {_MAX_SEQUENCE:,} items")


_PARSERS: dict[str, Callable[[str, ParseLimits], CompatParse]] = {
    "hammer": _parse_hammer,
    "granite-3": _parse_plain_json,
    "deepseek": _parse_plain_json,
    "granite-3.1": _parse_granite_31,
    "llama-3": _parse_llama_3,
    "llama-3-70b": _parse_llama_3_70b,
    "mistral": _parse_mistral,
    "hermes": _parse_hermes,
    "xlam": _parse_xlam,
    "granite-20b": _parse_granite_20b,
    "toolace": _parse_toolace,
}


def from_calls(calls: Any) -> CompatParse:
    """Calls already read (callbench's lenient reader, or those a ReAct/tools episode recorded)
    prepared as upstream prepares parsed calls: grounded, always. None: nothing could be read."""
    out = CompatParse(decoded=calls if calls is not None else [])
    if calls is None:
        return out.failed("no calls could be read")
    try:
        return _grounded(out, calls)
    except Exception as exc:  # noqa: BLE001 - grounding fails as upstream's does: a parse error
        return out.failed(exc)


def parse(
    text: str, parser: str, limits: ParseLimits = DEFAULT_LIMITS, *, pythonic: bool = False
) -> CompatParse:
    """``text`` read by ``parser`` (a name of :data:`PARSER_NAMES`) and grounded as the published
    scorer does. ``pythonic`` is for ``lenient`` only (published templates asking for ``f(a=1)``)."""
    parser = resolve_parser(parser)
    if parser == LENIENT:
        from callbench.tracks.nested.parsing import read_calls

        return from_calls(read_calls(text, limits, pythonic=pythonic).calls)
    return _PARSERS[PARSER_MODELS[parser]](text, limits)
