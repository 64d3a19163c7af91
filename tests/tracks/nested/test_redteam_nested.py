"""Hostile model output against the nested track (issue 10 red-team findings).

Every sample goes through the track's real scoring path: a ``replay:`` run (parse, execute in the
sandbox, score in both modes, store) or, for multi-turn backends that replay cannot script, the
track's own ``interact`` + ``evaluate``. Each hostile output must end as a stored per-sample
verdict, never as an exception out of the run.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import callbench.tracks.nested as nested_pkg
from callbench.api import run
from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig, ModelBackend, ModelOutput
from callbench.runs.store import RunStore
from callbench.tracks.nested.track import NestedOptions, NestedTrack

BUILTIN = Path(nested_pkg.__file__).with_name("data") / "generated_v1.jsonl"
ROW = json.loads(BUILTIN.read_text().splitlines()[0])  # circumference(23), then log(1000, that)
SID = ROW["sample_id"]
GOLD = ROW["gold_answer"]
MODES = ("strict", "compat")


def replay(tmp_path: Path, text: str, *, name: str = "p", data: Path = BUILTIN, sid: str = SID, **options):
    """One replayed output for one sample (default: the first built-in one); the summary and the stored row."""
    preds = tmp_path / f"{name}.jsonl"
    preds.write_text(json.dumps({"id": sid, "output": text}) + "\n")
    out = run("nested", f"replay:{preds}", out_dir=tmp_path / f"runs-{name}", data=str(data), ids=[sid], **options)
    store = RunStore.open(out.run_dir)
    try:
        (row,) = list(store.rows())
    finally:
        store.close()
    return out, row


def assert_wrong(row):
    for mode in MODES:
        v = row["verdicts"][mode]
        assert v["win"] is False, (mode, v)
        assert v["full_sequence_accuracy"] == 0.0, (mode, v)


def call(name, arguments, label=None):
    return {"name": name, "label": label, "arguments": arguments}


# -- 1. unbounded or ill-typed JSON ----------------------------------------------------------------

DEEP = "[" * 600 + "]" * 600
HOSTILE_PARSE = {
    "name_null": ('[{"name": null, "label": "$var_1", "arguments": {"arg_0": 23}}]', 'call 1: "name" must be a non-empty string'),
    "name_int": ('[{"name": 1, "label": "$var_1", "arguments": {"arg_0": 23}}]', 'call 1: "name" must be a non-empty string'),
    "name_list": ('[{"name": ["circumference"], "arguments": {"arg_0": 23}}]', 'call 1: "name" must be a non-empty string'),
    "second_name_null": (
        '[{"name": "circumference", "label": "$var_1", "arguments": {"arg_0": 23}}, {"name": null, "arguments": {}}]',
        'call 2: "name" must be a non-empty string',
    ),
    "brackets": ("[" * 1000, "nested deeper than 32 levels"),
    "deep_arguments": ('[{"name": "circumference", "arguments": {"arg_0": ' + DEEP + "}}]", "nested deeper than 32 levels"),
    "long_number": ('[{"name": "circumference", "arguments": {"arg_0": ' + "9" * 5000 + "}}]", "a number of 5000 characters"),
    "long_float": ('[{"name": "circumference", "arguments": {"arg_0": 1.' + "5" * 5000 + "}}]", "a number of 5002 characters"),
    "too_long": ("x" * 300_000 + json.dumps(ROW["output"]), "300,"),
}


@pytest.mark.parametrize("case", list(HOSTILE_PARSE))
def test_hostile_direct_output_is_a_parse_error(tmp_path, case):
    text, message = HOSTILE_PARSE[case]
    out, row = replay(tmp_path, text)
    assert row["status"] == "parse_error"
    assert message in row["error"] and "\n" not in row["error"]
    assert_wrong(row)
    assert row["verdicts"]["strict"]["parse_error"] is True
    # compat follows the published scorer, which reads a null or numeric name as str(name) ("None",
    # "1") without a parsing error; every other case is one there too
    assert row["verdicts"]["compat"]["parse_error"] is (case not in COMPAT_READS_NAME)
    assert out.summary["metrics"]["parse_error_rate"] == 1.0


COMPAT_READS_NAME = {"name_null", "name_int", "second_name_null"}


@pytest.mark.parametrize(
    "calls",
    [
        [call("power", {"arg_0": 10, "arg_1": 400}, "$var_1")],  # an int past the float range
        [call("circumference", {"arg_0": 2}, "$var_" + "9" * 5000)],  # a label number past int()'s limit
        [call("circumference", {"arg_0": "$var_" + "9" * 5000 + ".result$"}, "$var_1")],
    ],
    ids=["huge_answer", "huge_label", "huge_reference"],
)
def test_hostile_values_are_scored_not_raised(tmp_path, calls):
    _, row = replay(tmp_path, json.dumps(calls))
    assert row["status"] == "ok"
    assert_wrong(row)


@pytest.mark.parametrize(
    "action,reason",
    [
        ("Action: " + "[" * 1000, "JSON nested deeper than 32 levels"),
        ('Action: {"name": "circumference", "arguments": {"arg_0": ' + "9" * 5000 + "}}", "a number of 5000 characters (at most 100)"),
        ('Action: {"name": "circumference", "arguments": {"arg_0": ' + DEEP + "}}", "JSON nested deeper than 32 levels"),
    ],
    ids=["brackets", "long_number", "deep_arguments"],
)
def test_hostile_react_turn_is_an_invalid_action(tmp_path, action, reason):
    out, row = replay(tmp_path, action, mode="react", max_steps=2)
    react = row["extra"]["react"]
    assert react["parse_failures"] == 2 and react["calls"] == []
    assert row["status"] == "parse_error"
    assert row["error"] == f"the model never wrote a parsable action (last: {reason})"
    assert_wrong(row)


@pytest.mark.parametrize(
    "text,message",
    [
        ("[" * 199_000, "JSON nested deeper than 32 levels"),
        ("[{" * 90_000, "gave up after decoding 10,000,000 characters"),
        ('["' * 90_000, "gave up after decoding 10,000,000 characters"),
        (("[" * 900 + "x") * 190, "gave up after decoding 10,000,000 characters"),
    ],
    ids=["open_brackets", "open_objects", "open_strings", "deep_chunks"],
)
def test_bracket_flood_is_searched_in_bounded_time(text, message, monkeypatch):
    """Just under the length bound, every bracket starts a candidate value: without a bound on the
    search's work, reading this takes tens of seconds (a decode error costs the text's length).

    The bound is checked on a measure of work that does not depend on the machine: the characters
    handed to the JSON decoder over the whole search (``deep_chunks`` without the bound: ~600
    million; with it: ~22 million). Its time is a benchmark's business, not a unit test's."""
    from callbench.tracks.nested.parsing import DEFAULT_LIMITS, read_calls

    decoded = {"chars": 0}
    raw_decode = json.JSONDecoder.raw_decode

    def counting(self, s, idx=0):
        decoded["chars"] += len(s) - idx
        return raw_decode(self, s, idx)

    monkeypatch.setattr(json.JSONDecoder, "raw_decode", counting)
    read = read_calls(text)
    assert read.calls is None and message in read.error
    assert decoded["chars"] <= 3 * DEFAULT_LIMITS.max_work


def test_parse_limits_are_configurable():
    from callbench.tracks.nested.parsing import ParseLimits, read_calls

    text = '[{"name": "f", "arguments": {"x": [[1]]}}]'
    assert read_calls(text).calls is not None
    tight = read_calls(text, ParseLimits(max_depth=3))
    assert tight.calls is None and "nested deeper than 3 levels" in tight.error
    assert "a number of 3 characters" in read_calls('[{"name": "f", "arguments": {"x": 123}}]', ParseLimits(max_number_chars=2)).error


# -- 2. the var_result pseudo-call cannot state the answer -----------------------------------------


def test_var_result_with_a_literal_answer_does_not_win_direct(tmp_path):
    text = json.dumps([call("var_result", {"result": GOLD})])
    _, row = replay(tmp_path, text)
    assert_wrong(row)
    assert row["execution"]["ok"] is False
    error = row["execution"]["calls"][0]["output"]["__error__"]
    assert "var_result" in error and "reference" in error


def test_var_result_with_an_embedded_literal_does_not_win(tmp_path):
    """A string answer written around a reference to an empty output is still a stated answer."""
    add = {"name": "add", "description": "arg_0 + arg_1", "parameters": {"arg_0": {"type": "str"}, "arg_1": {"type": "str"}},
           "output_parameters": {"result": {"type": "str"}}}
    task = {"sample_id": "s1", "input": "Join 'ab' and 'cd'.", "tools": [add], "gold_answer": "abcd",
            "output": [call("add", {"arg_0": "ab", "arg_1": "cd"}, "$var_1")]}
    data = tmp_path / "tasks.jsonl"
    data.write_text(json.dumps(task) + "\n")
    calls = [call("add", {"arg_0": "", "arg_1": ""}, "$var_1"), call("var_result", {"result": "abcd$var_1.result$"})]
    _, row = replay(tmp_path, json.dumps(calls), data=data, sid="s1")
    assert_wrong(row)
    assert "exactly one reference" in row["execution"]["calls"][1]["output"]["__error__"]


def test_var_result_with_a_literal_answer_does_not_win_react(tmp_path):
    action = "Action: " + json.dumps(call("var_result", {"result": GOLD}, "$var_1"))
    _, row = replay(tmp_path, action, mode="react", max_steps=3)
    assert row["extra"]["react"]["calls"] == [] and row["extra"]["react"]["errors"] == 3
    assert_wrong(row)


class ToolTurns(ModelBackend):
    """Native tool calls, scripted turn by turn (then a plain answer)."""

    name = "scripted-tools"
    modes = ("chat",)
    supports_tools = True

    def __init__(self, turns):
        super().__init__()
        self.turns = list(turns)

    async def generate(self, inp, config):
        calls = self.turns.pop(0) if self.turns else None
        return ModelOutput(text="" if calls else f"{GOLD}", mode="chat", tool_calls=calls)


def tools_episode(turns, **options):
    track = NestedTrack(NestedOptions(data=str(BUILTIN), mode="tools", **options))
    try:
        sample = next(s for s in track.load_samples() if s.id == SID)
        out = asyncio.run(track.interact(sample, track.build_input(sample), ToolTurns(turns), GenerationConfig()))
        return out, track.evaluate(sample, out)
    finally:
        track.close()


def test_var_result_with_a_literal_answer_does_not_win_tools():
    out, res = tools_episode([[{"id": "c1", "name": "var_result", "arguments": json.dumps({"result": GOLD})}]])
    assert out.extra["tools"]["calls"] == []
    for mode in MODES:
        assert res.verdicts[mode]["win"] is False


def test_var_result_gathering_earlier_outputs_still_works(tmp_path):
    calls = [*ROW["output"], call("var_result", {"result": f"{ROW['output'][-1]['label']}.result$"})]
    _, row = replay(tmp_path, json.dumps(calls))
    assert row["execution"]["ok"] is True
    for mode in MODES:
        assert row["verdicts"][mode]["win"] is True


# -- 3. reference expansion is bounded -------------------------------------------------------------


def _doubling_chain(kind: str, n: int = 40) -> list[dict]:
    """About 4 KB of calls whose values double at every step (2**40 times the seed at the end)."""
    calls = [call("add", {"arg_0": "ab", "arg_1": "cd"}, "$var_1")]
    for k in range(2, n + 1):
        prev = f"$var_{k - 1}"
        if kind == "whole":  # the tool concatenates two references to the previous output
            args = {"arg_0": f"{prev}.result$", "arg_1": f"{prev}.result$"}
            calls.append(call("add", args, f"$var_{k}"))
        elif kind == "embedded":  # the harness substitutes two references into one string
            calls.append(call("add", {"arg_0": f"{prev}.result$ {prev}.result$", "arg_1": ""}, f"$var_{k}"))
        else:  # var_result nests the previous output twice: a DAG whose JSON doubles
            calls.append(call("var_result", {"a": f"{prev}$", "b": f"{prev}$"}, f"$var_{k}"))
    return calls


@pytest.mark.parametrize("kind", ["whole", "embedded", "var_result"])
def test_doubling_reference_chain_is_bounded(tmp_path, kind):
    calls = _doubling_chain(kind)
    assert len(json.dumps(calls)) < 5000
    _, row = replay(tmp_path, json.dumps(calls))  # the bound: the error below, and the stored size
    assert row["status"] == "ok"
    assert row["execution"]["ok"] is False
    errors = [c["output"]["__error__"] for c in row["execution"]["calls"] if isinstance(c["output"], dict) and "__error__" in c["output"]]
    assert errors and errors[0].startswith("ValueTooLargeError:")
    assert len(json.dumps(row["execution"])) < 2_000_000
    assert_wrong(row)


# -- 4. per-sample time budget ---------------------------------------------------------------------

# each call spins until its CPU limit stops it (the limit is CPU time, so a sleeping tool would
# wait out the wall-clock backstop instead)
SLOW_TOOLS = "def circumference(arg_0):\n    while arg_0 == arg_0:\n        pass\n    return {\"result\": 0}\n"


@pytest.fixture
def slow_tools(tmp_path):
    d = tmp_path / "slow"
    d.mkdir()
    (d / "slow.py").write_text(SLOW_TOOLS)
    return str(d)


def test_many_slow_calls_hit_the_sample_budget(tmp_path, slow_tools):
    calls = [call("circumference", {"arg_0": k}, f"$var_{k}") for k in range(1, 41)]
    opts = {"functions": slow_tools, "call_timeout_s": 0.5, "sample_timeout_s": 2.0}
    out, row = replay(tmp_path, json.dumps(calls), **opts)
    # the budget, not the calls' own timeouts, ended the sample: most of the 40 calls never ran
    # (counted, not timed: 40 x 0.5 s without a budget; fewer still on a loaded machine)
    assert len(row["execution"]["calls"]) <= 2.0 / 0.5 + 1
    assert row["status"] == "timeout"
    assert "time budget of 2 s" in row["error"] and "sample_timeout_s" in row["error"]
    assert_wrong(row)
    # resuming the finished run keeps the stored verdict and re-executes nothing
    again, row2 = replay(tmp_path, json.dumps(calls), **opts)
    assert again.resumed and again.generated == 0 and row2["execution"] == row["execution"]
    assert row2["status"] == "timeout" and again.summary["metrics"] == out.summary["metrics"]


def test_react_loop_hits_the_sample_budget(tmp_path, slow_tools):
    action = "Action: " + json.dumps(call("circumference", {"arg_0": 23}))
    _, row = replay(tmp_path, action, mode="react", max_steps=40, functions=slow_tools, call_timeout_s=0.5, sample_timeout_s=2.0)
    react = row["extra"]["react"]  # counted, not timed: 40 steps x 0.5 s without the budget
    assert react["timed_out"] is True and react["steps"] <= 2.0 / 0.5 + 1
    assert row["status"] == "timeout" and "time budget" in row["error"]
    assert_wrong(row)


def test_sample_budget_is_validated():
    with pytest.raises(ConfigError, match="--sample-timeout"):
        NestedTrack(NestedOptions(data=str(BUILTIN), sample_timeout_s=0))
    assert NestedOptions().sample_timeout_s >= 60  # a sensible default: long ReAct episodes fit


# -- 5. lone surrogates ----------------------------------------------------------------------------

SURROGATE_CALLS = (
    '[{"name": "circumference", "label": "$var_1\\udc00", "arguments": {"arg_0": "\\udc00", "x": {"y": ["\\ud800"]}}},'
    ' {"name": "\\udc00", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$"}}]'
)


def test_surrogates_in_direct_output(tmp_path):
    out, row = replay(tmp_path, SURROGATE_CALLS)
    assert row["status"] == "ok"
    row["parsed"].encode("utf-8")
    assert json.loads(row["parsed"])[0]["arguments"]["arg_0"] == "\udc00"  # escaped, not lost
    assert_wrong(row)
    assert out.summary["metrics"]["n"] == 1


def test_surrogates_in_react_turns(tmp_path):
    action = 'Action: {"name": "circumference", "label": "$var_1\\udc00", "arguments": {"arg_0": 23}}'
    _, row = replay(tmp_path, action, mode="react", max_steps=2)
    row["raw_output"].encode("utf-8")
    assert "Observation: $var_1\\udc00 = " in row["raw_output"]  # the observation names the label, escaped
    assert_wrong(row)


def test_surrogates_in_native_tool_calls():
    out, res = tools_episode(
        [[{"id": "c1", "name": "circumference", "arguments": '{"arg_0": "\\udc00"}'}],
         [{"id": "c2", "name": "circ\udc00", "arguments": {"arg_0": 1}}]]
    )
    out.text.encode("utf-8")  # the transcript; extra keeps the values the model sent (stored as JSON)
    assert "circ\\udc00" in out.text
    json.loads(json.dumps(out.extra))
    assert res.parsed is None or res.parsed.encode("utf-8")
    for mode in MODES:
        assert res.verdicts[mode]["win"] is False


def test_raw_surrogates_in_model_text_never_reach_stored_fields():
    track = NestedTrack(NestedOptions(data=str(BUILTIN)))
    try:
        sample = next(s for s in track.load_samples() if s.id == SID)
        text = '[{"name": "circumference", "label": "$var_1", "arguments": {"arg_0": "\udc00 23"}}]'
        res = track.evaluate(sample, ModelOutput(text=text, mode="completion"))
    finally:
        track.close()
    res.parsed.encode("utf-8")
    json.dumps(res.execution, ensure_ascii=False).encode("utf-8")
    assert res.verdicts["strict"]["win"] is False


# -- tools mode: hostile argument strings ------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments,problem",
    [
        ('{"arg_0": ' + "9" * 5000 + "}", "a number of 5000 characters"),
        ('{"arg_0": ' + DEEP + "}", "nested deeper than 32 levels"),
    ],
    ids=["long_number", "deep"],
)
def test_hostile_tool_call_arguments_are_refused(arguments, problem):
    out, res = tools_episode([[{"id": "c1", "name": "circumference", "arguments": arguments}]])
    record = out.extra["tools"]
    assert record["malformed_arguments"] == 1 and record["calls"] == []
    assert problem in record["messages"][1]["content"]
    for mode in MODES:
        assert res.verdicts[mode]["win"] is False
