"""``callbench runs`` (the runs below a directory, as a table, JSON or CSV) and ``callbench view``
(a local read-only web app over them). The rows come from :mod:`callbench.report.runs_table`, the
pages from :mod:`callbench.report.view_server`; a sample page shows what ``callbench show``
prints."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from callbench.cli.options import fail, out_console
from callbench.cli.root import app
from callbench.errors import CallbenchError, ConfigError

RunsDir = Annotated[Path, typer.Argument(help="Directory holding run directories (searched below).")]


@app.command("runs")
def runs_cmd(
    directory: RunsDir = Path("runs"),
    as_json: Annotated[bool, typer.Option("--json", help="Print the rows as JSON.")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print the rows as CSV (one column per headline metric).")] = False,
) -> None:
    """List every run below DIR: track, model, setup, settings, samples, status and headline metrics.

    Status: complete; partial k/n (re-run its command to finish); running (its run.log was
    written in the last minute); broken, with the reason. Metrics are shares in percent."""
    from callbench.report.runs_table import headline_text, runs_table, to_csv, to_json

    try:
        if as_json and as_csv:
            raise ConfigError("runs: give --json or --csv, not both")
        if not directory.is_dir():
            raise ConfigError(f"{directory}: no such directory (pass the directory your runs are in)")
        rows = runs_table(directory)
    except CallbenchError as exc:
        fail(exc)
    if as_json or as_csv:
        typer.echo(to_json(rows) if as_json else to_csv(rows), nl=False)
        return
    table = Table(title=f"{len(rows)} run(s) in {directory}", title_justify="left")
    for col in ("track", "model", "setup", "settings", "n", "status", "headline metrics (%)"):
        table.add_column(col, overflow="fold", justify="right" if col == "n" else "left")
    # the directory whole, on one line (a path to copy; the other columns fold around it)
    table.add_column("directory", no_wrap=True, overflow="ignore")
    for r in rows:
        style = "red" if r.status.startswith("broken") else "cyan" if r.status == "running" else None
        n = "–" if r.n is None else f"{r.n}" + (f"/{r.n_selected}" if r.n_selected not in (None, r.n) else "")
        shown = r.directory
        try:  # below DIR: the part after it (the table's title names DIR)
            shown = str(Path(r.directory).resolve().relative_to(directory.resolve()))
        except (ValueError, OSError):
            pass
        table.add_row(r.track or "?", r.model or "?", r.setup or "", r.settings, n, r.status, headline_text(r), shown, style=style)
    out_console.print(table, markup=False, highlight=False)


_show_lock = threading.Lock()


def show_text(run_dir: Path, sample_id: str) -> str:
    """What ``callbench show RUN SAMPLE`` prints, as plain text: the registered ``show`` command
    (looked up on the app: command modules do not import each other) run with its console's
    output captured, under a lock (a capture is the console's, not the thread's)."""
    from rich.text import Text

    from callbench.results import find_sample, read_run

    find_sample(read_run(run_dir), sample_id)  # an unknown id: a ConfigError, not a printed error
    show = next(c.callback for c in app.registered_commands if c.name == "show" and c.callback is not None)
    with _show_lock, out_console.capture() as captured:
        try:
            show(run_dir, sample_id, None)
        except typer.Exit as exc:
            raise ConfigError(f"{run_dir}: cannot show '{sample_id}'") from exc
    return Text.from_ansi(captured.get()).plain


@app.command("view")
def view_cmd(
    directory: RunsDir = Path("runs"),
    port: Annotated[int, typer.Option("--port", help="Port (0 picks a free one).")] = 8765,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default 127.0.0.1; another one only when given here).")
    ] = None,
) -> None:
    """Serve a read-only web page over the runs below DIR until Ctrl-C: sort and filter them, open a
    run's report or any sample, tick two or more to compare them. Live: the page re-reads DIR."""
    from callbench.report.view_server import make_server, url_of

    try:
        server = make_server(directory, host=host or "127.0.0.1", port=port, sample_text=show_text, allow_remote=host is not None)
    except OSError as exc:
        fail(ConfigError(f"--port {port}: cannot listen ({exc.strerror})"))
    except CallbenchError as exc:
        fail(exc)
    out_console.print(f"runs of {directory} on {url_of(server)} (read-only; Ctrl-C to stop)", highlight=False, markup=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
