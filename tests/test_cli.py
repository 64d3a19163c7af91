"""The CLI end to end: the gold self-check on all 395 tasks, replay, report, and clean errors."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app

runner = CliRunner()


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def gold_run(tmp_path_factory, data_root):
    out = tmp_path_factory.mktemp("runs")
    res = _invoke("run", "webapi", "--model", "gold", "--out", out, "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return run_dir


def test_gold_scores_100_percent_on_all_395(gold_run):
    summary = json.loads((gold_run / "summary.json").read_text())
    assert summary["track"] == "webapi" and summary["model"] == "gold" and summary["setup"] == "full"
    assert summary["scoring"] == "strict" and summary["n"] == 395
    m = summary["metrics"]
    assert m["correct_implementations_t"] == 1.0
    assert m["illegal_arguments_t"] == 0.0 and m["total_errors"] == 0
    assert set(summary["by_api"]) == {"asana", "google_calendar_v3", "google_sheet_v4", "slack"}
    assert all(v["correct_implementations_t"] == 1.0 for v in summary["by_api"].values())


def test_gold_args_setup_compat_scoring(tmp_path, data_root):
    res = _invoke("run", "webapi", "--model", "gold", "--setup", "args", "--scoring", "compat", "--api", "google_sheet_v4",
                  "--out", tmp_path, "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    (run_dir,) = list(tmp_path.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n"] == 17 and summary["scoring"] == "compat" and summary["setup"] == "args"
    assert summary["metrics"]["correct_implementations_t"] == 1.0


def test_rerun_resumes_without_regenerating(gold_run, data_root):
    res = _invoke("run", "webapi", "--model", "gold", "--out", gold_run.parent, "--no-progress", "--data", data_root)
    assert res.exit_code == 0
    assert "395 of 395 samples already done" in " ".join(res.output.split())


def test_report_writes_html_and_compares(gold_run, tmp_path):
    html = tmp_path / "r.html"
    res = _invoke("report", gold_run, gold_run, "--html", html, "--scoring", "compat")
    assert res.exit_code == 0, res.output
    text = html.read_text()
    assert text.startswith("<!doctype html>") and "<svg" in text and "scoring=compat" in text
    assert "rel. gain" in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")


def test_replay_scores_outputs_produced_elsewhere(tmp_path, data_root):
    preds = tmp_path / "preds.jsonl"
    rows = [
        # correct continuation of 'axios.'
        {"id": "asana_0", "output": "get('https://app.asana.com/api/1.0/attachments', "
                                    "{params: {limit: 50, parent: '159874'}, headers: {Authorization: 'Bearer <token>'}});"},
        # chat answer with a wrong limit
        {"id": "asana_1", "mode": "chat", "output": "```js\nconst axios = require('axios');\n"
                                                    "axios.get('https://app.asana.com/api/1.0/nothing');\n```"},
        {"id": "asana_2", "code": "const x = ;"},
    ]
    preds.write_text("\n".join(json.dumps(r) for r in rows))
    res = _invoke("run", "webapi", "--model", f"replay:{preds}", "--ids", "asana_0,asana_1,asana_2",
                  "--out", tmp_path / "runs", "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    (run_dir,) = list((tmp_path / "runs").iterdir())
    m = json.loads((run_dir / "summary.json").read_text())["metrics"]
    assert m["n"] == 3
    assert m["correct_implementations_t"] == pytest.approx(1 / 3)
    assert m["illegal_urls_t"] == pytest.approx(1 / 3)  # /nothing matches no path
    assert m["total_errors"] == 1  # the syntax error never reaches a request


def test_replay_without_ids_runs_the_samples_its_file_answers(tmp_path, data_root, caplog):
    """Issue 31: a replay file with answers for some ids stopped at the first sample it lacked;
    without --ids the run now scores the samples the file answers and says how many."""
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"id": f"slack_{i}", "output": "get('x');"}) for i in (3, 5)))
    with caplog.at_level("WARNING", logger="callbench.runs"):
        res = _invoke("run", "webapi", "--model", f"replay:{preds}", "--out", tmp_path / "runs", "--no-progress",
                      "--data", data_root)
    assert res.exit_code == 0, res.output
    (run_dir,) = list((tmp_path / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["metrics"]["n"] == 2
    config = json.loads((run_dir / "config.json").read_text())
    assert sorted(config["selection"]["sample_ids"]) == ["slack_3", "slack_5"]
    assert any("answers 2 of the 395 selected samples" in r.getMessage() for r in caplog.records)
    # a file that answers none of the selection is one line
    preds.write_text(json.dumps({"id": "nope_1", "output": "x"}))
    res = _invoke("run", "webapi", "--model", f"replay:{preds}", "--out", tmp_path / "runs2", "--no-progress",
                  "--data", data_root)
    assert res.exit_code == 2 and "answers none of the 395 selected samples" in " ".join(res.output.split())


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--model", "nosuch"], "unknown backend 'nosuch'"),
        (["--model", "gold", "--api", "github"], "--api github: not in the data"),
        (["--model", "gold", "--ids", "asana_99999"], "unknown sample id"),
        (["--model", "replay:/nonexistent.jsonl"], "/nonexistent.jsonl: cannot read"),
        (["--model", "gold", "--model-arg", "novalue"], "expected KEY=VALUE"),
        (["--model", "gold", "--limit", "0"], "--limit must be >= 1"),
    ],
)
def test_bad_input_is_one_line_error(tmp_path, data_root, args, needle):
    res = runner.invoke(app, ["run", "webapi", *args, "--out", str(tmp_path), "--no-progress", "--data", str(data_root)])
    assert res.exit_code == 2
    assert needle in res.output.replace("\n", "")
    assert "Traceback" not in res.output


def test_missing_dataset_tells_how_to_fetch(tmp_path):
    res = runner.invoke(app, ["run", "webapi", "--model", "gold", "--data", str(tmp_path), "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "callbench data fetch wapiibench" in res.output.replace("\n", "")


def test_help_explains():
    res = _invoke("run", "webapi", "--help")
    assert res.exit_code == 0 and "--setup" in res.output and "resumes" in res.output


def test_hostile_code_ends_as_errors_and_the_run_goes_on(tmp_path, data_root):
    call = "\naxios.get('https://app.asana.com/api/1.0/attachments');"
    hostile = [c + call for c in (
        "while (true) {}",
        "require('fs').writeFileSync('/tmp/pwned', 'x');",
        "process.exit(1);",
        "let s = 'x'; while (true) { s = s + s; }",
        # strict, where the write throws (in sloppy code, as Node runs CommonJS, it fails silently)
        "(function () { 'use strict'; Object.prototype.polluted = 1; Array.prototype.push = null; globalThis.leak = 1; })();",
    )]
    ids = [f"asana_{i}" for i in range(len(hostile) + 1)]
    rows = [{"id": i, "code": c} for i, c in zip(ids, hostile, strict=False)]
    # the last sample is a normal, correct call: it must not see anything the others did
    rows.append({"id": ids[-1], "output": "get('https://app.asana.com/api/1.0/attachments/12345', "
                                          "{headers: {Authorization: 'Bearer <token>'}});"})
    preds = tmp_path / "hostile.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in rows))
    res = _invoke("run", "webapi", "--model", f"replay:{preds}", "--ids", ",".join(ids), "--concurrency", "1",
                  "--out", tmp_path / "runs", "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    assert not Path("/tmp/pwned").exists()
    (run_dir,) = list((tmp_path / "runs").iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    m = summary["metrics"]
    assert m["n"] == 6 and m["total_errors"] == 5
    assert m["timeouts"] + m["runtime_errors"] == 5
    import sqlite3

    con = sqlite3.connect(run_dir / "run.sqlite")
    status = dict(con.execute("SELECT id, status FROM samples"))
    assert status[ids[-1]] == "ok"


# ---- run nested --parser (how --scoring compat reads a direct answer) ----------------------------


def _nested_task(tmp_path):
    """One v1-style row and a replayed answer in prose, which only some published parsers read."""
    gold = [
        {"name": "search", "arguments": {"q": "NY"}, "label": "var1"},
        {"name": "book", "arguments": {"id": "$var1.id$"}, "label": "var2"},
    ]
    data = tmp_path / "t-data.json"
    data.write_text(json.dumps([{"input": "Find and book.", "output": gold}]))
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "t-0", "output": "Here:\n" + json.dumps(gold)}) + "\n")
    return data, preds


def test_nested_help_explains_parser():
    res = _invoke("run", "nested", "--help")
    text = " ".join(res.output.split())
    assert res.exit_code == 0 and "--parser" in text and "Hammer2.0-7b" in text and "lenient" in text


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--parser", "gpt-4"], "--parser gpt-4: choose lenient or one of NESTFUL's model names"),
        (["--parser", "Hammer2.0-7b", "--mode", "react"], "--parser Hammer2.0-7b reads a direct answer"),
    ],
)
def test_nested_bad_parser_is_one_line_error(tmp_path, args, needle):
    data, preds = _nested_task(tmp_path)
    args = ["run", "nested", "--model", f"replay:{preds}", "--data", str(data), *args, "--out", str(tmp_path)]
    res = runner.invoke(app, args)
    assert res.exit_code == 2 and "Traceback" not in res.output
    assert needle in " ".join(res.output.split())


def test_nested_parser_is_part_of_the_scoring_identity(tmp_path):
    data, preds = _nested_task(tmp_path)
    base = ["run", "nested", "--model", f"replay:{preds}", "--data", data, "--scoring", "compat"]
    base += ["--out", tmp_path / "runs", "--run-id", "r", "--no-progress"]
    config = tmp_path / "run.yaml"
    config.write_text("parser: Hammer2.0-7b\n")  # --config maps the option like the other run options
    res = _invoke(*base, "--config", config)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "runs" / "r" / "summary.json").read_text())
    assert summary["compat_parser"] == "Hammer2.0-7b" and summary["metrics"]["parse_error_rate"] == 1.0
    # another parser does not resume these verdicts silently ...
    res = runner.invoke(app, [str(a) for a in base] + ["--parser", "lenient"])
    refusal = " ".join(res.output.split())
    assert res.exit_code == 2 and "scoring.compat_parser Hammer2.0-7b -> lenient" in refusal
    # ... --rescore reads the stored answers again with it (the prose is read: correct)
    res = _invoke(*base, "--parser", "lenient", "--rescore")
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "runs" / "r" / "summary.json").read_text())
    assert summary["compat_parser"] == "lenient" and summary["metrics"]["full_sequence_accuracy"] == 1.0


def test_per_group_on_the_command_line(tmp_path, data_root):
    res = _invoke("run", "webapi", "--model", "gold", "--per-group", "2", "--out", tmp_path / "runs", "--no-progress",
                  "--data", data_root)
    assert res.exit_code == 0, res.output
    (run_dir,) = list((tmp_path / "runs").iterdir())
    config = json.loads((run_dir / "config.json").read_text())
    ids = config["selection"]["sample_ids"]
    assert config["selection"]["per_group"] == 2 and len(ids) == 8
    assert sorted({i.rsplit("_", 1)[0] for i in ids}) == ["asana", "google_calendar_v3", "google_sheet_v4", "slack"]
