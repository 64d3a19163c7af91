"""The voice service: hand-checked deterministic state, validation, snapshots, and the MCP server.

The MCP tests start the real server (``python -m ...voice_mcp``) over stdio with the SDK's client,
as an agent harness would; they are skipped when the ``mcp`` SDK (extra ``stateful``) is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import io
import json
import re
import subprocess
import sys
from typing import Any

import pytest

from callbench.tracks.stateful.services.voice import API_DOC, VOICE_CATALOG, VoiceError, VoiceService

needs_mcp = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None,
    reason="the mcp SDK is not installed (pip install -e '.[stateful]')",
)

TEXT = "Hello from the callbench voice service"  # 6 words: 6 / 2.5 = 2.4 s


def scripted(svc: VoiceService) -> None:
    """A short sequence touching every kind of object; its outcome is checked by hand below."""
    assert [v["id"] for v in svc.search_voices(accent="british")] == ["voice_3", "voice_4", "voice_12"]
    assert [v["name"] for v in svc.search_voices("storyteller")] == ["Charlotte"]
    assert svc.text_to_speech(TEXT, "voice_3") == {
        "id": "audio_1",
        "kind": "speech",
        "voice_id": "voice_3",
        "text": TEXT,
        "duration_s": 2.4,
        "source": None,
    }
    assert svc.text_to_speech("Fast words here", "voice_4", speed=1.5)["duration_s"] == 0.8  # 3/2.5/1.5
    assert svc.speech_to_text("audio_1") == {
        "id": "transcript_1",
        "audio_id": "audio_1",
        "text": TEXT,
        "language": "en",
        "word_count": 6,
    }
    assert svc.isolate_audio("audio_1") == {
        "id": "audio_3",
        "kind": "isolated",
        "voice_id": "voice_3",
        "text": TEXT,
        "duration_s": 2.4,
        "source": "audio_1",
    }
    s2s = svc.speech_to_speech("audio_3", "voice_9")
    assert (s2s["id"], s2s["kind"], s2s["voice_id"], s2s["source"], s2s["duration_s"]) == (
        "audio_4",
        "speech",
        "voice_9",
        "audio_3",
        2.4,
    )
    assert svc.outbound_call("+447700900123", "audio_4") == {
        "id": "call_1",
        "phone_number": "+447700900123",
        "audio_id": "audio_4",
        "status": "completed",
        "duration_s": 2.4,
    }
    assert svc.delete_audio("audio_2") == {"id": "audio_2", "deleted": True}
    assert [a["id"] for a in svc.list_audio()] == ["audio_1", "audio_3", "audio_4"]


def histories(snap: dict) -> dict[str, list[str]]:
    sections = ("voices", "audio", "transcripts", "calls")
    return {o["id"]: o["history"] for s in sections for o in snap[s] if o["history"]}


def test_scripted_sequence_ids_durations_histories():
    svc = VoiceService()
    scripted(svc)
    snap = svc.snapshot()
    assert snap["counters"] == {"audio": 4, "call": 1, "transcript": 1}
    assert histories(snap) == {
        "voice_3": ["search_voices", "search_voices", "text_to_speech"],
        "voice_4": ["search_voices", "text_to_speech"],
        "voice_9": ["speech_to_speech"],
        "voice_12": ["search_voices"],
        "audio_1": ["text_to_speech", "speech_to_text", "isolate_audio", "list_audio"],
        "audio_2": ["text_to_speech", "delete_audio"],
        "audio_3": ["isolate_audio", "speech_to_speech", "list_audio"],
        "audio_4": ["speech_to_speech", "outbound_call", "list_audio"],
        "transcript_1": ["speech_to_text"],
        "call_1": ["outbound_call"],
    }
    assert [(a["id"], a["deleted"]) for a in snap["audio"]] == [
        ("audio_1", False),
        ("audio_2", True),
        ("audio_3", False),
        ("audio_4", False),
    ]
    assert [api for api, _ in svc.call_log] == [
        "search_voices",
        "search_voices",
        "text_to_speech",
        "text_to_speech",
        "speech_to_text",
        "isolate_audio",
        "speech_to_speech",
        "outbound_call",
        "delete_audio",
        "list_audio",
    ]
    assert svc.call_log[3] == (
        "text_to_speech",
        {"text": "Fast words here", "voice_id": "voice_4", "speed": 1.5},
    )


def test_history_example_from_the_spec():
    svc = VoiceService()
    audio = svc.text_to_speech("one two", "voice_1")
    svc.speech_to_text(audio["id"])
    svc.isolate_audio(audio["id"])
    assert svc.snapshot()["audio"][0]["history"] == ["text_to_speech", "speech_to_text", "isolate_audio"]


def test_deterministic_and_reset_restarts_ids():
    a, b = VoiceService(), VoiceService()
    scripted(a)
    scripted(b)
    assert json.dumps(a.snapshot()) == json.dumps(b.snapshot())
    a.reset()
    assert a.snapshot() == VoiceService().snapshot()
    assert a.call_log == []
    assert a.text_to_speech("again", "voice_1")["id"] == "audio_1"


def test_catalog_and_search():
    svc = VoiceService()
    assert len(VOICE_CATALOG) == 12
    assert [v["id"] for v in svc.search_voices(limit=50)] == [f"voice_{i}" for i in range(1, 13)]
    assert len(svc.search_voices()) == 10  # default limit
    assert [v["id"] for v in svc.search_voices(gender="neutral")] == ["voice_9", "voice_12"]
    assert [v["id"] for v in svc.search_voices("NEWS indian")] == ["voice_8"]  # all words, any case
    assert svc.search_voices("no such voice") == []
    assert svc.get_voice("voice_7")["name"] == "Priya"


def test_returned_objects_are_copies():
    svc = VoiceService()
    audio = svc.text_to_speech("a b", "voice_1")
    audio["text"] = "tampered"
    svc.get_voice("voice_1")["name"] = "tampered"
    assert svc.get_audio("audio_1")["text"] == "a b"
    assert svc.get_voice("voice_1")["name"] == "Rachel"


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda s: s.text_to_speech("   ", "voice_1"), "at least one word"),
        (lambda s: s.text_to_speech(123, "voice_1"), "text must be a string"),
        (lambda s: s.text_to_speech("x" * 5001, "voice_1"), "limit is 5000"),
        (lambda s: s.text_to_speech("hi", "voice_99"), "unknown voice_id 'voice_99'"),
        (lambda s: s.text_to_speech("hi", "audio_1"), "must be a voice id like 'voice_1'"),
        (lambda s: s.text_to_speech("hi", "voice_1", speed=3), "between 0.5 and 2.0"),
        (lambda s: s.text_to_speech("hi", "voice_1", speed=True), "speed must be a number"),
        (lambda s: s.text_to_speech("hi", "voice_1", speed=float("nan")), "speed must be a number"),
        (lambda s: s.search_voices(gender="robot"), "gender must be one of"),
        (lambda s: s.search_voices(accent="martian"), "accent must be one of"),
        (lambda s: s.search_voices(limit=0), "limit must be an integer from 1 to 50"),
        (lambda s: s.search_voices(limit=True), "limit must be an integer"),
        (lambda s: s.speech_to_text("audio_9"), "unknown audio_id 'audio_9'"),
        (lambda s: s.speech_to_speech("audio_1", "voice_0"), "must be a voice id"),
        (lambda s: s.get_audio("audio_01"), "must be a audio id"),
        (lambda s: s.get_call("call_1"), "unknown call_id 'call_1'"),
        (lambda s: s.get_call("transcript_1"), "must be a call id"),
        (lambda s: s.outbound_call("4155550123", "audio_1"), "E.164"),
        (lambda s: s.outbound_call("+0123456789", "audio_1"), "E.164"),
        (lambda s: s.outbound_call("+1 415 555 0123", "audio_1"), "E.164"),
        (lambda s: s.outbound_call("+1234567", "audio_1"), "E.164"),  # 7 digits
        (lambda s: s.outbound_call("+1234567890123456", "audio_1"), "E.164"),  # 16 digits
        (lambda s: s.outbound_call("+14155550123", "audio_2"), "unknown audio_id"),
    ],
)
def test_validation_errors_change_nothing(call, message):
    svc = VoiceService()
    svc.text_to_speech("seed audio", "voice_1")
    before, log = svc.snapshot(), list(svc.call_log)
    with pytest.raises(VoiceError, match=re.escape(message)):
        call(svc)
    assert svc.snapshot() == before and svc.call_log == log


def test_state_errors():
    svc = VoiceService()
    audio = svc.text_to_speech("a b c", "voice_2")["id"]
    iso = svc.isolate_audio(audio)["id"]
    with pytest.raises(VoiceError, match="already isolated"):
        svc.isolate_audio(iso)
    call = svc.outbound_call("+12345678", audio)  # 8 digits: the shortest E.164 accepted
    assert svc.outbound_call("+123456789012345", iso)["id"] == "call_2"  # 15 digits: the longest
    svc.delete_audio(audio)
    for use in (svc.get_audio, svc.speech_to_text, svc.isolate_audio, svc.delete_audio):
        with pytest.raises(VoiceError, match="has been deleted"):
            use(audio)
    assert svc.get_call(call["id"])["audio_id"] == audio  # the call keeps the deleted audio's id
    assert [c["id"] for c in svc.list_calls()] == ["call_1", "call_2"]
    assert issubclass(VoiceError, ValueError)


def test_snapshot_round_trip():
    svc = VoiceService()
    scripted(svc)
    snap = json.loads(json.dumps(svc.snapshot()))  # JSON-able, and survives JSON
    seeded = VoiceService.from_snapshot(snap)
    assert seeded.snapshot() == snap
    assert seeded.call_log == []
    # Counters carry over, so new ids continue where the seeded run stopped.
    assert seeded.text_to_speech("more", "voice_1")["id"] == "audio_5"
    assert seeded.outbound_call("+14155550123", "audio_5")["id"] == "call_2"
    seeded.reset()
    assert seeded.snapshot() == VoiceService().snapshot()


def test_from_snapshot_hand_written_seed():
    seed = {
        "audio": [
            {
                "id": "audio_7",
                "kind": "speech",
                "voice_id": "voice_2",
                "text": "hi there",
                "duration_s": 0.8,
                "source": None,
            }
        ]
    }
    svc = VoiceService.from_snapshot(seed)
    assert svc.snapshot()["counters"] == {"audio": 7, "call": 0, "transcript": 0}
    assert svc.speech_to_text("audio_7")["word_count"] == 2
    assert svc.text_to_speech("next", "voice_1")["id"] == "audio_8"


@pytest.mark.parametrize(
    "seed,message",
    [
        ([], "snapshot must be a dict"),
        ({"users": []}, "unknown sections"),
        ({"voices": [{"id": "voice_1", "name": "Bob"}]}, "differs from the catalog"),
        (
            {"audio": [{"id": "audio_1", "kind": "speech", "voice_id": "voice_1", "text": "a"}]},
            "missing fields",
        ),
        (
            {
                "audio": [
                    {
                        "id": "audio_1",
                        "kind": "speech",
                        "voice_id": "voice_1",
                        "text": "a",
                        "duration_s": 1,
                        "source": "audio_2",
                    }
                ]
            },
            "source 'audio_2' is not in the snapshot",
        ),
        (
            {
                "audio": [
                    {
                        "id": "audio_1",
                        "kind": "loud",
                        "voice_id": "voice_1",
                        "text": "a",
                        "duration_s": 1,
                        "source": None,
                    }
                ]
            },
            "kind must be one of",
        ),
        (
            {
                "audio": [
                    {
                        "id": "audio_1",
                        "kind": "speech",
                        "voice_id": "voice_1",
                        "text": "a",
                        "duration_s": 1,
                        "source": None,
                    }
                ]
                * 2
            },
            "duplicate id",
        ),
        (
            {
                "calls": [
                    {
                        "id": "call_1",
                        "phone_number": "+14155550123",
                        "audio_id": "audio_1",
                        "status": "completed",
                        "duration_s": 1,
                    }
                ]
            },
            "audio_id 'audio_1' is not in the snapshot",
        ),
        (
            {
                "audio": [
                    {
                        "id": "audio_3",
                        "kind": "speech",
                        "voice_id": "voice_1",
                        "text": "a",
                        "duration_s": 1,
                        "source": None,
                    }
                ],
                "counters": {"audio": 2},
            },
            "counter 'audio' must be an integer >= 3",
        ),
    ],
)
def test_from_snapshot_rejects_bad_state(seed, message):
    with pytest.raises(VoiceError, match=re.escape(message)):
        VoiceService.from_snapshot(seed)


def test_api_doc_covers_the_api_and_its_example_runs():
    for name in ("search_voices", "get_voice", "text_to_speech", "speech_to_speech", "speech_to_text",
                 "isolate_audio", "outbound_call", "get_audio", "list_audio", "delete_audio", "get_call",
                 "list_calls", "VoiceError", "E.164"):  # fmt: skip
        assert name in API_DOC, name
    example = re.search(r"```python\n(.*?)```", API_DOC, re.S).group(1)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(example, {"voice": VoiceService()})  # trusted doc text, checked so the prompt never lies
    assert out.getvalue() == "audio_1 1.6\n"


# ---------------------------------------------------------------------------------------- MCP


def resolve(value: Any, outputs: list[Any]) -> Any:
    """A planned argument ``("$", i, key, ...)`` is earlier output ``i`` indexed by the keys."""
    if isinstance(value, tuple) and value and value[0] == "$":
        out = outputs[value[1]]
        for key in value[2:]:
            out = out[key]
        return out
    return value


# What a scripted agent means to do: each step may use ids from earlier steps' outputs.
PLAN: list[tuple[str, dict[str, Any]]] = [
    ("search_voices", {"query": "news", "accent": "indian"}),
    (
        "text_to_speech",
        {"text": "Your parcel arrives tomorrow morning", "voice_id": ("$", 0, 0, "id"), "speed": 1.25},
    ),
    ("isolate_audio", {"audio_id": ("$", 1, "id")}),
    ("speech_to_text", {"audio_id": ("$", 2, "id")}),
    ("outbound_call", {"phone_number": "+919876543210", "audio_id": ("$", 2, "id")}),
    ("get_call", {"call_id": ("$", 4, "id")}),
    ("list_audio", {}),
]


def run_plan_in_process(plan: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], dict]:
    svc, outputs = VoiceService(), []
    for name, args in plan:
        outputs.append(getattr(svc, name)(**{k: resolve(v, outputs) for k, v in args.items()}))
    return outputs, svc.snapshot()


def test_plan_in_process_hand_checked():
    outputs, _ = run_plan_in_process(PLAN)
    assert outputs[0][0]["id"] == "voice_8"
    assert outputs[1]["duration_s"] == 1.6  # 5 words / 2.5 / 1.25
    assert outputs[5] == {
        "id": "call_1",
        "phone_number": "+919876543210",
        "audio_id": "audio_2",
        "status": "completed",
        "duration_s": 1.6,
    }


@needs_mcp
def test_mcp_server_over_stdio_matches_python_api():
    from callbench.tracks.stateful.services.voice_mcp import API_TOOLS, decode_result, voice_mcp_session

    async def agent() -> tuple[list, list, dict]:
        async with voice_mcp_session() as session:
            tools = {t.name: t for t in (await session.list_tools()).tools}
            results = []
            tts = decode_result("text_to_speech", await session.call_tool(
                "text_to_speech", {"text": TEXT, "voice_id": "voice_3"}))  # fmt: skip
            results.append(tts)
            audio_id = tts["result"]["id"]
            results.append(
                decode_result(
                    "speech_to_text", await session.call_tool("speech_to_text", {"audio_id": audio_id})
                )
            )
            bad = await session.call_tool("outbound_call", {"phone_number": "555-0123", "audio_id": audio_id})
            missing_arg = await session.call_tool("text_to_speech", {"text": "no voice"})
            results.append(decode_result("outbound_call", await session.call_tool(
                "outbound_call", {"phone_number": "+14155550123", "audio_id": audio_id})))  # fmt: skip
            results.append(decode_result("list_calls", await session.call_tool("list_calls", {})))
            snap = decode_result("snapshot", await session.call_tool("snapshot", {}))["result"]
            return tools, results, [bad, missing_arg], snap

    tools, results, errors, snap = asyncio.run(agent())

    assert set(tools) == set(API_TOOLS) | {"snapshot", "reset"}
    schema = tools["text_to_speech"].input_schema
    assert schema["required"] == ["text", "voice_id"]
    assert (
        schema["properties"]["speed"]["type"] == "number" and schema["properties"]["speed"]["default"] == 1.0
    )
    assert "female" in json.dumps(tools["search_voices"].input_schema["properties"]["gender"])  # enum
    assert "duration_s" in tools["text_to_speech"].description
    assert "harness" in tools["snapshot"].description

    bad, missing_arg = errors
    assert bad.is_error and "E.164" in bad.content[0].text and "555-0123" in bad.content[0].text
    assert missing_arg.is_error and "voice_id" in missing_arg.content[0].text

    ref = VoiceService()
    want = [
        ref.text_to_speech(TEXT, "voice_3"),
        ref.speech_to_text("audio_1"),
        ref.outbound_call("+14155550123", "audio_1"),
        ref.list_calls(),
    ]
    assert [r["result"] for r in results] == want
    assert snap == ref.snapshot()


@needs_mcp
def test_scripted_agent_over_mcp_with_seed_and_reset():
    from callbench.tracks.stateful.services.voice_mcp import decode_result, voice_mcp_session

    seed_svc = VoiceService()
    seed_svc.text_to_speech("already here", "voice_1")  # the seed owns audio_1, so the plan's ids shift
    seed = seed_svc.snapshot()

    async def agent() -> tuple[list, dict, dict]:
        outputs = []
        async with voice_mcp_session(seed) as session:
            for name, args in PLAN:
                outcome = decode_result(
                    name, await session.call_tool(name, {k: resolve(v, outputs) for k, v in args.items()})
                )
                assert outcome["ok"], outcome
                outputs.append(outcome["result"])
            final = decode_result("snapshot", await session.call_tool("snapshot", {}))["result"]
            await session.call_tool("reset", {})
            after_reset = decode_result("snapshot", await session.call_tool("snapshot", {}))["result"]
        return outputs, final, after_reset

    outputs, final, after_reset = asyncio.run(agent())

    ref = VoiceService.from_snapshot(seed)
    want = []
    for name, args in PLAN:
        want.append(getattr(ref, name)(**{k: resolve(v, want) for k, v in args.items()}))
    assert outputs == want
    assert final == ref.snapshot()
    assert outputs[5]["audio_id"] == "audio_3" and [a["id"] for a in outputs[6]] == [
        "audio_1",
        "audio_2",
        "audio_3",
    ]
    assert after_reset == VoiceService().snapshot()


@needs_mcp
def test_call_voice_mcp_helper():
    from callbench.tracks.stateful.services.voice_mcp import call_voice_mcp

    calls = [
        ("text_to_speech", {"text": "one two three", "voice_id": "voice_5"}),
        ("isolate_audio", {"audio_id": "audio_1"}),
        ("isolate_audio", {"audio_id": "audio_2"}),  # an error does not stop the run
        ("search_voices", {"gender": "neutral"}),
    ]
    results, snap = asyncio.run(call_voice_mcp(calls))
    assert [r["ok"] for r in results] == [True, True, False, True]
    assert "already isolated" in results[2]["error"]
    assert [v["id"] for v in results[3]["result"]] == ["voice_9", "voice_12"]  # list results unwrapped
    ref = VoiceService()
    ref.text_to_speech("one two three", "voice_5")
    ref.isolate_audio("audio_1")
    ref.search_voices(gender="neutral")
    assert snap == ref.snapshot()
    with pytest.raises(ValueError, match="unknown voice tools"):
        asyncio.run(call_voice_mcp([("make_coffee", {})]))


@needs_mcp
def test_server_rejects_a_bad_state_file(tmp_path):
    bad = tmp_path / "state.json"
    bad.write_text(json.dumps({"audio": [{"id": "audio_1"}]}))
    proc = subprocess.run(
        [sys.executable, "-m", "callbench.tracks.stateful.services.voice_mcp", "--state", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "cannot seed from" in proc.stderr and "missing fields" in proc.stderr
