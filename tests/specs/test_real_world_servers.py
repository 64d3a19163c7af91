"""The real-world readings of a URL (issue 29): a host of the server's registrable domain is that
server, and one trailing ``/`` more or less names the same path (``ApiSpec.match(...,
real_world=True)``); the exact rules stay WAPIIBench's (``real_world=False``, the default)."""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.specs import build_spec
from callbench.specs.hosts import registrable_domain, same_site
from callbench.specs.openapi import TRANSPORT_HEADERS, is_transport_header

OK = {"200": {"description": "ok"}}


def _spec(servers: list[str], paths: dict) -> object:
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "t", "version": "1"},
        "servers": [{"url": u} for u in servers],
        "paths": paths,
    }
    return build_spec(doc, Path("/t/openapi.json"), "t.json")


TRELLO = _spec(
    ["https://trello.com/1"],
    {
        "/boards": {"post": {"responses": OK}},
        "/boards/{idBoard}/cards": {"get": {"responses": OK}},
        "/members/{idMember}/boards": {"get": {"responses": OK}},
    },
)


def _templates(spec, url: str, real: bool = True, own: bool = False) -> list[str]:
    """``own``: the task's own URL (``either_slash``: one trailing slash more or less)."""
    return [m.template for m in spec.match_paths(url, real_world=real, either_slash=own)]


@pytest.mark.parametrize(
    ("host", "site"),
    [
        ("api.trello.com", "trello.com"),
        ("trello.com", "trello.com"),
        ("API.Trello.COM", "trello.com"),
        ("www.googleapis.com", "googleapis.com"),  # ICANN section: one registrant's hosts
        ("www.bbc.co.uk", "bbc.co.uk"),  # a two-level public suffix
        ("co.uk", None),  # a public suffix is no site
        ("localhost", None),
        ("127.0.0.1", None),
        ("api.example.internal", None),  # a top-level label the list does not know
        ("a..b.com", None),
    ],
)
def test_registrable_domain(host, site):
    assert registrable_domain(host) == site


def test_same_site_is_the_domain_or_a_sub_domain():
    assert same_site("api.trello.com", "trello.com") and same_site("trello.com", "trello.com")
    assert not same_site("trello.com.evil.com", "trello.com")
    assert not same_site("eviltrello.com", "trello.com")
    assert not same_site("api.trello.com", None)


def test_a_sub_domain_of_the_servers_registrable_domain_is_the_server():
    url = "https://api.trello.com/1/boards/5c5a/cards"
    assert _templates(TRELLO, url, real=False) == []  # WAPIIBench's rule: the exact host
    assert _templates(TRELLO, url) == ["/boards/{idBoard}/cards"]
    m = TRELLO.match("get", "https://api.trello.com/1/members/me/boards", real_world=True)
    assert m is not None and m.operation.path == "/members/{idMember}/boards" and m.path_params == {"idMember": "me"}
    # the server's base path still has to be there
    assert _templates(TRELLO, "https://api.trello.com/boards") == []


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.com/1/boards",
        "https://trello.com.evil.com/1/boards",
        "https://eviltrello.com/1/boards",
        "https://api.trello.org/1/boards",
        "https://api.trello.com:8443/1/boards",
    ],
)
def test_another_registrable_domain_is_not_the_server(url):
    assert _templates(TRELLO, url) == []


def test_a_two_level_public_suffix_is_not_one_site():
    spec = _spec(["https://api.bbc.co.uk/v1"], {"/programmes": {"get": {"responses": OK}}})
    assert _templates(spec, "https://www.bbc.co.uk/v1/programmes") == ["/programmes"]
    assert _templates(spec, "https://evil.co.uk/v1/programmes") == []
    assert _templates(spec, "https://co.uk/v1/programmes") == []
    # a server without a registrable domain (an IP address, localhost) is its exact host only
    local = _spec(["http://localhost:3000"], {"/x": {"get": {"responses": OK}}})
    assert _templates(local, "http://localhost:3000/x") == ["/x"]
    assert _templates(local, "http://api.localhost:3000/x") == []


def test_one_trailing_slash_names_the_same_path_only_in_a_tasks_own_url():
    assert _templates(TRELLO, "https://trello.com/1/boards/", real=False, own=True) == []
    # what a model writes: issue 26's rule, a trailing slash the spec lacks is no path of it
    assert _templates(TRELLO, "https://trello.com/1/boards/") == []
    assert _templates(TRELLO, "https://api.trello.com/1/boards/5c5a/cards/") == []
    # a task's own (expected) URL: one slash more or less names the path
    assert _templates(TRELLO, "https://trello.com/1/boards/", own=True) == ["/boards"]
    assert _templates(TRELLO, "https://api.trello.com/1/boards/5c5a/cards/", own=True) == ["/boards/{idBoard}/cards"]
    assert _templates(TRELLO, "https://trello.com/1/boards//", own=True) == []  # one slash, not two
    django = _spec(["https://api.example.com"], {"/users/": {"get": {"responses": OK}}})
    assert _templates(django, "https://api.example.com/users", own=True) == ["/users/"]
    assert _templates(django, "https://api.example.com/users") == []


def test_a_spec_declaring_both_forms_keeps_them_apart():
    both = _spec(
        ["https://api.example.com"],
        {"/x": {"get": {"responses": OK}}, "/x/": {"post": {"responses": OK}}},
    )
    assert _templates(both, "https://api.example.com/x", own=True) == ["/x"]
    assert _templates(both, "https://api.example.com/x/", own=True) == ["/x/"]
    # the exact template wins
    assert both.match("get", "https://api.example.com/x/", real_world=True, either_slash=True) is None


def test_the_exact_host_wins_over_a_sibling():
    """Two servers of one registrable domain with different base paths: a URL of one server's
    host strips that server's base path, as before."""
    spec = _spec(
        ["https://api.example.com/v1", "https://uploads.example.com"],
        {"/files": {"get": {"responses": OK}}, "/v1/files": {"put": {"responses": OK}}},
    )
    assert _templates(spec, "https://uploads.example.com/v1/files") == ["/v1/files"]
    assert _templates(spec, "https://api.example.com/v1/files") == ["/files"]


def test_transport_headers():
    assert TRANSPORT_HEADERS == {"accept", "accept-encoding", "accept-language", "content-type", "user-agent"}
    assert is_transport_header("User-Agent") and is_transport_header("content-type")
    assert not is_transport_header("Authorization") and not is_transport_header("X-Api-Key")
