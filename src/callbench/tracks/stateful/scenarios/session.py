"""*session*: a REST session service (:mod:`callbench.tracks.stateful.services.session_server`).

Sessions live under ``/api/sessions/{source}/{type}[/{id}]``; programs use ``requests`` against
``BASE_URL`` (preloaded). The harness starts one server per test case, in a process of its own
with per-case quotas (bytes, requests, memory: a program that breaks one gets a ``runtime``
verdict), seeds it with the task's initial sessions and compares, after the program, the server's
full state and the number of successful writes (an extra POST/PUT/PATCH/DELETE fails the case even
when it leaves the same rows behind).

The abstract world mirrors the server: ids are assigned in creation order after the seeded rows,
lists are sorted by id, ``?data.status=`` filters compare strings.
"""

from __future__ import annotations

from random import Random
from typing import Any

from callbench.tracks.stateful.scenario import (
    AbsObject,
    Api,
    Initial,
    ObjectType,
    Param,
    Runtime,
    Scenario,
    World,
)
from callbench.tracks.stateful.services.session_server import API_DOC

_SOURCES = ("web", "mobile", "kiosk")
_TYPES = ("chat", "cart", "login")
_USERS = ("ana", "ben", "chen", "dara", "eli", "fay")
_STATUSES = ("active", "idle", "closed")


def _data(rng: Random) -> dict[str, Any]:
    return {"user": rng.choice(_USERS), "status": rng.choice(_STATUSES), "count": rng.randint(0, 9)}


def _new_session(world: World, source: str, type_: str, data: dict) -> AbsObject:
    world.data["next_id"] = world.data.get("next_id", 1)
    obj = world.create("session", id=world.data["next_id"], source=source, type=type_, data=dict(data))
    world.data["next_id"] += 1
    return obj


def _where(world: World, source: str, type_: str) -> list[AbsObject]:
    rows = [o for o in world.live("session") if o.attrs["source"] == source and o.attrs["type"] == type_]
    return sorted(rows, key=lambda o: o.attrs["id"])


# -- domains: (source, type) is drawn once per call, mostly among the kinds the world already has
def _source(rng: Random, world: World, objs: dict) -> str:
    kinds = sorted({(o.attrs["source"], o.attrs["type"]) for o in world.live("session")})
    if kinds and rng.random() < 0.75:
        world.data["kind"] = rng.choice(kinds)
    else:
        world.data["kind"] = (rng.choice(_SOURCES), rng.choice(_TYPES))
    return world.data["kind"][0]


def _type(rng: Random, world: World, objs: dict) -> str:
    return world.data["kind"][1]


def _status(rng: Random, world: World, objs: dict) -> str:
    return rng.choice(_STATUSES)


def _data_domain(rng: Random, world: World, objs: dict) -> dict:
    return _data(rng)


def _patch_domain(rng: Random, world: World, objs: dict) -> dict:
    key = rng.choice(["status", "count"])
    return {"status": rng.choice(_STATUSES)} if key == "status" else {"count": rng.randint(0, 9)}


# -- effects
def _create(world: World, a: dict, o: dict) -> AbsObject:
    return _new_session(world, a["source"], a["type"], a["data"])


def _list(world: World, a: dict, o: dict) -> list[AbsObject]:
    return _where(world, a["source"], a["type"])


def _query(world: World, a: dict, o: dict) -> list[AbsObject]:
    return [x for x in _where(world, a["source"], a["type"]) if x.attrs["data"].get("status") == a["status"]]


def _get(world: World, a: dict, o: dict) -> AbsObject:
    return o["session"]


def _put(world: World, a: dict, o: dict) -> AbsObject:
    return world.update(o["session"], data=dict(a["data"]))


def _patch(world: World, a: dict, o: dict) -> AbsObject:
    return world.update(o["session"], data={**o["session"].attrs["data"], **a["patch"]})


def _delete(world: World, a: dict, o: dict) -> int:
    world.delete(o["session"])
    return 204


_URL = 'f"{BASE_URL}/api/sessions/{$source}/{$type}"'
_ONE = "f\"{BASE_URL}/api/sessions/{$session['source']}/{$session['type']}/{$session['id']}\""
_SESSION = Param("session", object_type="session")
_KIND = (
    Param("source", domain=_source, describe="the source"),
    Param(
        "type",
        domain=_type,
        describe="the session type",
        var="session_type",
        perturb=lambda rng, v: rng.choice([t for t in _TYPES if t != v]),
    ),
)
_APIS = (
    Api(
        "create_session",
        (*_KIND, Param("data", domain=_data_domain, describe="the session data")),
        f'requests.post({_URL}, json={{"data": $data}}).json()',
        _create,
        "object",
        "session",
        "create a session of type {type} under {source} with the data {data}",
        returns_type="session",
    ),
    Api(
        "list_sessions",
        _KIND,
        f"requests.get({_URL}).json()",
        _list,
        "objects",
        "sessions",
        "list the sessions of type {type} under {source}",
        returns_type="session",
        writes=False,
    ),
    Api(
        "query_sessions",
        (*_KIND, Param("status", domain=_status, describe="the status")),
        f'requests.get({_URL}, params={{"data.status": $status}}).json()',
        _query,
        "objects",
        "matching",
        "find the sessions of type {type} under {source} whose status is {status}",
        returns_type="session",
        writes=False,
    ),
    Api(
        "get_session",
        (_SESSION,),
        f"requests.get({_ONE}).json()",
        _get,
        "object",
        "fetched",
        "fetch the session {session} again",
        target="session",
        returns_type="session",
        writes=False,
    ),
    Api(
        "update_session",
        (_SESSION, Param("data", domain=_data_domain, var="new_data", describe="the new data")),
        f'requests.put({_ONE}, json={{"data": $data}}).json()',
        _put,
        "object",
        "updated",
        "replace the data of the session {session} with {data}",
        target="session",
        returns_type="session",
    ),
    Api(
        "patch_session",
        (_SESSION, Param("patch", domain=_patch_domain, describe="the changes")),
        f'requests.patch({_ONE}, json={{"data": $patch}}).json()',
        _patch,
        "object",
        "patched",
        "merge the changes {patch} into the data of the session {session}",
        target="session",
        returns_type="session",
    ),
    Api(
        "delete_session",
        (_SESSION,),
        f"requests.delete({_ONE}).status_code",
        _delete,
        "value",
        "status",
        "delete the session {session}",
        target="session",
    ),
)


def _initial(rng: Random) -> Initial:
    world = World()
    seed = []
    for _ in range(rng.randint(2, 5)):
        row = {"source": rng.choice(_SOURCES[:2]), "type": rng.choice(_TYPES[:2]), "data": _data(rng)}
        seed.append(row)
        _new_session(world, row["source"], row["type"], row["data"])  # held by no variable yet
    return Initial(world, {}, service_seed=seed)


SCENARIO = Scenario(
    name="session",
    description="A REST session service on loopback (SQLite-backed); programs use requests.",
    object_types=(
        ObjectType(
            "session",
            "a session {id, source, type, checksum, data}",
            ref="{var}",
            probes={"count in the data": ("{var}['data']['count']", lambda o: o.attrs["data"]["count"])},
        ),
    ),
    apis=_APIS,
    runtime=Runtime.http("session", API_DOC),
    initial=_initial,
)
