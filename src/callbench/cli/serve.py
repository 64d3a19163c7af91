"""``callbench serve``: local services (``serve mock``: a stateful mock of an OpenAPI spec)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import fail, out_console
from callbench.cli.root import serve_app
from callbench.errors import CallbenchError, ConfigError


@serve_app.command("mock")
def mock_cmd(
    spec: Annotated[Path, typer.Option("--spec", help="OpenAPI 3.x or Swagger 2.0 file (YAML or JSON).")],
    model: Annotated[
        Path | None, typer.Option("--model", help="State model file from 'callbench model infer' (default: inferred now).")
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0 picks a free one).")] = 8080,
    seed: Annotated[int, typer.Option("--seed", help="Seed of generated ids and synthesized fields: same seed and requests, same responses.")] = 0,
    max_body: Annotated[int, typer.Option("--max-body", help="Largest request body in bytes (larger: 413).")] = 1 << 20,
) -> None:
    """Serve a stateful mock of an OpenAPI spec on 127.0.0.1 until Ctrl-C.

    Every request is checked against the spec: an unknown path is 404, a method the path lacks 405, a missing or mistyped parameter or malformed JSON 400, a body that does not fit its schema 422, each with the reason in a JSON body {"error": ...}. Create operations store what they make (in memory, SQLite), reads and lists return it, deletes remove it, a missing item is 404; responses conform to the response schema, fields the state does not hold are synthesized from the seed.
    """
    from callbench.mock.server import MockServer  # this process is the mock's own: no quotas

    try:
        if not 0 <= port <= 65535:
            raise ConfigError(f"--port {port}: must be between 0 and 65535")
        if max_body < 0:
            raise ConfigError(f"--max-body {max_body}: must be >= 0")
        service = MockServer.from_files(spec, model, seed=seed, port=port, max_body=max_body)
    except (CallbenchError, OSError) as e:
        fail(e)
    out_console.print(f"mock of {spec.name} on {service.url} (seed {seed}; Ctrl-C to stop)", highlight=False)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        service.close()
