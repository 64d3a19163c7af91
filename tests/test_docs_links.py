"""Relative links in README.md and docs/ point at files that exist (the README is the front door:
a moved page must not leave it pointing nowhere)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _targets(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # code aside
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in LINK.findall(text) if "://" not in t and not t.startswith(("#", "mailto:"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    missing = [t for t in _targets(page) if not (page.parent / t.split("#", 1)[0]).exists()]
    assert not missing, f"{page.relative_to(ROOT)}: links to missing files: {missing}"


def test_the_checker_sees_a_broken_link(tmp_path):
    page = tmp_path / "x.md"
    page.write_text("see [a](a.md) and [b](https://x/y) and [c](#top), `[e](e.md)`\n```\n[d](d.md)\n```\n")
    assert _targets(page) == ["a.md"]
