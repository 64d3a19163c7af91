"""What WAPIIBench's published ``mock.js`` logs for a request (compat scoring).

The published scorer runs the model's axios call under Node with axios-mock-adapter; ``mock.js``'s
reply function rewrites the config axios hands the adapter and writes it to the JSON file that
``evaluation.py`` compares with the expected config. Compat scoring compares that same logged
config, built here from what the sandbox records about the adapter's config (``raw``: see
``rawView`` in ``sandbox/axios_standin.js``), doing mock.js's steps in Python:

* **url**: ``decodeURIComponent`` of the whole URL (a malformed escape throws); the part after the
  first ``?`` moves to ``params``: split at ``&``, each piece at its first ``=``, nothing decoded
  further (``+`` stays ``+``); a piece without ``=`` becomes ``key: true`` (a bare ``?`` makes the
  empty key); a later pair overwrites an earlier one.
* **params** take those pairs: missing ones start as ``{}``; ``null`` throws; a URLSearchParams
  serializes as ``{}`` plus the pairs; an array, a value with ``toJSON`` or a primitive keeps none
  of them (JavaScript drops the writes).
* **data**: a falsy body or ``'null'`` becomes ``{}``; a string starting with ``{`` is
  ``JSON.parse``d (invalid JSON throws); any other string is read as a form body after
  ``decodeURIComponent`` (``+`` as space) with mock.js's own rules for ``a[]`` and ``a[b]`` keys; a
  ``form-data`` package object becomes its parts' names and values; another ``FormData`` throws
  (mock.js reads the package's ``_streams``); any other value is kept.
* axios-mock-adapter itself fails for a method it has no handler list for (``trace``, ``query``,
  ...), and mock.js's ``JSON.stringify`` fails on a config it cannot serialize.

Whenever mock.js (or the adapter) throws, the request's promise rejects and the published scorer
sees Node exit with an error: :class:`MockError`, a ``runtime_error`` in compat. JavaScript
semantics are kept where the scorer can see them (``parseInt``, array indexes, writes to
primitives that JavaScript ignores, doubles for big JSON numbers). Hand-written: no library
reproduces mock.js, and its rules are the scorer's definition.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from typing import Any

__all__ = ["MOCK_VERBS", "MockError", "decode_uri_component", "js_json_parse", "log_size", "mock_log"]

# The methods axios-mock-adapter keeps handler lists for (onAny's handler is found through them).
MOCK_VERBS = ("get", "post", "head", "delete", "patch", "put", "options", "list", "link", "unlink")
# The config fields evaluation.py reads.
LOGGED_FIELDS = ("method", "url", "params", "headers", "data", "path_params")

# Names every plain JavaScript object inherits (reading one gives a function, not undefined).
_OBJECT_MEMBERS = frozenset(
    "constructor __defineGetter__ __defineSetter__ hasOwnProperty __lookupGetter__ __lookupSetter__ "
    "isPrototypeOf propertyIsEnumerable toString valueOf __proto__ toLocaleString".split()
)
_ARRAY_MEMBERS = frozenset(
    "at concat copyWithin entries every fill filter find findIndex findLast findLastIndex flat flatMap "
    "forEach includes indexOf join keys lastIndexOf map pop push reduce reduceRight reverse shift slice "
    "some sort splice toLocaleString toReversed toSorted toSpliced toString unshift values with".split()
)
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)$")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
# JavaScript's `.` matches anything but line terminators
_PART_NAME = re.compile(r'name="([^\n\r\u2028\u2029]*?)"')


class MockError(Exception):
    """mock.js (or axios-mock-adapter) throws for this config: Node exits with an error."""


# ---------------------------------------------------------------- JavaScript builtins


def decode_uri_component(text: str) -> str:
    """JavaScript's ``decodeURIComponent``: every ``%XX`` run decoded as UTF-8; a ``%`` not
    followed by two hex digits, or bytes that are not UTF-8, throw (MockError)."""
    if "%" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        first = _hex_byte(text, i)
        if first < 0x80:
            out.append(chr(first))
            i += 3
            continue
        size = 2 if first >> 5 == 0b110 else 3 if first >> 4 == 0b1110 else 4 if first >> 3 == 0b11110 else 0
        if not size:
            raise MockError(f"URIError: URI malformed ({text[i : i + 3]})")
        raw = bytes([first] + [_hex_byte(text, i + 3 * k) for k in range(1, size)])
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise MockError("URIError: URI malformed") from None
        i += 3 * size
    return "".join(out)


def _hex_byte(text: str, at: int) -> int:
    chunk = text[at : at + 3]
    if len(chunk) < 3 or chunk[0] != "%" or not _HEX2.fullmatch(chunk[1:]):
        raise MockError("URIError: URI malformed")
    return int(chunk[1:], 16)


def _js_int(text: str) -> Any:
    value = int(text)
    if abs(value) <= 2**53:
        return value
    return _js_double(float(text))


def _js_double(value: float) -> Any:
    """A JavaScript number as JSON.stringify writes it and Python's json reads it back."""
    if math.isinf(value) or math.isnan(value):
        return None
    if value.is_integer() and abs(value) < 1e21:
        # JavaScript writes the shortest digits that read back as this double, then zeros
        # (12345678901234567890 -> 12345678901234567000); Python's repr has the same digits
        return int(decimal.Decimal(repr(value)))
    return value


def _no_constant(name: str) -> Any:
    raise MockError(f"SyntaxError: Unexpected token in JSON ({name})")


def js_json_parse(text: str) -> Any:
    """``JSON.parse`` as the config file then holds it: no NaN/Infinity, numbers as doubles."""
    try:
        return json.loads(
            text, parse_int=_js_int, parse_float=lambda s: _js_double(float(s)), parse_constant=_no_constant
        )
    except ValueError as e:
        raise MockError(f"SyntaxError: {e}") from None


def _parse_int_is_nan(text: str) -> bool:
    """``isNaN(parseInt(text))``: no digit where parseInt looks for one."""
    s = text.lstrip(_JS_SPACE)
    if s[:1] in "+-":
        s = s[1:]
    if s[:2] in ("0x", "0X"):
        return not re.match(r"[0-9A-Fa-f]", s[2:])
    return not re.match(r"[0-9]", s)


# ---------------------------------------------------------------- a small JavaScript object model


class _JsArray(list):
    """A JavaScript array: index keys are elements (holes are None, as JSON writes them), other
    keys are properties JSON.stringify does not write."""

    def __init__(self, *args: Any):
        super().__init__(*args)
        self.props: dict[str, Any] = {}


class _JsFunction:
    """A function read from a prototype (``data.toString``): truthy, its properties invisible."""

    def __init__(self) -> None:
        self.props: dict[str, Any] = {}


_UNDEFINED = object()


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        return _JsFunction() if key in _OBJECT_MEMBERS else _UNDEFINED
    if isinstance(obj, _JsArray):
        if _INDEX.match(key):
            i = int(key)
            return obj[i] if i < len(obj) and obj[i] is not None else _UNDEFINED
        if key == "length":
            return len(obj)
        if key in obj.props:
            return obj.props[key]
        return _JsFunction() if key in _ARRAY_MEMBERS or key in _OBJECT_MEMBERS else _UNDEFINED
    if isinstance(obj, str):
        if _INDEX.match(key) and int(key) < len(obj):
            return obj[int(key)]
        return len(obj) if key == "length" else _UNDEFINED
    if isinstance(obj, _JsFunction):
        return obj.props.get(key, _UNDEFINED)
    if obj is _UNDEFINED or obj is None:
        raise MockError(f"TypeError: Cannot read properties of undefined (reading '{key}')")
    return _UNDEFINED


def _set(obj: Any, key: str, value: Any) -> None:
    """``obj[key] = value`` in sloppy mode (writes to primitives are dropped silently)."""
    if isinstance(obj, dict):
        if key == "__proto__":
            return  # sets the prototype (an object) or nothing (a primitive): no own key either way
        obj[key] = value
    elif isinstance(obj, _JsArray):
        if _INDEX.match(key) and int(key) < 2**32 - 1:
            i = int(key)
            if i >= 10_000_000:
                raise MockError("RangeError: array too large for the compat view")
            obj.extend([None] * (i + 1 - len(obj)))
            obj[i] = value
        elif key == "length":
            try:
                size = int(str(value))
            except ValueError:
                raise MockError("RangeError: Invalid array length") from None
            if size < 0 or size >= 10_000_000:
                raise MockError("RangeError: Invalid array length")
            del obj[size:]
            obj.extend([None] * (size - len(obj)))
        elif key != "__proto__":
            obj.props[key] = value
    elif isinstance(obj, _JsFunction):
        obj.props[key] = value
    elif obj is _UNDEFINED or obj is None:
        raise MockError(f"TypeError: Cannot set properties of undefined (setting '{key}')")


def _truthy(value: Any) -> bool:
    if value is _UNDEFINED or value is None or value is False:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return True


def _plain(value: Any) -> Any:
    """The JSON the config file holds for a value of the model (invisible properties dropped)."""
    if isinstance(value, _JsArray):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {
            k: _plain(v) for k, v in value.items() if not isinstance(v, _JsFunction) and v is not _UNDEFINED
        }
    if isinstance(value, _JsFunction) or value is _UNDEFINED:
        return None
    return value


def _model(value: Any) -> Any:
    """JSON (as the stand-in recorded it) as the object model."""
    if isinstance(value, list):
        return _JsArray(_model(v) for v in value)
    if isinstance(value, dict):
        return {k: _model(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------- mock.js


def _split_url(raw: dict[str, Any]) -> tuple[str, list[tuple[str, Any]] | None]:
    url = raw.get("url") or {}
    if url.get("type") == "symbol" or "text" not in url:
        raise MockError("TypeError: Cannot convert a Symbol value to a string")
    decoded = decode_uri_component(str(url["text"]))
    at = decoded.find("?")
    if at == -1:
        return decoded, None
    pairs: list[tuple[str, Any]] = []
    for piece in decoded[at + 1 :].split("&"):
        eq = piece.find("=")
        pairs.append((piece[:eq], piece[eq + 1 :]) if eq >= 0 else (piece, True))
    return decoded[:at], pairs


def _logged_params(raw: dict[str, Any], pairs: list[tuple[str, Any]] | None) -> tuple[bool, Any]:
    """(present in the file?, value) of ``params`` after mock.js added the URL's query pairs."""
    facts = raw.get("params") or {"present": False}
    if not facts.get("present"):
        if pairs is None:
            return False, None
        params: dict[str, Any] = {}
        for k, v in pairs:
            _set(params, k, v)
        return True, params
    kind = facts.get("type")
    if pairs is not None and kind in ("null", "undefined"):
        raise MockError(f"TypeError: Cannot set properties of {kind} (setting '{pairs[0][0]}')")
    if "json_error" in facts:
        raise MockError(facts["json_error"])
    if "json" not in facts:
        return False, None
    value = _model(facts["json"])
    if pairs is not None and not facts.get("to_json"):
        if kind == "object" and isinstance(value, dict):
            for k, v in pairs:
                _set(value, k, v)
        elif kind == "array" and isinstance(value, _JsArray):
            for k, v in pairs:
                if _INDEX.match(k):
                    _set(value, k, v)
    return True, _plain(value)


def _form_body(text: str) -> dict[str, Any]:
    """mock.js's reading of a body that is not JSON: ``k=v`` pairs, ``k[]`` appends, ``a[b][c]``
    nests (an object, or an array when the next key starts like a number)."""
    data: dict[str, Any] = {}
    for pair in decode_uri_component(text.replace("+", " ")).split("&"):
        at = pair.find("=")
        key = pair[:at] if at >= 0 else pair[:-1]  # JavaScript: slice(0, -1) when there is no '='
        value = pair[at + 1 :]
        if key.endswith("[]"):
            key = key[:-2]
            current = _get(data, key)
            if _truthy(current):
                if not isinstance(current, _JsArray):
                    raise MockError(f"TypeError: config.data[{key!r}].push is not a function")
                current.append(value)
            else:
                _set(data, key, _JsArray([value]))
        elif key.endswith("]"):
            node: Any = data
            last: str | None = None
            for m in re.finditer(r"[^\[\]]+", key):
                nxt = m.group(0)
                if last is not None:
                    if not _truthy(_get(node, last)):
                        _set(node, last, {} if _parse_int_is_nan(nxt) else _JsArray())
                    node = _get(node, last)
                last = nxt
            _set(node, "undefined" if last is None else last, value)
        else:
            _set(data, key, value)
    return data


def _logged_data(raw: dict[str, Any]) -> tuple[bool, Any]:
    """(present in the file?, value) of ``data`` after mock.js rewrote it."""
    facts = raw.get("data") or {"type": "undefined"}
    kind = facts.get("type")
    if kind == "undefined":
        return False, None
    if facts.get("falsy") or (kind == "string" and facts.get("text") == "null"):
        return True, {}
    if kind == "string":
        text = str(facts.get("text", ""))
        if text.startswith("{"):
            return True, js_json_parse(text)
        return True, _plain(_form_body(text))
    if kind == "object" and facts.get("ctor") is None:
        raise MockError("TypeError: Cannot read properties of undefined (reading 'name')")
    if kind == "object" and facts.get("ctor") == "FormData":
        parts = facts.get("parts")
        if parts is None:
            raise MockError("TypeError: Cannot read properties of undefined (reading 'length')")
        data: dict[str, Any] = {}
        for header, value in parts:
            m = _PART_NAME.search(str(header))
            if m is None:
                raise MockError("TypeError: Cannot read properties of null (reading '1')")
            if "json_error" in value:
                raise MockError(value["json_error"])
            if "json" in value:
                _set(data, m.group(1), _model(value["json"]))
        return True, _plain(data)
    if "json_error" in facts:
        raise MockError(facts["json_error"])
    if "json" not in facts:
        return False, None
    return True, facts["json"]


def mock_log(raw: dict[str, Any]) -> dict[str, Any]:
    """The config mock.js writes for the adapter config ``raw`` describes, restricted to the
    fields evaluation.py reads. Raises MockError where mock.js or axios-mock-adapter throws."""
    if "error" in raw:  # the stand-in could not read the config (a getter threw): so would mock.js
        raise MockError(str(raw["error"]))
    method = raw.get("method")
    if not isinstance(method, str) or method.lower() not in MOCK_VERBS:
        raise MockError(f"TypeError: axios-mock-adapter has no handlers for method {method!r}")
    url, pairs = _split_url(raw)
    out: dict[str, Any] = {"method": method, "url": url}
    present, params = _logged_params(raw, pairs)
    if present:
        out["params"] = params
    headers = raw.get("headers")
    if headers is not None:
        out["headers"] = headers
    present, data = _logged_data(raw)
    if present:
        out["data"] = data
    if "path_params" in raw:
        facts = raw["path_params"]
        if "json" in facts:
            out["path_params"] = facts["json"]
    if raw.get("json_error"):
        raise MockError(str(raw["json_error"]))
    return out


def log_size(raw: dict[str, Any], logged: dict[str, Any]) -> int:
    """Bytes of the file mock.js writes for this request (``JSON.stringify(config, null, 2)``):
    the logged fields and the rest of the config the stand-in recorded (``raw["rest"]``).

    Why it matters: every request of a sample writes the same file, at the same time. The writes
    race; the file is only valid JSON when the longest text was written last (a shorter one over a
    longer leaves the longer one's tail, and the published ``compare()`` raises on the file), so
    a sample the published scorer scores at all holds its longest log."""
    whole = dict(raw.get("rest") or {})
    for key in ("url", "params", "headers", "data"):
        if key in logged:
            whole[key] = logged[key]
    text = json.dumps(whole, indent=2, ensure_ascii=False)
    return len(text.encode("utf-8", errors="surrogatepass"))
