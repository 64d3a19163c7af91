"""Nested answer grammar + label tracker: no over-constraint on the published gold answers, no
under-constraint under biased random walks (GPT-2 vocabulary through the engine)."""

from __future__ import annotations

import glob
import json
import random
import re

import numpy as np
import pytest

pytest.importorskip("llguidance")

from callbench.constrain.engine import GrammarConstraint, vocab_for_lltokenizer  # noqa: E402
from callbench.constrain.label_tracker import check_answer, make_label_tracker  # noqa: E402
from callbench.constrain.nested_grammar import build_nested_grammar, param_kinds  # noqa: E402
from callbench.testing.gpt2 import gpt2_lltokenizer  # noqa: E402
from callbench.tools import ToolSpec  # noqa: E402
from callbench.tracks.nested.dataset import load_nested  # noqa: E402

DATA = "/work/shared/data/nestful"
V2 = [f"{DATA}/v2-samples/toy_data_jan2025_schema.jsonl", f"{DATA}/v2-samples/icl_examples.json"]
V1 = sorted(glob.glob(f"{DATA}/data_v1/*/*-data.json"))
pytestmark = pytest.mark.skipif(not glob.glob(f"{DATA}/v2-samples/*.json*"), reason="no NESTFUL data")


@pytest.fixture(scope="module")
def tok():
    return gpt2_lltokenizer()


def _style(raw: str) -> str:
    m = re.fullmatch(r"(\$?var_?)\d+", raw)
    assert m, raw
    return m.group(1) + "{i}"


def _answer(task) -> list[dict]:
    return [{"name": c.name, "label": c.raw_label, "arguments": c.arguments} for c in task.output]


def _styles(ans: list[dict], rng: random.Random) -> list[str]:
    perm = []
    for c in ans:
        keys = list(c)
        rng.shuffle(keys)
        args = list(c["arguments"].items())
        rng.shuffle(args)
        perm.append({k: (dict(args) if k == "arguments" else c[k]) for k in keys})
    return [
        json.dumps(ans),
        json.dumps(ans, separators=(",", ":"), ensure_ascii=False),
        json.dumps(ans, indent=2),
        json.dumps(perm, indent="\t"),
        json.dumps(perm, separators=(", ", ": ")),
    ]


_FITS = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "num": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict),
    "any": lambda v: True,
}


def catalog_breaks(task) -> str | None:
    """Plain-Python reading of the rules: why the gold answer breaks its own catalog, or None."""
    tools: dict[str, ToolSpec] = {}
    for t in task.tools:
        tools.setdefault(t.name, t)
    defined: dict[str, ToolSpec] = {}
    for c in task.output:
        t = tools.get(c.name)
        if t is None:
            return f"{c.name!r} is not in the catalog"
        for k, v in c.arguments.items():
            if k not in t.parameters:
                return f"{c.name}: {k!r} is not a parameter"
            if isinstance(v, str) and re.fullmatch(r"\$\$?var_?\d+\..*\$", v, re.S):
                lab, _, key = v[1:-1].partition(".")
                src = defined.get(lab)
                if src is None:
                    return f"{c.name}.{k}: reference {v!r} to no earlier label"
                if key not in src.output_parameters:
                    return f"{c.name}.{k}: reference {v!r}: {src.name} has no output {key!r}"
            elif not any(_FITS[kd](v) for kd in param_kinds(t.parameters[k])):
                return f"{c.name}.{k}: {v!r} is not of type {t.parameters[k].get('type')!r}"
        missing = [r for r in t.required if r in t.parameters and r not in c.arguments]
        if missing:
            return f"{c.name}: required {missing} missing"
        lab = (c.raw_label or "").lstrip("$")
        if lab in defined:
            return f"label {c.raw_label!r} used twice"
        defined[lab] = t
    return None


def _check_rows(path, tok, rng):
    accepted, broken = 0, {}
    for task in load_nested(path):
        g = build_nested_grammar(task.tools, label_style=_style(task.output[0].raw_label))
        reason = catalog_breaks(task)
        for text in _styles(_answer(task), rng):
            why = check_answer(g, text, tok)
            if reason is None:
                assert why is None, (task.id, why, text[:300])
            else:
                assert why is not None, (task.id, reason, text[:300])
        if reason is None:
            accepted += 1
        else:
            broken[task.id] = reason
    return accepted, broken


@pytest.mark.parametrize("path", V2, ids=lambda p: p.rsplit("/", 1)[-1])
def test_v2_gold_accepted(path, tok):
    accepted, broken = _check_rows(path, tok, random.Random(0))
    print(path, "accepted", accepted, "broken", broken)
    assert accepted >= 2 and not broken


@pytest.mark.slow
@pytest.mark.parametrize("path", V1, ids=lambda p: p.rsplit("/", 1)[-1])
def test_v1_gold_accepted_unless_broken(path, tok):
    accepted, broken = _check_rows(path, tok, random.Random(1))
    print(path, "accepted", accepted, "broken", len(broken))
    for k, v in broken.items():
        print("  ", k, v)
    assert accepted + len(broken) == len(load_nested(path))


# -- no under-constraint -----------------------------------------------------------------------
def _tool(name, params, outputs, required=()):
    return ToolSpec(
        name=name,
        parameters={p: {"type": t} for p, t in params.items()},
        required=list(required),
        output_parameters={o: {"type": "float"} for o in outputs},
    )


CATALOGS = {
    "math": [
        _tool("add", {"arg_0": "int or float", "arg_1": "int or float"}, ["result"], ["arg_0", "arg_1"]),
        _tool("neg", {"arg_0": "int"}, ["result"], ["arg_0"]),
        _tool("stats", {"xs": "list of float", "name": "string"}, ["mean", "sd"], ["xs"]),
    ],
    "mixed": [
        _tool("search", {"q": "str", "limit": "integer", "safe": "bool"}, ["id", "title"], ["q"]),
        _tool("get", {"id": "string", "opts": "dict"}, ["body"], ["id"]),
        _tool("log", {"msg": "Enum"}, []),
    ],
}


@pytest.fixture(scope="module")
def vocab(tok):
    return vocab_for_lltokenizer(tok)


def _validate(text: str, tools: list[ToolSpec], style: str):
    calls = json.loads(text)
    by = {t.name: t for t in tools}
    defined: dict[str, ToolSpec] = {}
    lab_rx = re.escape(style).replace(re.escape("{i}"), "[1-9][0-9]*")
    for c in calls:
        assert set(c) == {"name", "label", "arguments"}, c
        t = by[c["name"]]
        assert re.fullmatch(lab_rx, c["label"]) and c["label"].lstrip("$") not in defined, (c, defined)
        for k, v in c["arguments"].items():
            assert k in t.parameters, (k, t.name)
            if isinstance(v, str) and re.fullmatch(r"\$" + lab_rx.lstrip("\\$") + r"\..*\$", v, re.S):
                lab, _, key = v[1:-1].partition(".")
                assert lab in defined and key in defined[lab].output_parameters, (v, list(defined))
            else:
                assert any(_FITS[kd](v) for kd in param_kinds(t.parameters[k])), (k, v)
        assert set(t.required) <= set(c["arguments"]), c
        defined[c["label"].lstrip("$")] = t
    return len(calls)


def _walk(constraint, vocab, structural, rng, max_tokens=500):
    session = constraint.new_session(vocab, record=False)
    for _ in range(max_tokens):
        allowed = session.mask()
        assert not session.unsatisfiable, (session.error, session.generated_bytes())
        if session.is_accepting() and rng.random() < 0.5:
            return session.generated_bytes().decode()
        allowed[list(vocab.eos_ids)] = False
        choices = np.flatnonzero(allowed)
        if not choices.size:
            return session.generated_bytes().decode()
        struct = choices[structural[choices]]
        pool = struct if struct.size and rng.random() < 0.6 else choices
        session.advance(int(pool[rng.integers(pool.size)]))
    return None


@pytest.mark.parametrize("name", sorted(CATALOGS))
@pytest.mark.parametrize("style", ["$var_{i}", "var{i}"])
def test_random_walks_are_legal(name, style, vocab):
    tools = CATALOGS[name]
    g = build_nested_grammar(tools, label_style=style, max_calls=4)
    constraint = GrammarConstraint(g.lark, lambda: make_label_tracker(g))
    structural = np.array([bool(set(b'"$,{}[]:.') & set(b)) for b in vocab.token_bytes], dtype=bool)
    rng = np.random.default_rng(7)
    done = refs = 0
    for _ in range(25):
        text = _walk(constraint, vocab, structural, rng)
        if text is None:
            continue
        done += 1
        _validate(text, tools, style)
        refs += text.count(".result$") + text.count(".id$") + text.count(".mean$")
    assert done >= 10


def test_tracker_vetoes(tok):
    g = build_nested_grammar(CATALOGS["math"])
    ok = '[{"name":"add","label":"$var_1","arguments":{"arg_0":1,"arg_1":2}},'
    assert check_answer(g, ok + '{"name":"neg","label":"$var_2","arguments":{"arg_0":"$var_1.result$"}}]') is None
    bad = {
        "dup label": ok + '{"name":"neg","label":"$var_1","arguments":{"arg_0":3}}]',
        "self ref": ok + '{"name":"neg","label":"$var_2","arguments":{"arg_0":"$var_2.result$"}}]',
        "later ref": ok + '{"name":"neg","label":"$var_2","arguments":{"arg_0":"$var_3.result$"}}]',
        "bad key": ok + '{"name":"neg","label":"$var_2","arguments":{"arg_0":"$var_1.mean$"}}]',
        "dup arg": '[{"name":"add","label":"$var_1","arguments":{"arg_0":1,"arg_0":2}}]',
        "missing": '[{"name":"add","label":"$var_1","arguments":{"arg_0":1}}]',
        "args first, wrong tool": '[{"arguments":{"arg_0":1},"name":"add","label":"$var_1"}]',
        "plain ref-like string": '[{"name":"stats","label":"$var_1","arguments":{"xs":[],"name":"$var_9.x$"}}]',
    }
    for what, text in bad.items():
        assert check_answer(g, text, tok) is not None, what
    assert check_answer(g, '[{"arguments":{"arg_0":1},"name":"neg","label":"$var_1"}]', tok) is None
