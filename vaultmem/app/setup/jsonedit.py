"""Edit a JSON file's text in place: add, replace or remove one member or item, and leave every
other byte as the person wrote it (their indentation, key order, spacing, escapes).

`vaultmem setup` merges its hooks and MCP entries into files people already keep
(`.claude/settings.json`, `.mcp.json`, `.cursor/mcp.json`). Loading and re-dumping them would
reformat the whole file; these functions parse the text with positions and splice, so an
untouched part stays byte for byte, and removing what was added gives the original back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vaultmem.core.records import field, record

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')


@record(frozen=False)
class Node:
    """A JSON value and where it is in the text (`start` inclusive, `end` exclusive)."""

    kind: str  # object, array, string, number, literal
    start: int
    end: int
    members: list[Member] = field(default_factory=list)  # objects
    items: list[Node] = field(default_factory=list)  # arrays

    def member(self, key: str) -> Member | None:
        return next((m for m in self.members if m.key == key), None)


@record(frozen=False)
class Member:
    key: str
    start: int  # the key's opening quote
    value: Node

    @property
    def end(self) -> int:
        return self.value.end


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> ValueError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ValueError(f"{what} at line {line}")

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def value(self) -> Node:
        self.ws()
        start = self.pos
        ch = self.text[start : start + 1]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch == '"':
            m = _STRING.match(self.text, start)
            if not m:
                raise self.fail("bad string")
            self.pos = m.end()
            return Node("string", start, m.end())
        for word in ("true", "false", "null"):
            if self.text.startswith(word, start):
                self.pos = start + len(word)
                return Node("literal", start, self.pos)
        m = _NUMBER.match(self.text, start)
        if m and m.end() > start:
            self.pos = m.end()
            return Node("number", start, m.end())
        raise self.fail("expected a value")

    def obj(self) -> Node:
        node = Node("object", self.pos, -1)
        self.pos += 1
        self.ws()
        if self.text.startswith("}", self.pos):
            self.pos += 1
            node.end = self.pos
            return node
        while True:
            self.ws()
            key_start = self.pos
            m = _STRING.match(self.text, key_start)
            if not m:
                raise self.fail("expected a key")
            self.pos = m.end()
            self.ws()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            node.members.append(Member(json.loads(m.group()), key_start, self.value()))
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("}", self.pos):
                self.pos += 1
                node.end = self.pos
                return node
            raise self.fail("expected ',' or '}'")

    def arr(self) -> Node:
        node = Node("array", self.pos, -1)
        self.pos += 1
        self.ws()
        if self.text.startswith("]", self.pos):
            self.pos += 1
            node.end = self.pos
            return node
        while True:
            node.items.append(self.value())
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if self.text.startswith("]", self.pos):
                self.pos += 1
                node.end = self.pos
                return node
            raise self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    """The document's top value with positions; ValueError (with the line) if not JSON."""
    p = _Parser(text)
    node = p.value()
    p.ws()
    if p.pos != len(text):
        raise p.fail("text after the JSON value")
    return node


def value_of(text: str, node: Node) -> Any:
    return json.loads(text[node.start : node.end])


# --- layout ---------------------------------------------------------------------------------------


def _line_indent(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    return re.match(r"[ \t]*", text[start:]).group()  # type: ignore[union-attr]


def _unit(text: str) -> str:
    """The file's indentation step (default two spaces)."""
    sizes = [len(m.group(1)) for m in re.finditer(r"\n( +)\S", text)]
    if "\n\t" in text:
        return "\t"
    positive = [s for s in sizes if s > 0]
    return " " * min(positive) if positive else "  "


def render(value: Any, indent: str, unit: str) -> str:
    """`value` as JSON laid out like the file: nested lines start at `indent`."""
    raw = json.dumps(value, indent=unit, ensure_ascii=False)
    return raw.replace("\n", "\n" + indent)


def _child_indent(text: str, container: Node, unit: str) -> str:
    children = container.members or container.items
    if children:
        first = children[0].start
        return _line_indent(text, first)
    return _line_indent(text, container.start) + unit


# --- edits ------------------------------------------------------------------------------------------


def insert_member(text: str, obj: Node, key: str, value: Any) -> str:
    """Add `"key": value` as the object's last member."""
    unit = _unit(text)
    inner = _child_indent(text, obj, unit)
    rendered = f"{json.dumps(key, ensure_ascii=False)}: {render(value, inner, unit)}"
    return _insert(text, obj, obj.members[-1].end if obj.members else None, rendered, inner)


def append_item(text: str, arr: Node, value: Any) -> str:
    """Add `value` as the array's last item."""
    unit = _unit(text)
    inner = _child_indent(text, arr, unit)
    return _insert(
        text, arr, arr.items[-1].end if arr.items else None, render(value, inner, unit), inner
    )


def _insert(text: str, container: Node, after: int | None, rendered: str, inner: str) -> str:
    if after is not None:
        # same line as the previous child, or a new line at its indentation
        one_line = "\n" not in text[container.start : container.end]
        sep = ", " if one_line else ",\n" + inner
        return text[:after] + sep + rendered + text[after:]
    close = _line_indent(text, container.start)
    body = "\n" + inner + rendered + "\n" + close
    return text[: container.start + 1] + body + text[container.end - 1 :]


def replace_value(text: str, node: Node, value: Any) -> str:
    unit = _unit(text)
    return (
        text[: node.start] + render(value, _line_indent(text, node.start), unit) + text[node.end :]
    )


def remove_child(text: str, container: Node, index: int) -> str:
    """Remove the container's member or item `index` with its comma; an emptied container
    becomes `{}` or `[]`."""
    children: list[Any] = container.members or container.items
    child = children[index]
    if len(children) == 1:
        empty = "{}" if container.kind == "object" else "[]"
        return text[: container.start] + empty + text[container.end :]
    if index > 0:
        return text[: children[index - 1].end] + text[child.end :]
    return text[: child.start] + text[children[1].start :]


def duplicate_key(source: str) -> str | None:
    """The first key that appears twice in one JSON object of `source`, if any."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: set[str] = set()
        for key, _value in items:
            if key in seen and not found:
                found.append(key)
            seen.add(key)
        return dict(items)

    try:
        json.loads(source, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None  # anything json refuses is reported by parse()
    return found[0] if found else None
