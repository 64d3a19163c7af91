"""``llamacpp:PATH.gguf`` or ``llamacpp:default`` — a GGUF model run in-process by llama-cpp-python.

Why in-process rather than llama.cpp's HTTP server: constrained decoding needs the logits at every
step, and the llama-cpp-python API hands them to a ``logits_processor`` callback. The backend is
therefore ``steerable``; a track's constraint object opts in by providing
``llamacpp_logits_processor(llama) -> callable(input_ids, scores) -> scores``.

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

from callbench.errors import CallbenchError, ConfigError, MissingExtraError
from callbench.models._options import Opt, read_options
from callbench.models.base import GenerationConfig, Mode, ModelBackend, ModelInput, ModelOutput
from callbench.models.registry import register_model

OPTIONS: dict[str, Opt] = {
    "mode": Opt(str, "completion"),
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
    """A local GGUF model; completion mode by default, chat mode uses the GGUF's chat template."""

    name = "llamacpp"
    modes: tuple[Mode, ...] = ("completion", "chat")
    max_concurrency = 1
    steerable = True

    def __init__(
        self,
        path: Path,
        *,
        mode: Mode | None = None,
        n_ctx: int = 4096,
        n_threads: int = 1,
        n_gpu_layers: int = 0,
        seed: int = 0,
        verbose: bool = False,
        note: str | None = None,
    ):
        super().__init__(mode)
        llama_cpp = _import_llama_cpp()
        path = Path(path).expanduser()
        if not path.is_file():
            raise ConfigError(f"model 'llamacpp:{path}': no such GGUF file")
        if n_ctx < 16 or n_threads < 1:
            raise ConfigError(f"model 'llamacpp:{path}': need n_ctx >= 16 and n_threads >= 1")
        self._llama_cpp = llama_cpp
        self.path = path
        self.n_ctx = n_ctx
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

    @property
    def identity(self) -> str:
        return f"llamacpp:{self.path.name}[{self.mode}]"

    @property
    def llama(self) -> Any:
        """The underlying ``llama_cpp.Llama`` (for constraint builders that need its vocabulary)."""
        return self._llama

    def _logits_processors(self, inp: ModelInput) -> Any:
        if inp.constraint is None:
            return None
        hook = getattr(inp.constraint, "llamacpp_logits_processor", None)
        if not callable(hook):
            # Running unconstrained while the caller believes otherwise would corrupt a comparison.
            raise ConfigError(
                f"{self.identity}: constraint {type(inp.constraint).__name__} has no llamacpp_logits_processor()"
            )
        return self._llama_cpp.LogitsProcessorList([hook(self._llama)])

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
            "logits_processor": self._logits_processors(inp),
        }
        with self._lock:
            started = time.perf_counter()
            try:
                if self.mode == "chat":
                    result = self._llama.create_chat_completion(messages=inp.messages, **params)
                else:
                    result = self._llama.create_completion(inp.prompt, **params)
            except ValueError as exc:
                if "context window" in str(exc):
                    raise ConfigError(
                        f"{self.identity}: prompt too long for n_ctx={self.n_ctx} ({exc})"
                    ) from exc
                raise CallbenchError(f"{self.identity}: generation failed: {exc}") from exc
            latency = time.perf_counter() - started
        choice = result["choices"][0]
        if self.mode == "chat":
            text = choice["message"].get("content") or ""
        else:
            text = choice.get("text") or ""
        usage = result.get("usage") or {}
        return ModelOutput(
            text=text,
            mode=self.mode,
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=latency,
            finish_reason=choice.get("finish_reason"),
            extra={"constrained": inp.constraint is not None},
        )

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        return await asyncio.to_thread(self._run, inp, config)

    async def aclose(self) -> None:
        llama, self._llama = getattr(self, "_llama", None), None
        if llama is not None and hasattr(llama, "close"):
            llama.close()


@register_model("llamacpp")
def _factory(target: str, options: dict[str, Any]) -> LlamaCppBackend:
    _import_llama_cpp()
    opts = read_options("llamacpp", options, OPTIONS)
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
