"""``replay:FILE``: score outputs produced elsewhere.

FILE is JSONL, one object per sample: ``{"id": "<sample id>", "output": "<text>"}`` where the
output continues the prompt (``"mode": "completion"``, the default) or is a chat answer
(``"mode": "chat"``); ``"code"`` instead of ``"output"`` gives a whole program (read as a chat
answer). ``"index"`` is accepted as an alias of ``"id"``. A sample missing from the file is an
error, so a partial file cannot silently score as a smaller benchmark.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from callbench.errors import ConfigError, DataError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model


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
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{lineno}: invalid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise DataError(f"{path}:{lineno}: expected an object")
            sid = row.get("id", row.get("index"))
            if sid is None:
                raise DataError(f"{path}:{lineno}.id: missing")
            if "code" in row:
                text, mode = row["code"], "chat"
            elif "output" in row:
                text, mode = row["output"], row.get("mode", "completion")
            else:
                raise DataError(f"{path}:{lineno}.output: missing (or give 'code')")
            if not isinstance(text, str):
                raise DataError(f"{path}:{lineno}.output: expected a string")
            if mode not in ("completion", "chat"):
                raise DataError(f"{path}:{lineno}.mode: '{mode}' is not 'completion' or 'chat'")
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


@register_model("replay")
def _factory(target: str, options: dict[str, Any]) -> ReplayModel:
    if not target:
        raise ConfigError("--model replay:FILE needs a JSONL file")
    return ReplayModel(Path(target))
