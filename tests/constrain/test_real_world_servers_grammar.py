"""The grammar's side of the real-world server rules (issue 29): in the ``callbench`` profile a
URL may name the server by its registrable domain's own hosts (``api.trello.com`` for
``https://trello.com/1``, ``www.googleapis.com`` for ``https://youtube.googleapis.com``), and a
call may send the transport headers any client sends (``Content-Type`` on a GET,
``User-Agent``); the key tracker then still knows the operation (an undeclared argument is
refused). A trailing ``/`` is exactly the path key's (issue 26), except in setup ``args``' fixed
URL, the task's own. The paper profile keeps WAPIIBench's exact rules."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("llguidance")

from callbench.constrain import GrammarOptions, check_continuation  # noqa: E402
from callbench.constrain.url_lexemes import site_host_rx  # noqa: E402
from callbench.specs import build_spec  # noqa: E402

OK = {"200": {"description": "ok"}}
KEY = {"name": "key", "in": "query", "schema": {"type": "string"}}
PAPER = GrammarOptions(profile="paper")


def _spec(server: str, paths: dict, name: str = "t"):
    doc = {"openapi": "3.0.0", "info": {"title": name, "version": "1"}, "servers": [{"url": server}], "paths": paths}
    return build_spec(doc, Path(f"/{name}/openapi.json"), f"{name}.json")


TRELLO = _spec(
    "https://trello.com/1",
    {
        "/boards": {"get": {"parameters": [KEY], "responses": OK}},
        "/boards/{idBoard}/cards": {
            "get": {
                "parameters": [
                    KEY,
                    {"name": "idBoard", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "filter", "in": "query", "schema": {"type": "string", "enum": ["open", "closed"]}},
                ],
                "responses": OK,
            }
        },
    },
    "trello",
)


def _allowed(spec, text: str, **kw) -> bool:
    return check_continuation(spec, text, **kw).allowed


@pytest.mark.parametrize(
    "url",
    [
        "https://trello.com/1/boards",
        "https://api.trello.com/1/boards",
        "https://www.trello.com/1/boards",
        "http://api.trello.com/1/boards",
        "https://api.trello.com/1/boards/b1/cards",
    ],
)
def test_hosts_of_the_servers_domain(url):
    assert _allowed(TRELLO, f"get('{url}', {{ params: {{ key: 'k' }} }})")
    exact = url.startswith("https://trello.com/")
    assert _allowed(TRELLO, f"get('{url}', {{ params: {{ key: 'k' }} }})", options=PAPER) == exact


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.com/1/boards",
        "https://trello.com.evil.com/1/boards",
        "https://eviltrello.com/1/boards",
        "https://api.trello.org/1/boards",
        "https://api.trello.com/boards",  # the server's base path is still needed
        "https://trello.com/1/boards//",
        # a trailing slash the path key lacks stays refused (issue 26), on any host
        "https://trello.com/1/boards/",
        "https://api.trello.com/1/boards/b1/cards/",
        "https://uploads.trello.com/1/boards",  # the grammar writes the domain, api. and www. only
    ],
)
def test_other_hosts_and_paths_stay_refused(url):
    r = check_continuation(TRELLO, f"get('{url}')")
    assert not r.allowed, url


def test_a_two_level_public_suffix():
    bbc = _spec("https://api.bbc.co.uk/v1", {"/programmes": {"get": {"responses": OK}}}, "bbc")
    assert _allowed(bbc, "get('https://www.bbc.co.uk/v1/programmes')")
    assert _allowed(bbc, "get('https://bbc.co.uk/v1/programmes')")
    assert not _allowed(bbc, "get('https://api.evil.co.uk/v1/programmes')")
    assert not _allowed(bbc, "get('https://co.uk/v1/programmes')")
    assert site_host_rx("https://api.bbc.co.uk") is not None
    # no registrable domain, a port, a variable: the server's host as written
    assert site_host_rx("http://localhost") is None
    assert site_host_rx("https://api.example.com:8443") is None
    assert site_host_rx("https://{region}.example.com") is None


def test_youtube_at_www_googleapis():
    yt = _spec("https://youtube.googleapis.com/", {"/youtube/v3/videos": {"get": {"parameters": [KEY], "responses": OK}}}, "yt")
    text = "get('https://www.googleapis.com/youtube/v3/videos', { params: { key: youTubeKey } })"
    assert _allowed(yt, text, identifiers=("youTubeKey",))
    assert not _allowed(yt, text, identifiers=("youTubeKey",), options=PAPER)


def test_the_tracker_still_knows_the_operation():
    """A sibling host names GET /boards/{idBoard}/cards: its own query parameter and enum hold,
    an undeclared one is refused."""
    url = "https://api.trello.com/1/boards/b1/cards"
    assert _allowed(TRELLO, f"get('{url}', {{ params: {{ key: 'k', filter: 'open' }} }})")
    r = check_continuation(TRELLO, f"get('{url}', {{ params: {{ key: 'k', type: 'x' }} }})")
    assert not r.allowed and "'type' is not allowed" in (r.reason or ""), r.reason
    r = check_continuation(TRELLO, f"get('{url}', {{ params: {{ filter: 'all' }} }})")
    assert not r.allowed, r.reason
    # GET /boards does not take filter
    r = check_continuation(TRELLO, "get('https://api.trello.com/1/boards', { params: { filter: 'open' } })")
    assert not r.allowed and "'filter' is not allowed" in (r.reason or ""), r.reason


def test_setup_args_fixes_a_real_world_url():
    """The fixed URL is the task's own: a sibling host and a trailing slash name the operation."""
    url = "https://api.trello.com/1/boards/b1/cards/"
    r = check_continuation(TRELLO, " { params: { key: 'k', filter: 'open' } })", setup="args", method="get", url=url)
    assert r.allowed, r.reason
    r = check_continuation(TRELLO, " { params: { key: 'k', type: 'x' } })", setup="args", method="get", url=url)
    assert not r.allowed and "'type' is not allowed" in (r.reason or ""), r.reason


def test_transport_headers_on_a_get():
    text = "get('https://trello.com/1/boards', { headers: { 'Content-Type': 'application/json', 'User-Agent': 'bot/1', 'Accept-Encoding': 'gzip' } })"
    assert _allowed(TRELLO, text)
    r = check_continuation(TRELLO, text, options=PAPER)
    assert not r.allowed and "'Content-Type' is not allowed" in (r.reason or ""), r.reason
    r = check_continuation(TRELLO, "get('https://trello.com/1/boards', { headers: { 'X-Other': '1' } })")
    assert not r.allowed and "'X-Other' is not allowed" in (r.reason or ""), r.reason


def test_header_names_are_ascii_case_insensitive():
    """Any ASCII case of a header name, but not a letter Unicode folds into one (``ſ`` is ``s``
    under ``(?i)``): no HTTP header name has it, and the scorer would call it an unknown header."""
    for name in ("user-agent", "USER-AGENT", "User-Agent"):
        assert _allowed(TRELLO, f"get('https://trello.com/1/boards', {{ headers: {{ '{name}': 'bot/1' }} }})"), name
    r = check_continuation(TRELLO, "get('https://trello.com/1/boards', { headers: { 'U\u017fer-Agent': 'bot/1' } })")
    assert not r.allowed, r.reason
    r = check_continuation(TRELLO, "get('https://trello.com/1/boards', { headers: { 'Uſer-Agent': 'bot/1' } })")
    assert not r.allowed, r.reason
