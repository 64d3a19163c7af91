"""The identifiers the web API constraint gets from the starter (`constraints.in_scope`, built on
`sandbox.js_scope.visible_names`): the names visible at the cut under the default profile, the
starter's own declared names only under ``--cd-profile paper`` -- for WAPIIBench's top-level
starters exactly the names the grammar always had (its pinned grammars stay byte-identical)."""

from __future__ import annotations

import pytest

from callbench.tracks.webapi.constraints import ConstraintFactory, in_scope
from callbench.tracks.webapi.dataset import WebApiTask
from callbench.tracks.webapi.prompting import starter_code


def _top_level_declared(starter: str) -> set[str]:
    """What in_scope listed before js_scope: the starter's top-level let/const/class names."""
    from callbench.sandbox import prepare_code

    return {n for n in prepare_code(starter)[1] if n != "axios"}


def test_wapiibench_starters_keep_their_identifiers(wapii_tasks):
    seen = 0
    for t in wapii_tasks:
        for setup in ("full", "args"):
            starter = starter_code(t, setup)  # type: ignore[arg-type]
            old = _top_level_declared(starter)
            assert in_scope(starter, real_world=False) == old, (t.id, setup)
            assert in_scope(starter) == old | {"process"}, (t.id, setup)
            seen += 1
    assert seen == 2 * len(wapii_tasks) > 0


class _Stop(Exception):
    pass


@pytest.mark.parametrize(("profile", "expected"), [
    ("callbench", ("Items", "apiKey", "id", "other", "process", "q", "this")),
    ("paper", ("Items", "apiKey", "id", "other", "q")),
])
def test_the_factory_passes_the_names_visible_at_the_cut(monkeypatch, profile, expected):
    import callbench.constrain.webapi_grammar as wg
    from callbench.constrain.webapi_grammar import GrammarOptions

    seen: dict[str, tuple[str, ...]] = {}

    def capture(spec, *, setup, method=None, url=None, identifiers=(), options=None):
        seen["identifiers"] = tuple(identifiers)
        raise _Stop

    monkeypatch.setattr(wg, "build_webapi_grammar", capture)
    task = WebApiTask(index=0, api="x", task="Get the item.", config={"method": "get", "url": "https://x/items/1"},
                      definitions={"apiKey": "k"})
    starter = "function other(secret) {}\nclass Items {\n  async get(id) {\n    const q = 1;\n    return axios."
    with pytest.raises(_Stop):
        ConstraintFactory("full", GrammarOptions(profile=profile)).for_task(task, object(), starter)  # type: ignore[arg-type]
    assert seen["identifiers"] == expected  # never `secret`: a sibling function's parameter
