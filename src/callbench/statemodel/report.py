"""The inference report: every operation, used and as what, or not used and why (Markdown)."""

from __future__ import annotations

from collections import Counter

from callbench.statemodel.overlay import StateModel


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def report(model: StateModel) -> str:
    used = [o for o in model.operations if o.used]
    roles = Counter(o.role for o in used)
    lines = [
        f"# State model inferred from {model.spec}",
        "",
        f"{model.title}: {len(model.operations)} operations, {len(used)} used, "
        f"{len(model.operations) - len(used)} not used; {len(model.resources)} resources.",
        "",
        "Used by role: " + (", ".join(f"{r} {n}" for r, n in sorted(roles.items())) or "none") + ".",
        "",
        "## Resources",
        "",
        "| resource | collections | items | id field | parent |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in model.resources:
        lines.append(
            f"| {r.name} | {_cell(', '.join(r.collections))} | {_cell(', '.join(r.items))} | "
            f"{r.id_field or '—'} ({r.id_type}) | {r.parent or '—'} |"
        )
    lines += ["", "## Operations", "", "| operation | id | used | as | ids from | why / note |", "| --- | --- | --- | --- | --- | --- |"]
    for o in model.operations:
        role = f"{o.role} {o.resource}" if o.resource else o.role
        ids = "; ".join(f"{p} ← {s.resource}.{s.field} ({s.by})" for p, s in o.ids.items())
        lines.append(
            f"| `{_cell(o.op)}` | {_cell(o.id or '')} | {'yes' if o.used else 'no'} | {role} | {_cell(ids) or '—'} | {_cell(o.reason)} |"
        )
    return "\n".join(lines) + "\n"
