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


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Measure and improve how well LLMs write API calls."""


def reflow_help() -> None:
    """typer keeps the source's line breaks in every paragraph after a command's first one, so
    --help printed half-empty lines; join each paragraph of the docstrings into one line. Called
    once every command is registered."""
    for a in (app, data_app, run_app, constrain_app, generate_app, audit_app, model_app, serve_app):
        for c in a.registered_commands:
            if c.callback is not None and c.callback.__doc__:
                paragraphs = inspect.cleandoc(c.callback.__doc__).split("\n\n")
                c.callback.__doc__ = "\n\n".join(" ".join(p.split()) for p in paragraphs)
