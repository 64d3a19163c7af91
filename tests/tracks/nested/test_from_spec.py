"""Nested tasks generated from an OpenAPI spec (issue 16, parts 3 and 4): rows in the NESTFUL v2
format with ``$var_N.field$`` references, executed against a fresh mock per task (gold win rate
1.0, wrong sequences lose), the executor's errors, and the reference-aware grammar built from the
spec's operations (gold accepted, unknown tool and unknown argument rejected)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.models.base import ModelOutput
from callbench.tracks.nested.dataset import load_nested
from callbench.tracks.nested.from_spec import (
    NestedSpecOptions,
    SpecExecutor,
    generate_nested_from_spec,
    spec_tools,
)
from callbench.tracks.nested.schema import ToolCall
from callbench.tracks.stateful.spec_bench import spec_scenario

runner = CliRunner()
PETSTORE = Path(__file__).resolve().parents[2] / "fixtures" / "one_spec" / "petstore.yaml"


@pytest.fixture(scope="module")
def pet_rows(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nested") / "pet.jsonl"
    res = runner.invoke(app, ["generate", "nested", "--spec", str(PETSTORE), "--n", "12", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_rows_are_nestful_v2_with_references(pet_rows: Path):
    assert (pet_rows.parent / "pet.openapi" / "source.json").is_file()
    tasks = load_nested(pet_rows)
    assert len(tasks) == 12
    for t in tasks:
        assert t.domain == "api" and t.gold_answer is not None
        assert [c.label for c in t.output] == [f"var_{i}" for i in range(1, len(t.output) + 1)]
        refs = [v for c in t.output for v in c.arguments.values() if isinstance(v, str) and v.startswith("$var_")]
        assert refs, t.id  # nested: at least one call takes an earlier output
        names = {tool.name for tool in t.tools}
        assert {c.name for c in t.output} <= names
        for c in t.output:  # every argument is a declared parameter of its tool
            assert set(c.arguments) <= set(t.tool(c.name).parameters)
        assert "$var" not in t.input and not any(c.name in t.input for c in t.output)


def test_gold_wins_and_a_wrong_id_loses(pet_rows: Path, tmp_path: Path):
    res = runner.invoke(app, ["run", "nested", "--data", str(pet_rows), "--model", "gold", "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["metrics"]["win_rate"] == 1.0 and summary["metrics"]["n_executable"] == 12
    from callbench.tracks.nested.track import NestedOptions, NestedTrack

    track = NestedTrack(NestedOptions(data=str(pet_rows)))
    sample = next(s for s in track.load_samples() if any("$var_1." in json.dumps(c.arguments) for c in s.payload.output[1:]))
    calls = [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in sample.payload.output]
    text = json.dumps(calls).replace('"$var_1.', '"$var_9.')  # a reference to no call
    verdict = track.evaluate(sample, ModelOutput(text=text, mode="completion")).verdicts["strict"]
    assert verdict["win"] is False
    for c in calls:  # an id nothing created: the mock answers 404, the sequence fails
        for k, v in c["arguments"].items():
            if isinstance(v, str) and v.startswith("$var_"):
                c["arguments"][k] = 987654
    verdict = track.evaluate(sample, ModelOutput(text=json.dumps(calls), mode="completion")).verdicts["strict"]
    assert verdict["win"] is False


def test_executor_errors_name_the_problem():
    sc = spec_scenario(PETSTORE)
    ex = SpecExecutor(sc, seed=1)
    res = ex.run([ToolCall(name="noSuchOp", label="$var_1", arguments={})])
    assert "UnknownTool" in res.calls[0].output.message
    res = ex.run([ToolCall(name="createPet", label="$var_1", arguments={"name": "rex", "color": "red"})])
    assert "UnknownArgument" in res.calls[0].output.message and "color" in res.calls[0].output.message
    res = ex.run([ToolCall(name="getPet", label="$var_1", arguments={"petId": 5})])
    assert res.calls[0].output.message.startswith("HTTP 404")
    res = ex.run([
        ToolCall(name="createPet", label="$var_1", arguments={"name": "rex"}),
        ToolCall(name="getPet", label="$var_2", arguments={"petId": "$var_1.id$"}),
    ])
    assert res.ok and res.final["name"] == "rex" and res.final["id"] == 1
    again = SpecExecutor(sc, seed=1).run([ToolCall(name="createPet", label="$var_1", arguments={"name": "rex"})])
    assert again.final["id"] == 1  # a fresh mock per sequence


def test_generation_is_deterministic_per_seed():
    sc = spec_scenario(PETSTORE)
    a, _ = generate_nested_from_spec(sc, "x.openapi", NestedSpecOptions(n=4, seed=3))
    b, _ = generate_nested_from_spec(sc, "x.openapi", NestedSpecOptions(n=6, seed=3))
    assert json.dumps(a, sort_keys=True) == json.dumps(b[:4], sort_keys=True)


def test_spec_option_keeps_the_mathqa_default(tmp_path: Path, one_line_error):
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["generate", "nested", "--n", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert all(t.source != "openapi:petstore" and "openapi" not in (t.model_extra or {}) for t in load_nested(out))
    res = runner.invoke(app, ["generate", "nested", "--n", "3", "--out", str(out), "--model", "m.yaml"])
    one_line_error(res, "--model and --name go with --spec")
    res = runner.invoke(app, ["generate", "nested", "--spec", str(PETSTORE), "--out", str(tmp_path / "x.json")])
    one_line_error(res, "the output is a .jsonl file")


def test_grammar_from_the_spec_operations(pet_rows: Path):
    pytest.importorskip("llguidance")
    from callbench.constrain.label_tracker import check_answer
    from callbench.constrain.nested_grammar import build_nested_grammar

    sc = spec_scenario(PETSTORE)
    catalog = spec_tools(sc)
    assert {t.name for t in catalog} >= {"createPet", "getPet", "deletePet"}
    g = build_nested_grammar(catalog)
    for t in load_nested(pet_rows):
        gold = [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in t.output]
        assert check_answer(build_nested_grammar(t.tools), json.dumps(gold)) is None, t.id
        assert check_answer(g, json.dumps(gold, indent=2)) is None, t.id
    ok = [{"name": "createPet", "label": "$var_1", "arguments": {"name": "rex"}},
          {"name": "getPet", "label": "$var_2", "arguments": {"petId": "$var_1.id$"}}]
    assert check_answer(g, json.dumps(ok)) is None
    bad_tool = json.loads(json.dumps(ok))
    bad_tool[1]["name"] = "getPetById"
    assert check_answer(g, json.dumps(bad_tool)) is not None
    bad_arg = json.loads(json.dumps(ok))
    bad_arg[0]["arguments"]["colour"] = "red"
    assert check_answer(g, json.dumps(bad_arg)) is not None
    bad_type = json.loads(json.dumps(ok))
    bad_type[1]["arguments"]["petId"] = "seven"  # petId is an integer
    assert check_answer(g, json.dumps(bad_type)) is not None
    from callbench.tracks.nested.constraints import NestedConstraintFactory

    assert NestedConstraintFactory().for_task(load_nested(pet_rows)[0]) is not None  # what --constrained builds per row
    bad_ref = json.loads(json.dumps(ok))
    bad_ref[1]["arguments"]["petId"] = "$var_1.nope$"  # createPet returns no 'nope'
    assert check_answer(g, json.dumps(bad_ref)) is not None


FORM_SPEC = """
openapi: 3.0.0
info: {title: Form calls, version: "1"}
paths:
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
                users: {type: array, items: {type: object, required: [slack_id], properties: {slack_id: {type: string}}}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {ok: {type: boolean}}}}}}
  /flags:
    get:
      operationId: getFlags
      parameters:
        - {name: active, in: query, required: true, schema: {type: boolean}}
      responses:
        "200": {description: ok, content: {application/json: {schema: {type: object, properties: {n: {type: integer}}}}}}
"""


def test_a_form_array_is_sent_as_repeated_fields(tmp_path: Path):
    from callbench.tracks.nested.from_spec import _json_typed, tool_shapes

    path = tmp_path / "form.yaml"
    path.write_text(FORM_SPEC, encoding="utf-8")
    sc = spec_scenario(path, name="form_calls")
    shape = tool_shapes(sc)["calls_participants_add"]
    assert shape.form and shape.spec["parameters"]["properties"]["users"]["type"] == "array"
    users = ['{"slack_id": "U1"}', '{"slack_id": "U2"}']
    ex = SpecExecutor(sc)
    res = ex.run([ToolCall(name="calls_participants_add", label="$var_1", arguments={"id": "c1", "users": users})])
    assert res.ok, res.calls[0].output
    res = ex.run([ToolCall(name="calls_participants_add", label="$var_1", arguments={"id": "c1", "users": ["U1"]})])
    assert res.calls[0].output.message.startswith("HTTP 422")  # an item that is not an object is still refused
    # a boolean query value, which a stateful program sends as "true", is a boolean in a tool call
    flags = tool_shapes(sc)["getFlags"]
    assert _json_typed(sc, flags, "query", "active", "true") is True
    assert _json_typed(sc, flags, "query", "active", "yes") == "yes"
    res = ex.run([ToolCall(name="getFlags", label="$var_1", arguments={"active": True})])
    assert res.ok, res.calls[0].output


SLACK = Path(os.environ.get("CALLBENCH_DATA_DIR", "")) / "wapiibench" / "openapi" / "real_world_specs" / "slack.yaml"


@pytest.mark.skipif(not SLACK.is_file(), reason="WAPIIBench data not present (set CALLBENCH_DATA_DIR to a folder with wapiibench/)")
def test_rpc_spec_calls_are_linked_by_name_and_schema(tmp_path: Path):
    """Slack's paths show no resource (RPC: /conversations.create answers ``channel.id``,
    /conversations.archive takes a form field ``channel``): a later call takes an argument from an
    earlier response whose field matches it by name and schema, and the gold answers win."""
    from callbench.statemodel.name_links import link_field, response_fields
    from callbench.tracks.nested.from_spec import name_links, tool_shapes

    sc = spec_scenario(SLACK, name="slack_links")
    assert name_links(sc) and not name_links(spec_scenario(PETSTORE))  # path links: unchanged
    shapes = tool_shapes(sc)
    fields = response_fields(sc.spec.operation("post", "/conversations.create"))
    archive = shapes["conversations_archive"]
    assert link_field(fields, "channel", archive.arg_schemas["channel"]) in ("channel.id", "channel.0.id")
    assert link_field(fields, "channel", {"type": "integer"}) is None  # the schema must match too
    assert link_field(fields, "channel", {"type": "string", "pattern": "^X"}) is None  # and its constraints

    out = tmp_path / "slack.jsonl"
    res = runner.invoke(app, ["generate", "nested", "--spec", str(SLACK), "--name", "slack_links", "--n", "10", "--out", str(out)])
    assert res.exit_code == 0, res.output
    tasks = load_nested(out)
    assert len(tasks) == 10
    for t in tasks:
        refs = [(c, k, v) for c in t.output for k, v in c.arguments.items() if isinstance(v, str) and v.startswith("$var_")]
        assert refs, t.id
        labels = {c.label: c for c in t.output}
        for c, _, v in refs:  # a reference names an earlier call and a field its tool declares
            label, key = v.strip("$").split(".", 1)
            src = labels[label]
            assert t.output.index(src) < t.output.index(c)
            assert key in t.tool(src.name).output_parameters, (t.id, v)
        assert "$var" not in t.input
    again = tmp_path / "again.jsonl"
    res = runner.invoke(app, ["generate", "nested", "--spec", str(SLACK), "--name", "slack_links", "--n", "10", "--out", str(again)])
    assert res.exit_code == 0 and again.read_text() == out.read_text().replace("slack.openapi", "again.openapi")  # deterministic
    res = runner.invoke(app, ["run", "nested", "--data", str(out), "--model", "gold", "--out", str(tmp_path / "run"), "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads(next((tmp_path / "run").glob("*/summary.json")).read_text())
    assert summary["metrics"]["win_rate"] == 1.0 and summary["metrics"]["n_executable"] == 10
    try:  # the reference-aware grammar accepts the gold answers (references to response fields)
        from callbench.constrain.label_tracker import check_answer
        from callbench.constrain.nested_grammar import build_nested_grammar
    except ImportError:  # llguidance not installed
        return
    for t in tasks:
        gold = [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in t.output]
        assert check_answer(build_nested_grammar(t.tools), json.dumps(gold)) is None, t.id
