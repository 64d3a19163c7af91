from callbench.tracks.webapi.parsing import assemble_program, first_code_block

STARTER = "// List users\nconst axios = require('axios');\n\naxios."
ARGS_STARTER = "// List users\nconst axios = require('axios');\n\naxios.get('https://slack.com/api/users.list',"


def test_completion_appends_and_stops_at_fence():
    out = "get('https://x/y', {params: {a: 1}});\n```\nThis code lists users."
    assert assemble_program(STARTER, out, "completion") == STARTER + "get('https://x/y', {params: {a: 1}});\n"


def test_chat_full_program_in_fence_replaces_import_once():
    out = "Sure! Here it is:\n```javascript\nconst axios = require('axios');\n\naxios.get('https://x/y');\n```\nDone."
    prog = assemble_program(STARTER, out, "chat")
    assert prog.count("require('axios')") == 1
    assert prog.startswith("// List users\n")
    assert "axios.get('https://x/y');" in prog and "Done." not in prog


def test_chat_import_syntax_removed():
    out = "```js\nimport axios from 'axios';\naxios.post('https://x/y', {a: 1});\n```"
    prog = assemble_program(STARTER, out, "chat")
    assert "import axios" not in prog and "axios.post('https://x/y', {a: 1});" in prog


def test_chat_continuation_without_axios():
    out = "```\n{ params: { limit: 5 } });\n```"
    prog = assemble_program(ARGS_STARTER, out, "chat")
    assert prog == ARGS_STARTER + "{ params: { limit: 5 } });\n"


def test_chat_continuation_that_repeats_open_line():
    out = "axios.get('https://slack.com/api/users.list', { params: { limit: 5 } });"
    prog = assemble_program(ARGS_STARTER, out, "chat")
    # it contains an axios call: treated as a whole program behind the starter's header
    assert prog.endswith("axios.get('https://slack.com/api/users.list', { params: { limit: 5 } });\n")
    assert prog.count("axios.get(") == 1


def test_unterminated_fence_and_role_marker():
    assert first_code_block("```javascript\naxios.get('u'") == "axios.get('u'"
    assert first_code_block("Assistant: axios.get('u')") == "axios.get('u')"


def test_multiline_task_stays_in_its_comment():
    from callbench.tracks.webapi.dataset import WebApiTask
    from callbench.tracks.webapi.prompting import build_prompt

    t = WebApiTask(index=0, api="slack", task="Post a message.\nThen: stop", config={"method": "get", "url": "https://x"})
    starter = build_prompt(t, "full").starter
    assert starter.splitlines()[0] == "// Post a message. Then: stop"
