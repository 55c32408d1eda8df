"""Frontmatter parsing and key-by-key editing that keeps human edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._readonly import read_only
from vaultmem.core import notes
from vaultmem.core.errors import IntegrityError, NotWritableError
from vaultmem.core.fsio import atomic_write, create_exclusive, read_text

HUMAN = """---
# my comment about this note
name: Old name
tags:
  - a
  - b
my_key: keep me   # trailing comment
nested:
  x: 1

type: user
---

Body line one.
A person's line.
"""


def test_parse_reports_broken_yaml() -> None:
    note = notes.parse("---\nname: [unclosed\n---\nbody\n")
    assert not note.ok and "broken YAML" in (note.error or "")
    assert note.body == "body\n"


def test_parse_unclosed_frontmatter() -> None:
    note = notes.parse("---\nname: x\nno end\n")
    assert not note.ok and "closing" in (note.error or "")


def test_parse_no_frontmatter_and_line_numbers() -> None:
    assert notes.parse("# Title\n").meta == {}
    note = notes.parse("---\na: 1\nb: 2\n---\nfirst\n")
    assert note.body_line == 5
    assert notes.body_lines(note) == [(5, "first")]


def test_dates_become_iso_strings() -> None:
    note = notes.parse("---\ncreated: 2026-11-29T10:00:00Z\nday: 2026-11-29\n---\n")
    assert note.meta == {"created": "2026-11-29T10:00:00Z", "day": "2026-11-29"}


def test_set_frontmatter_keeps_everything_else() -> None:
    out = notes.set_frontmatter(HUMAN, {"name": "New name", "status": "retracted", "type": None})
    assert "# my comment about this note" in out
    assert "my_key: keep me   # trailing comment" in out
    assert "nested:\n  x: 1\n" in out
    assert "tags:\n  - a\n  - b\n" in out
    assert out.endswith("\nBody line one.\nA person's line.\n")
    meta = notes.parse(out).meta
    assert meta["name"] == "New name" and meta["status"] == "retracted" and "type" not in meta
    assert meta["my_key"] == "keep me"


def test_set_frontmatter_refuses_broken() -> None:
    with pytest.raises(IntegrityError, match="broken YAML"):
        notes.set_frontmatter("---\na: [x\n---\n", {"a": 1}, path=Path("x.md"))


def test_set_frontmatter_adds_frontmatter_when_missing() -> None:
    out = notes.set_frontmatter("# Just text\n", {"status": "x"})
    assert notes.parse(out).meta == {"status": "x"} and out.endswith("# Just text\n")


def test_set_frontmatter_crlf() -> None:
    text = "---\r\nname: a\r\nkeep: 1\r\n---\r\nbody\r\n"
    out = notes.set_frontmatter(text, {"name": "b"})
    assert out == "---\r\nname: b\r\nkeep: 1\r\n---\r\nbody\r\n"


def test_atomic_write_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "n.md"
    atomic_write(target, "one")
    atomic_write(target, "two")
    assert target.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_atomic_write_read_only_folder(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "n.md").write_text("old")
    with read_only(folder):
        with pytest.raises(NotWritableError, match="read-only"):
            atomic_write(folder / "n.md", "new")
        assert (folder / "n.md").read_text() == "old"
        assert [p.name for p in folder.iterdir()] == ["n.md"]


def test_create_exclusive_never_overwrites(tmp_path: Path) -> None:
    target = tmp_path / "a.md"
    assert create_exclusive(target, "first")
    assert not create_exclusive(target, "second")
    assert target.read_text() == "first"


def test_read_text_bad_bytes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.md"
    bad.write_bytes(b"caf\xe9\n")
    with pytest.raises(IntegrityError, match="not UTF-8"):
        read_text(bad)
