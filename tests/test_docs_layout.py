"""Issue 25's findings about the README's shape, each as a check that fails on the old one
(1,083 lines, no table of contents, 'Use it from your agent' after 8,928 words, the layer
sections in the order 1, 3, 4, 2) and on a doc that still sends people after the `mcp` extra."""

from __future__ import annotations

import re

from tests._cli import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = sorted((REPO / "docs").glob("*.md"))


def headings(text: str, level: str = "## ") -> list[str]:
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith(level):
            out.append(line[len(level) :].strip())
    return out


def test_the_readme_has_contents_listing_every_section() -> None:
    sections = headings(README)
    assert "Contents" in sections
    contents = README.split("## Contents", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"\[([^\]]+)\]\(#", contents)
    missing = [s for s in sections if s != "Contents" and s not in listed]
    assert not missing, f"sections not in the README's contents: {missing}"


def test_the_layers_come_in_order() -> None:
    layers = [int(m.group(1)) for s in headings(README) if (m := re.match(r"Layer (\d)\b", s))]
    assert layers == [1, 2, 3, 4]


def test_using_it_from_an_agent_comes_first_and_early() -> None:
    sections = [s for s in headings(README) if s != "Contents"]
    assert sections[0] == "Use it from your agent"
    before = README.split("## Use it from your agent", 1)[0]
    assert len(before.split()) < 800, len(before.split())


def test_the_reference_lives_in_docs_not_the_readme() -> None:
    assert len(README.splitlines()) < 600 and len(README.split()) < 6000
    for name in ("cli.md", "FORMAT.md", "runtimes.md", "benchmarks.md"):
        assert (REPO / "docs" / name).stat().st_size > 2000, name


def test_no_doc_says_the_mcp_server_needs_an_extra() -> None:
    """The server speaks MCP itself: `vaultmem mcp` never exits 7 for a missing package."""
    stale = re.compile(r"needs the `mcp` extra|`vaultmem mcp` without the `mcp` extra")
    found = [p.name for p in [REPO / "README.md", *DOCS] if stale.search(p.read_text("utf-8"))]
    assert not found
