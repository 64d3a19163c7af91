"""A grid's ``servers:`` bound (issue 32, item 2): the most requests in flight at once to one model
server over the whole sweep, kept by the local executor (a cell starts only when its concurrency
fits beside the cells already talking to the server; a cell above the bound alone runs with the
bound) and declared to Ray as the ``model_server:<URL>`` resource."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from callbench.errors import ConfigError
from callbench.sweep.grid import Cell, load_grid
from callbench.sweep.local import run_local
from callbench.sweep.servers import DEFAULT_CONCURRENCY, ServerBounds
from callbench.testing.fake_openai import FakeOpenAIServer

URL = "http://127.0.0.1:9/v1"


def test_bounds_by_hand():
    bounds = ServerBounds({URL: 8})
    a = Cell("nested", f"openai:m@{URL}", {"concurrency": 4}, "a")
    b = Cell("nested", f"openai:m@{URL},http://127.0.0.1:10/v1", {"concurrency": 6}, "b")  # replicas: one bounded
    big = Cell("nested", f"openai:m@{URL}", {"concurrency": 32}, "big")
    default = Cell("nested", f"openai:m@{URL}", {}, "d")
    other = Cell("nested", "gold", {"concurrency": 99}, "g")
    assert bounds.load(a) == {URL: 4} and bounds.load(b) == {URL: 6} and bounds.load(other) == {}
    assert bounds.load(default) == {URL: DEFAULT_CONCURRENCY} == {URL: 8}
    assert bounds.effective(big).settings["concurrency"] == 8 and bounds.load(big) == {URL: 8}
    assert bounds.effective(a) is a and big.settings["concurrency"] == 32  # the cell itself is not changed
    assert bounds.fits(a) and bounds.fits(big)
    bounds.take(a)
    assert not bounds.fits(b) and bounds.fits(a) and not bounds.fits(big) and bounds.fits(other)
    bounds.take(a)
    assert not bounds.fits(a)
    bounds.release(a)
    bounds.release(a)
    assert bounds.fits(b) and bounds.in_flight[URL] == 0


def _grid(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "servers, field, message",
    [
        ("{'ftp://x/v1': 4}", "servers.ftp://x/v1", "an http(s) URL"),
        (f"{{'{URL}': 0}}", f"servers.{URL}", "greater than or equal to 1"),
        (f"{{'{URL}': 'many'}}", f"servers.{URL}", "integer"),
        ("[4]", "servers", "dictionary"),
        ("{'http://elsewhere:1/v1': 4}", "servers.http://elsewhere:1/v1", "no model of the grid talks to this server"),
    ],
)
def test_a_bad_servers_entry_is_one_line_naming_file_and_field(tmp_path, servers, field, message):
    path = _grid(tmp_path, f"models: [gold]\nservers: {servers}\ntracks:\n  nested: {{limit: 1}}\n")
    with pytest.raises(ConfigError) as err:
        load_grid(path)
    text = str(err.value)
    assert text.startswith(f"{path}: {field}") and message in text and "\n" not in text, text


def test_the_grid_keeps_its_servers_and_the_cells_are_unchanged(tmp_path):
    plain = load_grid(_grid(tmp_path, f"models: ['openai:m@{URL}']\ntracks:\n  nested: {{limit: 1}}\n"))
    (tmp_path / "b").mkdir()
    bounded = load_grid(_grid(tmp_path / "b", f"models: ['openai:m@{URL}']\nservers: {{'{URL}': 4}}\ntracks:\n  nested: {{limit: 1}}\n"))
    assert plain.servers == {} and bounded.servers == {URL: 4}
    (tmp_path / "c").mkdir()  # a trailing slash names the same server
    slashed = load_grid(_grid(tmp_path / "c", f"models: ['openai:m@{URL}']\nservers: {{'{URL}/': 4}}\ntracks:\n  nested: {{limit: 1}}\n"))
    assert slashed.servers == {URL: 4} and ServerBounds(slashed.servers).load(slashed.cells[0]) == {URL: 4}
    assert [c.name for c in plain.cells] == [c.name for c in bounded.cells]  # a bound is no setting of a run


@pytest.mark.parametrize("bounded", [True, False])
def test_a_local_sweep_keeps_a_servers_requests_in_flight_under_its_bound(tmp_path, data_root, bounded):
    """Three cells of concurrency 4 against one slow server, three workers: with ``servers: {URL:
    4}`` the server never has more than 4 requests at once. A fourth cell asks for concurrency 16
    and runs with 4. Without the bound the server has more (the check can fail): that cell alone
    sends its 6 samples at once, whether or not cells overlap."""
    with FakeOpenAIServer() as srv:
        srv.delay = 0.25
        bound = f"servers: {{'{srv.url}': 4}}\n" if bounded else ""
        grid_file = _grid(
            tmp_path,
            f"models: ['openai:m@{srv.url}']\n{bound}tracks:\n"
            "  nested: {limit: [6, 7, 8], concurrency: 4}\n"
            "  webapi: {limit: 6, concurrency: 16}\n",
        )
        grid = load_grid(grid_file)
        outcome = run_local(grid, tmp_path / "sweep", workers=3)
        assert not outcome.failed, outcome.results
        if bounded:
            assert srv.max_in_flight <= 4, srv.max_in_flight
        else:
            assert srv.max_in_flight > 4, srv.max_in_flight
    manifest = json.loads((tmp_path / "sweep" / "sweep.json").read_text())
    assert all(c["state"] == "done" for c in manifest["cells"])
    webapi = next(c for c in grid.cells if c.track == "webapi")
    assert webapi.settings["concurrency"] == 16  # the grid's value; the run used the bound
