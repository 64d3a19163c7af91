"""``callbench model``: the state model of an OpenAPI spec (``model infer``, ``model check``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from callbench.cli.options import fail, out_console
from callbench.cli.root import model_app
from callbench.errors import CallbenchError


@model_app.command("infer")
def infer_cmd(
    spec: Annotated[Path, typer.Option("--spec", help="OpenAPI 3.x or Swagger 2.0 file (YAML or JSON).")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the state model (YAML, editable).")],
    report: Annotated[Path | None, typer.Option("--report", help="Also write the inference report (Markdown) here.")] = None,
    model: Annotated[
        Path | None, typer.Option("--model", help="An edited model file to apply on top of the inferred one (checked first).")
    ] = None,
) -> None:
    """Infer the state model of an OpenAPI spec and write it as editable YAML.

    Inference reads the path structure (collections such as /pets, items such as /pets/{petId}, nested ones), gives each operation a role (create, read, list, update, replace, delete, action), finds where path-parameter ids come from (OpenAPI links, else create/list response fields by name and type), and adds preconditions (the items a path names must exist), required body fields and effects.

    Edit the YAML to fix what inference got wrong and pass it to 'callbench serve mock --model'; each entry replaces the inferred one with the same key. The report lists every operation: used, and as what, or not used, and why.
    """
    from callbench.specs import load_spec
    from callbench.statemodel import load_model, write_model
    from callbench.statemodel.report import report as render

    try:
        api = load_spec(spec)
        state = load_model(api, model)
        write_model(state, out)
        if report is not None:
            report.parent.mkdir(parents=True, exist_ok=True)
            report.write_text(render(state), encoding="utf-8")
    except (CallbenchError, OSError) as e:
        fail(e)
    used = sum(o.used for o in state.operations)
    out_console.print(
        f"{len(state.resources)} resources, {used} of {len(state.operations)} operations used -> {out}"
        + (f" (report: {report})" if report else ""),
        highlight=False,
    )
