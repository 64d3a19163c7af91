"""``openai:MODEL@BASE_URL`` — any server that speaks the OpenAI HTTP API.

vLLM, llama.cpp's server, TGI, SGLang and OpenAI itself all accept ``/chat/completions`` and
``/completions``, so one backend covers hosted and self-served models. Design choices:

* The SDK's own retries are switched off (``max_retries=0``) and replaced by an explicit tenacity
  policy (exponential backoff with full jitter on 429, 5xx, timeouts and connection errors), so the
  behaviour is ours, visible in ``ModelOutput.extra["attempts"]`` and testable against a local server.
  Other 4xx answers (bad model name, context too long, bad key) will not get better by waiting, so
  they fail at once with a one-line :class:`ModelRequestError`.
* The backend bounds its own in-flight requests with a semaphore of size ``max_concurrency`` even
  though the runner does too: a backend shared by two runners, or called directly, must still not
  overload a small local server.
* The HTTP client and the semaphore belong to one event loop; tests and the CLI may call
  ``asyncio.run`` several times, so both are (re)built lazily for whichever loop is running.
* Native tool calling (chat mode only): when ``ModelInput.tools`` is set the request carries
  ``tools=`` and ``tool_choice="auto"``; the conversation may hold assistant ``tool_calls`` and
  ``role: tool`` messages, and the answer's tool calls come back in ``ModelOutput.tool_calls`` with
  their ``arguments`` string exactly as the server sent it.
* Token healing (``--model-arg token_healing=true``, completion mode, vLLM only): the server
  tokenizes, so the prompt is tokenized by vLLM's ``/tokenize`` endpoint, sent back as token ids
  without its last token (``/detokenize`` names the removed text), and the continuation is made to
  start with the removed text by a server-side constraint: the healed grammar under
  ``--constrained``, else a regex ``<removed text>.*`` (structured outputs, guidance backend).
  Off by default: other servers have no ``/tokenize``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any

from callbench.errors import ConfigError, MissingExtraError
from callbench.models._options import Opt, read_options
from callbench.models.base import BackendError, GenerationConfig, Mode, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model

OPTIONS: dict[str, Opt] = {
    "mode": Opt(str, "chat"),
    "timeout": Opt(float, 120.0),
    "max_retries": Opt(int, 5),
    "concurrency": Opt(int, 8),
    "extra_body": Opt(dict, None),
    "api_key": Opt(str, None),
    # First backoff step and cap, in seconds (exposed so tests and impatient users can shrink them).
    "backoff": Opt(float, 1.0),
    "backoff_max": Opt(float, 30.0),
    # A server's Retry-After is honoured up to this many seconds (a longer one is cut to it).
    "retry_after_max": Opt(float, 300.0),
    # vLLM only: heal the prompt boundary through the server's /tokenize and structured outputs.
    "token_healing": Opt(bool, False),
}

_DEFAULT_BASE_URL = "https://api.openai.com/v1"
_TARGET = re.compile(r"^(?P<model>.+?)@(?P<url>https?://.+)$")


class ModelRequestError(BackendError):
    """A request the server refused, or that kept failing after every retry (message is one line)."""


class MalformedResponse(Exception):
    """A 200 reply that holds no answer (not JSON, an HTML page, no choices, null content): a
    fault of the server or a proxy, retried like a 5xx and never scored as the model's answer."""


class ReplyTimeout(MalformedResponse):
    """No complete reply within ``timeout`` seconds (the whole request, not one read)."""


def _check_reply(response: Any, mode: str, tools: bool) -> None:
    """Raise :class:`MalformedResponse` unless ``response`` is a completion with an answer."""
    if isinstance(response, (str, bytes)) or not hasattr(response, "choices"):
        text = response if isinstance(response, str) else repr(response)
        raise MalformedResponse(f"the reply is not a completion object: {_one_line(str(text), 200)}")
    if not response.choices:
        raise MalformedResponse("the reply has no choices")
    choice = response.choices[0]
    if mode == "chat":
        message = getattr(choice, "message", None)
        if message is None:
            raise MalformedResponse("the reply's choice has no message")
        if message.content is None and not (tools and getattr(message, "tool_calls", None)):
            raise MalformedResponse("the reply's message content is null")
    elif getattr(choice, "text", None) is None:
        raise MalformedResponse("the reply's choice has no text")


def parse_target(target: str) -> tuple[str, str | None]:
    """Split ``MODEL@URL`` (the URL part optional); the model name may itself contain ``@``."""
    target = target.strip()
    if not target:
        raise ConfigError("model 'openai': missing model name (expected openai:MODEL[@http://HOST:PORT/v1])")
    match = _TARGET.match(target)
    if match:
        return match["model"], match["url"].rstrip("/")
    if "@" in target and "://" in target.rsplit("@", 1)[1]:
        raise ConfigError(f"model 'openai:{target}': base URL must start with http:// or https://")
    return target, None


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class OpenAICompatBackend(ModelBackend):
    """Talks to an OpenAI-compatible server with ``AsyncOpenAI``."""

    name = "openai"
    modes: tuple[Mode, ...] = ("chat", "completion")
    steerable = False

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        *,
        mode: Mode | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        concurrency: int = 8,
        extra_body: dict[str, Any] | None = None,
        api_key: str | None = None,
        backoff: float = 1.0,
        backoff_max: float = 30.0,
        retry_after_max: float = 300.0,
        token_healing: bool = False,
    ):
        super().__init__(mode)
        self.token_healing = token_healing
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise MissingExtraError("openai", "openai") from exc
        if concurrency < 1:
            raise ConfigError(f"model 'openai:{model}': concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ConfigError(f"model 'openai:{model}': max_retries must be >= 0, got {max_retries}")
        if timeout <= 0:
            raise ConfigError(f"model 'openai:{model}': timeout must be > 0, got {timeout}")
        self._openai = openai
        self.model = model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_concurrency = int(concurrency)
        self.extra_body = dict(extra_body) if extra_body else None
        self.backoff = float(backoff)
        self.backoff_max = float(backoff_max)
        self.retry_after_max = float(retry_after_max)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None
        self._semaphore: asyncio.Semaphore | None = None

    @property
    def identity(self) -> str:
        return f"openai:{self.model}@{self.base_url}" + ("[heal]" if self.token_healing else "")

    @property
    def server_root(self) -> str:
        """vLLM serves /tokenize and /detokenize beside /v1, not under it."""
        return re.sub(r"/v1$", "", self.base_url)

    async def _heal(self, prompt: str) -> Any:
        """Back the prompt up by its last token, using the server's own tokenizer (vLLM)."""
        import httpx

        from callbench.models.healing import heal_prompt

        headers = {"Authorization": f"Bearer {self.api_key}"}
        async with httpx.AsyncClient(base_url=self.server_root, timeout=self.timeout, headers=headers) as http:
            try:
                r = await http.post("/tokenize", json={"model": self.model, "prompt": prompt})
                if r.status_code == 404:
                    raise ConfigError(
                        f"{self.identity}: token_healing needs the server's /tokenize endpoint (vLLM has one); "
                        "this server has none (--model-arg token_healing=false)"
                    )
                r.raise_for_status()
                ids = [int(t) for t in r.json()["tokens"]]
                last: dict[int, bytes] = {}
                if ids:
                    d = await http.post("/detokenize", json={"model": self.model, "tokens": ids[-1:]})
                    d.raise_for_status()
                    text = d.json()["prompt"]
                    # A piece of a multi-byte character detokenizes to U+FFFD: leave such endings alone.
                    last[ids[-1]] = b"" if "\ufffd" in text else text.encode("utf-8")
            except (httpx.HTTPError, KeyError, TypeError, ValueError) as exc:
                raise ModelRequestError(f"{self.identity}: token healing failed: {_one_line(str(exc))}") from exc
        return heal_prompt(ids, lambda i: last.get(i, b""))

    @property
    def supports_tools(self) -> bool:  # type: ignore[override]
        """Tools go through ``/chat/completions`` only."""
        return self.mode == "chat"

    def _bind_loop(self) -> tuple[Any, asyncio.Semaphore]:
        """Client and semaphore for the running loop (a new loop gets fresh ones)."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._semaphore is None:
            self._loop = loop
            self._client = self._openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=self.api_key,
                timeout=self.timeout,
                max_retries=0,  # the retry policy below is the only one
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._client, self._semaphore

    def _is_retryable(self, exc: BaseException) -> bool:
        oa = self._openai
        if isinstance(exc, (oa.APITimeoutError, oa.APIConnectionError, MalformedResponse)):
            return True
        if isinstance(exc, oa.APIStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
        return False

    def _retry_after(self, exc: BaseException | None) -> float | None:
        """Seconds from a ``Retry-After`` header (numeric form only), if the error carries one."""
        response = getattr(exc, "response", None) if isinstance(exc, self._openai.APIStatusError) else None
        value = response.headers.get("retry-after") if response is not None else None
        try:
            return max(0.0, float(value)) if value is not None else None
        except ValueError:
            return None

    def _describe(self, exc: BaseException) -> str:
        oa = self._openai
        if isinstance(exc, oa.APITimeoutError):
            return f"timed out after {self.timeout:g} s"
        if isinstance(exc, oa.APIConnectionError):
            cause = exc.__cause__ or exc
            return f"cannot connect ({type(cause).__name__}: {_one_line(str(cause), 120)})"
        if isinstance(exc, oa.APIStatusError):
            detail: Any = exc.body
            if isinstance(detail, dict):
                err = detail.get("error", detail)
                detail = err.get("message", err) if isinstance(err, dict) else err
            if not detail:
                detail = exc.message
            return f"HTTP {exc.status_code}: {_one_line(str(detail))}"
        return f"{type(exc).__name__}: {_one_line(str(exc))}"

    def _request(self, client: Any, inp: ModelInput, config: GenerationConfig, healing: Any = None):
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
            "seed": config.seed,
        }
        if config.stop:
            params["stop"] = list(config.stop)
        extra_body = dict(self.extra_body or {})
        hook = getattr(inp.constraint, "vllm_extra_body", None) if inp.constraint is not None else None
        if inp.constraint is not None and hook is None:
            raise ConfigError(f"{self.identity}: constraint {type(inp.constraint).__name__} has no vllm_extra_body()")
        heal = healing.text if healing is not None else ""
        if hook is not None:
            # Server-side constrained decoding (vLLM's structured outputs, guidance backend).
            extra_body.update(_server_constraint(inp.constraint, heal))
        elif heal:
            # The removed text first, then anything (vLLM structured outputs, a regex).
            extra_body["structured_outputs"] = {"regex": re.escape(heal) + "(?s:.*)"}
        if extra_body:
            params["extra_body"] = extra_body
        if inp.tools is not None:
            if self.mode != "chat":
                raise ConfigError(f"{self.identity}: tools need chat mode (use --model-arg mode=chat)")
            params["tools"] = inp.tools
            params["tool_choice"] = "auto"
        if self.mode == "chat":
            return client.chat.completions.create(messages=inp.messages, **params)
        return client.completions.create(prompt=healing.ids if heal else inp.prompt, **params)


    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        client, semaphore = self._bind_loop()
        attempts = 0
        jitter = wait_random_exponential(multiplier=self.backoff, max=self.backoff_max)

        def wait(state) -> float:
            # Full-jitter backoff, but never sooner than a server's Retry-After (up to retry_after_max).
            delay = jitter(state)
            retry_after = self._retry_after(state.outcome.exception() if state.outcome else None)
            return max(delay, min(retry_after, self.retry_after_max)) if retry_after else delay

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait,
            retry=retry_if_exception(self._is_retryable),
            reraise=True,
        )
        started = time.perf_counter()
        healing = None
        if self.token_healing and self.mode == "completion" and inp.heal_boundary:
            healing = await self._heal(inp.prompt)
        try:
            async for attempt in retrying:
                with attempt:
                    attempts += 1
                    async with semaphore:
                        sent = time.perf_counter()
                        try:
                            # ``timeout`` is a total deadline: the SDK's own timeout is per read,
                            # so a body trickled slowly would otherwise never time out
                            response = await asyncio.wait_for(
                                self._request(client, inp, config, healing), timeout=self.timeout
                            )
                        except TimeoutError as exc:
                            raise ReplyTimeout(f"no complete reply within {self.timeout:g} s") from exc
                        except ValueError as exc:  # the SDK's JSONDecodeError on a truncated body
                            raise MalformedResponse(f"the reply is not valid JSON ({_one_line(str(exc), 120)})") from exc
                        _check_reply(response, self.mode, inp.tools is not None)
                        latency = time.perf_counter() - sent
        except MalformedResponse as exc:
            what = "" if isinstance(exc, ReplyTimeout) else "malformed reply: "
            raise ModelRequestError(
                f"{self.identity}: gave up after {attempts} attempt(s): {what}{exc}", attempts=attempts, body=str(exc)
            ) from exc
        except self._openai.APIError as exc:
            status = getattr(exc, "status_code", None)
            if self._is_retryable(exc):
                msg = f"{self.identity}: gave up after {attempts} attempt(s): {self._describe(exc)}"
            else:
                msg = f"{self.identity}: request refused: {self._describe(exc)}"
            body = getattr(exc, "body", None)
            raise ModelRequestError(
                msg, status=status, attempts=attempts, body=_one_line(json.dumps(body) if body else "", 500) or None
            ) from exc
        elapsed = time.perf_counter() - started

        choice = response.choices[0] if response.choices else None
        tool_calls = None
        if choice is None:
            text = ""
        elif self.mode == "chat":
            text = (choice.message.content if choice.message else None) or ""
            tool_calls = _tool_calls(choice.message) if inp.tools is not None else None
        else:
            from callbench.models.healing import strip_healed

            text = strip_healed(choice.text or "", healing)
        usage = getattr(response, "usage", None)
        extra: dict[str, Any] = {
            "attempts": attempts,
            "elapsed_s": elapsed,
            "served_model": getattr(response, "model", None),
        }
        if healing is not None and healing.prefix:
            extra["token_healing"] = healing.as_record()
        return ModelOutput(
            text=text,
            mode=self.mode,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            # The answered request alone; queueing, failed attempts and backoff are in extra.
            latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            extra=extra,
            tool_calls=tool_calls,
        )

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except RuntimeError:  # bound to a loop that is already closed: nothing left to release
                pass


def _server_constraint(constraint: Any, heal: str) -> dict[str, Any]:
    """The constraint's request fields, for a prompt healed by ``heal`` where it was."""
    if not heal:
        return constraint.vllm_extra_body()
    from callbench.constrain.healing import for_healed_prompt

    target, kwargs = for_healed_prompt(constraint, heal)
    return target.vllm_extra_body(**kwargs)


def _tool_calls(message: Any) -> list[dict[str, Any]] | None:
    """The function tool calls of a chat message as ``{"id", "name", "arguments"}`` (None: none)."""
    calls = getattr(message, "tool_calls", None) if message is not None else None
    out = []
    for call in calls or []:
        function = getattr(call, "function", None)
        if function is None:  # a non-function tool (e.g. "custom"): nothing a track can execute
            continue
        arguments = function.arguments
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):  # a server that sends an object instead of its JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append({"id": call.id, "name": function.name, "arguments": arguments})
    return out or None


@register_model("openai")
def _factory(target: str, options: dict[str, Any]) -> OpenAICompatBackend:
    try:
        import openai  # noqa: F401 - only checking that the extra is installed
    except ImportError as exc:
        raise MissingExtraError("openai", "openai") from exc
    opts = read_options("openai", options, OPTIONS)
    model, base_url = parse_target(target)
    return OpenAICompatBackend(model, base_url, **opts)
