"""Check gold requests against their own spec: which expected arguments does the spec not allow,
and which required ones are missing? A benchmark that scores illegality must know where its gold
itself is illegal."""

from __future__ import annotations

from dataclasses import dataclass

from callbench.specs import ApiSpec
from callbench.tracks.webapi.dataset import WebApiTask

_SPEC_LOC = {"headers": "header", "params": "query", "data": "body"}


@dataclass(frozen=True)
class GoldIssue:
    task_id: str
    kind: str  # "illegal_argument" | "missing_required" | "no_operation"
    location: str
    name: str


def audit_gold(task: WebApiTask, spec: ApiSpec) -> list[GoldIssue]:
    cfg = task.config.as_dict()
    match = spec.match(cfg["method"], cfg["url"])
    if match is None:
        return [GoldIssue(task.id, "no_operation", "url", cfg["url"])]
    op = match.operation
    issues: list[GoldIssue] = []
    for loc, spec_loc in _SPEC_LOC.items():
        values = cfg.get(loc)
        if isinstance(values, dict):
            issues += [GoldIssue(task.id, "illegal_argument", loc, k) for k in values if not spec.is_legal_argument(op, spec_loc, k)]
    for spec_loc, names in spec.required_arguments(op).items():
        loc = {"header": "headers", "query": "params", "body": "data"}.get(spec_loc)
        if loc is None:
            continue  # path parameters are in the URL by construction
        values = cfg.get(loc)
        have = set(values) if isinstance(values, dict) else set()
        if loc == "headers":
            have = {h.lower() for h in have}
        for name in sorted(names):
            if (name.lower() if loc == "headers" else name) not in have:
                issues.append(GoldIssue(task.id, "missing_required", loc, name))
    return issues
