"""The entry format of the signed logs: one markdown block per entry (the contract is
docs/FORMAT.md).

    ### 2026-11-29T15:20:01.123Z · ella · backend · fix · Stripe webhook retries are idempotent
    ### 2026-11-29T15:21:07.456Z · ella · api · handoff → lyra, nova · Checkout needs the key

    optional body, any markdown (escaped, see below)

    ^ella-3
    <!-- vaultmem {"v":1,"log":"live","id":"ella.3","seq":3,"prev":"sha256:…","hash":"sha256:…",…} -->

The header line is what people read in Obsidian. The `^ella-3` line is the entry's Obsidian
block id (`[[live-context#^ella-3]]` links it): rendering derived from the id, outside the
signed text, so every entry written before it existed keeps its bytes and verifies, and
`upgrade` gives old entries one without their writers' keys. The HTML comment (hidden in
reading view) holds the id, the agent's sequence number, the hash of the agent's previous entry (`prev`), this entry's
hash over the canonical form, the signing key id and the Ed25519 signature. Chains are per agent,
so a git union merge of two machines' appends still verifies.

An entry addressed to some agents (`--to`) names them in its header after an arrow and is a
version 2 entry: its canonical form has a `to` key. Entries without recipients stay version 1
with exactly the canonical bytes they always had, so old logs verify unchanged.

Escaping, so that no text an agent writes can parse as structure: in the summary and body every
`<!--` becomes `<\\!--` (and `<\\!--` one more backslash), and a body line starting with `###`
(after any backslashes) gets one more leading backslash. Parsing undoes both. Markdown renders the
escaped forms as the original text.

Every grammar here is a full match: a value with a trailing newline is not a channel, an id or
a time.

Why this module is long: it is one contract (docs/FORMAT.md). Rendering, parsing, escaping and
the canonical form must change together, and splitting them would invite one to drift.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Any

from vaultmem.core.choices import choose, values
from vaultmem.core.errors import UsageError, VaultmemError
from vaultmem.core.hashes import sha256
from vaultmem.core.names import AGENT_NAME, DEVICE
from vaultmem.core.patterns import later
from vaultmem.core.records import field, record

FORMAT_VERSION = 1  # entries without recipients
ADDRESSED_VERSION = 2  # entries with recipients (`to` in the header and the canonical form)
ALL = "all"  # the recipient that means every agent of the vault but the writer
ARROW = " → "


class LogName(StrEnum):
    LIVE = "live"
    DECISIONS = "decisions"


class EntryType(StrEnum):
    """What a log entry is. `handoff`, `question` and `alert` wait for an ack."""

    NOTE = "note"
    HANDOFF = "handoff"
    FIX = "fix"
    QUESTION = "question"
    ANSWER = "answer"
    DECISION = "decision"
    ALERT = "alert"
    ACK = "ack"
    STATE = "state"
    RESOLVE = "resolve"  # closes an alert, handoff, question or addressed entry for everyone


# joins a forked chain: written only by `vaultmem repair --merge-forks` (`log.append(joins=)`),
# so it is not an EntryType an agent can choose
MERGE_TYPE = "merge"


LOGS = values(LogName)
ENTRY_TYPES = values(EntryType)
# entry types that ask something of the other agents: they wait for an ack
WANTS_ACK = (EntryType.HANDOFF, EntryType.QUESTION, EntryType.ALERT)
SEP = " · "


# Grammars are used with fullmatch: a value with a trailing newline is not one of them.
CHANNEL_RE = later(r"[A-Za-z0-9][A-Za-z0-9_.\-/]{0,39}")


# `ella.12`, `ella.d3` (decision log), and on another machine's chain `ella.k2f7.3`
ID_RE = later(rf"{AGENT_NAME}(?:\.{DEVICE})?\.d?[0-9]{{1,12}}")


TIME_RE = later(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z")


_NAME = AGENT_NAME
HEADER_RE = later(
    r"^### (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z) · "
    rf"(?P<agent>{_NAME}) · (?P<channel>\S+) · (?P<type>[a-z][a-z0-9_-]*)"
    rf"(?: → (?P<to>{_NAME}(?:, {_NAME})*))? · "
    r"(?P<summary>.*)$"
)


META_RE = later(r"^<!-- vaultmem (?P<json>\{.*\}) -->$")


HEADER_START = b"\n### "


_COMMENT_OPEN = later(r"<(\\*)!--")


_COMMENT_OPEN_ESC = later(r"<(\\*)\\!--")


_HASH_LINE = later(r"^(\\*)###")


_HASH_LINE_ESC = later(r"^(\\+)###")


CONTRACT_KEYS = ("id", "agent", "seq", "time", "channel", "type", "summary", "body", "acks", "to")


@record
class Entry:
    """One log entry. `to_dict()` is the JSON contract of `log --json` / `append --json`."""

    id: str
    agent: str
    seq: int
    time: str  # ISO 8601 UTC, milliseconds, "Z"
    channel: str
    type: str
    summary: str
    body: str
    acks: tuple[str, ...] = ()
    to: tuple[str, ...] = ()  # recipients (agent names, or ("all",)); () when unaddressed
    extra: dict[str, Any] = field(default_factory=dict)  # decisions: why, supersedes, tags
    log: str = "live"  # "live" or "decisions"
    prev: str | None = None  # hash of this agent's previous entry in the same log
    hash: str = ""
    key: str | None = None  # key id that signed it
    sig: str | None = None
    # other agents' chain heads in this log when it was written: {agent: [seq, hash prefix]}
    heads: dict[str, list[Any]] = field(default_factory=dict)
    line_start: int = 0  # 1-based lines in its file; 0 when read from the end (tail)
    line_end: int = 0
    byte_start: int = -1  # byte offsets in its file (-1 when parsed from text)
    byte_end: int = -1

    def to_dict(self) -> dict[str, Any]:
        data = self.contract_dict()
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    def contract_dict(self) -> dict[str, Any]:
        """The fields of the JSON contract (`CONTRACT_KEYS`), tuples as lists; no extras."""
        out: dict[str, Any] = {}
        for key in CONTRACT_KEYS:
            value = getattr(self, key)
            out[key] = list(value) if isinstance(value, tuple) else value
        return out

    def full_dict(self) -> dict[str, Any]:
        """Everything, for the journal: enough to re-render the exact block."""
        data = canonical_dict(self)
        data.update(hash=self.hash, sig=self.sig)
        return data

    @property
    def version(self) -> int:
        """1 for the first format; 2 when the entry carries recipients or anchored heads
        (keys the canonical form then has)."""
        return ADDRESSED_VERSION if (self.to or self.heads) else FORMAT_VERSION

    def canonical(self) -> bytes:
        return canonical_bytes(canonical_dict(self))

    def compute_hash(self) -> str:
        return "sha256:" + sha256(self.canonical()).hexdigest()


@record
class Fragment:
    """Text set aside by the parser: a torn entry, a broken metadata line, an orphan comment."""

    kind: str  # "torn", "bad-metadata", "orphan-metadata"
    line_start: int
    line_end: int
    byte_start: int
    byte_end: int
    text: str


@record
class Parsed:
    entries: tuple[Entry, ...]
    fragments: tuple[Fragment, ...]
    preamble_end: int  # byte offset of the first entry header (or end of file)


def canonical_dict(e: Entry) -> dict[str, Any]:
    data: dict[str, Any] = {
        "v": e.version,
        "log": e.log,
        "id": e.id,
        "agent": e.agent,
        "seq": e.seq,
        "time": e.time,
        "channel": e.channel,
        "type": e.type,
        "summary": e.summary,
        "body": e.body,
        "acks": list(e.acks),
        "extra": e.extra,
        "prev": e.prev,
        "key": e.key,
    }
    # keys of version 2, each present only when it has a value: version 1 entries keep
    # their exact canonical bytes
    if e.to:
        data["to"] = list(e.to)
    if e.heads:
        data["heads"] = e.heads
    return data


def canonical_bytes(data: dict[str, Any]) -> bytes:
    """Sorted keys, no spaces, UTF-8 (not \\u escapes): part of the contract, never change it."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


def normalize_body(body: str) -> str:
    lines = body.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


# C0 and C1 control characters other than newline and tab: they can move a terminal's cursor
# or hide text, and they never belong in what an agent writes to the vault
_CONTROLS = later(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Agent text as it enters the vault: control characters removed (\r\n kept as \n)."""
    return _CONTROLS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def fold_summary(summary: str) -> str:
    return " ".join(summary.replace("\x00", "").split())


def escape_inline(text: str) -> str:
    return _COMMENT_OPEN.sub(lambda m: f"<{m.group(1)}\\!--", text)


def unescape_inline(text: str) -> str:
    return _COMMENT_OPEN_ESC.sub(lambda m: f"<{m.group(1)}!--", text)


def escape_body(body: str) -> str:
    out = []
    for line in body.split("\n"):
        line = _HASH_LINE.sub(lambda m: f"\\{m.group(1)}###", line)
        out.append(escape_inline(line))
    return "\n".join(out)


def unescape_body_line(line: str) -> str:
    return unescape_inline(_HASH_LINE_ESC.sub(lambda m: f"{m.group(1)[1:]}###", line))


def block_id(entry_id: str) -> str:
    """The Obsidian block id of an entry: its id with every run of characters other than
    letters and digits as one `-` (`ella.3` → `ella-3`, `ella.k2f7.d4` → `ella-k2f7-d4`)."""
    return _NOT_BLOCK.sub("-", entry_id)


def block_line(entry_id: str) -> str:
    return "^" + block_id(entry_id)


_NOT_BLOCK = later(r"[^A-Za-z0-9]+")


def _meta_json(e: Entry) -> str:
    meta: dict[str, Any] = {
        "v": e.version,
        "log": e.log,
        "id": e.id,
        "seq": e.seq,
        "prev": e.prev,
        "hash": e.hash,
        "key": e.key,
        "sig": e.sig,
    }
    if e.acks:
        meta["acks"] = list(e.acks)
    if e.extra:
        meta["extra"] = e.extra
    if e.heads:
        meta["heads"] = e.heads
    text = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
    # `-->` inside the comment would end it early: JSON lets us spell < and > as escapes
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def render(e: Entry) -> str:
    """The block for one entry, starting with a blank line and ending with a newline."""
    to = f"{ARROW}{', '.join(e.to)}" if e.to else ""
    header = (
        f"### {e.time}{SEP}{e.agent}{SEP}{e.channel}{SEP}{e.type}{to}{SEP}"
        f"{escape_inline(e.summary)}"
    )
    meta = f"<!-- vaultmem {_meta_json(e)} -->"
    # the block id on a line of its own: after a body, past a blank line, so it names the
    # body's last block whatever markdown that is (a list, a fence); right under a header,
    # which no line continues. No blank line is added inside a body-less entry: git's union
    # merge of two machines' appends aligns on blank lines and could interleave two entries
    block = block_line(e.id)
    if e.body:
        return f"\n{header}\n\n{escape_body(e.body)}\n\n{block}\n{meta}\n"
    return f"\n{header}\n{block}\n{meta}\n"


def without_block_line(body_lines: list[str], entry_id: str) -> list[str]:
    """The body lines of an entry without its block id line (the last line that is not blank,
    when it is exactly `^` + `block_id(entry_id)`). An entry written before block ids has none,
    and keeps every line."""
    last = len(body_lines) - 1
    while last >= 0 and not body_lines[last].strip():
        last -= 1
    if last >= 0 and body_lines[last].rstrip() == block_line(entry_id):
        return body_lines[:last]
    return body_lines


def _entry_from(
    header: re.Match[str], meta_text: str, body_lines: list[str], pos: tuple[int, int, int, int]
) -> Entry | None:
    try:
        meta = json.loads(meta_text)
    except ValueError:
        return None
    if not isinstance(meta, dict):
        return None
    try:
        seq = meta["seq"]
        acks = meta.get("acks") or []
        extra = meta.get("extra") or {}
        if (
            not isinstance(seq, int)
            or not isinstance(meta["id"], str)
            or not isinstance(acks, list)
            or not isinstance(extra, dict)
            or meta.get("log", "live") not in LOGS
        ):
            return None
        lines = without_block_line(body_lines, meta["id"])
        body = normalize_body("\n".join(unescape_body_line(ln) for ln in lines))
        return Entry(
            id=meta["id"],
            agent=header["agent"],
            seq=seq,
            time=header["time"],
            channel=header["channel"],
            type=header["type"],
            summary=unescape_inline(header["summary"]).strip(),
            body=body,
            acks=tuple(str(a) for a in acks),
            to=tuple(header["to"].split(", ")) if header["to"] else (),
            extra=extra,
            log=meta.get("log", "live"),
            prev=meta.get("prev"),
            hash=str(meta.get("hash") or ""),
            key=meta.get("key"),
            sig=meta.get("sig"),
            heads=_heads(meta.get("heads")),
            line_start=pos[0],
            line_end=pos[1],
            byte_start=pos[2],
            byte_end=pos[3],
        )
    except (KeyError, TypeError):
        return None


def parse_bytes(data: bytes, *, base_offset: int = 0, first_line: int = 1) -> Parsed:
    """Parse log bytes into entries and set-aside fragments (torn tails, broken metadata).

    A header without its metadata line (the next header comes first, or the file ends) is a torn
    entry; it is never returned as an entry. Lines outside entries (a person's notes) are ignored.
    """
    entries: list[Entry] = []
    fragments: list[Fragment] = []
    offset = base_offset
    line_no = first_line - 1
    cur: tuple[re.Match[str], int, int] | None = None  # header, line, byte offset
    body: list[str] = []
    preamble_end = -1

    def torn(kind: str, start_line: int, start_byte: int, end_line: int, end_byte: int) -> None:
        text = data[start_byte - base_offset : end_byte - base_offset].decode("utf-8", "replace")
        fragments.append(Fragment(kind, start_line, end_line, start_byte, end_byte, text))

    for raw in data.splitlines(keepends=True):
        line_no += 1
        start = offset
        offset += len(raw)
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if line.startswith("### "):
            m = HEADER_RE.match(line)
            if m:
                if cur is not None:
                    torn("torn", cur[1], cur[2], line_no - 1, start)
                cur = (m, line_no, start)
                body = []
                if preamble_end < 0:
                    preamble_end = start
                continue
        if line.startswith("<!-- vaultmem "):
            mm = META_RE.match(line)
            complete = raw.endswith(b"\n")
            if cur is None:
                torn("orphan-metadata", line_no, start, line_no, offset)
                continue
            entry = None
            if mm and complete:
                entry = _entry_from(cur[0], mm["json"], body, (cur[1], line_no, cur[2], offset))
            if entry is None:
                torn("bad-metadata" if complete else "torn", cur[1], cur[2], line_no, offset)
            else:
                entries.append(entry)
            cur = None
            continue
        if cur is not None:
            body.append(line)
    if cur is not None:
        torn("torn", cur[1], cur[2], line_no, offset)
    return Parsed(tuple(entries), tuple(fragments), preamble_end if preamble_end >= 0 else offset)


def add_block_lines(data: bytes) -> tuple[bytes, int]:
    """Log bytes with a block id line in every entry that has none (`upgrade`), and how many
    entries gained one. Only lines are inserted, each just before an entry's metadata line: every
    other byte stays, and each entry parses to the same canonical form (so the same hash)."""
    parsed = parse_bytes(data)
    out = bytearray()
    pos = 0
    added = 0
    for e in parsed.entries:
        meta_start = data.rfind(b"\n", e.byte_start, e.byte_end - 1) + 1
        before = data[e.byte_start : meta_start].decode("utf-8", "replace").split("\n")
        if without_block_line(before, e.id) is not before:
            continue  # it has one
        out += data[pos:meta_start] + block_line(e.id).encode("ascii") + b"\n"
        pos = meta_start
        added += 1
    out += data[pos:]
    return bytes(out), added


def parse_entries(text: str) -> list[Entry]:
    """Entries of a whole live-context.md / decisions.md text (torn or garbage tails set aside)."""
    return list(parse_bytes(text.encode("utf-8")).entries)


def read_file(path: Path) -> Parsed:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return Parsed((), (), 0)
    except OSError as exc:
        raise VaultmemError(f"cannot read {path}: {exc.strerror}", "check its permissions") from exc
    return parse_bytes(data)


def entry_from_dict(data: dict[str, Any]) -> Entry:
    return Entry(
        id=data["id"],
        agent=data["agent"],
        seq=int(data["seq"]),
        time=data["time"],
        channel=data["channel"],
        type=data["type"],
        summary=data["summary"],
        body=data.get("body", ""),
        acks=tuple(data.get("acks") or ()),
        to=tuple(data.get("to") or ()),
        extra=dict(data.get("extra") or {}),
        log=data.get("log", "live"),
        prev=data.get("prev"),
        hash=data.get("hash", ""),
        key=data.get("key"),
        sig=data.get("sig"),
        heads=_heads(data.get("heads")),
    )


def _heads(raw: Any) -> dict[str, list[Any]]:
    """Anchored heads as parsed: {agent: [seq, hash prefix]}; anything malformed is dropped
    (and then no longer matches the signed hash, which verify reports)."""
    if not isinstance(raw, dict):
        return {}
    out: dict[str, list[Any]] = {}
    for agent, value in raw.items():
        if (
            isinstance(agent, str)
            and isinstance(value, list)
            and len(value) == 2
            and isinstance(value[0], int)
            and isinstance(value[1], str)
        ):
            out[agent] = [value[0], value[1]]
        else:
            return {"": ["malformed"]}  # keeps the hash from matching: reported as edited
    return out


def time_order(e: Entry) -> tuple[str, str]:
    """The order readers show entries in: by time, then id. A sync's union merge can leave the
    file out of that order (one machine's new entries after the other's), so file position is
    not it."""
    return (e.time, e.id)


def entry_id(agent: str, seq: int, log: str, device: str = "") -> str:
    """`ella.12` / `ella.d3`, or `ella.k2f7.12` on the chain of device k2f7."""
    chain = f"{agent}.{device}" if device else agent
    return f"{chain}.d{seq}" if log == "decisions" else f"{chain}.{seq}"


def chain_id(chain: str, seq: int, log: str) -> str:
    """The id of entry `seq` of a chain (`ella`, `ella.k2f7`)."""
    return f"{chain}.d{seq}" if log == "decisions" else f"{chain}.{seq}"


def chain_of(entry_id_: str) -> str:
    """The chain an id belongs to: `ella` or `ella.k2f7` (the id without its number)."""
    return entry_id_.rsplit(".", 1)[0]


def device_of(entry_id_: str) -> str:
    """The device of an id's chain: "" for the agent's first machine."""
    parts = entry_id_.split(".")
    return parts[1] if len(parts) == 3 else ""


def is_decision(entry_id_: str) -> bool:
    """A decision's id (`ella.d3`, `ella.k2f7.d3`): its number, not its device, starts with d
    (a device id may: `lyra.d7zz.2` is a live entry)."""
    return entry_id_.rsplit(".", 1)[-1].startswith("d")


def author_of(entry_id_: str) -> str:
    return entry_id_.split(".", 1)[0]


def validate_channel(channel: str) -> str:
    if not CHANNEL_RE.fullmatch(channel):
        raise UsageError(
            f"invalid channel {channel!r}",
            "a channel is one word: letters, digits, '-', '_', '.', '/' (at most 40)",
        )
    return channel


def validate_type(type_: str) -> str:
    return choose(EntryType, type_, "entry type")


def validate_id(entry: str) -> str:
    if not ID_RE.fullmatch(entry):
        raise UsageError(
            f"{entry!r} is not an entry id", "ids look like ella.12 (log) or ella.d3 (decisions)"
        )
    return entry


def validate_recipients(
    to: tuple[str, ...] | list[str], writer: str, known: tuple[str, ...]
) -> tuple[str, ...]:
    """Recipients as written: known agent names (full match) in the given order without
    repeats, or ("all",). The writer cannot address itself."""
    out: list[str] = []
    for name in to:
        if name == ALL:
            continue
        if not re.fullmatch(_NAME, name):
            raise UsageError(
                f"--to {name!r} is not an agent name",
                "lowercase letters, digits, '-', '_' (or --to all)",
            )
        if name == writer:
            raise UsageError(f"{writer} cannot address an entry to itself", "drop that --to")
        if name not in known:
            raise UsageError(
                f"--to {name!r}: no such agent", f"known agents: {', '.join(known) or 'none'}"
            )
        if name not in out:
            out.append(name)
    if ALL in to:
        return (ALL,)
    return tuple(out)


def recipients(e: Entry, agents: tuple[str, ...]) -> tuple[str, ...]:
    """Who an entry is addressed to: its `to` list, with `all` as every agent but the writer."""
    if ALL in e.to:
        return tuple(a for a in agents if a != e.agent)
    return tuple(a for a in e.to if a != e.agent)
