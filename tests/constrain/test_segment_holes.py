"""A hole holding two path segments (issue 29): real code keeps ``owner/repo`` in one name and
writes ``/repos/${GITHUB_REPO}/issues``. The real-world profile takes one expression in place of
two path parameters that are whole segments side by side; the key tracker reads it as two
segments where one names no operation, so the operation's own arguments still apply. Literal
text never stands for two segments, parameters that are not side by side are not merged, and the
paper profile takes none of it."""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.constrain import GrammarOptions, check_continuation
from callbench.specs import build_spec

pytest.importorskip("llguidance")

BASE = "https://api.gh.io"
OK = {"200": {"description": "ok"}}
_P = {"in": "path", "required": True, "schema": {"type": "string"}}
SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "gh", "version": "1"},
    "servers": [{"url": BASE}],
    "paths": {
        "/repos/{owner}/{repo}/issues": {
            "parameters": [{"name": "owner", **_P}, {"name": "repo", **_P}],
            "get": {
                "parameters": [
                    {"name": "state", "in": "query", "schema": {"type": "string", "enum": ["open", "closed"]}},
                    {"name": "q", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": OK,
            },
            "post": {
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {
                        "type": "object", "required": ["title"], "properties": {"title": {"type": "string"}, "body": {"type": "string"}},
                    }}},
                },
                "responses": OK,
            },
        },
        "/users/{user}/repos": {"parameters": [{"name": "user", **_P}], "get": {"responses": OK}},
        "/orgs/{org}/members/{member}": {
            "parameters": [{"name": "org", **_P}, {"name": "member", **_P}],
            "delete": {"responses": OK},
        },
    },
}
IDS = ("repo", "GITHUB_REPO", "err", "user", "BASE_URL")


@pytest.fixture(scope="module")
def spec():
    return build_spec(SPEC, Path("/gh/openapi.json"), "gh.json")


def check(spec, text, **kw):
    return check_continuation(spec, text, identifiers=IDS, **kw)


@pytest.mark.parametrize(
    "text",
    [
        f"get(`{BASE}/repos/${{GITHUB_REPO}}/issues`)",
        f"get(`{BASE}/repos/${{GITHUB_REPO}}/issues?state=open`)",
        f"get('{BASE}/repos/' + repo + '/issues')",
        f'get("{BASE}/repos/" + repo + "/issues", {{ params: {{ state: "closed" }} }})',
        f"post(`{BASE}/repos/${{GITHUB_REPO}}/issues`, {{ title: 'Crash', body: err.message }})",
        # holes in the query too (values, not segments), however many
        f"get(`{BASE}/repos/${{GITHUB_REPO}}/issues?q=${{repo}}&q=${{user}}&q=${{repo}}&q=${{user}}&q=${{repo}}`)",
        # after a server held in a variable
        "get(`${BASE_URL}/repos/${GITHUB_REPO}/issues`)",
        "post(`${BASE_URL}/repos/${GITHUB_REPO}/issues`, { title: 'Crash' })",
    ],
)
def test_one_expression_for_two_side_by_side_path_parameters(spec, text):
    res = check(spec, text)
    assert res.allowed, (text, res.reason)
    assert not check(spec, text, options=GrammarOptions(profile="paper")).allowed


@pytest.mark.parametrize(
    "text, why",
    [
        # the operation is known: its arguments apply (a required body, an enum, no undeclared key)
        (f"post(`{BASE}/repos/${{GITHUB_REPO}}/issues`)", "needs"),
        (f"post(`{BASE}/repos/${{GITHUB_REPO}}/issues`, {{ body: 'x' }})", "title"),
        (f"get(`{BASE}/repos/${{GITHUB_REPO}}/issues?state=shut`)", ""),
        (f"get(`{BASE}/repos/${{GITHUB_REPO}}/issues`, {{ params: {{ page: 2 }} }})", ""),
        # the key tracker still knows the operation with holes in the query or a server variable
        (f"post(`{BASE}/repos/${{GITHUB_REPO}}/issues?q=${{repo}}&q=${{repo}}&q=${{repo}}&q=${{repo}}&q=${{repo}}`)", ""),
        ("post(`${BASE_URL}/repos/${GITHUB_REPO}/issues`)", "needs"),
        ("post(`${BASE_URL}/repos/${GITHUB_REPO}/issues`, { body: 'x' })", "title"),
        # literal text is one segment; two segments need the expression alone
        (f"get(`{BASE}/repos/acme/issues`)", ""),
        (f"get(`{BASE}/repos/x${{GITHUB_REPO}}/issues`)", ""),
        # parameters that are not side by side are not merged
        (f"delete(`{BASE}/orgs/${{GITHUB_REPO}}`)", ""),
        (f"delete(`{BASE}/orgs/${{GITHUB_REPO}}/members`)", ""),
        # a single-segment template gets no second segment from its one hole
        (f"get(`{BASE}/users/${{user}}/${{repo}}`)", ""),
    ],
)
def test_what_a_segment_hole_does_not_open(spec, text, why):
    res = check(spec, text)
    assert not res.allowed, text
    assert why in (res.reason or ""), res.reason


def test_the_hole_runs_and_scores_legal(spec):
    """The accepted call with ``GITHUB_REPO = 'acme/app'`` sends ``/repos/acme/app/issues``,
    which the strict scorer finds legal."""
    from callbench.sandbox import JsSandbox
    from callbench.tracks.webapi.scoring import compare_requests

    text = f"post(`{BASE}/repos/${{GITHUB_REPO}}/issues`, {{ title: 'Crash' }});"
    assert check(spec, text).allowed
    with JsSandbox() as sb:
        res = sb.run("const axios = require('axios');\nconst GITHUB_REPO = 'acme/app';\naxios." + text)
    assert res.status == "ok", res.error
    assert res.request["url"] == f"{BASE}/repos/acme/app/issues"
    v = compare_requests({"method": "post", "url": f"{BASE}/repos/acme/app/issues"}, res.request, spec, "strict")
    assert v.url != "illegal" and v.method != "illegal"
    assert not [a for a in v.arguments if a.verdict == "illegal"], v.as_dict()
