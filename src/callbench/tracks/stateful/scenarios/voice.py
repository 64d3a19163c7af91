"""*voice*: text-to-speech, speech-to-speech, speech-to-text, audio isolation, voice search and
outbound calls, with per-object call history (:mod:`callbench.tracks.stateful.services.voice`).

Effects run a shadow :class:`VoiceService` kept in the abstract world, so abstract values
(durations, ids, search hits) are exactly what the real program will see. Programs call the
Python API through the preloaded ``api`` object; the same service is offered over MCP
(:mod:`callbench.tracks.stateful.services.voice_mcp`) for tool-calling agents.

State comparison ignores read-only calls in the per-object histories (``get_*``, ``list_*``,
``search_voices``): a program may look things up more often than the reference, but every
create/transform/delete/call is part of the state.

Programs also see StateGen's own voice API (:mod:`callbench.tracks.stateful.services.speech_lab`:
``text_to_speech(text=..., voice_name=...)`` and the other module-level functions of its SpeechLab
mock, and ``Speech``), which the published StateEval's voice programs call. Its outbound calls are
the state section ``outbound_calls`` (compared as a multiset, as upstream does; left out when no
call was made, so programs that only use ``api`` have the same state as before). Objects the
published tasks preload (``init_load_info``: speech objects) arrive as ``{"__load__": <published
JSON>}`` and are rebuilt as :class:`~callbench.tracks.stateful.services.speech_lab.Speech` by the setup.
"""

from __future__ import annotations

from random import Random
from typing import Any

from callbench.tracks.stateful.scenario import (
    AbsObject,
    Api,
    Initial,
    ObjectType,
    Param,
    Runtime,
    Scenario,
    World,
    choice,
)
from callbench.tracks.stateful.services.speech_lab import FUNCTIONS, STATE_SECTION, canonical_calls
from callbench.tracks.stateful.services.voice import API_DOC, VoiceService

READS = frozenset({"get_voice", "get_audio", "list_audio", "get_call", "list_calls", "search_voices"})

_TEXTS = (
    "Your order has shipped and will arrive on Tuesday.",
    "Welcome to the quarterly planning meeting.",
    "Please call us back at your earliest convenience.",
    "The library closes early today.",
    "Thank you for holding, an agent will be with you shortly.",
    "Remember to bring your passport to the appointment.",
    "The weather tomorrow will be sunny with light wind.",
    "Your table for four is confirmed for eight o'clock.",
)
_PHONES = ("+14155550123", "+442071838750", "+61293744000", "+919876543210", "+353862222333")
_QUERIES = ("calm", "narrator", "voice", "warm", "games", "neutral", "clear", "audiobooks")


def _svc(world: World) -> VoiceService:
    return world.data["svc"]


def _obj(world: World, type_: str, row: dict[str, Any]) -> AbsObject:
    """The abstract object for a service row (same id -> same object), attributes refreshed."""
    for o in world.objects.values():
        if o.type == type_ and o.attrs.get("id") == row["id"]:
            o.attrs.update(row)
            return o
    return world.create(type_, **row)


def _search(world: World, a: dict, o: dict) -> list[AbsObject]:
    rows = _svc(world).search_voices(a["query"], gender=a["gender"])
    return [_obj(world, "voice", r) for r in rows]


def _query_domain(rng: Random, world: World, objs: dict) -> str:
    return rng.choice(_QUERIES)


def _gender_domain(rng: Random, world: World, objs: dict) -> str | None:
    return rng.choice([None, None, "female", "male", "neutral"])


def _tts(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "audio", _svc(world).text_to_speech(a["text"], o["voice"].attrs["id"]))


def _sts(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "audio", _svc(world).speech_to_speech(o["audio"].attrs["id"], o["voice"].attrs["id"]))


def _stt(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "transcript", _svc(world).speech_to_text(o["audio"].attrs["id"]))


def _isolate(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "audio", _svc(world).isolate_audio(o["audio"].attrs["id"]))


def _get_audio(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "audio", _svc(world).get_audio(o["audio"].attrs["id"]))


def _list_audio(world: World, a: dict, o: dict) -> list[AbsObject]:
    return [_obj(world, "audio", r) for r in _svc(world).list_audio()]


def _delete_audio(world: World, a: dict, o: dict) -> bool:
    _svc(world).delete_audio(o["audio"].attrs["id"])
    world.delete(o["audio"])
    return True


def _call(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "call", _svc(world).outbound_call(a["phone_number"], o["audio"].attrs["id"]))


def _get_call(world: World, a: dict, o: dict) -> AbsObject:
    return _obj(world, "call", _svc(world).get_call(o["call"].attrs["id"]))


def _list_calls(world: World, a: dict, o: dict) -> list[AbsObject]:
    return [_obj(world, "call", r) for r in _svc(world).list_calls()]


_AUDIO = Param("audio", object_type="audio")
_VOICE = Param("voice", object_type="voice")
_APIS = (
    Api(
        "search_voices",
        (
            Param("query", domain=_query_domain, describe="the search words"),
            Param("gender", domain=_gender_domain, literal=True),
        ),
        "api.search_voices($query, gender=$gender)",
        _search,
        "objects",
        "voices",
        "search the voice catalog for {query} (gender filter: {gender})",
        returns_type="voice",
        writes=False,
    ),
    Api(
        "text_to_speech",
        (Param("text", domain=choice(_TEXTS), describe="the text to speak"), _VOICE),
        "api.text_to_speech($text, $voice)",
        _tts,
        "object",
        "speech",
        "synthesize {text} with the voice {voice}",
        target="voice",
        returns_type="audio",
    ),
    Api(
        "speech_to_speech",
        (_AUDIO, _VOICE),
        "api.speech_to_speech($audio, $voice)",
        _sts,
        "object",
        "revoiced",
        "re-voice the audio {audio} with the voice {voice}",
        target="audio",
        returns_type="audio",
    ),
    Api(
        "speech_to_text",
        (_AUDIO,),
        "api.speech_to_text($audio)",
        _stt,
        "object",
        "transcript",
        "transcribe the audio {audio}",
        target="audio",
        returns_type="transcript",
    ),
    Api(
        "isolate_audio",
        (Param("audio", object_type="audio", where=lambda t, w, o: t.attrs.get("kind") != "isolated"),),
        "api.isolate_audio($audio)",
        _isolate,
        "object",
        "isolated",
        "remove the background noise from the audio {audio}",
        target="audio",
        returns_type="audio",
    ),
    Api(
        "get_audio",
        (_AUDIO,),
        "api.get_audio($audio)",
        _get_audio,
        "object",
        "audio",
        "fetch the current record of the audio {audio}",
        target="audio",
        returns_type="audio",
        writes=False,
    ),
    Api(
        "list_audio",
        (),
        "api.list_audio()",
        _list_audio,
        "objects",
        "all_audio",
        "list all audio",
        returns_type="audio",
        writes=False,
        precondition=lambda w, o: bool(w.live("audio")),
    ),
    Api(
        "delete_audio",
        (_AUDIO,),
        "api.delete_audio($audio)",
        _delete_audio,
        "value",
        "deleted",
        "delete the audio {audio}",
        target="audio",
    ),
    Api(
        "outbound_call",
        (Param("phone_number", domain=choice(_PHONES), describe="the phone number"), _AUDIO),
        "api.outbound_call($phone_number, $audio)",
        _call,
        "object",
        "call",
        "phone {phone_number} and play the audio {audio}",
        target="audio",
        returns_type="call",
    ),
    Api(
        "get_call",
        (Param("call", object_type="call"),),
        "api.get_call($call)",
        _get_call,
        "object",
        "call_info",
        "fetch the record of the call {call}",
        target="call",
        returns_type="call",
        writes=False,
    ),
    Api(
        "list_calls",
        (),
        "api.list_calls()",
        _list_calls,
        "objects",
        "calls",
        "list all calls",
        returns_type="call",
        writes=False,
        precondition=lambda w, o: bool(w.live("call")),
    ),
)


def _initial(rng: Random) -> Initial:
    world = World()
    world.data["svc"] = VoiceService()
    return Initial(world, {}, service_seed=None)


def state_view(state: Any) -> Any:
    """The snapshot with read-only calls dropped from every history; SpeechLab's outbound calls in
    a canonical order, and left out when there are none."""
    if not isinstance(state, dict):
        return state
    out = {}
    for section, rows in state.items():
        if section == OUTBOUND:
            if rows:
                out[section] = canonical_calls(rows)
            continue
        if isinstance(rows, list):
            rows = [
                {**r, "history": [h for h in r.get("history", []) if h not in READS]} if isinstance(r, dict) else r
                for r in rows
            ]
        out[section] = rows
    return out


OUTBOUND = STATE_SECTION

# The SpeechLab functions are bound methods of one fresh lab per run; "__load__" preloads are the
# published objects (speeches) of init_load_info, rebuilt as upstream's loader rebuilds them.
_BIND = "".join(f"{name} = __lab__.{name}\n" for name in FUNCTIONS)
_SETUP = f"""
from callbench.tracks.stateful.services.voice import VoiceService, VoiceError
from callbench.tracks.stateful.services.speech_lab import Speech, SpeechLab
import callbench.tracks.stateful.services.speech_lab as __speech_lab
api = VoiceService.from_snapshot(__initial__) if __initial__ else VoiceService()
__lab__ = SpeechLab()
{_BIND}for __name in list(globals().get("__preload__", ())):
    __value = globals()[__name]
    if isinstance(__value, dict) and set(__value) == {{"__load__"}}:
        globals()[__name] = __speech_lab.speech_from_json(__value["__load__"])
__to_json__ = __speech_lab.to_jsonable
"""
_FINALIZE = f"{{**api.snapshot(), {OUTBOUND!r}: __lab__.outbound_calls()}}"

SCENARIO = Scenario(
    name="voice",
    description="A voice AI service (TTS, speech-to-speech, STT, isolation, voice search, outbound calls) "
    "with per-object call history; Python API and MCP server.",
    object_types=(
        ObjectType("voice", "a catalog voice {id, name, gender, accent, description}", ref="{var}['id']"),
        ObjectType(
            "audio",
            "an audio clip {id, kind, voice_id, text, duration_s, source}",
            ref="{var}['id']",
            probes={"duration in seconds": ("{var}['duration_s']", lambda o: o.attrs["duration_s"])},
            noun="audio clip",
        ),
        ObjectType(
            "transcript",
            "a transcript {id, audio_id, text, language, word_count}",
            ref="{var}['id']",
            probes={"word count": ("{var}['word_count']", lambda o: o.attrs["word_count"])},
        ),
        ObjectType("call", "an outbound call {id, phone_number, audio_id, status, duration_s}", ref="{var}['id']"),
    ),
    apis=_APIS,
    runtime=Runtime(
        setup=_SETUP,
        finalize=_FINALIZE,
        call_roots=("api",),
        doc="The service object `api` is preloaded.\n\n" + API_DOC,
        state_view=state_view,
    ),
    initial=_initial,
)
