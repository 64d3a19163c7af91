"""``callbench export`` / ``show`` / ``list`` and ``callbench.load_run`` on real runs of every track.

The exported verdict columns are checked against what reports aggregate: the share of
``strict.correct`` true is the run's correct-implementation rate, and so on, on runs that have
wrong and non-executable answers (replayed from edited gold answers), not only perfect ones.
"""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import callbench
from callbench.api import run
from callbench.cli import app
from callbench.errors import ConfigError
from callbench.results import RUN_COLUMNS, export_rows
from callbench.runs.store import RunStore
from callbench.tracks.base import Sample, get_track

runner = CliRunner()


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def _rows(run_dir: Path) -> list[dict]:
    store = RunStore.open(run_dir)
    try:
        return list(store.rows())
    finally:
        store.close()


def _replay(gold_dir: Path, edits: dict[int, callable], path: Path) -> Path:
    """A replay file of the gold run's answers, the i-th edited by ``edits[i]``."""
    with path.open("w") as fh:
        for i, r in enumerate(_rows(gold_dir)):
            text = edits.get(i, lambda t: t)(r["raw_output"])
            fh.write(json.dumps({"id": r["id"], "output": text}) + "\n")
    return path


def _aggregate(run_dir: Path, mode: str) -> dict:
    """The metrics a report computes for ``run_dir`` in ``mode`` (the track's own aggregate)."""
    store = RunStore.open(run_dir)
    try:
        results = store.results()
        samples = [Sample(id=r["id"], group=r["grp"], payload=None) for r in store.rows()]
        track = get_track(store.config()["identity"]["track"])
        return track.aggregate(samples, [results[s.id] for s in samples], mode)["metrics"]
    finally:
        store.close()


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())


def _truthy(v) -> bool:
    return v in (True, "True", "true")


def _share(rows, col, where=None) -> float:
    picked = [r for r in rows if where is None or where(r)]
    return sum(_truthy(r[col]) for r in picked) / len(picked)


def _mean(rows, col) -> float:
    return sum(float(r[col]) for r in rows) / len(rows)


@pytest.fixture(scope="module")
def webapi_runs(tmp_path_factory, data_root):
    """A gold run and a replay of it with a wrong URL, a wrong method and non-code."""
    base = tmp_path_factory.mktemp("webapi")
    gold = run("webapi", "gold", out_dir=base / "gold", limit=6, data=str(data_root)).run_dir
    edits = {
        1: lambda t: t.replace("/api/1.0/", "/api/1.0/nonexistent/", 1),
        2: lambda t: "this is not code(",
        3: lambda t: "delete" + t[t.index("("):],
    }
    replay_file = _replay(gold, edits, base / "preds.jsonl")
    wrong = run("webapi", f"replay:{replay_file}", out_dir=base / "replay", limit=6, data=str(data_root)).run_dir
    return gold, wrong


@pytest.fixture(scope="module")
def nested_runs(tmp_path_factory):
    """A gold nested run (built-in tasks) and a replay with a changed argument, a dropped call and
    an answer that is not JSON."""
    base = tmp_path_factory.mktemp("nested")
    gold = run("nested", "gold", out_dir=base / "gold", limit=5).run_dir

    def change_arg(text: str) -> str:
        calls = json.loads(text)
        first = calls[0]["arguments"]
        key = next(iter(first))
        first[key] = 7 if first[key] != 7 else 8
        return json.dumps(calls)

    edits = {1: change_arg, 2: lambda t: json.dumps(json.loads(t)[:-1]), 3: lambda t: "no calls here"}
    wrong = run("nested", f"replay:{_replay(gold, edits, base / 'preds.jsonl')}", out_dir=base / "replay", limit=5).run_dir
    return gold, wrong


@pytest.fixture(scope="module")
def stateful_run(tmp_path_factory):
    pytest.importorskip("requests")
    base = tmp_path_factory.mktemp("stateful")
    return run("stateful", "gold", out_dir=base, limit=2, scenarios=("voice",)).run_dir


# -- export ----------------------------------------------------------------------------------------


def test_export_csv_webapi_rates_equal_the_report(webapi_runs):
    _, wrong = webapi_runs
    res = _invoke("export", wrong, "--format", "csv")
    assert res.exit_code == 0, res.output
    path = wrong / "export.csv"
    assert "6 rows from 1 run(s)" in res.output and path.is_file()
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == _summary(wrong)["n"] == 6
    assert list(rows[0])[: len(RUN_COLUMNS)] == list(RUN_COLUMNS)
    assert {r["run"] for r in rows} == {wrong.name} and {r["track"] for r in rows} == {"webapi"}
    assert {r["scoring"] for r in rows} == {"strict"} and {r["model"] for r in rows} == {_summary(wrong)["model"]}
    for mode in ("strict", "compat"):
        m = _aggregate(wrong, mode)
        if mode == "strict":
            assert m == _summary(wrong)["metrics"]
        assert 0 < m["correct_implementations_t"] < 1  # a run with mistakes, not a trivial 100 %
        executable = lambda r, mode=mode: _truthy(r[f"{mode}.executable"])  # noqa: E731
        assert _share(rows, f"{mode}.correct") == pytest.approx(m["correct_implementations_t"])
        assert _share(rows, f"{mode}.executable") == pytest.approx(m["executable_implementations_t"])
        assert _share(rows, f"{mode}.url_correct", executable) == pytest.approx(m["correct_urls_e"])
        assert _share(rows, f"{mode}.method_correct", executable) == pytest.approx(m["correct_methods_e"])
        assert _share(rows, f"{mode}.endpoint_correct", executable) == pytest.approx(m["correct_endpoints_e"])
        assert _share(rows, f"{mode}.correct_except_credentials") == pytest.approx(m["correct_except_credentials_t"])
        illegal = sum(int(r[f"{mode}.arguments_illegal"]) for r in rows)
        assert illegal == m["argument_counts"]["illegal_e"]
        assert sum(r[f"{mode}.error"] != "" for r in rows) == m["total_errors"]
        # every stored verdict field is there, lists as JSON
        assert all(isinstance(json.loads(r[f"{mode}.arguments"]), list) for r in rows)
        assert {r[f"{mode}.sample"] for r in rows} >= {"correct", "nonexecutable"}


def test_export_jsonl_nested_rates_equal_the_report(nested_runs):
    _, wrong = nested_runs
    out = wrong.parent / "nested.jsonl"
    res = _invoke("export", wrong, "--format", "jsonl", "--out", out)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == _summary(wrong)["n"] == 5
    for mode in ("strict", "compat"):
        m = _aggregate(wrong, mode)
        assert 0 < m["full_sequence_accuracy"] < 1
        assert _mean(rows, f"{mode}.full_sequence_accuracy") == pytest.approx(m["full_sequence_accuracy"])
        assert _mean(rows, f"{mode}.partial_sequence_accuracy") == pytest.approx(m["partial_sequence_accuracy"])
        assert _share(rows, f"{mode}.parse_error") == pytest.approx(m["parse_error_rate"])
        wins = [r for r in rows if r[f"{mode}.win"] is not None]
        assert sum(r[f"{mode}.win"] for r in wins) / len(wins) == pytest.approx(m["win_rate"])
    counts = [json.loads(r["strict._function_counts"]) for r in rows]  # lists are JSON text
    tp, fp, fn = (sum(c[i] for c in counts) for i in range(3))
    assert 2 * tp / (2 * tp + fp + fn) == pytest.approx(_aggregate(wrong, "strict")["f1_function"])
    assert all(r["execution"] is None or isinstance(json.loads(r["execution"]), dict) for r in rows)


def test_export_stateful(stateful_run):
    res = _invoke("export", stateful_run, "--format", "jsonl", "--out", "-")
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in res.stdout.splitlines()]
    assert len(rows) == 2 and {r["track"] for r in rows} == {"stateful"}
    s = _summary(stateful_run)
    assert _share(rows, "strict.passed") == s["metrics"]["pass@1"] == 1.0
    assert all(r["strict.n_cases"] == r["strict.cases_passed"] >= 2 for r in rows)
    assert all(isinstance(r["strict.complexity.n_calls"], int) for r in rows)


def test_export_several_runs_into_one_file(webapi_runs, nested_runs):
    gold, wrong = webapi_runs
    res = _invoke("export", gold, wrong, nested_runs[0])
    assert res.exit_code == 0, res.output
    with (gold / "export.csv").open(newline="", encoding="utf-8") as fh:  # next to the first run
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6 + 6 + 5
    assert [r["run"] for r in rows] == [gold.name] * 6 + [wrong.name] * 6 + [nested_runs[0].name] * 5
    assert {r["track"] for r in rows} == {"webapi", "nested"}
    # a nested row has no webapi columns' values, and the other way round
    assert all(r["strict.url"] == "" for r in rows if r["track"] == "nested")
    assert all(r["strict.full_sequence_accuracy"] == "" for r in rows if r["track"] == "webapi")
    # raw outputs with newlines and quotes survive the CSV round trip
    stored = {(gold.name, r["id"]): r["raw_output"] for r in _rows(gold)}
    assert all(r["raw_output"] == stored[(gold.name, r["sample_id"])] for r in rows if r["run"] == gold.name)


def test_export_csv_to_stdout(webapi_runs):
    res = _invoke("export", webapi_runs[0], "--out", "-")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) == 6 and all(r["strict.correct"] == "True" for r in rows)


def test_parquet_round_trip(webapi_runs, nested_runs, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    dirs = [*webapi_runs, nested_runs[1]]
    out = tmp_path / "all.parquet"
    res = _invoke("export", *dirs, "--format", "parquet", "--out", out)
    assert res.exit_code == 0, res.output
    table = pq.read_table(out)
    rows, columns = export_rows(dirs)
    assert table.column_names == columns
    assert table.to_pylist() == [{c: r.get(c) for c in columns} for r in rows]
    assert str(table.schema.field("strict.correct").type) == "bool"
    assert str(table.schema.field("prompt_tokens").type) == "int64"


def test_parquet_without_pyarrow_is_one_line_with_the_install_hint(webapi_runs, monkeypatch, tmp_path, one_line_error):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    res = _invoke("export", webapi_runs[0], "--format", "parquet", "--out", tmp_path / "x.parquet")
    one_line_error(res, "pip install 'callbench[parquet]'")
    assert not (tmp_path / "x.parquet").exists()


def test_export_errors_are_one_line(tmp_path, webapi_runs, one_line_error):
    one_line_error(_invoke("export", tmp_path / "missing"), "not a callbench run directory")
    one_line_error(_invoke("export", webapi_runs[0], "--format", "parquet", "--out", "-"), "stdout")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "run.sqlite").write_text("not sqlite")
    one_line_error(_invoke("export", tmp_path / "run"), "config.json")


# -- load_run --------------------------------------------------------------------------------------


def test_load_run_rows(webapi_runs, monkeypatch):
    gold, _ = webapi_runs
    rows = callbench.load_run(gold, as_frame=False)
    assert isinstance(rows, list) and len(rows) == 6
    assert set(rows[0]) >= {*RUN_COLUMNS, "strict.correct", "strict.url_correct", "compat.correct"}
    assert all(r["strict.correct"] is True and r["run"] == gold.name for r in rows)
    monkeypatch.setitem(sys.modules, "pandas", None)  # without pandas: the list, documented
    assert callbench.load_run(gold) == rows
    with pytest.raises(ConfigError, match="needs pandas"):
        callbench.load_run(gold, as_frame=True)


def test_load_run_dataframe(webapi_runs):
    pd = pytest.importorskip("pandas")
    df = callbench.load_run(webapi_runs[1])
    assert isinstance(df, pd.DataFrame) and len(df) == 6
    assert df["strict.correct"].mean() == pytest.approx(_summary(webapi_runs[1])["metrics"]["correct_implementations_t"])


# -- show ------------------------------------------------------------------------------------------


def test_show_webapi_prints_expected_and_generated_request(webapi_runs, data_root):
    from callbench.tracks.webapi.dataset import load_tasks

    _, wrong = webapi_runs
    row = next(r for r in _rows(wrong) if "/nonexistent/" in r["raw_output"])  # the URL made wrong
    expected = {t.id: t for t in load_tasks(data_root / "wapiibench/data/synthetic/all/test_data_final.json")}[row["id"]]
    res = _invoke("show", wrong, row["id"])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert expected.config.url in out
    assert row["execution"]["url"] in out and "/nonexistent/" in out
    assert "url  (differs)" in out
    for section in ("Prompt", "Raw output", "Parsed code", "Execution: captured request", "Verdicts", "Error"):
        assert section in out
    assert "strict: sample" in out and "compat: sample" in out


def test_show_prints_the_chat_template_as_sent(webapi_runs, tmp_path):
    """An in-process chat backend records the rendered template: show prints that, not the
    completion-form prompt the track also built, and keeps the long texts out of Extra."""
    import shutil
    import sqlite3

    gold, _ = webapi_runs
    run_dir = tmp_path / gold.name
    shutil.copytree(gold, run_dir)
    sid = _rows(run_dir)[0]["id"]
    sent = "<|im_start|>user\nWrite the call.<|im_end|>\n<|im_start|>assistant\n```javascript\naxios."
    extra = {"prompt_format": "chat-prefill", "prompt_sent": sent, "prompt_decoded": "user\nWrite the call.\nassistant\n"}
    con = sqlite3.connect(run_dir / "run.sqlite")
    with con:
        con.execute("UPDATE samples SET extra = ? WHERE id = ?", (json.dumps(extra), sid))
    con.close()
    res = _invoke("show", run_dir, sid)
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "Prompt as sent (chat template rendered, answer prefilled)" in out and "<|im_start|>assistant" in out
    assert "\nPrompt ─" not in out and "Prompt ─" not in out.replace("Prompt as sent", "")
    assert "prompt_decoded" not in out and '"prompt_format": "chat-prefill"' in out


def test_show_side_by_side_on_a_wide_terminal(webapi_runs, monkeypatch):
    from rich.console import Console

    import callbench.cli.results as cr

    wide = Console(file=io.StringIO(), width=200)
    monkeypatch.setattr(cr, "out_console", wide)
    gold, _ = webapi_runs
    sid = _rows(gold)[0]["id"]
    res = _invoke("show", gold, sid)
    assert res.exit_code == 0, res.output
    text = wide.file.getvalue()
    header = next(line for line in text.splitlines() if "expected" in line and "generated" in line)
    assert header.index("expected") < header.index("generated")  # one table, two columns


def test_show_finds_the_reference_by_its_digest(tmp_path, data_root):
    """The run records a digest of its task file and, in its config, where it read it (issue 31:
    a run made with --data FILE could not find its data again): show picks the file that matches
    (--data first, then the recorded file, then the defaults), and says so when none does."""
    default = data_root / "wapiibench/data/synthetic/all/test_data_final.json"
    tasks = json.loads(default.read_text())
    tasks[0]["task"] = "EDITED " + tasks[0]["task"]
    copy = tmp_path / "tasks.json"
    copy.write_text(json.dumps(tasks))
    run_dir = run("webapi", "gold", out_dir=tmp_path / "runs", limit=1, data=str(data_root), tasks_file=str(copy)).run_dir
    assert json.loads((run_dir / "config.json").read_text())["data_file"] == str(copy.resolve())
    sid = _rows(run_dir)[0]["id"]
    res = _invoke("show", run_dir, sid)  # found where the run read it
    assert res.exit_code == 0, res.output
    assert f"reference: {copy.resolve()}" in res.stdout and "EDITED" in res.stdout
    moved = tmp_path / "moved.json"
    copy.rename(moved)
    res = _invoke("show", run_dir, sid)  # the data dir's file is not the one the run used
    assert res.exit_code == 0, res.output
    assert "differs from the data the run used" in res.stdout and "pass --data" in res.stdout
    moved.rename(copy)
    res = _invoke("show", run_dir, sid, "--data", copy)
    assert res.exit_code == 0, res.output
    assert f"reference: {copy}" in res.stdout and "EDITED" in res.stdout and "differs from" not in res.stdout
    copy.write_text(json.dumps(tasks[1:]))  # the file changed after the run, the sample gone
    res = _invoke("show", run_dir, sid, "--data", copy)
    assert res.exit_code == 0, res.output
    assert f"reference unavailable: no task '{sid}' in {copy}" in res.stdout
    assert "Raw output" in res.stdout  # what the run stored is still shown


def test_show_unknown_id_names_close_ids(webapi_runs, one_line_error):
    gold, _ = webapi_runs
    ids = [r["id"] for r in _rows(gold)]
    line = one_line_error(_invoke("show", gold, ids[0] + "9"), "no sample", "closest:")
    assert ids[0] in line
    line = one_line_error(_invoke("show", gold, "zzzz"), "no sample 'zzzz'")
    assert any(i in line for i in ids)


def test_show_nested_gold_vs_predicted(nested_runs):
    _, wrong = nested_runs
    dropped = _rows(nested_runs[0])[2]["id"]  # the replay dropped this sample's last call
    row = next(r for r in _rows(wrong) if r["id"] == dropped)
    res = _invoke("show", wrong, row["id"])
    assert res.exit_code == 0, res.output
    assert "Gold vs predicted calls" in res.stdout and "Question" in res.stdout
    assert "(differs)" in res.stdout and "full_sequence_accuracy: 0" in res.stdout


def test_show_stateful_program_and_cases(stateful_run):
    row = _rows(stateful_run)[0]
    res = _invoke("show", stateful_run, row["id"])
    assert res.exit_code == 0, res.output
    for text in ("Parsed program", "Reference program", "Test cases", "base", "pass", "passed: true"):
        assert text in res.stdout, text


# -- list ------------------------------------------------------------------------------------------


def test_list_counts_what_is_present(data_root):
    res = _invoke("list", "--data", data_root)
    assert res.exit_code == 0, res.output
    out = res.stdout
    for track in ("webapi", "nested", "stateful"):
        assert f"\n  {track} " in out
    assert "wapiibench    webapi    395 tasks" in out
    assert "generated_v1  nested    400 tasks (built in)" in out
    assert "120 tasks (built in: session 40, tensor 40, voice 40)" in out
    for name in ("session", "tensor", "voice", "gold", "replay", "openai", "llamacpp", "hf"):
        assert f"\n  {name} " in out


def test_list_without_data(tmp_path):
    res = _invoke("list", "--data", tmp_path)
    assert res.exit_code == 0, res.output
    assert f"not fetched: callbench data fetch wapiibench --data {tmp_path}" in res.stdout
    assert "not fetched: callbench data fetch nestful" in res.stdout


def test_list_loads_no_specs_scenarios_or_pandas():
    code = (
        "import sys\nfrom typer.testing import CliRunner\nimport callbench\nfrom callbench.cli import app\n"
        "assert 'pandas' not in sys.modules\n"
        "r = CliRunner().invoke(app, ['list'])\nassert r.exit_code == 0, r.output\n"
        "heavy = [m for m in sys.modules if m.startswith(('callbench.specs', 'callbench.tracks.webapi', "
        "'callbench.tracks.nested', 'callbench.tracks.stateful.scenarios.', 'callbench.tracks.stateful.services', "
        "'callbench.services', 'callbench.statemodel', 'pandas', 'pyarrow'))]\nassert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_list_constants_match_the_tracks():
    from callbench import results
    from callbench.tracks.nested.dataset import FETCHED_V2_FILES, builtin_tasks
    from callbench.tracks.stateful.scenarios import available_scenarios, get_scenario
    from callbench.tracks.stateful.track import builtin_bench
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

    assert results.WAPIIBENCH_FILE == DEFAULT_DATA_FILE
    assert results.NESTFUL_FILES == tuple(f"nestful/{f}" for f in FETCHED_V2_FILES)
    assert results.builtin_nested_file() == builtin_tasks()
    assert results.builtin_stateful_dir() == builtin_bench()
    assert results.scenario_descriptions() == {n: get_scenario(n).description for n in available_scenarios()}


def test_show_prints_latency_as_people_read_it(webapi_runs, tmp_path):
    """Issue 31: `show` printed `latency: 20.13476997400005 s`."""
    import shutil
    import sqlite3

    from callbench.cli.results import _seconds

    assert _seconds(20.13476997400005) == "20.1 s" and _seconds(0.05234) == "0.0523 s" and _seconds(None) == "-"
    gold, _ = webapi_runs
    run_dir = tmp_path / gold.name
    shutil.copytree(gold, run_dir)
    sid = _rows(run_dir)[0]["id"]
    con = sqlite3.connect(run_dir / "run.sqlite")
    with con:
        con.execute("UPDATE samples SET latency_s = ? WHERE id = ?", (20.13476997400005, sid))
    con.close()
    res = _invoke("show", run_dir, sid)
    assert res.exit_code == 0, res.output
    assert "latency: 20.1 s" in res.stdout and "20.134" not in res.stdout


def test_a_nested_run_made_with_data_finds_its_data_again(tmp_path):
    """Issue 31: a nested run made with --data FILE could not find its data again (report: gold
    calls not shown; show looked in the built-in set)."""
    from callbench.report.data import task_data
    from callbench.tracks.nested.dataset import builtin_tasks

    data = tmp_path / "my_nested.jsonl"
    lines = builtin_tasks().read_text().splitlines()[:3]
    data.write_text("\n".join(lines) + "\n")
    run_dir = run("nested", "gold", out_dir=tmp_path / "runs", data=str(data)).run_dir
    config = json.loads((run_dir / "config.json").read_text())
    assert config["data_file"] == str(data.resolve())
    tasks, note = task_data("nested", config["identity"], "gold calls", config["data_file"])
    assert tasks is not None and note is None and len(tasks) == 3
    sid = _rows(run_dir)[0]["id"]
    res = _invoke("show", run_dir, sid)
    assert res.exit_code == 0, res.output
    assert f"reference: {data.resolve()}" in res.stdout and "differs from" not in res.stdout
