"""Load NESTFUL-style rows into :class:`NestedTask`.

Auto-detected layouts: a v1 ``*-data.json`` (rows ``{input, output}``) with its sibling
``*-spec.json`` as the catalog of every row; v2 JSONL or JSON list (``sample_id``, per-row ``tools``,
``gold_answer``); the Hugging Face parquet export where ``output``/``tools``/``gold_answer`` are JSON
text in string columns. A bad row fails with ``file: [i].field: msg``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from callbench.data.validators import register_validator
from callbench.errors import DataError, MissingExtraError
from callbench.files import loads_document, read_text
from callbench.tools import ToolSpec
from callbench.tracks.nested.schema import NestedTask
from callbench.tracks.nested.tools import mathqa_names

_JSON_COLUMNS = ("output", "tools", "gold_answer")


def _read_json(path: Path, what: str = "tasks") -> Any:
    text = read_text(path)
    if not text.strip():
        raise DataError(f"{path}: no {what} (the file is empty)")
    return loads_document(text, str(path))


def _read_jsonl(path: Path) -> tuple[list[Any], list[int]]:
    """The rows of a JSONL file and the line each came from (blank lines are skipped)."""
    text = read_text(path)
    rows, lines = [], []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            rows.append(loads_document(line, f"{path}:{lineno}", at_line=False))
            lines.append(lineno)
    return rows, lines


def _read_parquet(path: Path) -> list[dict[str, Any]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise MissingExtraError("pyarrow", "parquet") from None
    try:
        return pq.read_table(path).to_pylist()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for bad files
        raise DataError(f"{path}: cannot read parquet ({exc})") from exc


def _decode_columns(row: dict[str, Any], path: Path, i: int) -> dict[str, Any]:
    """HF exports store nested fields as JSON text; a gold answer that is not JSON stays a string."""
    row = dict(row)
    for key in _JSON_COLUMNS:
        value = row.get(key)
        if isinstance(value, str):
            row[key] = loads_document(value, f"{path}: [{i}].{key}", at_line=False, text_ok=key == "gold_answer")
    return row


def detect_domain(row: dict[str, Any]) -> str:
    """``math`` when every call is a MathQA operation, ``code`` for StarCoder-derived rows (tools
    answer in ``output_0``), else ``api``."""
    names = [c.get("name") for c in row.get("output") or [] if isinstance(c, dict)]
    if names and all(n in mathqa_names() for n in names):
        return "math"
    for tool in row.get("tools") or []:
        if isinstance(tool, dict):
            out = tool.get("output_parameters") or tool.get("output_parameter") or {}
            if isinstance(out, dict) and ("output_0" in out or "output_0" in (out.get("properties") or {})):
                return "code"
    return "api"


def _spec_for(path: Path) -> Path | None:
    if path.name.endswith("-data.json"):
        spec = path.with_name(path.name[: -len("-data.json")] + "-spec.json")
        return spec if spec.is_file() else None
    return None


def _validate(row: dict[str, Any], path: Path, i: int, line: str = "") -> NestedTask:
    try:
        return NestedTask.model_validate(row)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "(row)"
        raise DataError(f"{path}: [{i}].{loc}: {err['msg']}{line}") from None


def load_nested(path: str | Path) -> list[NestedTask]:
    """Every row of ``path``, validated; the first bad row raises :class:`DataError`, and so does
    a file with no rows (an empty run would otherwise score as complete)."""
    path = Path(path)
    catalog: list[ToolSpec] | None = None
    lines: list[int] | None = None
    if path.suffix == ".parquet":
        rows: list[Any] = _read_parquet(path)
    elif path.suffix == ".jsonl":
        rows, lines = _read_jsonl(path)
    else:
        doc = _read_json(path)
        if not isinstance(doc, list):
            raise DataError(f"{path}: expected a list of rows")
        rows = doc
        spec = _spec_for(path)
        if spec is not None:
            specs = _read_json(spec, "tool specs")
            if not isinstance(specs, list):
                raise DataError(f"{spec}: expected a list of tool specs")
            catalog = []
            for j, s in enumerate(specs):
                try:
                    catalog.append(ToolSpec.model_validate(s))
                except ValidationError as exc:
                    err = exc.errors()[0]
                    loc = ".".join(str(p) for p in err["loc"]) or "(row)"
                    raise DataError(f"{spec}: [{j}].{loc}: {err['msg']}") from None
    if not rows:
        raise DataError(f"{path}: no tasks (the file holds no rows)")
    stem = path.name.removesuffix(path.suffix).removesuffix("-data")
    tasks: list[NestedTask] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        line = f" (line {lines[i]})" if lines else ""
        if not isinstance(row, dict):
            raise DataError(f"{path}: [{i}]: expected an object, got {type(row).__name__}{line}")
        row = _decode_columns(row, path, i)
        row.setdefault("id", row.get("sample_id") or f"{stem}-{i}")
        if catalog is not None:
            row.setdefault("tools", catalog)
        row.setdefault(
            "domain", detect_domain({**row, "tools": [] if catalog is not None else row.get("tools")})
        )
        row.setdefault("source", path.name)
        task = _validate(row, path, i, line)
        if task.id in seen:
            raise DataError(f"{path}: [{i}].id: duplicate id '{task.id}'{line}")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def check_fetched_v2(path: Path) -> str:
    """The ``nestful-v2`` check that ``callbench data fetch nestful`` runs on a downloaded file before
    keeping it: it must load, and every row must be a v2 row (an id and its own tool catalog)."""
    try:
        tasks = load_nested(path)
    except MissingExtraError:
        return "not parsed: pyarrow is not installed (pip install 'callbench[parquet]')"
    if not tasks:
        raise DataError(f"{path}: no rows")
    for i, task in enumerate(tasks):
        if not getattr(task, "sample_id", None):
            raise DataError(f"{path}: [{i}].sample_id: missing, not a NESTFUL v2 row")
        if not task.tools:
            raise DataError(
                f"{path}: [{i}].tools: empty, not a NESTFUL v2 row (v2 rows carry their own catalog)"
            )
    return f"{len(tasks)} rows"


register_validator("nestful-v2", check_fetched_v2)


# Where 'callbench data fetch nestful' puts the full NESTFUL v2 set, relative to <data dir>/nestful,
# in order of preference: the GitHub JSONL (--source github), then the Hugging Face parquet.
FETCHED_V2_FILES = ("data_v2/nestful_data.jsonl", "data/train-00000-of-00001.parquet")


def builtin_tasks() -> Path:
    """callbench's own offline benchmark, generated over the built-in tools."""
    from importlib import resources

    return Path(str(resources.files("callbench.tracks.nested.data").joinpath("generated_v1.jsonl")))


def default_task_file(data: str | Path | None = None) -> tuple[Path, str]:
    """The task file for a nested run given no task file, and a one-line note saying which it is.

    The full NESTFUL v2 set fetched by ``callbench data fetch nestful`` into the data dir (``data``
    when it is a directory, else ``$CALLBENCH_DATA_DIR`` or the user cache) when present and
    matching its lock record (or, for a file without one, the checksum pinned in the code); else
    callbench's own generated set. A fetched file that no longer matches the digest recorded at
    fetch time, or that has neither a lock record nor a pinned checksum (put there by hand, or
    left by an interrupted re-fetch), raises :class:`DataError` saying to re-fetch.
    """
    from callbench.data.fetch import UPSTREAMS
    from callbench.data.lock import lock_path, read_lock, sha256_file
    from callbench.data.paths import data_dir

    root = data_dir(data) / "nestful"
    sources = {f.path: (src, f) for src in UPSTREAMS["nestful"].values() for f in src.files}
    for rel in FETCHED_V2_FILES:
        path = root / rel
        if not path.is_file():
            continue
        if path.suffix == ".parquet":
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                continue
        src, remote = sources[rel]
        fetch_cmd = "callbench data fetch nestful" + (
            "" if src.upstream == "github" else f" --source {src.upstream}"
        )
        recorded = (read_lock(root).get(rel) or {}).get("sha256")
        expected = recorded or remote.sha256
        if expected is None:
            raise DataError(
                f"{path}: no record in {lock_path(root)} (not fetched by callbench, or its fetch was "
                f"interrupted); re-fetch with '{fetch_cmd}' or pass --data FILE"
            )
        if sha256_file(path) != expected:
            where = (
                f"{lock_path(root)} (recorded {expected[:16]}...)"
                if recorded
                else f"the pinned {expected[:16]}..."
            )
            raise DataError(
                f"{path}: sha256 differs from {where}; re-fetch with '{fetch_cmd} --force' or pass --data FILE"
            )
        return path, f"data: NESTFUL v2 fetched by 'callbench data fetch nestful' ({path})"
    builtin = builtin_tasks()
    if not builtin.is_file():
        raise DataError(f"{builtin}: the built-in nested task set is missing from this install")
    parquet = root / FETCHED_V2_FILES[1]
    why = (
        f"{parquet} needs pyarrow (pip install 'callbench[parquet]')"
        if parquet.is_file()
        else f"no NESTFUL v2 under {root}; 'callbench data fetch nestful' gets it"
    )
    return builtin, f"data: callbench's built-in generated set ({builtin.name}); {why}"
