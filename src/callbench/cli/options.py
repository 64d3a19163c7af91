"""What the command modules share: the consoles, one-line error printing, option types used by
several commands (``--force``, ``--rescore``, ``--seed``, ``--config`` ...) and the plumbing from
options to :class:`~callbench.runs.runner.RunOptions` and the runner.

Kept in one place so each command module imports only this (and :mod:`callbench.cli.root`), never
a sibling command module. Only typer and rich are imported at module level: ``callbench --help``
must stay fast, so everything heavier is imported inside the functions that need it.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from callbench.constrain.profile_help import CD_PROFILE_HELP, VALUE_TYPES_HELP  # noqa: F401 - re-exported
from callbench.errors import CallbenchError, ConfigError

err_console = Console(stderr=True)
out_console = Console()


def fail(exc: Exception) -> None:
    """Print the error as one line (whitespace runs folded, unencodable text escaped) and exit 2."""
    from rich.markup import escape

    from callbench.runs.text import encodable

    message = escape(" ".join(encodable(str(exc)).split()))
    err_console.print(f"[bold red]error:[/bold red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(2)


def csv_list(text: str | None, option: str) -> list[str] | None:
    """``"a, b,"`` -> ``["a", "b"]``; None when the option was not given. A given list that is
    empty after splitting (``--ids ,,,``) is an error: ignoring it would select everything."""
    if text is None:
        return None
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ConfigError(f"{option} {text!r}: no ids or names in it (expected a comma-separated list)")
    return items


def path_text(path: Path) -> str:
    """A path as printable text: a name with undecodable bytes is shown with escapes, not a crash."""
    from rich.markup import escape

    from callbench.runs.text import encodable

    return escape(encodable(str(path)))


class Setup(str, Enum):  # noqa: UP042 - typer needs the str mixin
    full = "full"
    args = "args"


class Scoring(str, Enum):  # noqa: UP042 - typer needs the str mixin
    strict = "strict"
    compat = "compat"


CountBackendErrors = Annotated[
    bool,
    typer.Option(
        "--count-backend-errors",
        help="Score samples the backend never answered (backend_error) as failed, as if the answer were "
        "empty. Default: left out of the metrics and counted apart.",
    ),
]
UnsafeNoSandbox = Annotated[
    bool,
    typer.Option(
        "--unsafe-no-sandbox",
        help="Run generated code even where the bubblewrap sandbox cannot start (user namespaces "
        "disabled): only rlimits and an audit hook remain, which do not contain C code. Recorded in the run.",
    ),
]

def _load_config(ctx: typer.Context, value: Path | None) -> Path | None:
    """Eager ``--config`` callback: the file's settings become the command's defaults
    (``ctx.default_map``), so an option given on the command line still wins."""
    if value is None:
        return None
    from callbench.cli.runconfig import default_map

    try:
        ctx.default_map = {**(ctx.default_map or {}), **default_map(ctx.command, value, ctx=ctx)}
    except CallbenchError as exc:
        fail(exc)
    return value


ConfigFile = Annotated[
    Path | None,
    typer.Option(
        "--config",
        callback=_load_config,
        is_eager=True,
        help="YAML or JSON file of options: keys are this command's long option names (max-tokens or "
        "max_tokens), values as the option takes them (a list for a repeatable option). Options on the "
        "command line override the file; the file is recorded in the run's config.json.",
        rich_help_panel="Run directory",
    ),
]


def print_outcome(outcome: Any, print_summary: Any) -> None:
    """After a run: the track's summary table, the backend-error note and where the run is."""
    print_summary(outcome.summary, out_console)
    backend_error_note(outcome.summary)
    shown = path_text(outcome.run_dir)
    out_console.print(f"run directory: {shown}  (summary.json, run.sqlite; 'callbench report {shown}')", highlight=False)


def backend_error_note(summary: dict) -> None:
    n = summary.get("n_backend_errors") or 0
    if n:
        how = "scored as failed samples" if summary.get("backend_errors_counted") else "not counted in the metrics"
        err_console.print(
            f"[yellow]{n} sample(s) got no usable answer from the backend (backend_error): {how}; "
            "run the same command with --retry-errors to ask again[/yellow]",
            highlight=False,
        )


def setup_sandbox(unsafe: bool) -> None:
    """Decide, before any model loads, whether generated code may run here (see docs/security.md)."""
    from callbench.sandbox import boundary

    boundary.allow_unsandboxed(unsafe)
    if boundary.isolation() == "none":
        err_console.print(
            "[yellow]warning: running generated code WITHOUT the OS sandbox (--unsafe-no-sandbox)[/yellow]"
        )


def parse_model_args(items: list[str] | None) -> dict[str, object]:
    """``--model-arg KEY=VALUE`` items as a dict, each VALUE read as JSON where it is JSON (within
    the limits of :mod:`callbench.untrusted`), else as the string. The backend checks the keys."""
    from callbench.untrusted import DOCUMENT_MAX_DEPTH, UntrustedInputError, check_value

    opts: dict[str, object] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--model-arg '{item}': expected KEY=VALUE")
        if key in opts:
            raise ConfigError(f"--model-arg {key}: given twice")
        try:
            parsed: object = json.loads(value)
        except json.JSONDecodeError:
            parsed = value
        except RecursionError:
            raise ConfigError(f"--model-arg {key}: nested deeper than {DOCUMENT_MAX_DEPTH} levels") from None
        try:
            opts[key] = check_value(parsed, what=f"--model-arg {key}", max_depth=DOCUMENT_MAX_DEPTH)
        except UntrustedInputError as exc:
            raise ConfigError(str(exc)) from None
    return opts


def run_track(track: Any, backend: Any, options: Any, *, config_file: Path | None = None) -> Any:
    """Run with the shared runner; a stop signal (SIGTERM, SIGINT, SIGHUP: see
    :func:`callbench.runs.runner.run`) keeps finished samples and the answers not yet scored, and
    says how to resume (exit status 128 + the signal's number, as a shell reports a signal).
    ``config_file`` (``--config``) is recorded in the run's config.json."""
    import signal

    from callbench.runs.runner import RunStopped, run

    if config_file is not None:
        from callbench.cli.runconfig import describe

        options.recorded = {**options.recorded, "config_file": describe(config_file)}
    try:
        outcome = run(track, backend, options, console=err_console, handle_signals=True)
    except KeyboardInterrupt as exc:  # RunStopped, or Ctrl-C before the run's handlers were in place
        signum = exc.signum if isinstance(exc, RunStopped) else signal.SIGINT
        what = "interrupted" if signum == signal.SIGINT else f"terminated ({signal.Signals(signum).name})"
        err_console.print(
            f"[yellow]{what}: finished samples and answers not yet scored are saved; run the same command to resume[/yellow]",
            soft_wrap=True,  # one line, whatever the terminal's width (scripts grep for it)
        )
        raise typer.Exit(128 + signum) from None
    return outcome


# -- constrained decoding: the grammar's profile and value typing (run webapi, constrain webapi)


class CdProfile(str, Enum):  # noqa: UP042 - typer needs the str mixin
    callbench = "callbench"
    paper = "paper"


class ValueTypes(str, Enum):  # noqa: UP042 - typer needs the str mixin
    lenient = "lenient"
    paper = "paper"




def grammar_options(cd_profile: CdProfile | str | None, value_types: ValueTypes | str | None) -> Any:
    """The GrammarOptions for the CLI's --cd-profile/--value-types (None: the defaults)."""
    from callbench.constrain.webapi_grammar import GrammarOptions

    profile = getattr(cd_profile, "value", cd_profile) or "callbench"
    vt = getattr(value_types, "value", value_types)
    return GrammarOptions(profile=profile, value_types=vt)
