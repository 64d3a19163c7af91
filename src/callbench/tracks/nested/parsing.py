"""Read a JSON list of tool calls out of whatever a model wrote.

Models wrap the list in prose, code fences or tool-call tags, answer with a single object instead
of a list, or run out of tokens mid-list. We look for the first JSON value that parses as calls,
trying (in order) tool-call tags, fenced blocks, and the raw text from its first ``[`` or ``{``;
a truncated list keeps the complete calls it holds (``raw_decode`` on each element).

NESTFUL's published per-model templates (:mod:`~callbench.tracks.nested.prompting_published`) ask
for other shapes, read here too: Granite's ``<function_call> {...} <function_call> {...}``, a list
written without its brackets (``{...}, {...}``: the calls that follow the first one), Cohere's and
Llama's key names (``tool_name``, ``parameters``), Markdown-escaped underscores (``arg\\_0``, retried
unescaped) and, only when asked (``pythonic=True``: the ToolACE and Gorilla templates), Python call
syntax (:func:`pythonic_calls`).

Reading is bounded (:class:`ParseLimits`): output length, nesting depth and number literal length.
Hostile or runaway text ends as a parse error with its reason (:func:`read_calls`), never as a
``RecursionError``, Python's int-conversion ``ValueError`` or minutes of scanning. A value nested
too deep ends the search: it is garbage, and searching inside it (each of its brackets starts a
candidate) would cost time quadratic in its length.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from callbench import pyast

_TAGS = re.compile(
    r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)|<\|tool_call\|>\s*(.*?)\s*(?:<\|/tool_call\|>|$)|\[TOOL_CALLS\]\s*(.*)"
    # Granite-20B-FunctionCalling: "<function_call> {...} <function_call> {...}" (no closing tag)
    r"|<function_call>\s*(.*?)\s*(?=<function_call>|$)",
    re.DOTALL,
)
# Separators between the calls of a list written without its brackets ('{...}, {...}' or one per line)
_BETWEEN_CALLS = " \t\r\n,;"
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n(.*?)(?:```|$)", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ParseLimits:
    """Bounds on what is read from one model output.

    Gold answers are a few hundred characters, nested a few levels, with short numbers; the bounds
    are far above that and far below what would exhaust the stack, the int-conversion limit or time.
    """

    max_chars: int = 200_000  # model output longer than this is not searched for calls
    max_depth: int = 32  # JSON containers nested deeper than this are refused
    max_number_chars: int = 100  # a JSON number literal longer than this is refused
    # decoding work one search may spend (characters read over all candidate values): every bracket
    # starts a candidate, so nested or repeated brackets would otherwise cost quadratic time
    max_work: int = 10_000_000

    def number_run(self) -> re.Pattern[str]:
        """Characters that could form a number literal longer than the bound."""
        return re.compile(rf"[-+.0-9eE]{{{self.max_number_chars + 1},}}")


DEFAULT_LIMITS = ParseLimits()


class JSONBoundError(ValueError):
    """A JSON value exceeds a :class:`ParseLimits` bound (the message says which)."""


def _depth_error(limits: ParseLimits) -> JSONBoundError:
    return JSONBoundError(f"JSON nested deeper than {limits.max_depth} levels")


def too_deep(value: Any, max_depth: int) -> bool:
    """Does ``value`` nest lists/dicts deeper than ``max_depth``? (Iterative: any depth is safe.)"""
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        children = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else None
        if children is None:
            continue
        if depth > max_depth:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list, tuple)))
    return False


class _Decoders:
    """A plain C decoder, and one whose number hooks enforce the length bound: the hooks cost a
    Python call per number, so they are used only for text holding a long enough run of digits."""

    def __init__(self, limits: ParseLimits):
        self.limits = limits
        self.plain = json.JSONDecoder()

        def check(text: str) -> str:
            if len(text) > limits.max_number_chars:
                raise JSONBoundError(f"a number of {len(text)} characters (at most {limits.max_number_chars})")
            return text

        self.checked = json.JSONDecoder(parse_int=lambda t: int(check(t)), parse_float=lambda t: float(check(t)))
        self._run = limits.number_run()

    def for_text(self, text: str) -> json.JSONDecoder:
        return self.checked if self._run.search(text) else self.plain


_DECODERS: dict[ParseLimits, _Decoders] = {}


def _decoders(limits: ParseLimits) -> _Decoders:
    found = _DECODERS.get(limits)
    if found is None:
        found = _DECODERS[limits] = _Decoders(limits)
    return found


class _Invalid(Exception):
    """Invalid JSON (message, absolute position): raised instead of ``json.JSONDecodeError``, whose
    constructor counts the lines before the error, which is quadratic over a search's candidates."""


class _Budget:
    """Decoding work left to one search (characters read, plus a fixed cost per attempt)."""

    def __init__(self, units: int):
        self.left = units

    def spend(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise _OutOfWork


class _OutOfWork(Exception):
    pass


_WINDOW = 256  # first window decoded from a candidate; grows x8 while the answer is not known
_MARGIN = 16  # an error this close to a window's end may be the cut, not the text
_ATTEMPT_COST = 100  # Python overhead of one attempt, in characters' worth


def _raw_decode(
    decoder: json.JSONDecoder, text: str, pos: int, limits: ParseLimits, budget: _Budget | None = None
) -> tuple[Any, int]:
    """Decode the value at ``pos`` from growing windows of ``text``: a candidate that fails a few
    characters in costs a few characters, not the length of the text. Raises :class:`_Invalid`,
    :class:`JSONBoundError` or (when ``budget`` runs out) :class:`_OutOfWork`."""
    window = _WINDOW
    while True:
        last = pos + window >= len(text)
        chunk = text[pos:] if last else text[pos : pos + window]
        try:
            value, end = decoder.raw_decode(chunk)
        except json.JSONDecodeError as exc:
            if budget is not None:
                budget.spend(exc.pos + _ATTEMPT_COST)
            near_cut = exc.pos >= len(chunk) - _MARGIN or exc.msg.startswith("Unterminated string")
            if last or not near_cut:
                raise _Invalid(exc.msg, pos + exc.pos) from None
        except RecursionError:  # the C scanner stops at the interpreter's recursion limit
            raise _depth_error(limits) from None
        except JSONBoundError:  # a long number: read on to its end, so the message says its length
            if budget is not None:
                budget.spend(len(chunk) + _ATTEMPT_COST)
            if last:
                raise
        else:
            if budget is not None:
                budget.spend(end + _ATTEMPT_COST)
            if last or end < len(chunk) - _MARGIN:  # a number could run on past the cut
                return value, pos + end
        window *= 8


def decode_at(text: str, pos: int, limits: ParseLimits = DEFAULT_LIMITS) -> tuple[Any, int]:
    """``json.JSONDecoder.raw_decode`` within ``limits``: :class:`JSONBoundError` for a bound,
    ``json.JSONDecodeError`` for invalid JSON."""
    try:
        value, end = _raw_decode(_decoders(limits).for_text(text), text, pos, limits)
    except _Invalid as exc:
        msg, at = exc.args
        raise json.JSONDecodeError(msg, text, at) from None
    if too_deep(value, limits.max_depth):
        raise _depth_error(limits)
    return value, end


def loads(text: str, limits: ParseLimits = DEFAULT_LIMITS) -> Any:
    """``json.loads`` within ``limits`` (for the argument strings of tool calls)."""
    if len(text) > limits.max_chars:
        raise JSONBoundError(f"{len(text):,} characters (at most {limits.max_chars:,})")
    start = len(text) - len(text.lstrip())
    value, end = decode_at(text, start, limits)
    if text[end:].strip():
        raise json.JSONDecodeError("Extra data", text, end)
    return value


def scrub(text: str) -> str:
    """``text`` with lone surrogates written as ``\\udXXX`` escapes: they cannot be encoded as
    UTF-8 (storage, HTTP), and inside a JSON string literal the escape reads back as the same value."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _SURROGATE.search(text) else text


def scrub_value(value: Any) -> Any:
    """``value`` with :func:`scrub` applied to every string and key (for records that are stored)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_value(v) for v in value]
    return value


def call_problem(calls: list[Any]) -> str | None:
    """Why ``calls`` is not a well-formed list of calls (one line), or None."""
    for i, c in enumerate(calls, 1):
        if not isinstance(c, dict):
            return f"call {i} is {_kind(c)}, not an object"
        name = c.get("name")
        if not isinstance(name, str) or not name.strip():
            return f'call {i}: "name" must be a non-empty string, got {_kind(name)}'
        shown = scrub(name[:80])
        if not isinstance(c.get("arguments", {}), dict):
            return f'call {i} ({shown}): "arguments" must be an object, got {_kind(c.get("arguments"))}'
        label = c.get("label")
        if label is not None and not isinstance(label, str):
            return f'call {i} ({shown}): "label" must be a string such as "$var_1", got {_kind(label)}'
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return "an empty string" if not value.strip() else "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return {list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


@dataclass
class ReadCalls:
    """What :func:`read_calls` found: the calls (None: none could be read) and, when something is
    wrong (nothing readable, or a malformed call), a one-line reason."""

    calls: list[dict] | None
    error: str | None = None


class _TooDeep(Exception):
    """Ends a search (see the module docstring)."""


class _Search:
    """One search for calls; remembers the first bound that refused a candidate value.

    Candidates are decoded without the depth walk (a candidate that is not calls is dropped, and
    walking every one would be quadratic); the C decoder's own recursion limit still stops a
    runaway nesting, and the value accepted as calls is walked once."""

    def __init__(self, limits: ParseLimits):
        self.limits = limits
        self.decoders = _decoders(limits)
        self.budget = _Budget(limits.max_work)
        self.bound: str | None = None

    def decode(self, text: str, pos: int, decoder: json.JSONDecoder) -> tuple[Any, int] | None:
        try:
            return _raw_decode(decoder, text, pos, self.limits, self.budget)
        except JSONBoundError as exc:
            if str(exc).startswith("JSON nested"):
                self.bound = str(exc)
                raise _TooDeep from None
            self.bound = self.bound or str(exc)
        except _Invalid:
            pass
        return None

    def accept(self, calls: list[dict] | None) -> list[dict] | None:
        if calls is not None and too_deep(calls, self.limits.max_depth):
            self.bound = str(_depth_error(self.limits))
            raise _TooDeep
        return calls

    def as_calls(self, value: Any) -> list[dict] | None:
        if isinstance(value, dict):
            if "name" in value or "tool_name" in value:
                return [_aliased(value)]
            for key in ("calls", "tool_calls", "function_calls", "answer"):
                if isinstance(value.get(key), list):
                    return self.as_calls(value[key])
            return None
        if isinstance(value, list) and all(isinstance(c, dict) for c in value):
            out = []
            for c in value:
                if "function" in c and isinstance(c["function"], dict):  # OpenAI tool-call shape
                    fn = c["function"]
                    args = fn.get("arguments")
                    if isinstance(args, str):
                        try:
                            args = loads(args, self.limits)
                        except JSONBoundError as exc:
                            self.bound = self.bound or str(exc)
                            return None
                        except json.JSONDecodeError:
                            return None
                    c = {"name": fn.get("name"), "label": c.get("label"), "arguments": args or {}}
                out.append(_aliased(c))
            return out
        return None

    def truncated_list(self, text: str, start: int, decoder: json.JSONDecoder) -> list[dict] | None:
        """Complete objects of a list that was cut off (e.g. by the token limit)."""
        i = start + 1
        items: list[Any] = []
        while i < len(text):
            while i < len(text) and text[i] in " \t\r\n,":
                i += 1
            if i >= len(text) or text[i] == "]":
                break
            found = self.decode(text, i, decoder)
            if found is None:
                break
            value, i = found
            items.append(value)
        return self.as_calls(items) if items else None

    def from_text(self, text: str) -> list[dict] | None:
        decoder = self.decoders.for_text(text)
        for m in re.finditer(r"[\[{]", text):
            found = self.decode(text, m.start(), decoder)
            if found is None:
                if text[m.start()] == "[":
                    calls = self.accept(self.truncated_list(text, m.start(), decoder))
                    if calls:
                        return calls
                continue
            calls = self.accept(self.as_calls(found[0]))
            if calls is not None:
                if isinstance(found[0], dict) and len(calls) == 1:
                    calls = calls + self.following_calls(text, found[1], decoder)
                return calls
        return None

    def following_calls(self, text: str, pos: int, decoder: json.JSONDecoder) -> list[dict]:
        """The call objects that follow one at ``pos``, separated by commas, semicolons or
        whitespace only: a list written without its brackets (Llama 3.1 answers so)."""
        out: list[dict] = []
        while True:
            while pos < len(text) and text[pos] in _BETWEEN_CALLS:
                pos += 1
            if pos >= len(text) or text[pos] != "{":
                return out
            found = self.decode(text, pos, decoder)
            if found is None or not isinstance(found[0], dict) or not ("name" in found[0] or "tool_name" in found[0]):
                return out
            value = self.accept([_aliased(found[0])])
            out.extend(value or [])
            pos = found[1]

    def run(self, text: str) -> list[dict] | None:
        try:
            return self._run(text)
        except _TooDeep:
            return None
        except _OutOfWork:
            self.bound = self.out_of_work()
            return None

    def out_of_work(self) -> str:
        return (
            f"gave up after decoding {self.limits.max_work:,} characters of candidate JSON values "
            "(nested or repeated brackets)"
        )

    def _run(self, text: str) -> list[dict] | None:
        tagged = [next(g for g in m.groups() if g is not None) for m in _TAGS.finditer(text)]
        if tagged:
            calls: list[dict] = []
            for chunk in tagged:
                found = self.from_text(chunk)
                if found is None:
                    return None
                calls.extend(found)
            return calls
        for m in _FENCE.finditer(text):
            found = self.from_text(m.group(1))
            if found is not None:
                return found
        return self.from_text(text)


def _aliased(call: dict) -> dict:
    """A call written with other key names read as ``name``/``arguments``: ``tool_name`` (Cohere
    Command R) and ``parameters`` (Llama 3.1's own format, Command R), as NESTFUL's scorer reads them."""
    if not isinstance(call, dict) or ("name" in call and "arguments" in call):
        return call
    out = dict(call)
    if "name" not in out and "tool_name" in out:
        out["name"] = out.pop("tool_name")
    if "arguments" not in out and isinstance(out.get("parameters"), dict):
        out["arguments"] = out.pop("parameters")
    return out


# A name followed by "(": the lookbehind makes a match start only where a name starts, so a long
# run of name characters without "(" is scanned once, not once per character
_PY_CALL_START = re.compile(r"(?<![\w.])[A-Za-z_][\w.]*\s*\(")
_GORILLA_MARK = "<<function>>"


def bracket_depth(src: str) -> int:
    """The deepest nesting of ()[]{} in ``src`` (quotes ignored: an over-estimate is only stricter)."""
    depth = deepest = 0
    for ch in src:
        if ch in "([{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return deepest


def parse_python(source: str, mode: str = "eval") -> Any:
    """An answer's Python text as a syntax tree; answers are read in evaluation threads, so the
    parse goes through :func:`callbench.pyast.parse`."""
    return pyast.parse(source, mode=mode)


def pythonic_calls(text: str, limits: ParseLimits = DEFAULT_LIMITS) -> list[dict] | None:
    """Calls written as Python: ``[f(a=1, b="x"), g(c=2)]``, one ``f(...)`` per line, or Gorilla's
    ``<<function>>f(a=1)<<function>>g(b=2)`` (the ToolACE and Gorilla templates ask for this).

    Argument values must be literals; positional arguments are named ``arg_0``, ``arg_1``, ... (the
    i-th parameter, as NESTFUL's math tools name them). The calls carry no labels in this form, so
    the k-th call is labelled ``$var_k``. None when nothing parses as calls."""
    if len(text) > limits.max_chars:
        return None
    for m in _FENCE.finditer(text):
        text = m.group(1)
        break
    if _GORILLA_MARK in text:
        chunks = [c.strip() for c in text.split(_GORILLA_MARK) if c.strip()]
    else:
        start = _PY_CALL_START.search(text)
        if start is None:
            return None
        at = start.start()
        before = text[:at].rstrip()
        if before.endswith("["):  # the list's bracket
            at = len(before) - 1
        body = text[at:].strip()
        chunks = [body]
        for closer in ("]", ")"):
            cut = body.rfind(closer)
            if cut >= 0:
                chunks.append(body[: cut + 1])
        chunks.append("\n")  # marker: then try line by line
    calls: list[dict] = []

    def convert(node: Any) -> dict | None:
        if not isinstance(node, ast.Call):
            return None
        parts: list[str] = []
        fn = node.func
        while isinstance(fn, ast.Attribute):
            parts.append(fn.attr)
            fn = fn.value
        if not isinstance(fn, ast.Name):
            return None
        parts.append(fn.id)
        args: dict[str, Any] = {}
        for i, a in enumerate(node.args):
            args[f"arg_{i}"] = ast.literal_eval(a)
        for kw in node.keywords:
            if kw.arg is None:
                return None
            args[kw.arg] = ast.literal_eval(kw.value)
        return {"name": ".".join(reversed(parts)), "arguments": args}

    def parse(src: str) -> list[dict] | None:
        if bracket_depth(src) > limits.max_depth:
            return None  # deep nesting is where CPython's parser recurses (and 3.11 may raise SystemError)
        try:
            tree = parse_python(src.strip()).body
            nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
            out = [convert(n) for n in nodes]
        except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError, SystemError):
            return None
        if not out or any(c is None for c in out):
            return None
        return out  # type: ignore[return-value]

    if _GORILLA_MARK in text:
        for chunk in chunks:
            found = parse(chunk)
            if found is None:
                return None
            calls.extend(found)
    else:
        for chunk in chunks:
            if chunk == "\n":
                for line in chunks[0].splitlines():
                    found = parse(line.strip().rstrip(","))
                    if found is not None:
                        calls.extend(found)
                break
            found = parse(chunk)
            if found is not None:
                calls = found
                break
    if not calls or too_deep(calls, limits.max_depth):
        return None
    return [{"name": c["name"], "label": f"$var_{k}", "arguments": c["arguments"]} for k, c in enumerate(calls, 1)]


def find_json(text: str, pos: int = 0, limits: ParseLimits = DEFAULT_LIMITS) -> tuple[Any, int] | None:
    """The first JSON value starting at a ``[`` or ``{`` at or after ``pos``: ``(value, end)``, or
    None. :class:`JSONBoundError` when there is none and a bound refused a candidate (or ended the
    search), so the caller can say why."""
    search = _Search(limits)
    decoder = search.decoders.for_text(text)
    try:
        for m in re.finditer(r"[\[{]", text[pos:]):
            found = search.decode(text, pos + m.start(), decoder)
            if found is not None:
                if too_deep(found[0], limits.max_depth):
                    raise _TooDeep
                return found
    except _TooDeep:
        raise _depth_error(limits) from None
    except _OutOfWork:
        raise JSONBoundError(search.out_of_work()) from None
    if search.bound:
        raise JSONBoundError(search.bound)
    return None


def read_calls(text: str, limits: ParseLimits = DEFAULT_LIMITS, *, pythonic: bool = False) -> ReadCalls:
    """The calls in ``text``, with the reason when there are none or one is malformed.

    JSON first; then, when the text holds Markdown-escaped underscores (``arg\\_0``, which JSON
    refuses), the text without those escapes; then, with ``pythonic`` (templates that ask for
    ``[f(a=1)]``), :func:`pythonic_calls`."""
    if len(text) > limits.max_chars:
        return ReadCalls(None, f"the output has {len(text):,} characters; calls are read from at most {limits.max_chars:,}")
    search = _Search(limits)
    calls = search.run(text)
    if calls is None and "\\_" in text:
        retry = _Search(limits)
        calls = retry.run(text.replace("\\_", "_"))
        search.bound = search.bound or retry.bound
    if calls is None and pythonic:
        calls = pythonic_calls(text, limits)
    if calls is None:
        return ReadCalls(None, f"no calls could be read: {search.bound or 'no JSON list of calls found'}")
    return ReadCalls(calls, call_problem(calls))


def parse_calls(text: str, limits: ParseLimits = DEFAULT_LIMITS, *, pythonic: bool = False) -> list[dict] | None:
    """The calls in ``text``, or None (a parse error)."""
    return read_calls(text, limits, pythonic=pythonic).calls
