"""``callbench constrain webapi --show / --check`` and ``run webapi --constrained`` guards."""

import pytest
from typer.testing import CliRunner

pytest.importorskip("llguidance")

from callbench.cli import app  # noqa: E402

runner = CliRunner()


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_show_prints_a_grammar_llguidance_accepts(data_root):
    import llguidance

    res = runner.invoke(app, ["constrain", "webapi", "--spec", "petstore", "--show", "--data", str(data_root)])
    assert res.exit_code == 0, res.output
    assert res.stdout.lstrip().startswith("%llguidance") and "start:" in res.stdout
    assert "rules" in res.output  # size and build time go to stderr
    grammar = llguidance.LLMatcher.grammar_from_lark(res.stdout)
    is_error, _ = llguidance.LLMatcher.validate_grammar_with_warnings(grammar)
    assert not is_error


@pytest.mark.parametrize(
    "code,ok,needle",
    [
        ("axios.get('https://slack.com/api/conversations.list', {params: {limit: 5}});", True, "allowed"),
        ("axios.get('https://slack.com/api/no.such.method');", False, "matches no path"),
        ("axios.get('https://slack.com/api/conversations.list', {params: {colour: 'red'}});", False, "'colour'"),
        ("axios.get('https://slack.com/api/conversations.list', {params: {limit: 5, limit: 6}});", False, "twice"),
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
    assert res.exit_code == 2 and "--show and/or --check" in _flat(res.output)


def test_constrained_needs_completion_mode_on_local_models(tmp_path, data_root):
    res = runner.invoke(app, ["run", "webapi", "--model", "llamacpp:default", "--mode", "chat", "--constrained",
                              "--limit", "1", "--out", str(tmp_path), "--data", str(data_root)])
    assert res.exit_code == 2 and "completion mode" in _flat(res.output)


def test_python_api_applies_the_same_constrained_guards(tmp_path, data_root):
    from callbench.api import run
    from callbench.errors import ConfigError

    with pytest.raises(ConfigError, match="completion mode"):
        run("webapi", "llamacpp:default", out_dir=tmp_path, limit=1, constrained=True,
            model_options={"mode": "chat"}, data=str(data_root))
