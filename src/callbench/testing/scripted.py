"""A model backend that answers from a script, for tests of agents that talk to a model."""

from __future__ import annotations

from callbench.models.base import GenerationConfig, ModelBackend, ModelInput, ModelOutput

__all__ = ["ScriptedModel"]


class ScriptedModel(ModelBackend):
    """A chat backend that answers each request with the next of ``answers`` and keeps what it was
    asked (``seen``): tests of agents that talk to a model (writers, reviewers, generators)."""

    name = "scripted"
    modes = ("chat",)

    def __init__(self, answers: list[str]):
        super().__init__("chat")
        self.answers = list(answers)
        self.seen: list[ModelInput] = []

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        self.seen.append(inp)
        return ModelOutput(text=self.answers.pop(0), mode="chat")
