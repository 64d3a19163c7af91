"""Scenario model validation, sampling, energy weights, complexity metrics and pass@k."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from random import Random

import pytest

from callbench.errors import ConfigError
from callbench.tracks.stateful.complexity import analyse
from callbench.tracks.stateful.metrics import pass_at_k, summarize
from callbench.tracks.stateful.program import Branch, Loop, iter_calls, render
from callbench.tracks.stateful.sampling import (
    Candidate,
    choose,
    explore_pairs,
    sample_program,
    unreachable_apis,
)
from callbench.tracks.stateful.scenario import (
    Api,
    Initial,
    ObjectType,
    Param,
    Runtime,
    Scenario,
    World,
    choice,
)
from callbench.tracks.stateful.scenarios import available_scenarios, get_scenario


def _mini(**api_changes) -> Scenario:
    """A two-API counter scenario, small enough to reason about by hand."""

    def make(world, a, o):
        obj = world.create("box", n=a["n"])
        return obj

    def bump(world, a, o):
        return world.update(o["box"], n=o["box"].attrs["n"] + 1)

    apis = [
        Api("make", (Param("n", domain=choice([1, 2])),), "svc.make($n)", make, "object", "box", "make a box holding {n}", returns_type="box"),
        Api("bump", (Param("box", object_type="box"),), "svc.bump($box)", bump, "object", "bumped", "bump {box}", target="box", returns_type="box"),
    ]
    if api_changes:
        apis[1] = dataclasses.replace(apis[1], **api_changes)
    return Scenario(
        name="mini",
        description="test",
        object_types=(ObjectType("box", "a box", probes={"n": ("{var}.n", lambda o: o.attrs["n"])}),),
        apis=tuple(apis),
        runtime=Runtime(setup="", finalize=None, call_roots=("svc",), doc="doc"),
        initial=lambda rng: Initial(World(), {}),
    )


def test_valid_mini_scenario_and_builtins_load():
    assert _mini().api("bump").target == "box"
    assert available_scenarios() == ["session", "tensor", "voice"]
    for name in available_scenarios():
        assert get_scenario(name).name == name


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"template": "svc.bump()"}, "params ['box'] unused"),
        ({"template": "svc.bump($box, $other)"}, "placeholders ['other'] unknown"),
        ({"target": "nope"}, "target 'nope' is not an object parameter"),
        ({"params": (Param("box", object_type="crate"),)}, "unknown object_type 'crate'"),
        ({"params": (Param("box"),)}, "a value parameter needs a domain"),
        ({"name": "make"}, "defined twice"),
        ({"returns_type": None}, "returns_type"),
        ({"phrase": "bump {crate}"}, "phrase: unknown fields"),
    ],
)
def test_malformed_scenario_is_one_line_error_naming_api_and_field(change, message):
    with pytest.raises(ConfigError) as exc:
        _mini(**change)
    text = str(exc.value)
    assert "scenario 'mini'" in text and message in text and "\n" not in text


def test_unreachable_api_is_reported():
    never = _mini(precondition=lambda world, objs: False)
    reachable = explore_pairs(never, walks=20)
    assert unreachable_apis(never, reachable) == ["bump"]
    assert unreachable_apis(_mini(), explore_pairs(_mini(), walks=20)) == []


def test_energy_weights_match_the_formula():
    """P(candidate) = exp(-c/T) / sum exp(-c'/T): counts 0 and 2 at T = 0.5 -> 1 : e^-4."""
    s = _mini()
    world = World()
    box = world.create("box", n=1)
    box.expr = "b"
    cands = [Candidate(s.api("make"), {}), Candidate(s.api("bump"), {"box": box})]
    counts = Counter({("<none>", "make"): 2})
    draws = Counter(choose(cands, "energy", counts, Random(i)).api.name for i in range(4000))
    expected_bump = 1 / (1 + math.exp(-4))
    assert abs(draws["bump"] / 4000 - expected_bump) < 0.01
    # the random baseline is uniform over APIs whatever the counts
    draws = Counter(choose(cands, "random", counts, Random(i)).api.name for i in range(4000))
    assert abs(draws["bump"] / 4000 - 0.5) < 0.03


def test_same_seed_same_program_and_pairs_follow_objects():
    s = get_scenario("session")
    a = sample_program(s, Random(7), n_calls=5)
    b = sample_program(s, Random(7), n_calls=5)
    assert render(a, s) == render(b, s) and a.pairs == b.pairs
    # every pair's first element is START, <none> or an API of the scenario
    names = {api.name for api in s.apis} | {"<new>", "<none>"}
    assert all(p[0] in names and p[1] in names for p in a.pairs)


def test_control_flow_is_injected_and_valid_python():
    s = get_scenario("tensor")
    branches = loops = 0
    for seed in range(30):
        prog = sample_program(s, Random(seed), n_calls=5)
        code = render(prog, s)
        compile(code, "<program>", "exec")
        assert code.count("result = ") >= 1
        for step in prog.steps:
            if isinstance(step, Branch):
                branches += 1
                assert step.threshold in prog.inputs and step.threshold in prog.flip
                assert prog.flip[step.threshold] > prog.inputs[step.threshold]
            loops += isinstance(step, Loop)
        assert prog.n_calls == len(list(iter_calls(prog.steps)))
    assert branches >= 5 and loops >= 3


def test_complexity_hand_computed():
    code = (
        "voices = api.search_voices(q)\n"  # c0
        "speech = api.text_to_speech(t, voices[0]['id'])\n"  # c1 <- c0
        "text = api.speech_to_text(speech['id'])\n"  # c2 <- c1
        "clips = []\n"
        "for v in voices:\n"
        "    clips.append(api.text_to_speech(t, v['id']))\n"  # c3 <- c0
        "# a comment\n"
        "call = api.outbound_call(p, clips[0]['id'])\n"  # c4 <- c3
        "n = len(requests.get(u).json())\n"  # not an API root here
        "result = call\n"
    )
    m = analyse(code, ["api"])
    assert m == {"n_calls": 5, "path_depth": 3, "binding_count": 4, "code_lines": 9}
    # a call chained on a result is one call; subscripts keep the derivation
    m = analyse("a = requests.get(u).json()\nb = a[0]\nc = requests.delete(b['id'])\n", ["requests"])
    assert m["n_calls"] == 2 and m["binding_count"] == 1 and m["path_depth"] == 2


def test_pass_at_k_hand_computed():
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 1, 2) == pytest.approx(1 - 6 / 10)  # 1 - C(4,2)/C(5,2)
    assert pass_at_k(10, 3, 5) == pytest.approx(1 - 21 / 252)  # 1 - C(7,5)/C(10,5)
    assert pass_at_k(5, 4, 2) == 1.0 and pass_at_k(3, 0, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_summary_keys_and_values():
    cx = {"instruction_words": 10, "code_lines": 4, "n_calls": 2, "path_depth": 2, "binding_count": 1}
    rows = [
        {"task": "a", "passed": True, "error_class": None, "complexity": cx},
        {"task": "a", "passed": False, "error_class": "runtime", "complexity": cx},
        {"task": "b", "passed": False, "error_class": "wrong_state", "complexity": {**cx, "n_calls": 4}},
        {"task": "b", "passed": False, "error_class": "runtime", "complexity": {**cx, "n_calls": 4}},
    ]
    s = summarize(rows, [2])
    assert s["pass@1"] == pytest.approx((0.5 + 0.0) / 2)
    assert s["pass@2"] == pytest.approx((1.0 + 0.0) / 2)
    assert s["error_runtime"] == 0.5 and s["error_wrong_state"] == 0.25 and s["error_timeout"] == 0.0
    assert s["mean_n_calls"] == 3.0 and s["n_tasks"] == 2


def test_complexity_nested_calls_and_branch_join():
    m = analyse("a = api.search()\nv = api.tts(t, api.get_voice(a[0]['id'])['id'])\n", ["api"])
    assert m == {"n_calls": 3, "path_depth": 3, "binding_count": 2, "code_lines": 2}
    m = analyse("if c:\n    x = api.a()\nelse:\n    x = api.b()\ny = api.c(x)\n", ["api"])
    assert m["binding_count"] == 2 and m["path_depth"] == 2  # c uses whichever branch ran


@pytest.mark.parametrize(
    ("otype", "message"),
    [
        (ObjectType("box", "a box", ref="{nope}"), "ref: must contain {var}"),
        (ObjectType("box", "a box", probes={"n": ("len(x)", lambda o: 1)}), "probes['n']: must contain {var}"),
    ],
)
def test_object_type_templates_are_validated(otype, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        dataclasses.replace(_mini(), object_types=(otype,))


def test_returns_kind_is_validated():
    with pytest.raises(ConfigError, match="returns: 'objs' is not one of object, objects, value"):
        _mini(returns="objs")


def test_loop_elements_follow_the_returned_list_order():
    """Abstract element i is the real element i: the voice each synthesized clip of a loop used."""
    from callbench.tracks.stateful.execution import Case, execute

    s = get_scenario("voice")
    checked = 0
    for seed in range(80):
        prog = sample_program(s, Random(seed), n_calls=2, p_loop=1.0, p_branch=0.0)  # search, then the loop
        loops = [st for st in prog.steps if isinstance(st, Loop) and st.call.api == "text_to_speech"]
        if not loops:
            continue
        out_var = loops[0].out
        abstract = {o.expr: o.attrs["voice_id"] for o in prog.world.objects.values() if o.expr and o.expr.startswith(out_var + "[")}
        code = render(prog, s) + f"result = [x['voice_id'] for x in {out_var}]\n"
        real = execute(s, code, Case("b", prog.inputs))
        assert real.status == "ok", real.error
        assert [abstract[f"{out_var}[{i}]"] for i in range(len(real.result))] == real.result
        checked += 1
        if checked == 3:
            break
    assert checked == 3
