"""Commands that read runs, results and what is installed: ``report``, ``export``, ``show``,
``list`` and ``models``.

The row reading and flattening live in :mod:`callbench.results` (also behind
``callbench.load_run``); this module only prints. Everything a sample stored is user or model
text: it is printed with markup off, never interpreted by rich.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from callbench.cli.options import CountBackendErrors, Scoring, fail, out_console, path_text
from callbench.cli.root import app
from callbench.errors import CallbenchError


@app.command("report")
def report_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories; several are compared side by side.")],
    html: Annotated[
        Path | None, typer.Option(help="HTML file (default: <run>/report.html; for a comparison see --out).")
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            help="Directory for report.html (and comparison.json); a comparison's default is "
            "comparisons/<labelA>-vs-<labelB>/, never a run directory.",
        ),
    ] = None,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="Column label of a run (repeatable, one per run, in order; default: a short model name)."),
    ] = None,
    scoring: Annotated[Scoring | None, typer.Option(help="Re-score in this mode (default: the run's).")] = None,
    count_backend_errors: CountBackendErrors = False,
    seed: Annotated[int, typer.Option(help="Seed of the bootstrap resampling.")] = 0,
    bootstrap: Annotated[int, typer.Option(help="Bootstrap resamples for the 95% intervals.")] = 2000,
) -> None:
    """Print the track's tables and write a self-contained HTML report (charts, filterable sample list).

    With several runs: a comparison on the samples they share, with 95% bootstrap intervals, paired
    differences and McNemar's exact test, written to its own directory.
    """
    from callbench.report.build import build_report

    try:
        rep = build_report(
            runs,
            html=html,
            out=out,
            labels=label,
            scoring=scoring.value if scoring else None,
            console=out_console,
            count_backend_errors=count_backend_errors,
            seed=seed,
            n_boot=bootstrap,
        )
    except CallbenchError as exc:
        fail(exc)
    out_console.print(f"HTML report: {path_text(rep.html_path)}", highlight=False)
    if rep.json_path is not None:
        out_console.print(f"comparison data: {path_text(rep.json_path)}", highlight=False)


@app.command("models")
def models_cmd() -> None:
    """List the registered model backends."""
    from callbench.models.registry import available_models

    for name in available_models():
        out_console.print(name)


class ExportFormat(str, Enum):  # noqa: UP042 - typer needs the str mixin
    csv = "csv"
    jsonl = "jsonl"
    parquet = "parquet"


@app.command("export")
def export_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run directories; several go into one file with a 'run' column.")],
    fmt: Annotated[ExportFormat, typer.Option("--format", help="csv, jsonl or parquet (needs pyarrow).")] = ExportFormat.csv,
    out: Annotated[
        Path | None, typer.Option("--out", help="Output file (default: <first run>/export.<format>); '-': stdout (csv, jsonl).")
    ] = None,
) -> None:
    """Write the stored samples of one or more runs as a table, one row each (csv, jsonl, parquet).

    Columns: the run's (run, track, model, setup, scoring, sample_id, group, status, error,
    latency, tokens, raw output, parsed, execution), then every verdict field of every scoring
    mode, flattened (strict.correct, strict.url_correct, compat.arguments ...)."""
    from callbench.results import export

    try:
        path, n = export(runs, fmt.value, out)
    except CallbenchError as exc:
        fail(exc)
    if path is not None:
        out_console.print(f"{n} rows from {len(runs)} run(s) written to {path_text(path)}", highlight=False, soft_wrap=True)


# -- show ------------------------------------------------------------------------------------------

_SIDE_BY_SIDE_MIN_WIDTH = 100  # narrower terminals get expected and generated one under the other


def _plain(text: Any) -> None:
    """Print stored text as it is: no markup, no highlighting, long lines not folded."""
    out_console.print("" if text is None else str(text), markup=False, highlight=False, soft_wrap=True)


def _seconds(value: object) -> str:
    """A latency as people read it: ``20.13 s``, ``0.052 s``; ``-`` when none was recorded."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return "-"
    return f"{value:.3g} s" if value < 10 else f"{value:.1f} s"


def _section(title: str) -> None:
    from rich.markup import escape

    out_console.rule(f"[bold]{escape(title)}[/bold]", align="left")


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def _side_by_side(title: str, left_title: str, right_title: str, rows: list[tuple[str, str, str, bool]]) -> None:
    """Rows of (field, left, right, same): a table on a wide terminal, else each field stacked;
    a row whose sides differ is marked."""
    from rich.table import Table
    from rich.text import Text

    _section(title)
    if out_console.width >= _SIDE_BY_SIDE_MIN_WIDTH:
        table = Table(show_lines=True, expand=True)
        table.add_column("", no_wrap=True, style="bold")
        table.add_column(left_title, ratio=1, overflow="fold")
        table.add_column(right_title, ratio=1, overflow="fold")
        for name, left, right, same in rows:
            style = "" if same else "yellow"
            table.add_row(Text(name), Text(left), Text(right, style=style))
        out_console.print(table)
        return
    for name, left, right, same in rows:
        mark = "" if same else "  (differs)"
        _plain(f"{name}{mark}")
        for label, text in ((left_title, left), (right_title, right)):
            lines = text.splitlines() or [""]
            _plain(f"  {label}: {lines[0]}")
            for line in lines[1:]:
                _plain(f"    {line}")


def _webapi_view(row: dict[str, Any], ref: Any) -> None:
    expected = ref.config.as_dict() if ref is not None else None
    got = row["execution"] if isinstance(row["execution"], dict) else None
    if ref is not None:
        _section("Task")
        _plain(f"{ref.task}  ({ref.api} #{ref.index})")
    rows = []
    for key in ("method", "url", "params", "headers", "data"):
        left = "(unknown)" if expected is None else ("" if expected.get(key) is None else _pretty(expected.get(key)))
        right = "(no request captured)" if got is None and key == "method" else (
            "" if got is None or got.get(key) is None else _pretty(got.get(key))
        )
        same = expected is not None and got is not None and expected.get(key) == got.get(key)
        if key in ("method", "url") or left or right:
            rows.append((key, left, right, same))
    _side_by_side("Expected vs generated request", "expected", "generated", rows)


def _stored_json(text: str) -> Any:
    """A stored JSON text (a sample's parsed calls) as a value; None when it is not JSON or is
    nested deeper than the walks that show it can take (it is shown as text then)."""
    from callbench.untrusted import VALUE_MAX_DEPTH, UntrustedInputError, check_value

    try:
        return check_value(json.loads(text), what="parsed", max_depth=VALUE_MAX_DEPTH)
    except (ValueError, RecursionError, UntrustedInputError):
        return None




def _call_text(call: Any) -> str:
    from callbench.tracks.nested.schema import canonical_label

    if not isinstance(call, dict):
        return _pretty(call)
    args = call.get("arguments")
    if isinstance(args, dict):
        inner = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items())
    else:
        inner = _pretty(args) if args is not None else ""
    label = call.get("label")
    label = canonical_label(label) if isinstance(label, str) else label
    return f"{label} = {call.get('name')}({inner})" if label else f"{call.get('name')}({inner})"


def _nested_view(row: dict[str, Any], ref: Any) -> None:
    gold = [c.model_dump(exclude_none=True) for c in ref.output] if ref is not None else []
    predicted = _stored_json(row["parsed"]) if row["parsed"] else []
    if isinstance(predicted, dict):
        predicted = [predicted]
    if ref is not None:
        _section("Question")
        _plain(ref.input)
    execution = row["execution"] if isinstance(row["execution"], dict) else {}
    executed = execution.get("calls") if isinstance(execution.get("calls"), list) else []
    rows = []
    n = max(len(gold), len(predicted) if isinstance(predicted, list) else 0)
    for i in range(n):
        left = _call_text(gold[i]) if i < len(gold) else ""
        right = _call_text(predicted[i]) if isinstance(predicted, list) and i < len(predicted) else ""
        same = left == right
        if i < len(executed) and isinstance(executed[i], dict) and "output" in executed[i]:
            right += f"\n-> {json.dumps(executed[i]['output'], ensure_ascii=False, default=str)}"
        elif i < len(executed) and isinstance(executed[i], dict) and executed[i].get("error"):
            right += f"\n-> error: {executed[i]['error']}"
        rows.append((f"call {i + 1}", left, right, same))
    if predicted is None:
        rows.append(("parsed", "", "(not a JSON call list; see Parsed above)", False))
    gold_answer = None if ref is None else ref.gold_answer
    if gold_answer is not None or "final" in execution:
        left = "" if gold_answer is None else _pretty(gold_answer)
        right = _pretty(execution.get("final")) if "final" in execution else ""
        same = gold_answer is not None and "final" in execution and gold_answer == execution.get("final")
        rows.append(("answer", left, right, same))
    _side_by_side("Gold vs predicted calls", "gold", "predicted", rows)


def _stateful_view(row: dict[str, Any], ref: Any, verdicts: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    if ref is not None:
        _section("Task")
        _plain(ref.get("text"))
        _section("Reference program")
        _plain(ref.get("reference"))
    cases = None
    for v in verdicts.values():
        if isinstance(v, dict) and isinstance(v.get("cases"), list):
            cases = v["cases"]
            break
    if cases is None and isinstance(row["execution"], list):
        cases = row["execution"]
    if not cases:
        return
    _section("Test cases")
    table = Table()
    for col in ("case", "verdict", "reason", "seconds"):
        table.add_column(col, overflow="fold")
    for c in cases:
        if not isinstance(c, dict):
            table.add_row(Text(_pretty(c)), "", "", "")
            continue
        verdict = str(c.get("verdict"))
        table.add_row(
            Text(str(c.get("case"))),
            Text(verdict, style="green" if verdict == "pass" else "red"),
            Text("" if c.get("reason") is None else str(c.get("reason"))),
            Text("" if c.get("duration_s") is None else str(c.get("duration_s"))),
        )
    out_console.print(table)


def _webapi_verdict(mode: str, v: dict[str, Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    parts = [f"sample {v.get('sample')}"] + [f"{k} {v.get(k)}" for k in ("url", "method", "endpoint") if v.get(k)]
    if v.get("error"):
        parts.append(f"error {v['error']}")
    _plain(f"{mode}: " + ", ".join(parts))
    args = v.get("arguments") or []
    if args:
        table = Table(title=None)
        for col in ("location", "name", "verdict", "expected", "actual"):
            table.add_column(col, overflow="fold")
        for a in args:
            if not isinstance(a, dict):
                continue
            verdict = str(a.get("verdict"))
            cred = " (credential)" if a.get("credential") else ""
            table.add_row(
                Text(str(a.get("location"))),
                Text(str(a.get("name")) + cred),
                Text(verdict, style="green" if verdict == "correct" else "red"),
                Text(_pretty(a.get("expected")) if a.get("expected") is not None else ""),
                Text(_pretty(a.get("actual")) if a.get("actual") is not None else ""),
            )
        out_console.print(table)
    if v.get("expected_counts"):
        _plain(f"  expected arguments (not executed): {json.dumps(v['expected_counts'])}")


def _generic_verdict(mode: str, v: Any) -> None:
    if not isinstance(v, dict):
        _plain(f"{mode}: {_pretty(v)}")
        return
    _plain(f"{mode}:")
    for k, value in v.items():
        if k == "cases":  # shown in the test-case table
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        _plain(f"  {k}: {text}")


class SampleShow:
    """How ``callbench show`` prints the track's part of a sample: the titles of the parsed and
    executed sections, their text, the sample beside its task and each scoring mode's verdict. A
    track's definition names its subclass (``show``); a track that names none gets this one, which
    prints the stored values and the task as it was loaded."""

    parsed_title = "Parsed"
    execution_title = "Execution"

    def parsed_text(self, parsed: str | None) -> str:
        return "(nothing parsed)" if parsed is None else parsed

    def execution(self, execution: Any) -> None:
        _plain("(nothing executed)" if execution is None else _pretty(execution))

    def reference(self, row: dict[str, Any], task: Any, verdicts: dict[str, Any]) -> None:
        if task is not None:
            _section("Reference")
            _plain(_pretty(task))

    def verdict(self, mode: str, v: Any) -> None:
        _generic_verdict(mode, v)


class WebApiShow(SampleShow):
    """Expected vs generated request; argument verdicts as a table."""

    parsed_title = "Parsed code"
    execution_title = "Execution: captured request"

    def reference(self, row: dict[str, Any], task: Any, verdicts: dict[str, Any]) -> None:
        _webapi_view(row, task)

    def verdict(self, mode: str, v: Any) -> None:
        if isinstance(v, dict):
            _webapi_verdict(mode, v)
        else:
            _generic_verdict(mode, v)


class NestedShow(SampleShow):
    """Gold vs predicted calls, the parsed call list one call a line."""

    parsed_title = "Parsed calls"
    execution_title = "Execution: executed calls"

    def parsed_text(self, parsed: str | None) -> str:
        if parsed is None:
            return "(nothing parsed)"
        calls = _stored_json(parsed)
        if isinstance(calls, list):
            return "\n".join(json.dumps(c, ensure_ascii=False, default=str) for c in calls)
        return parsed

    def reference(self, row: dict[str, Any], task: Any, verdicts: dict[str, Any]) -> None:
        _nested_view(row, task)


class StatefulShow(SampleShow):
    """The task, its reference program and the per-test-case results."""

    parsed_title = "Parsed program"
    execution_title = "Execution: program runs"

    def execution(self, execution: Any) -> None:
        if isinstance(execution, list):
            _plain(f"{len(execution)} test case run(s): see Test cases below")
        else:
            super().execution(execution)

    def reference(self, row: dict[str, Any], task: Any, verdicts: dict[str, Any]) -> None:
        _stateful_view(row, task, verdicts)


def _show_view(track: str) -> SampleShow:
    from callbench.tracks.definition import find_definition, resolve

    definition = find_definition(track)
    if definition is None or definition.show is None:
        return SampleShow()
    view: SampleShow = resolve(definition.show)()
    return view


def _parsed_text(track: str, parsed: str | None) -> str:
    """Parsed code as the track's ``show`` prints it (a nested call list one call a line)."""
    return _show_view(track).parsed_text(parsed)


@app.command("show")
def show_cmd(
    run: Annotated[Path, typer.Argument(help="Run directory.")],
    sample_id: Annotated[str, typer.Argument(help="Sample id (as in the run's rows, e.g. asana_12).")],
    data: Annotated[
        Path | None,
        typer.Option(
            "--data",
            help="Task file (webapi: or data dir; stateful: benchmark dir) the run used, for the reference; "
            "default: found by the digest the run recorded.",
        ),
    ] = None,
) -> None:
    """Print one sample in full, beside the benchmark's reference.

    Prompt, raw output, parsed code or calls, execution, each scoring mode's verdict and the error;
    webapi: expected vs generated request; nested: gold vs predicted calls; stateful: reference
    program and per-test-case results."""
    from callbench.results import find_sample, read_run, reference_for

    try:
        stored = read_run(run)
        row = find_sample(stored, sample_id)
    except CallbenchError as exc:
        fail(exc)
    ref = reference_for(stored, sample_id, data)
    ident = stored.identity
    track = stored.track
    verdicts = row["verdicts"] if isinstance(row["verdicts"], dict) else {}

    _section(f"{row['id']} ({track}, {row['grp']})")
    head = [
        f"run: {stored.directory.name}",
        f"model: {ident.get('model')}" + (f", setup: {ident['setup']}" if ident.get("setup") else "")
        + (", constrained" if ident.get("constrained") else ""),
        f"status: {row['status']}",
        f"latency: {_seconds(row['latency_s'])}"
        + (
            f", tokens: {row['prompt_tokens']} prompt / {row['completion_tokens']} completion"
            if row["prompt_tokens"] is not None or row["completion_tokens"] is not None
            else ""
        )
        + (f", answer mode: {row['mode']}" if row.get("mode") else ""),
    ]
    if ref.path is not None:
        head.append(f"reference: {ref.path}")
    for line in head:
        _plain(line)
    if ref.note:
        out_console.print(ref.note, style="yellow", markup=False, highlight=False, soft_wrap=True)

    extra = row["extra"] if isinstance(row["extra"], dict) else {}
    rendered = extra.get("prompt_sent")  # an in-process chat template, as the model got it
    sent = row.get("mode")  # what the backend was given: a completion prompt or chat messages
    if isinstance(rendered, str):
        prefilled = extra.get("prompt_format") == "chat-prefill"
        _section("Prompt as sent (chat template rendered" + (", answer prefilled)" if prefilled else ")"))
        _plain(rendered)
    elif row["messages"] and sent != "completion":
        _section("Messages")
        for m in row["messages"]:
            if isinstance(m, dict):
                _plain(f"[{m.get('role')}]")
                _plain(m.get("content") if isinstance(m.get("content"), str) else _pretty(m.get("content")))
            else:
                _plain(_pretty(m))
    if not isinstance(rendered, str) and row["prompt"] and (sent != "chat" or not row["messages"]):
        _section("Prompt")
        _plain(row["prompt"])
    _section("Raw output")
    _plain(row["raw_output"])
    view = _show_view(track)
    _section(view.parsed_title)
    _plain(view.parsed_text(row["parsed"]))
    _section(view.execution_title)
    view.execution(row["execution"])
    view.reference(row, ref.task, verdicts)

    _section("Verdicts")
    if not verdicts:
        _plain("(none stored)")
    for mode, v in verdicts.items():
        view.verdict(mode, v)
    shown = {k: v for k, v in extra.items() if k not in ("prompt_sent", "prompt_decoded")} if extra else row["extra"]
    if shown:
        _section("Extra")
        _plain(_pretty(shown))
    _section("Error")
    _plain(row["error"] if row["error"] else "(none)")


# -- list ------------------------------------------------------------------------------------------

_MODEL_SPECS = {
    "gold": "gold (the reference answers: a pipeline self-check)",
    "replay": "replay:FILE (outputs produced elsewhere)",
    "openai": "openai:MODEL@BASE_URL (any OpenAI-compatible server)",
    "llamacpp": "llamacpp:PATH|default (in-process GGUF)",
    "hf": "hf:PATH (in-process transformers)",
}


@app.command("list")
def list_cmd(
    data: Annotated[Path | None, typer.Option("--data", help="Data dir (default: $CALLBENCH_DATA_DIR or the user cache).")] = None,
) -> None:
    """List the tracks, the datasets (with their number of tasks where present), the stateful
    scenarios and the model backends."""
    from callbench.models.registry import available_models
    from callbench.results import datasets, scenario_descriptions, stateful_builtin_counts
    from callbench.tracks.definition import description, track_names

    def rows(title: str, items: list[tuple[str, ...]]) -> None:
        out_console.print(f"[bold]{title}[/bold]", highlight=False, soft_wrap=True)
        widths = [max((len(i[k]) for i in items if k < len(i)), default=0) for k in range(max(map(len, items), default=0))]
        for item in items:
            cells = [c.ljust(widths[k]) if k < len(item) - 1 else c for k, c in enumerate(item)]
            _plain("  " + "  ".join(cells).rstrip())

    try:
        root, found = datasets(data)
    except CallbenchError as exc:
        fail(exc)
    rows("Tracks", [(t, description(t)) for t in track_names()])
    out_console.print("")
    rows(f"Datasets (data dir {path_text(root)})", [(d.name, d.track, d.size) for d in found])
    counts = stateful_builtin_counts()
    scen = [
        (name, f"{counts[name]} built-in tasks" if name in counts else "no built-in tasks", desc)
        for name, desc in scenario_descriptions().items()
    ]
    out_console.print("")
    rows("Stateful scenarios", scen)
    out_console.print("")
    rows("Model backends", [(m, _MODEL_SPECS.get(m, "(plugin)")) for m in available_models()])
