"""Real invocation styles under the default CD profile (issue 29, item 2), and the paper's rules kept.

Real code passes keys and variables: outside ``--cd-profile paper`` a required credential may be
any string literal or expression (an identifier in scope with member access, ``process.env.KEY``
or ``this.apiKey``, a template literal, a concatenation ``'Bearer ' + token``);
every alternative of a ``security`` list is accepted (an OR of ANDs; a declared conventional
credential parameter such as Google's ``key`` is one more); values and URL holes may be member
expressions of identifiers in scope; a backtick URL may start with a variable in scope holding the
server (`` `${BASE}/gifs/${id}` ``). ``this.X``/``process.env.X`` (one member: undefined, never a
TypeError, when absent) are credentials only: elsewhere an undefined value could drop a required
argument, and whatever the grammar admits must still run and be legal
(tests/constrain/test_no_underconstraint.py);
``http`` and ``https`` are the same server; an ``Authorization`` header is allowed on a spec that
declares no security scheme. Checked through ``check_continuation`` (the llguidance matcher and the
key tracker byte by byte), through token masks of real vocabularies (GPT-2, Qwen2.5, SmolLM2),
and with a hypothesis property over generated credential expressions. The paper profile rejects
each of these where the paper's CD does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("llguidance")

from callbench.constrain import (  # noqa: E402
    GrammarOptions,
    build_webapi_grammar,
    check_continuation,
    make_key_tracker,
)
from callbench.specs import build_spec  # noqa: E402
from callbench.specs.credentials import credential_requirement  # noqa: E402

OK = {"200": {"description": "ok"}}
DEFAULT = GrammarOptions()
PAPER = GrammarOptions(profile="paper")
IDENTS = ("token", "cfg", "BASE", "id", "apiKey")
BASE = "http://api.example.com/v1"


def _spec(doc: dict, name: str):
    full = {"openapi": "3.0.0", "info": {"title": name, "version": "1"}, **doc}
    return build_spec(full, Path(f"/{name}/openapi.yaml"), f"{name}.yaml")


# OAuth or an API key in the query (an OR of two requirements), and one needing both (an AND);
# the documents are shared with tests/tracks/webapi/test_scoring_real_world.py
DOCS = json.loads((Path(__file__).parents[1] / "fixtures" / "real_world_specs.json").read_text(encoding="utf-8"))
SECURED = _spec(DOCS["secured"], "secured")
# Google-like: only OAuth2 declared, but every operation declares `key` and `access_token` queries
GOOGLE = _spec(
    {
        "servers": [{"url": "https://www.googleapis.com/youtube/v3"}],
        "components": {"securitySchemes": {"Oauth2": {"type": "oauth2", "flows": {}}}},
        "security": [{"Oauth2": []}],
        "paths": {
            "/search": {
                "get": {
                    "parameters": [
                        {"name": "key", "in": "query", "schema": {"type": "string"}},
                        {"name": "access_token", "in": "query", "schema": {"type": "string"}},
                        {"name": "q", "in": "query", "schema": {"type": "string"}},
                        {"name": "part", "in": "query", "required": True, "schema": {"type": "string"}},
                    ],
                    "responses": OK,
                }
            }
        },
    },
    "google",
)
# GitHub-like: no security scheme declared at all
OPEN = _spec(DOCS["open"], "open")


def allowed(spec, text: str, options: GrammarOptions = DEFAULT, **kw) -> bool:
    r = check_continuation(spec, text, identifiers=kw.pop("identifiers", IDENTS), options=options, **kw)
    return r.allowed


def reason(spec, text: str, options: GrammarOptions = DEFAULT) -> str:
    r = check_continuation(spec, text, identifiers=IDENTS, options=options)
    assert not r.allowed, text
    return r.reason or ""


GIF = f"get('{BASE}/gifs/1'"

# ------------------------------------------------------------------------------ 1. credential values
CREDENTIAL_VALUES = [
    "'Bearer <token>'",
    "'Bearer ee97a1c0'",
    "'ee97a1c0'",
    '"Bearer abc"',
    "token",
    "apiKey",
    "cfg.auth.token",
    "process.env.GIPHY_KEY",
    "this.apiKey",
    "`Bearer ${token}`",
    "`Bearer ${process.env.TOKEN}`",
    "`Bearer ${this.token}`",
    "'Bearer ' + token",
    "'Bearer ' + process.env.TOKEN",
    "'Bearer ' +\n    this.token",
    "'token ' + cfg.key + ''",
]


@pytest.mark.parametrize("value", CREDENTIAL_VALUES)
def test_a_credential_may_be_any_string_or_expression(value):
    assert allowed(SECURED, f"{GIF}, {{ headers: {{ Authorization: {value} }} }});"), value
    assert allowed(SECURED, f"{GIF}, {{ params: {{ api_key: {value}, limit: 3 }} }});"), value
    # the args setup takes the same values
    assert allowed(
        SECURED, f"{{ headers: {{ Authorization: {value} }} }});", setup="args", method="get", url=f"{BASE}/gifs/1"
    ), value


@pytest.mark.parametrize(
    "value", ["3", "null", "{ a: 1 }", "['Bearer x']", "unknownVar", "process.argv", "this.a.b", "process.env.A.B", "'Bearer ' +", "'a' - 'b'"]
)
def test_a_credential_is_still_a_string_or_an_expression_of_known_names(value):
    assert not allowed(SECURED, f"{GIF}, {{ headers: {{ Authorization: {value} }} }});"), value


def test_a_credential_is_still_required():
    assert "credential missing" in reason(SECURED, f"{GIF}, {{ params: {{ limit: 3 }} }});")
    assert "needs a config" in reason(SECURED, f"{GIF});")
    # the AND of two schemes needs both, whatever their values
    both = f"get('{BASE}/both', {{ headers: {{ Authorization: 'Bearer ' + token }} }});"
    assert "params" in reason(SECURED, both)
    assert allowed(
        SECURED, f"get('{BASE}/both', {{ headers: {{ Authorization: token }}, params: {{ api_key: process.env.K }} }});"
    )


ROOTS = ("token", "process", "this")  # what in_scope gives a method's starter: this, process


@pytest.mark.parametrize(("text", "ok"), [
    # roots of member chains only: as a whole object they send every property as an argument
    # (Qwen2.5-Coder-0.5B under CD wrote `'headers': process`: 27 illegal headers, 3 of 92 tasks)
    ("{ headers: process });", False),
    ("{ headers: process.env });", False),
    ("{ headers: this });", False),
    ("{ params: this, headers: { Authorization: token } });", False),
    ("{ headers: { Authorization: token }, params: process.env });", False),
    ("{ headers: { Authorization: token }, params: { limit: process.argv } });", False),
    ("{ headers: { Authorization: token }, params: { process } });", False),
    # as roots they stay: a credential from the environment, the object's own fields
    ("{ headers: { Authorization: process.env.TOKEN } });", True),
    ("{ headers: { Authorization: 'Bearer ' + this.token }, params: { limit: this.limit } });", True),
])
def test_this_and_process_are_roots_of_member_chains_only(text, ok):
    assert allowed(SECURED, f"{GIF}, {text}", identifiers=ROOTS) is ok, text


def test_a_wapiibench_starter_cannot_send_process_as_headers(wapii_tasks, wapii_specs):
    """End to end, as the track builds it: a top-level starter has ``process`` in scope (the
    callbench profile), and the call it completes may not pass it whole."""
    from callbench.constrain.check import check_invocation
    from callbench.tracks.webapi.constraints import in_scope
    from callbench.tracks.webapi.prompting import reference_completion, starter_code

    task = next(t for t in wapii_tasks if t.api == "slack" and t.config.method == "get")
    starter, gold = starter_code(task, "full"), reference_completion(task, "full")
    idents = tuple(sorted(in_scope(starter)))
    assert "process" in idents and '"headers": {"Authorization": "Bearer <token>"}' in gold
    spec = wapii_specs["slack"]
    assert check_invocation(spec, starter + gold, setup="full", identifiers=idents).allowed
    for whole in ("process", "process.env", "this"):
        bad = gold.replace('{"Authorization": "Bearer <token>"}', whole)
        assert not check_invocation(spec, starter + bad, setup="full", identifiers=idents).allowed, bad


@pytest.mark.parametrize("value", ["'Bearer abc'", "token", "process.env.KEY", "'Bearer ' + token", "`Bearer ${token}`"])
def test_paper_profile_keeps_its_credential_rule(value):
    """Paper: the credential is any string (its regex) or an identifier in scope; no member
    expressions of names not in scope and no concatenation."""
    text = f"{GIF}, {{ headers: {{ Authorization: {value} }} }});"
    expected = value in ("'Bearer abc'", "token", "`Bearer ${token}`")
    assert allowed(SECURED, text, PAPER) is expected, value


# ------------------------------------------------------------------------------ 2. security alternatives
def test_every_security_alternative_is_accepted():
    assert allowed(SECURED, f"{GIF}, {{ headers: {{ Authorization: 'Bearer ' + token }} }});")
    assert allowed(SECURED, f"{GIF}, {{ params: {{ api_key: 'DEMO_KEY' }} }});")
    # Google: OAuth2 only in `security`, but the declared `key` / `access_token` queries work too
    url = "get('https://www.googleapis.com/youtube/v3/search'"
    for cred in ("key: process.env.YT_KEY", "access_token: token", "key: 'AIza-123'"):
        assert allowed(GOOGLE, f"{url}, {{ params: {{ part: 'snippet', q: 'cats', {cred} }} }});"), cred
    assert allowed(GOOGLE, f"{url}, {{ params: {{ part: 'snippet' }}, headers: {{ Authorization: `Bearer ${{token}}` }} }});")
    assert "credential missing" in reason(GOOGLE, f"{url}, {{ params: {{ part: 'snippet', q: 'cats' }} }});")
    op = GOOGLE.operations[0]
    assert [[c.atom for c in alt] for alt in credential_requirement(GOOGLE, op, real=True)] == [
        [("params", "key")],
        [("params", "access_token")],
        [("headers", "authorization")],
    ]
    assert [[c.atom for c in alt] for alt in credential_requirement(GOOGLE, op)] == [[("headers", "authorization")]]
    # the paper's rule: one scheme named -> its Authorization header is required
    assert not allowed(GOOGLE, f"{url}, {{ params: {{ part: 'snippet', key: 'AIza-123' }} }});", PAPER)
    assert not allowed(
        GOOGLE, f"{url}, {{ params: {{ part: 'snippet', key: 'k' }} }});", GrammarOptions(credential_rule="placeholder")
    )


# ------------------------------------------------------------------------------ 4. variables
def test_values_and_urls_may_be_member_expressions_and_variables():
    ok_calls = [
        f"{GIF}, {{ params: {{ api_key: apiKey, limit: cfg.limit }} }});",
        f"{GIF}, {{ params: cfg.params }});",  # a whole object as a member expression
        "get(`${BASE}/gifs/${id}`, { params: { api_key: apiKey } });",
        f"get(`{BASE}/gifs/${{cfg.gif}}`, {{ params: {{ api_key: process.env.KEY }} }});",
        f"get(`{BASE}/gifs/${{cfg.gif.id}}`, {{ headers: {{ Authorization: token }} }});",
    ]
    for text in ok_calls:
        r = check_continuation(SECURED, text, identifiers=IDENTS)
        assert r.allowed, (text, r.reason)
    # `this`/`process.env` only in credentials (their values are unknown: an undefined limit is
    # harmless, an undefined required value or path hole is not)
    for text in (
        f"{GIF}, {{ params: {{ api_key: apiKey, limit: this.pageSize }} }});",
        "get(`${this.baseUrl}/gifs/${id}`, { params: { api_key: apiKey } });",
        f"get(`{BASE}/gifs/${{this.gifId}}`, {{ params: {{ api_key: apiKey }} }});",
        "get(`${process.env.BASE}/gifs/1`, { params: { api_key: apiKey } });",
    ):
        assert not allowed(SECURED, text), text
    # still the spec's paths and keys: a variable server does not free the path
    assert not allowed(SECURED, "get(`${BASE}/nope/${id}`, { params: { api_key: apiKey } });")
    assert not allowed(SECURED, f"{GIF}, {{ params: {{ api_key: apiKey, nope: cfg.x }} }});")
    # a variable server works in backticks only (a '...' URL is a literal)
    assert not allowed(SECURED, "get('${BASE}/gifs/1', { params: { api_key: apiKey } });")
    # the paper profile: identifiers in scope only, no member access, no variable server
    assert not allowed(SECURED, ok_calls[0], PAPER)
    assert not allowed(SECURED, ok_calls[3], PAPER)
    assert allowed(SECURED, f"{GIF}, {{ params: {{ api_key: apiKey, limit: id }} }});", PAPER)


def test_shorthand_properties_of_identifiers_in_scope():
    """``{ api_key, limit }`` / ``{ params }``: a declared key that is also an identifier in scope
    may be its own value; the key tracker counts it as given (required keys, credentials)."""
    ids = (*IDENTS, "limit", "api_key", "params")
    ok = [
        f"{GIF}, {{ params: {{ api_key, limit }} }});",
        f"{GIF}, {{ params: {{ limit, api_key: token }} }});",
        f"{GIF}, {{ params: {{ api_key , limit , }} }});",
        f"{GIF}, {{ params }});",  # the whole params object in a variable: its content is unseen
    ]
    for text in ok:
        r = check_continuation(SECURED, text, identifiers=ids)
        assert r.allowed, (text, r.reason)
        assert not check_continuation(SECURED, text, identifiers=ids, options=PAPER).allowed, text
    no = {
        f"{GIF}, {{ params: {{ limit }} }});": "credential missing",  # still required
        f"{GIF}, {{ params: {{ 'limit' }} }});": "expected ':'",  # not JavaScript
        f"{GIF}, {{ params: {{ api_key, foo }} }});": "not allowed",  # not declared
        f"{GIF}, {{ params: {{ api_key, id }} }});": "not allowed",  # in scope, but no key here
        f"{GIF}, {{ params: {{ api_key, limit, limit }} }});": "given twice",
    }
    for text, why in no.items():
        r = check_continuation(SECURED, text, identifiers=(*ids, "foo"))
        assert not r.allowed and why in (r.reason or ""), (text, r.reason)
    # not in scope: no shorthand
    assert not allowed(SECURED, f"{GIF}, {{ params: {{ api_key: 'k', limit }} }});")


def test_this_and_process_listed_in_scope_take_member_chains_anywhere():
    """A caller that knows ``this`` (a method) or ``process`` is in scope lists it: then any value
    may be ``this.a.b``/``process.env.X`` like any identifier in scope."""
    text = "get(`${this.base}/gifs/${this.gif.id}`, { params: { api_key: process.env.K, limit: this.page.size } });"
    assert not allowed(SECURED, text)
    r = check_continuation(SECURED, text, identifiers=(*IDENTS, "this", "process"))
    assert r.allowed, r.reason


def test_the_tracker_follows_a_variable_server_to_its_operation():
    """`${BASE}` at the URL's start stands for one of the spec's servers: the key tracker still
    knows the operation (its required keys and credentials are enforced)."""
    g = build_webapi_grammar(SECURED, setup="full", identifiers=IDENTS)
    tr = make_key_tracker(g, SECURED)
    tr.feed(b"get(`${BASE}/gifs/${id}`, ")
    assert tr._args is not None and tr._args.label == "GET /gifs/{id}"
    assert "credential missing" in reason(SECURED, "get(`${BASE}/gifs/${id}`, { params: { limit: 3 } });")


# ------------------------------------------------------------------------------ 5. http and https
def test_http_and_https_are_the_same_server():
    secure = f"get('{BASE.replace('http:', 'https:')}/gifs/1', {{ params: {{ api_key: apiKey }} }});"
    plain = f"{GIF}, {{ params: {{ api_key: apiKey }} }});"
    assert allowed(SECURED, secure) and allowed(SECURED, plain)
    gh = "get('http://api.github.com/users/octo/repos');"
    assert allowed(OPEN, gh) and allowed(OPEN, gh.replace("http:", "https:"))
    assert not allowed(SECURED, secure.replace("https:", "ftp:"))
    assert not allowed(SECURED, secure, PAPER)  # the paper: the server as the spec writes it
    assert not allowed(OPEN, gh, PAPER)


# ------------------------------------------------------------------------------ 6. no security declared
def test_authorization_on_a_spec_declaring_no_security():
    url = "get('https://api.github.com/users/octo/repos'"
    for value in ("'token ghp_123'", "`token ${token}`", "'Bearer ' + process.env.GH_TOKEN"):
        assert allowed(OPEN, f"{url}, {{ headers: {{ Authorization: {value} }} }});"), value
    assert allowed(OPEN, f"{url});")  # not required
    assert "not allowed" in reason(OPEN, f"{url}, {{ headers: {{ 'X-Other': 'x' }} }});")
    assert not allowed(OPEN, f"{url}, {{ headers: {{ Authorization: 'token x' }} }});", PAPER)
    # a spec that declares a scheme keeps its own places only
    assert not allowed(SECURED, f"{GIF}, {{ headers: {{ Authorization: 'x' }}, params: {{ api_key: 'k', Authorization: 'x' }} }});")


# ------------------------------------------------------------------------------ axios' auth option
BASIC_SPEC = _spec(
    {
        "servers": [{"url": "https://api.twilio.com"}],
        "components": {"securitySchemes": {"basic": {"type": "http", "scheme": "basic"}}},
        "security": [{"basic": []}],
        "paths": {
            "/2010-04-01/Accounts/{sid}/Messages.json": {
                "get": {
                    "parameters": [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "responses": OK,
                }
            }
        },
    },
    "basic",
)


def test_axios_auth_gives_a_basic_credential():
    """``auth: {username, password}`` is axios' Basic Authorization header: accepted where an
    alternative is that header alone (it satisfies the requirement) or the spec declares no
    scheme; refused where the header would carry another scheme's credential, and by the paper."""
    ids = (*IDENTS, "username", "password", "sid", "auth")
    url = "get(`https://api.twilio.com/2010-04-01/Accounts/${sid}/Messages.json`"
    for cfg in ("{ auth: { username: sid, password: token } }", "{ auth: { username, password } }", "{ auth }",
                "{ headers: { Authorization: 'Basic ' + token } }"):
        r = check_continuation(BASIC_SPEC, f"{url}, {cfg});", identifiers=ids)
        assert r.allowed, (cfg, r.reason)
        assert not check_continuation(BASIC_SPEC, f"{url}, {cfg});", identifiers=ids, options=PAPER).allowed
    r = check_continuation(BASIC_SPEC, f"{url}, {{ params: {{}} }});", identifiers=ids)
    assert "credential missing (needs headers.authorization or config.auth)" in (r.reason or "")
    r = check_continuation(BASIC_SPEC, f"{url}, {{ auth: {{ username, token }} }});", identifiers=ids)
    assert not r.allowed  # axios' auth has username and password only
    assert allowed(OPEN, "get('https://api.github.com/users/x/repos', { auth: { username: token, password: token } });")
    assert "'auth' is not allowed" in reason(SECURED, f"{GIF}, {{ auth: {{ username: token }}, params: {{ api_key: token }} }});")


# ------------------------------------------------------------------------------ property
def test_property_any_generated_credential_expression_is_accepted():
    """Hypothesis: a credential built from string literals (any quote, any printable text),
    identifiers in scope with member chains, ``this.X``/``process.env.X`` and templates holding
    them, joined by ``+``, is
    accepted in the Authorization header and in the query key; with one operand a number it is not."""
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies
    name = st.from_regex(r"[A-Za-z_$][A-Za-z0-9_$]{0,6}", fullmatch=True)
    text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="'\"`\\$"), max_size=12)
    literal = st.one_of(text.map(lambda t: f"'{t}'"), text.map(lambda t: f'"{t}"'), text.map(lambda t: f"`{t}`"))
    chain = st.tuples(st.sampled_from(IDENTS), st.lists(name, max_size=3)).map(lambda r: ".".join([r[0], *r[1]]))
    env = st.tuples(st.sampled_from(("this", "process.env")), name).map(".".join)  # one member
    var = st.one_of(chain, env)
    template = st.tuples(text, var).map(lambda p: f"`{p[0]}${{{p[1]}}}`")
    operand = st.one_of(literal, var, template)
    expr = st.lists(operand, min_size=1, max_size=4).map(lambda xs: " + ".join(xs))

    @hyp.settings(max_examples=120, deadline=None, derandomize=True)
    @hyp.given(expr, st.booleans())
    def check(value: str, as_query: bool) -> None:
        where = f"params: {{ api_key: {value} }}" if as_query else f"headers: {{ Authorization: {value} }}"
        r = check_continuation(SECURED, f"{GIF}, {{ {where} }});", identifiers=IDENTS)
        assert r.allowed, (value, r.reason)
        bad = f"{GIF}, {{ headers: {{ Authorization: {value} + 3 }} }});"
        assert not check_continuation(SECURED, bad, identifiers=IDENTS).allowed, value

    check()


# ------------------------------------------------------------------------------ masks, real vocabularies
REAL_CALLS = [
    f"{GIF}, {{ headers: {{ Authorization: 'Bearer ' + token }} }});",
    f"{GIF}, {{ params: {{ api_key: process.env.GIPHY_KEY, limit: cfg.limit }} }});",
    "get(`${BASE}/gifs/${id}`, { headers: { Authorization: `Bearer ${this.token}` } });",
    "get('https://api.example.com/v1/gifs/1', { params: { api_key: 'DEMO_KEY' } });",
]


@pytest.mark.parametrize("vocab_name", ["gpt2", "qwen", "smollm2"])
def test_real_calls_pass_the_masks_of_real_vocabularies(vocab_name, real_vocab):
    """Each real-style call, tokenized by the vocabulary, is allowed token by token by the engine's
    mask (grammar and key tracker) and ends accepted; after ``Authorization: `` the mask allows
    ``process``/``this`` (``p``/``t``) by default and not ``p`` under the paper profile."""
    from callbench.constrain import GrammarConstraint

    vocab = real_vocab(vocab_name)

    def session(options: GrammarOptions):
        g = build_webapi_grammar(SECURED, setup="full", identifiers=IDENTS, options=options)
        return GrammarConstraint(g.lark, lambda: make_key_tracker(g, SECURED)).new_session(vocab, record=False)

    for text in REAL_CALLS:
        s = session(DEFAULT)
        for t in vocab.lltok.tokenize_str(text):
            assert s.mask()[t], (vocab_name, text, s.generated_bytes(), vocab.token_bytes[t])
            s.advance(t)
        assert s.generated_bytes() == text.encode() and s.is_accepting(), (vocab_name, text)

    def firsts(options: GrammarOptions) -> set[int]:
        s = session(options)
        for t in vocab.lltok.tokenize_str(f"{GIF}, {{ headers: {{ Authorization: "):
            s.advance(t)
        return {vocab.token_bytes[i][0] for i in s.mask().nonzero()[0] if vocab.token_bytes[i]}

    default, paper = firsts(DEFAULT), firsts(PAPER)
    assert {ord("p"), ord("t"), ord("'"), ord("`")} <= default, vocab_name
    assert ord("p") not in paper and ord("'") in paper and ord("t") in paper, vocab_name  # `token` is in scope
