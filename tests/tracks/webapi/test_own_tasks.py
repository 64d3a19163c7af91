"""Own tasks with their own spec, starter code and variables in scope, through a whole run."""

import json

from callbench.api import run


def test_own_tasks_with_starter_code_and_definitions(tmp_path, data_root):
    spec = data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml"
    starter = "const petId = 7;\n// {task}\nconst axios = require('axios');\naxios."
    rows = [
        {"index": 0, "api": "petstore", "task": "Fetch pet 7.", "spec": str(spec), "starter_code": starter,
         "definitions": {"apiToken": "abc"},
         "config": {"method": "get", "url": "https://petstore.swagger.io/v2/pets/7",
                    "headers": {"Authorization": "Bearer abc"}}},
        {"index": 1, "api": "petstore", "task": "List 5 pets.", "spec": str(spec),
         "config": {"method": "get", "url": "https://petstore.swagger.io/v2/pets", "params": {"limit": 5}}},
    ]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(json.dumps(r) for r in rows))
    # The model's code uses the starter's variable and the injected definition.
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(r) for r in [
        {"id": "petstore_0", "output": "get(`https://petstore.swagger.io/v2/pets/${petId}`, "
                                       "{headers: {Authorization: `Bearer ${apiToken}`}});"},
        {"id": "petstore_1", "output": "get('https://petstore.swagger.io/v2/pets', {params: {limit: '5'}});"},
    ]))
    out = run("webapi", f"replay:{preds}", out_dir=tmp_path / "runs", tasks_file=str(tasks))
    assert out.summary["n"] == 2 and set(out.summary["by_api"]) == {"petstore"}
    assert out.summary["metrics"]["correct_implementations_t"] == 1.0  # '5' == 5 for an integer param (strict)
    gold = run("webapi", "gold", out_dir=tmp_path / "runs", tasks_file=str(tasks))
    assert gold.summary["metrics"]["correct_implementations_t"] == 1.0


def test_constraint_allows_variables_in_scope(data_root):
    import pytest

    pytest.importorskip("llguidance")
    from callbench.constrain.check import check_continuation
    from callbench.specs import load_spec
    from callbench.tracks.webapi.constraints import in_scope

    spec = load_spec(data_root / "wapiibench/openapi/test/petstore-expanded-modified.yaml")
    starter = "const petId = 7;\n// Fetch\nconst axios = require('axios');\naxios."
    idents = sorted(in_scope(starter) | {"apiToken"})
    assert idents == ["apiToken", "petId", "process"]  # process: the Node global (js_scope)
    assert in_scope(starter, real_world=False) == {"petId"}  # the paper profile: declared names only
    call = "get(`https://petstore.swagger.io/v2/pets/${petId}`, {headers: {Authorization: apiToken}});"
    assert check_continuation(spec, call, identifiers=idents).allowed
    assert not check_continuation(spec, call, identifiers=["apiToken"]).allowed  # petId unknown
