"""Resources from the path structure alone.

A path ending in a parameter (``/pets/{petId}``) is an *item* path; the path without that last
segment (``/pets``) is its *collection*, whether or not the spec declares operations on it. A
path ending in a literal segment is a collection when some path extends it with a parameter, or
when it shares the last segment with a known collection (Asana's ``/projects/{project_gid}/tasks``
lists the tasks whose items live at ``/tasks/{task_gid}``). The resource is named after the
collection's last literal segment, singular (``pets`` -> ``pet``, ``store/orders`` -> ``order``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PARAM = re.compile(r"^\{([^{}]+)\}$")
_EXT = re.compile(r"\.(json|xml|yaml)$")
_VERB = re.compile(r"^([^:]+):([A-Za-z][A-Za-z0-9]*)$")  # a custom method: /spreadsheets/{id}:batchUpdate
_WORD = re.compile(r"[^A-Za-z0-9]+")


def segments(path: str) -> list[str]:
    """Non-empty path segments, a format suffix dropped (Discourse's ``/posts/{id}.json``) and a
    custom method made a segment of its own (Google's ``/spreadsheets/{id}:batchUpdate`` ->
    ``{id}``, ``:batchUpdate``: an action on the item)."""
    path = re.split(r"[#?]", path, maxsplit=1)[0]  # a fragment label or fixed query of the path key
    out: list[str] = []
    for s in path.split("/"):
        m = _VERB.match(s)
        out += [m.group(1), ":" + m.group(2)] if m else [_EXT.sub("", s)] if s else []
    return out


def norm(path: str) -> str:
    """The path as resources see it: empty segments and format suffixes dropped."""
    return join(segments(path))


def param_of(segment: str) -> str | None:
    m = _PARAM.match(segment)
    return m.group(1) if m else None


def path_params(path: str) -> list[str]:
    """Every parameter of ``path``, those inside a segment (``{sha}.{diffType}``) included."""
    return list(dict.fromkeys(re.findall(r"\{([^{}]+)\}", re.split(r"[#?]", path, maxsplit=1)[0])))


def singular(word: str) -> str:
    w = word
    low = w.lower()
    if low.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if low.endswith(("sses", "xes", "ches", "shes", "zzes", "uses")):
        return w[:-2]
    if low.endswith("s") and not low.endswith(("ss", "us", "is", "news", "series", "species")) and len(w) > 3:
        return w[:-1]
    return w


def ident(text: str) -> str:
    """``user-groups`` -> ``user_groups``; a leading digit gets an underscore."""
    out = _WORD.sub("_", text).strip("_") or "resource"
    return "_" + out if out[0].isdigit() else out


@dataclass
class ResourceShape:
    name: str
    collections: list[str] = field(default_factory=list)
    items: list[str] = field(default_factory=list)


def join(segs: list[str]) -> str:
    return "/" + "/".join(segs)


def resource_name_for(collection: str) -> str | None:
    """The resource a collection path holds: its last segment, singular; None when it ends in a
    parameter or is the root."""
    segs = segments(collection)
    if not segs or param_of(segs[-1]):
        return None
    return ident(singular(segs[-1])).lower()


def shapes(paths: list[str]) -> dict[str, ResourceShape]:
    """Resource name -> its collection and item paths (declared or implied), in spec order."""
    out: dict[str, ResourceShape] = {}
    collections: list[str] = []
    for path in paths:
        segs = segments(path)
        if len(segs) >= 2 and param_of(segs[-1]) and not param_of(segs[-2]):
            coll = join(segs[:-1])
            name = resource_name_for(coll)
            if name is None:
                continue
            shape = out.setdefault(name, ResourceShape(name))
            if path not in shape.items:
                shape.items.append(path)
            if coll not in shape.collections:
                shape.collections.append(coll)
            collections.append(coll)
    for path in paths:  # literal-ending paths named like a known resource: more collections of it
        segs = segments(path)
        if not segs or param_of(segs[-1]) or path in collections:
            continue
        name = resource_name_for(path)
        if name in out and path not in out[name].collections:
            out[name].collections.append(path)
    return out


def item_prefixes(path: str) -> list[tuple[str, str]]:
    """(parameter, the path up to and including it) for each parameter of ``path``."""
    segs = segments(path)
    return [(p, join(segs[: i + 1])) for i, s in enumerate(segs) if (p := param_of(s))]
