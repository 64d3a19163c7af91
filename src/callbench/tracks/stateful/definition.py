"""The stateful track's definition (see :mod:`callbench.tracks.definition`): light to import, the
track itself is loaded on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from callbench.tracks.definition import Flag, Note, PathText, TaskSource, TrackDefinition, opt, register

_DATA = "Data and selection"
_SETTING = "Prompt and setting"


class StatefulSettings(BaseModel):
    """The stateful track's options (:class:`~callbench.tracks.stateful.track.StatefulOptions`), the
    one source of ``callbench run stateful``'s own flags and ``callbench.run("stateful", ...)``'s
    keywords."""

    model_config = ConfigDict(extra="forbid")

    bench: Annotated[PathText | None, Flag(cli_type=Path, panel=_DATA)] = Field(
        None, description="Benchmark dir or tasks.jsonl (every tasks.jsonl below a dir); default: the built-in StateEval set."
    )
    samples: Annotated[int, Flag(panel=_DATA)] = Field(1, description="Programs drawn per task (pass@k needs k <= samples).")
    k: Annotated[tuple[int, ...], Flag(opts=("--k",), cli_type=list[int], panel=_DATA)] = Field(
        (), description="pass@k to report (repeatable; default: 1 and --samples)."
    )
    scenarios: Annotated[tuple[str, ...], Flag(name="scenario", cli_type=list[str], panel=_DATA)] = Field(
        (), description="Only these scenarios (repeatable)."
    )
    timeout_s: Annotated[float, Flag(name="timeout", panel=_SETTING)] = Field(
        20.0,
        description="CPU seconds per program run (start-up, imports and setup not charged; the wall clock is only "
        "a backstop, recorded as infra_timeout).",
    )
    temperature: Annotated[float | None, Flag(panel="Model")] = Field(
        None, description="Sampling temperature (default 0 for one sample, 0.8 for several)."
    )
    mode: Annotated[str, Flag(panel="Model")] = Field(
        "program", description="program (the model writes Python) or mcp (a tool-calling agent over the scenario's MCP server; voice)."
    )
    max_steps: Annotated[int, Flag(panel=_SETTING)] = Field(12, description="mcp: most model turns per test case.")


def _check_backend(track: Any, backend: Any, run: dict[str, Any]) -> list[Note]:
    """--mode mcp needs a backend that calls tools."""
    if track.options.mode == "mcp":
        from callbench.models.base import require_tools

        require_tools(backend, "--mode mcp")
    return []


#: ``callbench run stateful``: its options in order (names: fields of StatefulSettings or RunSettings).
COMMAND = (
    "model", "bench", "samples", "k", "scenarios", "temperature",
    opt("seed", help_extra=" Draw i of a task (i = 0 .. --samples - 1) uses seed + i, so the pass@k draws differ "
        "from each other and a re-run repeats them."),
    "timeout_s", "mode", "max_steps",
    opt("limit", help="Only the first N tasks (with all their --samples draws)."),
    opt("per_group", help="The first N tasks of each scenario (--limit then caps the total)."),
    opt("ids", help="Comma-separated sample ids."),
    opt("concurrency", default=4),
    opt("max_tokens", default=768, help="New tokens per program."),
    "model_options", "out_dir", opt("run_id", help="Run directory name."), "progress", "retry_errors",
    "max_backend_error_rate", "count_backend_errors", "eval_workers", "unsafe_no_sandbox", "force", "rescore", "log_to", "config",
)

COMMAND_HELP = """StateEval: the model writes a program from the task text; it runs in the sandbox against a fresh
service per test case and must match the reference's result and final state. Reports pass@k,
the error taxonomy and task complexity, per scenario. Resumable.

With --mode mcp a tool-calling agent (openai:M@URL in chat mode, or gold) works through the
scenario's MCP server, one episode per test case, and must leave the reference's final state and
answer with its result as JSON."""


def derived_columns(mode: str, verdict: dict[str, Any], out: dict[str, Any]) -> None:
    """How many test cases the program was run on and how many it passed."""
    cases = verdict.get("cases")
    if isinstance(cases, list):
        out[f"{mode}.n_cases"] = len(cases)
        out[f"{mode}.cases_passed"] = sum(1 for c in cases if isinstance(c, dict) and c.get("verdict") == "pass")


def _load(path: Path) -> dict[str, Any]:
    from callbench.tracks.stateful.track import load_bench

    return {t["id"]: t for t in load_bench(path)}


def _files(path: Path) -> list[Path]:
    from callbench.tracks.stateful.track import bench_files

    return bench_files(path)


def _defaults(root: Path | None) -> list[Path]:
    from callbench.tracks.stateful.track import builtin_bench

    return [builtin_bench()]


def _task_id(sample_id: str) -> str:
    """``task#2`` (the third sample of a pass@k task) -> ``task``."""
    return sample_id.split("#", 1)[0]


DEFINITION = register(
    TrackDefinition(
        name="stateful",
        track="callbench.tracks.stateful.track:StatefulTrack",
        options="callbench.tracks.stateful.track:StatefulOptions",
        description="Python programs against stateful APIs, run on fresh services per test case (StateEval)",
        view="callbench.report.stateful:StatefulView",
        summary="callbench.report.table:print_stateful_summary",
        columns=derived_columns,
        tasks=TaskSource(
            load=_load, defaults=_defaults, digest_key="bench_sha256", path_key="bench", files=_files, task_id=_task_id
        ),
        show="callbench.cli.results:StatefulShow",
        settings=StatefulSettings,
        command=COMMAND,
        command_help=COMMAND_HELP,
        check_backend=_check_backend,
    )
)
