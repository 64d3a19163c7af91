"""Specs nested too deep and long ``$ref`` chains (issue 28): a one-line SpecError naming the
file, never a RecursionError, from the loader, ``serve mock`` and ``generate webapi``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import SpecError
from callbench.specs import load_spec
from callbench.specs.refs import MAX_RESOLVED_DEPTH
from callbench.untrusted import DOCUMENT_MAX_DEPTH

N = 3000


def _base() -> dict:
    return {
        "openapi": "3.0.3",
        "info": {"title": "limits", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/things": {
                "post": {
                    "operationId": "createThing",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}},
                    },
                    "responses": {"201": {"description": "created"}},
                }
            }
        },
        "components": {"schemas": {}},
    }


def ref_chain(path: Path, n: int = N) -> Path:
    """``S0 -> S1 -> ... -> Sn``, each a bare ``$ref`` to the next; ``Sn`` an object."""
    doc = _base()
    schemas = doc["components"]["schemas"]
    for i in range(n):
        schemas[f"S{i}"] = {"$ref": f"#/components/schemas/S{i + 1}"}
    schemas[f"S{n}"] = {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}
    path.write_text(json.dumps(doc))
    return path


def ref_nest(path: Path, n: int = N) -> Path:
    """``S0.properties.next -> S1``, ...: each schema holds the next, so resolved they nest ``n`` deep."""
    doc = _base()
    schemas = doc["components"]["schemas"]
    for i in range(n):
        schemas[f"S{i}"] = {
            "type": "object",
            "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}},
        }
    schemas[f"S{n}"] = {"type": "string"}
    path.write_text(json.dumps(doc))
    return path


def deep_json(path: Path, levels: int = 100_000) -> Path:
    text = json.dumps(_base())[:-1] + ', "x-deep": ' + '{"x":' * levels + "1" + "}" * levels + "}"
    path.write_text(text)
    return path


def deep_yaml(path: Path, levels: int = 100_000) -> Path:
    path.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\nx-deep: "
        + "[" * levels
        + "]" * levels
        + "\n"
    )
    return path


def _one_line_spec_error(path: Path, *needles: str) -> str:
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(path.name + ": "), message
    for needle in needles:
        assert needle in message, message
    return message


def test_a_3000_long_ref_chain_resolves(tmp_path):
    spec = load_spec(ref_chain(tmp_path / "chain.json"))
    schema = spec.operation("post", "/things").request_body.content["application/json"]
    assert schema["required"] == ("name",)


def test_a_circular_ref_chain_is_still_an_error(tmp_path):
    doc = _base()
    doc["components"]["schemas"] = {
        f"S{i}": {"$ref": f"#/components/schemas/S{(i + 1) % 50}"} for i in range(50)
    }
    f = tmp_path / "loop.json"
    f.write_text(json.dumps(doc))
    _one_line_spec_error(f, "circular chain of references")


def test_refs_nesting_3000_deep_are_a_one_line_error(tmp_path):
    _one_line_spec_error(
        ref_nest(tmp_path / "nest.json"), f"nested deeper than {MAX_RESOLVED_DEPTH} levels", "$ref"
    )


def test_refs_nesting_within_the_bound_resolve(tmp_path):
    n = MAX_RESOLVED_DEPTH // 2 - 10  # two containers a level (the schema, its properties)
    spec = load_spec(ref_nest(tmp_path / "nest.json", n=n))
    schema = spec.operation("post", "/things").request_body.content["application/json"]
    for _ in range(n):
        schema = schema["properties"]["next"]
    assert schema == {"type": "string"}


@pytest.mark.parametrize("make", [deep_json, deep_yaml])
def test_a_document_nested_100000_deep_is_a_one_line_error(tmp_path, make):
    f = make(tmp_path / ("deep.json" if make is deep_json else "deep.yaml"))
    message = _one_line_spec_error(f)
    assert "nested" in message or "nesting depth" in message


def test_a_document_just_past_the_depth_limit_is_refused(tmp_path):
    # deep enough for the limit, shallow enough for Python's parser: the walk after parsing refuses it
    _one_line_spec_error(
        deep_json(tmp_path / "d.json", levels=DOCUMENT_MAX_DEPTH + 5),
        f"nested deeper than {DOCUMENT_MAX_DEPTH}",
    )
    yaml_file = tmp_path / "d.yaml"
    yaml_file.write_text(
        "openapi: 3.0.3\ninfo: {title: t, version: '1'}\npaths: {}\nx-deep: " + "[" * 250 + "]" * 250 + "\n"
    )
    _one_line_spec_error(yaml_file, f"nested deeper than {DOCUMENT_MAX_DEPTH}")


@pytest.mark.parametrize("make", [deep_json, deep_yaml, ref_nest])
def test_cli_serve_mock_and_generate_webapi_give_one_line(tmp_path, make, one_line_error):
    f = make(tmp_path / ("spec.yaml" if make is deep_yaml else "spec.json"))
    res = CliRunner().invoke(app, ["serve", "mock", "--spec", str(f), "--port", "0"])
    one_line_error(res, f.name)
    res = CliRunner().invoke(
        app, ["generate", "webapi", "--spec", str(f), "--n", "1", "--out", str(tmp_path / "out")]
    )
    one_line_error(res, f.name)
