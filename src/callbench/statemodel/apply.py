"""Apply a user's model file on top of the inferred model, and check the result against the spec.

Every check that fails is one :class:`ConfigError` line naming the file, the line and the field
(``petstore.model.yaml:41: operations.3.ids.petId.resource: no resource 'pets'``).
"""

from __future__ import annotations

from pathlib import Path

from callbench.specs.openapi import ApiSpec
from callbench.statemodel.infer import infer_model
from callbench.statemodel.overlay import ModelFile, StateModel, read_model
from callbench.statemodel.paths import path_params


def merge(inferred: StateModel, file: ModelFile) -> StateModel:
    """The inferred model with each entry of ``file`` replacing the one with its key."""
    user = file.model
    resources = {r.name: r for r in inferred.resources}
    for r in user.resources:
        resources[r.name] = r
    ops = {o.op: o for o in inferred.operations}
    extra = []
    for o in user.operations:
        if o.op in ops:
            ops[o.op] = o
        else:
            extra.append(o)
    return StateModel(
        spec=user.spec or inferred.spec,
        title=user.title or inferred.title,
        resources=list(resources.values()),
        operations=list(ops.values()) + extra,
    )


def check(model: StateModel, spec: ApiSpec, file: ModelFile) -> None:
    """Reject entries of ``file`` that do not fit ``spec`` or the rest of the model."""
    names = {r.name for r in model.resources}
    for i, r in enumerate(file.model.resources):
        if r.parent is not None and r.parent not in names:
            raise file.error(("resources", i, "parent"), f"no resource '{r.parent}'")
        for j, item in enumerate(r.items):
            if not path_params(item):
                raise file.error(("resources", i, "items", j), f"item path '{item}' has no path parameter")
    for i, o in enumerate(file.model.operations):
        at = ("operations", i)
        op = spec.operation(o.method.lower(), o.path)
        if op is None:
            raise file.error((*at, "op"), f"the spec has no operation {o.op}")
        if o.resource is not None and o.resource not in names:
            raise file.error((*at, "resource"), f"no resource '{o.resource}'")
        if o.role != "action" and o.resource is None:
            raise file.error((*at, "resource"), f"role '{o.role}' needs a resource")
        params = set(path_params(o.path))
        for pname, src in o.ids.items():
            if pname not in params:
                raise file.error((*at, "ids", pname), f"'{pname}' is not a path parameter of {o.path}")
            if src.resource not in names:
                raise file.error((*at, "ids", pname, "resource"), f"no resource '{src.resource}'")
        for j, pre in enumerate(o.preconditions):
            if pre.exists not in names:
                raise file.error((*at, "preconditions", j, "exists"), f"no resource '{pre.exists}'")
            if pre.param not in params:
                raise file.error((*at, "preconditions", j, "param"), f"'{pre.param}' is not a path parameter of {o.path}")
        for j, name in enumerate(o.values):
            if op.parameter("path", name) is None and op.parameter("query", name) is None and op.parameter("header", name, True) is None:
                raise file.error((*at, "values", j), f"'{name}' is not a parameter of {o.op}")


def load_model(spec: ApiSpec, path: str | Path | None = None) -> StateModel:
    """The inferred model of ``spec``, with the model file at ``path`` applied when given: its
    resources take part in inference (their paths and id fields shape the operations' roles and
    id sources), then its operations replace the inferred ones with the same key."""
    if path is None:
        return infer_model(spec)
    file = read_model(path)
    merged = merge(infer_model(spec, resources=file.model.resources), file)
    check(merged, spec, file)
    return merged
