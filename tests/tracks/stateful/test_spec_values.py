"""Argument values the stateful sampler draws for a spec are values the mock accepts (issue 16):
each drawn argument set, sent as a task's ``requests`` program sends it, passes the mock's own
validation (form bodies with arrays and objects, a required body whose fields are all optional,
a ``oneOf`` body whose first branch never fits, a boolean query parameter, client-chosen ids),
resampled test inputs differ from the spec's example, and an operation no drawn value fits is
left out of the scenario."""

from __future__ import annotations

import os
from pathlib import Path
from random import Random
from urllib.parse import urlsplit

import pytest

from callbench.mock.app import MockApp
from callbench.mock.validate import RequestError
from callbench.tracks.stateful.execution import Case, execute
from callbench.tracks.stateful.program import render
from callbench.tracks.stateful.sampling import sample_program
from callbench.tracks.stateful.scenario import World
from callbench.tracks.stateful.spec_bench import spec_scenario
from callbench.tracks.stateful.spec_scenario import fitting_value

requests = pytest.importorskip("requests")

SPEC = """openapi: 3.0.0
info: {title: Values, version: "1"}
paths:
  /users.deletePhoto:
    post:
      operationId: users_deletePhoto
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema: {type: object, properties: {token: {type: string}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}}}
  /calls.participants.add:
    post:
      operationId: calls_participants_add
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [id, users]
              properties:
                id: {type: string}
                users: {type: array, items: {type: object, properties: {slack_id: {type: string}, display_name: {type: string}}}}
                options: {type: object, properties: {silent: {type: boolean}}}
                notify: {type: boolean}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}}}
  /records:
    post:
      operationId: createRecord
      requestBody:
        required: true
        content:
          application/json:
            schema:
              oneOf:
                - {type: object, required: [kind], properties: {kind: {type: string, enum: [a]}}}
                - {type: object, properties: {kind: {type: string}, weight: {type: integer, minimum: 1}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}}}
  /flags:
    get:
      operationId: getFlags
      parameters:
        - {name: active, in: query, required: true, schema: {type: boolean}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {n: {type: integer}}}}}}
  /settings:
    patch:
      operationId: updateSettings
      requestBody:
        required: true
        content:
          application/json:
            schema:
              oneOf:
                - {type: object, properties: {alerts: {type: object, properties: {mail: {type: boolean}}}}}
                - {type: object, properties: {banner: {type: object, properties: {text: {type: string}}}}}
      responses:
        "204": {description: done}
  /teams:
    get:
      operationId: listTeams
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: array, items: {$ref: "#/components/schemas/Team"}}}}}
    post:
      operationId: createTeam
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [slug]
              properties:
                slug: {type: string, example: core, pattern: "^[a-z]+$"}
                title: {type: string}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: "#/components/schemas/Team"}}}}
  /teams/{slug}:
    get:
      operationId: getTeam
      parameters: [{name: slug, in: path, required: true, schema: {type: string}}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {$ref: "#/components/schemas/Team"}}}}
    delete:
      operationId: deleteTeam
      parameters: [{name: slug, in: path, required: true, schema: {type: string}}]
      responses:
        "204": {description: gone}
  /users/{userId}/messages:
    get:
      operationId: listMessages
      parameters: [{name: userId, in: path, required: true, schema: {type: string}}]
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {messages: {type: array, items: {$ref: "#/components/schemas/Message"}}}}}}}
    post:
      operationId: sendMessage
      parameters: [{name: userId, in: path, required: true, schema: {type: string}}]
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, required: [text], properties: {text: {type: string}}}
      responses:
        "201": {description: made, content: {application/json: {schema: {$ref: "#/components/schemas/Message"}}}}
  /messages/{messageId}:
    delete:
      operationId: deleteMessage
      parameters: [{name: messageId, in: path, required: true, schema: {type: string}}]
      responses:
        "204": {description: gone}
components:
  schemas:
    Message:
      type: object
      properties:
        id: {type: string}
        text: {type: string}
    Team:
      type: object
      properties:
        slug: {type: string}
        title: {type: string}
"""


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "values.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return spec_scenario(path, name="values_fixture")


class _Headers(dict):
    def get_all(self, name):
        v = self.get(name)
        return None if v is None else [v]


def send(app: MockApp, sc, api_name: str, values: dict, objs: dict | None = None):
    """The request a task's program makes for ``api_name`` with ``values``, through the mock's
    whole request handling (``requests`` encodes it, exactly as in the sandbox)."""
    info = sc.ops[api_name]
    path, params, kw = info.path.split("#", 1)[0], {}, {}
    for pid, (loc, name) in info.params.items():
        value = values[pid] if pid in values else (objs or {})[pid]
        if loc == "path":
            path = path.replace("{" + name + "}", str(value))
        elif loc == "query":
            params[name] = value
        elif loc == "body":
            kw["json"] = value
        elif loc == "form":
            kw["data"] = value
    req = requests.Request(info.method, "http://mock" + path, params=params, **kw).prepare()
    url = urlsplit(req.url)
    headers = _Headers({k: v for k, v in req.headers.items()})
    body = req.body.encode() if isinstance(req.body, str) else (req.body or b"")
    return app.handle(info.method, url.path, url.query, headers, body)


def _draw(sc, api_name: str, rng: Random, world: World | None = None) -> dict:
    api = sc.api(api_name)
    return {p.name: p.domain(rng, world or World(), {}) for p in api.params if not p.is_object}


@pytest.mark.parametrize("api_name", ["users_deletePhoto", "calls_participants_add", "createRecord", "getFlags"])
def test_every_drawn_argument_set_is_accepted_by_the_mock(scenario, api_name):
    app = MockApp(scenario.spec, scenario.model)
    rng = Random(3)
    for _ in range(30):
        values = _draw(scenario, api_name, rng)
        status, _, _ = send(app, scenario, api_name, values)  # raises RequestError on a refusal
        assert status < 400


def test_form_body_carries_arrays_and_objects(scenario):
    rng = Random(5)
    seen_objects = False
    for _ in range(20):
        body = _draw(scenario, "calls_participants_add", rng)["body"]
        assert isinstance(body["users"], list) and body["users"]  # required: never left empty on the wire
        assert all(isinstance(u, str) for u in body["users"])  # each item a JSON text (OpenAPI's default)
        seen_objects |= "options" in body
    assert seen_objects


def test_resampled_values_are_not_the_example(scenario):
    api = scenario.api("createTeam")
    body = next(p for p in api.params if p.name == "body")
    rng = Random(1)
    first = body.domain(rng, World(), {})
    assert first["slug"] == "core"  # the spec's example comes first
    others = {body.perturb(rng, first)["slug"] for _ in range(5)}
    assert "core" not in others and len(others) > 1
    app = MockApp(scenario.spec, scenario.model)
    for slug in sorted(others):
        assert send(app, scenario, "createTeam", {"body": {"slug": slug}})[0] == 201


def test_a_second_create_does_not_choose_a_live_id(scenario):
    api = scenario.api("createTeam")
    body = next(p for p in api.params if p.name == "body")
    world = World()
    rng = Random(2)
    first = body.domain(rng, world, {})
    api.effect(world, {"body": first}, {})
    for _ in range(10):
        again = body.domain(rng, world, {})
        assert again["slug"] != first["slug"]


def test_programs_run_against_the_mock_without_a_refused_request(scenario):
    rng = Random(11)
    ran = 0
    for _ in range(12):
        prog = sample_program(scenario, rng, n_calls=5, sampler="random")
        if prog is None:
            continue
        code = render(prog, scenario)
        out = execute(scenario, code, Case("base", dict(prog.inputs), prog.service_seed))
        assert out.status == "ok", (out.error, code)
        ran += 1
    assert ran >= 8


def test_an_operation_no_value_fits_is_left_out(scenario):
    # both oneOf branches accept every body either accepts: the mock refuses all (422)
    assert scenario.unfit == ("PATCH /settings",)
    assert "updateSettings" not in {a.name for a in scenario.apis}
    op = scenario.spec.operation("patch", "/settings")
    app = MockApp(scenario.spec, scenario.model)
    with pytest.raises(RequestError) as err:
        app.handle("PATCH", "/settings", "", _Headers({"Content-Type": "application/json"}), b'{"alerts": {"mail": true}}')
    assert err.value.status == 422 and op is not None


def test_fitting_value_reaches_a_later_oneof_branch():
    # every value of the first branch ({"kind": "a"}) fits the second too, so oneOf refuses it
    schema = {
        "oneOf": [
            {"type": "object", "required": ["kind"], "properties": {"kind": {"type": "string", "enum": ["a"]}}},
            {"type": "object", "properties": {"kind": {"type": "string"}, "n": {"type": "integer"}}},
        ]
    }
    from callbench.mock.validate import problem

    rng = Random(0)
    for _ in range(10):
        v = fitting_value(schema, rng, "body")
        assert problem(v, schema) is None


SLACK = Path(os.environ.get("CALLBENCH_DATA_DIR", "")) / "wapiibench" / "openapi" / "real_world_specs" / "slack.yaml"


@pytest.mark.skipif(not SLACK.is_file(), reason="WAPIIBench data not present (CALLBENCH_DATA_DIR)")
@pytest.mark.parametrize(
    "api_name", ["calls_participants_add", "users_deletePhoto", "dnd_setSnooze", "admin_conversations_setConversationPrefs", "chat_postMessage"]
)
def test_slack_drawn_arguments_are_accepted_by_the_mock(api_name):
    sc = spec_scenario(SLACK, name="slack_values")
    names = {a.name: a for a in sc.apis}
    api = next((a for n, a in names.items() if n.lower().replace("_", "") == api_name.lower().replace("_", "")), None)
    assert api is not None, sorted(names)[:20]
    app = MockApp(sc.spec, sc.model)
    rng = Random(7)
    for _ in range(25):
        status, _, _ = send(app, sc, api.name, _draw(sc, api.name, rng))
        assert status < 400


def test_a_list_under_a_path_value_holds_what_was_created_under_that_value(scenario):
    # the mock keeps a message in the collection /users/{userId}/messages names: the abstract
    # world must list the same ones (else a loop over a list the mock answers empty indexes [0])
    send_api, list_api = scenario.api("sendMessage"), scenario.api("listMessages")
    uid = next(p.name for p in send_api.params if not p.is_object and p.name != "body")
    world = World()
    send_api.effect(world, {uid: "u1", "body": {"text": "hi"}}, {})
    send_api.effect(world, {uid: "u2", "body": {"text": "yo"}}, {})
    assert [o.attrs["text"] for o in list_api.effect(world, {uid: "u1"}, {})] == ["hi"]
    assert list_api.effect(world, {uid: "u3"}, {}) == []
    app = MockApp(scenario.spec, scenario.model)
    send(app, scenario, "sendMessage", {uid: "u1", "body": {"text": "hi"}})
    send(app, scenario, "sendMessage", {uid: "u2", "body": {"text": "yo"}})
    _, listed, _ = send(app, scenario, "listMessages", {uid: "u1"})
    assert [m["text"] for m in listed["messages"]] == ["hi"]
