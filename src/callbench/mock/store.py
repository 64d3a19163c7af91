"""The mock server's state: stored objects per resource in SQLite (stdlib ``sqlite3``, in memory,
one database per server instance), guarded by one lock so concurrent handlers neither corrupt nor
lose rows."""

from __future__ import annotations

import json
import sqlite3
import threading
from typing import Any

_SCHEMA = """
CREATE TABLE objects (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    resource TEXT NOT NULL,
    id TEXT NOT NULL,
    scope TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (resource, id)
);
CREATE TABLE counters (resource TEXT PRIMARY KEY, next INTEGER NOT NULL);
"""


class Store:
    """``scope``: the canonical JSON of the path parameters of the collection an object was
    created under (``{"petId": "3"}`` for ``/pets/3/photos``), so a nested list shows only its
    own objects."""

    def __init__(self) -> None:
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.executescript(_SCHEMA)

    def next_number(self, resource: str) -> int:
        with self._lock:
            row = self._conn.execute("SELECT next FROM counters WHERE resource = ?", (resource,)).fetchone()
            n = 1 if row is None else row[0]
            self._conn.execute("INSERT OR REPLACE INTO counters (resource, next) VALUES (?, ?)", (resource, n + 1))
        return n

    def insert(self, resource: str, id_: str, scope: str, body: Any) -> bool:
        """False when an object with this id exists already."""
        with self._lock:
            try:
                self._conn.execute(
                    "INSERT INTO objects (resource, id, scope, body) VALUES (?, ?, ?, ?)",
                    (resource, id_, scope, json.dumps(body, sort_keys=True)),
                )
            except sqlite3.IntegrityError:
                return False
        return True

    def get(self, resource: str, id_: str) -> Any | None:
        with self._lock:
            row = self._conn.execute("SELECT body FROM objects WHERE resource = ? AND id = ?", (resource, id_)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, resource: str, id_: str, body: Any) -> None:
        with self._lock:
            self._conn.execute(
                "UPDATE objects SET body = ? WHERE resource = ? AND id = ?", (json.dumps(body, sort_keys=True), resource, id_)
            )

    def delete(self, resource: str, id_: str) -> bool:
        with self._lock:
            cur = self._conn.execute("DELETE FROM objects WHERE resource = ? AND id = ?", (resource, id_))
        return cur.rowcount > 0

    def list(self, resource: str, scope: str | None = None) -> list[Any]:
        with self._lock:
            if scope is None:
                rows = self._conn.execute("SELECT body FROM objects WHERE resource = ? ORDER BY seq", (resource,)).fetchall()
            else:
                rows = self._conn.execute(
                    "SELECT body FROM objects WHERE resource = ? AND scope = ? ORDER BY seq", (resource, scope)
                ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def snapshot(self) -> dict[str, list[Any]]:
        with self._lock:
            rows = self._conn.execute("SELECT resource, body FROM objects ORDER BY seq").fetchall()
        out: dict[str, list[Any]] = {}
        for resource, body in rows:
            out.setdefault(resource, []).append(json.loads(body))
        return out

    def close(self) -> None:
        with self._lock:
            self._conn.close()
