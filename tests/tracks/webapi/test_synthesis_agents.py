"""The LLM writer + reviewer path (issue 15, parts 3 and 6) with a scripted backend: a good text is
approved, a text missing a value goes back with what is missing, a reviewer's rejection and
garbage cost rounds, rounds are bounded (then the template text, or no paraphrase), transcripts
are stored, and paraphrases of one request share its gold."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from callbench.cli import app
from callbench.models.registry import register_model
from callbench.specs import load_spec
from callbench.testing.scripted import ScriptedModel
from callbench.tracks.webapi.synthesis.agents import clean_draft, write_text
from callbench.tracks.webapi.synthesis.generate import GenerateOptions, generate_webapi
from callbench.tracks.webapi.synthesis.gold import gold_request

SPEC = """
openapi: 3.0.3
info: {title: Notes, version: '1'}
servers: [{url: 'https://notes.example/api'}]
paths:
  /notes:
    post:
      operationId: createNote
      summary: Create a note.
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [title, pinned]
              properties:
                title: {type: string, example: Groceries}
                pinned: {type: boolean, example: true}
                priority: {type: integer, example: 3}
"""
GOOD = "Create a note titled 'Groceries' that is pinned."
APPROVE = json.dumps({"complete": True, "unambiguous": True, "natural": 4, "approve": True, "feedback": ""})
REJECT = json.dumps({"complete": False, "unambiguous": True, "natural": 4, "approve": False, "feedback": "say it is pinned"})


@pytest.fixture()
def spec_file(tmp_path: Path) -> Path:
    p = tmp_path / "notes.yaml"
    p.write_text(SPEC)
    return p


def _gold(spec_file: Path):
    spec = load_spec(spec_file)
    gold = gold_request(spec, spec.operation("post", "/notes"), seed=0, difficulty="easy")
    assert gold.config["data"] == {"title": "Groceries", "pinned": True}
    return gold


def _write(gold, writer, reviewer, **kw):
    return asyncio.run(write_text(gold, writer, reviewer, api_title="Notes", **kw))


def test_a_good_text_is_approved(spec_file: Path):
    writer, reviewer = ScriptedModel([f"Task: \"{GOOD}\""]), ScriptedModel([APPROVE])
    res = _write(_gold(spec_file), writer, reviewer)
    assert res.text == GOOD and res.source == "agents" and res.rounds == 1
    assert res.verdict["approve"] is True and not res.rejections
    asked = writer.seen[0].messages[-1]["content"]
    assert "title: 'Groceries'" in asked and "pinned: true" in asked
    assert reviewer.seen[0].messages[-1]["content"].count(GOOD) == 1


def test_a_text_missing_a_value_goes_back(spec_file: Path):
    writer = ScriptedModel(["Create a pinned note.", GOOD])
    reviewer = ScriptedModel([APPROVE])
    res = _write(_gold(spec_file), writer, reviewer)
    assert res.text == GOOD and res.rounds == 2
    assert "'Groceries'" in res.rejections[0] and "is not in the text" in res.rejections[0]
    assert "Fix:" in writer.seen[1].messages[-1]["content"] and "Groceries" in writer.seen[1].messages[-1]["content"]
    assert len(reviewer.seen) == 1  # the incomplete draft never reached the reviewer


def test_a_reviewer_rejection_costs_a_round(spec_file: Path):
    writer = ScriptedModel(["Create a note 'Groceries' with pinned set.", GOOD])
    reviewer = ScriptedModel([REJECT, APPROVE])
    res = _write(_gold(spec_file), writer, reviewer)
    assert res.text == GOOD and res.rounds == 2
    assert res.rejections == ["round 1: reviewer: say it is pinned"]
    assert "say it is pinned" in writer.seen[1].messages[-1]["content"]
    assert len(res.reviewer_transcript) == 4  # two (question, answer) pairs


def test_garbage_is_never_approved_and_rounds_are_bounded(spec_file: Path):
    writer = ScriptedModel(["", "```js\naxios.post('/notes', {title: 'Groceries'})\n```", GOOD])
    reviewer = ScriptedModel(["I like it!!!"])  # no JSON: unreadable
    res = _write(_gold(spec_file), writer, reviewer, rounds=3)
    assert res.text is None and res.source == "not approved" and res.rounds == 3
    assert "the text is empty" in res.rejections[0]
    assert "contains code" in res.rejections[1]
    assert "could not be read" in res.rejections[2]
    assert len(writer.seen) == 3 and not writer.answers  # exactly `rounds` drafts
    assert clean_draft("  Task:  'a\n b'  ") == "a b"


def test_generate_with_agents_paraphrases_and_transcripts(spec_file: Path, tmp_path: Path):
    # gold 0 gets two approved paraphrases; gold 1's first text is never approved -> template,
    # its second paraphrase is dropped
    writer = ScriptedModel([GOOD, GOOD, "A pinned note called 'Groceries', please.",  # gold 0 (a repeat is refused)
                            "nothing", "nothing", "nothing", "nothing", "nothing", "nothing"])
    reviewer = ScriptedModel([APPROVE, APPROVE])
    out = tmp_path / "bench"
    res = generate_webapi(spec_file, "notes.yaml", out, GenerateOptions(n=2, seed=0, difficulty="easy", paraphrases=2, test_share=0.0, rounds=3),
                          writer=writer, reviewer=reviewer)
    m = res.manifest
    assert m["n_gold"] == 1  # one operation, easy: one distinct request only
    rows = [json.loads(line) for line in (out / "tasks.jsonl").read_text().splitlines()]
    assert [(r["gold_id"], r["paraphrase"], r["text_source"]) for r in rows] == [(0, 0, "agents"), (0, 1, "agents")]
    assert rows[0]["task"] == GOOD and rows[1]["task"] == "A pinned note called 'Groceries', please."
    assert rows[0]["config"] == rows[1]["config"]
    assert m["text_source"] == {"agents": 2} and m["writer"] and m["reviewer"]
    tr = [json.loads(line) for line in (out / "transcripts.jsonl").read_text().splitlines()]
    assert [t["paraphrase"] for t in tr] == [0, 1]
    assert "repeats one already written" in tr[1]["rejections"][0]
    assert tr[0]["writer"][0]["role"] == "system" and tr[0]["reviewer"][-1]["content"] == APPROVE


def test_unapproved_texts_fall_back_to_the_template(spec_file: Path, tmp_path: Path):
    writer = ScriptedModel(["nothing"] * 6)
    reviewer = ScriptedModel([])
    res = generate_webapi(spec_file, "notes.yaml", tmp_path / "b", GenerateOptions(n=1, difficulty="easy", paraphrases=2, rounds=3),
                          writer=writer, reviewer=reviewer)
    assert [r["text_source"] for r in res.rows] == ["template (agents not approved)"]
    assert res.manifest["dropped"] == {"paraphrase_not_approved": 1}
    assert "`title` = 'Groceries'" in res.rows[0]["task"]


def test_cli_writer_and_reviewer(spec_file: Path, tmp_path: Path):
    answers = {"w": [GOOD], "r": [APPROVE]}
    register_model("scripted-test")(lambda target, options: ScriptedModel(list(answers[target])))
    out = tmp_path / "cli"
    res = CliRunner().invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--n", "1", "--difficulty", "easy", "--out", str(out),
                                   "--writer", "scripted-test:w", "--reviewer", "scripted-test:r", "--no-grammar-check"])
    assert res.exit_code == 0, res.output
    row = json.loads((out / "tasks.jsonl").read_text())
    assert row["task"] == GOOD and row["text_source"] == "agents" and row["spec"] == "../notes.yaml"
    assert (out / "transcripts.jsonl").is_file()


@pytest.mark.slow
def test_llamacpp_default_end_to_end(spec_file: Path, tmp_path: Path):
    """The LLM path with the embedded default model as writer and reviewer: it runs to the end,
    every row is written (an unapproved text falls back to the template) and transcripts exist."""
    pytest.importorskip("llama_cpp")
    out = tmp_path / "llm"
    res = CliRunner().invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--n", "1", "--difficulty", "easy", "--rounds", "1",
                                   "--writer", "llamacpp:default", "--out", str(out), "--no-grammar-check"])
    assert res.exit_code == 0, res.output
    row = json.loads((out / "tasks.jsonl").read_text())
    assert row["text_source"] in ("agents", "template (agents not approved)")
    transcript = json.loads((out / "transcripts.jsonl").read_text())
    assert transcript["writer"][-1]["role"] in ("assistant", "user") and len(transcript["writer"]) >= 3


def test_openai_writer_and_reviewer_over_http(spec_file: Path, tmp_path: Path):
    """The issue's command, `--writer openai:M@URL --reviewer openai:M@URL`, against a scripted
    OpenAI-compatible server: the first draft misses a value, the second is approved."""
    pytest.importorskip("aiohttp")
    from callbench.testing.fake_openai import FakeOpenAIServer

    drafts = iter(["Create a pinned note.", GOOD])

    def respond(body: dict) -> dict:
        system = body["messages"][0]["content"]
        if system.startswith("You review"):
            return {"content": APPROVE}
        return {"content": next(drafts)}

    with FakeOpenAIServer(respond) as server:
        spec_arg = f"openai:m@{server.url}"
        out = tmp_path / "http"
        res = CliRunner().invoke(app, ["generate", "webapi", "--spec", str(spec_file), "--n", "1", "--difficulty", "easy", "--out", str(out),
                                       "--writer", spec_arg, "--reviewer", spec_arg, "--no-grammar-check"])
        assert res.exit_code == 0, res.output
        systems = [b["messages"][0]["content"][:10] for _, b in server.requests]
        assert systems == ["You write ", "You write ", "You review"]  # draft 1 (refused by the check), draft 2, the review
    row = json.loads((out / "tasks.jsonl").read_text())
    assert row["task"] == GOOD and row["text_source"] == "agents"
    tr = json.loads((out / "transcripts.jsonl").read_text())
    assert tr["rounds"] == 2 and "is not in the text" in tr["rejections"][0]
