"""``litellm:PROVIDER/MODEL[@BASE_URL]`` — any provider LiteLLM speaks (Anthropic, Gemini, Bedrock,
Vertex, Azure, Mistral, Cohere, OpenAI-compatible servers ...) behind the same protocol.

LiteLLM maps one chat-completion call onto each provider's own API and its errors onto
OpenAI-style exception classes with a ``status_code``; writing those clients here would repeat
what it maintains. callbench keeps what makes runs comparable across backends:

* Retries are callbench's, not LiteLLM's (``num_retries=0`` on every call): the same tenacity
  policy as ``openai:`` (exponential backoff with full jitter on 429, 5xx, timeouts and lost
  connections, up to ``max_retries`` more attempts), counted in ``ModelOutput.extra["attempts"]``;
  other 4xx answers (a bad key, an unknown model, a context too long) fail at once as one-line
  :class:`~callbench.models.base.BackendError`s, stored per sample as ``backend_error``.
* Decoding settings come from :class:`~callbench.models.base.GenerationConfig` (temperature,
  top_p, max_tokens, stop, seed). A provider that has no seed (Anthropic) or other setting would
  make LiteLLM refuse the call; ``drop_params=true`` (the default) lets it leave such a setting
  out instead, and the run identity records that choice.
* Chat only: providers answer conversations. Native tool calling is passed through
  (``tools=``, ``tool_choice="auto"``), with each call's ``arguments`` string kept as sent.
* Constrained decoding needs a server that applies grammars: use ``openai:MODEL@URL`` with vLLM,
  or an in-process backend. A constrained sample here is a one-line configuration error.
* LiteLLM fetches a model price list from the network when imported; callbench runs hermetically,
  so the import uses the copy that ships in the package (``LITELLM_LOCAL_MODEL_COST_MAP``).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from callbench.errors import ConfigError, MissingExtraError
from callbench.models._options import Opt, read_options
from callbench.models.base import (
    BackendError,
    GenerationConfig,
    ModelBackend,
    ModelInput,
    ModelOutput,
    one_line,
)
from callbench.models.registry import register_model

OPTIONS: dict[str, Opt] = {
    "mode": Opt(str, "chat", choices=("auto", "chat")),
    "timeout": Opt(float, 120.0),
    "max_retries": Opt(int, 5),
    "concurrency": Opt(int, 8),
    "api_key": Opt(str, None),
    "backoff": Opt(float, 1.0),
    "backoff_max": Opt(float, 30.0),
    "drop_params": Opt(bool, True),
    # provider-specific request fields, passed through (e.g. {"top_k": 40})
    "extra_body": Opt(dict, None),
}


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network at import
    try:
        import litellm
    except ImportError as exc:
        raise MissingExtraError("litellm", "litellm", what="the litellm: backend") from exc
    return litellm


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


class LiteLLMBackend(ModelBackend):
    """Chat completions through ``litellm.acompletion`` (see the module docstring)."""

    name = "litellm"
    modes = ("chat",)
    supports_tools = True

    def __init__(self, model: str, base_url: str | None = None, **options: Any):
        opts = read_options("litellm", options, OPTIONS)
        super().__init__(opts["mode"])
        if not model:
            raise ConfigError("litellm: name a model, e.g. litellm:anthropic/claude-3-5-haiku-20241022")
        self.model = model
        self.base_url = base_url
        self.timeout = float(opts["timeout"])
        self.max_retries = int(opts["max_retries"])
        self.max_concurrency = int(opts["concurrency"])
        self.api_key = opts["api_key"]
        self.backoff = float(opts["backoff"])
        self.backoff_max = float(opts["backoff_max"])
        self.drop_params = bool(opts["drop_params"])
        self.extra_body = dict(opts["extra_body"] or {})
        self._semaphores: dict[int, asyncio.Semaphore] = {}

    @property
    def identity(self) -> str:
        return f"litellm:{self.model}" + (f"@{self.base_url}" if self.base_url else "")

    @property
    def identity_options(self) -> dict[str, Any]:
        out: dict[str, Any] = {"drop_params": self.drop_params}
        if self.extra_body:
            out["extra_body"] = self.extra_body
        return out

    def _semaphore(self) -> asyncio.Semaphore:
        """One semaphore per running event loop (tests and the CLI may call ``asyncio.run`` often)."""
        loop = id(asyncio.get_running_loop())
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    def _retryable(self, exc: BaseException) -> bool:
        litellm = _litellm()
        if isinstance(exc, (litellm.Timeout, litellm.APIConnectionError, TimeoutError)):
            return True
        status = _status(exc)
        return status is not None and (status == 429 or status >= 500)

    def _params(self, inp: ModelInput, config: GenerationConfig) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": inp.messages,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "seed": config.seed,
            "timeout": self.timeout,
            "num_retries": 0,  # callbench's retry policy, not LiteLLM's
            "drop_params": self.drop_params,
        }
        if config.stop or config.stop_kept:
            params["stop"] = list(config.stop) + list(config.stop_kept)
        if self.base_url:
            params["api_base"] = self.base_url
        if self.api_key:
            params["api_key"] = self.api_key
        if inp.tools is not None:
            params["tools"] = inp.tools
            params["tool_choice"] = "auto"
        params.update(self.extra_body)
        return params

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if inp.constraint is not None:
            raise ConfigError(
                f"{self.identity}: constrained decoding needs a server that applies grammars "
                "(openai:MODEL@URL with vLLM) or an in-process backend (llamacpp:, hf:)"
            )
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        litellm = _litellm()
        params = self._params(inp, config)
        attempts = 0
        started = time.perf_counter()
        latency = 0.0

        async def once() -> Any:
            nonlocal attempts, latency
            attempts += 1
            async with self._semaphore():
                sent = time.perf_counter()
                reply = await litellm.acompletion(**params)
                latency = time.perf_counter() - sent
                return reply

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait_random_exponential(multiplier=self.backoff, max=self.backoff_max),
            retry=retry_if_exception(self._retryable),
            reraise=True,
        )
        try:
            reply = None
            async for attempt in retrying:
                with attempt:
                    reply = await once()
        except Exception as exc:
            if isinstance(exc, ConfigError):
                raise
            what = "gave up after" if self._retryable(exc) else "request refused after"
            raise BackendError(
                f"{self.identity}: {what} {attempts} attempt(s): {type(exc).__name__}: {one_line(str(exc))}",
                status=_status(exc),
                attempts=attempts,
                body=one_line(str(exc), 500),
            ) from exc
        return self._output(reply, inp, attempts, latency, time.perf_counter() - started)

    def _output(self, reply: Any, inp: ModelInput, attempts: int, latency: float, elapsed: float) -> ModelOutput:
        try:
            choice = reply.choices[0]
            message = choice.message
        except (AttributeError, IndexError, TypeError) as exc:
            raise BackendError(f"{self.identity}: malformed reply (no choices)", attempts=attempts) from exc
        tool_calls = None
        if inp.tools is not None and getattr(message, "tool_calls", None):
            tool_calls = [
                {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
                for tc in message.tool_calls
            ]
        usage = getattr(reply, "usage", None)
        return ModelOutput(
            text=message.content or "",
            mode="chat",
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            extra={"attempts": attempts, "elapsed_s": elapsed, "served_model": getattr(reply, "model", None)},
            tool_calls=tool_calls,
        )


def _parse(target: str) -> tuple[str, str | None]:
    """``PROVIDER/MODEL[@BASE_URL]``: the model, and the base URL after the last ``@`` that starts
    a URL (model names such as Vertex's ``claude-3-5-sonnet@20240620`` keep theirs)."""
    head, sep, tail = target.rpartition("@")
    if sep and tail.startswith(("http://", "https://")):
        return head, tail
    return target, None


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    return read_options("litellm", options, OPTIONS)


@register_model("litellm", check=_check_options)
def _factory(target: str, options: dict[str, Any]) -> LiteLLMBackend:
    model, base_url = _parse(target)
    return LiteLLMBackend(model, base_url, **options)
