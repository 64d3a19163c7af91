"""Every option of ``callbench run webapi|nested|stateful`` as it is today (name, flags, type,
default, help, hidden), pinned in ``tests/fixtures/run_flags.json``: issue 30 item 1 generates
these commands from the tracks' options models, and must keep every flag name, default and help
text. A deliberate change of a flag rewrites the file with ``CALLBENCH_WRITE_RUN_FLAGS=1``."""

from __future__ import annotations

import enum
import inspect
import json
import os
import types
import typing
from pathlib import Path
from typing import Any

import typer.main

from callbench.cli import app

SNAPSHOT = Path(__file__).resolve().parents[1] / "fixtures" / "run_flags.json"
COMMANDS = ("webapi", "nested", "stateful")


def _default(value: Any) -> Any:
    value = getattr(value, "value", value)  # an enum member: its value
    return value if isinstance(value, (str, int, float, bool, type(None), list)) else str(value)


def _type(hint: Any) -> str:
    """``int | None``; an enum as its values (``choice[strict, compat]``)."""
    args = typing.get_args(hint)
    if args and typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " | ".join(_type(a) for a in args)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "choice[" + ", ".join(str(m.value) for m in hint) + "]"
    if args:
        return f"{getattr(typing.get_origin(hint), '__name__', hint)}[{', '.join(_type(a) for a in args)}]"
    return getattr(hint, "__name__", str(hint))


def run_flags() -> dict[str, list[dict[str, Any]]]:
    run = typer.main.get_command(app).commands["run"]  # type: ignore[attr-defined]
    out = {}
    for name in COMMANDS:
        command = run.commands[name]
        hints = typing.get_type_hints(inspect.unwrap(command.callback))
        out[name] = [
            {
                "name": p.name,
                "opts": list(p.opts) + list(p.secondary_opts),
                "type": _type(hints.get(p.name)),
                "default": _default(p.default),
                "required": p.required,
                "multiple": bool(getattr(p, "multiple", False)),
                "is_flag": bool(getattr(p, "is_flag", False)),
                "hidden": bool(getattr(p, "hidden", False)),
                "help": " ".join((getattr(p, "help", None) or "").split()),
            }
            for p in command.params
        ]
        out[name].append({"command_help": " ".join((command.help or "").split())})
    return out


def test_run_commands_keep_their_flags_defaults_and_help():
    got = run_flags()
    if os.environ.get("CALLBENCH_WRITE_RUN_FLAGS") == "1":
        SNAPSHOT.write_text(json.dumps(got, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    want = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    for name in COMMANDS:
        assert [p.get("name") for p in got[name]] == [p.get("name") for p in want[name]], name
        for g, w in zip(got[name], want[name], strict=True):
            assert g == w, f"run {name}: {w.get('name')}"


def test_run_options_are_grouped_in_help_panels():
    """Issue 31: `run webapi --help` listed 40 options in one panel. The console script's command
    puts every option of the run commands into a named panel."""
    import subprocess
    import sys

    from callbench.cli import command

    run = command().commands["run"]
    for name in ("webapi", "nested", "stateful"):
        loose = [p.name for p in run.commands[name].params if getattr(p, "rich_help_panel", None) is None]
        assert loose == [], (name, loose)
    out = subprocess.run([sys.executable, "-m", "callbench", "run", "webapi", "--help"], capture_output=True, text=True,
                         env={**__import__("os").environ, "COLUMNS": "120"}, timeout=120)
    assert out.returncode == 0, out.stderr
    for panel in ("Model", "Data and selection", "Prompt and setting", "Constrained decoding", "Scoring", "Run directory"):
        assert f"─ {panel} ─" in out.stdout, panel
