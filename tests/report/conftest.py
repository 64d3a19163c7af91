"""Fixtures of the report tests: small real runs of each track (gold and replay models on the data
the package ships, so no download is needed) and a DOM parsed with html.parser, enough to check the
report's structure without a browser."""

from __future__ import annotations

import io
import json
import re
import types
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from callbench.cli import app

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str | None], parent: Node | None = None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def walk(self) -> Iterator[Node]:
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.walk()

    def find_all(self, tag: str | None = None, pred: Callable[[Node], bool] | None = None, **attrs: str) -> list[Node]:
        out = []
        for n in self.walk():
            if tag is not None and n.tag != tag:
                continue
            if any(n.attrs.get(k.rstrip("_").replace("_", "-")) != v for k, v in attrs.items()):
                continue
            if pred is not None and not pred(n):
                continue
            out.append(n)
        return out

    def find(self, tag: str | None = None, **attrs: str) -> Node | None:
        found = self.find_all(tag, **attrs)
        return found[0] if found else None

    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs), self.stack[-1])
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Node(tag, dict(attrs), self.stack[-1]))

    def handle_endtag(self, tag):
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                del self.stack[i:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(html: str) -> Node:
    b = _Builder()
    b.feed(html)
    b.close()
    return b.root


def samples(doc: Node) -> list[Node]:
    """The sample entries of the report's sample list."""
    (lst,) = doc.find_all("div", id="sample-list")
    return [n for n in lst.children if isinstance(n, Node) and n.tag == "details" and "sample" in n.classes()]


def marks(svg: Node, cls: str) -> list[Node]:
    """The mark groups of one class in a chart's SVG (``bar``, ``segment``, ``line``, ``point``)."""
    return svg.find_all("g", pred=lambda n: cls in n.classes())


def check_charts(doc: Node) -> list[Node]:
    """Every chart container holds an SVG with its marks, and says it has data: a bar chart at
    least one bar; stacked bars a segment per series and category; parallel coordinates a line
    per series and a marker per value (``data-points``), each mark with a tooltip."""
    charts = doc.find_all("figure", pred=lambda n: "chart" in n.classes())
    for c in charts:
        assert int(c.attrs["data-points"]) > 0, c.attrs
        svgs = c.find_all("svg")
        assert len(svgs) == 1, c.attrs
        kind = c.attrs.get("data-kind", "bars")
        if kind == "bars":
            bars = svgs[0].find_all("g", pred=lambda n: "bar" in n.classes())
            assert bars and all(b.find("path") is not None for b in bars), c.attrs
        elif kind == "stacked":
            segments = marks(svgs[0], "segment")
            assert segments and all(g.find("path") is not None and g.find("title") is not None for g in segments), c.attrs
            assert len(segments) == int(c.attrs["data-points"]), c.attrs
            assert not marks(svgs[0], "bar"), c.attrs
        else:
            assert kind == "parallel", c.attrs
            lines, points = marks(svgs[0], "line"), marks(svgs[0], "point")
            assert len(lines) == int(c.attrs["data-series"]), c.attrs
            assert all(g.find("path") is not None for g in lines), c.attrs
            assert len(points) == int(c.attrs["data-points"]), c.attrs
            assert all(g.find("title") is not None and (g.find("use") or g.find("path")) for g in points), c.attrs
            assert not marks(svgs[0], "bar"), c.attrs
    return charts


@pytest.fixture(scope="session")
def dom():
    """``dom.parse(html)``, ``dom.samples(doc)``, ``dom.check_charts(doc)``."""
    return types.SimpleNamespace(parse=parse, samples=samples, check_charts=check_charts, marks=marks)


def _console(width: int = 80) -> Console:
    # a file, not a terminal: what a pipe or a log gets (rich's default width there is 80)
    return Console(file=io.StringIO(), width=width, record=True, color_system=None)


def _check_fits(text: str, width: int = 80) -> list[str]:
    """No ellipsis anywhere; every table line within ``width`` (other lines are soft-wrapped: the
    terminal folds them)."""
    lines = text.splitlines()
    assert "…" not in text, text
    table_lines = [line for line in lines if set(line) & set("│┃━─")]
    assert table_lines and max(cell_len(line) for line in table_lines) <= width, text
    return lines


def _cells_of(lines: list[str], label: str) -> list[str]:
    """The cells right of ``label`` in every table row that starts with it (every part)."""
    out = []
    for line in lines:
        parts = [p.strip() for p in line.strip("│┃ ").split("│")]
        if parts and parts[0] == label:
            out += parts[1:]
    return out


@pytest.fixture(scope="session")
def terminal():
    """``terminal.console(width)`` records what rich prints; ``terminal.check_fits(text, width)``
    checks nothing is cut or too wide; ``terminal.cells_of(lines, label)`` reads a row's cells."""
    return types.SimpleNamespace(console=_console, check_fits=_check_fits, cells_of=_cells_of)


def invoke(*args) -> object:
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="session")
def cli():
    """``cli("report", run_dir, ...)``: the CLI in process, arguments as str()."""
    return invoke


def only_dir(root: Path) -> Path:
    (d,) = [p for p in root.iterdir() if p.is_dir()]
    return d


NESTED_N = 20


@pytest.fixture(scope="session")
def nested_runs(tmp_path_factory):
    """Nested runs on the built-in generated set, first NESTED_N samples: the gold model; W, a
    replay of the gold answers with a wrong constant in every first call; A and B, replays of the
    gold answers but for W's answers on some samples W fails -- A on two, B on eight others (so A
    passes and B fails on 8 samples, the reverse on 2); C, a replay of 4 samples only, one of
    them wrong."""
    from callbench.runs.store import RunStore

    root = tmp_path_factory.mktemp("nested")

    def rows_of(run_dir: Path) -> list[dict]:
        store = RunStore.open(run_dir)
        try:
            return sorted(store.rows(), key=lambda r: r["id"])
        finally:
            store.close()

    def replay(name: str, outputs: dict[str, str]) -> Path:
        preds = root / f"{name}.jsonl"
        preds.write_text("\n".join(json.dumps({"id": k, "output": v}) for k, v in outputs.items()))
        res = invoke("run", "nested", "--model", f"replay:{preds}", "--ids", ",".join(outputs), "--out", root / name,
                     "--no-progress")
        assert res.exit_code == 0, res.output
        return only_dir(root / name)

    res = invoke("run", "nested", "--model", "gold", "--limit", NESTED_N, "--out", root / "gold", "--no-progress")
    assert res.exit_code == 0, res.output
    gold = only_dir(root / "gold")
    right = {r["id"]: r["raw_output"] for r in rows_of(gold)}
    assert len(right) == NESTED_N

    def wrong(text: str) -> str:
        calls = json.loads(text)
        for key, value in calls[0]["arguments"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                calls[0]["arguments"][key] = value + 7
                break
        return json.dumps(calls)

    w_dir = replay("W", {k: wrong(v) for k, v in right.items()})
    w_rows = rows_of(w_dir)
    failing = [r["id"] for r in w_rows if r["verdicts"]["strict"]["win"] is False]
    assert len(failing) >= 10, failing
    bad = {r["id"]: r["raw_output"] for r in w_rows}
    runs = {"gold": gold, "W": w_dir}
    for name, picked in (("A", failing[:2]), ("B", failing[2:10])):
        runs[name] = replay(name, {k: bad[k] if k in picked else v for k, v in right.items()})
    others = [k for k in right if k != failing[0]][:3]
    runs["C"] = replay("C", {**{k: right[k] for k in others}, failing[0]: bad[failing[0]]})
    runs["ids"] = list(right)
    runs["n"] = NESTED_N
    return runs


STATEFUL_TASKS = 6


@pytest.fixture(scope="session")
def stateful_run(tmp_path_factory):
    """A stateful run (voice scenario, first STATEFUL_TASKS tasks) of a replay model: the
    reference program for tasks 1, 2 and 4; a wrong result for 0 and 3; a NameError for 5."""
    from callbench.tracks.stateful.track import builtin_bench, load_bench

    root = tmp_path_factory.mktemp("stateful")
    tasks = [t for t in load_bench(builtin_bench()) if t["scenario"] == "voice"][:STATEFUL_TASKS]
    outputs = {0: "result = None\n", 3: "result = None\n", 5: "x = undefined_name\n"}
    preds = root / "preds.jsonl"
    preds.write_text("\n".join(json.dumps({"id": t["id"], "output": outputs.get(i, t["reference"])}) for i, t in enumerate(tasks)))
    res = invoke(
        "run", "stateful", "--model", f"replay:{preds}", "--scenario", "voice", "--ids", ",".join(t["id"] for t in tasks),
        "--out", root / "runs", "--no-progress",
    )
    assert res.exit_code == 0, res.output
    run_dir = only_dir(root / "runs")
    return types.SimpleNamespace(
        dir=run_dir,
        output=res.output,
        ids=[t["id"] for t in tasks],
        passing={tasks[i]["id"] for i in (1, 2, 4)},
        errors={tasks[0]["id"]: "wrong_result", tasks[3]["id"]: "wrong_result", tasks[5]["id"]: "runtime"},
    )


@pytest.fixture(scope="session")
def stateful_gold(stateful_run, tmp_path_factory):
    """The gold model on the same STATEFUL_TASKS voice tasks as ``stateful_run`` (a comparison)."""
    root = tmp_path_factory.mktemp("stateful-gold")
    res = invoke(
        "run", "stateful", "--model", "gold", "--scenario", "voice", "--ids", ",".join(stateful_run.ids),
        "--out", root, "--no-progress",
    )
    assert res.exit_code == 0, res.output
    return only_dir(root)


WEBAPI_N = 6


@pytest.fixture(scope="session")
def webapi_runs(tmp_path_factory, data_root):
    """Webapi runs on the first WEBAPI_N asana tasks (needs the WAPIIBench data): the gold model,
    and a replay of its answers with a wrong URL on the second sample and code that does not
    parse on the fourth. Returns ``(gold_dir, replay_dir, ids)``."""
    from callbench.runs.store import RunStore

    root = tmp_path_factory.mktemp("webapi")
    res = invoke("run", "webapi", "--model", "gold", "--api", "asana", "--limit", WEBAPI_N, "--out", root / "gold",
                 "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    gold = only_dir(root / "gold")
    store = RunStore.open(gold)
    try:
        rows = {r["id"]: r["raw_output"] for r in store.rows()}
    finally:
        store.close()
    ids = sorted(rows)
    preds = []
    for i, sid in enumerate(ids):
        if i == 1:  # a wrong URL
            text = rows[sid]
            url = text.split("'")[1] if "'" in text.split("(")[1][:3] else text.split('"')[1]
            preds.append({"id": sid, "output": text.replace(url, "https://app.asana.com/api/1.0/nothing")})
        elif i == 3:
            preds.append({"id": sid, "code": "const x = ;"})
        else:
            preds.append({"id": sid, "output": rows[sid]})
    (root / "p.jsonl").write_text("\n".join(json.dumps(p) for p in preds))
    res = invoke("run", "webapi", "--model", f"replay:{root / 'p.jsonl'}", "--ids", ",".join(ids), "--out", root / "replay",
                 "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    return gold, only_dir(root / "replay"), ids


@pytest.fixture(scope="session")
def webapi_three_runs(webapi_runs, tmp_path_factory, data_root):
    """``([gold, replay, edited], ids)``: the two ``webapi_runs`` and "edited", a replay of the
    gold answers but for code that sends no request (sample 0), another resource's URL (sample 2:
    legal but wrong), a call that throws (sample 4) and an illegal URL (sample 5)."""
    from callbench.runs.store import RunStore

    gold, replay, ids = webapi_runs
    root = tmp_path_factory.mktemp("webapi-edited")
    store = RunStore.open(gold)
    try:
        rows = {r["id"]: r["raw_output"] for r in store.rows()}
    finally:
        store.close()
    preds = []
    for i, sid in enumerate(ids):
        if i == 0:
            preds.append({"id": sid, "code": "const unused = 1;\n"})
        elif i in (2, 4, 5):
            text = rows[sid]
            quote = "'" if "'" in text.split("(")[1][:3] else '"'
            url = text.split(quote)[1]
            if i == 2:  # the same endpoint, another resource: legal but wrong
                edited = text.replace(url, re.sub(r"/\d+$", "/424242", url))
            elif i == 4:  # a name that is not defined: the call throws
                edited = text.replace(f"{quote}{url}{quote}", "undefinedBaseUrl + '/x'")
            else:
                edited = text.replace(url, "https://app.asana.com/api/1.0/tasks/9/nothing")
            assert edited != text, text
            preds.append({"id": sid, "output": edited})
        else:
            preds.append({"id": sid, "output": rows[sid]})
    (root / "p.jsonl").write_text("\n".join(json.dumps(p) for p in preds))
    res = invoke("run", "webapi", "--model", f"replay:{root / 'p.jsonl'}", "--ids", ",".join(ids), "--out", root / "runs",
                 "--no-progress", "--data", data_root)
    assert res.exit_code == 0, res.output
    return [gold, replay, only_dir(root / "runs")], ids
