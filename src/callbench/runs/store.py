"""One directory per run: ``run.sqlite`` (a row per sample), ``config.json``, ``summary.json``.

Each finished sample is committed in its own transaction (WAL journal), so a kill loses at most
the samples in flight and the primary key on the sample id makes duplicates impossible; re-running
the same command skips what is stored.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError
from callbench.models.base import ModelInput, ModelOutput
from callbench.tracks.base import SampleResult

_SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
    id TEXT PRIMARY KEY,
    grp TEXT,
    status TEXT NOT NULL,
    prompt TEXT,
    messages TEXT,
    raw_output TEXT,
    mode TEXT,
    parsed TEXT,
    execution TEXT,
    verdicts TEXT,
    error TEXT,
    latency_s REAL,
    prompt_tokens INTEGER,
    completion_tokens INTEGER,
    extra TEXT,
    finished_at REAL
);
"""


def write_json_atomic(path: Path, obj: Any) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(obj, fh, indent=2, sort_keys=False, default=str)
        fh.write("\n")
    os.chmod(tmp, 0o644)  # mkstemp creates 0600; results are meant to be shared
    os.replace(tmp, path)


class RunStore:
    def __init__(self, directory: Path):
        self.dir = directory
        self.db_path = directory / "run.sqlite"
        self.conn = sqlite3.connect(self.db_path, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(_SCHEMA)

    @classmethod
    def create_or_resume(cls, directory: Path, config: dict[str, Any]) -> tuple[RunStore, bool]:
        """Open ``directory``; if it holds a run with a different config, refuse (no mixed runs)."""
        directory.mkdir(parents=True, exist_ok=True)
        cfg_path = directory / "config.json"
        resumed = False
        if cfg_path.is_file():
            old = json.loads(cfg_path.read_text(encoding="utf-8"))
            # Compare through JSON so tuples and lists (and other encodings) compare equal.
            if json.dumps(old.get("identity"), sort_keys=True) != json.dumps(config.get("identity"), sort_keys=True, default=str):
                raise ConfigError(
                    f"{cfg_path}: run directory holds a different run (model/setup/data differ); "
                    "choose another --run-id or delete it"
                )
            resumed = True
        else:
            write_json_atomic(cfg_path, config)
        return cls(directory), resumed

    @classmethod
    def open(cls, directory: Path) -> RunStore:
        if not (directory / "run.sqlite").is_file():
            raise ConfigError(f"{directory}: not a callbench run directory (no run.sqlite)")
        return cls(directory)

    def config(self) -> dict[str, Any]:
        return json.loads((self.dir / "config.json").read_text(encoding="utf-8"))

    def done_ids(self) -> set[str]:
        return {row[0] for row in self.conn.execute("SELECT id FROM samples")}

    def put(self, group: str, inp: ModelInput, out: ModelOutput, res: SampleResult) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO samples VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                inp.sample_id,
                group,
                res.status,
                inp.prompt,
                json.dumps(inp.messages),
                out.text,
                out.mode,
                res.parsed,
                json.dumps(res.execution),
                json.dumps(res.verdicts),
                res.error,
                out.latency_s,
                out.prompt_tokens,
                out.completion_tokens,
                json.dumps({**out.extra, **({"stats": res.stats} if res.stats else {})}, default=str),
                time.time(),
            ),
        )

    def rows(self) -> Iterator[dict[str, Any]]:
        cur = self.conn.execute("SELECT * FROM samples ORDER BY rowid")
        names = [d[0] for d in cur.description]
        for row in cur:
            d = dict(zip(names, row, strict=True))
            for key in ("messages", "execution", "verdicts", "extra"):
                if d.get(key) is not None:
                    d[key] = json.loads(d[key])
            yield d

    def results(self) -> dict[str, SampleResult]:
        out = {}
        for r in self.rows():
            out[r["id"]] = SampleResult(
                status=r["status"],
                parsed=r["parsed"],
                execution=r["execution"],
                verdicts=r["verdicts"] or {},
                error=r["error"],
                stats=(r.get("extra") or {}).get("stats") or {},
            )
        return out

    def close(self) -> None:
        self.conn.close()
