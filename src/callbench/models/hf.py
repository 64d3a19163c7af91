"""``hf:PATH`` — a Hugging Face causal LM (or encoder-decoder) loaded in-process from a local
directory with transformers.

Why this backend exists next to llama.cpp: it runs any architecture transformers knows, in full
precision, and on a GPU when there is one; and like llama.cpp it exposes logits, so constrained
decoding can plug in a ``transformers.LogitsProcessor`` (a track's constraint, a
:class:`~callbench.constrain.protocol.Constraint`, builds it: ``processor("hf", tokenizer)``).

One model instance serves one call at a time (``max_concurrency = 1``), but a runner that has many
inputs ready can call :meth:`HFBackend.generate_batch`, which pads on the left (decoder-only models
continue from the last position, so padding must not sit between prompt and continuation) and
decodes a whole batch in one ``generate`` call. Each constrained row gets its own processor, and
that processor sees only its own row with the padding stripped, so it behaves identically batched
or alone. Greedy decoding (temperature 0) is deterministic.

Encoder-decoder checkpoints (``config.is_encoder_decoder``: T5, CodeT5+ 220M/770M, BART, ...) load
with ``AutoModelForSeq2SeqLM``. The prompt (the completion prompt, or the rendered chat template in
chat mode) is the *encoder's* input, and the decoder writes the answer from its
``decoder_start_token_id``: that is how CodeT5+ completes code (the code prefix goes in, the
continuation comes out of the decoder; its model cards call ``generate`` on the encoded prefix
alone). The decoder's output is therefore the continuation of the prompt, as for a causal model.
The CodeT5+ 2B-16B checkpoints, which also prefill the decoder with the prompt, ship custom code
(``trust_remote_code``), which this backend does not run. Encoder inputs are padded on the right
(an encoder sees the whole input at once; models with absolute positions, like BART, expect it).
Token healing is a decoder-only notion (the prompt's last token is what the model continues), so a
seq2seq model is never healed: the decoder starts at a token boundary anyway, and ``heal_boundary``
is ignored. A grammar constraint constrains the decoder from its first generated token; its
processor never sees the decoder start token (the torch adapter learns the width of what precedes
the generated tokens at its first call, which here is that one token).

Only local directories are accepted: downloading weights is a separate, explicit step.
"""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from callbench.constrain.protocol import require_constraint
from callbench.errors import ConfigError, MissingExtraError
from callbench.models._options import Opt, read_options
from callbench.models.base import GenerationConfig, Mode, ModelBackend, ModelInput, ModelOutput
from callbench.models.healing import (
    Healing,
    PrefixState,
    TorchPrefixProcessor,
    heal_prompt,
    hf_token_bytes,
    prefix_table,
    strip_healed,
)
from callbench.models.registry import register_model

OPTIONS: dict[str, Opt] = {
    # "auto": the tokenizer's chat template (with the track's prefilled answer start) when the
    # track asks for it (web API) and the tokenizer has one; completion otherwise.
    "mode": Opt(str, "auto", choices=("auto", "chat", "completion")),
    # Back the prompt up to a token boundary and regenerate the removed text (inputs that ask).
    "token_healing": Opt(bool, True),
    # "auto": CUDA when available, else CPU.
    "device": Opt(str, "auto"),
    # "auto": float32 on CPU, the checkpoint's own dtype on an accelerator.
    "dtype": Opt(str, "auto"),
    # Largest number of inputs decoded together by generate_batch.
    "batch_size": Opt(int, 8),
}


def _import_stack() -> tuple[Any, Any]:
    try:
        import torch
    except ImportError as exc:
        raise MissingExtraError("torch", "hf") from exc
    try:
        import transformers
    except ImportError as exc:
        raise MissingExtraError("transformers", "hf") from exc
    return torch, transformers


class HFBackend(ModelBackend):
    """A local transformers checkpoint; completion by default, chat via the tokenizer's template."""

    name = "hf"
    modes: tuple[Mode, ...] = ("completion", "chat")
    max_concurrency = 1
    steerable = True

    def __init__(
        self,
        path: Path,
        *,
        mode: Mode | str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        token_healing: bool = True,
    ):
        #: True when the mode was left to the backend ("auto"): see :meth:`prefer_chat_template`.
        self.auto_mode = mode in (None, "auto")
        super().__init__(None if self.auto_mode else mode)  # type: ignore[arg-type]
        self.token_healing = token_healing
        torch, transformers = _import_stack()
        path = Path(path).expanduser()
        if not path.is_dir():
            raise ConfigError(f"model 'hf:{path}': not a local model directory")
        if batch_size < 1:
            raise ConfigError(f"model 'hf:{path}': batch_size must be >= 1, got {batch_size}")
        self._torch = torch
        self._transformers = transformers
        self.path = path
        self.batch_size = batch_size
        self.dtype_name = dtype
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        if dtype == "auto":
            torch_dtype: Any = torch.float32 if self.device == "cpu" else "auto"
        else:
            torch_dtype = getattr(torch, dtype, None)
            if not isinstance(torch_dtype, torch.dtype):
                raise ConfigError(f"model 'hf:{path}': unknown dtype '{dtype}' (e.g. float32, bfloat16)")
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
            model_config = transformers.AutoConfig.from_pretrained(path)
            #: An encoder-decoder checkpoint: the prompt goes to the encoder, the decoder answers.
            self.is_encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))
            auto = transformers.AutoModelForSeq2SeqLM if self.is_encoder_decoder else transformers.AutoModelForCausalLM
            self.model = auto.from_pretrained(path, dtype=torch_dtype)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"model 'hf:{path}': cannot load ({' '.join(str(exc).split())[:300]})") from exc
        self.model.to(self.device).eval()
        if self.mode == "chat" and not getattr(self.tokenizer, "chat_template", None):
            raise ConfigError(
                f"model 'hf:{path}': mode 'chat' needs a tokenizer chat template, and it has none"
            )
        # Decoder-only: left padding, so every row continues from the last column. Encoder input:
        # right padding, the usual layout (the decoder has no padding; it starts from one token).
        self.tokenizer.padding_side = "right" if self.is_encoder_decoder else "left"
        if self.is_encoder_decoder:
            # Nothing to heal: the answer starts fresh in the decoder (see the module docstring).
            self.token_healing = False
            if self.model.generation_config.decoder_start_token_id is None and getattr(
                self.model.config, "decoder_start_token_id", None
            ) is None:
                raise ConfigError(f"model 'hf:{path}': encoder-decoder model without a decoder_start_token_id")
        if self.tokenizer.pad_token is None:
            # Left padding is masked out, so any token will do; EOS is the conventional choice.
            self.tokenizer.pad_token = self.tokenizer.eos_token
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        # Tokens that end a row's continuation: EOS, or the pad generate fills finished rows with.
        self._end_ids = self._eos_ids | {self.tokenizer.pad_token_id}
        self._lock = threading.Lock()

    def prefer_chat_template(self) -> None:
        """For a track that prompts instruct models through their chat template: switch an
        ``auto`` backend to chat mode when the tokenizer has a template."""
        if self.auto_mode and getattr(self.tokenizer, "chat_template", None):
            self.mode = "chat"

    @property
    def identity(self) -> str:
        tags = [self.mode] + (["seq2seq"] if self.is_encoder_decoder else []) + (["heal"] if self.token_healing else [])
        return f"hf:{self.path.name}[{','.join(tags)}]"

    @property
    def identity_options(self) -> dict[str, Any]:
        """What changes the answers besides the directory name and mode: token healing, the device
        and dtype (other numerics, other greedy ties) and the batch size (rows decoded together
        are left-padded to one width)."""
        return {"token_healing": self.token_healing, "device": self.device, "dtype": self.dtype_name, "batch_size": self.batch_size}

    # -- building a batch -------------------------------------------------------------------------

    def _text_for(self, inp: ModelInput) -> str:
        if self.mode == "chat":
            messages = inp.template_messages or inp.messages
            text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            # A prefilled answer (the web API starter) makes the output a continuation of it.
            return text + (inp.assistant_prefix or "")
        return inp.prompt

    def _prompt_ids(self, inp: ModelInput, text: str | None = None) -> tuple[list[int], Healing | None]:
        """The prompt's token ids (``text``: :meth:`_text_for`, when the caller has it already)."""
        text = text if text is not None else self._text_for(inp)
        # A chat template already contains any BOS the model wants; do not add a second one.
        ids = self.tokenizer(text, add_special_tokens=self.mode != "chat")["input_ids"]
        free_answer = self.mode == "chat" and inp.assistant_prefix is None  # a new turn: no open boundary
        if not (inp.heal_boundary and self.token_healing) or free_answer:  # never for seq2seq (healing off)
            return list(ids), None
        table = self._prefix_table()
        special = set(getattr(self.tokenizer, "all_special_ids", []) or [])
        healing = heal_prompt(ids, lambda i: table.token_bytes[i] if i < table.size else b"", special=special)
        return healing.ids, healing

    def _prefix_table(self) -> Any:
        return prefix_table(self.tokenizer, lambda: hf_token_bytes(self.tokenizer))

    def _row_processor(self, inp: ModelInput, healing: Healing | None, max_tokens: int) -> Any:
        heal = healing.text if healing is not None else ""
        if inp.constraint is not None:
            # A grammar constraint masks torch logits through the adapter this backend picks; it
            # registers itself with the engine on import (the engine knows no adapter).
            import callbench.constrain.adapters.torch_adapter  # noqa: F401

            constraint = require_constraint(inp.constraint, self.identity)
            return constraint.processor("hf", self.tokenizer, heal=heal, max_tokens=max_tokens)
        if heal:
            return TorchPrefixProcessor(PrefixState(self._prefix_table(), healing.prefix))
        return None

    def _generation_kwargs(self, config: GenerationConfig, max_new_tokens: int) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new_tokens,
            "pad_token_id": self.tokenizer.pad_token_id,
        }
        if config.temperature > 0:
            # top_k=0 switches off transformers' default top-k so sampling means what it means on
            # an OpenAI server: temperature and nucleus only.
            kwargs.update(do_sample=True, temperature=config.temperature, top_p=config.top_p, top_k=0)
        else:
            # Clear sampling knobs a checkpoint's generation_config may set, so greedy is plain greedy.
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if config.stop or config.stop_kept:
            kwargs.update(stop_strings=list(config.stop) + list(config.stop_kept), tokenizer=self.tokenizer)
        return kwargs

    def _run_batch(self, inputs: list[ModelInput], config: GenerationConfig) -> list[ModelOutput]:
        torch = self._torch
        texts = [self._text_for(inp) for inp in inputs]
        prompts = [self._prompt_ids(inp, text) for inp, text in zip(inputs, texts, strict=True)]
        enc = self.tokenizer.pad({"input_ids": [ids for ids, _ in prompts]}, return_tensors="pt", padding=True)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        width = enc["input_ids"].shape[1]
        lengths = enc["attention_mask"].sum(dim=1).tolist()
        limit = getattr(self.model.config, "max_position_embeddings", None) or getattr(
            self.model.config, "n_positions", None
        )
        max_new = config.max_tokens
        if self.is_encoder_decoder:
            # generate's output is the decoder's sequence: the start token, then the answer.
            start = 1
            # Encoder and decoder each have the positions when they are absolute (BART); T5's
            # relative positions have no hard limit (its configs' n_positions is advisory).
            if limit is not None and not self._relative_positions():
                if width > limit:
                    raise ConfigError(
                        f"{self.identity}: prompt of {width} tokens does not fit the encoder ({limit})"
                    )
                max_new = min(max_new, limit - start)
        else:
            start = width
            if limit is not None:
                if width >= limit:
                    raise ConfigError(
                        f"{self.identity}: prompt of {width} tokens does not fit the model ({limit})"
                    )
                max_new = min(max_new, limit - width)
        kwargs = self._generation_kwargs(config, max_new)
        # Built once the budget is known: a constraint closes its call within max_new tokens.
        processors = [self._row_processor(inp, h, max_new) for inp, (_, h) in zip(inputs, prompts, strict=True)]
        if any(p is not None for p in processors):
            # A decoder-only row is the prompt (left-padded) plus what it generated; a seq2seq row
            # is the decoder's own sequence, which has no padding.
            pads = [0] * len(lengths) if self.is_encoder_decoder else [width - n for n in lengths]
            row_proc = _RowProcessors(processors, pads, self._end_ids, start)
            kwargs["logits_processor"] = self._transformers.LogitsProcessorList([row_proc])

        with self._lock:
            started = time.perf_counter()
            if config.temperature > 0:
                torch.manual_seed(config.seed)
            with torch.inference_mode():
                out = self.model.generate(**enc, **kwargs)
            elapsed = time.perf_counter() - started

        results = []
        for i in range(len(inputs)):
            generated = out[i, start:].tolist()
            n_real = next((k for k, tok in enumerate(generated) if tok in self._end_ids), len(generated))
            ended_by_eos = n_real < len(generated)
            text = self.tokenizer.decode(generated[:n_real], skip_special_tokens=True)
            healing = prompts[i][1]
            text = strip_healed(text, healing)
            cut = min((text.find(s) for s in config.stop if s and s in text), default=-1)
            if cut >= 0:
                text = text[:cut]
                finish = "stop"
            else:
                finish = "stop" if ended_by_eos else "length"
            extra: dict[str, Any] = {
                "batch_size": len(inputs),
                "batch_latency_s": elapsed,
                "constrained": inputs[i].constraint is not None,
                "prompt_format": "completion"
                if self.mode == "completion"
                else ("chat-prefill" if inputs[i].assistant_prefix is not None else "chat"),
            }
            if self.mode == "chat":
                extra["prompt_sent"] = texts[i]
                if inputs[i].assistant_prefix is None:
                    ids = prompts[i][0]
                    extra["prompt_decoded"] = self.tokenizer.decode(ids, skip_special_tokens=True)
            if self.is_encoder_decoder:
                extra["encoder_decoder"] = True
            if healing is not None and healing.prefix:
                extra["token_healing"] = healing.as_record()
            results.append(
                ModelOutput(
                    text=text,
                    # A prefilled chat answer continues the starter, like a completion.
                    mode="completion" if (self.mode == "completion" or inputs[i].assistant_prefix is not None) else "chat",
                    prompt_tokens=int(lengths[i]),
                    completion_tokens=n_real + (1 if ended_by_eos and cut < 0 else 0),
                    # Amortised: summing latency_s over samples gives the real wall time.
                    latency_s=elapsed / len(inputs),
                    finish_reason=finish,
                    extra=extra,
                )
            )
        return results

    def _relative_positions(self) -> bool:
        """True for models whose positions are relative (T5 and its descendants, CodeT5+)."""
        return getattr(self.model.config, "relative_attention_num_buckets", None) is not None

    def _run_all(self, inputs: list[ModelInput], config: GenerationConfig) -> list[ModelOutput]:
        outputs: list[ModelOutput] = []
        for start in range(0, len(inputs), self.batch_size):
            outputs.extend(self._run_batch(inputs[start : start + self.batch_size], config))
        return outputs

    # -- protocol ---------------------------------------------------------------------------------

    async def generate(self, inp: ModelInput, config: GenerationConfig) -> ModelOutput:
        return (await asyncio.to_thread(self._run_all, [inp], config))[0]

    async def generate_batch(self, inputs: list[ModelInput], config: GenerationConfig) -> list[ModelOutput]:
        """Answer several inputs with one padded ``generate`` call per ``batch_size`` chunk."""
        if not inputs:
            return []
        return await asyncio.to_thread(self._run_all, list(inputs), config)

    async def aclose(self) -> None:
        self.model = None  # drop the weights; a GPU cache would be freed with them
        if self.device.startswith("cuda"):
            self._torch.cuda.empty_cache()


class _RowProcessors:
    """Applies each row's own logits processor to that row alone, without its left padding.

    ``width``: the column where generated tokens start (the padded prompt width for a decoder-only
    model; 1, after the decoder start token, for an encoder-decoder model).

    A constraint processor is written for one sequence (prompt + what it generated so far). Here it
    is called with exactly that, batched or not. Rows that already ended (an EOS/pad token appears in
    their continuation) are skipped: generate keeps scoring them, but their tokens are discarded.
    (``LogitsProcessorList`` accepts any callable with this signature.)
    """

    def __init__(self, processors: list[Any], pads: list[int], end_ids: set[int], width: int):
        self.processors = processors
        self.pads = pads
        self.end_ids = end_ids
        self.width = width

    def __call__(self, input_ids, scores):
        for i, proc in enumerate(self.processors):
            if proc is None:
                continue
            if any(tok in self.end_ids for tok in input_ids[i, self.width :].tolist()):
                continue
            scores[i : i + 1] = proc(input_ids[i : i + 1, self.pads[i] :], scores[i : i + 1])
        return scores


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    return read_options("hf", options, OPTIONS)


@register_model("hf", check=_check_options)
def _factory(target: str, options: dict[str, Any]) -> HFBackend:
    opts = _check_options(options)  # a typo is said before a missing extra
    _import_stack()
    target = target.strip()
    if not target:
        raise ConfigError("model 'hf': missing target (expected hf:/path/to/model_dir)")
    return HFBackend(Path(target), **opts)
