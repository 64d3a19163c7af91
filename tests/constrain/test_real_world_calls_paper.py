"""``--cd-profile paper`` keeps WAPIIBench's own grammars byte for byte (issue 29, item 2).

The real-world relaxations of the default profile (credentials as any string or expression,
security alternatives, fixed query pairs in ``params``, variables in URLs, ``http``/``https``,
an undeclared ``Authorization``) must not reach the paper profile: its grammars are the ones the
paper's comparison was measured with.

How the digests were made: at commit 7970a9d (before those changes), with
``CALLBENCH_DATA_DIR=/work/shared/data``, :func:`_digests` below was run as a script; for each of
the four WAPIIBench specs it is the SHA-256 of the ``full`` grammar's text (no identifiers, and
the identifiers ``apiKey``, ``id``, ``token`` in scope), and one SHA-256 over the texts of the
``args`` grammars of every distinct (method, URL) of the 395 gold calls of that API, in sorted
order, likewise without and with those identifiers -- all under ``GrammarOptions(profile="paper")``.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

pytest.importorskip("llguidance")

from callbench.constrain import GrammarOptions, build_webapi_grammar  # noqa: E402

IDENTS = ("apiKey", "id", "token")

PAPER_DIGESTS = {
    "asana": {
        "full/plain": "170c2d70a0ad7186a9185a41642d99494ef70fb6c0f0d99230e8363b810e5770",
        "args/plain": "2c6fd1b16cacbb6144b6c2c8be06984ec407e4f142a1df6fb3c6b29af2907f28",
        "full/idents": "d53dbd857ae2b0fc11d7259d331691a1c16a74ac28c557ed157bcb925323623e",
        "args/idents": "083fad5204e2e6122bafbd739c652ba98407ccfbcd2c52e60c26e77ba46ecb3a",
    },
    "google_calendar_v3": {
        "full/plain": "e341c0d935f80df50457d24b174dc07605b9099ecd91e43bd7fa42ea8d6641e1",
        "args/plain": "fb71989def938f26af81b889dd5fa520cdaf9d63d58bf91507f403f0ab61a41e",
        "full/idents": "13a69b2f30f6efbc19f9d1db4a8cab6e33646506173f4a39814498fb9d7c14f8",
        "args/idents": "be0b0aba030bb36184ca7bae9856f4d42ada98fe6a5f1907bf7a76f69e888f85",
    },
    "google_sheet_v4": {
        "full/plain": "8f14d4d0d78a1f66417687b0ebc76db9785744293c2dbb73645e933625014432",
        "args/plain": "03bbf6347eab71f7ef0033f61ed296f7d91fddc8de34e9847b0bc54d96eb4311",
        "full/idents": "338f6f149601553735915baa21a5476cfc530cf3336d6ac5a6c162b188647e21",
        "args/idents": "52e8882b22665082397a0ed9349f1511448a885a3d3910b11ab6ec8f4a6c8376",
    },
    "slack": {
        "full/plain": "c7e910221574c067fa748fb10df0f2b4d6eb00a8f532fd8fd979ce289f35a44e",
        "args/plain": "3663e86cec4ef85704bfa35493e5828feb3def8c58bc30245f3ff8decb0a62a5",
        "full/idents": "47cf8db114928696c58b9c03e20e99cb6ceb53102d2786c6832c65d00decda04",
        "args/idents": "339a088a612ee4ae1acd316f47fba6057d66b3c1276f5a55e001a03310420293",
    },
}


def _digests(spec: Any, tasks: list[Any], options: GrammarOptions) -> dict[str, str]:
    out = {}
    calls = sorted({(t.config.method.lower(), t.config.url) for t in tasks})
    for name, ids in (("plain", ()), ("idents", IDENTS)):
        full = build_webapi_grammar(spec, setup="full", identifiers=ids, options=options).lark
        out[f"full/{name}"] = hashlib.sha256(full.encode()).hexdigest()
        h = hashlib.sha256()
        for method, url in calls:
            h.update(build_webapi_grammar(spec, setup="args", method=method, url=url, identifiers=ids, options=options).lark.encode())
        out[f"args/{name}"] = h.hexdigest()
    return out


@pytest.mark.needs_data
@pytest.mark.parametrize("api", sorted(PAPER_DIGESTS))
def test_paper_profile_grammars_are_byte_identical(api, wapii_specs, wapii_tasks):
    tasks = [t for t in wapii_tasks if t.api == api]
    assert tasks, api
    assert _digests(wapii_specs[api], tasks, GrammarOptions(profile="paper")) == PAPER_DIGESTS[api]
