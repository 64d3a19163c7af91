"""The track registry (callbench.tracks.definition): the built-in tracks resolve to the classes,
views and printers they had before the registry, a name is defined once, errors are one line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from callbench.errors import ConfigError
from callbench.tracks import definition as registry
from callbench.tracks.base import available_tracks, get_track
from callbench.tracks.definition import TrackDefinition, get_definition, registered, resolve


def test_builtin_tracks_resolve_to_their_classes_views_and_printers():
    from callbench.report import table
    from callbench.report.model import get_view
    from callbench.report.nested import NestedView
    from callbench.report.stateful import StatefulView
    from callbench.report.webapi import WebApiView
    from callbench.tracks.nested.track import NestedOptions, NestedTrack
    from callbench.tracks.stateful.track import StatefulOptions, StatefulTrack
    from callbench.tracks.webapi.track import WebApiOptions, WebApiTrack

    assert available_tracks() == ["nested", "stateful", "webapi"]
    expected = {
        "webapi": (WebApiTrack, WebApiOptions, WebApiView, table.print_summary),
        "nested": (NestedTrack, NestedOptions, NestedView, table.print_nested_summary),
        "stateful": (StatefulTrack, StatefulOptions, StatefulView, table.print_stateful_summary),
    }
    for name, (cls, options, view, printer) in expected.items():
        d = get_definition(name)
        assert get_track(name) is cls and cls.name == name
        assert resolve(d.options) is options
        assert type(get_view(name)) is view
        assert resolve(d.summary) is printer
        assert d.tasks is not None and d.show is not None
    assert get_definition("nested").model_option == "model_spec"
    assert get_definition("stateful").tasks.task_id("bank_3#2") == "bank_3"
    assert get_definition("webapi").tasks.task_id("asana_3") == "asana_3"


def test_descriptions_read_without_import_match_the_definitions():
    code = (
        "import sys\nfrom callbench.tracks.definition import description, track_names\n"
        "print([description(t) for t in track_names()])\n"
        "assert not [m for m in sys.modules if m.startswith(('callbench.tracks.webapi', 'callbench.tracks.nested', "
        "'callbench.tracks.stateful'))]\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    loaded = [get_definition(t).description for t in ("nested", "stateful", "webapi")]
    assert out.strip() == repr(loaded) and all(loaded)


def test_a_name_is_defined_once_and_errors_are_one_line():
    with pytest.raises(ConfigError, match=r"unknown track 'nope' \(available: nested, stateful, webapi\)"):
        get_definition("nope")
    other = TrackDefinition(name="webapi", track="x.y:Z")
    with pytest.raises(ConfigError, match="track 'webapi' is already defined"):
        registry.register(other)
    assert get_definition("webapi").track == "callbench.tracks.webapi.track:WebApiTrack"
    registry.register(get_definition("webapi"))  # the same definition again (a re-import): fine
    with pytest.raises(ConfigError, match="must be letters"):
        registry.register(TrackDefinition(name="a b", track="x:y"))
    with pytest.raises(ConfigError, match="'nocolon' is not 'package.module:attr'"):
        resolve("nocolon")


def test_registered_is_undone_even_when_the_block_fails():
    d = TrackDefinition(name="tmp_track", track="x:y")
    with pytest.raises(RuntimeError), registered(d):
        assert "tmp_track" in available_tracks()
        raise RuntimeError
    assert "tmp_track" not in available_tracks()


def test_track_decorator_registers_the_class():
    from callbench.tracks.base import Track

    try:

        @registry.track("decorated_track", description="d")
        class Decorated(Track):  # the abstract methods are never called here
            pass

        assert get_track("decorated_track") is Decorated
        assert get_definition("decorated_track").description == "d"
    finally:
        registry.unregister("decorated_track")
    assert "decorated_track" not in available_tracks()


def test_options_errors_name_the_option():
    from pydantic import BaseModel

    class Opts(BaseModel):
        n: int = 1

    d = TrackDefinition(name="opt_track", track=lambda options: options, options=Opts)
    assert d.make(n=2).n == 2
    with pytest.raises(ConfigError, match="track 'opt_track': option 'n': Input should be a valid integer"):
        d.make(n="many")
