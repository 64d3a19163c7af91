"""``gold``: answers every input with its reference. Running it must score 100 % — a self-check
of prompts, parsing, sandbox and scorer for any track.

With ``ModelInput.tools`` set (native tool calling) the reference is a JSON assistant message
``{"content": str | None, "tool_calls": [{"id", "name", "arguments"}] | None}``; gold answers with it,
so a multi-turn track can play the gold calls one per turn as tool calls.
"""

from __future__ import annotations

import json
from typing import Any

from callbench.errors import ConfigError
from callbench.models._options import Opt, read_options
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model

#: gold answers with the reference as written: a completion (a tool-call reference comes back as
#: the chat message it is), so the only option is the mode, and only completion is one.
OPTIONS: dict[str, Opt] = {"mode": Opt(str, "auto", choices=("auto", "completion"))}


class GoldModel(ModelBackend):
    name = "gold"
    modes = ("completion",)
    max_concurrency = 64
    supports_tools = True

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if inp.reference is None:
            raise ConfigError(f"sample {inp.sample_id}: the track provided no reference answer for 'gold'")
        if inp.tools is None:
            return ModelOutput(text=inp.reference, mode="completion", latency_s=0.0, finish_reason="stop")
        try:
            message = json.loads(inp.reference)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"sample {inp.sample_id}: the tool-call reference for 'gold' is not JSON ({exc.msg})") from exc
        if not isinstance(message, dict):
            raise ConfigError(f"sample {inp.sample_id}: the tool-call reference for 'gold' is not a JSON object")
        calls = message.get("tool_calls") or None
        return ModelOutput(
            text=message.get("content") or "",
            mode="chat",
            latency_s=0.0,
            finish_reason="tool_calls" if calls else "stop",
            tool_calls=calls,
        )


def _check_options(options: dict[str, Any]) -> None:
    read_options("gold", options, OPTIONS)


@register_model("gold", check=_check_options)
def _factory(target: str, options: dict[str, Any]) -> GoldModel:
    _check_options(options)
    if target:
        raise ConfigError(f"--model gold:{target}: 'gold' takes no target")
    return GoldModel()
