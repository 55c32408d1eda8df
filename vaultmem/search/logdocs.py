"""An append-only log in the index: one document per entry, and how far each log was indexed
(`LogMark`), so a refresh parses only the entries appended since (`read_log`)."""

from __future__ import annotations

from typing import Any

try:  # the built-in module hashlib takes blake2b from (documents.py says why)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

from vaultmem.core import notes
from vaultmem.core.errors import PathOutsideVaultError
from vaultmem.core.records import record
from vaultmem.core.vault import Vault
from vaultmem.search.documents import (
    BINARY_SNIFF,
    CONTENT_HASH_BYTES,
    Doc,
    Kind,
    _outside,
    content_hash,
    counted,
    entry_docs,
    read_limit,
    read_prefix,
    screen,
)


@record
class LogMark:
    """How far an append-only log was indexed, so the next refresh parses only what follows:
    a log of 100,000 entries that gained ten costs a hash of the file, not a parse of it."""

    nbytes: int  # the bytes indexed; they end at an entry boundary
    docs: int  # the documents they gave (the next one is `path#docs`)
    lines: int
    digest: str  # content_hash of those bytes: anything but an append parses the whole file

    def to_list(self) -> list[Any]:
        return [self.nbytes, self.docs, self.lines, self.digest]


@record
class LogRead:
    docs: list[Doc]  # the new documents: all of them, or those after the mark
    first: int  # ordinal of docs[0] in the file: 0 when the whole file was parsed
    problems: list[tuple[str, str]]
    data: bytes
    mark: LogMark | None  # None: the next refresh parses the whole file again


def read_log(vault: Vault, rel: str, max_bytes: int, mark: LogMark | None) -> LogRead | None:
    """Read an append-only log; parse only what follows `mark` when the bytes before it are
    unchanged (appends, a union merge that kept this clone's text first). None when it vanished.

    A mark is kept only when the file ends at an entry boundary with nothing set aside (no torn
    entry, no bad bytes): a refresh that raced an append parses the whole file next time."""
    from vaultmem.nexus.entry import parse_bytes

    path = vault.root / rel
    limit = read_limit(rel, max_bytes)
    try:
        data, truncated = read_prefix(vault, path, limit)
    except FileNotFoundError:
        return None
    except PathOutsideVaultError as exc:
        return LogRead([], 0, [_outside(exc)], b"", None)
    except OSError as exc:
        return LogRead([], 0, [("unreadable", f"cannot read: {exc.strerror}")], b"", None)
    view = memoryview(data)
    # the hash of the bytes before the mark, continued over the rest: one pass over the file
    hasher = None
    if mark is not None and not truncated and len(data) >= mark.nbytes:
        prefix = blake2b(view[: mark.nbytes], digest_size=CONTENT_HASH_BYTES)
        if prefix.hexdigest() == mark.digest:
            hasher = prefix
    problems: list[tuple[str, str]] = []
    if hasher is not None:
        assert mark is not None
        start, first, lines = mark.nbytes, mark.docs, mark.lines
    else:
        start = first = lines = 0
        text, problems = screen(data, truncated, limit)
        if text is None:
            return LogRead([], 0, problems, data, None)
        if notes.parse(text[:BINARY_SNIFF]).error:
            problems.append(("broken-frontmatter", "frontmatter cannot be read; entries indexed"))
    tail = data[start:]
    parsed = parse_bytes(tail, base_offset=start, first_line=lines + 1)
    docs = entry_docs(rel, Kind.LOG, parsed.entries, counted(vault))
    clean = not (parsed.fragments or problems) and data.endswith(b"\n")
    new_mark = None
    if clean:
        total = lines + len(tail.splitlines())
        if hasher is None:
            digest = content_hash(data)
        else:
            hasher.update(view[start:])
            digest = hasher.hexdigest()
        new_mark = LogMark(len(data), first + len(docs), total, digest)
    return LogRead(docs, first, problems, data, new_mark)
