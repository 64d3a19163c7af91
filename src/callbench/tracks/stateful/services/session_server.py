"""REST session service that stateful-track programs call over real HTTP.

Generated programs use ``requests`` against ``BASE_URL``; the harness starts one
:class:`SessionService` per test case (on a Unix socket that the program sandbox forwards to a
loopback port inside it; or port 0 on loopback), seeds it with
:meth:`SessionService.reset`, runs the program, and compares
:meth:`SessionService.snapshot` with the expected final state.

Library choice: stdlib ``http.server.ThreadingHTTPServer`` + ``sqlite3``. The
service is small, must start in milliseconds per test case, and must not add a
core dependency (no ASGI server, no event loop shared with the harness). The
stdlib handler is hardened here instead: JSON errors, a body cap checked from
``Content-Length`` before reading, bounded reads, a socket timeout against idle
(slowloris) connections, and one SQLite connection guarded by a lock so
concurrent writers can neither corrupt nor lose rows.

Out of the harness: each :class:`SessionService` is a proxy for a server running in its own
memory-limited process (:mod:`callbench.services.isolation`), with per-run
quotas on the bytes and requests clients send; the state and the request log come back over a
control channel, parsed with size and depth limits. Request bodies nest at most
``VALUE_MAX_DEPTH`` levels (400 beyond), so what is stored can always be read back.

``API_DOC`` is the documentation models read in their prompts; keep it in sync
with the behaviour below (tests check the documented examples).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import re
import sqlite3
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote

from callbench.services.isolation import (
    Channel,
    IsolatedService,
    Quotas,
    ServiceLimitError,
    register_kind,
    spawn,
)
from callbench.services.json_http import ClientError, JsonHandler, ThreadedEngine, strict_json
from callbench.untrusted import VALUE_MAX_DEPTH, UntrustedInputError, check_value

__all__ = [
    "API_DOC",
    "Quotas",
    "ServiceLimitError",
    "SessionService",
    "canonical_json",
    "checksum_of",
    "filter_form",
    "main",
]

log = logging.getLogger(__name__)

API_DOC = """\
# Session service API

Base URL: `BASE_URL` (for example `http://127.0.0.1:8000`). All bodies are JSON
(UTF-8); send `Content-Type: application/json` (what `requests`' `json=` does).

A **session** is a JSON object:

```json
{"id": 1, "source": "web", "type": "cart", "checksum": "<sha256 hex>", "data": {"items": 2}}
```

- `id`: integer assigned by the server (1, 2, 3, ... in creation order; never reused).
- `source`, `type`: the two path segments the session was created under.
- `data`: any JSON object (keys come back sorted).
- `checksum`: computed by the server, the SHA-256 hex digest of the canonical JSON of
  `data`, i.e. `hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode()).hexdigest()`.

`id`, `source`, `type` and `checksum` are read-only: if a request body contains them they
are ignored. Any other top-level body key besides `data` is an error (400).

## Endpoints

| Method | Path | Body | Success |
|---|---|---|---|
| GET | `/api/sessions/{source}/{type}` | - | 200, JSON array of the sessions under `{source}/{type}`, sorted by `id` |
| POST | `/api/sessions/{source}/{type}` | `{"data": {...}}` | 201, the created session (and a `Location` header) |
| GET | `/api/sessions/{source}/{type}/{id}` | - | 200, the session |
| PUT | `/api/sessions/{source}/{type}/{id}` | `{"data": {...}}` | 200, the session; `data` is replaced entirely |
| PATCH | `/api/sessions/{source}/{type}/{id}` | `{"data": {...}}` | 200, the session; top-level keys are merged into `data` (a `null` value stores `null`, it does not delete the key) |
| DELETE | `/api/sessions/{source}/{type}/{id}` | - | 204, no body |
| GET | `/api/sessions` | - | 200, JSON array of all sessions of every source and type, sorted by `id` |
| GET | `/health` | - | 200, `{"status": "ok"}` |

A session is addressed by `{source}/{type}/{id}` together: the `id` of a session created
under another source or type gives 404.

## Query filters (list endpoints only)

`GET /api/sessions/{source}/{type}` and `GET /api/sessions` accept filters; a session
must match all of them:

- `?id=3`: the session with that id.
- `?checksum=<hex>`: sessions whose checksum equals the value.
- `?data.<key>=<value>`: sessions whose `data` has the top-level key `<key>` and whose value,
  written as text, equals `<value>`. A string value is compared as is; any other value is
  compared as compact JSON (`json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`),
  so `?data.qty=3` matches `3` (and the string `"3"`), `?data.done=true` matches `true`,
  `?data.note=null` matches `null`. A session without the key never matches. `<key>` is
  a single top-level key (`data.a.b` means the key `"a.b"`).

Other query parameters on list endpoints are an error (400). Query strings on other
endpoints are ignored.

## Errors

Every error has a JSON body `{"error": "<message>"}`.

- 400: malformed JSON, body not an object, missing `data` or `data` not an object, unknown
  body key, bad `id` (must be a positive integer), bad query filter, bad `Content-Length`.
- 404: unknown path, or no such session.
- 405: the path exists but not with this method (the `Allow` header lists the methods).
- 408: the body did not arrive within 30 s.
- 411: chunked request bodies; send a `Content-Length`.
- 413: body larger than the limit (1 MiB by default).
- 415: a `Content-Type` that is not JSON (`application/json` or `application/*+json`); a
  request without `Content-Type` is read as JSON.

## Example

```python
import requests

BASE_URL = "http://127.0.0.1:8000"
r = requests.post(f"{BASE_URL}/api/sessions/web/cart", json={"data": {"items": 1}})
r.raise_for_status()
session = r.json()  # {"id": 1, "source": "web", "type": "cart", "checksum": "...", "data": {"items": 1}}
requests.patch(f"{BASE_URL}/api/sessions/web/cart/{session['id']}", json={"data": {"items": 2}}).raise_for_status()
carts = requests.get(f"{BASE_URL}/api/sessions/web/cart", params={"data.items": 2}).json()
```
"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source TEXT NOT NULL,
    type TEXT NOT NULL,
    checksum TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sessions_source_type ON sessions (source, type, id);
"""

_MAX_ID = (1 << 63) - 1  # SQLite INTEGER
_ID_RE = re.compile(r"[0-9]{1,19}")
_MAX_SEGMENT = 256
_COLLECTION_METHODS = ("GET", "HEAD", "POST")
_ITEM_METHODS = ("GET", "HEAD", "PUT", "PATCH", "DELETE")
_READ_ONLY_KEYS = frozenset({"id", "source", "type", "checksum"})


def canonical_json(data: Any) -> str:
    """The exact text the checksum hashes (Python's ``json.dumps`` defaults plus sort/compact)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def checksum_of(data: Any) -> str:
    """SHA-256 hex of :func:`canonical_json`; documented in ``API_DOC`` so clients can verify it."""
    return hashlib.sha256(canonical_json(data).encode("utf-8")).hexdigest()


def filter_form(value: Any) -> str:
    """How a ``data`` value is written for ``?data.<key>=`` comparison (strings as is, others as JSON)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _check_name(value: Any, what: str) -> str:
    """Source and type: non-empty text without control characters or path tricks."""
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if len(value) > _MAX_SEGMENT:
        raise ValueError(f"{what} is longer than {_MAX_SEGMENT} characters")
    if value in (".", "..") or "/" in value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"{what} {value!r} may not be '.', '..' or contain '/' or control characters")
    return value


def _parse_id(text: str) -> int:
    if not _ID_RE.fullmatch(text) or not 1 <= int(text) <= _MAX_ID:
        raise ClientError(400, f"bad id {text!r}: must be a positive integer")
    return int(text)


class _Store:
    """Sessions in SQLite; one connection shared by handler threads, serialized by a lock."""

    def __init__(self, db_path: Path | None):
        target = ":memory:" if db_path is None else str(db_path)
        # isolation_level=None: statements autocommit; multi-statement changes use explicit BEGIN.
        self._conn = sqlite3.connect(target, check_same_thread=False, isolation_level=None, timeout=5.0)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.executescript(_SCHEMA)

    @staticmethod
    def _row(row: tuple) -> dict:
        return {
            "id": row[0],
            "source": row[1],
            "type": row[2],
            "checksum": row[3],
            "data": json.loads(row[4]),
        }

    def select(self, source: str | None = None, type_: str | None = None) -> list[dict]:
        with self._lock:
            if source is None:
                rows = self._conn.execute("SELECT * FROM sessions ORDER BY id").fetchall()
            else:
                rows = self._conn.execute(
                    "SELECT * FROM sessions WHERE source = ? AND type = ? ORDER BY id", (source, type_)
                ).fetchall()
        return [self._row(r) for r in rows]

    def get(self, source: str, type_: str, id_: int) -> dict | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT * FROM sessions WHERE id = ? AND source = ? AND type = ?", (id_, source, type_)
            ).fetchone()
        return None if row is None else self._row(row)

    def create(self, source: str, type_: str, data: dict) -> dict:
        text, digest = canonical_json(data), checksum_of(data)
        with self._lock:
            cur = self._conn.execute(
                "INSERT INTO sessions (source, type, checksum, data) VALUES (?, ?, ?, ?)",
                (source, type_, digest, text),
            )
            new_id = cur.lastrowid
        return {"id": new_id, "source": source, "type": type_, "checksum": digest, "data": json.loads(text)}

    def update(self, source: str, type_: str, id_: int, data: dict, *, merge: bool) -> dict | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT data FROM sessions WHERE id = ? AND source = ? AND type = ?", (id_, source, type_)
            ).fetchone()
            if row is None:
                return None
            new = {**json.loads(row[0]), **data} if merge else data
            text, digest = canonical_json(new), checksum_of(new)
            self._conn.execute("UPDATE sessions SET data = ?, checksum = ? WHERE id = ?", (text, digest, id_))
        return {"id": id_, "source": source, "type": type_, "checksum": digest, "data": json.loads(text)}

    def delete(self, source: str, type_: str, id_: int) -> bool:
        with self._lock:
            cur = self._conn.execute(
                "DELETE FROM sessions WHERE id = ? AND source = ? AND type = ?", (id_, source, type_)
            )
        return cur.rowcount > 0

    def reset(self, rows: list[tuple[int, str, str, str, str]]) -> None:
        """Replace everything with ``rows`` and restart the id sequence after the largest id."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM sessions")
                self._conn.execute("DELETE FROM sqlite_sequence WHERE name = 'sessions'")
                self._conn.executemany(
                    "INSERT INTO sessions (id, source, type, checksum, data) VALUES (?, ?, ?, ?, ?)", rows
                )
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _seed_rows(initial: list[dict] | None) -> list[tuple[int, str, str, str, str]]:
    """Validate ``reset`` seeds; ids default to 1..n, explicit ids (from a snapshot) must increase."""
    rows: list[tuple[int, str, str, str, str]] = []
    last = 0
    for n, item in enumerate(initial or [], start=1):
        if not isinstance(item, dict):
            raise ValueError(f"seed #{n} must be a dict with source, type, data; got {type(item).__name__}")
        unknown = set(item) - {"source", "type", "data", "id", "checksum"}
        if unknown:
            raise ValueError(f"seed #{n} has unknown keys {sorted(unknown)}")
        missing = {"source", "type", "data"} - set(item)
        if missing:
            raise ValueError(f"seed #{n} lacks {sorted(missing)}")
        source, type_ = _check_name(item["source"], "source"), _check_name(item["type"], "type")
        data = item["data"]
        if not isinstance(data, dict):
            raise ValueError(f"seed #{n}: data must be a dict, got {type(data).__name__}")
        try:
            text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ValueError(f"seed #{n}: data is not JSON-serializable: {e}") from e
        if json.loads(text) != data:  # e.g. int keys or tuples: the stored state would differ from the seed
            raise ValueError(f"seed #{n}: data does not survive a JSON round trip (non-string keys? tuples?)")
        digest = checksum_of(data)
        if "checksum" in item and item["checksum"] != digest:
            raise ValueError(f"seed #{n}: checksum {item['checksum']!r} does not match its data ({digest})")
        id_ = item.get("id", last + 1)
        if isinstance(id_, bool) or not isinstance(id_, int) or not last < id_ <= _MAX_ID:
            raise ValueError(f"seed #{n}: id {id_!r} must be an int greater than the previous id ({last})")
        rows.append((id_, source, type_, digest, text))
        last = id_
    return rows


def _parse_body(raw: bytes) -> dict:
    """The ``{"data": {...}}`` body of POST/PUT/PATCH, or a 400 saying what is wrong."""
    if not raw.strip():
        raise ClientError(400, 'empty body: expected a JSON object {"data": {...}}')
    try:
        body = strict_json(raw)
    except RecursionError:
        raise ClientError(400, "malformed JSON: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise ClientError(400, f"malformed JSON: {e}") from None
    if not isinstance(body, dict):
        raise ClientError(400, f'body must be a JSON object {{"data": {{...}}}}, got {type(body).__name__}')
    unknown = set(body) - {"data"} - _READ_ONLY_KEYS
    if unknown:
        raise ClientError(400, f"unknown body key(s) {sorted(unknown)}: only 'data' is accepted")
    if "data" not in body:
        raise ClientError(400, 'body lacks "data": expected {"data": {...}}')
    if not isinstance(body["data"], dict):
        raise ClientError(400, f'"data" must be a JSON object, got {type(body["data"]).__name__}')
    try:  # what is stored comes back to the harness, which reads values at most this deep
        check_value(body["data"], what="malformed JSON: data", max_depth=VALUE_MAX_DEPTH)
    except UntrustedInputError as e:
        raise ClientError(400, str(e)) from None
    return body["data"]


def _filters(query: str) -> list[tuple[str, str]]:
    try:
        pairs = parse_qsl(query, keep_blank_values=True, errors="strict", max_num_fields=100)
    except (ValueError, UnicodeDecodeError) as e:
        raise ClientError(400, f"bad query string: {e}") from None
    for key, value in pairs:
        if key == "id":
            _parse_id(value)
        elif key not in ("id", "checksum") and not (key.startswith("data.") and len(key) > 5):
            raise ClientError(400, f"unknown query parameter {key!r}: supported are id, checksum, data.<key>")
    return pairs


def _matches(session: dict, pairs: list[tuple[str, str]]) -> bool:
    for key, value in pairs:
        if key == "id":
            if session["id"] != _parse_id(value):
                return False
        elif key == "checksum":
            if session["checksum"] != value:
                return False
        else:
            field = key[5:]
            if field not in session["data"] or filter_form(session["data"][field]) != value:
                return False
    return True


class _Handler(JsonHandler):
    """The session service's routes."""

    server_version = "callbench-sessions/1"

    def _route(self, method: str, raw: bytes) -> tuple[int, Any, list[tuple[str, str]]]:
        segments, query = self._target()
        store = self.server.store
        if segments == ["health"]:
            self._allow(method, ("GET", "HEAD"))
            return 200, {"status": "ok"}, []
        if segments[:2] != ["api", "sessions"] or len(segments) > 5:
            raise ClientError(
                404, f"no such path {self.path!r}; see /api/sessions/{{source}}/{{type}}[/{{id}}]"
            )
        if len(segments) == 2:
            self._allow(method, ("GET", "HEAD"))
            pairs = _filters(query)
            return 200, [s for s in store.select() if _matches(s, pairs)], []
        if len(segments) == 3:
            raise ClientError(404, "missing {type}: paths are /api/sessions/{source}/{type}[/{id}]")
        try:
            source, type_ = _check_name(segments[2], "source"), _check_name(segments[3], "type")
        except ValueError as e:
            raise ClientError(400, str(e)) from None
        if len(segments) == 4:
            self._allow(method, _COLLECTION_METHODS)
            if method == "POST":
                created = store.create(source, type_, self._json_data(raw))
                return 201, created, [("Location", self._location(created))]
            pairs = _filters(query)
            return 200, [s for s in store.select(source, type_) if _matches(s, pairs)], []
        self._allow(method, _ITEM_METHODS)
        id_ = _parse_id(segments[4])
        if method in ("GET", "HEAD"):
            found = store.get(source, type_, id_)
        elif method == "DELETE":
            if store.delete(source, type_, id_):
                return 204, None, []
            found = None
        else:
            found = store.update(source, type_, id_, self._json_data(raw), merge=method == "PATCH")
        if found is None:
            raise ClientError(404, f"no session {id_} under {source}/{type_}")
        return 200, found, []

    def _allow(self, method: str, allowed: tuple[str, ...]) -> None:
        if method not in allowed:
            raise ClientError(
                405,
                f"method {method} not allowed here; allowed: {', '.join(allowed)}",
                headers=[("Allow", ", ".join(allowed))],
            )

    def _json_data(self, raw: bytes) -> dict:
        ctype = (self.headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if (
            ctype
            and ctype != "application/json"
            and not (ctype.startswith("application/") and ctype.endswith("+json"))
        ):
            raise ClientError(415, f"Content-Type {ctype!r} is not JSON: send application/json")
        return _parse_body(raw)

    @staticmethod
    def _location(session: dict) -> str:
        return f"/api/sessions/{quote(session['source'], safe='')}/{quote(session['type'], safe='')}/{session['id']}"


class _Engine(ThreadedEngine):
    """The server itself: a store and a :class:`JsonServer` on a thread. Runs inside the service's
    own process (:mod:`~callbench.services.isolation`), or in the CLI's."""

    thread_name = "session-service"
    empty_state: list = []

    def __init__(
        self,
        db_path: str | None,
        address: tuple[str, int] | str,
        *,
        max_body: int,
        socket_timeout: float,
        max_connections: int,
        max_total_bytes: int | None = None,
        max_requests: int | None = None,
        max_state_values: int | None = None,
    ):
        self.store = _Store(None if db_path is None else Path(db_path))
        self._serve(
            address,
            self.store,
            _Handler,
            max_body=max_body,
            socket_timeout=socket_timeout,
            max_connections=max_connections,
            max_total_bytes=max_total_bytes,
            max_requests=max_requests,
            max_state_values=max_state_values,
        )

    def _state(self) -> list[dict]:
        return self.store.select()

    def _close_store(self) -> None:
        self.store.close()

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "vm_kb": _vm_kb()}

    def handle(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        if op == "reset":
            rows = [tuple(r) for r in request["rows"]]
            self.store.reset(rows)  # type: ignore[arg-type]  # validated by the harness (_seed_rows)
            self.server.reset_usage()
            return {}
        return super().handle(op, request)


def _engine(config: dict[str, Any], quotas: Quotas) -> _Engine:
    """The service process's engine (:data:`~callbench.services.isolation.KINDS`)."""
    address = config["unix_path"] or ("127.0.0.1", config["port"])
    return _Engine(
        config["db_path"],
        address,
        max_body=config["max_body"],
        socket_timeout=config["socket_timeout"],
        max_connections=config["max_connections"],
        max_total_bytes=quotas.max_total_bytes,
        max_requests=quotas.max_requests,
        max_state_values=quotas.max_state_values,
    )


register_kind("session", "callbench.tracks.stateful.services.session_server:_engine")  # services/isolation.py starts it by this name


def _vm_kb() -> int:
    """This process's address space (VmSize), what ``RLIMIT_AS`` limits."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


class SessionService(IsolatedService):
    """A session REST service on 127.0.0.1 (or a Unix socket) for one test case (or one reset
    between cases), in its own process.

    ``db_path=None`` keeps state in memory, so two instances never share anything;
    a path persists it (the standalone CLI). ``socket_timeout`` closes idle connections.

    The server runs in a separate, memory-limited process (:mod:`.isolation`) with per-run
    ``quotas`` (bytes clients send, requests, memory, CPU); a run starts at :meth:`start` and at
    each :meth:`reset`. Once a client broke a quota, or the process ended, :meth:`snapshot` and
    :meth:`request_log` raise :class:`ServiceLimitError` (one line saying which): the run's verdict.
    A :meth:`reset` after the process ended starts a fresh one (same Unix socket path; a new port
    when it was 0).
    """

    what = "session service"
    stats_keys = ("pid", "threads", "received", "maxrss_kb", "vm_kb")

    def __init__(
        self,
        db_path: Path | None = None,
        *,
        max_body: int = 1 << 20,
        port: int = 0,
        socket_timeout: float = 5.0,
        unix_path: str | Path | None = None,
        max_connections: int = 32,
        quotas: Quotas | None = None,
    ):
        super().__init__(
            max_body=max_body,
            port=port,
            socket_timeout=socket_timeout,
            unix_path=unix_path,
            max_connections=max_connections,
            quotas=quotas,
        )
        self._db_path = None if db_path is None else Path(db_path)

    def _spawn(self) -> Channel:
        config = {"db_path": None if self._db_path is None else str(self._db_path), **self._listen_config()}
        return spawn("session", config, self.quotas, self.what)

    def reset(self, initial: list[dict] | None = None) -> None:
        """Clear all sessions, the request log and the quotas' counts; seed ``initial`` ({source,
        type, data}) as ids 1..n.

        Seeds may also carry ``id`` (increasing) and ``checksum`` (checked), so
        ``reset(snapshot())`` restores a state exactly. Invalid seeds raise
        ``ValueError`` and leave the state untouched.
        """
        channel = self._running()
        rows = _seed_rows(initial)
        if not self._breached:
            try:
                if not channel.call("reset", rows=rows).get("oom"):
                    return
            except ServiceLimitError:  # the process is gone
                pass
        # This run gets a fresh process: the old one is gone, or ran out of memory (it may still
        # be dying then, and its next request could find no one listening).
        channel.close()
        if self._unix_path and os.path.exists(self._unix_path):
            os.unlink(self._unix_path)
        self._channel = self._spawn()
        self._breached = False
        self._channel.call("reset", rows=rows)

    def snapshot(self) -> list[dict]:
        """Full state, sorted by id: [{id, source, type, checksum, data}, ...]."""
        return self._call("snapshot")["state"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the stateful-track session service on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (0 picks a free one)")
    parser.add_argument(
        "--db", type=Path, default=None, help="SQLite file to persist sessions (default: memory)"
    )
    parser.add_argument("--max-body", type=int, default=1 << 20, help="largest request body in bytes")
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO, format="%(message)s")
    try:  # this process is the service's own: no need for another
        engine = _Engine(
            None if args.db is None else str(args.db),
            ("127.0.0.1", args.port),
            max_body=args.max_body,
            socket_timeout=5.0,
            max_connections=32,
        )
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"session service on http://127.0.0.1:{engine.ready()['port']} (Ctrl-C to stop)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
