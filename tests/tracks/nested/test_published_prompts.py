"""NESTFUL's published per-model prompt templates (``--prompt published``): the exact text, the
family rule, overrides and errors, the run identity, a gold run and the answer formats they ask for."""

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.api import make_track, run
from callbench.cli import app
from callbench.errors import ConfigError
from callbench.tracks.nested.parsing import parse_calls, read_calls

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nestful"


@pytest.fixture(scope="module")
def nestful_dir():
    root = Path(os.environ.get("CALLBENCH_DATA_DIR", SHARED.parent)) / "nestful"
    if not (root / "v2-samples" / "PROMPTS.json").is_file():
        pytest.skip(f"NESTFUL v2 samples with PROMPTS.json not found under {root}")
    return root


@pytest.fixture(scope="module")
def published(nestful_dir):
    """PROMPTS.json, read directly (not through callbench)."""
    return json.loads((nestful_dir / "v2-samples" / "PROMPTS.json").read_text(encoding="utf-8"))


def _track(nestful_dir, **kw):
    kw.setdefault("data", str(nestful_dir / "v2-samples" / "toy_data_jan2025_schema.jsonl"))
    kw.setdefault("prompts_file", str(nestful_dir / "v2-samples" / "PROMPTS.json"))
    kw.setdefault("icl_file", str(nestful_dir / "v2-samples" / "icl_examples.json"))
    return make_track("nested", **kw)


def _expected(template: str, key: str, row: dict, examples: list[dict]) -> str:
    """The template filled as NESTFUL's evaluation code fills it (written out here independently)."""
    icl = ""
    for i, ex in enumerate(examples, 1):
        if key in ("xLAM-7b-fc-r", "xLAM-1b-fc-r"):
            out = '{"tool_calls": ' + json.dumps(ex["output"]) + " }"
        elif key == "Hermes-2-Pro-Mistral-7B":
            out = " ".join("<tool_call> " + json.dumps(c) + " </tool_call>" for c in ex["output"])
        else:
            out = json.dumps(ex["output"])
        icl += "\n#Example-" + str(i) + "\nInput: " + ex["input"] + "\nOutput: " + out + "\n"
    tools = json.dumps(json.dumps(row["tools"]))
    try:
        return template.format(FUNCTION_STR=tools, ICL_EXAMPLES=icl, QUERY=row["input"])
    except KeyError:
        return template.replace("{FUNCTION_STR}", tools).replace("{ICL_EXAMPLES}", icl).replace("{QUERY}", row["input"])


@pytest.mark.parametrize("shots", [0, 3])
def test_prompt_is_the_published_template_filled(nestful_dir, published, shots):
    rows = [json.loads(line) for line in (nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl").read_text().splitlines() if line.strip()]
    examples = json.loads((nestful_dir / "v2-samples/icl_examples.json").read_text())[:shots]
    for key, template in published.items():
        track = _track(nestful_dir, prompt_template=key, shots=shots)
        samples = track.load_samples()
        assert track.published.key == key and track.published.text == template
        for sample, row in zip(samples, rows, strict=True):
            inp = track.build_input(sample)
            assert inp.prompt == _expected(template, key, row, examples), key
            assert inp.messages == [{"role": "user", "content": inp.prompt}]
            assert row["input"] in inp.prompt and "{QUERY}" not in inp.prompt


def test_braces_follow_the_upstream_fill(nestful_dir, published):
    """str.format where the template allows it ({{ reads {), plain replacement where it does not."""
    t = _track(nestful_dir, prompt_template="xLAM-7b-fc-r")
    p = t.build_input(t.load_samples()[0]).prompt
    assert '\'{"tool_calls": [{"name": "func_name1"' in p and "{{" not in p
    t = _track(nestful_dir, prompt_template="Hammer2.0-7b")
    p = t.build_input(t.load_samples()[0]).prompt
    assert '{"name": "func_name1", "arguments": {"argument1": "value1"' in p
    assert p.startswith(published["Hammer2.0-7b"].split("{FUNCTION_STR}")[0])


@pytest.mark.parametrize(
    "spec,key",
    [
        ("llamacpp:/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "LLaMa-3.1"),
        ("hf:/models/llama-3-1-405b-instruct/", "llama-3-1-405b-instruct"),
        ("openai:meta-llama/Meta-Llama-3-70B-Instruct@http://127.0.0.1:8000/v1", "llama-3-70b-instruct"),
        ("openai:ibm-granite/granite-20b-functioncalling@http://h/v1", "Granite-20B-FunctionCalling"),
        ("hf:/models/granite-3.1-8b-instruct", "Granite-20B-FunctionCalling"),
        ("openai:mistralai/Mixtral-8x22B-Instruct-v0.1@http://h/v1", "Mixtral-8x22B-Instruct-v0.1"),
        ("openai:mistralai/Mixtral-8x7B-Instruct-v0.1@http://h/v1", "mixtral_8x7b_instruct_v01"),
        ("llamacpp:/m/Mistral-7B-Instruct-v0.3.Q4_K_M.gguf", "Mistral-7B-Instruct-v0.3"),
        ("hf:/m/NousResearch/Hermes-2-Pro-Mistral-7B", "Hermes-2-Pro-Mistral-7B"),
        ("hf:/m/Salesforce/xLAM-1b-fc-r", "xLAM-1b-fc-r"),
        ("openai:Salesforce/xLAM-8x22b-r@http://h/v1", "xLAM-8x22b-r"),
        ("llamacpp:/m/XLAM-7B-R.gguf", "xLAM-7b-fc-r"),
        ("hf:/m/MadeAgents/Hammer2.0-7b", "Hammer2.0-7b"),
        ("hf:/m/Team-ACE/ToolACE-2-Llama-3.1-8B", "ToolAce-8b"),
        ("openai:gorilla-llm/gorilla-openfunctions-v2@http://h/v1", "gorilla-openfunctions-v2"),
        ("openai:CohereForAI/c4ai-command-r-v01@http://h/v1", "c4ai-command-r-v01"),
    ],
)
def test_auto_picks_the_template_by_family(nestful_dir, spec, key):
    track = _track(nestful_dir, prompt="published", model_spec=spec)
    assert track.published.key == key


def test_override_names_a_family_or_a_template(nestful_dir):
    granite = "openai:ibm-granite/granite-20b-functioncalling@http://h/v1"
    assert _track(nestful_dir, prompt_template="LLAMA", model_spec=granite).published.key == "LLaMa-3.1"
    assert _track(nestful_dir, prompt_template="llama-3-1-405B-instruct").published.key == "llama-3-1-405b-instruct"
    assert _track(nestful_dir, prompt_template="command-r").published.key == "c4ai-command-r-v01"
    assert _track(nestful_dir, prompt="published", prompt_template="auto", model_spec=granite).published.key == (
        "Granite-20B-FunctionCalling"
    )
    # callbench's own prompt, named or by default
    assert _track(nestful_dir).published is None
    assert _track(nestful_dir, prompt="callbench", prompt_template="callbench-v1").published is None


def test_instruct_models_get_their_chat_template_only_for_callbenchs_prompt(nestful_dir, monkeypatch):
    """An in-process backend left in auto mode follows the track's chat_template: callbench's
    prompt goes through an instruct model's template; a published template already holds its
    model's markup and stays a completion prompt."""
    assert _track(nestful_dir).chat_template is True
    assert _track(nestful_dir, prompt_template="LLAMA").chat_template is False

    class Auto:
        name, mode, steerable = "fake", "completion", True

        def prefer_chat_template(self):
            self.mode = "chat"

    import callbench.api as api

    for kw, mode in (({}, "chat"), ({"prompt_template": "LLAMA"}, "completion")):
        backend = Auto()
        monkeypatch.setattr(api, "load_model", lambda model, b=backend, **opts: b)
        api.load_backend("fake:x", {}, concurrency=1, track=_track(nestful_dir, **kw), constrained=False)
        assert backend.mode == mode, kw


@pytest.mark.parametrize(
    "kw,message",
    [
        ({"prompt": "published", "model_spec": "openai:gpt-4o@http://h/v1"}, "no NESTFUL template for model 'gpt-4o'"),
        ({"prompt": "published", "model_spec": "llamacpp:/home/llama/qwen2.5-7b.gguf"}, "model 'qwen2.5-7b.gguf'"),
        ({"prompt": "published", "model_spec": "gold"}, "model 'gold' names no model family"),
        ({"prompt_template": "phi"}, "--prompt-template phi: not a NESTFUL family or template"),
        ({"prompt": "callbench", "prompt_template": "llama"}, "--prompt callbench contradicts"),
        ({"prompt": "published", "prompt_template": "callbench-v1"}, "--prompt published contradicts"),
        ({"prompt_template": "callbench-v9"}, "callbench's prompt versions: callbench-v1"),
        ({"prompt": "nestful"}, "--prompt nestful: choose callbench or published"),
        ({"prompt_template": "llama", "mode": "react"}, "--mode direct only"),
        ({"prompt_template": "llama", "constrained": True}, "--constrained works with callbench's prompt only"),
    ],
)
def test_unknown_family_and_contradictions_are_one_line_errors(nestful_dir, kw, message):
    with pytest.raises(ConfigError) as exc:
        _track(nestful_dir, **kw)
    assert message in str(exc.value) and "\n" not in str(exc.value)
    if "no NESTFUL template" in message:
        assert "families: command-r, gorilla, granite, hammer, hermes, llama, mistral, mixtral, toolace, xlam" in str(exc.value)


def test_missing_prompts_file_says_how_to_get_it(tmp_path, monkeypatch):
    from callbench.errors import DataError
    from callbench.tracks.nested.prompting_published import select_template

    monkeypatch.setenv("CALLBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match="PROMPTS.json not found .*callbench data fetch nestful"):
        select_template("llama", None)


def test_identity_holds_the_template_and_its_digest(nestful_dir, published, tmp_path):
    import hashlib

    own = _track(nestful_dir).fingerprint()
    assert _track(nestful_dir, prompt_template="callbench-v1").fingerprint() == own
    assert "prompt_template" not in own
    llama = _track(nestful_dir, prompt_template="llama").fingerprint()
    granite = _track(nestful_dir, prompt_template="granite").fingerprint()
    assert llama["prompt_template"] == "LLaMa-3.1" and granite["prompt_template"] == "Granite-20B-FunctionCalling"
    assert llama["prompt_template_sha256"] == hashlib.sha256(published["LLaMa-3.1"].encode()).hexdigest()
    assert len({json.dumps(fp, sort_keys=True) for fp in (own, llama, granite)}) == 3
    assert llama["prompts_sha256"] != granite["prompts_sha256"] != own["prompts_sha256"]
    # the same name with other text (an edited PROMPTS.json) is another run
    edited = dict(published, **{"LLaMa-3.1": published["LLaMa-3.1"].replace("expert", "Expert")})
    (tmp_path / "PROMPTS.json").write_text(json.dumps(edited))
    other = _track(nestful_dir, prompt_template="llama", prompts_file=str(tmp_path / "PROMPTS.json")).fingerprint()
    assert other["prompt_template"] == "LLaMa-3.1" and other["prompt_hash"] != llama["prompt_hash"]


def test_gold_run_with_published_prompt_scores_one(nestful_dir, tmp_path):
    data = nestful_dir / "v2-samples" / "toy_data_jan2025_schema.jsonl"
    res = CliRunner().invoke(
        app,
        ["run", "nested", "--model", "gold", "--prompt", "published", "--prompt-template", "xlam", "--shots", "3",
         "--data", str(data), "--icl", str(nestful_dir / "v2-samples/icl_examples.json"),
         "--prompts-file", str(nestful_dir / "v2-samples/PROMPTS.json"), "--out", str(tmp_path), "--no-progress"],
    )
    assert res.exit_code == 0, res.output
    assert "prompt: NESTFUL template 'xLAM-7b-fc-r'" in res.output.replace("\n", " ")
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    m = summary["metrics"]
    for key in ("f1_function", "f1_parameter", "partial_sequence_accuracy", "full_sequence_accuracy", "win_rate"):
        assert m[key] == 1.0, key
    assert m["parse_error_rate"] == 0.0
    ident = json.loads((run_dir / "config.json").read_text())["identity"]
    assert ident["prompt_template"] == "xLAM-7b-fc-r"
    # another template is another run directory
    out = run("nested", "gold", out_dir=tmp_path, data=str(data), prompt_template="granite",
              prompts_file=str(nestful_dir / "v2-samples/PROMPTS.json"))
    assert out.run_dir != run_dir and out.summary["metrics"]["full_sequence_accuracy"] == 1.0


def test_unknown_family_on_the_cli_is_one_line(nestful_dir, tmp_path):
    res = CliRunner().invoke(
        app,
        ["run", "nested", "--model", "openai:gpt-4o@http://127.0.0.1:9/v1", "--prompt", "published",
         "--data", str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"),
         "--prompts-file", str(nestful_dir / "v2-samples/PROMPTS.json"), "--out", str(tmp_path), "--no-progress"],
    )
    assert res.exit_code != 0 and "no NESTFUL template for model 'gpt-4o'" in res.output.replace("\n", " ")
    assert not list(tmp_path.iterdir())


# -- the answer formats the templates ask for -------------------------------------------------------

A = {"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": 2}}
B = {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$", "arg_1": 3}}


@pytest.mark.parametrize(
    "template,text",
    [
        ("Granite-20B-FunctionCalling", f"<function_call> {json.dumps(A)} <function_call> {json.dumps(B)}"),
        ("LLaMa-3.1", f"{json.dumps(A)}, {json.dumps(B)}'"),  # brackets left out, the template's stray quote
        ("llama-3-70b-instruct", json.dumps([A, B])),
        ("Mistral-7B-Instruct-v0.3", json.dumps([A, B]).replace("arg_", "arg\\_").replace("var_", "var\\_")),
        ("xLAM-7b-fc-r", json.dumps({"tool_calls": [A, B]})),
        ("xLAM-8x7b-r", "```\n" + json.dumps({"thought": "", "tool_calls": [A, B]}) + "\n```"),
        ("Hermes-2-Pro-Mistral-7B", f"<tool_call>\n{json.dumps(A)}\n</tool_call>\n<tool_call>\n{json.dumps(B)}\n</tool_call>"),
        ("Hammer2.0-7b", "```\n" + json.dumps([A, B], indent=4) + "\n```"),
        (
            "c4ai-command-r-v01",
            "Action: ```json\n"
            + json.dumps([{"tool_name": c["name"], "parameters": c["arguments"], "label": c["label"]} for c in (A, B)])
            + "\n```",
        ),
        ("ToolAce-8b", '[add(arg_0=1, arg_1=2), multiply(arg_0="$var_1.result$", arg_1=3)]'),
        ("gorilla-openfunctions-v2", '<<function>>add(1, 2)<<function>>multiply("$var_1.result$", 3)'),
    ],
)
def test_answers_in_the_templates_formats_are_read(template, text):
    from callbench.tracks.nested.prompting_published import PYTHONIC_TEMPLATES

    read = read_calls(text, pythonic=template in PYTHONIC_TEMPLATES)
    assert read.error is None, read.error
    assert [(c["name"], c["arguments"]) for c in read.calls] == [(c["name"], c["arguments"]) for c in (A, B)]
    assert [c.get("label") for c in read.calls] in (["$var_1", "$var_2"], [None, None])


def test_python_calls_are_read_only_for_templates_that_ask_for_them():
    assert parse_calls("[add(arg_0=1, arg_1=2)]") is None
    assert parse_calls("[add(arg_0=1, arg_1=x)]", pythonic=True) is None  # values must be literals
    assert parse_calls("nothing to call here", pythonic=True) is None


def test_replayed_answers_in_a_templates_format_score(nestful_dir, tmp_path):
    """ToolACE answers with Python calls: with its template they are read and scored."""
    rows = [json.loads(x) for x in (nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl").read_text().splitlines() if x.strip()]

    def py(calls):
        return "[" + ", ".join(f"{c['name']}({', '.join(f'{k}={v!r}' for k, v in c['arguments'].items())})" for c in calls) + "]"

    math = [r for r in rows if all(c["name"] in ("add", "subtract", "multiply", "divide") for c in r["output"])]
    assert math
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": r["sample_id"], "output": py(r["output"])}) + "\n" for r in math))
    out = run("nested", f"replay:{preds}", out_dir=tmp_path / "runs", data=str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"),
              prompt_template="toolace", prompts_file=str(nestful_dir / "v2-samples/PROMPTS.json"),
              ids=[r["sample_id"] for r in math])
    m = out.summary["metrics"]
    assert m["parse_error_rate"] == 0.0 and m["full_sequence_accuracy"] == 1.0


@pytest.mark.parametrize(
    "text",
    ["x" * 199_000, "a." * 99_000, "f(" * 90_000, ("f(" * 150 + ")" * 150 + "\n") * 300, "g(" + "1+" * 90_000 + "1)"],
    ids=["name_run", "dotted_run", "open_calls", "deep_lines", "long_expr"],
)
def test_python_call_reading_is_bounded(text):
    """Python call syntax is read within the output bound, in linear scans (a name run without "(" is
    not rescanned from each of its characters) and with the parser's nesting errors caught. The
    time is a figure of benchmarks/bounded_work_timings.py (nested_read_python/...), not a unit test's verdict."""
    read = read_calls(text, pythonic=True)
    assert read.calls is None and read.error


@pytest.mark.parametrize(
    "model,template,parser",
    [
        ("openai:Hammer2.0-7b@http://127.0.0.1:9/v1", "Hammer2.0-7b", "Hammer2.0-7b"),
        ("llamacpp:/m/Meta-Llama-3.1-8B-Instruct.gguf", "LLaMa-3.1", "Llama-3.1-8B-Instruct"),
        ("openai:Salesforce/xLAM-1b-fc-r@http://127.0.0.1:9/v1", "xLAM-1b-fc-r", "xLAM-1b-fc-r"),
        ("hf:/m/ibm-granite/granite-20b-functioncalling", "Granite-20B-FunctionCalling", "Granite-20B-FunctionCalling"),
        ("openai:gorilla-openfunctions-v2@http://127.0.0.1:9/v1", "gorilla-openfunctions-v2", "lenient"),
    ],
)
def test_published_prompt_defaults_to_its_models_parser(nestful_dir, model, template, parser):
    track = _track(nestful_dir, prompt="published", model_spec=model)
    assert track.published.key == template and track.parser == parser
    assert track.scoring_fingerprint()["compat_parser"] == parser
    # an explicit --parser wins; without --prompt published the default is lenient
    explicit = _track(nestful_dir, prompt="published", model_spec=model, parser="ToolAce-8b")
    assert explicit.parser == "ToolAce-8b"
    assert _track(nestful_dir, model_spec=model).parser == "lenient"
