"""A deterministic, in-memory simulation of a voice AI service (ElevenLabs-style) with state.

Stateful-track programs call :class:`VoiceService` in-process; tool-calling agents reach the same
class over MCP (``voice_mcp``). Everything is deterministic and dependency-free so that a final
:meth:`VoiceService.snapshot` can be compared exactly against a reference run:

* ids come from per-type counters (``audio_1``, ``audio_2``, …) that restart on :meth:`reset`;
  voices are a fixed built-in catalog (``voice_1`` … ``voice_12``);
* every successful method call appends its API name to the ``history`` of every object it touches
  (reads included: a program that looks at an object leaves a trace, which is state too) and
  ``(api, args)`` to :attr:`VoiceService.call_log`;
* a call that raises :class:`VoiceError` changes nothing (validation happens before mutation);
* deleting audio is a soft delete: the record stays in the snapshot with ``deleted: true`` so the
  deletion is visible to evaluation, and ids are never reused.
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any, Literal, get_args

__all__ = ["API_DOC", "VoiceError", "VoiceService", "VOICE_CATALOG"]


class VoiceError(ValueError):
    """Invalid input or state for a voice API call; the message says what and why."""


# Fixed catalog: ids are positional so the catalog order is the deterministic search order.
_CATALOG_ROWS: tuple[tuple[str, str, str, str], ...] = (
    ("Rachel", "female", "american", "Calm, clear narration voice for explainers and audiobooks."),
    ("Adam", "male", "american", "Deep, confident narrator voice for documentaries."),
    ("Charlotte", "female", "british", "Warm, articulate storyteller voice."),
    ("George", "male", "british", "Raspy, mature voice for audiobooks and drama."),
    ("Matilda", "female", "australian", "Friendly, upbeat conversational voice."),
    ("Liam", "male", "australian", "Energetic young voice for advertisements."),
    ("Priya", "female", "indian", "Soft, professional voice for customer support."),
    ("Arjun", "male", "indian", "Crisp, authoritative voice for news reading."),
    ("River", "neutral", "american", "Even, neutral voice for virtual assistants."),
    ("Aoife", "female", "irish", "Lilting, expressive voice for characters and games."),
    ("Callum", "male", "scottish", "Gravelly, intense voice for games and trailers."),
    ("Sky", "neutral", "british", "Bright, neutral voice for tutorials and e-learning."),
)

VOICE_CATALOG: tuple[dict[str, str], ...] = tuple(
    {"id": f"voice_{i}", "name": name, "gender": gender, "accent": accent, "description": desc}
    for i, (name, gender, accent, desc) in enumerate(_CATALOG_ROWS, start=1)
)

# Literal types put the allowed values into the MCP tools' JSON schemas as enums.
Gender = Literal["female", "male", "neutral"]
Accent = Literal["american", "australian", "british", "indian", "irish", "scottish"]
GENDERS: tuple[str, ...] = get_args(Gender)
ACCENTS: tuple[str, ...] = get_args(Accent)
assert {v["gender"] for v in VOICE_CATALOG} <= set(GENDERS)
assert {v["accent"] for v in VOICE_CATALOG} == set(ACCENTS)
AUDIO_KINDS: tuple[str, ...] = ("speech", "isolated")

MAX_TEXT_CHARS = 5000
MIN_SPEED, MAX_SPEED = 0.5, 2.0
MAX_LIMIT = 50
WORDS_PER_SECOND = 2.5

_ID_RE = re.compile(r"^(voice|audio|transcript|call)_([1-9][0-9]*)$")
# E.164: a plus sign, then 8-15 digits, the first of which (the country code) is not zero.
_E164_RE = re.compile(r"^\+[1-9][0-9]{7,14}$")
_COUNTED = ("audio", "transcript", "call")
_SECTIONS = {"audio": "audio", "transcript": "transcripts", "call": "calls"}


def _id_number(obj_id: str) -> int:
    return int(obj_id.rsplit("_", 1)[1])


def _check_str(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise VoiceError(f"{name} must be a string, got {type(value).__name__} {value!r}")
    return value


def _check_id(name: str, value: Any, kind: str) -> str:
    _check_str(name, value)
    m = _ID_RE.match(value)
    if m is None or m.group(1) != kind:
        raise VoiceError(f"{name} must be a {kind} id like '{kind}_1', got {value!r}")
    return value


class VoiceService:
    """The voice API. One instance is one isolated account state."""

    def __init__(self) -> None:
        self.reset()

    # ------------------------------------------------------------------ state plumbing

    def reset(self) -> None:
        """Return to the initial state: catalog voices with empty histories, no audio/transcripts/calls."""
        self._voices: dict[str, dict[str, Any]] = {v["id"]: {**v, "history": []} for v in VOICE_CATALOG}
        self._audio: dict[str, dict[str, Any]] = {}
        self._transcripts: dict[str, dict[str, Any]] = {}
        self._calls: dict[str, dict[str, Any]] = {}
        self._counters: dict[str, int] = dict.fromkeys(_COUNTED, 0)
        self.call_log: list[tuple[str, dict[str, Any]]] = []

    def _new_id(self, kind: str) -> str:
        self._counters[kind] += 1
        return f"{kind}_{self._counters[kind]}"

    def _record(self, api: str, args: dict[str, Any], *objs: dict[str, Any]) -> None:
        for obj in objs:
            obj["history"].append(api)
        self.call_log.append((api, copy.deepcopy(args)))

    @staticmethod
    def _public(obj: dict[str, Any]) -> dict[str, Any]:
        # Callers get copies without bookkeeping fields, so they cannot mutate the state.
        return {k: copy.deepcopy(v) for k, v in obj.items() if k not in ("history", "deleted")}

    def _voice(self, voice_id: Any) -> dict[str, Any]:
        _check_id("voice_id", voice_id, "voice")
        if voice_id not in self._voices:
            raise VoiceError(
                f"unknown voice_id {voice_id!r}: the catalog has voice_1 … voice_{len(self._voices)}"
            )
        return self._voices[voice_id]

    def _live_audio(self, audio_id: Any) -> dict[str, Any]:
        _check_id("audio_id", audio_id, "audio")
        audio = self._audio.get(audio_id)
        if audio is None:
            raise VoiceError(f"unknown audio_id {audio_id!r}")
        if audio["deleted"]:
            raise VoiceError(f"audio {audio_id!r} has been deleted")
        return audio

    # ------------------------------------------------------------------ voices

    def search_voices(
        self, query: str = "", gender: Gender | None = None, accent: Accent | None = None, limit: int = 10
    ) -> list[dict[str, Any]]:
        """Search the voice catalog; every query word must appear in the name, description, gender or accent.

        Results keep catalog order (voice_1 first). An empty query matches every voice.
        """
        _check_str("query", query)
        if gender is not None and gender not in GENDERS:
            raise VoiceError(f"gender must be one of {list(GENDERS)} or null, got {gender!r}")
        if accent is not None and accent not in ACCENTS:
            raise VoiceError(f"accent must be one of {list(ACCENTS)} or null, got {accent!r}")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise VoiceError(f"limit must be an integer from 1 to {MAX_LIMIT}, got {limit!r}")
        words = query.lower().split()
        hits = []
        for voice in self._voices.values():
            if gender is not None and voice["gender"] != gender:
                continue
            if accent is not None and voice["accent"] != accent:
                continue
            hay = " ".join((voice["name"], voice["description"], voice["gender"], voice["accent"])).lower()
            if all(w in hay for w in words):
                hits.append(voice)
        hits = hits[:limit]
        self._record(
            "search_voices", {"query": query, "gender": gender, "accent": accent, "limit": limit}, *hits
        )
        return [self._public(v) for v in hits]

    def get_voice(self, voice_id: str) -> dict[str, Any]:
        """Return one catalog voice: {id, name, gender, accent, description}."""
        voice = self._voice(voice_id)
        self._record("get_voice", {"voice_id": voice_id}, voice)
        return self._public(voice)

    # ------------------------------------------------------------------ audio

    def text_to_speech(self, text: str, voice_id: str, speed: float = 1.0) -> dict[str, Any]:
        """Synthesize speech; returns a new audio {id, kind: "speech", voice_id, text, duration_s, source: null}.

        duration_s = words / 2.5 / speed, rounded to 2 decimals; speed is 0.5 to 2.0.
        """
        _check_str("text", text)
        if not text.split():
            raise VoiceError("text must contain at least one word")
        if len(text) > MAX_TEXT_CHARS:
            raise VoiceError(f"text is {len(text)} characters; the limit is {MAX_TEXT_CHARS}")
        if isinstance(speed, bool) or not isinstance(speed, int | float) or not math.isfinite(speed):
            raise VoiceError(f"speed must be a number, got {speed!r}")
        if not MIN_SPEED <= speed <= MAX_SPEED:
            raise VoiceError(f"speed must be between {MIN_SPEED} and {MAX_SPEED}, got {speed!r}")
        voice = self._voice(voice_id)
        audio = {
            "id": self._new_id("audio"),
            "kind": "speech",
            "voice_id": voice_id,
            "text": text,
            "duration_s": round(len(text.split()) / WORDS_PER_SECOND / speed, 2),
            "source": None,
            "deleted": False,
            "history": [],
        }
        self._audio[audio["id"]] = audio
        self._record(
            "text_to_speech", {"text": text, "voice_id": voice_id, "speed": float(speed)}, audio, voice
        )
        return self._public(audio)

    def speech_to_speech(self, audio_id: str, voice_id: str) -> dict[str, Any]:
        """Re-voice existing audio; returns a new speech audio with the same text and duration, source=audio_id."""
        src = self._live_audio(audio_id)
        voice = self._voice(voice_id)
        audio = {
            "id": self._new_id("audio"),
            "kind": "speech",
            "voice_id": voice_id,
            "text": src["text"],
            "duration_s": src["duration_s"],
            "source": audio_id,
            "deleted": False,
            "history": [],
        }
        self._audio[audio["id"]] = audio
        self._record("speech_to_speech", {"audio_id": audio_id, "voice_id": voice_id}, src, audio, voice)
        return self._public(audio)

    def speech_to_text(self, audio_id: str) -> dict[str, Any]:
        """Transcribe audio; returns a new transcript {id, audio_id, text, language: "en", word_count}."""
        audio = self._live_audio(audio_id)
        transcript = {
            "id": self._new_id("transcript"),
            "audio_id": audio_id,
            "text": audio["text"],
            "language": "en",
            "word_count": len(audio["text"].split()),
            "history": [],
        }
        self._transcripts[transcript["id"]] = transcript
        self._record("speech_to_text", {"audio_id": audio_id}, audio, transcript)
        return self._public(transcript)

    def isolate_audio(self, audio_id: str) -> dict[str, Any]:
        """Remove background noise; returns a new audio {kind: "isolated", same voice/text/duration, source=audio_id}.

        Isolating audio that is already isolated is an error: it would change nothing, so asking for
        it signals a planning mistake worth surfacing.
        """
        src = self._live_audio(audio_id)
        if src["kind"] == "isolated":
            raise VoiceError(f"audio {audio_id!r} is already isolated (kind 'isolated'); use it as is")
        audio = {
            "id": self._new_id("audio"),
            "kind": "isolated",
            "voice_id": src["voice_id"],
            "text": src["text"],
            "duration_s": src["duration_s"],
            "source": audio_id,
            "deleted": False,
            "history": [],
        }
        self._audio[audio["id"]] = audio
        self._record("isolate_audio", {"audio_id": audio_id}, src, audio)
        return self._public(audio)

    def get_audio(self, audio_id: str) -> dict[str, Any]:
        """Return one audio that has not been deleted."""
        audio = self._live_audio(audio_id)
        self._record("get_audio", {"audio_id": audio_id}, audio)
        return self._public(audio)

    def list_audio(self) -> list[dict[str, Any]]:
        """Return all audio that has not been deleted, oldest first."""
        live = [a for a in self._audio.values() if not a["deleted"]]
        self._record("list_audio", {}, *live)
        return [self._public(a) for a in live]

    def delete_audio(self, audio_id: str) -> dict[str, Any]:
        """Delete audio; returns {id, deleted: true}. Calls and transcripts that reference it keep the id."""
        audio = self._live_audio(audio_id)
        audio["deleted"] = True
        self._record("delete_audio", {"audio_id": audio_id}, audio)
        return {"id": audio_id, "deleted": True}

    # ------------------------------------------------------------------ calls

    def outbound_call(self, phone_number: str, audio_id: str) -> dict[str, Any]:
        """Phone a number and play audio; returns a new call {id, phone_number, audio_id, status: "completed", duration_s}.

        phone_number must be E.164: "+" then 8 to 15 digits, not starting with 0 (e.g. "+14155550123").
        """
        _check_str("phone_number", phone_number)
        if not _E164_RE.match(phone_number):
            raise VoiceError(
                f"phone_number must be E.164 ('+' then 8-15 digits, no spaces, first digit not 0), got {phone_number!r}"
            )
        audio = self._live_audio(audio_id)
        call = {
            "id": self._new_id("call"),
            "phone_number": phone_number,
            "audio_id": audio_id,
            "status": "completed",
            "duration_s": audio["duration_s"],
            "history": [],
        }
        self._calls[call["id"]] = call
        self._record("outbound_call", {"phone_number": phone_number, "audio_id": audio_id}, audio, call)
        return self._public(call)

    def get_call(self, call_id: str) -> dict[str, Any]:
        """Return one call."""
        _check_id("call_id", call_id, "call")
        call = self._calls.get(call_id)
        if call is None:
            raise VoiceError(f"unknown call_id {call_id!r}")
        self._record("get_call", {"call_id": call_id}, call)
        return self._public(call)

    def list_calls(self) -> list[dict[str, Any]]:
        """Return all calls, oldest first."""
        calls = list(self._calls.values())
        self._record("list_calls", {}, *calls)
        return [self._public(c) for c in calls]

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> dict[str, Any]:
        """Canonical JSON-able state: counters and every object (with history), each list sorted by id number.

        call_log is not part of it: the snapshot is the state, the log is how a run got there.
        """

        def rows(store: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
            ordered = sorted(store.values(), key=lambda o: _id_number(o["id"]))
            return [{k: copy.deepcopy(o[k]) for k in sorted(o)} for o in ordered]

        return {
            "counters": dict(sorted(self._counters.items())),
            "voices": rows(self._voices),
            "audio": rows(self._audio),
            "transcripts": rows(self._transcripts),
            "calls": rows(self._calls),
        }

    @classmethod
    def from_snapshot(cls, state: dict) -> VoiceService:
        """Build a service seeded from a snapshot (or a hand-written seed with a subset of its sections).

        Missing sections are empty, missing histories are empty, missing counters default to the
        highest id present, and references (audio source, transcript/call audio_id) must resolve.
        """
        if not isinstance(state, dict):
            raise VoiceError(f"snapshot must be a dict, got {type(state).__name__}")
        unknown = set(state) - {"counters", "voices", "audio", "transcripts", "calls"}
        if unknown:
            raise VoiceError(f"snapshot has unknown sections {sorted(unknown)}")
        svc = cls()

        def section(name: str) -> list[dict[str, Any]]:
            rows = state.get(name, [])
            if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
                raise VoiceError(f"snapshot section {name!r} must be a list of objects")
            return rows

        def history(row: dict[str, Any]) -> list[str]:
            hist = row.get("history", [])
            if not isinstance(hist, list) or not all(isinstance(h, str) for h in hist):
                raise VoiceError(f"{row.get('id')!r}: history must be a list of API names")
            return list(hist)

        def fields(row: dict[str, Any], required: tuple[str, ...]) -> None:
            missing = [k for k in required if k not in row]
            extra = set(row) - set(required) - {"history", "deleted"}
            if missing or extra:
                raise VoiceError(
                    f"{row.get('id')!r}: missing fields {missing}, unexpected fields {sorted(extra)}"
                )

        for row in section("voices"):
            voice = svc._voice(row.get("id"))
            extra = set(row) - set(voice)
            if extra:
                raise VoiceError(f"{voice['id']!r}: unexpected fields {sorted(extra)}")
            for key in ("name", "gender", "accent", "description"):
                if key in row and row[key] != voice[key]:
                    raise VoiceError(
                        f"{voice['id']!r}: {key} {row[key]!r} differs from the catalog's {voice[key]!r}"
                    )
            voice["history"] = history(row)

        ids: set[str] = set()

        def new_id(row: dict[str, Any], kind: str) -> str:
            obj_id = _check_id(f"{kind} id", row.get("id"), kind)
            if obj_id in ids:
                raise VoiceError(f"duplicate id {obj_id!r} in snapshot")
            ids.add(obj_id)
            return obj_id

        def duration(row: dict[str, Any]) -> float:
            d = row["duration_s"]
            if isinstance(d, bool) or not isinstance(d, int | float) or not math.isfinite(d) or d < 0:
                raise VoiceError(f"{row['id']!r}: duration_s must be a non-negative number, got {d!r}")
            return float(d)

        for row in section("audio"):
            fields(row, ("id", "kind", "voice_id", "text", "duration_s", "source"))
            obj_id = new_id(row, "audio")
            if row["kind"] not in AUDIO_KINDS:
                raise VoiceError(f"{obj_id!r}: kind must be one of {list(AUDIO_KINDS)}, got {row['kind']!r}")
            svc._voice(row["voice_id"])
            if row["source"] is not None:
                _check_id(f"{obj_id!r} source", row["source"], "audio")
            deleted = row.get("deleted", False)
            if not isinstance(deleted, bool):
                raise VoiceError(f"{obj_id!r}: deleted must be true or false")
            svc._audio[obj_id] = {
                "id": obj_id,
                "kind": row["kind"],
                "voice_id": row["voice_id"],
                "text": _check_str(f"{obj_id!r} text", row["text"]),
                "duration_s": duration(row),
                "source": row["source"],
                "deleted": deleted,
                "history": history(row),
            }
        for audio in svc._audio.values():
            if audio["source"] is not None and audio["source"] not in svc._audio:
                raise VoiceError(f"{audio['id']!r}: source {audio['source']!r} is not in the snapshot")

        def audio_ref(row: dict[str, Any]) -> str:
            ref = _check_id(f"{row['id']!r} audio_id", row["audio_id"], "audio")
            if ref not in svc._audio:
                raise VoiceError(f"{row['id']!r}: audio_id {ref!r} is not in the snapshot")
            return ref

        for row in section("transcripts"):
            fields(row, ("id", "audio_id", "text", "language", "word_count"))
            obj_id = new_id(row, "transcript")
            wc = row["word_count"]
            if isinstance(wc, bool) or not isinstance(wc, int) or wc < 0:
                raise VoiceError(f"{obj_id!r}: word_count must be a non-negative integer, got {wc!r}")
            svc._transcripts[obj_id] = {
                "id": obj_id,
                "audio_id": audio_ref(row),
                "text": _check_str(f"{obj_id!r} text", row["text"]),
                "language": _check_str(f"{obj_id!r} language", row["language"]),
                "word_count": wc,
                "history": history(row),
            }
        for row in section("calls"):
            fields(row, ("id", "phone_number", "audio_id", "status", "duration_s"))
            obj_id = new_id(row, "call")
            phone = _check_str(f"{obj_id!r} phone_number", row["phone_number"])
            if not _E164_RE.match(phone):
                raise VoiceError(f"{obj_id!r}: phone_number {phone!r} is not E.164")
            svc._calls[obj_id] = {
                "id": obj_id,
                "phone_number": phone,
                "audio_id": audio_ref(row),
                "status": _check_str(f"{obj_id!r} status", row["status"]),
                "duration_s": duration(row),
                "history": history(row),
            }

        counters = state.get("counters", {})
        if not isinstance(counters, dict) or set(counters) - set(_COUNTED):
            raise VoiceError(f"snapshot counters must be a dict with keys from {list(_COUNTED)}")
        for kind in _COUNTED:
            store = getattr(svc, "_" + _SECTIONS[kind])
            highest = max((_id_number(i) for i in store), default=0)
            value = counters.get(kind, highest)
            if isinstance(value, bool) or not isinstance(value, int) or value < highest:
                raise VoiceError(
                    f"counter {kind!r} must be an integer >= {highest} (the highest {kind} id), got {value!r}"
                )
            svc._counters[kind] = value
        return svc


API_DOC = f"""\
# Voice service (Python API)

An object `voice` (a `VoiceService`) is already available. Every method validates its arguments
and raises `VoiceError` (a `ValueError`) with a message on bad input or a missing/deleted object;
a failed call changes nothing. Ids are strings with a type prefix: `voice_3`, `audio_1`,
`transcript_1`, `call_1`. Methods return plain dicts/lists (copies).

## Voices (fixed catalog, voice_1 … voice_12)
- `voice.search_voices(query: str = "", gender: str | None = None, accent: str | None = None, limit: int = 10) -> list[dict]`
  Every word of `query` must appear in the voice's name, description, gender or accent
  (case-insensitive). gender ∈ {list(GENDERS)}; accent ∈ {list(ACCENTS)}; 1 <= limit <= {MAX_LIMIT}.
  Results in catalog order. Each voice: `{{id, name, gender, accent, description}}`.
- `voice.get_voice(voice_id: str) -> dict` — one voice.

## Audio
Audio dict: `{{id, kind, voice_id, text, duration_s, source}}`; kind is "speech" or "isolated";
source is the audio id it was derived from, or None.
- `voice.text_to_speech(text: str, voice_id: str, speed: float = 1.0) -> dict` — new "speech" audio;
  duration_s = number of words / 2.5 / speed, rounded to 2 decimals; {MIN_SPEED} <= speed <= {MAX_SPEED};
  text non-empty, at most {MAX_TEXT_CHARS} characters.
- `voice.speech_to_speech(audio_id: str, voice_id: str) -> dict` — new "speech" audio, same text and
  duration, spoken by voice_id; source=audio_id.
- `voice.isolate_audio(audio_id: str) -> dict` — new "isolated" audio (noise removed), same voice, text
  and duration; source=audio_id. Isolating an already isolated audio raises VoiceError.
- `voice.get_audio(audio_id: str) -> dict`, `voice.list_audio() -> list[dict]` (oldest first).
- `voice.delete_audio(audio_id: str) -> dict` — returns `{{id, deleted: True}}`; deleted audio can no
  longer be used; calls and transcripts keep referring to its id.

## Transcripts
- `voice.speech_to_text(audio_id: str) -> dict` — new `{{id, audio_id, text, language: "en", word_count}}`.

## Calls
- `voice.outbound_call(phone_number: str, audio_id: str) -> dict` — phones the number and plays the
  audio; returns `{{id, phone_number, audio_id, status: "completed", duration_s}}` (the audio's duration).
  phone_number must be E.164: "+" then 8-15 digits, first digit not 0, no spaces (e.g. "+14155550123").
- `voice.get_call(call_id: str) -> dict`, `voice.list_calls() -> list[dict]` (oldest first).

## Example
```python
v = voice.search_voices("calm", gender="female", accent="american")[0]
clip = voice.text_to_speech("Your order has shipped.", v["id"])
print(clip["id"], clip["duration_s"])  # audio_1 1.6
call = voice.outbound_call("+14155550123", clip["id"])
```
"""
