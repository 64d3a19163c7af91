"""The report in a real browser (headless Chromium): the sample filter script runs and hides what
the default filter (failing samples) leaves out. Skipped where no Chromium is installed."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

_BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome", "headless_shell")


def _browser() -> str:
    for name in _BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no headless Chromium found (looked for {', '.join(_BROWSERS)}; e.g. apt-get install chromium-headless-shell)")


def test_filter_script_runs_in_chromium(nested_runs, cli, tmp_path, dom):
    browser = _browser()
    out = tmp_path / "cmp"
    res = cli("report", nested_runs["A"], nested_runs["B"], "--out", out)
    assert res.exit_code == 0, res.output
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0",
         "--dump-dom", (out / "report.html").as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Uncaught" not in proc.stderr, proc.stderr[-2000:]
    doc = dom.parse(proc.stdout)
    n = nested_runs["n"]
    count = doc.find("span", id="f-count").text()
    assert count == f"10 of {n} samples shown", count  # failing in any run: 2 (A) + 8 (B)
    entries = dom.samples(doc)
    hidden = [e for e in entries if "hidden" in e.attrs]
    assert len(entries) == n and len(hidden) == n - 10
    assert all(e.attrs["data-pass"] == "1 1" for e in hidden)
    assert re.search(r"<svg", proc.stdout)
