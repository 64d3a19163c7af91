"""``callbench generate nested``: executable nested tasks (``generate stateful`` lives with the
stateful track's other commands in :mod:`callbench.cli.stateful`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import UnsafeNoSandbox, err_console, fail, out_console, setup_sandbox
from callbench.cli.root import generate_app
from callbench.errors import CallbenchError, ConfigError


@generate_app.command("nested")
def generate_nested(
    n: Annotated[int, typer.Option(help="Number of tasks.")] = 200,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same tasks).")] = 0,
    out: Annotated[Path, typer.Option(help="Output JSONL file (NESTFUL v2 schema).")] = Path("tasks.jsonl"),
    min_calls: Annotated[int, typer.Option(help="Fewest calls per task.")] = 2,
    max_calls: Annotated[int, typer.Option(help="Most calls per task.")] = 6,
    fan_in: Annotated[int, typer.Option(help="Most earlier outputs one call may take.")] = 2,
    distractors: Annotated[int, typer.Option(help="Unused tools added to each task's catalog.")] = 3,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
) -> None:
    """Executable nested tasks over the built-in MathQA tools; gold answers computed by execution."""
    from rich.progress import Progress

    from callbench.tracks.nested.generator import generate_tasks, write_jsonl

    if n < 1 or min_calls < 1 or max_calls < min_calls or fan_in < 1 or distractors < 0:
        fail(ConfigError("need n >= 1, 1 <= min-calls <= max-calls, fan-in >= 1, distractors >= 0"))
    try:
        setup_sandbox(unsafe_no_sandbox)
        with Progress(console=err_console, transient=True) as progress:
            progress.add_task(f"generating {n} tasks", total=None)
            rows = generate_tasks(n, seed, min_calls=min_calls, max_calls=max_calls, fan_in=fan_in, distractors=distractors)
    except CallbenchError as exc:
        fail(exc)
    try:
        write_jsonl(rows, out)
    except OSError as exc:
        fail(ConfigError(f"--out {out}: cannot write ({exc.strerror}); pass a file path in a writable directory"))
    out_console.print(f"{len(rows)} tasks written to {out}")
