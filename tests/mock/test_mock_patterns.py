"""The mock server judges spec patterns on RE2 (issue 28, item 5): a body checked against
``^(a+)+$`` gets its 422 and the server goes on answering. How long the answer takes is measured
by ``benchmarks/hostile_patterns.py`` (no wall-clock limits in unit tests)."""

from __future__ import annotations

import json

import pytest
import requests

from callbench.mock import MockService
from callbench.mock.validate import problem, validator
from callbench.specs import load_spec
from callbench.specs import validator as spec_validator
from callbench.specs.validator import SpecValidator

HOSTILE = "^(a+)+$"
EVIL = "a" * 40 + "b"

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Hostile patterns", "version": "1"},
    "servers": [{"url": "https://api.example.com"}],
    "paths": {
        "/things": {
            "post": {
                "operationId": "createThing",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {"name": {"type": "string", "pattern": HOSTILE}},
                            }
                        }
                    },
                },
                "responses": {"201": {"description": "created"}},
            },
            "get": {
                "operationId": "listThings",
                "parameters": [
                    {"name": "tag", "in": "query", "schema": {"type": "string", "pattern": "^([a-z]+)*$"}}
                ],
                "responses": {"200": {"description": "ok"}},
            },
        }
    },
}


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    f = tmp_path_factory.mktemp("hostile") / "hostile.json"
    f.write_text(json.dumps(SPEC))
    return load_spec(f)


def test_the_validator_runs_patterns_on_re2():
    assert SpecValidator.VALIDATORS["pattern"] is spec_validator._pattern
    assert SpecValidator.VALIDATORS["patternProperties"] is spec_validator._pattern_properties
    schema = {"type": "string", "pattern": HOSTILE}
    assert isinstance(validator(schema), SpecValidator)
    assert "does not match" in problem(EVIL, schema)
    assert problem("aaa", schema) is None


def test_pattern_properties_and_additional_properties_on_re2():
    schema = {
        "type": "object",
        "patternProperties": {HOSTILE: {"type": "integer"}},
        "additionalProperties": False,
    }
    assert problem({"aaa": 1}, schema) is None
    assert "is not of type 'integer'" in problem({"aaaa": "x"}, schema)
    assert "does not match any of the regexes" in problem({EVIL: 1}, schema)
    # additionalProperties without patternProperties stays jsonschema's own
    assert "Additional properties are not allowed" in problem(
        {"x": 1}, {"type": "object", "additionalProperties": False}
    )


def test_a_hostile_body_gets_its_422_and_the_server_answers_the_next_request(spec):
    body = b'{"name":"' + b"a" * 29 + b'b"}'  # the 41-byte body: 2^29 steps for Python's re
    assert len(body) == 41
    with MockService(spec, seed=0) as m:
        r = requests.post(
            m.url + "/things", data=body, headers={"Content-Type": "application/json"}, timeout=30
        )
        assert r.status_code == 422 and "does not match" in r.json()["error"]
        r = requests.get(m.url + "/things", params={"tag": "a" * 40 + "1"}, timeout=30)
        assert r.status_code == 400 and "does not match" in r.json()["error"]
        assert requests.post(m.url + "/things", json={"name": "aaaa"}, timeout=30).status_code == 201
        assert requests.get(m.url + "/things", params={"tag": "abc"}, timeout=30).status_code == 200
