"""WAPIIBench's chat handling for in-process instruct models (``--chat-handling published``).

Upstream's ``generate()`` decodes the whole sequence (prompt and answer) without special tokens,
starts the program at the first occurrence of the starter code (in the user turn), cuts out what
lies between the starter's open last line and its last repetition, or else removes one
``Assistant:``/``Response:`` marker. The expected programs below are written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from callbench.api import make_track
from callbench.errors import ConfigError
from callbench.models.base import ModelOutput
from callbench.tracks.webapi.upstream_call import published_call, published_chat_program

FULL = "// List the channels.\nconst axios = require('axios');\n\naxios."
ARGS = "// List the channels.\nconst axios = require('axios');\n\naxios.get('https://slack.com/api/conversations.list',"
# Qwen2.5's ChatML decoded without its special tokens: role names stay as plain lines.
QWEN_HEAD = "system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.\nuser\nComplete this:\n\n```javascript\n"


def _decoded(starter: str) -> str:
    return QWEN_HEAD + starter + "\nassistant\n"


def test_answer_that_repeats_the_starter_is_cut_to_one_program():
    answer = "```javascript\n// List the channels.\nconst axios = require('axios');\n\naxios.get('https://slack.com/api/conversations.list');\n```\n"
    got = published_chat_program(FULL, _decoded(FULL), answer)
    # starter up to its open line, then the answer from its last 'axios.'; the fence's newline dropped
    assert got == "// List the channels.\nconst axios = require('axios');\n\naxios.get('https://slack.com/api/conversations.list');\n```"
    assert published_call(got).code == "axios.get('https://slack.com/api/conversations.list');\n"


def test_answer_without_the_open_line_keeps_chatml_role_line():
    """A continuation alone ('get(...)', as constrained decoding makes it) never repeats 'axios.':
    ChatML's 'assistant' line is no 'Assistant:' marker, so it stays in the program."""
    answer = "get('https://slack.com/api/conversations.list');\n```\n"
    got = published_chat_program(FULL, _decoded(FULL), answer)
    assert got == FULL + "\nassistant\nget('https://slack.com/api/conversations.list');\n```"
    # the published cut then runs 'axios.\nassistant\nget(...);' -- not a request of the answer's
    assert published_call(got).code == "axios.\nassistant\nget('https://slack.com/api/conversations.list');\n"


def test_role_marker_is_removed_once_where_the_template_writes_one():
    decoded = "### Instruction:\nComplete this:\n" + FULL + "\n### Response:\n"
    answer = "get('https://slack.com/api/conversations.list');"
    assert published_chat_program(FULL, decoded, answer) == FULL + "get('https://slack.com/api/conversations.list');"


def test_args_setup_repeated_line_and_text_after_the_stop_string():
    answer = (
        "Here you go:\n```javascript\naxios.get('https://slack.com/api/conversations.list', "
        "{headers: {Authorization: 'Bearer <token>'}});\n```\n\nThis code axios.post(...) explains"
    )
    got = published_chat_program(ARGS, _decoded(ARGS), answer)
    # generation ends at the first "\n```\n": the later 'axios.' is never generated
    assert got == (
        "// List the channels.\nconst axios = require('axios');\n\n"
        "axios.get('https://slack.com/api/conversations.list', {headers: {Authorization: 'Bearer <token>'}});\n```"
    )


def test_no_starter_in_the_decoded_text_is_none():
    assert published_chat_program(FULL, "user\nsomething else\nassistant\n", "axios.get('x');") is None


def test_empty_last_line_cuts_everything_as_upstream_does():
    """A starter ending in a line break (upstream's 'import' setup): the last line is '' and
    str.index/rindex of '' are 0 and len -- the program is empty."""
    starter = "// List the channels.\nconst axios = require('axios');\n"
    assert published_chat_program(starter, _decoded(starter), "axios.get('x');") == ""


# ---------------------------------------------------------------------------- the track
@pytest.fixture
def published_root(data_root: Path) -> Path:
    if not (data_root / "wapiibench" / "resources" / "code_generation_prompt.md").is_file():
        pytest.skip("needs WAPIIBench's published prompt in ../shared/data/wapiibench/resources")
    return data_root


def test_handling_defaults_and_conflicts(published_root):
    pub = make_track("webapi", data=str(published_root), prompt_version="published")
    assert pub.chat_handling == "published" and not pub.chat_prefill and pub.chat_template
    assert pub.fingerprint()["chat_handling"] == "published"
    assert pub.default_generation("chat").stop_kept == ("\n```\n",)
    assert pub.default_generation("completion").stop_kept == ("\n```\n",)
    pre = make_track("webapi", data=str(published_root), prompt_version="published", chat_handling="prefill")
    assert pre.chat_prefill and "chat_handling" not in pre.fingerprint()
    assert pre.default_generation("completion").stop == ("\n```",) and not pre.default_generation("completion").stop_kept
    own = make_track("webapi", data=str(published_root))
    assert own.chat_handling == "prefill" and "chat_handling" not in own.fingerprint()
    with pytest.raises(ConfigError, match="needs --prompt published"):
        make_track("webapi", data=str(published_root), chat_handling="published")
    with pytest.raises(ConfigError, match="--chat-handling 'free'"):
        make_track("webapi", data=str(published_root), chat_handling="free")


def test_published_prompt_without_prefill(published_root):
    pub = make_track("webapi", data=str(published_root), prompt_version="published")
    pre = make_track("webapi", data=str(published_root), prompt_version="published", chat_handling="prefill")
    sample = next(s for s in pub.load_samples() if s.id == "slack_3")
    a, b = pub.build_input(sample), pre.build_input(sample)
    assert a.assistant_prefix is None and b.assistant_prefix.startswith("```javascript\n")
    assert a.template_messages == b.template_messages and a.template_messages[0]["role"] == "user"
    assert a.template_messages[0]["content"].endswith(a.metadata["starter"])
    assert pub.fingerprint()["prompts_sha256"] != pre.fingerprint()["prompts_sha256"]


def test_a_chat_answer_is_scored_from_the_decoded_sequence(published_root):
    """The same answer text scores differently with and without the decoded prompt: with it, the
    program is upstream's (the repeated starter cut out); an API chat answer (no decoded prompt)
    is read as upstream reads OpenAI answers."""
    track = make_track("webapi", data=str(published_root), prompt_version="published")
    sample = next(s for s in track.load_samples() if s.id == "slack_3")
    starter = track.build_input(sample).metadata["starter"]
    gold = sample.payload.config
    call = f"axios.{gold.method}('{gold.url}', {{headers: {{Authorization: 'Bearer <token>'}}}});"
    answer = f"```javascript\n{starter.rsplit(chr(10), 1)[0]}\n{call}\n```\n"
    decoded = "user\nprompt text " + starter + "\nassistant\n"
    in_process = ModelOutput(text=answer, mode="chat", extra={"prompt_decoded": decoded})
    program = track._before_run(sample, in_process)[2]
    assert program == published_chat_program(starter, decoded, answer)
    assert program.endswith(call + "\n```")
    api = ModelOutput(text=answer, mode="chat")
    assert track._before_run(sample, api)[2] == starter.rsplit("\n", 1)[0] + "\n" + call + "\n```\n"
    for out in (in_process, api):
        res = track.evaluate(sample, out)
        assert res.status == "ok", (res.status, res.error)
