"""Credentials and real invocation styles in the scorer (issue 29, item 2).

Every verdict below is worked out by hand from the small specs here and the rules in the
docstring of :mod:`callbench.tracks.webapi.scoring` ("Credentials in strict"): a credential's
value is not compared beyond its scheme word; a missing expected credential is correct when the
request carries another accepted alternative of the security requirement (whose arguments are then
part of that verdict); an ``Authorization`` header on a spec declaring no security scheme is an
undeclared credential (unnecessary, not illegal); ``http``/``https`` is the same server; a path
key's fixed query pairs may be sent in ``params``. Compat keeps the published rules.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.specs import build_spec
from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.scoring import (
    SampleVerdict,
    compare_requests,
    correct_except_credentials,
    credential_value_ok,
)

OK = {"200": {"description": "ok"}}
BASE = "http://api.example.com/v1"


def _spec(doc: dict, name: str):
    full = {"openapi": "3.0.0", "info": {"title": name, "version": "1"}, **doc}
    return build_spec(full, Path(f"/{name}/openapi.yaml"), f"{name}.yaml")


# the documents are shared with tests/constrain/test_real_world_calls.py
DOCS = json.loads((Path(__file__).parents[2] / "fixtures" / "real_world_specs.json").read_text(encoding="utf-8"))
SECURED = _spec(DOCS["secured"], "secured")
OPEN = _spec(DOCS["open"], "open")
ETHERSCAN = _spec(
    {
        "servers": [{"url": "https://api.etherscan.io"}],
        "paths": {
            "/api/?module=account&action=balance": {
                "get": {
                    "parameters": [{"name": "address", "in": "query", "required": True, "schema": {"type": "string"}}],
                    "responses": OK,
                }
            },
            "/api/?module=account&action=txlist": {
                "get": {
                    "parameters": [{"name": "address", "in": "query", "required": True, "schema": {"type": "string"}}],
                    "responses": OK,
                }
            },
        },
    },
    "etherscan",
)

EXPECTED = {
    "url": f"{BASE}/gifs/1",
    "method": "get",
    "headers": {"Authorization": "Bearer <token>"},
    "params": {"limit": 3},
}


def _req(**kw) -> dict:
    return {"url": f"{BASE}/gifs/1", "method": "get", **kw}


def _args(v: SampleVerdict) -> dict[str, tuple[str, str | None]]:
    return {f"{a.location}.{a.name}": (a.verdict, a.note) for a in v.arguments}


# ------------------------------------------------------------------------------ credential values
@pytest.mark.parametrize(
    "value,strict_ok",
    [
        ("Bearer <token>", True),  # the placeholder itself: equal, no note
        ("Bearer ee97a1c0", True),  # a real token ('Bearer ' + token evaluated)
        ("bearer ee97a1c0", True),  # the scheme word compares case-insensitively
        ("ee97a1c0", False),  # the scheme word is lost: the server reads no bearer token
        ("Basic dTpw", False),  # another scheme (axios' `auth` replaced the Bearer header)
        ("Bearer ", False),  # no secret after the scheme word
        ("", False),
    ],
)
def test_a_credential_value_is_not_compared_beyond_its_scheme(value, strict_ok):
    actual = _req(headers={"Authorization": value}, params={"limit": 3})
    strict = compare_requests(EXPECTED, actual, SECURED, "strict")
    compat = compare_requests(EXPECTED, actual, SECURED, "compat")
    assert strict.sample == ("correct" if strict_ok else "wrong"), strict.arguments
    auth = _args(strict)["headers.Authorization"]
    if value == "Bearer <token>":
        assert auth == ("correct", None)
    else:
        assert auth == (("correct", "credential value not compared") if strict_ok else ("incorrect_value", None))
    # compat: the published rule compares values with ==
    assert compat.sample == ("correct" if value == "Bearer <token>" else "wrong")
    # the credential is the only thing that can be wrong here
    assert correct_except_credentials(strict) is True


def test_an_api_key_placeholder_takes_any_non_empty_string():
    expected = {"url": f"{BASE}/gifs/1", "method": "get", "params": {"api_key": "<key>"}}
    for value, ok in (("DEMO_KEY", True), ("a b", True), ("", False), (12345, False)):
        v = compare_requests(expected, _req(params={"api_key": value}), SECURED, "strict")
        assert (v.sample == "correct") is ok, (value, v.arguments)


def test_property_any_secret_after_the_scheme_word_is_correct():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies
    secret = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)

    @hyp.settings(max_examples=200, deadline=None, derandomize=True)
    @hyp.given(secret, st.sampled_from(["Bearer", "bearer", "BEARER"]))
    def check(s: str, word: str) -> None:
        assert credential_value_ok("Bearer <token>", f"{word} {s}")
        assert not credential_value_ok("Bearer <token>", s) or s.lower().startswith("bearer")
        assert credential_value_ok("<key>", s)
        v = compare_requests(EXPECTED, _req(headers={"Authorization": f"{word} {s}"}, params={"limit": 3}), SECURED)
        assert v.sample == "correct", (s, v.arguments)

    check()


# ------------------------------------------------------------------------------ alternatives
def test_another_security_alternative_stands_in_for_the_expected_one():
    actual = _req(params={"limit": 3, "api_key": "DEMO_KEY"})
    v = compare_requests(EXPECTED, actual, SECURED, "strict")
    assert v.sample == "correct"
    assert _args(v) == {
        "headers.Authorization": ("correct", "credential alternative: params.api_key"),
        "params.limit": ("correct", None),
        "path_params.id": ("correct", None),
    }
    auth = next(a for a in v.arguments if a.name == "Authorization")
    assert auth.actual == {"params.api_key": "DEMO_KEY"} and auth.credential is True
    # compat: the published rule has no alternatives
    c = compare_requests(EXPECTED, actual, SECURED, "compat")
    assert c.sample == "wrong"
    assert _args(c) == {
        "headers.Authorization": ("missing", None),
        "params.limit": ("correct", None),
        "params.api_key": ("unnecessary", None),
        "path_params.id": ("correct", None),
    }
    # an empty key is no credential: the expected header is missing, the key an extra
    v = compare_requests(EXPECTED, _req(params={"limit": 3, "api_key": ""}), SECURED, "strict")
    assert _args(v)["headers.Authorization"] == ("missing", None) and v.sample == "wrong"
    # both alternatives sent: the expected one is compared, the other is an extra credential
    both = _req(headers={"Authorization": "Bearer x"}, params={"limit": 3, "api_key": "k"})
    v = compare_requests(EXPECTED, both, SECURED, "strict")
    assert _args(v)["params.api_key"] == ("unnecessary", None) and v.sample == "wrong"
    assert correct_except_credentials(v) is True


def test_an_and_of_schemes_needs_all_of_them():
    expected = {"url": f"{BASE}/both", "method": "get", "headers": {"Authorization": "Bearer <token>"},
                "params": {"api_key": "<key>"}}
    only_header = {"url": f"{BASE}/both", "method": "get", "headers": {"Authorization": "Bearer t"}}
    v = compare_requests(expected, only_header, SECURED, "strict")
    assert _args(v) == {"headers.Authorization": ("correct", "credential value not compared"),
                        "params.api_key": ("missing", None)}
    assert v.sample == "wrong"
    full = {**only_header, "params": {"api_key": "k"}}
    assert compare_requests(expected, full, SECURED, "strict").sample == "correct"


def test_axios_auth_scores_as_the_basic_credential_it_sends():
    """The axios stand-in sends ``auth`` as ``Authorization: Basic <base64>`` (as axios does):
    the expected Basic credential is then correct, whatever the user and password."""
    pytest.importorskip("callbench.sandbox")
    from callbench.sandbox import JsSandbox

    spec = _spec(
        {
            "servers": [{"url": "https://api.twilio.com"}],
            "components": {"securitySchemes": {"basic": {"type": "http", "scheme": "basic"}}},
            "security": [{"basic": []}],
            "paths": {"/2010-04-01/Accounts/{sid}/Calls.json": {
                "get": {"parameters": [{"name": "sid", "in": "path", "required": True, "schema": {"type": "string"}}],
                        "responses": OK}}},
        },
        "basic",
    )
    url = "https://api.twilio.com/2010-04-01/Accounts/AC1/Calls.json"
    expected = {"url": url, "method": "get", "headers": {"Authorization": "Basic <credentials>"}}
    code = ("const axios = require('axios');\nconst sid = 'AC1', token = 't0k';\n"
            "axios.get(`https://api.twilio.com/2010-04-01/Accounts/${sid}/Calls.json`, { auth: { username: sid, password: token } });")
    with JsSandbox() as sb:
        res = sb.run(code)
    assert res.status == "ok", res.error
    assert res.request["headers"]["Authorization"] == "Basic QUMxOnQwaw=="  # base64("AC1:t0k")
    v = compare_requests(expected, res.request, spec, "strict")
    assert v.sample == "correct", v.arguments
    assert _args(v)["headers.Authorization"] == ("correct", "credential value not compared")


# ------------------------------------------------------------------------------ undeclared Authorization
def test_authorization_on_a_spec_declaring_no_security_is_undeclared_not_illegal():
    url = "https://api.github.com/users/octo/repos"
    expected = {"url": url, "method": "get"}
    actual = {"url": url, "method": "get", "headers": {"Authorization": "token ghp_1"}}
    v = compare_requests(expected, actual, OPEN, "strict")
    assert _args(v) == {"headers.Authorization": ("unnecessary", "undeclared credential"), "path_params.id": ("correct", None)}
    assert v.sample == "wrong" and v.arguments[0].credential is True
    assert correct_except_credentials(v) is True
    # compat: the published rule knows no such credential -> illegal
    assert compare_requests(expected, actual, OPEN, "compat").sample == "illegal"
    # another undeclared header stays illegal
    other = {**actual, "headers": {"X-Other": "x"}}
    assert _args(compare_requests(expected, other, OPEN, "strict"))["headers.X-Other"] == ("illegal", None)
    # expected (a gold written as the original code writes it): compared as a credential
    with_auth = {**expected, "headers": {"Authorization": "token <token>"}}
    v = compare_requests(with_auth, actual, OPEN, "strict")
    assert v.sample == "correct" and _args(v)["headers.Authorization"] == ("correct", "credential value not compared")
    v = compare_requests(with_auth, expected, OPEN, "strict")
    assert _args(v)["headers.Authorization"] == ("missing", None)


# ------------------------------------------------------------------------------ servers and fixed queries
def test_http_and_https_are_the_same_server():
    actual = _req(headers={"Authorization": "Bearer <token>"}, params={"limit": 3})
    for url in (f"{BASE}/gifs/1", f"{BASE.replace('http:', 'https:')}/gifs/1"):
        for mode in ("strict", "compat"):
            v = compare_requests(EXPECTED, {**actual, "url": url}, SECURED, mode)
            assert (v.url, v.sample) == ("correct", "correct"), (url, mode)
    v = compare_requests(EXPECTED, {**actual, "url": "https://api.other.com/v1/gifs/1"}, SECURED, "strict")
    assert v.url == "illegal"  # the host still counts


def test_a_path_keys_fixed_query_may_be_sent_in_params():
    expected = {"url": "https://api.etherscan.io/api/?module=account&action=balance", "method": "get",
                "params": {"address": "0xabc"}}
    in_params = {"url": "https://api.etherscan.io/api/", "method": "get",
                 "params": {"module": "account", "action": "balance", "address": "0xabc"}}
    v = compare_requests(expected, in_params, ETHERSCAN, "strict")
    assert (v.url, v.sample) == ("correct", "correct"), v.arguments
    wrong_action = {**in_params, "params": {**in_params["params"], "action": "txlist"}}
    v = compare_requests(expected, wrong_action, ETHERSCAN, "strict")
    assert v.url == "wrong"


# ------------------------------------------------------------------------------ records and metrics
def test_notes_survive_the_stored_record_and_metrics_count_them_as_correct():
    samples = [
        compare_requests(EXPECTED, _req(headers={"Authorization": "Bearer real"}, params={"limit": 3}), SECURED),
        compare_requests(EXPECTED, _req(params={"limit": 3, "api_key": "k"}), SECURED),
        compare_requests(EXPECTED, _req(headers={"Authorization": "real"}, params={"limit": 3}), SECURED),
        compare_requests(EXPECTED, _req(params={"limit": 4}), SECURED),
    ]
    stored = [SampleVerdict.from_dict(s.as_dict()) for s in samples]
    assert [a.note for a in stored[1].arguments] == ["credential alternative: params.api_key", None, None]
    assert all("note" not in a for a in stored[3].as_dict()["arguments"])  # rows without a note stay as they were
    m = aggregate(stored, "strict")
    # hand count: correct samples 0, 1 -> 2/4; correct except credentials: + 2 (only its value
    # lacks the scheme) -> 3/4 (sample 3 has a wrong limit)
    assert m["correct_implementations_t"] == pytest.approx(2 / 4)
    assert m["correct_except_credentials_t"] == pytest.approx(3 / 4)


def test_the_data_check_takes_an_undeclared_authorization_as_the_scorer_does():
    """A task whose gold sends ``Authorization`` to a spec declaring no security (GitHub's
    directory spec) kept failing the data check (``unknown_argument``) and was skipped from the
    run, although the scorer records it as an undeclared credential (issue 29: 7 + 5 real-world
    rows never ran). Another unknown header is still the check's finding."""
    from callbench.tracks.webapi.audit import audit_gold, cross_check_config
    from callbench.tracks.webapi.dataset import WebApiTask

    url = "https://api.github.com/users/octocat/repos"
    ok = {"method": "get", "url": url, "headers": {"Authorization": "token abc"}}
    assert cross_check_config(ok, OPEN) == []
    bad = {"method": "get", "url": url, "headers": {"X-Secret": "abc"}}
    assert [(f.kind, f.where) for f in cross_check_config(bad, OPEN)] == [("unknown_argument", "config.headers.X-Secret")]
    # the run's own check of each row (what skips it) agrees
    row = {"index": 0, "api": "github", "task": "t"}
    assert audit_gold(WebApiTask.model_validate({**row, "config": ok}), OPEN) == []
    issues = audit_gold(WebApiTask.model_validate({**row, "config": bad}), OPEN)
    assert [(i.kind, i.location, i.name) for i in issues] == [("illegal_argument", "headers", "X-Secret")]
