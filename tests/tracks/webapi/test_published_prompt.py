"""WAPIIBench's published prompt (issue 13, part 2): fetched with the data, filled as upstream.

The prompt file here is a stand-in written for these tests (upstream's text is data fetched at run
time, never committed); it has upstream's three placeholders and ends, as upstream's does, with an
open code fence.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.api import make_track, run
from callbench.cli import app
from callbench.data.fetch import fetch_data
from callbench.errors import ConfigError, DataError
from callbench.tracks.webapi.published import PROMPT_FILE

STAND_IN = (
    "You write one Axios request in JavaScript for a task given as a comment. Call it as `{syntax}` "
    "and add nothing else.\n\n"
    "- Use `<token>` or `<key>` where a secret goes.\n\n"
    "The task is for the {api} API. Finish this snippet{extra_instructions}:\n\n"
    "```javascript\n"
)


def _data_dir(tmp_path: Path, data_root: Path, text: str | None = STAND_IN) -> Path:
    """A data dir holding the shared WAPIIBench files (linked) and, unless ``text`` is None, a
    published prompt file where 'data fetch wapiibench' puts it."""
    root = tmp_path / "data"
    w = root / "wapiibench"
    w.mkdir(parents=True)
    for name in ("data", "openapi", "LICENSE"):
        (w / name).symlink_to(data_root / "wapiibench" / name)
    if text is not None:
        (w / PROMPT_FILE).parent.mkdir(parents=True)
        (w / PROMPT_FILE).write_bytes(text.encode())
    return root


def _filled(text: str, api: str, extra: str) -> str:
    """The file's text with its placeholders filled by hand, as upstream's evaluation code does."""
    return (
        text.replace("{syntax}", "axios.method(url[, config])")
        .replace("{api}", api)
        .replace("{extra_instructions}", extra)
    )


def _track(root: Path, **opts):
    return make_track("webapi", data=str(root), prompt_version="published", **opts)


@pytest.mark.parametrize("setup", ["full", "args"])
def test_prompt_is_the_fetched_file_filled_then_the_starter(tmp_path, data_root, setup):
    root = _data_dir(tmp_path, data_root)
    text = (root / "wapiibench" / PROMPT_FILE).read_text(encoding="utf-8")
    track = _track(root, setup=setup)
    prefill = _track(root, setup=setup, chat_handling="prefill")
    track.load_samples()
    for task in list(track._tasks.values())[::60]:
        starter = f"// {task.task}\nconst axios = require('axios');\n\naxios."
        if setup == "args":
            starter += f"{task.config.method}('{task.config.url}',"
        api = {"asana": "Asana", "google_calendar_v3": "Google Calendar", "google_sheet_v4": "Google Sheets",
               "slack": "Slack Web"}[task.api]
        p = track._prompt(task)
        assert p.starter == starter
        assert p.completion_prompt == _filled(text, api, "") + starter
        # instruct models run in-process: the whole input as one user message, "without any
        # explanations" appended to the last sentence's end without a space (as upstream)
        assert p.template_messages == [{"role": "user", "content": _filled(text, api, "without any explanations") + starter}]
        assert "snippetwithout any explanations:" in p.template_messages[0]["content"]
        # upstream's handling (the default with this prompt): no prefill, the answer is searched
        assert p.assistant_prefix is None
        # callbench's prefill on request: the fence and the starter open the answer
        assert prefill._prompt(task).assistant_prefix == "```javascript\n" + starter


def test_the_task_is_written_as_the_dataset_has_it(tmp_path, data_root):
    """Upstream puts the task into the comment unchanged (three tasks have a double space)."""
    track = _track(_data_dir(tmp_path, data_root))
    track.load_samples()
    doubled = [t for t in track._tasks.values() if "  " in t.task]
    assert doubled
    for t in doubled:
        assert track._prompt(t).starter.startswith(f"// {t.task}\n")


def test_chat_split_at_the_first_full_stop_and_space(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root)
    track = _track(root)
    track.load_samples()
    task = next(iter(track._tasks.values()))
    p = track._prompt(task)
    system, user = p.messages
    assert system == {"role": "system", "content": "You write one Axios request in JavaScript for a task given as a comment."}
    assert user["role"] == "user"
    assert user["content"].startswith("Call it as `axios.method(url[, config])` and add nothing else.")
    assert system["content"] + " " + user["content"] == p.completion_prompt
    assert user["content"].endswith("```javascript\n" + p.starter)
    # the model input the track sends
    inp = track.build_input(track.load_samples()[0])
    assert inp.prompt == p.completion_prompt and inp.messages == p.messages


def test_a_prompt_without_a_sentence_break_cannot_be_split(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root, text="Axios `{syntax}` for {api}{extra_instructions}:\n```javascript\n")
    track = _track(root)
    track.load_samples()
    with pytest.raises(DataError, match=r"code_generation_prompt\.md: the prompt has no '\. '"):
        track.fingerprint()


def test_identity_records_the_file_and_changes_with_it(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root)
    fp = _track(root).fingerprint()
    digest = hashlib.sha256(STAND_IN.encode()).hexdigest()
    assert fp["prompt_version"] == "published"
    assert fp["prompt_file_sha256"] == digest and fp["prompt_hash"] == digest[:16]
    v2 = make_track("webapi", data=str(root)).fingerprint()
    assert v2["prompts_sha256"] != fp["prompts_sha256"] and "prompt_file_sha256" not in v2
    (root / "wapiibench" / PROMPT_FILE).write_text(STAND_IN.replace("one Axios request", "a single Axios request"))
    fp2 = _track(root).fingerprint()
    assert fp2["prompt_file_sha256"] != digest and fp2["prompts_sha256"] != fp["prompts_sha256"]
    args = _track(root, setup="args").fingerprint()
    assert args["prompts_sha256"] != fp2["prompts_sha256"]


def test_missing_file_says_to_fetch(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root, text=None)
    path = root / "wapiibench" / PROMPT_FILE
    with pytest.raises(DataError, match="run 'callbench data fetch wapiibench'") as exc:
        _track(root)
    assert str(path) in str(exc.value)
    res = CliRunner().invoke(
        app, ["run", "webapi", "--model", "gold", "--prompt", "published", "--data", str(root), "--out", str(tmp_path / "runs")]
    )
    assert res.exit_code != 0
    assert "callbench data fetch wapiibench" in res.output
    assert "Traceback" not in res.output


def test_options_that_do_not_fit(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root)
    with pytest.raises(ConfigError, match="--base-url-hint on"):
        _track(root, base_url_hint="on")
    res = CliRunner().invoke(
        app,
        ["run", "webapi", "--model", "gold", "--prompt", "published", "--prompt-version", "v1", "--data", str(root),
         "--out", str(tmp_path / "runs")],
    )
    assert res.exit_code != 0 and "leave out --prompt-version v1" in res.output


def test_spec_context_comes_first_as_upstream_joins_it(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root)
    text = (root / "wapiibench" / PROMPT_FILE).read_text(encoding="utf-8")
    track = _track(root, context="spec-excerpt")
    track.load_samples()
    task = next(iter(track._tasks.values()))
    p = track._prompt(task)
    excerpt = track._context(task)
    assert p.completion_prompt == excerpt + "\n\n\n" + _filled(text, "Asana", "") + p.starter
    assert p.messages[0]["content"] + " " + p.messages[1]["content"] == p.completion_prompt


def test_fetch_from_a_mirror_gets_the_prompt_file(tmp_path, data_root):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in ("data", "openapi", "LICENSE"):
        (mirror / name).symlink_to(data_root / "wapiibench" / name)
    (mirror / "resources").mkdir()
    (mirror / PROMPT_FILE).write_text(STAND_IN)
    digest = hashlib.sha256(STAND_IN.encode()).hexdigest()
    # the stand-in is not upstream's file: the pinned digest refuses it, and the optional file is
    # skipped without breaking the dataset's fetch; pinned explicitly (--sha256), a mismatch is an error
    events: list[tuple[str, str]] = []
    fetch_data("wapiibench", root=tmp_path / "d0", mirror=mirror, on_file=lambda path, state: events.append((path, state)))
    assert (PROMPT_FILE, "skipped") in events and not (tmp_path / "d0/wapiibench" / PROMPT_FILE).exists()
    assert any(state == "fetched" for _, state in events)
    with pytest.raises(DataError, match="code_generation_prompt.md: checksum mismatch"):
        fetch_data("wapiibench", root=tmp_path / "d1", mirror=mirror, pins={PROMPT_FILE: "0" * 64})
    events = []
    dest = fetch_data("wapiibench", root=tmp_path / "d", mirror=mirror, pins={PROMPT_FILE: digest},
                      on_file=lambda path, state: events.append((path, state)))
    assert (PROMPT_FILE, "fetched") in events
    assert (dest / PROMPT_FILE).read_bytes() == STAND_IN.encode()
    # the published prompt text is the fetched file's
    track = _track(tmp_path / "d")
    assert track.published.text == (dest / PROMPT_FILE).read_text(encoding="utf-8")
    assert track.published.sha256 == digest
    # a mirror without it: skipped, the rest fetched
    (mirror / PROMPT_FILE).unlink()
    events.clear()
    fetch_data("wapiibench", root=tmp_path / "d2", mirror=mirror, on_file=lambda path, state: events.append((path, state)))
    assert (PROMPT_FILE, "skipped") in events and not (tmp_path / "d2/wapiibench" / PROMPT_FILE).exists()


def test_gold_scores_everything_with_the_published_prompt(tmp_path, data_root):
    root = _data_dir(tmp_path, data_root)
    ids = ["asana_0", "google_calendar_v3_0", "google_sheet_v4_0", "slack_0"]
    for setup in ("full", "args"):
        out = run("webapi", "gold", out_dir=tmp_path / "runs", ids=ids, data=str(root), prompt_version="published",
                  setup=setup)
        assert out.summary["n"] == 4
        assert out.summary["metrics"]["correct_implementations_t"] == 1.0
    res = CliRunner().invoke(
        app, ["run", "webapi", "--model", "gold", "--prompt", "published", "--ids", "slack_1,asana_1", "--no-progress",
              "--data", str(root), "--out", str(tmp_path / "runs2")]
    )
    assert res.exit_code == 0, res.output
    assert "published prompt" in res.output
