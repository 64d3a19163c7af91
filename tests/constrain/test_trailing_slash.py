"""A trailing slash is part of the URL (issue 26): ``/x/`` is a URL of the path key ``/x/`` only,
``/x`` of ``/x`` only, in the matcher's exact rules, compat scoring and the paper grammar profile.
The published WAPIIBench scorer matches the path exactly (``/x/`` against ``/x`` is an illegal
URL), so a tolerant matcher made "0 % illegal URLs under constraints" partly its own doing.

The real-world rules (issue 29: ``ApiSpec.match(..., real_world=True)``, strict scoring, the
``callbench`` grammar profile) read one trailing slash more or less as the same path where the
exact rules match nothing (real code writes ``https://api.trello.com/1/boards/`` for Trello's
``/boards``, and servers such as Express route both alike by default). The grammar writes the
toggled form only where no path key that may share its URLs ends the other way
(``ApiSpec.either_slash``), so what it accepts always names the operation it was written for.

Property: over random specs of literal and templated segments, each with or without a trailing
slash, a URL is legal by the exact rules exactly when one of the spec's path keys, read as a
regex (``{p}`` = one non-empty segment), matches its whole path -- ``ApiSpec.match_paths``, compat's
URL verdict and ``check_invocation`` under the paper profile (single and staged grammar) say the
same --, and by the real-world rules when that holds for it or for it with one trailing slash
toggled (strict's URL verdict, ``match_paths(real_world=True)``); the ``callbench`` grammar accepts
it when the exact rules do or the toggled key is one ``either_slash`` names, never otherwise."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("llguidance")

from callbench.constrain.check import check_invocation  # noqa: E402
from callbench.constrain.webapi_grammar import GrammarOptions, clear_grammar_cache  # noqa: E402
from callbench.specs.openapi import build_spec  # noqa: E402
from callbench.tracks.webapi.scoring import compare_requests  # noqa: E402

SERVER = "https://api.example.com/v1"
SEGMENTS = ("a", "b", "{p}", "c{q}")
VALUES = {"{p}": "v1", "c{q}": "c7"}


def _spec(keys: list[str]) -> Any:
    paths: dict[str, Any] = {}
    for key in keys:
        names = re.findall(r"\{(\w+)\}", key)
        params = [{"name": n, "in": "path", "required": True, "schema": {"type": "string"}} for n in names]
        paths[key] = {"get": {"parameters": params, "responses": {"200": {"description": "ok"}}}}
    doc = {
        "openapi": "3.0.3",
        "info": {"title": "slash", "version": "1"},
        "servers": [{"url": SERVER}],
        "paths": paths,
    }
    return build_spec(doc, Path("slash.json"))


def _defines(keys: list[str], path: str) -> bool:
    """The published scorer's rule: some path key, ``{...}`` read as ``[^/]+``, matches all of it."""
    return bool(_defining(keys, path))


def _defining(keys: list[str], path: str) -> list[str]:
    return [k for k in keys if re.fullmatch(re.sub(r"\\\{\w+\\\}", "[^/]+", re.escape(k)), path)]


def _toggled(path: str) -> str | None:
    """``path`` with one trailing slash more or less (None for a path ending in two slashes)."""
    if path.endswith("//"):
        return None
    return path[:-1] if path.endswith("/") else path + "/"


def _concrete(key: str) -> str:
    return "/" + "/".join(VALUES.get(s, s) for s in key.split("/")[1:])


path_keys = st.lists(
    st.tuples(st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=3), st.booleans()).map(
        lambda t: "/" + "/".join(t[0]) + ("/" if t[1] else "")
    ),
    min_size=1,
    max_size=5,
    unique=True,
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=path_keys)
def test_a_url_is_legal_exactly_when_a_path_key_has_its_trailing_slash(keys):
    spec = _spec(keys)
    clear_grammar_cache()
    probes = set()
    for key in keys:
        base = _concrete(key).rstrip("/")
        probes |= {base, base + "/", base + "//"}
    for path in sorted(probes):
        url = SERVER + path
        legal = _defines(keys, path)
        toggled = _toggled(path)
        near = [] if legal or toggled is None else _defining(keys, toggled)
        assert bool(spec.match_paths(url)) == legal, (keys, path)
        assert (spec.match("get", url) is not None) == legal, (keys, path)
        assert (spec.match("get", url, real_world=True) is not None) == (legal or bool(near)), (keys, path)
        expected = {"method": "get", "url": SERVER + _concrete(keys[0])}
        verdict = compare_requests(expected, {"method": "get", "url": url}, spec, "compat").url
        assert (verdict != "illegal") == legal, (keys, path, verdict)
        verdict = compare_requests(expected, {"method": "get", "url": url}, spec, "strict").url
        assert (verdict != "illegal") == (legal or bool(near)), (keys, path, verdict)
        code = f"axios.get('{url}')"
        for staged in (False, True):
            got = check_invocation(spec, code, options=GrammarOptions(profile="paper", staged=staged)).allowed
            assert got == legal, (keys, path, staged)
            real = legal or any(spec.either_slash(k) for k in near)
            got = check_invocation(spec, code, options=GrammarOptions(staged=staged)).allowed
            assert got == real, (keys, path, staged, "callbench")


def test_twins_each_take_their_own_urls():
    spec = _spec(["/a", "/a/", "/{p}/"])
    assert spec.match("get", SERVER + "/a").operation.path == "/a"
    assert spec.match("get", SERVER + "/a/").operation.path == "/a/"
    assert spec.match("get", SERVER + "/b/").operation.path == "/{p}/"
    assert spec.match("get", SERVER + "/b") is None
    assert not check_invocation(spec, f"axios.get('{SERVER}/b')").allowed
    assert check_invocation(spec, f"axios.get('{SERVER}/b/')").allowed
