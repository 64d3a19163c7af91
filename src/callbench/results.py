"""Read stored runs as flat rows: ``callbench.load_run(dir)``, ``callbench export``, ``callbench show``.

One row per stored sample. Run-level columns come first (:data:`RUN_COLUMNS`), then every
verdict field of every scoring mode the track stored, flattened as ``<mode>.<field>``: nested
objects become dotted names (``strict.complexity.n_calls``), lists become JSON text
(``strict.arguments``). The web API track adds boolean columns derived from its verdict strings,
so a rate is the mean of a column: ``strict.correct`` (the sample is a correct implementation),
``strict.executable``, ``strict.url_correct``, ``strict.method_correct``,
``strict.endpoint_correct``, ``strict.correct_except_credentials``, and per-argument-verdict
counts ``strict.arguments_correct``, ``strict.arguments_missing``...

Everything is read through :class:`~callbench.runs.store.RunStore`, so a damaged run directory
is a one-line :class:`~callbench.errors.RunStoreError`. pandas is optional: :func:`load_run`
returns a DataFrame when it is installed, else a list of dicts.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from callbench.errors import CallbenchError, ConfigError, RunStoreError

if TYPE_CHECKING:
    from callbench.tracks.definition import TaskSource

# Columns every export row has, in this order.
RUN_COLUMNS: tuple[str, ...] = (
    "run",
    "track",
    "model",
    "setup",
    "scoring",
    "constrained",
    "sample_id",
    "group",
    "status",
    "error",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "raw_output",
    "parsed",
    "execution",
    "extra",
)
FORMATS = ("csv", "jsonl", "parquet")
PARQUET_HINT = "pip install 'callbench[parquet]'"


@dataclass
class StoredRun:
    """One run directory as read from its store: config, the run's scoring mode, raw rows."""

    directory: Path
    config: dict[str, Any]
    scoring: str | None
    rows: list[dict[str, Any]]

    @property
    def identity(self) -> dict[str, Any]:
        return self.config["identity"]

    @property
    def track(self) -> str:
        return self.identity["track"]


def read_run(run_dir: str | os.PathLike[str]) -> StoredRun:
    """Open ``run_dir`` read-only and return its config and every stored row (JSON decoded)."""
    from callbench.runs.store import RunStore, check_track

    directory = Path(run_dir)
    store = RunStore.open(directory)
    try:
        config = store.config()
        check_track(directory / "config.json", config)
        rows = list(store.rows())
    finally:
        store.close()
    return StoredRun(directory=directory, config=config, scoring=_stored_scoring(directory), rows=rows)


def _stored_scoring(directory: Path) -> str | None:
    """The scoring mode ``summary.json`` records (None for a run that has not finished, or a
    summary that does not say: the verdicts of every mode are exported either way)."""
    try:
        doc = json.loads((directory / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    mode = doc.get("scoring") if isinstance(doc, dict) else None
    return mode if isinstance(mode, str) else None


# -- flattening ------------------------------------------------------------------------------------


def _json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, default=str)


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Objects become dotted columns, lists JSON text, scalars stay as they are."""
    if isinstance(value, dict):  # an empty object adds no column
        for k, v in value.items():
            _flatten(f"{prefix}.{k}", v, out)
    elif isinstance(value, (list, tuple)):
        out[prefix] = _json(list(value))
    else:
        out[prefix] = value


def flatten_verdicts(track: str, verdicts: dict[str, Any] | None) -> dict[str, Any]:
    """``{"strict": {...}, "compat": {...}}`` -> ``{"strict.url": ..., "compat.url": ...}``, each
    mode's columns led by those the track's definition derives from its verdict."""
    from callbench.tracks.definition import find_definition

    definition = find_definition(track)
    columns = definition.columns if definition is not None else None
    out: dict[str, Any] = {}
    for mode, verdict in (verdicts or {}).items():
        if not isinstance(verdict, dict):
            out[str(mode)] = _json(verdict) if isinstance(verdict, (list, tuple)) else verdict
            continue
        derived: dict[str, Any] = {}
        if columns is not None:
            columns(mode, verdict, derived)
        # derived columns first: the ones people filter on (strict.correct) lead each mode
        out.update(derived)
        flat: dict[str, Any] = {}
        _flatten(mode, verdict, flat)
        out.update({k: v for k, v in flat.items() if k not in derived})
    return out


def run_rows(run: StoredRun, label: str | None = None) -> list[dict[str, Any]]:
    """The export rows of one read run (``label`` names it in the ``run`` column)."""
    ident = run.identity
    label = label or run.directory.name
    rows = []
    for r in run.rows:
        row: dict[str, Any] = {
            "run": label,
            "track": run.track,
            "model": ident.get("model"),
            "setup": ident.get("setup"),
            "scoring": run.scoring,
            "constrained": bool(ident.get("constrained", False)),
            "sample_id": r["id"],
            "group": r["grp"],
            "status": r["status"],
            "error": r["error"],
            "latency_s": r["latency_s"],
            "prompt_tokens": r["prompt_tokens"],
            "completion_tokens": r["completion_tokens"],
            "raw_output": r["raw_output"],
            "parsed": r["parsed"],
            "execution": _json(r["execution"]),
            "extra": _json(r["extra"]) if r["extra"] else None,
        }
        row.update(flatten_verdicts(run.track, r["verdicts"]))
        rows.append(row)
    return rows


def columns_of(rows: Iterable[dict[str, Any]]) -> list[str]:
    """Run columns, then each scoring mode's columns together (in the order first seen)."""
    by_mode: dict[str, list[str]] = {}
    seen: set[str] = set(RUN_COLUMNS)
    for row in rows:
        for key in row:
            if key not in seen:
                seen.add(key)
                by_mode.setdefault(key.split(".", 1)[0], []).append(key)
    return [*RUN_COLUMNS, *(c for cols in by_mode.values() for c in cols)]


def _labels(dirs: Sequence[Path]) -> list[str]:
    """Each run's directory name; the full path where two runs share a name."""
    names = [d.name for d in dirs]
    return [str(d) if names.count(d.name) > 1 else d.name for d in dirs]


def export_rows(run_dirs: Sequence[str | os.PathLike[str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows of several runs (each named in the ``run`` column) and their columns."""
    if not run_dirs:
        raise ConfigError("export: give at least one run directory")
    dirs = [Path(d) for d in run_dirs]
    rows: list[dict[str, Any]] = []
    for d, label in zip(dirs, _labels(dirs), strict=True):
        rows.extend(run_rows(read_run(d), label))
    return rows, columns_of(rows)


def load_run(run_dir: str | os.PathLike[str], *, as_frame: bool | None = None) -> Any:
    """The samples of one run, one row each, with the columns ``callbench export`` writes.

    Returns a ``pandas.DataFrame`` when pandas is installed and a ``list`` of ``dict`` (one per
    sample, every column present) when it is not; ``as_frame=False`` always returns the list,
    ``as_frame=True`` requires pandas (a :class:`~callbench.errors.ConfigError` without it). A damaged run directory raises one-line
    :class:`~callbench.errors.RunStoreError`.

    >>> df = callbench.load_run("runs/webapi-gold-full-a14e3b96")
    >>> df.groupby("group")["strict.correct"].mean()
    """
    rows, columns = export_rows([run_dir])
    if as_frame is False:
        return [{c: row.get(c) for c in columns} for row in rows]
    try:
        import pandas as pd
    except ImportError:
        if as_frame:
            raise ConfigError("load_run(as_frame=True) needs pandas: pip install pandas") from None
        return [{c: row.get(c) for c in columns} for row in rows]
    return pd.DataFrame.from_records(rows, columns=columns)


def load_runs(root: str | os.PathLike[str] = "runs", *, as_frame: bool | None = None) -> Any:
    """One row per run directory below ``root``, as ``callbench runs`` lists them: track, model,
    setup, settings, n, n_selected, status (complete, partial k/n, running, broken: reason), one
    column per headline metric (a share, 0..1) and the directory. A DataFrame when pandas is
    installed (``as_frame`` as in :func:`load_run`), else a list of dicts.

    >>> callbench.load_runs("runs").query("track == 'webapi'")
    """
    from callbench.report.runs_table import flat_rows, runs_table

    columns, rows = flat_rows(runs_table(Path(root)))
    if as_frame is False:
        return rows
    try:
        import pandas as pd
    except ImportError:
        if as_frame:
            raise ConfigError("load_runs(as_frame=True) needs pandas: pip install pandas") from None
        return rows
    return pd.DataFrame.from_records(rows, columns=columns)


# -- writing ---------------------------------------------------------------------------------------


def _csv_value(value: Any) -> Any:
    return "" if value is None else value


def write_csv(rows: list[dict[str, Any]], columns: list[str], fh: TextIO) -> None:
    w = csv.writer(fh)
    w.writerow(columns)
    for row in rows:
        w.writerow([_csv_value(row.get(c)) for c in columns])


def write_jsonl(rows: list[dict[str, Any]], columns: list[str], fh: TextIO) -> None:
    for row in rows:
        fh.write(json.dumps({c: row.get(c) for c in columns}, ensure_ascii=False, default=str))
        fh.write("\n")


_ARROW_FIXED = {"constrained": "bool_", "latency_s": "float64", "prompt_tokens": "int64", "completion_tokens": "int64"}


def _arrow_type(pa: Any, column: str, values: list[Any]) -> Any:
    """One type per column: fixed for the run columns that have one; else bool, int64, float64
    where every value fits, else string (a column with no value at all is string)."""
    if column in _ARROW_FIXED:
        return getattr(pa, _ARROW_FIXED[column])()
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def _arrow_value(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "string" and not isinstance(value, str):
        return _json(value)
    if kind == "double":
        return float(value)
    return value


def write_parquet(rows: list[dict[str, Any]], columns: list[str], path: Path) -> None:
    pa, pq = _pyarrow()
    arrays, fields = [], []
    for c in columns:
        values = [row.get(c) for row in rows]
        typ = _arrow_type(pa, c, values)
        kind = str(typ)
        arrays.append(pa.array([_arrow_value(v, kind) for v in values], type=typ))
        fields.append(pa.field(c, typ))
    pq.write_table(pa.Table.from_arrays(arrays, schema=pa.schema(fields)), path)


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigError(f"--format parquet needs pyarrow: {PARQUET_HINT}") from None
    return pa, pq


def default_export_path(first_run: Path, fmt: str) -> Path:
    return Path(first_run) / f"export.{fmt}"


def export(
    run_dirs: Sequence[str | os.PathLike[str]],
    fmt: str = "csv",
    out: str | os.PathLike[str] | None = None,
    *,
    stdout: TextIO | None = None,
) -> tuple[Path | None, int]:
    """Write the rows of ``run_dirs`` as ``fmt`` to ``out`` (default ``<first run>/export.<fmt>``;
    ``"-"``: ``stdout``, csv and jsonl only). Returns the path written (None for stdout) and the
    number of rows."""
    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt}: choose from {', '.join(FORMATS)}")
    to_stdout = out is not None and str(out) == "-"
    if to_stdout and fmt == "parquet":
        raise ConfigError("--format parquet cannot be written to stdout (--out -); pass a file path")
    if fmt == "parquet":
        _pyarrow()  # before reading anything: a missing extra is the only output
    if not run_dirs:
        raise ConfigError("export: give at least one run directory")
    rows, columns = export_rows(run_dirs)
    if to_stdout:
        fh = stdout or sys.stdout
        (write_csv if fmt == "csv" else write_jsonl)(rows, columns, fh)
        fh.flush()
        return None, len(rows)
    path = Path(out) if out is not None else default_export_path(Path(run_dirs[0]), fmt)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        if fmt == "parquet":
            write_parquet(rows, columns, tmp)
        else:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                (write_csv if fmt == "csv" else write_jsonl)(rows, columns, fh)
        os.replace(tmp, path)
    except OSError as exc:
        if os.path.lexists(tmp) and not os.path.isdir(tmp):
            os.unlink(tmp)
        raise RunStoreError(f"{path}: cannot write ({exc.strerror}); pass another --out") from None
    return path, len(rows)


# -- one sample and its reference (for ``callbench show``) ----------------------------------------


def find_sample(run: StoredRun, sample_id: str) -> dict[str, Any]:
    """The stored row of ``sample_id``; an unknown id is a ConfigError naming close ids."""
    import difflib

    for r in run.rows:
        if r["id"] == sample_id:
            return r
    ids = [r["id"] for r in run.rows]
    if not ids:
        raise ConfigError(f"{run.directory}: no samples stored yet (no '{sample_id}')")
    close = difflib.get_close_matches(sample_id, ids, n=5, cutoff=0.5)
    hint = f"closest: {', '.join(close)}" if close else f"e.g. {', '.join(ids[:5])}"
    raise ConfigError(f"{run.directory}: no sample '{sample_id}' among its {len(ids)} samples ({hint})")


def _digest(paths: Iterable[Path]) -> str:
    """The first 16 hex digits of the SHA-256 of the files' bytes in turn, as run identities
    record a task file (``data_sha256``) or a stateful benchmark (``bench_sha256``)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class Reference:
    """What the benchmark expected of a sample (read from the data the run used), or why it is
    unknown."""

    task: Any = None  # the track's task object (webapi, nested) or task dict (stateful)
    path: Path | None = None  # the task file or benchmark directory it was read from
    note: str | None = None  # e.g. the data could not be matched to the run's


def _recorded(ident: dict[str, Any], key: str) -> Any:
    """``key`` from the identity, or from its ``scoring`` part (where scoring inputs live)."""
    if ident.get(key) is not None:
        return ident[key]
    scoring = ident.get("scoring")
    return scoring.get(key) if isinstance(scoring, dict) else None


def _candidates(run: StoredRun, source: TaskSource, data: Path | None) -> tuple[list[Path], str | None, str]:
    """Where the run's tasks may be (first match wins), the digest the run recorded of them and
    the identity key it is under."""
    from callbench.data.paths import data_dir

    ident = run.identity
    paths: list[Path] = []
    if data is not None:
        paths.append(source.given(data))
    for recorded_path in (run.config.get("data_file"), ident.get(source.path_key)):  # where the run read it
        if isinstance(recorded_path, str) and recorded_path:
            paths.append(Path(recorded_path))
    paths.extend(source.defaults(data_dir()))
    unique = []
    for p in paths:
        if p not in unique and p.exists():
            unique.append(p)
    key = source.digest_key
    digest = _recorded(ident, key)
    return unique, digest if isinstance(digest, str) else None, key


def reference_for(run: StoredRun, sample_id: str, data: str | os.PathLike[str] | None = None) -> Reference:
    """The task ``sample_id`` came from, found among the task files the run may have read
    (``data``; the file its config names, in runs that recorded one; the data dir's and the
    built-in sets) by the content digest its identity recorded. When no file matches, the first
    one that exists is used with a note; when none is found, only a note."""
    from callbench.tracks.definition import find_definition

    definition = find_definition(run.track)
    source = definition.tasks if definition is not None else None
    if source is None:
        return Reference(note=f"no reference view for track '{run.track}'")
    candidates, digest, key = _candidates(run, source, Path(data) if data is not None else None)
    if not candidates:
        hint = "pass --data with the task file the run used"
        return Reference(note=f"reference unavailable: no task data found; {hint}")
    chosen, note = candidates[0], None
    if digest is None:
        note = f"reference read from {chosen}: the run recorded no {key}, so it is not verified"
    else:
        try:
            match = next((p for p in candidates if _digest(source.files(p)) == digest), None)
        except (CallbenchError, OSError) as exc:
            return Reference(note=f"reference unavailable: {' '.join(str(exc).split())}")
        if match is not None:
            chosen = match
        else:
            note = (
                f"reference read from {chosen}, which differs from the data the run used ({key} {digest}); "
                "pass --data with the task file the run used"
            )
    try:
        tasks = source.load(chosen)
    except CallbenchError as exc:
        return Reference(note=f"reference unavailable: {' '.join(str(exc).split())}")
    task_id = source.task_id(sample_id)
    task = tasks.get(task_id)
    if task is None:
        return Reference(path=chosen, note=f"reference unavailable: no task '{task_id}' in {chosen}")
    return Reference(task=task, path=chosen, note=note)


# -- ``callbench list`` ---------------------------------------------------------------------------

# Datasets callbench knows, without importing the tracks: (name, track, kind, files under the data
# dir or in the package, fetch command). Kept equal to the tracks' constants by tests.
WAPIIBENCH_FILE = "wapiibench/data/synthetic/all/test_data_final.json"
NESTFUL_FILES = ("nestful/data_v2/nestful_data.jsonl", "nestful/data/train-00000-of-00001.parquet")


@dataclass
class DatasetInfo:
    name: str
    track: str
    size: str  # "395 tasks" or "not fetched: callbench data fetch wapiibench"
    where: str | None = None
    n: int | None = None


def _count_jsonl(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.strip())


def _count(path: Path) -> int | str:
    """Tasks in a task file, counted without validating them (a reason when it cannot be)."""
    try:
        if path.suffix == ".jsonl":
            return _count_jsonl(path)
        if path.suffix == ".parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:
                return f"present, {PARQUET_HINT} to read it"
            return pq.read_metadata(path).num_rows
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        return f"unreadable ({type(exc).__name__})"
    except Exception as exc:  # pyarrow's own errors on a damaged parquet file
        return f"unreadable ({type(exc).__name__})"
    if isinstance(doc, dict) and isinstance(doc.get("samples"), list):
        return len(doc["samples"])
    return len(doc) if isinstance(doc, list) else "unreadable (not a list of tasks)"


def _size(n: int | str) -> tuple[str, int | None]:
    return (f"{n} tasks", n) if isinstance(n, int) else (n, None)


def builtin_nested_file() -> Path:
    return Path(__file__).parent / "tracks" / "nested" / "data" / "generated_v1.jsonl"


def builtin_stateful_dir() -> Path:
    return Path(__file__).parent / "tracks" / "stateful" / "data" / "stateval_v1"


def stateful_builtin_counts() -> dict[str, int]:
    """Scenario -> tasks in the built-in StateEval set (``<scenario>/tasks.jsonl``)."""
    root = builtin_stateful_dir()
    out = {}
    for f in sorted(root.glob("*/tasks.jsonl")):
        try:
            out[f.parent.name] = _count_jsonl(f)
        except OSError:
            continue
    return out


def datasets(data: str | os.PathLike[str] | None = None) -> tuple[Path, list[DatasetInfo]]:
    """The data dir in use and every dataset a track can run on, with its number of tasks."""
    from callbench.data.paths import data_dir

    root = data_dir(data)
    where = f" --data {root}" if data else ""
    out = []
    wapii = root / WAPIIBENCH_FILE
    if wapii.is_file():
        size, n = _size(_count(wapii))
        out.append(DatasetInfo("wapiibench", "webapi", size, str(wapii), n))
    else:
        out.append(DatasetInfo("wapiibench", "webapi", f"not fetched: callbench data fetch wapiibench{where}"))
    nestful = next((root / f for f in NESTFUL_FILES if (root / f).is_file()), None)
    if nestful is not None:
        size, n = _size(_count(nestful))
        out.append(DatasetInfo("nestful", "nested", size, str(nestful), n))
    else:
        out.append(DatasetInfo("nestful", "nested", f"not fetched: callbench data fetch nestful{where}"))
    gen = builtin_nested_file()
    size, n = _size(_count(gen)) if gen.is_file() else ("missing from this install", None)
    out.append(DatasetInfo("generated_v1", "nested", f"{size} (built in)", str(gen), n))
    counts = stateful_builtin_counts()
    total = sum(counts.values())
    detail = ", ".join(f"{k} {v}" for k, v in counts.items())
    size = f"{total} tasks (built in: {detail})" if counts else "missing from this install"
    out.append(DatasetInfo("stateval_v1", "stateful", size, str(builtin_stateful_dir()), total or None))
    return root, out


def scenario_descriptions() -> dict[str, str]:
    """Scenario -> its description, read from each scenario module's source (``SCENARIO =
    Scenario(description=...)``) without importing it: importing starts services' modules."""
    import ast
    import importlib.util

    from callbench.tracks.stateful.scenarios import _SCENARIOS

    out = {}
    for name, module in sorted(_SCENARIOS.items()):
        out[name] = ""
        try:
            spec = importlib.util.find_spec(module)
            tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))  # type: ignore[union-attr, arg-type]
        except (ImportError, AttributeError, TypeError, OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "SCENARIO" for t in node.targets)
                and isinstance(node.value, ast.Call)
            ):
                for kw in node.value.keywords:
                    if kw.arg == "description" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        out[name] = kw.value.value
    return out


__all__ = [
    "FORMATS",
    "RUN_COLUMNS",
    "StoredRun",
    "columns_of",
    "datasets",
    "export",
    "export_rows",
    "find_sample",
    "flatten_verdicts",
    "load_run",
    "load_runs",
    "read_run",
    "reference_for",
]
