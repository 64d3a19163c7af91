"""``gold``: answers every input with its reference. Running it must score 100 % — a self-check
of prompts, parsing, sandbox and scorer for any track."""

from __future__ import annotations

from typing import Any

from callbench.errors import ConfigError
from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model


class GoldModel(ModelBackend):
    name = "gold"
    modes = ("completion",)
    max_concurrency = 64

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if inp.reference is None:
            raise ConfigError(f"sample {inp.sample_id}: the track provided no reference answer for 'gold'")
        return ModelOutput(text=inp.reference, mode="completion", latency_s=0.0, finish_reason="stop")


@register_model("gold")
def _factory(target: str, options: dict[str, Any]) -> GoldModel:
    if target:
        raise ConfigError(f"--model gold:{target}: 'gold' takes no target")
    return GoldModel()
