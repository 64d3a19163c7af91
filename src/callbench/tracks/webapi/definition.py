"""The web API track's definition (see :mod:`callbench.tracks.definition`): light to import, the
track itself is loaded on first use."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from callbench.constrain.profile_help import CD_PROFILE_HELP, VALUE_TYPES_HELP
from callbench.errors import ConfigError
from callbench.tracks.definition import Flag, Note, PathText, TaskSource, TrackDefinition, opt, register

_DATA = "Data and selection"
_SETTING = "Prompt and setting"
_CD = "Constrained decoding"

#: ``--mode``: the prompt format (the backend's mode; ``auto`` lets the backend choose).
MODES = ("auto", "chat", "completion")



class WebApiSettings(BaseModel):
    """The web API track's options (:class:`~callbench.tracks.webapi.track.WebApiOptions`), the one
    source of ``callbench run webapi``'s own flags and ``callbench.run("webapi", ...)``'s keywords.
    ``mode``, ``prompt``, ``cd_profile`` and ``value_types`` are read into the backend's mode,
    ``prompt_version`` and ``grammar_options`` (:func:`_prepare`)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    setup: Annotated[str, Flag(choices=("full", "args"), panel=_SETTING)] = Field(
        "full", description="full: complete from 'axios.'; args: method and URL given."
    )
    data: Annotated[PathText | None, Flag(cli_type=Path, panel=_DATA)] = Field(
        None, description="Data dir (default: $CALLBENCH_DATA_DIR or the user cache)."
    )
    tasks_file: Annotated[PathText | None, Flag(name="tasks", cli_type=Path, panel=_DATA)] = Field(
        None, description="Own task file (JSON list or JSONL) instead of WAPIIBench."
    )
    sandbox_timeout_s: float = Field(1.0, description="Seconds one program may run in the sandbox.")
    sandbox_memory_mb: int = Field(64, description="The sandbox's memory (MB).")
    mode: Annotated[str | None, Flag(panel="Model")] = Field(
        None,
        description="Prompt format: completion (base models: instructions + starter code), chat, or auto "
        "(default for llamacpp:/hf:: an instruct model whose GGUF/tokenizer has a chat template gets "
        "it, with the starter code prefilled as the start of its answer; base models get completion). "
        "openai: defaults to chat (the answer is parsed).",
    )
    prompt_version: Annotated[str, Flag(panel=_SETTING)] = Field(
        "v2",
        description="Prompt text: v2 (default; states where the credential goes and its placeholder), "
        "v1 (the paper-style text, which only names the placeholders) or published (WAPIIBench's own "
        "prompt file, fetched with the data; same as --prompt published).",
    )
    prompt: Annotated[str | None, Flag(panel=_SETTING)] = Field(
        None,
        description="callbench (default: callbench's own versioned prompt, see --prompt-version) or published "
        "(WAPIIBench's code-generation prompt as 'data fetch wapiibench' got it, filled as upstream; "
        "API chat models get it split at its first '. ' into system and user).",
    )
    context: Annotated[str, Flag(panel=_SETTING)] = Field(
        "none",
        description="Spec text before the task: none (default), rag (the endpoints most similar to the task, "
        "BM25 over the spec; the paper's RAG setting; needs callbench[rag]) or spec-excerpt (the "
        "expected endpoint's documentation only: an oracle upper bound). Combines with --constrained.",
    )
    context_k: Annotated[int, Flag(panel=_SETTING)] = Field(5, description="rag: endpoints retrieved.")
    context_chars: Annotated[int, Flag(panel=_SETTING)] = Field(
        30_000, description="Context cut (characters), at an endpoint boundary."
    )
    base_url_hint: Annotated[str, Flag(panel=_SETTING)] = Field(
        "auto",
        description="Name the API's base URL (the spec's first server) in the prompt: auto (default: only "
        "for APIs other than WAPIIBench's four, e.g. a private API in --tasks), on or off.",
    )
    chat_handling: Annotated[str, Flag(panel="Model")] = Field(
        "auto",
        description="How an instruct model run in-process (llamacpp:, hf: in chat mode) answers: prefill "
        "(callbench's: its answer starts with the starter code, so it continues it like a completion) or "
        "published (WAPIIBench's: it answers freely and the program is cut from the decoded text where "
        "the starter occurs, as upstream's generate() does; needs --prompt published). Default auto: "
        "published with --prompt published, else prefill.",
    )
    strict_data: Annotated[bool, Flag(panel=_DATA)] = Field(
        False,
        description="Fail on a task row whose gold request contradicts its spec (URL matching no path, "
        "undefined method or argument, missing required argument) instead of skipping it; skipped "
        "rows are listed in summary.json (data_findings) and the report.",
    )
    constrained: Annotated[bool, Flag(panel=_CD)] = Field(
        False,
        description="Constrained decoding: a grammar derived from the spec masks every token, so no illegal "
        "endpoint, method or argument can be written (llamacpp:, hf:, or a vLLM server via openai:).",
    )
    cd_profile: Annotated[Literal["callbench", "paper"] | None, Flag(choices=("callbench", "paper"), panel=_CD)] = Field(
        None, description=CD_PROFILE_HELP + " Needs --constrained."
    )
    value_types: Annotated[Literal["lenient", "paper"] | None, Flag(choices=("lenient", "paper"), panel=_CD)] = Field(
        None, description=VALUE_TYPES_HELP + " Needs --constrained."
    )
    grammar_options: object | None = Field(
        None, description="The grammar's options (a GrammarOptions; instead of cd_profile and value_types)."
    )


def _prepare(settings: WebApiSettings, run: dict[str, Any]) -> dict[str, Any]:
    """The track's options from the settings: --prompt into the prompt version, --cd-profile and
    --value-types into the grammar's options, --mode into the backend's options (checked first)."""
    s = settings
    if not s.constrained and (s.cd_profile is not None or s.value_types is not None):
        flag = "--cd-profile" if s.cd_profile is not None else "--value-types"
        raise ConfigError(f"{flag} shapes the grammar of constrained decoding: it needs --constrained")
    prompt_version = s.prompt_version
    if s.prompt not in (None, "callbench", "published"):
        raise ConfigError(f"--prompt '{s.prompt}': choose from callbench, published")
    if s.prompt == "published":
        if prompt_version not in ("v2", "published"):
            raise ConfigError(f"--prompt published replaces callbench's prompt versions: leave out --prompt-version {prompt_version}")
        prompt_version = "published"
    elif s.prompt == "callbench" and prompt_version == "published":
        raise ConfigError("--prompt callbench contradicts --prompt-version published")
    if s.mode is not None:
        options = run["model_options"]
        if s.mode not in MODES:
            raise ConfigError(f"--mode {s.mode}: choose from {', '.join(MODES)}")
        if "mode" in options and options["mode"] != s.mode:
            raise ConfigError(f"--mode {s.mode} contradicts --model-arg mode={options['mode']}")
        options["mode"] = s.mode
    grammar = s.grammar_options
    if grammar is not None and (s.cd_profile is not None or s.value_types is not None):
        flag = "cd_profile" if s.cd_profile is not None else "value_types"
        raise ConfigError(f"grammar_options and {flag} both shape the grammar: give one (set profile/value_types in the GrammarOptions)")
    if grammar is None and (s.cd_profile is not None or s.value_types is not None):  # None: the track's default
        from callbench.constrain.webapi_grammar import GrammarOptions

        # value_types None: the profile's (GrammarOptions takes None for it, its type says not)
        given: dict[str, Any] = {"profile": s.cd_profile or "callbench", "value_types": s.value_types}
        grammar = GrammarOptions(**given)
    own = s.model_dump(exclude={"mode", "prompt", "cd_profile", "value_types", "grammar_options"})
    return {**own, "prompt_version": prompt_version, "grammar_options": grammar}


def _notes(track: Any, run: dict[str, Any]) -> list[Note]:
    if track.published is not None:
        return [("dim", f"prompt: WAPIIBench's published prompt ({track.published.path})")]
    return []


def _check_backend(track: Any, backend: Any, run: dict[str, Any]) -> list[Note]:
    if backend.mode != "completion" and str(run["model"]).startswith("gold"):
        raise ConfigError("gold answers in completion mode only")
    if backend.identity.startswith("llamacpp") and getattr(backend, "note", None):
        return [("yellow", backend.note)]
    return []


#: ``callbench run webapi``: its options in order (names: fields of WebApiSettings or RunSettings).
COMMAND = (
    opt("model", help="Backend spec: gold | replay:FILE | openai:MODEL@BASE_URL | llamacpp:PATH|default | hf:PATH | litellm:PROVIDER/MODEL."),
    "setup",
    opt("scoring", choices=("strict", "compat"), default="strict",
        help="strict (schema-aware values, case-insensitive headers) or compat (published scorer)."),
    opt("limit", help="Only the first N tasks (after --api/--ids)."),
    opt("per_group", help="The first N tasks of each API (after --api/--ids; --limit then caps the total)."),
    opt("ids", help="Comma-separated task ids, e.g. asana_0,slack_12."),
    opt("groups", name="api", help="Comma-separated APIs, e.g. slack,asana."),
    "concurrency",
    opt("max_tokens", default=250, help="New tokens per sample."),
    opt("temperature", default=0.0, help="0 = greedy."),
    "seed", "mode", "prompt_version", "prompt", "context", "context_k", "context_chars", "base_url_hint", "chat_handling",
    opt("model_options", help="Backend option KEY=VALUE (repeatable), e.g. n_threads=1, token_healing=false."),
    "tasks_file", "strict_data", "data", "out_dir", "run_id", "constrained", "cd_profile", "value_types", "progress",
    "retry_errors", "max_backend_error_rate", "count_backend_errors", "eval_workers", "force", "rescore", "log_to", "config",
)

COMMAND_HELP = """Web API invocation (WAPIIBench): complete Axios code, run it sandboxed, score the request.

Re-running the same command resumes: finished samples are kept and skipped.

Local backends (llamacpp:, hf:) heal the prompt boundary: the prompt is backed up by its last
token and the answer must start by re-writing it (so 'axios.' is not left as a bare '.' token)."""

_ARGUMENT_VERDICTS = ("correct", "incorrect_value", "missing", "unnecessary", "illegal")


def derived_columns(mode: str, verdict: dict[str, Any], out: dict[str, Any]) -> None:
    """Booleans and counts that make each WAPIIBench rate the mean of a column."""
    from callbench.tracks.webapi.scoring import SampleVerdict, correct_except_credentials

    out[f"{mode}.correct"] = verdict.get("sample") == "correct"
    out[f"{mode}.executable"] = verdict.get("error") is None
    for part in ("url", "method", "endpoint"):
        value = verdict.get(part)
        out[f"{mode}.{part}_correct"] = None if value is None else value == "correct"
    try:
        out[f"{mode}.correct_except_credentials"] = correct_except_credentials(SampleVerdict.from_dict(verdict))
    except (TypeError, ValueError, AttributeError):  # a verdict of an older shape: unknown
        out[f"{mode}.correct_except_credentials"] = None
    args = verdict.get("arguments")
    args = args if isinstance(args, list) else []
    for kind in _ARGUMENT_VERDICTS:
        out[f"{mode}.arguments_{kind}"] = sum(1 for a in args if isinstance(a, dict) and a.get("verdict") == kind)


def _load(path: Path) -> dict[str, Any]:
    from callbench.tracks.webapi.dataset import load_tasks

    return {t.id: t for t in load_tasks(path)}


def _defaults(root: Path | None) -> list[Path]:
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

    return [] if root is None else [root / DEFAULT_DATA_FILE]


def _given(path: Path) -> Path:
    """``--data`` may name the data dir: the task file is then the fetched WAPIIBench's."""
    from callbench.tracks.webapi.dataset import DEFAULT_DATA_FILE

    return path / DEFAULT_DATA_FILE if path.is_dir() else path


DEFINITION = register(
    TrackDefinition(
        name="webapi",
        track="callbench.tracks.webapi.track:WebApiTrack",
        options="callbench.tracks.webapi.track:WebApiOptions",
        description="JavaScript/Axios code for one HTTP request, scored against the request and the OpenAPI spec (WAPIIBench)",
        view="callbench.report.webapi:WebApiView",
        summary="callbench.report.table:print_summary",
        columns=derived_columns,
        tasks=TaskSource(load=_load, defaults=_defaults, given=_given),
        show="callbench.cli.results:WebApiShow",
        settings=WebApiSettings,
        command=COMMAND,
        command_help=COMMAND_HELP,
        prepare=_prepare,
        notes=_notes,
        check_backend=_check_backend,
    )
)
