"""The published NESTFUL parsers and grounding (compat) and strict's four decisions, by hand.

Every expected value below was worked out from the rules in docs/nested-scoring.md ("Compat: how
upstream reads an answer"), not by running the code; the parity test checks the same rules against
upstream's own scorer.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from callbench.errors import ConfigError
from callbench.tracks.nested import compat_parsers as cp
from callbench.tracks.nested import compat_scorer as cs
from callbench.tracks.nested.metrics import score_sample


def call(name, label, **args):
    return {"name": name, "arguments": args, "label": label}


# v1-style gold: search -> book(id of the search), then var_result gathering both
SEARCH = call("search", "var1", q="NY")
BOOK = call("book", "var2", id="$var1.id$")
VR = {"name": "var_result", "arguments": {"found": "$var1$", "booked": "$var2$"}}
GOLD = [SEARCH, BOOK, VR]
ANSWER = [SEARCH, BOOK]  # what models usually write: no var_result
J = json.dumps(ANSWER)


def compat(text, parser, gold=GOLD):
    return score_sample(None, gold, mode="compat", compat_parse=cp.parse(text, parser))


# ---- grounding -----------------------------------------------------------------------------------


def test_grounding_names_references_by_function_and_drops_var_result():
    assert cp.ground(GOLD) == [
        {"name": "search", "arguments": {"q": "NY"}},
        {"name": "book", "arguments": {"id": "$search.id$"}},
    ]


def test_grounding_rules():
    calls = [
        call("f", "$var_1"),
        call("g", "var2"),
        {"name": "varResult", "label": "var3", "arguments": {"a": "$var3.x$"}},  # kept, defines no label
        {
            "name": "h",
            "label": "var4",
            "parameters": {  # read as arguments
                "in_list": [
                    "$var_1.a$",
                    3,
                    {"k": "$var_1.a$"},
                ],  # strings in a list are grounded, objects not
                "embedded": "100 * $var2.x$",  # must start with $var
                "no_field": "$var2$",  # must have a dot
                "other_label": "$out1.x$",
                "no_closing": "$var2.x",
                "every_occurrence": "$var2.var2_total$",  # all of the label's text is replaced
            },
            "extra": "dropped",
        },
    ]
    assert cp.ground(calls) == [
        {"name": "f", "arguments": {}},
        {"name": "g", "arguments": {}},
        {"name": "varResult", "arguments": {"a": "$var3.x$"}},
        {
            "name": "h",
            "arguments": {
                "in_list": ["$f.a$", 3, {"k": "$var_1.a$"}],
                "embedded": "100 * $var2.x$",
                "no_field": "$var2$",
                "other_label": "$out1.x$",
                "no_closing": "$g.x",
                "every_occurrence": "$g.g_total$",
            },
        },
    ]


def test_grounding_a_reused_label_names_the_later_call():
    calls = [call("f", "var1"), call("g", "var1"), call("h", "var2", a="$var1.x$")]
    assert cp.ground(calls)[2]["arguments"] == {"a": "$g.x$"}


@pytest.mark.parametrize(
    "bad",
    [
        [{"arguments": {}}],  # no name
        [call("f", None)],  # a label that is not text
        [call("f", "var1"), {"name": "g", "arguments": ["$var1.x$"]}],  # arguments not an object
        [{"name": 5, "label": "var1"}, call("g", "var2", a="$var1.x$")],  # a reference to a nameless call
        {"name": "f", "arguments": {}},  # one object: its keys are walked
    ],
)
def test_grounding_fails_as_upstream_does(bad):
    with pytest.raises(Exception):  # noqa: B017, PT011 - upstream fails with whatever Python raises
        cp.ground(bad)


def test_grounding_an_empty_object_or_string_yields_no_calls():
    assert cp.ground({}) == [] and cp.ground("") == []


# ---- one parser per family: what each accepts ---------------------------------------------------

FORMS = {
    "list": J,
    "prose": "Calls:\n" + J + "\nDone.",
    "fence_json": "```json\n" + J + "\n```",
    "fence_plain": "```\n" + J + "\n```",
    "no_brackets": ", ".join(json.dumps(c) for c in ANSWER),
    "single_object": json.dumps(SEARCH),
    "xlam": json.dumps({"tool_calls": ANSWER}),
    "xlam_marker": "[BEGIN OF FUNCTION CALLS] " + json.dumps({"tool_calls": ANSWER}),
    "hermes": "\n".join(f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in ANSWER),
    "hermes_bare": "tool_call\n"
    + json.dumps(SEARCH)
    + "</tool_call><tool_call>"
    + json.dumps(BOOK)
    + "</tool_call>",
    "granite_tag": "<|tool_call|>" + J,
    "function_call": "".join(f"<function_call> {json.dumps(c)} " for c in ANSWER),
    "escaped": J.replace("search", "se\\_arch"),  # a Markdown-escaped underscore: invalid JSON
    "python": '[search(q="NY"), book(id="$var1.id$")]',
    "trailing_comma": J[:-1] + ", ]",
    "empty_list": "[]",
    "empty": "",
}
# parser -> the forms it reads without a parse error (every other form is one)
ACCEPTS = {
    "Hammer2.0-7b": {"list", "fence_plain"},
    "granite-3.0-8b-instruct": {"list", "empty_list"},
    "DeepSeek-V3": {"list", "empty_list"},
    "granite-3.1-8b-instruct": {"list", "granite_tag", "empty_list"},
    "Llama-3.1-8B-Instruct": {"list", "no_brackets", "single_object", "empty_list", "empty"},
    "llama-3-70b-instruct": {"list", "empty_list", "python"},
    "Mistral-7B-Instruct-v0.3": {"list", "escaped", "empty_list"},
    "Hermes-2-Pro-Mistral-7B": {"hermes", "hermes_bare"},
    "xLAM-7b-fc-r": {"xlam", "xlam_marker"},
    # a plain list is one <function_call> piece holding a list, whose 'name' cannot be read
    "Granite-20B-FunctionCalling": {"function_call", "single_object", "empty"},
    "ToolAce-8b": {"python"},
    "lenient": set(FORMS) - {"python", "empty"},
}
# forms a parser reads as the whole answer: full sequence accuracy 1 against GOLD (var_result dropped)
FULL = {
    "Hammer2.0-7b": {"list", "fence_plain"},
    "granite-3.0-8b-instruct": {"list"},
    "DeepSeek-V3": {"list"},
    "granite-3.1-8b-instruct": {"list", "granite_tag"},
    "Llama-3.1-8B-Instruct": {"list", "no_brackets"},
    "llama-3-70b-instruct": {"list"},
    "Mistral-7B-Instruct-v0.3": {"list"},
    "Hermes-2-Pro-Mistral-7B": {"hermes", "hermes_bare"},
    "xLAM-7b-fc-r": {"xlam", "xlam_marker"},
    "Granite-20B-FunctionCalling": {"function_call"},
    "ToolAce-8b": set(),  # no labels in Python syntax: $var1.id$ is never grounded
    # lenient reads hermes_bare's second call only (the first has no opening tag); a trailing comma
    # ends a list whose calls are complete
    "lenient": {"list", "prose", "fence_json", "fence_plain", "no_brackets", "xlam", "xlam_marker", "hermes",
                "granite_tag", "function_call", "trailing_comma"},
}  # fmt: skip


@pytest.mark.parametrize("parser", list(ACCEPTS))
def test_each_parser_accepts_exactly_its_forms(parser):
    accepted = {form for form, text in FORMS.items() if not compat(text, parser)["parse_error"]}
    assert accepted == ACCEPTS[parser]
    full = {form for form, text in FORMS.items() if compat(text, parser)["full_sequence_accuracy"] == 1}
    assert full == FULL[parser]


def test_every_upstream_model_name_is_a_parser():
    assert len(cp.PARSER_MODELS) == 23 and set(cp.PARSER_NAMES) == {"lenient", *cp.PARSER_MODELS}
    assert cp.resolve_parser("hammer2.0-7B") == "Hammer2.0-7b" and cp.resolve_parser(None) == "lenient"
    with pytest.raises(
        ConfigError, match=r"--parser gpt-4: choose lenient or one of NESTFUL's model names: "
    ):
        cp.resolve_parser("gpt-4")


def test_published_templates_pick_their_models_parser():
    assert cp.parser_for_template("Hammer2.0-7b") == "Hammer2.0-7b"
    assert cp.parser_for_template("LLaMa-3.1") == "Llama-3.1-8B-Instruct"
    assert cp.parser_for_template("xLAM-8x22b-r") == "xLAM-8x22b-r"
    # upstream's scorer has no parser for these models: callbench's own
    assert cp.parser_for_template("gorilla-openfunctions-v2") == "lenient"
    assert cp.parser_for_template("c4ai-command-r-v01") == "lenient"
    assert cp.parser_for_template(None) == "lenient"


def test_only_labelled_text_is_grounded_by_some_parsers():
    # Granite 3.0 grounds only when the text contains "label": without it var_result stays a call
    # (4 gold calls less var_result = 2; pred [search, book, var_result] -> aligned 2 of 3) and a
    # 'parameters' key is not read ('name({})' in the sequence, and a parsing error in the F1 loop)
    unlabelled = [
        {"name": "search", "arguments": {"q": "NY"}},
        {"name": "book", "arguments": {"id": "$search.id$"}},
    ]
    text = json.dumps([*unlabelled, VR])
    got = compat(text, "granite-3.0-8b-instruct")
    assert got["partial_sequence_accuracy"] == pytest.approx(2 / 3) and not got["parse_error"]
    assert compat(text, "Hammer2.0-7b")["full_sequence_accuracy"] == 1  # Hammer always grounds
    params = json.dumps([{"name": "search", "parameters": {"q": "NY"}}])
    got = compat(params, "granite-3.0-8b-instruct", gold=[{"name": "search", "arguments": {"q": "NY"}}])
    assert got["parse_error"] and got["partial_sequence_accuracy"] == 0
    got = compat(params, "Hammer2.0-7b", gold=[{"name": "search", "arguments": {"q": "NY"}}])
    assert not got["parse_error"] and got["full_sequence_accuracy"] == 1


def test_llama_70b_reads_python_calls_as_text_values():
    # fallback: split at '),', arguments at commas outside quotes; every value a string, no grounding;
    # the second name keeps its leading space -> [search(q = NY) equal, ' book(id = $var1.id$)' not] -> 1/2
    read = cp.parse('[search(q="NY", n=2), book(id="$var1.id$")]', "llama-3-70b-instruct")
    assert [json.loads(c) for c in read.calls] == [
        {"name": "search", "arguments": {"q": "NY", "n": "2"}},
        {"name": " book", "arguments": {"id": "$var1.id$"}},
    ]
    assert (
        compat('[search(q="NY"), book(id="$var1.id$")]', "llama-3-70b-instruct")["partial_sequence_accuracy"]
        == 0.5
    )
    # a call without '=' fails midway: the calls read before it stay, and it is a parse error
    read = cp.parse('[search(q="NY"), book("x")]', "llama-3-70b-instruct")
    assert read.parse_error and len(read.calls) == 1


def test_toolace_reads_keywords_and_mirrors_upstreams_value_rules():
    read = cp.parse("[f(1, a=+5, b=3*4, c=x, d=g(2), e=h(k=1), s=t[0], l=[1, -2], n=None)]", "ToolAce-8b")
    assert json.loads(read.calls[0]) == {
        "name": "f",
        "arguments": {  # positional 1 dropped; '+5' negated as upstream negates every unary operand
            "a": -5, "b": 12, "c": "x", "d": "g(2)", "e": {"name": "h", "arguments": {"k": 1}}, "s": "t[0]",
            "l": [1, -2], "n": None,
        },
    }  # fmt: skip
    for refused in ("f(a=lambda: 1)", "f(a=len('ab') + 1)", "f(a=9 ** 9 ** 9)", "f(a=b.c)", "x + 1"):
        assert cp.parse(refused, "ToolAce-8b").parse_error, refused


def test_xlam_requires_the_tool_calls_object():
    assert cp.parse(json.dumps([{"tool_calls": ANSWER}]), "xLAM-7b-fc-r").parse_error
    assert cp.parse(json.dumps({"calls": ANSWER}), "xLAM-7b-fc-r").reason == 'no "tool_calls"'


def test_bounds_make_a_parse_error_not_a_crash():
    deep = '[{"name": "f", "arguments": {"a": ' + "[" * 40 + "]" * 40 + "}}]"
    assert "nested deeper than 32" in cp.parse(deep, "Hammer2.0-7b").reason
    assert "characters" in cp.parse("[" + " " * 200_001 + "]", "Hammer2.0-7b").reason
    hermes = "<tool_call>" * 15_000  # no closing tag: found in linear time
    assert cp.parse(hermes, "Hermes-2-Pro-Mistral-7B").reason == "no <tool_call> holds JSON"


# ---- the scorer's own quirks on the JSON text -------------------------------------------------------


def test_dummy_is_recognised_by_its_text_and_end_of_text_is_removed():
    # the dummy call in exactly this key order is skipped by both F1 loops; in another order it is a name
    dummy = cs.function_names(
        ['{"name": "dummy", "arguments": {}}', '{"arguments": {}, "name": "dummy"}'], pred=True
    )
    assert dummy == (["dummy"], False)
    assert cs.parameter_map(['{"name": "f", "arguments": {"a": "x<|endoftext|>"}}'], pred=True) == (
        {"f": ["a = x"]},
        False,
    )


def test_alignment_deals_calls_into_named_slots():
    # equal lengths: positional; otherwise greedy by name, gold mismatches paired with blanks first
    assert cs.sequence_accuracy(["a()", "b()"], ["b()", "a()"]) == 0
    assert cs.sequence_accuracy(["a()", "b()"], ["a()", "x()", "b()"]) == pytest.approx(1 / 4)
    # a call whose name is empty takes no slot: ["", "", "a()"] is dealt as ["", "", "()"] -> 0 of 3
    assert cs.align(["a()"], ["()", "a()"]) == (["a()", "", ""], ["", "", "()"])
    assert cs.sequence_accuracy([], []) == 0.0


def test_a_name_that_is_not_text_is_read_as_upstream_reads_it():
    # str(None) is the function label 'None'; a list name cannot key the parameter map: parse error
    assert not compat(json.dumps([{"name": None, "arguments": {}}]), "Hammer2.0-7b")["parse_error"]
    assert compat(json.dumps([{"name": ["f"], "arguments": {}}]), "Hammer2.0-7b")["parse_error"]


# ---- the four points, in both modes -------------------------------------------------------------


def test_var_result_compat_drops_it_and_strict_does_not_require_it():
    for mode in ("compat", "strict"):
        assert score_sample(ANSWER, GOLD, mode=mode)["full_sequence_accuracy"] == 1, mode
        assert score_sample([*ANSWER, VR], [SEARCH, BOOK], mode=mode)["full_sequence_accuracy"] == 1, mode
    # strict: var_result is not counted (F1 function over search, book only) ...
    assert score_sample(ANSWER, GOLD, mode="strict")["f1_function"] == 1
    # ... and with it gold names its answer, so two independent calls may come in any order
    gold = [
        call("a", "var1", x=1),
        call("b", "var2", y=2),
        {"name": "var_result", "arguments": {"r": "$var2$"}},
    ]
    swapped = [call("b", "var1", y=2), call("a", "var2", x=1)]
    assert score_sample(swapped, gold, mode="strict")["full_sequence_accuracy"] == 1
    assert score_sample(swapped, gold[:2], mode="strict")["full_sequence_accuracy"] == 0  # last call = answer


def test_missing_name_is_a_parse_error_in_both_modes():
    pred = [SEARCH, {"arguments": {"id": "$var1.id$"}, "label": "var2"}]
    for mode in ("compat", "strict"):
        got = score_sample(pred, GOLD, mode=mode)
        assert got["parse_error"] is True and got["partial_sequence_accuracy"] == 0, mode


def test_labels_compat_grounds_them_strict_compares_computations():
    relabelled = [call("search", "$var_7", q="NY"), call("book", "$var_3", id="$var_7.id$")]
    for mode in ("compat", "strict"):
        assert score_sample(relabelled, GOLD, mode=mode)["full_sequence_accuracy"] == 1, mode


def test_strict_reads_with_the_lenient_reader_whatever_the_parser(tmp_path):
    from callbench.api import run
    from callbench.runs.store import RunStore

    data = tmp_path / "t-data.json"
    data.write_text(json.dumps([{"input": "q", "output": GOLD}]))
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"id": "t-0", "output": "Sure:\n```json\n" + J + "\n```"}) + "\n")
    out = run("nested", f"replay:{preds}", out_dir=tmp_path / "r", data=str(data), parser="Hammer2.0-7b")
    store = RunStore.open(out.run_dir)
    try:
        (row,) = list(store.rows())
    finally:
        store.close()
    assert row["verdicts"]["strict"]["full_sequence_accuracy"] == 1
    compat_verdict = row["verdicts"]["compat"]
    assert compat_verdict["parse_error"] and compat_verdict["parser"] == "Hammer2.0-7b"
    assert compat_verdict["parse_error_reason"].startswith("JSONDecodeError")


# ---- properties ---------------------------------------------------------------------------------

FIELDS = st.sampled_from(["id", "result", "total", "name_out"])
JSON_PARSERS = ("Hammer2.0-7b", "granite-3.0-8b-instruct", "Llama-3.1-8B-Instruct", "Mistral-7B-Instruct-v0.3",
                "DeepSeek-R1", "llama-3-1-405b-instruct", "lenient")  # fmt: skip


@st.composite
def sequences(draw):
    """A gold chain of 1-6 calls whose arguments reference earlier calls, v1 or v2 labels."""
    n = draw(st.integers(1, 6))
    style = draw(st.sampled_from(["var{}", "$var_{}"]))
    calls = []
    for i in range(1, n + 1):
        args = {"x": draw(st.integers(-5, 5))}
        if i > 1 and draw(st.booleans()):
            args["y"] = f"${style.format(draw(st.integers(1, i - 1))).strip('$')}.{draw(FIELDS)}$"
        calls.append(
            {
                "name": draw(st.sampled_from(["add", "mul", "get", "put"])),
                "label": style.format(i),
                "arguments": args,
            }
        )
    return calls


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gold=sequences(), data=st.data())
def test_any_consistent_relabelling_is_correct_in_both_modes(gold, data):
    """Upstream grounds labels, strict compares computations: renumbering and restyling the labels
    of a correct answer changes neither verdict."""
    numbers = data.draw(st.permutations(range(1, len(gold) + 1)))
    style = data.draw(st.sampled_from(["var{}", "$var{}", "$var_{}", "var_{}", "$var{}$"]))
    new = {c["label"].strip("$"): style.format(k) for c, k in zip(gold, numbers, strict=True)}
    pred = []
    for c in gold:
        args = {}
        for key, value in c["arguments"].items():
            if isinstance(value, str):
                head, field = value.strip("$").split(".", 1)
                value = f"${new[head].strip('$')}.{field}$"
            args[key] = value
        pred.append({"name": c["name"], "label": new[c["label"].strip("$")], "arguments": args})
    text = json.dumps(pred)
    for parser in JSON_PARSERS:
        assert compat(text, parser, gold=gold)["full_sequence_accuracy"] == 1, parser
    assert score_sample(pred, gold, mode="strict")["full_sequence_accuracy"] == 1


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(
        st.text(max_size=60),
        st.text(alphabet='[]{}(),:="\'$ abnv_ar1.<>|/\\`', max_size=80),
        st.builds(lambda a, b: a + json.dumps(b), st.sampled_from(["", "```", "<tool_call>", "[", "{"]),
                  st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                               lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=5), kids, max_size=3),
                               max_leaves=8)),
    ),
    parser=st.sampled_from(cp.PARSER_NAMES),
)  # fmt: skip
def test_any_output_gets_a_verdict_never_an_exception(text, parser):
    verdict = compat(text, parser)
    assert isinstance(verdict["parse_error"], bool) and 0 <= verdict["partial_sequence_accuracy"] <= 1


# ---- compat's win executes what its parser decoded ---------------------------------------------

MATH_SPEC = {"parameters": {"arg_0": {}, "arg_1": {}}, "output_parameters": {"result": {}}}
ADD = {"name": "add", "label": "$var_1", "arguments": {"arg_0": 2, "arg_1": 3}}
MUL = {"name": "multiply", "label": "$var_2", "arguments": {"arg_0": "$var_1.result$", "arg_1": 4}}


def _replay_math(tmp_path, outputs, parser):
    """(2 + 3) * 4 = 20 with the built-in MathQA tools; one replayed output per sample."""
    from callbench.api import run
    from callbench.runs.store import RunStore

    tools = [{"name": "add", **MATH_SPEC}, {"name": "multiply", **MATH_SPEC}]
    rows = [
        {"sample_id": f"s{i}", "input": "(2+3)*4", "output": [ADD, MUL], "tools": tools, "gold_answer": 20}
        for i in range(len(outputs))
    ]
    data = tmp_path / "math.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join(json.dumps({"id": f"s{i}", "output": o}) + "\n" for i, o in enumerate(outputs)))
    out = run("nested", f"replay:{preds}", out_dir=tmp_path / "r", data=str(data), parser=parser)
    store = RunStore.open(out.run_dir)
    try:
        return {r["id"]: r["verdicts"] for r in store.rows()}
    finally:
        store.close()


def test_compat_win_executes_the_calls_its_parser_read(tmp_path):
    broken_then_good = f"<tool_call>{json.dumps(ADD)}</tool_call><tool_call>{{broken</tool_call><tool_call>{json.dumps(MUL)}</tool_call>"
    got = _replay_math(
        tmp_path, ["Sure: " + json.dumps([ADD, MUL]), broken_then_good], "Hermes-2-Pro-Mistral-7B"
    )
    # prose: the lenient reader reads and executes it (strict win); Hermes' parser reads no tag: nothing
    # decoded, nothing executed, no win
    assert got["s0"]["strict"]["win"] is True
    assert got["s0"]["compat"]["win"] is False and "execution" not in got["s0"]["compat"]
    # a broken tag: the lenient reader gives up (strict parse error); Hermes skips it and runs the other two
    assert got["s1"]["strict"]["parse_error"] and got["s1"]["strict"]["win"] is False
    assert got["s1"]["compat"]["win"] is True and got["s1"]["compat"]["full_sequence_accuracy"] == 1
    assert got["s1"]["compat"]["execution"] == {"ok": True, "timed_out": False, "final": 20}
