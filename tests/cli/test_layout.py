"""The CLI package's structure (issue 12, part 8): modules import one another in one direction
only, each command module registers its commands without the package or a sibling, and the
split kept every command and a fast ``--help``."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import typer.main

import callbench.cli
from callbench.cli import app

PACKAGE = Path(callbench.cli.__file__).parent
SHARED = {"callbench.cli.root", "callbench.cli.options", "callbench.cli.runconfig"}
ENTRY = {"callbench.cli", "callbench.cli.__main__"}


def _module(path: Path) -> str:
    return "callbench.cli" if path.name == "__init__.py" else f"callbench.cli.{path.stem}"


def _imports(path: Path) -> set[str]:
    """The callbench.cli modules ``path`` imports, anywhere in it (inside functions too).
    ``from callbench.cli import x`` counts as importing submodule ``x`` when there is one, else the
    package itself (its ``__init__``)."""
    me = _module(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from .options import y
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if (PACKAGE / f"{alias.name}.py").is_file() and base == "callbench.cli" else base)
                if base == "callbench" and alias.name == "cli":
                    found.add("callbench.cli")
    return {m for m in found if m == "callbench.cli" or m.startswith("callbench.cli.")} - {me}


def _graph() -> dict[str, set[str]]:
    return {_module(p): _imports(p) for p in sorted(PACKAGE.glob("*.py"))}


def test_the_old_modules_are_gone():
    src = PACKAGE.parent
    assert not (src / "cli.py").exists() and not (src / "cli_stateful.py").exists() and not (src / "cli_results.py").exists()


def test_no_import_cycle_among_cli_modules():
    graph = _graph()
    assert {"callbench.cli", "callbench.cli.root", "callbench.cli.options", "callbench.cli.run"} <= set(graph)
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            assert state.get(nxt) != "open", "import cycle: " + " -> ".join([*path, node, nxt])
            if nxt not in state:
                visit(nxt, [*path, node])
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node, [])


def test_command_modules_import_only_the_shared_modules():
    graph = _graph()
    commands = set(graph) - SHARED - ENTRY
    assert {"callbench.cli.run", "callbench.cli.stateful", "callbench.cli.results", "callbench.cli.data"} <= commands
    for module in commands:
        assert graph[module] <= SHARED, f"{module} imports {sorted(graph[module] - SHARED)}"
    for module in SHARED:  # the shared modules never reach up to a command module or the package
        assert graph[module] <= SHARED, f"{module} imports {sorted(graph[module] - SHARED)}"
    assert graph["callbench.cli"] >= commands  # the package imports every command module: registration


def test_the_cycle_check_sees_imports_inside_functions(tmp_path):
    """The helper must count a lazy import (the old cli_stateful imported callbench.cli in a function)."""
    module = PACKAGE / "run.py"
    text = "def f():\n    from callbench.cli.stateful import run_stateful\n"
    fake = tmp_path / module.name
    fake.write_text(text)
    assert "callbench.cli.stateful" in _imports(fake)


def _commands(group, prefix=()) -> set[str]:
    out = set()
    for name, cmd in group.commands.items():
        if hasattr(cmd, "commands"):
            out |= _commands(cmd, (*prefix, name))
        else:
            out.add(" ".join((*prefix, name)))
    return out


def test_every_command_is_registered():
    assert _commands(typer.main.get_command(app)) == {
        "data fetch", "data path", "run webapi", "run nested", "run stateful", "constrain webapi",
        "generate nested", "generate stateful", "report", "models", "export", "show", "list", "coverage", "analyze complexity",
        "generate webapi", "audit webapi", "model infer", "serve mock", "sweep", "leaderboard", "runs", "view", "log",
    }


def test_help_loads_no_track_runner_or_yaml():
    """``callbench --help`` loads no track; ``run <track> --help`` loads only the light track
    definitions its flags are generated from (issue 30: the options models), no track itself."""
    code = (
        "import sys\nfrom typer.testing import CliRunner\nfrom callbench.cli import app\n"
        "r = CliRunner().invoke(app, ['--help'])\nassert r.exit_code == 0, r.output\n"
        "assert not [m for m in sys.modules if m.startswith('callbench.tracks.')]\n"
        "for args in (['run', 'webapi', '--help'], ['run', 'stateful', '--help']):\n"
        "    r = CliRunner().invoke(app, args)\n    assert r.exit_code == 0, r.output\n"
        "light = {'callbench.tracks.base', 'callbench.tracks.definition', 'callbench.tracks.webapi', "
        "'callbench.tracks.webapi.definition', 'callbench.tracks.stateful', 'callbench.tracks.stateful.definition'}\n"
        "heavy = [m for m in sys.modules if m.startswith(('callbench.runs.runner', 'callbench.tracks.', "
        "'callbench.specs', 'callbench.api', 'yaml', 'numpy', 'jinja2')) and m not in light]\nassert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_python_dash_m_runs_the_whole_cli():
    for module in ("callbench", "callbench.cli"):
        res = subprocess.run([sys.executable, "-m", module, "run", "--help"], capture_output=True, text=True, check=True)
        assert "stateful" in res.stdout and "webapi" in res.stdout
