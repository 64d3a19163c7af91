"""StateGen's own voice API (its "SpeechLab" mock of ElevenLabs), so that programs written for the
published StateEval's voice split run in callbench's voice scenario.

The published voice programs call module-level functions (``text_to_speech(text=..., voice_name=...)``)
that pass *speech objects* around by value, not ids into a service as callbench's
:class:`~callbench.tracks.stateful.services.voice.VoiceService` does. Their recorded oracles (the
``RESULT`` value and the list of outbound calls) follow the upstream mock's behaviour, which is
reproduced here from its documented surface (names, signatures, return shapes, state effects) of
StateGen at commit f85b507 (``Sgenerator/voice_lab.py``), not from its code:

* a :class:`Speech` has text, voice name, the three voice settings, a duration (16 s when
  synthesized) and a list of ``[api, parameters]`` transitions applied to it;
* ``text_to_speech`` makes a new speech with the given settings (no check of the voice name);
  ``speech_to_speech`` and ``isolate_audio`` return a modified *copy* (isolation halves the
  duration); ``speech_to_text`` appends its transition to the speech it is given (in place) and
  returns ``{"text", "diarize"}``;
* ``make_outbound_call`` records ``[speech, voice_name]`` (the speech object itself, so later
  in-place changes show in the record), then refuses an unknown voice, and returns True;
* ``search_voice_library`` searches a fixed library of ten voices, by name or by category and
  gender; at least one criterion is required.

Like the voice service it is deterministic and in-memory; one :class:`SpeechLab` is one fresh state.
Errors are :class:`SpeechLabError`, an ``AssertionError`` because the upstream mock reports them with
``assert`` (a program that catches ``AssertionError`` behaves the same in both).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "API_DOC",
    "FUNCTIONS",
    "LIBRARY",
    "STATE_SECTION",
    "Speech",
    "SpeechLab",
    "SpeechLabError",
    "speech_from_json",
]

SYNTHESIZED_DURATION = 16.0
STATE_SECTION = "outbound_calls"  # the voice scenario's state section holding outbound_calls()
_FLOAT_EQ = 1e-6  # how close two settings must be for two speeches to be equal (upstream's Speech.__eq__)

# name -> (id, category, gender): the upstream mock's voice library, in its order
LIBRARY: dict[str, tuple[str, str, str]] = {
    "Emma": ("v1", "conversational", "feminine"),
    "James": ("v2", "professional", "masculine"),
    "Oliver": ("v3", "casual", "masculine"),
    "Michael": ("v4", "young", "masculine"),
    "Sofia": ("v5", "casual", "feminine"),
    "Alexander": ("v6", "old", "masculine"),
    "Evelyn": ("v7", "professional", "feminine"),
    "Isabella": ("v8", "old", "feminine"),
    "Arthur": ("v9", "conversational", "masculine"),
    "Sophia": ("v10", "young", "feminine"),
}

# the names a program of the published voice split sees (besides the Speech class)
FUNCTIONS = (
    "search_voice_library",
    "text_to_speech",
    "speech_to_speech",
    "speech_to_text",
    "isolate_audio",
    "make_outbound_call",
)


class SpeechLabError(AssertionError):
    """A call the upstream mock refuses (unknown voice, a search without criteria)."""


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) < _FLOAT_EQ


@dataclass(eq=False)
class Speech:
    """An audio object: what was said, by which voice, with which settings, and what was done to it."""

    text: str
    voice_name: str = ""
    stability: float | None = 0
    similarity_boost: float | None = 0
    style: float | None = 0
    duration: float = SYNTHESIZED_DURATION
    transitions: list = field(default_factory=list)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Speech):
            return False
        return (
            self.text == other.text
            and self.voice_name == other.voice_name
            and all(
                _close(getattr(self, k), getattr(other, k))
                for k in ("stability", "similarity_boost", "style", "duration")
            )
            and len(self.transitions) == len(other.transitions)
            and all(
                a[0] == b[0] and a[1] == b[1]
                for a, b in zip(self.transitions, other.transitions, strict=True)
            )
        )

    __hash__ = None  # mutable, compared by value

    def to_json(self) -> dict[str, Any]:
        """The published JSON form (``is_speech`` marks it)."""
        return {
            "text": self.text,
            "voice_name": self.voice_name,
            "stability": self.stability,
            "similarity_boost": self.similarity_boost,
            "style": self.style,
            "duration": self.duration,
            "transitions": self.transitions,
            "is_speech": True,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Speech:
        return cls(
            text=data["text"],
            voice_name=data["voice_name"],
            stability=data["stability"],
            similarity_boost=data["similarity_boost"],
            style=data["style"],
            duration=data["duration"],
            transitions=data["transitions"],
        )


def speech_from_json(value: Any) -> Any:
    """``value`` with every object marked ``is_speech`` (at any depth) made a :class:`Speech`, as the
    published loader reads preloaded objects."""
    if isinstance(value, dict):
        if value.get("is_speech"):
            return Speech.from_json(value)
        return {k: speech_from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [speech_from_json(v) for v in value]
    return value


def to_jsonable(value: Any) -> Any:
    """``value`` with every :class:`Speech` in it (at any depth) in its JSON form."""
    if isinstance(value, Speech):
        return value.to_json()
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


class SpeechLab:
    """One fresh state of the upstream voice API: its voice library and the outbound calls made."""

    def __init__(self) -> None:
        self._calls: list[list[Any]] = []

    # -- the API ---------------------------------------------------------------------------------
    def search_voice_library(
        self,
        search_name: str | None = None,
        search_category: str | None = None,
        search_gender: str | None = None,
    ) -> list[dict[str, str]] | None:
        """By name: ``[{category, gender, voice_name}]`` or None when no voice has that name; else
        every voice of that category and/or gender, sorted by name."""
        if search_name is None and search_category is None and search_gender is None:
            raise SpeechLabError(
                "At least one of search_name, search_category, or search_gender must be provided"
            )
        if search_name is not None:
            if search_name not in LIBRARY:
                return None
            return [self._entry(search_name)]
        hits = [
            self._entry(name)
            for name, (_id, category, gender) in LIBRARY.items()
            if (search_category is None or category == search_category)
            and (search_gender is None or gender == search_gender)
        ]
        return sorted(hits, key=lambda h: h["voice_name"])

    def text_to_speech(
        self,
        text: str,
        voice_name: str | None = None,
        stability: float | None = None,
        similarity_boost: float | None = None,
        style: float | None = None,
    ) -> Speech:
        settings = {
            "voice_name": voice_name,
            "stability": stability,
            "similarity_boost": similarity_boost,
            "style": style,
        }
        return Speech(text=text, **settings, transitions=[["text_to_speech", settings]])

    def speech_to_speech(self, input_speech: Speech, voice_name: str) -> Speech:
        self._known(voice_name)
        out = copy.deepcopy(input_speech)
        out.voice_name = voice_name
        out.transitions.append(["speech_to_speech", {"voice_name": voice_name}])
        return out

    def speech_to_text(self, input_speech: Speech, diarize: bool = False) -> dict[str, Any]:
        text = copy.deepcopy(input_speech.text)
        input_speech.transitions.append(["speech_to_text", {"diarize": diarize}])  # in place, as upstream
        return {"text": text, "diarize": diarize}

    def isolate_audio(self, input_speech: Speech) -> Speech:
        out = copy.deepcopy(input_speech)
        out.transitions.append(["isolate_audio", {}])
        out.duration = out.duration / 2
        return out

    def make_outbound_call(self, input_speech: Speech, voice_name: str | None = None) -> bool:
        self._calls.append([input_speech, voice_name])  # recorded before the check, as upstream
        self._known(voice_name)
        return True

    # -- state -----------------------------------------------------------------------------------
    def outbound_calls(self) -> list[list[Any]]:
        """The published ``state_oracle``: ``[speech JSON, voice name]`` per call, in call order,
        the speeches as they are now."""
        return [[to_jsonable(speech), voice] for speech, voice in self._calls]

    @staticmethod
    def _entry(name: str) -> dict[str, str]:
        _id, category, gender = LIBRARY[name]
        return {"category": category, "gender": gender, "voice_name": name}

    @staticmethod
    def _known(voice_name: Any) -> None:
        if voice_name not in LIBRARY:
            raise SpeechLabError(f"Voice name {voice_name} not found in voice library")


def canonical_calls(calls: Any) -> Any:
    """Outbound calls in a canonical order: upstream compares them as a multiset."""
    if not isinstance(calls, list):
        return calls
    return sorted(calls, key=lambda c: json.dumps(c, sort_keys=True, default=repr))


API_DOC = f"""\
# SpeechLab (Python functions)

These functions and the class `Speech` are already available (no import). Speech objects are
values: each call that changes one returns a new `Speech`, except `speech_to_text`, which records
the transcription on the speech it is given. Invalid calls raise `AssertionError`.

- `search_voice_library(search_name: str = None, search_category: str = None, search_gender: str = None) -> list[dict]`
  Give at least one criterion. Returns `[{{"category": str, "gender": str, "voice_name": str}}, ...]`
  (by name: a one-element list, or None when there is no such voice; otherwise every voice matching
  the category and/or gender, sorted by name). Categories: {", ".join(sorted({c for _i, c, _g in LIBRARY.values()}))};
  genders: feminine, masculine.
- `text_to_speech(text: str, voice_name: str = None, stability: float = None, similarity_boost: float = None, style: float = None) -> Speech`
  Float settings range 0.0 to 1.0 (lower stability = more emotion; higher style = amplified
  speaker style). A new speech lasts {SYNTHESIZED_DURATION:g} seconds.
- `speech_to_speech(input_speech: Speech, voice_name: str) -> Speech` — the same speech in another
  library voice.
- `speech_to_text(input_speech: Speech, diarize: bool) -> dict` — `{{"text": str, "diarize": bool}}`.
- `isolate_audio(input_speech: Speech) -> Speech` — the speech with background noise removed (half
  the duration).
- `make_outbound_call(input_speech: Speech, voice_name: str = None) -> bool` — phones out playing
  the speech with a library voice; returns True.

A `Speech` has `text`, `voice_name`, `stability`, `similarity_boost`, `style`, `duration` and
`transitions` (the operations applied to it).
"""
