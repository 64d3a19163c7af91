"""The mock reads form bodies the way OpenAPI serializes them (an array property as repeated
pairs, an object as JSON text) and still refuses what does not fit; the objects it answers with
keep the id they are stored under (a read schema that leaves the id out or types it otherwise),
and ids it makes fit the entity's id schema."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from callbench.mock.app import MockApp
from callbench.mock.validate import RequestError
from callbench.specs import load_spec
from callbench.statemodel import infer_model

SPEC = """
openapi: 3.0.0
info: {title: Forms, version: "1"}
paths:
  /calls.participants.add:
    post:
      operationId: addParticipants
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [id, users]
              properties:
                id: {type: string}
                users: {type: array, items: {type: object, required: [slack_id], properties: {slack_id: {type: string}}}}
                tags: {type: array, items: {type: integer}}
                options: {type: object, properties: {silent: {type: boolean}}}
                notify: {type: boolean}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}}}
  /photos.delete:
    post:
      operationId: deletePhoto
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {token: {type: string}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}}}
  /widgets:
    post:
      operationId: createWidget
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [name], properties: {name: {type: string}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: "#/components/schemas/Widget"}}}}
  /widgets/{widgetId}:
    get:
      operationId: getWidget
      parameters: [{name: widgetId, in: path, required: true, schema: {type: integer}}]
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, required: [title], properties: {title: {type: string}, name: {type: string}}}
  /codes:
    post:
      operationId: createCode
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [label], properties: {label: {type: string}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: "#/components/schemas/Code"}}}}
  /codes/{code}:
    get:
      operationId: getCode
      parameters: [{name: code, in: path, required: true, schema: {type: string}}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Code"}}}}
components:
  schemas:
    Widget:
      type: object
      properties: {id: {type: integer}, name: {type: string}}
    Code:
      type: object
      properties:
        code: {type: string, pattern: "^[A-Z]{3}-[0-9]{4}$"}
        label: {type: string}
"""


class _Headers(dict):
    def get_all(self, name):
        v = self.get(name)
        return None if v is None else [v]


FORM = _Headers({"Content-Type": "application/x-www-form-urlencoded"})
JSON = _Headers({"Content-Type": "application/json"})


@pytest.fixture()
def app(tmp_path):
    path = tmp_path / "forms.yaml"
    path.write_text(SPEC, encoding="utf-8")
    spec = load_spec(path)
    return MockApp(spec, infer_model(spec), seed=3)


def _form(app, path, pairs):
    return app.handle("POST", path, "", FORM, urlencode(pairs).encode())


def test_form_array_of_objects_as_repeated_json_items(app):
    users = [("users", json.dumps({"slack_id": "U1"})), ("users", json.dumps({"slack_id": "U2"}))]
    status, _, _ = _form(app, "/calls.participants.add", [("id", "c1"), *users, ("tags", "3"), ("tags", "4")])
    assert status == 200
    status, _, _ = _form(app, "/calls.participants.add", [("id", "c1"), users[0], ("options", '{"silent": true}'), ("notify", "false")])
    assert status == 200


@pytest.mark.parametrize(
    "pairs, why",
    [
        ([("id", "c1")], "'users' is a required property"),
        ([("id", "c1"), ("users", "U1")], "is not of type 'object'"),  # an item that is not JSON stays text
        ([("id", "c1"), ("users", '{"name": "x"}')], "'slack_id' is a required property"),
        ([("id", "c1"), ("users", '{"slack_id": "U1"}'), ("tags", "three")], "is not of type 'integer'"),
        ([("id", "c1"), ("users", '{"slack_id": "U1"}'), ("options", "[1]")], "is not of type 'object'"),
        ([("id", "c1"), ("users", '{"slack_id": "U1"}'), ("notify", "True")], "is not of type 'boolean'"),
    ],
)
def test_form_values_that_do_not_fit_are_still_refused(app, pairs, why):
    with pytest.raises(RequestError) as err:
        _form(app, "/calls.participants.add", pairs)
    assert err.value.status == 422 and why in err.value.message


def test_an_empty_form_is_a_missing_required_body(app):
    with pytest.raises(RequestError) as err:
        app.handle("POST", "/photos.delete", "", FORM, b"")
    assert err.value.status == 400 and "missing request body" in err.value.message
    assert _form(app, "/photos.delete", [("token", "t")])[0] == 200


def test_a_read_schema_without_the_id_still_answers_it(app):
    status, made, _ = app.handle("POST", "/widgets", "", JSON, b'{"name": "w"}')
    assert status == 201 and made["id"] == 1
    status, got, _ = app.handle("GET", "/widgets/1", "", JSON, b"")
    # the read schema requires 'title' (the stored widget has none) and declares no id: the
    # answer is conformed to it, and keeps the id the widget is stored under
    assert status == 200 and isinstance(got["title"], str) and got["id"] == 1 and got["name"] == "w"


def test_made_string_ids_fit_the_id_schema(app):
    ids = []
    for label in ("a", "b", "c"):
        status, made, _ = app.handle("POST", "/codes", "", JSON, json.dumps({"label": label}).encode())
        assert status == 201
        ids.append(made["code"])
    import re

    assert all(re.fullmatch(r"[A-Z]{3}-[0-9]{4}", c) for c in ids) and len(set(ids)) == 3
    status, got, _ = app.handle("GET", f"/codes/{ids[1]}", "", JSON, b"")
    assert status == 200 and got["label"] == "b"
