"""The vault as searchable documents: what each markdown file contributes to the index.

No whoosh here: this module turns a file's text into `Doc`s (one per note section, with its
heading path and 1-based line range; long sections also as passages; one per log entry and
decision) and knows the vault layout's kinds. `vaultmem.search.engine` stores and searches them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, date, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from vaultmem.core import notes
from vaultmem.core.choices import values
from vaultmem.core.errors import PathOutsideVaultError
from vaultmem.core.records import record
from vaultmem.core.vault import REVIEW_PAGE, Vault

try:  # the built-in module hashlib takes blake2b from; hashlib itself loads OpenSSL (~4 ms)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - another Python implementation
    from hashlib import blake2b

if TYPE_CHECKING:
    from vaultmem.nexus.entry import Entry

BINARY_SNIFF = 8192
# An append-only log is one document per entry and is read whole, up to this many times
# `max_file_bytes` (a note is read up to `max_file_bytes`): the newest entries are at its end.
LOG_READ_FACTOR = 64


class Kind(StrEnum):
    """What a search document is, from where its file sits in the vault layout."""

    MEMORY = "memory"
    IDENTITY = "identity"
    LOG = "log"
    DECISION = "decision"
    CHECKPOINT = "checkpoint"
    BANK = "bank"
    STATE = "state"
    NOTE = "note"


KINDS = values(Kind)
WORKING = "working"  # agents/<agent>/working.md: a kind of file, never a kind of document
HIDDEN_STATUSES = frozenset({"retracted", "superseded", "rejected", "expired", "duplicate"})

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
# Long sections are indexed as passages of about this many words, so a hit points at the
# lines that matter and a long page does not drown short ones.
PASSAGE_WORDS = 100
PASSAGE_OVERLAP = 0
# A long section is indexed as its passages and also whole (tuned on LoCoMo as a general knob).
WHOLE_SECTIONS = True


@record
class Doc:
    """One searchable unit: a note section (or passage of one), a log entry, a decision."""

    path: str
    kind: str
    title: str
    heading: str
    body: str
    line_start: int
    line_end: int
    desc: str = ""
    tags: str = ""
    type: str = ""
    agent: str = ""
    date: str = ""
    status: str = ""
    id: str = ""
    hidden: bool = False
    valid_until: str = ""
    unit: str = "section"  # "section", "passage" (of a long section) or "whole" (long section)
    # the heading path without the note's title in front (indexed; `heading` is what is shown):
    # a title counted again in every section's heading outweighed the section's own words
    # (dated session notes ranked by the month in their title). None: the same as `heading`
    own_heading: str | None = None
    # the note's name when `title` (indexed) also holds its aliases: what a hit shows, the name
    # once ("Capacity per slot", not "Capacity per slot Capacity per slot"). None: `title`
    name: str | None = None


def kind_of(rel: str) -> tuple[str, str]:
    """(kind, agent) from a vault-relative path, following the vault layout."""
    parts = rel.split("/")
    lower = [p.lower() for p in parts]
    if parts[0] == "memory" and len(parts) == 2:
        # the index and the profile built from the facts are pages about facts, not facts
        return ("note" if lower[1] in ("memory.md", "profile.md") else "memory"), ""
    if parts[0] == "nexus":
        if rel == "nexus/live-context.md" or (len(parts) >= 3 and parts[1] == "archive"):
            return "log", ""
        if rel == "nexus/decisions.md":
            return "decision", ""
        if rel == "nexus/project-state.md":
            return "state", ""
        return "note", ""
    if parts[0] == "agents" and len(parts) >= 3:
        agent = parts[1]
        if len(parts) == 3 and parts[2] == "IDENTITY.md":
            return "identity", agent
        if len(parts) == 3 and parts[2] == "checkpoint.md":
            return "checkpoint", agent
        if len(parts) == 3 and parts[2] == "working.md":
            return "working", agent  # the agent's private scratch: never indexed
        if len(parts) == 4 and parts[2] == "memory" and lower[3] != "memory.md":
            return "memory", agent
        if len(parts) == 4 and parts[2] == "bank":
            return "bank", agent
        return "note", agent
    return "note", ""


# pages vaultmem writes for people (Review.md lists every agent's pending facts): indexed for
# a person's recall, never returned to an agent
PEOPLE_PAGES = frozenset({REVIEW_PAGE})
PEOPLE = "people"


def owner_of(rel: str) -> str:
    """Whose a document is: an agent's (its own folder), `people` (pages for people), or `-`
    (shared with every agent). An agent's recall sees its own and the shared ones only."""
    if rel in PEOPLE_PAGES:
        return PEOPLE
    return kind_of(rel)[1] or "-"


def read_limit(rel: str, max_bytes: int) -> int:
    """How much of a file is indexed: `max_bytes` of a note, more of an append-only log."""
    return max_bytes * LOG_READ_FACTOR if kind_of(rel)[0] == Kind.LOG else max_bytes


def content_hash(data: bytes) -> str:
    return blake2b(data, digest_size=CONTENT_HASH_BYTES).hexdigest()


CONTENT_HASH_BYTES = 16


def read_prefix(vault: Vault, path: Path, limit: int) -> tuple[bytes, bool]:
    """The first `limit` bytes of a vault file and whether there is more, read through the one
    inside-the-vault check (`Vault.open_inside`): a link out raises LinkOutsideVaultError."""
    data = vault.read_bytes(path, limit)
    return data[:limit], len(data) > limit


def _outside(exc: PathOutsideVaultError) -> tuple[str, str]:
    return "symlink-outside", f"{exc.message}: not followed"


def _decode(data: bytes, truncated: bool) -> tuple[str, str | None]:
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        if truncated and exc.start >= len(data) - 3 and exc.reason == "unexpected end of data":
            return data[: exc.start].decode("utf-8", errors="replace"), None
        return (
            data.decode("utf-8", errors="replace"),
            f"not UTF-8 (first bad byte at offset {exc.start}); indexed with replacements",
        )


def _iso_date(value: Any) -> str:
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str) and _ISO_DATE.match(value.strip()):
        return value.strip()[:10]
    return ""


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(_text(v) for v in value)
    return str(value)


def _tags(meta: dict[str, Any]) -> str:
    raw = meta.get("tags")
    items = (
        raw if isinstance(raw, list) else re.split(r"[,\s]+", raw) if isinstance(raw, str) else []
    )
    return ",".join(str(t).strip().lstrip("#").lower() for t in items if str(t).strip())


def sections(body: str, first_line: int) -> Iterator[tuple[str, int, int, list[str]]]:
    """(heading path, first line, last line, lines) per section; 1-based lines in the file.

    A section runs from its heading to the line before the next heading; text before the first
    heading is a section with an empty heading. Headings inside fenced code do not count.
    """
    lines = body.splitlines()
    stack: list[tuple[int, str]] = []
    start = 0
    heading = ""
    fence: str | None = None
    for i, line in enumerate(lines):
        m_fence = _FENCE.match(line)
        if m_fence:
            mark = m_fence.group(1)
            if fence is None:
                fence = mark[0] * 3
            elif mark.startswith(fence):
                fence = None
            continue
        if fence is not None:
            continue
        m = _HEADING.match(line)
        if not m:
            continue
        if i > start or heading:
            yield heading, first_line + start, first_line + i - 1, lines[start:i]
        level = len(m.group(1))
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, m.group(2)))
        heading = " > ".join(h for _, h in stack)
        start = i
    if start < len(lines) or heading:
        yield (
            heading,
            first_line + start,
            first_line + max(len(lines), start + 1) - 1,
            lines[start:],
        )


def _own_heading(heading: str, title: str) -> str | None:
    """The heading path less the note's title when it leads it ("Stripe integration >
    Webhooks" under the title "Stripe integration": "Webhooks"); None when it does not."""
    if not title or not heading:
        return None
    if heading == title:
        return ""
    if heading.startswith(f"{title} > "):
        return heading[len(title) + 3 :]
    return None


def _passages(
    heading: str, start: int, end: int, lines: list[str]
) -> Iterator[tuple[str, int, int, str]]:
    """Split a long section into passages of about PASSAGE_WORDS words, at line ends.

    A passage ends early at a blank line when one is near. Passages overlap by
    PASSAGE_OVERLAP lines so that two lines that belong together are seen together once.
    """
    counts = [len(line.split()) for line in lines]
    if sum(counts) <= PASSAGE_WORDS * 3 // 2:
        yield heading, start, end, "\n".join(lines)
        return
    i = 0
    n = len(lines)
    while i < n:
        j, words = i, 0
        while j < n and (words < PASSAGE_WORDS or j == i):
            words += counts[j]
            j += 1
        if sum(counts[j:]) < PASSAGE_WORDS // 2:
            j = n
        yield heading, start + i, start + j - 1, "\n".join(lines[i:j])
        if j >= n:
            break
        i = max(i + 1, j - PASSAGE_OVERLAP)


Counted: TypeAlias = "Callable[[Entry], bool]"


def counted(vault: Vault) -> Counted:
    from vaultmem.nexus.shown import counts_later  # a forged supersede hides no decision

    return counts_later(vault)


def entry_docs(
    rel: str, kind: str, entries: Sequence[Entry], counts: Counted | None = None
) -> list[Doc]:
    """Log entries / decisions as one document each (superseded decisions hidden, by an entry
    that counts: `counts`)."""
    replaced = {
        sup
        for e in entries
        if isinstance(sup := e.extra.get("supersedes"), str)
        and sup
        and (counts is None or counts(e))
    }
    docs = []
    for e in entries:
        tags = e.extra.get("tags")
        why = e.extra.get("why")
        body = "\n".join(x for x in (e.body, why if isinstance(why, str) else "") if x)
        hidden = e.id in replaced
        docs.append(
            Doc(
                path=rel,
                kind=kind,
                title=e.summary,
                heading=" · ".join(x for x in (e.channel, e.type) if x),
                body=body,
                line_start=e.line_start,
                line_end=e.line_end,
                tags=",".join(str(t).lower() for t in tags) if isinstance(tags, list) else "",
                type=e.type,
                agent=e.agent,
                date=_iso_date(e.time),
                id=e.id,
                status="superseded" if hidden else "",
                hidden=hidden,
            )
        )
    return docs


def documents(
    rel: str, text: str, *, mtime_ns: int = 0, counts: Counted | None = None
) -> tuple[list[Doc], list[tuple[str, str]]]:
    """Parse one note's text into documents; problems are returned, never raised."""
    problems: list[tuple[str, str]] = []
    kind, agent = kind_of(rel)
    if kind == WORKING:
        # working memory expires within hours and belongs to one agent: it is not knowledge to
        # search, and an expired value must not live on in the index
        return [], problems
    note = notes.parse(text)
    if note.error:
        problems.append(("broken-frontmatter", f"{note.error}; indexed as plain text"))
    meta = note.meta
    stem = rel.rsplit("/", 1)[-1][:-3]
    title = _text(meta.get("title") or meta.get("name")) or ""
    aliases = _text(meta.get("aliases"))
    desc = _text(meta.get("description"))
    status = _text(meta.get("status")).strip().lower()
    valid_until = _iso_date(meta.get("valid_until"))
    day = _iso_date(meta.get("date") or meta.get("updated") or meta.get("created"))
    if not day and mtime_ns:
        day = datetime.fromtimestamp(mtime_ns / 1e9, UTC).date().isoformat()
    common: dict[str, Any] = {
        "path": rel,
        "kind": kind,
        "desc": desc,
        "tags": _tags(meta),
        "type": _text(meta.get("type")).strip().lower(),
        "agent": _text(meta.get("agent")).strip() or agent,
        "date": day,
        "status": status,
        "id": _text(meta.get("id")).strip(),
        # an approved bank note became a memory: show the memory, not its proposal twice
        "hidden": (kind in ("memory", "bank") and status in HIDDEN_STATUSES)
        or (kind == "bank" and status == "approved"),
        "valid_until": valid_until if kind in ("memory", "bank") else "",
    }
    if kind in ("log", "decision"):
        # the entry parser sets torn or garbled blocks aside instead of raising
        from vaultmem.nexus.entry import parse_entries

        return entry_docs(rel, kind, parse_entries(text), counts), problems
    docs: list[Doc] = []
    if not title:
        for heading, _s, _e, _lines in sections(note.body, note.body_line):
            if heading and "#" not in heading and " > " not in heading:
                title = heading
                break
    title = title or stem
    named = title
    shown = None
    if aliases:
        title, shown = f"{title} {aliases}", named
    for heading, start, end, lines in sections(note.body, note.body_line):
        if heading and not any(line.strip() for line in lines[1:]):
            continue  # a heading with nothing under it: its words are in its children's path
        parts = list(_passages(heading, start, end, lines))
        if len(parts) > 1 and WHOLE_SECTIONS:
            # the whole section too: its score says how much the section as a whole is about
            # the query, the passages say where exactly
            text = "\n".join(lines)
            docs.append(
                Doc(
                    title=title,
                    heading=heading,
                    body=text,
                    line_start=start,
                    line_end=end,
                    unit="whole",
                    own_heading=_own_heading(heading, named),
                    name=shown,
                    **common,
                )
            )
        for p_heading, p_start, p_end, p_text in parts:
            if not p_text.strip() and not p_heading:
                continue
            docs.append(
                Doc(
                    title=title,
                    heading=p_heading,
                    body=p_text,
                    line_start=p_start,
                    line_end=p_end,
                    unit="passage" if len(parts) > 1 else "section",
                    own_heading=_own_heading(p_heading, named),
                    name=shown,
                    **common,
                )
            )
    if not docs and (note.meta or title):
        # frontmatter only (or an empty note): still findable by its name and properties
        docs.append(
            Doc(title=title, heading="", body="", line_start=1, line_end=1, name=shown, **common)
        )
    return docs, problems


def read_documents(
    vault: Vault, rel: str, max_bytes: int
) -> tuple[list[Doc], list[tuple[str, str]], bytes] | None:
    """Read and parse one file; None when it vanished. Returns the bytes read (for hashing)."""
    path = vault.root / rel
    max_bytes = read_limit(rel, max_bytes)
    try:
        data, truncated = read_prefix(vault, path, max_bytes)
        mtime_ns = path.stat().st_mtime_ns
    except FileNotFoundError:
        return None
    except PathOutsideVaultError as exc:
        return [], [_outside(exc)], b""
    except OSError as exc:
        return [], [("unreadable", f"cannot read: {exc.strerror}")], b""
    text, problems = screen(data, truncated, max_bytes)
    if text is None:
        return [], problems, data
    docs, found = documents(rel, text, mtime_ns=mtime_ns, counts=counted(vault))
    return docs, problems + found, data


def screen(data: bytes, truncated: bool, limit: int) -> tuple[str | None, list[tuple[str, str]]]:
    """A file's text and what is wrong with its bytes (cut at `limit`, not UTF-8); no text for
    a binary file."""
    if b"\x00" in data[:BINARY_SNIFF]:
        return None, [("binary", "binary content in a .md file: not indexed")]
    text, bad = _decode(data, truncated)
    problems = []
    if truncated:
        problems.append(
            ("truncated", f"larger than {limit:,} bytes: only the first {limit:,} indexed")
        )
    if bad:
        problems.append(("bad-encoding", bad))
    return text, problems
