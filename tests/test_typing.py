"""Types at the layer interfaces (issue 30): ``mypy --strict`` passes on the modules that
``pyproject.toml``'s ``[tool.mypy] files`` lists, and none of their public parameters or fields is
typed bare ``Any``.

CI runs this through the README's test command (``scripts/test.sh`` installs mypy with the ``dev``
extra). Without mypy installed the mypy tests skip and say so; the ``Any`` check needs no mypy.
Why a test and not a separate CI step: ``.ci/run`` is exactly the README's test command.
"""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"

#: Bare ``Any`` still allowed at a typed interface, each with the reason; the test fails once one
#: is no longer there (so this list only shrinks).
ALLOWED_ANY: dict[str, list[str]] = {
    # Objects of the optional heavy libraries (a Hugging Face tokenizer, a llama_cpp.Llama), handed
    # straight to llguidance's adapters: mypy does not read transformers or llama_cpp (pyproject's
    # overrides; reading them took two minutes of CPU), so their classes would be Any anyway.
    "src/callbench/constrain/engine.py": ["vocab_for_hf(tokenizer) (line 365)", "vocab_for_llama(llama) (line 382)"],
}

#: The modules issue 30 names that are typed so far (the list may only grow).
REQUIRED = (
    "src/callbench/runs",
    "src/callbench/models/base.py",
    "src/callbench/tracks/base.py",
    "src/callbench/tracks/definition.py",
    "src/callbench/tracks/webapi/definition.py",
    "src/callbench/tracks/nested/definition.py",
    "src/callbench/tracks/stateful/definition.py",
    "src/callbench/constrain/protocol.py",
    "src/callbench/constrain/engine.py",
    "src/callbench/constrain/per_sample.py",
    "src/callbench/constrain/staged.py",
    "src/callbench/constrain/webapi_constraint.py",
    "src/callbench/constrain/adapters/__init__.py",
    "src/callbench/constrain/adapters/numpy_adapter.py",
)


def _config() -> dict:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]


def _checked_files() -> list[Path]:
    out: list[Path] = []
    for entry in _config()["files"]:
        path = ROOT / entry
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return out


@pytest.fixture(scope="module")
def mypy_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache for this module's mypy runs only (a cold check of [tool.mypy] files takes about 4 s
    of CPU; the second run reuses the standard library's types). mypy checks a cached module's
    hash, so the cache never hides an edit."""
    return tmp_path_factory.mktemp("mypy-cache")


def _mypy(cache: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed: install the dev extra (pip install -e '.[dev]'), as scripts/test.sh does")
    cmd = [sys.executable, "-m", "mypy", "--strict", "--config-file", str(PYPROJECT), "--cache-dir", str(cache), *targets]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)


def test_the_named_interfaces_are_listed() -> None:
    config = _config()
    assert config["strict"] is True
    missing = [m for m in REQUIRED if m not in config["files"]]
    assert not missing, f"pyproject.toml [tool.mypy] files no longer lists {missing}"
    assert all(p.is_file() for p in _checked_files())


def test_mypy_strict_passes(mypy_cache: Path) -> None:
    proc = _mypy(mypy_cache)
    assert proc.returncode == 0, f"mypy --strict failed on [tool.mypy] files:\n{proc.stdout}{proc.stderr}"


def test_mypy_strict_catches_an_untyped_function(mypy_cache: Path, tmp_path: Path) -> None:
    """The configuration really is strict: an unannotated function in a checked place fails."""
    bad = tmp_path / "untyped.py"
    bad.write_text("def f(x):\n    return x\n", encoding="utf-8")
    proc = _mypy(mypy_cache, str(bad))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "untyped.py:1: error: Function is missing a type annotation" in proc.stdout


def _bare_any(annotation: ast.expr | None) -> bool:
    return isinstance(annotation, ast.Name) and annotation.id == "Any" or (
        isinstance(annotation, ast.Constant) and annotation.value == "Any"
    )


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def bare_any_at_interfaces(source: str) -> list[str]:
    """``name: Any`` parameters of public functions and methods, and fields of public classes, in
    ``source`` (a JSON value may still be ``Any`` inside a container: ``dict[str, Any]``)."""
    found: list[str] = []

    def visit(body: list[ast.stmt], where: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef) and _public(node.name):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and _bare_any(item.annotation):
                        found.append(f"{where}{node.name}.{item.target.id} (line {item.lineno})")
                visit(node.body, f"{where}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _public(node.name):
                a = node.args
                for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                    if _bare_any(arg.annotation):
                        found.append(f"{where}{node.name}({arg.arg}) (line {node.lineno})")

    visit(ast.parse(source).body, "")
    return found


def test_the_any_check_finds_a_bare_any() -> None:
    source = (
        "class M:\n    constraint: Any = None\n    meta: dict[str, Any]\n"
        "    def f(self, x: Any, y: 'Any', z: list[Any]) -> Any: ...\n"
        "def _private(x: Any) -> None: ...\n"
    )
    assert bare_any_at_interfaces(source) == ["M.constraint (line 2)", "M.f(x) (line 4)", "M.f(y) (line 4)"]


def test_no_bare_any_at_the_typed_interfaces() -> None:
    found = {
        str(p.relative_to(ROOT)): hits for p in _checked_files() if (hits := bare_any_at_interfaces(p.read_text(encoding="utf-8")))
    }
    new = {path: [h for h in hits if h not in ALLOWED_ANY.get(path, [])] for path, hits in found.items()}
    new = {path: hits for path, hits in new.items() if hits}
    assert not new, f"parameters or fields typed bare Any at a typed interface: {new}"
    gone = {path: [h for h in hits if h not in found.get(path, [])] for path, hits in ALLOWED_ANY.items()}
    assert not any(gone.values()), f"no longer bare Any: remove from ALLOWED_ANY in tests/test_typing.py: {gone}"
