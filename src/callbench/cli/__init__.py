"""The ``callbench`` command. Every subcommand is a thin layer over the Python API.

Layout (imports go one way only, down this list; no module imports a sibling command module or
this package):

- :mod:`callbench.cli.options`: consoles, one-line errors, shared option types and run plumbing
- :mod:`callbench.cli.runconfig`: ``--config FILE`` of the run commands
- :mod:`callbench.cli.root`: the typer app, its command groups and ``--version``
- one module per command group: :mod:`~callbench.cli.data`, :mod:`~callbench.cli.run` (``run
  webapi``, ``run nested``), :mod:`~callbench.cli.stateful` (``generate stateful``, ``run
  stateful``, ``coverage``), :mod:`~callbench.cli.generate`, :mod:`~callbench.cli.constrain`,
  :mod:`~callbench.cli.results` (``report``, ``export``, ``show``, ``list``, ``models``)

Importing this package registers every command on :data:`app`; :func:`main` (the console
script) runs it.
"""

from __future__ import annotations

from typing import Any

from callbench.cli import (  # noqa: F401 - registers the commands
    analyze,
    audit,
    constrain,
    data,
    generate,
    model,
    results,
    run,
    serve,
    stateful,
    sweep,
    tracking,
    view,
)
from callbench.cli.root import app, reflow_help

reflow_help()

__all__ = ["app", "main"]


def command() -> Any:
    """The ``callbench`` click command as the console script runs it (the ``run`` commands' options
    are in help panels: each option's panel is declared with it, see :mod:`callbench.cli.run`)."""
    import typer

    return typer.main.get_command(app)


def main() -> None:  # pragma: no cover - the console script and python -m callbench
    command()()
