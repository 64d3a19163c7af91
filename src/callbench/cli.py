"""The ``callbench`` command. Every subcommand is a thin layer over the Python API."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from callbench.errors import CallbenchError, ConfigError

app = typer.Typer(
    help="Measure and improve how well LLMs write API calls.\n\n"
    "Typical use: 'callbench data fetch wapiibench', then 'callbench run webapi --model gold' "
    "(a self-check that must score 100 %), then a real model, then 'callbench report runs/<id>'.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
data_app = typer.Typer(help="Download and locate datasets.", no_args_is_help=True)
run_app = typer.Typer(help="Run a benchmark track against a model (resumable).", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(run_app, name="run")

err_console = Console(stderr=True)
out_console = Console()


def _version(value: bool) -> None:
    if value:
        from callbench import __version__

        out_console.print(f"callbench {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Measure and improve how well LLMs write API calls."""


def _fail(exc: Exception) -> None:
    """Print the error as one line (whitespace runs folded, unencodable text escaped) and exit 2."""
    from rich.markup import escape

    from callbench.runs.store import encodable

    message = escape(" ".join(encodable(str(exc)).split()))
    err_console.print(f"[bold red]error:[/bold red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def _csv(text: str | None, option: str) -> list[str] | None:
    """``"a, b,"`` -> ``["a", "b"]``; None when the option was not given. A given list that is
    empty after splitting (``--ids ,,,``) is an error: ignoring it would select everything."""
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ConfigError(f"{option} {text!r}: no ids or names in it (expected a comma-separated list)")
    return items


def _shown(path: Path) -> str:
    """A path as printable text: a name with undecodable bytes is shown with escapes, not a crash."""
    from rich.markup import escape

    from callbench.runs.store import encodable

    return escape(encodable(str(path)))


RetryErrors = Annotated[
    bool,
    typer.Option(
        "--retry-errors",
        help="On resume, ask the backend again for the samples stored as backend errors (refused or failed "
        "requests, malformed responses).",
    ),
]
MaxBackendErrorRate = Annotated[
    float,
    typer.Option(
        "--max-backend-error-rate",
        help="Stop the run (finished samples kept) once more than this share of its samples got no usable "
        "answer from the backend (counted from 10 such samples on).",
    ),
]


Force = Annotated[
    bool,
    typer.Option("--force", help="Start the run directory over: delete its stored samples, answers, config and summary."),
]
Rescore = Annotated[
    bool,
    typer.Option(
        "--rescore",
        help="Keep every stored answer and score it again with the current data, specs and code (no model "
        "call for them); accepted when only scoring inputs changed, not the model, prompts or settings.",
    ),
]
CountBackendErrors = Annotated[
    bool,
    typer.Option(
        "--count-backend-errors",
        help="Score samples the backend never answered (backend_error) as failed, as if the answer were "
        "empty. Default: left out of the metrics and counted apart.",
    ),
]
EvalWorkers = Annotated[
    int | None,
    typer.Option(
        "--eval-workers",
        help="Threads that score answers (each drives its own sandbox process) while requests go on; "
        "default: one per CPU core (stateful: one per request in flight).",
    ),
]


def _backend_error_note(summary: dict) -> None:
    n = summary.get("n_backend_errors") or 0
    if n:
        how = "scored as failed samples" if summary.get("backend_errors_counted") else "not counted in the metrics"
        err_console.print(
            f"[yellow]{n} sample(s) got no usable answer from the backend (backend_error): {how}; "
            "run the same command with --retry-errors to ask again[/yellow]",
            highlight=False,
        )


UnsafeNoSandbox = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-sandbox",
        help="Run generated code even where the bubblewrap sandbox cannot start (user namespaces "
        "disabled): only rlimits and an audit hook remain, which do not contain C code. Recorded in the run.",
    ),
]


def _sandbox(unsafe: bool) -> None:
    """Decide, before any model loads, whether generated code may run here (see docs/security.md)."""
    from callbench.sandbox import boundary

    boundary.allow_unsandboxed(unsafe)
    if boundary.isolation() == "none":
        err_console.print(
            "[yellow]warning: running generated code WITHOUT the OS sandbox (--unsafe-no-sandbox)[/yellow]"
        )


def _parse_model_args(items: list[str] | None) -> dict[str, object]:
    opts: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--model-arg '{item}': expected KEY=VALUE")
        try:
            opts[key] = json.loads(value)
        except json.JSONDecodeError:
            opts[key] = value
    return opts


_sigterm = {"seen": False}


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM stops a run the way Ctrl-C does: as SIGINT, which ``asyncio.run`` turns into a
    clean cancellation of the run (raising here instead could land inside the event loop)."""
    import signal

    _sigterm["seen"] = True
    signal.raise_signal(signal.SIGINT)


def _run_track(track, backend, options):
    """Run with the shared runner; an interrupt (SIGINT or SIGTERM) keeps finished samples and
    says how to resume."""
    import signal
    import threading

    from callbench.runs.runner import run

    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main else None
    _sigterm["seen"] = False
    try:
        return run(track, backend, options, console=err_console)
    except KeyboardInterrupt:
        what = "terminated (SIGTERM)" if _sigterm["seen"] else "interrupted"
        err_console.print(f"[yellow]{what}: finished samples are saved; run the same command to resume[/yellow]")
        raise typer.Exit(143 if _sigterm["seen"] else 130) from None
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous)


class Setup(str, Enum):  # noqa: UP042 - typer needs the str mixin
    full = "full"
    args = "args"


class Scoring(str, Enum):  # noqa: UP042 - typer needs the str mixin
    strict = "strict"
    compat = "compat"


@data_app.command("fetch")
def data_fetch(
    name: Annotated[str, typer.Argument(help="Dataset: wapiibench or nestful.")],
    data: Annotated[Path | None, typer.Option("--data", help="Data dir (default: $CALLBENCH_DATA_DIR or the user cache).")] = None,
    mirror: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Copy from a local copy laid out as upstream (or, for nestful, a directory holding the files) instead of downloading.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option(help="Re-download files that are already present and valid; re-record trusted-on-first-use digests.")
    ] = False,
    source: Annotated[
        str, typer.Option("--source", help="Upstream: github (default) or hf (the Hugging Face parquet copy of nestful).")
    ] = "github",
    sha256: Annotated[
        list[str] | None,
        typer.Option("--sha256", help="Require a digest: PATH=HEX, PATH as in the dataset (repeatable), e.g. data_v2/nestful_data.jsonl=..."),
    ] = None,
) -> None:
    """Download a dataset from its upstream repository and verify every file's SHA-256.

    Files with a pinned checksum must match it. Files without one (nestful) are trusted on first
    use: parsed, then their digest is recorded in <data dir>/<name>/callbench.lock.json and every
    later fetch must match it (--force re-records).
    """
    from rich.progress import Progress

    from callbench.data.fetch import UPSTREAMS, fetch_data, parse_pins
    from callbench.data.lock import lock_path

    notes: list[str] = []
    try:
        pins = parse_pins(sha256)
        ups = UPSTREAMS.get(name, {})
        total = len(ups[source].files) if source in ups else 0
        with Progress(console=err_console) as progress:
            task = progress.add_task(f"fetch {name}", total=total)

            def on_file(path: str, state: str, detail: str) -> None:
                progress.advance(task)
                if state == "recorded":
                    notes.append(f"{path}: {detail} (trusted on first use)")
                elif state == "skipped":
                    notes.append(f"{path}: skipped, {detail}")
                elif detail:
                    notes.append(f"{path}: {state}, {detail}")

            dest = fetch_data(
                name, root=data, mirror=mirror, force=force, on_file=on_file, source=source, pins=pins
            )
    except CallbenchError as exc:
        for note in notes:
            err_console.print(note, highlight=False, soft_wrap=True, markup=False)
        _fail(exc)
    for note in notes:
        out_console.print(note, highlight=False, soft_wrap=True, markup=False)
    if any("trusted on first use" in n for n in notes):
        out_console.print(f"recorded in {lock_path(dest)}", highlight=False, soft_wrap=True)
    out_console.print(f"{name}: ready in {dest}")
    if name == "nestful":
        from callbench.tracks.nested.dataset import default_task_file

        try:
            chosen, _ = default_task_file(data)
        except CallbenchError as exc:
            _fail(exc)
        out_console.print(f"'callbench run nested' without --data now uses {chosen}", highlight=False, soft_wrap=True)


@data_app.command("path")
def data_path(
    data: Annotated[Path | None, typer.Option("--data", help="Data dir override.")] = None,
) -> None:
    """Print the data directory in use."""
    from callbench.data.paths import data_dir

    out_console.print(str(data_dir(data)))


@run_app.command("webapi")
def run_webapi(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="Backend spec: gold | replay:FILE | openai:MODEL@BASE_URL | llamacpp:PATH|default | hf:PATH.",
        ),
    ],
    setup: Annotated[Setup, typer.Option(help="full: complete from 'axios.'; args: method and URL given.")] = Setup.full,
    scoring: Annotated[
        Scoring, typer.Option(help="strict (schema-aware values, case-insensitive headers) or compat (published scorer).")
    ] = Scoring.strict,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks (after --api/--ids).")] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated task ids, e.g. asana_0,slack_12.")] = None,
    api: Annotated[str | None, typer.Option(help="Comma-separated APIs, e.g. slack,asana.")] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (bounded by the backend).")] = 8,
    max_tokens: Annotated[int, typer.Option(help="New tokens per sample.")] = 250,
    temperature: Annotated[float, typer.Option(help="0 = greedy.")] = 0.0,
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
            help="Prompt text: v2 (default; states where the credential goes and its placeholder) or "
            "v1 (the paper-style text, which only names the placeholders).",
        ),
    ] = "v2",
    model_arg: Annotated[
        list[str] | None,
        typer.Option(
            "--model-arg",
            help="Backend option KEY=VALUE (repeatable), e.g. n_threads=1, token_healing=false.",
        ),
    ] = None,
    tasks: Annotated[Path | None, typer.Option(help="Own task file (JSON list or JSONL) instead of WAPIIBench.")] = None,
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
    no_progress: Annotated[bool, typer.Option("--no-progress", help="Hide the progress bar.")] = False,
    retry_errors: RetryErrors = False,
    max_backend_error_rate: MaxBackendErrorRate = 0.2,
    count_backend_errors: CountBackendErrors = False,
    eval_workers: EvalWorkers = None,
    force: Force = False,
    rescore: Rescore = False,
) -> None:
    """Web API invocation (WAPIIBench): complete Axios code, run it sandboxed, score the request.

    Re-running the same command resumes: finished samples are kept and skipped.

    Local backends (llamacpp:, hf:) heal the prompt boundary: the prompt is backed up by its last
    token and the answer must start by re-writing it (so 'axios.' is not left as a bare '.' token).
    """
    from callbench.api import answer_mode, load_backend, make_track
    from callbench.models.base import GenerationConfig
    from callbench.report.table import print_summary
    from callbench.runs.runner import RunOptions

    try:
        id_list, api_list = _csv(ids, "--ids"), _csv(api, "--api")
        opts = _parse_model_args(model_arg)
        if mode:
            opts["mode"] = mode
        track = make_track(
            "webapi",
            setup=setup.value,
            data=str(data) if data else None,
            tasks_file=str(tasks) if tasks else None,
            constrained=constrained,
            prompt_version=prompt_version,
        )
        backend = load_backend(model, opts, concurrency=concurrency, track=track, constrained=constrained)
        if backend.mode != "completion" and model.startswith("gold"):
            raise ConfigError("gold answers in completion mode only")
        gen = track.default_generation(answer_mode(backend, track))
        gen = GenerationConfig(max_tokens=max_tokens, temperature=temperature, stop=gen.stop)
        if backend.identity.startswith("llamacpp") and getattr(backend, "note", None):
            err_console.print(f"[yellow]{escape(backend.note)}[/yellow]")
        outcome = _run_track(
            track,
            backend,
            RunOptions(
                out_dir=out,
                run_id=run_id,
                limit=limit,
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
        )
    except CallbenchError as exc:
        _fail(exc)
    print_summary(outcome.summary, out_console)
    _backend_error_note(outcome.summary)
    shown = _shown(outcome.run_dir)
    out_console.print(f"run directory: {shown}  (summary.json, run.sqlite; 'callbench report {shown}')", highlight=False)


constrain_app = typer.Typer(help="Inspect the grammars constrained decoding derives from API specs.", no_args_is_help=True)
app.add_typer(constrain_app, name="constrain")


def _resolve_spec(spec: str, data: Path | None) -> Path:
    from callbench.data.paths import data_dir
    from callbench.tracks.webapi.dataset import KNOWN_APIS, SPEC_DIR

    p = Path(spec)
    if p.is_file():
        return p
    if spec in KNOWN_APIS or spec == "petstore":
        root = data_dir(data)
        candidate = (
            root / "wapiibench/openapi/test/petstore-expanded-modified.yaml"
            if spec == "petstore"
            else root / SPEC_DIR / f"{spec}.yaml"
        )
        if candidate.is_file():
            return candidate
        raise ConfigError(f"--spec {spec}: {candidate} not found; run 'callbench data fetch wapiibench'")
    raise ConfigError(f"--spec {spec}: no such file and not a known API ({', '.join([*KNOWN_APIS, 'petstore'])})")


@constrain_app.command("webapi")
def constrain_webapi(
    spec: Annotated[str, typer.Option(help="OpenAPI file, or a WAPIIBench API name (slack, asana, ...).")],
    show: Annotated[bool, typer.Option("--show", help="Print the grammar (llguidance Lark syntax).")] = False,
    check: Annotated[Path | None, typer.Option(help="JavaScript file: is its first axios call allowed? why not?")] = None,
    setup: Annotated[Setup, typer.Option(help="full: grammar after 'axios.'; args: after axios.<method>('<url>',.")] = Setup.full,
    method: Annotated[str | None, typer.Option(help="Fixed method (setup args).")] = None,
    url: Annotated[str | None, typer.Option(help="Fixed URL (setup args).")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Data dir for API names.")] = None,
) -> None:
    """Show the grammar derived from a spec, or check an invocation against it."""
    try:
        from callbench.constrain.webapi_grammar import build_webapi_grammar
        from callbench.specs import load_spec

        api_spec = load_spec(_resolve_spec(spec, data))
        if not show and check is None:
            raise ConfigError("give --show and/or --check FILE")
        if show:
            g = build_webapi_grammar(api_spec, setup=setup.value, method=method, url=url)
            out_console.print(g.lark, markup=False, highlight=False, soft_wrap=True)
            err_console.print(
                f"[dim]{g.n_rules} rules, {g.n_terminals} terminals, {len(g.lark):,} chars, built in {g.build_seconds * 1000:.0f} ms[/dim]"
            )
        if check is not None:
            from callbench.constrain.check import check_invocation
            from callbench.files import read_text

            code = read_text(check, error=ConfigError, label=f"--check {check}")
            res = check_invocation(api_spec, code, setup=setup.value, method=method, url=url)
            if res.allowed:
                out_console.print(f"[green]allowed[/green]: {res.call}", highlight=False)
            else:
                where = f" at offset {res.offset}" if res.offset is not None else ""
                out_console.print(f"[red]not allowed[/red]{where}: {escape(str(res.reason))}", highlight=False)
                raise typer.Exit(1)
    except CallbenchError as exc:
        _fail(exc)


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
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="direct (default: the whole call list in one answer), react (one call per turn as text, executed, "
            "output fed back) or tools (the server's native tool-calling API, one turn per round of calls). "
            "The backend's own mode is set with --model-arg mode=chat|completion.",
        ),
    ] = None,
    strategy: Annotated[str | None, typer.Option("--strategy", hidden=True, help="Deprecated alias of --mode.")] = None,
    max_steps: Annotated[int, typer.Option("--max-steps", help="react, tools: most model turns per task.")] = 12,
    scoring: Annotated[Scoring, typer.Option(help="strict (default) or compat (the published scorer).")] = Scoring.strict,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    ids: Annotated[str | None, typer.Option(help="Comma-separated task ids.")] = None,
    concurrency: Annotated[int, typer.Option(help="Requests in flight (bounded by the backend).")] = 8,
    max_tokens: Annotated[int, typer.Option(help="New tokens per sample (per turn in react and tools).")] = 512,
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
) -> None:
    """Nested tool-call sequences (NESTFUL): answer with JSON calls whose arguments reference earlier outputs.

    Scored on function/parameter F1, partial/full sequence accuracy, and win rate (the predicted
    calls are executed in a sandboxed process and the final answer compared). Resumable.

    --mode picks how the calls are written (direct, react or tools); the backend's chat or
    completion mode is a backend option: --model-arg mode=chat.
    """
    from callbench.api import load_backend, make_track
    from callbench.models.base import GenerationConfig
    from callbench.report.table import print_nested_summary
    from callbench.runs.runner import RunOptions, check_generation

    try:
        id_list = _csv(ids, "--ids")
        generation = GenerationConfig(max_tokens=max_tokens)
        check_generation(generation)  # before the data note, so a bad option is the only output
        _sandbox(unsafe_no_sandbox)
        if mode in ("chat", "completion"):
            raise ConfigError(
                f"--mode {mode}: for 'run nested' --mode is direct, react or tools; "
                f"set the backend mode with --model-arg mode={mode}"
            )
        if strategy is not None and mode is not None and strategy != mode:
            raise ConfigError(f"--strategy {strategy} contradicts --mode {mode} (--strategy is a deprecated alias of --mode)")
        opts = _parse_model_args(model_arg)
        track = make_track(
            "nested",
            data=str(data) if data else None,
            shots=shots,
            icl_file=str(icl) if icl else None,
            functions=str(functions) if functions else None,
            mode=mode or strategy or "direct",
            max_steps=max_steps,
            constrained=constrained,
            sample_timeout_s=sample_timeout,
        )
        if track.data_note:
            err_console.print(f"[dim]{escape(track.data_note)}[/dim]")
        backend = load_backend(model, opts, concurrency=concurrency, track=track, constrained=constrained)
        if track.options.mode == "tools":
            from callbench.models.base import require_tools

            require_tools(backend, "--mode tools")
        outcome = _run_track(
            track,
            backend,
            RunOptions(
                out_dir=out,
                run_id=run_id,
                limit=limit,
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
        )
    except CallbenchError as exc:
        _fail(exc)
    print_nested_summary(outcome.summary, out_console)
    _backend_error_note(outcome.summary)
    out_console.print(f"run directory: {_shown(outcome.run_dir)}", highlight=False)


generate_app = typer.Typer(help="Generate benchmark tasks.", no_args_is_help=True)
app.add_typer(generate_app, name="generate")


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
        _fail(ConfigError("need n >= 1, 1 <= min-calls <= max-calls, fan-in >= 1, distractors >= 0"))
    try:
        _sandbox(unsafe_no_sandbox)
        with Progress(console=err_console, transient=True) as progress:
            progress.add_task(f"generating {n} tasks", total=None)
            rows = generate_tasks(n, seed, min_calls=min_calls, max_calls=max_calls, fan_in=fan_in, distractors=distractors)
    except CallbenchError as exc:
        _fail(exc)
    try:
        write_jsonl(rows, out)
    except OSError as exc:
        _fail(ConfigError(f"--out {out}: cannot write ({exc.strerror}); pass a file path in a writable directory"))
    out_console.print(f"{len(rows)} tasks written to {out}")


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
        _fail(exc)
    out_console.print(f"HTML report: {_shown(rep.html_path)}", highlight=False)
    if rep.json_path is not None:
        out_console.print(f"comparison data: {_shown(rep.json_path)}", highlight=False)


@app.command("models")
def models_cmd() -> None:
    """List the registered model backends."""
    from callbench.models.registry import available_models

    for name in available_models():
        out_console.print(name)


from callbench import cli_results, cli_stateful  # noqa: E402, F401, I001 - register export/show/list and the stateful commands


def _reflow_help(*apps: typer.Typer) -> None:
    """typer keeps the source's line breaks in every paragraph after a command's first one, so
    --help printed half-empty lines; join each paragraph of the docstrings into one line."""
    import inspect

    for a in apps:
        for c in a.registered_commands:
            if c.callback is not None and c.callback.__doc__:
                paragraphs = inspect.cleandoc(c.callback.__doc__).split("\n\n")
                c.callback.__doc__ = "\n\n".join(" ".join(p.split()) for p in paragraphs)


_reflow_help(app, data_app, run_app, constrain_app, generate_app)


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
