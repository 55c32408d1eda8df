"""Read a JSON5 file's text with positions, for `app.setup.jsonedit`'s in-place edits.

OpenClaw reads its config with JSON5 (docs/gateway/configuration.md; its own examples write
`plugins: { slots: { memory: "memory-core" } }`): comments, unquoted keys, single-quoted
strings, trailing commas, hex numbers, `Infinity`. `parse` gives the same `jsonedit.Node` tree
as `jsonedit.parse`, so `insert_member`, `append_item`, `replace_value` and `remove_child`
splice a JSON5 file the same way, every other byte (the comments included) as the person
wrote it; what setup inserts is plain JSON, which is JSON5 too. `value_of` reads a value as
Python. The grammar followed is https://spec.json5.org (1.0.0), without the line and
paragraph separators inside strings.
"""

from __future__ import annotations

import json
import re
from typing import Any

from vaultmem.app.setup.jsonedit import Member, Node

_WS = re.compile(r"(?:[ \t\n\r\v\f\u00a0\ufeff\u2028\u2029]+|//[^\n]*|/\*.*?\*/)*", re.S)
_STRING = re.compile(r'"(?:[^"\\\n]|\\(?:.|\n))*"|\'(?:[^\'\\\n]|\\(?:.|\n))*\'')
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(
    r"[+-]?(?:0[xX][0-9a-fA-F]+|Infinity|NaN|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "0": "\0"}


def decode_string(token: str) -> str:
    """A JSON5 string token ("…" or '…') as Python text."""
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1]
        if nxt == "\n":  # a line continuation
            i += 2
        elif nxt == "u":
            out.append(chr(int(body[i + 2 : i + 6], 16)))
            i += 6
        elif nxt == "x":
            out.append(chr(int(body[i + 2 : i + 4], 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _number(token: str) -> Any:
    sign = -1 if token.startswith("-") else 1
    bare = token.lstrip("+-")
    if bare.lower().startswith("0x"):
        return sign * int(bare, 16)
    if bare in ("Infinity", "NaN"):
        return sign * float(bare.replace("Infinity", "inf"))
    value = float(bare) if any(c in bare for c in ".eE") else int(bare)
    return sign * value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.duplicate: str | None = None

    def fail(self, what: str) -> ValueError:
        line = self.text.count("\n", 0, self.pos) + 1
        return ValueError(f"{what} at line {line}")

    def ws(self) -> None:
        m = _WS.match(self.text, self.pos)
        self.pos = m.end() if m else self.pos
        if self.text.startswith("/*", self.pos):
            raise self.fail("a comment that never ends")

    def value(self) -> Node:
        self.ws()
        start = self.pos
        ch = self.text[start : start + 1]
        if ch == "{":
            return self.obj()
        if ch == "[":
            return self.arr()
        if ch in "\"'":
            m = _STRING.match(self.text, start)
            if not m:
                raise self.fail("bad string")
            self.pos = m.end()
            return Node("string", start, m.end())
        for word in ("true", "false", "null"):
            if self.text.startswith(word, start) and not _IDENT.match(self.text, start + len(word)):
                self.pos = start + len(word)
                return Node("literal", start, self.pos)
        m = _NUMBER.match(self.text, start)
        if m and m.end() > start:
            self.pos = m.end()
            return Node("number", start, m.end())
        raise self.fail("expected a value")

    def key(self) -> str:
        m = _STRING.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            return decode_string(m.group())
        m = _IDENT.match(self.text, self.pos)
        if not m:
            raise self.fail("expected a key")
        self.pos = m.end()
        return m.group()

    def obj(self) -> Node:
        node = Node("object", self.pos, -1)
        self.pos += 1
        seen: set[str] = set()
        while True:
            self.ws()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                node.end = self.pos
                return node
            key_start = self.pos
            key = self.key()
            if key in seen and self.duplicate is None:
                self.duplicate = key
            seen.add(key)
            self.ws()
            if not self.text.startswith(":", self.pos):
                raise self.fail("expected ':'")
            self.pos += 1
            node.members.append(Member(key, key_start, self.value()))
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if not self.text.startswith("}", self.pos):
                raise self.fail("expected ',' or '}'")

    def arr(self) -> Node:
        node = Node("array", self.pos, -1)
        self.pos += 1
        while True:
            self.ws()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                node.end = self.pos
                return node
            node.items.append(self.value())
            self.ws()
            if self.text.startswith(",", self.pos):
                self.pos += 1
                continue
            if not self.text.startswith("]", self.pos):
                raise self.fail("expected ',' or ']'")


def parse(text: str) -> Node:
    """The document's top value with positions; ValueError (with the line) if not JSON5."""
    p = _Parser(text)
    node = p.value()
    p.ws()
    if p.pos != len(text):
        raise p.fail("text after the value")
    return node


def duplicate_key(text: str) -> str | None:
    """The first key that appears twice in one object (OpenClaw would keep only one)."""
    p = _Parser(text)
    p.value()
    return p.duplicate


def value_of(text: str, node: Node) -> Any:
    """The value at `node` as Python (objects as dicts, in order)."""
    if node.kind == "object":
        return {m.key: value_of(text, m.value) for m in node.members}
    if node.kind == "array":
        return [value_of(text, n) for n in node.items]
    token = text[node.start : node.end]
    if node.kind == "string":
        return decode_string(token)
    if node.kind == "literal":
        return json.loads(token)
    return _number(token)
