"""The nested track's definition (see :mod:`callbench.tracks.definition`): light to import, the
track itself is loaded on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from callbench.errors import ConfigError
from callbench.tracks.definition import Flag, Note, PathText, TaskSource, TrackDefinition, opt, register

_DATA = "Data and selection"
_SETTING = "Prompt and setting"


class NestedSettings(BaseModel):
    """The nested track's options (:class:`~callbench.tracks.nested.track.NestedOptions`), the one
    source of ``callbench run nested``'s own flags and ``callbench.run("nested", ...)``'s keywords.
    ``mode`` None is ``direct`` (``strategy``: its deprecated alias)."""

    model_config = ConfigDict(extra="forbid")

    data: Annotated[PathText | None, Flag(cli_type=Path, panel=_DATA)] = Field(
        None, description="Task file (NESTFUL v1/v2 JSON/JSONL or HF parquet); default: callbench's own generated set."
    )
    shots: Annotated[int, Flag(panel=_DATA)] = Field(0, description="In-context examples (0-3, the published NESTFUL examples).")
    icl_file: Annotated[PathText | None, Flag(name="icl", cli_type=Path, panel=_DATA)] = Field(
        None, description="In-context examples file (v2 schema)."
    )
    functions: Annotated[PathText | None, Flag(cli_type=Path, panel=_DATA)] = Field(
        None, description="Directory of Python files with executable tools."
    )
    code_functions: Annotated[str | None, Flag(panel=_DATA)] = Field(
        None,
        description="NESTFUL's code-domain tool files: a directory with func_file_map.json and the files it names "
        "(default: the ones 'callbench data fetch nestful' got; 'none': off, those rows are listed as not executable).",
    )
    mode: Annotated[str | None, Flag(panel="Model")] = Field(
        None,
        description="direct (default: the whole call list in one answer), react (one call per turn as text, executed, "
        "output fed back) or tools (the server's native tool-calling API, one turn per round of calls). "
        "The backend's own mode is set with --model-arg mode=chat|completion (default for llamacpp:/hf:: an "
        "instruct model with a chat template gets it with callbench's prompt; published templates, which hold "
        "their model's chat markup, go as completion prompts).",
    )
    strategy: Annotated[str | None, Flag(hidden=True, panel=_SETTING)] = Field(None, description="Deprecated alias of --mode.")
    max_steps: Annotated[int, Flag(panel=_SETTING)] = Field(12, description="react, tools: most model turns per task.")
    call_timeout_s: float = Field(5.0, description="Seconds one tool call may run.")
    sample_timeout_s: Annotated[float | None, Flag(name="sample_timeout", panel=_SETTING)] = Field(
        600.0,
        description="Seconds one sample may spend executing its calls (a whole episode with --mode react/tools); "
        "past it the sample is a timeout, scored wrong.",
    )
    constrained: Annotated[bool, Flag(panel="Constrained decoding")] = Field(
        False,
        description="Reference-aware constrained decoding: only catalog tools, their parameters, typed values and "
        "references to earlier labels' outputs can be written (llamacpp:, hf:).",
    )
    prompt: Annotated[str | None, Flag(panel=_SETTING)] = Field(
        None,
        description="callbench (default: callbench's own versioned prompt) or published (NESTFUL's template for the "
        "model's family, from the fetched PROMPTS.json; direct mode).",
    )
    prompt_template: Annotated[str | None, Flag(panel=_SETTING)] = Field(
        None,
        description="auto (the model's family), a family (granite, llama, mistral, mixtral, xlam, hammer, hermes, "
        "toolace, gorilla, command-r), a template name from PROMPTS.json, or callbench-v1.",
    )
    prompts_file: Annotated[PathText | None, Flag(cli_type=Path, panel=_SETTING)] = Field(
        None, description="PROMPTS.json to read (default: the one 'data fetch nestful' got)."
    )
    model_spec: str | None = Field(None, description="The model's spec (default: the run's model).")
    parser: Annotated[str | None, Flag(panel=_SETTING)] = Field(
        None,
        description="How --scoring compat reads a direct answer: a model name NESTFUL's scorer knows, which picks that "
        "family's parser as the published scorer does (Hammer2.0-7b, granite-3.0-8b-instruct, "
        "granite-3.1-8b-instruct, Granite-20B-FunctionCalling, Llama-3.1-8B-Instruct, llama-3-70b-instruct, "
        "xLAM-7b-fc-r, Mistral-7B-Instruct-v0.3, Hermes-2-Pro-Mistral-7B, ToolAce-8b, DeepSeek-V3, and the "
        "other names of those families), or lenient (callbench's reader: prose, fences, tags, single objects). "
        "Default: the parser of the published template's model with --prompt published, else lenient. "
        "Strict scoring always uses the lenient reader.",
    )


def _prepare(settings: NestedSettings, run: dict[str, Any]) -> dict[str, Any]:
    """The track's options: ``--mode`` (or its alias ``--strategy``), default direct."""
    mode, strategy = settings.mode, settings.strategy
    if mode in ("chat", "completion"):
        raise ConfigError(
            f"--mode {mode}: for 'run nested' --mode is direct, react or tools; set the backend mode with --model-arg mode={mode}"
        )
    if strategy is not None and mode is not None and strategy != mode:
        raise ConfigError(f"--strategy {strategy} contradicts --mode {mode} (--strategy is a deprecated alias of --mode)")
    return {**settings.model_dump(exclude={"strategy"}), "mode": mode or strategy or "direct"}


def _notes(track: Any, run: dict[str, Any]) -> list[Note]:
    notes: list[Note] = []
    if track.data_note:
        notes.append(("dim", track.data_note))
    if track.published is not None:
        t = track.published
        notes.append(("dim", f"prompt: NESTFUL template '{t.key}' ({t.how}; {t.source})"))
    if run["scoring"] == "compat" or track.options.parser is not None:
        notes.append(("dim", f"compat parser: {track.parser}"))
    return notes


def _check_backend(track: Any, backend: Any, run: dict[str, Any]) -> list[Note]:
    notes: list[Note] = []
    if track.published is not None and getattr(backend, "mode", None) == "chat":
        notes.append((
            "dim",
            "note: the NESTFUL template is a completion prompt with its own chat markup; in chat mode it is sent as "
            "one user message (the paper's setup: --model-arg mode=completion)",
        ))
    if track.options.mode == "tools":
        from callbench.models.base import require_tools

        require_tools(backend, "--mode tools")
    return notes


#: ``callbench run nested``: its options in order (names: fields of NestedSettings or RunSettings).
COMMAND = (
    "model", "data", "shots", "icl_file", "functions", "code_functions", "mode", "strategy", "max_steps",
    opt("scoring", choices=("strict", "compat"), default="strict", help="strict (default) or compat (the published scorer)."),
    "limit", opt("per_group", help="The first N tasks of each domain (--limit then caps the total)."), "ids", "concurrency",
    opt("max_tokens", default=512, help="New tokens per sample (per turn in react and tools)."),
    opt("seed", help_extra=" This track decodes greedily (temperature 0): the seed changes no answer."),
    opt("model_options", help="Backend option KEY=VALUE (repeatable), e.g. mode=chat or mode=completion."),
    "out_dir", opt("run_id", help="Run directory name."), "constrained", "prompt", "prompt_template", "prompts_file",
    "parser", "sample_timeout_s", "progress", "retry_errors", "max_backend_error_rate", "count_backend_errors",
    "eval_workers", "unsafe_no_sandbox", "force", "rescore", "log_to", "config",
)

COMMAND_HELP = """Nested tool-call sequences (NESTFUL): answer with JSON calls whose arguments reference earlier outputs.

Scored on function/parameter F1, partial/full sequence accuracy, and win rate (the predicted
calls are executed in a sandboxed process and the final answer compared). Resumable.

--mode picks how the calls are written (direct, react or tools); the backend's chat or
completion mode is a backend option: --model-arg mode=chat."""


def _load(path: Path) -> dict[str, Any]:
    from callbench.tracks.nested.dataset import load_nested

    return {t.id: t for t in load_nested(path)}


def _defaults(root: Path | None) -> list[Path]:
    """The fetched NESTFUL (v2 first), then the built-in generated set."""
    from callbench.tracks.nested.dataset import FETCHED_V2_FILES, builtin_tasks

    paths = [] if root is None else [root / "nestful" / rel for rel in FETCHED_V2_FILES]
    return [*paths, Path(str(builtin_tasks()))]


DEFINITION = register(
    TrackDefinition(
        name="nested",
        track="callbench.tracks.nested.track:NestedTrack",
        options="callbench.tracks.nested.track:NestedOptions",
        description="a JSON sequence of tool calls whose arguments use earlier outputs, executed (NESTFUL)",
        view="callbench.report.nested:NestedView",
        summary="callbench.report.table:print_nested_summary",
        tasks=TaskSource(load=_load, defaults=_defaults),
        show="callbench.cli.results:NestedShow",
        model_option="model_spec",  # --prompt-template auto reads the model's family from its spec
        settings=NestedSettings,
        command=COMMAND,
        command_help=COMMAND_HELP,
        prepare=_prepare,
        notes=_notes,
        check_backend=_check_backend,
    )
)
