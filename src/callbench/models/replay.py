"""``replay:FILE``: score outputs produced elsewhere.

FILE is JSONL, one object per sample: ``{"id": "<sample id>", "output": "<text>"}`` where the
output continues the prompt (``"mode": "completion"``, the default) or is a chat answer
(``"mode": "chat"``); ``"code"`` instead of ``"output"`` gives a whole program (read as a chat
answer). ``"index"`` is accepted as an alias of ``"id"``. A sample missing from the file is an
error, so a partial file cannot silently score as a smaller benchmark.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.models._options import read_options
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model
from callbench.untrusted import UntrustedInputError, clean_text, loads_json

#: The fields of a row (``index`` is an alias of ``id``); anything else is a typo, said as one.
_FIELDS = {"id", "index", "output", "code", "mode"}


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
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:  # bounded: a row nested 100,000 deep is this line's error, not a RecursionError
                row = loads_json(line, what=f"{path}:{lineno}")
            except UntrustedInputError as exc:
                raise DataError(str(exc)) from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected an object")
            unknown = sorted(set(row) - _FIELDS)
            if unknown:
                raise DataError(f"{path}:{lineno}.{unknown[0]}: unknown field (known: {', '.join(sorted(_FIELDS))})")
            key = "id" if "id" in row else "index"
            sid = row.get(key)
            if sid is None:
                raise DataError(f"{path}:{lineno}.id: missing")
            if isinstance(sid, bool) or not isinstance(sid, (str, int)):
                raise DataError(f"{path}:{lineno}.{key}: expected a string or an integer, got {type(sid).__name__}")
            field = "code" if "code" in row else "output"
            if "code" in row:
                text, mode = row["code"], "chat"
            elif "output" in row:
                text, mode = row["output"], row.get("mode", "completion")
            else:
                raise DataError(f"{path}:{lineno}.output: missing (or give 'code')")
            if not isinstance(text, str):
                raise DataError(f"{path}:{lineno}.{field}: expected a string")
            if mode not in ("completion", "chat"):
                raise DataError(f"{path}:{lineno}.mode: {mode!r} is not 'completion' or 'chat'")
            try:  # a lone surrogate ("\\ud800") cannot be stored or printed later, far from here
                clean_text(text, what=f"{path}:{lineno}.{field}")
                clean_text(str(sid), what=f"{path}:{lineno}.{key}")
            except UntrustedInputError as exc:
                raise DataError(str(exc)) from None
            if str(sid) in self.outputs:
                raise DataError(f"{path}:{lineno}.{key}: sample '{sid}' has an output on an earlier line")
            self.outputs[str(sid)] = (text, mode)
        #: The predictions file's content hash: an edited file is another run, not a resume.
        self.predictions_sha256 = hashlib.sha256(raw).hexdigest()[:16]

    @property
    def identity(self) -> str:
        return f"replay:{self.path.name}"

    @property
    def identity_options(self) -> dict[str, Any]:
        return {"predictions_sha256": self.predictions_sha256}

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if inp.sample_id not in self.outputs:
            raise DataError(f"{self.path}: no output for sample '{inp.sample_id}'")
        text, mode = self.outputs[inp.sample_id]
        return ModelOutput(text=text, mode=mode, latency_s=0.0)  # type: ignore[arg-type]


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
