"""The root of the ``callbench`` command: the typer app, its command groups and the global options
(``app.py`` would shadow the package's ``app`` attribute, the Typer object).

Every command module registers on the apps defined here; nothing here imports a command module,
so the package's modules import one another in one direction only.
"""

from __future__ import annotations

import inspect
from typing import Annotated

import typer

from callbench.cli.options import out_console

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
constrain_app = typer.Typer(help="Inspect the grammars constrained decoding derives from API specs.", no_args_is_help=True)
generate_app = typer.Typer(help="Generate benchmark tasks.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(run_app, name="run")
app.add_typer(constrain_app, name="constrain")
app.add_typer(generate_app, name="generate")
audit_app = typer.Typer(help="Check task files against their specs (cross-check of gold requests).", no_args_is_help=True)
app.add_typer(audit_app, name="audit")
model_app = typer.Typer(help="Infer and check the state model of an OpenAPI spec (resources, roles, id sources).", no_args_is_help=True)
serve_app = typer.Typer(help="Serve APIs locally (a stateful mock of an OpenAPI spec).", no_args_is_help=True)
app.add_typer(model_app, name="model")
app.add_typer(serve_app, name="serve")


def _version(value: bool) -> None:
    if value:
        from callbench.version import __version__

        out_console.print(f"callbench {__version__}", highlight=False)
        raise typer.Exit()


_LEVELS = ("debug", "info", "warning", "error")


def configure_logging(level: str) -> None:
    """callbench's log records on stderr from ``level`` up (one handler, set once per process; a
    run also writes its own ``run.log``, see :mod:`callbench.runs.run_log`)."""
    import logging

    logger = logging.getLogger("callbench")
    handler = next((h for h in logger.handlers if getattr(h, "_callbench_cli", False)), None)
    if handler is None:
        handler = logging.StreamHandler()
        handler._callbench_cli = True  # type: ignore[attr-defined]
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    value = getattr(logging, level.upper())
    handler.setLevel(value)
    logger.setLevel(min(value, logging.WARNING))


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    log_level: Annotated[
        str,
        typer.Option(
            "--log-level",
            help="What callbench logs on stderr: debug, info, warning (default) or error. Every run also "
            "writes run.log in its directory (its sessions, a progress line every 10 s, warnings).",
        ),
    ] = "warning",
) -> None:
    """Measure and improve how well LLMs write API calls."""
    if log_level.lower() not in _LEVELS:
        from callbench.errors import ConfigError

        raise typer.BadParameter(str(ConfigError(f"--log-level {log_level}: choose from {', '.join(_LEVELS)}")))
    configure_logging(log_level.lower())


def reflow_help() -> None:
    """typer keeps the source's line breaks in every paragraph after a command's first one, so
    --help printed half-empty lines; join each paragraph of the docstrings into one line. Called
    once every command is registered."""
    for a in (app, data_app, run_app, constrain_app, generate_app, audit_app, model_app, serve_app):
        for c in a.registered_commands:
            if c.callback is not None and c.callback.__doc__:
                paragraphs = inspect.cleandoc(c.callback.__doc__).split("\n\n")
                c.callback.__doc__ = "\n\n".join(" ".join(p.split()) for p in paragraphs)
