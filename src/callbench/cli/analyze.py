"""``callbench analyze``: measurements of benchmark task files (``analyze complexity``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import fail, out_console
from callbench.cli.root import app
from callbench.errors import CallbenchError, ConfigError

analyze_app = typer.Typer(help="Measure benchmark task files.", no_args_is_help=True)
app.add_typer(analyze_app, name="analyze")


def _label(path: Path, *, builtin: bool) -> str:
    """How a file is named in the table and the JSON: ``stateval_v1/<scenario>`` for the built-in
    set, else the path relative to the working directory when it is below it."""
    if builtin:
        return f"stateval_v1/{path.parent.name}"
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


@analyze_app.command("complexity")
def complexity_cmd(
    files: Annotated[
        list[Path] | None,
        typer.Argument(help="Stateful task files (tasks.jsonl; also those of generate stateful --spec), nested task files of generate nested --spec (their gold call sequences), or directories (every tasks.jsonl below), or the published StateEval (its row files or trace folder: every row is measured, the ones callbench cannot run included); default: the built-in StateEval set."),
    ] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Also write the figures to this JSON file.")] = None,
    definition: Annotated[
        str,
        typer.Option(
            help="callbench (callbench's own counting: calls rooted at the scenario's API, data-flow edges between calls, chain length in calls) or upstream (StateGen's analyzer: every non-builtin, non-stdlib call written where it looks, variable-to-variable bindings, longest path in edges)."
        ),
    ] = "callbench",
) -> None:
    """Complexity of the reference programs of stateful task files: API calls, bindings (API result -> later API argument edges), path depth (longest chain of such edges, in calls) and non-blank code lines, as means per file and over all files. Recomputed from each task's reference program, so task files made by other generators compare on the same terms. The JSON has definition, mean_calls, mean_bindings, mean_path_depth, mean_lines and n_tasks over all tasks, and the same per file under 'files' and per scenario under 'by_scenario'."""
    from callbench.report.model import Column, Table
    from callbench.report.table import print_table
    from callbench.tracks.stateful.complexity import summarize
    from callbench.tracks.stateful.track import bench_files, builtin_bench
    from callbench.tracks.stateful.track import read_bench_file as read_tasks  # bounded parsing

    try:
        from callbench.tracks.stateful.complexity import DEFINITIONS
        from callbench.tracks.stateful.published import detect, references
        from callbench.tracks.stateful.spec_bench import register_bench

        if definition not in DEFINITIONS:
            raise ConfigError(f"--definition {definition}: choose from {', '.join(DEFINITIONS)}")

        sources: list[tuple[str, list[dict]]] = []  # (label, tasks) per file, or per published set
        seen: set[Path] = set()
        for f in files or [builtin_bench()]:
            published = detect(f) if files else None
            if published:
                sources.append((_label(f, builtin=False) + " (published StateEval)", references(published)))
                continue
            for p in bench_files(f):
                if p.resolve() not in seen:  # a file named twice counts once
                    seen.add(p.resolve())
                    register_bench(p)  # made with generate stateful --spec: its scenario from openapi/
                    sources.append((_label(p.resolve(), builtin=not files), read_tasks(p)))
        per_file: dict[str, dict] = {}
        by_scenario: dict[str, list[dict]] = {}
        every: list[dict] = []
        for label, tasks in sources:
            per_file[label] = summarize(tasks, definition)
            every.extend(tasks)
            for t in tasks:
                by_scenario.setdefault(str(t.get("scenario")), []).append(t)
        figures = {
            "definition": definition,
            **summarize(every, definition),
            "files": per_file,
            "by_scenario": {s: summarize(ts, definition) for s, ts in sorted(by_scenario.items())},
        }
        if json_out is not None:
            try:
                json_out.parent.mkdir(parents=True, exist_ok=True)
                json_out.write_text(json.dumps(figures, indent=1) + "\n", "utf-8")
            except OSError as exc:
                raise ConfigError(f"--json {json_out}: cannot write ({exc.strerror})") from None
    except CallbenchError as exc:
        fail(exc)
    table = Table(
        f"task complexity (means per task, {definition} definition)",
        [Column("file", align="left"), Column("tasks"), Column("calls"), Column("bindings"), Column("path depth"), Column("lines")],
        caption=(
            "calls: API calls in the reference; bindings: API result -> later API argument edges; "
            "path depth: longest chain of such edges, in calls; lines: non-blank code lines"
            if definition == "callbench"
            else "StateGen's analyzer: calls: distinct (function, line) calls that are not builtins or standard library; "
            "bindings: (variable read, variable assigned) pairs of API-derived values; path depth: longest path of them, in edges; "
            "lines: non-blank code lines"
        ),
    )

    def row(label: str, s: dict) -> None:
        cells = [s[k] for k in ("mean_calls", "mean_bindings", "mean_path_depth", "mean_lines")]
        table.add(label, str(s["n_tasks"]), *("-" if v is None else f"{v:.2f}" for v in cells))

    for name, s in per_file.items():
        row(name, s)
    if len(per_file) > 1:
        table.sections.append(len(table.rows))
        row("all", figures)
    print_table(out_console, table)
    if json_out is not None:
        out_console.print(f"figures: {json_out}", highlight=False)
