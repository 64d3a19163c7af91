"""Stateful tasks generated from an OpenAPI spec (issue 16, part 3): the mock per test case,
``generate stateful --spec``, gold pass@1 = 1.0 with ``run stateful``, a wrong program failing,
the self-contained benchmark folder (digests, resume), and the coverage command over a spec."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import ConfigError, DataError
from callbench.models.base import ModelOutput
from callbench.specs import load_spec
from callbench.statemodel import infer_model
from callbench.tracks.stateful.execution import Case, execute, judge
from callbench.tracks.stateful.generator import read_tasks
from callbench.tracks.stateful.spec_scenario import build_scenario

pytest.importorskip("requests")
runner = CliRunner()
PETSTORE = Path(__file__).resolve().parents[2] / "fixtures" / "one_spec" / "petstore.yaml"


@pytest.fixture(scope="module")
def pet_bench(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench") / "petstore"
    res = runner.invoke(app, ["generate", "stateful", "--spec", str(PETSTORE), "--n", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def test_mock_service_per_case_state_and_result():
    spec = load_spec(PETSTORE)
    sc = build_scenario(spec, infer_model(spec), name="petstore")
    code = (
        'pet = requests.post(f"{BASE_URL}/pets", json={"name": "rex"}).json()\n'
        'got = requests.get(f"{BASE_URL}/pets/{pet[\'id\']}").json()\n'
        "result = [pet['id'], got['name']]\n"
    )
    out = execute(sc, code, Case("base", {}, 7))
    assert out.status == "ok", out.error
    assert out.result == [1, "rex"]
    assert [p["name"] for p in out.state["pet"]] == ["rex"] and out.writes == 1
    again = execute(sc, code, Case("base", {}, 7))  # a fresh mock per case: the same ids, the same state
    assert judge(sc, out, again) == ("pass", None)
    other = execute(sc, code.replace('"rex"', '"max"'), Case("base", {}, 7))
    assert judge(sc, out, other)[0] == "wrong_result"


def test_generate_writes_a_self_contained_benchmark(pet_bench: Path):
    source = json.loads((pet_bench / "openapi" / "source.json").read_text())
    assert source["scenario"] == "petstore" and (pet_bench / "openapi" / source["spec"]).read_bytes() == PETSTORE.read_bytes()
    assert (pet_bench / "openapi" / "model.yaml").read_text().startswith("# callbench state model")
    tasks = read_tasks(pet_bench / "tasks.jsonl")
    assert len(tasks) == 3 and all(t["scenario"] == "petstore" for t in tasks)
    for t in tasks:
        assert "requests." in t["reference"] and "BASE_URL" in t["reference"]
        assert all(c["expected"]["status"] == "ok" for c in t["cases"]) and len(t["cases"]) >= 2
        # every input the program reads is named in the task text
        assert all(f"`{v}`" in t["text"] for v in t["inputs"])


def test_gold_passes_and_a_wrong_program_fails(pet_bench: Path, tmp_path: Path):
    res = runner.invoke(app, ["run", "stateful", "--bench", str(pet_bench), "--model", "gold", "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    summary = json.loads(next(tmp_path.glob("*/summary.json")).read_text())
    assert summary["metrics"]["pass@1"] == 1.0 and summary["metrics"]["n_tasks"] == 3
    from callbench.tracks.stateful.track import StatefulTrack

    track = StatefulTrack(bench=str(pet_bench))
    sample = track.load_samples()[0]
    ref = track.build_input(sample).reference
    first_write = next(line for line in ref.splitlines() if "requests.post" in line or "requests.put" in line)
    wrong = ref.replace(first_write, first_write + "\nrequests.post(f\"{BASE_URL}/pets\", json={\"name\": \"extra\"})")
    verdict = track.evaluate(sample, ModelOutput(text=wrong, mode="completion")).verdicts["strict"]
    assert not verdict["passed"] and verdict["error_class"] in ("wrong_state", "wrong_result")


def test_changed_spec_copy_and_other_spec_on_resume_are_refused(pet_bench: Path, tmp_path: Path):
    from callbench.tracks.stateful.spec_bench import load_bench_scenario, prepare

    copy = tmp_path / "b"
    shutil.copytree(pet_bench, copy)
    spec_copy = copy / "openapi" / "spec.yaml"
    spec_copy.write_text(spec_copy.read_text() + "\n# edited\n")
    with pytest.raises(DataError, match="spec.yaml: its sha256 differs"):
        load_bench_scenario(copy)
    other = tmp_path / "other.yaml"
    other.write_text(PETSTORE.read_text().replace("title:", "title: Other", 1))
    with pytest.raises(ConfigError, match="another spec or model"):
        prepare(pet_bench, other, name="petstore")


def test_generate_stateful_says_what_it_dropped_in_words():
    """Issue 31: `generate stateful` printed a Python dict (`dropped: {'too_short': 3}`)."""
    from callbench.cli.stateful import counts_text

    assert counts_text({"too_short": 1, "duplicate": 3}) == "3 duplicate, 1 too_short"
    assert counts_text({}) == "none" and counts_text(None) == "none"


def test_generate_stateful_output_has_no_python_dicts(tmp_path: Path):
    res = runner.invoke(app, ["generate", "stateful", "--spec", str(PETSTORE), "--n", "2", "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    assert "tasks in" in res.output and "{" not in res.output and "}" not in res.output


def test_generate_stateful_needs_exactly_one_source(tmp_path: Path, one_line_error):
    res = runner.invoke(app, ["generate", "stateful", "--out", str(tmp_path / "x")])
    one_line_error(res, "--scenario NAME or --spec FILE")
    res = runner.invoke(app, ["generate", "stateful", "--scenario", "voice", "--spec", str(PETSTORE), "--out", str(tmp_path / "x")])
    one_line_error(res, "--scenario NAME or --spec FILE")
    res = runner.invoke(app, ["generate", "stateful", "--spec", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "x")])
    one_line_error(res, "none.yaml: no such file")


def test_coverage_over_a_spec(tmp_path: Path):
    out = tmp_path / "cov.json"
    res = runner.invoke(app, ["coverage", "--spec", str(PETSTORE), "--programs", "1..15", "--seeds", "2", "--json", str(out), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())["scenarios"]["petstore"]
    assert data["reachable_pairs"] > 10
    assert set(data["samplers"]) == {"energy", "random"}


@pytest.mark.slow
@pytest.mark.ci_subset
def test_wapiibench_asana_gold(data_root: Path, tmp_path: Path):
    """A real spec end to end: stateful tasks over Asana's inferred model, gold pass@1 = 1.0."""
    from callbench.tracks.stateful.generator import GenerateOptions, generate
    from callbench.tracks.stateful.spec_bench import prepare
    from callbench.tracks.stateful.track import StatefulTrack

    src = data_root / "wapiibench" / "openapi" / "real_world_specs" / "asana.yaml"
    out = tmp_path / "asana"
    sc = prepare(out, src, name="asana_test")
    m = generate(sc, out, GenerateOptions(n=2, seed=0))
    assert m["n_kept"] == 2
    track = StatefulTrack(bench=str(out))
    for s in track.load_samples():
        ref = track.build_input(s).reference
        assert track.evaluate(s, ModelOutput(text=ref, mode="completion")).verdicts["strict"]["passed"]


FORM_SPEC = """
openapi: 3.0.0
info: {title: Notes, version: "1"}
paths:
  /notes:
    post:
      operationId: createNote
      requestBody:
        required: true
        content:
          application/x-www-form-urlencoded:
            schema:
              type: object
              required: [text]
              properties:
                text: {type: string}
                pinned: {type: boolean}
      responses:
        "201":
          description: created
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Note"}
  /notes/{noteId}:
    get:
      operationId: getNote
      parameters:
        - {name: noteId, in: path, required: true, schema: {type: integer}}
      responses:
        "200":
          description: the note
          content:
            application/json:
              schema: {$ref: "#/components/schemas/Note"}
components:
  schemas:
    Note:
      type: object
      properties:
        id: {type: integer}
        text: {type: string}
        pinned: {type: boolean}
"""


def test_form_encoded_bodies(tmp_path: Path):
    """Form bodies (Slack, GitLab): `data=` in programs, form fields as text, and the nested
    executor sends them form-encoded."""
    from random import Random

    from callbench.tracks.nested.from_spec import SpecExecutor, tool_shapes
    from callbench.tracks.nested.schema import ToolCall
    from callbench.tracks.stateful.spec_bench import spec_scenario

    f = tmp_path / "notes.yaml"
    f.write_text(FORM_SPEC)
    sc = spec_scenario(f)
    api = sc.api("createNote")
    assert "data=$body" in api.template
    body = next(p for p in api.params if p.name == "body").domain(Random(0), None, {})
    assert isinstance(body["text"], str) and all(isinstance(v, str) for v in body.values())
    code = (
        'note = requests.post(f"{BASE_URL}/notes", data={"text": "hi", "pinned": "true"}).json()\n'
        'result = requests.get(f"{BASE_URL}/notes/{note[\'id\']}").json()\n'
    )
    out = execute(sc, code, Case("base", {}, 1))
    assert out.status == "ok", out.error
    assert out.result["text"] == "hi" and out.result["pinned"] is True
    assert tool_shapes(sc)["createNote"].form
    res = SpecExecutor(sc).run([
        ToolCall(name="createNote", label="$var_1", arguments={"text": "hi", "pinned": True}),
        ToolCall(name="getNote", label="$var_2", arguments={"noteId": "$var_1.id$"}),
    ])
    assert res.ok and res.final["text"] == "hi" and res.final["pinned"] is True


def test_a_refused_request_fails_the_run():
    spec = load_spec(PETSTORE)
    sc = build_scenario(spec, infer_model(spec), name="petstore")
    out = execute(sc, 'result = requests.get(f"{BASE_URL}/pets/42").json()\n', Case("base", {}, 1))
    assert out.status == "runtime_error" and "HTTP 404 to GET /pets/42" in out.error
    out = execute(sc, 'result = requests.post(f"{BASE_URL}/pets", json={"tag": 3}).json()\n', Case("base", {}, 1))
    assert out.status == "runtime_error" and "HTTP 4" in out.error
