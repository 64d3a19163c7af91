"""Reading spec files, deep-freezing them and resolving ``$ref``.

Design (the cycle choice): refs are resolved *eagerly* into a graph of read-only objects.
Mappings become :class:`types.MappingProxyType`, lists become tuples, and every ``$ref`` is
replaced by the frozen object it points to. A target is frozen once (memoised by the identity of
its raw node), so all refs to ``#/components/schemas/Node`` share one object, and a recursive
schema becomes a *cyclic* graph: ``node["properties"]["children"]["items"] is node``. Building a
cycle works because a MappingProxyType is a live view: the proxy is registered before its dict is
filled. Consumers therefore never see ``$ref`` in resolved data, but must walk with a depth
bound or a set of visited ids (see :mod:`callbench.specs.schema`).

Values under data keywords (``example``, ``default``, ``enum``, ``const``, ``value``, ``x-*``)
are frozen but never resolved: a ``$ref`` key inside an example is data, not a reference.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote

import yaml

from callbench.errors import SpecError
from callbench.untrusted import DOCUMENT_MAX_DEPTH, UntrustedInputError, check_value, loads_json

# Keys whose children are user-chosen names (so a property called "example" is still a schema).
_NAME_MAPS = frozenset(
    {
        "paths",
        "properties",
        "patternProperties",
        "schemas",
        "parameters",
        "responses",
        "requestBodies",
        "headers",
        "securitySchemes",
        "links",
        "callbacks",
        "examples",
        "content",
        "encoding",
        "definitions",
        "$defs",
        "dependentSchemas",
        "variables",
        "pathItems",
        "webhooks",
        "scopes",
        "mapping",
    }
)
# Keys whose values are literal data, never spec structure.
_DATA_KEYS = frozenset({"example", "default", "enum", "const", "value"})
# In OpenAPI 3.1 a Reference Object may carry these without becoming a schema with siblings.
_REF_ANNOTATIONS = frozenset({"summary", "description"})


def _yaml_loader() -> type:
    """A safe (C when available) loader that keeps dates as strings and accepts a bare '='.

    OpenAPI is JSON-compatible, so ``2024-01-01`` must stay a string; PyYAML's safe loader
    also has no constructor for the ``=`` value tag, which some real specs use as an enum value.
    """
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = type("_SpecLoader", (base,), {})
    loader.yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for ch, resolvers in base.yaml_implicit_resolvers.items()
    }
    loader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_yaml_str)
    return loader


_LOADER = _yaml_loader()


def read_document(path: Path, label: str | None = None) -> Any:
    """Parse a YAML or JSON file; any failure becomes a one-line SpecError naming the file."""
    name = label or path.name
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        raise SpecError(f"{name}: file not found ({path})") from None
    except OSError as exc:
        raise SpecError(f"{name}: cannot read file: {exc.strerror or exc}") from None
    if text[:1] in (b"{", b"[") or path.suffix.lower() == ".json":
        try:
            return loads_json(text, what=name, max_depth=DOCUMENT_MAX_DEPTH)
        except UntrustedInputError as exc:
            message = str(exc)
            if message.startswith(f"{name}: invalid JSON ("):  # "x.json: invalid JSON: <where>", as before
                if path.suffix.lower() != ".json":
                    message = ""  # YAML that starts with '{' or '[': read below
                else:
                    message = f"{name}: invalid JSON: {_one_line(message[len(name) + 16 : -1])}"
            if message:
                raise SpecError(message) from None
    cached = _cache_file(text)
    if cached is not None:
        try:
            return _bounded(marshal.loads(cached.read_bytes()), name)
        except (OSError, EOFError, ValueError, TypeError):
            pass
    try:
        doc = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader subclass
    except RecursionError:
        raise SpecError(f"{name}: nested deeper than {DOCUMENT_MAX_DEPTH} levels") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = exc.problem or exc.context or "syntax error"
        raise SpecError(f"{name}: {where}YAML syntax error: {_one_line(what)}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"{name}: YAML error: {_one_line(str(exc))}") from None
    doc = _bounded(doc, name)
    if cached is not None:
        _write_cache(cached, doc)
    return doc


def _bounded(doc: Any, name: str) -> Any:
    """``doc`` when it is at most :data:`DOCUMENT_MAX_DEPTH` levels deep (and not an alias bomb);
    a one-line SpecError otherwise, so no recursive walk after it can overflow the stack."""
    try:
        return check_value(doc, what=name, max_depth=DOCUMENT_MAX_DEPTH)
    except UntrustedInputError as exc:
        raise SpecError(str(exc)) from None


_CACHE_FORMAT = "1"


def _cache_file(text: bytes) -> Path | None:
    """Where the parsed form of this YAML text is cached, keyed by its bytes (never stale).

    Building Python objects from YAML costs ~1 s for WAPIIBench's four specs even with libyaml's
    parser, before every run; reading them back with :mod:`marshal` takes milliseconds. marshal
    (not JSON) keeps what YAML produced exactly, e.g. integer response codes as keys.
    ``CALLBENCH_SPEC_CACHE=0`` turns the cache off.
    """
    if len(text) < 32_768 or os.environ.get("CALLBENCH_SPEC_CACHE", "1") == "0":
        return None
    from callbench.data.paths import cache_dir

    key = hashlib.sha256(text).hexdigest()[:32]
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}-{_CACHE_FORMAT}"
    return cache_dir() / "specs" / f"{key}-{tag}.marshal"


def _write_cache(path: Path, doc: Any) -> None:
    try:
        data = marshal.dumps(doc)
    except ValueError:  # a value marshal cannot hold: parse the YAML each time
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:  # a read-only cache is only slower
        pass


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def format_location(tokens: list[Any] | tuple[Any, ...]) -> str:
    """``['paths', '/tasks', 'get', 'parameters', 2]`` -> ``paths./tasks.get.parameters[2]``."""
    out = ""
    for tok in tokens:
        if isinstance(tok, int):
            out += f"[{tok}]"
        else:
            out += ("." if out else "") + str(tok)
    return out or "(document root)"


def _key(k: Any) -> str:
    """YAML may give int (``200:``) or bool keys; OpenAPI keys are strings."""
    if isinstance(k, str):
        return k
    if isinstance(k, bool):
        return "true" if k else "false"
    return str(k)


def freeze(value: Any) -> Any:
    """Deep-freeze plain data (dict -> MappingProxyType, list -> tuple) without resolving refs."""
    t = type(value)
    if t is dict:
        return MappingProxyType({_key(k): freeze(v) for k, v in value.items()})
    if t is list or t is tuple:
        return tuple(freeze(v) for v in value)
    if t is MappingProxyType:
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({_key(k): freeze(v) for k, v in value.items()})
    if isinstance(value, set | frozenset):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze` for acyclic data: plain dicts and lists (JSON-ready)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


def split_pointer(fragment: str) -> list[str]:
    """``/components/schemas/a~1b`` -> ``['components', 'schemas', 'a/b']`` (RFC 6901 + URI)."""
    if fragment in ("", "/"):
        return [] if fragment == "" else [""]
    if not fragment.startswith("/"):
        raise ValueError("JSON pointer must start with '/'")
    return [unquote(t).replace("~1", "/").replace("~0", "~") for t in fragment[1:].split("/")]


class Resolver:
    """Turns raw parsed documents into the frozen, ref-free graph described in the module doc.

    One resolver per loaded spec; it also loads relative external files on demand. A lock makes
    the lazy :meth:`resolve_value` safe to call from several threads.
    """

    def __init__(self, root: Any, path: Path, label: str, openapi31: bool = False):
        self.path = path.resolve()
        self.label = label
        self.openapi31 = openapi31
        self.docs: dict[Path, Any] = {self.path: root}
        self._memo: dict[int, Any] = {}
        self._chain: set[int] = set()
        # bare refs of ref-to-ref chains -> (the raw node, kept alive so its id stays its own; what it resolves to)
        self._chains: dict[int, tuple[Any, Any]] = {}
        self._loc: list[Any] = []
        self._depth = 0  # containers being frozen, one inside the other (see MAX_RESOLVED_DEPTH)
        self._lock = threading.RLock()

    # -- public -------------------------------------------------------------------------
    def resolve_document(self) -> Any:
        with self._lock:
            saved = self._loc
            try:
                return self._bounded(lambda: self._conv(self.docs[self.path], self.path, False, False))
            finally:
                self._loc = saved

    def resolve_ref(self, ref: str) -> Any:
        """Resolve a ``$ref`` string relative to the root document."""
        with self._lock:
            saved, self._loc = self._loc, ["$ref"]
            try:
                return self._bounded(lambda: self._follow({"$ref": ref}, self.path))
            finally:
                self._loc = saved

    def resolve_value(self, value: Any) -> Any:
        """Freeze and resolve an arbitrary raw value whose refs are relative to the root document."""
        with self._lock:
            saved, self._loc = self._loc, []
            try:
                return self._bounded(lambda: self._conv(value, self.path, False, False))
            finally:
                self._loc = saved

    def _bounded(self, work: Any) -> Any:
        """``work()`` with the nesting count restored afterwards; a stack overflow (a caller that
        was already deep) is the same one-line error as a too-deep resolution."""
        depth = self._depth
        try:
            return work()
        except RecursionError:
            raise self.error(
                f"nested too deeply through $ref to resolve (more than {MAX_RESOLVED_DEPTH} levels, or a deep caller)"
            ) from None
        finally:
            self._depth = depth

    # -- internals ----------------------------------------------------------------------
    def error(self, message: str, loc: list[Any] | None = None, doc: Path | None = None) -> SpecError:
        where = format_location(self._loc if loc is None else loc)
        label = self.label if doc is None or doc == self.path else doc.name
        return SpecError(f"{label}: {where}: {message}")

    def _conv(self, raw: Any, doc: Path, data: bool, names: bool) -> Any:
        """Freeze ``raw``; ``data``: inside a literal value; ``names``: keys are user names."""
        t = type(raw)
        if t is dict:
            if not data and not names and "$ref" in raw and isinstance(raw["$ref"], str):
                return self._follow(raw, doc)
            hit = self._memo.get(id(raw))
            if hit is not None:
                return hit
            out: dict[str, Any] = {}
            proxy = MappingProxyType(out)
            self._memo[id(raw)] = proxy
            loc = self._loc
            self._deeper()
            for k, v in raw.items():
                k = _key(k)
                tv = type(v)
                if tv is dict or tv is list:
                    child_data = data or (not names and (k in _DATA_KEYS or k.startswith("x-")))
                    child_names = not child_data and not names and k in _NAME_MAPS
                    loc.append(k)
                    out[k] = self._conv(v, doc, child_data, child_names)
                    loc.pop()
                else:
                    out[k] = v
            self._depth -= 1
            return proxy
        if t is list:
            hit = self._memo.get(id(raw))
            if hit is not None:
                return hit
            if id(raw) in self._chain:
                raise self.error("cyclic structure through an array cannot be frozen")
            self._chain.add(id(raw))
            loc = self._loc
            items = []
            self._deeper()
            for i, v in enumerate(raw):
                loc.append(i)
                items.append(self._conv(v, doc, data, False))
                loc.pop()
            self._depth -= 1
            self._chain.discard(id(raw))
            result = tuple(items)
            self._memo[id(raw)] = result
            return result
        if t is MappingProxyType:
            return raw  # already frozen by us (or by the caller): nothing left to resolve
        if isinstance(raw, Mapping):
            return self._conv(dict(raw), doc, data, names)
        if t is tuple:
            return self._conv(list(raw), doc, data, names)
        return raw

    def _deeper(self) -> None:
        self._depth += 1
        if self._depth > MAX_RESOLVED_DEPTH:
            raise self.error(
                f"nested deeper than {MAX_RESOLVED_DEPTH} levels once $refs are resolved (a chain of references too long)"
            )

    def _follow(self, node: dict[str, Any], doc: Path) -> Any:
        ref = node["$ref"]
        target_doc, tokens, target = self._lookup(ref, doc)
        chain: list[int] = []
        hops: list[dict[str, Any]] = []  # the bare refs passed (a ref-to-ref chain), for the memo
        saved = self._loc
        try:
            # A ref to a ref: follow the chain in a loop (any length), refusing loops like
            # A -> B -> A. A 3.1 ref with siblings of its own is followed by recursion (counted).
            while isinstance(target, dict) and isinstance(target.get("$ref"), str):
                hit = self._chains.get(id(target))
                if hit is not None:  # the rest of this chain was followed before
                    result = hit[1]
                    break
                if id(target) in self._chain:
                    raise self.error(f"$ref '{ref}' is part of a circular chain of references")
                self._chain.add(id(target))
                chain.append(id(target))
                self._loc = list(tokens)
                if self.openapi31 and any(k != "$ref" and k not in _REF_ANNOTATIONS for k in target):
                    hops.clear()  # siblings apply from here on: what comes before is not memoised
                    self._deeper()
                    result = self._follow(target, target_doc)
                    self._depth -= 1
                    break
                hops.append(target)
                ref = target["$ref"]
                target_doc, tokens, target = self._lookup(ref, target_doc)
            else:
                data, names = _context(tokens)
                self._loc = list(tokens)
                result = self._conv(target, target_doc, data, names)
            for raw_ref in hops:  # each bare ref of the chain stands for the same result
                self._chains[id(raw_ref)] = (raw_ref, result)
        finally:
            self._loc = saved
            for c in chain:
                self._chain.discard(c)
        if self.openapi31 and len(node) > 1:
            extra = {k: v for k, v in node.items() if k != "$ref" and k not in _REF_ANNOTATIONS}
            if extra:
                # 3.1: siblings of $ref apply together with the target, i.e. allOf semantics.
                loc = self._loc
                merged = {}
                for k, v in extra.items():
                    loc.append(k)
                    merged[_key(k)] = self._conv(
                        v, doc, k in _DATA_KEYS or k.startswith("x-"), k in _NAME_MAPS
                    )
                    loc.pop()
                merged["allOf"] = (result,)
                return MappingProxyType(merged)
        return result

    def _lookup(self, ref: str, doc: Path) -> tuple[Path, list[str], Any]:
        file_part, _, fragment = ref.partition("#")
        if file_part:
            if "://" in file_part:
                raise self.error(f"$ref '{ref}': remote references are not supported; download the file")
            target_doc = (doc.parent / unquote(file_part)).resolve()
            if target_doc not in self.docs:
                if not target_doc.is_file():
                    raise self.error(f"$ref '{ref}': external file not found ({target_doc})")
                self.docs[target_doc] = read_document(target_doc)
        else:
            target_doc = doc
        try:
            tokens = split_pointer(fragment)
        except ValueError:
            raise self.error(f"$ref '{ref}': fragment is not a JSON pointer") from None
        node = self.docs[target_doc]
        for i, tok in enumerate(tokens):
            if isinstance(node, dict):
                if tok in node:
                    node = node[tok]
                    continue
                # YAML may have turned an unquoted key such as 200 into an int.
                alt = next((k for k in node if not isinstance(k, str) and _key(k) == tok), _MISSING)
                if alt is not _MISSING:
                    node = node[alt]
                    continue
            elif isinstance(node, list) and tok.isdigit() and int(tok) < len(node):
                node = node[int(tok)]
                continue
            where = format_location(tokens[:i]) if i else "the document root"
            raise self.error(f"$ref '{ref}' does not resolve: no '{tok}' in {where}")
        return target_doc, tokens, node


_MISSING = object()
#: Containers one inside the other while freezing (a ``$ref`` lands its target inside the
#: referrer, so a chain of schemas each referring to the next nests as deep as the chain). Real
#: specs stay far below (the deepest of the 2,639 APIs.guru specs, Microsoft Graph beta, reaches 128
#: levels; measured with a counting resolver); each level costs
#: up to two Python frames, and the bound keeps them well within the interpreter's 1,000.
MAX_RESOLVED_DEPTH = 300


def _context(tokens: list[str]) -> tuple[bool, bool]:
    """Recompute the (data, names) flags of the node a pointer designates."""
    data = names = False
    for tok in tokens:
        child_data = data or (not names and (tok in _DATA_KEYS or tok.startswith("x-")))
        child_names = not child_data and not names and tok in _NAME_MAPS
        data, names = child_data, child_names
    return data, names
