"""StateGen's voice API (SpeechLab) in callbench's voice scenario: the behaviour the published
voice oracles record, hand-computed here from the upstream mock's documented behaviour."""

from __future__ import annotations

import pytest

from callbench.tracks.stateful.execution import Case, execute
from callbench.tracks.stateful.scenarios import get_scenario
from callbench.tracks.stateful.services.speech_lab import (
    LIBRARY,
    Speech,
    SpeechLab,
    SpeechLabError,
    canonical_calls,
    speech_from_json,
    to_jsonable,
)


def test_text_to_speech_makes_a_sixteen_second_speech_with_its_settings():
    s = SpeechLab().text_to_speech("Hi there", voice_name="Emma", stability=0.5)
    assert s.to_json() == {
        "text": "Hi there",
        "voice_name": "Emma",
        "stability": 0.5,
        "similarity_boost": None,
        "style": None,
        "duration": 16.0,
        "transitions": [
            [
                "text_to_speech",
                {"voice_name": "Emma", "stability": 0.5, "similarity_boost": None, "style": None},
            ]
        ],
        "is_speech": True,
    }
    assert SpeechLab().text_to_speech("x", voice_name="Nobody").voice_name == "Nobody"  # not checked


def test_copies_and_in_place_effects():
    lab = SpeechLab()
    s = lab.text_to_speech("Hi", voice_name="Emma")
    iso = lab.isolate_audio(s)
    assert (iso.duration, s.duration) == (8.0, 16.0) and iso.transitions[-1] == ["isolate_audio", {}]
    assert len(s.transitions) == 1  # the input is unchanged
    moved = lab.speech_to_speech(iso, "James")
    assert moved.voice_name == "James" and iso.voice_name == "Emma"
    assert lab.speech_to_text(s, diarize=True) == {"text": "Hi", "diarize": True}
    assert s.transitions[-1] == ["speech_to_text", {"diarize": True}]  # recorded on the speech itself
    with pytest.raises(AssertionError, match="Voice name Nobody not found"):
        lab.speech_to_speech(s, "Nobody")


def test_outbound_calls_hold_the_speech_itself_and_are_recorded_before_the_check():
    lab = SpeechLab()
    s = lab.text_to_speech("Hi", voice_name="Emma")
    assert lab.make_outbound_call(s, "Emma") is True
    lab.speech_to_text(s)  # after the call: the record shows it, as upstream's does
    with pytest.raises(SpeechLabError):
        lab.make_outbound_call(s, "Nobody")
    calls = lab.outbound_calls()
    assert [v for _s, v in calls] == ["Emma", "Nobody"]
    assert calls[0][0]["transitions"][-1] == ["speech_to_text", {"diarize": False}]


def test_search_voice_library():
    lab = SpeechLab()
    assert lab.search_voice_library(search_name="Emma") == [
        {"category": "conversational", "gender": "feminine", "voice_name": "Emma"}
    ]
    assert lab.search_voice_library(search_name="Nobody") is None
    old = lab.search_voice_library(search_category="old")
    assert [v["voice_name"] for v in old] == ["Alexander", "Isabella"]  # sorted by name
    assert [
        v["voice_name"] for v in lab.search_voice_library(search_category="old", search_gender="feminine")
    ] == ["Isabella"]
    assert len(lab.search_voice_library(search_gender="masculine")) == 5
    with pytest.raises(AssertionError, match="At least one"):
        lab.search_voice_library()
    assert len(LIBRARY) == 10


def test_speech_equality_and_json_round_trip():
    a = Speech("t", "Emma", 0.5, None, None)
    assert a == Speech("t", "Emma", 0.5 + 1e-9, None, None)
    assert a != Speech("t", "Emma", 0.6, None, None) and a != Speech("t", "Emma", None, None, None)
    nested = {"x": [a.to_json(), {"y": a.to_json()}], "n": 1}
    back = speech_from_json(nested)
    assert back["x"][0] == a and back["x"][1]["y"] == a and back["n"] == 1
    assert to_jsonable((a, [a])) == [a.to_json(), [a.to_json()]]
    assert canonical_calls([["b", 2], ["a", 1]]) == [["a", 1], ["b", 2]]


def test_programs_of_the_voice_scenario_see_the_functions_and_preloaded_speeches():
    """In the sandbox: a preloaded speech (``__load__``) is a Speech, the functions act on one lab,
    its outbound calls are the state's ``outbound_calls``; the result's speeches arrive as JSON."""
    scenario = get_scenario("voice")
    loaded = Speech("Hello", "user_voice", None, None, None).to_json()
    code = (
        "assert isinstance(user_speech_0, Speech)\n"
        "iso = isolate_audio(input_speech=user_speech_0)\n"
        "make_outbound_call(input_speech=iso, voice_name='Emma')\n"
        "result = (iso, speech_to_text(input_speech=user_speech_0, diarize=False))\n"
    )
    out = execute(scenario, code, Case("base", {"user_speech_0": {"__load__": loaded}}))
    assert out.status == "ok", out.error
    iso = {**loaded, "duration": 8.0, "transitions": [["isolate_audio", {}]]}
    assert out.result == [iso, {"text": "Hello", "diarize": False}]
    assert out.state["outbound_calls"] == [[iso, "Emma"]]


def test_programs_that_only_use_api_keep_their_state():
    """No outbound call: no ``outbound_calls`` section, so the built-in voice tasks' recorded
    states are unchanged."""
    out = execute(get_scenario("voice"), "result = api.search_voices('calm')[0]['id']\n", Case("base", {}))
    assert out.status == "ok" and out.result == "voice_1" and "outbound_calls" not in out.state
