"""``callbench run webapi`` and ``callbench run nested`` (``run stateful`` lives with the
stateful track's other commands in :mod:`callbench.cli.stateful`)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from callbench.cli.options import (
    CD_PROFILE_HELP,
    VALUE_TYPES_HELP,
    CdProfile,
    ConfigFile,
    CountBackendErrors,
    EvalWorkers,
    Force,
    GreedySeed,
    MaxBackendErrorRate,
    Rescore,
    RetryErrors,
    Scoring,
    Seed,
    Setup,
    UnsafeNoSandbox,
    ValueTypes,
    check_seed,
    csv_list,
    err_console,
    fail,
    grammar_options,
    parse_model_args,
    path_text,
    print_outcome,
    run_track,
    setup_sandbox,
)
from callbench.cli.root import run_app
from callbench.errors import CallbenchError, ConfigError

#: ``run webapi --mode``: the prompt format (the backend's mode; ``auto`` lets the backend choose).
WEBAPI_MODES = ("auto", "chat", "completion")


@run_app.command("webapi")
def run_webapi(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="Backend spec: gold | replay:FILE | openai:MODEL@BASE_URL | llamacpp:PATH|default | hf:PATH | litellm:PROVIDER/MODEL.",
        ),
    ],
    setup: Annotated[Setup, typer.Option(help="full: complete from 'axios.'; args: method and URL given.")] = Setup.full,
    scoring: Annotated[
        Scoring, typer.Option(help="strict (schema-aware values, case-insensitive headers) or compat (published scorer).")
    ] = Scoring.strict,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks (after --api/--ids).")] = None,
    per_group: Annotated[
        int | None, typer.Option("--per-group", help="The first N tasks of each API (after --api/--ids; --limit then caps the total).")
    ] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated task ids, e.g. asana_0,slack_12.")] = None,
    api: Annotated[str | None, typer.Option(help="Comma-separated APIs, e.g. slack,asana.")] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (bounded by the backend).")] = 8,
    max_tokens: Annotated[int, typer.Option(help="New tokens per sample.")] = 250,
    temperature: Annotated[float, typer.Option(help="0 = greedy.")] = 0.0,
    seed: Seed = 0,
    mode: Annotated[
        str | None,
        typer.Option(
            help="Prompt format: completion (base models: instructions + starter code), chat, or auto "
            "(default for llamacpp:/hf:: an instruct model whose GGUF/tokenizer has a chat template gets "
            "it, with the starter code prefilled as the start of its answer; base models get completion). "
            "openai: defaults to chat (the answer is parsed)."
        ),
    ] = None,
    prompt_version: Annotated[
        str,
        typer.Option(
            "--prompt-version",
            help="Prompt text: v2 (default; states where the credential goes and its placeholder), "
            "v1 (the paper-style text, which only names the placeholders) or published (WAPIIBench's own "
            "prompt file, fetched with the data; same as --prompt published).",
        ),
    ] = "v2",
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            help="callbench (default: callbench's own versioned prompt, see --prompt-version) or published "
            "(WAPIIBench's code-generation prompt as 'data fetch wapiibench' got it, filled as upstream; "
            "API chat models get it split at its first '. ' into system and user).",
        ),
    ] = None,
    context: Annotated[
        str,
        typer.Option(
            "--context",
            help="Spec text before the task: none (default), rag (the endpoints most similar to the task, "
            "BM25 over the spec; the paper's RAG setting; needs callbench[rag]) or spec-excerpt (the "
            "expected endpoint's documentation only: an oracle upper bound). Combines with --constrained.",
        ),
    ] = "none",
    context_k: Annotated[int, typer.Option("--context-k", help="rag: endpoints retrieved.")] = 5,
    context_chars: Annotated[
        int, typer.Option("--context-chars", help="Context cut (characters), at an endpoint boundary.")
    ] = 30_000,
    base_url_hint: Annotated[
        str,
        typer.Option(
            "--base-url-hint",
            help="Name the API's base URL (the spec's first server) in the prompt: auto (default: only "
            "for APIs other than WAPIIBench's four, e.g. a private API in --tasks), on or off.",
        ),
    ] = "auto",
    chat_handling: Annotated[
        str,
        typer.Option(
            "--chat-handling",
            help="How an instruct model run in-process (llamacpp:, hf: in chat mode) answers: prefill "
            "(callbench's: its answer starts with the starter code, so it continues it like a completion) or "
            "published (WAPIIBench's: it answers freely and the program is cut from the decoded text where "
            "the starter occurs, as upstream's generate() does; needs --prompt published). Default auto: "
            "published with --prompt published, else prefill.",
        ),
    ] = "auto",
    model_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--model-arg",
            help="Backend option KEY=VALUE (repeatable), e.g. n_threads=1, token_healing=false.",
        ),
    ] = None,
    tasks: Annotated[Path | None, typer.Option(help="Own task file (JSON list or JSONL) instead of WAPIIBench.")] = None,
    strict_data: Annotated[
        bool,
        typer.Option(
            "--strict-data",
            help="Fail on a task row whose gold request contradicts its spec (URL matching no path, "
            "undefined method or argument, missing required argument) instead of skipping it; skipped "
            "rows are listed in summary.json (data_findings) and the report.",
        ),
    ] = False,
    data: Annotated[Path | None, typer.Option("--data", help="Data dir (default: $CALLBENCH_DATA_DIR or the user cache).")] = None,
    out: Annotated[Path, typer.Option(help="Directory that holds run directories.")] = Path("runs"),
    run_id: Annotated[str | None, typer.Option(help="Run directory name (default: derived from the settings).")] = None,
    constrained: Annotated[
        bool,
        typer.Option(
            "--constrained",
            help="Constrained decoding: a grammar derived from the spec masks every token, so no illegal "
            "endpoint, method or argument can be written (llamacpp:, hf:, or a vLLM server via openai:).",
        ),
    ] = False,
    cd_profile: Annotated[
        CdProfile | None, typer.Option("--cd-profile", help=CD_PROFILE_HELP + " Needs --constrained.")
    ] = None,
    value_types: Annotated[
        ValueTypes | None, typer.Option("--value-types", help=VALUE_TYPES_HELP + " Needs --constrained.")
    ] = None,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Hide the progress bar.")] = False,
    retry_errors: RetryErrors = False,
    max_backend_error_rate: MaxBackendErrorRate = 0.2,
    count_backend_errors: CountBackendErrors = False,
    eval_workers: EvalWorkers = None,
    force: Force = False,
    rescore: Rescore = False,
    config: ConfigFile = None,
) -> None:
    """Web API invocation (WAPIIBench): complete Axios code, run it sandboxed, score the request.

    Re-running the same command resumes: finished samples are kept and skipped.

    Local backends (llamacpp:, hf:) heal the prompt boundary: the prompt is backed up by its last
    token and the answer must start by re-writing it (so 'axios.' is not left as a bare '.' token).
    """
    from callbench.api import answer_mode, load_backend, make_track
    from callbench.models.registry import check_model_options
    from callbench.report.table import print_summary
    from callbench.runs.runner import RunOptions

    try:
        check_seed(seed)
        if not constrained and (cd_profile is not None or value_types is not None):
            flag = "--cd-profile" if cd_profile is not None else "--value-types"
            raise ConfigError(f"{flag} shapes the grammar of constrained decoding: it needs --constrained")
        id_list, api_list = csv_list(ids, "--ids"), csv_list(api, "--api")
        if prompt not in (None, "callbench", "published"):
            raise ConfigError(f"--prompt '{prompt}': choose from callbench, published")
        if prompt == "published":
            if prompt_version not in ("v2", "published"):
                raise ConfigError(f"--prompt published replaces callbench's prompt versions: leave out --prompt-version {prompt_version}")
            prompt_version = "published"
        elif prompt == "callbench" and prompt_version == "published":
            raise ConfigError("--prompt callbench contradicts --prompt-version published")
        opts = parse_model_args(model_arg)
        if mode is not None:
            if mode not in WEBAPI_MODES:
                raise ConfigError(f"--mode {mode}: choose from {', '.join(WEBAPI_MODES)}")
            if "mode" in opts and opts["mode"] != mode:
                raise ConfigError(f"--mode {mode} contradicts --model-arg mode={opts['mode']}")
            opts["mode"] = mode
        check_model_options(model, opts)  # before the data and the weights load
        track = make_track(
            "webapi",
            setup=setup.value,
            data=str(data) if data else None,
            tasks_file=str(tasks) if tasks else None,
            constrained=constrained,
            grammar_options=grammar_options(cd_profile, value_types) if constrained else None,
            prompt_version=prompt_version,
            context=context,
            context_k=context_k,
            context_chars=context_chars,
            base_url_hint=base_url_hint,
            strict_data=strict_data,
            chat_handling=chat_handling,
        )
        if track.published is not None:
            err_console.print(f"[dim]prompt: WAPIIBench's published prompt ({escape(path_text(track.published.path))})[/dim]")
        backend = load_backend(model, opts, concurrency=concurrency, track=track, constrained=constrained)
        if backend.mode != "completion" and model.startswith("gold"):
            raise ConfigError("gold answers in completion mode only")
        gen = track.default_generation(answer_mode(backend, track))
        gen = dataclasses.replace(gen, max_tokens=max_tokens, temperature=temperature, seed=seed)
        if backend.identity.startswith("llamacpp") and getattr(backend, "note", None):
            err_console.print(f"[yellow]{escape(backend.note)}[/yellow]")
        outcome = run_track(
            track,
            backend,
            RunOptions(
                out_dir=out,
                run_id=run_id,
                limit=limit,
                per_group=per_group,
                ids=id_list,
                groups=api_list,
                concurrency=concurrency,
                scoring=scoring.value,
                generation=gen,
                progress=not no_progress,
                retry_errors=retry_errors,
                max_backend_error_rate=max_backend_error_rate,
                count_backend_errors=count_backend_errors,
                eval_workers=eval_workers,
                force=force,
                rescore=rescore,
            ),
            config_file=config,
        )
    except CallbenchError as exc:
        fail(exc)
    print_outcome(outcome, print_summary)


@run_app.command("nested")
def run_nested(
    model: Annotated[str, typer.Option("--model", "-m", help="Backend spec, as for 'run webapi'.")],
    data: Annotated[
        Path | None,
        typer.Option("--data", help="Task file (NESTFUL v1/v2 JSON/JSONL or HF parquet); default: callbench's own generated set."),
    ] = None,
    shots: Annotated[int, typer.Option(help="In-context examples (0-3, the published NESTFUL examples).")] = 0,
    icl: Annotated[Path | None, typer.Option(help="In-context examples file (v2 schema).")] = None,
    functions: Annotated[Path | None, typer.Option(help="Directory of Python files with executable tools.")] = None,
    code_functions: Annotated[
        str | None,
        typer.Option(
            "--code-functions",
            help="NESTFUL's code-domain tool files: a directory with func_file_map.json and the files it names "
            "(default: the ones 'callbench data fetch nestful' got; 'none': off, those rows are listed as not executable).",
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="direct (default: the whole call list in one answer), react (one call per turn as text, executed, "
            "output fed back) or tools (the server's native tool-calling API, one turn per round of calls). "
            "The backend's own mode is set with --model-arg mode=chat|completion (default for llamacpp:/hf:: an "
            "instruct model with a chat template gets it with callbench's prompt; published templates, which hold "
            "their model's chat markup, go as completion prompts).",
        ),
    ] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", hidden=True, help="Deprecated alias of --mode.")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", help="react, tools: most model turns per task.")] = 12,
    scoring: Annotated[Scoring, typer.Option(help="strict (default) or compat (the published scorer).")] = Scoring.strict,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    per_group: Annotated[
        int | None, typer.Option("--per-group", help="The first N tasks of each domain (--limit then caps the total).")
    ] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated task ids.")] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (bounded by the backend).")] = 8,
    max_tokens: Annotated[int, typer.Option(help="New tokens per sample (per turn in react and tools).")] = 512,
    seed: GreedySeed = 0,
    model_arg: Annotated[
        list[str] | None,
        typer.Option("--model-arg", help="Backend option KEY=VALUE (repeatable), e.g. mode=chat or mode=completion."),
    ] = None,
    out: Annotated[Path, typer.Option(help="Directory that holds run directories.")] = Path("runs"),
    run_id: Annotated[str | None, typer.Option(help="Run directory name.")] = None,
    constrained: Annotated[
        bool,
        typer.Option(
            "--constrained",
            help="Reference-aware constrained decoding: only catalog tools, their parameters, typed values and "
            "references to earlier labels' outputs can be written (llamacpp:, hf:).",
        ),
    ] = False,
    prompt: Annotated[
        str | None,
        typer.Option(
            "--prompt",
            help="callbench (default: callbench's own versioned prompt) or published (NESTFUL's template for the "
            "model's family, from the fetched PROMPTS.json; direct mode).",
        ),
    ] = None,
    prompt_template: Annotated[
        str | None,
        typer.Option(
            "--prompt-template",
            help="auto (the model's family), a family (granite, llama, mistral, mixtral, xlam, hammer, hermes, "
            "toolace, gorilla, command-r), a template name from PROMPTS.json, or callbench-v1.",
        ),
    ] = None,
    prompts_file: Annotated[
        Path | None,
        typer.Option("--prompts-file", help="PROMPTS.json to read (default: the one 'data fetch nestful' got)."),
    ] = None,
    parser: Annotated[
        str | None,
        typer.Option(
            "--parser",
            help="How --scoring compat reads a direct answer: a model name NESTFUL's scorer knows, which picks that "
            "family's parser as the published scorer does (Hammer2.0-7b, granite-3.0-8b-instruct, "
            "granite-3.1-8b-instruct, Granite-20B-FunctionCalling, Llama-3.1-8B-Instruct, llama-3-70b-instruct, "
            "xLAM-7b-fc-r, Mistral-7B-Instruct-v0.3, Hermes-2-Pro-Mistral-7B, ToolAce-8b, DeepSeek-V3, and the "
            "other names of those families), or lenient (callbench's reader: prose, fences, tags, single objects). "
            "Default: the parser of the published template's model with --prompt published, else lenient. "
            "Strict scoring always uses the lenient reader.",
        ),
    ] = None,
    sample_timeout: Annotated[
        float,
        typer.Option(
            "--sample-timeout",
            help="Seconds one sample may spend executing its calls (a whole episode with --mode react/tools); "
            "past it the sample is a timeout, scored wrong.",
        ),
    ] = 600.0,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Hide the progress bar.")] = False,
    retry_errors: RetryErrors = False,
    max_backend_error_rate: MaxBackendErrorRate = 0.2,
    count_backend_errors: CountBackendErrors = False,
    eval_workers: EvalWorkers = None,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
    force: Force = False,
    rescore: Rescore = False,
    config: ConfigFile = None,
) -> None:
    """Nested tool-call sequences (NESTFUL): answer with JSON calls whose arguments reference earlier outputs.

    Scored on function/parameter F1, partial/full sequence accuracy, and win rate (the predicted
    calls are executed in a sandboxed process and the final answer compared). Resumable.

    --mode picks how the calls are written (direct, react or tools); the backend's chat or
    completion mode is a backend option: --model-arg mode=chat.
    """
    from callbench.api import load_backend, make_track
    from callbench.models.base import GenerationConfig
    from callbench.models.registry import check_model_options
    from callbench.report.table import print_nested_summary
    from callbench.runs.runner import RunOptions, check_generation

    try:
        id_list = csv_list(ids, "--ids")
        generation = GenerationConfig(max_tokens=max_tokens, seed=check_seed(seed))
        check_generation(generation)  # before the data note, so a bad option is the only output
        setup_sandbox(unsafe_no_sandbox)
        if mode in ("chat", "completion"):
            raise ConfigError(
                f"--mode {mode}: for 'run nested' --mode is direct, react or tools; "
                f"set the backend mode with --model-arg mode={mode}"
            )
        if strategy is not None and mode is not None and strategy != mode:
            raise ConfigError(f"--strategy {strategy} contradicts --mode {mode} (--strategy is a deprecated alias of --mode)")
        opts = parse_model_args(model_arg)
        check_model_options(model, opts)  # before the data and the weights load
        track = make_track(
            "nested",
            data=str(data) if data else None,
            shots=shots,
            icl_file=str(icl) if icl else None,
            functions=str(functions) if functions else None,
            code_functions=code_functions,
            mode=mode or strategy or "direct",
            max_steps=max_steps,
            constrained=constrained,
            sample_timeout_s=sample_timeout,
            prompt=prompt,
            prompt_template=prompt_template,
            prompts_file=str(prompts_file) if prompts_file else None,
            model_spec=model,
            parser=parser,
        )
        if track.data_note:
            err_console.print(f"[dim]{escape(track.data_note)}[/dim]")
        if track.published is not None:
            t = track.published
            err_console.print(
                f"[dim]prompt: NESTFUL template '{escape(t.key)}' ({escape(t.how)}; {escape(path_text(t.source))})[/dim]"
            )
        if scoring.value == "compat" or parser is not None:
            err_console.print(f"[dim]compat parser: {escape(track.parser)}[/dim]")
        backend = load_backend(model, opts, concurrency=concurrency, track=track, constrained=constrained)
        if track.published is not None and getattr(backend, "mode", None) == "chat":
            err_console.print(
                "[dim]note: the NESTFUL template is a completion prompt with its own chat markup; in chat mode it is "
                "sent as one user message (the paper's setup: --model-arg mode=completion)[/dim]"
            )
        if track.options.mode == "tools":
            from callbench.models.base import require_tools

            require_tools(backend, "--mode tools")
        outcome = run_track(
            track,
            backend,
            RunOptions(
                out_dir=out,
                run_id=run_id,
                limit=limit,
                per_group=per_group,
                ids=id_list,
                concurrency=concurrency,
                scoring=scoring.value,
                generation=generation,
                progress=not no_progress,
                retry_errors=retry_errors,
                max_backend_error_rate=max_backend_error_rate,
                count_backend_errors=count_backend_errors,
                eval_workers=eval_workers,
                force=force,
                rescore=rescore,
            ),
            config_file=config,
        )
    except CallbenchError as exc:
        fail(exc)
    print_outcome(outcome, print_nested_summary)


# -- ``run <track>`` generated from a track's options model ---------------------------------------
#
# A track whose definition names a pydantic options model and that has no command of its own gets
# ``callbench run <name>``: the run options every track shares (below), then one option per field
# of the model (``--field-name``, the field's type, default and description), so the model is the
# one source of the flags, the ``--config`` keys and the keyword arguments of ``callbench.run``.

_COMMON: list[tuple[str, Any, Any]] = [
    ("model", Annotated[str, typer.Option("--model", "-m", help="Backend spec, as for 'run webapi'.")], inspect.Parameter.empty),
    ("scoring", Annotated[str | None, typer.Option(help="Scoring mode (default: the track's first).")], None),
    ("limit", Annotated[int | None, typer.Option(help="Only the first N tasks.")], None),
    ("per_group", Annotated[int | None, typer.Option("--per-group", help="The first N tasks of each group (--limit then caps the total).")], None),
    ("ids", Annotated[str | None, typer.Option(help="Comma-separated task ids.")], None),
    ("concurrency", Annotated[int, typer.Option(help="Requests in flight (bounded by the backend).")], 8),
    ("max_tokens", Annotated[int | None, typer.Option(help="New tokens per sample (default: the track's).")], None),
    ("temperature", Annotated[float | None, typer.Option(help="0 = greedy (default: the track's).")], None),
    ("seed", Seed, 0),
    (
        "model_arg",
        Annotated[list[str] | None, typer.Option("--model-arg", help="Backend option KEY=VALUE (repeatable).")],
        None,
    ),
    ("out", Annotated[Path, typer.Option(help="Directory that holds run directories.")], Path("runs")),
    ("run_id", Annotated[str | None, typer.Option(help="Run directory name (default: derived from the settings).")], None),
    ("no_progress", Annotated[bool, typer.Option("--no-progress", help="Hide the progress bar.")], False),
    ("retry_errors", RetryErrors, False),
    ("max_backend_error_rate", MaxBackendErrorRate, 0.2),
    ("count_backend_errors", CountBackendErrors, False),
    ("eval_workers", EvalWorkers, None),
    ("force", Force, False),
    ("rescore", Rescore, False),
    ("config", ConfigFile, None),
]
_SCALARS = (str, int, float, bool, Path)


def _option_type(name: str, field: Any) -> Any:
    """The type typer gets for an options-model field: a scalar, optional or not, or a list of
    strings (a repeatable option); anything else is refused with the field's name."""
    hint = field.annotation
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    optional = typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1
    inner = args[0] if optional else hint
    if inner in _SCALARS or (typing.get_origin(inner) is list and typing.get_args(inner) in ((str,), (Path,))):
        return inner | None if optional or typing.get_origin(inner) is list else inner
    raise ConfigError(f"options model field '{name}': type {hint!r} has no command-line form (use str, int, float, bool, Path or list[str])")


def track_parameters(options_model: Any) -> list[inspect.Parameter]:
    """The command's parameters: the shared run options, then one per options-model field."""
    params = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=default)
        for name, hint, default in _COMMON
    ]
    taken = {name for name, _, _ in _COMMON}
    for name, field in options_model.model_fields.items():
        if name in taken:
            raise ConfigError(f"options model field '{name}': clashes with the run option --{name.replace('_', '-')}")
        flag = "--" + name.replace("_", "-")
        default = None if field.is_required() else field.get_default(call_default_factory=True)
        hint = Annotated[_option_type(name, field), typer.Option(flag, help=field.description or "")]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=hint, default=default))
    return params


def _options(definition: Any, model_cls: Any, values: dict[str, Any]) -> Any:
    """The options model from the command's values; a wrong value names its flag."""
    import pydantic

    given = {k: v for k, v in values.items() if v is not None}
    try:
        return model_cls(**given)
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else ""
        flag = "--" + field.replace("_", "-") if field else f"run {definition.name}"
        raise ConfigError(f"{flag}: {err['msg']}") from None


def _run_generated(name: str, values: dict[str, Any]) -> None:
    """The body of a generated ``run <name>``: the track from its options, the backend, the runner."""
    from callbench.api import answer_mode, load_backend
    from callbench.models.base import GenerationConfig
    from callbench.models.registry import check_model_options
    from callbench.runs.runner import RunOptions
    from callbench.tracks.definition import get_definition, resolve

    common = {key: values.pop(key) for key, _, _ in _COMMON}
    try:
        definition = get_definition(name)
        check_seed(common["seed"])
        id_list = csv_list(common["ids"], "--ids")
        model_cls = resolve(definition.options)
        if definition.model_option is not None and values.get(definition.model_option) is None:
            values[definition.model_option] = common["model"]
        track = definition.track_class()(_options(definition, model_cls, values))
        scoring = common["scoring"] or track.scoring_modes[0]
        if scoring not in track.scoring_modes:
            raise ConfigError(f"--scoring {scoring}: choose from {', '.join(track.scoring_modes)}")
        opts = parse_model_args(common["model_arg"])
        check_model_options(common["model"], opts)
        constrained = bool(values.get("constrained"))
        backend = load_backend(common["model"], opts, concurrency=common["concurrency"], track=track, constrained=constrained)
        gen = track.default_generation(answer_mode(backend, track)) if hasattr(track, "default_generation") else GenerationConfig()
        changes = {k: common[k] for k in ("max_tokens", "temperature") if common[k] is not None}
        gen = dataclasses.replace(gen, seed=common["seed"], **changes)
        run_options = RunOptions(
            out_dir=common["out"],
            run_id=common["run_id"],
            limit=common["limit"],
            per_group=common["per_group"],
            ids=id_list,
            concurrency=common["concurrency"],
            scoring=scoring,
            generation=gen,
            progress=not common["no_progress"],
            retry_errors=common["retry_errors"],
            max_backend_error_rate=common["max_backend_error_rate"],
            count_backend_errors=common["count_backend_errors"],
            eval_workers=common["eval_workers"],
            force=common["force"],
            rescore=common["rescore"],
        )
        outcome = run_track(track, backend, run_options, config_file=common["config"])
        printer = resolve(definition.summary) if definition.summary is not None else _print_summary_json
    except CallbenchError as exc:
        fail(exc)
    print_outcome(outcome, printer)


def _print_summary_json(summary: dict[str, Any], console: Any) -> None:
    """A track without a summary printer: its metrics as JSON."""
    import json

    console.print_json(json.dumps(summary.get("metrics", {}), default=str))


def generated_command(name: str, options_model: Any, doc: str) -> Any:
    """The function of ``callbench run <name>``, its signature built from ``options_model``."""

    def command(**values: Any) -> None:
        _run_generated(name, values)

    params = track_parameters(options_model)
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params} | {"return": None}
    command.__doc__ = doc
    command.__name__ = f"run_{name}"
    return command


class TrackCommands(TyperGroup):
    """The ``run`` group: its own commands, plus ``run <name>`` generated for every track
    registered with a pydantic options model and no command of its own. Looked up when the group
    is used, so a track registered after the CLI was imported has its command; nothing is
    imported for it (no track can be registered before the registry is loaded), so ``--help``
    stays fast."""

    def _generated(self) -> dict[str, Any]:
        registry = sys.modules.get("callbench.tracks.definition")
        if registry is None:
            return {}
        out = {}
        for definition in registry.registered_definitions():
            name = definition.name
            if name in self.commands or name in registry.BUILTIN or definition.options is None:
                continue
            model_cls = registry.resolve(definition.options)
            if not hasattr(model_cls, "model_fields"):  # not a pydantic model: no flags to generate
                continue
            doc = (definition.description or f"Run track '{name}'.") + (
                "\n\nRe-running the same command resumes: finished samples are kept and skipped."
            )
            single = typer.Typer()
            single.command(name)(generated_command(name, model_cls, doc))
            out[name] = typer.main.get_command(single)
        return out

    def list_commands(self, ctx: Any) -> list[str]:
        own = list(super().list_commands(ctx))
        return own + sorted(n for n in self._generated() if n not in own)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return super().get_command(ctx, cmd_name) or self._generated().get(cmd_name)


run_app.info.cls = TrackCommands
