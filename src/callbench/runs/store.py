"""One directory per run: ``run.sqlite`` (a row per sample), ``config.json``, ``summary.json``.

Each finished sample is committed in its own transaction (WAL journal), so a kill loses at most
the samples in flight and the primary key on the sample id makes duplicates impossible; re-running
the same command skips what is stored.

Text is stored as UTF-8. Python strings can hold what UTF-8 cannot encode: lone UTF-16 surrogates
(``'\\ud800'``), e.g. from a JavaScript ``throw new Error('\\uD800')`` or a model's
``"\\udc00"`` JSON escape. :func:`encodable` turns a surrogate *pair* into the character it
encodes and writes each *lone* surrogate as the six characters of its escape, ``\\ud800``
(Python's ``backslashreplace``); ``text.encode('latin-1', 'backslashreplace').decode('unicode_escape')``
undoes it where the original text held no backslash escapes of its own. Everything the store
writes (rows, ``config.json``, ``summary.json``) goes through it, and so does everything it reads
back, so reports and exports of old runs are encodable too.

A damaged run directory (truncated or foreign ``run.sqlite``, malformed ``config.json``, a row
of the wrong type, a directory where a file should be) raises :class:`RunStoreError` with one line
naming the file and a fix, never a raw ``sqlite3``/``json``/``OSError``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import stat
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeGuard

from callbench.errors import ConfigError, RunStoreError
from callbench.files import read_text
from callbench.files import write_json_atomic as _write_json_atomic
from callbench.models.base import ModelInput, ModelOutput
from callbench.runs.text import encodable, encodable_object
from callbench.tracks.base import SampleResult, available_tracks
from callbench.untrusted import VALUE_MAX_DEPTH, UntrustedInputError, check_value, loads_json

if TYPE_CHECKING:  # imported where used (a resume): a read-only open does not need it
    from callbench.runs.identity import Change

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
# Answers received but not yet scored: persisted before the request's concurrency slot is freed, so
# a kill loses at most the requests in flight; a resume scores them without asking again.
_GENERATIONS = "CREATE TABLE IF NOT EXISTS generations (id TEXT PRIMARY KEY, output TEXT NOT NULL, stored_at REAL)"
_NONE = type(None)
# Column -> the Python types a valid row holds there (after decoding the JSON columns).
_COLUMN_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "grp": (str, _NONE),
    "status": (str,),
    "prompt": (str, _NONE),
    "messages": (list, _NONE),
    "raw_output": (str, _NONE),
    "mode": (str, _NONE),
    "parsed": (str, _NONE),
    "execution": (object,),
    "verdicts": (dict,),  # every scored sample has its verdicts (a backend error: as an empty answer)
    "error": (str, _NONE),
    "latency_s": (int, float, _NONE),
    "prompt_tokens": (int, _NONE),
    "completion_tokens": (int, _NONE),
    "extra": (dict, _NONE),
    "finished_at": (int, float, _NONE),
}
_TYPE_NAMES = {str: "text", int: "an integer", float: "a real", bytes: "a blob", _NONE: "NULL",
               dict: "a JSON object", list: "a JSON list", object: "JSON"}
_COLUMNS = tuple(_COLUMN_TYPES)
_JSON_COLUMNS = ("messages", "execution", "verdicts", "extra")

START_OVER = "delete the run directory (or pass another --out/--run-id) to start over"


def _repaired(row: dict[str, Any]) -> dict[str, Any]:
    """``encodable(row)``, but only walked when some text in it needs repair (rare: rows written
    by :meth:`RunStore.put` are encodable already; the walk costs ~0.4 ms a row)."""
    try:
        json.dumps(row, ensure_ascii=False, default=str).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError, RecursionError):
        return encodable_object(row)
    return row


#: Nesting a stored JSON column may hold: the values a sample produced (at most
#: :data:`~callbench.untrusted.VALUE_MAX_DEPTH` deep where they were parsed) inside a few levels
#: of the verdict or result around them. Anything deeper is cut when the row is written (see
#: :func:`storable`), so every stored row reads back; reading refuses deeper text as that row's error.
STORED_MAX_DEPTH = VALUE_MAX_DEPTH + 20


def storable(value: object, max_depth: int = STORED_MAX_DEPTH) -> Any:
    """``value`` when no list/dict chain in it is deeper than ``max_depth``; else a copy with every
    list or object below that depth replaced by a marker text saying so. Iterative: a value nested
    100,000 deep (a sample's hostile request body) is stored, cut, instead of breaking the encoder
    or the reader (``json`` and every recursive walk fail near 1,000 levels)."""
    try:
        return check_value(value, what="a stored value", max_depth=max_depth)
    except UntrustedInputError:
        pass
    marker = f"<cut when stored: nested deeper than {max_depth} levels>"

    def shell(node: Any, depth: int) -> Any:
        if isinstance(node, dict):
            return {} if depth <= max_depth else marker
        if isinstance(node, (list, tuple)):
            return [] if depth <= max_depth else marker
        return node

    root = shell(value, 1)
    stack: list[tuple[Any, Any, int]] = [(value, root, 1)]
    while stack:
        src, dst, depth = stack.pop()
        if isinstance(dst, dict):
            for key, child in src.items():
                dst[key] = copy = shell(child, depth + 1)
                stack.append((child, copy, depth + 1))
        elif isinstance(dst, list):
            for child in src:
                copy = shell(child, depth + 1)
                dst.append(copy)
                stack.append((child, copy, depth + 1))
    return root


def _default(obj: object) -> Any:
    """``json.dumps`` fallback: a dataclass as its fields (cut like any value), else ``str()`` of
    the object, made encodable like any other text."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return storable({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    return encodable(str(obj))


def _dumps(obj: object) -> str:
    obj = storable(obj)
    text = json.dumps(obj, default=_default, ensure_ascii=False)
    try:
        text.encode("utf-8")  # the common case: no surrogate anywhere, nothing to repair
    except UnicodeEncodeError:
        return json.dumps(encodable(obj), default=_default)
    return text


def write_json_atomic(path: Path, obj: object) -> None:
    """Write ``obj`` as JSON through a temporary file (:func:`callbench.files.write_json_atomic`),
    so a reader never sees half a file; a :class:`RunStoreError` naming the file when it cannot."""
    try:
        _write_json_atomic(path, encodable(obj), default=_default)
    except OSError as exc:
        raise RunStoreError(
            f"{path}: cannot write ({exc.strerror}); remove what is in the way or make {path.parent} writable"
        ) from None


def _require_file(path: Path, fix: str, *, missing: str | None = None) -> bool:
    """Is ``path`` a regular file? False when it does not exist and ``missing`` is None; else a
    :class:`RunStoreError` for a missing file (``missing`` says why that is wrong), a directory or
    something unreadable (a symlink loop, no permission)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if missing is None and not path.is_symlink():
            return False
        raise RunStoreError(f"{path}: {missing or 'a dangling symlink'}; {fix}") from None
    except OSError as exc:
        raise RunStoreError(f"{path}: cannot read ({exc.strerror}); {fix}") from None
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise RunStoreError(f"{path}: {kind}, not a file; {fix}")
    return True


CONFIG_FIX = f"restore it from a backup, or {START_OVER}"


def read_config(path: Path) -> dict[str, Any]:
    """A run's ``config.json``, checked to be an object with an ``identity.track`` string."""
    _require_file(path, CONFIG_FIX, missing="missing (every run directory has one)")
    text = read_text(path, error=RunStoreError, decode_fix=CONFIG_FIX, read_fix=CONFIG_FIX)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunStoreError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); {CONFIG_FIX}") from None
    except RecursionError:
        raise RunStoreError(f"{path}: JSON nested too deeply; {CONFIG_FIX}") from None
    if not isinstance(doc, dict):
        raise RunStoreError(f"{path}: expected a JSON object, got {type(doc).__name__}; {CONFIG_FIX}")
    ident = doc.get("identity")
    if not isinstance(ident, dict):
        raise RunStoreError(f"{path}: 'identity' is missing or not an object; {CONFIG_FIX}")
    track = ident.get("track")
    if not isinstance(track, str) or not track:
        raise RunStoreError(f"{path}: identity.track is missing or not a string; {CONFIG_FIX}")
    selection = doc.get("selection")
    if selection is not None:
        if not isinstance(selection, dict):
            raise RunStoreError(f"{path}: 'selection' is not an object; {CONFIG_FIX}")
        if "sample_ids" in selection and not _id_list(selection["sample_ids"]):
            raise RunStoreError(f"{path}: selection.sample_ids is not a list of sample ids (texts); {CONFIG_FIX}")
    if RUN_IDS in doc and not _id_list(doc[RUN_IDS]):
        raise RunStoreError(f"{path}: {RUN_IDS} is not a list of sample ids (texts); {CONFIG_FIX}")
    return encodable_object(doc)


#: config.json's list of every sample id a session of the run selected: the ids its rows may have.
#: A stored row with another id came from elsewhere (a row copied in from another run's store) and
#: is refused by :meth:`RunStore.rows`, so no report or export counts it. Runs written before the
#: list existed get it on their next resume (their stored ids are adopted then).
RUN_IDS = "run_sample_ids"


def check_track(path: Path, config: dict[str, Any]) -> str:
    """The track ``config`` (read from ``path``) names, when callbench has it (reports and exports
    read runs of the built-in tracks; a run of a track defined in user code resumes, but does not
    report): else one line naming the file and field."""
    track: str = config["identity"]["track"]  # a text: read_config checked it
    if track not in available_tracks():
        raise RunStoreError(
            f"{path}: identity.track {encodable(track)[:60]!r} is not a callbench track (one of: "
            f"{', '.join(available_tracks())}); {CONFIG_FIX}"
        )
    return track


def _id_list(value: object) -> TypeGuard[list[str]]:
    return isinstance(value, list) and all(isinstance(i, str) for i in value)


def selected_ids(config: dict[str, Any] | None) -> list[str] | None:
    """The ids ``config`` says its session selected (None when it does not say: no run list is kept)."""
    sel = (config or {}).get("selection")
    ids = sel.get("sample_ids") if isinstance(sel, dict) else None
    return list(ids) if _id_list(ids) else None


def _start_over(directory: Path) -> None:
    """``--force``: remove a run directory's store, config and summary (only files SQLite or
    callbench wrote there; anything else in the way is reported when the run opens)."""
    for name in ("run.sqlite", "run.sqlite-wal", "run.sqlite-shm", "run.sqlite-journal", "config.json", "summary.json"):
        path = directory / name
        try:
            if path.is_symlink() or path.is_file():
                path.unlink()
        except OSError as exc:
            raise RunStoreError(f"{path}: cannot remove ({exc.strerror}); remove it by hand, or pass another --run-id") from None


def _sql_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


LOCK_FILE = ".lock"


def _lock(directory: Path) -> int:
    """Lock ``directory`` for writing with ``flock`` on its ``.lock`` file (the kernel drops the
    lock when the process dies, so a killed run never leaves it locked); the fd holds the lock.
    A second run on the same directory is refused with one line naming the process."""
    import fcntl

    path = directory / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise RunStoreError(f"{path}: cannot open the run's lock file ({exc.strerror}); {START_OVER}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
        os.close(fd)
        raise RunStoreError(
            f"{directory}: in use by another callbench run (process {holder}); wait for it to finish, "
            "or pass another --run-id"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


class RunStore:
    """The per-sample SQLite store of one run directory. Use :meth:`create_or_resume` to run
    into a directory and :meth:`open` to read one; both check the files before anything runs."""

    def __init__(self, directory: Path, *, create: bool = False):
        self.dir = directory
        self.db_path = directory / "run.sqlite"
        self._config: dict[str, Any] | None = None
        #: On a resume: how the stored identity differs from the run's (see create_or_resume).
        self.changes: list[Change] = []
        self._lock_fd: int | None = None  # the run directory's lock (create_or_resume), released by close
        self.conn = self._connect(create)

    # -- opening
    def _connect(self, create: bool) -> sqlite3.Connection:
        _require_file(self.db_path, START_OVER, missing=None if create else "missing")
        for suffix in ("-wal", "-shm", "-journal"):  # SQLite's own side files; a regular one is never touched
            side = self.db_path.with_name(self.db_path.name + suffix)
            _require_file(side, "remove it: SQLite keeps the journal of run.sqlite under that name")
        try:
            # The runner writes from one dedicated thread (the event loop must not wait on disk);
            # it never uses the connection from two threads at once.
            conn = sqlite3.connect(self.db_path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise RunStoreError(f"{self.db_path}: cannot open ({exc}); {START_OVER}") from None
        try:
            if create:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
            self._check_schema(conn, create)
        except sqlite3.Error as exc:
            conn.close()
            raise RunStoreError(f"{self.db_path}: not a callbench run store ({exc}); {START_OVER}") from None
        except RunStoreError:
            conn.close()
            raise
        return conn

    def _check_schema(self, conn: sqlite3.Connection, create: bool) -> None:
        """The ``samples`` table with callbench's columns, in a file SQLite reads without error;
        a new (empty) database gets the table when ``create``."""
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "samples" not in tables:
            if create and not tables:
                conn.executescript(_SCHEMA)
                conn.execute(_GENERATIONS)
                return
            raise RunStoreError(f"{self.db_path}: not a callbench run store (no 'samples' table); {START_OVER}")
        info = list(conn.execute("PRAGMA table_info(samples)"))
        columns = tuple(r[1] for r in info)
        pk = [r[1] for r in info if r[5]]
        if columns != _COLUMNS or pk != ["id"]:
            raise RunStoreError(
                f"{self.db_path}: not a callbench run store (table 'samples' has columns {', '.join(columns)}); {START_OVER}"
            )
        check = [r[0] for r in conn.execute("PRAGMA quick_check")]
        if check != ["ok"]:
            raise RunStoreError(f"{self.db_path}: damaged SQLite file ({check[0]}); {START_OVER}")
        if create:  # a store written before the table existed gets it on resume
            conn.execute(_GENERATIONS)

    @classmethod
    def create_or_resume(
        cls, directory: Path, config: dict[str, Any], *, force: bool = False, rescore: bool = False
    ) -> tuple[RunStore, bool]:
        """Open ``directory``; if it holds a run of another identity, refuse (no mixed runs) with
        one line naming what changed (:mod:`callbench.runs.identity`).

        ``force`` deletes what the directory holds (samples, unscored answers, ``config.json``,
        ``summary.json``) and starts over. ``rescore`` accepts a changed *scoring* part of the
        identity (the caller re-scores every stored answer, then :meth:`update_config`); a changed
        generation part is refused all the same. On a resume ``config.json`` is left as it was
        until the caller calls :meth:`update_config`; :attr:`changes` lists what differs.

        Samples stored without a ``config.json`` belong to a run nothing describes any more, so
        they are not silently adopted; a store with no samples in it is (a kill can leave one).
        """
        if directory.exists() and not directory.is_dir():
            raise RunStoreError(f"{directory}: exists and is not a directory; pass another --out or --run-id")
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunStoreError(f"{directory}: cannot create the run directory ({exc.strerror}); pass another --out") from None
        lock = _lock(directory)  # before the identity check: check and lock are one step
        try:
            if force:
                _start_over(directory)
            store, resumed = cls._create_or_resume_locked(directory, config, rescore)
        except BaseException:
            os.close(lock)
            raise
        store._lock_fd = lock
        return store, resumed

    @classmethod
    def _create_or_resume_locked(
        cls, directory: Path, config: dict[str, Any], rescore: bool = False
    ) -> tuple[RunStore, bool]:
        from callbench.runs.identity import diff, refusal

        config = encodable_object(config)
        cfg_path = directory / "config.json"
        resumed = os.path.lexists(cfg_path)
        changes: list[Change] = []
        if resumed:
            old = read_config(cfg_path)
            changes = diff(old.get("identity"), config.get("identity") or {})
            if changes and not (rescore and all(c.scoring for c in changes)):
                raise ConfigError(refusal(cfg_path, changes, rescore=rescore))
        summary = directory / "summary.json"
        _require_file(summary, "remove it (it is rewritten from run.sqlite at the end of the run)")
        store = cls(directory, create=True)
        store.changes = changes
        try:
            if resumed:
                store._config = old
                list(store.rows())  # a malformed row fails now, not after the new samples ran
            else:
                n = store.count()
                if n:
                    raise RunStoreError(
                        f"{cfg_path}: missing, but {store.db_path} holds {n} finished samples of a run "
                        f"nothing describes; restore config.json, or {START_OVER}"
                    )
                selected = selected_ids(config)
                config = {**config, **({RUN_IDS: selected} if selected is not None else {})}
                write_json_atomic(cfg_path, config)
                store._config = config
        except BaseException:
            store.close()
            raise
        return store, resumed

    @classmethod
    def open(cls, directory: Path) -> RunStore:
        """Open a run directory for reading (reports): nothing is created or changed."""
        if not directory.is_dir():
            why = "not a directory" if directory.exists() else "no such directory"
            raise RunStoreError(f"{directory}: not a callbench run directory ({why}); pass the directory a run wrote")
        if not os.path.lexists(directory / "run.sqlite"):
            raise RunStoreError(
                f"{directory}: not a callbench run directory (no run.sqlite); pass the directory a run wrote, or re-run its command"
            )
        cfg = read_config(directory / "config.json")
        store = cls(directory)
        store._config = cfg
        return store

    # -- reading and writing
    @contextmanager
    def _sql(self, doing: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise RunStoreError(
                f"{self.db_path}: SQLite error while {doing} ({exc}); check the disk and that no other "
                f"process writes this run, else {START_OVER}"
            ) from None

    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = read_config(self.dir / "config.json")
        return self._config

    def update_config(self, config: dict[str, Any]) -> None:
        """Record ``config`` (this session's identity and selection) as the run's, keeping when the
        run was created."""
        old = self._config or {}
        created = old.get("created_at")
        selected = selected_ids(config)
        if selected is not None:  # the ids of every session's selection (a run from before the list: the ids it stored)
            earlier = old[RUN_IDS] if _id_list(old.get(RUN_IDS)) else [*(selected_ids(old) or []), *sorted(self.done_ids())]
            config = {**config, RUN_IDS: list(dict.fromkeys([*earlier, *selected]))}
        config = encodable_object({**config, **({"created_at": created} if created else {})})
        write_json_atomic(self.dir / "config.json", config)
        self._config = config

    def drop_summary(self) -> None:
        """Remove ``summary.json`` while a session runs: it describes a run as its last session
        ended (and is written again when this one ends), never a mix of two selections."""
        path = self.dir / "summary.json"
        try:
            if path.is_symlink() or path.is_file():
                path.unlink()
        except OSError as exc:
            raise RunStoreError(f"{path}: cannot remove ({exc.strerror}); remove it by hand") from None

    def count(self) -> int:
        with self._sql("counting samples"):
            n: int = self.conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
            return n

    def statuses(self) -> dict[str, str]:
        """Each stored sample's status, by id (no JSON decoded: cheap on a large store)."""
        with self._sql("reading sample statuses"):
            return {i: st for i, st in self.conn.execute("SELECT id, status FROM samples") if isinstance(i, str)}

    def done_ids(self) -> set[str]:
        with self._sql("reading sample ids"):
            ids = [row[0] for row in self.conn.execute("SELECT id FROM samples")]
        for i in ids:
            if not isinstance(i, str):
                self._bad_id(i)
        return set(ids)

    def _bad_id(self, value: object) -> NoReturn:
        raise RunStoreError(
            f"{self.db_path}: a row's id is {type(value).__name__} {value!r}, not text; drop such rows with: "
            f"sqlite3 {self.db_path} \"DELETE FROM samples WHERE typeof(id) != 'text'\" and re-run to redo them, or {START_OVER}"
        )

    def delete_ids(self, ids: list[str]) -> int:
        """Forget the stored samples with these ids; how many."""
        with self._sql("deleting samples"), self.conn:
            return self.conn.executemany("DELETE FROM samples WHERE id = ?", [(i,) for i in ids]).rowcount

    def rescored(self, updates: list[tuple[str, SampleResult, dict[str, Any]]]) -> None:
        """Rewrite the verdict columns of stored samples (id, new result, the row's new ``extra``)
        in one transaction; the prompt, answer and its costs stay as they were."""
        text = encodable
        values = [
            (text(res.status), text(res.parsed), _dumps(res.execution), _dumps(res.verdicts), text(res.error),
             _dumps(extra), text(sample_id))
            for sample_id, res, extra in updates
        ]
        with self._sql(f"re-scoring {len(values)} samples"):
            self.conn.execute("BEGIN")
            try:
                self.conn.executemany(
                    "UPDATE samples SET status=?, parsed=?, execution=?, verdicts=?, error=?, extra=? WHERE id=?", values
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def delete_status(self, status: str) -> int:
        """Forget the samples stored with ``status`` (so a resume runs them again); how many."""
        with self._sql("deleting samples"), self.conn:
            return self.conn.execute("DELETE FROM samples WHERE status = ?", (status,)).rowcount

    def put(self, group: str, inp: ModelInput, out: ModelOutput, res: SampleResult) -> None:
        """Store one finished sample; every text made encodable first (see the module doc)."""
        self.put_many([(group, inp, out, res)])

    def put_many(self, rows: list[tuple[str, ModelInput, ModelOutput, SampleResult]]) -> None:
        """Store finished samples in one transaction (all or none of them)."""
        self.write([], rows)

    def write(
        self,
        generations: list[tuple[str, ModelOutput]],
        rows: list[tuple[str, ModelInput, ModelOutput, SampleResult]],
    ) -> None:
        """In one transaction: persist answers not yet scored, and store scored samples (whose
        persisted answers are then dropped)."""
        values = [self._values(*row) for row in rows]
        pending = [(encodable(i), _dumps({f.name: getattr(out, f.name) for f in dataclasses.fields(out)}), time.time()) for i, out in generations]
        first = values[0][0] if values else (pending[0][0] if pending else "")
        what = f"storing sample {first!r}" if len(values) + len(pending) == 1 else f"storing {len(values) + len(pending)} samples"
        with self._sql(what):
            self.conn.execute("BEGIN")
            try:
                if pending:
                    self.conn.executemany("INSERT OR REPLACE INTO generations VALUES (?, ?, ?)", pending)
                if values:
                    sql = f"INSERT OR REPLACE INTO samples VALUES ({','.join('?' * len(_COLUMNS))})"
                    self.conn.executemany(sql, values)
                    self.conn.executemany("DELETE FROM generations WHERE id = ?", [(v[0],) for v in values])
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def generations(self) -> dict[str, ModelOutput]:
        """Answers persisted but never scored (a run stopped between the two), by sample id. A row
        that does not read back is skipped: that sample is simply asked again."""
        with self._sql("reading unscored answers"):
            try:
                fetched = self.conn.execute("SELECT id, output FROM generations").fetchall()
            except sqlite3.OperationalError:  # a store from before the table existed
                return {}
        fields = {f.name for f in dataclasses.fields(ModelOutput)}
        out: dict[str, ModelOutput] = {}
        for sample_id, raw in fetched:
            try:
                data = loads_json(raw, what="an unscored answer", max_depth=STORED_MAX_DEPTH)
                if isinstance(sample_id, str) and isinstance(data, dict) and set(data) <= fields:
                    out[sample_id] = ModelOutput(**data)
            except (ValueError, TypeError):
                continue
        return out

    @staticmethod
    def _values(group: str, inp: ModelInput, out: ModelOutput, res: SampleResult) -> tuple[object, ...]:
        text = encodable
        return (
            text(inp.sample_id),
            text(group),
            text(res.status),
            text(inp.prompt),
            _dumps(inp.messages),
            text(out.text),
            text(out.mode),
            text(res.parsed),
            _dumps(res.execution),
            _dumps(res.verdicts),
            text(res.error),
            out.latency_s,
            out.prompt_tokens,
            out.completion_tokens,
            _dumps({**out.extra, **({"stats": res.stats} if res.stats else {})}),
            time.time(),
        )

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every stored row, in the order stored, with the JSON columns decoded and every value
        checked: a row of the wrong shape raises, naming the row and how to drop it."""
        with self._sql("reading samples"):
            cur = self.conn.execute(f"SELECT {', '.join(_COLUMNS)} FROM samples ORDER BY rowid")
            fetched = cur.fetchall()
        run_ids = (self._config or {}).get(RUN_IDS)
        known = set(run_ids) if _id_list(run_ids) else None
        for raw in fetched:
            d = dict(zip(_COLUMNS, raw, strict=True))
            if not isinstance(d["id"], str):
                self._bad_id(d["id"])
            if known is not None and d["id"] not in known:
                raise self.row_error(
                    d["id"], f"not a sample of this run (config.json's {RUN_IDS} does not list it: a row from another run's store?)"
                )
            for key in _JSON_COLUMNS:
                if isinstance(d[key], str):
                    try:
                        d[key] = loads_json(d[key], what=key, max_depth=STORED_MAX_DEPTH)
                    except UntrustedInputError as exc:
                        why = str(exc).removeprefix(f"{key}: ")
                        self._bad_row(d["id"], key, f"is not readable JSON ({why})")
            for key, types in _COLUMN_TYPES.items():
                if not isinstance(d[key], types):
                    expected = " or ".join(_TYPE_NAMES[t] for t in types)
                    self._bad_row(d["id"], key, f"holds {_TYPE_NAMES.get(type(d[key]), type(d[key]).__name__)}, expected {expected}")
            yield _repaired(d)

    def _bad_row(self, sample_id: str, column: str, problem: str) -> NoReturn:
        raise self.row_error(sample_id, f"column '{column}' {problem}")

    def row_error(self, sample_id: str, problem: str) -> RunStoreError:
        """The error for one unusable stored row: named, with the command that drops just that
        row (re-running then redoes it and keeps every other finished sample)."""
        return RunStoreError(
            f"{self.db_path}: row {sample_id!r}: {problem}; drop that row with: sqlite3 {self.db_path} "
            f"\"DELETE FROM samples WHERE id={_sql_quote(sample_id)}\" and re-run to redo it, or {START_OVER}"
        )

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
        lock, self._lock_fd = self._lock_fd, None
        if lock is not None:
            os.close(lock)  # releases the run directory's lock
