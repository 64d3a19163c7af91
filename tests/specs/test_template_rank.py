"""Property: no path template is unreachable because a broader one ranks before it.

A refinement A of a template B (a bare ``{p}`` replaced by literal text or by literal text around
parameters, a parameter inside a mixed segment split around more literal text) matches only URLs
that B matches too. ``spec.match`` must then give A's URLs to A and B's other URLs to B; the
grammar's shadowing reads the same rank (``ApiSpec.template_ranks``), so it is covered here too.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from callbench.specs.openapi import build_spec

LITERALS = st.sampled_from(["a", "b", "ab", "v1", ".json", "(x=", ")", ",y=", "-", ":run", "'"])


@st.composite
def segment(draw, k: int) -> str:
    """A bare parameter, a literal or a mixed segment (literal text around parameters)."""
    kind = draw(st.sampled_from(["bare", "literal", "mixed"]))
    if kind == "bare":
        return f"{{b{k}}}"
    if kind == "literal":
        return draw(LITERALS)
    return draw(LITERALS) + f"{{m{k}}}" + draw(st.one_of(st.just(""), LITERALS))


@st.composite
def refinement(draw, seg: str, k: int) -> str:
    """A segment matching a subset of what ``seg`` matches (maybe ``seg`` itself)."""
    if "{" not in seg or draw(st.booleans()):
        return seg
    head, _, rest = seg.partition("{")
    name, _, tail = rest.partition("}")
    choice = draw(st.sampled_from(["literal", "split", "wrap"]))
    if choice == "literal":  # the parameter's place holds fixed text
        return head + draw(LITERALS) + tail
    if choice == "split":  # two parameters with literal text between them
        return head + f"{{{name}}}" + draw(LITERALS) + f"{{r{k}}}" + tail
    return head + draw(LITERALS) + f"{{{name}}}" + tail  # more literal text before it


@st.composite
def pair(draw) -> tuple[str, str]:
    n = draw(st.integers(1, 3))
    broad = [draw(segment(k)) for k in range(n)]
    narrow = [draw(refinement(s, k)) for k, s in enumerate(broad)]
    return "/" + "/".join(broad), "/" + "/".join(narrow)


def _url(template: str) -> str:
    """The template with every parameter set to text no literal holds (so only what the
    template's own literals force is in the URL)."""
    out, depth = [], 0
    for ch in template:
        if ch == "{":
            depth += 1
            out.append("qz")
        elif ch == "}":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


@settings(max_examples=300, deadline=None)
@given(pair())
def test_a_refinement_and_the_broader_template_are_both_reached(templates):
    broad, narrow = templates
    ok = {"get": {"responses": {"200": {"description": "ok"}}}}
    spec = build_spec({"openapi": "3.0.3", "info": {"title": "t", "version": "1"},
                       "paths": {broad: ok, narrow: ok}}, Path("rank.json"))
    assert spec.match("get", _url(narrow)).operation.path == narrow
    assert spec.match("get", _url(broad)).operation.path == broad
    if narrow != broad:
        ranks = spec.template_ranks()
        assert ranks[narrow] < ranks[broad]
