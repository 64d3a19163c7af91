"""The data check and the scorer read real-world requests by the same rules (issue 29): a host of
the server's registrable domain, one trailing ``/`` more or less, and the transport headers any
client sends (``Content-Type`` on a GET, ``User-Agent``). Ten of 42 mined real-world rows were left
out of the run by the data check for these reasons (Trello's ``api.trello.com`` against the
spec's ``trello.com/1``, YouTube's ``www.googleapis.com``, a GET sending ``Content-Type``).
An argument the spec does not declare stays illegal."""

from __future__ import annotations

from pathlib import Path

from callbench.specs import build_spec
from callbench.tracks.webapi.audit import audit_gold, cross_check_config
from callbench.tracks.webapi.dataset import WebApiTask
from callbench.tracks.webapi.scoring import compare_requests, expected_argument_counts

OK = {"200": {"description": "ok"}}
KEY = {"name": "key", "in": "query", "required": True, "schema": {"type": "string"}}
TRELLO = build_spec(
    {
        "openapi": "3.0.0",
        "info": {"title": "trello", "version": "1"},
        "servers": [{"url": "https://trello.com/1"}],
        "paths": {
            "/boards": {"get": {"parameters": [KEY], "responses": OK}},
            "/boards/{idBoard}/cards": {
                "get": {
                    "parameters": [
                        KEY,
                        {"name": "idBoard", "in": "path", "required": True, "schema": {"type": "string"}},
                        {"name": "User-Agent", "in": "header", "schema": {"type": "string", "enum": ["board-bot"]}},
                    ],
                    "responses": OK,
                }
            },
        },
    },
    Path("/trello/openapi.json"),
    "trello.json",
)


def _kinds(config: dict) -> list[tuple[str, str]]:
    return [(f.kind, f.where) for f in cross_check_config(config, TRELLO)]


def _audit(config: dict) -> list[tuple[str, str, str]]:
    task = WebApiTask.model_validate({"index": 0, "api": "trello", "task": "t", "config": config})
    return [(i.kind, i.location, i.name) for i in audit_gold(task, TRELLO)]


def test_the_data_check_takes_a_sub_domain_and_a_trailing_slash():
    ok = {"method": "get", "url": "https://api.trello.com/1/boards/", "params": {"key": "k"}}
    assert _kinds(ok) == [] and _audit(ok) == []
    for url in ("https://evil.com/1/boards/", "https://api.trello.co.uk/1/boards", "https://trello.com.evil.com/1/boards"):
        assert _kinds({**ok, "url": url}) == [("unknown_path", "config.url")], url
        assert _audit({**ok, "url": url}) == [("no_operation", "url", url)]


def test_the_data_check_takes_transport_headers_on_a_get():
    cfg = {
        "method": "get",
        "url": "https://trello.com/1/boards",
        "params": {"key": "k"},
        "headers": {"Content-Type": "application/json", "user-agent": "bot/1", "Accept-Encoding": "gzip"},
    }
    assert _kinds(cfg) == [] and _audit(cfg) == []
    # an undeclared query argument and another header are still findings
    bad = {**cfg, "params": {"key": "k", "type": "x"}, "headers": {"X-Other": "1"}}
    assert _kinds(bad) == [("unknown_argument", "config.params.type"), ("unknown_argument", "config.headers.X-Other")]
    assert _audit(bad) == [("illegal_argument", "headers", "X-Other"), ("illegal_argument", "params", "type")]


def _verdicts(v) -> dict[str, str]:
    return {f"{a.location}.{a.name}": a.verdict for a in v.arguments}


def test_the_scorer_reads_hosts_and_slashes_as_the_data_check():
    """The task's own URL (a sibling host and a trailing slash) is read as the data check reads
    it, so its gold scores correct; another URL with a trailing slash the spec lacks stays
    illegal (issue 26), a sibling host without one is the server."""
    expected = {"method": "get", "url": "https://api.trello.com/1/boards/", "params": {"key": "k"}}
    for url in ("https://api.trello.com/1/boards/", "https://trello.com/1/boards", "https://www.trello.com/1/boards"):
        v = compare_requests(expected, {**expected, "url": url}, TRELLO, "strict")
        assert (v.url, v.sample) == ("correct", "correct"), url
    for url in ("https://trello.org/1/boards", "https://www.trello.com/1/boards/", "https://trello.com/1/boards/"):
        v = compare_requests(expected, {**expected, "url": url}, TRELLO, "strict")
        assert (v.url, v.sample) == ("illegal", "illegal"), url
    # compat keeps the published matching for any other request; the task's own URL is read as
    # the expected one (WAPIIBench's URLs all match exactly, so its compat figures are unchanged)
    v = compare_requests(expected, expected, TRELLO, "compat")
    assert (v.url, v.sample) == ("correct", "correct")
    v = compare_requests(expected, {**expected, "url": "https://www.trello.com/1/boards"}, TRELLO, "compat")
    assert v.url == "illegal"
    v = compare_requests(expected, {**expected, "url": "https://trello.com/1/boards"}, TRELLO, "compat")
    assert (v.url, v.sample) == ("correct", "correct")


def test_transport_headers_are_not_arguments_in_strict():
    expected = {"method": "get", "url": "https://trello.com/1/boards", "params": {"key": "k"}}
    sent = {**expected, "headers": {"Content-Type": "application/json", "User-Agent": "bot/1", "accept-language": "en"}}
    v = compare_requests(expected, sent, TRELLO, "strict")
    assert v.sample == "correct" and _verdicts(v) == {"params.key": "correct"}
    # compat: the published rule ignores only Accept and Content-Type
    v = compare_requests(expected, sent, TRELLO, "compat")
    assert _verdicts(v)["headers.User-Agent"] == "illegal" and v.sample == "illegal"
    # another undeclared header stays illegal in strict
    v = compare_requests(expected, {**expected, "headers": {"X-Other": "1"}}, TRELLO, "strict")
    assert _verdicts(v)["headers.X-Other"] == "illegal"
    # expected counts leave them out as well (hand count: one query argument)
    assert expected_argument_counts(sent, TRELLO, "strict") == {"headers": 0, "params": 1}


def test_a_declared_transport_header_is_an_argument():
    """An operation that declares ``User-Agent`` (with an enum) has it judged like any parameter."""
    url = "https://trello.com/1/boards/b1/cards"
    expected = {"method": "get", "url": url, "params": {"key": "k"}, "headers": {"User-Agent": "board-bot"}}
    v = compare_requests(expected, expected, TRELLO, "strict")
    assert v.sample == "correct" and _verdicts(v)["headers.User-Agent"] == "correct"
    v = compare_requests(expected, {**expected, "headers": {"User-Agent": "other"}}, TRELLO, "strict")
    assert _verdicts(v)["headers.User-Agent"] == "incorrect_value" and v.sample == "illegal"  # out of its enum
    v = compare_requests(expected, {**expected, "headers": {}}, TRELLO, "strict")
    assert _verdicts(v)["headers.User-Agent"] == "missing"
