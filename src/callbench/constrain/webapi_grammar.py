"""An llguidance (Lark dialect) grammar for the one axios call an OpenAPI spec allows.

Constrained decoding for the web API track: the model continues the starter code (``axios.`` in
the ``full`` setup, ``axios.<method>('<url>',`` in the ``args`` setup) and must not write a method,
URL or argument its API's spec does not allow. The grammar covers the text after the starter up
to the call's closing ``)``; after it comes ``;`` or ``.then(``/``.catch(``/``.finally(`` (or a
newline) and then any text, so code after the call stays free.

Hand-written: no library turns OpenAPI operations into grammars for *JavaScript* call syntax
(JSON-schema compilers emit JSON only: no single quotes, unquoted keys, trailing commas,
identifiers or URL templates), so the grammar is generated here. Structure:

* ``full``: method name -> only the URL templates with that method (server prefix + path with
  typed holes, in ``'``, ``"`` or backtick quotes; backtick URLs may hold ``${identifier}``) ->
  the arguments of that operation. ``args``: only the arguments of the fixed operation.
* Arguments: ``post``/``put``/``patch`` take ``data`` then an optional ``config``; the others an
  optional ``config`` (which may carry ``data`` when the operation has a body). ``config`` holds
  ``params`` (query parameters + apiKey-in-query credentials) and ``headers`` (header parameters,
  credentials, ``Accept``, ``Content-Type``), values following each parameter's JSON schema.
* Objects allow any key order, repeated keys, bounded whitespace and trailing commas. Which keys
  are unique and which are required before ``}`` is not compactly context-free, so the key tracker
  (:mod:`callbench.constrain.key_tracker`) enforces it; both use the shapes of
  :class:`~callbench.specs.call_model.SpecModel` (what each operation's call may hold, read from
  the spec), so they agree on every object's keys.
* Credentials (``GrammarOptions.require_credentials``, on by default): when an operation's
  effective security requirement is non-empty and has no ``{}`` (optional) alternative, the call
  must carry the credential of one alternative in its declared place, with the dataset's
  placeholder value: ``Authorization: 'Bearer <token>'`` (http bearer, oauth2, openIdConnect),
  ``Authorization: 'Basic <credentials>'`` (http basic), ``'<key>'`` under an apiKey's name in
  ``headers``/``params``, ``Cookie: '<name>=<key>'`` for an apiKey cookie (see
  :func:`~callbench.specs.credentials.credential_requirement`). The atoms every alternative
  needs become required keys (so ``config`` and its ``headers``/``params`` become mandatory); a
  choice between places is left to the key tracker
  (:attr:`~callbench.specs.call_model.OpArgs.cred_any`). Credentials an operation does not
  require stay allowed with any string value, as before.
* Real code (``GrammarOptions.real_world`` and ``credential_rule="callbench"``, the defaults;
  ``--cd-profile paper`` keeps WAPIIBench's grammars byte for byte): a required credential takes
  any string or expression (``'Bearer ' + token``, ``process.env.KEY``, ``this.apiKey``,
  templates), every alternative of the security requirement (and a declared conventional
  credential parameter, :data:`~callbench.specs.credentials.CREDENTIAL_PARAMS`) satisfies it,
  values may be member expressions and shorthand properties of identifiers in scope,
  ``http``/``https`` are one server, and an
  ``Authorization`` header is allowed on a spec declaring no security scheme. A server's host may
  also be its registrable domain or that domain's ``api.``/``www.`` host (``api.trello.com`` for
  ``https://trello.com/1``: :func:`~callbench.constrain.url_lexemes.site_host_rx`; a trailing
  ``/`` stays exactly the path key's, issue 26), and ``headers`` may carry the transport headers any client sends (``Content-Type`` on a GET,
  ``User-Agent``: :data:`~callbench.specs.openapi.TRANSPORT_HEADERS`).
* Call forms (``real_world`` only): ``request({ method: 'post', url: '<URL>', ...config })``,
  axios' config-object call (:meth:`_Builder.request_form`). Its object starts with ``method`` and
  ``url`` in either order; the method is a literal (any case) naming a method the URL's path
  allows; then come the operation's config keys, ``data`` its body
  (:meth:`SpecModel.request_config`). Keys before the two are refused (the operation, hence the
  legal keys, is known only from them), as are a request without ``method`` (axios' GET
  default: the operation would be known only at the next key, where no staged grammar can
  switch), a config held in a variable (``request(config)``: its content cannot be checked,
  unless the starter binds the name to a whole config of literal values the spec allows:
  ``build_webapi_grammar``'s ``request_configs``, :meth:`_Builder.config_calls`)
  and a method or URL that is not a literal. ``axios(config)`` cannot follow the starter's
  ``axios.``. Offered on specs of at most :data:`REQUEST_FORM_MAX_OPERATIONS` operations.
  Values (``real_world``, identifiers in scope): a string may be a concatenation
  (``'#' + tag``, :meth:`_Builder.concat_value`), a member chain may index an array
  (``message.photo[0].file_id``), a form-encoded body may be ``new URLSearchParams({...})``
  (``.toString()``) or ``qs.stringify({...})`` (:meth:`_Builder.form_body`); the key tracker
  reads the object inside as the body.
* Whitespace between tokens is bounded (``space_max``/``indent_max``): a few spaces or tabs, or
  one line break followed by indentation, so a model cannot spend its tokens padding.

URLs in real code (``GrammarOptions.real_world`` and ``allow_url_query``, the defaults; the
paper profile writes none of these):

* A query string in the URL, of the operation's declared query parameters and credentials only
  (``?api_key=DEMO_KEY&date=${day}``; the grammar's lexemes take the spec's query keys, one set
  for every path, and the key tracker refuses another operation's key at its ``=``, ``&`` or end); a hole may stand for whole pairs (``?${params}``, whose
  keys, as a ``params`` identifier's, cannot be seen). Values there are untyped text and holes.
* Concatenation: a '...'/"..." URL joined by ``+`` with names and member chains in scope where a
  template's ``${...}`` may be: a path parameter (``'.../artists/' + id + '/albums'``), a query
  value or pair (``'...?api_key=' + key + '&q=' + q``), the path's last parameter or a query value
  at the URL's end (``'.../artists/' + id``). Two names in a row, or a name after a path's text
  (``'.../apod' + x``), are refused: the expression could add segments the spec lacks. Within a
  hole an expression comes before text, never after it (the lexer does not backtrack: a hole that
  could go on with a quote would swallow the quote closing the URL), and no blank may separate the
  closing quote from the ``,``/``)`` after it (``'...' )``: the lexeme could be a ``' + name``).
  The key tracker follows the pieces and names the operation at the ``,`` or ``)`` after them.
* Names whose value the starter fixes (``build_webapi_grammar``'s ``url_values``, read by
  :func:`callbench.sandbox.js_values.url_values`: string, template and ``+`` initialisers):
  ``get(url)`` where ``url`` is an operation's URL (then optionally ``+`` into its query:
  ``urlLink + key``, ``BASEURL + APIKEY + '&q=' + q``; a value without ``?`` must go on with
  ``'?...'`` or a name holding ``?...``), `` `${HOSTNAME}${path}` `` where ``path`` holds a path,
  `` `${API_BASE_URL}/search` `` where the value is a server and a path's first segments. The
  tracker reads the value in the name's place, so it knows the operation; a name of known value
  that is no server is not taken as one. Staged grammars (the largest specs) offer none of these.
* A leading ``${BASE}`` of unknown value (one or more ``${...}`` in a row) holds a server: the
  whole of it, or its scheme and host and first path segments, the rest of the server's path
  then written out (`` `${TELEGRAM_API_URL}/bot${TOKEN}/getUpdates` `` for the server
  ``https://api.telegram.org/bot{token}``). What it holds is not checked; after it the text must
  be the server's remaining segments and a path of the spec, from a segment boundary on (the
  model cannot invent a path). Not taken: a base holding part of a *path* (`` `${base}/search` ``
  for ``/gifs/search`` when ``base`` is unknown): which operation it names could not be known.

Specs in the wild: a path key that fixes a query (``/?module=account&action=balance``, or
APIs.guru's ``/#Action=X``; a bare fixed name such as S3's ``/{Bucket}#cors`` is written
``cors=<value>``, typed by its parameter) is written with that query in the URL string
(:func:`url_plan`; its pairs in any order when there are at most 3), a fragment label
(``/files/{id}#add_shared_link``, AWS's ``/#X-Amz-Target=Svc.Op``) with its ``#label``. The
scorer also accepts the fixed pairs in ``params`` (the same query on the wire), and a request
without the label that carries what it names (the ``X-Amz-Target`` header: axios never sends a
fragment); the grammar does not, on purpose: the key tracker must know the call's operation once
the URL is written (its required and unique keys, credentials and ``params`` shape are those of
one operation), and query-dispatched APIs put many operations on one path (``/api``, told apart
only by ``module``/``action``), so a URL without the pairs names no single operation. The
grammar is thus stricter there (it never accepts a call the scorer rejects). Servers are every root,
path-item and operation server with their variables (an enum's values, else any value); an
array query or header parameter also takes one item alone, and without ``explode`` (a header:
style simple) its items joined by the style's delimiter (``part: 'snippet,id'``); an exploded
object query parameter (style form) is one pair per property (``LoggingConfig`` ->
``LogRoleArn: ...``); a body name the schema's ``required`` lists is part of the object even
when it is not declared.

Size: every schema's value rule is built once and referenced (named by first-use order, deduped
by body text), so operations share rules; a recursive schema is a recursive rule (no depth bound,
as in JSON Schema; free-form values are bounded by ``GrammarOptions.max_depth``).

Large specs (llguidance's limits: one lexer budget for all lexemes of a grammar, 16-bit grammar
symbols, and a lexer that never cuts a lexeme short where a longer one could go on):

* URLs (``full``) are words of small lexemes merged into a trie of rules per method and quote:
  the opening quote, scheme and host, then one ``/segment`` lexeme each (a literal, or a path
  hole's regex with the text around it; never containing ``/``, so each ends where the next
  begins), then one tail lexeme (the trailing ``/`` where the path key has one, fixed query, ``#label``, closing quote). A shared
  prefix is written once and only the few segments that can follow it are lexemes there (one
  whole-URL regex per template put thousands of lexemes at the URL's start).
* Shadowing stays in the grammar, exactly as before (so grammar and key tracker still agree on
  the operation): a URL of template B that a better-ranked template A with the method also
  matches is cut out of B piece by piece (:mod:`callbench.constrain.url_lexemes`): their words differ
  at some positions, and B less A is the union of B's word with A's piece excluded at one of
  them (``segment & ~(other)``, a small regex), earlier ones narrowed to A's literal. Pieces that
  cannot share a string (two literals, ``/{a}:cancel`` and ``/{a}:delete``, disjoint tails) need
  no cut. Where that does not apply the whole grammar falls back to the regex per template.
* An enum of more than ``_BIG_ENUM`` bytes of plain strings is a rule over one lexeme per member
  (shared by every list and quote), as is its delimited form (``'id,name'``): Microsoft Graph's
  thousand ``$select``/``$orderby`` lists did not fit the lexer budget as regexes.
* Optional whitespace is one nullable rule and ``{...}``/``[...]`` lists are three rules without
  groups (llguidance makes a symbol of every group and optional it meets).
"""

from __future__ import annotations

import gc
import json
import math
import re
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import permutations
from types import MappingProxyType
from typing import Any, Literal

from callbench.constrain.lark_text import literal_regex as _rx
from callbench.constrain.url_lexemes import (
    FREE_HOLE,
    FREE_QUERY_HOLE,
    FREE_QUERY_KEY,
    FREE_SEGMENT_START,
    PARAM_RX,
    QUOTES,
    Piece,
    Templates,
    UrlWords,
    concat_holes,
    query_key_rx,
    server_var_rx,
    server_words,
    site_host_rx,
)
from callbench.errors import CallbenchError
from callbench.specs import ApiSpec, Operation
from callbench.specs.call_model import (
    BODY_METHODS,
    DELIMITED,
    NO,
    ObjShape,
    OpArgs,
    SpecModel,
    UrlPlan,
    fixed_query_names,
    url_plan,
)
from callbench.specs.credentials import CredentialValue
from callbench.specs.openapi import request_query
from callbench.specs.refs import thaw
from callbench.specs.schema_scalars import is_map

__all__ = [
    "CD_PROFILES",
    "VALUE_TYPES",
    "GrammarError",
    "GrammarModel",
    "GrammarOptions",
    "WebApiGrammar",
    "build_webapi_grammar",
    "clear_grammar_cache",
    "spec_model",
]

Setup = Literal["full", "args"]
#: Above this many operations the ``full`` grammar is staged (``GrammarOptions.staged=None``): the
#: largest specs built as one grammar take up to ~1 s (autotask, EC2) and Graph does not fit.
STAGED_MIN_OPERATIONS = 1500
#: The ``request({...})`` call form (``real_world``) is offered on specs of at most this many
#: operations: its words (the URLs once per method after ``method``, once per path before it)
#: more than double a staged head's grammar symbols, and Microsoft Graph's no longer fit.
#: Plain and staged grammars of one spec decide alike, so they keep one language.
REQUEST_FORM_MAX_OPERATIONS = STAGED_MIN_OPERATIONS
# axios request methods the grammar offers (``trace`` has no axios shorthand).
AXIOS_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")
_JS_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
# Names in scope under ``real_world`` that are roots of member chains only, never a value alone
# (see ``_Builder.__init__``).
_MEMBER_ROOTS = frozenset({"this", "process"})


ValueTypes = Literal["lenient", "paper"]
CdProfile = Literal["callbench", "paper"]
VALUE_TYPES: tuple[str, ...] = ("lenient", "paper")
#: What each constrained-decoding profile sets (fields left at None in :class:`GrammarOptions`).
#: ``paper``: WAPIIBench's published CD (``MAX_RECURSION_DEPTH = 3``, ``MAX_OBJECTS_IN_ARRAY = 5``,
#: literal-typed values); see docs/constrained-decoding.md for what differs.
CD_PROFILES: dict[str, dict[str, Any]] = {
    "callbench": {},
    "paper": {
        "max_nesting": 3,
        "max_array_items": 5,
        "value_types": "paper",
        "credential_rule": "paper",
        "real_world": False,
        "allow_url_query": False,
    },
}
CredentialRule = Literal["callbench", "placeholder", "paper"]
CREDENTIAL_RULES: tuple[str, ...] = ("callbench", "placeholder", "paper")


class GrammarError(CallbenchError, ValueError):
    """The grammar cannot be built (e.g. the fixed method/URL of the args setup is not in the spec)."""


@dataclass(frozen=True)
class GrammarOptions:
    """Bounds and switches; defaults are generous so that no legal call is cut off.

    max_depth: nesting of free-form values (a recursive schema has no bound) before only ``null`` is
        left. max_array_items / max_string_len: None = unbounded. allow_url_query: accept a
        ``?query`` in the URL string (None: the profile's; on in ``callbench``, off in ``paper``,
        where query parameters belong in ``params``). Its keys are the operation's declared query
        parameters and query credentials only (the grammar takes the spec's query keys, the key
        tracker the operation's, vetoing another at its ``=``, ``&`` or end); a required parameter or credential given there counts as given; a hole standing
        for whole pairs (``?${params}``, ``'?' + params``) is taken as a ``params`` identifier is:
        its keys cannot be seen, so it may hold the required ones and the credential. Values in
        the URL are free text and holes (not typed by their schema).
    space_max / indent_max: whitespace between two tokens of the call is at most ``space_max``
        spaces/tabs, or that many, one line break (``\n`` or ``\r\n``) and at most ``indent_max``
        spaces/tabs. Code needs no more: 4 covers one indentation step written inline, and 32 is
        8 levels of 4-space indentation (the call, config, headers/params and a body nested 5
        deep); a run of 64 let a weak model pad for dozens of tokens before it had to write code.
    numeric_strings: accept a string spelling a number/integer/boolean where the schema asks for
        one (query, header and form values are strings on the wire anyway, and strict scoring
        reads such strings as the schema's type).
    require_credentials: an operation whose security requirement is not optional must carry one
        of its accepted credentials, in its place, with the placeholder value (off: credentials
        are optional keys with any string value, the behaviour before this switch).
    credential_rule: ``"callbench"`` (the default: ``require_credentials`` as above, the value any
        string literal or expression: ``'ee97...'``, ``token``, ``process.env.KEY``,
        ``this.apiKey``, `` `Bearer ${token}` ``, ``'Bearer ' + token``; real code passes keys and
        variables, and the scorer does not compare a credential's value either),
        ``"placeholder"`` (the credential must be the dataset's placeholder, see the module
        docstring; callbench's default before issue 29) or
        ``"paper"`` (WAPIIBench's CD, ``openapi_utils._get_possible_requests`` and
        ``_create_arguments_regex``): every security scheme named by the spec's global or the
        operation's own requirement (their union; alternatives are not told apart) is a key in its
        place -- an apiKey under its name in headers or params, any other scheme ``Authorization``
        in headers -- whose value is any string; the key is required only when the union holds
        exactly one scheme (the paper's code: "multiple security schemes are not supported
        properly yet"). Asana's and Google's operations name two schemes, so no credential is
        forced there; Slack's name one, so ``Authorization`` must be written, with any value.
    value_types: ``"lenient"`` (callbench's default): ``numeric_strings`` applies everywhere.
        ``"paper"`` (WAPIIBench's CD): in the request body (the ``data`` argument, or ``data`` in
        the config) an integer field takes only an integer literal (``3``), a number field only a
        number literal, a boolean only ``true``/``false``, enum members of those types likewise:
        no ``'3'``/``'true'``. Query and header values keep the string forms (they are strings on
        the wire); path holes are typed by the URL regex either way.
    max_nesting: object/array literals nested inside an argument object, None = unbounded. The
        ``data`` argument and the config's ``params``/``headers``/``data`` objects are level 0;
        an object or array written as one of their values is level 1, one inside it level 2, ...
        Past ``max_nesting`` a value whose schema is an object or array can only be ``null`` (or
        an identifier in scope), as past ``max_depth``.
    profile: the CD profile these options come from (:data:`CD_PROFILES`): ``"callbench"`` (the
        defaults above) or ``"paper"`` (WAPIIBench's limits: ``max_nesting=3``,
        ``max_array_items=5``, ``value_types="paper"``). A profile fills in only what is not given
        explicitly (``value_types``/``max_nesting``/``max_array_items`` left at None).
    real_world: how real code writes calls (None: the profile's; on in ``callbench``, off in
        ``paper``, whose grammars stay those of WAPIIBench): a value may be a member expression
        of an identifier in scope (``cfg.auth.key``; ``this`` and ``process`` count when the
        caller lists them), also inside a template literal's ``${...}`` and a URL hole; a
        declared key that is an identifier in scope may be a shorthand property (``{ limit }``,
        ``{ params }``); a backtick URL may start with ``${BASE}`` (a variable in scope holding
        the server); a server's ``http://`` may be written ``https://`` and the reverse (the
        same server), its host as its registrable domain or that domain's ``api.``/``www.`` host
        (a trailing ``/`` stays exactly the path key's), and ``headers`` may carry the transport headers
        (:data:`~callbench.specs.openapi.TRANSPORT_HEADERS`) on any operation. What a member expression holds cannot be known: a chain through a missing
        property throws when the call runs (bare identifiers, as before, always run). The call may
        also be ``request({ method, url, ...config })``, a string value a concatenation, a member
        chain index an array, a form body be ``new URLSearchParams({...})``/``qs.stringify({...})``
        (the module docstring's "Call forms"). URLs (the module docstring's "URLs in real code"):
        a '...'/"..." URL may be joined by ``+`` from strings and names in scope wherever a
        template hole may be; a name whose value the starter fixes (``url_values``) may be the
        URL, a path after the server or a prefix of one; a leading ``${...}`` of unknown value
        may hold the server without some of its last path segments. Credentials
        have their own switch (``credential_rule``): under ``"callbench"`` a declared credential
        parameter (:data:`~callbench.specs.credentials.CREDENTIAL_PARAMS`) is one more security
        alternative, and under every rule but ``"paper"`` a spec declaring no security scheme
        allows an ``Authorization`` header (:meth:`SpecModel.op_args`).
    staged: the ``full`` setup as two grammars (:mod:`callbench.constrain.staged`): the URLs with
        any text after them, then, once the URL names its operation, that operation's own full
        grammar, which replays what was written. Same language and masks as one grammar; the
        build and its size no longer grow with the spec's operations (Microsoft Graph's 22,000
        do not fit one llguidance grammar). None: staged when the spec has more than
        :data:`STAGED_MIN_OPERATIONS` operations. A staged constraint cannot travel to a vLLM
        server (one grammar only).
    """

    max_depth: int = 6
    max_array_items: int | None = None
    max_string_len: int | None = None
    allow_url_query: bool = None  # type: ignore[assignment] - None: the profile's, resolved below
    space_max: int = 4
    indent_max: int = 32
    numeric_strings: bool = True
    require_credentials: bool = True
    value_types: ValueTypes = None  # type: ignore[assignment] - None: the profile's, resolved below
    max_nesting: int | None = None
    credential_rule: CredentialRule = None  # type: ignore[assignment] - None: the profile's
    profile: CdProfile = "callbench"
    staged: bool | None = None
    real_world: bool = None  # type: ignore[assignment] - None: the profile's, resolved below

    def __post_init__(self) -> None:
        if self.profile not in CD_PROFILES:
            raise GrammarError(f"unknown CD profile {self.profile!r} (choose from {', '.join(CD_PROFILES)})")
        for name, value in CD_PROFILES[self.profile].items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        if self.value_types is None:
            object.__setattr__(self, "value_types", "lenient")
        if self.credential_rule is None:
            object.__setattr__(self, "credential_rule", "callbench")
        if self.real_world is None:
            object.__setattr__(self, "real_world", True)
        if self.allow_url_query is None:
            object.__setattr__(self, "allow_url_query", True)
        if self.credential_rule not in CREDENTIAL_RULES:
            raise GrammarError(
                f"unknown credential rule {self.credential_rule!r} (choose from {', '.join(CREDENTIAL_RULES)})"
            )
        if self.value_types not in VALUE_TYPES:
            raise GrammarError(f"unknown value typing {self.value_types!r} (choose from {', '.join(VALUE_TYPES)})")
        for name in ("max_nesting", "max_array_items"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v < 0):
                raise GrammarError(f"{name} must be a non-negative integer or None, not {v!r}")

    @property
    def credentials(self) -> str:
        """How credentials enter the grammar: ``"any"`` (where the security requirement asks for
        one, any string or expression), ``"required"`` (there, the placeholder), ``"paper"``
        (WAPIIBench's rule) or ``"off"``."""
        if self.credential_rule == "paper":
            return "paper"
        if not self.require_credentials:
            return "off"
        return "required" if self.credential_rule == "placeholder" else "any"

    @property
    def paper_body_types(self) -> bool:
        """Body values typed as the paper's CD types them (no numeric/boolean strings)."""
        return self.value_types == "paper"




# ============================================================================ shapes (shared)
class GrammarModel(SpecModel):
    """A spec's :class:`~callbench.specs.call_model.SpecModel` (the shapes grammar and key tracker
    share) with the URL lexemes built from it, kept with it so that every build of the spec
    shares them."""

    def __init__(self, spec: ApiSpec):
        super().__init__(spec)
        self._templates: Templates | None = None
        # URL terminal definitions by (path key, identifiers, allow_url_query): the same text in
        # every build of this spec with those inputs, so later builds only name them.
        self.url_defs: dict[tuple[Any, ...], str] = {}
        self._url_words: dict[tuple[Any, ...], UrlWords] = {}
        # the spec's query keys are too many for the URL tails (_QUERY_KEYS_MAX): any key and
        # free values there, the key tracker holds every enum value (query_values_held)
        self.query_keys_free = False

    def templates(self) -> Templates:
        """The spec's path templates (hole schemas, shadowing), built once."""
        if self._templates is None:
            self._templates = Templates(self.spec, self._scalars)
        return self._templates

    def url_words(self, idents: tuple[str, ...], allow_url_query: bool, real: bool = False) -> UrlWords:
        """The URL lexeme words of every template for these inputs (filled on demand, shared by
        every build of this spec with them)."""
        key = (idents, allow_url_query, real)
        hit = self._url_words.get(key)
        if hit is None:
            hit = self._url_words[key] = UrlWords(idents, allow_url_query, real)
        return hit


_MODELS: dict[int, tuple[ApiSpec, GrammarModel]] = {}
_MODELS_LOCK = threading.Lock()


def spec_model(spec: ApiSpec) -> GrammarModel:
    """The one GrammarModel of ``spec`` (cached by identity, like the specs themselves)."""
    with _MODELS_LOCK:
        hit = _MODELS.get(id(spec))
        if hit is not None and hit[0] is spec:
            return hit[1]
        model = GrammarModel(spec)
        if len(_MODELS) >= 32:
            _MODELS.pop(next(iter(_MODELS)))
        _MODELS[id(spec)] = (spec, model)
        return model


# ============================================================================ regex helpers
def whitespace_terminal(space_max: int, indent_max: int) -> str:
    """Lark terminal for whitespace between tokens: up to ``space_max`` spaces/tabs, optionally
    followed by one line break and up to ``indent_max`` spaces/tabs (never empty)."""
    sp, ind = max(1, space_max), max(0, indent_max)
    return f"/[ \\t]{{1,{sp}}}|[ \\t]{{0,{sp}}}\\r?\\n[ \\t]{{0,{ind}}}/"


_JS_ESCAPE = r"\x5c(?:[^ux0-9\r\n]|\n|\r\n?|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|u\{0*(?:[0-9a-fA-F]{1,5}|10[0-9a-fA-F]{4})\})"


def _js_string(value: str, quote: str) -> str:
    """The canonical JS literal of ``value`` in ``quote`` (JSON escapes; template ``${`` escaped)."""
    if quote == '"':
        return json.dumps(value, ensure_ascii=False)
    body = json.dumps(value, ensure_ascii=False)[1:-1].replace('\\"', '"')
    body = body.replace(quote, "\\" + quote)
    if quote == "`":
        body = body.replace("${", "\\${")
    return quote + body + quote


# ============================================================================ the grammar
@dataclass(frozen=True, eq=False)
class WebApiGrammar:
    """A built grammar plus what the key tracker needs to follow the same call.

    ``lark``: the grammar text for llguidance. ``operation``/``args``: the fixed operation
    (setup ``args`` only). ``model``: the shapes shared with the tracker. ``key_bytes``: every
    byte of every declared key name in the grammar (both cases for headers), which the tracker
    must watch while a key is being written.
    """

    lark: str
    setup: str
    method: str | None
    url: str | None
    identifiers: tuple[str, ...]
    options: GrammarOptions
    spec: ApiSpec = field(repr=False)
    model: GrammarModel = field(repr=False)
    operation: Operation | None = None
    args: OpArgs | None = field(default=None, repr=False)
    key_bytes: frozenset[int] = field(default=frozenset(), repr=False)
    build_seconds: float = 0.0
    n_rules: int = 0
    n_terminals: int = 0
    #: ``lark`` is the head of a staged grammar (URLs, then any text); :meth:`tail_lark` gives
    #: each operation's own grammar (see ``GrammarOptions.staged``).
    staged: bool = False
    #: names in scope whose value the starter fixes, as URL patterns (``build_webapi_grammar``'s
    #: ``url_values``), which the key tracker reads in their place
    url_values: tuple[tuple[str, str], ...] = ()
    #: names the starter binds to a whole request config the spec allows (``build_webapi_grammar``'s
    #: ``request_configs``): ``request(name)`` is a call
    request_configs: tuple[str, ...] = ()
    _tails: dict[int, tuple[str, frozenset[int]]] = field(default_factory=dict, repr=False, compare=False)

    def op_args(self, op: Operation) -> OpArgs:
        return self.model.op_args(
            op, self.options.credentials, self.options.allow_url_query, transport=self.options.real_world
        )

    def tail_lark(self, op: Operation) -> str:
        """A staged grammar's second stage for ``op``: the ``full`` grammar of that operation
        alone (method, its URLs as the head has them, its arguments), built once."""
        return self._tail(op)[0]

    def tail_key_bytes(self, op: Operation) -> frozenset[int]:
        """``key_bytes`` of a staged grammar's second stage for ``op`` (for the key tracker)."""
        return self._tail(op)[1]

    def _tail(self, op: Operation) -> tuple[str, frozenset[int]]:
        if not self.staged:
            raise GrammarError("a tail is for a staged grammar")
        key = id(op)
        hit = self._tails.get(key)
        if hit is None:
            with _deep_recursion():
                b = _Builder(self.spec, self.model, self.identifiers, self.options)
                hit = (b.render(b.full_start(op.method, only_op=op)), frozenset(b.key_bytes))
            self._tails[key] = hit
        return hit


def _then(symbol: str, rest: str) -> str:
    """``symbol`` followed by ``rest`` (which may be empty) in a rule body."""
    return f"{symbol} {rest}" if rest else symbol


_CACHE: dict[tuple[Any, ...], WebApiGrammar] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 512


def build_webapi_grammar(
    spec: ApiSpec,
    *,
    setup: Setup,
    method: str | None = None,
    url: str | None = None,
    identifiers: Iterable[str] = (),
    options: GrammarOptions = GrammarOptions(),  # noqa: B008 - frozen, hashable default
    url_values: Mapping[str, str] | None = None,
    request_configs: Iterable[str] = (),
) -> WebApiGrammar:
    """Build (or fetch from the cache) the grammar of the text the model writes after the starter.

    ``setup="full"``: the text after ``axios.``; ``method`` optionally restricts the method.
    ``setup="args"``: the text after ``axios.<method>('<url>',``; ``method`` and ``url`` are
    required and must name an operation of the spec. ``identifiers``: JavaScript names in scope
    (the task's definitions), accepted in any value position and as ``${name}`` in backticks.
    ``url_values`` (setup ``full``, real-world profile): what some of those names hold, as
    :func:`callbench.sandbox.js_values.url_values` reads the starter (text, ``\x01`` for unknown
    parts): a name whose value is a URL of the spec may be the URL (``axios.get(url)``), then
    go on with ``+`` into its query (:meth:`_Builder.known_urls`).
    ``request_configs`` (setup ``full``, real-world profile, not staged): names in scope the
    starter binds to a whole request config of literal values the spec allows
    (:func:`callbench.tracks.webapi.constraints.request_configs_in_scope`): ``request(name)``
    is a call (what it sends is what the starter states, checked against the spec there).
    """
    idents = tuple(sorted(dict.fromkeys(i for i in identifiers if _JS_IDENT.match(i))))
    if setup not in ("full", "args"):
        raise GrammarError(f"setup must be 'full' or 'args', not {setup!r}")
    m = method.lower() if method else None
    if setup == "args" and (not m or not url):
        raise GrammarError("setup 'args' needs the fixed method and url")
    if setup == "full" and url is not None:
        raise GrammarError("setup 'full' lets the model write the URL: pass no url")
    if setup == "full" and options.staged is None:
        big = sum(1 for o in spec.operations if o.method in AXIOS_METHODS) > STAGED_MIN_OPERATIONS
        options = replace(options, staged=big)
    vals: tuple[tuple[str, str], ...] = ()
    if setup == "full" and options.real_world and url_values:
        # a name in scope, or a property of ``this`` where ``this`` is (``this.baseUrl``)
        vals = tuple(sorted((k, v) for k, v in url_values.items() if k.split(".")[0] in idents and _url_like(v)))
    configs: tuple[str, ...] = ()
    if setup == "full" and options.real_world and not options.staged:
        configs = tuple(sorted({c for c in request_configs if c in idents}))
    key = (id(spec), setup, m, url, idents, options, vals, configs)
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit.spec is spec:
        return hit
    op = None
    if setup == "args":
        assert m is not None and url is not None
        op = _fixed_operation(spec, m, url, options.real_world)
        # The args grammar depends on the operation, not on the URL literal: share it.
        by_op = (id(spec), setup, id(op), idents, options)
        with _CACHE_LOCK:
            base = _CACHE.get(by_op)
        if base is None or base.spec is not spec:
            base = _build(spec, setup, m, url, idents, options, op)
            _remember(by_op, base)
        g = base if base.url == url else replace(base, method=m, url=url)
    else:
        g = _build(spec, setup, m, url, idents, options, None, vals, configs)
    _remember(key, g)
    return g


def _extra_segments(value: str, servers: tuple[str, ...]) -> list[str]:
    """The path segments a URL value (``url_values``) holds past one of the spec's servers (the
    scheme aside), [] when it is no server followed by literal segments."""
    if "\x01" in value or "?" in value or "#" in value or "://" not in value:
        return []
    bare = value.split("://", 1)[1].rstrip("/")
    for srv in servers:
        if "{" in srv or "://" not in srv:
            continue
        base = srv.split("://", 1)[1].rstrip("/")
        if bare.startswith(base + "/"):
            return bare[len(base) + 1 :].split("/")
    return []


def _is_server(value: str, spec: ApiSpec) -> bool:
    """Is this URL value (``url_values``) one of the spec's servers (the scheme aside; a server
    variable any value)?"""
    if "://" not in value:
        return False
    bare = value.split("://", 1)[1].rstrip("/").replace("\x01", "1")
    for srv, _ in spec.server_templates:
        pieces = PARAM_RX.split(srv.split("://", 1)[-1].rstrip("/"))
        rx = "".join(re.escape(x) if i % 2 == 0 else "[^/?#]+" for i, x in enumerate(pieces))
        if re.fullmatch(rx, bare):
            return True
    return False


#: The most characters of query-key regex a grammar's URL tails carry (see _Builder.query_keys_rx).
_QUERY_KEYS_MAX = 4000


#: The most characters of enum values one query name takes in a grammar's URL tails (the union
#: over the operations that declare it): above, its value is free text there and the key tracker
#: holds it to the operation's own enum (Microsoft Graph's ``$orderby`` made a 300 KB lexeme).
_QUERY_ENUM_MAX = 1000
_VALUE_SOURCES: dict[int, tuple[Any, dict[str, list[Any] | None]]] = {}
_HELD: dict[int, tuple[Any, frozenset[str], bool]] = {}


def query_value_sources(spec: ApiSpec, model: SpecModel) -> dict[str, list[Any] | None]:
    """Per query name of the spec, the schemas that type its value in a URL (enum, integer,
    number, boolean; one per distinct kind, as the operations declare them), or None where the
    value is free text: in some operation a free string (or other), or enums whose values run
    past :data:`_QUERY_ENUM_MAX` characters. Cached per spec model."""
    hit = _VALUE_SOURCES.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    out: dict[str, list[Any] | None] = {}
    sizes: dict[str, set[str]] = {}
    for op in spec.operations:
        if op.method not in AXIOS_METHODS:
            continue
        for name, desc in model.op_args(op, "any", True).config.props["params"].props.items():
            kind = _value_kind(model, desc)
            if kind is None:
                out[name] = None
                continue
            if name in out and out[name] is None:
                continue
            known = out.setdefault(name, [])
            assert known is not None
            if all(not _same_kind(_value_kind(model, d), kind) for d in known):
                known.append(desc)
            if kind[0] == "enum":
                sizes.setdefault(name, set()).update(kind[1])
    for name, vals in sizes.items():
        if sum(len(v) for v in vals) > _QUERY_ENUM_MAX:
            out[name] = None
    if len(_VALUE_SOURCES) > 64:
        _VALUE_SOURCES.clear()
    _VALUE_SOURCES[id(model)] = (model, out)
    return out


def query_values_held(spec: ApiSpec, model: SpecModel) -> frozenset[str]:
    """Query names whose URL value the grammar takes wider than some operation's enum (several
    operations' enums joined, an enum beside free text, or past :data:`_QUERY_ENUM_MAX`): the key
    tracker holds each such value to its own operation's enum, byte by byte. Where the spec's
    keys were too many for the grammar's URL tails (``query_keys_free``), every enum name."""
    every = bool(getattr(model, "query_keys_free", False))
    hit = _HELD.get(id(model))
    if hit is not None and hit[0] is model and hit[2] == every:
        return hit[1]
    sources = query_value_sources(spec, model)
    held = set()
    for op in spec.operations:
        if op.method not in AXIOS_METHODS:
            continue
        for name, desc in model.op_args(op, "any", True).config.props["params"].props.items():
            kind = _value_kind(model, desc)
            if kind is not None and kind[0] == "enum":
                descs = sources.get(name)
                if every or descs is None or len(descs) > 1:
                    held.add(name)
    if len(_HELD) > 64:
        _HELD.clear()
    _HELD[id(model)] = (model, frozenset(held), every)
    return _HELD[id(model)][1]


def _value_kind(model: SpecModel, desc: Any) -> tuple[str, tuple[str, ...]] | None:
    """How a schema types a value in a URL (a path hole or a query value): ("enum", its values
    as the URL writes them, in the schema's order), ("integer"|"number"|"boolean", ()) or None
    (free text); :meth:`_Builder._hole_rx` writes the regex of each."""
    scal = model.scalars(desc) if is_map(desc) else None
    if scal is None:
        return None
    enums, types = scal
    if enums is not None:
        vals = tuple(v if isinstance(v, str) else json.dumps(v) for v in enums if v is not None)
        return ("enum", vals) if vals else None
    if types and types <= {"integer", "null"}:
        return ("integer", ())
    if types and types <= {"integer", "number", "null"}:
        return ("number", ())
    if types and types <= {"boolean", "null"}:
        return ("boolean", ())
    return None


def _same_kind(a: tuple[str, tuple[str, ...]] | None, b: tuple[str, tuple[str, ...]] | None) -> bool:
    """Do two :func:`_value_kind` results admit the same values (enums compared as sets)?"""
    if a is None or b is None:
        return a is b
    return a[0] == b[0] and set(a[1]) == set(b[1])


_KIND_RX = {"integer": r"-?[0-9]+", "number": r"-?[0-9]+(?:\.[0-9]+)?", "boolean": "true|false"}


def _url_like(value: str) -> bool:
    """Could this value (a URL pattern) be a whole URL, or the query part of one?"""
    return "://" in value or value.startswith(("?", "&")) or (value.startswith("/") and "{" not in value)


def _fixed_operation(spec: ApiSpec, method: str, url: str, real_world: bool = False) -> Operation:
    """The operation the fixed URL of setup ``args`` names (``real_world``: as
    :meth:`ApiSpec.match` reads real-world hosts and, the URL being the task's own, trailing
    slashes)."""
    match = spec.match(method, url, real_world=real_world, either_slash=real_world)
    if match is None and "#" in url:
        # the path key written as the URL (``/#Action=X``): its fragment pairs are the query
        head, _, frag = url.partition("#")
        match = spec.match(method, head + ("&" if "?" in head else "?") + frag, real_world=real_world, either_slash=real_world)
    if match is None:
        match = spec.match(method, url, names_later=True, real_world=real_world, either_slash=real_world)
    if match is not None:
        return match.operation
    found = spec.match_paths(url, real_world=real_world, either_slash=real_world)
    if found:
        allowed = sorted({mm for pm in found for mm in pm.operations})
        raise GrammarError(
            f"{spec.source}: {method.upper()} is not defined for URL {url!r} (it allows {', '.join(allowed)})"
        )
    raise GrammarError(f"{spec.source}: URL {url!r} matches no path of the spec")


def _remember(key: tuple[Any, ...], g: WebApiGrammar) -> None:
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = g


def clear_grammar_cache() -> None:
    """Forget all built grammars and shape models (benchmarks, long-running processes)."""
    with _CACHE_LOCK:
        _CACHE.clear()
    with _MODELS_LOCK:
        _MODELS.clear()


def _build(
    spec: ApiSpec,
    setup: str,
    m: str | None,
    url: str | None,
    idents: tuple[str, ...],
    options: GrammarOptions,
    op: Operation | None,
    vals: tuple[tuple[str, str], ...] = (),
    configs: tuple[str, ...] = (),
) -> WebApiGrammar:
    t0 = time.perf_counter()
    with _deep_recursion():
        return _build_deep(spec, setup, m, url, idents, options, op, t0, vals, configs)


_DEEP_LOCK = threading.Lock()
# builds in progress, the recursion limit and GC state before the first of them
_DEEP: dict[str, Any] = {"builds": 0, "limit": 0, "gc": False}


@contextmanager
def _deep_recursion(limit: int = 6000) -> Iterator[None]:
    """Room for the builder's recursion through schemas nested hundreds of levels deep without
    any cycle (Microsoft Graph; Python 3.11+ calls between Python functions use no C stack),
    and no cyclic garbage collection while building.

    Both settings are process-wide and builds may run in threads: the first build to start saves
    them and the last one to end restores them (a count under a lock), so a build never ends
    with another one's limit lowered or GC switched back on under it."""
    with _DEEP_LOCK:
        if _DEEP["builds"] == 0:
            _DEEP["limit"] = sys.getrecursionlimit()
            _DEEP["gc"] = gc.isenabled()
            # The builder allocates many small objects next to a loaded spec of millions: cyclic
            # GC passes over that heap took up to half of a large build, and a build makes no
            # garbage cycles worth collecting before it ends.
            gc.disable()
        _DEEP["builds"] += 1
        if sys.getrecursionlimit() < limit:
            sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        with _DEEP_LOCK:
            _DEEP["builds"] -= 1
            if _DEEP["builds"] == 0:
                if sys.getrecursionlimit() > _DEEP["limit"]:
                    sys.setrecursionlimit(_DEEP["limit"])
                if _DEEP["gc"]:
                    gc.enable()


def _build_deep(
    spec: ApiSpec,
    setup: str,
    m: str | None,
    url: str | None,
    idents: tuple[str, ...],
    options: GrammarOptions,
    op: Operation | None,
    t0: float,
    vals: tuple[tuple[str, str], ...] = (),
    configs: tuple[str, ...] = (),
) -> WebApiGrammar:
    model = spec_model(spec)
    b = _Builder(spec, model, idents, options)
    b.values = dict(vals)
    b.configs = configs
    args = None
    if op is not None:
        args = model.op_args(op, options.credentials, options.allow_url_query, transport=options.real_world)
        if options.allow_url_query and url is not None:
            args = model.given_in_url(args, frozenset(request_query(url)))
        start = f"start: WS? {b.rest_rule(args)}"
    else:
        start = b.full_start(m, head=bool(options.staged))
    text = b.render(start)
    return WebApiGrammar(
        lark=text,
        setup=setup,
        method=m,
        url=url,
        identifiers=idents,
        options=options,
        spec=spec,
        model=model,
        operation=op,
        args=args,
        key_bytes=frozenset(b.key_bytes),
        build_seconds=time.perf_counter() - t0,
        n_rules=len(b.rules),
        n_terminals=len(b.terms),
        staged=setup == "full" and bool(options.staged),
        url_values=vals,
        request_configs=configs,
    )


class _At:
    """Context of :meth:`_Builder.at` (a plain class: a generator-based context manager per
    schema member was a measurable share of large builds)."""

    __slots__ = ("b", "nest", "in_body", "saved")

    def __init__(self, b: _Builder, nest: int | None, in_body: bool | None):
        self.b, self.nest, self.in_body = b, nest, in_body

    def __enter__(self) -> None:
        b = self.b
        self.saved = (b.nest, b.in_body)
        if self.nest is not None:
            b.nest = self.nest
        if self.in_body is not None:
            b.in_body = self.in_body

    def __exit__(self, *exc: Any) -> None:
        self.b.nest, self.b.in_body = self.saved


class _Builder:
    """Emits rules on demand; equal bodies share one name."""

    def __init__(self, spec: ApiSpec, model: GrammarModel, idents: tuple[str, ...], options: GrammarOptions):
        self.spec = spec
        self.model = model
        self.idents = idents
        self.opt = options
        self.rules: dict[str, str] = {}  # name -> body
        self.by_body: dict[str, str] = {}
        self.terms: dict[str, str] = {}  # name -> definition
        self.term_by_def: dict[str, str] = {}
        self.memo: dict[Any, Any] = {}
        self.values: dict[str, str] = {}  # names in scope whose value is a URL pattern (url_values)
        self.configs: tuple[str, ...] = ()  # names holding a whole request config (request_configs)
        self.key_memo: dict[tuple[str, bool], str] = {}
        self.pending: dict[str, bool] = {}  # schema rules being built -> referred to from inside
        self.key_bytes: set[int] = set()
        self.n = 0
        # ``this`` and ``process`` (in scope under ``real_world``) are roots only, never values
        # themselves: ``headers: process`` or ``params: process.env`` sends every property as an
        # argument (Qwen2.5-Coder wrote ``'headers': process`` under the token budget, 3 of 92
        # WAPIIBench tasks, each scored with 27 illegal headers), ``headers: this`` in a method
        # the object's own fields. So ``this`` takes one member or more (``this.baseUrl``: the
        # code's own data, like any identifier's), ``process`` only ``process.env.NAME`` (a string
        # or undefined).
        plain = tuple(i for i in idents if i not in _MEMBER_ROOTS)
        roots = []
        if "this" in idents:
            roots.append(r"this(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+")
        if "process" in idents:
            roots.append(r"process\.env\.[A-Za-z_$][A-Za-z0-9_$]*")
        self.ident_rx = "|".join(_rx(i) for i in plain)
        # What a value may name: the identifiers in scope, with member access under
        # ``GrammarOptions.real_world`` (``cfg.auth.token``). A credential (credential_rule
        # "callbench") may also be ``this.NAME`` or ``process.env.NAME``: one member only, which
        # reads ``undefined`` rather than throwing when absent (a call that runs sends no
        # credential or ``'Bearer undefined'``: never an illegal argument), so whatever the
        # grammar admits still executes; elsewhere an undefined value could drop a required one.
        self.var_rx = self.val_rx = self.ident_rx
        if options.real_world and (plain or roots):
            member = r"\.[A-Za-z_$][A-Za-z0-9_$]*"
            head = rf"(?:{self.ident_rx})" if plain else None
            self.var_rx = "|".join(([rf"{head}(?:{member})*"] if head else []) + roots)
            # a value (not a URL) may also index an array on the way (`message.photo[0].file_id`)
            self.val_rx = "|".join(([rf"{head}(?:{member}|\[(?:0|[1-9][0-9]*)\])*"] if head else []) + roots)
        self.has_vars = bool(self.var_rx)  # something in scope a value may name
        self.cred_var_rx = r"(?:this|process\.env)\.[A-Za-z_$][A-Za-z0-9_$]*"
        if self.has_vars:
            self.cred_var_rx = f"{self.val_rx}|{self.cred_var_rx}"
        # Where a value is being built: the nesting level a container written here would have
        # (tracked only under ``max_nesting``) and whether it is in the request body (only under
        # ``value_types="paper"``). Both are part of every value rule's memo key; without the two
        # options they stay constant, so the grammar is what it was before them.
        self.nest = 0
        self.in_body = False

    # -- context ---------------------------------------------------------------------
    def ctx(self) -> tuple[int, bool]:
        o = self.opt
        return (self.nest if o.max_nesting is not None else 0, self.in_body and o.paper_body_types)

    def at(self, nest: int | None = None, in_body: bool | None = None) -> _At:
        """Build values at another nesting level and/or body-ness (restored afterwards)."""
        return _At(self, nest, in_body)

    def can_nest(self) -> bool:
        """May an object or array literal be written here (``max_nesting``)?"""
        return self.opt.max_nesting is None or self.nest <= self.opt.max_nesting

    def numeric_strings(self) -> bool:
        """Are '3'/'true' accepted for integer/number/boolean values here?"""
        return self.opt.numeric_strings and not (self.in_body and self.opt.paper_body_types)

    # -- naming ----------------------------------------------------------------------
    def _name(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def rule(self, prefix: str, body: str) -> str:
        hit = self.by_body.get(body)
        if hit is not None:
            return hit
        name = self._name(prefix)
        self.rules[name] = body
        self.by_body[body] = name
        return name

    def term(self, prefix: str, definition: str) -> str:
        hit = self.term_by_def.get(definition)
        if hit is not None:
            return hit
        name = self._name(prefix.upper())
        self.terms[name] = definition
        self.term_by_def[definition] = name
        return name

    def base(self, name: str) -> str:
        """A fixed terminal, defined on first use."""
        if name not in self.terms:
            self.terms[name] = self._base_def(name)
        return name

    def _base_def(self, name: str) -> str:
        o = self.opt
        rep = "*" if o.max_string_len is None else f"{{0,{o.max_string_len}}}"
        # Escapes valid in strict-mode JavaScript (the sandbox runs strict code): \x and \u need
        # their hex digits, digit escapes (legacy octal) are errors, a backslash-newline continues
        # the line. `\0` alone is valid but needs a lookahead to tell from `\01`; it is left out.
        esc = _JS_ESCAPE
        sq = r"[^\x27\x5c\n\r]|" + esc
        dq = r"[^\x22\x5c\n\r]|" + esc
        tq = r"[^\x60\x5c$]|" + esc + r"|\$+(?:[^\x60\x5c${]|" + esc + ")"
        if self.has_vars:
            tq += r"|\$*\$\{[ ]*(?:" + self.val_rx + r")[ ]*\}"
        num = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
        integer = r"-?(?:0|[1-9][0-9]*)"
        return {
            "WS": whitespace_terminal(o.space_max, o.indent_max),
            "STR": f"/\\x27(?:{sq}){rep}\\x27|\\x22(?:{dq}){rep}\\x22|\\x60(?:{tq}){rep}\\$*\\x60/",
            "INT": f"/{integer}/",
            "NUM": f"/{num}/",
            "INTSTR": f"/\\x27{integer}\\x27|\\x22{integer}\\x22|\\x60{integer}\\x60/",
            "NUMSTR": f"/\\x27{num}\\x27|\\x22{num}\\x22|\\x60{num}\\x60/",
            "BOOL": "/true|false/",
            "BOOLSTR": r"/\x27(?:true|false)\x27|\x22(?:true|false)\x22|\x60(?:true|false)\x60/",
            "ANY": "/(?s:.+)/",  # a staged head's text after the URL (judged by the tail)
            "NULL": '"null"',
            "UNDEF": '"undefined"',
            "IDENT": f"/(?:{self.val_rx})/",
            "ANYKEY": r"/\x27(?:[^\x27\x5c\n\r]|" + esc + r")*\x27|\x22(?:[^\x22\x5c\n\r]|" + esc + r")*\x22|[A-Za-z_$][A-Za-z0-9_$]*/",
            # After the call: `;`, `.then(`/`.catch(`/`.finally(` or a line break, then anything.
            "TAIL": f"/(?s:[ \\t]{{0,{max(0, o.space_max)}}}(?:;|\\.(?:then|catch|finally)\\(|\\r?\\n).*)/",
        }[name]

    def render(self, start: str) -> str:
        lines = ["%llguidance {}", start]
        lines += [f"{n}: {b}" for n, b in self.rules.items()]
        lines += [f"{n}: {d}" for n, d in self.terms.items()]
        return "\n".join(lines) + "\n"

    # -- common pieces ---------------------------------------------------------------
    def ws(self) -> str:
        # one nullable rule, not ``WS?`` written everywhere: llguidance makes a grammar symbol of
        # each optional it meets, and symbols are 16-bit (Microsoft Graph ran out of them)
        return self.rule("w", self.base("WS") + "?")

    def end(self) -> str:
        return self.rule("end", f'")" {self.base("TAIL")}?')

    def with_ident(self, alts: list[str]) -> list[str]:
        if self.has_vars:
            alts = [*alts, self.base("IDENT")]
        return alts

    def alt(self, prefix: str, alts: list[str]) -> str:
        alts = list(dict.fromkeys(alts))
        if len(alts) == 1:
            return alts[0]
        return self.rule(prefix, " | ".join(alts))

    # -- keys ------------------------------------------------------------------------
    def key_term(self, name: str, ci: bool) -> str:
        hit = self.key_memo.get((name, ci))
        if hit is not None:
            return hit
        out = self.key_memo[(name, ci)] = self._key_term(name, ci)
        return out

    def _key_term(self, name: str, ci: bool) -> str:
        forms = [_js_string(name, "'"), _js_string(name, '"')]
        if _JS_IDENT.match(name):
            forms.append(name)
        rx = "|".join(_rx(f) for f in forms)
        if ci and self.opt.real_world:
            # ASCII case only: (?i) also folds 'ſ' to 's' and the Kelvin sign to 'k', letters no
            # HTTP header name has ('Uſer-Agent' is no header the scorer or the tracker knows:
            # they compare names with str.lower()); the paper profile keeps its grammar text
            rx = "|".join("".join(f"[{c.lower()}{c.upper()}]" if c.isascii() and c.isalpha() else _rx(c) for c in f) for f in forms)
        elif ci:
            rx = f"(?i:{rx})"
        if ci:
            name_bytes = (name.lower() + name.upper()).encode()
        else:
            name_bytes = name.encode()
        self.key_bytes.update(name_bytes)
        return self.term("K", f"/{rx}/")

    # -- values ------------------------------------------------------------------------
    def value(self, desc: Any) -> str:
        """Symbol for a value matching a descriptor (schema mapping, ObjShape, None=any)."""
        if desc is None:
            return self.any_value(0)
        if type(desc) is MappingProxyType:
            return self.schema_value(desc)
        if isinstance(desc, CredentialValue):
            return self.credential_value(desc)
        if isinstance(desc, ObjShape):
            obj = self.object_rule(desc)
            return self.alt("v", self.with_ident([obj, *self.form_body(desc, obj)]))
        return self.schema_value(desc)

    def form_body(self, shape: ObjShape, obj: str) -> list[str]:
        """A form-encoded body written as real code does (``real_world``, a body the operation
        takes as ``application/x-www-form-urlencoded``): ``new URLSearchParams({...})`` (also
        ``.toString()``) and, with ``qs``/``querystring`` in scope, ``qs.stringify({...})``,
        the object inside checked as the body (``obj``)."""
        if not (shape.form and self.opt.real_world):
            return []
        key = ("form", obj)
        hit = self.memo.get(key)
        if hit is None:
            ws = self.ws()
            new = self.term("NEW", f"/new[ \\t]{{1,{max(1, self.opt.space_max)}}}URLSearchParams/")
            call = f'{ws} "(" {ws} {obj} {ws} ")"'
            alts = [f"{new} {call}", f"{new} {call} " + self.term("TOS", r"/\.toString\(\)/")]
            libs = [n for n in ("qs", "querystring") if n in self.idents]
            if libs:
                alts.append(self.term("QS", "/(?:" + "|".join(libs) + r")\.stringify/") + f" {call}")
            hit = self.memo[key] = self.rule("fb", " | ".join(alts))
        return [hit]

    def concat_value(self) -> str:
        """A string written as a concatenation (``real_world``, identifiers in scope): string
        literals, templates, numbers and identifiers (with member access) joined by ``+``
        (``'#' + req.body.hashtag``); offered where the schema takes a string (not an enum)."""
        hit = self.memo.get(("concat",))
        if hit is None:
            w = self.ws()
            atom = self.alt("ka", [self.base("STR"), self.base("NUM"), self.base("IDENT")])
            more = self._name("kc")
            self.rules[more] = f'{atom} | {atom} {w} "+" {w} {more}'
            hit = self.memo[("concat",)] = self.rule("k", f'{atom} {w} "+" {w} {more}')
        return hit  # type: ignore[no-any-return]

    def credential_value(self, cred: CredentialValue) -> str:
        """A required credential's value: its placeholder forms in any quote; with identifiers
        in scope, `` `<prefix>${name}` `` (and a bare name for an empty prefix). A free one
        (``credential_rule="callbench"``): any string literal or value expression, or a
        concatenation of them (``'Bearer ' + token``)."""
        if cred.free:
            key = ("credential", "free")
            hit = self.memo.get(key)
            if hit is None:
                w = self.ws()
                hole = r"\$*\$\{[ ]*(?:" + self.cred_var_rx + r")[ ]*\}"
                tq = r"[^\x60\x5c$]|" + _JS_ESCAPE + r"|\$+(?:[^\x60\x5c${]|" + _JS_ESCAPE + ")|" + hole
                names = self.term("CV", f"/(?:{self.cred_var_rx})/")
                template = self.term("CT", f"/\\x60(?:{tq})*\\$*\\x60/")
                atom = self.alt("ca", [self.base("STR"), template, names])
                more = self._name("cc")
                self.rules[more] = f'{atom} | {atom} {w} "+" {w} {more}'
                hit = self.memo[key] = more
            return hit
        forms = [_rx(_js_string(v, q)) for v in cred.values for q in "'\"`"]
        alts: list[str] = []
        if self.has_vars:
            hole = rf"\$\{{[ ]*(?:{self.var_rx})[ ]*\}}"
            forms += [rf"\x60{_rx(_js_string(p, '`')[1:-1])}{hole}\x60" for p in cred.prefixes]
            if "" in cred.prefixes:
                alts.append(self.base("IDENT"))
        if forms:
            alts.insert(0, self.term("CR", "/" + "|".join(dict.fromkeys(forms)) + "/"))
        return self.alt("v", alts or [self.base("NULL")])

    def any_value(self, depth: int) -> str:
        """Any JSON-like value, containers nested at most ``max_depth - depth`` deep."""
        key = ("any", depth, *self.ctx())
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        ws = self.ws()
        scalars = [self.base(t) for t in ("STR", "NUM", "BOOL", "NULL")]
        scalars = self.with_ident(scalars)
        if depth >= self.opt.max_depth or not self.can_nest():
            name = self.alt("any", scalars)
            self.memo[key] = name
            return name
        name = self._name("any")
        self.memo[key] = name
        with self.at(nest=self.nest + 1):
            inner = self.any_value(depth + 1)
        member = self.rule("am", f'{self.base("ANYKEY")} {ws} ":" {ws} {inner}')
        obj = self.listed("ao", "{", member, "}")
        arr = self.array_of(inner)
        self.rules[name] = " | ".join([*scalars, obj, arr])
        return name

    def listed(self, prefix: str, open_: str, item: str, close: str) -> str:
        """``open ws (item ws ("," ws item ws)* ("," ws)?)? close`` (trailing comma allowed) as
        three rules without groups: llguidance makes grammar symbols of every group, optional
        and repetition, and their 16-bit numbers ran out on Microsoft Graph's objects."""
        key = ("listed", prefix, open_, item, close)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        ws = self.ws()
        body, tail = self._name("lb"), self._name("lt")
        self.rules[body] = f'"{close}" | {item} {ws} {tail}'
        self.rules[tail] = f'"{close}" | "," {ws} {body}'
        name = self.memo[key] = self.rule(prefix, f'"{open_}" {ws} {body}')
        return name

    def array_of(self, item: str) -> str:
        ws = self.ws()
        n = self.opt.max_array_items
        more = "*" if n is None else f"{{0,{max(0, n - 1)}}}"
        if n == 0:
            return self.rule("a", f'"[" {ws} "]"')
        if n is None:
            return self.listed("a", "[", item, "]")
        return self.rule("a", f'"[" {ws} ({item} {ws} ("," {ws} {item} {ws}){more} ("," {ws})?)? "]"')

    def object_rule(self, shape: ObjShape) -> str:
        key = ("obj", id(shape), *self.ctx())
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        ws = self.ws()
        m = self.object_members(shape)
        if m is not None:
            name = self.listed("o", "{", m, "}")
        else:
            name = self.rule("o", f'"{{" {ws} "}}"')
        self.memo[key] = name
        return name

    def object_members(self, shape: ObjShape) -> str | None:
        """The symbol of one member (``key: value`` or a shorthand) of an object of ``shape``
        (None: no key is allowed)."""
        key = ("members", id(shape), *self.ctx())
        if key in self.memo:
            return self.memo[key]  # type: ignore[no-any-return]
        ws = self.ws()
        members = []
        inner = self.nest + 1
        for name, desc in shape.props.items():
            k = self.key_term(name, shape.ci)
            # the config's `data` is the request body; its params/headers are not
            body = (name == "data") if shape.kind == "config" else None
            with self.at(nest=inner, in_body=body):
                v = self.value(desc)
            members.append(self.rule("p", f'{k} {ws} ":" {ws} {v}'))
            if self.shorthand(name, desc):
                members.append(self.term("SH", f"/{_rx(name)}/"))
        for prefix, desc in shape.patterns:
            forms = [f"{_rx(q + prefix)}[^\\x5b\\x5d{_rx(q)}\\x5c\\n\\r]*\\x5d{_rx(q)}" for q in "'\""]
            pk = self.term("PK", "/" + "|".join(forms) + "/")
            if shape.props:
                declared = " | ".join(self.key_term(n, shape.ci) for n in shape.props)
                pk = self.term("XK", f"{pk} & ~({declared})")
            with self.at(nest=inner):
                v = self.value(desc)
            members.append(self.rule("p", f'{pk} {ws} ":" {ws} {v}'))
        if shape.extra is not NO:
            anykey = self.base("ANYKEY")
            if shape.props:
                declared = " | ".join(self.key_term(n, shape.ci) for n in shape.props)
                anykey = self.term("XK", f"{anykey} & ~({declared})")
            with self.at(nest=inner):
                v = self.value(shape.extra)
            members.append(self.rule("p", f'{anykey} {ws} ":" {ws} {v}'))
        m = self.alt("m", members) if members else None
        self.memo[key] = m
        return m

    def shorthand(self, name: str, desc: Any) -> bool:
        """May the key be written as a shorthand property (``{ limit }``, ``{ params }``)?
        Under ``real_world``, when the key is an identifier in scope and its value may be one."""
        if not self.opt.real_world or name not in self.idents or name in _MEMBER_ROOTS:
            return False
        if isinstance(desc, CredentialValue):
            return desc.free or "" in desc.prefixes
        return True

    def schema_value(self, schema: Mapping[str, Any]) -> str:
        """Symbol for a value of ``schema``: one rule per schema (and value context), shared by
        every place that uses the schema. A schema reached again inside itself, directly or
        through others (``Node.children[]``, Graph's ``drive -> user -> drive``), refers back
        to the rule being built: a recursive grammar rule, as deep as the schema allows.

        (Recursion used to unroll into one rule per level, ``null`` past ``max_depth``: a rule
        then depended on the levels of the schemas around the place it was first built, and,
        shared everywhere, allowed only ``null`` where the same schema at the top allows an
        object. JSON Schema sets no depth, so neither does the grammar; the token budget keeps a
        call finite, and ``max_nesting`` bounds literal nesting where a profile asks for it.)"""
        key = ("s", id(schema), *self.ctx())
        hit = self.memo.get(key)
        if hit is not None:
            if hit in self.pending:  # reached again while its body is built: a recursive rule
                self.pending[hit] = True
            return hit
        name = self._name("s")
        self.memo[key] = name
        self.pending[name] = False
        try:
            alts = self.schema_alts(schema)
        finally:
            referred = self.pending.pop(name)
        if referred:  # the reserved name is in use: it gets the body
            self.rules[name] = " | ".join(dict.fromkeys(alts))
        else:  # not recursive through this rule: shared by body as any other rule
            self.memo[key] = self.alt("s", alts)
        return self.memo[key]

    def schema_alts(self, schema: Mapping[str, Any]) -> list[str]:
        alts = self._schema_alts(schema)
        joined = schema.get(DELIMITED)
        if joined is not None:
            scal = self.model.scalars(schema)
            term = self.delimited_term(*joined, rule_ok=scal is not None and not scal[1] & _QUOTED_TYPES)
            if term is not None:
                alts.insert(0, term)
        return alts

    def delimited_term(self, delim: str, item: Any, rule_ok: bool = True) -> str | None:
        """A string of items joined by ``delim`` (``'snippet,id'``), when the items are enum
        members, numbers or booleans (items of free text are any string already)."""
        scal = self.model.scalars(item) if is_map(item) else None
        if scal is None:
            return None
        enums, types = scal
        if enums is not None:
            vals = [v if isinstance(v, str) else json.dumps(v) for v in enums if v is not None]
            if not vals:
                return None
            vals = list(dict.fromkeys(vals))
            # as a rule only where the enum's own value is one too (:meth:`_enum_term`: the same
            # members, all plain strings), so no quoted lexeme sits beside the lone quote
            if (
                rule_ok  # no string/number/boolean lexeme of the value beside the lone quote
                and sum(map(len, vals)) > _BIG_ENUM
                and all(type(v) is str for v in enums if v is not None)
                and all(_PLAIN_STR.match(v) and delim not in v for v in vals)
            ):
                return self.delimited_rule(delim, vals)
            one = "(?:" + "|".join(_rx(v) for v in vals) + ")"
        elif types and types <= {"integer", "null"}:
            one = r"-?(?:0|[1-9][0-9]*)"
        elif types and types <= {"integer", "number", "null"}:
            one = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
        elif types and types <= {"boolean", "null"}:
            one = "(?:true|false)"
        else:
            return None
        d = _rx(delim)
        forms = [f"{_rx(q)}{one}(?:{d}{one})*{_rx(q)}" for q in "'\"`"]
        return self.term("L", "/" + "|".join(forms) + "/")

    def delimited_rule(self, delim: str, vals: list[str]) -> str:
        """:meth:`delimited_term` of a large enum as rules over one lexeme per member: the
        opening quote with the first member, the delimiter with each next one, the closing quote
        (members hold no quote or delimiter, so each lexeme ends where the next begins; a lone
        ``'id'`` is also the enum's own value, the same string, so whichever of the two the
        lexer follows accepts it)."""
        key = ("delimited", delim, tuple(vals))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        rest = self.rule("lr", " | ".join(self.term("LR", f"/{_rx(delim + v)}/") for v in vals))
        forms = []
        for q in QUOTES:
            # the quote stays in the first member's lexeme: beside the enum's own lexemes (a lone
            # quote, or the quote with a member) it is then the longer one, never cut short
            first = self.quoted_members(q, vals, alone=False)
            forms.append(f"{first} {rest}* {self.term('LQ', f'/{_rx(q)}/')}")
        name = self.memo[key] = self.rule("l", " | ".join(forms))
        return name

    def quoted_members(self, q: str, vals: list[str], alone: bool = True) -> str:
        """The opening quote ``q`` and one of ``vals`` (the closing quote follows as its own
        lexeme, so a member lexeme never has to end where another could go on). ``alone``: no
        other lexeme at this point starts with a quote, so the quote is a lexeme of its own and
        the members' lexemes are shared by all quotes and lists; else each member lexeme holds
        the quote (llguidance's lexer never cuts a lexeme short where a longer one goes on, so a
        lone quote next to ``'3'`` would lose ``'3abc'``)."""
        if not alone:
            return self.rule("lf", " | ".join(self.term("LF", f"/{_rx(q + v)}/") for v in vals))
        members = self.rule("lv", " | ".join(self.term("V", f"/{_rx(v)}/") for v in vals))
        return f"{self.term('LQ', f'/{_rx(q)}/')} {members}"

    def _schema_alts(self, schema: Mapping[str, Any]) -> list[str]:
        scal = self.model.scalars(schema)
        if scal is None:
            return [self.any_value(0)]
        enums, types = scal
        alts: list[str] = []
        if enums is not None:
            alts.append(self.enum_term(enums, alone=not types & _QUOTED_TYPES))
            if None in enums:
                alts.append(self.base("NULL"))
        ns = self.numeric_strings()
        for t in ("string", "integer", "number", "boolean", "null"):
            if t not in types:
                continue
            if t == "string":
                alts.append(self.base("STR"))
                if self.opt.real_world and self.has_vars:
                    alts.append(self.concat_value())
            elif t == "integer" and "number" not in types:
                bounded = self.int_bounds(schema)
                if bounded is None:
                    alts.append(self.base("INT"))
                    if ns:
                        alts.append(self.base("INTSTR"))
                elif bounded:  # an empty range: no integer is legal here
                    alts.append(self.term("IB", f"/{bounded}/"))
                    if ns:
                        alts.append(self.term("IBS", "/" + "|".join(f"{q}(?:{bounded}){q}" for q in (r"\x27", r"\x22", r"\x60")) + "/"))
            elif t == "number":
                alts.append(self.base("NUM"))
                if ns:
                    alts.append(self.base("NUMSTR"))
            elif t == "boolean":
                alts.append(self.base("BOOL"))
                if ns:
                    alts.append(self.base("BOOLSTR"))
            elif t == "null":
                alts.append(self.base("NULL"))
        if "object" in types and self.can_nest():
            alts.append(self.object_rule(self.model.shape(schema)))
        if "array" in types and self.can_nest():
            with self.at(nest=self.nest + 1):
                item = self.value(self.model.items(schema))
            alts.append(self.array_of(item))
        if not alts:  # e.g. an empty enum: nothing legal but null keeps the grammar closed
            alts.append(self.base("NULL"))
        return self.with_ident(alts)

    def int_bounds(self, schema: Mapping[str, Any]) -> str | None:
        """The regex of the integers ``schema``'s ``minimum``/``maximum`` (and their exclusive
        forms, boolean in OpenAPI 3.0, numeric in 3.1) allow; None when it sets no bound, or under
        the paper profile (WAPIIBench's CD does not bound numbers; its grammars stay as they were);
        ``""`` when no integer is in the range."""
        if self.opt.profile == "paper":
            return None
        lo = _int_bound(schema.get("minimum"), schema.get("exclusiveMinimum"), up=True)
        hi = _int_bound(schema.get("maximum"), schema.get("exclusiveMaximum"), up=False)
        if lo is None and hi is None:
            return None
        return int_range_regex(lo, hi)

    def enum_term(self, values: list[Any], alone: bool = True) -> str:
        """The enum's members as JS literals; ``alone``: no other lexeme of the value may start
        with a quote (no string/number/boolean type beside the enum)."""
        ns = self.numeric_strings()
        key = ("enum", id(values), ns, alone)
        hit = self.memo.get(key)
        if hit is not None and hit[1] is values:
            return hit[0]
        name = self._enum_term(values, ns, alone)
        self.memo[key] = (name, values)
        return name

    def _enum_term(self, values: list[Any], ns: bool, alone: bool = True) -> str:
        plain = list(dict.fromkeys(v for v in values if type(v) is str and _PLAIN_STR.match(v)))
        if sum(map(len, plain)) > _BIG_ENUM:
            # One lexeme per member, in a rule: the lexer's budget is spent once per member text
            # rather than once per member list (Microsoft Graph has a thousand large lists of
            # mostly the same property names, which did not fit llguidance's lexer budget).
            rest = _enum_regex_uncached([v for v in values if not (type(v) is str and _PLAIN_STR.match(v))], ns)
            alone = alone and (rest is None or not any(_rx(q) in rest for q in QUOTES))
            alts = [f"{self.quoted_members(q, plain, alone)} {self.term('LQ', f'/{_rx(q)}/')}" for q in QUOTES]
            if rest is not None:
                alts.append(self.term("E", f"/{rest}/"))
            return self.rule("e", " | ".join(alts))
        try:
            key = tuple((type(v), v) for v in values)
            hash(key)
        except TypeError:  # object/array members
            rx = _enum_regex_uncached(values, ns)
        else:
            rx = _enum_regex(key, ns)
        return self.base("NULL") if rx is None else self.term("E", f"/{rx}/")

    # -- arguments -------------------------------------------------------------------
    def data_value(self, args: OpArgs) -> str:
        d = args.data
        alts = []
        with self.at(nest=0, in_body=True):  # the body argument itself is level 0
            if isinstance(d, ObjShape):
                alts.append(self.object_rule(d))
                alts += self.form_body(d, alts[0])
            else:
                alts.append(self.value(d))
        if not args.data_mandatory:
            alts += [self.base("NULL"), self.base("UNDEF")]
        return self.alt("d", self.with_ident(alts))

    def config_value(self, args: OpArgs) -> str:
        with self.at(nest=-1, in_body=False):  # its params/headers/data objects are level 0
            obj = self.object_rule(args.config)
        return self.alt("c", self.with_ident([obj]))

    def rest_rule(self, args: OpArgs) -> str:
        """Everything after the comma that follows the URL (leading whitespace consumed)."""
        ws = self.ws()
        end = self.end()
        c = self.config_value(args)
        tail_c = f'{c} {ws} ("," {ws})? {end}'
        if args.operation.method in BODY_METHODS:
            d = self.data_value(args)
            if args.config_mandatory:
                body = f'{d} {ws} "," {ws} {tail_c}'
            else:
                body = f'{d} {ws} ("," {ws} ({c} {ws} ("," {ws})?)?)? {end}'
            if not args.data_mandatory and not args.config_mandatory:
                body += f" | {end}"
        else:
            body = tail_c if args.config_mandatory else f"{tail_c} | {end}"
        return self.rule("r", body)

    def after_url_rule(self, args: OpArgs) -> str:
        ws = self.ws()
        rest = self.rest_rule(args)
        body = f'"," {ws} {rest}'
        if not (args.data_mandatory or args.config_mandatory):
            body += f" | {self.end()}"
        return self.rule("u", body)

    # -- URLs --------------------------------------------------------------------------
    def head_after(self) -> str:
        """A staged head's continuation after any URL: what every operation's arguments can
        start with (``,`` or ``)``), then any text; the operation's own grammar takes over from
        the closing quote (:mod:`callbench.constrain.staged`)."""
        return self.rule("hd", f'{self.ws()} ("," | ")") {self.base("ANY")}?')

    def full_start(self, only: str | None, *, head: bool = False, only_op: Operation | None = None) -> str:
        """The ``full`` grammar's start: every operation (of method ``only``), or the one
        operation ``only_op`` (a staged tail); ``head``: URLs followed by :meth:`head_after`."""
        by_method: dict[str, list[Operation]] = {}
        for op in self.spec.operations if only_op is None else (only_op,):
            if op.method in AXIOS_METHODS and (only is None or op.method == only):
                by_method.setdefault(op.method, []).append(op)
        if not by_method:
            raise GrammarError(
                f"{self.spec.source}: no operation with method {only!r}"
                if only
                else f"{self.spec.source}: no operations"
            )
        templates = self.model.templates()
        words = self.model.url_words(self.idents, self.opt.allow_url_query, self.opt.real_world)
        found_by: dict[str, list[Any]] = {}
        for method, ops in by_method.items():
            if head:
                # A staged head needs no shadowing: every URL has the same continuation there, and
                # the union of the templates' URLs is the same with or without the cuts (they only
                # decide which operation owns a URL, which the operation's own stage settles).
                ops = by_method[method] = list({op.path: op for op in ops}.values())  # a path once
                found = found_by[method] = [words.head_terms(self, templates, op.path) for op in ops]
            else:
                found = found_by[method] = [words.of(self, templates, op.path, method) for op in ops]
            if any(f is None for f in found):  # a shadowing the segment lexemes cannot express
                configs = not head and only_op is None and only is None
                return self._full_start_regex(by_method, templates, head, configs=configs)
        ws = self.ws()
        calls = []
        if self.request_form_offered():
            urls_of = self._head_trie if head else self._url_trie
            calls.append(self.request_form(by_method, lambda items: urls_of(items, found_by), head))
        for method in AXIOS_METHODS:
            ops = by_method.get(method)
            if not ops:
                continue
            found = found_by[method]
            if head:  # one word per path, the same in every quote but for its terminals
                after = self.head_after()
                words = [(zip(*(by_q[q] for q in QUOTES), strict=True), after) for by_q in found]  # type: ignore[index]
                heads = self.trie_symbols(words, "t", lanes=len(QUOTES))
                alts = [f"{self.server_rule(q)} {paths}" for q, paths in zip(QUOTES, heads, strict=True)]
                calls.append(self.rule("call", f'"{method}" {ws} "(" {ws} {self.alt("urls", alts)}'))
                continue
            per_quote: dict[str, list[tuple[tuple[str, ...], str]]] = {q: [] for q in QUOTES}
            for op, by_q in zip(ops, found, strict=True):
                assert by_q is not None
                if not any(by_q.values()):
                    continue  # every URL of this template belongs to a better-ranked one
                after = f"{ws} {self.after_url_rule(self._args(op))}"
                for q, ws_q in by_q.items():
                    for w in ws_q:
                        per_quote[q].append((tuple((self.segment_term(x),) for x in w), after))
            whole, paths_of = self.known_urls(method)
            for words_q, more in paths_of.items():
                per_quote[words_q].extend(more)
            whole += self.known_prefixes(ops, found)
            alts = []
            for q in QUOTES:
                if per_quote[q]:
                    (paths,) = self.trie_symbols(per_quote[q], "t")
                    alts.append(f"{self.server_rule(q)} {paths}")
            alts += whole
            if alts:
                calls.append(self.rule("call", f'"{method}" {ws} "(" {ws} {self.alt("urls", alts)}'))
        if not head and only_op is None and only is None:
            calls += self.config_calls()
        if not calls:
            raise GrammarError(f"{self.spec.source}: no URL is left for method {only!r}")
        return "start: " + " | ".join(calls)

    def _url_trie(self, items: list[tuple[str, int, str]], found_by: dict[str, list[Any]]) -> str | None:
        """The URLs of the operations ``(method, index in by_method[method], continuation)`` as
        one trie per quote (:meth:`trie_symbols`), each URL followed by its continuation."""
        per_quote: dict[str, list[tuple[tuple[tuple[str, ...], ...], str]]] = {q: [] for q in QUOTES}
        for method, i, after in items:
            for q, ws_q in found_by[method][i].items():
                for w in ws_q:
                    per_quote[q].append((tuple((self.segment_term(x),) for x in w), after))
        alts = []
        for q in QUOTES:
            if per_quote[q]:
                (paths,) = self.trie_symbols(per_quote[q], "t")
                alts.append(f"{self.server_rule(q)} {paths}")
        return self.alt("urls", alts) if alts else None

    def request_form_offered(self) -> bool:
        """Does the ``full`` grammar offer :meth:`request_form` (see :data:`REQUEST_FORM_MAX_OPERATIONS`)?"""
        if not self.opt.real_world:
            return False
        n = sum(1 for op in self.spec.operations if op.method in AXIOS_METHODS)
        return n <= REQUEST_FORM_MAX_OPERATIONS

    def _head_trie(self, items: list[tuple[str, int, str]], found_by: dict[str, list[Any]]) -> str | None:
        """:meth:`_url_trie` for a staged head (one word per path, its terminals per quote)."""
        words = [(zip(*(found_by[m][i][q] for q in QUOTES), strict=True), after) for m, i, after in items]
        if not words:
            return None
        heads = self.trie_symbols(words, "t", lanes=len(QUOTES))
        return self.alt("urls", [f"{self.server_rule(q)} {p}" for q, p in zip(QUOTES, heads, strict=True)])

    def request_form(self, by_method: dict[str, list[Operation]], urls_of: Any, head: bool = False) -> str:
        """``request({ method: 'post', url: '<URL>', ...config })`` (``real_world`` only): axios'
        config-object call. The object starts with ``method`` and ``url`` in either order (the
        method is not optional: with the URL first, the key tracker and a staged grammar learn
        the operation at the method's closing quote); ``method`` is a literal (any case, any
        quote) naming a method the URL's path allows (method first: only that method's URLs
        follow; URL first: only the methods of the operations the URL can name). The
        operation's config keys follow (``params``, ``headers``, ``auth``, and ``data`` as its
        body), as in the positional form (:meth:`SpecModel.request_config`).
        ``urls_of(items)``: the URL alternatives of ``(method, index, continuation)`` items (a
        trie, or regexes). ``head``: a staged head's (the URLs, then any text once the method
        and URL are written; :meth:`head_after`)."""
        ws = self.ws()
        mkey, ukey = self.key_term("method", False), self.key_term("url", False)
        lits = {
            # ASCII case only: (?i) would also fold 'ſ' to 's' ('poſt' is no method axios knows)
            m: self.term("MT", "/(?:" + "|".join(_rx(q) + "".join(f"[{c.lower()}{c.upper()}]" for c in m) + _rx(q) for q in QUOTES) + ")/")
            for m in AXIOS_METHODS
            if by_method.get(m)
        }
        first: list[str] = []
        url_items: list[tuple[str, int, str]] = []
        paths: dict[str, tuple[str, int, list[str]]] = {}  # a head's URL-first words: one per path
        for method, lit in lits.items():
            ops = by_method[method]
            if head:  # what every operation's request object can go on with, then any text
                rests = [""] * len(ops)
                after = self.rule("hr", f'{ws} ("," | "}}") {self.base("ANY")}?')
                urls = urls_of([(method, i, after) for i in range(len(ops))])
            else:
                rests = [self.request_rest(self._args(op)) for op in ops]
                urls = urls_of([(method, i, f"{ws} {r}") for i, r in enumerate(rests)])
            if urls is not None:
                first.append(f'{lit} {ws} "," {ws} {ukey} {ws} ":" {ws} {urls}')
            for i, (op, r) in enumerate(zip(ops, rests, strict=True)):
                if head:
                    paths.setdefault(op.path, (method, i, []))[2].append(lit)
                    continue
                after = self.rule("ra", f'{ws} "," {ws} {mkey} {ws} ":" {ws} {lit} {ws} {r}')
                url_items.append((method, i, after))
        for method, i, named in paths.values():
            after = f'{ws} "," {ws} {mkey} {ws} ":" {ws} {self.alt("hm", named)} {self.base("ANY")}?'
            url_items.append((method, i, self.rule("ra", after)))
        alts = []
        if first:
            alts.append(f'{mkey} {ws} ":" {ws} {self.alt("rf", first)}')
        urls = urls_of(url_items)
        if urls is not None:
            alts.append(f'{ukey} {ws} ":" {ws} {urls}')
        return self.rule("call", f'"request" {ws} "(" {ws} "{{" {ws} {self.alt("rq", alts)}')

    def request_rest(self, args: OpArgs) -> str:
        """What follows ``method`` and ``url`` in :meth:`request_form`'s object: the rest of its
        members, its ``}``, an optional trailing comma and the call's ``)``."""
        shape = self.model.request_config(args)
        key = ("reqrest", id(shape))
        hit = self.memo.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        ws = self.ws()
        close = self.rule("rc", f'"}}" {ws} ("," {ws})? {self.end()}')
        with self.at(nest=-1, in_body=False):  # as config_value: its params/headers/data are level 0
            m = self.object_members(shape)
        if m is None:
            name = self.rule("rt", f'{close} | "," {ws} {close}')
        else:
            body, name = self._name("rb"), self._name("rt")
            self.rules[body] = f"{close} | {m} {ws} {name}"
            self.rules[name] = f'{close} | "," {ws} {body}'
        self.memo[key] = name
        return name

    def segment_term(self, piece: Piece) -> str:
        """The terminal of one URL piece: its regex, less the better-ranked pieces it excludes."""
        base, excluded, _ = piece
        name = self.term("S", f"/{base}/")
        if not excluded:
            return name
        others = " | ".join(self.term("S", f"/{x}/") for x in excluded)
        return self.term("SX", f"{name} & ~({others})")

    def server_rule(self, quote: str) -> str:
        """The opening quote and a server prefix, as lexemes that end before each ``/`` (the
        lexer does not backtrack: a lexeme that could still grow is never cut short, so no
        piece may be a prefix of another piece followed by what comes next)."""
        key = ("srv", quote)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        server_var = self.var_rx if self.opt.real_world and self.has_vars else None
        if server_var is not None and self.values:  # a name whose known value is no server is not one
            names = [i for i in self.idents if i not in self.values or _is_server(self.values[i], self.spec)]
            server_var = rf"(?:{'|'.join(map(_rx, names))})(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*" if names else None
        # with a name holding a path (known_urls: `${HOSTNAME}${path}`) the leading ${...} is one:
        # a run of them would go on into `${path}` (the lexer does not backtrack)
        more = "" if any(v.startswith("/") for v in self.values.values()) else None
        found = server_words(self.spec, quote, self.opt.real_world, server_var, more_var=more)
        words = [(tuple((self.segment_term((x, (), None)),) for x in w), "") for w in found]
        name = self.memo[key] = self.rule("sv", self.trie_symbols(words, "sv")[0])
        return name

    def trie_symbols(
        self, words: Iterable[tuple[Iterable[tuple[str, ...]], str]], prefix: str, lanes: int = 1
    ) -> tuple[str, ...]:
        """Symbols of the words (terminal sequences, each followed by its continuation) merged
        into a trie of rules: a shared prefix is written once, so the lexemes allowed at any
        point are the few pieces that can follow there (one whole-URL lexeme per template put
        thousands at the URL's start; llguidance refused such lexers).

        Each position of a word is a tuple of ``lanes`` terminals: the same word in several
        alphabets (a staged head's path in '...', "..." and `...`: the same segments, other
        terminals), one trie walked once, one symbol per lane (the largest heads have ~14,000
        paths per quote, and a trie per quote was a third of the build)."""
        root: dict[Any, Any] = {}
        for seq, after in words:
            node = root
            for key in seq:
                node = node.setdefault(key, {})
            node.setdefault(None, {})[after] = None  # the continuations (terminal keys are never None)
        rule = self.rule

        def close(alts: list[str]) -> str:
            alts = list(dict.fromkeys(alts))
            if len(alts) == 1:
                return alts[0]
            if "" in alts:  # an empty continuation (the server words): the rest is optional
                rest = [a for a in alts if a]
                inner = rest[0] if len(rest) == 1 else rule(prefix, " | ".join(rest))
                return f"({inner})?"
            return rule(prefix, " | ".join(alts))

        def emit(node: dict[Any, Any]) -> list[str]:
            if len(node) == 1:  # the common case: a chain, or one continuation
                key, child = next(iter(node.items()))
                if key is not None:
                    return list(map(_then, key, emit(child)))
                if len(child) == 1:
                    return [next(iter(child))] * lanes
            alts: list[list[str]] = [[] for _ in range(lanes)]
            for key, child in node.items():
                if key is None:
                    for lane in alts:
                        lane.extend(child)
                    continue
                for lane, alt in zip(alts, map(_then, key, emit(child)), strict=True):
                    lane.append(alt)
            return [close(a) for a in alts]

        return tuple(emit(root))

    def _args(self, op: Operation) -> OpArgs:
        return self.model.op_args(op, self.opt.credentials, self.opt.allow_url_query, transport=self.opt.real_world)

    def _full_start_regex(
        self, by_method: dict[str, list[Operation]], templates: Templates, head: bool, *, configs: bool = False
    ) -> str:
        """The URLs as one regex lexeme per template, shadowing cut out by regex negation: exact
        for any overlap, but too big for llguidance on the largest specs; used only where the
        segment words cannot express a template's shadowing."""
        ws = self.ws()
        calls = []
        if self.request_form_offered():

            def urls_of(items: list[tuple[str, int, str]]) -> str | None:
                alts = [
                    f"{self.url_base(templates, by_method[m][i].path) if head else self.url_term(templates, by_method[m][i].path, m)} {after}"
                    for m, i, after in items
                ]
                return self.rule("urls", " | ".join(dict.fromkeys(alts))) if alts else None

            calls.append(self.request_form(by_method, urls_of, head))
        for method in AXIOS_METHODS:
            ops = by_method.get(method)
            if not ops:
                continue
            alts = []
            for op in ops:
                if head:  # the union of the URLs (see full_start)
                    alts.append(f"{self.url_base(templates, op.path)} {self.head_after()}")
                    continue
                u = self.url_term(templates, op.path, method)
                alts.append(f"{u} {ws} {self.after_url_rule(self._args(op))}")
            urls = self.rule("urls", " | ".join(dict.fromkeys(alts)))
            calls.append(self.rule("call", f'"{method}" {ws} "(" {ws} {urls}'))
        if configs:
            calls += self.config_calls()
        return "start: " + " | ".join(calls)

    def config_calls(self) -> list[str]:
        """``request(config)``: a name holding a whole request config the spec allows
        (``request_configs``); what it sends was checked when the name was offered."""
        if not self.configs:
            return []
        ws = self.ws()
        names = self.term("RC", "/(?:" + "|".join(map(_rx, self.configs)) + ")/")
        return [self.rule("call", f'"request" {ws} "(" {ws} {names} {ws} {self.end()}')]

    def url_term(self, templates: Templates, path: str, method: str) -> str:
        base = self.url_base(templates, path)
        better = templates.shadowing(path, method)
        if not better:
            return base
        others = " | ".join(self.url_base(templates, p) for p in better)
        return self.term("UX", f"{base} & ~({others})")

    def url_base(self, templates: Templates, path: str) -> str:
        key = ("url", path)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        dkey = (path, self.idents, self.opt.allow_url_query, self.opt.real_world)
        definition = self.model.url_defs.get(dkey)
        if definition is None:
            definition = self.model.url_defs[dkey] = self._url_def(templates, path)
        name = self.memo[key] = self.term("U", definition)
        return name

    def _url_def(self, templates: Templates, path: str) -> str:
        holes = templates.hole_schemas(path)
        op = next(iter(templates.ops[path].values()))
        plan = url_plan(self.spec, op)
        qholes = {p.name: p.schema for o in templates.ops[path].values() for p in o.params_in("query") if p.schema}
        words = self.model.url_words(self.idents, self.opt.allow_url_query, self.opt.real_world)
        forms = []
        for q in "'\"`":
            pieces = PARAM_RX.split(plan.path.rstrip("/") or "/")
            body = []
            for i, piece in enumerate(pieces):
                if i % 2 == 0:
                    body.append(_rx(piece))
                else:
                    body.append(self.hole_rx(holes.get(piece), q))
            pre = self.server_prefixes(q)
            tail = words._tail(self, plan, qholes, q, path)  # the same tail as the segment words'
            forms.append(f"{_rx(q)}(?:{pre}){''.join(body)}{tail}")
            end = words.end_hole(self, templates, path, q)  # '.../users/' + name
            if end is not None:
                forms.append(f"{_rx(q)}(?:{pre}){''.join(end[0])}")
        return "/" + "|".join(forms) + "/"

    def known_urls(self, method: str) -> tuple[list[str], dict[str, list[tuple[tuple[tuple[str], ...], str]]]]:
        """Names in scope whose value the starter fixes (``url_values``) that name an operation
        with ``method``: (alternatives of the URL argument, words to add after the server per
        quote).

        * A whole URL (``const url = "https://api.openai.com/v1/chat/completions"``; ``get(url)``):
          the name alone, then optionally ``+`` and strings or names going on into the query
          (``urlLink + key`` after ``"...apod?api_key="``, ``BASEURL + APIKEY + "&q=" + query``);
          a value without ``?`` must go on with a ``'?...'`` string or a name whose value starts
          with ``?`` (nothing may extend its path). The key tracker reads the value in the
          name's place (so it knows the operation) and checks the query's keys at the URL's end.
        * A path (``const path = `/users/${USERNAME}/repos```): `` `${path}` `` after a server
          in backticks (`` `${HOSTNAME}${path}` ``), where server + path is an operation's URL.

        The value's query keys must be the operation's. Staged grammars (the largest specs) do
        not take these forms."""
        whole: list[str] = []
        paths: dict[str, list[tuple[tuple[tuple[str], ...], str]]] = {}
        if not self.values:
            return whole, paths
        ws = self.ws()
        hole = "\x01"
        starts_q = [n for n, v in self.values.items() if v.startswith("?")]
        for name, value in sorted(self.values.items()):
            probe = value.replace(hole, "1")
            if value.startswith("/"):
                urls = [srv.rstrip("/") + probe for srv in self.spec.servers if "{" not in srv]
            elif "://" in value:
                urls = [probe]
            else:
                continue
            match = next((mm for u in urls if (mm := self.spec.match(method, u, real_world=True))), None)
            if match is None or not self._query_ok(match.operation, value):
                continue
            after = f"{ws} {self.after_url_rule(self._args(match.operation))}"
            if value.startswith("/"):  # `${path}` right after the server, then the closing backtick
                t = self.term("KS", rf"/\$\{{[ ]*{_rx(name)}[ ]*\}}\x60/")
                paths.setdefault("`", []).append(((( t,),), after))
                continue
            text = r"\x27[^\x27\x5c\s#]*\x27|\x22[^\x22\x5c\s#]*\x22"
            piece = rf"[ ]*\+[ ]*(?:{self.var_rx}|{text})"
            if "?" in value:
                cont = f"(?:{piece})+"
            else:
                first = r"\x27\?[^\x27\x5c\s#]*\x27|\x22\?[^\x22\x5c\s#]*\x22"
                if starts_q:
                    first += "|" + "|".join(_rx(n) for n in starts_q)
                cont = rf"[ ]*\+[ ]*(?:{first})(?:{piece})*"
            n = self.term("KN", f"/{_rx(name)}/")
            c = self.term("KC", f"/{cont}/")
            whole.append(self.rule("kn", f"{n} {c}? {after}"))
        return whole, paths

    def known_prefixes(self, ops: list[Operation], found: list[Any]) -> list[str]:
        """Names whose value (``url_values``) is a server and the first segments of paths
        (``const API_BASE_URL = "http://api.giphy.com/v1/gifs"``): `` `${API_BASE_URL}/search` ``
        takes the rest of each path of ``ops`` that starts with those segments (its backtick
        words from the segment on, shadowing cut as in the whole URL)."""
        if not self.values:
            return []
        ws = self.ws()
        words: list[tuple[tuple[tuple[str], ...], str]] = []
        for name, value in sorted(self.values.items()):
            extra = _extra_segments(value, self.spec.servers)
            if not extra:
                continue
            lead = (self.segment_term((_rx("`"), (), None)), self.term("KP", rf"/\$\{{[ ]*{_rx(name)}[ ]*\}}/"))
            for op, by_q in zip(ops, found, strict=True):
                segs = (op.path.split("?", 1)[0].split("#", 1)[0].rstrip("/") or "/").split("/")[1:]
                k = len(extra)
                if len(segs) <= k or any(s != e and "{" not in s for s, e in zip(segs, extra, strict=False)):
                    continue
                after = f"{ws} {self.after_url_rule(self._args(op))}"
                for w in (by_q or {}).get("`", []):
                    if len(w) > k + 1:
                        words.append(((*((t,) for t in lead), *((self.segment_term(x),) for x in w[k:])), after))
        if not words:
            return []
        (paths,) = self.trie_symbols(words, "t")
        return [paths]

    def _query_ok(self, op: Operation, value: str) -> bool:
        """The keys of a known URL's query (``value``, holes ``\x01``) are ``op``'s."""
        if "?" not in value:
            return True
        params = self._args(op).config.props["params"]
        fixed = url_plan(self.spec, op).in_url
        for pair in value.split("#", 1)[0].partition("?")[2].split("&"):
            key = pair.partition("=")[0]
            if key and "\x01" not in key and key not in fixed and params.child(key) is NO:
                return False
        return True

    def query_keys_rx(self, path: str) -> str:
        """The keys a URL's query may hold (``allow_url_query``), a regex: the query parameters
        and query credentials of the spec's operations (as their ``params`` take them, the members
        ``name[...]`` of a deepObject parameter that allows any), "" when there are none.

        One set for every path: per-path sets made every path's tail its own lexeme, and where
        many paths can follow one prefix (Google's ``/v1/{+name}...``) llguidance ran out of fuel
        checking which lexemes are relevant. The key tracker holds the URL to the operation's
        own keys (``key_tracker._query_keys``: at the ``=``, ``&`` or end of each key). Above
        :data:`_QUERY_KEYS_MAX` characters of keys (EC2's thousands of ``Filter.N.Name`` members
        made its lexer too big for llguidance) any key: the tracker alone holds them."""
        key = ("qkeys",)
        hit = self.memo.get(key)
        if hit is None:
            names, members = self._query_key_names()
            hit = "|".join([query_key_rx(n) for n in names] + members)
            if len(hit) > _QUERY_KEYS_MAX:
                hit = FREE_QUERY_KEY
                if isinstance(self.model, GrammarModel):
                    self.model.query_keys_free = True
            self.memo[key] = hit
        return hit

    def _query_key_names(self) -> tuple[list[str], list[str]]:
        """The spec's query parameter and credential names (longest first) and the regexes of the
        members ``name[...]`` of its deepObject parameters that allow any; a name a path key fixes
        (S3's ``/{Bucket}#cors``) is left out: it is written in that key's typed form only."""
        key = ("qnames",)
        hit = self.memo.get(key)
        if hit is None:
            names: dict[str, None] = {}
            prefixes: dict[str, None] = {}
            for op in self.spec.operations:
                if op.method in AXIOS_METHODS:
                    params = self.model.op_args(op, "any", True).config.props["params"]
                    names.update(dict.fromkeys(params.props))
                    prefixes.update(dict.fromkeys(p for p, _ in params.patterns))
            fixed = fixed_query_names(self.spec)
            members = [query_key_rx(p) + r"[^\x5b\x5d&=#\x27\x22\x60\x5c\s$]*" + query_key_rx("]") for p in sorted(prefixes)]
            hit = self.memo[key] = (sorted(names.keys() - fixed, key=lambda n: (-len(n), n)), members)
        return hit  # type: ignore[no-any-return]

    def query_value_groups(self, quote: str) -> tuple[str, tuple[tuple[str, str], ...]]:
        """:meth:`query_keys_rx`'s keys split by their values in a URL's query (``quote``'s
        string): the keys whose values are free text (a regex), and groups (keys, value regex)
        of keys whose parameter types the value (enum, integer, number, boolean: as a path hole
        of that schema, :meth:`hole_rx`). A name several operations declare with different
        typed schemas takes any of their values (the key tracker holds the operation's own at the
        value's end); free in any of them, it is free. Above :data:`_QUERY_KEYS_MAX` (any key):
        all free."""
        key = ("qgroups", quote)
        hit = self.memo.get(key)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        if self.query_keys_rx("") == FREE_QUERY_KEY:
            hit = self.memo[key] = (FREE_QUERY_KEY, ())
            return hit
        values: dict[str, dict[str, None] | None] = {}  # name -> its typed value regexes, None: free
        for name, descs in query_value_sources(self.spec, self.model).items():
            rxs = None if descs is None else [self.typed_value_rx(d, quote) for d in descs]
            values[name] = None if rxs is None or None in rxs else dict.fromkeys(rxs)  # type: ignore[arg-type]
        names, members = self._query_key_names()
        free: list[str] = []
        groups: dict[str, list[str]] = {}
        for name in names:
            rxs = values.get(name)
            if rxs is None:
                free.append(query_key_rx(name))
            else:
                groups.setdefault("|".join(rxs), []).append(query_key_rx(name))
        free += members  # deepObject members name[...]: free text
        hit = self.memo[key] = ("|".join(free), tuple(("|".join(ks), v) for v, ks in groups.items()))
        return hit

    def typed_value_rx(self, schema: Any, quote: str) -> str | None:
        """The regex of a query value of ``schema`` when the schema types it (enum, integer,
        number, boolean; :meth:`hole_rx`), else None (free text)."""
        return self.hole_rx(schema, quote, query=True) if _value_kind(self.model, schema) is not None else None

    def fixed_query_rx(self, plan: UrlPlan, qholes: Mapping[str, Any], q: str) -> str:
        """Regex of a path key's fixed pairs in any order (the scorer reads the query as a set): up
        to 3 pairs (6 orders), more only in the spec's order; holes typed by their parameters."""
        orders = list(permutations(plan.query)) if len(plan.query) <= 3 else [plan.query]
        alts = []
        for order in orders:
            one = []
            for i, piece in enumerate(PARAM_RX.split("&".join(order))):
                one.append(_rx(piece) if i % 2 == 0 else self.hole_rx(qholes.get(piece), q, query=True))
            alts.append("".join(one))
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    def server_prefixes(self, quote: str) -> str:
        """Regex alternatives of every server URL (root, path item and operation servers) as
        :meth:`ApiSpec.match` accepts them: a variable with an ``enum`` takes one of its values,
        one without any value (its default is only the default)."""
        key = ("servers", quote)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        free = r"[^\x2f?#\x27\x22\x60\x5c\s]+" if quote != "`" else r"[^\x2f?#\x27\x22\x60\x5c\s$]+"
        alts = []
        for url, variables in self.spec.server_templates or (("/", {}),):
            url = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
            if url and "//" not in url and not url.startswith("/"):
                url = "/" + url  # a relative server such as "v1"
            rx = server_var_rx(url, variables, free)
            if self.opt.real_world and "//" in url:  # any host of its registrable domain (server_words)
                cut = url.find("/", url.find("//") + 2)
                cut = len(url) if cut < 0 else cut
                site = site_host_rx(url[:cut])
                if site is not None:
                    rx = site + server_var_rx(url[cut:], variables, free)
            if self.opt.real_world:  # http and https: the same server (see server_words)
                rx = re.sub(r"^https?(?=\\x3a)", "https?", rx)
            alts.append(rx)
        if self.opt.real_world and self.has_vars and quote == "`":
            alts.append(rf"\$\{{[ ]*(?:{self.var_rx})[ ]*\}}")
        name = "|".join(dict.fromkeys(alts))
        self.memo[key] = name
        return name

    def hole_rx(self, schema: Any, quote: str, query: bool = False) -> str:
        """Regex for one path (or fixed query) parameter's value inside the URL string."""
        key = ("hole", id(schema), quote, query)
        hit = self.memo.get(key)
        if hit is None:
            hit = self.memo[key] = self._hole_rx(schema, quote, query)
        return hit

    def _hole_rx(self, schema: Any, quote: str, query: bool) -> str:
        """A '...'/"..." hole may also be expressions joined by ``+`` (``' + name + '``,
        real-world profile), then text: never text then an expression (``'/users/a' + b``): the
        lexer does not backtrack, so a hole whose text could go on with ``'`` would swallow the
        quote that closes the URL (``'/users/abc'``), in any template's piece at that place."""
        q = "`" if quote == "`" else "'"
        rx = FREE_QUERY_HOLE[quote == "`"] if query else FREE_HOLE[q]
        # a path hole of the real-world profile never starts a dot segment (FREE_SEGMENT_HOLE)
        first = FREE_SEGMENT_START[q] if self.opt.real_world and not query else rx[:-1]
        kind = _value_kind(self.model, schema)
        free = kind is None
        if kind is not None:
            rx = _KIND_RX.get(kind[0]) or "|".join(_url_value_rx(v) for v in kind[1])
        real = self.opt.real_world and not query
        seg = f"{first}{rx[:-1]}*" if free and real else rx  # a free hole: its first character, then any
        if quote == "`" and self.has_vars:
            hole = rf"\$\{{[ ]*(?:{self.var_rx})[ ]*\}}"
            # a free-text hole may mix literal characters and ${name}; a typed one is either
            if free and real:
                return rf"(?:{first}|{hole})(?:{rx[:-1]}|{hole})*"
            return rf"(?:{rx[:-1]}|{hole})+" if free else rf"(?:{rx}|{hole})"
        if self.has_vars and self.opt.real_world:  # '.../users/' + name + '/repos' (as ${name})
            hole = concat_holes(quote, self.var_rx)[0]
            return rf"(?:(?:{hole})+{rx[:-1]}*|{seg})" if free else rf"(?:{rx}|{hole})"
        return f"(?:{seg})"


def _int_bound(bound: Any, exclusive: Any, *, up: bool) -> int | None:
    """The nearest integer a ``minimum`` (``up``) or ``maximum`` keeps, with the exclusive form
    of either OpenAPI version; None for no bound (or one that is not a finite number)."""
    found: list[int] = []
    for value, strict in ((bound, exclusive is True), (exclusive, True)):
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            continue
        edge = math.ceil(value) if up else math.floor(value)
        if strict and edge == value:
            edge += 1 if up else -1
        found.append(edge)
    if not found:
        return None
    return max(found) if up else min(found)


def int_range_regex(lo: int | None, hi: int | None) -> str:
    """A regex of the decimal integers ``n`` (no leading zeros, ``-`` only for negatives) with
    ``lo <= n <= hi`` (either side may be open); ``""`` for an empty range. Written here: the
    regex-from-range construction is a few lines, and no maintained library makes it."""
    if lo is not None and hi is not None and lo > hi:
        return ""
    parts = []
    if lo is None or lo < 0:  # negatives: -n for n in [max(1, -hi), -lo]
        neg_lo = 1 if hi is None or hi >= 0 else -hi
        parts.append("-(?:" + _uint_range(neg_lo, None if lo is None else -lo) + ")")
    if hi is None or hi >= 0:
        parts.append(_uint_range(0 if lo is None or lo < 0 else lo, hi))
    return "|".join(parts) if len(parts) > 1 else parts[0]


def _uint_range(lo: int, hi: int | None) -> str:
    """Non-negative integers in ``[lo, hi]`` (``hi`` None: unbounded)."""
    alts = []
    top = hi if hi is not None else 10 ** len(str(lo)) - 1
    for width in range(len(str(lo)), len(str(top)) + 1):
        a = max(lo, 10 ** (width - 1) if width > 1 else 0)
        b = min(top, 10**width - 1)
        if a <= b:
            alts.append(_same_width(str(a), str(b)))
    if hi is None:  # every longer number
        alts.append(f"[1-9][0-9]{{{len(str(lo))},}}")
    return "|".join(alts)


def _same_width(a: str, b: str) -> str:
    """Numbers of ``len(a) == len(b)`` digits from ``a`` to ``b``."""
    if a == b:
        return a
    if len(a) == 1:
        return f"[{a}-{b}]"
    if a[0] == b[0]:
        return a[0] + "(?:" + _same_width(a[1:], b[1:]) + ")"
    rest = len(a) - 1
    if a[1:] == "0" * rest and b[1:] == "9" * rest:
        return f"[{a[0]}-{b[0]}][0-9]{{{rest}}}"
    alts = [a[0] + "(?:" + _same_width(a[1:], "9" * rest) + ")"]
    if int(a[0]) + 1 <= int(b[0]) - 1:
        alts.append(f"[{int(a[0]) + 1}-{int(b[0]) - 1}][0-9]{{{rest}}}")
    alts.append(b[0] + "(?:" + _same_width("0" * rest, b[1:]) + ")")
    return "|".join(alts)


@lru_cache(maxsize=1 << 14)
def _url_value_rx(value: str) -> str:
    """An enum member inside a URL: as written, each character other than letters, digits and
    ``-._~`` also percent-encoded (``Solanum%20lycopersicum``), as :meth:`ApiSpec.match` decodes
    segments before comparing them."""
    out = []
    for ch in value:
        if ch.isascii() and (ch.isalnum() or ch in "-_~"):
            out.append(ch)
            continue
        if ch == ".":  # a regex dot would take any character (``.json`` took ``/json``)
            out.append(r"\.")
            continue
        enc = "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
        alts = [_rx(ch), _rx(enc)]
        if enc.lower() != enc:
            alts.append(_rx(enc.lower()))
        out.append("(?:" + "|".join(alts) + ")")
    return "".join(out)


def _enum_regex_uncached(values: Iterable[Any], ns: bool) -> str | None:
    """The regex of an enum's members as JS literals (strings in any quote; with ``ns`` numbers
    and booleans also quoted); None when no member is left (only null)."""
    forms: list[str] = []
    plain: list[str] = []  # strings written between the quotes as they are, in every quote
    for v in values:
        if v is None:
            continue
        if isinstance(v, str) and _PLAIN_STR.match(v):
            plain.append(v)
            continue
        if isinstance(v, bool):
            forms.append("true" if v else "false")
            if ns:
                forms += [_js_string("true" if v else "false", q) for q in "'\"`"]
        elif isinstance(v, int | float):
            text = json.dumps(v)
            forms.append(text)
            if ns:
                forms += [_js_string(text, q) for q in "'\"`"]
        elif isinstance(v, str):
            forms += [_js_string(v, q) for q in "'\"`"]
        else:  # object/array enum members: their JSON text
            forms.append(json.dumps(thaw(v), ensure_ascii=False))
    if not forms and not plain:
        return None
    out = [_rx(f) for f in dict.fromkeys(forms)]
    if plain:
        # one alternation of the values inside each quote (llguidance hash-conses the repeated
        # group, and the delimited-list terminal reuses it): spelling out value x quote made
        # Microsoft Graph's enums exceed llguidance's lexer budget
        one = "(?:" + "|".join(_rx(v) for v in dict.fromkeys(plain)) + ")"
        out += [f"{_rx(q)}{one}{_rx(q)}" for q in "'\"`"]
    return "|".join(out)


_QUOTED_TYPES = frozenset({"string", "integer", "number", "boolean"})  # types with quoted lexemes
_BIG_ENUM = 256  # bytes of plain string members past which an enum is a rule over member lexemes
# a string whose JS literal is itself between any quote (no quotes, backslash, ``$``, controls)
_PLAIN_STR = re.compile(r"[^'\"`\\$\x00-\x1f\u2028\u2029]*\Z")


@lru_cache(maxsize=8192)
def _enum_regex(key: tuple[tuple[type, Any], ...], ns: bool) -> str | None:
    """:func:`_enum_regex_uncached` for hashable members, shared by every build."""
    return _enum_regex_uncached([v for _, v in key], ns)
