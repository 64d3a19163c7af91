"""Red-team cases for the run store: text that UTF-8 cannot encode, and run directories that were
damaged on disk. A run must finish and resume with such text, and every command that reads a
damaged run directory must answer with one line naming the file and a fix, never a traceback."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.errors import CallbenchError
from callbench.models.base import ModelInput, ModelOutput
from callbench.runs.store import RunStore, write_json_atomic
from callbench.tracks.base import SampleResult

runner = CliRunner()
LONE = "\ud800"  # what `throw new Error('\uD800')` or `raise ValueError('\ud800')` leaves in a message


def _all_strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _all_strings(k)
            yield from _all_strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _all_strings(v)


def _utf8_clean(obj) -> None:
    for s in _all_strings(obj):
        s.encode("utf-8")  # raises UnicodeEncodeError on a surrogate


# -- 1. surrogates ---------------------------------------------------------------------------------


def test_encodable_escapes_lone_surrogates_and_joins_pairs():
    from callbench.runs.text import encodable

    assert encodable("a\ud800b") == "a\\ud800b"
    assert encodable("\udc00") == "\\udc00"
    assert encodable("\ud83d\ude00") == "\U0001f600"  # a pair written as two code points is one character
    assert encodable({"k\udfff": ["\ud800", 1, None]}) == {"k\\udfff": ["\\ud800", 1, None]}
    assert encodable("plain ü") == "plain ü"


def test_store_writes_and_reads_back_surrogates_everywhere(tmp_path):
    config = {"identity": {"track": "webapi", "model": f"replay:{LONE}.jsonl"}, "selection": {"ids": ["\udc00"]}}
    store, resumed = RunStore.create_or_resume(tmp_path / "r", config)
    assert not resumed
    inp = ModelInput(sample_id=f"id{LONE}", prompt=f"p{LONE}", messages=[{"role": "user", "content": f"m{LONE}"}])
    out = ModelOutput(text="axios.get('\udc00')", mode="completion", extra={"raw\udfff": LONE})
    res = SampleResult(
        status="runtime_error",
        parsed=f"throw new Error('{LONE}')",
        execution={"request": {"url": LONE}},
        verdicts={"strict": {"error": f"Error: {LONE}", "sample": "wrong"}},
        error=f"ValueError: {LONE}",
        stats={"note": "\udc00"},
    )
    store.put("asana\udc00", inp, out, res)
    rows = list(store.rows())
    store.close()
    _utf8_clean(rows)
    (row,) = rows
    assert row["raw_output"] == "axios.get('\\udc00')" and row["error"] == "ValueError: \\ud800"
    assert row["verdicts"]["strict"]["error"] == "Error: \\ud800"
    text = (tmp_path / "r" / "config.json").read_text(encoding="utf-8")  # strict UTF-8
    assert "\\\\ud800" in text  # the escape text, JSON-encoded
    # Resuming with the same (unescaped) config is the same run, not "a different run".
    store, resumed = RunStore.create_or_resume(tmp_path / "r", config)
    assert resumed and store.done_ids() == {"id\\ud800"}
    store.close()


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


def _depth(value) -> int:
    """How many lists are nested in ``value`` (each holding the next as its first item)."""
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def test_values_of_any_depth_are_stored_cut_and_read_back(tmp_path):
    """Issue 28: whatever a sample produces is stored in a form that reads back. A value 975 deep
    (JSON writes it, and reading it back failed) and one 100,000 deep (the encoder's RecursionError
    failed the run's write) are cut at STORED_MAX_DEPTH; the verdict around them is kept."""
    from callbench.runs.store import STORED_MAX_DEPTH

    store, _ = RunStore.create_or_resume(tmp_path / "r", {"identity": {"track": "webapi"}})
    try:
        for depth in (975, 100_000):
            sid = f"s{depth}"
            inp = ModelInput(sample_id=sid, prompt="p", messages=[{"role": "user", "content": "p"}])
            out = ModelOutput(text="x", mode="completion", extra={"body": _nested(depth)},
                              tool_calls=[{"name": "f", "arguments": _nested(depth)}])
            res = SampleResult(status="ok", execution={"request": {"body": _nested(depth)}},
                               verdicts={"strict": {"sample": "wrong", "body": _nested(depth)}})
            store.write([(f"unscored{depth}", out)], [])
            store.put("g", inp, out, res)
        rows = {r["id"]: r for r in store.rows()}
        unscored = store.generations()
    finally:
        store.close()
    assert set(rows) == {"s975", "s100000"} and set(unscored) == {"unscored975", "unscored100000"}
    for depth in (975, 100_000):
        row = rows[f"s{depth}"]
        assert row["verdicts"]["strict"]["sample"] == "wrong"
        body = row["execution"]["request"]["body"]
        assert _depth(body) == STORED_MAX_DEPTH - 2  # the lists below execution -> request
        leaf = body
        while isinstance(leaf, list):
            leaf = leaf[0]
        assert leaf == f"<cut when stored: nested deeper than {STORED_MAX_DEPTH} levels>"
        assert isinstance(unscored[f"unscored{depth}"].extra["body"], list)


def test_a_webapi_sample_posting_an_array_975_deep_reports(tmp_path, data_root):
    preds = tmp_path / "preds.jsonl"
    deep = "[" * 975 + "]" * 975
    code = ("const axios = require('axios');\n"
            f"axios.post('https://app.asana.com/api/1.0/tasks', {{data: {deep}}}, "
            "{headers: {Authorization: 'Bearer token'}});")
    preds.write_text("\n".join(json.dumps({"id": i, "code": code}) for i in ("asana_0", "asana_1")))
    res = _invoke("run", "webapi", "--model", f"replay:{preds}", "--out", tmp_path / "runs", "--run-id", "r",
                  "--no-progress", "--data", data_root, "--ids", "asana_0,asana_1")
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "runs" / "r"
    res = _invoke("report", run_dir, "--html", tmp_path / "r.html")
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    res = _invoke("export", run_dir, "--out", tmp_path / "x.jsonl", "--format", "jsonl")
    assert res.exit_code == 0 and "2 rows" in res.output, res.output


def test_json_files_are_utf8_with_surrogates(tmp_path):
    write_json_atomic(tmp_path / "s.json", {"model": LONE, LONE: [1, "\udc00"]})
    raw = (tmp_path / "s.json").read_bytes()
    doc = json.loads(raw.decode("utf-8"))
    _utf8_clean(doc)
    assert doc == {"model": "\\ud800", "\\ud800": [1, "\\udc00"]}


def _invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_webapi_run_with_surrogates_finishes_resumes_and_reports(tmp_path, data_root):
    preds = tmp_path / "preds.jsonl"
    rows = [
        {"id": "asana_0", "code": "const axios = require('axios');\nthrow new Error('\\uD800');"},
        # JavaScript escapes: the lone surrogates appear when the program runs (a replay file holding
        # a raw lone surrogate is refused as the file's error)
        {"id": "asana_1", "output": "get('https://app.asana.com/api/1.0/attachments/\\uD800');"},
        {"id": "asana_2", "output": "get(\"\\uDC00\" + 1);"},
    ]
    preds.write_text("\n".join(json.dumps(r) for r in rows))  # JSON escapes: the file itself is ASCII
    common = ["run", "webapi", "--model", f"replay:{preds}", "--out", tmp_path / "runs", "--run-id", "r",
              "--no-progress", "--data", data_root]
    res = _invoke(*common, "--ids", "asana_0,asana_1")
    assert res.exit_code == 0, res.output
    res = _invoke(*common, "--ids", "asana_0,asana_1,asana_2")  # resume over the stored surrogate rows
    assert res.exit_code == 0, res.output
    assert "2 of 3 samples already done" in " ".join(res.output.split())
    run_dir = tmp_path / "runs" / "r"
    con = sqlite3.connect(run_dir / "run.sqlite")
    stored = {r[0]: r[1:] for r in con.execute("SELECT id, raw_output, error, verdicts FROM samples")}
    con.close()
    assert set(stored) == {"asana_0", "asana_1", "asana_2"}
    assert "\\uD800" in stored["asana_1"][0] and "\\uDC00" in stored["asana_2"][0]
    for name in ("summary.json", "config.json"):
        json.loads((run_dir / name).read_text(encoding="utf-8"))
    res = _invoke("report", run_dir, "--html", tmp_path / "r.html")
    assert res.exit_code == 0, res.output
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "\\udc00" in html


def test_nested_run_with_surrogates_finishes_and_resumes(tmp_path):
    preds = tmp_path / "preds.jsonl"
    bad_call = [{"name": f"circumference{LONE}", "label": "$var_1", "arguments": {"arg_0": "\udc00"}}]
    # the answers carry the surrogates as JSON escapes (a replay file with a raw lone surrogate is
    # refused as the file's error): they appear once the answer's call list is parsed
    preds.write_text("\n".join(json.dumps({"id": f"gen-0-000{i}", "output": json.dumps(bad_call)}) for i in range(3)))
    common = ["run", "nested", "--model", f"replay:{preds}", "--out", tmp_path / "runs", "--run-id", "n",
              "--no-progress"]
    res = _invoke(*common, "--ids", "gen-0-0000,gen-0-0001")
    assert res.exit_code == 0, res.output
    res = _invoke(*common, "--ids", "gen-0-0000,gen-0-0001,gen-0-0002")
    assert res.exit_code == 0, res.output
    assert "2 of 3 samples already done" in " ".join(res.output.split())
    res = _invoke("report", tmp_path / "runs" / "n")
    assert res.exit_code == 0, res.output
    (tmp_path / "runs" / "n" / "report.html").read_text(encoding="utf-8")


# -- 2. damaged run directories --------------------------------------------------------------------


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, data_root) -> Path:
    """A finished two-sample gold run, copied by each test before it is damaged."""
    out = tmp_path_factory.mktemp("pristine")
    res = _invoke("run", "webapi", "--model", "gold", "--limit", "2", "--out", out, "--run-id", "r",
                  "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    return out / "r"


def _sql(run_dir: Path, *statements: str) -> None:
    con = sqlite3.connect(run_dir / "run.sqlite", isolation_level=None)
    for s in statements:
        con.execute(s)
    con.close()


def _replace_dir(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.mkdir()


def _loop(path: Path) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(path.name)  # a symlink to itself: open() fails with ELOOP, even for root


def _truncate(path: Path, keep: float) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def _config(run_dir: Path, edit) -> None:
    p = run_dir / "config.json"
    doc = json.loads(p.read_text())
    p.write_text(json.dumps(edit(doc)))


def _set_identity(key, value):
    def edit(doc):
        doc["identity"][key] = value
        return doc
    return edit


def _drop_identity_key(key):
    def edit(doc):
        del doc["identity"][key]
        return doc
    return edit


def _chmod0(path: Path) -> None:
    path.chmod(0)


# name -> (damage, file the message must name, what re-running the run's command must do)
CORRUPTIONS = {
    "sqlite_truncated_half": (lambda d: _truncate(d / "run.sqlite", 0.5), "run.sqlite", "error"),
    "sqlite_truncated_header": (lambda d: _truncate(d / "run.sqlite", 0.01), "run.sqlite", "error"),
    "sqlite_garbage": (lambda d: (d / "run.sqlite").write_bytes(os.urandom(8192)), "run.sqlite", "error"),
    "sqlite_text": (lambda d: (d / "run.sqlite").write_text("not a database\n" * 100), "run.sqlite", "error"),
    "sqlite_is_directory": (lambda d: _replace_dir(d / "run.sqlite"), "run.sqlite", "error"),
    "sqlite_symlink_loop": (lambda d: _loop(d / "run.sqlite"), "run.sqlite", "error"),
    "sqlite_missing": (lambda d: (d / "run.sqlite").unlink(), "run.sqlite", "ok"),
    "sqlite_no_samples_table": (lambda d: _sql(d, "DROP TABLE samples", "CREATE TABLE other (x)"), "run.sqlite", "error"),
    "sqlite_wrong_columns": (lambda d: _sql(d, "DROP TABLE samples", "CREATE TABLE samples (id TEXT PRIMARY KEY, x)"),
                             "run.sqlite", "error"),
    "row_messages_not_json": (lambda d: _sql(d, "UPDATE samples SET messages='{not json'"), "run.sqlite", "error"),
    "row_verdicts_a_list": (lambda d: _sql(d, "UPDATE samples SET verdicts='[1, 2]'"), "run.sqlite", "error"),
    "row_verdicts_wrong_shape": (lambda d: _sql(d, """UPDATE samples SET verdicts='{"strict": 5, "compat": 5}'"""),
                                 "run.sqlite", "error"),
    "row_extra_a_string": (lambda d: _sql(d, """UPDATE samples SET extra='"x"'"""), "run.sqlite", "error"),
    "row_id_blob": (lambda d: _sql(d, "UPDATE samples SET id=X'00ff' WHERE rowid=1"), "run.sqlite", "error"),
    "row_status_blob": (lambda d: _sql(d, "UPDATE samples SET status=X'01'"), "run.sqlite", "error"),
    "row_latency_text": (lambda d: _sql(d, "UPDATE samples SET latency_s='fast'"), "run.sqlite", "error"),
    # issue 28: a NULL verdict column, a row of a sample the run never selected, JSON too deep to read back
    "row_verdicts_null": (lambda d: _sql(d, "UPDATE samples SET verdicts=NULL WHERE rowid=1"), "verdicts", "error"),
    "row_verdicts_json_null": (lambda d: _sql(d, "UPDATE samples SET verdicts='null'"), "verdicts", "error"),
    "row_foreign": (lambda d: _sql(d, "INSERT INTO samples SELECT 'slack_9999', grp, status, prompt, messages, raw_output, "
                                      "mode, parsed, execution, verdicts, error, latency_s, prompt_tokens, "
                                      "completion_tokens, extra, finished_at FROM samples LIMIT 1"),
                    "'slack_9999': not a sample of this run", "error"),
    "row_execution_975_deep": (lambda d: _sql(d, f"UPDATE samples SET execution='{'[' * 975}{']' * 975}'"),
                               "column 'execution' is not readable JSON (nested deeper than", "error"),
    "config_track_bogus": (lambda d: _config(d, _set_identity("track", "bogus")),
                           "config.json", "error"),
    "config_selection_not_object": (lambda d: _config(d, lambda c: {**c, "selection": [1]}),
                                    "config.json: 'selection' is not an object", "error"),
    "config_sample_ids_not_list": (lambda d: _config(d, lambda c: {**c, "selection": {**c["selection"], "sample_ids": "x"}}),
                                   "config.json: selection.sample_ids", "error"),
    "config_run_ids_not_list": (lambda d: _config(d, lambda c: {**c, "run_sample_ids": [1, 2]}),
                                "config.json: run_sample_ids", "error"),
    "config_truncated": (lambda d: _truncate(d / "config.json", 0.5), "config.json", "error"),
    "config_empty": (lambda d: (d / "config.json").write_text(""), "config.json", "error"),
    "config_a_list": (lambda d: (d / "config.json").write_text("[1, 2]"), "config.json", "error"),
    "config_a_string": (lambda d: (d / "config.json").write_text('"run"'), "config.json", "error"),
    "config_no_identity": (lambda d: (d / "config.json").write_text("{}"), "config.json", "error"),
    "config_identity_not_object": (lambda d: _config(d, lambda c: {**c, "identity": 5}), "config.json", "error"),
    "config_no_track": (lambda d: _config(d, _drop_identity_key("track")), "config.json", "error"),
    "config_unknown_track": (lambda d: _config(d, _set_identity("track", "nosuch")), "config.json", "error"),
    "config_track_not_string": (lambda d: _config(d, _set_identity("track", ["webapi"])), "config.json", "error"),
    "config_not_utf8": (lambda d: (d / "config.json").write_bytes(b'{"identity": "\xff\xfe"}'), "config.json", "error"),
    "config_is_directory": (lambda d: _replace_dir(d / "config.json"), "config.json", "error"),
    "config_symlink_loop": (lambda d: _loop(d / "config.json"), "config.json", "error"),
    "config_missing": (lambda d: (d / "config.json").unlink(), "config.json", "error"),
    "summary_truncated": (lambda d: _truncate(d / "summary.json", 0.5), "summary.json", "ok"),
    "summary_a_list": (lambda d: (d / "summary.json").write_text("[]"), "summary.json", "ok"),
    "summary_bad_scoring": (lambda d: (d / "summary.json").write_text('{"scoring": "nosuch"}'), "summary.json", "ok"),
    "summary_is_directory": (lambda d: _replace_dir(d / "summary.json"), "summary.json", "error"),
    "wal_is_directory": (lambda d: _replace_dir(d / "run.sqlite-wal"), "run.sqlite-wal", "error"),
    "run_dir_is_a_file": (lambda d: (shutil.rmtree(d), d.write_text("x")), "r", "error"),
}
if hasattr(os, "geteuid") and os.geteuid() != 0:  # root reads files whatever their mode
    CORRUPTIONS["sqlite_unreadable"] = (lambda d: _chmod0(d / "run.sqlite"), "run.sqlite", "error")
    CORRUPTIONS["config_unreadable"] = (lambda d: _chmod0(d / "config.json"), "config.json", "error")


@pytest.fixture
def damaged(request, pristine, tmp_path):
    damage, needle, rerun = CORRUPTIONS[request.param]
    run_dir = tmp_path / "out" / "r"
    shutil.copytree(pristine, run_dir)
    damage(run_dir)
    return run_dir, needle, rerun


def _assert_one_line_error(res, needle):
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1, res.output
    (line,) = lines
    assert line.startswith("error: ") and needle in line, line
    fix = line.rpartition(";")[2]
    assert any(w in fix for w in ("delete", "restore", "pass ", "re-run", "rerun", "remove")), line


@pytest.mark.parametrize("damaged", sorted(CORRUPTIONS), indirect=True)
def test_report_on_damaged_run_is_one_line(damaged):
    run_dir, needle, _ = damaged
    _assert_one_line_error(_invoke("report", run_dir), needle)


@pytest.mark.parametrize("damaged", sorted(CORRUPTIONS), indirect=True)
def test_rerun_into_damaged_run_is_one_line_or_resumes(damaged, data_root):
    run_dir, needle, rerun = damaged
    res = _invoke("run", "webapi", "--model", "gold", "--limit", "2", "--out", run_dir.parent, "--run-id", "r",
                  "--no-progress", "--data", data_root)
    if rerun == "ok":
        assert res.exit_code == 0, res.output
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        assert summary["n"] == 2 and summary["complete"] is True
    else:
        _assert_one_line_error(res, needle)


# export writes the verdicts as stored (no track aggregates them) and needs no summary.json
@pytest.mark.parametrize("damaged", sorted(k for k in CORRUPTIONS if not k.startswith("summary_")
                                           and k != "row_verdicts_wrong_shape"), indirect=True)
def test_export_of_damaged_run_is_one_line(damaged, tmp_path):
    """``callbench export`` reads what ``report`` reads: the same one line."""
    run_dir, needle, _ = damaged
    _assert_one_line_error(_invoke("export", run_dir, "--out", tmp_path / "x.csv"), needle)


def test_an_unknown_track_is_named_by_report_and_export(pristine, tmp_path):
    run_dir = tmp_path / "r"
    shutil.copytree(pristine, run_dir)
    _config(run_dir, _set_identity("track", "bogus"))
    for res in (_invoke("report", run_dir), _invoke("export", run_dir, "--out", tmp_path / "x.csv")):
        _assert_one_line_error(res, "config.json: identity.track 'bogus' is not a callbench track (one of: nested,")


def test_a_foreign_row_is_refused_until_dropped_and_older_runs_adopt_their_rows(pristine, tmp_path, data_root):
    """A row whose sample no session of the run selected (copied from another run's store) is
    named, with the command that drops it; once dropped, report and export count the run's rows.
    A run written before config.json listed its ids reports as before, and its next resume
    records the ids it holds."""
    run_dir = tmp_path / "out" / "r"
    shutil.copytree(pristine, run_dir)
    _sql(run_dir, "INSERT INTO samples SELECT 'slack_9999', grp, status, prompt, messages, raw_output, mode, parsed, "
                  "execution, verdicts, error, latency_s, prompt_tokens, completion_tokens, extra, finished_at "
                  "FROM samples LIMIT 1")
    res = _invoke("report", run_dir)
    _assert_one_line_error(res, "'slack_9999': not a sample of this run")
    assert "DELETE FROM samples WHERE id='slack_9999'" in res.output
    _sql(run_dir, "DELETE FROM samples WHERE id='slack_9999'")
    assert _invoke("report", run_dir).exit_code == 0
    res = _invoke("export", run_dir, "--out", tmp_path / "x.csv")
    assert res.exit_code == 0 and "2 rows" in res.output, res.output
    # an older run: no run_sample_ids in config.json
    _config(run_dir, lambda c: {k: v for k, v in c.items() if k != "run_sample_ids"})
    assert _invoke("report", run_dir).exit_code == 0
    res = _invoke("run", "webapi", "--model", "gold", "--limit", "1", "--out", run_dir.parent, "--run-id", "r",
                  "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    ids = json.loads((run_dir / "config.json").read_text())["run_sample_ids"]
    assert len(ids) == 2  # the stored rows of the earlier (2-sample) selection are adopted


def test_report_with_scoring_does_not_need_summary(pristine, tmp_path):
    run_dir = tmp_path / "r"
    shutil.copytree(pristine, run_dir)
    (run_dir / "summary.json").write_text("{trunc")
    res = _invoke("report", run_dir, "--scoring", "strict")
    assert res.exit_code == 0, res.output


def test_report_html_path_is_a_directory(pristine, tmp_path):
    run_dir = tmp_path / "r"
    shutil.copytree(pristine, run_dir)
    (run_dir / "report.html").mkdir()
    _assert_one_line_error(_invoke("report", run_dir), "report.html")


def test_api_open_raises_callbench_error(pristine, tmp_path):
    run_dir = tmp_path / "r"
    shutil.copytree(pristine, run_dir)
    (run_dir / "run.sqlite").write_bytes(b"\0" * 4096)
    with pytest.raises(CallbenchError, match=r"run\.sqlite: not a callbench run store"):
        RunStore.open(run_dir)


def test_config_missing_with_empty_store_resumes(pristine, tmp_path, data_root):
    """A store with no finished samples holds no work to lose: a missing config.json is rewritten."""
    run_dir = tmp_path / "out" / "r"
    shutil.copytree(pristine, run_dir)
    (run_dir / "config.json").unlink()
    _sql(run_dir, "DELETE FROM samples")
    res = _invoke("run", "webapi", "--model", "gold", "--limit", "2", "--out", run_dir.parent, "--run-id", "r",
                  "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    assert json.loads((run_dir / "summary.json").read_text())["n"] == 2


def test_damaged_row_is_named_with_a_fix_that_keeps_the_rest(pristine, tmp_path, data_root):
    """The message for one bad row names it and says how to drop just that row; the rest is kept."""
    run_dir = tmp_path / "out" / "r"
    shutil.copytree(pristine, run_dir)
    _sql(run_dir, "UPDATE samples SET messages='{oops' WHERE rowid=2")
    con = sqlite3.connect(run_dir / "run.sqlite")
    bad_id = con.execute("SELECT id FROM samples WHERE rowid=2").fetchone()[0]
    con.close()
    res = _invoke("report", run_dir)
    _assert_one_line_error(res, bad_id)
    line = res.output.strip()
    assert "DELETE FROM samples WHERE id=" in line
    _sql(run_dir, f"DELETE FROM samples WHERE id='{bad_id}'")
    res = _invoke("run", "webapi", "--model", "gold", "--limit", "2", "--out", run_dir.parent, "--run-id", "r",
                  "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    assert "1 of 2 samples already done" in " ".join(res.output.split())
