"""Markdown notes with YAML frontmatter: parse, render, and edit without losing human edits.

Reading goes through python-frontmatter (its YAML handler finds the block and loads it). Two
things the library alone does not serve, and that stay here:

- line numbers: recall points at lines of the file, so `parse` keeps where the body starts;
- writing: python-frontmatter re-dumps the whole mapping, which drops a person's comments and
  key order. `set_frontmatter` edits the block key by key instead: the lines of a key vaultmem
  owns are replaced, every other line (keys, comments, blank lines) is kept byte for byte. Only
  if the result would not parse back to the expected mapping (exotic YAML such as anchors
  shared between keys) does it fall back to re-serialising the whole mapping, which still
  keeps every key and value.

Times are written in one form everywhere (`core.clock`): unquoted `2026-11-29T15:20:01Z`, which
YAML reads as a timestamp and Obsidian shows as a Date & time property; days as `2026-11-29`.

PyYAML and python-frontmatter are imported lazily: `vaultmem append` never parses YAML, and
reading a note whose frontmatter is the plain subset vaultmem itself writes (`key: scalar` lines,
block lists of scalars) does not either: `simple_mapping` reads it with a full-match grammar whose
every form reads exactly as YAML reads it, and anything outside that grammar goes to PyYAML.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from pathlib import Path
from typing import Any

from vaultmem.core.errors import IntegrityError
from vaultmem.core.fsio import read_text
from vaultmem.core.patterns import later
from vaultmem.core.records import field, record

_KEY_LINE = later(
    r"""^(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#\-?:'"{}\[\],&*!|>%@`][^:#]*?|-[^\s:][^:#]*?)\s*:(?:\s|$)"""
)
_CLOSERS = ("---", "...")


@record
class Note:
    """A parsed note. `meta` is empty when there is no frontmatter or it is broken."""

    text: str
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    body_line: int = 1  # 1-based line of the first body line
    has_frontmatter: bool = False
    error: str | None = None  # why the frontmatter could not be parsed

    @property
    def ok(self) -> bool:
        return self.error is None


def _yaml() -> Any:
    import yaml

    return yaml


def _jsonable(value: Any) -> Any:
    """YAML turns unquoted dates into date objects; agents get ISO strings."""
    if isinstance(value, dt.datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str) and type(value) is not str:  # a StrEnum member: its plain word
        return str(value)
    return value


def split_frontmatter(text: str) -> tuple[list[str] | None, str, int]:
    """Return (frontmatter lines or None, body, 1-based body line). Unclosed → ValueError.

    The key-by-key writer needs the block as lines; `parse` uses python-frontmatter.
    """
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].lstrip("\ufeff").rstrip("\r\n") != "---":
        return None, text, 1
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() in _CLOSERS:
            return lines[1:i], "".join(lines[i + 1 :]), i + 2
    raise ValueError("frontmatter starts with '---' but has no closing '---'")


# the block's boundary lines: `---`, or YAML's `...` to close (CRLF files too)
_BOUNDARY = later(r"^(?:-{3}|\.{3})[ \t\r]*$", re.MULTILINE)


@functools.cache
def _handler() -> Any:
    from frontmatter.default_handlers import YAMLHandler

    # python-frontmatter's YAML handler, with the boundary above
    return YAMLHandler(fm_boundary=_BOUNDARY)


# --- the plain subset, without YAML -----------------------------------------------------------
# Every form below reads as PyYAML (SafeLoader, YAML 1.1) reads it, `_jsonable` applied; a line
# outside them (comments, tabs, nested maps, floats, escapes, a fraction of a second, trailing
# spaces, non-ASCII plain words...) makes `simple_mapping` answer None: PyYAML reads the block.
# what YAML refuses, escapes or reads as a line break inside quotes
_QUOTABLE = r"\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff"
_SIMPLE_SCALAR = later(
    rf'"(?P<dq>[^"\\{_QUOTABLE}]*)"'
    rf"|'(?P<sq>[^'{_QUOTABLE}]*)'"
    r"|(?P<int>0|-?[1-9][0-9]*)"
    r"|(?P<ts>(?P<y>[0-9]{4})-(?P<mo>[0-9]{2})-(?P<d>[0-9]{2})"
    r"(?:T(?P<h>[0-9]{2}):(?P<mi>[0-9]{2}):(?P<s>[0-9]{2})Z)?)"
    r"|(?P<plain>[A-Za-z][A-Za-z0-9._/+-]*(?: [A-Za-z0-9._/+-]+)*)"
    r"|(?P<null>~)|(?P<empty>\[\]|\{\})"
)
_SIMPLE_KEY = later(r"([A-Za-z_][A-Za-z0-9_-]*):(?: (.+))?")
_SIMPLE_ITEM = later(r"( *)- (.+)")
# PyYAML's YAML 1.1 words: a plain scalar (or a key) spelled so is no string
_WORDS: dict[str, Any] = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
    **dict.fromkeys(("null", "Null", "NULL"), None),
}
_NO_VALUE = object()


def _simple_scalar(token: str) -> Any:
    """One scalar token as PyYAML reads it (after `_jsonable`), or _NO_VALUE."""
    m = _SIMPLE_SCALAR.fullmatch(token)
    if m is None:
        return _NO_VALUE
    if m["dq"] is not None:
        return m["dq"]
    if m["sq"] is not None:
        return m["sq"]
    if m["int"] is not None:
        return int(m["int"])
    if m["ts"] is not None:
        y, mo, d = int(m["y"]), int(m["mo"]), int(m["d"])
        try:  # a day or an instant YAML cannot build (month 13) is YAML's to report
            if m["h"] is None:
                dt.date(y, mo, d)
            else:
                dt.datetime(y, mo, d, int(m["h"]), int(m["mi"]), int(m["s"]))
        except ValueError:
            return _NO_VALUE
        return m["ts"]  # what `_jsonable` makes of the date or the UTC datetime YAML builds
    if m["plain"] is not None:
        return _WORDS.get(m["plain"], m["plain"])
    if m["null"] is not None:
        return None
    return [] if m["empty"] == "[]" else {}


def simple_mapping(source: str) -> dict[str, Any] | None:
    """A frontmatter block as PyYAML reads it, when every line is in the plain subset: `key:
    scalar`, or `key:` followed by `- scalar` lines of one indentation. None otherwise."""
    out: dict[str, Any] = {}
    key: str | None = None  # the last `key:` with no value: list items may follow it
    indent: str | None = None
    gap = False  # a blank line since the last key or item
    for line in source.split("\n"):
        if not line:
            gap = True
            continue
        item = _SIMPLE_ITEM.fullmatch(line)
        if item is not None:
            if key is None or gap or item[1] != (item[1] if indent is None else indent):
                return None  # an item with no key, after a blank line, or out of line
            value = _simple_scalar(item[2])
            if value is _NO_VALUE or isinstance(value, dict):
                return None
            if indent is None:
                out[key] = []
            indent = item[1]
            out[key].append(value)
            continue
        m = _SIMPLE_KEY.fullmatch(line)
        if m is None or m[1] in _WORDS:
            return None
        key, indent, gap = m[1], None, False
        out[key] = None  # `key:` alone is null, unless list items follow
        if m[2] is not None:
            value = _simple_scalar(m[2])
            if value is _NO_VALUE:
                return None
            out[key], key = value, None
    return out


def load_yaml_mapping(source: str) -> dict[str, Any]:
    simple = simple_mapping(source)
    if simple is not None:
        return simple
    yaml = _yaml()
    try:
        data = _handler().load(source)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (frontmatter line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ValueError(f"broken YAML{where}: {problem}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError("frontmatter is not a list of `key: value` properties")
    return {str(k): _jsonable(v) for k, v in data.items()}


def parse(text: str) -> Note:
    """Parse a note. Broken frontmatter is reported in `Note.error`, never raised."""
    clean = text.removeprefix("\ufeff")
    first = clean.split("\n", 1)[0].rstrip("\r")
    if first != "---":
        return Note(text=text, body=text, body_line=1)
    try:  # python-frontmatter's split, without loading it: what lies between two boundaries
        _, fm, content = _BOUNDARY.split(clean, 2)
    except ValueError:
        error = "frontmatter starts with '---' but has no closing '---'"
        return Note(text=text, body=text, has_frontmatter=True, error=error)
    # the library leaves the closing line's own newline on the body
    body = content[2:] if content.startswith("\r\n") else content.removeprefix("\n")
    body_line = text[: len(text) - len(body)].count("\n") + 1 if body else text.count("\n") + 1
    try:
        meta = load_yaml_mapping(fm)
    except ValueError as exc:
        return Note(text=text, body=body, body_line=body_line, has_frontmatter=True, error=str(exc))
    return Note(text=text, meta=meta, body=body, body_line=body_line, has_frontmatter=True)


def read(path: Path) -> Note:
    """Read and parse a note; not-UTF-8 raises IntegrityError naming the file."""
    return parse(read_text(path, what="note"))


def require_ok(note: Note, path: Path) -> Note:
    """For commands that must edit a note: broken frontmatter is an IntegrityError."""
    if note.error:
        raise IntegrityError(
            f"{path}: {note.error}",
            "fix the frontmatter between the '---' lines (Obsidian shows it as properties)",
        )
    return note


# a top-level `key: '2026-11-29T15:20:01Z'` (or a quoted day) as PyYAML writes a string that
# looks like a timestamp; written plain, YAML and Obsidian read it as a date
_QUOTED_TIME = later(r"^([^\s#][^:\n]*: )'(\d{4}-\d\d-\d\d(?:T\d\d:\d\d:\d\dZ)?)'$", re.MULTILINE)


def dump_mapping(meta: dict[str, Any]) -> str:
    yaml = _yaml()
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    out: str = yaml.dump(
        _jsonable(meta),
        Dumper=dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )
    return _QUOTED_TIME.sub(r"\1\2", out)


def render(meta: dict[str, Any], body: str) -> str:
    """A new note: frontmatter (in the given key order) then body."""
    head = dump_mapping(meta) if meta else ""
    if body and not body.startswith("\n"):
        body = "\n" + body
    return f"---\n{head}---\n{body}"


def _key_of(line: str) -> str | None:
    if not _KEY_LINE.match(line):
        return None
    try:
        parsed = load_yaml_mapping(line.split(":", 1)[0] + ": null")
    except ValueError:
        return None
    return next(iter(parsed), None)


def _blocks(fm_lines: list[str]) -> list[tuple[str | None, list[str]]]:
    """Split frontmatter lines into (key, lines) blocks; key None for comments/blank/preamble."""
    starts = [(i, k) for i, line in enumerate(fm_lines) if (k := _key_of(line)) is not None]
    blocks: list[tuple[str | None, list[str]]] = []
    if not starts:
        return [(None, fm_lines)]
    if starts[0][0] > 0:
        blocks.append((None, fm_lines[: starts[0][0]]))
    for n, (start, key) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(fm_lines)
        chunk = fm_lines[start:end]
        # trailing blank lines and column-0 comments belong to nobody: keep them in place
        tail = len(chunk)
        while tail > 1 and (not chunk[tail - 1].strip() or chunk[tail - 1].startswith("#")):
            tail -= 1
        blocks.append((key, chunk[:tail]))
        if tail < len(chunk):
            blocks.append((None, chunk[tail:]))
    return blocks


def set_frontmatter(text: str, updates: dict[str, Any], *, path: Path | None = None) -> str:
    """Set (or, with value None, remove) keys in a note's frontmatter, keeping all else.

    Raises IntegrityError when the existing frontmatter is broken: vaultmem never rewrites a
    file it cannot read back.
    """
    where = path or Path("<note>")
    note = require_ok(parse(text), where)
    expected = dict(note.meta)
    for key, value in updates.items():
        if value is None:
            expected.pop(key, None)
        else:
            expected[key] = _jsonable(value)
    if not note.has_frontmatter:
        return render({k: v for k, v in updates.items() if v is not None}, text)

    fm_lines, body, _ = split_frontmatter(text)
    assert fm_lines is not None
    if fm_lines and not fm_lines[-1].endswith("\n"):
        fm_lines[-1] += "\n"
    newline = "\r\n" if fm_lines and fm_lines[0].endswith("\r\n") else "\n"
    pending = dict(updates)
    out: list[str] = []
    for block_key, lines in _blocks(fm_lines):
        if block_key is not None and block_key in pending:
            value = pending.pop(block_key)
            if value is not None:
                out.append(dump_mapping({block_key: value}).replace("\n", newline))
        else:
            out.extend(lines)
    for key, value in pending.items():
        if value is not None:
            out.append(dump_mapping({key: value}).replace("\n", newline))
    head = "".join(out)
    try:
        ok = load_yaml_mapping(head) == expected
    except ValueError:
        ok = False
    if not ok:
        head = dump_mapping(expected) if expected else ""
    opener = text.splitlines(keepends=True)[0]
    closer_idx = len(fm_lines) + 1
    closer = text.splitlines(keepends=True)[closer_idx]
    return opener + head + closer + body


def body_lines(note: Note) -> list[tuple[int, str]]:
    """Body lines with their 1-based line numbers in the whole file."""
    return [(note.body_line + i, line) for i, line in enumerate(note.body.splitlines())]
