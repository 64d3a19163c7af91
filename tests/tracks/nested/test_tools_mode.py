"""Native tool-calling mode of the nested track: gold self-check, scripted backends, the OpenAI
backend against a local fake server through the CLI, and the --mode / --strategy options."""

import asyncio
import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.api import run
from callbench.cli import app
from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.tracks.nested.schema import NestedTask
from callbench.tracks.nested.tools_mode import parameter_schema, parse_arguments, sent_names, tool_schemas
from callbench.tracks.nested.track import NestedOptions, NestedTrack

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nestful"
METRICS = ("f1_function", "f1_parameter", "partial_sequence_accuracy", "full_sequence_accuracy")

TOOLS = [
    {"name": n, "description": d, "parameters": {"arg_0": {"type": "int or float"}, "arg_1": {"type": "int or float"}},
     "output_parameter": {"result": {"type": "float", "description": "the result"}}}
    for n, d in (("divide", "arg_0 / arg_1"), ("multiply", "arg_0 * arg_1"))
]
TASK = {
    "sample_id": "t1",
    "input": "What is 20% of 50?",
    "output": [
        {"name": "divide", "label": "$var_1", "arguments": {"arg_0": 20, "arg_1": 100}},
        {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": 50, "arg_1": "$var_1.result$"}},
    ],
    "tools": TOOLS,
    "gold_answer": 10.0,
}


def call(name, arguments, call_id=None):
    return {"id": call_id or f"id_{name}", "name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)}


DIVIDE = call("divide", {"arg_0": 20, "arg_1": 100})
MULTIPLY = call("multiply", {"arg_0": 50, "arg_1": "$var_1.result$"})


class ToolScripted(ModelBackend):
    """Answers each turn with the next scripted ``(text, tool_calls)`` and remembers what it was asked."""

    name = "scripted-tools"
    modes = ("chat",)
    supports_tools = True

    def __init__(self, turns):
        super().__init__()
        self.turns = list(turns)
        self.inputs: list[ModelInput] = []

    async def generate(self, inp, config):
        self.inputs.append(inp)
        text, calls = self.turns.pop(0) if self.turns else ("", [DIVIDE])
        return ModelOutput(text=text, mode="chat", prompt_tokens=10, completion_tokens=3, tool_calls=calls or None)

    def tool_results(self, i: int) -> list[str]:
        """The tool messages the i-th request carried."""
        return [m["content"] for m in self.inputs[i].messages if m["role"] == "tool"]


class NoTools(ToolScripted):
    name = "no-tools"
    supports_tools = False


@pytest.fixture
def task_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(TASK) + "\n")
    return path


def episode(task_file, model, max_steps=8):
    track = NestedTrack(NestedOptions(data=str(task_file), mode="tools", max_steps=max_steps))
    try:
        (sample,) = track.load_samples()
        out = asyncio.run(track.interact(sample, track.build_input(sample), model, GenerationConfig()))
        return out, track.evaluate(sample, out).verdicts["strict"]
    finally:
        track.close()


def test_calls_then_answer(task_file):
    model = ToolScripted([("", [DIVIDE]), ("", [MULTIPLY]), ("The answer is 10.", None)])
    out, v = episode(task_file, model)
    rec = out.extra["tools"]
    assert rec["finished"] and rec["steps"] == 3 and rec["answer"] == "The answer is 10."
    assert rec["calls"] == [
        {"name": "divide", "label": "$var_1", "arguments": {"arg_0": 20, "arg_1": 100}},
        {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": 50, "arg_1": "$var_1.result$"}},
    ]
    assert all(v[k] == 1.0 for k in METRICS) and v["win"] is True and not v["parse_error"]
    assert model.tool_results(1) == ['$var_1 = {"result": 0.2}']
    assert model.tool_results(2)[-1] == '$var_2 = {"result": 10.0}'
    # every turn sends the catalog as tools, and the conversation grows in OpenAI shape
    assert all(i.tools and i.tools[0]["function"]["name"] == "divide" for i in model.inputs)
    roles = [m["role"] for m in model.inputs[-1].messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert model.inputs[1].messages[2]["tool_calls"][0]["id"] == "id_divide"
    assert model.inputs[1].messages[3]["tool_call_id"] == "id_divide"
    assert "$var_1.result$" in model.inputs[0].messages[0]["content"]  # the reference syntax is explained
    assert out.mode == "chat" and out.finish_reason == "finish"
    assert out.prompt_tokens == 30 and out.completion_tokens == 9
    assert "Call: divide" in out.text and out.text.rstrip().endswith("Answer: The answer is 10.")
    assert [m["role"] for m in rec["messages"]] == ["assistant", "tool", "assistant", "tool", "assistant"]


def test_parallel_calls_run_in_order(task_file):
    first, second = call("divide", {"arg_0": 20, "arg_1": 100}, "a"), call("multiply", {"arg_0": 50, "arg_1": "$var_1.result$"}, "b")
    model = ToolScripted([("", [first, second]), ("done", None)])
    out, v = episode(task_file, model)
    assert [c["label"] for c in out.extra["tools"]["calls"]] == ["$var_1", "$var_2"]
    assert model.tool_results(1) == ['$var_1 = {"result": 0.2}', '$var_2 = {"result": 10.0}']
    assert out.extra["tools"]["steps"] == 2 and v["win"] is True and v["full_sequence_accuracy"] == 1.0


def test_malformed_arguments_are_fed_back_and_counted(task_file):
    bad = [call("divide", '{"arg_0": 20, "arg_1":', "x"), call("divide", "[20, 100]", "y")]
    model = ToolScripted([("", bad), ("", [DIVIDE]), ("", [MULTIPLY]), ("done", None)])
    out, v = episode(task_file, model)
    rec = out.extra["tools"]
    assert rec["malformed_arguments"] == 2 and rec["parse_failures"] == 1 and rec["errors"] == 0
    first, second = model.tool_results(1)
    assert first.startswith("Error: the arguments are not valid JSON") and "Nothing was recorded" in first
    assert "must be a JSON object, got list" in second
    assert [c["label"] for c in rec["calls"]] == ["$var_1", "$var_2"]  # malformed calls use no label
    assert all(v[k] == 1.0 for k in METRICS) and v["win"] is True


def test_only_malformed_calls_are_a_parse_error(task_file):
    out, v = episode(task_file, ToolScripted([("", [call("divide", "{nope")])] * 3), max_steps=3)
    assert out.extra["tools"]["calls"] == [] and out.extra["tools"]["malformed_arguments"] == 3
    assert v["parse_error"] is True and v["win"] is False


def test_tool_errors_are_fed_back_not_recorded(task_file):
    zero = call("divide", {"arg_0": 20, "arg_1": 0}, "z")
    unknown = call("power", {"arg_0": 2}, "p")
    model = ToolScripted([("", [zero, unknown]), ("", [DIVIDE]), ("", [MULTIPLY]), ("done", None)])
    out, v = episode(task_file, model)
    errors = model.tool_results(1)
    assert "ZeroDivisionError" in errors[0] and "unknown function 'power'" in errors[1]
    assert out.extra["tools"]["errors"] == 2 and out.extra["tools"]["malformed_arguments"] == 0
    assert [c["label"] for c in out.extra["tools"]["calls"]] == ["$var_1", "$var_2"] and v["win"] is True


def test_step_limit(task_file):
    model = ToolScripted([("", [DIVIDE])] * 10)
    out, v = episode(task_file, model, max_steps=3)
    rec = out.extra["tools"]
    assert len(model.inputs) == 3 and rec["steps"] == 3 and not rec["finished"] and rec["answer"] is None
    assert out.finish_reason == "max_steps" and len(rec["calls"]) == 3
    assert v["full_sequence_accuracy"] == 0.0 and v["win"] is False and not v["parse_error"]


def test_stops_at_the_limit_but_scores_what_ran(task_file):
    out, v = episode(task_file, ToolScripted([("", [DIVIDE]), ("", [MULTIPLY])]), max_steps=2)
    assert out.finish_reason == "max_steps" and v["full_sequence_accuracy"] == 1.0 and v["win"] is True


def test_answer_without_calls_is_an_empty_prediction(task_file):
    out, v = episode(task_file, ToolScripted([("It is 10.", None)]))
    assert out.extra["tools"]["calls"] == [] and out.extra["tools"]["finished"]
    assert v["parse_error"] is False and v["f1_function"] == 0.0 and v["win"] is False


def test_backend_without_tools_is_refused(task_file):
    with pytest.raises(ConfigError, match="--mode tools: backend 'no-tools' in chat mode has no native tool calling") as err:
        episode(task_file, NoTools([]))
    assert "\n" not in str(err.value)


def test_gold_reference_is_the_next_tool_call(task_file):
    model = ToolScripted([("", [DIVIDE]), ("", [MULTIPLY]), ("done", None)])
    episode(task_file, model)
    refs = [json.loads(i.reference) for i in model.inputs]
    assert [r["tool_calls"][0]["name"] if r["tool_calls"] else None for r in refs] == ["divide", "multiply", None]
    assert json.loads(refs[1]["tool_calls"][0]["arguments"]) == {"arg_0": 50, "arg_1": "$var_1.result$"}
    assert refs[-1]["content"] == "$var_2$"


def test_tool_schemas():
    task = NestedTask.model_validate(
        {**TASK, "id": "t1", "tools": [*TOOLS, {"name": "Hotels.Search", "description": "Find hotels",
                                    "parameters": {"city": {"type": "string"}, "when": {"type": "Date (yyyy-mm-dd)"}},
                                    "output_parameters": {"hotel": {}}},
                           {"name": "Hotels_Search", "parameters": {"n": {"type": "list of float"}}}]}
    )
    schemas = tool_schemas(task)
    assert [s["function"]["name"] for s in schemas] == ["divide", "multiply", "Hotels_Search", "Hotels_Search_2"]
    assert sent_names(task)["Hotels.Search"] == "Hotels_Search"
    divide = schemas[0]["function"]
    assert divide["parameters"]["properties"]["arg_0"] == {"type": ["number", "string"]}
    assert divide["description"] == "arg_0 / arg_1. Output keys: result (the result)."
    hotel = schemas[2]["function"]["parameters"]["properties"]
    assert hotel["city"] == {"type": "string"}
    assert hotel["when"] == {"description": "(type: Date (yyyy-mm-dd))"}  # unknown type: free value, type named
    assert schemas[3]["function"]["parameters"]["properties"]["n"] == {"type": ["array", "string"]}
    assert parameter_schema({"type": "bool", "description": "flag"}) == {"type": ["boolean", "string"], "description": "flag"}


def test_sanitised_names_map_back(tmp_path):
    row = {"sample_id": "h1", "input": "Find a hotel in Paris", "tools": [{"name": "Hotels.Search", "parameters": {"city": {"type": "string"}}}],
           "output": [{"name": "Hotels.Search", "label": "$var_1", "arguments": {"city": "Paris"}}]}
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(row) + "\n")
    model = ToolScripted([("", [call("Hotels_Search", {"city": "Paris"})]), ("ok", None)])
    out, v = episode(path, model)
    assert out.extra["tools"]["calls"][0]["name"] == "Hotels.Search"
    assert "recorded" in model.tool_results(1)[0]  # not executable offline: recorded, not run
    assert v["full_sequence_accuracy"] == 1.0 and v["win"] is None


@pytest.mark.parametrize(
    "raw,ok",
    [('{"a": 1}', True), ("", True), (None, True), ("{", False), ("[1]", False), ('"x"', False), (3, False)],
)
def test_parse_arguments(raw, ok):
    args, problem = parse_arguments(raw)
    assert (problem is None) is ok and (args is not None) is ok


def test_options_are_validated():
    NestedTrack(NestedOptions(mode="tools"))
    with pytest.raises(ConfigError, match="choose direct, react or tools"):
        NestedTrack(NestedOptions(mode="nope"))
    with pytest.raises(ConfigError, match="--constrained"):
        NestedTrack(NestedOptions(mode="tools", constrained=True))
    with pytest.raises(ConfigError, match="max-steps"):
        NestedTrack(NestedOptions(mode="tools", max_steps=0))


def test_setup_and_fingerprint():
    fp = NestedTrack(NestedOptions(mode="tools", max_steps=5)).fingerprint()
    assert fp["setup"] == "tools-0shot" and fp["max_steps"] == 5 and fp["tools_prompt_hash"]


# -- with the NESTFUL sample data


@pytest.fixture(scope="module")
def nestful_dir():
    import os

    root = Path(os.environ.get("CALLBENCH_DATA_DIR", SHARED.parent)) / "nestful"
    if not (root / "v2-samples" / "toy_data_jan2025_schema.jsonl").is_file():
        pytest.skip(f"NESTFUL data not found under {root}")
    return root


def test_gold_plays_tools_perfectly_and_resumes(tmp_path, nestful_dir):
    toy = str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl")
    out = run("nested", "gold", out_dir=tmp_path, data=toy, mode="tools", max_steps=10)
    m = out.summary["metrics"]
    for key in METRICS:
        assert m[key] == 1.0, key
    assert m["parse_error_rate"] == 0.0 and m["win_n"] == 3 and m["win_rate"] == 1.0
    assert out.summary["setup"] == "tools-0shot" and "tools-0shot" in out.run_dir.name
    with sqlite3.connect(out.run_dir / "run.sqlite") as db:
        rows = db.execute("SELECT prompt, raw_output, extra FROM samples").fetchall()
    assert len(rows) == 4
    for prompt, raw, extra in rows:
        assert "Tools (JSON):" in prompt and "Call: " in raw and "Result: $var_1 " in raw
        rec = json.loads(extra)["tools"]
        assert rec["finished"] and rec["malformed_arguments"] == 0 and rec["messages"][0]["tool_calls"]
    again = run("nested", "gold", out_dir=tmp_path, data=toy, mode="tools", max_steps=10)
    assert again.resumed and again.generated == 0 and again.summary["metrics"] == m


def test_gold_tools_with_shots(tmp_path, nestful_dir):
    icl = str(nestful_dir / "v2-samples/icl_examples.json")
    track = NestedTrack(NestedOptions(data=icl, mode="tools", shots=2, icl_file=icl))
    inp = track.build_input(track.load_samples()[0])
    assert inp.messages[1]["content"].count("Example question:") == 2 and "$var_1 = " in inp.messages[1]["content"]
    out = run("nested", "gold", out_dir=tmp_path, data=icl, mode="tools", shots=1, icl_file=icl)
    assert out.summary["metrics"]["full_sequence_accuracy"] == 1.0


def test_python_api_refuses_a_backend_without_tools(tmp_path, nestful_dir):
    toy = nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": json.loads(line)["sample_id"], "output": "[]"}) + "\n" for line in toy.read_text().splitlines()))
    with pytest.raises(ConfigError, match="no native tool calling"):
        run("nested", f"replay:{preds}", out_dir=tmp_path / "r", data=str(toy), mode="tools")


# -- CLI, with the OpenAI backend against a local fake server


def _gold_responder(nestful_dir, malformed_first: set[str]):
    """Plays each task's gold calls as tool calls, one per turn, chosen from the conversation so
    far (so concurrent episodes do not interfere); the questions in ``malformed_first`` open with a
    call whose arguments are broken JSON."""
    rows = [json.loads(line) for line in (nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl").read_text().splitlines()]
    gold = {r["input"]: r["output"] for r in rows}

    def respond(body):
        messages = body["messages"]
        question = messages[1]["content"].rsplit("Question: ", 1)[1]
        calls = gold[question]
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if not results and question in malformed_first:
            return {"content": None, "tool_calls": [{"id": "bad", "type": "function",
                                                     "function": {"name": calls[0]["name"], "arguments": '{"arg_0": '}}]}
        done = sum(1 for r in results if not r.startswith("Error"))
        if done == len(calls):
            return {"content": "Done."}
        c = calls[done]
        return {"content": None, "tool_calls": [{"id": f"c{done}", "type": "function",
                                                 "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}]}

    return respond, rows


def test_cli_tools_mode_with_openai_server(tmp_path, nestful_dir):
    pytest.importorskip("aiohttp")
    from callbench.testing.fake_openai import FakeOpenAIServer

    toy = nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"
    respond, rows = _gold_responder(nestful_dir, {json.loads(toy.read_text().splitlines()[0])["input"]})
    with FakeOpenAIServer(respond) as server:
        res = CliRunner().invoke(app, ["run", "nested", "--model", f"openai:fake@{server.url}", "--mode", "tools",
                                       "--data", str(toy), "--out", str(tmp_path), "--no-progress"])
        assert res.exit_code == 0, res.output
        (run_dir,) = tmp_path.iterdir()
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["setup"] == "tools-0shot"
        m = summary["metrics"]
        assert all(m[k] == 1.0 for k in METRICS) and m["win_rate"] == 1.0 and m["parse_error_rate"] == 0.0
        bodies = [b for p, b in server.requests if p.endswith("/chat/completions")]
        assert all(b["tool_choice"] == "auto" and b["tools"] for b in bodies)
        assert len(bodies) == sum(len(r["output"]) + 1 for r in rows) + 1  # +1: the malformed turn
        assert any(m["role"] == "tool" and m["content"].startswith("Error: the arguments are not valid JSON")
                   for b in bodies for m in b["messages"])
        with sqlite3.connect(run_dir / "run.sqlite") as db:
            extras = [json.loads(e)["tools"] for (e,) in db.execute("SELECT extra FROM samples")]
        assert sorted(e["malformed_arguments"] for e in extras) == [0, 0, 0, 1]
        # the same command resumes: nothing is asked again
        n = len(server.requests)
        res = CliRunner().invoke(app, ["run", "nested", "--model", f"openai:fake@{server.url}", "--mode", "tools",
                                       "--data", str(toy), "--out", str(tmp_path), "--no-progress"])
        assert res.exit_code == 0, res.output
        assert len(server.requests) == n


def test_cli_tools_mode_needs_a_tool_backend(tmp_path, nestful_dir):
    pytest.importorskip("aiohttp")
    toy = str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl")
    res = CliRunner().invoke(app, ["run", "nested", "--model", "openai:m@http://127.0.0.1:9/v1", "--model-arg", "mode=completion",
                                   "--mode", "tools", "--data", toy, "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 2 and "no native tool calling" in res.output and "completion mode" in res.output
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # refused before a run directory exists


@pytest.mark.parametrize("flag", ["--mode", "--strategy"])
def test_cli_react_via_mode_and_deprecated_strategy(tmp_path, nestful_dir, flag):
    toy = str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl")
    res = CliRunner().invoke(app, ["run", "nested", "--model", "gold", flag, "react", "--max-steps", "10", "--data", toy,
                                   "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["setup"] == "react-0shot" and summary["metrics"]["full_sequence_accuracy"] == 1.0


def test_cli_gold_tools(tmp_path, nestful_dir):
    toy = str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl")
    res = CliRunner().invoke(app, ["run", "nested", "--model", "gold", "--mode", "tools", "--data", toy, "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    (run_dir,) = tmp_path.iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["metrics"]["win_rate"] == 1.0


def test_cli_mode_errors(tmp_path):
    runner = CliRunner()
    base = ["run", "nested", "--model", "gold", "--out", str(tmp_path), "--no-progress"]
    res = runner.invoke(app, [*base, "--mode", "chat"])
    assert res.exit_code == 2 and "--model-arg mode=chat" in res.output
    res = runner.invoke(app, [*base, "--mode", "tools", "--strategy", "react"])
    assert res.exit_code == 2 and "deprecated alias" in res.output
    res = runner.invoke(app, [*base, "--mode", "nope"])
    assert res.exit_code == 2 and "choose direct, react or tools" in res.output
    res = runner.invoke(app, ["run", "nested", "--help"])
    assert "tools" in res.output and "--strategy" not in res.output


def test_nameless_and_repeated_call_ids_are_echoed_so_a_strict_server_accepts_them(task_file):
    """A call without a name is counted as malformed and echoed as 'invalid_tool_call'; ids the
    server repeats (within a turn and across turns) get a suffix, and each tool result answers the
    id as echoed, so a strict OpenAI-compatible server takes every later request."""
    pytest.importorskip("aiohttp")
    from callbench.models.registry import load_model
    from callbench.testing.fake_openai import FakeOpenAIServer, tool_call, tool_message_problem

    nameless = {"id": "x", "type": "function", "function": {"name": None, "arguments": "{}"}}
    replies = [
        {"content": None, "tool_calls": [nameless, tool_call("divide", {"arg_0": 20, "arg_1": 100}, "x")]},
        {"content": None, "tool_calls": [tool_call("multiply", {"arg_0": 50, "arg_1": "$var_1.result$"}, "x")]},
        {"content": "10"},
    ]
    with FakeOpenAIServer(strict=True) as server:
        server.chat_replies = list(replies)
        out, v = episode(task_file, load_model(f"openai:fake@{server.url}"))
        bodies = [b for p, b in server.requests if p.endswith("/chat/completions")]
    rec = out.extra["tools"]
    assert len(bodies) == 3 and rec["finished"] and rec["answer"] == "10"
    assert all(tool_message_problem(b["messages"]) is None for b in bodies)
    assert rec["malformed_arguments"] == 1 and rec["parse_failures"] == 0
    assert [c["name"] for c in rec["calls"]] == ["divide", "multiply"] and v["full_sequence_accuracy"] == 1.0
    sent = bodies[-1]["messages"]
    echoed = [tc for m in sent if m["role"] == "assistant" for tc in m["tool_calls"]]
    assert [(tc["id"], tc["function"]["name"]) for tc in echoed] == [
        ("x", "invalid_tool_call"), ("x_2", "divide"), ("x_3", "multiply")
    ]
    results = [(m["tool_call_id"], m["content"]) for m in sent if m["role"] == "tool"]
    assert results[0] == ("x", "Error: the tool call has no function name. Nothing was recorded; call the tool again with a JSON object of arguments.")
    assert [cid for cid, _ in results] == ["x", "x_2", "x_3"] and results[1][1] == '$var_1 = {"result": 0.2}'
    # without the fix a strict server refuses: the check itself catches both faults
    assert "function.name" in tool_message_problem([{"role": "assistant", "tool_calls": [nameless]}])
    dup = [{"role": "assistant", "tool_calls": [tool_call("divide", {}, "x"), tool_call("divide", {}, "x")]}]
    assert "duplicate tool call id 'x'" in tool_message_problem(dup)
