from __future__ import annotations

import pytest

from callbench.tracks.nested.references import (
    FailedReferenceError,
    UnknownKeyError,
    UnknownLabelError,
    parse_reference,
    resolve,
)

ENV = {"var_1": {"result": 3}, "var_2": {"result": {"items": [10, 20]}}}


def test_whole_and_styles():
    assert resolve("$var_1.result$", ENV) == 3
    assert resolve("$var1.result$", ENV) == 3
    assert resolve("$var_1$", ENV) == {"result": 3}
    assert parse_reference("$var_2.result.items.0$").path == ("result", "items", "0")


def test_nested_containers():
    assert resolve({"a": ["$var_2.result.items.1$", {"b": "$var_1.result$"}], "c": 5}, ENV) == {
        "a": [20, {"b": 3}],
        "c": 5,
    }
    assert resolve("n=$var_1.result$!", ENV) == "n=3!"


def test_errors():
    with pytest.raises(UnknownLabelError, match="unknown label 'var_9'"):
        resolve("$var_9.result$", ENV)
    with pytest.raises(UnknownKeyError, match="no key 'x'"):
        resolve("$var_1.x$", ENV)
    with pytest.raises(UnknownKeyError, match="not an index"):
        resolve("$var_2.result.items.5$", ENV)

    class Err:
        is_call_error = True
        message = "boom"

    with pytest.raises(FailedReferenceError, match="boom"):
        resolve("$var_3.result$", {"var_3": Err()})
