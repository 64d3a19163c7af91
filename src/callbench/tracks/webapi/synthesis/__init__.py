"""Bring your own API: a web API benchmark synthesized from any OpenAPI spec (issue 15).

One concept per module: :mod:`.selection` (which operations, how often), :mod:`.gold` (the gold
request and its difficulty), :mod:`.starters` (starter-code styles), :mod:`.text` (template writer
and completeness check), :mod:`.agents` (LLM writer + reviewer), :mod:`.crosscheck` (sandbox,
scorer and grammar checks of a row), :mod:`.generate` (the whole run: rows, split, manifest).
The spec half of the cross-check is :func:`callbench.tracks.webapi.audit.cross_check_config`.
See docs/webapi-synthesis.md.
"""
