"""Would constrained decoding have allowed this axios call? And if not, where and why?

:func:`check_invocation` finds the first axios call in a program (with the sandbox's parser),
takes the text after ``axios.`` (``full`` setup) or after the fixed ``axios.<method>('<url>',``
(``args`` setup), and runs it byte by byte through exactly what decoding uses: the llguidance
matcher of :func:`~callbench.constrain.webapi_grammar.build_webapi_grammar` and the
:class:`~callbench.constrain.key_tracker.KeyTracker`. The first byte either refuses is the
offending offset. The human reason is derived from the tracker's view of the call at that byte
(method, URL, which object and key), plus the spec, so acceptance and reason always agree.

The matcher runs on a byte-level tokenizer (256 one-byte tokens), which needs nothing but
llguidance and gives exact offsets. (The tests' real GPT-2 BPE tokenizer, for realistic token
boundaries, is :func:`callbench.testing.gpt2.gpt2_lltokenizer`.)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_plus

from callbench.constrain.key_tracker import KeyTracker, config_needs, make_key_tracker
from callbench.constrain.webapi_grammar import (
    AXIOS_METHODS,
    GrammarOptions,
    WebApiGrammar,
    build_webapi_grammar,
)
from callbench.errors import MissingExtraError
from callbench.specs import ApiSpec
from callbench.specs.call_model import BODY_METHODS, NO, ObjShape
from callbench.specs.credentials import CredentialValue
from callbench.specs.schema_scalars import schema_scalars

__all__ = [
    "CheckResult",
    "byte_tokenizer",
    "check_continuation",
    "check_invocation",
    "matcher_for",
]


@dataclass(frozen=True)
class CheckResult:
    """``allowed``: grammar and tracker accept the whole call. ``offset``: character offset of the
    first offending character in ``call`` (``len(call)`` when the call is merely unfinished).
    ``call``: the checked continuation text (None when no axios call was found)."""

    allowed: bool
    reason: str | None = None
    offset: int | None = None
    call: str | None = None


# ------------------------------------------------------------------------------ tokenizers
def _llguidance() -> Any:
    try:
        import llguidance
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise MissingExtraError("llguidance", "constrain") from exc
    return llguidance


class _ByteVocab:
    """256 one-byte tokens plus EOS: the smallest tokenizer llguidance accepts."""

    eos_token_id = 256
    bos_token_id = None
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]
    special_token_ids = [256]

    def __call__(self, s: str | bytes) -> list[int]:
        return list(s if isinstance(s, bytes) else s.encode("utf-8"))


@lru_cache(maxsize=1)
def byte_tokenizer() -> Any:
    """An llguidance tokenizer whose tokens are single bytes (needs only llguidance)."""
    llg = _llguidance()
    return llg.LLTokenizer(llg.TokenizerWrapper(_ByteVocab()))


_MATCHERS: dict[tuple[str, int], tuple[Any, Any]] = {}
_MATCHERS_LOCK = threading.Lock()


def matcher_for(grammar: WebApiGrammar, tokenizer: Any = None) -> Any:
    """A fresh llguidance matcher for ``grammar`` (compiled once per grammar and tokenizer, then
    deep-copied). Raises ValueError if llguidance rejects the grammar."""
    llg = _llguidance()
    tok = tokenizer if tokenizer is not None else byte_tokenizer()
    if grammar.staged:
        return _staged_matcher_for(grammar, tok)
    key = (grammar.lark, id(tok))  # grammars sharing a text (args setup) share the matcher
    with _MATCHERS_LOCK:
        hit = _MATCHERS.get(key)
    if hit is None or hit[0] is not tok:
        m = llg.LLMatcher(tok, llg.LLMatcher.grammar_from_lark(grammar.lark), log_level=0)
        if m.is_error():
            raise ValueError(f"llguidance rejects the grammar: {m.get_error()}")
        with _MATCHERS_LOCK:
            if len(_MATCHERS) > 256:
                _MATCHERS.clear()
            _MATCHERS[key] = hit = (tok, m)
    return hit[1].deep_copy()


_STAGED: dict[tuple[int, int], tuple[Any, Any, Any]] = {}


def _staged_matcher_for(grammar: WebApiGrammar, tok: Any) -> Any:
    """A staged grammar's matcher (:mod:`callbench.constrain.staged`), its head compiled once."""
    from callbench.constrain.staged import staged_matcher
    from callbench.constrain.webapi_constraint import staged_parts

    key = (id(grammar), id(tok))
    with _MATCHERS_LOCK:
        hit = _STAGED.get(key)
    if hit is None or hit[0] is not grammar or hit[1] is not tok:
        token_bytes = [tok.decode_bytes([i]) for i in range(tok.vocab_size)]
        try:
            m = staged_matcher(staged_parts(grammar, grammar.spec), tok, token_bytes, exact=False)
        except Exception as exc:  # noqa: BLE001 - the same error class as a plain grammar's
            raise ValueError(f"llguidance rejects the grammar: {exc}") from exc
        with _MATCHERS_LOCK:
            if len(_STAGED) > 16:
                _STAGED.clear()
            _STAGED[key] = hit = (grammar, tok, m)
    return hit[2].deep_copy()


# ------------------------------------------------------------------------------ checking
def check_invocation(
    spec: ApiSpec,
    code: str,
    *,
    setup: str = "full",
    method: str | None = None,
    url: str | None = None,
    identifiers: Iterable[str] = (),
    options: GrammarOptions = GrammarOptions(),  # noqa: B008 - frozen, hashable default
) -> CheckResult:
    """Check the first axios call in ``code`` (a program, e.g. starter + completion)."""
    from callbench.sandbox.js_extract import extract_invocation

    ext = extract_invocation(code)
    if ext.call_text is None:
        return CheckResult(False, "no axios call found", None, None)
    call = ext.call_text
    m = re.match(r"axios\s*\.\s*", call)
    if m is None:
        return CheckResult(False, "only axios.<method>(url, ...) calls can be checked", 0, call)
    rest = call[m.end() :]
    if setup == "args":
        if not method or not url:
            raise ValueError("setup 'args' needs the fixed method and url")
        fixed = re.match(r"\s*" + re.escape(method) + r"\s*\(\s*(['\"`])" + re.escape(url) + r"\1\s*,", rest)
        if fixed is None:
            return CheckResult(
                False, f"the call does not continue the fixed starter axios.{method}('{url}',", 0, rest
            )
        rest = rest[fixed.end() :]
    return check_continuation(
        spec, rest, setup=setup, method=method, url=url, identifiers=identifiers, options=options
    )


def check_continuation(
    spec: ApiSpec,
    text: str,
    *,
    setup: str = "full",
    method: str | None = None,
    url: str | None = None,
    identifiers: Iterable[str] = (),
    options: GrammarOptions = GrammarOptions(),  # noqa: B008
    url_values: Mapping[str, str] | None = None,
    request_configs: Iterable[str] = (),
) -> CheckResult:
    """Check the text a model wrote after the starter (``get('…', {…})`` for setup full; the
    arguments after ``axios.<method>('<url>',`` for setup args). ``url_values``, ``request_configs``:
    what names in scope hold (``build_webapi_grammar``'s)."""
    grammar = build_webapi_grammar(
        spec,
        setup=setup,  # type: ignore[arg-type]
        method=method if setup == "args" else None,
        url=url if setup == "args" else None,
        identifiers=identifiers,
        options=options,
        url_values=url_values,
        request_configs=request_configs,
    )
    matcher = matcher_for(grammar)
    tracker = make_key_tracker(grammar, spec)
    data = text.encode("utf-8", errors="surrogatepass")
    for i, b in enumerate(data):
        one = bytes((b,))
        if not matcher.consume_token(b):
            return CheckResult(False, _grammar_reason(spec, grammar, tracker, data, i), _chars(data, i), text)
        if not tracker.allows(one):
            probe = tracker.clone()
            probe.feed(one)
            reason = _tracker_reason(tracker, probe.violation or "key rule broken", data, i)
            return CheckResult(False, reason, _chars(data, i), text)
        tracker.feed(one)
    if not matcher.is_accepting():
        return CheckResult(False, _incomplete_reason(tracker), len(text), text)
    return CheckResult(True, None, None, text)


def _chars(data: bytes, i: int) -> int:
    return len(data[:i].decode("utf-8", errors="ignore"))


# ------------------------------------------------------------------------------ reasons
def _grammar_reason(spec: ApiSpec, g: WebApiGrammar, tr: KeyTracker, data: bytes, i: int) -> str:
    ctx = tr.context()
    state = ctx.get("state")
    text = data.decode("utf-8", errors="replace")
    pos = _chars(data, i)
    ch = text[pos : pos + 1] or "end of text"
    ws = _ws_reason(g.options, text[:pos], ch) if ch in " \t\r\n" and state not in ("url", "done") else None
    if ws is not None:
        return ws
    req = _request_reason(spec, g, tr, ctx, text, pos, ch)
    if req is not None:
        return req
    if state == "method":
        word = re.match(r"[A-Za-z_$][A-Za-z0-9_$]*", text)
        name = word.group(0) if word else ""
        if name.lower() not in AXIOS_METHODS:
            return f"'{name or ch}' is not an axios request method ({', '.join(AXIOS_METHODS)})"
        if not any(op.method == name.lower() for op in spec.operations):
            return f"method '{name}' is not defined for any URL"
        if word is not None and (pos < word.end() or text[word.end() : pos].strip() == "" and ch == "("):
            # refused inside a method the spec defines, or at its '(': not the call's fault
            return (
                f"the grammar refuses {ch!r} at offset {pos} of 'axios.{name}(' although the spec "
                f"defines {name.lower()} operations: the grammar cannot write calls of this spec"
            )
        return f"expected '(' after axios.{name}, got {ch!r}"
    if state == "url":
        if ctx.get("url_done") and ch in ",)":  # the URL (written by concatenation) is complete
            done = tr.url_resolved()
            if done.args is not None:
                return _args_reason(done, done.context(), ch)
        return _url_reason(spec, g, tr.method or "", text, pos)
    if state == "args":
        return _args_reason(tr, ctx, ch)
    obj = ctx.get("object", "the call")
    if state == "key":
        key = _full_key(ctx.get("partial", ""), text, pos, tr)
        shape = ctx.get("shape")
        if isinstance(shape, ObjShape) and key is not None:
            if shape.child(key) is NO:
                allowed = ", ".join(shape.props) or "none"
                what = "argument" if shape.kind in ("params", "headers", "data") else "key"
                if shape.kind == "config":
                    return f"config key '{key}' is not allowed in {obj} (allowed: {allowed})"
                return f"{what} '{key}' is not allowed in {obj}"
        return f"unexpected {ch!r} where a key of {obj} should be"
    if state == "colon":
        return f"expected ':' after a key in {obj}, got {ch!r}"
    if state in ("value", "after_value"):
        limit = _limit_reason(g.options, tr, text[:pos], ch)
        if limit is not None:
            return limit
    if state == "value":
        key = ctx.get("key")
        what = f"value of '{key}' in {obj}" if key is not None else f"item in {obj}"
        why = f"{what} does not match its schema (expected {_describe(ctx.get('desc'))})"
        return why + _value_types_note(g.options, tr, ctx.get("desc"), ch)
    if state == "after_value":
        return f"expected ',' or a closing bracket in {obj}, got {ch!r}"
    if state == "done":
        return "after the call's ')' only ';', '.then(', '.catch(', '.finally(' or a new line may follow"
    return f"unexpected {ch!r}: the text leaves the JavaScript the grammar admits"


def _request_reason(
    spec: ApiSpec, g: WebApiGrammar, tr: KeyTracker, ctx: dict[str, Any], text: str, pos: int, ch: str
) -> str | None:
    """Why the grammar refuses ``ch`` in ``axios.request(...)`` (None: not there, or the generic
    reasons apply: once its method and URL name the operation, its object is that operation's
    config)."""
    state = ctx.get("state")
    word = re.match(r"\s*request\b", text)
    if word is None:
        return None
    if not g.options.real_world:
        return (
            f"axios.request({{...}}) is not part of the --cd-profile {g.options.profile} grammar: "
            "write axios.<method>(url, ...)"
        )
    form = tr.request_form
    if form is None and state == "url":  # right after `request(`
        return (
            "axios.request takes one object literal that starts with its method and url "
            "({ method: 'get', url: '...', ... }); a config held in a variable is taken only where the "
            "starter binds it to a literal config the spec allows"
        )
    if form != "head":
        return None
    if state == "key":
        key = _full_key(ctx.get("partial", ""), text, pos, tr)
        if key in ("method", "url"):
            return None
        return (
            f"key {key or ch!r} before the method and url are given: axios.request's object starts "
            "with method and url (in either order), then the operation's config keys"
        )
    if state != "value":
        return None
    url = tr.request_url
    if ctx.get("key") == "method":
        start = max(text.rfind(q, 0, pos + 1) for q in "'\"`")
        m = re.match(r"(['\"`])([^'\"`\\]*)", text[start:]) if start >= 0 else None
        name = m.group(2) if m else ch
        if url is None:
            defined = sorted({op.method for op in spec.operations if op.method in AXIOS_METHODS})
            return f"method {name!r} of axios.request is not one the spec defines ({', '.join(defined)})"
        allowed = sorted({mm for pm in spec.match_paths(url) for mm in pm.operations})
        return f"method {name!r} is not allowed for URL '{url}' (the path allows {', '.join(allowed) or 'no method'})"
    if ctx.get("key") == "url":
        heads = list(re.finditer(r"(?:\burl|'url'|\"url\")\s*:\s*(?=['\"`])", text[:pos]))
        if not heads:
            return "the URL of axios.request must be a string literal"
        start = heads[-1].end()
        method = tr.method
        if method is None:  # the URL first: any method its path allows may follow
            rest = text[start:]
            end = rest.find(rest[0], 1)
            probe = re.sub(r"\$\{[^}]*\}", "1", rest[1 : end if end > 0 else len(rest)])
            methods = sorted({mm for pm in spec.match_paths(probe) for mm in pm.operations if mm in AXIOS_METHODS})
            if not methods:
                return f"URL '{probe}' matches no path of the spec (axios.request, any method)"
            method = methods[0]
        return _url_reason(spec, g, method, text[start:], pos - start)
    return None


def _arg_frames(tr: KeyTracker) -> list[Any]:
    """The tracker's open object/array frames inside the call's arguments, outermost first."""
    return [f for f in getattr(tr, "_frames", ()) if getattr(f, "kind", None) in ("obj", "arr")]


def _in_body(tr: KeyTracker) -> bool:
    frames = _arg_frames(tr)
    return bool(frames) and (frames[-1].path == "data" or frames[-1].path.startswith(("data.", "data[", "config.data")))


def _open_commas(text: str) -> int | None:
    """Commas at the top level of the innermost open array literal at the end of ``text`` (None:
    the innermost open literal is not an array). Strings are skipped, escapes included."""
    stack: list[list[Any]] = []
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
        elif c in "'\"`":
            quote = c
        elif c in "{[":
            stack.append([c, 0])
        elif c in "}]" and stack:
            stack.pop()
        elif c == "," and stack:
            stack[-1][1] += 1
        i += 1
    if not stack or stack[-1][0] != "[":
        return None
    return int(stack[-1][1])


def _limit_reason(opt: GrammarOptions, tr: KeyTracker, before: str, ch: str) -> str | None:
    """The profile's bound that refuses ``ch``, if one does (``max_nesting``, ``max_array_items``)."""
    tag = f" (--cd-profile {opt.profile})" if opt.profile != "callbench" else ""
    if opt.max_nesting is not None and ch in "{[":
        frames = _arg_frames(tr)
        level = len(frames) - (1 if frames and frames[0].path == "config" else 0)
        if frames and level > opt.max_nesting:
            return (
                f"an object or array nested {level} levels inside an argument: at most {opt.max_nesting} "
                f"are allowed{tag}"
            )
    n = opt.max_array_items
    if n is not None and ch not in " \t\r\n]":
        commas = _open_commas(before)
        if commas is not None and commas >= n and before.rstrip(" \t\r\n").endswith(","):
            return f"an array holds at most {n} items{tag}"
    return None


def _value_types_note(opt: GrammarOptions, tr: KeyTracker, desc: Any, ch: str) -> str:
    if opt.value_types != "paper" or ch not in "'\"`" or not _in_body(tr) or not isinstance(desc, Mapping):
        return ""
    scal = schema_scalars(desc)
    if scal is None or "string" in scal[1] or (scal[0] is not None and any(isinstance(v, str) for v in scal[0])):
        return ""
    return "; with --value-types paper a body value is written as a literal (3, 1.5, true), not a string"


def _ws_reason(opt: GrammarOptions, before: str, ch: str) -> str | None:
    """Why the whitespace ``ch`` after ``before`` is refused, if the whitespace bound is the cause."""
    run = before[len(before.rstrip(" \t\r\n")) :]
    if "\n" in run:
        if ch in "\r\n":
            return "a second line break in a row (no blank lines inside the call)"
        if len(run.split("\n", 1)[1]) >= opt.indent_max:
            return f"more than {opt.indent_max} spaces or tabs of indentation"
        return None
    if ch in " \t" and len(run) >= opt.space_max:
        return f"more than {opt.space_max} spaces or tabs in a row (break the line and indent instead)"
    return None


def _url_reason(spec: ApiSpec, g: WebApiGrammar, method: str, text: str, pos: int | None = None) -> str:
    m = re.match(r"\s*[A-Za-z_$][\w$]*\s*\(\s*", text)
    start = m.end() if m else 0
    base = re.match(r"([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)\s*\+\s*(['\"])", text[start:])
    if base is not None and g.options.real_world:  # BASE + '/path...': the name holds a server
        q = base.group(2)
        j = start + base.end()
        while j < len(text) and text[j] != q:
            j += 2 if text[j] == "\\" else 1
        cat = _concatenated(text, j + 1, q)
        shown = "${" + base.group(1) + "}" + (cat[0] if cat else text[start + base.end() : j])
        if base.group(1).split(".")[0] not in g.identifiers:
            return f"'{base.group(1)}' in URL '{shown}' is not a known identifier"
        return f"URL '{shown}' (its base {base.group(1)} holding a server) matches no path with method {method}"
    if start >= len(text) or text[start] not in "'\"`":
        return "the URL must be a string literal"
    q = text[start]
    j = start + 1
    while j < len(text) and text[j] != q:
        j += 2 if text[j] == "\\" else 1
    url = text[start + 1 : j]
    real = g.options.real_world

    def known(h: str) -> bool:
        return h in g.identifiers or (real and h.split(".")[0] in g.identifiers)

    if q == "`":
        unknown = [h for h in re.findall(r"\$\{\s*([^}]*?)\s*\}", url) if not known(h)]
        if unknown:
            return f"'${{{unknown[0]}}}' in URL '{url}' is not a known identifier"
    probe = re.sub(r"\$\{[^}]*\}", "1", url) if q == "`" else url
    cat = _concatenated(text, j + 1, q) if real and q != "`" else None
    if cat is not None:  # '...' + name + '...': the URL as the expression builds it
        shown, probe, names = cat
        for name in names:
            if not known(name):
                return f"'{name}' in URL {shown} is not a known identifier"
        url = shown
    matches = spec.match_paths(probe, real_world=g.options.real_world)
    fixed = any(spec.fixed_query(op) for pm in matches for op in pm.operations.values())
    if "?" in url and not g.options.allow_url_query and matches and not fixed:
        return f"URL '{url}' has a query string; pass query parameters in params"
    m_ops = [pm for pm in matches if method in pm.operations]
    if m_ops and "?" in probe and g.options.allow_url_query:
        op = m_ops[0].operations[method]
        params = g.model.op_args(op, g.options.credentials, True).config.props["params"]
        for pair in probe.split("#", 1)[0].partition("?")[2].split("&"):
            key = unquote_plus(pair.partition("=")[0])
            if key and key != "1" and params.child(key) is NO and not spec.fixed_query(op):
                return f"query parameter '{key}' in the URL is not an argument of {op.method.upper()} {op.path}"
    if not m_ops:
        msg = f"URL '{url}' matches no path with method {method}"
        if matches:
            allowed = sorted({mm for pm in matches for mm in pm.operations})
            msg += f" ({matches[0].template} allows {', '.join(allowed)})"
        return msg
    sibling = g.options.real_world and not spec.match_paths(probe)  # a host of the server's domain
    if not sibling and not any(probe.startswith(s) for s in spec.servers if s != "/") and "{" not in "".join(spec.servers):
        return f"URL '{url}' does not start with the server URL {spec.servers[0]}"
    pm = m_ops[0]
    op = pm.operations[method]
    for p in op.params_in("path"):
        value = pm.path_params.get(p.name)
        if value is None:
            continue
        scal = schema_scalars(p.schema) if isinstance(p.schema, Mapping) else None
        if scal is None:
            continue
        enums, types = scal
        if enums is not None and value not in [str(v) for v in enums]:
            return f"path parameter '{p.name}' = '{value}' in URL '{url}' is not one of {list(enums)}"
        if types and types <= {"integer", "null"} and not re.fullmatch(r"-?\d+", value):
            return f"path parameter '{p.name}' = '{value}' in URL '{url}' is not an integer"
    if pos is not None and pos <= j:
        # nothing above finds fault with the URL, and the spec matches it: say where the grammar
        # stopped rather than call a URL the spec allows wrong
        at = text[pos : pos + 1] or "end of text"
        return (
            f"URL '{url}' matches {method.upper()} {pm.template} of the spec, but the grammar refuses "
            f"{at!r} at offset {pos - start - 1} of the URL (a URL the grammar cannot write)"
        )
    return f"URL '{url}' is not a URL the spec allows with method {method}"


def _concatenated(text: str, i: int, q: str) -> tuple[str, str, list[str]] | None:
    """A '...' URL whose string ends at ``i`` and goes on with ``+`` (real-world profile): (the
    URL shown as a template, `` ${name} `` for each expression, the URL with "1" for each, the
    expressions), or None when no ``+`` follows."""
    m = re.match(r"\s*\+\s*", text[i:])
    if m is None:
        return None
    start = text.rfind(q, 0, i - 1)
    shown, probe, names = [text[start + 1 : i - 1]], [text[start + 1 : i - 1]], []
    i += m.end()
    while i < len(text):
        if text[i] in "'\"":
            j = i + 1
            while j < len(text) and text[j] != text[i]:
                j += 2 if text[j] == "\\" else 1
            shown.append(text[i + 1 : j])
            probe.append(text[i + 1 : j])
            i = j + 1
        else:
            w = re.match(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", text[i:])
            name = w.group(0) if w else text[i : i + 1]
            shown.append("${" + name + "}")
            probe.append("1")
            names.append(name)
            i += len(name)
            if w is None:
                break
        m = re.match(r"\s*\+\s*", text[i:])
        if m is None:
            break
        i += m.end()
    return "".join(shown), "".join(probe), names


def _args_reason(tr: KeyTracker, ctx: dict[str, Any], ch: str) -> str:
    args = tr.args
    op = ctx.get("op") or "the call"
    if args is None:
        return f"unexpected {ch!r} in the arguments"
    body = args.operation.method in BODY_METHODS
    argi = ctx.get("argi", 1)
    sig = "(url, data[, config])" if body else "(url[, config])"
    if ch == ")":
        if body and argi <= 1 and args.data_mandatory:
            req = sorted(args.data.required) if isinstance(args.data, ObjShape) else []
            return f"{op} needs data (required: {', '.join(req)})"
        return f"{op} needs a config with {config_needs(args)}"
    if argi > (2 if body else 1):
        return f"axios.{args.operation.method}{sig} takes no argument {argi + 1} here"
    if body and argi == 1:
        return f"data of {op} does not match its schema (expected {_describe(args.data)})"
    return f"config of {op} must be an object with params/headers{'/data' if 'data' in args.config.props else ''}"


def _full_key(partial: str, text: str, pos: int, tr: KeyTracker) -> str | None:
    """The key being written at ``pos`` read to its end (closing quote or non-identifier)."""
    quote = tr.key_quote
    rest = text[pos:]
    if quote is None:  # key not started yet: it starts at pos
        m = re.match(r"\s*(['\"])((?:[^\\]|\\.)*?)\1", rest) or re.match(r"\s*()([A-Za-z_$][\w$]*)", rest)
        return m.group(2) if m else None
    if quote:
        end = rest.find(quote)
        return partial + (rest[:end] if end >= 0 else rest)
    m = re.match(r"[\w$]*", rest)
    return partial + (m.group(0) if m else "")


def _tracker_reason(tr: KeyTracker, violation: str, data: bytes, i: int) -> str:
    if "can only become" in violation:
        ctx = tr.context()
        text = data.decode("utf-8", errors="replace")
        key = _full_key(ctx.get("partial", ""), text, _chars(data, i), tr)
        shape = ctx.get("shape")
        if key is not None and isinstance(shape, ObjShape) and shape.norm(key) in ctx.get("used", ()):
            return f"key '{key}' given twice in {ctx.get('object')}"
    return violation


def _incomplete_reason(tr: KeyTracker) -> str:
    ctx = tr.context()
    where = ctx.get("object") or ctx.get("op") or "the call"
    return f"the call is incomplete (text ends inside {where})"


def _describe(desc: Any) -> str:
    if desc is None:
        return "any value"
    if desc is NO:
        return "nothing: the key is not allowed"
    if isinstance(desc, ObjShape):
        return "an object" if desc.kind != "empty" else "no body (null, {} or undefined)"
    if isinstance(desc, CredentialValue):
        if desc.free:
            return "a credential: a string or an expression (identifier, member access, template, concatenation)"
        return "the credential placeholder " + " or ".join(repr(v) for v in desc.values)
    scal = schema_scalars(desc)
    if scal is None:
        return "any value"
    enums, types = scal
    if enums is not None:
        shown = ", ".join(repr(v) for v in enums[:8]) + (", …" if len(enums) > 8 else "")
        return f"one of {shown}"
    return " or ".join(sorted(types)) or "any value"
