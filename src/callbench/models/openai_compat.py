"""``openai:MODEL@BASE_URL`` — any server that speaks the OpenAI HTTP API.

vLLM, llama.cpp's server, TGI, SGLang and OpenAI itself all accept ``/chat/completions`` and
``/completions``, so one backend covers hosted and self-served models. Design choices:

* The wire protocol (two JSON endpoints) is spoken with ``aiohttp`` rather than through the
  ``openai`` SDK: the SDK takes ~0.95 s to import and ~1.5 ms of event-loop CPU per request
  (request transformation, model construction), and it, like plain ``httpx``, rides on
  httpcore, whose connection pool rescans every connection for every queued request: measured
  against the bundled fake server on 2 cores, httpx reached 331 requests/s at 8 in flight and 212
  at 64, aiohttp 3,184 and 3,398 (the server's own limit). The connection pool is sized to
  ``concurrency`` (keep-alive for every request in flight, no connection churn).
* Retries are an explicit tenacity policy (exponential backoff with full jitter on 429, 5xx,
  timeouts, connection errors and malformed replies), visible in ``ModelOutput.extra["attempts"]``
  and testable against a local server.
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
* :meth:`OpenAICompatBackend.preflight` (the runner awaits it before the first sample): one cheap
  request (``GET /models``, else a 1-token completion where a server has no ``/models``) with a
  short deadline and no retries, so a dead endpoint, a wrong URL or a refused key is one line
  within seconds instead of a backend error per sample after every retry. With a constraint it
  also proves that the server applies grammars: it asks for an answer under a grammar that allows
  one fixed marker (:data:`GRAMMAR_PROBE`), which an unconstrained model does not write, and
  refuses a server that ignores the grammar (a non-vLLM server, or vLLM without the guidance
  backend), since its answers would be scored as constrained ones.
* :attr:`OpenAICompatBackend.identity_options` names the options that change answers (``mode``,
  ``extra_body``, ``token_healing``) for the run identity; timeouts, retries, backoff,
  concurrency and the key only change whether and when an answer comes.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any

from callbench.constrain.protocol import Constraint, require_constraint
from callbench.errors import ConfigError, MissingExtraError
from callbench.models._options import Opt, read_options
from callbench.models.base import (
    BackendError,
    GenerationConfig,
    Mode,
    ModelBackend,
    ModelInput,
    ModelOutput,
    one_line,
)
from callbench.models.registry import register_model

OPTIONS: dict[str, Opt] = {
    "mode": Opt(str, "chat", choices=("auto", "chat", "completion")),
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
    # Several replicas (MODEL@URL1,URL2): seconds a failed replica stays out before a probe (the
    # cool-down doubles after each failed probe, up to replica_cooldown_max); see models/replicas.py.
    "replica_cooldown": Opt(float, 10.0),
    "replica_cooldown_max": Opt(float, 120.0),
}

_DEFAULT_BASE_URL = "https://api.openai.com/v1"

#: The only text the preflight's probe grammar allows: an unconstrained model does not write it.
GRAMMAR_PROBE = "callbench grammar probe 7301"
PROBE_LARK = f'start: "{GRAMMAR_PROBE}"\n'
# Preflight deadlines, in seconds (capped by the backend's own timeout).
PREFLIGHT_CONNECT_S = 5.0
PREFLIGHT_LIST_S = 10.0
PREFLIGHT_ANSWER_S = 60.0
# The options that change answers (see OpenAICompatBackend.identity_options).
IDENTITY_OPTIONS = ("mode", "extra_body", "token_healing")
_TARGET = re.compile(r"^(?P<model>.+?)@(?P<url>https?://.+)$")


class ModelRequestError(BackendError):
    """A request the server refused, or that kept failing after every retry (message is one line)."""


class Unreachable(ConfigError):
    """The preflight found no server there (refused, unknown host, no answer in time, not HTTP):
    with several replicas that one is taken out and the others serve the run."""


class MalformedResponse(Exception):
    """A 200 reply that holds no answer (not JSON, an HTML page, no choices, null content): a
    fault of the server or a proxy, retried like a 5xx and never scored as the model's answer."""


class ReplyTimeout(MalformedResponse):
    """No complete reply within ``timeout`` seconds (the whole request, not one read)."""


class HTTPStatusError(Exception):
    """A non-2xx answer: the status, the decoded body (JSON when it is JSON) and the headers."""

    def __init__(self, status: int, body: Any, headers: Any):
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.body = body
        self.headers = headers


def _decode(raw: bytes, headers: Any) -> Any:
    """The JSON body of a 200 reply, or :class:`MalformedResponse` (an HTML page, a cut body, a
    body nested deeper than :data:`callbench.untrusted.DOCUMENT_MAX_DEPTH`: the sample's backend
    error, never a RecursionError out of the run)."""
    from callbench.untrusted import DOCUMENT_MAX_DEPTH, UntrustedInputError, check_value

    kind = headers.get("content-type", "?").split(";")[0]
    try:
        return check_value(json.loads(raw), what="the reply", max_depth=DOCUMENT_MAX_DEPTH)
    except (RecursionError, UntrustedInputError) as exc:
        problem = str(exc) if isinstance(exc, UntrustedInputError) else f"the reply: nested deeper than {DOCUMENT_MAX_DEPTH} levels"
        raise MalformedResponse(f"{problem} ({kind}, {len(raw)} bytes)") from None
    except ValueError as exc:
        text = raw[:400].decode("utf-8", errors="replace")
        raise MalformedResponse(f"the reply is not valid JSON ({kind}, {len(raw)} bytes: {one_line(text, 120)})") from exc


def _aiohttp() -> Any:
    try:
        import aiohttp
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("aiohttp", "openai") from exc
    return aiohttp


def _check_reply(reply: Any, mode: str, tools: bool) -> dict[str, Any]:
    """The first choice of ``reply``, or :class:`MalformedResponse` unless it holds an answer."""
    if not isinstance(reply, dict) or "choices" not in reply:
        raise MalformedResponse(f"the reply is not a completion object: {one_line(json.dumps(reply), 200)}")
    choices = reply["choices"]
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise MalformedResponse("the reply has no choices")
    choice = choices[0]
    if mode == "chat":
        message = choice.get("message")
        if not isinstance(message, dict):
            raise MalformedResponse("the reply's choice has no message")
        content = message.get("content")
        if content is None and not (tools and message.get("tool_calls")):
            raise MalformedResponse("the reply's message content is null")
        if content is not None and not isinstance(content, str):
            raise MalformedResponse(f"the reply's message content is not text ({type(content).__name__})")
    elif not isinstance(choice.get("text"), str):
        raise MalformedResponse("the reply's choice has no text")
    return choice


def parse_target(target: str) -> tuple[str, str | None]:
    """Split ``MODEL@URL`` (the URL part optional); the model name may itself contain ``@``.
    ``MODEL@URL1,URL2,...`` names replicas of one model: the URL part is then their list, checked
    (no empty entry, each http(s), none twice) and joined with ``,``."""
    target = target.strip()
    if not target:
        raise ConfigError("model 'openai': missing model name (expected openai:MODEL[@http://HOST:PORT/v1])")
    match = _TARGET.match(target)
    if match:
        url = match["url"]
        if "," not in url:
            return match["model"], url.rstrip("/")
        from callbench.models.replicas import split_urls

        return match["model"], ",".join(split_urls(match["model"], url))
    if target.endswith("@"):
        raise ConfigError(f"model 'openai:{target}': no base URL after '@' (expected openai:MODEL@http://HOST:PORT/v1)")
    if "@" in target:
        tail = target.rsplit("@", 1)[1]
        if "://" in tail or "/" in tail or re.match(r"^[\w.-]+:\d+$", tail) or tail.startswith("localhost"):
            # without this, 'm@127.0.0.1:8000/v1' would be a model name sent to the public OpenAI API
            raise ConfigError(f"model 'openai:{target}': base URL must start with http:// or https:// (got {tail!r})")
    return target, None


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
        replica_cooldown: float = 10.0,
        replica_cooldown_max: float = 120.0,
    ):
        super().__init__(mode)
        self.token_healing = token_healing
        if concurrency < 1:
            raise ConfigError(f"model 'openai:{model}': concurrency must be >= 1, got {concurrency}")
        if max_retries < 0:
            raise ConfigError(f"model 'openai:{model}': max_retries must be >= 0, got {max_retries}")
        if timeout <= 0:
            raise ConfigError(f"model 'openai:{model}': timeout must be > 0, got {timeout}")
        self.model = model
        urls = (base_url or os.environ.get("OPENAI_BASE_URL") or _DEFAULT_BASE_URL).rstrip("/")
        if "," in urls:
            from callbench.models.replicas import split_urls

            self.base_urls = split_urls(model, urls)
        else:
            self.base_urls = [urls]
        self.base_url = self.base_urls[0]
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
        # Set on a replica of a pool: True for a failure after which its retries stop (the pool
        # asks another replica instead); see models/replicas.py.
        self._fail_over: Any = None
        self._pool: Any = None
        if len(self.base_urls) > 1:
            from callbench.models.replicas import ReplicaPool

            if replica_cooldown <= 0:
                raise ConfigError(f"model 'openai:{model}': replica_cooldown must be > 0, got {replica_cooldown}")
            each = {
                "mode": self.mode, "timeout": timeout, "max_retries": max_retries, "concurrency": concurrency,
                "extra_body": extra_body, "api_key": self.api_key, "backoff": backoff, "backoff_max": backoff_max,
                "retry_after_max": retry_after_max, "token_healing": token_healing,
            }  # fmt: skip
            self._pool = ReplicaPool(
                [OpenAICompatBackend(model, url, **each) for url in self.base_urls],
                cooldown=float(replica_cooldown),
                cooldown_max=float(replica_cooldown_max),
            )
            for r in self._pool.replicas:
                r.backend._fail_over = self._replica_gone(r)
            # the per-request bound is per replica: the fleet takes one set of requests per replica
            self.max_concurrency = int(concurrency) * len(self.base_urls)

    @property
    def identity(self) -> str:
        """``openai:MODEL@URL`` (replicas: ``openai:MODEL@URL1,URL2,...`` in the given order)."""
        return f"openai:{self.model}@{','.join(self.base_urls)}" + ("[heal]" if self.token_healing else "")

    @property
    def identity_options(self) -> dict[str, Any]:
        """The options that change the answers, for the run identity: ``mode`` (chat or completion
        prompt), ``extra_body`` (server-side sampling and decoding fields) and ``token_healing``.
        Not ``timeout``, ``max_retries``, ``backoff*``, ``retry_after_max``, ``concurrency`` or
        ``api_key``: they change only whether and when an answer comes."""
        return {"mode": self.mode, "extra_body": self.extra_body or None, "token_healing": self.token_healing}

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
                raise ModelRequestError(f"{self.identity}: token healing failed: {one_line(str(exc))}") from exc
        return heal_prompt(ids, lambda i: last.get(i, b""))

    @property
    def supports_tools(self) -> bool:  # type: ignore[override]
        """Tools go through ``/chat/completions`` only."""
        return self.mode == "chat"

    def _bind_loop(self) -> tuple[Any, asyncio.Semaphore]:
        """Client and semaphore for the running loop (a new loop gets fresh ones)."""
        aiohttp = _aiohttp()
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._client is None or self._semaphore is None:
            self._loop = loop
            # One keep-alive connection per request in flight: a smaller pool churns TCP connections.
            pool = aiohttp.TCPConnector(limit=self.max_concurrency, limit_per_host=self.max_concurrency)
            proxied = any(os.environ.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"))
            self._client = aiohttp.ClientSession(
                connector=pool,
                headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"},
                # the total deadline is asyncio.wait_for in generate(); these bound each step
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.timeout, sock_read=self.timeout),
                # proxies from the environment when one is set (trust_env costs ~0.3 ms a request otherwise)
                trust_env=proxied,
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
        return self._client, self._semaphore

    def _is_retryable(self, exc: BaseException) -> bool:
        aiohttp = _aiohttp()
        # refused, reset, dropped or cut-off connections, read timeouts, malformed replies
        if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError, MalformedResponse)):
            return True
        if isinstance(exc, HTTPStatusError):
            return exc.status_code == 429 or exc.status_code >= 500
        return False

    def _retry_after(self, exc: BaseException | None) -> float | None:
        """Seconds from a ``Retry-After`` header (numeric form only), if the error carries one."""
        value = exc.headers.get("retry-after") if isinstance(exc, HTTPStatusError) else None
        try:
            return max(0.0, float(value)) if value is not None else None
        except ValueError:
            return None

    def _describe(self, exc: BaseException) -> str:
        aiohttp = _aiohttp()
        if isinstance(exc, TimeoutError):
            return f"timed out after {self.timeout:g} s"
        if isinstance(exc, (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError)):
            cause = exc.__cause__ or exc
            detail = f"({type(cause).__name__}: {one_line(str(cause), 120) or type(exc).__name__})"
            if isinstance(exc, aiohttp.ClientPayloadError):  # e.g. fewer bytes than Content-Length said
                return f"response cut off before its end {detail}"
            if isinstance(exc, aiohttp.ServerDisconnectedError):
                return f"the server closed the connection without a reply {detail}"
            if isinstance(exc, aiohttp.ClientConnectorError):
                return f"cannot connect {detail}"
            return f"connection lost {detail}"  # reset or broken while the request ran
        if isinstance(exc, HTTPStatusError):
            detail: Any = exc.body
            if isinstance(detail, dict):
                err = detail.get("error", detail.get("detail", detail))
                detail = err.get("message", err) if isinstance(err, dict) else err
            return f"HTTP {exc.status_code}: {one_line(str(detail or ''))}".rstrip(": ")
        return f"{type(exc).__name__}: {one_line(str(exc))}"

    async def _request(self, client: Any, inp: ModelInput, config: GenerationConfig, healing: Any = None) -> Any:
        """Send one request; the decoded JSON reply, or an error for a non-2xx or broken reply."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,
            "top_p": config.top_p,
        }
        if config.seed is not None:
            params["seed"] = config.seed
        if config.stop or config.stop_kept:
            params["stop"] = list(config.stop) + list(config.stop_kept)
        extra_body = dict(self.extra_body or {})
        heal = healing.text if healing is not None else ""
        if inp.constraint is not None:
            # Server-side constrained decoding (vLLM's structured outputs, guidance backend).
            extra_body.update(require_constraint(inp.constraint, self.identity).server_body(heal=heal))
        elif heal:
            # The removed text first, then anything (vLLM structured outputs, a regex).
            extra_body["structured_outputs"] = {"regex": re.escape(heal) + "(?s:.*)"}
        if inp.tools is not None:
            if self.mode != "chat":
                raise ConfigError(f"{self.identity}: tools need chat mode (use --model-arg mode=chat)")
            params["tools"] = inp.tools
            params["tool_choice"] = "auto"
        if self.mode == "chat":
            path, params["messages"] = "chat/completions", inp.messages
        else:
            path, params["prompt"] = "completions", healing.ids if heal else inp.prompt
        params.update(extra_body)  # as the SDK's extra_body does: server-specific fields at the top level
        async with client.post(f"{self.base_url}/{path}", data=json.dumps(params).encode()) as response:
            raw = await response.read()
            if response.status >= 300:
                try:
                    body: Any = json.loads(raw)
                except (ValueError, RecursionError):
                    body = raw[:2000].decode("utf-8", errors="replace")
                raise HTTPStatusError(response.status, body, response.headers)
            return _decode(raw, response.headers)


    def _retrying(self) -> Any:
        """Up to ``max_retries`` more attempts for retryable failures, with full-jitter backoff
        that never comes sooner than a server's Retry-After (up to ``retry_after_max``)."""
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

        jitter = wait_random_exponential(multiplier=self.backoff, max=self.backoff_max)

        def wait(state) -> float:
            delay = jitter(state)
            retry_after = self._retry_after(state.outcome.exception() if state.outcome else None)
            return max(delay, min(retry_after, self.retry_after_max)) if retry_after else delay

        def retryable(exc: BaseException) -> bool:
            return self._is_retryable(exc) and not (self._fail_over is not None and self._fail_over(exc))

        return AsyncRetrying(
            stop=stop_after_attempt(self.max_retries + 1),
            wait=wait,
            retry=retry_if_exception(retryable),
            reraise=True,
        )

    def _replica_gone(self, replica: Any) -> Any:
        """The fail-over test of one replica: stop retrying it after a connection that is refused,
        reset or dropped, or once another request has taken it out, while another replica that
        this request has not failed on is in service (else its retries go on, as a single URL's)."""
        from callbench.models.replicas import TRIED

        aiohttp = _aiohttp()

        def gone(exc: BaseException) -> bool:
            connection = isinstance(exc, aiohttp.ClientConnectionError) and not isinstance(exc, aiohttp.ClientPayloadError)
            if not (connection or not replica.up):
                return False
            tried = TRIED.get()
            return any(o.up and o is not replica and o.url not in tried for o in self._pool.replicas)

        return gone

    def _replica_failure(self, exc: BaseException) -> bool:
        """Does this error (the cause of a replica's ModelRequestError) say the replica is broken?
        Requests (aiohttp) and token healing's /tokenize (httpx): no connection, a timeout, a 5xx."""
        import httpx

        aiohttp = _aiohttp()
        if isinstance(exc, (aiohttp.ClientConnectionError, TimeoutError, ReplyTimeout)):
            return not isinstance(exc, aiohttp.ClientPayloadError)
        if isinstance(exc, httpx.TransportError):
            return True
        if isinstance(exc, httpx.HTTPStatusError):
            return exc.response.status_code >= 500
        return isinstance(exc, HTTPStatusError) and exc.status_code >= 500

    async def _generate_replicated(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        """Ask the replicas in turn until one answers (see models/replicas.py)."""
        from callbench.models.replicas import TRIED

        pool = self._pool
        tried: set[str] = set()
        attempts = 0
        last: ModelRequestError | None = None
        while (replica := pool.choose(tried)) is not None:
            answered = False
            in_service = replica.up  # False: every replica it has not tried is out
            token = TRIED.set(frozenset(tried))
            try:
                replica.backend.mode = self.mode
                out = await replica.backend.generate(inp, config)
                answered = True
            except ModelRequestError as exc:
                attempts += exc.attempts
                cause = exc.__cause__
                if cause is not None and self._replica_failure(cause):
                    pool.take_out(replica, str(exc))
                elif not (cause is not None and not replica.up and self._is_retryable(cause)):
                    raise
                tried.add(replica.url)
                last = exc
                if not in_service:  # it had its full retries, as a single URL has: the request fails
                    break
                continue
            finally:
                TRIED.reset(token)
                pool.release(replica, answered=answered)
            out.extra["attempts"] = attempts + int(out.extra.get("attempts", 1))
            out.extra["replica"] = replica.url
            return out
        assert last is not None  # choose() gives a replica to a request that has tried none
        raise ModelRequestError(
            f"{self.identity}: no replica answered (failed on {len(tried)} of {len(self.base_urls)}; last: {last})",
            status=last.status,
            attempts=attempts,
            body=last.body,
        ) from last

    async def is_up(self) -> bool:
        """Does the server answer ``GET /models`` below 500 (any HTTP answer: 404 too) within the
        preflight's deadline? The probe that brings a replica back (no retries)."""
        aiohttp = _aiohttp()
        client, _ = self._bind_loop()
        try:
            async with asyncio.timeout(min(self.timeout, PREFLIGHT_LIST_S)):
                async with client.get(f"{self.base_url}/models") as response:
                    await response.read()
                    return response.status < 500
        except (aiohttp.ClientError, TimeoutError, OSError):
            return False

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        if self._pool is not None:
            return await self._generate_replicated(inp, config)
        client, semaphore = self._bind_loop()
        attempts = 0
        started = time.perf_counter()
        healing = None
        if self.token_healing and self.mode == "completion" and inp.heal_boundary:
            healing = await self._heal(inp.prompt)

        async def attempt_once() -> tuple[Any, Any, float]:
            nonlocal attempts
            attempts += 1
            async with semaphore:
                sent = time.perf_counter()
                try:
                    # ``timeout`` is a total deadline: a client's own timeouts are per read,
                    # so a body trickled slowly would otherwise never time out
                    async with asyncio.timeout(self.timeout):
                        reply = await self._request(client, inp, config, healing)
                except TimeoutError as exc:
                    raise ReplyTimeout(f"no complete reply within {self.timeout:g} s") from exc
                return reply, _check_reply(reply, self.mode, inp.tools is not None), time.perf_counter() - sent

        try:
            try:
                # The first attempt goes without the retry machinery (most requests need one);
                # a retryable failure hands over to tenacity, which then waits and asks again.
                reply, choice, latency = await attempt_once()
            except Exception as exc:
                if self.max_retries < 1 or not self._is_retryable(exc) or (self._fail_over is not None and self._fail_over(exc)):
                    raise
                first: BaseException | None = exc
                async for attempt in self._retrying():
                    with attempt:
                        if first is not None:  # tenacity's attempt 1 is the one that just failed
                            failed, first = first, None
                            raise failed  # noqa: B904 - the first attempt's own exception, handed to tenacity
                        reply, choice, latency = await attempt_once()
        except MalformedResponse as exc:
            what = "" if isinstance(exc, ReplyTimeout) else "malformed reply: "
            raise ModelRequestError(
                f"{self.identity}: gave up after {attempts} attempt(s): {what}{exc}", attempts=attempts, body=str(exc)
            ) from exc
        except (HTTPStatusError, _aiohttp().ClientError, TimeoutError) as exc:
            status = getattr(exc, "status_code", None)
            if self._is_retryable(exc):
                msg = f"{self.identity}: gave up after {attempts} attempt(s): {self._describe(exc)}"
            else:
                msg = f"{self.identity}: request refused: {self._describe(exc)}"
            body = getattr(exc, "body", None)
            raise ModelRequestError(
                msg, status=status, attempts=attempts, body=one_line(json.dumps(body) if body else "", 500) or None
            ) from exc
        elapsed = time.perf_counter() - started

        tool_calls = None
        if self.mode == "chat":
            text = choice["message"].get("content") or ""
            tool_calls = _tool_calls(choice["message"]) if inp.tools is not None else None
        else:
            from callbench.models.healing import strip_healed

            text = strip_healed(choice["text"], healing)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        extra: dict[str, Any] = {
            "attempts": attempts,
            "elapsed_s": elapsed,
            "served_model": reply.get("model"),
        }
        if healing is not None and healing.prefix:
            extra["token_healing"] = healing.as_record()
        return ModelOutput(
            text=text,
            mode=self.mode,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            # The answered request alone; queueing, failed attempts and backoff are in extra.
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            extra=extra,
            tool_calls=tool_calls,
        )

    # -- preflight ----------------------------------------------------------------------------

    async def preflight(self, constraint: Constraint | bool | None = None) -> None:
        """Check, before the first sample, that the server answers; with ``constraint``, that it
        applies grammars. Raises a one-line :class:`ConfigError`, never retries.

        One ``GET {base_url}/models`` (a server without it, 404, gets a 1-token completion
        instead), connecting within :data:`PREFLIGHT_CONNECT_S` and answered within
        :data:`PREFLIGHT_LIST_S` seconds. A refused connection or unknown host, a timeout, a
        refused key (401/403), another 4xx, or an answer that is not JSON (a web page: the URL is
        wrong) is a ConfigError; 429 and 5xx pass (the server is there; the run retries those).

        ``constraint`` (a :class:`~callbench.constrain.protocol.Constraint`, e.g. the first
        sample's, whose ``server_body()`` gives the request form, or True for the current vLLM
        form): one request whose body carries those fields with the grammar
        swapped for one that allows only :data:`GRAMMAR_PROBE`; an answer other than that marker
        (or a prefix of it cut by the token limit) means the server ignored the grammar.

        Replicas: each is checked; one that is not there (:class:`Unreachable`) is taken out (the
        run starts on the others and probes it after the cool-down), unless none is there; any
        other refusal (a key, a grammar ignored) by any replica is the run's ConfigError.
        """
        if self._pool is not None:
            await self._preflight_replicas(constraint)
            return
        aiohttp = _aiohttp()
        proxied = any(os.environ.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"))
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(self.timeout, PREFLIGHT_CONNECT_S))
        headers = {"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"}
        async with aiohttp.ClientSession(headers=headers, timeout=timeout, trust_env=proxied) as http:
            status, body = await self._preflight_call(http, "GET", "models", None, PREFLIGHT_LIST_S)
            if status == 404:  # some proxies and servers have no /models: ask for one token instead
                path = self._answer_path()
                status, body = await self._preflight_call(http, "POST", path, self._probe_params(1, None), PREFLIGHT_ANSWER_S)
                if status == 404:
                    raise ConfigError(
                        f"{self.identity}: no OpenAI-compatible API there (HTTP 404 for /models and /{path}); "
                        "check the URL (it usually ends in /v1)"
                    )
            self._preflight_status(status, body, "a test request")
            if constraint is not None:
                await self._grammar_probe(http, constraint)

    async def _preflight_replicas(self, constraint: Constraint | bool | None) -> None:
        pool = self._pool
        outcomes = await asyncio.gather(*(r.backend.preflight(constraint) for r in pool.replicas), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, Unreachable):
                raise outcome
        missing = [(r, o) for r, o in zip(pool.replicas, outcomes, strict=True) if isinstance(o, Unreachable)]
        if len(missing) == len(pool.replicas):
            raise Unreachable(f"{self.identity}: no replica answers (first: {missing[0][1]})")
        for r, exc in missing:
            pool.take_out(r, str(exc))

    def _answer_path(self) -> str:
        return "chat/completions" if self.mode == "chat" else "completions"

    def _probe_params(self, max_tokens: int, fields: dict[str, Any] | None) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "temperature": 0.0}
        if self.mode == "chat":
            params["messages"] = [{"role": "user", "content": "Reply with one word."}]
        else:
            params["prompt"] = "Reply with one word:"
        extra_body = dict(self.extra_body or {})
        extra_body.update(fields or {})
        params.update(extra_body)
        return params

    async def _preflight_call(self, http: Any, method: str, path: str, params: dict[str, Any] | None, deadline: float) -> tuple[int, Any]:
        """``(status, decoded body)`` of one request, or a one-line ConfigError (no retries)."""
        aiohttp = _aiohttp()
        deadline = min(self.timeout, deadline)
        url = f"{self.base_url}/{path}"

        async def call() -> tuple[int, Any, str]:
            data = json.dumps(params).encode() if params is not None else None
            async with http.request(method, url, data=data) as response:
                return response.status, await response.read(), response.headers.get("content-type", "?")

        try:
            status, raw, ctype = await asyncio.wait_for(call(), timeout=deadline)
        except TimeoutError as exc:
            raise Unreachable(
                f"{self.identity}: no answer from {method} /{path} within {deadline:g} s; is the server up and reachable?"
            ) from exc
        except aiohttp.ClientConnectorError as exc:  # refused, unknown host, unreachable network
            raise Unreachable(f"{self.identity}: {self._describe(exc)}; is the server running?") from exc
        except aiohttp.ClientError as exc:  # dropped, reset, not HTTP
            raise Unreachable(
                f"{self.identity}: {method} /{path} failed ({type(exc).__name__}: {one_line(str(exc), 120)}); "
                "is this an OpenAI-compatible server?"
            ) from exc
        try:
            body: Any = json.loads(raw)
        except (ValueError, RecursionError):
            if status < 300:
                text = one_line(raw[:400].decode("utf-8", errors="replace"), 80)
                raise ConfigError(
                    f"{self.identity}: {method} /{path} answered {ctype.split(';')[0]}, not JSON ({text!r}): "
                    "not an OpenAI-compatible API; check the URL (it usually ends in /v1)"
                ) from None
            body = raw[:2000].decode("utf-8", errors="replace")
        return status, body

    def _preflight_status(self, status: int, body: Any, what: str) -> None:
        """ConfigError for an answer that says the run cannot work (401/403, other 4xx)."""
        if status < 400 or status == 429 or status >= 500:
            return  # the server is there; a busy or failing one is the run's retries' business
        detail = self._describe(HTTPStatusError(status, body, {}))
        if status in (401, 403):
            raise ConfigError(
                f"{self.identity}: the server refused the API key ({detail}); "
                "set OPENAI_API_KEY or --model-arg api_key=..."
            )
        raise ConfigError(f"{self.identity}: the server refused {what} ({detail})")

    async def _grammar_probe(self, http: Any, constraint: Constraint | bool) -> None:
        # True: no constraint object yet, so the current vLLM form
        body = None if isinstance(constraint, bool) else require_constraint(constraint, self.identity).server_body()
        fields = _probe_fields(body)
        path = self._answer_path()
        status, body = await self._preflight_call(http, "POST", path, self._probe_params(32, fields), PREFLIGHT_ANSWER_S)
        hint = "constrained decoding over openai: needs a vLLM server started with --structured-outputs-config.backend guidance"
        if status >= 300:
            detail = self._describe(HTTPStatusError(status, body, {}))
            raise ConfigError(f"{self.identity}: the server refused a request with a grammar ({detail}); {hint}")
        try:
            choice = _check_reply(body, self.mode, False)
        except MalformedResponse as exc:
            raise ConfigError(f"{self.identity}: the answer to a request with a grammar is malformed ({exc})") from None
        text = choice["message"].get("content") if self.mode == "chat" else choice.get("text")
        text = text or ""
        cut = choice.get("finish_reason") == "length" and text and GRAMMAR_PROBE.startswith(text)
        if text != GRAMMAR_PROBE and not cut:
            raise ConfigError(
                f"{self.identity}: the server ignored the grammar: asked for exactly {GRAMMAR_PROBE!r}, "
                f"it answered {one_line(text, 80)!r}; {hint}"
            )

    async def aclose(self) -> None:
        if self._pool is not None:
            await self._pool.aclose()
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.close()
            except RuntimeError:  # bound to a loop that is already closed: nothing left to release
                pass


def _probe_fields(body: Any) -> dict[str, Any]:
    """The constraint's request fields with every grammar swapped for :data:`PROBE_LARK` (the
    current vLLM form when there is no constraint body or it carries no grammar)."""
    from callbench.constrain.vllm import vllm_extra_body, vllm_grammar_text

    found = False

    def swap(value: Any, key: str | None = None) -> Any:
        nonlocal found
        if key in ("grammar", "guided_grammar") and isinstance(value, str):
            found = True
            return vllm_grammar_text(PROBE_LARK)
        if isinstance(value, dict):
            return {k: swap(v, k) for k, v in value.items()}
        return value

    out = swap(body) if isinstance(body, dict) else None
    return out if found and isinstance(out, dict) else vllm_extra_body(PROBE_LARK)


def _tool_calls(message: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The function tool calls of a chat message as ``{"id", "name", "arguments"}`` (None: none)."""
    calls = message.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):  # a non-function tool (e.g. "custom"): nothing a track can execute
            continue
        arguments = function.get("arguments")
        if arguments is None:
            arguments = ""
        elif not isinstance(arguments, str):  # a server that sends an object instead of its JSON text
            arguments = json.dumps(arguments, ensure_ascii=False)
        out.append({"id": call.get("id"), "name": function.get("name"), "arguments": arguments})
    return out or None


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    return read_options("openai", options, OPTIONS)


@register_model("openai", check=_check_options)
def _factory(target: str, options: dict[str, Any]) -> OpenAICompatBackend:
    opts = _check_options(options)  # a typo is said before a missing extra
    _aiohttp()  # a missing extra is said now, not at the first request
    model, base_url = parse_target(target)
    return OpenAICompatBackend(model, base_url, **opts)
