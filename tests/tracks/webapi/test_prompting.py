"""Prompt versions and formats of the web API track (issue 9, part 2 and 3)."""

from __future__ import annotations

import pytest

from callbench.errors import ConfigError
from callbench.tracks.webapi.prompting import PROMPT_VERSION, build_prompt, templates_hash


def test_versions_are_selectable_and_differ_in_the_credential_rule(wapii_tasks):
    task = wapii_tasks[0]
    v1 = build_prompt(task, "full", version="v1")
    v2 = build_prompt(task, "full", version="v2")
    assert PROMPT_VERSION == "v2" and templates_hash("v1") != templates_hash("v2")
    assert "Bearer <token>" not in v1.completion_prompt
    assert "Authorization: 'Bearer <token>'" in v2.completion_prompt
    assert v1.starter == v2.starter
    with pytest.raises(ConfigError, match="--prompt-version 'v9'"):
        build_prompt(task, "full", version="v9")


@pytest.mark.parametrize("setup", ["full", "args"])
def test_prefilled_chat_shows_the_starter_once_at_the_start_of_the_answer(wapii_tasks, setup):
    for task in wapii_tasks[::50]:
        p = build_prompt(task, setup)
        assert p.assistant_prefix == "```javascript\n" + p.starter
        system, user = p.template_messages
        assert system == p.messages[0] and user["role"] == "user"
        assert p.starter not in user["content"] and "```" not in user["content"]
        assert user["content"].endswith("which your answer starts with; continue it from where it stops:")
        # The free-chat question (API models) still carries the starter, in a code block.
        assert p.starter in p.messages[1]["content"]


def test_track_inputs_ask_for_healing_and_prefill(data_root):
    from callbench.api import make_track

    track = make_track("webapi", data=str(data_root), prompt_version="v1")
    sample = track.load_samples()[0]
    inp = track.build_input(sample)
    assert inp.heal_boundary and inp.assistant_prefix.endswith("axios.") and inp.template_messages
    assert track.fingerprint()["prompt_version"] == "v1"
    with pytest.raises(ConfigError, match="--prompt-version"):
        make_track("webapi", data=str(data_root), prompt_version="v3")


def test_fingerprint_follows_how_prompts_are_built(data_root, monkeypatch):
    """Not only the template files: a change in the code that assembles prompts (here the prefill
    wording) changes the run identity, so old answers are never resumed under a new prompt."""
    from callbench.api import make_track
    from callbench.tracks.webapi import prompting

    before = make_track("webapi", data=str(data_root)).fingerprint()["prompts_sha256"]
    assert make_track("webapi", data=str(data_root), prompt_version="v1").fingerprint()["prompts_sha256"] != before
    monkeypatch.setattr(prompting, "_PREFILL_EXTRA", ", continue it")
    assert make_track("webapi", data=str(data_root)).fingerprint()["prompts_sha256"] != before
