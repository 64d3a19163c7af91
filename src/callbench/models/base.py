"""The one async protocol every model backend implements.

A track turns a sample into a :class:`ModelInput` carrying *both* a completion-style prompt and
chat messages; the backend answers in the mode it supports (``ModelOutput.mode``) and the track's
parser handles either. Backends declare capabilities instead of being chosen by model name.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from callbench.errors import CallbenchError

if TYPE_CHECKING:  # the type only: a backend checks what it was given (constrain.protocol.require_constraint)
    from callbench.constrain.protocol import Constraint

Mode = Literal["completion", "chat"]

#: A JSON object (chat messages, tool schemas, metadata, what a backend records): its values are
#: any JSON value, read by whoever knows the shape -- the one place ``Any`` stays in this interface.
JsonObject = dict[str, Any]


@dataclass(frozen=True)
class GenerationConfig:
    """Decoding settings shared by all backends (greedy by default, as in the papers)."""

    max_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int = 0
    # Stop strings that stay in the answer: in-process backends end it with the token that
    # completes one and keep that token, as Hugging Face's ``stop_strings`` do (the published
    # scorers' generation); API backends send them as ``stop``, which their servers cut off.
    stop_kept: tuple[str, ...] = ()


@dataclass
class ModelInput:
    """What a backend is asked to continue or answer.

    ``prompt`` is the completion-model text (instructions + starter code); ``messages`` the same
    request for chat models. ``reference`` is the gold answer in the form a completion model would
    produce (the continuation of ``prompt``); only the ``gold`` backend reads it.
    ``constraint`` is an optional track-built :class:`~callbench.constrain.protocol.Constraint` for
    steerable backends.

    ``tools`` asks for native tool calling: OpenAI "function" tool schemas
    (``{"type": "function", "function": {"name", "description", "parameters"}}``). Only backends
    with ``supports_tools`` accept it. ``messages`` may then hold OpenAI-shaped turns whose values
    are not plain strings: assistant messages with ``tool_calls`` (``content`` possibly None) and
    ``{"role": "tool", "tool_call_id", "content"}`` results. With ``tools`` set, the ``gold``
    reference is a JSON assistant message ``{"content": str | None, "tool_calls": [...] | None}``.

    ``assistant_prefix``: for chat models whose template is rendered in-process (llama.cpp, HF),
    the text the assistant's turn starts with. The web API track puts its code fence and starter
    code there, so a chat model's answer continues the starter exactly like a completion (and
    constrained decoding applies). Backends that cannot prefill ignore it and answer freely.
    ``template_messages`` is the conversation such backends render through the chat template
    (default: ``messages``, which API backends send): with a prefilled answer, the web API track's
    leaves the starter out of the user turn, so it appears once, where the answer starts; with
    WAPIIBench's published chat handling it is the one user message upstream gave its in-process
    instruct models (API models get ``messages``, a system/user split).
    Such backends record what they rendered in ``ModelOutput.extra``: ``prompt_sent`` (the
    template's text plus any prefill, special tokens written out) and ``prompt_decoded`` (the
    prompt's tokens decoded without special tokens, as a Hugging Face
    ``decode(skip_special_tokens=True)`` gives it -- the text upstream scorers search answers in).

    ``heal_boundary``: the prompt may end inside what the tokenizer would write as one token (the
    web API starter ends with ``axios.``). Backends that tokenize the prompt themselves back it up
    by its last token and make the continuation start with the removed text (token healing, see
    :mod:`callbench.models.healing`); ``ModelOutput.text`` still continues the original prompt.
    """

    sample_id: str
    prompt: str
    messages: list[JsonObject]
    reference: str | None = None
    constraint: Constraint | None = None
    metadata: JsonObject = field(default_factory=dict)
    tools: list[JsonObject] | None = None
    assistant_prefix: str | None = None
    template_messages: list[JsonObject] | None = None
    heal_boundary: bool = False


@dataclass
class ModelOutput:
    """A backend's answer plus what it cost.

    ``tool_calls`` holds the native tool calls of a ``tools`` request, in order, each
    ``{"id", "name", "arguments"}`` with ``arguments`` the JSON *string* the server sent (not parsed:
    malformed arguments are the caller's to report). None when the answer has no tool calls.
    """

    text: str
    mode: Mode
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float | None = None
    finish_reason: str | None = None
    extra: JsonObject = field(default_factory=dict)
    tool_calls: list[JsonObject] | None = None


def one_line(text: object, limit: int = 300) -> str:
    """``text`` on one line (whitespace runs as one space), cut to ``limit`` characters with
    ``...``: how a backend quotes a server's message in its errors."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class BackendError(CallbenchError):
    """The backend gave no usable answer for one sample (refused, kept failing after its retries,
    or sent a malformed body). The runner stores it as that sample's ``backend_error`` outcome --
    not the model's mistake, not a run abort -- and ``--retry-errors`` asks again on resume."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1, body: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts
        self.body = body

    def to_json(self) -> JsonObject:
        return {"error": str(self), "status": self.status, "attempts": self.attempts, "body": (self.body or "")[:500] or None}


class ModelBackend(abc.ABC):
    """Base class for all backends.

    ``modes`` lists what the backend can do; ``mode`` is the one it will use.
    ``max_concurrency`` bounds in-flight requests (1 for in-process models).
    ``steerable`` is True when the backend exposes logits (so constrained decoding can run in-process).
    ``supports_tools`` is True when ``ModelInput.tools`` is honoured (native tool calling); a backend
    may make it a property that depends on ``mode``.
    """

    name: str = "base"
    modes: tuple[Mode, ...] = ("completion",)
    max_concurrency: int = 1
    steerable: bool = False
    supports_tools: bool = False

    def __init__(self, mode: str | None = None) -> None:
        """``mode``: a user's text (checked here), ``"auto"`` or None for the backend's default."""
        from callbench.errors import ConfigError

        # "auto" = the backend's default (backends that render chat templates refine it).
        chosen = self.modes[0] if mode in (None, "auto") else mode
        supported = next((m for m in self.modes if m == chosen), None)
        if supported is None:
            raise ConfigError(f"model '{self.name}': mode '{chosen}' not supported (choose from {', '.join(self.modes)})")
        self.mode: Mode = supported

    @property
    def identity(self) -> str:
        """A stable string that names this model and its settings (recorded in each run)."""
        return self.name

    @property
    def identity_options(self) -> JsonObject:
        """The backend options that change its answers (JSON-able), beyond :attr:`identity`: part
        of a run's identity, so a run is not resumed with answers another setting produced.
        Options that only change how answers are fetched (timeouts, retries, concurrency) stay out."""
        return {}

    @abc.abstractmethod
    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        """Answer one input."""

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release resources (HTTP clients, model weights)."""


def require_tools(backend: ModelBackend, what: str = "native tool calling") -> None:
    """Raise a one-line :class:`ConfigError` unless ``backend`` can answer ``ModelInput.tools``."""
    from callbench.errors import ConfigError

    if getattr(backend, "supports_tools", False):
        return
    name = getattr(backend, "identity", None) or getattr(backend, "name", type(backend).__name__)
    mode = getattr(backend, "mode", None)
    raise ConfigError(
        f"{what}: backend '{name}'{f' in {mode} mode' if mode else ''} has no native tool calling "
        "(use openai:MODEL@URL in chat mode, or gold)"
    )
