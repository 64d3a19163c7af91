"""The URL part of the web API grammar: how each path key's URLs are written (:class:`~callbench.specs.call_model.UrlPlan`)
and the small lexemes they are made of (:class:`UrlWords`): ``/segment`` pieces, a tail, and the
server prefixes before them, with better-ranked templates' URLs cut out piece by piece
(:class:`Templates` knows which template shadows which). The grammar builder
(:mod:`callbench.constrain.webapi_grammar`) merges the words into tries of rules.

Hand-written: the pieces are regexes in llguidance's dialect whose shadowing cuts must stay
exact against :meth:`callbench.specs.ApiSpec.match`; no library derives those from OpenAPI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property, lru_cache
from typing import Any, Protocol

from callbench.constrain.lark_text import literal_regex as _rx
from callbench.specs import ApiSpec, Operation
from callbench.specs.call_model import UrlPlan, url_plan
from callbench.specs.openapi import segment_pattern
from callbench.specs.schema_scalars import scalar_key, scalars_memoized

__all__ = ["FREE_HOLE", "FREE_QUERY_HOLE", "FREE_SEGMENT_HOLE", "FREE_SEGMENT_START", "GrammarWriter", "query_key_rx", "concat_holes", "query_forms", "PARAM_RX", "QUOTES", "Piece", "Templates", "UrlWords",
           "server_var_rx", "server_words"]

PARAM_RX = re.compile(r"\{([^{}]*)\}")  # a ``{name}`` hole of a path template


class GrammarWriter(Protocol):
    """What the URL words need of the grammar builder (``webapi_grammar._Builder``): its spec,
    memo and terminal table, and the regexes of typed holes and fixed queries."""

    spec: ApiSpec
    memo: dict[Any, Any]

    def term(self, prefix: str, definition: str) -> str: ...

    #: what a URL hole may hold (identifiers in scope, member access), or "" when nothing may
    var_rx: str

    def hole_rx(self, schema: Any, quote: str, query: bool = False) -> str: ...

    def query_keys_rx(self, path: str) -> str: ...

    def query_value_groups(self, quote: str) -> tuple[str, tuple[tuple[str, str], ...]]: ...

    def fixed_query_rx(self, plan: UrlPlan, qholes: Mapping[str, Any], q: str) -> str: ...


class _Node:
    """A node of :class:`Templates`' segment trie."""

    __slots__ = ("lit", "wild", "ends")

    def __init__(self) -> None:
        self.lit: dict[str, _Node] = {}
        self.wild: dict[Any, _Node] = {}
        self.ends: list[str] = []


class Templates:
    """Path templates of a spec: hole schemas and which templates shadow which.

    ``spec.match`` picks, among the templates a URL matches, the best-ranked one that has the
    method (``ApiSpec.template_ranks``: fewest bare-parameter segments, most literal text, most
    parameters, ...). A URL the grammar offers for template B must
    therefore not also match a better-ranked template A with the same method, or the grammar
    would allow B's arguments where the scorer sees A: such URLs are cut out with ``& ~A``.
    """

    def __init__(self, spec: ApiSpec, scalars: dict[int, Any] | None = None):
        self.spec = spec
        self.scalars: dict[int, Any] = {} if scalars is None else scalars
        self.ops: dict[str, dict[str, Operation]] = {}
        for op in spec.operations:
            self.ops.setdefault(op.path, {})[op.method] = op
        self._order = {p: i for i, p in enumerate(self.ops)}
        self._holes: dict[str, dict[str, Any]] = {}
        self._shadow: dict[str, list[str]] = {}

    # The shadowing index is built on first use: a staged head needs no shadowing.
    @cached_property
    def _segs(self) -> dict[str, list[Any]]:
        return {p: self._segments(p) for p in self.ops}

    @cached_property
    def _ranks(self) -> dict[str, tuple[Any, ...]]:
        return self.spec.template_ranks()  # the order spec.match tries templates in

    @cached_property
    def _trie(self) -> _Node:
        """Index for shadowing: a trie of segments (literal children by text, templated children
        by their matcher), walked with a path's segments to find every template of the same
        length that overlaps it; prefixes that cannot overlap are cut off at once (Microsoft
        Graph's 16,000 paths made a pairwise check the largest part of its build)."""
        root = _Node()
        for p, segs in self._segs.items():
            node = root
            for seg in segs:
                if isinstance(seg, str):
                    nxt = node.lit.get(seg)
                    if nxt is None:
                        nxt = node.lit[seg] = _Node()
                else:
                    nxt = node.wild.get(seg)
                    if nxt is None:
                        nxt = node.wild[seg] = _Node()
                node = nxt
            node.ends.append(p)
        return root

    @staticmethod
    def _segments(path: str) -> list[Any]:
        """Literal segments as text, templated ones as linear matchers (a ``.+`` regex per
        variable backtracks exponentially on a hostile template such as ``{a}{b}...{z}``)."""
        norm = path.rstrip("/") or "/"
        return [segment_pattern(seg) or seg for seg in norm.split("/")[1:]]

    def _overlapping(self, path: str) -> list[str]:
        """Every template with as many segments as ``path`` whose segments pairwise may match
        (equal literals, a literal a templated segment matches, or two templated segments)."""
        hit = self._shadow.get(path)
        if hit is not None:
            return hit
        segs = self._segs[path]
        nodes = [self._trie]
        for seg in segs:
            nxt: list[_Node] = []
            if isinstance(seg, str):
                for node in nodes:
                    child = node.lit.get(seg)
                    if child is not None:
                        nxt.append(child)
                    for pat, child in node.wild.items():
                        if pat.fullmatch(seg) is not None:
                            nxt.append(child)
            else:
                for node in nodes:
                    for text, child in node.lit.items():
                        if seg.fullmatch(text) is not None:
                            nxt.append(child)
                    nxt.extend(node.wild.values())
            nodes = nxt
            if not nodes:
                break
        out = [p for node in nodes for p in node.ends]
        self._shadow[path] = out
        return out

    def shadowing(self, path: str, method: str) -> list[str]:
        """Better-ranked templates with ``method`` a URL of ``path`` may also match (a template
        that differs in its trailing slash is listed too: the segments read alike; the tails
        tell them apart, see :meth:`UrlWords._tails_disjoint`)."""
        mine = self._ranks[path]
        found = {
            p for p in self._overlapping(path) if p != path and method in self.ops[p] and self._ranks[p] < mine
        }
        return sorted(found, key=self._order.__getitem__)  # spec order, as before

    def hole_schemas(self, path: str) -> dict[str, Any]:
        hit = self._holes.get(path)
        if hit is None:
            hit = self._holes[path] = self._hole_schemas(path)
        return hit

    def _hole_schemas(self, path: str) -> dict[str, Any]:
        """Each path parameter's schema (its first operation's) where all operations of ``path``
        type it alike (the same scalars), else None (a free hole)."""
        out: dict[str, list[Mapping[str, Any]]] = {}
        for op in self.ops.get(path, {}).values():
            for p in op.parameters:
                if p.location == "path" and p.schema:
                    seen = out.get(p.name)
                    if seen is None:
                        out[p.name] = [p.schema]
                    elif p.schema is not seen[0]:  # a path item's parameter is shared: once
                        seen.append(p.schema)
        merged: dict[str, Any] = {}
        for name, schemas in out.items():
            first, others = schemas[0], schemas[1:]
            if others:
                key = scalar_key(first)  # equal keys mean equal scalars; else compare the scalars
                if key is None or any(scalar_key(s) != key for s in others):
                    one = scalars_memoized(first, self.scalars)
                    if any(scalars_memoized(s, self.scalars) != one for s in others):
                        first = None
            merged[name] = first
        return merged


QUOTES = ("'", '"', "`")
# A free (untyped) path hole's regex in a '...'/"..." URL and in a backtick one, and a fixed
# query's (which stops at ``&``), without and with backticks.
FREE_HOLE = {"'": r"[^\x2f?#\x27\x22\x60\x5c\s]+", "`": r"[^\x2f?#\x27\x22\x60\x5c\s$]+"}
# The same holes, never starting with a dot segment's first character (``.`` or ``%2e``, which the
# URL parser reads as ``.``): a path parameter whose value is ``.`` or ``..`` is removed or climbs
# one segment when axios sends the request (``/calendarList/.`` goes to ``/calendarList/``), so the
# call would reach another path than the one its arguments were checked for. The real-world
# profile's path holes (a value starting with a dot is rare; the paper profile keeps WAPIIBench's).
FREE_SEGMENT_START = {
    q: rf"(?:[^.%{x}]|%(?:[^2{x}]|2[^eE{x}]))" for q, x in ((q, rx[2:-2]) for q, rx in FREE_HOLE.items())
}  # x: what a free hole's character class leaves out
FREE_SEGMENT_HOLE = {q: FREE_SEGMENT_START[q] + FREE_HOLE[q][:-1] + "*" for q in FREE_HOLE}
FREE_QUERY_HOLE = (r"[^&#\x27\x22\x60\x5c\s]+", r"[^&#\x27\x22\x60\x5c\s$]+")


def ends_in_slash(path: str) -> bool:
    """A path key whose path ends in ``/`` (``/users/``): its URLs end in ``/``, and no other
    template's do (:meth:`ApiSpec.match_paths` matches the trailing slash exactly)."""
    return len(path) > 1 and path.endswith("/")


#: The quote that ends and restarts a string around a concatenated expression
#: (``'.../users/' + name + '/repos'``) in a '...' URL, and in a "..." one: spelled apart from the
#: closing quote of a tail so that :func:`_dq` finds it.
SQ_CAT, DQ_CAT = r"(?:\x27)", r"(?:\x22)"
# One character of a query's key or value (``&``, ``=``, ``#`` and quotes end it), without and with
# backticks (where ``$`` may start ``${``).
_QUERY_CH = (r"[^&#\x27\x22\x60\x5c\s]", r"[^&#\x27\x22\x60\x5c\s$]")
FREE_QUERY_KEY = r"[^&=#\x27\x22\x60\x5c\s$]+"
_UNRESERVED = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")
_NEVER_RAW_IN_KEY = frozenset("&=#%+'\"`\\")  # end the key, escape, mean a space, or close the string


def query_key_rx(name: str) -> str:
    """Regex of a query key as a URL may spell ``name``: each character but the unreserved ones
    as itself (where it cannot end the key or the string) or percent-encoded in either hex case
    (``$filter`` or ``%24filter``, ``filter[id]`` or ``filter%5Bid%5D``; a space also ``+``), as
    the server decodes them to the same name (the key tracker reads keys with ``unquote_plus``)."""
    out = []
    for ch in name:
        if ch in _UNRESERVED:
            out.append(_rx(ch))
            continue
        alts = ["".join("%" + "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in f"{b:02X}") for b in ch.encode("utf-8"))]
        if ch == " ":
            alts.append(r"\+")
        elif ch not in _NEVER_RAW_IN_KEY and not ch.isspace():
            alts.append(_rx(ch))
        out.append(f"(?:{'|'.join(alts)})")
    return "".join(out)


def _dq(rx: str, tail: bool = False) -> str:
    """A '...' URL piece as written in "...": its concatenation quotes (:data:`SQ_CAT`) and, for a
    ``tail``, its closing quote (the rest of a piece is the same)."""
    rx = rx.replace(SQ_CAT, DQ_CAT)
    if tail and rx.endswith(r"\x27"):
        rx = rx[:-4] + r"\x22"
    return rx


def _quote_may_follow(plan: UrlPlan) -> bool:
    """May the URL's closing quote come right after the path's last segment (no trailing ``/``,
    fixed query or label in between)?"""
    return not plan.query and plan.label is None and not ends_in_slash(plan.path)


def _dq_tail(tail: str) -> str:
    return _dq(tail, tail=True)


def concat_holes(q: str, var: str) -> tuple[str, str]:
    """The regexes of an expression joined by ``+`` into a '...' or "..." URL: in its middle
    (``' + name + '``) and at its end (``' + name``, with the spaces after it: llguidance's lexer
    does not backtrack, so where ``' + name `` could still go on with ``+ '`` the lexeme that
    ends the URL must also take the spaces, or ``' + name )`` would fail at the ``)``)."""
    c = SQ_CAT if q == "'" else DQ_CAT
    return rf"{c}[ ]*\+[ ]*(?:{var})[ ]*\+[ ]*{c}", rf"{c}[ ]*\+[ ]*(?:{var})[ ]*"


def query_forms(keys: str, q: str, var: str | None, typed: tuple[str, tuple[tuple[str, str], ...]] | None = None) -> tuple[str, str]:
    """A URL's query after ``?`` (``GrammarOptions.allow_url_query``), and the query text after
    which an expression may end the URL by concatenation (after ``?``, ``&`` or in a value).

    Pairs ``key=value`` (or ``key`` alone, or nothing between two ``&``) whose keys are ``keys``
    (the operation's declared query parameters and credentials, a regex), values free text with
    holes; with ``var`` (identifiers in scope) a hole (``${name}``, or ``' + name + '``) may also
    stand for whole pairs (``?${params}``: their keys cannot be seen, as a ``params`` identifier's).

    ``typed``: (the keys whose values are free text, ((keys, their value's regex), ...)) -- a key
    whose parameter is an enum, integer, number or boolean takes only such a value (the scorer
    judges a query value against its schema wherever it is written); None: every value free.
    Before an expression ending the URL (``'?limit=' + n``) a typed key's value is empty."""
    ch = _QUERY_CH[q == "`"]
    hole = None
    if var:
        hole = rf"\$\{{[ ]*(?:{var})[ ]*\}}" if q == "`" else concat_holes(q, var)[0]
    val = f"(?:{ch}|{hole})*" if hole else f"{ch}*"
    if typed is None:
        free, groups = keys, ()
    else:
        free, groups = typed
    alts = [f"(?:{free})(?:={val})?"] if free else []
    alts += [f"(?:{k})=(?:{v})" for k, v in groups]  # a bare key is sent as `true`
    if hole:
        alts.append(hole)
    pair = f"(?:{'|'.join(alts)})"
    if not keys:  # no declared query key: only a hole may stand for pairs
        if hole is None:
            return "", ""
        return f"(?:{hole})?(?:&(?:{hole})?)*", f"(?:(?:{hole})?&)*"
    last = [f"(?:{free})={val}"] if free else []
    last += [f"(?:{'|'.join(k for k, _ in groups)})="] if groups else []
    return f"{pair}?(?:&{pair}?)*", f"(?:{pair}?&)*(?:{'|'.join(last)})?"


# One lexeme of a URL word: (regex, regexes of better-ranked templates' pieces cut out of it,
# its text when it is one literal segment, else None).
Piece = tuple[str, tuple[str, ...], str | None]


@lru_cache(maxsize=1 << 16)  # segments repeat across paths: one shared tuple each
def _ends(segment: str | None) -> tuple[str, str] | None:
    """The literal text every string of a ``/segment`` template piece starts and ends with."""
    if segment is None:
        return None
    parts = PARAM_RX.split(segment)
    return parts[0], parts[-1]


def _apart(x: tuple[str, str] | None, y: tuple[str, str] | None) -> bool:
    """Two pieces with these literal ends share no string: their starts (or ends) disagree."""
    if x is None or y is None:
        return False
    return not (x[0].startswith(y[0]) or y[0].startswith(x[0])) or not (
        x[1].endswith(y[1]) or y[1].endswith(x[1])
    )


def _cut(
    w: tuple[Piece, ...],
    shapes: tuple[tuple[str, str] | None, ...],
    a_pieces: tuple[str, ...],
    a_literal: tuple[str | None, ...],
    a_shapes: tuple[tuple[str, str] | None, ...],
) -> list[tuple[Piece, ...]]:
    """The word ``w`` less the URLs of another template's word, as words: for the positions
    j where they differ, ``w`` with A's piece j cut out at j and, before j, each piece narrowed
    to A's piece where that is a literal (so the words stay disjoint and later cuts by other
    literals drop out). Exact either way: a URL of w outside A is in the word of the first
    position where it leaves A."""
    diff = []
    for k, (rx, _, text) in enumerate(w):
        theirs = a_pieces[k]
        if rx == theirs:
            continue
        at = a_literal[k]
        if text is not None and at is not None:
            return [w]  # two different literals: no URL is in both
        if _apart((text, text) if text else shapes[k], a_shapes[k]):
            return [w]  # e.g. /{name}:cancel and /{name}:delete
        if text and _rx_matches(theirs, text):
            continue  # a literal A's piece matches: nothing of it is left outside A
        if at and _rx_matches(rx, at) is False:
            return [w]  # A's literal is not one of w's strings
        diff.append(k)
    out = []
    prefix = list(w)
    for k in diff:
        rx, excluded, text = prefix[k]
        out.append((*prefix[:k], (rx, (*excluded, a_pieces[k]), text), *w[k + 1 :]))
        at = a_literal[k]
        if at:
            if any(_rx_matches(x, at) for x in excluded):
                break  # this piece cannot be A's: no URL of w reaches A past here
            prefix[k] = (a_pieces[k], (), at)
    return out


def server_var_rx(text: str, variables: Any, free: str) -> str:
    """Regex of a server URL (or part of one): literal text, a variable with an ``enum`` one of
    its values, another variable ``free`` (any value)."""
    out = []
    for i, piece in enumerate(PARAM_RX.split(text)):
        if i % 2 == 0:
            out.append(_rx(piece))
            continue
        var = variables.get(piece) if isinstance(variables, Mapping) else None
        enum = var.get("enum") if isinstance(var, Mapping) else None
        if isinstance(enum, tuple | list) and enum:
            out.append("(?:" + "|".join(_rx(str(v)) for v in enum) + ")")
        else:
            out.append(free)
    return "".join(out)


#: The hosts of a server's registrable domain the grammar writes (see :func:`site_host_rx`).
SITE_HOST_LABELS = ("api", "www")


def site_host_rx(scheme_host: str) -> str | None:
    """``GrammarOptions.real_world``: the regex of a server's scheme and host, the host also any
    of its registrable domain's own hosts: the domain itself and its ``api.`` and ``www.`` hosts
    (``https://trello.com`` -> ``trello.com``, ``api.trello.com``, ``www.trello.com``; for
    ``https://youtube.googleapis.com`` also ``www.googleapis.com``: :mod:`callbench.specs.hosts`).
    None where the host has a variable, a port or user info, or no registrable domain (an IP
    address, ``localhost``).

    Matching (the scorer, the data check) takes any sub-domain of the registrable domain; the
    grammar writes these few: ``api`` is the most frequent first label of the APIs.guru
    directory's server hosts after Azure's ``management`` (440 of 2,072 hosts with a registrable
    domain), ``www`` the web host older APIs answer at, and free host labels would leave a
    generation no way back (a label that is not the domain's can only end in that domain's
    name: the token budget's completion search and random walks never find it)."""
    from callbench.specs.hosts import registrable_domain

    sep = scheme_host.find("//")
    host = scheme_host[sep + 2 :] if sep >= 0 else ""
    if not host or any(c in host for c in "{}:@"):
        return None
    site = registrable_domain(host)
    if site is None:
        return None
    # sorted: servers of one site give one regex (one lexeme, one word in the server trie)
    hosts = sorted({host, site, *(f"{label}.{site}" for label in SITE_HOST_LABELS)})
    return _rx(scheme_host[: sep + 2]) + "(?:" + "|".join(_rx(h) for h in hosts) + ")"


def server_words(
    spec: ApiSpec,
    quote: str,
    either_scheme: bool = False,
    server_var: str | None = None,
    sibling_hosts: bool | None = None,
    more_var: str | None = None,
) -> list[tuple[str, ...]]:
    """Every server prefix (root, path item and operation servers, as :meth:`ApiSpec.match`
    accepts them) as lexeme regexes: the opening quote, the scheme and host (when absolute),
    then one ``/segment`` each. An enum variable takes one of its values, another any value.

    ``either_scheme`` (``GrammarOptions.real_world``): ``http`` and ``https`` are one scheme (the
    same server). ``server_var`` (the regex of a variable in scope): in backticks the server may be
    that variable, `` `${BASE}`` `` (the key tracker reads the spec's servers in its place).
    ``sibling_hosts`` (None: as ``either_scheme``; both are ``GrammarOptions.real_world``): a host
    may be any of the server's registrable domain (:func:`site_host_rx`).

    With ``server_var`` in '...'/"...", also the name joined by ``+`` (``this.root + '/api/...'``,
    the same reading as `` `${this.root}/api/...` ``); in backticks, also: a server variable's value may hold ``${name}``
    (`` `https://api.telegram.org/bot${TOKEN}` ``), and the leading expression (one or more
    ``${...}`` in a row: `` `${API}${TOKEN}/sendMessage` ``) may hold the scheme, the host and any
    first segments of the server's path, the rest of that path then following segment by segment
    (`` `${TELEGRAM_API_URL}/bot${TOKEN}/getUpdates` `` for ``https://api.telegram.org/bot{token}``).
    What the expression holds is not checked (it cannot be seen); the text after it must be the
    server's remaining segments and then a path of the spec, from a segment boundary on.
    ``more_var``: what the second and later ``${...}`` of that run may hold (None: as the first;
    "": no second one)."""
    free = r"[^\x2f?#\x27\x22\x60\x5c\s]+" if quote != "`" else r"[^\x2f?#\x27\x22\x60\x5c\s$]+"
    lead = None
    if server_var is not None and quote != "`":  # BASE + '/path': the server as a name, joined by +
        lead = rf"(?:{server_var})[ ]*\+[ ]*{_rx(quote)}"
    if server_var is not None and quote == "`":
        hole = rf"\$\{{[ ]*(?:{server_var})[ ]*\}}"
        free = rf"(?:[^\x2f?#\x27\x22\x60\x5c\s$]|{hole})+"
        more = hole if more_var is None else rf"\$\{{[ ]*(?:{more_var})[ ]*\}}" if more_var else ""
        lead = f"{hole}(?:{more})*" if more else hole

    def rx(text: str, variables: Any) -> str:
        return server_var_rx(text, variables, free)

    words: list[tuple[str, ...]] = []
    for url, variables in spec.server_templates or (("/", {}),):
        url = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
        if url and "//" not in url and not url.startswith("/"):
            url = "/" + url  # a relative server such as "v1"
        cut = 0
        if "//" in url:
            cut = url.find("/", url.find("//") + 2)
            cut = len(url) if cut < 0 else cut
        word = [_rx(quote)]
        if cut:
            host = rx(url[:cut], variables)
            if either_scheme if sibling_hosts is None else sibling_hosts:
                host = site_host_rx(url[:cut]) or host
            if either_scheme:
                host = re.sub(r"^https?(?=\\x3a)", "https?", host)
            word.append(host)
        segs = [r"\x2f" + rx(seg, variables) for seg in url[cut:].split("/")[1:]]
        words.append((*word, *segs))
        if lead is not None and quote == "`":  # `${BASE}` holding the host and the first i segments
            words += [(word[0], lead, *segs[i:]) for i in range(len(segs))]
        elif lead is not None:  # BASE + '/...' likewise (one lexeme: the name, + and the quote)
            words += [(lead, *segs[i:]) for i in range(len(segs))]
    if lead is not None:
        words.append((_rx(quote), lead) if quote == "`" else (lead,))
    return list(dict.fromkeys(words))


class UrlWords:
    """Each path template's URLs as words of small lexemes: ``/segment`` pieces (a literal, or
    a path hole's regex with the literal text around it), then one tail piece (the path key's trailing ``/`` if any,
    the fixed query, the fragment label and the closing quote). The server prefix comes before
    them (:func:`server_words`), shared by all templates.

    Shadowing (:class:`Templates`: a URL also matching a better-ranked template with the same
    method belongs to that one) is cut out piece by piece, exactly: a shadowing template A has
    a word of as many pieces, equal to B's except at some positions D; a URL of B is one of A
    only if each of its pieces at D is one of A's too, so B less A is the union, over k in D, of
    B's word with A's piece k excluded at k (one word when A differs at one place, the common
    case). Pieces that cannot overlap (two different literals, disjoint tails) need no cut.
    Where this does not apply (different piece counts, too many words) the template gives None
    and the grammar falls back to one regex lexeme per template (``webapi_grammar._Builder._full_start_regex``).
    """

    max_words = 64

    def __init__(self, idents: tuple[str, ...], allow_url_query: bool, real: bool = False):
        self.idents = idents
        self._end: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str | None, ...], Any, tuple[Any, ...]] | None] = {}
        self.real = real  # GrammarOptions.real_world: holes of identifiers take member access
        self.allow = allow_url_query
        # (path, quote) -> (piece regexes, piece's text when it is a literal (else None), plan)
        self._base: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str | None, ...], Any, tuple[Any, ...]] | None] = {}
        self._words: dict[tuple[str, str], dict[str, list[tuple[Piece, ...]]] | None] = {}
        self._plans: dict[str, UrlPlan] = {}

    def base(
        self, b: GrammarWriter, templates: Templates, path: str, q: str
    ) -> tuple[tuple[str, ...], tuple[str | None, ...], Any, tuple[Any, ...]] | None:
        key = (path, q)
        if key in self._base:
            return self._base[key]
        quoted = any(c in path for c in "'\"`")  # a quote in the path: written escaped, per quote
        if q == '"' and not quoted:  # the pieces of '...' with the other closing quote (holes are the same)
            single = self.base(b, templates, path, "'")
            out_dq = None
            if single is not None:
                pieces_sq, literal_sq, plan_sq, shapes_sq = single
                out_dq = ((*map(_dq, pieces_sq[:-1]), _dq_tail(pieces_sq[-1])), literal_sq, plan_sq, shapes_sq)
            self._base[key] = out_dq
            return out_dq
        holes = templates.hole_schemas(path)
        plan = self._plans.get(path)
        if plan is None:
            plan = self._plans[path] = url_plan(b.spec, next(iter(templates.ops[path].values())))
        out: tuple[tuple[str, ...], tuple[str | None, ...], Any, tuple[Any, ...]] | None = None
        if not any("/" in name for name in PARAM_RX.findall(plan.path)):
            qholes = (  # only a fixed query has holes typed by query parameters
                {p.name: p.schema for o in templates.ops[path].values() for p in o.params_in("query") if p.schema}
                if plan.query
                else {}
            )
            if q == "`" and not quoted and not self.idents:
                # With no identifiers, backtick pieces are the '...' ones with ``$`` kept out of
                # free holes (it could start ``${``) and their own tail: derived, not rebuilt.
                single = self.base(b, templates, path, "'")
                if single is not None:
                    pieces_sq, literal_sq, _, shapes_sq = single
                    body = tuple(
                        x.replace(FREE_HOLE["'"], FREE_HOLE["`"]).replace(FREE_SEGMENT_HOLE["'"], FREE_SEGMENT_HOLE["`"])
                        for x in pieces_sq[:-1]
                    )
                    out = ((*body, self._tail(b, plan, qholes, q, path)), literal_sq, plan, shapes_sq)
                    self._base[key] = out
                    return out
            pieces: list[str] = []
            literal: list[str | None] = []
            shapes: list[tuple[str, str] | None] = []
            for seg in (plan.path.rstrip("/") or "/").split("/")[1:]:
                parts = PARAM_RX.split(seg)
                body = (
                    (_rx(x.replace(q, "\\" + q)) if quoted else _rx(x)) if i % 2 == 0 else b.hole_rx(holes.get(x), q)
                    for i, x in enumerate(parts)
                )
                pieces.append(r"\x2f" + "".join(body))
                literal.append("/" + seg if len(parts) == 1 else None)
                shapes.append(_ends("/" + seg))
            pieces.append(self._tail(b, plan, qholes, q, path))
            literal.append(None)  # tails are told apart by :meth:`_tails_disjoint`
            shapes.append(None)
            out = (tuple(pieces), tuple(literal), plan, tuple(shapes))
        self._base[key] = out
        return out

    def var(self, b: GrammarWriter) -> str | None:
        """What an expression in the URL may be (real-world profile with identifiers), else None."""
        return (b.var_rx or None) if self.real and self.idents else None

    def _tail(self, b: GrammarWriter, plan: UrlPlan, qholes: Mapping[str, Any], q: str, path: str | None = None) -> str:
        """The trailing ``/`` where the path key has one, the fixed query (pairs in any order, up
        to 3), the label and the closing quote (as the whole-URL regex of
        :meth:`GrammarWriter._url_def` ends).

        Under ``allow_url_query`` a query of ``path``'s declared query parameters and credentials
        (:func:`query_forms`; ``path`` None: any keys, a staged head's) may follow the path or the
        fixed pairs; in a '...'/"..." URL with identifiers in scope the URL may then end with an
        expression joined by ``+`` in a value or where a pair starts (``'...?api_key=' + key``)."""
        tail = r"\x2f" if ends_in_slash(plan.path) else ""  # exactly the key's (issue 26)
        fixed = b.fixed_query_rx(plan, qholes, q)
        label = _rx("#" + plan.label) if plan.label is not None else ""
        # real-world profile: spaces before the closing quote (`'.../json? '`), which the URL
        # parser drops before axios sends the request (the key tracker reads the URL without them)
        label += "[ ]*" if self.real else ""
        if not self.allow:
            return tail + (r"\?" if plan.query else "") + fixed + label + _rx(q)
        var = self.var(b)
        keys = b.query_keys_rx(path) if path is not None else FREE_QUERY_KEY
        pairs, open_ = query_forms(keys, q, var, b.query_value_groups(q) if path is not None else None)
        if plan.query:
            body, opened = rf"{tail}\?{fixed}(?:&{pairs})?", rf"{tail}\?{fixed}&{open_}"
        else:
            body, opened = rf"{tail}(?:\?{pairs})?", rf"{tail}\?{open_}"
        if var is None or q == "`":
            return body + label + _rx(q)
        close = SQ_CAT if q == "'" else DQ_CAT  # with the spaces after it (see concat_holes)
        return f"(?:{body}{label}{close}[ ]*|{opened}{concat_holes(q, var)[1]})"

    def end_hole(
        self, b: GrammarWriter, templates: Templates, path: str, q: str
    ) -> tuple[tuple[str, ...], tuple[str | None, ...], Any, tuple[Any, ...]] | None:
        """``path``'s word with its last path hole written as an expression ending the URL by
        concatenation (``'https://api.spotify.com/v1/artists/' + id``): the pieces before it, then
        one piece of the last segment's text before the hole and ``' + name`` (no tail: a piece
        that ended before ``'`` would be a prefix of the piece whose hole goes on with ``' + name
        + '...'``, and the lexer does not backtrack; the word is one piece shorter than
        :meth:`base`'s). None where the path does not end in a hole (a trailing ``/``, fixed query
        or label after it: the hole is then a middle one), in backticks and without identifiers."""
        key = (path, q)
        if key in self._end:
            return self._end[key]
        out = None
        var = self.var(b)
        mine = self.base(b, templates, path, q) if var is not None and q != "`" else None
        if mine is not None:
            pieces, literal, plan, shapes = mine
            seg = (plan.path.rstrip("/") or "/").split("/")[-1]
            parts = PARAM_RX.split(seg)
            if len(parts) > 1 and parts[-1] == "" and _quote_may_follow(plan):
                holes = templates.hole_schemas(path)
                quoted = any(c in path for c in "'\"`")
                body = "".join(
                    (_rx(x.replace(q, "\\" + q)) if quoted else _rx(x)) if i % 2 == 0 else b.hole_rx(holes.get(x), q)
                    for i, x in enumerate(parts[:-2])
                )
                before = "".join(x if i % 2 == 0 else "{" + x + "}" for i, x in enumerate(parts[:-2]))
                out = (
                    (*pieces[:-2], r"\x2f" + body + concat_holes(q, var)[1]),
                    (*literal[:-2], None),
                    plan,
                    (*shapes[:-2], (_ends("/" + before) or ("/", ""))[:1] + ("",)),
                )
        self._end[key] = out
        return out

    def head_terms(self, b: GrammarWriter, templates: Templates, path: str) -> dict[str, tuple[str, ...]] | None:
        """``path``'s piece terminals per quote, no shadowing cut out (a staged head), None if
        the template has no piece form. The terminals are those of :meth:`base`'s regexes; a
        plain path (no quote, query or fragment in the key) is written from per-segment memos
        keyed by its holes' :func:`scalar_key` instead, since the head of the largest specs has
        ~14,000 paths and the general route cost ~40 us each."""
        key = ("head", path)
        hit = b.memo.get(key)
        if hit is None:
            hit = b.memo[key] = self._head_fast(b, templates, path) or self._head_slow(b, templates, path)
        return hit or None

    def _head_slow(self, b: GrammarWriter, templates: Templates, path: str) -> dict[str, tuple[str, ...]]:
        """The terminals of :meth:`base`'s pieces (any path key); ``{}`` when it has none."""
        out: dict[str, tuple[str, ...]] = {}
        term = b.term
        for q in QUOTES:
            mine = self.base(b, templates, path, q)
            if mine is None:
                return {}  # memoized as "no piece form"
            out[q] = tuple(term("S", f"/{x}/") for x in mine[0])
        return out

    def _head_fast(self, b: GrammarWriter, templates: Templates, path: str) -> dict[str, tuple[str, ...]] | None:
        """:meth:`_head_slow`'s terminals for a plain path key, or None (take the slow route)."""
        if "?" in path or "#" in path or "'" in path or '"' in path or "`" in path:
            return None
        holes: dict[str, Any] = {}
        keys: dict[str, Any] = {}  # a hole's regex is a function of its schema's scalar key
        if "{" in path:
            if any("/" in name for name in PARAM_RX.findall(path)):
                return None
            holes = templates.hole_schemas(path)
            for name, schema in holes.items():
                k = None if schema is None else scalar_key(schema)
                keys[name] = ("schema", id(schema)) if k is None else k  # a nested schema: itself
        memo = b.memo.get("head pieces")
        if memo is None:
            memo = b.memo["head pieces"] = {}  # (segment, its holes' keys) -> terminals ('...', `...`)
        sq: list[str] = []
        dq: list[str] = []
        bt: list[str] = []
        for seg in (path.rstrip("/") or "/").split("/")[1:]:
            k = seg if "{" not in seg else (seg, *(keys.get(x) for x in PARAM_RX.findall(seg)))
            trio = memo.get(k)
            if trio is None:
                trio = memo[k] = self._head_piece(b, seg, holes)
            sq.append(trio[0])
            dq.append(trio[1])
            bt.append(trio[2])
        tails = self._head_tails(b, ends_in_slash(path), path)
        return {"'": (*sq, tails[0]), '"': (*dq, tails[1]), "`": (*bt, tails[2])}

    def _head_piece(self, b: GrammarWriter, seg: str, holes: Mapping[str, Any]) -> tuple[str, str, str]:
        """One ``/segment``'s terminals in '...', "..." and `...` (as :meth:`base`; '...' and
        "..." differ only in a concatenation hole's quotes)."""
        parts = PARAM_RX.split(seg)
        out = []
        for q in ("'", "`"):
            body = "".join(_rx(x) if i % 2 == 0 else b.hole_rx(holes.get(x), q) for i, x in enumerate(parts))
            out.append(f"/\\x2f{body}/")
        return b.term("S", out[0]), b.term("S", _dq(out[0])), b.term("S", out[1])

    def _head_tails(self, b: GrammarWriter, slash: bool, path: str | None = None) -> tuple[str, str, str]:
        """The tail terminals ('...', "...", `...`) of a path key without query or fragment, with
        or without a trailing slash, and under ``allow_url_query`` the query keys of ``path``."""
        key = ("head tails", slash, b.query_keys_rx(path) if self.allow and path is not None else None)
        hit = b.memo.get(key)
        if hit is None:
            plain = UrlPlan("/x/" if slash else "/")  # no query, no label: one tail per slash
            hit = b.memo[key] = tuple(b.term("S", f"/{self._tail(b, plain, {}, q, path)}/") for q in QUOTES)
        return hit

    def of(
        self, b: GrammarWriter, templates: Templates, path: str, method: str
    ) -> dict[str, list[tuple[Piece, ...]]] | None:
        """``path``'s words per quote for ``method`` (shadowing cut out), None if inexpressible."""
        key = (path, method)
        if key in self._words:
            return self._words[key]
        out: dict[str, list[tuple[Piece, ...]]] | None = {}
        shadows = templates.shadowing(path, method)
        quoted = any(c in path for c in "'\"`")  # a quote in the path: every quote built apart
        for q in ("'", '"', "`") if quoted else ("'", "`"):
            mine = self.base(b, templates, path, q)
            if mine is None:
                out = None
                break
            words = self._cut_all(b, templates, path, q, shadows, mine, self.base)
            if words is None:
                out = None
                break
            words = words + self._segment_holes(b, mine, words, q)
            ends = self.end_hole(b, templates, path, q)
            if ends is not None:  # the same cuts among the words ending in a hole by concatenation
                more = self._cut_all(b, templates, path, q, shadows, ends, self.end_hole, missing_ok=True)
                if more is None:
                    out = None
                    break
                words = words + more
            out[q] = words
            if q == "'" and not quoted:  # '"' differs in the quotes of the tails and concatenations only
                out['"'] = [
                    tuple(
                        (_dq(x, tail=k == len(w) - 1), tuple(_dq(y, tail=k == len(w) - 1) for y in ex), t)
                        for k, (x, ex, t) in enumerate(w)
                    )
                    for w in words
                ]
        self._words[key] = out
        return out

    def _segment_holes(
        self, b: GrammarWriter, mine: Any, words: list[tuple[Piece, ...]], q: str
    ) -> list[tuple[Piece, ...]]:
        """``words`` with two path parameters that are whole segments side by side
        (``/repos/{owner}/{repo}``) written as one expression (``/repos/${GITHUB_REPO}``, ``'/repos/'
        + repo + '/issues'``: a name holding ``owner/repo``), real-world profile with identifiers:
        one piece of the expression alone in their place. The key tracker reads such a hole as
        two segments where one does not name an operation (``key_tracker._hole_readings``)."""
        var = self.var(b)
        if var is None:
            return []
        plan = mine[2]
        segs = (plan.path.rstrip("/") or "/").split("/")[1:]
        pairs = [i for i in range(len(segs) - 1) if PARAM_RX.fullmatch(segs[i]) and PARAM_RX.fullmatch(segs[i + 1])]
        if not pairs:
            return []
        hole = rf"\$\{{[ ]*(?:{var})[ ]*\}}" if q == "`" else concat_holes(q, var)[0]
        merged: Piece = (r"\x2f" + hole, (), None)
        out = [w[:i] + (merged,) + w[i + 2 :] for w in words for i in pairs]
        return list(dict.fromkeys(out))

    def _cut_all(
        self, b: GrammarWriter, templates: Templates, path: str, q: str, shadows: list[str], mine: Any, family: Any,
        missing_ok: bool = False,
    ) -> list[tuple[Piece, ...]] | None:
        """``mine`` (a word of ``family``: :meth:`base` or :meth:`end_hole`) less the URLs of the
        better-ranked templates ``shadows`` in the same family, or None if inexpressible.
        ``missing_ok``: a shadowing template without a word of the family (or one of another
        length) shares no URL with it (a word ending in ``' + name`` is written by no template's
        other word)."""
        pieces, literal, plan, shapes = mine
        n = len(pieces)
        words: list[tuple[Piece, ...]] = [tuple((x, (), literal[k]) for k, x in enumerate(pieces))]
        for other in shadows:
            theirs = family(b, templates, other, q)
            if missing_ok and (theirs is None or len(theirs[0]) != n):
                continue  # no '/' but each piece's first: words of other lengths share no URL
            if theirs is None or len(theirs[0]) != n:
                return None
            a_pieces, a_literal, a_plan, a_shapes = theirs
            if self._tails_disjoint(plan, a_plan):
                continue
            cut: list[tuple[Piece, ...]] = []
            for w in words:
                cut += _cut(w, shapes, a_pieces, a_literal, a_shapes)
            words = cut
            if len(words) > self.max_words:
                return None
        return words

    def _tails_disjoint(self, a: UrlPlan, b: UrlPlan) -> bool:
        """No URL ends in both tails: a trailing slash in one only (the tail starts with it),
        different labels (``#`` appears nowhere else in a URL the grammar writes), or, when the
        URL takes no free query, a query in one only (``?`` likewise) or two different sets of
        fixed pairs without holes."""
        if a.label != b.label or ends_in_slash(a.path) != ends_in_slash(b.path):
            return True
        if self.allow:
            return False
        if bool(a.query) != bool(b.query):
            return True
        # two fixed queries without holes: the same pairs (in any order) or no common string
        fixed = not any(PARAM_RX.search(x) for x in (*a.query, *b.query))
        return fixed and set(a.query) != set(b.query)


@lru_cache(maxsize=1 << 16)
def _compiled(rx: str) -> re.Pattern[str] | None:
    try:
        return re.compile(rx)
    except re.error:  # not Python's dialect: treated as not matching (the cut is then kept)
        return None


#: More repeats than this in one piece and Python's backtracking matcher may take exponential
#: time on a failing match (``/{p0}{p1}...{p29}`` against a 40-character literal took 40 s).
_MAX_REPEATS = 8


def _rx_matches(rx: str, text: str) -> bool | None:
    """Does the grammar regex ``rx`` (Python-compatible as generated here) match all of
    ``text``? None when Python cannot read it, or when it repeats too many times to be matched
    safely (callers then keep the cut: never unsound)."""
    if rx.count("+") + rx.count("*") > _MAX_REPEATS:
        return None
    c = _compiled(rx)
    return None if c is None else c.fullmatch(text) is not None
