"""ReAct strategy of the nested track: gold self-check, scripted backends, parsing, CLI."""

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.api import run
from callbench.cli import app
from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.tracks.nested.react import parse_step
from callbench.tracks.nested.track import NestedOptions, NestedTrack

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nestful"
METRICS = ("f1_function", "f1_parameter", "partial_sequence_accuracy", "full_sequence_accuracy")

TOOLS = [
    {"name": n, "description": d, "parameters": {"arg_0": {"type": "float"}, "arg_1": {"type": "float"}},
     "output_parameter": {"result": {"type": "float"}}}
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
CALL_1 = 'Action: {"name": "divide", "label": "$var_1", "arguments": {"arg_0": 20, "arg_1": 100}}'
CALL_2 = 'Action: {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": 50, "arg_1": "$var_1.result$"}}'
FINISH = 'Action: {"finish": "$var_2.result$"}'


class Scripted(ModelBackend):
    """Answers each turn with the next scripted reply and remembers what it was asked."""

    name = "scripted"
    modes = ("completion", "chat")

    def __init__(self, replies, mode="completion"):
        super().__init__(mode)
        self.replies = list(replies)
        self.inputs: list[ModelInput] = []

    async def generate(self, inp, config):
        self.inputs.append(inp)
        text = self.replies.pop(0) if self.replies else "Action: {}"
        return ModelOutput(text=text, mode=self.mode, prompt_tokens=10, completion_tokens=3)

    def asked(self, i: int) -> str:
        """The i-th request as text, in the backend's mode."""
        inp = self.inputs[i]
        return inp.prompt if self.mode == "completion" else "\n".join(m["content"] for m in inp.messages)


@pytest.fixture
def task_file(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(TASK) + "\n")
    return path


def episode(task_file, model, max_steps=8):
    track = NestedTrack(NestedOptions(data=str(task_file), mode="react", max_steps=max_steps))
    try:
        (sample,) = track.load_samples()
        out = asyncio.run(track.interact(sample, track.build_input(sample), model, GenerationConfig()))
        return out, track.evaluate(sample, out).verdicts["strict"]
    finally:
        track.close()


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_error_then_recovery(task_file, mode):
    bad = 'Thought: divide first.\nAction: {"name": "divide", "label": "$var_1", "arguments": {"arg_0": 20, "arg_1": 0}}'
    model = Scripted([bad, CALL_1, CALL_2, FINISH], mode)
    out, v = episode(task_file, model)
    react = out.extra["react"]
    assert react["finished"] and react["steps"] == 4 and react["errors"] == 1 and react["parse_failures"] == 0
    assert "ZeroDivisionError" in model.asked(1)  # the error is fed back
    assert "Observation: Error" in model.asked(1)
    assert "$var_1 = {\"result\": 0.2}" in model.asked(2)
    # the failed attempt is not part of the scored sequence: the corrected one scores fully and wins
    assert [c["name"] for c in react["calls"]] == ["divide", "multiply"]
    assert v["full_sequence_accuracy"] == 1.0 and v["win"] is True
    assert out.mode == mode and out.finish_reason == "finish"
    assert out.prompt_tokens == 40 and out.completion_tokens == 12
    assert out.text.count("Observation:") == 3 and out.text.rstrip().endswith(FINISH)
    if mode == "chat":
        roles = [m["role"] for m in model.inputs[-1].messages]
        assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_never_finishes_stops_at_max_steps(task_file, mode):
    model = Scripted([CALL_1, CALL_2, FINISH], mode)
    out, v = episode(task_file, model, max_steps=2)
    react = out.extra["react"]
    assert len(model.inputs) == 2 and react["steps"] == 2 and not react["finished"]
    assert out.finish_reason == "max_steps"
    # scored on what it executed: both calls ran, so the sequence and its answer are right
    assert v["full_sequence_accuracy"] == 1.0 and v["win"] is True


def test_never_finishes_wrong_sequence(task_file):
    model = Scripted([CALL_1] * 5)
    out, v = episode(task_file, model, max_steps=3)
    react = out.extra["react"]
    assert react["steps"] == 3 and len(react["calls"]) == 3 and not react["finished"]
    assert v["full_sequence_accuracy"] == 0.0 and v["win"] is False and not v["parse_error"]


@pytest.mark.parametrize("mode", ["completion", "chat"])
def test_garbage_counts_parse_failures(task_file, mode):
    garbage = ["I think we should divide twenty by a hundred.", 'Action: {"name": "divide", "argum', "[1, 2]"]
    model = Scripted([*garbage, CALL_1, CALL_2, FINISH], mode)
    out, v = episode(task_file, model)
    react = out.extra["react"]
    assert react["parse_failures"] == 3 and react["finished"] and react["steps"] == 6
    assert "Invalid action (no JSON object found)" in model.asked(1)
    assert "Action: {" in model.asked(1)  # the format is restated
    assert all(v[k] == 1.0 for k in METRICS) and v["win"] is True and not v["parse_error"]


def test_only_garbage_is_a_parse_error(task_file):
    out, v = episode(task_file, Scripted(["no idea"] * 3), max_steps=3)
    assert out.extra["react"]["parse_failures"] == 3 and out.extra["react"]["calls"] == []
    assert v["parse_error"] is True and v["win"] is False


def test_finish_on_unknown_label_is_refused(task_file):
    model = Scripted([CALL_1, 'Action: {"finish": "$var_7.result$"}', CALL_2, FINISH])
    out, v = episode(task_file, model)
    assert out.extra["react"]["errors"] == 1 and out.extra["react"]["finished"]
    assert "cannot finish" in model.asked(2)
    assert v["win"] is True


def test_finish_reference_picks_the_answer(task_file):
    # the finish names $var_1 (0.2), not the last call's 10.0: the answer is what the model finished on
    out, v = episode(task_file, Scripted([CALL_1, CALL_2, 'Finish: "$var_1.result$"']))
    assert out.extra["react"]["answer"] == "$var_1.result$"
    assert v["full_sequence_accuracy"] == 1.0 and v["win"] is False


def test_gold_reference_is_the_next_action(task_file):
    model = Scripted([CALL_1, CALL_2, FINISH])
    episode(task_file, model)
    refs = [json.loads(i.reference) for i in model.inputs]
    assert [r.get("name") for r in refs] == ["divide", "multiply", None]
    assert refs[-1] == {"finish": "$var_2$"}
    assert all(i.prompt.endswith("Action: ") for i in model.inputs)


@pytest.mark.parametrize(
    "text,kind",
    [
        (CALL_1, "call"),
        ('{"name": "divide", "arguments": {"arg_0": 1, "arg_1": 2}}', "call"),
        ('```json\n{"name": "divide", "arguments": {}}\n```', "call"),
        (CALL_1 + "\nObservation: {\"result\": 99}\nAction: " + CALL_2, "call"),
        (FINISH, "finish"),
        ("Finish: 42", "finish"),
        ('Finish: {"finish": "$var_1$"}', "finish"),
        ('Action: [{"name": "a"}, {"name": "b"}]', "invalid"),
        ('Action: {"label": "$var_1"}', "invalid"),
        ('Action: {"name": "a", "arguments": [1]}', "invalid"),
        ("", "invalid"),
    ],
)
def test_parse_step(text, kind):
    step = parse_step(text)
    assert step.kind == kind, step.reason
    assert "Observation" not in step.kept


def test_parse_step_values():
    assert parse_step("Finish: 42").answer == 42
    assert parse_step('Finish: {"finish": "$var_1$"}').answer == "$var_1$"
    call = parse_step('{"name": "divide", "arguments": {"arg_0": 1, "arg_1": 2}}').call
    assert call == {"name": "divide", "label": None, "arguments": {"arg_0": 1, "arg_1": 2}}


def test_unlabelled_calls_get_labels(task_file):
    c1 = '{"name": "divide", "arguments": {"arg_0": 20, "arg_1": 100}}'
    out, v = episode(task_file, Scripted([c1, CALL_2, FINISH]))
    assert out.extra["react"]["calls"][0]["label"] == "$var_1"
    assert v["full_sequence_accuracy"] == 1.0


def test_options_are_validated():
    with pytest.raises(ConfigError):
        NestedTrack(NestedOptions(mode="nope"))
    with pytest.raises(ConfigError):
        NestedTrack(NestedOptions(mode="react", max_steps=0))


@pytest.fixture(scope="module")
def nestful_dir():
    import os

    root = Path(os.environ.get("CALLBENCH_DATA_DIR", SHARED.parent)) / "nestful"
    if not (root / "v2-samples" / "toy_data_jan2025_schema.jsonl").is_file():
        pytest.skip(f"NESTFUL data not found under {root}")
    return root


@pytest.mark.parametrize("rel,win_n", [("v2-samples/toy_data_jan2025_schema.jsonl", 3), ("v2-samples/icl_examples.json", 2)])
def test_gold_plays_react_perfectly(tmp_path, nestful_dir, rel, win_n):
    # the longest sequence here has 9 calls: 9 call turns + 1 finish turn
    out = run("nested", "gold", out_dir=tmp_path, data=str(nestful_dir / rel), mode="react", max_steps=10)
    m = out.summary["metrics"]
    for key in METRICS:
        assert m[key] == 1.0, key
    assert m["parse_error_rate"] == 0.0
    assert m["win_n"] == win_n and m["win_rate"] == 1.0
    assert "react-0shot" in out.run_dir.name


def test_gold_react_with_shots(tmp_path, nestful_dir):
    out = run("nested", "gold", out_dir=tmp_path, data=str(nestful_dir / "v2-samples/icl_examples.json"),
              mode="react", shots=1, icl_file=str(nestful_dir / "v2-samples/icl_examples.json"))
    assert out.summary["metrics"]["full_sequence_accuracy"] == 1.0


def test_cli_react(tmp_path, nestful_dir):
    toy = nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"
    args = ["run", "nested", "--model", "gold", "--strategy", "react", "--max-steps", "10", "--data", str(toy),
            "--out", str(tmp_path), "--no-progress"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    (run_dir,) = tmp_path.iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["setup"] == "react-0shot"
    assert summary["metrics"]["full_sequence_accuracy"] == 1.0 and summary["metrics"]["win_rate"] == 1.0
    bad = CliRunner().invoke(app, [*args[:4], "--strategy", "nope", "--data", str(toy), "--out", str(tmp_path)])
    assert bad.exit_code != 0
