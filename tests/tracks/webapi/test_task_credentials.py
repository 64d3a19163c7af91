"""A task whose request goes without a credential (``credentials: "none"``, issue 29).

Real code calls public endpoints anonymously although the spec lists a security scheme (Google's
directory specs list OAuth2 on every operation; Google Books' volume search answers without one).
Such a task says so: its prompt leaves out the sentence that asks for a credential, and
constrained decoding does not force one (one written is still allowed). Tasks without the field
keep WAPIIBench's convention, byte for byte, and the paper's credential rule is never touched.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.errors import DataError
from callbench.tracks.webapi.dataset import WebApiTask, load_tasks
from callbench.tracks.webapi.prompting import CREDENTIAL_BULLETS, build_prompt

BOOKS = "https://www.googleapis.com/books/v1/volumes"
SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "books", "version": "1"},
    "servers": [{"url": "https://www.googleapis.com/books/v1"}],
    "components": {"securitySchemes": {"Oauth2": {"type": "oauth2", "flows": {}}}},
    "security": [{"Oauth2": []}],
    "paths": {
        "/volumes": {
            "get": {
                "parameters": [
                    {"name": "q", "in": "query", "required": True, "schema": {"type": "string"}},
                    {"name": "key", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


def _task(**extra) -> WebApiTask:
    return WebApiTask(index=0, api="google_books", task="Search books about whales.",
                      config={"method": "get", "url": BOOKS, "params": {"q": "whales"}}, **extra)


def test_the_field_defaults_to_required_and_a_bad_value_names_the_field(tmp_path):
    assert _task().credentials == "required" and _task(credentials="none").credentials == "none"
    rows = tmp_path / "t.jsonl"
    row = {"index": 0, "api": "x", "task": "t", "config": {"method": "get", "url": BOOKS}, "credentials": "optional"}
    rows.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataError, match=r"t\.jsonl.*credentials"):
        load_tasks(rows)


@pytest.mark.parametrize("version", ["v1", "v2"])
@pytest.mark.parametrize("setup", ["full", "args"])
def test_the_prompt_leaves_out_only_the_credential_sentence(version, setup):
    asked, anonymous = build_prompt(_task(), setup, version=version), build_prompt(_task(credentials="none"), setup, version=version)
    for a, b in [(asked.completion_prompt, anonymous.completion_prompt),
                 (asked.messages[1]["content"], anonymous.messages[1]["content"]),
                 (asked.template_messages[1]["content"], anonymous.template_messages[1]["content"])]:
        dropped = [line for line in a.split("\n") if line.startswith(CREDENTIAL_BULLETS)]
        assert len(dropped) == 1  # each version has exactly one such sentence, and it is found
        assert "<key>" in dropped[0] and "<key>" not in b
        assert b.split("\n") == [line for line in a.split("\n") if line != dropped[0]]
    assert asked.starter == anonymous.starter and asked.assistant_prefix == anonymous.assistant_prefix


def test_wapiibench_prompts_keep_the_sentence(wapii_tasks):
    for task in wapii_tasks[::40]:
        assert task.credentials == "required"
        assert "- The API requires authentication:" in build_prompt(task, "full").completion_prompt


def _spec():
    from callbench.specs import build_spec

    return build_spec(SPEC, Path("/books/openapi.yaml"), "books.yaml")


def test_the_grammar_forces_no_credential_for_an_anonymous_task():
    pytest.importorskip("llguidance")
    from callbench.constrain import GrammarOptions, check_continuation
    from callbench.tracks.webapi.constraints import task_grammar_options

    spec = _spec()
    plain = "get('https://www.googleapis.com/books/v1/volumes', { params: { q: 'whales' } });"
    keyed = "get('https://www.googleapis.com/books/v1/volumes', { params: { q: 'whales', key: process.env.KEY } });"
    wrong = "get('https://www.googleapis.com/books/v1/volumes', { params: { q: 'whales', kee: 'x' } });"
    default = GrammarOptions()

    def allowed(task, text, options=default):
        opts = task_grammar_options(task, options)
        return check_continuation(spec, text, identifiers=("process",), options=opts).allowed

    assert not allowed(_task(), plain)  # WAPIIBench's convention: the credential is required
    assert allowed(_task(credentials="none"), plain)
    assert allowed(_task(credentials="none"), keyed)  # one written is still allowed
    assert not allowed(_task(credentials="none"), wrong)  # the spec's arguments are still enforced
    # the paper's rule is WAPIIBench's own: the same options object, whatever the task says
    paper = GrammarOptions(profile="paper")
    assert task_grammar_options(_task(credentials="none"), paper) is paper
    assert task_grammar_options(_task(), default) is default


def test_the_track_builds_the_anonymous_tasks_grammar_without_the_requirement(monkeypatch):
    """The factory the track uses passes the task's options to the grammar builder, and keeps the
    grammars of the two kinds of task apart in its cache."""
    pytest.importorskip("llguidance")
    from callbench.constrain import webapi_grammar
    from callbench.tracks.webapi.constraints import ConstraintFactory

    seen = []
    real = webapi_grammar.build_webapi_grammar

    def spy(*args, **kw):
        seen.append(kw["options"].require_credentials)
        return real(*args, **kw)

    monkeypatch.setattr(webapi_grammar, "build_webapi_grammar", spy)
    factory, spec = ConstraintFactory("full"), _spec()
    for task in (_task(), _task(credentials="none"), _task()):
        factory.for_task(task, spec, "const axios = require('axios');\n// {task}\naxios.")
    assert seen == [True, False]  # the third reused the first's grammar
