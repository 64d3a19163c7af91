"""``callbench view``: a local, read-only web app over a runs directory.

The standard library's threading HTTP server (no web framework: a handful of GET routes):

- ``/``: every run below the directory (the rows of ``callbench runs``), sortable and filterable,
  with checkboxes to compare two or more runs; the table reloads every few seconds while a run is
  running. Everything is inline (no CDN), as the HTML reports are.
- ``/runs.json``: the same rows as JSON (the directory is re-read on every request).
- ``/run?d=DIR``: the run's HTML report (:func:`callbench.report.build.build_report`, written to a
  temporary directory, never into the run), with a bar to open any of its samples.
- ``/compare?d=A&d=B...``: the comparison report of those runs.
- ``/sample?d=DIR&id=ID``: one sample as ``callbench show`` prints it, HTML-escaped.

``DIR`` is a run directory's path relative to the served directory; only directories that the
listing finds are served (nothing else on disk can be named). Only GET and HEAD are answered.
"""

from __future__ import annotations

import html
import ipaddress
import json
import tempfile
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from callbench.errors import CallbenchError, ConfigError
from callbench.report.run_dirs import find_run_dirs
from callbench.report.runs_table import runs_table

#: ``sample_text(run_dir, sample_id)``: one sample as text (the CLI gives ``callbench show``'s).
SampleText = Callable[[Path, str], str]

RELOAD_MS = 3000


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _page(title: str, body: str, head: str = "") -> str:
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title><style>{_CSS}</style>{head}</head>"
        f"<body>{body}</body></html>"
    )


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.2em;color:#222}
table{border-collapse:collapse;font-size:13px}th,td{border-bottom:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
th{cursor:pointer;background:#f4f4f4;user-select:none}td.num{text-align:right}
.broken{color:#a00}.running{color:#06c}.partial{color:#a60}
pre{white-space:pre-wrap;background:#f8f8f8;padding:.8em;border:1px solid #ddd}
#cb-bar{background:#eef;padding:.5em;margin-bottom:1em;font:14px system-ui,sans-serif}
"""

# Plain JS, inline: renders the rows (JSON in the page, re-read from /runs.json while a run runs),
# sorts on a header click, filters on the text box and the track selector, and opens the
# comparison of the ticked runs.
_INDEX_JS = r"""
(function () {
  var rows = JSON.parse(document.getElementById("runs-data").textContent);
  var sortKey = null, sortDir = 1, timer = null;
  var cols = ["track", "model", "setup", "settings", "n", "n_selected", "status"];
  function metricsOf(rs) { var m = []; rs.forEach(function (r) { Object.keys(r.metrics).forEach(function (k) { if (m.indexOf(k) < 0) m.push(k); }); }); return m; }
  function val(r, k) { return cols.indexOf(k) >= 0 ? r[k] : (k === "directory" ? r.rel : r.metrics[k]); }
  function text(v) { return v === null || v === undefined ? "\u2013" : (typeof v === "number" && !Number.isInteger(v) ? (100 * v).toFixed(1) : String(v)); }
  function cell(tr, v, cls) { var td = document.createElement("td"); td.textContent = text(v); if (cls) td.className = cls; tr.appendChild(td); return td; }
  function render() {
    var metrics = metricsOf(rows), head = document.getElementById("head"), body = document.getElementById("body");
    head.textContent = ""; body.textContent = "";
    var htr = document.createElement("tr"); htr.appendChild(document.createElement("th"));
    cols.concat(metrics, ["directory"]).forEach(function (k) {
      var th = document.createElement("th"); th.textContent = k + (sortKey === k ? (sortDir > 0 ? " \u25b2" : " \u25bc") : "");
      th.dataset.key = k; th.addEventListener("click", function () { sortDir = sortKey === k ? -sortDir : 1; sortKey = k; render(); });
      htr.appendChild(th);
    });
    head.appendChild(htr);
    var q = document.getElementById("filter").value.toLowerCase(), track = document.getElementById("track").value;
    var shown = rows.filter(function (r) {
      var hay = [r.track, r.model, r.setup, r.settings, r.status, r.rel].join(" ").toLowerCase();
      return (!q || hay.indexOf(q) >= 0) && (!track || r.track === track);
    });
    if (sortKey) shown.sort(function (a, b) {
      var x = val(a, sortKey), y = val(b, sortKey);
      if (x === y) return 0; if (x === null || x === undefined) return 1; if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sortDir;
    });
    shown.forEach(function (r) {
      var tr = document.createElement("tr"); tr.dataset.dir = r.rel;
      var td = document.createElement("td"), box = document.createElement("input");
      box.type = "checkbox"; box.className = "pick"; box.value = r.rel; box.checked = picked.indexOf(r.rel) >= 0;
      box.addEventListener("change", function () { if (box.checked) picked.push(r.rel); else picked.splice(picked.indexOf(r.rel), 1); update(); });
      td.appendChild(box); tr.appendChild(td);
      cols.forEach(function (k) { cell(tr, r[k], k === "status" ? r.status.split(/[ :]/)[0] : (k === "n" || k === "n_selected" ? "num" : null)); });
      metrics.forEach(function (k) { cell(tr, r.metrics[k], "num"); });
      var dtd = cell(tr, null); dtd.textContent = "";
      var a = document.createElement("a"); a.href = "run?d=" + encodeURIComponent(r.rel); a.textContent = r.rel; dtd.appendChild(a);
      body.appendChild(tr);
    });
    document.getElementById("count").textContent = shown.length + " of " + rows.length + " runs";
    update();
  }
  var picked = [];
  function update() {
    var btn = document.getElementById("compare");
    btn.disabled = picked.length < 2;
    btn.textContent = "Compare (" + picked.length + ")";
    btn.dataset.href = picked.length < 2 ? "" : "compare?" + picked.map(function (d) { return "d=" + encodeURIComponent(d); }).join("&");
  }
  function tracks() {
    var sel = document.getElementById("track"), have = Array.prototype.map.call(sel.options, function (o) { return o.value; });
    rows.forEach(function (r) { if (r.track && have.indexOf(r.track) < 0) { var o = document.createElement("option"); o.value = o.textContent = r.track; sel.appendChild(o); have.push(r.track); } });
  }
  function schedule() {
    if (timer) clearTimeout(timer);
    if (!rows.some(function (r) { return r.status === "running"; })) return;
    timer = setTimeout(function () {
      fetch("runs.json").then(function (res) { return res.json(); }).then(function (data) { rows = data; tracks(); render(); schedule(); })
        .catch(function () { schedule(); });
    }, RELOAD_MS);
  }
  document.getElementById("filter").addEventListener("input", render);
  document.getElementById("track").addEventListener("change", render);
  document.getElementById("compare").addEventListener("click", function () {
    if (picked.length >= 2) window.location.href = document.getElementById("compare").dataset.href;
  });
  tracks(); render(); schedule();
})();
"""


def _json_for_script(value: object) -> str:
    """JSON safe inside ``<script type=application/json>`` (no ``</script>`` can close it)."""
    return json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


class RunsView:
    """The pages, as functions of the served directory (re-read on every request)."""

    def __init__(self, root: Path, sample_text: SampleText | None = None):
        self.root = Path(root)
        self.sample_text = sample_text
        self._lock = threading.Lock()  # one report built at a time (they are CPU-bound anyway)

    # -- the runs
    def rel(self, directory: str | Path) -> str:
        p = Path(directory)
        try:
            return p.relative_to(self.root).as_posix() or "."
        except ValueError:
            return p.as_posix()

    def rows(self) -> list[dict[str, object]]:
        return [{**r.as_dict(), "rel": self.rel(r.directory)} for r in runs_table(self.root)]

    def resolve(self, rel: str) -> Path:
        """The run directory ``rel`` names, if the listing finds it (else a ConfigError)."""
        for d in find_run_dirs(self.root):
            if self.rel(d) == rel:
                return d
        raise ConfigError(f"{rel}: no such run below {self.root}")

    # -- pages
    def index(self) -> str:
        rows = self.rows()
        body = (
            f"<h1>Runs in {html.escape(str(self.root))}</h1>"
            "<p><input id=filter type=search placeholder='filter (model, setup, status...)' size=40> "
            "<select id=track><option value=''>all tracks</option></select> "
            "<button id=compare disabled>Compare (0)</button> <span id=count></span></p>"
            "<table id=runs><thead id=head></thead><tbody id=body></tbody></table>"
            f"<script type='application/json' id=runs-data>{_json_for_script(rows)}</script>"
            f"<script>{_INDEX_JS.replace('RELOAD_MS', str(RELOAD_MS))}</script>"
        )
        return _page("callbench runs", body)

    def _report(self, dirs: list[Path]) -> tuple[str, list[str]]:
        """The report of ``dirs`` (one run, or a comparison) as HTML, and its sample ids."""
        from callbench.report.build import build_report

        with self._lock, tempfile.TemporaryDirectory(prefix="callbench-view-") as tmp:
            if len(dirs) == 1:
                rep = build_report(dirs, html=Path(tmp) / "report.html")
            else:
                rep = build_report(dirs, out=Path(tmp) / "comparison")
            text = rep.html_path.read_text(encoding="utf-8")
        ids = [s.id for s in rep.model.samples] if rep.model is not None else []
        return text, ids

    def _bar(self, rels: list[str], ids: list[str]) -> str:
        options = "".join(f"<option>{html.escape(i)}</option>" for i in ids)
        forms = "".join(
            f"<form action=sample method=get style='display:inline'><input type=hidden name=d value='{html.escape(r, quote=True)}'>"
            f" sample of {html.escape(r)}: <select name=id>{options}</select> <button>show</button></form> "
            for r in rels
        )
        return f"<div id=cb-bar><a href='./'>all runs</a> | {forms}</div>"

    def run_page(self, rel: str) -> str:
        text, ids = self._report([self.resolve(rel)])
        return _inject(text, self._bar([rel], ids))

    def compare_page(self, rels: list[str]) -> str:
        if len(rels) < 2:
            raise ConfigError("compare: pick two or more runs")
        text, ids = self._report([self.resolve(r) for r in rels])
        return _inject(text, self._bar(rels, ids))

    def sample_page(self, rel: str, sample_id: str) -> str:
        directory = self.resolve(rel)
        if self.sample_text is None:
            raise ConfigError("this server shows no samples")
        content = self.sample_text(directory, sample_id)
        link = f"run?{urlencode({'d': rel})}"
        body = (
            f"<div id=cb-bar><a href='./'>all runs</a> | <a href='{html.escape(link, quote=True)}'>report of {html.escape(rel)}</a></div>"
            f"<h1>{html.escape(sample_id)}</h1><pre id=sample>{html.escape(content)}</pre>"
        )
        return _page(f"{sample_id} ({rel})", body)


def _inject(page: str, bar: str) -> str:
    """``bar`` as the first thing in the report's body."""
    i = page.find("<body")
    j = page.find(">", i) if i >= 0 else -1
    if j < 0:
        return bar + page
    return page[: j + 1] + bar + page[j + 1 :]


def _handler(view: RunsView) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "callbench-view"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's name
            pass  # quiet: the terminal is the user's

        def _send(self, status: int, body: str, ctype: str = "text/html; charset=utf-8") -> None:
            data = body.encode("utf-8", errors="backslashreplace")
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def do_HEAD(self) -> None:  # noqa: N802 - the stdlib's name
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            url = urlsplit(self.path)
            q = parse_qs(url.query)
            route = url.path.rstrip("/") or "/"
            try:
                if route == "/":
                    self._send(200, view.index())
                elif route == "/runs.json":
                    self._send(200, json.dumps(view.rows(), ensure_ascii=False), "application/json; charset=utf-8")
                elif route == "/run":
                    self._send(200, view.run_page(_one(q, "d")))
                elif route == "/compare":
                    self._send(200, view.compare_page(q.get("d", [])))
                elif route == "/sample":
                    self._send(200, view.sample_page(_one(q, "d"), _one(q, "id")))
                else:
                    self._send(404, _page("not found", f"<p>no page {html.escape(url.path)}; <a href='/'>all runs</a></p>"))
            except CallbenchError as exc:
                message = html.escape(" ".join(str(exc).split()))
                self._send(400, _page("error", f"<p class=broken>error: {message}</p><p><a href='/'>all runs</a></p>"))

        def _refuse(self) -> None:
            self._send(405, _page("read-only", "<p>read-only: only GET</p>"))

        do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # noqa: N815

    return Handler


def _one(q: dict[str, list[str]], key: str) -> str:
    values = q.get(key) or []
    if len(values) != 1 or not values[0]:
        raise ConfigError(f"give exactly one '{key}'")
    return values[0]


def make_server(
    root: Path, *, host: str = "127.0.0.1", port: int = 0, sample_text: SampleText | None = None, allow_remote: bool = False
) -> ThreadingHTTPServer:
    """The server (not yet serving: call ``serve_forever``); a host that is not loopback is refused
    unless ``allow_remote`` (the user named it)."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(f"--host {host}: not a loopback address; the view is served on 127.0.0.1 unless --host is given")
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port {port}: must be between 0 and 65535")
    if not Path(root).is_dir():
        raise ConfigError(f"{root}: no such directory (the runs directory to view)")
    server = ThreadingHTTPServer((host, port), _handler(RunsView(Path(root), sample_text)))
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    name = host.decode() if isinstance(host, bytes) else str(host)
    shown = f"[{name}]" if ":" in name else name
    return f"http://{shown}:{port}/"


__all__ = ["RunsView", "is_loopback", "make_server", "url_of"]
