"""The nested track end to end: gold self-check, replayed predictions, parsing, prompts, CLI."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.api import run
from callbench.cli import app
from callbench.tracks.nested.parsing import parse_calls

SHARED = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "nestful"


@pytest.fixture(scope="module")
def nestful_dir():
    import os

    root = Path(os.environ.get("CALLBENCH_DATA_DIR", SHARED.parent)) / "nestful"
    if not (root / "v2-samples" / "toy_data_jan2025_schema.jsonl").is_file():
        pytest.skip(f"NESTFUL data not found under {root}")
    return root


@pytest.mark.parametrize(
    "rel,win_n",
    [
        ("v2-samples/toy_data_jan2025_schema.jsonl", 3),
        ("v2-samples/icl_examples.json", 2),
        ("data_v1/executable/executable-data.json", 0),
        ("data_v1/non-executable/non-executable-sgd-data.json", 0),
    ],
)
def test_gold_scores_one_on_every_metric(tmp_path, nestful_dir, rel, win_n):
    out = run("nested", "gold", out_dir=tmp_path, data=str(nestful_dir / rel))
    m = out.summary["metrics"]
    for key in ("f1_function", "f1_parameter", "partial_sequence_accuracy", "full_sequence_accuracy"):
        assert m[key] == 1.0, key
    assert m["parse_error_rate"] == 0.0
    # rows whose tools run offline (built-in MathQA tools) are executed: every gold answer wins
    assert m["win_n"] == win_n
    assert m["win_rate"] == (1.0 if win_n else None)
    assert set(out.summary["by_domain"]) and set(out.summary["by_length"])


def test_replay_wrong_and_unparsable_answers(tmp_path, nestful_dir):
    rows = [json.loads(line) for line in (nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl").read_text().splitlines()]
    first = rows[0]
    wrong = json.loads(json.dumps(first["output"]))
    wrong[0]["arguments"]["arg_0"] = 21  # divide(21, 100): a wrong literal changes the final answer
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in [
        {"id": first["sample_id"], "output": "Sure!\n```json\n" + json.dumps(wrong) + "\n```"},
        {"id": rows[1]["sample_id"], "output": "I cannot answer that."},
        {"id": rows[2]["sample_id"], "output": json.dumps(rows[2]["output"])},
        {"id": rows[3]["sample_id"], "output": "<tool_call>" + json.dumps(rows[3]["output"]) + "</tool_call>"},
    ]))
    out = run("nested", f"replay:{preds}", out_dir=tmp_path / "runs", data=str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"))
    m = out.summary["metrics"]
    assert m["n"] == 4
    assert m["parse_error_rate"] == 0.25
    # executable math rows: 0 (wrong answer), 2 and 3 (right) -> 2 of 3 win
    assert m["win_rate"] == pytest.approx(2 / 3)
    assert m["full_sequence_accuracy"] == pytest.approx(2 / 4)


@pytest.mark.parametrize(
    "text,n",
    [
        ('[{"name": "add", "label": "$var_1", "arguments": {"arg_0": 1, "arg_1": 2}}]', 1),
        ('Here you go: {"name": "add", "arguments": {"arg_0": 1}} done', 1),
        ('```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]\n```', 2),
        ('[{"name": "a", "arguments": {}}, {"name": "b", "argum', 1),  # truncated: complete calls kept
        ('<tool_call>{"name": "a", "arguments": {}}</tool_call>\n<tool_call>{"name": "b", "arguments": {}}</tool_call>', 2),
        ('[TOOL_CALLS] [{"name": "a", "arguments": {}}]', 1),
        ('[{"type": "function", "function": {"name": "a", "arguments": "{\\"x\\": 1}"}}]', 1),
    ],
)
def test_parse_calls_robustly(text, n):
    calls = parse_calls(text)
    assert calls is not None and len(calls) == n


@pytest.mark.parametrize("text", ["no json here", "[1, 2, 3]", '{"answer": 5}', ""])
def test_parse_errors(text):
    assert parse_calls(text) is None


def test_shots_put_examples_in_the_prompt(nestful_dir):
    from callbench.api import make_track

    track = make_track("nested", data=str(nestful_dir / "v2-samples/toy_data_jan2025_schema.jsonl"), shots=3,
                       icl_file=str(nestful_dir / "v2-samples/icl_examples.json"))
    samples = track.load_samples()
    inp = track.build_input(samples[0])
    assert inp.prompt.count("Example question:") == 3
    assert inp.messages[1]["content"].count("Example answer:") == 3
    assert json.loads(inp.reference)[0]["label"].startswith("$var")


def test_cli_run_nested_and_report(tmp_path, nestful_dir):
    runner = CliRunner()
    res = runner.invoke(app, ["run", "nested", "--model", "gold", "--data", str(nestful_dir / "v2-samples/icl_examples.json"),
                              "--out", str(tmp_path), "--no-progress"])
    assert res.exit_code == 0, res.output
    (run_dir,) = list(tmp_path.iterdir())
    res = runner.invoke(app, ["report", str(run_dir)])
    assert res.exit_code == 0 and "Win rate" in res.output
    assert (run_dir / "report.html").read_text().startswith("<!doctype html>")
    res = runner.invoke(app, ["run", "nested", "--model", "gold", "--data", str(tmp_path / "nope.jsonl"), "--out", str(tmp_path)])
    assert res.exit_code == 2 and "no such file" in res.output


def test_cli_generate_then_run_gold(tmp_path):
    runner = CliRunner()
    out = tmp_path / "tasks.jsonl"
    res = runner.invoke(app, ["generate", "nested", "--n", "12", "--seed", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert len(out.read_text().splitlines()) == 12
    res = runner.invoke(app, ["run", "nested", "--model", "gold", "--data", str(out), "--out", str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == 0, res.output
    (run_dir,) = list((tmp_path / "r").iterdir())
    m = json.loads((run_dir / "summary.json").read_text())["metrics"]
    assert m["win_rate"] == 1.0 and m["full_sequence_accuracy"] == 1.0 and m["n"] == 12


def test_constrained_run_records_cd_stats(tmp_path):
    pytest.importorskip("llguidance")
    from callbench.api import make_track

    track = make_track("nested", constrained=True)
    samples = track.load_samples()[:2]
    inp = track.build_input(samples[0])
    assert inp.constraint is not None and "start" in inp.constraint.shared.lark
    with pytest.raises(Exception, match="strategy direct"):
        make_track("nested", constrained=True, mode="react")
