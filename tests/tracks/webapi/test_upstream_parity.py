"""Compat scoring equals WAPIIBench's published scorer, sample by sample (issue 26, part 2).

The fixture (``../shared/parity/wapiibench``, README there) holds predictions over WAPIIBench
tasks in both setups and what the published scorer (evaluation.py + mock.js with real axios and
axios-mock-adapter) made of each: the config mock.js logged, the verdicts, and the statistics of
each setup and each mutation class. Checked here:

* the config compat scores (:func:`upstream_mock.mock_log` of what the stand-in recorded) equals the
  logged one field by field, and the published scorer's errors and dropped predictions are
  compat's;
* every per-sample verdict (sample, error, url, method, endpoint), in-process and through the CLI
  path the README describes (``make_tasks.py`` run from the fixture into tmp_path, ``callbench run
  webapi --model replay:... --tasks ... --scoring compat``), dropped predictions left out as upstream
  leaves them out;
* every overall metric of both setups and of every mutation class, within 1e-9 (a rate both
  sides leave empty agrees).

``CALLBENCH_WAPIIBENCH_PARITY`` points the test at another fixture of the same layout.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from callbench.models.base import ModelOutput
from callbench.sandbox import JsSandbox
from callbench.tracks.webapi.metrics import aggregate
from callbench.tracks.webapi.scoring import SampleVerdict
from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack
from callbench.tracks.webapi.upstream_call import published_call, published_program, sandbox_script
from callbench.tracks.webapi.upstream_mock import MockError, log_size, mock_log
from callbench.tracks.webapi.upstream_scorer import compat_verdict

LOGGED_FIELDS = ("method", "url", "params", "headers", "data")
UPSTREAM_ERROR = {"no_request": "ABSENT_REQUEST", "incomplete_request": "INCOMPLETE_REQUEST"}


def _fixture_dir() -> Path:
    env = os.environ.get("CALLBENCH_WAPIIBENCH_PARITY")
    if env:
        return Path(env)
    data = Path(
        os.environ.get("CALLBENCH_DATA_DIR") or Path(__file__).resolve().parents[4] / "shared" / "data"
    )
    return data.parent / "parity" / "wapiibench"


@pytest.fixture(scope="module")
def fixture(data_root: Path) -> dict:
    fix = _fixture_dir()
    if not (fix / "predictions.jsonl").is_file():
        pytest.skip(f"WAPIIBench parity fixture not found at {fix} (../shared/parity/wapiibench)")
    return {
        "dir": fix,
        "predictions": [
            json.loads(line) for line in (fix / "predictions.jsonl").read_text().splitlines() if line.strip()
        ],
        "per_sample": json.loads((fix / "upstream-per-sample.json").read_text())["per_sample"],
        "overall": json.loads((fix / "upstream-overall.json").read_text()),
    }


@pytest.fixture(scope="module")
def scored(fixture) -> dict[str, dict]:
    """pid -> the sample's compat verdict (dict), in-process, with the original task rows."""
    out: dict[str, dict] = {}
    for setup in ("full", "args"):
        rows = [p for p in fixture["predictions"] if p["setup"] == setup]
        if not rows:
            continue
        track = WebApiTrack(WebApiOptions(setup=setup))
        samples = {s.id: s for s in track.load_samples()}
        items = [(samples[p["task"]], ModelOutput(text=p["completion"], mode="completion")) for p in rows]
        for p, res in zip(rows, track.evaluate_many(items), strict=True):
            out[p["pid"]] = res.verdicts["compat"]
        track.close()
    return out


def _verdict_tuple(v: dict) -> tuple:
    return (v["sample"], v["error"], v["url"], v["method"], v["endpoint"])


def _upstream_tuple(u: dict) -> tuple:
    return (
        u["sample_verdict"],
        u["error_verdict"],
        u["url_verdict"],
        u["method_verdict"],
        u["endpoint_verdict"],
    )


# ---------------------------------------------------------------- the logged config


def test_mock_view_equals_the_logged_config(fixture):
    """What compat compares is what mock.js wrote, field by field (or the same error / drop)."""
    track = {s: WebApiTrack(WebApiOptions(setup=s)) for s in ("full", "args")}
    tasks = {t.payload.id: t.payload for t in track["full"].load_samples()}
    jobs, calls = [], {}
    for p in fixture["predictions"]:
        starter = track[p["setup"]]._prompt(tasks[p["task"]]).starter
        calls[p["pid"]] = call = published_call(published_program(starter, p["completion"], "completion"))
        if call.code is not None:
            jobs.append(p["pid"])
    runs = {}
    with JsSandbox() as sb:
        for i, run in sb.run_many([(sandbox_script(calls[pid].code), None) for pid in jobs], extract=False):
            runs[jobs[i]] = run
    checked = {"config": 0, "error": 0, "dropped": 0}
    for p in fixture["predictions"]:
        pid, logged = p["pid"], fixture["per_sample"][p["pid"]]["config"]
        call, run = calls[pid], runs.get(pid)
        task = tasks[p["task"]]
        spec = track["full"]._spec_for(task)
        verdict, note = compat_verdict(task.config.as_dict(), spec, call, run)
        if logged is None:
            assert verdict.dropped, (pid, note)
            checked["dropped"] += 1
        elif "ERROR" in logged:
            want = UPSTREAM_ERROR.get(call.error or "", "EXECUTION_ERROR")
            assert logged["ERROR"] == want and verdict.error in (call.error, "runtime_error"), (
                pid,
                note,
                logged,
            )
            checked["error"] += 1
        else:
            assert run is not None and run.raw, (pid, note)
            logs = [(log_size(raw, mock_log(raw)), i, mock_log(raw)) for i, raw in enumerate(run.raw)]
            mine = max(logs, key=lambda t: (t[0], t[1]))[2]  # the longest log (see log_size)
            assert {k: mine[k] for k in LOGGED_FIELDS if k in mine} == logged, pid
            checked["config"] += 1
    assert checked["config"] > 0 and sum(checked.values()) == len(fixture["predictions"])
    assert checked["dropped"] == sum(1 for v in fixture["per_sample"].values() if v["dropped"])


def test_mock_js_rules_on_hand_made_configs():
    """Hand-computed logs: inline query (+ kept, bare key -> true, bare ? -> empty key), params
    kinds, JSON and form bodies, form-data parts, and the cases where mock.js throws."""
    base = {"method": "get", "headers": {"Accept": "x"}, "data": {"type": "undefined", "falsy": True}}

    def log(url, params=None, data=None, **extra):
        raw = {
            **base,
            "url": {"type": "string", "text": url},
            "params": params or {"present": False},
            **extra,
        }
        if data is not None:
            raw["data"] = data
        return mock_log(raw)

    assert log("https://h/a%2Fb?q=a+b&flag&x=1&x=2") == {
        "method": "get",
        "url": "https://h/a/b",
        "params": {"q": "a+b", "flag": True, "x": "2"},
        "headers": {"Accept": "x"},
    }
    assert log("https://h/x?")["params"] == {"": True}
    obj = {"present": True, "type": "object", "to_json": False, "json": {"a": 1}}
    assert log("https://h/x?b=2", obj)["params"] == {"a": 1, "b": "2"}
    usp = {"present": True, "type": "object", "to_json": False, "json": {}}
    assert log("https://h/x", usp)["params"] == {}
    arr = {"present": True, "type": "array", "to_json": False, "json": [1]}
    assert log("https://h/x?b=2", arr)["params"] == [1]
    with pytest.raises(MockError, match="null"):
        log("https://h/x?b=2", {"present": True, "type": "null", "to_json": False, "json": None})
    with pytest.raises(MockError, match="URIError"):
        log("https://h/100%")
    text = lambda t: {"type": "string", "falsy": not t, "text": t}  # noqa: E731
    assert log("https://h/x", data=text('{"a": 1.0, "b": [1]}'))["data"] == {"a": 1, "b": [1]}
    assert log("https://h/x", data=text(""))["data"] == {}
    assert log("https://h/x", data=text("null"))["data"] == {}
    form = "a=1+2&b[]=x&b[]=y&c[d][e]=f&g[0]=h&i=%C3%BC"
    assert log("https://h/x", data=text(form))["data"] == {
        "a": "1 2",
        "b": ["x", "y"],
        "c": {"d": {"e": "f"}},
        "g": ["h"],
        "i": "ü",
    }
    assert log("https://h/x", data=text("[1,2]"))["data"] == {"[1,2": "[1,2]"}  # no '=': slice(0, -1)
    with pytest.raises(MockError, match="push"):
        log("https://h/x", data=text("a=1&a[]=2"))
    with pytest.raises(MockError, match="SyntaxError"):
        log("https://h/x", data=text("{a: 1}"))
    parts = [['--b\r\nContent-Disposition: form-data; name="f"\r\n\r\n', {"json": "v"}]]
    assert log("https://h/x", data={"type": "object", "falsy": False, "ctor": "FormData", "parts": parts})[
        "data"
    ] == {"f": "v"}
    with pytest.raises(MockError):  # a web FormData has no `_streams`
        log("https://h/x", data={"type": "object", "falsy": False, "ctor": "FormData", "json": {}})
    with pytest.raises(MockError, match="trace"):
        mock_log(
            {
                **base,
                "method": "trace",
                "url": {"type": "string", "text": "https://h/x"},
                "params": {"present": False},
            }
        )


# ---------------------------------------------------------------- verdicts and metrics, in-process


def test_per_sample_verdicts_equal_published(fixture, scored):
    mismatches = []
    for pid, up in fixture["per_sample"].items():
        mine = scored[pid]
        if up["dropped"]:
            if not mine.get("dropped"):
                mismatches.append((pid, "dropped upstream", _verdict_tuple(mine)))
        elif mine.get("dropped") or _verdict_tuple(mine) != _upstream_tuple(up["verdict"]):
            mismatches.append((pid, _upstream_tuple(up["verdict"]), _verdict_tuple(mine)))
    assert not mismatches, mismatches[:10]


def _figure(value):
    return value.get("all") if isinstance(value, dict) else value  # {}: no sample had one


def metric_map() -> dict[str, str]:
    """callbench metric -> upstream statistic (fixture README)."""
    out = {
        "n": "samples_total",
        "n_executable": "samples_executable",
        "executable_implementations_t": "samples_executable_wrt_total",
    }
    for verdict in ("correct", "wrong", "illegal"):
        for mine, theirs in (
            ("implementations", "samples"),
            ("urls", "urls"),
            ("methods", "methods"),
            ("endpoints", "endpoints"),
        ):
            out[f"{verdict}_{mine}_t"] = f"{theirs}_{verdict}_wrt_total"
            out[f"{verdict}_{mine}_e"] = f"{theirs}_{verdict}_wrt_executable"
    for sfx, up in (("_t", "_total"), ("_e", "_executable")):
        out[f"correct_argument_names{sfx}"] = f"arguments_correct_name_wrt_expected{up}"
        out[f"correct_argument_values{sfx}"] = f"arguments_correct_value_wrt_expected{up}"
        out[f"missing_arguments{sfx}"] = f"arguments_missing_wrt_expected{up}"
        for kind in ("unexpected", "unnecessary", "illegal"):
            out[f"{kind}_arguments{sfx}"] = f"arguments_{kind}_wrt_all{up}"
        for kind in ("precision", "recall", "jaccard"):
            out[f"mean_argument_{kind}{sfx}"] = f"argument_name_mean_{kind}_wrt{up}"
        out[f"mean_argument_value_conditional_accuracy{sfx}"] = (
            f"argument_value_mean_accuracy_wrt_correct{up}"
        )
    out.update(
        total_errors="errors_total",
        runtime_errors="errors_runtime_error",
        incomplete_implementations="errors_incomplete_request",
        absent_requests="errors_no_request",
        timeouts="errors_timeout",
        unsatisfiable_constraints="errors_unsatisfiable",
    )
    return out


def _metric_mismatches(mine: dict, theirs: dict, where: str) -> list[str]:
    bad = []
    for key, up_key in metric_map().items():
        a, b = mine[key], _figure(theirs[up_key])
        if (a or 0) != pytest.approx(b or 0, abs=1e-9, rel=0):
            bad.append(f"{where} {key}: callbench {a} vs published {b}")
    return bad


def test_overall_metrics_equal_published(fixture, scored):
    bad = []
    by_setup: dict[str, list[SampleVerdict]] = defaultdict(list)
    by_class: dict[str, list[SampleVerdict]] = defaultdict(list)
    for p in fixture["predictions"]:
        v = SampleVerdict.from_dict(scored[p["pid"]])
        by_setup[p["setup"]].append(v)
        by_class[f"{p['cls']}|{p['setup']}"].append(v)
    for setup, verdicts in by_setup.items():
        m = aggregate(verdicts, "compat")
        bad += _metric_mismatches(m, fixture["overall"]["by_setup"][setup], setup)
        dropped = sum(
            1
            for p in fixture["predictions"]
            if p["setup"] == setup and fixture["per_sample"][p["pid"]]["dropped"]
        )
        assert m["dropped_samples"] == dropped
    for key, verdicts in by_class.items():
        theirs = fixture["overall"]["by_class"].get(key)
        if theirs is None:  # a class every prediction of which upstream dropped: no statistics
            assert all(v.dropped for v in verdicts), key
            continue
        bad += _metric_mismatches(aggregate(verdicts, "compat"), theirs, key)
    assert not bad, bad[:10]


# ---------------------------------------------------------------- the CLI path of the fixture README


def test_cli_replay_equals_published(fixture, data_root, tmp_path):
    from typer.testing import CliRunner

    from callbench.cli import app

    dataset = data_root / "wapiibench" / "data" / "synthetic" / "all" / "test_data_final.json"
    made = subprocess.run(
        [
            sys.executable,
            str(fixture["dir"] / "make_tasks.py"),
            str(dataset),
            str(fixture["dir"]),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    by_run_id = {p["run_id"]: p for p in fixture["predictions"]}
    for setup in ("full", "args"):
        res = CliRunner().invoke(
            app,
            [
                "run",
                "webapi",
                "--model",
                f"replay:{fixture['dir'] / f'replay-{setup}.jsonl'}",
                "--tasks",
                str(tmp_path / f"tasks-{setup}.json"),
                "--setup",
                setup,
                "--scoring",
                "compat",
                "--out",
                str(tmp_path / "runs"),
                "--run-id",
                f"parity-webapi-{setup}",
                "--no-progress",
            ],
            catch_exceptions=False,
        )
        assert res.exit_code == 0, res.output
        run_dir = tmp_path / "runs" / f"parity-webapi-{setup}"
        with sqlite3.connect(run_dir / "run.sqlite") as db:
            rows = dict(db.execute("SELECT id, verdicts FROM samples").fetchall())
        seen = 0
        for run_id, verdicts in rows.items():
            p = by_run_id[run_id]
            up = fixture["per_sample"][p["pid"]]
            mine = json.loads(verdicts)["compat"]
            if up["dropped"]:
                assert mine.get("dropped"), p["pid"]
            else:
                assert _verdict_tuple(mine) == _upstream_tuple(up["verdict"]), p["pid"]
            seen += 1
        assert seen == sum(1 for p in fixture["predictions"] if p["setup"] == setup)
        summary = json.loads((run_dir / "summary.json").read_text())
        assert not _metric_mismatches(summary["metrics"], fixture["overall"]["by_setup"][setup], setup)
