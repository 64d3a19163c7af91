"""``replay:FILE``: score outputs produced elsewhere.

FILE is JSONL, one object per sample: ``{"id": "<sample id>", "output": "<text>"}`` where the
output continues the prompt (``"mode": "completion"``, the default) or is a chat answer
(``"mode": "chat"``); ``"code"`` instead of ``"output"`` gives a whole program (read as a chat
answer). ``"index"`` is accepted as an alias of ``"id"``. Without ``--ids`` a run scores the
samples the file answers (:attr:`ReplayModel.answered_ids`), and says how many of the selection
that is, so a partial file never passes for the whole benchmark; with ``--ids``, a named sample
missing from the file is that sample's error.

The file's shape (unknown fields, ids, duplicates) is checked whole: a mistake there is the file's
one-line error. A row's *answer* is untrusted model output: a row that names its sample but whose
answer cannot be read (nested too deep, too large, not JSON, not a string, a lone surrogate, an
unknown mode) is that sample's empty answer with ``replay_error`` in the row, said once as a
warning, and every other sample is scored as usual.
"""

from __future__ import annotations

import hashlib
import logging
import re
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.models._options import read_options
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model
from callbench.untrusted import UntrustedInputError, clean_text, loads_json

#: The fields of a row (``index`` is an alias of ``id``); anything else is a typo, said as one.
_FIELDS = {"id", "index", "output", "code", "mode"}

log = logging.getLogger("callbench.models")

#: The sample id at the start of a row that cannot be parsed (``{"id": "x", "output": [[[...``):
#: hand-written because no JSON parser reads a prefix of an invalid document; the id must be the
#: row's first field, as every writer of these files puts it, else the row is the file's error.
_LEADING_ID = re.compile(r'\s*\{\s*"(id|index)"\s*:\s*("(?:[^"\\\n]|\\.){0,1000}"|-?\d{1,30})\s*[,}]')


class ReplayModel(ModelBackend):
    name = "replay"
    modes = ("completion", "chat")
    max_concurrency = 64

    def __init__(self, path: Path):
        super().__init__()
        self.path = path
        self.outputs: dict[str, tuple[str, str]] = {}
        try:
            raw = path.read_bytes()
            lines = raw.decode("utf-8").splitlines()
        except OSError as exc:
            raise DataError(f"{path}: cannot read ({exc.strerror})") from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: not UTF-8 text (byte {exc.start}); re-save the predictions as UTF-8 JSONL") from exc
        #: sample id -> why its row's answer cannot be read (scored as an empty answer)
        self.unreadable: dict[str, str] = {}
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:  # bounded: a row nested 100,000 deep is this line's error, not a RecursionError
                row = loads_json(line, what=where)
            except UntrustedInputError as exc:
                sid = _leading_id(line)
                if sid is None:  # no sample to give it to: the file's error
                    raise DataError(f"{exc} (and no \"id\" first on the line to give it to one sample)") from None
                self._add(sid, where, "id", None, str(exc))
                continue
            if not isinstance(row, dict):
                raise DataError(f"{where}: expected an object")
            unknown = sorted(set(row) - _FIELDS)
            if unknown:
                raise DataError(f"{where}.{unknown[0]}: unknown field (known: {', '.join(sorted(_FIELDS))})")
            key = "id" if "id" in row else "index"
            sid = row.get(key)
            if sid is None:
                raise DataError(f"{where}.id: missing")
            if isinstance(sid, bool) or not isinstance(sid, (str, int)):
                raise DataError(f"{where}.{key}: expected a string or an integer, got {type(sid).__name__}")
            try:  # an id that cannot be stored names no sample: the file's error
                clean_text(str(sid), what=f"{where}.{key}")
            except UntrustedInputError as exc:
                raise DataError(str(exc)) from None
            self._add(str(sid), where, key, *_answer(row, where))
        if self.unreadable:
            first = next(iter(self.unreadable.values()))
            log.warning(
                "%s: %d row(s) with an answer that cannot be read, scored as empty answers (first: %s)",
                path, len(self.unreadable), first,
            )
        #: The predictions file's content hash: an edited file is another run, not a resume.
        self.predictions_sha256 = hashlib.sha256(raw).hexdigest()[:16]

    @property
    def identity(self) -> str:
        return f"replay:{self.path.name}"

    @property
    def identity_options(self) -> dict[str, Any]:
        return {"predictions_sha256": self.predictions_sha256}

    @property
    def answered_ids(self) -> frozenset[str]:
        """The samples the file answers: a run without --ids runs exactly these (the runner says
        how many of the selection that is), so a file of 5 answers scores 5 samples, not 5 and
        then an error at the sixth."""
        return frozenset(self.outputs)

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if inp.sample_id not in self.outputs:
            raise DataError(f"{self.path}: no output for sample '{inp.sample_id}'")
        text, mode = self.outputs[inp.sample_id]
        problem = self.unreadable.get(inp.sample_id)
        extra = {"replay_error": problem} if problem else {}
        return ModelOutput(text=text, mode=mode, latency_s=0.0, extra=extra)  # type: ignore[arg-type]

    def _add(self, sid: str, where: str, key: str, answer: tuple[str, str] | None, problem: str | None = None) -> None:
        if sid in self.outputs:
            raise DataError(f"{where}.{key}: sample '{sid}' has an output on an earlier line")
        self.outputs[sid] = answer or ("", "completion")
        if problem:
            self.unreadable[sid] = problem


def _leading_id(line: str) -> str | None:
    """The id a row that cannot be parsed starts with, or None."""
    m = _LEADING_ID.match(line[:2100])
    if not m:
        return None
    try:
        sid = loads_json(m.group(2), what="id")
        clean_text(str(sid), what="id")
    except UntrustedInputError:
        return None
    return str(sid)


def _answer(row: dict[str, Any], where: str) -> tuple[tuple[str, str] | None, str | None]:
    """A parsed row's (text, mode), or None and why its answer cannot be used."""
    field = "code" if "code" in row else "output"
    if "code" in row:
        text, mode = row["code"], "chat"
    elif "output" in row:
        text, mode = row["output"], row.get("mode", "completion")
    else:
        return None, f"{where}.output: missing (or give 'code')"
    if not isinstance(text, str):
        return None, f"{where}.{field}: expected a string, got {type(text).__name__}"
    if mode not in ("completion", "chat"):
        return None, f"{where}.mode: {mode!r} is not 'completion' or 'chat'"
    try:  # a lone surrogate ("\\ud800") cannot be stored or printed later, far from here
        clean_text(text, what=f"{where}.{field}")
    except UntrustedInputError as exc:
        return None, str(exc)
    return (text, mode), None


def _check_options(options: dict[str, Any]) -> None:
    """replay takes no option; its mode comes from the file, row by row."""
    if "mode" in options:
        raise ConfigError(
            "model 'replay': option mode: each row of the file gives its own mode "
            "(\"mode\": \"completion\" or \"chat\"; a \"code\" row is a chat answer)"
        )
    read_options("replay", options, {})


@register_model("replay", check=_check_options)
def _factory(target: str, options: dict[str, Any]) -> ReplayModel:
    _check_options(options)
    if not target:
        raise ConfigError("--model replay:FILE needs a JSONL file")
    return ReplayModel(Path(target))
