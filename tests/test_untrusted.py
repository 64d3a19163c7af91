"""Bounded parsing of untrusted text: every limit is an UntrustedInputError naming the input."""

from __future__ import annotations

import pytest

from callbench.untrusted import (
    UntrustedInputError,
    check_value,
    clean_text,
    dumps_json,
    load_yaml,
    loads_json,
)


def test_json_within_limits_parses():
    assert loads_json('{"a": [1, {"b": 2}]}', what="x") == {"a": [1, {"b": 2}]}


@pytest.mark.parametrize("depth", [101, 975, 200_000])
def test_json_too_deep_is_one_line_error(depth):
    with pytest.raises(UntrustedInputError, match=r"^answer: nested deeper than 100 levels$"):
        loads_json("[" * depth + "]" * depth, what="answer")


def test_json_depth_counts_levels_exactly():
    # 3 levels: the list, the dict, the inner list
    assert loads_json('[{"a": [1]}]', what="x", max_depth=3) == [{"a": [1]}]
    with pytest.raises(UntrustedInputError):
        loads_json('[{"a": [1]}]', what="x", max_depth=2)


def test_json_size_and_syntax():
    with pytest.raises(UntrustedInputError, match="11 bytes, more than the limit of 10"):
        loads_json('"aaaaaaaaa"', what="f", max_bytes=10)
    with pytest.raises(UntrustedInputError, match=r"^f: invalid JSON"):
        loads_json("{", what="f")


def test_yaml_alias_bomb_is_refused():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)
    )
    with pytest.raises(UntrustedInputError, match="more than 1,000 values"):
        load_yaml(bomb, what="spec.yaml", max_nodes=1000)


def test_yaml_deep_is_refused():
    with pytest.raises(UntrustedInputError, match="nested deeper than 200 levels"):
        load_yaml("[" * 300 + "]" * 300, what="spec.yaml")
    with pytest.raises(UntrustedInputError, match=r"^spec\.yaml: .*nesting depth"):  # PyYAML's own limit
        load_yaml("[" * 100_000 + "]" * 100_000, what="spec.yaml")


def test_dumps_checks_depth_before_encoding():
    deep: list = []
    node = deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    with pytest.raises(UntrustedInputError, match="nested deeper than 100"):
        dumps_json(deep, what="body")
    assert dumps_json({"a": 1}, what="body") == '{"a": 1}'


def test_check_value_counts_shared_nodes_each_time():
    leaf = [0] * 10
    shared = [leaf] * 10
    check_value(shared, what="v", max_nodes=111)
    with pytest.raises(UntrustedInputError):
        check_value(shared, what="v", max_nodes=110)


def test_lone_surrogate_named():
    with pytest.raises(UntrustedInputError, match=r"task\.text: contains a lone surrogate \(U\+D800 at character 2\)"):
        clean_text("ab\ud800", what="task.text")
    assert clean_text("añ€", what="t") == "añ€"
