"""The signed, append-only logs: `nexus/live-context.md` and `nexus/decisions.md`.

Format (the contract is docs/FORMAT.md). One entry is one markdown block:

    ### 2026-11-29T15:20:01.123Z · ella · backend · fix · Stripe webhook retries are idempotent

    optional body, any markdown (escaped, see below)

    <!-- vaultmem {"v":1,"log":"live","id":"ella.3","seq":3,"prev":"sha256:…","hash":"sha256:…",…} -->

The header line is what people read in Obsidian; the HTML comment (hidden in reading view) holds
the id, the agent's sequence number, the hash of the agent's previous entry (`prev`), this entry's
hash over the canonical form, the signing key id and the Ed25519 signature. Chains are per agent,
so a git union merge of two machines' appends still verifies.

Escaping, so that no text an agent writes can parse as structure: in the summary and body every
`<!--` becomes `<\\!--` (and `<\\!--` one more backslash), and a body line starting with `###`
(after any backslashes) gets one more leading backslash. Parsing undoes both. Markdown renders the
escaped forms as the original text.

Appends hold `.vaultmem/locks/<log>.lock`, write the whole block with one `write()` (O_APPEND),
fsync, then record it in the journal (`.vaultmem/journal/<log>.jsonl`). The per-agent chain heads
are cached in `.vaultmem/heads/<log>.json` together with the log's size and mtime; when they do
not match (a person, an editor or git changed the file) the heads are rebuilt from the files and
the journal, so a sequence number is never reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vaultmem.core.errors import (
    SigningKeyMissingError,
    UsageError,
    VaultmemError,
)
from vaultmem.core.fsio import append_durable, fsync_dir
from vaultmem.core.locking import exclusive, lock_path
from vaultmem.core.vault import Vault

FORMAT_VERSION = 1
LOGS = ("live", "decisions")
ENTRY_TYPES = (
    "note",
    "handoff",
    "fix",
    "question",
    "answer",
    "decision",
    "alert",
    "ack",
    "state",
)
# entry types that ask something of the other agents: they wait for an ack
WANTS_ACK = ("handoff", "question", "alert")
SEP = " · "
CHANNEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-/]{0,39}$")
ID_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}\.d?[0-9]{1,12}$")
TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z$")
HEADER_RE = re.compile(
    r"^### (?P<time>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?Z) · "
    r"(?P<agent>[a-z0-9][a-z0-9_-]{0,39}) · (?P<channel>\S+) · (?P<type>[a-z][a-z0-9_-]*) · "
    r"(?P<summary>.*)$"
)
META_RE = re.compile(r"^<!-- vaultmem (?P<json>\{.*\}) -->$")
HEADER_START = b"\n### "
_COMMENT_OPEN = re.compile(r"<(\\*)!--")
_COMMENT_OPEN_ESC = re.compile(r"<(\\*)\\!--")
_HASH_LINE = re.compile(r"^(\\*)###")
_HASH_LINE_ESC = re.compile(r"^(\\+)###")

CONTRACT_KEYS = ("id", "agent", "seq", "time", "channel", "type", "summary", "body", "acks")


@dataclass(frozen=True)
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
    extra: dict[str, Any] = field(default_factory=dict)  # decisions: why, supersedes, tags
    log: str = "live"  # "live" or "decisions"
    prev: str | None = None  # hash of this agent's previous entry in the same log
    hash: str = ""
    key: str | None = None  # key id that signed it
    sig: str | None = None
    line_start: int = 0  # 1-based lines in its file; 0 when read from the end (tail)
    line_end: int = 0
    byte_start: int = -1  # byte offsets in its file (-1 when parsed from text)
    byte_end: int = -1

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "agent": self.agent,
            "seq": self.seq,
            "time": self.time,
            "channel": self.channel,
            "type": self.type,
            "summary": self.summary,
            "body": self.body,
            "acks": list(self.acks),
        }
        for key, value in self.extra.items():
            data.setdefault(key, value)
        return data

    def full_dict(self) -> dict[str, Any]:
        """Everything, for the journal: enough to re-render the exact block."""
        data = canonical_dict(self)
        data.update(hash=self.hash, sig=self.sig)
        return data

    def canonical(self) -> bytes:
        return canonical_bytes(canonical_dict(self))

    def compute_hash(self) -> str:
        return "sha256:" + hashlib.sha256(self.canonical()).hexdigest()


@dataclass(frozen=True)
class Fragment:
    """Text set aside by the parser: a torn entry, a broken metadata line, an orphan comment."""

    kind: str  # "torn", "bad-metadata", "orphan-metadata"
    line_start: int
    line_end: int
    byte_start: int
    byte_end: int
    text: str


@dataclass(frozen=True)
class Parsed:
    entries: tuple[Entry, ...]
    fragments: tuple[Fragment, ...]
    preamble_end: int  # byte offset of the first entry header (or end of file)


@dataclass(frozen=True)
class AppendResult:
    entry: Entry
    path: str  # vault-relative file
    redactions: tuple[Any, ...] = ()  # secrets.Finding, one per redacted credential
    warnings: tuple[str, ...] = ()


# --- canonical form -----------------------------------------------------------------------


def canonical_dict(e: Entry) -> dict[str, Any]:
    return {
        "v": FORMAT_VERSION,
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


def canonical_bytes(data: dict[str, Any]) -> bytes:
    """Sorted keys, no spaces, UTF-8 (not \\u escapes): part of the contract, never change it."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


# --- text normalisation and escaping --------------------------------------------------------


def normalize_body(body: str) -> str:
    lines = body.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


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


# --- rendering and parsing -------------------------------------------------------------------


def _meta_json(e: Entry) -> str:
    meta: dict[str, Any] = {
        "v": FORMAT_VERSION,
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
    text = json.dumps(meta, ensure_ascii=False, separators=(",", ":"))
    # `-->` inside the comment would end it early: JSON lets us spell < and > as escapes
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def render(e: Entry) -> str:
    """The block for one entry, starting with a blank line and ending with a newline."""
    header = (
        f"### {e.time}{SEP}{e.agent}{SEP}{e.channel}{SEP}{e.type}{SEP}{escape_inline(e.summary)}"
    )
    meta = f"<!-- vaultmem {_meta_json(e)} -->"
    if e.body:
        return f"\n{header}\n\n{escape_body(e.body)}\n\n{meta}\n"
    return f"\n{header}\n{meta}\n"


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
        body = normalize_body("\n".join(unescape_body_line(ln) for ln in body_lines))
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
            extra=extra,
            log=meta.get("log", "live"),
            prev=meta.get("prev"),
            hash=str(meta.get("hash") or ""),
            key=meta.get("key"),
            sig=meta.get("sig"),
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


# --- reading from the end ---------------------------------------------------------------------


def iter_reverse(path: Path, *, chunk: int = 1 << 16) -> Iterator[Entry]:
    """Entries from the newest to the oldest, reading the file backwards in chunks.

    The cost is proportional to how many entries the caller consumes, not to the file size.
    Entries carry byte offsets; their line numbers are 0 (unknown without reading from the top).
    """
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in finally
    except FileNotFoundError:
        return
    try:
        size = os.fstat(fh.fileno()).st_size
        pos = size  # file offset where `buf` starts
        buf = b""
        end = size  # the end of the not-yet-consumed region
        while True:
            # the last header start inside buf: either "\n### " or "### " at the file start
            idx = buf.rfind(HEADER_START, 0, end - pos)
            if idx >= 0:
                start = pos + idx + 1
            elif pos == 0 and buf.startswith(b"### "):
                start = 0
            else:
                start = -1
            if start >= 0 and (start > pos or pos == 0):
                block = buf[start - pos : end - pos]
                parsed = parse_bytes(block, base_offset=start, first_line=1)
                for e in reversed(parsed.entries):
                    yield replace(e, line_start=0, line_end=0)
                end = start
                if start == 0:
                    return
                continue
            if pos == 0:
                return
            step = min(chunk, pos)
            fh.seek(pos - step)
            buf = fh.read(step) + buf[: end - pos]
            pos -= step
            chunk = min(chunk * 2, 1 << 22)
    finally:
        fh.close()


def tail(
    path: Path,
    n: int,
    *,
    agent: str | None = None,
    channel: str | None = None,
    type_: str | None = None,
) -> list[Entry]:
    """The last `n` matching entries, oldest first, read from the end of the file."""
    out: list[Entry] = []
    if n <= 0:
        return out
    for e in iter_reverse(path):
        if matches(e, agent=agent, channel=channel, type_=type_):
            out.append(e)
            if len(out) >= n:
                break
    out.reverse()
    return out


def matches(
    e: Entry, *, agent: str | None = None, channel: str | None = None, type_: str | None = None
) -> bool:
    return (
        (agent is None or e.agent == agent)
        and (channel is None or e.channel == channel)
        and (type_ is None or e.type == type_)
    )


# --- where each log lives ----------------------------------------------------------------------


def log_file(vault: Vault, log: str) -> Path:
    if log == "live":
        return vault.live_context
    if log == "decisions":
        return vault.decisions
    raise UsageError(f"unknown log {log!r}", "use 'live' or 'decisions'")


def archive_dir(vault: Vault) -> Path:
    return vault.nexus / "archive"


def archive_files(vault: Vault) -> list[Path]:
    """Rotated months of the live log, oldest first."""
    folder = archive_dir(vault)
    if not folder.is_dir():
        return []
    return sorted(folder.glob("live-context-*.md"))


def chain_files(vault: Vault, log: str) -> list[Path]:
    """All files one log's chains run through, in order."""
    return [*archive_files(vault), vault.live_context] if log == "live" else [vault.decisions]


def journal_path(vault: Vault, log: str) -> Path:
    return vault.state_dir / "journal" / f"{log}.jsonl"


def heads_path(vault: Vault, log: str) -> Path:
    return vault.state_dir / "heads" / f"{log}.json"


def lock_for(vault: Vault, log: str) -> Path:
    return lock_path(vault.state_dir, "live-context" if log == "live" else "decisions")


# --- journal ------------------------------------------------------------------------------------


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
        extra=dict(data.get("extra") or {}),
        log=data.get("log", "live"),
        prev=data.get("prev"),
        hash=data.get("hash", ""),
        key=data.get("key"),
        sig=data.get("sig"),
    )


def read_journal(vault: Vault, log: str) -> list[Entry]:
    """Every entry ever appended on this machine, in append order (bad lines skipped)."""
    path = journal_path(vault, log)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    out = []
    for raw in data.splitlines():
        try:
            item = json.loads(raw)
            out.append(entry_from_dict(item))
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line after a crash
    return out


# --- chain heads ---------------------------------------------------------------------------------


def file_stamp(path: Path) -> str:
    """Size and modification time: what the heads cache is validated against."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


def _load_heads(vault: Vault, log: str, stamp: str) -> dict[str, list[Any]] | None:
    try:
        data = json.loads(heads_path(vault, log).read_bytes())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("stamp") != stamp
        or not isinstance(data.get("agents"), dict)
    ):
        return None
    agents: dict[str, list[Any]] = data["agents"]
    return agents


def save_heads(vault: Vault, log: str, stamp: str, heads: dict[str, list[Any]]) -> None:
    """A cache, validated by the log's size on every read, so it is written in place without
    fsync (creating a temp file per append costs more than the whole append). A crash mid-write
    leaves JSON that does not parse or a stamp that does not match: the heads are then rebuilt
    from the files and the journal."""
    path = heads_path(vault, log)
    data = json.dumps({"stamp": stamp, "agents": heads}).encode("utf-8")
    try:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.write(fd, data)  # a new fd starts at offset 0
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
    except OSError:
        path.unlink(missing_ok=True)


def rebuild_heads(vault: Vault, log: str) -> dict[str, list[Any]]:
    """Per agent: [last seq, its hash], from every file of the log and the journal."""
    heads: dict[str, list[Any]] = {}

    def see(e: Entry) -> None:
        if e.agent not in heads or e.seq > heads[e.agent][0]:
            heads[e.agent] = [e.seq, e.hash]

    for path in chain_files(vault, log):
        for e in read_file(path).entries:
            see(e)
    for e in read_journal(vault, log):
        see(e)
    return heads


def current_heads(vault: Vault, log: str) -> dict[str, list[Any]]:
    """Chain heads (caller holds the log's lock)."""
    stamp = file_stamp(log_file(vault, log))
    heads = _load_heads(vault, log, stamp)
    if heads is None:
        heads = rebuild_heads(vault, log)
        save_heads(vault, log, stamp, heads)
    return heads


# --- append ----------------------------------------------------------------------------------------


def now_ms() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def entry_id(agent: str, seq: int, log: str) -> str:
    return f"{agent}.d{seq}" if log == "decisions" else f"{agent}.{seq}"


def validate_channel(channel: str) -> str:
    if not CHANNEL_RE.match(channel):
        raise UsageError(
            f"invalid channel {channel!r}",
            "a channel is one word: letters, digits, '-', '_', '.', '/' (at most 40)",
        )
    return channel


def validate_type(type_: str) -> str:
    if type_ not in ENTRY_TYPES:
        raise UsageError(f"unknown entry type {type_!r}", f"use one of: {', '.join(ENTRY_TYPES)}")
    return type_


def validate_id(entry: str) -> str:
    if not ID_RE.match(entry):
        raise UsageError(
            f"{entry!r} is not an entry id", "ids look like ella.12 (log) or ella.d3 (decisions)"
        )
    return entry


def prepare_text(
    vault: Vault, summary: str, body: str, *, what: str = "entry"
) -> tuple[str, str, tuple[Any, ...]]:
    """Fold and cap the summary, normalise and cap the body, apply the secrets policy."""
    from vaultmem.core.secrets import apply_policy

    settings = vault.config.log
    summary = fold_summary(summary)
    if not summary:
        raise UsageError(f"the {what} summary is empty", "pass a one-line summary")
    body = normalize_body(body)
    policy = vault.config.secrets.policy
    summary, found_s = apply_policy(summary, policy, what=f"{what} summary")
    body, found_b = apply_policy(body, policy, what=f"{what} body")
    if len(summary) > settings.max_summary:
        raise UsageError(
            f"the summary is {len(summary)} characters long (at most {settings.max_summary})",
            "keep the summary to one short line and put the detail in --body",
        )
    if len(body) > settings.max_body:
        raise UsageError(
            f"the body is {len(body)} characters long (at most {settings.max_body})",
            "link to a note instead of pasting it, or raise [log] max_body in vaultmem.toml",
        )
    return summary, body, (*found_s, *found_b)


def append(
    vault: Vault,
    agent: str,
    summary: str,
    *,
    channel: str = "general",
    type_: str = "note",
    body: str = "",
    acks: tuple[str, ...] | list[str] = (),
    log: str = "live",
    extra: dict[str, Any] | None = None,
    time: str | None = None,
) -> AppendResult:
    """Append one signed entry; return it once it is on disk (fsynced) and in the journal."""
    agent = vault.require_agent(agent)
    validate_channel(channel)
    validate_type(type_)
    acks = tuple(dict.fromkeys(validate_id(a) for a in acks))
    if type_ == "ack" and not acks:
        raise UsageError("an `ack` entry needs the id it acknowledges", "pass --ack ID")
    if time is not None and not TIME_RE.match(time):
        raise UsageError(f"invalid entry time {time!r}", "use UTC like 2026-11-29T15:20:01.123Z")
    summary, body, found = prepare_text(vault, summary, body)
    warnings = unknown_acks(vault, acks) if acks else []
    from vaultmem.nexus import signing

    signer = signing.signer_for(vault, agent)
    if signer is None and vault.config.log.require_signatures:
        raise SigningKeyMissingError(
            f"agent {agent} has no signing key on this machine, and this vault refuses unsigned entries",
            f"create one with: vaultmem keys create --agent {agent}",
        )
    path = log_file(vault, log)
    vault.path(vault.rel(path))  # safe-path check (symlinks out of the vault)
    timeout = vault.config.log.lock_timeout
    with exclusive(lock_for(vault, log), timeout, what=f"{path.name}"):
        heads = current_heads(vault, log)
        last_seq, last_hash = heads.get(agent, [0, None])
        seq = int(last_seq) + 1
        entry = Entry(
            id=entry_id(agent, seq, log),
            agent=agent,
            seq=seq,
            time=time or now_ms(),
            channel=channel,
            type=type_,
            summary=summary,
            body=body,
            acks=acks,
            extra=dict(extra or {}),
            log=log,
            prev=last_hash,
            key=signer.key_id if signer else None,
        )
        digest = entry.compute_hash()
        entry = replace(entry, hash=digest, sig=signer.sign(digest) if signer else None)
        _write_entry(vault, log, path, entry)
        heads[agent] = [seq, digest]
        save_heads(vault, log, file_stamp(path), heads)
    # The journal is written after the lock is released: one O_APPEND write of one line, so
    # concurrent writers never interleave, and the log's lock is held for one fsync, not two.
    # (`repair` orders restored entries by time, then journal order.)
    _write_journal(vault, log, entry)
    return AppendResult(entry, vault.rel(path), found, tuple(warnings))


ACK_WINDOW = 5000  # entries searched back for an acked id (acks are about recent entries)


def unknown_acks(vault: Vault, acks: tuple[str, ...]) -> list[str]:
    """Warnings for acked ids not found among the recent entries (an ack is still written)."""
    wanted = set(acks)
    for name in ("decisions",) if all(".d" in a for a in wanted) else LOGS:
        window = ACK_WINDOW if name == "live" else 1 << 30
        for n, e in enumerate(iter_reverse(log_file(vault, name)), 1):
            wanted.discard(e.id)
            if not wanted or n >= window:
                break
        if not wanted:
            break
    return [
        f"--ack {a}: no such entry among the last {ACK_WINDOW} entries (written anyway)"
        for a in acks
        if a in wanted
    ]


def _write_entry(vault: Vault, log: str, path: Path, entry: Entry) -> None:
    block = render(entry).encode("utf-8")
    if not path.exists():
        # someone deleted the file: start it again from the template (never overwrites)
        from vaultmem.app.scaffold import template
        from vaultmem.core.fsio import create_exclusive

        create_exclusive(path, template(f"nexus/{path.name}"))
    append_durable(path, block)


def _write_journal(vault: Vault, log: str, entry: Entry) -> None:
    journal = journal_path(vault, log)
    if not journal.parent.is_dir():
        journal.parent.mkdir(parents=True, exist_ok=True)
        fsync_dir(journal.parent)
    line = json.dumps(entry.full_dict(), ensure_ascii=False).encode() + b"\n"
    append_durable(journal, _after_newline(journal) + line)


def _after_newline(path: Path) -> bytes:
    """b"\n" when the file ends inside a line (a power cut tore the last journal line): the
    next line must not be glued to it."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            if size == 0:
                return b""
            fh.seek(size - 1)
            return b"" if fh.read(1) == b"\n" else b"\n"
    except FileNotFoundError:
        return b""
