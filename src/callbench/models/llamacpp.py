"""``llamacpp:PATH.gguf`` or ``llamacpp:default`` — a GGUF model run in-process by llama-cpp-python.

Why in-process rather than llama.cpp's HTTP server: constrained decoding needs the logits at every
step, and the llama-cpp-python API hands them to a ``logits_processor`` callback. The backend is
therefore ``steerable``; a track's constraint (a :class:`~callbench.constrain.protocol.Constraint`)
builds that callback: ``processor("llamacpp", llama) -> callable(input_ids, scores) -> scores``.

One model instance is not thread-safe and one generation already uses the cores it was given, so
``max_concurrency`` is 1: the blocking call runs in a worker thread (keeping the event loop free)
under a lock. ``default`` resolves to the embedded default model (see :mod:`default_model`).

Build note: a stock llama-cpp-python build can crash in ggml's AMX kernels on some CPUs at the first
token; build it with ``CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from callbench.constrain.protocol import require_constraint
from callbench.errors import CallbenchError, ConfigError, MissingExtraError
from callbench.models._options import Opt, read_options
from callbench.models.base import GenerationConfig, Mode, ModelBackend, ModelInput, ModelOutput
from callbench.models.healing import (
    Healing,
    LlamaCppPrefixProcessor,
    PrefixState,
    heal_prompt,
    llama_token_bytes,
    prefix_table,
    strip_healed,
)
from callbench.models.registry import register_model

OPTIONS: dict[str, Opt] = {
    # "auto": the chat template (with the track's prefilled answer start) for a GGUF that carries
    # one when the track asks for it (web API), completion otherwise; see docs/webapi-prompts.md.
    "mode": Opt(str, "auto", choices=("auto", "chat", "completion")),
    # Back the prompt up to a token boundary and regenerate the removed text (inputs that ask).
    "token_healing": Opt(bool, True),
    "n_ctx": Opt(int, 4096),
    # One thread beat two on the 2-core reference machine (the second core serves the event loop,
    # the sandbox and the OS); raise it on bigger machines.
    "n_threads": Opt(int, 1),
    "n_gpu_layers": Opt(int, 0),
    "seed": Opt(int, 0),
    "verbose": Opt(bool, False),
    # Only for ``llamacpp:default``: may the default model be downloaded if it is not cached?
    "allow_download": Opt(bool, True),
}


def _import_llama_cpp():
    try:
        import llama_cpp
    except ImportError as exc:
        raise MissingExtraError("llama-cpp-python", "llamacpp") from exc
    return llama_cpp


class LlamaCppBackend(ModelBackend):
    """A local GGUF model; completion mode by default, chat mode uses the GGUF's chat template.

    Chat mode has two forms. An input with ``assistant_prefix`` (the web API track's starter code)
    is rendered through the GGUF's chat template here and continued from that prefix, so the answer
    is a continuation (``ModelOutput.mode == "completion"``), token healing and constrained decoding
    apply as in completion mode. Other inputs go through llama-cpp-python's chat completion.
    """

    name = "llamacpp"
    modes: tuple[Mode, ...] = ("completion", "chat")
    max_concurrency = 1
    steerable = True

    def __init__(
        self,
        path: Path,
        *,
        mode: Mode | str | None = None,
        n_ctx: int = 4096,
        n_threads: int = 1,
        n_gpu_layers: int = 0,
        seed: int = 0,
        verbose: bool = False,
        note: str | None = None,
        token_healing: bool = True,
    ):
        #: True when the mode was left to the backend ("auto"): see :meth:`prefer_chat_template`.
        self.auto_mode = mode in (None, "auto")
        super().__init__(None if self.auto_mode else mode)  # type: ignore[arg-type]
        self.token_healing = token_healing
        llama_cpp = _import_llama_cpp()
        path = Path(path).expanduser()
        if not path.is_file():
            raise ConfigError(f"model 'llamacpp:{path}': no such GGUF file")
        if n_ctx < 16 or n_threads < 1:
            raise ConfigError(f"model 'llamacpp:{path}': need n_ctx >= 16 and n_threads >= 1")
        self._llama_cpp = llama_cpp
        self.path = path
        self.n_ctx = n_ctx
        self.n_gpu_layers = n_gpu_layers
        #: One line saying which model was picked and why (set for ``llamacpp:default``).
        self.note = note
        try:
            self._llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                n_gpu_layers=n_gpu_layers,
                seed=seed,
                verbose=verbose,
            )
        except ValueError as exc:  # llama-cpp-python reports an unreadable model as ValueError
            raise ConfigError(f"model 'llamacpp:{path}': cannot load ({exc})") from exc
        self._lock = threading.Lock()
        #: The GGUF's chat template (metadata ``tokenizer.chat_template``), if it has one.
        self.chat_template: str | None = (getattr(self._llama, "metadata", None) or {}).get("tokenizer.chat_template")
        self._formatter: Any = None
        if self.mode == "chat" and not self.chat_template:
            raise ConfigError(f"model 'llamacpp:{path}': mode 'chat' needs a chat template in the GGUF, and it has none")

    def prefer_chat_template(self) -> None:
        """For a track that prompts instruct models through their chat template: switch an
        ``auto`` backend to chat mode when the GGUF carries a template (base models stay in
        completion mode)."""
        if self.auto_mode and self.chat_template:
            self.mode = "chat"

    @property
    def identity(self) -> str:
        tags = [self.mode] + (["heal"] if self.token_healing else [])
        return f"llamacpp:{self.path.name}[{','.join(tags)}]"

    @property
    def identity_options(self) -> dict[str, Any]:
        """What changes the answers besides the file name and mode: the GGUF itself (its size, a
        cheap stand-in for hashing gigabytes), token healing, the context (a prompt past it fails or
        is cut) and GPU offload (other kernels, other greedy ties). Threads, seed (each request sends
        its own) and verbosity do not."""
        try:
            size: int | None = self.path.stat().st_size
        except OSError:
            size = None
        return {"gguf_bytes": size, "token_healing": self.token_healing, "n_ctx": self.n_ctx, "n_gpu_layers": self.n_gpu_layers}

    @property
    def llama(self) -> Any:
        """The underlying ``llama_cpp.Llama`` (for constraint builders that need its vocabulary)."""
        return self._llama

    def _logits_processors(self, inp: ModelInput, healing: Healing | None, max_tokens: int) -> Any:
        heal = healing.text if healing is not None else ""
        if inp.constraint is not None:
            # A grammar constraint masks numpy logits through the adapter this backend picks; it
            # registers itself with the engine on import (the engine knows no adapter).
            import callbench.constrain.adapters.numpy_adapter  # noqa: F401

            constraint = require_constraint(inp.constraint, self.identity)
            processor = constraint.processor("llamacpp", self._llama, heal=heal, max_tokens=max_tokens)
            return self._llama_cpp.LogitsProcessorList([processor])
        if heal:
            state = PrefixState(self._prefix_table(), healing.prefix)
            return self._llama_cpp.LogitsProcessorList([LlamaCppPrefixProcessor(state)])
        return None

    def _prefix_table(self) -> Any:
        return prefix_table(self._llama, lambda: llama_token_bytes(self._llama))

    def _render(self, messages: list[dict[str, Any]]) -> str:
        """The GGUF's chat template over ``messages``, as llama-cpp-python's chat path renders it
        (the same template, formatter and tokens)."""
        return self._chat_formatter()(messages=messages).prompt

    def _rendered_chat(self, inp: ModelInput) -> str:
        """The template over the input's template conversation, followed by the prefilled answer
        start (if any)."""
        return self._render(inp.template_messages or inp.messages) + (inp.assistant_prefix or "")

    def _render_quietly(self, messages: list[dict[str, Any]]) -> str | None:
        """:meth:`_render`, for the record only: None where the template cannot render
        ``messages`` here (e.g. turns it does not know)."""
        if not self.chat_template:
            return None
        try:
            return self._render(messages)
        except Exception:  # noqa: BLE001 - only the record is lost, never the answer
            return None

    def _prompt_ids(self, inp: ModelInput, rendered: str | None = None) -> list[int]:
        """The prompt as token ids, as llama-cpp-python would build them; in chat mode the GGUF's
        template rendered here, followed by the prefilled answer start (``rendered``, when the
        caller has it already)."""
        llama = self._llama
        if self.mode == "chat":
            text = rendered if rendered is not None else self._rendered_chat(inp)
            # The rendered template holds the BOS the model wants (as llama-cpp-python's chat path).
            return llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        bos = llama.token_bos()
        ids = [bos] if bos != -1 and llama._model.add_bos_token() else []
        return ids + llama.tokenize(inp.prompt.encode("utf-8"), add_bos=False, special=True)

    def _chat_formatter(self) -> Any:
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            llama = self._llama
            eos, bos = llama.token_eos(), llama.token_bos()
            self._formatter = Jinja2ChatFormatter(
                template=self.chat_template or "",
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                add_generation_prompt=True,
            )
        return self._formatter

    def _run(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        params: dict[str, Any] = {
            "max_tokens": config.max_tokens,
            "temperature": config.temperature,  # 0 selects llama.cpp's greedy sampler
            "top_p": config.top_p,
            # Disable llama.cpp's extra samplers so sampling means what it means on an OpenAI server.
            "top_k": 0,
            "min_p": 0.0,
            "repeat_penalty": 1.0,
            "stop": list(config.stop),
            "seed": config.seed,
        }
        if config.stop_kept:
            params["stopping_criteria"] = self._llama_cpp.StoppingCriteriaList([_KeptStop(self._llama, config.stop_kept)])
        # Chat inputs without a prefilled answer go through llama-cpp-python's own chat path,
        # unless they bring their own template conversation: that one is rendered here (so what
        # was sent can be recorded) and answered freely.
        free_chat = self.mode == "chat" and inp.assistant_prefix is None
        via_chat_api = free_chat and inp.template_messages is None
        healing: Healing | None = None
        extra: dict[str, Any] = {"constrained": inp.constraint is not None}
        with self._lock:
            started = time.perf_counter()
            try:
                if via_chat_api:
                    params["logits_processor"] = self._logits_processors(inp, None, config.max_tokens)
                    result = self._llama.create_chat_completion(messages=inp.messages, **params)
                    sent = self._render_quietly(inp.messages)
                    if sent is not None:
                        extra["prompt_sent"] = sent
                else:
                    if self.mode == "chat":
                        extra["prompt_sent"] = self._rendered_chat(inp)
                    ids = self._prompt_ids(inp, extra.get("prompt_sent"))
                    if free_chat:
                        detok = self._llama.detokenize(ids, special=False)
                        extra["prompt_decoded"] = detok.decode("utf-8", errors="replace")
                    # A free answer starts a new turn: there is no open boundary to heal.
                    elif inp.heal_boundary and self.token_healing:
                        table = self._prefix_table()
                        healing = heal_prompt(ids, lambda i: table.token_bytes[i] if i < table.size else b"")
                    prompt_ids = healing.ids if healing is not None else ids
                    if len(prompt_ids) + 1 > self.n_ctx:
                        raise ValueError(f"Requested tokens ({len(prompt_ids)}) exceed context window of {self.n_ctx}")
                    params["logits_processor"] = self._logits_processors(inp, healing, config.max_tokens)
                    result = self._llama.create_completion(prompt_ids, **params)
            except ValueError as exc:
                if "context window" in str(exc):
                    raise ConfigError(
                        f"{self.identity}: prompt too long for n_ctx={self.n_ctx} ({exc})"
                    ) from exc
                raise CallbenchError(f"{self.identity}: generation failed: {exc}") from exc
            latency = time.perf_counter() - started
        choice = result["choices"][0]
        if via_chat_api:
            text = choice["message"].get("content") or ""
        else:
            text = strip_healed(choice.get("text") or "", healing)
        usage = result.get("usage") or {}
        extra["prompt_format"] = "chat" if free_chat else ("chat-prefill" if self.mode == "chat" else "completion")
        if healing is not None and healing.prefix:
            extra["token_healing"] = healing.as_record()
        return ModelOutput(
            text=text,
            # A prefilled chat answer continues the starter, like a completion.
            mode="chat" if free_chat else "completion",
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            extra=extra,
        )

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        return await asyncio.to_thread(self._run, inp, config)

    async def aclose(self) -> None:
        llama, self._llama = getattr(self, "_llama", None), None
        if llama is not None and hasattr(llama, "close"):
            llama.close()


class _KeptStop:
    """Ends the generation with the token that completes one of ``stops`` (the token stays in the
    answer, as with Hugging Face's ``stop_strings``; llama.cpp's own ``stop`` cuts the string off).
    llama-cpp-python calls it as it samples each token, with the ids evaluated so far (the prompt
    at the first call, then up to the previous token; True drops the token just sampled) and once
    more at the end; only the bytes of ids not seen before are read."""

    def __init__(self, llama: Any, stops: tuple[str, ...]):
        self._llama = llama
        self._stops = [s.encode("utf-8") for s in stops if s]
        self._keep = max((len(s) for s in self._stops), default=1)
        self._seen: int | None = None
        self._tail = b""

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        n = len(input_ids)
        if self._seen is None:  # the first call: the prompt alone
            self._seen = n
        new = [int(t) for t in input_ids[self._seen : n]]
        self._seen = n
        self._tail = (self._tail + self._llama.detokenize(new, special=False))[-(self._keep + 64) :]
        return any(s in self._tail for s in self._stops)


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    return read_options("llamacpp", options, OPTIONS)


@register_model("llamacpp", check=_check_options)
def _factory(target: str, options: dict[str, Any]) -> LlamaCppBackend:
    opts = _check_options(options)  # a typo is said before a missing extra
    _import_llama_cpp()
    allow_download = opts.pop("allow_download")
    target = target.strip()
    if not target:
        raise ConfigError(
            "model 'llamacpp': missing target (expected llamacpp:PATH.gguf or llamacpp:default)"
        )
    note = None
    if target == "default":
        from callbench.models.default_model import resolve_default_gguf

        path, note = resolve_default_gguf(allow_download=allow_download)
    else:
        path = Path(target)
    return LlamaCppBackend(path, note=note, **opts)
