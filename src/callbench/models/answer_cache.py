"""An opt-in cache of model answers shared across runs: ``--model-arg answer_cache=PATH``.

Resume already skips samples a run has answered; this cache spans runs, so a second setting
(strict vs lenient scoring, a re-scored copy, another report) or a repeated run does not pay for
the same answer twice. An answer is reused only for the *exact* request: the backend's identity
and answer-changing options, the mode, the prompt and messages (with tools, prefill and the
template's conversation), the reference (the gold backend answers with it) and every decoding
setting (temperature, top_p, max_tokens, stop strings, seed). Anything else asks the model.

Not cached: constrained samples (the answer depends on the grammar object, which has no stable
key here) and failures (a backend error is asked again). A hit is marked in
``ModelOutput.extra["answer_cache"] = "hit"``; latency and token counts are the original answer's.

Storage is one SQLite file (WAL, so several runs may share it at once); the standard library's
sqlite3 is enough for a key-value table of JSON rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput

#: The model option that turns the cache on (read by the registry, never passed to a backend).
OPTION = "answer_cache"


def request_key(backend: ModelBackend, inp: ModelInput, config: GenerationConfig) -> str:
    """SHA-256 of everything that decides an answer (see the module docstring)."""
    payload = {
        "identity": backend.identity,
        "options": backend.identity_options,
        "mode": backend.mode,
        "prompt": inp.prompt,
        "messages": inp.messages,
        "tools": inp.tools,
        "assistant_prefix": inp.assistant_prefix,
        "template_messages": inp.template_messages,
        "heal_boundary": inp.heal_boundary,
        "reference": inp.reference,
        "config": dataclasses.asdict(config),
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class AnswerStore:
    """The SQLite file of answers: ``get(key)`` / ``put(key, output)``, safe across threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, output TEXT NOT NULL)")
            self._db.commit()
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"{OPTION}={path}: cannot open the answer cache ({exc})") from exc
        self._lock = threading.Lock()

    def get(self, key: str) -> ModelOutput | None:
        with self._lock:
            row = self._db.execute("SELECT output FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
            return ModelOutput(**data)
        except (ValueError, TypeError):
            return None  # a row another version wrote differently: ask the model again

    def put(self, key: str, output: ModelOutput) -> None:
        data = json.dumps(dataclasses.asdict(output), default=repr)
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO answers (key, output) VALUES (?, ?)", (key, data))
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedBackend(ModelBackend):
    """``inner`` with its answers looked up in, and added to, an :class:`AnswerStore`. Everything
    else (identity, mode, capabilities, preflight, backend-specific attributes) is ``inner``'s, so
    a run's identity is the same with or without the cache."""

    def __init__(self, inner: ModelBackend, store: AnswerStore):
        # no ModelBackend.__init__: the mode and capabilities are read from inner each time
        # (prefer_chat_template() may change its mode after it is wrapped)
        self.inner = inner
        self.store = store
        self.hits = 0
        self.misses = 0

    def __getattr__(self, name: str) -> Any:  # backend-specific attributes (chat template, tokenizer)
        if name in ("inner", "store"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    @property  # type: ignore[override]
    def name(self) -> str:
        return self.inner.name

    @property  # type: ignore[override]
    def mode(self) -> Any:
        return self.inner.mode

    @property  # type: ignore[override]
    def modes(self) -> Any:
        return self.inner.modes

    @property  # type: ignore[override]
    def max_concurrency(self) -> int:
        return self.inner.max_concurrency

    @property  # type: ignore[override]
    def steerable(self) -> bool:
        return self.inner.steerable

    @property  # type: ignore[override]
    def supports_tools(self) -> bool:
        return bool(self.inner.supports_tools)

    @property
    def identity(self) -> str:
        return self.inner.identity

    @property
    def identity_options(self) -> dict[str, Any]:
        return self.inner.identity_options

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if inp.constraint is not None:
            return await self.inner.generate(inp, config)
        key = request_key(self.inner, inp, config)
        hit = self.store.get(key)
        if hit is not None:
            self.hits += 1
            hit.extra = {**hit.extra, "answer_cache": "hit"}
            return hit
        self.misses += 1
        out = await self.inner.generate(inp, config)
        self.store.put(key, out)
        return out

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            self.store.close()
