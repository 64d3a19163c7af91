"""Sandboxed execution of model-written API calls (JavaScript/axios)."""

from callbench.sandbox.js import STATUSES, JsResult, JsSandbox, node_script, standin_source
from callbench.sandbox.js_extract import Extraction, extract_invocation, prepare_code

__all__ = [
    "STATUSES",
    "Extraction",
    "JsResult",
    "JsSandbox",
    "extract_invocation",
    "node_script",
    "prepare_code",
    "standin_source",
]
