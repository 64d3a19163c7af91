"""The stateful track's commands: ``generate stateful`` and ``coverage`` (``run stateful`` is
generated from the track's settings model, see :mod:`callbench.cli.run`).
"""

from __future__ import annotations

import json
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
from callbench.cli.root import app, generate_app
from callbench.errors import CallbenchError, ConfigError


def _range(text: str) -> int:
    """``50`` or ``1..50`` -> 50 (programs are always counted from 1)."""
    lo, sep, hi = text.partition("..")
    try:
        if not sep:
            return int(lo)
        if int(lo) != 1:
            raise ConfigError(f"--programs {text}: the range starts at 1 (curves count programs from the first)")
        return int(hi)
    except ValueError:
        raise ConfigError(f"--programs {text}: expected N or 1..N") from None


def counts_text(counts: object) -> str:
    """``{"too_short": 3, "duplicate": 1}`` as people read it: ``3 too_short, 1 duplicate``."""
    if not counts:
        return "none"
    if isinstance(counts, dict):
        return ", ".join(f"{v} {k}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1] if isinstance(kv[1], int) else 0, str(kv[0]))))
    return str(counts)


@generate_app.command("stateful")
def generate_stateful(
    out: Annotated[Path, typer.Option(help="Output directory (tasks.jsonl + manifest.json; with --spec also openapi/: the spec and model copied); resumable.")],
    scenario: Annotated[str | None, typer.Option(help="Scenario: session, tensor or voice (or --spec).")] = None,
    spec: Annotated[Path | None, typer.Option(help="An OpenAPI spec (YAML/JSON, OpenAPI 3.x or Swagger 2.0): tasks over its inferred state model, executed against its stateful mock.")] = None,
    state_model: Annotated[Path | None, typer.Option("--model", help="With --spec: a state-model file (from 'callbench model infer', edited) applied on top of inference.")] = None,
    name: Annotated[str | None, typer.Option(help="With --spec: the scenario name (default: the spec file's name).")] = None,
    n: Annotated[int, typer.Option(help="Tasks to keep.")] = 40,
    seed: Annotated[int, typer.Option(help="Random seed (same seed, same tasks).")] = 0,
    sampler: Annotated[str, typer.Option(help="energy (favours rare transition pairs) or random (baseline).")] = "energy",
    min_calls: Annotated[int, typer.Option(help="Fewest API calls per task (calls written in the program, both branches of an if/else).")] = 3,
    max_calls: Annotated[int, typer.Option(help="Most API calls per task.")] = 12,
    target_calls: Annotated[
        float, typer.Option(help="Mean API calls per task the set aims at (default: the paper's StateEval, 7.16); task lengths spread binomially between --min-calls and --max-calls around it.")
    ] = 7.16,
    target_bindings: Annotated[
        float, typer.Option(help="Mean bindings per task (API result -> later API argument edges) the set aims at (default: the paper's 5.03); best effort: a scenario whose every result must feed a later call cannot go far below calls - 1.")
    ] = 5.03,
    candidates: Annotated[int, typer.Option(help="Programs sampled per attempt; the one closest to the task's drawn length and bindings is kept.")] = 120,
    method: Annotated[
        str, typer.Option(help="stategen (sample traces from the state model) or llm (the baseline: --writer is asked directly for task text + program; the same oracle check keeps the valid ones).")
    ] = "stategen",
    writer: Annotated[str | None, typer.Option(help="Backend that writes the task text (with --evaluator); default: templates.")] = None,
    evaluator: Annotated[str | None, typer.Option(help="Backend that reviews the task text and asks for revisions.")] = None,
    rounds: Annotated[int, typer.Option(help="Most writer drafts per task.")] = 3,
    model_arg: Annotated[list[str] | None, typer.Option("--model-arg", help="Option KEY=VALUE for both agent backends.")] = None,
    unsafe_no_sandbox: UnsafeNoSandbox = False,
) -> None:
    """StateGen: sample valid call traces from a scenario's state model, inject control flow, record
    oracles by running the reference in the sandbox, and write the task text."""
    from rich.progress import Progress

    from callbench.models.registry import load_model
    from callbench.tracks.stateful.generator import GenerateOptions, generate
    from callbench.tracks.stateful.sampling import SAMPLERS
    from callbench.tracks.stateful.scenarios import get_scenario

    try:
        if sampler not in SAMPLERS:
            raise ConfigError(f"--sampler {sampler}: choose from {', '.join(SAMPLERS)}")
        if n < 1 or rounds < 1:
            raise ConfigError("--n and --rounds must be >= 1")
        if method not in ("stategen", "llm"):
            raise ConfigError(f"--method {method}: choose stategen or llm")
        if method == "llm" and (writer is None or evaluator is not None):
            raise ConfigError("--method llm needs --writer MODEL (the model asked for task + program) and no --evaluator")
        if (scenario is None) == (spec is None):
            raise ConfigError("give --scenario NAME or --spec FILE (one of them)")
        if spec is None and (state_model is not None or name is not None):
            raise ConfigError("--model and --name go with --spec")
        if spec is not None:
            if method != "stategen":
                raise ConfigError("--spec works with --method stategen")
            from callbench.tracks.stateful.spec_bench import prepare

            scen = prepare(out, spec, state_model, name=name)
            scenario = scen.name
        else:
            scen = get_scenario(scenario)
        setup_sandbox(unsafe_no_sandbox)
        opts = parse_model_args(model_arg)
        wb = load_model(writer, **opts) if writer else None
        eb = load_model(evaluator, **opts) if evaluator else None
        if method == "llm":
            from callbench.tracks.stateful.llm_only import generate_llm

            assert wb is not None
            with Progress(console=err_console) as progress:
                bar = progress.add_task(f"generate {scenario} (llm-only)", total=n)
                m = generate_llm(
                    scen, out, GenerateOptions(n=n, seed=seed, target_calls=target_calls), wb,
                    on_task=lambda kept, total: progress.update(bar, completed=kept),
                )
            out_console.print(
                f"{m['n_kept']} tasks in {out / 'tasks.jsonl'} ({m['attempts']} answers, validity {m['validity']}; "
                f"invalid: {counts_text(m['invalid'])}; APIs called: {len(m['apis_called'])} of {len(scen.apis)})"
            )
            if m["n_kept"] < n:
                err_console.print(f"[yellow]only {m['n_kept']} of {n} tasks kept; see {out / 'manifest.json'}[/yellow]")
                raise typer.Exit(1)
            return
        with Progress(console=err_console) as progress:
            bar = progress.add_task(f"generate {scenario}", total=n)

            def on_task(kept: int, total: int) -> None:
                progress.update(bar, completed=kept)

            manifest = generate(
                scen,
                out,
                GenerateOptions(
                    n=n,
                    seed=seed,
                    sampler=sampler,
                    min_calls=min_calls,
                    max_calls=max_calls,
                    target_calls=target_calls,
                    target_bindings=target_bindings,
                    candidates=candidates,
                    rounds=rounds,
                ),
                writer=wb,
                evaluator=eb,
                on_task=on_task,
            )
    except CallbenchError as exc:
        fail(exc)
    out_console.print(
        f"{manifest['n_kept']} tasks in {out / 'tasks.jsonl'} ({manifest['attempts']} programs sampled; "
        f"dropped: {counts_text(manifest['dropped'])}; {manifest['pairs_covered']} of ~{manifest['reachable_pairs_estimate']} "
        f"transition pairs covered)"
    )
    if manifest["unreachable_apis"]:
        err_console.print(f"[yellow]unreachable APIs in '{scenario}': {', '.join(manifest['unreachable_apis'])}[/yellow]")
    if manifest["n_kept"] < n:
        err_console.print(f"[yellow]only {manifest['n_kept']} of {n} tasks kept; see {out / 'manifest.json'}[/yellow]")
        raise typer.Exit(1)


@app.command("coverage")
def coverage_cmd(
    scenario: Annotated[list[str] | None, typer.Option(help="Scenario(s) (repeatable).")] = None,
    spec: Annotated[list[Path] | None, typer.Option(help="OpenAPI spec(s) (repeatable): the scenario inferred from each.")] = None,
    programs: Annotated[str, typer.Option(help="Programs per curve: N or 1..N.")] = "1..50",
    samplers: Annotated[str, typer.Option(help="Comma-separated samplers.")] = "energy,random",
    seeds: Annotated[int, typer.Option(help="Curves per sampler (seeds 0..N-1).")] = 5,
    goal: Annotated[float, typer.Option(help="Share of reachable pairs to reach.")] = 0.95,
    out: Annotated[Path, typer.Option(help="Directory for coverage-<scenarios>.json and .png.")] = Path("coverage"),
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the figures here instead.")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write the plot here instead (PNG/SVG; needs matplotlib).")] = None,
) -> None:
    """Distinct transition pairs covered vs number of programs, energy sampler vs random baseline.

    Writes the curves (every seed, and their mean) as JSON and, when matplotlib is installed
    (the 'plot' extra), a plot with one panel per scenario."""
    from rich.table import Table

    from callbench.tracks.stateful.coverage import plot as draw
    from callbench.tracks.stateful.coverage import run_coverage
    from callbench.tracks.stateful.sampling import SAMPLERS
    from callbench.tracks.stateful.scenarios import get_scenario

    try:
        n = _range(programs)
        names = tuple(csv_list(samplers, "--samplers") or ())
        bad = [s for s in names if s not in SAMPLERS]
        if bad or not names:
            raise ConfigError(f"--samplers {samplers}: choose from {', '.join(SAMPLERS)}")
        if n < 1 or seeds < 1 or not 0 < goal <= 1:
            raise ConfigError("need programs >= 1, seeds >= 1 and 0 < goal <= 1")
        if not scenario and not spec:
            raise ConfigError("give --scenario NAME or --spec FILE (repeatable)")
        scens = [get_scenario(s) for s in scenario or []]
        if spec:
            from callbench.tracks.stateful.spec_bench import spec_scenario

            scens += [spec_scenario(p) for p in spec]
        results = [run_coverage(sc, programs=n, samplers=names, seeds=seeds, goal=goal) for sc in scens]
        stem = "coverage-" + "-".join(sc.name for sc in scens)
        json_out = json_out or out / f"{stem}.json"
        if plot is None:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                err_console.print("[yellow]no plot: pip install 'callbench\\[plot]' (matplotlib)[/yellow]")
            else:
                plot = out / f"{stem}.png"
        if plot:
            draw(results, plot)
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(json.dumps({"scenarios": {r["scenario"]: r for r in results}}, indent=1) + "\n", "utf-8")
    except OSError as exc:  # --json/--plot/--out where a file cannot go
        fail(ConfigError(f"{exc.filename or json_out}: cannot write ({exc.strerror}); pass another --out, --json or --plot"))
    except CallbenchError as exc:
        fail(exc)
    table = Table(title=f"transition-pair coverage ({seeds} seeds, {n} programs)")
    for col in ("scenario", "reachable", "sampler", f"programs to {goal:.0%} (mean)", "final coverage"):
        table.add_column(col)
    for res in results:
        for sampler, d in res["samplers"].items():
            mean_to = d["mean_programs_to_goal"]
            shown = f"{mean_to:.1f}" + ("" if d["reached_goal_in_all_seeds"] else f" (≥; not reached in some seeds within {n})")
            table.add_row(res["scenario"], str(res["reachable_pairs"]), sampler, shown, f"{100 * d['final_coverage']:.1f} %")
    out_console.print(table)
    out_console.print(f"figures: {json_out}" + (f"; plot: {plot}" if plot else ""))
