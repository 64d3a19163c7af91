"""The editable state model: pydantic classes, YAML writing, and YAML reading whose errors name
the line.

``callbench model infer`` writes the whole inferred model; a user edits it (a wrong role, a
missing id source, an operation to switch off) and hands it back with ``--model``. On reading,
every entry of the file *replaces* the inferred entry with the same key (a resource's ``name``,
an operation's ``op``), entries the file does not list keep the inferred value, so a file may
also hold only the entries a user changed. Errors are one line: ``FILE:LINE: field: message``,
the line found from PyYAML's node marks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from callbench.errors import ConfigError

Role = Literal["create", "read", "list", "update", "replace", "delete", "action"]
Effect = Literal["create", "update", "replace", "delete", "none", "unknown"]
IdBy = Literal["link", "name+schema", "name", "user"]
ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]

HEADER = """\
# callbench state model (version 1), inferred from {spec}.
# Edit freely and pass it back with --model: each entry here replaces the inferred entry with the
# same key (a resource's `name`, an operation's `op`); entries left out keep the inferred value.
#
# resources: name, collections (list/create paths), items (paths naming one item), id_field (the
#   entity field holding the id), id_type, parent (resource whose item path the collection is under)
# operations: op ("METHOD /path"), role (create|read|list|update|replace|delete|action),
#   resource, used (false: never called by generated programs; reason says why),
#   ids (path parameter -> {{resource, field, by: link|name+schema|name|user, from: [operations]}}),
#   values (parameters drawn from their schema), required_body, preconditions ({{exists, param}}),
#   effect (create|update|replace|delete|none|unknown), writes.
"""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IdSource(_Strict):
    """Where a path parameter's value comes from: ``field`` of a ``resource`` entity, which the
    operations in ``from`` return (create and list responses)."""

    resource: str
    field: str
    by: IdBy = "user"
    from_: list[str] = Field(default_factory=list, alias="from")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Precondition(_Strict):
    """The item of ``exists`` named by path parameter ``param`` must exist before the call."""

    exists: str
    param: str


class Resource(_Strict):
    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    collections: list[str] = Field(default_factory=list)
    items: list[str] = Field(default_factory=list)
    id_field: str | None = None
    id_type: Literal["integer", "number", "string"] = "string"
    parent: str | None = None


class OperationModel(_Strict):
    op: str = Field(pattern=r"^(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS|TRACE) /\S*$")
    id: str | None = None
    role: Role
    resource: str | None = None
    used: bool = True
    reason: str = ""
    ids: dict[str, IdSource] = Field(default_factory=dict)
    values: list[str] = Field(default_factory=list)
    required_body: list[str] = Field(default_factory=list)
    preconditions: list[Precondition] = Field(default_factory=list)
    effect: Effect = "none"
    writes: bool = False

    @property
    def method(self) -> str:
        return self.op.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.op.split(" ", 1)[1]


class StateModel(_Strict):
    version: Literal[1] = 1
    spec: str = ""
    title: str = ""
    resources: list[Resource] = Field(default_factory=list)
    operations: list[OperationModel] = Field(default_factory=list)

    def resource(self, name: str | None) -> Resource | None:
        return next((r for r in self.resources if r.name == name), None)

    def operation(self, method: str, path: str) -> OperationModel | None:
        key = f"{method.upper()} {path}"
        return next((o for o in self.operations if o.op == key), None)


# -- writing ----------------------------------------------------------------------------------
def to_yaml(model: StateModel) -> str:
    data = model.model_dump(mode="json", by_alias=True, exclude_defaults=False)
    for op in data["operations"]:  # keep the file short: drop empty lists/dicts and empty reasons
        for key in [k for k, v in op.items() if v in ([], {}, "") and k not in ("op", "role")]:
            del op[key]
        for src in op.get("ids", {}).values():
            if not src.get("from"):
                src.pop("from", None)
    return HEADER.format(spec=model.spec or "the spec") + yaml.safe_dump(
        data, sort_keys=False, allow_unicode=True, width=110
    )


def write_model(model: StateModel, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(to_yaml(model), encoding="utf-8")


# -- reading ------------------------------------------------------------------------------------
def _line(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest node along ``loc`` (pydantic's error location)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            hit = next(((k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == str(part)), None)
            if hit is None:
                break
            line = hit[0].start_mark.line + 1
            node = hit[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            break
    return line


class ModelFile:
    """A parsed model file: the validated :class:`StateModel` and the node tree for line lookups."""

    def __init__(self, path: Path, model: StateModel, root: yaml.Node | None):
        self.path = path
        self.model = model
        self.root = root

    def error(self, loc: tuple[Any, ...], message: str) -> ConfigError:
        line = _line(self.root, loc)
        field = ".".join(str(p) for p in loc) or "(top)"
        where = f"{self.path.name}:{line}" if line else self.path.name
        return ConfigError(f"{where}: {field}: {message}")


def read_model(path: str | Path) -> ModelFile:
    """Parse and validate a model file; a problem is one :class:`ConfigError` line naming the file,
    line and field."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{p.name}: model file not found ({p})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{p.name}: cannot read model file: {e}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{p.name}{line}: not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{p.name}: not valid YAML: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{p.name}:1: (top): the model must be a mapping with resources and operations")
    try:
        model = StateModel.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        loc = tuple(err["loc"])
        holder = ModelFile(p, StateModel(), root)
        raise holder.error(loc, err["msg"]) from None
    return ModelFile(p, model, root)
